import { ConditionalCheckFailedException, TransactionCanceledException } from '@aws-sdk/client-dynamodb';
import {
  BatchGetCommand,
  type DynamoDBDocumentClient,
  GetCommand,
  PutCommand,
  QueryCommand,
  TransactWriteCommand,
  UpdateCommand,
  type UpdateCommandInput,
} from '@aws-sdk/lib-dynamodb';
import * as z from 'zod';
import { DUE_SHARD, JOB_ITEM_SORT_KEY, jobTable } from '../../config/layout';
import type { ProviderName } from '../../config/providers';
import { decodeCursor, encodeCursor } from '../domain/cursors';
import {
  executionNameOf,
  isTerminal,
  type Job,
  type JobStatus,
  type ProviderOutcome,
  providerOf,
  type SubmitIntent,
} from '../domain/job';
import type {
  ActiveStatus,
  CreateOutcome,
  JobPage,
  JobStore,
  ProgressTick,
  SlotGrant,
  SlotGrantOutcome,
  StatusChange,
  TenantJobQuery,
} from '../domain/ports';
import { inBacklog } from '../domain/tenants';
import { isConflict, retryingConflicts } from './dynamodb-conflicts';
import { countPartition } from './dynamodb-count';
import { acquireUpdate, slotPoolKey } from './dynamodb-slot-pool';
import { backlogDecrease, raiseBacklog, tenantStatusKey } from './dynamodb-tenant-backlog';
import { lineEntryKey } from './dynamodb-waiting-lines';

const [byTenant, byTenantStatus, activeIndex, dueIndex] = jobTable.indexes;

/** Attributes the table adds to a job for its keys, indexes and TTL; never part of the job. */
interface StorageAttributes {
  readonly pk: string;
  readonly sk: string;
  /** `<tenant>#<status>`: key of the per-tenant status listing. */
  readonly tenantStatus: string;
  /** The status while not terminal, written by releases that had a status-keyed active index; read by none. */
  readonly activeStatus?: JobStatus;
  /** `<provider>#<status>` while not terminal nor scheduled: the sparse active-jobs index. */
  readonly activeKey?: string;
  /** DUE_SHARD while scheduled: with `runAt`, the key of the sparse due-jobs index. */
  readonly dueShard?: string;
  /** Epoch seconds after which DynamoDB TTL may delete the finished job (and its idempotency key). */
  readonly expiresAt?: number;
  /** When progress was last stored: the write refuses another closer than the interval. */
  readonly progressAt?: string;
  /** The status the last status write moved the job from. */
  readonly previousStatus?: JobStatus;
}

type JobItem = Job & StorageAttributes;

const cursorSchema = z.strictObject({ id: z.string().min(1).max(64), createdAt: z.iso.datetime() });

export interface DynamoDbJobStoreOptions {
  readonly tableName: string;
  /** Days a finished job is kept before TTL expires it. */
  readonly retentionDays: number;
}

export class DynamoDbJobStore implements JobStore {
  constructor(
    private readonly client: DynamoDBDocumentClient,
    private readonly options: DynamoDbJobStoreOptions,
  ) {}

  async create(job: Job): Promise<CreateOutcome> {
    // An expired job may linger until TTL deletes it; its key is free again.
    for (let attempt = 0; attempt < 2; attempt++) {
      try {
        // A retry of the request may meet its own job's grant in flight (`startWithSlot`): judged again when sent.
        await retryingConflicts(() =>
          this.client.send(
            new PutCommand({
              TableName: this.options.tableName,
              Item: toItem(job, this.options.retentionDays),
              ConditionExpression: 'attribute_not_exists(pk) OR expiresAt < :now',
              ExpressionAttributeValues: { ':now': epochSeconds(new Date()) },
            }),
          ),
        );
        return { created: true };
      } catch (error) {
        if (!(error instanceof ConditionalCheckFailedException)) throw error;
      }
      const existing = await this.get(job.id);
      if (existing) return { created: false, existing };
    }
    throw new Error(`Job ${job.id} could neither be created nor read.`);
  }

  async get(jobId: string): Promise<Job | undefined> {
    const { Item } = await this.client.send(
      new GetCommand({
        TableName: this.options.tableName,
        Key: { pk: jobId, sk: JOB_ITEM_SORT_KEY },
        ConsistentRead: true,
      }),
    );
    if (!Item || hasExpired(Item as JobItem, new Date())) return undefined;
    return fromItem(Item as JobItem);
  }

  getMany(jobIds: readonly string[]): Promise<ReadonlyMap<string, Job>> {
    return this.readAll([...new Set(jobIds)]);
  }

