import { ConditionalCheckFailedException } from '@aws-sdk/client-dynamodb';
import {
  DeleteCommand,
  type DynamoDBDocumentClient,
  GetCommand,
  PutCommand,
  QueryCommand,
  UpdateCommand,
} from '@aws-sdk/lib-dynamodb';
import * as z from 'zod';
import { jobTable, RETIREMENT_SHARD } from '../../config/layout';
import { type ListMediaQuery, MEDIA_ID_PATTERN } from '../../config/media';
import { decodeCursor, encodeCursor } from '../domain/cursors';
import type { MediaItem, MediaPage, MediaStore, Retirement } from '../domain/media-library';
import { putIfAbsent } from './dynamodb-put-if-absent';

const MEDIA_SORT_PREFIX = 'MEDIA#';
const RETIREMENT_SORT_PREFIX = 'RETIRE#';

/**
 * A tenant's media items as items of the job table, in one partition per
 * tenant (`MEDIA#<tenant>`, sorted by id), so a read names the tenant and a
 * listing is one query. The item is kept in one map attribute, so no index of
 * the table (tenant listings of jobs, active jobs) picks it up, beside a
 * top-level `rev` every write is conditional on. Retirements sit in the same
 * partition and in the sparse `due` index under a shard of their own, found
 * by the reconciler with one query however many versions wait for their time.
 */
export class DynamoDbMediaStore implements MediaStore {
  constructor(
    private readonly client: DynamoDBDocumentClient,
    private readonly tableName: string,
  ) {}

  async create(item: MediaItem): Promise<{ created: true } | { created: false; existing: MediaItem }> {
    const stored = { ...keyOf(item.tenantId, item.id), media: withoutRev(item), rev: item.rev };
    if (await putIfAbsent(this.client, this.tableName, stored)) return { created: true };
    const existing = await this.get(item.tenantId, item.id);
    if (!existing) throw new Error(`Media item ${item.id} could neither be created nor read.`);
    return { created: false, existing };
  }

  async get(tenantId: string, mediaId: string): Promise<MediaItem | undefined> {
    const { Item } = await this.client.send(
      new GetCommand({ TableName: this.tableName, Key: keyOf(tenantId, mediaId), ConsistentRead: true }),
    );
    return Item ? fromItem(Item) : undefined;
  }

  async replace(item: MediaItem): Promise<boolean> {
    try {
      await this.client.send(
        new PutCommand({
          TableName: this.tableName,
          Item: { ...keyOf(item.tenantId, item.id), media: withoutRev(item), rev: item.rev + 1 },
          ConditionExpression: 'rev = :rev',
          ExpressionAttributeValues: { ':rev': item.rev },
        }),
      );
      return true;
    } catch (error) {
      if (error instanceof ConditionalCheckFailedException) return false;
      throw error;
    }
  }

  async list(tenantId: string, query: ListMediaQuery & { readonly limit: number }): Promise<MediaPage> {
    const start = query.cursor === undefined ? undefined : decodeIdCursor(query.cursor);
    const names: Record<string, string> = { '#pk': jobTable.partitionKey, '#sk': jobTable.sortKey };
    const values: Record<string, unknown> = { ':pk': partitionOf(tenantId), ':prefix': MEDIA_SORT_PREFIX };
    const filters = ['attribute_not_exists(#m.deletedAt)'];
    names['#m'] = 'media';
    if (query.label !== undefined) {
      names['#labels'] = 'labels';
      values[':label'] = query.label;
      filters.push('contains(#m.#labels, :label)');
    }
    if (query.dateFrom !== undefined || query.dateTo !== undefined) names['#date'] = 'date';
    if (query.dateFrom !== undefined) {
      values[':from'] = query.dateFrom;
      filters.push('#m.#date >= :from');
    }
    if (query.dateTo !== undefined) {
      values[':to'] = query.dateTo;
      filters.push('#m.#date <= :to');
    }
    const { Items = [], LastEvaluatedKey } = await this.client.send(
      new QueryCommand({
        TableName: this.tableName,
        KeyConditionExpression: '#pk = :pk AND begins_with(#sk, :prefix)',
        FilterExpression: filters.join(' AND '),
        ExpressionAttributeNames: names,
        ExpressionAttributeValues: values,
        ConsistentRead: true,
        Limit: query.limit,
        ExclusiveStartKey: start === undefined ? undefined : keyOf(tenantId, start),
      }),
    );
    const lastKey = LastEvaluatedKey?.[jobTable.sortKey];
    return {
      items: Items.map(fromItem),
      nextCursor:
        typeof lastKey === 'string' ? encodeCursor({ id: lastKey.slice(MEDIA_SORT_PREFIX.length) }) : null,
    };
  }

