import {
  ConditionalCheckFailedException,
  DynamoDBClient,
  TransactionCanceledException,
  TransactionConflictException,
} from '@aws-sdk/client-dynamodb';
import {
  BatchGetCommand,
  DynamoDBDocumentClient,
  GetCommand,
  PutCommand,
  QueryCommand,
  TransactWriteCommand,
  UpdateCommand,
} from '@aws-sdk/lib-dynamodb';
import { mockClient } from 'aws-sdk-client-mock';
import { DynamoDbJobStore, toItem } from '../../lambdas/adapters/dynamodb-job-store';
import { ValidationError } from '../../lambdas/domain/errors';
import { newJob } from '../../lambdas/domain/job';
import { sampleJob } from './support/jobs';

const documentClient = DynamoDBDocumentClient.from(new DynamoDBClient({ region: 'us-east-1' }));
const ddb = mockClient(documentClient);
const store = new DynamoDbJobStore(documentClient, { tableName: 'jobs', retentionDays: 30 });
const at = new Date('2026-03-01T12:00:00.000Z');
const job = sampleJob(at);
const conditionFailed = () => new ConditionalCheckFailedException({ message: 'failed', $metadata: {} });

beforeEach(() => ddb.reset());

describe('create', () => {
  it('writes the job with one conditional put that claims its idempotency key', async () => {
    ddb.on(PutCommand).resolves({});

    await expect(store.create(job)).resolves.toEqual({ created: true });

    expect(ddb.commandCalls(PutCommand)).toHaveLength(1);
    const input = ddb.commandCalls(PutCommand)[0]?.args[0].input;
    expect(input).toMatchObject({
      TableName: 'jobs',
      ConditionExpression: 'attribute_not_exists(pk) OR expiresAt < :now',
      Item: {
        pk: job.id,
        sk: 'JOB',
        tenantId: 'acme',
        tenantStatus: 'acme#queued',
        status: 'queued',
        idempotencyKey: 'k1',
        fingerprint: 'f1',
      },
    });
    expect(input?.Item).not.toHaveProperty('expiresAt');
  });

  it('returns the existing job when the key was taken', async () => {
    const existing = { ...job, fingerprint: 'other' };
    ddb.on(PutCommand).rejects(conditionFailed());
    ddb.on(GetCommand).resolves({ Item: toItem(existing, 30) });

    await expect(store.create(job)).resolves.toEqual({ created: false, existing });
    expect(ddb.commandCalls(GetCommand)[0]?.args[0].input).toEqual({
      TableName: 'jobs',
      Key: { pk: job.id, sk: 'JOB' },
      ConsistentRead: true,
    });
  });

  it("puts the job again when its grant's transaction held the item, and answers with the job found then", async () => {
    const existing = { ...job, fingerprint: 'other' };
    ddb
      .on(PutCommand)
      .rejectsOnce(
        new TransactionConflictException({ message: 'Transaction is ongoing for the item', $metadata: {} }),
      )
      .rejects(conditionFailed());
    ddb.on(GetCommand).resolves({ Item: toItem(existing, 30) });

    await expect(store.create(job)).resolves.toEqual({ created: false, existing });
    expect(ddb.commandCalls(PutCommand)).toHaveLength(2);
  });

  it('passes other errors through', async () => {
    ddb.on(PutCommand).rejects(new Error('throttled'));
    await expect(store.create(job)).rejects.toThrow('throttled');
  });
});

describe('getMany', () => {
  const idOf = (n: number) => `job_${String(n).padStart(26, 'a')}`;
  const keyOf = (id: string) => ({ pk: id, sk: 'JOB' });

  it("reads a batch's jobs 100 keys to a request, consistently, asking again for the keys left unprocessed", async () => {
    const ids = Array.from({ length: 150 }, (_, n) => idOf(n));
    const expired = {
      ...job,
      id: idOf(1),
      status: 'succeeded' as const,
      finishedAt: '2020-01-01T00:00:00.000Z',
    };
    ddb
      .on(BatchGetCommand)
      .resolvesOnce({
        Responses: { jobs: [toItem({ ...job, id: idOf(0) }, 30), toItem(expired, 30)] },
        UnprocessedKeys: { jobs: { Keys: [keyOf(idOf(2))], ConsistentRead: true } },
      })
      .resolvesOnce({ Responses: { jobs: [toItem({ ...job, id: idOf(2) }, 30)] } })
      .resolves({ Responses: { jobs: [toItem({ ...job, id: idOf(120) }, 30)] } });

    const found = await store.getMany([...ids, idOf(0)]);

    expect(ddb.commandCalls(BatchGetCommand).map((call) => call.args[0].input)).toEqual([
      { RequestItems: { jobs: { Keys: ids.slice(0, 100).map(keyOf), ConsistentRead: true } } },
      { RequestItems: { jobs: { Keys: [keyOf(idOf(2))], ConsistentRead: true } } },
      { RequestItems: { jobs: { Keys: ids.slice(100).map(keyOf), ConsistentRead: true } } },
    ]);
    // A finished job past its retention is gone, as for a single read; the rest have no job.
    expect([...found.keys()].sort()).toEqual([idOf(0), idOf(120), idOf(2)].sort());
    expect(found.get(idOf(2))).toEqual({ ...job, id: idOf(2) });
  });

  it('sends nothing for no ids', async () => {
    await expect(store.getMany([])).resolves.toEqual(new Map());
    expect(ddb.commandCalls(BatchGetCommand)).toHaveLength(0);
  });
});

