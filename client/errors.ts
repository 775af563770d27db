import type { Problem, ProblemCode } from './types';

/**
 * What went wrong, for machines: the API's problem code, or one of the SDK's
 * own for failures with no problem document (no answer, a deadline, an
 * abort, a misuse of the SDK, a webhook that does not verify).
 */
export type LonghaulErrorCode =
  | ProblemCode
  | 'unexpected-response'
  | 'connection-error'
  | 'timeout'
  | 'aborted'
  | 'usage-error'
  | 'invalid-webhook';

/**
 * The problem an error is about, as an RFC 9457 document: the API's own when
 * it answered with one, else one the SDK wrote (status 0: no HTTP answer).
 */
export type LonghaulProblem = Problem | UnexpectedResponse | ClientProblem;

/** What a LonghaulAPIError carries when the answer was not a problem document (a proxy's HTML page, say). */
export type UnexpectedResponse = Omit<Problem, 'code'> & { readonly code: 'unexpected-response' };

/** A problem the SDK describes itself: nothing, or nothing usable, came back from the API. */
export type ClientProblem = Omit<Problem, 'code' | 'status'> & {
  readonly code: Exclude<LonghaulErrorCode, ProblemCode | 'unexpected-response'>;
  readonly status: 0;
};

interface ErrorDetails {
  readonly headers?: Headers;
  readonly retryAfterMs?: number;
  readonly cause?: unknown;
}

/** The prefix of a problem's `instance` that carries the API's request id. */
const REQUEST_URN = 'urn:longhaul:request:';

/**
 * Every error the SDK throws: `catch (e) { if (e instanceof LonghaulError) … }`.
 * Switch on `code` or on the subclass; `problem` is the whole RFC 9457
 * document (the API's, or the SDK's own with status 0 when no answer came).
 */
export class LonghaulError extends Error {
  override readonly name: string = 'LonghaulError';
  readonly code: LonghaulErrorCode;
  /** The HTTP status; 0 when no answer came. */
  readonly status: number;
  /** The API's id of the request (quote it when asking about a failure), when an answer named one. */
  readonly requestId: string | undefined;
  /** The answer's headers, when there was an answer. */
  readonly headers: Headers | undefined;
  /** Milliseconds the server asked to wait (Retry-After), if it did. */
  readonly retryAfterMs: number | undefined;

  constructor(
    readonly problem: LonghaulProblem,
    details: ErrorDetails = {},
  ) {
    // The SDK's own problems are said in its own words; the API's are titled.
    const message = problem.status === 0 ? problem.detail : `${problem.title}: ${problem.detail}`;
    super(message, details.cause === undefined ? {} : { cause: details.cause });
    this.code = problem.code;
    this.status = problem.status;
    this.headers = details.headers;
    this.retryAfterMs = details.retryAfterMs;
    const fromHeader = details.headers?.get('x-amzn-requestid') ?? undefined;
    const fromProblem = problem.instance?.startsWith(REQUEST_URN)
      ? problem.instance.slice(REQUEST_URN.length)
      : undefined;
    this.requestId = fromHeader ?? fromProblem;
  }
}

/** The SDK's own problem document: what happened, with no HTTP status. */
function clientProblem(code: ClientProblem['code'], title: string, detail: string): ClientProblem {
  return { type: 'about:blank', title, status: 0, detail, code };
}

/**
 * The API answered with an error status. The subclass says which kind;
 * `problem` is the answer's problem document (or `unexpected-response`).
 */
export class LonghaulAPIError extends LonghaulError {
  override readonly name: string = 'LonghaulAPIError';
  declare readonly problem: Problem | UnexpectedResponse;

  constructor(problem: Problem | UnexpectedResponse, details: ErrorDetails = {}) {
    super(problem, details);
  }

  /** The error of the kind an answer's status says: a NotFoundError for 404, and so on. */
  static of(problem: Problem | UnexpectedResponse, details: ErrorDetails = {}): LonghaulAPIError {
    const Kind =
      API_ERROR_OF_STATUS[problem.status] ?? (problem.status >= 500 ? InternalServerError : undefined);
    return new (Kind ?? LonghaulAPIError)(problem, details);
  }
}