  async markEnqueued(jobId: string, at: Date): Promise<void> {
    try {
      // The dispatcher may already be granting the job its slot (`startWithSlot`): judged again when sent.
      await retryingConflicts(() =>
        this.client.send(
          new UpdateCommand({
            TableName: this.options.tableName,
            Key: { pk: jobId, sk: JOB_ITEM_SORT_KEY },
            UpdateExpression: 'SET enqueuedAt = :at',
            ConditionExpression: 'attribute_exists(pk) AND attribute_not_exists(enqueuedAt)',
            ExpressionAttributeValues: { ':at': at.toISOString() },
          }),
        ),
      );
    } catch (error) {
      if (!(error instanceof ConditionalCheckFailedException)) throw error;
    }
  }

  async listByTenant(tenantId: string, query: TenantJobQuery): Promise<JobPage> {
    const index = query.status === undefined ? byTenant : byTenantStatus;
    const partition = query.status === undefined ? tenantId : tenantStatusKey(tenantId, query.status);
    const start = query.cursor === undefined ? undefined : decodeJobCursor(query.cursor);
    const keyOf = (at: { readonly id: string; readonly createdAt: string }) => ({
      pk: at.id,
      sk: JOB_ITEM_SORT_KEY,
      [index.partitionKey]: partition,
      [index.sortKey]: at.createdAt,
    });
    const range = createdRange(query);
    if (range === 'empty') return { items: [], nextCursor: null };
    const values: Record<string, unknown> = { ':partition': partition, ':now': epochSeconds(new Date()) };
    const names: Record<string, string> = { '#partition': index.partitionKey };
    let keyCondition = '#partition = :partition';
    if (range) {
      names['#created'] = index.sortKey;
      Object.assign(values, range.values);
      keyCondition += ` AND ${range.condition}`;
    }
    // An expired job lingers until TTL deletes it (up to days later) but is gone for its
    // tenant, so it is filtered out. A filter applies after the read's Limit, so pages are
    // read until one item more than asked is found: that item tells whether another page
    // exists, and the last page has no cursor.
    // A workflow's own jobs (chunks of audio.publish) are parts of their parent, not the tenant's jobs.
    names['#parent'] = 'parent';
    let filter = '(attribute_not_exists(expiresAt) OR expiresAt >= :now) AND attribute_not_exists(#parent)';
    if (query.type !== undefined) {
      names['#type'] = 'type';
      values[':type'] = query.type;
      filter = `(${filter}) AND #type = :type`;
    }
    const found: JobItem[] = [];
    let exclusiveStartKey: Record<string, unknown> | undefined = start ? keyOf(start) : undefined;
    do {
      const { Items = [], LastEvaluatedKey } = await this.client.send(
        new QueryCommand({
          TableName: this.options.tableName,
          IndexName: index.name,
          KeyConditionExpression: keyCondition,
          FilterExpression: filter,
          ExpressionAttributeNames: names,
          ExpressionAttributeValues: values,
          ScanIndexForward: false,
          Limit: query.limit + 1 - found.length,
          ExclusiveStartKey: exclusiveStartKey,
        }),
      );
      found.push(...(Items as JobItem[]));
      exclusiveStartKey = LastEvaluatedKey;
    } while (found.length <= query.limit && exclusiveStartKey);
    const items = found.slice(0, query.limit).map(fromItem);
    const last = items.at(-1);
    return {
      items,
      nextCursor:
        found.length > query.limit && last
          ? encodeJobCursor({ id: last.id, createdAt: last.createdAt })
          : null,
    };
  }

