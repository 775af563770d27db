import type { ThrottleFacts } from '../template';

/**
 * Per-client throttling as a usage plan applies it: a token bucket per usage
 * identifier that holds `burst` tokens and refills at `ratePerSecond`; a
 * request takes one token or is refused.
 */
export class TokenBuckets {
  readonly #buckets = new Map<string, { tokens: number; updatedAt: number }>();

  constructor(
    private readonly ratePerSecond: number,
    private readonly burst: number,
    private readonly now: () => number = () => performance.now(),
  ) {}

  /** The buckets of an API Gateway throttle (a stage's or a usage plan's). */
  static of(throttle: ThrottleFacts): TokenBuckets {
    return new TokenBuckets(throttle.rateLimit, throttle.burstLimit);
  }

  /** Takes a token for `id`; false when its bucket is empty. */
  take(id: string): boolean {
    const now = this.now();
    const bucket = this.#buckets.get(id) ?? { tokens: this.burst, updatedAt: now };
    bucket.tokens = Math.min(
      this.burst,
      bucket.tokens + ((now - bucket.updatedAt) / 1000) * this.ratePerSecond,
    );
    bucket.updatedAt = now;
    this.#buckets.set(id, bucket);
    if (bucket.tokens < 1) return false;
    bucket.tokens -= 1;
    return true;
  }
}