/** 400 or 422: the request was refused as it stands (`problem.errors` says where); sending it again will not help. */
export class ValidationError extends LonghaulAPIError {
  override readonly name: string = 'ValidationError';
}
/** 401: no key, or one the API does not know. */
export class AuthenticationError extends LonghaulAPIError {
  override readonly name: string = 'AuthenticationError';
}
/** 403: the key is known but may not do this (a tenant key on an admin route, say). */
export class PermissionDeniedError extends LonghaulAPIError {
  override readonly name: string = 'PermissionDeniedError';
}
/** 404: no such job, schedule, item or route for this key. */
export class NotFoundError extends LonghaulAPIError {
  override readonly name: string = 'NotFoundError';
}
/** 409: the resource is not in a state that allows this (a finished job, a key still in use). */
export class ConflictError extends LonghaulAPIError {
  override readonly name: string = 'ConflictError';
}
/** 429: too many requests, or the tenant's queue is full; `retryAfterMs` says when to try again. */
export class RateLimitError extends LonghaulAPIError {
  override readonly name: string = 'RateLimitError';
}
/** 5xx: the API failed; safe requests are retried before this is thrown. */
export class InternalServerError extends LonghaulAPIError {
  override readonly name: string = 'InternalServerError';
}

/** One home for which status is which kind. */
const API_ERROR_OF_STATUS: Readonly<Record<number, typeof LonghaulAPIError>> = {
  400: ValidationError,
  401: AuthenticationError,
  403: PermissionDeniedError,
  404: NotFoundError,
  409: ConflictError,
  422: ValidationError,
  429: RateLimitError,
};

/** No answer at all: the connection failed, was reset or timed out (after any retries). */
export class LonghaulConnectionError extends LonghaulError {
  override readonly name: string = 'LonghaulConnectionError';

  constructor(
    message: string,
    options: { readonly cause?: unknown } = {},
    /** `timeout` for a LonghaulTimeoutError. */
    code: 'connection-error' | 'timeout' = 'connection-error',
  ) {
    super(clientProblem(code, code === 'timeout' ? 'Timed out' : 'Connection error', message), options);
  }
}

/**
 * A deadline passed: each attempt of a request timed out (`timeoutMs`), or a
 * wait ran out of time (`waitForJob`'s `timeoutMs`; the job goes on). A kind
 * of connection error, as no answer came in time.
 */
export class LonghaulTimeoutError extends LonghaulConnectionError {
  override readonly name: string = 'LonghaulTimeoutError';

  constructor(message: string, options: { readonly cause?: unknown } = {}) {
    super(message, options, 'timeout');
  }
}

/** The caller's AbortSignal aborted the call; `cause` is the signal's reason. */
export class LonghaulUserAbortError extends LonghaulError {
  override readonly name: string = 'LonghaulUserAbortError';

  constructor(message = 'The call was aborted.', options: { readonly cause?: unknown } = {}) {
    super(clientProblem('aborted', 'Aborted', message), options);
  }
}

/** The client options a usage error can be about. */
export type LonghaulOptionName = 'baseUrl' | 'streamUrl' | 'apiKey' | 'adminKey' | 'allowInsecureHttp';

/** The SDK was used in a way that cannot work (a missing key, say); nothing was sent. */
export class LonghaulUsageError extends LonghaulError {
  override readonly name: string = 'LonghaulUsageError';

  constructor(
    message: string,
    /**
     * The client options that fix this, the one at fault first; every option
     * the message names is here, so a tool with settings of its own (the
     * CLI's environment variables) can name those instead.
     */
    readonly options: readonly LonghaulOptionName[] = [],
  ) {
    super(clientProblem('usage-error', 'Usage error', message));
  }
}

/** A webhook whose signature could not be verified: do not act on it. */
export class LonghaulWebhookError extends LonghaulError {
  override readonly name: string = 'LonghaulWebhookError';

  constructor(
    /** `malformed` (no usable header or body), `stale` (outside the tolerance) or `mismatch` (wrong signature). */
    readonly reason: 'malformed' | 'stale' | 'mismatch',
    message: string,
  ) {
    super(clientProblem('invalid-webhook', 'Invalid webhook', message));
  }
}

/**
 * The error to throw when `signal` aborted: a LonghaulTimeoutError for a
 * deadline (the reason is a `TimeoutError`), else a LonghaulUserAbortError.
 * Either keeps the signal's reason as its `cause`.
 */
export function abortError(signal: AbortSignal, what: string): LonghaulError {
  const reason: unknown = signal.reason;
  if (reason instanceof LonghaulError) return reason;
  if ((reason as { name?: unknown } | undefined)?.name === 'TimeoutError') {
    return new LonghaulTimeoutError(`${what}: the deadline passed.`, { cause: reason });
  }
  return new LonghaulUserAbortError(`${what}: aborted.`, { cause: reason });
}