describe('transition', () => {
  it('moves status only from the allowed statuses and expires terminal jobs after the retention', async () => {
    ddb.on(UpdateCommand).resolves({ Attributes: toItem({ ...job, status: 'canceled' }, 30) });

    const updated = await store.transition(
      job,
      ['queued'],
      { status: 'canceled', finishedAt: at.toISOString() },
      at,
    );

    expect(updated?.status).toBe('canceled');
    expect(updated).not.toHaveProperty('pk');
    const input = ddb.commandCalls(UpdateCommand)[0]?.args[0].input;
    expect(input?.ConditionExpression).toBe('attribute_exists(pk) AND #status IN (:from0)');
    expect(input?.UpdateExpression).toBe(
      'SET previousStatus = #status, #status = :status, statusAt = :at, updatedAt = :at, tenantStatus = :tenantStatus, #finishedAt = :finishedAt, expiresAt = :expiresAt REMOVE activeKey',
    );
    expect(input?.ExpressionAttributeValues).toMatchObject({
      ':from0': 'queued',
      ':status': 'canceled',
      ':tenantStatus': 'acme#canceled',
      ':expiresAt': Math.floor(at.getTime() / 1000) + 30 * 86_400,
    });
  });

  it("takes a job that leaves queued out of its tenant's backlog, after its status write", async () => {
    ddb
      .on(UpdateCommand)
      .resolves({ Attributes: { ...toItem({ ...job, status: 'running' }, 30), previousStatus: 'queued' } });

    const updated = await store.transition(job, ['queued', 'running'], { status: 'running' }, at);

    expect(updated).not.toHaveProperty('previousStatus');
    const inputs = ddb.commandCalls(UpdateCommand).map((call) => call.args[0].input);
    expect(inputs).toHaveLength(2);
    expect(inputs[1]).toEqual({
      TableName: 'jobs',
      Key: { pk: 'TENANT#acme', sk: 'TENANT' },
      UpdateExpression: 'ADD backlog :delta',
      ConditionExpression: 'backlog > :zero',
      ExpressionAttributeValues: { ':delta': -1, ':zero': 0 },
    });
  });

  it('leaves the backlog alone for a job that was not in it, and when the status write missed', async () => {
    ddb
      .on(UpdateCommand)
      .resolvesOnce({
        Attributes: { ...toItem({ ...job, status: 'failed' }, 30), previousStatus: 'running' },
      })
      .rejectsOnce(new ConditionalCheckFailedException({ message: 'no', $metadata: {} }));

    await store.transition(job, ['queued', 'running'], { status: 'failed' }, at);
    await store.transition(job, ['queued'], { status: 'running' }, at);

    expect(ddb.commandCalls(UpdateCommand)).toHaveLength(2);
  });

  it('keeps a non-terminal job in the active index', async () => {
    ddb.on(UpdateCommand).resolves({ Attributes: toItem({ ...job, status: 'running' }, 30) });
    await store.transition(job, ['queued'], { status: 'running' }, at);
    const input = ddb.commandCalls(UpdateCommand)[0]?.args[0].input;
    expect(input?.UpdateExpression).toContain('activeKey = :activeKey');
    expect(input?.UpdateExpression).not.toContain('activeStatus');
    expect(input?.UpdateExpression).not.toContain('REMOVE');
  });

  it('answers undefined when the job was not in an allowed status', async () => {
    ddb.on(UpdateCommand).rejects(conditionFailed());
    await expect(store.transition(job, ['queued'], { status: 'canceled' }, at)).resolves.toBeUndefined();
  });
});

