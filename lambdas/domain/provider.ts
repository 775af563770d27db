import type { JobType } from './job';

/** The media provider port. Errors: ProviderRejectedError, ProviderUnavailableError, AmbiguousSubmissionError. */

export interface ProviderSubmission {
  /** One per user action (the job id): a deduplicating provider charges a repeated key once. */
  readonly idempotencyKey: string;
  readonly type: JobType;
  readonly input: Record<string, unknown>;
  /** Where the provider posts progress and completion events for this submission. */
  readonly webhookUrl: string;
}

export type ProviderJobState = 'queued' | 'running' | 'succeeded' | 'failed' | 'canceled';

export interface ProviderJobStatus {
  readonly id: string;
  readonly status: ProviderJobState;
  readonly progress: number;
  readonly output?: unknown;
  readonly error?: { readonly code: string; readonly message: string };
}

export interface Provider {
  /** Whether a repeated idempotency key is answered with the first submission instead of a new charge. */
  readonly deduplicates: boolean;
  submit(submission: ProviderSubmission): Promise<{ readonly providerJobId: string }>;
  status(providerJobId: string): Promise<ProviderJobStatus>;
  cancel(providerJobId: string): Promise<void>;
}
