import type { EmbeddingModelName, EmbeddingPurpose } from './embedding-models';

/**
 * The media providers Longhaul can run jobs on: one entry each, read by the
 * CDK stack (a secret, a webhook route and a slot pool per provider), by the
 * local stack and by the handlers. Plain data; each provider's adapter (how
 * it is called, how its webhooks are verified) is one module under
 * `lambdas/providers/`, registered by the same name.
 */

export interface ProviderSpec {
  /** What operators read on the dashboard and in the secret's description. */
  readonly title: string;
  /**
   * Whether the provider answers a repeated idempotency key with the first
   * submission instead of a new charge. `'setting'`: as `PROVIDER_IDEMPOTENT`
   * says (a team's own provider). With `false`, an ambiguous submission goes
   * to review instead of being resent.
   */
  readonly deduplicates: boolean | 'setting';
  /** The API's base URL in production; the secret's `baseUrl` overrides it. */
  readonly baseUrl: string;
  /** Longhaul's route for this provider's webhooks. */
  readonly webhookPath: string;
  /**
   * Whether the provider can stop a job it accepted. Without it, a canceled job keeps its slot
   * until the provider ends it, or, if that end is never heard of, until the job timeout has passed.
   */
  readonly cancels: boolean;
  /** Where to get the API key and the webhook signing key, for the secret's description. */
  readonly credentials: string;
  /**
   * How the provider answers a submission. `webhook`: it accepts the job and
   * posts its outcome later (the workflow waits with a task token). `at-once`:
   * the submission's own answer is the outcome (a synchronous model call), so
   * the slot is held for the call and no webhook ever comes.
   */
  readonly answers: 'webhook' | 'at-once';
  /**
   * The rate the provider documents for submissions, beside its in-flight
   * limit: grants a minute and how many may go at once (`burst`). Absent: the
   * provider documents none, and Longhaul learns one from its throttling.
   * `RATE_PER_MINUTE_<PROVIDER>` and `RATE_BURST_<PROVIDER>` override it.
   */
  readonly rate?: ProviderRate;
}

/** A provider's documented submission rate. */
export interface ProviderRate {
  readonly requestsPerMinute: number;
  /** Grants that may go at once after a quiet spell; at least 1. */
  readonly burst: number;
}

export const PROVIDERS = {
  'longhaul-http': {
    title: 'Longhaul generic HTTP provider',
    deduplicates: 'setting',
    baseUrl: 'https://provider.invalid',
    // The route every deployment already gave its provider.
    webhookPath: '/v1/provider/events',
    cancels: true,
    credentials:
      'apiKey: the Bearer key of your provider; webhookSecret: the key it signs Provider-Signature with (register the generated one with it)',
    answers: 'webhook',
  },
  replicate: {
    title: 'Replicate',
    deduplicates: false,
    baseUrl: 'https://api.replicate.com/v1',
    webhookPath: '/v1/provider/replicate/events',
    cancels: true,
    credentials:
      'apiKey: a Replicate API token; webhookSecret: the whsec_… key of GET /v1/webhooks/default/secret',
    answers: 'webhook',
    // "You can create predictions at 600 requests per minute", with "short bursts" above it
    // (https://replicate.com/docs/topics/predictions/rate-limits): a second's worth at once.
    rate: { requestsPerMinute: 600, burst: 10 },
  },
  deepgram: {
    title: 'Deepgram',
    deduplicates: false,
    baseUrl: 'https://api.deepgram.com',
    webhookPath: '/v1/provider/deepgram/events',
    cancels: false,
    // No rate: Deepgram limits pre-recorded requests by how many run at once (100 a project on
    // pay-as-you-go, https://developers.deepgram.com/docs/working-with-concurrency-rate-limits),
    // which MAX_IN_FLIGHT_DEEPGRAM holds.
    credentials:
      'apiKey: a Deepgram API key; webhookSecret: any random string of 16 or more characters (Longhaul signs its callback URLs with it)',
    answers: 'webhook',
  },
  bedrock: {
    title: 'Amazon Bedrock',
    // InvokeModel takes no idempotency token: a call whose answer was lost may have been billed.
    deduplicates: false,
    // Unset: the SDK's regional endpoint (bedrock-runtime.<region>.amazonaws.com). Set only for a
    // Bedrock-compatible endpoint, such as the local simulator's.
    baseUrl: '',
    // No route is made for it (config/layout.ts): Bedrock answers each call at once and posts nothing.
    webhookPath: '/v1/provider/bedrock/events',
    // A call cannot be stopped once sent, and it is over before a cancel could be asked.
    cancels: false,
    credentials:
      'nothing to set: Longhaul calls Bedrock with its functions’ IAM roles, granted InvokeModel on the chosen model only (apiKey stays empty, webhookSecret is unused); baseUrl only to reach a Bedrock-compatible endpoint',
    answers: 'at-once',
    // No rate: the bedrock-runtime endpoint no longer enforces requests a minute, only tokens a minute
    // per model (https://docs.aws.amazon.com/bedrock/latest/userguide/quotas-runtime.html), which an
    // account's age and history lower: its throttles teach Longhaul the rate it gets.
  },
} as const satisfies Record<string, ProviderSpec>;

export type ProviderName = keyof typeof PROVIDERS;
export const PROVIDER_NAMES = Object.keys(PROVIDERS) as ProviderName[];

/** The provider of jobs stored before jobs named theirs: the only one there was. */
export const LEGACY_PROVIDER: ProviderName = 'longhaul-http';

export const isProviderName = (name: string): name is ProviderName => Object.hasOwn(PROVIDERS, name);

/** A provider's name as it appears in environment variables: `MAX_IN_FLIGHT_LONGHAUL_HTTP`. */
export const providerEnvSuffix = (name: string): string => name.toUpperCase().replace(/[^A-Z0-9]+/g, '_');

/**
 * What a job type hands each provider: the request its input maps to. A job
 * type names the model or options; the adapter adds the key and the webhook.
 */
export interface ProviderRequests {
  /** CONTRACT section 3: `POST /v1/generations {type, input, webhookUrl}`. */
  readonly 'longhaul-http': { readonly type: string; readonly input: Readonly<Record<string, unknown>> };
  /** A Replicate prediction: an official model (`owner/name`) or a version id, and the model's input. */
  readonly replicate: {
    readonly model: `${string}/${string}`;
    readonly version?: string;
    readonly input: Readonly<Record<string, unknown>>;
  };
  /** A Deepgram pre-recorded transcription of the audio at `url`, with its query options. */
  readonly deepgram: {
    readonly url: string;
    readonly options: Readonly<Record<string, string | number | boolean>>;
  };
  /** Texts embedded by one Bedrock model (config/embedding-models.ts), in as many calls as the model needs. */
  readonly bedrock: {
    readonly model: EmbeddingModelName;
    readonly texts: readonly string[];
    readonly purpose: EmbeddingPurpose;
    readonly dimensions: number;
    readonly normalize: boolean;
  };
}