  async transition(
    job: Pick<Job, 'id' | 'tenantId' | 'provider'>,
    from: readonly JobStatus[],
    change: StatusChange,
    at: Date,
  ): Promise<Job | undefined> {
    const stamp = at.toISOString();
    const names: Record<string, string> = { '#status': 'status' };
    const values: Record<string, unknown> = {
      ':status': change.status,
      ':at': stamp,
      ':tenantStatus': tenantStatusKey(job.tenantId, change.status),
    };
    // The status the job leaves (read in the same write) decides whether it leaves its tenant's backlog.
    const set = [
      'previousStatus = #status',
      '#status = :status',
      'statusAt = :at',
      'updatedAt = :at',
      'tenantStatus = :tenantStatus',
    ];
    const remove: string[] = [];
    for (const field of [
      'error',
      'result',
      'progress',
      'startedAt',
      'finishedAt',
      'executionName',
    ] as const) {
      if (change[field] !== undefined) {
        set.push(`#${field} = :${field}`);
        names[`#${field}`] = field;
        values[`:${field}`] = change[field];
      }
    }
    if (isTerminal(change.status)) {
      set.push('expiresAt = :expiresAt');
      values[':expiresAt'] = epochSeconds(at) + this.options.retentionDays * 86_400;
      remove.push('activeKey');
    } else if (change.status === 'scheduled') {
      throw new Error(`Job ${job.id} cannot go back to scheduled.`);
    } else {
      set.push('activeKey = :activeKey');
      values[':activeKey'] = activeKeyOf(providerOf(job), change.status);
    }
    // A job leaving `scheduled` leaves the due index in the same write.
    if (from.includes('scheduled')) remove.push('dueShard');
    from.forEach((status, i) => {
      values[`:from${i}`] = status;
    });
    const item = await this.conditionalUpdateItem(job.id, {
      UpdateExpression: `SET ${set.join(', ')}${remove.length ? ` REMOVE ${remove.join(', ')}` : ''}`,
      ConditionExpression: `attribute_exists(pk) AND #status IN (${from.map((_, i) => `:from${i}`).join(', ')})`,
      ExpressionAttributeNames: names,
      ExpressionAttributeValues: values,
    });
    if (!item) return undefined;
    if (item.previousStatus && inBacklog(item.previousStatus) && !inBacklog(change.status)) {
      await this.changeBacklog(item.tenantId, -1);
    }
    return fromItem(item);
  }

  /**
   * Moves the job's tenant's backlog counter after the status write that
   * moved the job (no transactions: a stop between the two leaves the counter
   * off until the reconciler recounts it). A counter at 0 stays there; one
   * raised from 0 lists its tenant again (`raiseBacklog`).
   */
  private async changeBacklog(tenant: string, delta: 1 | -1): Promise<void> {
    if (delta > 0) {
      await raiseBacklog(this.client, this.options.tableName, tenant, { count: 1 });
      return;
    }
    try {
      // A raise's transaction may hold the counter (`raiseBacklog`): judged again when sent.
      await retryingConflicts(() => this.client.send(backlogDecrease(this.options.tableName, tenant)));
    } catch (error) {
      if (!(error instanceof ConditionalCheckFailedException)) throw error;
    }
  }

  requestCancel(jobId: string, at: Date): Promise<Job | undefined> {
    return this.conditionalUpdate(jobId, {
      UpdateExpression: 'SET cancelRequestedAt = if_not_exists(cancelRequestedAt, :at), updatedAt = :at',
      ConditionExpression: 'attribute_exists(pk) AND #status IN (:running, :review)',
      ExpressionAttributeNames: { '#status': 'status' },
      ExpressionAttributeValues: {
        ':at': at.toISOString(),
        ':running': 'running',
        ':review': 'needs_review',
      },
    });
  }

  async recordSubmitIntent(
    jobId: string,
    intent: SubmitIntent,
    replacing: string | undefined,
  ): Promise<Job | undefined> {
    return this.conditionalUpdate(jobId, {
      UpdateExpression: 'SET submitIntent = :intent, attempts = attempts + :one, updatedAt = :at',
      ConditionExpression:
        'attribute_exists(pk) AND #status = :running AND attribute_not_exists(providerJobId) AND ' +
        (replacing === undefined
          ? 'attribute_not_exists(submitIntent)'
          : 'submitIntent.attemptId = :replacing'),
      ExpressionAttributeNames: { '#status': 'status' },
      ExpressionAttributeValues: {
        ':intent': intent,
        ':one': 1,
        ':at': intent.at,
        ':running': 'running',
        ...(replacing === undefined ? {} : { ':replacing': replacing }),
      },
    });
  }

  async settleSubmitIntent(
    jobId: string,
    providerJobId: string | undefined,
    at: Date,
    answeredCalls?: number,
  ): Promise<void> {
    const set = providerJobId
      ? 'SET providerJobId = :provider, updatedAt = :at'
      : answeredCalls
        ? 'SET answeredCalls = :answered, updatedAt = :at'
        : 'SET updatedAt = :at';
    await this.conditionalUpdate(jobId, {
      // An accepted submission has what it needs: the part answered before it is no longer read.
      UpdateExpression: `${set} REMOVE submitIntent${providerJobId ? ', answeredCalls' : ''}`,
      ConditionExpression: 'attribute_exists(pk) AND attribute_not_exists(providerJobId)',
      ExpressionAttributeValues: {
        ':at': at.toISOString(),
        ...(providerJobId ? { ':provider': providerJobId } : {}),
        ...(!providerJobId && answeredCalls ? { ':answered': answeredCalls } : {}),
      },
    });
  }

