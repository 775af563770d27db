import {
  LEGACY_PROVIDER,
  PROVIDER_NAMES,
  PROVIDERS,
  type ProviderName,
  providerEnvSuffix,
} from './providers';

/**
 * The physical layout shared by the CDK stack, the local stack and the runtime:
 * table keys and indexes, and the HTTP routes. Plain data, no AWS imports, so
 * `lib/`, `local/` and `lambdas/` can all read it without depending on each other.
 */

export type Projection = 'ALL' | 'KEYS_ONLY';

export interface IndexLayout {
  readonly name: string;
  readonly partitionKey: string;
  readonly sortKey: string;
  readonly projection: Projection;
}

export interface TableLayout {
  readonly partitionKey: string;
  readonly sortKey?: string;
  /** Epoch-seconds attribute DynamoDB TTL reads. */
  readonly timeToLiveAttribute?: string;
  readonly indexes: readonly IndexLayout[];
}

/**
 * The job table. One item per job (`pk` = job id, `sk` = `JOB`); the job id is
 * derived from (tenant, Idempotency-Key), so the job item is also the
 * idempotency record and creation is a single conditional write.
 */
export const jobTable = {
  partitionKey: 'pk',
  sortKey: 'sk',
  timeToLiveAttribute: 'expiresAt',
  indexes: [
    // Per-tenant listing, newest first.
    { name: 'byTenant', partitionKey: 'tenantId', sortKey: 'createdAt', projection: 'ALL' },
    // Per-tenant listing filtered by status (`tenantStatus` = `<tenant>#<status>`).
    { name: 'byTenantStatus', partitionKey: 'tenantStatus', sortKey: 'createdAt', projection: 'ALL' },
    // Sparse: `activeKey` (`<provider>#<status>`) exists only while a job is not terminal,
    // so its readers (the reconciler, hand-offs, the admin review list) pay for active
    // jobs only, each provider's apart. Keys only: readers read each job from the table,
    // which the index lags anyway, and a hot partition carries no copies of inputs.
    { name: 'activeByProvider', partitionKey: 'activeKey', sortKey: 'statusAt', projection: 'KEYS_ONLY' },
    // Sparse: `dueShard` exists only while a job is `scheduled`, keyed by its `runAt`, so a
    // reconciler pass finds the jobs now due with one Query (`runAt <= now`) whatever is
    // scheduled further ahead: one index write per scheduled job and one read per pass,
    // against a create and a delete per job (and a quota of schedules) with EventBridge
    // Scheduler. Scheduled jobs are not in `activeByProvider`: nothing there waits for them.
    { name: 'due', partitionKey: 'dueShard', sortKey: 'runAt', projection: 'KEYS_ONLY' },
  ],
} as const satisfies TableLayout;

export const JOB_ITEM_SORT_KEY = 'JOB';

/**
 * The one `dueShard` of the `due` index. A single partition takes about 1,000
 * index writes a second, far above any rate of scheduling seen here; DynamoDB
 * splits a hot partition by its sort key (runAt) before that matters.
 */
export const DUE_SHARD = 'scheduled';

/**
 * The `due` index's partition of media retirements (what an old version of a
 * media item made, deleted once its time comes): the reconciler finds those
 * due with one Query of their own, apart from scheduled jobs.
 */
export const RETIREMENT_SHARD = 'retire';

/**
 * Live-progress subscriptions: one item per WebSocket connection, found by
 * job for fan-out, expiring on their own if a disconnect is never seen.
 */
export const connectionTable = {
  partitionKey: 'connectionId',
  timeToLiveAttribute: 'expiresAt',
  indexes: [{ name: 'byJob', partitionKey: 'jobId', sortKey: 'connectionId', projection: 'KEYS_ONLY' }],
} as const satisfies TableLayout;

/** API keys, stored as SHA-256 hashes of the key; never the key itself. */
export const apiKeyTable = {
  partitionKey: 'keyHash',
  indexes: [
    // A tenant's keys: whether a name is a tenant's at all. Keys only, so a reader of the
    // index sees hashes and tenant names, never the usage-plan key values on the items.
    { name: 'byTenant', partitionKey: 'tenantId', sortKey: 'createdAt', projection: 'KEYS_ONLY' },
  ],
} as const satisfies TableLayout;

