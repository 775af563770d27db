import { ApiGatewayManagementApiClient } from '@aws-sdk/client-apigatewaymanagementapi';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { S3Client } from '@aws-sdk/client-s3';
import { SchedulerClient } from '@aws-sdk/client-scheduler';
import { SFNClient } from '@aws-sdk/client-sfn';
import { SQSClient } from '@aws-sdk/client-sqs';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { jobQueueEnv, resourceEnv } from '../../config/layout';
import { PROVIDER_NAMES, type ProviderName } from '../../config/providers';
import { ApiGatewayLiveChannel } from '../adapters/apigateway-live-channel';
import { DynamoDbApiKeyStore } from '../adapters/dynamodb-api-key-store';
import { DynamoDbJobStore } from '../adapters/dynamodb-job-store';
import { DynamoDbReconcilerProgress } from '../adapters/dynamodb-reconciler-progress';
import { DynamoDbScheduleStore } from '../adapters/dynamodb-schedule-store';
import { DynamoDbSlotPool } from '../adapters/dynamodb-slot-pool';
import { DynamoDbStreamTickets } from '../adapters/dynamodb-stream-tickets';
import { DynamoDbSubscriptions } from '../adapters/dynamodb-subscriptions';
import { DynamoDbTenantBacklogs } from '../adapters/dynamodb-tenant-backlog';
import { DynamoDbTenantStore } from '../adapters/dynamodb-tenant-store';
import { DynamoDbTimeline } from '../adapters/dynamodb-timeline';
import { DynamoDbWaitingLines } from '../adapters/dynamodb-waiting-lines';
import { S3InputStore } from '../adapters/s3-input-store';
import { S3MultipartInputs } from '../adapters/s3-multipart-inputs';
import { S3OutputStore } from '../adapters/s3-output-store';
import { SchedulerScheduleTriggers } from '../adapters/scheduler-schedule-triggers';
import { SfnWorkflow } from '../adapters/sfn-workflow';
import { SqsDeadLetters } from '../adapters/sqs-dead-letters';
import { SqsJobQueue } from '../adapters/sqs-job-queue';
import type { InFlightLimits, SlotPools, TenantShares } from '../domain/ports';
import { publishingStatusChanges } from '../domain/progress';
import { cachedShares, sharesOf } from '../domain/tenants';
import {
  type ProviderAdapter,
  type ProviderConfig,
  type ProviderFactory,
  providerAdapters,
} from '../providers';
import { requireEnv, runtimeSettings } from './env';
import { providerSecretValue } from './secrets';

/**
 * The adapters a handler uses, each built on first use and then kept for the
 * life of the execution environment. Endpoints come from the SDK's standard
 * environment (AWS_ENDPOINT_URL_*), which is all that differs locally.
 */

function once<T>(create: () => T): () => T {
  let value: T | undefined;
  return () => {
    value ??= create();
    return value;
  };
}

const documentClient = once(() =>
  DynamoDBDocumentClient.from(new DynamoDBClient({}), {
    marshallOptions: { removeUndefinedValues: true },
  }),
);

export const jobStore = once(
  () =>
    new DynamoDbJobStore(documentClient(), {
      tableName: requireEnv(resourceEnv.jobTable),
      retentionDays: runtimeSettings().jobRetentionDays,
    }),
);

export const apiKeyStore = once(
  () => new DynamoDbApiKeyStore(documentClient(), requireEnv(resourceEnv.apiKeyTable)),
);

/** Tenants' settings, beside their jobs in the job table. */
export const tenantStore = once(
  () => new DynamoDbTenantStore(documentClient(), requireEnv(resourceEnv.jobTable)),
);

/** Tenants' backlog counters, on their settings items. */
export const tenantBacklogs = once(
  () => new DynamoDbTenantBacklogs(documentClient(), requireEnv(resourceEnv.jobTable)),
);

/** Each function has the queues it was granted: the steps function the hand-off lane only, the api function the jobs queues only. */
export const jobQueue = once(
  () =>
    new SqsJobQueue(new SQSClient({}), {
      jobs: Object.fromEntries(
        PROVIDER_NAMES.flatMap((provider) => {
          const url = process.env[jobQueueEnv(provider)];
          return url ? [[provider, url]] : [];
        }),
      ),
      handOff: process.env[resourceEnv.handOffQueueUrl] || undefined,
    }),
);

const s3Client = once(
  () => new S3Client({ forcePathStyle: process.env[resourceEnv.s3ForcePathStyle] === 'true' }),
);

export const inputStore = once(() => new S3InputStore(s3Client(), requireEnv(resourceEnv.inputBucket)));

export const multipartInputs = once(
  () => new S3MultipartInputs(s3Client(), requireEnv(resourceEnv.inputBucket)),
);

/** Tenants' recurring schedules, beside their jobs in the job table. */
export const scheduleStore = once(
  () => new DynamoDbScheduleStore(documentClient(), requireEnv(resourceEnv.jobTable)),
);

