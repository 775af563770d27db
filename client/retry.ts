/**
 * When and how long to wait before retrying: capped exponential backoff with
 * full jitter (a uniformly random delay between zero and the exponential
 * ceiling, so many clients retrying at once spread out), never shorter than
 * the server's Retry-After.
 */

export interface RetryOptions {
  /**
   * Attempts in all, the first one included: 3 is two retries, as openai-node
   * and stripe-node default to (`maxRetries` on the client sets the same).
   * @default 3
   */
  readonly maxAttempts?: number;
  /** Ceiling of the first retry's delay; doubles with each retry. @default 250 */
  readonly baseDelayMs?: number;
  /** The ceiling stops doubling here. @default 20000 */
  readonly maxDelayMs?: number;
  /** A Retry-After longer than this is not waited for: the error is thrown instead. @default 120000 */
  readonly maxRetryAfterMs?: number;
}

export const defaultRetryOptions: Required<RetryOptions> = {
  maxAttempts: 3,
  baseDelayMs: 250,
  maxDelayMs: 20_000,
  maxRetryAfterMs: 120_000,
};

/** The ceiling of the delay before retry number `retry` (0 for the first retry). */
export function backoffCeilingMs(retry: number, options: Required<RetryOptions>): number {
  return Math.min(options.maxDelayMs, options.baseDelayMs * 2 ** retry);
}

/** Full jitter: uniform in [0, ceiling). `random` returns values in [0, 1), as Math.random does. */
export function backoffDelayMs(
  retry: number,
  options: Required<RetryOptions>,
  random: () => number = Math.random,
): number {
  return Math.floor(random() * backoffCeilingMs(retry, options));
}

/**
 * The Retry-After header in milliseconds: delta-seconds or an HTTP date
 * (RFC 9110 section 10.2.3). Undefined when absent or unreadable.
 */
export function parseRetryAfter(
  value: string | null | undefined,
  nowMs: number = Date.now(),
): number | undefined {
  if (value === null || value === undefined) return undefined;
  const trimmed = value.trim();
  if (/^\d+$/.test(trimmed)) return Number(trimmed) * 1000;
  // An HTTP date names its day and month; a bare number that is no delta-seconds is no date.
  const date = /[a-z]/i.test(trimmed) ? Date.parse(trimmed) : Number.NaN;
  return Number.isNaN(date) ? undefined : Math.max(0, date - nowMs);
}

/** The delay before retry number `retry`: the jittered backoff, but at least what the server asked for. */
export function retryDelayMs(
  retry: number,
  retryAfterMs: number | undefined,
  options: Required<RetryOptions>,
  random: () => number = Math.random,
): number {
  const jittered = backoffDelayMs(retry, options, random);
  return retryAfterMs === undefined ? jittered : Math.max(retryAfterMs, jittered);
}

/** Waits `ms`, or rejects with the signal's reason as soon as it aborts. */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) {
      reject(signal.reason);
      return;
    }
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal?.reason);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}
