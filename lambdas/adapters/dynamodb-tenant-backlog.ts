import { ConditionalCheckFailedException, TransactionCanceledException } from '@aws-sdk/client-dynamodb';
import {
  type DynamoDBDocumentClient,
  GetCommand,
  TransactWriteCommand,
  UpdateCommand,
} from '@aws-sdk/lib-dynamodb';
import type { BacklogRecount, TenantBacklogs } from '../domain/ports';
import { TENANT_DEFAULTS, USAGE_STATUSES } from '../domain/tenants';
import { isConflict, retryingConflicts } from './dynamodb-conflicts';
import { countTenantJobs } from './dynamodb-count';

/** Readings of the counter a batch's admission makes before it gives up (answering that the backlog is full). */
const ADMIT_ATTEMPTS = 5;

/** The item of a tenant's settings and backlog counter: beside its jobs, in the job table. */
export const tenantKey = (tenant: string) => ({ pk: `TENANT#${tenant}`, sk: 'TENANT' }) as const;

/** The item that lists the tenants with a backlog to recount (a recount finding none takes a tenant off), for the reconciler. */
export const backlogRegistryKey = { pk: 'BACKLOGS', sk: 'TENANTS' } as const;

/** The per-tenant status index's partition of a tenant's jobs in one status. */
export const tenantStatusKey = (tenantId: string, status: string): string => `${tenantId}#${status}`;

/**
 * The one write that takes a job out of its tenant's backlog: the job store
 * sends it after the status write that moved the job. It never goes below 0.
 */
export function backlogDecrease(tableName: string, tenant: string): UpdateCommand {
  return new UpdateCommand({
    TableName: tableName,
    Key: tenantKey(tenant),
    UpdateExpression: 'ADD backlog :delta',
    ConditionExpression: 'backlog > :zero',
    ExpressionAttributeValues: { ':delta': -1, ':zero': 0 },
  });
}

/** What a raise of a tenant's backlog counter may be conditioned on besides the listing, and how many it adds. */
interface BacklogRaise {
  readonly count: number;
  /** The room it needs (its cap), over the counter's item; none: past any cap. */
  readonly condition?: string;
  readonly names?: Record<string, string>;
  readonly values?: Record<string, unknown>;
}

/**
 * Raises a tenant's backlog counter so that a tenant with a backlog is always
 * on the list the reconciler recounts (`backlogRegistryKey`): one conditional
 * write (the cap), which answers the counter it left; a raise that took the
 * counter from 0 (or first wrote it) lists the tenant with one write more.
 * A recount takes a tenant off only in a transaction that finds its counter
 * at 0, so it cannot take off a tenant whose raise has landed and whose
 * listing is on its way, unless those jobs left meanwhile, and then the
 * listing lists a tenant at 0, which the next recount takes off again. A stop
 * between the two writes leaves a backlog off the list: the reconciler lists
 * the tenants of the queued jobs it walks (`listTenants`). False when the
 * condition (the cap) refused the raise.
 */
export async function raiseBacklog(
  client: DynamoDBDocumentClient,
  tableName: string,
  tenant: string,
  raise: BacklogRaise,
): Promise<boolean> {
  let counter: number;
  try {
    // The item holds the counter, which a recount's transaction may hold: judged again when sent.
    const { Attributes } = await retryingConflicts(() =>
      client.send(
        new UpdateCommand({
          TableName: tableName,
          Key: tenantKey(tenant),
          UpdateExpression: 'ADD backlog :count',
          ...(raise.condition ? { ConditionExpression: raise.condition } : {}),
          ...(raise.names && Object.keys(raise.names).length
            ? { ExpressionAttributeNames: raise.names }
            : {}),
          ExpressionAttributeValues: { ...raise.values, ':count': raise.count },
          ReturnValues: 'UPDATED_NEW',
        }),
      ),
    );
    counter = Number(Attributes?.backlog ?? raise.count);
  } catch (error) {
    if (error instanceof ConditionalCheckFailedException) return false;
    throw error;
  }
  if (counter === raise.count) await listTenants(client, tableName, [tenant]);
  return true;
}