/** The EventBridge Scheduler schedules that fire them. */
export const scheduleTriggers = once(
  () =>
    new SchedulerScheduleTriggers(new SchedulerClient({}), {
      groupName: requireEnv(resourceEnv.scheduleGroup),
      targetArn: requireEnv(resourceEnv.scheduleTargetArn),
      roleArn: requireEnv(resourceEnv.scheduleRoleArn),
      deadLetterQueueArn: requireEnv(resourceEnv.scheduleDeadLetterQueueArn),
      retryAttempts: runtimeSettings().scheduleRetryAttempts,
      maxEventAgeSeconds: runtimeSettings().scheduleMaxEventAgeSeconds,
    }),
);

export const streamTickets = once(
  () => new DynamoDbStreamTickets(documentClient(), requireEnv(resourceEnv.jobTable)),
);

export const reconcilerProgress = once(
  () => new DynamoDbReconcilerProgress(documentClient(), requireEnv(resourceEnv.jobTable)),
);

export const timeline = once(
  () =>
    new DynamoDbTimeline(documentClient(), {
      tableName: requireEnv(resourceEnv.jobTable),
      retentionDays: runtimeSettings().jobRetentionDays,
    }),
);

/** Task tokens work without the state machine ARN, so functions that only resume steps need not know it. */
export const workflow = once(
  () => new SfnWorkflow(new SFNClient({}), process.env[resourceEnv.stateMachineArn]),
);

export const outputStore = once(
  () =>
    new S3OutputStore(
      s3Client(),
      requireEnv(resourceEnv.outputBucket),
      runtimeSettings().outputUrlTtlSeconds,
    ),
);

/** Each provider's adapter, built from its secret on first use (and rebuilt when the cached secret changes). */
const providerCache = new Map<ProviderName, { key: string; adapter: ProviderAdapter<ProviderName> }>();
export async function providerAdapter(name: ProviderName): Promise<ProviderAdapter<ProviderName>> {
  const secret = await providerSecretValue(name);
  const settings = runtimeSettings().providers[name];
  const config: ProviderConfig = {
    baseUrl: secret.baseUrl ?? settings.baseUrl,
    ...(secret.apiKey ? { apiKey: secret.apiKey } : {}),
    webhookSecret: secret.webhookSecret,
    ...(secret.projectId ? { projectId: secret.projectId } : {}),
    deduplicates: settings.deduplicates,
    submitTimeoutMs: settings.submitTimeoutMs,
    readTimeoutMs: settings.submitTimeoutMs,
  };
  const key = JSON.stringify(config);
  const cached = providerCache.get(name);
  if (cached?.key === key) return cached.adapter;
  const adapter = (providerAdapters[name] as ProviderFactory<ProviderName>)(config);
  providerCache.set(name, { key, adapter });
  return adapter;
}

/** Each provider's slot pool (one item per provider in the job table). */
export const waitingLines = once(
  () => new DynamoDbWaitingLines(documentClient(), requireEnv(resourceEnv.jobTable)),
);

/** How long a tenant's share, once read, serves the choices of this function's instance. */
const TENANT_SHARE_TTL_MS = 10_000;

/** Each tenant's share of the providers' slots, from its record. */
export const tenantShares = once(
  (): TenantShares => cachedShares(sharesOf(tenantStore()), TENANT_SHARE_TTL_MS, Date.now),
);

export const slotPools = once((): SlotPools => {
  const pools = new Map<ProviderName, DynamoDbSlotPool>();
  return (provider) => {
    let pool = pools.get(provider);
    if (!pool) {
      pool = new DynamoDbSlotPool(documentClient(), requireEnv(resourceEnv.jobTable), provider);
      pools.set(provider, pool);
    }
    return pool;
  };
});

/** Each provider's in-flight limit, from the settings. */
export const inFlightLimits = once(
  (): InFlightLimits =>
    Object.fromEntries(
      Object.entries(runtimeSettings().providers).map(([name, provider]) => [name, provider.maxInFlight]),
    ) as InFlightLimits,
);

export const subscriptions = once(
  () => new DynamoDbSubscriptions(documentClient(), requireEnv(resourceEnv.connectionTable)),
);

export const liveChannel = once(
  () =>
    new ApiGatewayLiveChannel(
      new ApiGatewayManagementApiClient({ endpoint: requireEnv(resourceEnv.streamCallbackUrl) }),
      subscriptions(),
    ),
);

/** The job store for handlers that move jobs between statuses: live clients hear of every move. */
export const liveJobStore = once(() => publishingStatusChanges(jobStore(), liveChannel()));

export const deadLetters = once(
  () =>
    new SqsDeadLetters(new SQSClient({}), {
      deadLetterQueueArn: requireEnv(resourceEnv.deadLetterQueueArn),
      jobQueueArn: requireEnv(resourceEnv.jobQueueArn),
    }),
);
