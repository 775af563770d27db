import { StepError } from '../../config/workflow-errors';
import type { AnsweredPart } from './provider';

/**
 * Typed domain errors. Handlers map them to RFC 9457 problems; anything else
 * is an internal error and is never shown to the client.
 */

/** One invalid part of a request: a body member (JSON Pointer) or a query parameter or header (by name). */
export interface FieldError {
  /** JSON Pointer (RFC 6901) into the request body, e.g. `/input/prompt`. */
  readonly pointer?: string;
  /** Name of the query parameter or header. */
  readonly parameter?: string;
  readonly detail: string;
}

export class ValidationError extends Error {
  override readonly name = 'ValidationError';
  constructor(
    message: string,
    readonly errors: readonly FieldError[] = [],
  ) {
    super(message);
  }
}

export class IdempotencyKeyMissingError extends Error {
  override readonly name = 'IdempotencyKeyMissingError';
}

/** The key was used before with a different request body. */
export class IdempotencyKeyReusedError extends Error {
  override readonly name = 'IdempotencyKeyReusedError';
}

/** The first request with this key has not finished yet. */
export class IdempotencyKeyInUseError extends Error {
  override readonly name = 'IdempotencyKeyInUseError';
}

export class JobNotFoundError extends Error {
  override readonly name = 'JobNotFoundError';
  constructor(readonly jobId: string) {
    super(`No job ${jobId}.`);
  }
}

/** The tenant has no schedule of this id (another tenant's is indistinguishable from none). */
export class ScheduleNotFoundError extends Error {
  override readonly name = 'ScheduleNotFoundError';
  constructor(readonly scheduleId: string) {
    super(`No schedule ${scheduleId}.`);
  }
}

/** The tenant has no media item of this id, or it was deleted (another tenant's is indistinguishable from none). */
export class MediaNotFoundError extends Error {
  override readonly name = 'MediaNotFoundError';
  constructor(readonly mediaId: string) {
    super(`No media item ${mediaId}.`);
  }
}

/** Neither a record nor an API key carries this tenant name. */
export class TenantNotFoundError extends Error {
  override readonly name = 'TenantNotFoundError';
  constructor(readonly tenant: string) {
    super(`No tenant ${tenant}.`);
  }
}

/** No provider of the catalog (config/providers.ts) has this name. */
export class ProviderNotFoundError extends Error {
  override readonly name = 'ProviderNotFoundError';
  constructor(readonly provider: string) {
    super(`No provider ${provider}.`);
  }
}

/** The tenant's queued and scheduled jobs already reach its `maxQueued`: the job was not stored. */
export class TenantQueueFullError extends Error {
  override readonly name = 'TenantQueueFullError';
  constructor(readonly tenant: string) {
    super(
      `Tenant ${tenant} has as many queued and scheduled jobs as its maxQueued allows; nothing was stored. Retry once some have started.`,
    );
  }
}

export class JobAlreadyFinishedError extends Error {
  override readonly name = 'JobAlreadyFinishedError';
  constructor(
    readonly jobId: string,
    readonly status: string,
  ) {
    super(`Job ${jobId} is already ${status}.`);
  }
}

/** Capacity the request needs is busy for now (a search's slot at the embedding provider): retry after a while. */
export class RateLimitedError extends Error {
  override readonly name = 'RateLimitedError';
  constructor(
    message: string,
    readonly retryAfterSeconds: number,
  ) {
    super(message);
  }
}

export class PayloadTooLargeError extends Error {
  override readonly name = 'PayloadTooLargeError';
}

export class UnsupportedMediaTypeError extends Error {
  override readonly name = 'UnsupportedMediaTypeError';
}

export class ForbiddenError extends Error {
  override readonly name = 'ForbiddenError';
}

/**
 * Provider outcomes. Their `name`s are the error types Step Functions sees, so
 * the workflow's Retry and Catch clauses match on them.
 */

/** An error that carries the job error code it leads to. */
abstract class CodedError extends Error {
  constructor(
    message: string,
    readonly code: string,
  ) {
    super(message);
  }
}

