import * as z from 'zod';
import { EMBEDDING_MODEL_NAMES, EMBEDDING_MODELS, type EmbeddingModelName } from './embedding-models';
import { JOB_TYPE_MODULES, type JobType, jobTypeEnvSuffix } from './job-types';
import {
  isProviderName,
  PROVIDER_NAMES,
  PROVIDERS,
  type ProviderName,
  type ProviderSpec,
  providerEnvSuffix,
} from './providers';
import { S3_VECTORS_LIMITS } from './s3-vectors';

/**
 * Longhaul's tunable settings: one typed module read by the CDK app (at synth
 * time), by the local stack and by the handlers (from their environment, which
 * the stack fills from these same values). Every override comes from an
 * environment variable and is validated; a bad value stops start-up with a
 * message naming the variable.
 */

/** CloudWatch Logs accepts only these retention periods. */
export const LOG_RETENTION_DAYS = [
  1, 3, 5, 7, 14, 30, 60, 90, 120, 150, 180, 365, 400, 545, 731, 1096, 1827, 2192, 2557, 2922, 3288, 3653,
] as const;

/**
 * Longest lifetime a presigned URL may be given. The handlers sign with their
 * role's temporary credentials, and S3 refuses a presigned request once those
 * have expired: no role session lives longer than 12 hours (an IAM role's
 * maximum session duration), so a longer lifetime (SigV4 allows 7 days) would
 * be a promise the URL cannot keep.
 */
export const MAX_PRESIGNED_URL_TTL_SECONDS = 12 * 3600;

/** The CPU sizes of a Fargate task, in CPU units, and the memory each allows (MiB). */
const FARGATE_CPU = [256, 512, 1024, 2048, 4096, 8192, 16384] as const;
const FARGATE_MEMORY_MB: Readonly<Record<number, readonly [number, number]>> = {
  256: [512, 2048],
  512: [1024, 4096],
  1024: [2048, 8192],
  2048: [4096, 16_384],
  4096: [8192, 30_720],
  8192: [16_384, 61_440],
  16384: [32_768, 122_880],
};

const int = (min: number, max: number) => z.coerce.number().int().min(min).max(max);
const flag = z.enum(['0', '1', 'true', 'false']).transform((v) => v === '1' || v === 'true');

