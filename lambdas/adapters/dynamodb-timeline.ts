import { randomBytes } from 'node:crypto';
import { type DynamoDBDocumentClient, PutCommand, QueryCommand } from '@aws-sdk/lib-dynamodb';
import type { KeptSteps, Timeline, TimelineEvent } from '../domain/ports';

const EVENT_PREFIX = 'EVT#';
/** One item per run whose history a timeline read kept, outside the events' range. */
const STEPS_PREFIX = 'STEPS#';
/** Sorts after every event key and before the job item's. */
const EVENTS_END = `${EVENT_PREFIX}\uffff`;

export interface DynamoDbTimelineOptions {
  readonly tableName: string;
  /** Events outlive their job by this long at most; a running job's events stay while it runs. */
  readonly retentionDays: number;
}

/** A job's timeline: one small item per event under the job's partition, in time order. */
export class DynamoDbTimeline implements Timeline {
  constructor(
    private readonly client: DynamoDBDocumentClient,
    private readonly options: DynamoDbTimelineOptions,
  ) {}

  /** A year of headroom past the retention keeps events of long-running jobs until the job itself expires. */
  private expiresAt(at: string): number {
    return Math.floor(Date.parse(at) / 1000) + (this.options.retentionDays + 365) * 86_400;
  }

  async record(jobId: string, event: TimelineEvent): Promise<void> {
    const expiresAt = this.expiresAt(event.at);
    await this.client.send(
      new PutCommand({
        TableName: this.options.tableName,
        Item: {
          pk: jobId,
          sk: `${EVENT_PREFIX}${event.at}#${randomBytes(4).toString('hex')}`,
          ...event,
          expiresAt,
        },
      }),
    );
  }

  async list(jobId: string, since: string): Promise<readonly TimelineEvent[]> {
    const events: TimelineEvent[] = [];
    let ExclusiveStartKey: Record<string, unknown> | undefined;
    do {
      const page = await this.client.send(
        new QueryCommand({
          TableName: this.options.tableName,
          KeyConditionExpression: 'pk = :job AND sk BETWEEN :from AND :to',
          ExpressionAttributeValues: { ':job': jobId, ':from': `${EVENT_PREFIX}${since}`, ':to': EVENTS_END },
          ConsistentRead: true,
          ExclusiveStartKey,
        }),
      );
      for (const { pk: _pk, sk: _sk, expiresAt: _exp, ...event } of page.Items ?? []) {
        events.push(event as TimelineEvent);
      }
      ExclusiveStartKey = page.LastEvaluatedKey;
    } while (ExclusiveStartKey);
    return events;
  }

  async keptSteps(jobId: string): Promise<readonly KeptSteps[]> {
    const kept: KeptSteps[] = [];
    let ExclusiveStartKey: Record<string, unknown> | undefined;
    do {
      const page = await this.client.send(
        new QueryCommand({
          TableName: this.options.tableName,
          KeyConditionExpression: 'pk = :job AND begins_with(sk, :steps)',
          ExpressionAttributeValues: { ':job': jobId, ':steps': STEPS_PREFIX },
          ConsistentRead: true,
          ExclusiveStartKey,
        }),
      );
      for (const item of page.Items ?? []) {
        kept.push({
          executionName: item.executionName,
          readAt: item.readAt,
          resumes: item.resumes,
          ended: item.ended,
          events: JSON.parse(item.events),
        });
      }
      ExclusiveStartKey = page.LastEvaluatedKey;
    } while (ExclusiveStartKey);
    return kept;
  }

  async keepSteps(jobId: string, steps: KeptSteps): Promise<void> {
    await this.client.send(
      new PutCommand({
        TableName: this.options.tableName,
        Item: {
          pk: jobId,
          sk: `${STEPS_PREFIX}${steps.executionName}`,
          executionName: steps.executionName,
          readAt: steps.readAt,
          resumes: steps.resumes,
          ended: steps.ended,
          // One string: a few hundred bytes an event, with no attribute of each to marshal.
          events: JSON.stringify(steps.events),
          expiresAt: this.expiresAt(steps.readAt),
        },
      }),
    );
  }
}