/** Puts tenants on the list of backlogs to recount: one write, which a recount's transaction may hold. */
export async function listTenants(
  client: DynamoDBDocumentClient,
  tableName: string,
  tenants: readonly string[],
): Promise<void> {
  if (tenants.length === 0) return;
  await retryingConflicts(() =>
    client.send(
      new UpdateCommand({
        TableName: tableName,
        Key: backlogRegistryKey,
        UpdateExpression: 'ADD tenants :tenants',
        ExpressionAttributeValues: { ':tenants': new Set(tenants) },
      }),
    ),
  );
}

/**
 * Tenants' backlog counters, each on its tenant's settings item, so the cap
 * and the count are compared in the one conditional write that admits a job
 * (no read, no count). The counter's attributes are named so that no index
 * of the table picks the item up. A tenant without a record is capped by the
 * default `maxQueued`.
 */
export class DynamoDbTenantBacklogs implements TenantBacklogs {
  constructor(
    private readonly client: DynamoDBDocumentClient,
    private readonly tableName: string,
  ) {}

  admit(tenant: string): Promise<boolean> {
    return raiseBacklog(this.client, this.tableName, tenant, {
      count: 1,
      condition:
        'attribute_not_exists(backlog) OR backlog < maxQueued OR (attribute_not_exists(maxQueued) AND backlog < :defaultMax)',
      values: { ':defaultMax': TENANT_DEFAULTS.maxQueued },
    });
  }

  async admitPastCap(tenant: string): Promise<void> {
    await raiseBacklog(this.client, this.tableName, tenant, { count: 1 });
  }

  /**
   * A batch's admissions in one write, not one per job: the counter and the
   * cap are read, and `ADD backlog :count` is conditioned on the room the
   * reading found (`backlog <= cap - count`) and on the cap being the one read,
   * so concurrent admissions can never take the backlog past the cap. When
   * another writer took some of the room meanwhile, the write misses and the
   * next reading admits fewer.
   */
  async admitUpTo(tenant: string, wanted: number): Promise<number> {
    for (let attempt = 0; wanted > 0 && attempt < ADMIT_ATTEMPTS; attempt++) {
      const { Item } = await this.client.send(
        new GetCommand({
          TableName: this.tableName,
          Key: tenantKey(tenant),
          ConsistentRead: true,
          ProjectionExpression: 'backlog, maxQueued',
        }),
      );
      const ownCap = Item?.maxQueued === undefined ? undefined : Number(Item.maxQueued);
      const cap = ownCap ?? TENANT_DEFAULTS.maxQueued;
      const count = Math.min(wanted, cap - Number(Item?.backlog ?? 0));
      if (count <= 0) return 0;
      const admitted = await raiseBacklog(this.client, this.tableName, tenant, {
        count,
        condition: `(attribute_not_exists(backlog) OR backlog <= :room) AND ${
          ownCap === undefined ? 'attribute_not_exists(maxQueued)' : 'maxQueued = :cap'
        }`,
        values: { ':room': cap - count, ...(ownCap === undefined ? {} : { ':cap': ownCap }) },
      });
      if (admitted) return count;
    }
    return 0;
  }

  async giveBack(tenant: string, count = 1): Promise<void> {
    if (count <= 0) return;
    try {
      // A raise's transaction may hold the counter: judged again when sent.
      await retryingConflicts(() =>
        this.client.send(
          count === 1
            ? backlogDecrease(this.tableName, tenant)
            : new UpdateCommand({
                TableName: this.tableName,
                Key: tenantKey(tenant),
                UpdateExpression: 'ADD backlog :delta',
                ConditionExpression: 'backlog >= :count',
                ExpressionAttributeValues: { ':delta': -count, ':count': count },
              }),
        ),
      );
    } catch (error) {
      // A counter already below what is given back is off; the reconciler's recount sets it right.
      if (!(error instanceof ConditionalCheckFailedException)) throw error;
    }
  }

  list(tenants: readonly string[]): Promise<void> {
    return listTenants(this.client, this.tableName, tenants);
  }