  recordTaskToken(jobId: string, taskToken: string, at: Date): Promise<Job | undefined> {
    return this.conditionalUpdate(jobId, {
      UpdateExpression: 'SET taskToken = :token, updatedAt = :at',
      ConditionExpression: 'attribute_exists(pk) AND #status = :running',
      ExpressionAttributeNames: { '#status': 'status' },
      ExpressionAttributeValues: { ':token': taskToken, ':at': at.toISOString(), ':running': 'running' },
    });
  }

  recordParentToken(jobId: string, taskToken: string): Promise<Job | undefined> {
    return this.conditionalUpdate(jobId, {
      UpdateExpression: 'SET #parent.taskToken = :token',
      ConditionExpression: 'attribute_exists(#parent.jobId)',
      ExpressionAttributeNames: { '#parent': 'parent' },
      ExpressionAttributeValues: { ':token': taskToken },
    });
  }

  async recordProviderOutcome(
    job: Pick<Job, 'id' | 'createdAt' | 'resubmissions'>,
    outcome: ProviderOutcome,
  ): Promise<Job | undefined> {
    const submission = job.resubmissions ?? 0;
    const updated = await this.conditionalUpdate(job.id, {
      UpdateExpression: 'SET providerOutcome = :outcome',
      ConditionExpression:
        'attribute_exists(pk) AND attribute_not_exists(providerOutcome) AND createdAt = :createdAt AND ' +
        (submission === 0
          ? '(attribute_not_exists(resubmissions) OR resubmissions = :submission)'
          : 'resubmissions = :submission') +
        (outcome.providerJobId
          ? ' AND (attribute_not_exists(providerJobId) OR providerJobId = :providerJobId)'
          : ''),
      ExpressionAttributeValues: {
        ':outcome': outcome,
        ':createdAt': job.createdAt,
        ':submission': submission,
        ...(outcome.providerJobId ? { ':providerJobId': outcome.providerJobId } : {}),
      },
    });
    return updated ?? this.get(job.id);
  }

  async startWithSlot(grant: SlotGrant, at: Date): Promise<SlotGrantOutcome> {
    const { job } = grant;
    const stamp = at.toISOString();
    const executionName = executionNameOf(job);
    // The grant that probes its paused provider says so on the job, whose accepted submission ends the probe.
    const probes = grant.token.probe !== undefined;
    try {
      await this.client.send(
        new TransactWriteCommand({
          TransactItems: [
            {
              Update: {
                TableName: this.options.tableName,
                ...acquireUpdate(
                  slotPoolKey(providerOf(job)),
                  grant.holder,
                  grant.limit,
                  grant.claim,
                  at,
                  grant.token,
                ),
              },
            },
            {
              Update: {
                TableName: this.options.tableName,
                Key: { pk: job.id, sk: JOB_ITEM_SORT_KEY },
                UpdateExpression:
                  'SET previousStatus = #status, #status = :running, statusAt = :at, updatedAt = :at, ' +
                  'tenantStatus = :tenantStatus, activeKey = :activeKey, startedAt = :at, executionName = :name, enqueuedAt = :at' +
                  (probes ? ', probes = :probes' : ' REMOVE probes'),
                // A job whose client's startBy has come is never granted (the deadline is part of the
                // grant), unless a submission of it is in doubt: only its resend can settle that.
                ConditionExpression:
                  'attribute_exists(pk) AND #status = :queued AND createdAt = :createdAt AND (attribute_not_exists(startBy) OR startBy > :at OR attribute_exists(submitIntent))',
                ExpressionAttributeNames: { '#status': 'status' },
                ExpressionAttributeValues: {
                  ':running': 'running',
                  ':queued': 'queued',
                  ':at': stamp,
                  ':tenantStatus': tenantStatusKey(job.tenantId, 'running'),
                  ':activeKey': activeKeyOf(providerOf(job), 'running'),
                  ':name': executionName,
                  ':createdAt': job.createdAt,
                  ...(probes ? { ':probes': true } : {}),
                },
              },
            },
            ...(grant.entry
              ? [{ Delete: { TableName: this.options.tableName, Key: lineEntryKey(grant.entry) } }]
              : []),
          ],
        }),
      );
    } catch (error) {
      if (!(error instanceof TransactionCanceledException)) throw error;
      const [slot, started] = error.CancellationReasons ?? [];
      if (started?.Code === 'ConditionalCheckFailed') return { refused: 'job' };
      if (slot?.Code === 'ConditionalCheckFailed') return { refused: 'slot' };
      // Another grant or release was on the pool item (or the job, or its entry): what was read is
      // stale, so the chooser reads again rather than this sending the same expectations.
      if (isConflict(error)) return { refused: 'conflict' };
      throw error;
    }
    // It left `queued`, so its tenant's backlog (a stop before this is the reconciler's to recount).
    await this.changeBacklog(job.tenantId, -1);
    return {
      granted: {
        ...job,
        status: 'running',
        statusAt: stamp,
        updatedAt: stamp,
        startedAt: stamp,
        executionName,
        enqueuedAt: stamp,
        ...(probes ? { probes } : {}),
      },
    };
  }

