import { jobQueueEnv, providerSecretEnv, resourceEnv } from '../config/layout';
import type { ProviderName } from '../config/providers';
import { type Settings, settingsEnvironment } from '../config/settings';
import type { LocalResources } from './resources';

/**
 * The environment the handlers run with locally: what the CDK stack gives the
 * Lambda functions (resources and settings), plus the endpoints of the
 * emulators through the SDK's own service-specific endpoint variables, so the
 * handlers build their clients exactly as in AWS.
 */

export const LOCAL_REGION = 'us-east-1';

export interface EmulatorEndpoints {
  readonly dynamodb: string;
  readonly sqs: string;
  readonly s3: string;
  readonly sfn: string;
  readonly secretsManager: string;
  readonly scheduler: string;
  readonly s3vectors: string;
  readonly eventbridge: string;
}

/** What the handlers reach beyond the tables, queues and buckets. */
export interface WorkflowWiring {
  readonly stateMachineArn: string;
  /** Each provider's secret in the local Secrets Manager. */
  readonly providerSecretArns: Readonly<Record<ProviderName, string>>;
  readonly webhookSecretArn: string;
  /**
   * Each variable the template sets to a function URL, with that URL as the
   * local stack serves it (the provider events function's, under which each
   * provider's webhook route's path is handed to the provider).
   */
  readonly functionUrls: Readonly<Record<string, string>>;
  /** The deployment's event bus, by the name the template gives it. */
  readonly eventBusName: string;
  /** The local WebSocket API's management endpoint, where live messages are posted to connections. */
  readonly streamCallbackUrl: string;
  /** What tenant schedules' triggers are made of: the template's group, the fire function, a role, a dead-letter queue. */
  readonly schedules: {
    readonly groupName: string;
    readonly targetArn: string;
    readonly roleArn: string;
    readonly deadLetterQueueArn: string;
  };
}

/** What the Lambda runtime itself sets, as far as the handlers' libraries look at it. */
export const lambdaRuntimeEnvironment = {
  // The SDK sends an invocation's trace header (whose Lineage feeds recursive loop
  // detection) only inside Lambda, which it tells by this variable being set.
  AWS_LAMBDA_FUNCTION_NAME: 'longhaul-local',
  // Invocations overlap in this one process, as in an execution environment that runs several
  // at once (the runtime sets this there). Powertools then keeps each invocation's logger
  // context (its function name and request id), appended keys, metrics and batch state apart,
  // in the runtime's invoke store (local/lambda-service.ts), instead of in one shared instance.
  AWS_LAMBDA_MAX_CONCURRENCY: '64',
} as const;

/** Variables a developer may set to change how handlers log locally; everything else is fixed. */
const overridable = {
  // The EMF metric lines kept off the console (local/ops captures them); the log records are
  // printed as local/log-lines.ts says, however Powertools indents them.
  POWERTOOLS_DEV: 'true',
  POWERTOOLS_LOG_LEVEL: 'INFO',
} as const;

/**
 * Variables removed before the handlers load: the keys and secrets are ones
 * the handlers never see in AWS either (they read secrets from Secrets
 * Manager), and the AWS ones could point the SDK at a real account or
 * another endpoint.
 */
export const withheldVariables = [
  'LONGHAUL_API_KEYS',
  'LONGHAUL_ADMIN_KEY',
  'LONGHAUL_WEBHOOK_SECRET',
  'PROVIDER_WEBHOOK_SECRET',
  'PROVIDER_API_KEY',
  'AWS_PROFILE',
  'AWS_DEFAULT_PROFILE',
  'AWS_SESSION_TOKEN',
  'AWS_ENDPOINT_URL',
  'AWS_IGNORE_CONFIGURED_ENDPOINT_URLS',
] as const;

