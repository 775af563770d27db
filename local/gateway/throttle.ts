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
