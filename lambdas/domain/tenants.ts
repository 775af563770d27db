import { TenantNotFoundError, ValidationError } from './errors';
import type { TenantKeys, TenantShare, TenantShares, TenantStore } from './ports';
import { toValidationError } from './requests';
import type { Resource, tenant } from './resources';
import {
  MAX_WEIGHT,
  MIN_WEIGHT,
  TENANT_DEFAULTS,
  TENANT_ID_PATTERN,
  TENANT_ID_RULE,
  type TenantChanges,
  type TenantRecord,
  type TenantUsage,
  tenantChanges,
} from './tenant-settings';

export type { TenantChanges, TenantRecord, TenantUsage };
export { MAX_WEIGHT, MIN_WEIGHT, TENANT_DEFAULTS, TENANT_ID_PATTERN, TENANT_ID_RULE, tenantChanges };

/**
 * Tenants as operators set them up: how large a share of each provider's
 * slots a tenant's waiting jobs get, and the caps on what it may have waiting
 * and running (CONTRACT section 1, fairness). A tenant is a name that API
 * keys carry; its settings are a record of their own, with defaults until an
 * operator sets them.
 */

/** The tenant name of the admin key; never a tenant's. */
export const ADMIN_TENANT_ID = 'admin';

/** A tenant as the admin API shows it (`GET /v1/admin/tenants/{tenant}`). */
export type TenantResource = Resource<typeof tenant>;

/** Which job statuses each figure of a tenant's usage counts. */
export const USAGE_STATUSES = {
  queued: 'queued',
  scheduled: 'scheduled',
  inFlight: 'running',
} as const satisfies Record<keyof TenantUsage, string>;

/**
 * The statuses a tenant's `maxQueued` caps: its backlog, the jobs it has
 * waiting (for a slot, or for their time). A job entering one of them is
 * admitted against the cap; a job leaving both leaves the backlog.
 */
export const BACKLOG_STATUSES: readonly string[] = [USAGE_STATUSES.queued, USAGE_STATUSES.scheduled];

/** Whether a job in `status` counts toward its tenant's backlog. */
export const inBacklog = (status: string): boolean => BACKLOG_STATUSES.includes(status);

export function parseTenantChanges(body: unknown): TenantChanges {
  const parsed = tenantChanges.safeParse(body);
  if (!parsed.success) {
    const error = toValidationError(parsed.error);
    // A number past the safe integers breaks two checks of one rule: say it once.
    const errors = new Map(error.errors.map((item) => [`${item.pointer} ${item.detail}`, item]));
    throw new ValidationError(error.message, [...errors.values()]);
  }
  return parsed.data;
}

/** The `{tenant}` of a path, if it can be a tenant's name at all. */
export function parseTenantName(value: string | undefined): string {
  if (value === undefined || !TENANT_ID_PATTERN.test(value)) {
    throw invalidTenant(`must be ${TENANT_ID_RULE}`);
  }
  if (value === ADMIN_TENANT_ID) throw invalidTenant(`'${ADMIN_TENANT_ID}' is the admin key's, not a tenant`);
  return value;
}

const invalidTenant = (detail: string) =>
  new ValidationError('The tenant is invalid.', [{ parameter: 'tenant', detail }]);

const defaultsOf = (tenant: string): TenantRecord => ({ tenant, ...TENANT_DEFAULTS });

export interface TenantDeps {
  readonly tenants: TenantStore;
  readonly keys: TenantKeys;
  readonly now: () => Date;
}

/** A tenant's settings and usage: its record, or the defaults for a tenant whose keys came before one. */
export async function getTenant(deps: TenantDeps, name: string | undefined): Promise<TenantResource> {
  const tenant = parseTenantName(name);
  let record = await deps.tenants.get(tenant);
  if (!record && (await deps.keys.hasKeys(tenant))) record = defaultsOf(tenant);
  if (!record) throw new TenantNotFoundError(tenant);
  return { ...record, usage: await deps.tenants.usage(tenant) };
}

/**
 * Sets the settings `changes` names, creating the tenant's record if it has
 * none yet. Only a tenant can have settings: a name that has neither a record
 * nor an API key is refused, and nothing is written.
 */
export async function putTenant(
  deps: TenantDeps,
  name: string | undefined,
  changes: TenantChanges,
): Promise<TenantResource> {
  const tenant = parseTenantName(name);
  const known = (await deps.tenants.get(tenant)) !== undefined || (await deps.keys.hasKeys(tenant));
  if (!known) throw invalidTenant('is not a tenant: no API key carries this name');
  const record = await deps.tenants.update(tenant, changes, deps.now());
  return { ...record, usage: await deps.tenants.usage(tenant) };
}

/** Each named tenant's share of the providers' slots: from its record, the defaults for one without. */
export function sharesOf(store: Pick<TenantStore, 'get'>): TenantShares {
  return async (tenants) =>
    new Map(
      await Promise.all(
        tenants.map(async (tenant) => {
          const record = await store.get(tenant);
          const share: TenantShare = {
            weight: record?.weight ?? TENANT_DEFAULTS.weight,
            ...(record?.maxInFlight === undefined ? {} : { maxInFlight: record.maxInFlight }),
          };
          return [tenant, share] as const;
        }),
      ),
    );
}

/**
 * The shares, each kept for `ttlMs` after it was read: a choice runs on every
 * freed slot, and an operator's change reaches the choices within `ttlMs`.
 */
export function cachedShares(shares: TenantShares, ttlMs: number, now: () => number): TenantShares {
  const kept = new Map<string, { readonly share: TenantShare; readonly until: number }>();
  return async (tenants) => {
    const at = now();
    const stale = tenants.filter((tenant) => (kept.get(tenant)?.until ?? 0) <= at);
    if (stale.length > 0) {
      for (const [tenant, share] of await shares(stale)) kept.set(tenant, { share, until: at + ttlMs });
    }
    return new Map(tenants.map((tenant) => [tenant, (kept.get(tenant) as { share: TenantShare }).share]));
  };
}
