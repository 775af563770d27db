import * as z from 'zod';

/**
 * A tenant's name and settings as they are stored and as an operator changes
 * them: plain records and constants the tenant store's port, the tenant rules
 * and the tenant resource's schema (lambdas/domain/resources.ts) build on, so
 * none of them needs lambdas/domain/tenants.ts.
 */

/**
 * What a tenant may be called: every name a key can carry (LONGHAUL_API_KEYS
 * locally; the api-key CLI issues a narrower set), so no tenant is out of an
 * operator's reach.
 */
export const TENANT_ID_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;
export const TENANT_ID_RULE = "1 to 64 letters, digits, '.', '_' or '-', starting with a letter or digit";

/** A tenant's settings until an operator sets them. */
export const TENANT_DEFAULTS = { weight: 1, maxQueued: 10_000 } as const;

export const MIN_WEIGHT = 1;
export const MAX_WEIGHT = 100;

/** A tenant's settings: its share of each provider's slots, and its caps. */
export interface TenantRecord {
  readonly tenant: string;
  /** Its share of a freed provider slot against the other tenants with waiting jobs (1..100). */
  readonly weight: number;
  /** Its jobs running at one provider at most, inside that provider's own limit; absent: no cap of its own. */
  readonly maxInFlight?: number;
  /** Its queued and scheduled jobs at most; a submission beyond them is refused. */
  readonly maxQueued: number;
}

/** What a tenant has in the system now, as the admin API shows it. */
export const tenantUsage = z
  .object({
    queued: z.int().min(0).describe('Jobs waiting for a provider slot.'),
    scheduled: z.int().min(0).describe('Jobs waiting for their runAt.'),
    inFlight: z.int().min(0).describe('Jobs running at any provider.'),
  })
  .meta({ description: 'Counted from the job indexes, which lag the jobs by a moment.' });
export type TenantUsage = Readonly<z.infer<typeof tenantUsage>>;

const weight = `must be an integer from ${MIN_WEIGHT} to ${MAX_WEIGHT}`;
const cap = 'must be an integer of at least 1, or null for no cap';
const atLeastOne = 'must be an integer of at least 1';

/**
 * The settings a PUT sets: each one named is set, the others are left as they
 * are (the defaults, for a tenant without a record); `maxInFlight: null`
 * removes the cap. Strict: an unknown field is an error, not ignored.
 */
export const tenantChanges = z.strictObject({
  weight: z.number({ error: weight }).int(weight).min(MIN_WEIGHT, weight).max(MAX_WEIGHT, weight).optional(),
  maxInFlight: z.number({ error: cap }).int(cap).min(1, cap).nullable().optional(),
  maxQueued: z.number({ error: atLeastOne }).int(atLeastOne).min(1, atLeastOne).optional(),
});
export type TenantChanges = z.infer<typeof tenantChanges>;