export function handlerEnvironment(input: {
  readonly settings: Settings;
  readonly endpoints: EmulatorEndpoints;
  readonly resources: LocalResources;
  readonly wiring: WorkflowWiring;
  readonly env: Readonly<Record<string, string | undefined>>;
}): Record<string, string> {
  const { settings, endpoints, resources, wiring, env } = input;
  const chosen = Object.fromEntries(
    Object.entries(overridable).map(([name, fallback]) => [name, env[name]?.trim() || fallback]),
  );
  return {
    AWS_REGION: LOCAL_REGION,
    AWS_DEFAULT_REGION: LOCAL_REGION,
    // The emulators accept any credentials; fixed dummies keep real ones out of reach.
    AWS_ACCESS_KEY_ID: 'local',
    AWS_SECRET_ACCESS_KEY: 'local',
    AWS_EC2_METADATA_DISABLED: 'true',
    AWS_ENDPOINT_URL_DYNAMODB: endpoints.dynamodb,
    AWS_ENDPOINT_URL_SQS: endpoints.sqs,
    AWS_ENDPOINT_URL_S3: endpoints.s3,
    AWS_ENDPOINT_URL_SFN: endpoints.sfn,
    // The SDK derives the name from the service id "Secrets Manager".
    AWS_ENDPOINT_URL_SECRETS_MANAGER: endpoints.secretsManager,
    AWS_ENDPOINT_URL_SCHEDULER: endpoints.scheduler,
    // The SDK derives the name from the service id "S3Vectors".
    AWS_ENDPOINT_URL_S3VECTORS: endpoints.s3vectors,
    // The SDK derives the name from the service id "EventBridge".
    AWS_ENDPOINT_URL_EVENTBRIDGE: endpoints.eventbridge,
    [resourceEnv.jobTable]: resources.jobTableName,
    [resourceEnv.apiKeyTable]: resources.apiKeyTableName,
    [resourceEnv.connectionTable]: resources.connectionTableName,
    ...Object.fromEntries(
      Object.entries(resources.jobQueues).map(([provider, queue]) => [jobQueueEnv(provider), queue.url]),
    ),
    [resourceEnv.jobQueueArn]: resources.jobQueueArn,
    [resourceEnv.handOffQueueUrl]: resources.handOffQueueUrl,
    [resourceEnv.deadLetterQueueArn]: resources.deadLetterQueueArn,
    [resourceEnv.inputBucket]: resources.inputBucketName,
    [resourceEnv.outputBucket]: resources.outputBucketName,
    [resourceEnv.vectorBucketName]: resources.vectorBucketName,
    [resourceEnv.vectorIndexName]: resources.vectorIndexName,
    [resourceEnv.stateMachineArn]: wiring.stateMachineArn,
    [resourceEnv.eventBusName]: wiring.eventBusName,
    ...Object.fromEntries(
      Object.entries(wiring.providerSecretArns).map(([provider, arn]) => [providerSecretEnv(provider), arn]),
    ),
    [resourceEnv.webhookSecretArn]: wiring.webhookSecretArn,
    ...wiring.functionUrls,
    [resourceEnv.streamCallbackUrl]: wiring.streamCallbackUrl,
    [resourceEnv.scheduleGroup]: wiring.schedules.groupName,
    [resourceEnv.scheduleTargetArn]: wiring.schedules.targetArn,
    [resourceEnv.scheduleRoleArn]: wiring.schedules.roleArn,
    [resourceEnv.scheduleDeadLetterQueueArn]: wiring.schedules.deadLetterQueueArn,
    // fauxqs serves buckets by path; virtual-hosted names under 127.0.0.1 do not resolve.
    [resourceEnv.s3ForcePathStyle]: 'true',
    // PROVIDER_IDEMPOTENT among them: what the provider adapter believes (contract section 2).
    ...settingsEnvironment(settings),
    POWERTOOLS_SERVICE_NAME: 'Longhaul',
    POWERTOOLS_METRICS_NAMESPACE: 'Longhaul',
    // POWERTOOLS_DEV alone turns metrics off; the local ops view (local/ops) reads them from stdout.
    POWERTOOLS_METRICS_DISABLED: 'false',
    ...lambdaRuntimeEnvironment,
    // A logged event would carry the X-API-Key header.
    POWERTOOLS_LOGGER_LOG_EVENT: 'false',
    ...chosen,
  };
}

/** Replaces the handler-facing part of `target` (normally process.env); must run before any handler module loads. */
export function applyHandlerEnvironment(
  target: NodeJS.ProcessEnv,
  environment: Record<string, string>,
): void {
  for (const name of withheldVariables) delete target[name];
  Object.assign(target, environment);
}