/**
 * `tenant` and `admin` routes go through the API key authorizer (the handler
 * then checks the key's role); `none` routes are public or authenticated by
 * the handler itself (the provider's signed webhooks).
 */
export type RouteAuth = 'none' | 'tenant' | 'admin';

export interface RouteLayout {
  readonly method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  /** API Gateway resource path; `{name}` segments are path parameters. */
  readonly path: string;
  readonly auth: RouteAuth;
  /** Why a route with auth `none` is safe without the gateway's authorizer. */
  readonly openBecause?: string;
}

/** Every HTTP route. The REST API, the local gateway and the api handler's router are built from this list. */
export const routes = [
  {
    method: 'GET',
    path: '/healthz',
    auth: 'none',
    openBecause: 'it is a health check for load balancers and monitors and reads no tenant data',
  },
  {
    method: 'GET',
    path: '/openapi.json',
    auth: 'none',
    openBecause: 'it is the public description of the API and reads no data',
  },
  { method: 'POST', path: '/v1/jobs', auth: 'tenant' },
  { method: 'POST', path: '/v1/jobs/batch', auth: 'tenant' },
  { method: 'POST', path: '/v1/jobs/cancel', auth: 'tenant' },
  { method: 'GET', path: '/v1/jobs', auth: 'tenant' },
  { method: 'GET', path: '/v1/jobs/{id}', auth: 'tenant' },
  { method: 'POST', path: '/v1/jobs/{id}/cancel', auth: 'tenant' },
  { method: 'POST', path: '/v1/jobs/{id}/resume', auth: 'tenant' },
  { method: 'GET', path: '/v1/jobs/{id}/events', auth: 'tenant' },
  { method: 'POST', path: '/v1/jobs/{id}/stream-ticket', auth: 'tenant' },
  { method: 'POST', path: '/v1/search', auth: 'tenant' },
  { method: 'POST', path: '/v1/media', auth: 'tenant' },
  { method: 'GET', path: '/v1/media', auth: 'tenant' },
  { method: 'GET', path: '/v1/media/{id}', auth: 'tenant' },
  { method: 'PATCH', path: '/v1/media/{id}', auth: 'tenant' },
  { method: 'DELETE', path: '/v1/media/{id}', auth: 'tenant' },
  { method: 'POST', path: '/v1/media/{id}/versions', auth: 'tenant' },
  { method: 'POST', path: '/v1/uploads', auth: 'tenant' },
  { method: 'POST', path: '/v1/uploads/multipart', auth: 'tenant' },
  { method: 'POST', path: '/v1/uploads/{ref}/parts', auth: 'tenant' },
  { method: 'POST', path: '/v1/uploads/{ref}/complete', auth: 'tenant' },
  { method: 'POST', path: '/v1/schedules', auth: 'tenant' },
  { method: 'GET', path: '/v1/schedules', auth: 'tenant' },
  { method: 'GET', path: '/v1/schedules/{id}', auth: 'tenant' },
  { method: 'PATCH', path: '/v1/schedules/{id}', auth: 'tenant' },
  { method: 'DELETE', path: '/v1/schedules/{id}', auth: 'tenant' },
  { method: 'GET', path: '/v1/admin/jobs', auth: 'admin' },
  { method: 'GET', path: '/v1/admin/providers', auth: 'admin' },
  { method: 'POST', path: '/v1/admin/providers/{provider}/pause', auth: 'admin' },
  { method: 'POST', path: '/v1/admin/providers/{provider}/resume', auth: 'admin' },
  { method: 'GET', path: '/v1/admin/tenants/{tenant}', auth: 'admin' },
  { method: 'PUT', path: '/v1/admin/tenants/{tenant}', auth: 'admin' },
  { method: 'POST', path: '/v1/admin/jobs/{id}/resolve', auth: 'admin' },
  { method: 'POST', path: '/v1/admin/jobs/replay', auth: 'admin' },
  { method: 'POST', path: '/v1/admin/jobs/resume', auth: 'admin' },
  { method: 'POST', path: '/v1/admin/dlq/redrive', auth: 'admin' },
] as const satisfies readonly RouteLayout[];

/**
 * One webhook route per provider that posts its outcomes (`config/providers.ts`),
 * each checked by that provider's adapter. A provider that answers each call
 * at once (Bedrock) posts nothing, so it gets no route: an open route that
 * only ever refuses would be surface for nothing.
 */