/** Each setting: the environment variable that overrides it, its schema and default. */
const fields = {
  maxInFlight: {
    env: 'MAX_IN_FLIGHT',
    schema: int(1, 1000),
    default: 5,
    doc: 'jobs at a provider at once, enforced in one place; each provider may have its own (MAX_IN_FLIGHT_<PROVIDER>)',
  },
  reconcileIntervalMs: {
    env: 'RECONCILE_INTERVAL_MS',
    schema: int(1000, 3_600_000),
    default: 10_000,
    doc: 'reconciler period of the local stack',
  },
  reconcileSchedule: {
    env: 'RECONCILE_SCHEDULE',
    schema: z
      .string()
      .regex(
        /^rate\((1 (minute|hour)|([2-9]|[1-9]\d+) (minutes|hours))\)$/,
        'must look like rate(1 minute) or rate(5 minutes)',
      ),
    default: 'rate(1 minute)',
    doc: 'EventBridge Scheduler expression of the reconciler in AWS',
  },
  queuedGraceMs: {
    env: 'QUEUED_GRACE_MS',
    schema: int(1000, 86_400_000),
    default: 30_000,
    doc: 'a queued job older than this with no execution is re-enqueued',
  },
  scheduleMaxAheadDays: {
    env: 'SCHEDULE_MAX_AHEAD_DAYS',
    schema: int(1, 365),
    default: 365,
    doc: 'how far ahead a job may be scheduled (runAt); a later runAt is refused',
  },
  schedulePromotionsPerPass: {
    env: 'SCHEDULE_PROMOTIONS_PER_PASS',
    schema: int(1, 10_000),
    default: 1000,
    doc: 'due scheduled jobs one reconciler pass moves to queued; more wait for the next pass',
  },
  jobTimeoutMs: {
    env: 'JOB_TIMEOUT_MS',
    schema: int(10_000, 31_536_000_000),
    default: 600_000,
    doc: 'a job running longer than this at the provider goes to needs_review',
  },
  jobRetentionDays: {
    env: 'JOB_RETENTION_DAYS',
    // The idempotency key lives on the job item, so this is also the key's
    // retention; the minimum of one day keeps keys for the promised 24 h.
    schema: int(1, 3650),
    default: 30,
    doc: 'finished jobs (and their idempotency keys) expire this long after finishing',
  },
  idempotencyInProgressMs: {
    env: 'IDEMPOTENCY_IN_PROGRESS_MS',
    schema: int(1000, 120_000),
    default: 30_000,
    doc: 'a duplicate request within this long of a first one that has not finished gets 409',
  },
  logRetentionDays: {
    env: 'LOG_RETENTION_DAYS',
    schema: z.coerce
      .number()
      .refine(
        (v): v is (typeof LOG_RETENTION_DAYS)[number] =>
          (LOG_RETENTION_DAYS as readonly number[]).includes(v),
        {
          message: `must be one of ${LOG_RETENTION_DAYS.join(', ')}`,
        },
      ),
    default: 365,
    doc: 'CloudWatch Logs retention of every log group',
  },
  slotWaitMaxSeconds: {
    env: 'SLOT_WAIT_MAX_SECONDS',
    schema: int(1, 900),
    default: 300,
    doc: "longest a queued job waits before its message looks for a free slot again; a freed slot is handed to the job whose turn it is at once, so this is only the fallback's period (and the reconciler counts a queued job's message lost after QUEUED_GRACE_MS plus this)",
  },
  providerPauseSeconds: {
    env: 'PROVIDER_PAUSE_SECONDS',
    schema: int(1, 900),
    default: 5,
    doc: "how long a provider's grants pause when it throttles or is down without naming a wait (Retry-After); a refusal soon after such a pause doubles it. A wait the provider names is kept each time, capped by `PROVIDER_PAUSE_MAX_SECONDS`",
  },
  providerPauseMaxSeconds: {
    env: 'PROVIDER_PAUSE_MAX_SECONDS',
    schema: int(1, 3600),
    default: 300,
    doc: "longest pause of a provider's grants, whatever wait it names; jobs wait in their lines however long the provider is down",
  },
  dispatchTimeoutSeconds: {
    env: 'DISPATCH_TIMEOUT_SECONDS',
    schema: int(1, 120),
    default: 30,
    doc: 'timeout of the queue consumer; the queue visibility timeout is six times this',
  },
  maxReceiveCount: {
    env: 'QUEUE_MAX_RECEIVE_COUNT',
    schema: int(5, 1000),
    default: 5,
    doc: 'receives before a message moves to the dead-letter queue',
  },
  apiRateLimit: {
    env: 'API_RATE_LIMIT',
    schema: int(1, 10_000),
    default: 20,
    doc: 'steady requests per second allowed per tenant',
  },
  apiBurstLimit: {
    env: 'API_BURST_LIMIT',
    schema: int(1, 5_000),
    default: 40,
    doc: 'request burst allowed per tenant',
  },
  authorizerCacheSeconds: {
    env: 'AUTHORIZER_CACHE_SECONDS',
    schema: int(0, 3600),
    default: 300,
    doc: 'how long an API key decision is cached by the gateway',
  },
  uploadUrlTtlSeconds: {
    env: 'UPLOAD_URL_TTL_SECONDS',
    schema: int(60, MAX_PRESIGNED_URL_TTL_SECONDS),
    default: 900,
    doc: 'lifetime of a presigned upload URL',
  },
  maxUploadBytes: {
    env: 'MAX_UPLOAD_BYTES',
    schema: int(1, 5 * 1024 ** 3),
    default: 512 * 1024 ** 2,
    doc: 'largest input accepted through POST /v1/uploads',
  },
  providerIdempotent: {
    env: 'PROVIDER_IDEMPOTENT',
    schema: flag,
    default: true,
    doc: 'whether the provider honours Idempotency-Key (an ambiguous submission is then resent, else reviewed)',
  },
  providerSubmitTimeoutMs: {
    env: 'PROVIDER_TIMEOUT_MS',
    schema: int(100, 60_000),
    default: 10_000,
    doc: 'deadline of one provider call; a submission past it has an unknown outcome',
  },
  awaitHeartbeatSeconds: {
    env: 'AWAIT_HEARTBEAT_SECONDS',
    schema: int(10, 86_400),
    default: 300,
    doc: 'longest silence from the provider (no progress, no reconciler check) before a waiting job is reviewed',
  },
  outputUrlTtlSeconds: {
    env: 'OUTPUT_URL_TTL_SECONDS',
    schema: int(60, MAX_PRESIGNED_URL_TTL_SECONDS),
    default: 3600,
    doc: 'lifetime of the presigned URLs of job outputs',
  },
  mediaGraceSeconds: {
    env: 'MEDIA_GRACE_SECONDS',
    schema: int(0, 7 * 86_400),
    default: 3600,
    doc: "how long a media item's replaced version (stream, transcript, vectors) stays after the switch, so a listener mid-stream finishes; keep it at least OUTPUT_URL_TTL_SECONDS",
  },
  mediaRetirementsPerPass: {
    env: 'MEDIA_RETIREMENTS_PER_PASS',
    schema: int(1, 1000),
    default: 50,
    doc: 'replaced, superseded or deleted media versions one reconciler pass deletes the outputs and vectors of; more wait for the next pass',
  },
  webhookTimeoutMs: {
    env: 'WEBHOOK_TIMEOUT_MS',
    schema: int(100, 30_000),
    default: 5000,
    doc: 'deadline of one delivery of a client webhook',
  },
  alarmOldestMessageSeconds: {
    env: 'ALARM_OLDEST_MESSAGE_SECONDS',
    schema: int(60, 1_209_600),
    default: 900,
    doc: 'alarm when the oldest message in the jobs queue is older than this',
  },
  alarmApi5xxPercent: {
    env: 'ALARM_API_5XX_PERCENT',
    schema: z.coerce.number().min(0.01).max(100),
    default: 1,
    doc: 'alarm when this share of API requests (per 5 minutes) answer 5xx',
  },
  alarmFailedJobs: {
    env: 'ALARM_FAILED_JOBS',
    schema: int(1, 100_000),
    default: 5,
    doc: 'alarm when this many jobs fail within 5 minutes',
  },
  bulkMaxPerRequest: {
    env: 'BULK_MAX_PER_REQUEST',
    schema: int(1, 1000),
    default: 100,
    doc: 'most jobs one POST /v1/jobs/cancel looks at; more matching jobs are left to the nextCursor its answer carries',
  },
  replayMaxPerRequest: {
    env: 'REPLAY_MAX_PER_REQUEST',
    schema: int(1, 500),
    default: 50,
    doc: 'most jobs one POST /v1/admin/jobs/replay or /v1/admin/jobs/resume looks at (acts on or refuses); the rest are left to the nextCursor its answer carries',
  },
  transcribeChunkSeconds: {
    env: 'TRANSCRIBE_CHUNK_SECONDS',
    schema: int(10, 7200),
    default: 600,
    doc: 'audio.publish: length of the pieces a recording is cut into for transcription, one provider submission (and slot) each',
  },
  publishRenditionsKbps: {
    env: 'PUBLISH_RENDITIONS_KBPS',
    schema: z
      .string()
      .regex(/^\d{2,3}(,\d{2,3})*$/, 'must be bit rates in kbit/s separated by commas, such as 64,128')
      .refine((value) => {
        const rates = value.split(',').map(Number);
        return new Set(rates).size === rates.length && rates.every((rate) => rate >= 16 && rate <= 320);
      }, 'must list distinct bit rates from 16 to 320 kbit/s'),
    default: '64,128',
    doc: 'audio.publish: the AAC renditions of the HLS stream, in kbit/s',
  },
  publishSegmentSeconds: {
    env: 'PUBLISH_SEGMENT_SECONDS',
    schema: int(1, 30),
    default: 6,
    doc: 'audio.publish: target length of an HLS segment',
  },
  publishMaxDurationSeconds: {
    env: 'PUBLISH_MAX_DURATION_SECONDS',
    schema: int(1, 86_400),
    default: 6 * 3600,
    doc: 'audio.publish: longest recording accepted; a longer one fails as input_too_long before anything is charged',
  },
  computeLambdaMaxAudioSeconds: {
    env: 'COMPUTE_LAMBDA_MAX_AUDIO_SECONDS',
    schema: int(0, 86_400),
    default: 2 * 3600,
    doc: 'audio.publish: longest recording whose compute steps run on Lambda; a longer one runs on Fargate',
  },
  computeMemoryMb: {
    env: 'COMPUTE_MEMORY_MB',
    schema: int(512, 10_240),
    default: 3008,
    doc: 'memory of the compute function (Lambda gives CPU in proportion: about 2 vCPUs at 3008 MB)',
  },
  computeEphemeralStorageMb: {
    env: 'COMPUTE_EPHEMERAL_STORAGE_MB',
    schema: int(512, 10_240),
    default: 4096,
    doc: "the compute function's /tmp, which holds the input, its chunks and the stream while they are uploaded",
  },
  computeTimeoutSeconds: {
    env: 'COMPUTE_TIMEOUT_SECONDS',
    schema: int(60, 900),
    default: 900,
    doc: 'timeout of one compute step on Lambda (its most: 15 minutes)',
  },
  computeConcurrency: {
    env: 'COMPUTE_CONCURRENCY',
    schema: int(1, 1000),
    default: undefined,
    doc: "the compute function's reserved concurrency, so a burst of uploads cannot take the account's whole concurrency; unset, none is reserved. Lambda refuses a reservation that leaves the account less than 100 unreserved (a new account may have 10 in all), and a compute step beyond it waits for a running one to end",
  },
  computeFargateCpu: {
    env: 'COMPUTE_FARGATE_CPU',
    schema: z.coerce.number().refine((v) => FARGATE_CPU.includes(v as (typeof FARGATE_CPU)[number]), {
      message: `must be one of ${FARGATE_CPU.join(', ')}`,
    }),
    default: 2048,
    doc: 'CPU units (1024 = one vCPU) of the Fargate task that runs compute steps too long for Lambda',
  },
  computeFargateMemoryMb: {
    env: 'COMPUTE_FARGATE_MEMORY_MB',
    schema: int(512, 122_880),
    default: 8192,
    doc: 'memory of the Fargate compute task, within what Fargate allows for its CPU',
  },
  computeFargateStorageGib: {
    env: 'COMPUTE_FARGATE_STORAGE_GIB',
    schema: int(21, 200),
    default: 50,
    doc: "the Fargate compute task's ephemeral storage, which holds a long recording, its chunks and its stream",
  },
  embeddingModel: {
    env: 'EMBEDDING_MODEL',
    schema: z.enum(EMBEDDING_MODEL_NAMES),
    default: 'titan-text-v2',
    doc: `audio.publish and search: the Bedrock model passages and queries are embedded with (${EMBEDDING_MODEL_NAMES.join(', ')}; config/embedding-models.ts). Changing it needs every published recording embedded again`,
  },
  embeddingDimensions: {
    env: 'EMBEDDING_DIMENSIONS',
    schema: int(S3_VECTORS_LIMITS.minDimension, S3_VECTORS_LIMITS.maxDimension),
    default: 1024,
    doc: "dimensions of an embedding and of the vector index; one of the model's own",
  },
  embeddingNormalize: {
    env: 'EMBEDDING_NORMALIZE',
    schema: flag,
    default: true,
    doc: 'whether the model is asked for unit-length vectors (Titan; Cohere answers them anyway)',
  },
  embeddingPassagesPerJob: {
    env: 'EMBEDDING_PASSAGES_PER_JOB',
    schema: int(1, S3_VECTORS_LIMITS.vectorsPerPut),
    default: 32,
    doc: "audio.publish: passages one embedding job sends, one provider slot each job (Titan takes one passage a call, Cohere up to 96); at most 500, S3 Vectors' most per PutVectors",
  },
  vectorDistanceMetric: {
    env: 'VECTOR_DISTANCE_METRIC',
    schema: z.enum(['cosine', 'euclidean']),
    default: 'cosine',
    doc: 'how the vector index compares embeddings (S3 Vectors: cosine or euclidean); fixed when the index is made',
  },
  allowPrivateWebhooks: {
    env: 'ALLOW_PRIVATE_WEBHOOKS',
    schema: flag,
    default: false,
    doc: 'whether webhook targets may be http, loopback or private addresses',
  },
  scheduleRetryAttempts: {
    env: 'SCHEDULE_RETRY_ATTEMPTS',
    // EventBridge Scheduler's own bounds on a target's MaximumRetryAttempts.
    schema: int(0, 185),
    default: 3,
    doc: "times EventBridge Scheduler retries a schedule's firing that its function failed; a firing is idempotent, so a retry never makes a second job",
  },
  scheduleMaxEventAgeSeconds: {
    env: 'SCHEDULE_MAX_EVENT_AGE_SECONDS',
    // EventBridge Scheduler's own bounds on a target's MaximumEventAgeInSeconds.
    schema: int(60, 86_400),
    default: 3600,
    doc: "how long EventBridge Scheduler keeps retrying a firing before it goes to the schedules' dead-letter queue",
  },
} as const;

