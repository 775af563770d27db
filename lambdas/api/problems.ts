import { type Problem, problem } from '../../config/problems';
import {
  ForbiddenError,
  IdempotencyKeyInUseError,
  IdempotencyKeyMissingError,
  IdempotencyKeyReusedError,
  JobAlreadyFinishedError,
  JobNotFoundError,
  JobNotInReviewError,
  JobNotResumableError,
  MediaNotFoundError,
  PayloadTooLargeError,
  ProviderNotFoundError,
  RateLimitedError,
  ScheduleNotFoundError,
  TenantNotFoundError,
  TenantQueueFullError,
  UnsupportedMediaTypeError,
  ValidationError,
} from '../domain/errors';

export interface MappedProblem {
  readonly problem: Problem;
  readonly headers: Record<string, string>;
  /** False for errors that are not the client's: they are logged with their cause and shown generically. */
  readonly clientError: boolean;
}

/** Seconds a client should wait before retrying a request whose key is still in use. */
export const IN_USE_RETRY_AFTER_SECONDS = 1;

/**
 * Seconds a tenant whose backlog is at its cap should wait before submitting
 * again: a backlog at its cap drains by the tenant's share of the providers'
 * slots, so a job or more starts in the meantime, while a sooner retry would
 * most likely be refused again.
 */
export const QUEUE_FULL_RETRY_AFTER_SECONDS = 30;

/** Maps a typed domain error to its RFC 9457 problem; anything unknown is an internal error with no detail leaked. */
export function toProblem(error: unknown): MappedProblem {
  const client = (p: Problem, headers: Record<string, string> = {}): MappedProblem => ({
    problem: p,
    headers,
    clientError: true,
  });
  if (error instanceof ValidationError) {
    return client(
      problem('validation-failed', error.message, error.errors.length ? error.errors : undefined),
    );
  }
  if (error instanceof IdempotencyKeyMissingError) {
    return client(problem('idempotency-key-missing', error.message));
  }
  if (error instanceof IdempotencyKeyInUseError) {
    return client(problem('idempotency-key-in-use', error.message), {
      'retry-after': String(IN_USE_RETRY_AFTER_SECONDS),
    });
  }
  if (error instanceof TenantQueueFullError) {
    return client(problem('tenant-queue-full', error.message), {
      'retry-after': String(QUEUE_FULL_RETRY_AFTER_SECONDS),
    });
  }
  if (error instanceof RateLimitedError) {
    return client(problem('rate-limited', error.message), {
      'retry-after': String(error.retryAfterSeconds),
    });
  }
  if (error instanceof IdempotencyKeyReusedError) {
    return client(problem('idempotency-key-reused', error.message));
  }
  if (
    error instanceof JobNotFoundError ||
    error instanceof TenantNotFoundError ||
    error instanceof ProviderNotFoundError ||
    error instanceof ScheduleNotFoundError ||
    error instanceof MediaNotFoundError
  ) {
    return client(problem('not-found', error.message));
  }
  if (error instanceof JobAlreadyFinishedError) {
    return client(problem('job-already-finished', error.message));
  }
  if (error instanceof JobNotInReviewError) {
    return client(problem('job-not-in-review', error.message));
  }
  if (error instanceof JobNotResumableError) {
    return client(problem('job-not-resumable', error.message));
  }
  if (error instanceof PayloadTooLargeError) {
    return client(problem('payload-too-large', error.message));
  }
  if (error instanceof UnsupportedMediaTypeError) {
    return client(problem('unsupported-media-type', error.message));
  }
  if (error instanceof ForbiddenError) {
    return client(problem('forbidden', error.message));
  }
  return {
    problem: problem('internal-error', 'The request failed on our side; retry later.'),
    headers: {},
    clientError: false,
  };
}