export const providerWebhookRoutes = PROVIDER_NAMES.filter(
  (provider) => PROVIDERS[provider].answers === 'webhook',
).map((provider) => ({
  method: 'POST' as const,
  path: PROVIDERS[provider].webhookPath,
  auth: 'none' as const,
  provider,
  openBecause: `${PROVIDERS[provider].title} is no tenant: the handler accepts only webhooks that ${PROVIDERS[provider].title}'s adapter verifies with its webhook secret`,
}));

/** Every HTTP route: the API's own and the providers' webhooks. */
export const allRoutes: readonly (RouteLayout & { readonly provider?: ProviderName })[] = [
  ...routes,
  ...providerWebhookRoutes,
];

/** `METHOD /path` of each provider's webhook route. */
export type ProviderWebhookRouteKey = `POST ${(typeof PROVIDERS)[ProviderName]['webhookPath']}`;

/** `METHOD /path` of each route, as API Gateway reports it in `httpMethod` and `resource`. */
export type RouteKey = KeyOf<(typeof routes)[number]> | ProviderWebhookRouteKey;
type KeyOf<R> = R extends { readonly method: infer M extends string; readonly path: infer P extends string }
  ? `${M} ${P}`
  : never;

/** Local path of the live-progress WebSocket (in AWS: the WebSocket API's own URL). */
export const STREAM_PATH = '/v1/stream';

/** Header carrying the tenant's API key; also the authorizer's identity source. */
export const API_KEY_HEADER = 'X-API-Key';

/** Media types API Gateway must pass to the api handler base64-encoded. */
export const binaryMediaTypes = ['multipart/form-data'] as const;

/**
 * Environment variables through which handlers learn their resources. The CDK
 * stack sets them from the constructs; the local stack from the emulators.
 */
export const resourceEnv = {
  jobTable: 'JOB_TABLE_NAME',
  apiKeyTable: 'API_KEY_TABLE_NAME',
  /** The first provider's jobs queue; see `jobQueueEnv` for each provider's. */
  jobQueueUrl: 'JOB_QUEUE_URL',
  /**
   * The hand-off lane: only jobs that already hold a slot, so a freed slot never
   * waits behind the jobs queue's backlog of jobs still looking for one.
   */
  handOffQueueUrl: 'HAND_OFF_QUEUE_URL',
  inputBucket: 'INPUT_BUCKET_NAME',
  outputBucket: 'OUTPUT_BUCKET_NAME',
  stateMachineArn: 'STATE_MACHINE_ARN',
  /** Secrets Manager secret (string) that signs webhooks to clients. */
  webhookSecretArn: 'WEBHOOK_SECRET_ARN',
  /**
   * The provider events function's URL: each provider's webhook route's path
   * is under it, given to the provider with each submission (the REST API
   * serves the same paths, for providers given them before).
   */
  providerEventsUrl: 'PROVIDER_EVENTS_URL',
  connectionTable: 'CONNECTION_TABLE_NAME',
  /** The WebSocket API's management endpoint (`https://{api}.execute-api.{region}.amazonaws.com/{stage}`). */
  streamCallbackUrl: 'STREAM_CALLBACK_URL',
  /**
   * The `wss://` URL clients connect to, handed out with stream tickets. Unset
   * where the WebSocket API shares the HTTP API's host (the local stack).
   */
  streamUrl: 'STREAM_URL',
  deadLetterQueueArn: 'DEAD_LETTER_QUEUE_ARN',
  jobQueueArn: 'JOB_QUEUE_ARN',
  /** The EventBridge Scheduler group every tenant schedule's trigger is created in. */
  scheduleGroup: 'SCHEDULE_GROUP_NAME',
  /** The fire function, which every trigger invokes. */
  scheduleTargetArn: 'SCHEDULE_TARGET_ARN',
  /** The role EventBridge Scheduler invokes the fire function with. */
  scheduleRoleArn: 'SCHEDULE_ROLE_ARN',
  /** Where EventBridge Scheduler puts a firing it could not deliver. */
  scheduleDeadLetterQueueArn: 'SCHEDULE_DEAD_LETTER_QUEUE_ARN',
  /** `true` where the S3 endpoint only serves path-style URLs (the local emulator). */
  s3ForcePathStyle: 'S3_FORCE_PATH_STYLE',
  /** The S3 Vectors vector bucket that holds the passage index (`passageIndex`). */
  vectorBucketName: 'VECTOR_BUCKET_NAME',
  /** The passage index in that bucket: one vector per passage of a published recording. */
  vectorIndexName: 'VECTOR_INDEX_NAME',
  /** The deployment's EventBridge bus, where lifecycle events are put (config/events.ts). */
  eventBusName: 'EVENT_BUS_NAME',
} as const;

