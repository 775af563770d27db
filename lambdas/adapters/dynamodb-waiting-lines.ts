import { ConditionalCheckFailedException, TransactionCanceledException } from '@aws-sdk/client-dynamodb';
import {
  BatchWriteCommand,
  DeleteCommand,
  type DynamoDBDocumentClient,
  PutCommand,
  QueryCommand,
  TransactWriteCommand,
  UpdateCommand,
} from '@aws-sdk/lib-dynamodb';
import type { ProviderName } from '../../config/providers';
import { chunksOf, mapWithConcurrency } from '../domain/concurrency';
import type { WaitingEntry, WaitingLines, WaitingTenant } from '../domain/ports';
import { isConflict, retryingConflicts } from './dynamodb-conflicts';
import { idlePassRemoval, waitingMarkerKey, waitingPartition } from './dynamodb-slot-items';

/** BatchWriteItem takes at most 25 items. */
const ENTRIES_PER_WRITE = 25;
/** Writes of a batch's entries that DynamoDB left unprocessed before they are given up. */
const WRITE_ATTEMPTS = 4;

/** One tenant's line at one provider: its entries sort by their place. */
const lineKey = (provider: ProviderName, tenant: string) => `WAIT#${provider}#${tenant}`;
/** The key of a waiting job's entry in its tenant's line. */
export const lineEntryKey = (entry: Pick<WaitingEntry, 'provider' | 'tenant' | 'place'>) => ({
  pk: lineKey(entry.provider, entry.tenant),
  sk: entry.place,
});

/**
 * The waiting lines in the job table, as items of their own (no index): an
 * entry per waiting job under its tenant's line (`WAIT#<provider>#<tenant>`,
 * sorted by place), and a marker per tenant with waiting jobs under the
 * provider (`WAITING#<provider>`). Reads are consistent, so a job put in a
 * line is seen by the next choice; a choice costs one query of the markers
 * (a page per 1 MB of tenants) and one of the chosen line's head.
 */
export class DynamoDbWaitingLines implements WaitingLines {
  constructor(
    private readonly client: DynamoDBDocumentClient,
    private readonly tableName: string,
  ) {}

  async add(entry: WaitingEntry): Promise<void> {
    // A grant taking the job out of its line may hold the entry: the put goes again then.
    await retryingConflicts(() =>
      this.client.send(new PutCommand({ TableName: this.tableName, Item: this.entryItem(entry) })),
    );
    // After the entry: a retire that read the marks before this one finds them moved and keeps the tenant.
    await this.mark(entry.provider, entry.tenant, 1);
  }

  private entryItem(entry: WaitingEntry) {
    return { ...lineEntryKey(entry), jobId: entry.jobId };
  }

  /** Counts `count` more jobs put in the tenant's line into its marker, which marks it waiting. */
  private async mark(provider: ProviderName, tenant: string, count: number): Promise<void> {
    await retryingConflicts(() =>
      this.client.send(
        new UpdateCommand({
          TableName: this.tableName,
          Key: waitingMarkerKey(provider, tenant),
          UpdateExpression: 'ADD marks :one',
          ExpressionAttributeValues: { ':one': count },
        }),
      ),
    );
  }