  async putRetirement(retirement: Retirement): Promise<void> {
    await this.client.send(
      new PutCommand({
        TableName: this.tableName,
        Item: {
          [jobTable.partitionKey]: partitionOf(retirement.tenantId),
          [jobTable.sortKey]: `${RETIREMENT_SORT_PREFIX}${retirement.jobId}`,
          dueShard: RETIREMENT_SHARD,
          runAt: retirement.runAt,
          retirement,
        },
      }),
    );
  }

  async dueRetirements(now: Date, limit: number): Promise<Retirement[]> {
    const dueIndex = jobTable.indexes.find((index) => index.name === 'due');
    if (!dueIndex) throw new Error('The job table has no due index.');
    const { Items = [] } = await this.client.send(
      new QueryCommand({
        TableName: this.tableName,
        IndexName: dueIndex.name,
        KeyConditionExpression: '#shard = :shard AND #runAt <= :now',
        ExpressionAttributeNames: { '#shard': dueIndex.partitionKey, '#runAt': dueIndex.sortKey },
        ExpressionAttributeValues: { ':shard': RETIREMENT_SHARD, ':now': now.toISOString() },
        Limit: limit,
      }),
    );
    const found: Retirement[] = [];
    // The index keeps keys only: each retirement is read from the table (and may be gone already).
    for (const key of Items) {
      const { Item } = await this.client.send(
        new GetCommand({
          TableName: this.tableName,
          Key: {
            [jobTable.partitionKey]: key[jobTable.partitionKey],
            [jobTable.sortKey]: key[jobTable.sortKey],
          },
        }),
      );
      if (Item?.retirement) found.push(Item.retirement as Retirement);
    }
    return found;
  }

  async claimUpload(tenantId: string, ref: string, mediaId: string): Promise<void> {
    await this.client.send(
      new UpdateCommand({
        TableName: this.tableName,
        Key: uploadKeyOf(tenantId, ref),
        UpdateExpression: 'ADD claimedBy :item',
        ExpressionAttributeValues: { ':item': new Set([mediaId]) },
      }),
    );
  }

  async releaseUpload(tenantId: string, ref: string, mediaId: string): Promise<number> {
    const { Attributes } = await this.client.send(
      new UpdateCommand({
        TableName: this.tableName,
        Key: uploadKeyOf(tenantId, ref),
        UpdateExpression: 'DELETE claimedBy :item',
        ExpressionAttributeValues: { ':item': new Set([mediaId]) },
        ReturnValues: 'ALL_NEW',
      }),
    );
    const left = (Attributes?.claimedBy as Set<string> | undefined)?.size ?? 0;
    // The last claim gone, so goes its record (an empty set is no attribute: the item holds only its key).
    if (left === 0) {
      await this.client.send(
        new DeleteCommand({ TableName: this.tableName, Key: uploadKeyOf(tenantId, ref) }),
      );
    }
    return left;
  }

  async deleteRetirement(retirement: Pick<Retirement, 'tenantId' | 'jobId'>): Promise<void> {
    await this.client.send(
      new DeleteCommand({
        TableName: this.tableName,
        Key: {
          [jobTable.partitionKey]: partitionOf(retirement.tenantId),
          [jobTable.sortKey]: `${RETIREMENT_SORT_PREFIX}${retirement.jobId}`,
        },
      }),
    );
  }
}

const partitionOf = (tenantId: string): string => `MEDIA#${tenantId}`;

/** Which items claim an upload: a set of their ids, in the tenant's media partition. */
const uploadKeyOf = (tenantId: string, ref: string): Record<string, string> => ({
  [jobTable.partitionKey]: partitionOf(tenantId),
  [jobTable.sortKey]: `UPLOAD#${ref}`,
});

function keyOf(tenantId: string, mediaId: string): Record<string, string> {
  return {
    [jobTable.partitionKey]: partitionOf(tenantId),
    [jobTable.sortKey]: `${MEDIA_SORT_PREFIX}${mediaId}`,
  };
}

function withoutRev(item: MediaItem): Omit<MediaItem, 'rev'> {
  const { rev: _rev, ...rest } = item;
  return rest;
}

function fromItem(item: Record<string, unknown>): MediaItem {
  return { ...(item.media as Omit<MediaItem, 'rev'>), rev: Number(item.rev ?? 0) };
}

const cursorSchema = z.strictObject({ id: z.string().regex(MEDIA_ID_PATTERN) });

const decodeIdCursor = (cursor: string): string =>
  decodeCursor(cursorSchema, cursor, 'must be a nextCursor this API returned').id;