/** The catalog itself, read by the configuration reference (docs/configuration.md) generated from it. */
export const settingFields: Readonly<
  Record<string, { readonly env: string; readonly default: unknown; readonly doc: string }>
> = fields;

type Fields = typeof fields;
type FieldSettings = {
  // A setting whose default is unset is its schema's value, or undefined.
  readonly [K in keyof Fields]: Fields[K]['default'] extends undefined
    ? z.infer<Fields[K]['schema']> | undefined
    : Fields[K]['default'] extends boolean
      ? boolean
      : Fields[K]['default'] extends number
        ? number
        : string;
};
export type SettingName = keyof FieldSettings;

/** One provider's settings: its own in-flight limit (its slot pool) and how it is called. */
export interface ProviderSettings {
  /** `MAX_IN_FLIGHT_<PROVIDER>`, else `MAX_IN_FLIGHT`. */
  readonly maxInFlight: number;
  /** The catalog's answer, or `PROVIDER_IDEMPOTENT` for a provider that leaves it to the deployment. */
  readonly deduplicates: boolean;
  /** `PROVIDER_TIMEOUT_MS_<PROVIDER>`, else `PROVIDER_TIMEOUT_MS`. */
  readonly submitTimeoutMs: number;
  /** `PROVIDER_BASE_URL_<PROVIDER>`, else the catalog's; the provider's secret may override it (`baseUrl`). */
  readonly baseUrl: string;
  /**
   * Grants a minute and at once, held in the same write as the slot:
   * `RATE_PER_MINUTE_<PROVIDER>` (0: none) and `RATE_BURST_<PROVIDER>`, else
   * the catalog's. Absent: none declared, and one is learned from the
   * provider's throttling.
   */
  readonly rate?: { readonly perMinute: number; readonly burst: number };
}