  /**
   * The entries go 25 to a BatchWriteItem, which has no conditions and needs
   * none here: an entry is keyed by its job, so writing it again changes
   * nothing. Items DynamoDB leaves unprocessed are written again with backoff.
   * Then one `ADD marks :count` per tenant and provider, after its entries as
   * in `add`.
   */
  async addMany(entries: readonly WaitingEntry[]): Promise<ReadonlyMap<string, unknown>> {
    const failed = new Map<string, unknown>();
    const unique = [...new Map(entries.map((entry) => [entry.jobId, entry])).values()];
    await mapWithConcurrency(chunksOf(unique, ENTRIES_PER_WRITE), 4, async (chunk) => {
      let pending = chunk;
      for (let attempt = 1; pending.length > 0; attempt++) {
        let unprocessed: readonly Record<string, unknown>[];
        try {
          const { UnprocessedItems } = await this.client.send(
            new BatchWriteCommand({
              RequestItems: {
                [this.tableName]: pending.map((entry) => ({ PutRequest: { Item: this.entryItem(entry) } })),
              },
            }),
          );
          unprocessed = (UnprocessedItems?.[this.tableName] ?? []).map(
            (request) => request.PutRequest?.Item ?? {},
          );
        } catch (error) {
          for (const entry of pending) failed.set(entry.jobId, error);
          return;
        }
        const left = new Set(unprocessed.map((item) => item.jobId));
        pending = pending.filter((entry) => left.has(entry.jobId));
        if (pending.length === 0) return;
        if (attempt >= WRITE_ATTEMPTS) {
          for (const entry of pending)
            failed.set(entry.jobId, new Error('DynamoDB left the line entry unprocessed'));
          return;
        }
        await new Promise((resolve) => setTimeout(resolve, 50 * 2 ** attempt));
      }
    });
    const tenants = new Map<string, WaitingEntry[]>();
    for (const entry of unique) {
      if (failed.has(entry.jobId)) continue;
      const key = `${entry.provider}\n${entry.tenant}`;
      tenants.set(key, [...(tenants.get(key) ?? []), entry]);
    }
    await Promise.all(
      [...tenants.values()].map(async (line) => {
        const [first] = line as [WaitingEntry];
        try {
          await this.mark(first.provider, first.tenant, line.length);
        } catch (error) {
          for (const entry of line) failed.set(entry.jobId, error);
        }
      }),
    );
    return failed;
  }

  async remove(entry: WaitingEntry): Promise<void> {
    // A grant's transaction may be deleting the same entry: meeting it, the delete goes again.
    await retryingConflicts(() =>
      this.client.send(new DeleteCommand({ TableName: this.tableName, Key: lineEntryKey(entry) })),
    );
  }

  async tenants(provider: ProviderName): Promise<readonly WaitingTenant[]> {
    const tenants: WaitingTenant[] = [];
    let start: Record<string, unknown> | undefined;
    do {
      const page = await this.client.send(
        new QueryCommand({
          TableName: this.tableName,
          KeyConditionExpression: 'pk = :pk',
          ExpressionAttributeValues: { ':pk': waitingPartition(provider) },
          ConsistentRead: true,
          ExclusiveStartKey: start,
        }),
      );
      for (const item of page.Items ?? [])
        tenants.push({ tenant: String(item.sk), marks: Number(item.marks) });
      start = page.LastEvaluatedKey;
    } while (start);
    return tenants;
  }

  async head(provider: ProviderName, tenant: string, limit: number): Promise<readonly WaitingEntry[]> {
    const page = await this.client.send(
      new QueryCommand({
        TableName: this.tableName,
        KeyConditionExpression: 'pk = :pk',
        ExpressionAttributeValues: { ':pk': lineKey(provider, tenant) },
        ConsistentRead: true,
        Limit: limit,
      }),
    );
    return (page.Items ?? []).map((item) => ({
      provider,
      tenant,
      place: String(item.sk),
      jobId: String(item.jobId),
    }));
  }

  /**
   * The marker goes, and with it the tenant's pass in the provider's slot pool
   * if the tenant holds no slot there (one transaction), so the pool item
   * keeps no pass of a tenant neither holding nor waiting. When the tenant
   * still holds a slot (or has no pass), the marker goes alone; its last
   * release drops the pass.
   */
  async retire(provider: ProviderName, tenant: WaitingTenant): Promise<void> {
    const marker = {
      TableName: this.tableName,
      Key: waitingMarkerKey(provider, tenant.tenant),
      ConditionExpression: 'marks = :marks',
      ExpressionAttributeValues: { ':marks': tenant.marks },
    };
    try {
      await retryingConflicts(() =>
        this.client.send(
          new TransactWriteCommand({
            TransactItems: [
              { Delete: marker },
              { Update: idlePassRemoval(this.tableName, provider, tenant.tenant) },
            ],
          }),
        ),
      );
      return;
    } catch (error) {
      if (!(error instanceof TransactionCanceledException) && !isConflict(error)) throw error;
      // A job was put in line since the marks were read: the tenant stays.
      if (
        error instanceof TransactionCanceledException &&
        error.CancellationReasons?.[0]?.Code === 'ConditionalCheckFailed'
      )
        return;
    }
    try {
      await retryingConflicts(() => this.client.send(new DeleteCommand(marker)));
    } catch (error) {
      if (!(error instanceof ConditionalCheckFailedException)) throw error;
    }
  }
}
