import type { Problem, ProblemCode } from './types';

/** A problem code, or `unexpected-response` for an error answer that was no problem document. */
export type LonghaulErrorCode = ProblemCode | 'unexpected-response';

/**
 * The API refused or failed a request. `code` is the problem's `code`
 * (switch on it), `problem` the whole RFC 9457 document.
 */
export class LonghaulError extends Error {
  override readonly name = 'LonghaulError';
  readonly code: LonghaulErrorCode;
  readonly status: number;
  /** Milliseconds the server asked to wait (Retry-After), if it did. */
  readonly retryAfterMs: number | undefined;

  constructor(
    readonly problem: Problem | UnexpectedResponse,
    options: { readonly retryAfterMs?: number; readonly cause?: unknown } = {},
  ) {
    super(`${problem.title}: ${problem.detail}`, options.cause === undefined ? {} : { cause: options.cause });
    this.code = problem.code;
    this.status = problem.status;
    this.retryAfterMs = options.retryAfterMs;
  }
}

/** What a LonghaulError carries when the answer was not a problem document (a proxy's HTML page, say). */
export type UnexpectedResponse = Omit<Problem, 'code'> & { readonly code: 'unexpected-response' };

/** No answer at all: the connection failed, was reset or timed out (after any retries). */
export class LonghaulConnectionError extends Error {
  override readonly name = 'LonghaulConnectionError';
}

/** The client options a usage error can be about. */
export type LonghaulOptionName = 'baseUrl' | 'streamUrl' | 'apiKey' | 'adminKey' | 'allowInsecureHttp';

/** The SDK was used in a way that cannot work (a missing key, say); nothing was sent. */
export class LonghaulUsageError extends Error {
  override readonly name = 'LonghaulUsageError';

  constructor(
    message: string,
    /**
     * The client options that fix this, the one at fault first; every option
     * the message names is here, so a tool with settings of its own (the
     * CLI's environment variables) can name those instead.
     */
    readonly options: readonly LonghaulOptionName[] = [],
  ) {
    super(message);
  }
}

/** A webhook whose signature could not be verified: do not act on it. */
export class LonghaulWebhookError extends Error {
  override readonly name = 'LonghaulWebhookError';
  constructor(
    /** `malformed` (no usable header or body), `stale` (outside the tolerance) or `mismatch` (wrong signature). */
    readonly reason: 'malformed' | 'stale' | 'mismatch',
    message: string,
  ) {
    super(message);
  }
}
