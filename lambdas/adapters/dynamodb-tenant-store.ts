import { ConditionalCheckFailedException } from '@aws-sdk/client-dynamodb';
import { type DynamoDBDocumentClient, GetCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import type { TenantStore } from '../domain/ports';
import {
  TENANT_DEFAULTS,
  type TenantChanges,
  type TenantRecord,
  type TenantUsage,
  USAGE_STATUSES,
} from '../domain/tenants';
import { retryingConflicts } from './dynamodb-conflicts';
import { countTenantJobs } from './dynamodb-count';
import { tenantKey, tenantStatusKey } from './dynamodb-tenant-backlog';

/**
 * Each tenant's settings as one item of the job table. Its attributes are
 * named so that no index of the table (tenant listings, active jobs) ever
 * picks it up. A tenant's usage is counted from the per-tenant status index,
 * page by page, reading no item: correct and simple while tenants have few
 * jobs waiting; counters kept with the jobs can replace it behind this port.
 */
export class DynamoDbTenantStore implements TenantStore {
  constructor(
    private readonly client: DynamoDBDocumentClient,
    private readonly tableName: string,
  ) {}

  async get(tenant: string): Promise<TenantRecord | undefined> {
    const { Item } = await this.client.send(
      new GetCommand({ TableName: this.tableName, Key: tenantKey(tenant), ConsistentRead: true }),
    );
    // The item may hold only the tenant's backlog counter: no settings were written.
    return Item?.weight !== undefined ? recordOf(Item) : undefined;
  }

  async update(tenant: string, changes: TenantChanges, at: Date): Promise<TenantRecord> {
    const values: Record<string, unknown> = { ':tenant': tenant, ':at': at.toISOString() };
    const set = ['#tenant = :tenant', 'updatedAt = :at'];
    // What the changes leave out keeps its value, or takes the default on a new record.
    for (const field of ['weight', 'maxQueued'] as const) {
      const value = changes[field];
      values[`:${field}`] = value ?? TENANT_DEFAULTS[field];
      set.push(
        value === undefined ? `${field} = if_not_exists(${field}, :${field})` : `${field} = :${field}`,
      );
    }
    if (typeof changes.maxInFlight === 'number') {
      values[':maxInFlight'] = changes.maxInFlight;
      set.push('maxInFlight = :maxInFlight');
    }
    // The item holds the tenant's backlog counter, which a raise's transaction may hold: sent again then.
    const { Attributes } = await retryingConflicts(() =>
      this.client.send(
        new UpdateCommand({
          TableName: this.tableName,
          Key: tenantKey(tenant),
          UpdateExpression: `SET ${set.join(', ')}${changes.maxInFlight === null ? ' REMOVE maxInFlight' : ''}`,
          ExpressionAttributeNames: { '#tenant': 'tenant' },
          ExpressionAttributeValues: values,
          ReturnValues: 'ALL_NEW',
        }),
      ),
    );
    if (!Attributes) throw new Error(`Tenant ${tenant} was written but not returned.`);
    return recordOf(Attributes);
  }

  async ensure(tenant: string, at: Date): Promise<boolean> {
    try {
      await retryingConflicts(() =>
        this.client.send(
          new UpdateCommand({
            TableName: this.tableName,
            Key: tenantKey(tenant),
            UpdateExpression:
              'SET #tenant = :tenant, weight = :weight, maxQueued = :maxQueued, updatedAt = :at',
            // The item may already hold the tenant's backlog counter, which stays.
            ConditionExpression: 'attribute_not_exists(weight)',
            ExpressionAttributeNames: { '#tenant': 'tenant' },
            ExpressionAttributeValues: {
              ':tenant': tenant,
              ':weight': TENANT_DEFAULTS.weight,
              ':maxQueued': TENANT_DEFAULTS.maxQueued,
              ':at': at.toISOString(),
            },
          }),
        ),
      );
      return true;
    } catch (error) {
      if (error instanceof ConditionalCheckFailedException) return false;
      throw error;
    }
  }

  async usage(tenant: string): Promise<TenantUsage> {
    const count = (status: string) =>
      countTenantJobs(this.client, this.tableName, tenantStatusKey(tenant, status));
    const [queued, scheduled, inFlight] = await Promise.all([
      count(USAGE_STATUSES.queued),
      count(USAGE_STATUSES.scheduled),
      count(USAGE_STATUSES.inFlight),
    ]);
    return { queued, scheduled, inFlight };
  }
}

function recordOf(item: Record<string, unknown>): TenantRecord {
  return {
    tenant: item.tenant as string,
    weight: item.weight as number,
    ...(item.maxInFlight !== undefined ? { maxInFlight: item.maxInFlight as number } : {}),
    maxQueued: item.maxQueued as number,
  };
}