/** The provider definitely did not accept the submission and says it never will (4xx): fail the job now. */
export class ProviderRejectedError extends CodedError {
  override readonly name = StepError.providerRejected;
}

/**
 * The provider definitely did not accept the submission, but may later (503,
 * 429, a throttle, connection refused): its grants pause, for as long as it
 * asked (`retryAfterSeconds`) when it said. A submission made of several
 * calls may have had some answered before the refusal: `answered` is that
 * paid work, for the next attempt to go on from.
 */
export class ProviderUnavailableError extends Error {
  override readonly name = StepError.providerUnavailable;
  constructor(
    message: string,
    readonly retryAfterSeconds?: number,
    readonly answered?: AnsweredPart,
  ) {
    super(message);
  }
}

/**
 * The provider said it throttles or is down (429, 503, a throttle), or could
 * not be reached: the request did no work, and the provider's grants pause.
 * Other read failures (no record yet, a malformed answer) say nothing of the
 * provider as a whole.
 */
export class ProviderDownError extends ProviderUnavailableError {}

/**
 * The provider said it throttles (429, a ThrottlingException): a limit on
 * rate was met, which lowers the rate its grants are held to, where an
 * outage (503, unreachable) only pauses them.
 */
export class ProviderThrottledError extends ProviderDownError {}

/**
 * A step needs the answer of a provider that throttles or is down (or whose
 * grants are paused): it is tried again later, and its job waits, running.
 */
export class WaitingForProviderError extends Error {
  override readonly name = StepError.waitingForProvider;
}

/** The job's provider is paused: the job went back to its line, and this run of its workflow ends. */
export class ProviderPausedError extends Error {
  override readonly name = StepError.providerPaused;
}

/** The submission was sent and its outcome is unknown (timeout or reset after the request was written). */
export class AmbiguousSubmissionError extends Error {
  override readonly name = StepError.providerAmbiguous;
}

/** The job cannot safely go on without a person: it is marked needs_review and the workflow stops. */
export class NeedsReviewError extends CodedError {
  override readonly name = StepError.needsReview;
}

/** A step's input is unusable (missing asset, wrong media type): retrying cannot help. */
export class InvalidJobInputError extends CodedError {
  override readonly name = StepError.invalidJobInput;
}

/**
 * The message of a failure's cause as Step Functions reports it: a Lambda
 * error's cause is the error as JSON (`{errorType, errorMessage, trace}`); any
 * other (SendTaskFailure, States.*) is the message itself.
 */
export function causeMessage(cause: string): string {
  try {
    const parsed = JSON.parse(cause) as { errorMessage?: unknown };
    if (typeof parsed.errorMessage === 'string') return parsed.errorMessage;
  } catch {
    // Not JSON: a plain-text cause.
  }
  return cause;
}

/** The cause sent with StepError.jobCanceled when the client cancels a running job: coded, so the job's error reads `canceled`. */
export const JOB_CANCELED_CAUSE = '[canceled] Canceled by the client.';

/**
 * The job cannot be resumed: it is not failed, or its failure is not one a
 * resume may go on from (an outcome at the provider that is known, or not
 * known, to be final). `reason` is the problem's detail.
 */
export class JobNotResumableError extends Error {
  override readonly name = 'JobNotResumableError';
  constructor(
    readonly jobId: string,
    reason: string,
  ) {
    super(reason);
  }
}

/** Raised by the workflow's park step while its job is failed: the execution fails there, where a resume redrives it. */
export class JobFailedError extends Error {
  override readonly name = StepError.jobFailed;
}

/** A resumed job's provider has no slot free just now: the park step is retried. */
export class SlotUnavailableError extends Error {
  override readonly name = StepError.slotUnavailable;
}

/** Only jobs in review can be resolved by an operator. */
export class JobNotInReviewError extends Error {
  override readonly name = 'JobNotInReviewError';
  constructor(
    readonly jobId: string,
    readonly status: string,
  ) {
    super(`Job ${jobId} is not in review (${status}).`);
  }
}

/** An input that lives elsewhere could not be reached just now: the workflow retries `prepare`. */
export class AssetUnavailableError extends Error {
  override readonly name = StepError.assetUnavailable;
}
