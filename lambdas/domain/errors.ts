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

export class JobAlreadyFinishedError extends Error {
  override readonly name = 'JobAlreadyFinishedError';
  constructor(
    readonly jobId: string,
    readonly status: string,
  ) {
    super(`Job ${jobId} is already ${status}.`);
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
