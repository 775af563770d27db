import { LEGACY_PROVIDER, type ProviderName } from '../../config/providers';

/**
 * The items of a provider's slots in the job table, in one module because the
 * slot pool and the waiting lines each write the other's in one transaction.
 */

/**
 * The item holding one provider's in-flight count and the set of its slot
 * holders. The first provider keeps the item it had when it was the only one,
 * so slots held across the upgrade stay counted.
 */
export const slotPoolKey = (provider: ProviderName) =>
  provider === LEGACY_PROVIDER
    ? ({ pk: 'SLOTS', sk: 'SLOTS' } as const)
    : { pk: `SLOTS#${provider}`, sk: 'SLOTS' };

/** Attribute of the pool item holding one tenant's holders (a string set, gone once empty). */
export const tenantHoldersAttribute = (tenant: string) => `tenantHolders#${tenant}`;
/** Attribute of the pool item holding one tenant's fair-share pass. */
export const tenantPassAttribute = (tenant: string) => `pass#${tenant}`;

/** The partition of the markers of tenants whose line at the provider may hold jobs, one item each. */
export const waitingPartition = (provider: ProviderName) => `WAITING#${provider}`;
/** The marker of a tenant whose line at the provider may hold jobs. */
export const waitingMarkerKey = (provider: ProviderName, tenant: string) => ({
  pk: waitingPartition(provider),
  sk: tenant,
});

/**
 * The update that drops a tenant's pass from the pool item, on the condition
 * that the tenant holds no slot there; in one transaction with a look at its
 * waiting marker, so a tenant both idle and out of line keeps nothing in the
 * hot item.
 *
 * Why dropping it is fair: a pass is stored only as `chosen pass + stride`
 * while the floor becomes `chosen pass`, and the floor never falls, so a
 * stored pass is never more than one stride (one slot's turn at the tenant's
 * weight) above the floor. A tenant that comes back without its pass joins at
 * the floor (`chooseTenant`), so at most that one turn of debt is forgiven,
 * once per time it goes idle, and a pass at or below the floor was worth
 * nothing already. Passes above the floor alone would not stay few: tenants
 * served once and never again all sit one stride above a floor that only
 * rises when a returning tenant is chosen.
 */
export const idlePassRemoval = (tableName: string, provider: ProviderName, tenant: string) => ({
  TableName: tableName,
  Key: slotPoolKey(provider),
  UpdateExpression: 'REMOVE #pass',
  ConditionExpression: 'attribute_exists(#pass) AND attribute_not_exists(#tenantHolders)',
  ExpressionAttributeNames: {
    '#pass': tenantPassAttribute(tenant),
    '#tenantHolders': tenantHoldersAttribute(tenant),
  },
});
