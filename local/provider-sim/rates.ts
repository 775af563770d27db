/**
 * Rate limits as the simulated providers keep them: token buckets that a
 * submission takes one token from each of, refilled continuously at the
 * limit's rate up to its burst. A submission that finds a bucket empty is
 * refused with the provider's 429 and takes nothing, so a client that waits
 * what it is told gets through.
 */

export interface RateLimit {
  readonly requestsPerMinute: number;
  /** How many submissions a full bucket lets through at once. */
  readonly burst: number;
}

/**
 * Replicate's documented create limit
 * (https://replicate.com/docs/topics/predictions/rate-limits): 600 creates a
 * minute. The simulator does not impose it by itself; a test sets it with
 * `POST /_sim/config {provider: "replicate", requestsPerMinute: 600}`.
 */
export const REPLICATE_CREATES_PER_MINUTE = 600;

/**
 * Replicate's tightening when credit runs low. Its page says only that the
 * limits get "stronger" as credit runs out, and gives one figure: an account
 * with granted credit and no payment method is held to 1 request a second
 * and at most 6 a minute. The simulator uses that figure for `lowCredit`: a
 * one-token bucket refilled every second and a six-token one refilled every
 * ten seconds.
 */
export const REPLICATE_LOW_CREDIT_LIMITS: readonly RateLimit[] = [
  { requestsPerMinute: 60, burst: 1 },
  { requestsPerMinute: 6, burst: 6 },
];

/** A limit's bucket holds a minute's worth unless told otherwise: N a minute lets N through at once. */
export function defaultBurst(requestsPerMinute: number): number {
  return Math.max(1, Math.floor(requestsPerMinute));
}

/**
 * One limit's bucket, kept as GCRA keeps a token bucket: the time the next
 * submission would be due if they came exactly at the limit's rate. A full
 * bucket lets `burst` through ahead of that time. Times stay whole
 * milliseconds for any rate that divides a minute into them, so a refill
 * comes exactly when it is due.
 */
class TokenBucket {
  private readonly intervalMs: number;
  private dueAt: number;

  constructor(
    readonly limit: RateLimit,
    now: number,
  ) {
    this.intervalMs = 60_000 / limit.requestsPerMinute;
    this.dueAt = now;
  }

  /** Milliseconds until a token is there at `now`; 0 when one is. */
  waitMs(now: number): number {
    return Math.max(0, this.dueAt - (this.limit.burst - 1) * this.intervalMs - now);
  }

  take(now: number): void {
    this.dueAt = Math.max(this.dueAt, now) + this.intervalMs;
  }
}

/**
 * The buckets of every scope (a provider, or one of its models), made on
 * first use and made again full when the scope's limits change.
 */
export class RateLimiter {
  private readonly scopes = new Map<string, { limits: string; buckets: TokenBucket[] }>();

  constructor(private readonly clock: () => number = Date.now) {}

  /**
   * Admits a submission in `scope` under `limits`: 0 when every bucket had a
   * token (one is taken from each), else the milliseconds until all of them
   * will, and nothing is taken.
   */
  admit(scope: string, limits: readonly RateLimit[]): number {
    if (limits.length === 0) return 0;
    const key = JSON.stringify(limits);
    const now = this.clock();
    let state = this.scopes.get(scope);
    if (state?.limits !== key) {
      state = { limits: key, buckets: limits.map((limit) => new TokenBucket(limit, now)) };
      this.scopes.set(scope, state);
    }
    const waitMs = Math.max(...state.buckets.map((bucket) => bucket.waitMs(now)));
    if (waitMs > 0) return waitMs;
    for (const bucket of state.buckets) bucket.take(now);
    return 0;
  }

  clear(): void {
    this.scopes.clear();
  }
}