export type Settings = FieldSettings & {
  readonly providers: { readonly [P in ProviderName]: ProviderSettings };
  /** The provider each job type runs on: `PROVIDER_<JOB_TYPE>`, else the job type's own. */
  readonly jobTypeProviders: { readonly [T in JobType]: ProviderName };
};

/** The environment variables of one provider's settings. */
export const providerSettingEnv = (name: string) => {
  const suffix = providerEnvSuffix(name);
  return {
    maxInFlight: `MAX_IN_FLIGHT_${suffix}`,
    submitTimeoutMs: `PROVIDER_TIMEOUT_MS_${suffix}`,
    baseUrl: `PROVIDER_BASE_URL_${suffix}`,
    ratePerMinute: `RATE_PER_MINUTE_${suffix}`,
    rateBurst: `RATE_BURST_${suffix}`,
  } as const;
};

/** The environment variable naming a job type's provider. */
export const jobTypeProviderEnv = (jobType: string): string => `PROVIDER_${jobTypeEnvSuffix(jobType)}`;

export class SettingsError extends Error {
  constructor(readonly problems: readonly string[]) {
    super(`Invalid Longhaul settings:\n${problems.map((p) => `  - ${p}`).join('\n')}`);
    this.name = 'SettingsError';
  }
}

/**
 * Reads every setting from `env`, falling back to its default, and checks the
 * relations between them. Throws a {@link SettingsError} listing every bad value.
 */