  async touchEnqueued(jobId: string, at: Date): Promise<boolean> {
    const updated = await this.conditionalUpdate(jobId, {
      UpdateExpression: 'SET enqueuedAt = :at',
      ConditionExpression: 'attribute_exists(pk) AND #status = :queued',
      ExpressionAttributeNames: { '#status': 'status' },
      ExpressionAttributeValues: { ':at': at.toISOString(), ':queued': 'queued' },
    });
    return updated !== undefined;
  }

  async claimRequeue(job: Pick<Job, 'id' | 'enqueuedAt'>, at: Date): Promise<boolean> {
    const updated = await this.conditionalUpdate(job.id, {
      UpdateExpression: 'SET enqueuedAt = :at',
      ConditionExpression:
        'attribute_exists(pk) AND #status = :queued AND ' +
        (job.enqueuedAt === undefined ? 'attribute_not_exists(enqueuedAt)' : 'enqueuedAt = :seen'),
      ExpressionAttributeNames: { '#status': 'status' },
      ExpressionAttributeValues: {
        ':at': at.toISOString(),
        ':queued': 'queued',
        ...(job.enqueuedAt === undefined ? {} : { ':seen': job.enqueuedAt }),
      },
    });
    return updated !== undefined;
  }

  recordNewRun(job: Job, at: Date): Promise<Job | undefined> {
    const next = (job.runs ?? 0) + 1;
    const nextJob = { ...job, runs: next };
    return this.conditionalUpdate(job.id, {
      UpdateExpression: 'SET runs = :next, executionName = :name, updatedAt = :at REMOVE taskToken',
      ConditionExpression:
        job.runs === undefined
          ? 'attribute_exists(pk) AND attribute_not_exists(runs)'
          : 'attribute_exists(pk) AND runs = :runs',
      ExpressionAttributeValues: {
        ':next': next,
        ':name': executionNameOf(nextJob),
        ':at': at.toISOString(),
        ...(job.runs === undefined ? {} : { ':runs': job.runs }),
      },
    });
  }

  async requeueForResubmission(job: Job, at: Date): Promise<Job | undefined> {
    const stamp = at.toISOString();
    const requeued = await this.conditionalUpdate(job.id, {
      UpdateExpression:
        'SET #status = :queued, activeKey = :activeKey, tenantStatus = :tenantStatus, statusAt = :at, updatedAt = :at, ' +
        'runs = :runs, resubmissions = :resubmissions, progress = :zero, #error = :null ' +
        'REMOVE submitIntent, providerJobId, providerOutcome, taskToken, executionName, enqueuedAt',
      ConditionExpression: 'attribute_exists(pk) AND #status = :review',
      ExpressionAttributeNames: { '#status': 'status', '#error': 'error' },
      ExpressionAttributeValues: {
        ':queued': 'queued',
        ':activeKey': activeKeyOf(providerOf(job), 'queued'),
        ':review': 'needs_review',
        ':tenantStatus': tenantStatusKey(job.tenantId, 'queued'),
        ':at': stamp,
        ':runs': (job.runs ?? 0) + 1,
        ':resubmissions': (job.resubmissions ?? 0) + 1,
        ':zero': 0,
        ':null': null,
      },
    });
    // An operator's requeue puts the job back in its tenant's backlog, past any cap: the job was admitted once.
    if (requeued) await this.changeBacklog(requeued.tenantId, 1);
    return requeued;
  }

