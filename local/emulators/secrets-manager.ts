import { createHash, randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

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

const TARGET_PREFIX = 'secretsmanager.';
const CONTENT_TYPE = 'application/x-amz-json-1.1';
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

class ServiceError extends Error {
  constructor(
    readonly type: string,
    message: string,
  ) {
    super(message);
  }
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

  async function serve(request: IncomingMessage, response: ServerResponse): Promise<void> {
    const send = (status: number, payload: unknown) => {
      const text = JSON.stringify(payload);
      response.writeHead(status, {
        'content-type': CONTENT_TYPE,
        'content-length': Buffer.byteLength(text),
        'x-amzn-requestid': randomUUID(),
      });
      response.end(text);
    };
    try {
      const target = request.headers['x-amz-target'];
      if (request.method !== 'POST' || typeof target !== 'string' || !target.startsWith(TARGET_PREFIX)) {
        throw new ServiceError(
          'UnknownOperationException',
          `Expected POST with X-Amz-Target: ${TARGET_PREFIX}<Action>`,
        );
      }
      const body = await readJson(request);
      const action = target.slice(TARGET_PREFIX.length);
      if (action !== 'GetSecretValue') {
        throw new ServiceError('UnknownOperationException', `${action} is not implemented locally`);
      }
      send(200, getSecretValue(body));
    } catch (error) {
      if (error instanceof ServiceError) send(400, { __type: error.type, message: error.message });
      else send(500, { __type: 'InternalServiceError', message: 'The local Secrets Manager failed.' });
    }
  }

  const server = createServer((request, response) => {
    void serve(request, response);
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, options.host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const { port } = server.address() as AddressInfo;
  let stopped: Promise<void> | undefined;
  return {
    endpoint: `http://${options.host}:${port}`,
    put(name, value) {
      if (!NAME.test(name)) throw new Error(`${JSON.stringify(name)} is not a valid secret name`);
      const arn = `${arnPrefix}${name}-${arnSuffix(name)}`;
      byName.set(name, { arn, name, value, versionId: versionIdOf(value), createdDate: Date.now() });
      return arn;
    },
    stop() {
      stopped ??= new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
      return stopped;
    },
  };
}

async function readJson(request: IncomingMessage): Promise<Record<string, unknown>> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of request as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > MAX_BODY_BYTES)
      throw new ServiceError('ValidationException', 'The request body is too large.');
    chunks.push(chunk);
  }
  let body: unknown;
  try {
    const text = Buffer.concat(chunks).toString('utf8');
    body = text.trim() === '' ? {} : JSON.parse(text);
  } catch {
    throw new ServiceError('SerializationException', 'The request body is not valid JSON.');
  }
  if (body === null || typeof body !== 'object' || Array.isArray(body)) {
    throw new ServiceError('SerializationException', 'The request body must be a JSON object.');
  }
  return body as Record<string, unknown>;
}