describe('listByTenant', () => {
  const items = [3, 2, 1].map((n) =>
    toItem({ ...job, id: `job_${String(n).repeat(26)}`, createdAt: `2026-03-01T12:00:0${n}.000Z` }, 30),
  );

  it('queries the tenant index newest first and issues a cursor only when more remain', async () => {
    ddb.on(QueryCommand).resolves({ Items: items });

    const page = await store.listByTenant('acme', { limit: 2 });

    expect(page.items.map((j) => j.id)).toEqual([items[0]?.id, items[1]?.id]);
    expect(page.nextCursor).toEqual(expect.any(String));
    expect(ddb.commandCalls(QueryCommand)[0]?.args[0].input).toEqual({
      TableName: 'jobs',
      IndexName: 'byTenant',
      KeyConditionExpression: '#partition = :partition',
      FilterExpression:
        '(attribute_not_exists(expiresAt) OR expiresAt >= :now) AND attribute_not_exists(#parent)',
      ExpressionAttributeNames: { '#partition': 'tenantId', '#parent': 'parent' },
      ExpressionAttributeValues: { ':partition': 'acme', ':now': expect.any(Number) },
      ScanIndexForward: false,
      Limit: 3,
    });
  });

  it('reads only the creation window, both bounds exclusive, and filters by type', async () => {
    ddb.on(QueryCommand).resolves({ Items: [] });

    await store.listByTenant('acme', {
      status: 'queued',
      type: 'audio.transcribe',
      createdAfter: '2026-03-01T12:00:00.000Z',
      createdBefore: '2026-03-01T13:00:00.000Z',
      limit: 10,
    });
    await store.listByTenant('acme', { createdAfter: '2026-03-01T12:00:00.000Z', limit: 10 });
    await store.listByTenant('acme', { createdBefore: '2026-03-01T12:00:00.000Z', limit: 10 });

    const calls = ddb.commandCalls(QueryCommand).map((call) => call.args[0].input);
    expect(calls[0]).toMatchObject({
      IndexName: 'byTenantStatus',
      KeyConditionExpression: '#partition = :partition AND #created BETWEEN :from AND :to',
      FilterExpression:
        '((attribute_not_exists(expiresAt) OR expiresAt >= :now) AND attribute_not_exists(#parent)) AND #type = :type',
      ExpressionAttributeNames: { '#partition': 'tenantStatus', '#created': 'createdAt', '#type': 'type' },
      ExpressionAttributeValues: {
        ':partition': 'acme#queued',
        ':from': '2026-03-01T12:00:00.001Z',
        ':to': '2026-03-01T12:59:59.999Z',
        ':type': 'audio.transcribe',
      },
    });
    expect(calls[1]).toMatchObject({
      KeyConditionExpression: '#partition = :partition AND #created >= :from',
      ExpressionAttributeValues: { ':from': '2026-03-01T12:00:00.001Z' },
    });
    expect(calls[2]).toMatchObject({
      KeyConditionExpression: '#partition = :partition AND #created <= :to',
      ExpressionAttributeValues: { ':to': '2026-03-01T11:59:59.999Z' },
    });
  });

  it('reads nothing for a window with no millisecond inside it', async () => {
    const page = await store.listByTenant('acme', {
      createdAfter: '2026-03-01T12:00:00.000Z',
      createdBefore: '2026-03-01T12:00:00.001Z',
      limit: 10,
    });
    expect(page).toEqual({ items: [], nextCursor: null });
    expect(ddb.commandCalls(QueryCommand)).toHaveLength(0);
  });

  it('leaves out expired jobs that TTL has not deleted yet, reading on until the page is full', async () => {
    // The filter ran on the first read: of three items read, one was left (two had expired).
    ddb
      .on(QueryCommand)
      .resolvesOnce({ Items: items.slice(0, 1), LastEvaluatedKey: { pk: 'x' } })
      .resolvesOnce({ Items: items.slice(1, 3) });

    const page = await store.listByTenant('acme', { limit: 2 });

    expect(page.items.map((j) => j.id)).toEqual([items[0]?.id, items[1]?.id]);
    expect(page.nextCursor).toEqual(expect.any(String));
    const calls = ddb.commandCalls(QueryCommand).map((call) => call.args[0].input);
    expect(calls).toHaveLength(2);
    expect(calls[1]).toMatchObject({ Limit: 2, ExclusiveStartKey: { pk: 'x' } });
  });

  it('resumes after the cursor within the caller tenant and status', async () => {
    ddb.on(QueryCommand).resolvesOnce({ Items: items }).resolves({ Items: [] });
    const { nextCursor } = await store.listByTenant('acme', { limit: 2 });

    const last = await store.listByTenant('acme', { status: 'queued', limit: 2, cursor: nextCursor ?? '' });

    expect(last).toEqual({ items: [], nextCursor: null });
    expect(ddb.commandCalls(QueryCommand)[1]?.args[0].input).toMatchObject({
      IndexName: 'byTenantStatus',
      ExpressionAttributeValues: { ':partition': 'acme#queued' },
      ExclusiveStartKey: {
        pk: items[1]?.id,
        sk: 'JOB',
        tenantStatus: 'acme#queued',
        createdAt: items[1]?.createdAt,
      },
    });
  });

  it.each(['garbage', Buffer.from('{"id":1}').toString('base64url')])(
    'refuses a cursor it did not issue: %s',
    async (cursor) => {
      await expect(store.listByTenant('acme', { limit: 2, cursor })).rejects.toThrow(ValidationError);
      expect(ddb.commandCalls(QueryCommand)).toHaveLength(0);
    },
  );
});