  async tenants(): Promise<string[]> {
    const { Item } = await this.client.send(
      new GetCommand({ TableName: this.tableName, Key: backlogRegistryKey, ConsistentRead: true }),
    );
    return [...((Item?.tenants as Set<string> | undefined) ?? [])].sort();
  }

  async recount(tenant: string): Promise<BacklogRecount> {
    const { Item } = await this.client.send(
      new GetCommand({
        TableName: this.tableName,
        Key: tenantKey(tenant),
        ConsistentRead: true,
        ProjectionExpression: 'backlog, backlogCheck',
      }),
    );
    const counted = Number(Item?.backlog ?? 0);
    const [queued, scheduled] = await Promise.all([
      countTenantJobs(this.client, this.tableName, tenantStatusKey(tenant, USAGE_STATUSES.queued)),
      countTenantJobs(this.client, this.tableName, tenantStatusKey(tenant, USAGE_STATUSES.scheduled)),
    ]);
    const found = queued + scheduled;
    const check = `${counted}:${found}`;
    const result = { tenant, counted, queued, scheduled };
    if (found === counted) {
      if (Item?.backlogCheck !== undefined) await this.settle(tenant, counted, 'REMOVE backlogCheck', {});
      if (found === 0) await this.unregister(tenant);
      return { ...result, corrected: false };
    }
    // Seen off once: remember what was seen; seen off the same way again: set it right.
    if (Item?.backlogCheck !== check) {
      await this.settle(tenant, counted, 'SET backlogCheck = :check', { ':check': check });
      return { ...result, corrected: false };
    }
    // Set right from 0, the tenant may be off the list: it goes back on with the counter (its check goes next pass).
    const corrected =
      counted === 0
        ? await raiseBacklog(this.client, this.tableName, tenant, {
            count: found,
            condition: 'attribute_not_exists(backlog) OR backlog = :counted',
            values: { ':counted': counted },
          })
        : await this.settle(tenant, counted, 'SET backlog = :found REMOVE backlogCheck', { ':found': found });
    return { ...result, corrected };
  }

  /** One write to the counter's item, if the counter still holds what the recount read. */
  private async settle(
    tenant: string,
    counted: number,
    update: string,
    values: Record<string, unknown>,
  ): Promise<boolean> {
    try {
      await retryingConflicts(() =>
        this.client.send(
          new UpdateCommand({
            TableName: this.tableName,
            Key: tenantKey(tenant),
            UpdateExpression: update,
            ConditionExpression:
              counted === 0 ? 'attribute_not_exists(backlog) OR backlog = :counted' : 'backlog = :counted',
            ExpressionAttributeValues: { ...values, ':counted': counted },
          }),
        ),
      );
      return true;
    } catch (error) {
      if (error instanceof ConditionalCheckFailedException) return false;
      throw error;
    }
  }

  /**
   * Takes a tenant with nothing queued or scheduled off the list, so the list
   * holds the tenants with a backlog (and those counted since the last pass),
   * not every tenant ever counted. One transaction with a check that its
   * counter is still 0: an admission's increment lands before it (and the
   * check fails) or after it, and then lists the tenant again, as every
   * raise from 0 does (`raiseBacklog`).
   */
  private async unregister(tenant: string): Promise<void> {
    try {
      await retryingConflicts(() =>
        this.client.send(
          new TransactWriteCommand({
            TransactItems: [
              {
                ConditionCheck: {
                  TableName: this.tableName,
                  Key: tenantKey(tenant),
                  ConditionExpression: 'attribute_not_exists(backlog) OR backlog = :zero',
                  ExpressionAttributeValues: { ':zero': 0 },
                },
              },
              {
                Update: {
                  TableName: this.tableName,
                  Key: backlogRegistryKey,
                  UpdateExpression: 'DELETE tenants :tenant',
                  ExpressionAttributeValues: { ':tenant': new Set([tenant]) },
                },
              },
            ],
          }),
        ),
      );
    } catch (error) {
      // Admitted meanwhile, or contended: the tenant stays listed until a later recount finds it empty.
      if (!(error instanceof TransactionCanceledException) && !isConflict(error)) throw error;
    }
  }
}
