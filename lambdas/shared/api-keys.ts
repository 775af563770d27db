import { createHash, randomBytes } from 'node:crypto';

/**
 * API keys are random 256-bit secrets, so a plain SHA-256 is a sound hash for
 * them (no dictionary to attack); only the hash is ever stored.
 */
export function hashApiKey(apiKey: string): string {
  return createHash('sha256').update(apiKey, 'utf8').digest('hex');
}

/** A new key to hand to a tenant once: `lh_` followed by 43 base64url characters. */
export function generateApiKey(): string {
  return `lh_${randomBytes(32).toString('base64url')}`;
}

/** One item of the API key table. */
export interface ApiKeyRecord {
  /** SHA-256 (hex) of the key. */
  readonly keyHash: string;
  readonly tenantId: string;
  readonly role: 'tenant' | 'admin';
  /**
   * The API Gateway usage-plan key value the authorizer returns as
   * `usageIdentifierKey`, so the gateway throttles per tenant. Absent locally.
   */
  readonly usageKey?: string;
  readonly createdAt: string;
  readonly disabled?: boolean;
}