describe('markEnqueued', () => {
  it('records the first enqueue only and tolerates a repeat', async () => {
    ddb.on(UpdateCommand).rejects(conditionFailed());
    await expect(store.markEnqueued(job.id, at)).resolves.toBeUndefined();
    expect(ddb.commandCalls(UpdateCommand)[0]?.args[0].input).toMatchObject({
      UpdateExpression: 'SET enqueuedAt = :at',
      ConditionExpression: 'attribute_exists(pk) AND attribute_not_exists(enqueuedAt)',
    });
  });
});

describe('recordProgressTick', () => {
  const tick = {
    progress: 40,
    at,
    notSince: new Date(at.getTime() - 1000),
    providerJobId: 'gen_1',
    submission: { createdAt: job.createdAt, number: 0 },
  };

  it('checks in the write itself what a read would: the job, its submission, its provider job, the interval', async () => {
    const stored = toItem({ ...job, status: 'running', progress: 40, taskToken: 'token-1' }, 30);
    ddb.on(UpdateCommand).resolves({ Attributes: { ...stored, progressAt: at.toISOString() } });

    await expect(store.recordProgressTick(job.id, tick)).resolves.toEqual({
      ...job,
      status: 'running',
      progress: 40,
      taskToken: 'token-1',
    });

    expect(ddb.commandCalls(GetCommand)).toHaveLength(0);
    expect(ddb.commandCalls(UpdateCommand)[0]?.args[0].input).toEqual({
      TableName: 'jobs',
      Key: { pk: job.id, sk: 'JOB' },
      UpdateExpression: 'SET progress = :progress, progressAt = :at, updatedAt = :at',
      ConditionExpression:
        'attribute_exists(pk) AND #status = :running AND createdAt = :createdAt AND ' +
        '(attribute_not_exists(resubmissions) OR resubmissions = :submission) AND ' +
        '(providerJobId = :providerJobId OR (attribute_not_exists(providerJobId) AND attribute_exists(submitIntent))) AND ' +
        'progress < :progress AND (attribute_not_exists(progressAt) OR progressAt <= :notSince)',
      ExpressionAttributeNames: { '#status': 'status' },
      ExpressionAttributeValues: {
        ':progress': 40,
        ':at': '2026-03-01T12:00:00.000Z',
        ':notSince': '2026-03-01T11:59:59.000Z',
        ':running': 'running',
        ':providerJobId': 'gen_1',
        ':submission': 0,
        ':createdAt': job.createdAt,
      },
      ReturnValues: 'ALL_NEW',
    });
  });

  it("holds a later submission's tick to that submission", async () => {
    ddb.on(UpdateCommand).rejects(conditionFailed());
    await store.recordProgressTick(job.id, { ...tick, submission: { createdAt: job.createdAt, number: 2 } });
    const input = ddb.commandCalls(UpdateCommand)[0]?.args[0].input;
    expect(input?.ConditionExpression).toContain(
      ' AND createdAt = :createdAt AND resubmissions = :submission AND ',
    );
    expect(input?.ExpressionAttributeValues).toMatchObject({ ':submission': 2, ':createdAt': job.createdAt });
  });

  it('holds a tick of a URL without a submission to the first submission of whichever record', async () => {
    ddb.on(UpdateCommand).rejects(conditionFailed());
    const { submission: _none, ...untagged } = tick;
    await store.recordProgressTick(job.id, untagged);
    const input = ddb.commandCalls(UpdateCommand)[0]?.args[0].input;
    expect(input?.ConditionExpression).toBe(
      'attribute_exists(pk) AND #status = :running AND ' +
        '(attribute_not_exists(resubmissions) OR resubmissions = :submission) AND ' +
        '(providerJobId = :providerJobId OR (attribute_not_exists(providerJobId) AND attribute_exists(submitIntent))) AND ' +
        'progress < :progress AND (attribute_not_exists(progressAt) OR progressAt <= :notSince)',
    );
    expect(input?.ExpressionAttributeValues).not.toHaveProperty(':createdAt');
  });

  it('answers undefined, and reads nothing, when the condition refused the write', async () => {
    ddb.on(UpdateCommand).rejects(conditionFailed());
    await expect(store.recordProgressTick(job.id, tick)).resolves.toBeUndefined();
    expect(ddb.commandCalls(GetCommand)).toHaveLength(0);
  });
});