/**
 * The S3 Vectors index of published passages, beside what the settings fix
 * (`embeddingDimensions`, `vectorDistanceMetric`). Every other metadata key of
 * a passage's vector (tenant, item, date, labels, start, end, passage) is
 * filterable, which S3 Vectors makes every key not named here; these two are
 * only shown with a hit, and stay out of the 2 KB that filterable metadata
 * may take per vector
 * (https://docs.aws.amazon.com/AmazonS3/latest/userguide/s3-vectors-metadata-filtering.html).
 * They are fixed when the index is made.
 */
export const passageIndex = {
  nonFilterableMetadataKeys: ['text', 'title'],
} as const;

/** The output objects a provider's completion webhook may leave for finalize (`providerOutputKeyOf`). */
export const PROVIDER_OUTPUT_OBJECTS = 'outputs/*/provider-output-*';

/** The copies of a stream's playlists, written with fresh signatures each time the job is shown (`servePlaylists`). */
export const SERVED_STREAM_OBJECTS = 'outputs/*/served/*';

/** The metadata revision a media version's vectors carry, beside them: an operator's resolve may switch a version in. */
export const VECTOR_REVISION_OBJECTS = 'outputs/*/vectors-revision.json';

/** The Secrets Manager secret (JSON `{apiKey?, webhookSecret, baseUrl?}`) of one provider. */
export const providerSecretEnv = (provider: string): string =>
  `PROVIDER_SECRET_ARN_${providerEnvSuffix(provider)}`;

/**
 * The variable naming one provider's jobs queue. The first provider keeps the
 * one queue there was (`JOB_QUEUE_URL`), so its messages survive the upgrade.
 */
export const jobQueueEnv = (provider: string): string =>
  provider === LEGACY_PROVIDER
    ? resourceEnv.jobQueueUrl
    : `${resourceEnv.jobQueueUrl}_${providerEnvSuffix(provider)}`;

/**
 * The environment through which a Fargate compute task learns its step and
 * job: the `ecs:runTask.sync` state sets them as container overrides, the
 * task's entrypoint reads them.
 */
export const computeTaskEnv = { step: 'COMPUTE_STEP', jobId: 'COMPUTE_JOB_ID' } as const;

/**
 * The Fargate compute task's one container, by the name its task definition
 * and the state's container overrides give it, and the source its image runs
 * (`lambdas/compute/Dockerfile`'s task target), which the local stack runs in
 * its place.
 */
export const computeContainer = { name: 'compute', entry: 'lambdas/compute/task.ts' } as const;

/** What the authorizer hands the api handler in `requestContext.authorizer`. */
export interface AuthorizerContext {
  readonly tenantId: string;
  readonly role: 'tenant' | 'admin';
}

/**
 * The error message with which a Lambda authorizer has API Gateway refuse a
 * request as UNAUTHORIZED (401); any other error is an AUTHORIZER_FAILURE (500).
 */
export const AUTHORIZER_DENIAL = 'Unauthorized';

/**
 * The workflow's steps: the state names of the state machine and the `step`
 * the one steps function dispatches on (the contract's step names, plus the
 * failure, review and settle paths).
 */
export const WORKFLOW_STEPS = [
  'prepare',
  'submit',
  'await',
  'release',
  'finalize',
  'notify',
  'fail',
  // Where a failed job's execution fails, and where a resume (a redrive) goes on from.
  'park',
  'review',
  'settle',
  // audio.publish: one chunk's wait for its chunk job (the compute steps run on the compute function); a media
  // version takes the lead there, before its first chunk is charged.
  'transcribe',
  // audio.publish: the runs of passages to embed, one run's wait for its embedding job, and the vectors stored.
  'plan-embedding',
  'embed',
  'store-vectors',
  // audio.publish canceled: the wait until every child job it made is settled, before it settles itself.
  'await-children',
] as const;
export type WorkflowStep = (typeof WORKFLOW_STEPS)[number];