  async returnToQueue(job: Job, at: Date): Promise<Job | undefined> {
    const stamp = at.toISOString();
    const returned = await this.conditionalUpdate(job.id, {
      UpdateExpression:
        'SET #status = :queued, activeKey = :activeKey, tenantStatus = :tenantStatus, statusAt = :at, updatedAt = :at, ' +
        // A refusal that did no work is no attempt.
        'runs = :runs, progress = :zero, attempts = if_not_exists(attempts, :one) - :one ' +
        'REMOVE executionName, startedAt, taskToken, enqueuedAt',
      ConditionExpression:
        'attribute_exists(pk) AND #status = :running AND attribute_not_exists(providerJobId) AND ' +
        '(attribute_not_exists(runs) OR runs = :readRuns)',
      ExpressionAttributeNames: { '#status': 'status' },
      ExpressionAttributeValues: {
        ':queued': 'queued',
        ':running': 'running',
        ':activeKey': activeKeyOf(providerOf(job), 'queued'),
        ':tenantStatus': tenantStatusKey(job.tenantId, 'queued'),
        ':at': stamp,
        ':runs': (job.runs ?? 0) + 1,
        ':readRuns': job.runs ?? 0,
        ':zero': 0,
        ':one': 1,
      },
    });
    // Back in the queue, so back in its tenant's backlog (past any cap: it was admitted once).
    if (returned) await this.changeBacklog(returned.tenantId, 1);
    return returned;
  }

  async reopenFailed(
    job: Pick<Job, 'id' | 'tenantId' | 'provider' | 'resumes'>,
    at: Date,
  ): Promise<Job | undefined> {
    const stamp = at.toISOString();
    return this.conditionalUpdate(job.id, {
      UpdateExpression:
        'SET #status = :running, activeKey = :activeKey, tenantStatus = :tenantStatus, ' +
        'statusAt = :at, updatedAt = :at, resumedAt = :at, resumes = :resumes, #error = :null ' +
        // A failed job was due to expire with the retention; a running one never is.
        'REMOVE finishedAt, expiresAt',
      // An operator's replay runs the job's action once more: the job itself never runs again beside it.
      ConditionExpression: 'attribute_exists(pk) AND #status = :failed AND attribute_not_exists(replacedBy)',
      ExpressionAttributeNames: { '#status': 'status', '#error': 'error' },
      ExpressionAttributeValues: {
        ':running': 'running',
        ':failed': 'failed',
        ':activeKey': activeKeyOf(providerOf(job), 'running'),
        ':tenantStatus': tenantStatusKey(job.tenantId, 'running'),
        ':at': stamp,
        ':resumes': (job.resumes ?? 0) + 1,
        ':null': null,
      },
    });
  }

  async markReplaced(
    job: Pick<Job, 'id' | 'status'>,
    replacement: string | undefined,
    was: string | undefined,
    replacementKey?: string,
  ): Promise<Job | undefined> {
    const keyed = replacement !== undefined && replacementKey !== undefined;
    return this.conditionalUpdate(job.id, {
      UpdateExpression:
        replacement === undefined
          ? 'REMOVE replacedBy, replacedByKey'
          : keyed
            ? 'SET replacedBy = :replacement, replacedByKey = :key'
            : 'SET replacedBy = :replacement REMOVE replacedByKey',
      ConditionExpression: `attribute_exists(pk) AND #status = :status AND ${
        was !== undefined ? 'replacedBy = :was' : 'attribute_not_exists(replacedBy)'
      }`,
      ExpressionAttributeNames: { '#status': 'status' },
      ExpressionAttributeValues: {
        ':status': job.status,
        ...(replacement !== undefined ? { ':replacement': replacement } : {}),
        ...(keyed ? { ':key': replacementKey } : {}),
        ...(was !== undefined ? { ':was': was } : {}),
      },
    });
  }

  async countActive(provider: ProviderName, status: ActiveStatus): Promise<number> {
    return countPartition(
      this.client,
      {
        tableName: this.options.tableName,
        indexName: activeIndex.name,
        partitionKey: activeIndex.partitionKey,
      },
      activeKeyOf(provider, status),
    );
  }

  async listActive(
    provider: ProviderName,
    status: ActiveStatus,
    page: { readonly limit: number; readonly cursor?: string },
  ): Promise<JobPage & { readonly itemsRead: number }> {
    const start = page.cursor === undefined ? undefined : decodeJobCursor(page.cursor);
    const activeKey = activeKeyOf(provider, status);
    const { Items = [], LastEvaluatedKey } = await this.client.send(
      new QueryCommand({
        TableName: this.options.tableName,
        IndexName: activeIndex.name,
        KeyConditionExpression: '#partition = :key',
        ExpressionAttributeNames: { '#partition': activeIndex.partitionKey },
        ExpressionAttributeValues: { ':key': activeKey },
        Limit: page.limit,
        ...(start
          ? {
              ExclusiveStartKey: {
                pk: start.id,
                sk: JOB_ITEM_SORT_KEY,
                [activeIndex.partitionKey]: activeKey,
                [activeIndex.sortKey]: start.createdAt,
              },
            }
          : {}),
      }),
    );
    const keys = Items as Pick<JobItem, 'pk' | 'statusAt'>[];
    const jobs = await this.readAll(keys.map((key) => key.pk));
    // Oldest first, as listed; a job that finished (or vanished) since the index saw it is left out.
    const items = keys.flatMap((key) => {
      const job = jobs.get(key.pk);
      return job && !isTerminal(job.status) ? [job] : [];
    });
    const last = keys.at(-1);
    return {
      items,
      itemsRead: keys.length,
      nextCursor:
        LastEvaluatedKey && last ? encodeJobCursor({ id: last.pk, createdAt: last.statusAt }) : null,
    };
  }