describe('recordProviderOutcome', () => {
  it('lands only on the job and submission it was read for, and on its provider job', async () => {
    ddb.on(UpdateCommand).resolves({ Attributes: toItem({ ...job, status: 'running' }, 30) });
    const outcome = { status: 'succeeded' as const, at: at.toISOString(), providerJobId: 'gen_1' };

    await store.recordProviderOutcome({ ...job, resubmissions: 1 }, outcome);

    expect(ddb.commandCalls(UpdateCommand)[0]?.args[0].input).toMatchObject({
      Key: { pk: job.id, sk: 'JOB' },
      UpdateExpression: 'SET providerOutcome = :outcome',
      ConditionExpression:
        'attribute_exists(pk) AND attribute_not_exists(providerOutcome) AND createdAt = :createdAt AND ' +
        'resubmissions = :submission AND (attribute_not_exists(providerJobId) OR providerJobId = :providerJobId)',
      ExpressionAttributeValues: {
        ':outcome': outcome,
        ':createdAt': job.createdAt,
        ':submission': 1,
        ':providerJobId': 'gen_1',
      },
    });
  });
});

describe('settleSubmitIntent', () => {
  const settled = () => ddb.commandCalls(UpdateCommand)[0]?.args[0].input;
  beforeEach(() => ddb.on(UpdateCommand).resolves({ Attributes: toItem({ ...job, status: 'running' }, 30) }));

  it('records how many calls of a refused submission were answered, in the write that drops its intent', async () => {
    await store.settleSubmitIntent(job.id, undefined, at, 2);

    expect(settled()).toEqual({
      TableName: 'jobs',
      Key: { pk: job.id, sk: 'JOB' },
      UpdateExpression: 'SET answeredCalls = :answered, updatedAt = :at REMOVE submitIntent',
      ConditionExpression: 'attribute_exists(pk) AND attribute_not_exists(providerJobId)',
      ExpressionAttributeValues: { ':at': at.toISOString(), ':answered': 2 },
      ReturnValues: 'ALL_NEW',
    });
  });

  it('drops the answered part once a submission is accepted', async () => {
    await store.settleSubmitIntent(job.id, 'bedrock_1', at);

    expect(settled()).toMatchObject({
      UpdateExpression: 'SET providerJobId = :provider, updatedAt = :at REMOVE submitIntent, answeredCalls',
      ExpressionAttributeValues: { ':at': at.toISOString(), ':provider': 'bedrock_1' },
    });
  });

  it('leaves an answered part alone when a refusal answered nothing more', async () => {
    await store.settleSubmitIntent(job.id, undefined, at);

    expect(settled()).toMatchObject({
      UpdateExpression: 'SET updatedAt = :at REMOVE submitIntent',
      ExpressionAttributeValues: { ':at': at.toISOString() },
    });
  });
});

