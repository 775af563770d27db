import { ConditionalCheckFailedException } from '@aws-sdk/client-dynamodb';
import {
  DeleteCommand,
  type DynamoDBDocumentClient,
  GetCommand,
  QueryCommand,
  UpdateCommand,
} from '@aws-sdk/lib-dynamodb';
import * as z from 'zod';
import { jobTable } from '../../config/layout';
import { decodeCursor, encodeCursor } from '../domain/cursors';
import { SCHEDULE_ID_PATTERN } from '../domain/idempotency';
import type { Schedule, ScheduleCreateOutcome, SchedulePage, ScheduleStore } from '../domain/schedules';
import { putIfAbsent } from './dynamodb-put-if-absent';

const SCHEDULE_SORT_PREFIX = 'SCHEDULE#';

/**
 * A tenant's schedules as items of the job table, all in one partition per
 * tenant (`SCHEDULES#<tenant>`, sorted by id): a read names the tenant, so
 * another tenant's schedule is never found, and a listing is one query. The
 * schedule is kept in one map attribute, so no index of the table (tenant
 * listings of jobs, active jobs) ever picks the item up.
 */
export class DynamoDbScheduleStore implements ScheduleStore {
  constructor(
    private readonly client: DynamoDBDocumentClient,
    private readonly tableName: string,
  ) {}

  async create(schedule: Schedule): Promise<ScheduleCreateOutcome> {
    const stored = { ...keyOf(schedule.tenantId, schedule.id), schedule };
    if (await putIfAbsent(this.client, this.tableName, stored)) return { created: true };
    const existing = await this.get(schedule.tenantId, schedule.id);
    if (!existing) throw new Error(`Schedule ${schedule.id} could neither be created nor read.`);
    return { created: false, existing };
  }

  async get(tenantId: string, scheduleId: string): Promise<Schedule | undefined> {
    const { Item } = await this.client.send(
      new GetCommand({ TableName: this.tableName, Key: keyOf(tenantId, scheduleId), ConsistentRead: true }),
    );
    return Item?.schedule as Schedule | undefined;
  }

  async list(
    tenantId: string,
    query: { readonly limit: number; readonly cursor?: string },
  ): Promise<SchedulePage> {
    const start = query.cursor === undefined ? undefined : decodeIdCursor(query.cursor);
    const { Items = [], LastEvaluatedKey } = await this.client.send(
      new QueryCommand({
        TableName: this.tableName,
        KeyConditionExpression: '#pk = :pk AND begins_with(#sk, :prefix)',
        ExpressionAttributeNames: { '#pk': jobTable.partitionKey, '#sk': jobTable.sortKey },
        ExpressionAttributeValues: { ':pk': partitionOf(tenantId), ':prefix': SCHEDULE_SORT_PREFIX },
        ConsistentRead: true,
        Limit: query.limit,
        ExclusiveStartKey: start === undefined ? undefined : keyOf(tenantId, start),
      }),
    );
    const items = Items.map((item) => item.schedule as Schedule);
    const last = items.at(-1);
    return {
      items,
      nextCursor: LastEvaluatedKey && last ? encodeCursor({ id: last.id }) : null,
    };
  }

  async setEnabled(
    tenantId: string,
    scheduleId: string,
    enabled: boolean,
    at: Date,
  ): Promise<Schedule | undefined> {
    try {
      const { Attributes } = await this.client.send(
        new UpdateCommand({
          TableName: this.tableName,
          Key: keyOf(tenantId, scheduleId),
          // ADD takes top-level attributes only; the schedule is one map.
          UpdateExpression:
            'SET #s.enabled = :enabled, #s.updatedAt = :at, #s.revision = if_not_exists(#s.revision, :zero) + :one',
          ConditionExpression: 'attribute_exists(#pk)',
          ExpressionAttributeNames: { '#s': 'schedule', '#pk': jobTable.partitionKey },
          ExpressionAttributeValues: { ':enabled': enabled, ':at': at.toISOString(), ':zero': 0, ':one': 1 },
          ReturnValues: 'ALL_NEW',
        }),
      );
      return Attributes?.schedule as Schedule | undefined;
    } catch (error) {
      if (error instanceof ConditionalCheckFailedException) return undefined;
      throw error;
    }
  }

  async markSynced(schedule: Pick<Schedule, 'tenantId' | 'id' | 'revision'>): Promise<boolean> {
    const revision = schedule.revision ?? 0;
    try {
      await this.client.send(
        new UpdateCommand({
          TableName: this.tableName,
          Key: keyOf(schedule.tenantId, schedule.id),
          UpdateExpression: 'SET #s.syncedRevision = :revision',
          // A change made since the trigger was put is not what the trigger says. A schedule stored
          // before revisions were counted is at revision 0 until its first change.
          ConditionExpression:
            revision === 0
              ? 'attribute_exists(#s) AND attribute_not_exists(#s.revision)'
              : '#s.revision = :revision',
          ExpressionAttributeNames: { '#s': 'schedule' },
          ExpressionAttributeValues: { ':revision': revision },
        }),
      );
      return true;
    } catch (error) {
      if (error instanceof ConditionalCheckFailedException) return false;
      throw error;
    }
  }

  async delete(tenantId: string, scheduleId: string): Promise<void> {
    await this.client.send(
      new DeleteCommand({ TableName: this.tableName, Key: keyOf(tenantId, scheduleId) }),
    );
  }
}

const partitionOf = (tenantId: string): string => `SCHEDULES#${tenantId}`;

function keyOf(tenantId: string, scheduleId: string): Record<string, string> {
  return {
    [jobTable.partitionKey]: partitionOf(tenantId),
    [jobTable.sortKey]: `${SCHEDULE_SORT_PREFIX}${scheduleId}`,
  };
}

const cursorSchema = z.strictObject({ id: z.string().regex(SCHEDULE_ID_PATTERN) });

const decodeIdCursor = (cursor: string): string =>
  decodeCursor(cursorSchema, cursor, 'must be a nextCursor this API returned').id;
