import { createHash } from 'node:crypto';
import { ServiceError, startAwsJsonServer } from './aws-json';

/**
 * Secrets Manager's GetSecretValue, which is all the handlers call (through
 * Powertools' `getSecret`, reached with `AWS_ENDPOINT_URL_SECRETS_MANAGER`),
 * on the SDK's wire protocol (AWS JSON 1.1): POST / with
 * `X-Amz-Target: secretsmanager.GetSecretValue`. Secrets live in memory, are
 * defined by the local stack at start-up and never appear in a log line.
 * Requests are not authenticated, so it listens on loopback only.
 */
export interface SecretsManagerEmulator {
  /** For `AWS_ENDPOINT_URL_SECRETS_MANAGER` or a SecretsManagerClient's `endpoint`. */
  readonly endpoint: string;
  /** Defines or replaces a string secret; returns its ARN, which is the same on every start. */
  put(name: string, value: string): string;
  stop(): Promise<void>;
}

/** Far above any GetSecretValue request, which carries an id and two optional selectors. */
const MAX_BODY_BYTES = 64 * 1024;
const CURRENT_STAGE = 'AWSCURRENT';
const NAME = /^[A-Za-z0-9/_+=.@-]{1,512}$/;

interface StoredSecret {
  readonly arn: string;
  readonly name: string;
  readonly value: string;
  readonly versionId: string;
  readonly createdDate: number;
}

const notFound = () =>
  new ServiceError('ResourceNotFoundException', "Secrets Manager can't find the specified secret.");

/** A digest shaped the way Secrets Manager shapes its own identifiers. */
const digest = (text: string) => createHash('sha256').update(text).digest();

/** Secrets Manager ends an ARN with `-` and six random characters; here they derive from the name, so ARNs survive restarts. */
function arnSuffix(name: string): string {
  const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';
  return [...digest(name).subarray(0, 6)].map((byte) => alphabet[byte % alphabet.length]).join('');
}

/** A UUID-shaped version id that changes exactly when the value does. */
function versionIdOf(value: string): string {
  const hex = digest(value).toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-4${hex.slice(13, 16)}-a${hex.slice(17, 20)}-${hex.slice(20, 32)}`;
}

export async function startSecretsManagerEmulator(options: {
  readonly host: string;
  readonly region: string;
  readonly accountId: string;
}): Promise<SecretsManagerEmulator> {
  const byName = new Map<string, StoredSecret>();
  const arnPrefix = `arn:aws:secretsmanager:${options.region}:${options.accountId}:secret:`;

  /** By name, full ARN, or partial ARN (without the suffix), as Secrets Manager accepts. */
  function find(secretId: string): StoredSecret | undefined {
    if (!secretId.startsWith(arnPrefix)) return byName.get(secretId);
    const rest = secretId.slice(arnPrefix.length);
    const exact = byName.get(rest);
    if (exact) return exact;
    const secret = byName.get(rest.replace(/-[A-Za-z0-9]{6}$/, ''));
    return secret?.arn === secretId ? secret : undefined;
  }

  function getSecretValue(body: Record<string, unknown>): Record<string, unknown> {
    const { SecretId, VersionId, VersionStage } = body;
    if (typeof SecretId !== 'string' || SecretId === '') {
      throw new ServiceError('ValidationException', 'SecretId is required.');
    }
    const secret = find(SecretId);
    if (!secret) throw notFound();
    // Each secret has one version, the current one.
    if (VersionId !== undefined && VersionId !== secret.versionId) throw notFound();
    if (VersionStage !== undefined && VersionStage !== CURRENT_STAGE) throw notFound();
    return {
      ARN: secret.arn,
      Name: secret.name,
      VersionId: secret.versionId,
      SecretString: secret.value,
      VersionStages: [CURRENT_STAGE],
      // AWS JSON timestamps are epoch seconds.
      CreatedDate: secret.createdDate / 1000,
    };
  }

  const server = await startAwsJsonServer(options.host, {
    targetPrefix: 'secretsmanager.',
    maxBodyBytes: MAX_BODY_BYTES,
    operations: { GetSecretValue: getSecretValue },
    internalError: { type: 'InternalServiceError', message: 'The local Secrets Manager failed.' },
  });
  return {
    endpoint: server.endpoint,
    put(name, value) {
      if (!NAME.test(name)) throw new Error(`${JSON.stringify(name)} is not a valid secret name`);
      const arn = `${arnPrefix}${name}-${arnSuffix(name)}`;
      byName.set(name, { arn, name, value, versionId: versionIdOf(value), createdDate: Date.now() });
      return arn;
    },
    stop: server.stop,
  };
}