describe('reopenFailed', () => {
  it('moves a failed job back to running in one conditional write: active again, never expiring, error and finish cleared', async () => {
    const failed = { ...job, provider: 'replicate' as const, status: 'failed' as const, resumes: 1 };
    ddb.on(UpdateCommand).resolves({
      Attributes: toItem({ ...failed, status: 'running', resumes: 2, resumedAt: at.toISOString() }, 30),
    });

    const reopened = await store.reopenFailed(failed, at);

    expect(reopened).toMatchObject({ status: 'running', resumes: 2, resumedAt: at.toISOString() });
    expect(ddb.commandCalls(UpdateCommand).map((call) => call.args[0].input)).toEqual([
      {
        TableName: 'jobs',
        Key: { pk: job.id, sk: 'JOB' },
        UpdateExpression:
          'SET #status = :running, activeKey = :activeKey, tenantStatus = :tenantStatus, statusAt = :at, updatedAt = :at, resumedAt = :at, resumes = :resumes, #error = :null REMOVE finishedAt, expiresAt',
        ConditionExpression:
          'attribute_exists(pk) AND #status = :failed AND attribute_not_exists(replacedBy)',
        ExpressionAttributeNames: { '#status': 'status', '#error': 'error' },
        ExpressionAttributeValues: {
          ':running': 'running',
          ':failed': 'failed',
          ':activeKey': 'replicate#running',
          ':tenantStatus': 'acme#running',
          ':at': at.toISOString(),
          ':resumes': 2,
          ':null': null,
        },
        ReturnValues: 'ALL_NEW',
      },
    ]);
  });

  it('answers undefined for a job that is no longer failed (another resume moved it)', async () => {
    ddb.on(UpdateCommand).rejects(conditionFailed());
    await expect(store.reopenFailed({ ...job, status: 'failed' } as typeof job, at)).resolves.toBeUndefined();
  });
});

describe('markReplaced', () => {
  it('names the replay and its key in one write conditional on the status the job was listed in and the replay it named', async () => {
    const failed = { ...job, status: 'failed' as const };
    ddb.on(UpdateCommand).resolves({ Attributes: toItem({ ...failed, replacedBy: 'job_r' }, 30) });

    expect(await store.markReplaced(failed, 'job_r', undefined, 'replay:k')).toMatchObject({
      replacedBy: 'job_r',
    });
    await store.markReplaced(failed, undefined, 'job_r');

    expect(ddb.commandCalls(UpdateCommand).map((call) => call.args[0].input)).toEqual([
      {
        TableName: 'jobs',
        Key: { pk: job.id, sk: 'JOB' },
        UpdateExpression: 'SET replacedBy = :replacement, replacedByKey = :key',
        ConditionExpression:
          'attribute_exists(pk) AND #status = :status AND attribute_not_exists(replacedBy)',
        ExpressionAttributeNames: { '#status': 'status' },
        ExpressionAttributeValues: { ':status': 'failed', ':replacement': 'job_r', ':key': 'replay:k' },
        ReturnValues: 'ALL_NEW',
      },
      {
        TableName: 'jobs',
        Key: { pk: job.id, sk: 'JOB' },
        UpdateExpression: 'REMOVE replacedBy, replacedByKey',
        ConditionExpression: 'attribute_exists(pk) AND #status = :status AND replacedBy = :was',
        ExpressionAttributeNames: { '#status': 'status' },
        ExpressionAttributeValues: { ':status': 'failed', ':was': 'job_r' },
        ReturnValues: 'ALL_NEW',
      },
    ]);
  });

  it('answers undefined for a job resumed since it was listed', async () => {
    ddb.on(UpdateCommand).rejects(conditionFailed());
    await expect(
      store.markReplaced({ ...job, status: 'failed' }, 'job_r', undefined),
    ).resolves.toBeUndefined();
  });
});

describe('the per-provider active index', () => {
  it('lists a provider and status by keys only, then reads each job from the table, dropping finished ones', async () => {
    ddb.on(QueryCommand).resolves({
      Items: [
        { pk: 'job_a', sk: 'JOB', activeKey: 'replicate#queued', statusAt: '2026-03-01T12:00:00.000Z' },
        { pk: 'job_b', sk: 'JOB', activeKey: 'replicate#queued', statusAt: '2026-03-01T12:00:01.000Z' },
      ],
    });
    ddb.on(BatchGetCommand).resolves({
      Responses: {
        jobs: [
          toItem(
            { ...job, id: 'job_b', provider: 'replicate', status: 'succeeded', finishedAt: at.toISOString() },
            30,
          ),
          toItem({ ...job, id: 'job_a', provider: 'replicate' }, 30),
        ],
      },
    });

    const page = await store.listActive('replicate', 'queued', { limit: 2 });

    expect(ddb.commandCalls(QueryCommand)[0]?.args[0].input).toMatchObject({
      IndexName: 'activeByProvider',
      KeyConditionExpression: '#partition = :key',
      ExpressionAttributeNames: { '#partition': 'activeKey' },
      ExpressionAttributeValues: { ':key': 'replicate#queued' },
      Limit: 2,
    });
    expect(ddb.commandCalls(BatchGetCommand)[0]?.args[0].input).toEqual({
      RequestItems: {
        jobs: {
          Keys: [
            { pk: 'job_a', sk: 'JOB' },
            { pk: 'job_b', sk: 'JOB' },
          ],
          ConsistentRead: true,
        },
      },
    });
    expect(page.items.map((item) => item.id)).toEqual(['job_a']);
    expect(page.itemsRead).toBe(2);
  });
});

