import { createHash } from 'node:crypto';
import type { APIGatewayAuthorizerResult, APIGatewayRequestAuthorizerEvent } from 'aws-lambda';
import { AUTHORIZER_DENIAL } from '../../config/layout';
import { type CheckedAuthorizerResult, checkAuthorizerResult } from './policy';

export type AuthorizerOutcome =
  | { readonly kind: 'authorized'; readonly result: CheckedAuthorizerResult }
  /** The authorizer threw `Error(AUTHORIZER_DENIAL)`: API Gateway's 401. */
  | { readonly kind: 'unauthorized' }
  /** Any other failure, or a malformed answer: API Gateway's 500. */
  | { readonly kind: 'failed'; readonly error: unknown };

const MAX_ENTRIES = 10_000;

/**
 * A REQUEST authorizer behind API Gateway's result cache, keyed by the
 * identity source (the API key value) for `ttlSeconds`. Only answers with a
 * policy are cached; 0 disables the cache, as in API Gateway. Keys are held
 * hashed, never as the secret itself.
 */
export class CachingAuthorizer {
  readonly #cache = new Map<string, { result: CheckedAuthorizerResult; expiresAt: number }>();

  constructor(
    private readonly invokeAuthorizer: (
      event: APIGatewayRequestAuthorizerEvent,
    ) => Promise<APIGatewayAuthorizerResult>,
    private readonly ttlSeconds: number,
    private readonly now: () => number = Date.now,
  ) {}

  async authorize(identity: string, event: APIGatewayRequestAuthorizerEvent): Promise<AuthorizerOutcome> {
    const cacheKey = createHash('sha256').update(identity).digest('hex');
    const cached = this.#cache.get(cacheKey);
    if (cached && cached.expiresAt > this.now()) return { kind: 'authorized', result: cached.result };
    this.#cache.delete(cacheKey);

    let result: CheckedAuthorizerResult;
    try {
      result = checkAuthorizerResult(await this.invokeAuthorizer(event));
    } catch (error) {
      if (error instanceof Error && error.message === AUTHORIZER_DENIAL) return { kind: 'unauthorized' };
      return { kind: 'failed', error };
    }
    if (this.ttlSeconds > 0) this.#remember(cacheKey, result);
    return { kind: 'authorized', result };
  }

  #remember(cacheKey: string, result: CheckedAuthorizerResult): void {
    const now = this.now();
    if (this.#cache.size >= MAX_ENTRIES) {
      for (const [key, entry] of this.#cache) if (entry.expiresAt <= now) this.#cache.delete(key);
      // Still full: drop the oldest entry (Map keeps insertion order).
      const oldest = this.#cache.keys().next();
      if (this.#cache.size >= MAX_ENTRIES && !oldest.done) this.#cache.delete(oldest.value);
    }
    this.#cache.set(cacheKey, { result, expiresAt: now + this.ttlSeconds * 1000 });
  }
}