export function loadSettings(env: Readonly<Record<string, string | undefined>>): Settings {
  const problems: string[] = [];
  const values: Record<string, unknown> = {};
  for (const [name, field] of Object.entries(fields)) {
    values[name] = readVariable(
      env,
      problems,
      field.env,
      field.schema as z.ZodType,
      field.default as unknown,
      field.doc,
    );
  }
  const fieldSettings = values as FieldSettings;
  const settings: Settings = {
    ...fieldSettings,
    providers: providerSettings(env, fieldSettings, problems),
    jobTypeProviders: jobTypeProviders(env, problems),
  };
  if (problems.length === 0 && settings.apiBurstLimit < settings.apiRateLimit) {
    problems.push(
      `API_BURST_LIMIT (${settings.apiBurstLimit}) must be at least API_RATE_LIMIT (${settings.apiRateLimit})`,
    );
  }
  if (problems.length === 0 && settings.awaitHeartbeatSeconds * 1000 >= settings.jobTimeoutMs) {
    // Step Functions requires a task's heartbeat to be shorter than its timeout.
    problems.push(
      `AWAIT_HEARTBEAT_SECONDS (${settings.awaitHeartbeatSeconds}) must be shorter than JOB_TIMEOUT_MS (${settings.jobTimeoutMs} ms)`,
    );
  }
  if (problems.length === 0 && settings.computeLambdaMaxAudioSeconds > settings.publishMaxDurationSeconds) {
    problems.push(
      `COMPUTE_LAMBDA_MAX_AUDIO_SECONDS (${settings.computeLambdaMaxAudioSeconds}) must not exceed PUBLISH_MAX_DURATION_SECONDS (${settings.publishMaxDurationSeconds})`,
    );
  }
  const model = EMBEDDING_MODELS[settings.embeddingModel as keyof typeof EMBEDDING_MODELS];
  if (
    problems.length === 0 &&
    !(model.dimensions as readonly number[]).includes(settings.embeddingDimensions)
  ) {
    problems.push(
      `EMBEDDING_DIMENSIONS (${settings.embeddingDimensions}) must be one that ${model.title} answers with: ${model.dimensions.join(', ')}`,
    );
  }
  const fargateMemory = FARGATE_MEMORY_MB[settings.computeFargateCpu];
  if (
    problems.length === 0 &&
    fargateMemory &&
    (settings.computeFargateMemoryMb < fargateMemory[0] || settings.computeFargateMemoryMb > fargateMemory[1])
  ) {
    problems.push(
      `COMPUTE_FARGATE_MEMORY_MB (${settings.computeFargateMemoryMb}) must be from ${fargateMemory[0]} to ${fargateMemory[1]} with COMPUTE_FARGATE_CPU ${settings.computeFargateCpu}`,
    );
  }
  if (problems.length > 0) throw new SettingsError(problems);
  return Object.freeze(settings);
}