  async listDue(now: Date, limit: number): Promise<readonly Job[]> {
    const keys: Pick<JobItem, 'pk'>[] = [];
    let start: Record<string, unknown> | undefined;
    do {
      const { Items = [], LastEvaluatedKey } = await this.client.send(
        new QueryCommand({
          TableName: this.options.tableName,
          IndexName: dueIndex.name,
          KeyConditionExpression: '#shard = :shard AND #runAt <= :now',
          ExpressionAttributeNames: { '#shard': dueIndex.partitionKey, '#runAt': dueIndex.sortKey },
          ExpressionAttributeValues: { ':shard': DUE_SHARD, ':now': now.toISOString() },
          Limit: limit - keys.length,
          ...(start ? { ExclusiveStartKey: start } : {}),
        }),
      );
      keys.push(...(Items as Pick<JobItem, 'pk'>[]));
      start = LastEvaluatedKey;
    } while (start && keys.length < limit);
    const jobs = await this.readAll(keys.map((key) => key.pk));
    // Earliest due first, as listed; a job that left `scheduled` since the index saw it is left out.
    return keys.flatMap((key) => {
      const job = jobs.get(key.pk);
      return job?.status === 'scheduled' ? [job] : [];
    });
  }

  /**
   * The jobs with these ids, read consistently from the table in batches of
   * 100 (BatchGetItem's most), keys it left unprocessed asked again with
   * backoff. An expired job lingering until TTL deletes it is gone, as for `get`.
   */
  private async readAll(ids: readonly string[]): Promise<Map<string, Job>> {
    const jobs = new Map<string, Job>();
    const now = new Date();
    for (let at = 0; at < ids.length; at += 100) {
      let keys: Record<string, unknown>[] = ids
        .slice(at, at + 100)
        .map((id) => ({ pk: id, sk: JOB_ITEM_SORT_KEY }));
      for (let round = 0; keys.length > 0; round++) {
        if (round > 0) await new Promise((resolve) => setTimeout(resolve, Math.min(1000, 50 * 2 ** round)));
        const { Responses, UnprocessedKeys } = await this.client.send(
          new BatchGetCommand({
            RequestItems: { [this.options.tableName]: { Keys: keys, ConsistentRead: true } },
          }),
        );
        for (const item of (Responses?.[this.options.tableName] ?? []) as JobItem[]) {
          if (!hasExpired(item, now)) jobs.set(item.pk, fromItem(item));
        }
        keys = (UnprocessedKeys?.[this.options.tableName]?.Keys ?? []) as Record<string, unknown>[];
      }
    }
    return jobs;
  }

  /** One conditional UpdateItem on the job item: the updated job, or undefined when the condition did not hold. */
  private async conditionalUpdate(
    jobId: string,
    expression: Pick<
      UpdateCommandInput,
      'UpdateExpression' | 'ConditionExpression' | 'ExpressionAttributeNames' | 'ExpressionAttributeValues'
    >,
  ): Promise<Job | undefined> {
    const item = await this.conditionalUpdateItem(jobId, expression);
    return item ? fromItem(item) : undefined;
  }

  /** The same, answering with the item as stored. */
  private async conditionalUpdateItem(
    jobId: string,
    expression: Pick<
      UpdateCommandInput,
      'UpdateExpression' | 'ConditionExpression' | 'ExpressionAttributeNames' | 'ExpressionAttributeValues'
    >,
  ): Promise<JobItem | undefined> {
    try {
      // The job's grant may be in flight on it (`startWithSlot`): its condition is judged again then.
      const { Attributes } = await retryingConflicts(() =>
        this.client.send(
          new UpdateCommand({
            TableName: this.options.tableName,
            Key: { pk: jobId, sk: JOB_ITEM_SORT_KEY },
            ...expression,
            ReturnValues: 'ALL_NEW',
          }),
        ),
      );
      return Attributes as JobItem | undefined;
    } catch (error) {
      if (error instanceof ConditionalCheckFailedException) return undefined;
      throw error;
    }
  }

