import { resourceEnv } from '../../../config/layout';
import { DynamoDbTenantBacklogs } from '../../adapters/dynamodb-tenant-backlog';
import { DynamoDbTenantStore } from '../../adapters/dynamodb-tenant-store';
import type { TenantShares } from '../../domain/ports';
import { cachedShares, sharesOf } from '../../domain/tenants';
import { documentClient } from '../clients/dynamodb';
import { requireEnv } from '../env';
import { once } from '../once';

/** Tenants' settings, beside their jobs in the job table. */
export const tenantStore = once(
  () => new DynamoDbTenantStore(documentClient(), requireEnv(resourceEnv.jobTable)),
);

/** Tenants' backlog counters, on their settings items. */
export const tenantBacklogs = once(
  () => new DynamoDbTenantBacklogs(documentClient(), requireEnv(resourceEnv.jobTable)),
);

/** How long a tenant's share, once read, serves the choices of this function's instance. */
const TENANT_SHARE_TTL_MS = 10_000;

/** Each tenant's share of the providers' slots, from its record. */
export const tenantShares = once(
  (): TenantShares => cachedShares(sharesOf(tenantStore()), TENANT_SHARE_TTL_MS, Date.now),
);