describe('the due index of scheduled jobs', () => {
  const runAt = '2026-03-02T08:00:00.000Z';
  const scheduled = newJob({ ...job, runAt }, at);

  it('writes a scheduled job into the due index only, not the active one', async () => {
    ddb.on(PutCommand).resolves({});

    await store.create(scheduled);

    const item = ddb.commandCalls(PutCommand)[0]?.args[0].input.Item;
    expect(item).toMatchObject({
      status: 'scheduled',
      dueShard: 'scheduled',
      runAt,
      tenantStatus: 'acme#scheduled',
    });
    expect(item).not.toHaveProperty('activeKey');
    expect(item).not.toHaveProperty('activeStatus');
    // A job due at once carries its runAt but is in no due index.
    expect(toItem(newJob({ ...job, runAt: '2026-03-01T11:00:00.000Z' }, at), 30)).not.toHaveProperty(
      'dueShard',
    );
  });

  it('takes a job leaving scheduled out of the due index in its status write, into the active one', async () => {
    ddb.on(UpdateCommand).resolves({
      Attributes: { ...toItem({ ...scheduled, status: 'queued' }, 30), previousStatus: 'scheduled' },
    });

    const moved = await store.transition(scheduled, ['scheduled'], { status: 'queued' }, at);

    expect(moved).not.toHaveProperty('dueShard');
    const inputs = ddb.commandCalls(UpdateCommand).map((call) => call.args[0].input);
    // Still in the backlog as queued: no counter write.
    expect(inputs).toHaveLength(1);
    expect(inputs[0]?.ConditionExpression).toBe('attribute_exists(pk) AND #status IN (:from0)');
    expect(inputs[0]?.UpdateExpression).toBe(
      'SET previousStatus = #status, #status = :status, statusAt = :at, updatedAt = :at, tenantStatus = :tenantStatus, activeKey = :activeKey REMOVE dueShard',
    );
    expect(inputs[0]?.ExpressionAttributeValues).toMatchObject({
      ':from0': 'scheduled',
      ':status': 'queued',
    });
  });

  it("cancels a scheduled job out of the due index and its tenant's backlog", async () => {
    ddb.on(UpdateCommand).resolves({
      Attributes: { ...toItem({ ...scheduled, status: 'canceled' }, 30), previousStatus: 'scheduled' },
    });

    await store.transition(
      scheduled,
      ['scheduled'],
      { status: 'canceled', finishedAt: at.toISOString() },
      at,
    );

    const inputs = ddb.commandCalls(UpdateCommand).map((call) => call.args[0].input);
    expect(inputs[0]?.UpdateExpression).toMatch(/ REMOVE activeKey, dueShard$/);
    expect(inputs[1]).toMatchObject({
      Key: { pk: 'TENANT#acme', sk: 'TENANT' },
      ExpressionAttributeValues: { ':delta': -1, ':zero': 0 },
    });
  });

  it('finds the jobs due by one query on runAt, reads each from the table and drops those that left scheduled', async () => {
    ddb.on(QueryCommand).resolves({
      Items: [
        { pk: 'job_a', sk: 'JOB', dueShard: 'scheduled', runAt: '2026-03-01T11:59:00.000Z' },
        { pk: 'job_b', sk: 'JOB', dueShard: 'scheduled', runAt: '2026-03-01T11:59:30.000Z' },
      ],
    });
    ddb.on(BatchGetCommand).resolves({
      Responses: {
        jobs: [
          toItem({ ...scheduled, id: 'job_a', runAt: '2026-03-01T11:59:00.000Z', status: 'scheduled' }, 30),
          toItem({ ...scheduled, id: 'job_b', status: 'canceled', finishedAt: at.toISOString() }, 30),
        ],
      },
    });

    const due = await store.listDue(at, 50);

    expect(ddb.commandCalls(QueryCommand)).toHaveLength(1);
    expect(ddb.commandCalls(QueryCommand)[0]?.args[0].input).toEqual({
      TableName: 'jobs',
      IndexName: 'due',
      KeyConditionExpression: '#shard = :shard AND #runAt <= :now',
      ExpressionAttributeNames: { '#shard': 'dueShard', '#runAt': 'runAt' },
      ExpressionAttributeValues: { ':shard': 'scheduled', ':now': at.toISOString() },
      Limit: 50,
    });
    expect(due.map((found) => found.id)).toEqual(['job_a']);
  });
});