/**
 * The settings as environment variables, for handing to a Lambda function or
 * to the local stack's handlers, which read them back with {@link loadSettings}.
 */
export function settingsEnvironment(settings: Settings): Record<string, string> {
  const environment: Record<string, string> = Object.fromEntries(
    Object.entries(fields)
      .filter(([name]) => settings[name as SettingName] !== undefined)
      .map(([name, field]) => [field.env, String(settings[name as SettingName])]),
  );
  for (const name of PROVIDER_NAMES) {
    const provider = settings.providers[name];
    const env = providerSettingEnv(name);
    environment[env.maxInFlight] = String(provider.maxInFlight);
    environment[env.submitTimeoutMs] = String(provider.submitTimeoutMs);
    environment[env.baseUrl] = provider.baseUrl;
    environment[env.ratePerMinute] = String(provider.rate?.perMinute ?? 0);
    if (provider.rate) environment[env.rateBurst] = String(provider.rate.burst);
  }
  for (const module of JOB_TYPE_MODULES) {
    environment[jobTypeProviderEnv(module.name)] = settings.jobTypeProviders[module.name];
  }
  return environment;
}

/**
 * One variable: its value parsed by `schema`, or `fallback` when unset. A bad
 * value is added to `problems`, naming the variable and what it is for.
 */
function readVariable<T>(
  env: Readonly<Record<string, string | undefined>>,
  problems: string[],
  variable: string,
  schema: z.ZodType<T>,
  fallback: T,
  doc: string,
): T {
  const raw = env[variable];
  if (raw === undefined || raw === '') return fallback;
  const parsed = schema.safeParse(raw.trim());
  if (parsed.success) return parsed.data;
  const reason = parsed.error.issues.map((issue) => issue.message).join('; ');
  problems.push(`${variable}=${JSON.stringify(raw)}: ${reason} (${doc})`);
  return fallback;
}

