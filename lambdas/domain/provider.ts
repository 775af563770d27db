import type { ProviderName, ProviderRequests } from '../../config/providers';

/**
 * The media provider port: one adapter module per provider under
 * `lambdas/providers/`. Errors: ProviderRejectedError (refused, definitely not
 * accepted), ProviderUnavailableError (not accepted: unreachable, 429, 503),
 * AmbiguousSubmissionError (the request was written and the outcome is
 * unknown: a timeout, a reset, a 5xx or an answer that does not parse).
 */

export interface ProviderSubmission<P extends ProviderName = ProviderName> {
  /** One per submission the job means to make: a deduplicating provider charges a repeated key once. */
  readonly idempotencyKey: string;
  /** What the job type mapped its input to, in this provider's terms. */
  readonly request: ProviderRequests[P];
  /** Where the provider posts progress and completion events for this submission. */
  readonly webhookUrl: string;
  /** What earlier attempts of this submission were answered and paid for: only the rest is sent. */
  readonly answered?: AnsweredPart;
}

/**
 * The answered part of a submission its provider takes in several calls
 * (Bedrock embeds a run of texts some at a time): work done and paid for
 * before a later call was refused without doing any. Kept with the job, it is
 * handed to the next attempt, which sends only the calls that are left, so a
 * throttle halfway is neither an ambiguity nor a second charge.
 */
export interface AnsweredPart {
  /** Calls the provider answered, every attempt's together. */
  readonly calls: number;
  /** What they answered, in the adapter's own terms: only the adapter reads it. */
  readonly output: unknown;
}

export type ProviderJobState = 'queued' | 'running' | 'succeeded' | 'failed' | 'canceled';

export interface ProviderJobStatus {
  readonly id: string;
  readonly status: ProviderJobState;
  /** 0..100; providers that report none say 0 until they finish. */
  readonly progress: number;
  /** The provider's own output, which the job type maps to the job's result. */
  readonly output?: unknown;
  readonly error?: { readonly code: string; readonly message: string };
}

export interface Provider<P extends ProviderName = ProviderName> {
  readonly name: P;
  /** Whether a repeated idempotency key is answered with the first submission instead of a new charge. */
  readonly deduplicates: boolean;
  /**
   * Sends the submission. A provider that answers at once (config/providers.ts
   * `answers: 'at-once'`) returns the outcome with it: `answer.output` is what a
   * completion webhook would have carried.
   */
  submit(
    submission: ProviderSubmission<P>,
  ): Promise<{ readonly providerJobId: string; readonly answer?: { readonly output: unknown } }>;
  /** What the provider says of its job now. ProviderUnavailableError when it cannot tell (yet). */
  status(providerJobId: string): Promise<ProviderJobStatus>;
  /** Asks the provider to stop its job; resolves only once the provider confirmed it. */
  cancel(providerJobId: string): Promise<void>;
}

/** A provider's webhook as Longhaul's route received it. */
export interface ProviderWebhookRequest {
  /** Header names in lower case. */
  readonly headers: Readonly<Record<string, string | undefined>>;
  readonly query: Readonly<Record<string, string | undefined>>;
  /** The raw body, exactly as signed. */
  readonly body: string;
}

export type WebhookCheck = 'valid' | 'malformed' | 'stale' | 'mismatch';

/**
 * What a provider's webhook says, in Longhaul's terms. `progress` events are
 * streamed live and stored about once a second; the others are final.
 */
export type ProviderEvent =
  | { readonly type: 'progress'; readonly id: string; readonly progress: number }
  | { readonly type: 'succeeded'; readonly id: string; readonly output?: unknown }
  | {
      readonly type: 'failed';
      readonly id: string;
      readonly error: { readonly code: string; readonly message: string };
    }
  | { readonly type: 'canceled'; readonly id: string };

/** Verifying and reading one provider's webhooks: every provider signs differently. */
export interface ProviderWebhooks {
  /** Whether the webhook is authentic and fresh; nothing of an unverified webhook is read. */
  verify(request: ProviderWebhookRequest, nowSeconds: number): WebhookCheck;
  /**
   * The events a verified webhook carries (none for one that says nothing
   * Longhaul acts on). Throws a ValidationError for a body that does not parse.
   */
  parse(request: ProviderWebhookRequest): readonly ProviderEvent[];
}