  /**
   * The condition is `concerns()` of the domain for a running job, with the
   * throttle and the forward move: a tick that passes it needed no read.
   */
  recordProgressTick(jobId: string, tick: ProgressTick): Promise<Job | undefined> {
    const values: Record<string, unknown> = {
      ':progress': tick.progress,
      ':at': tick.at.toISOString(),
      ':notSince': tick.notSince.toISOString(),
      ':running': 'running',
      ':providerJobId': tick.providerJobId,
      ':submission': tick.submission?.number ?? 0,
    };
    let submission =
      tick.submission === undefined || tick.submission.number === 0
        ? '(attribute_not_exists(resubmissions) OR resubmissions = :submission)'
        : 'resubmissions = :submission';
    if (tick.submission !== undefined) {
      submission = `createdAt = :createdAt AND ${submission}`;
      values[':createdAt'] = tick.submission.createdAt;
    }
    return this.conditionalUpdate(jobId, {
      UpdateExpression: 'SET progress = :progress, progressAt = :at, updatedAt = :at',
      ConditionExpression:
        `attribute_exists(pk) AND #status = :running AND ${submission} AND ` +
        '(providerJobId = :providerJobId OR (attribute_not_exists(providerJobId) AND attribute_exists(submitIntent))) AND ' +
        'progress < :progress AND (attribute_not_exists(progressAt) OR progressAt <= :notSince)',
      ExpressionAttributeNames: { '#status': 'status' },
      ExpressionAttributeValues: values,
    });
  }
}

export function toItem(job: Job, retentionDays: number): JobItem {
  const terminal = isTerminal(job.status);
  return {
    ...job,
    pk: job.id,
    sk: JOB_ITEM_SORT_KEY,
    tenantStatus: tenantStatusKey(job.tenantId, job.status),
    ...(terminal || job.status === 'scheduled'
      ? {}
      : { activeKey: activeKeyOf(providerOf(job), job.status) }),
    ...(job.status === 'scheduled' ? { dueShard: DUE_SHARD } : {}),
    ...(terminal
      ? { expiresAt: epochSeconds(new Date(job.finishedAt ?? job.updatedAt)) + retentionDays * 86_400 }
      : {}),
  };
}

function fromItem(item: JobItem): Job {
  const {
    pk: _pk,
    sk: _sk,
    tenantStatus: _ts,
    activeStatus: _as,
    activeKey: _ak,
    dueShard: _ds,
    expiresAt: _exp,
    progressAt: _pa,
    previousStatus: _ps,
    ...job
  } = item;
  return job;
}

/** The active index's partition of a provider's jobs in one status. */
const activeKeyOf = (provider: ProviderName, status: JobStatus): string => `${provider}#${status}`;

/** A finished job past its retention: TTL deletes it within days, and its key is free again at once. */
function hasExpired(item: JobItem, now: Date): boolean {
  return item.expiresAt !== undefined && item.expiresAt < epochSeconds(now);
}

function epochSeconds(at: Date): number {
  return Math.floor(at.getTime() / 1000);
}

/**
 * The key condition of a listing's creation window. Both bounds are exclusive,
 * and DynamoDB has one range operator for two bounds, BETWEEN, which includes
 * them: `createdAt` is stored to the millisecond, so the window becomes the
 * inclusive one a millisecond inside each bound.
 */
function createdRange(
  query: Pick<TenantJobQuery, 'createdAfter' | 'createdBefore'>,
): { condition: string; values: Record<string, string> } | undefined | 'empty' {
  const shift = (at: string, ms: number) => new Date(Date.parse(at) + ms).toISOString();
  const from = query.createdAfter === undefined ? undefined : shift(query.createdAfter, 1);
  const to = query.createdBefore === undefined ? undefined : shift(query.createdBefore, -1);
  if (from !== undefined && to !== undefined) {
    if (from > to) return 'empty';
    return { condition: '#created BETWEEN :from AND :to', values: { ':from': from, ':to': to } };
  }
  if (from !== undefined) return { condition: '#created >= :from', values: { ':from': from } };
  if (to !== undefined) return { condition: '#created <= :to', values: { ':to': to } };
  return undefined;
}

/** Where a page of jobs ends: the last job's id and the time the listing's index sorts it by. */
const encodeJobCursor = (position: z.infer<typeof cursorSchema>): string => encodeCursor(position);

const decodeJobCursor = (cursor: string): z.infer<typeof cursorSchema> =>
  decodeCursor(cursorSchema, cursor, 'must be a nextCursor returned by this listing');