function providerSettings(
  env: Readonly<Record<string, string | undefined>>,
  defaults: FieldSettings,
  problems: string[],
): Settings['providers'] {
  const read = <T>(variable: string, schema: z.ZodType<T>, fallback: T, doc: string): T =>
    readVariable(env, problems, variable, schema, fallback, doc);
  return Object.fromEntries(
    PROVIDER_NAMES.map((name) => {
      const spec: ProviderSpec = PROVIDERS[name];
      const variables = providerSettingEnv(name);
      const perMinute = read(
        variables.ratePerMinute,
        int(0, 1_000_000),
        spec.rate?.requestsPerMinute ?? 0,
        `submissions a minute to ${spec.title}, 0 for none`,
      );
      const burst = read(
        variables.rateBurst,
        int(1, 100_000),
        spec.rate?.burst ?? 1,
        `submissions to ${spec.title} at once within its rate`,
      );
      const settings: ProviderSettings = {
        maxInFlight: read(
          variables.maxInFlight,
          fields.maxInFlight.schema,
          defaults.maxInFlight,
          `jobs at ${spec.title} at once`,
        ),
        deduplicates: spec.deduplicates === 'setting' ? defaults.providerIdempotent : spec.deduplicates,
        submitTimeoutMs: read(
          variables.submitTimeoutMs,
          fields.providerSubmitTimeoutMs.schema,
          defaults.providerSubmitTimeoutMs,
          `deadline of one call to ${spec.title}`,
        ),
        baseUrl: read(
          variables.baseUrl,
          z.url({ protocol: /^https?$/, error: 'must be an http or https URL' }),
          spec.baseUrl as string,
          `base URL of ${spec.title}'s API`,
        ),
        ...(perMinute > 0 ? { rate: { perMinute, burst } } : {}),
      };
      return [name, settings];
    }),
  ) as Settings['providers'];
}

function jobTypeProviders(
  env: Readonly<Record<string, string | undefined>>,
  problems: string[],
): Settings['jobTypeProviders'] {
  return Object.fromEntries(
    JOB_TYPE_MODULES.map((module) => {
      const variable = jobTypeProviderEnv(module.name);
      const raw = env[variable]?.trim();
      const supported = Object.keys(module.providers);
      const chosen = raw === undefined || raw === '' ? module.provider : raw;
      if (!isProviderName(chosen)) {
        problems.push(
          `${variable}=${JSON.stringify(raw)}: no provider is named so (one of ${PROVIDER_NAMES.join(', ')})`,
        );
      } else if (!supported.includes(chosen)) {
        problems.push(
          `${raw === undefined || raw === '' ? `job type ${module.name}` : `${variable}=${JSON.stringify(raw)}`}: ${module.name} cannot run on ${chosen} (it runs on ${supported.join(', ')})`,
        );
      }
      return [module.name, chosen];
    }),
  ) as Settings['jobTypeProviders'];
}

/** The defaults, with no environment applied. */
export const defaultSettings: Settings = loadSettings({});

/** Visibility timeout of the jobs queue: six times the consumer's timeout, as AWS advises for Lambda consumers. */
export function queueVisibilityTimeoutSeconds(settings: Settings): number {
  return settings.dispatchTimeoutSeconds * 6;
}

/** Lambda's limit on a synchronous invocation's request payload: the whole event's JSON, in bytes. */
export const LAMBDA_SYNC_REQUEST_BYTES = 6 * 1024 * 1024;

/**
 * Body size limits of the contract; larger inputs go through POST /v1/uploads.
 *
 * A multipart body reaches the function base64-encoded (4/3 of its size) inside
 * an event that also carries the headers (twice: single and multi-value), the
 * query and the request context. Past Lambda's 6 MB, API Gateway answers 413
 * itself, with a body of its own that gateway responses do not reshape. So the
 * multipart limit leaves 256 KiB of the event for the rest (REST API headers
 * total at most 10 KB): 4.25 MiB, not the 4.5 MiB whose base64 alone is 6 MiB.
 */
export const bodyLimits = {
  jsonBytes: 1024 * 1024,
  multipartBytes: ((LAMBDA_SYNC_REQUEST_BYTES - 256 * 1024) / 4) * 3,
  fileBytes: 4 * 1024 * 1024,
} as const;

/** The AAC renditions of a published stream, in kbit/s, lowest first (the master playlist's order). */
export const publishRenditionsKbps = (settings: Pick<Settings, 'publishRenditionsKbps'>): number[] =>
  settings.publishRenditionsKbps
    .split(',')
    .map(Number)
    .sort((a, b) => a - b);

/** How the deployment embeds passages and queries, typed. */
export const embeddingSettingsOf = (
  settings: Pick<
    Settings,
    'embeddingModel' | 'embeddingDimensions' | 'embeddingNormalize' | 'embeddingPassagesPerJob'
  >,
) => ({
  model: settings.embeddingModel as EmbeddingModelName,
  dimensions: settings.embeddingDimensions,
  normalize: settings.embeddingNormalize,
  passagesPerJob: settings.embeddingPassagesPerJob,
});