describe('startWithSlot', () => {
  const entry = { provider: 'longhaul-http' as const, tenant: 'acme', place: '0001#job_a', jobId: job.id };
  const grant = {
    job,
    holder: 'job_aaaaaaaaaaaaaaaaaaaaaaaaaa#s0',
    limit: 5,
    claim: { tenant: 'acme', pass: { expected: 3, next: 4, floor: 3 } },
    // The provider's rate as the choice read it: the token is taken in the slot's own write.
    token: { tat: { expected: at.getTime() - 500, next: at.getTime() + 100 } },
    entry,
  };
  const canceled = (codes: string[]) =>
    new TransactionCanceledException({
      message: 'Transaction cancelled',
      $metadata: {},
      CancellationReasons: codes.map((Code) => ({ Code })),
    });

  it('takes the slot, starts the job and removes its line entry in one transaction, then leaves the backlog', async () => {
    ddb.on(TransactWriteCommand).resolves({});
    ddb.on(UpdateCommand).resolves({});

    const outcome = await store.startWithSlot(grant, at);

    const [call] = ddb.commandCalls(TransactWriteCommand);
    const items = call?.args[0].input.TransactItems ?? [];
    expect(items).toHaveLength(3);
    expect(items[0]?.Update).toMatchObject({
      TableName: 'jobs',
      Key: { pk: 'SLOTS', sk: 'SLOTS' },
      ConditionExpression:
        '(attribute_not_exists(inFlight) OR inFlight < :limit) AND NOT contains(holders, :holderId) AND ' +
        '(attribute_not_exists(pausedUntil) OR (pausedUntil <= :now AND probeUntil > pausedUntil AND probeUntil <= :now)) AND ' +
        'tat = :expectedTat AND #pass = :expectedPass',
      UpdateExpression:
        'SET tat = :tat, #pass = :nextPass, #floor = :floor ADD inFlight :one, holders :holder, #tenantHolders :holder',
      ExpressionAttributeValues: expect.objectContaining({
        ':now': at.getTime(),
        ':expectedTat': at.getTime() - 500,
        ':tat': at.getTime() + 100,
      }),
    });
    expect(items[1]?.Update).toMatchObject({
      TableName: 'jobs',
      Key: { pk: job.id, sk: 'JOB' },
      ConditionExpression:
        'attribute_exists(pk) AND #status = :queued AND createdAt = :createdAt AND (attribute_not_exists(startBy) OR startBy > :at OR attribute_exists(submitIntent))',
    });
    expect(items[2]).toEqual({
      Delete: { TableName: 'jobs', Key: { pk: 'WAIT#longhaul-http#acme', sk: '0001#job_a' } },
    });
    // The backlog counter after the transaction, as any move out of queued.
    expect(ddb.commandCalls(UpdateCommand)[0]?.args[0].input.UpdateExpression).toBe('ADD backlog :delta');
    expect(outcome).toEqual({
      granted: expect.objectContaining({ id: job.id, status: 'running', startedAt: at.toISOString() }),
    });
  });

  it('tells a job that left queued from a slot that was taken, writing nothing more', async () => {
    const reasons = [
      ['None', 'ConditionalCheckFailed', 'None'],
      ['ConditionalCheckFailed', 'None', 'None'],
      // Both refused: the job's reason wins, its stale entry is for the caller to remove.
      ['ConditionalCheckFailed', 'ConditionalCheckFailed', 'None'],
    ];
    ddb.on(TransactWriteCommand).callsFake(() => {
      throw canceled(reasons.shift() ?? []);
    });
    await expect(store.startWithSlot(grant, at)).resolves.toEqual({ refused: 'job' });
    await expect(store.startWithSlot(grant, at)).resolves.toEqual({ refused: 'slot' });
    await expect(store.startWithSlot(grant, at)).resolves.toEqual({ refused: 'job' });
    expect(ddb.commandCalls(UpdateCommand)).toHaveLength(0);
  });
});
