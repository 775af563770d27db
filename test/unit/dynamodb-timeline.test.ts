import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient, PutCommand, QueryCommand } from '@aws-sdk/lib-dynamodb';
import { mockClient } from 'aws-sdk-client-mock';
import { DynamoDbTimeline } from '../../lambdas/adapters/dynamodb-timeline';
import { jobTimeline } from '../../lambdas/domain/intake';
import { sampleJob } from './support/jobs';
import { MemoryTimeline, MemoryWorkflow } from './support/memory-ports';

const documentClient = DynamoDBDocumentClient.from(new DynamoDBClient({ region: 'us-east-1' }));
const ddb = mockClient(documentClient);
const timeline = new DynamoDbTimeline(documentClient, { tableName: 'jobs', retentionDays: 30 });
const jobId = 'job_aaaaaaaaaaaaaaaaaaaaaaaaaa';

beforeEach(() => ddb.reset());

describe('list', () => {
  it('reads only the events recorded since the job was created, to the last page', async () => {
    const event = { at: '2026-03-02T00:00:01.000Z', type: 'step.started', step: 'submit' };
    ddb
      .on(QueryCommand)
      .resolvesOnce({
        Items: [{ pk: jobId, sk: 'EVT#1', expiresAt: 1, ...event }],
        LastEvaluatedKey: { pk: jobId },
      })
      .resolvesOnce({ Items: [] });

    await expect(timeline.list(jobId, '2026-03-02T00:00:00.000Z')).resolves.toEqual([event]);

    const calls = ddb.commandCalls(QueryCommand).map((call) => call.args[0].input);
    expect(calls).toHaveLength(2);
    expect(calls[0]).toEqual({
      TableName: 'jobs',
      KeyConditionExpression: 'pk = :job AND sk BETWEEN :from AND :to',
      ExpressionAttributeValues: {
        ':job': jobId,
        ':from': 'EVT#2026-03-02T00:00:00.000Z',
        ':to': 'EVT#\uffff',
      },
      ConsistentRead: true,
      ExclusiveStartKey: undefined,
    });
    expect(calls[1]?.ExclusiveStartKey).toEqual({ pk: jobId });
  });
});

describe('kept steps', () => {
  const steps = {
    executionName: `${jobId}-g1`,
    readAt: '2026-03-02T00:00:10.000Z',
    resumes: 1,
    ended: true,
    events: [{ at: '2026-03-02T00:00:01.000Z', type: 'step.started', step: 'submit', attempt: 1 }],
  };

  it('are one item a run, outside the events’ range, expiring as the events do', async () => {
    ddb.on(PutCommand).resolves({});

    await timeline.keepSteps(jobId, steps);

    expect(ddb.commandCalls(PutCommand).map((call) => call.args[0].input)).toEqual([
      {
        TableName: 'jobs',
        Item: {
          pk: jobId,
          sk: `STEPS#${jobId}-g1`,
          executionName: `${jobId}-g1`,
          readAt: '2026-03-02T00:00:10.000Z',
          resumes: 1,
          ended: true,
          events: JSON.stringify(steps.events),
          expiresAt: Date.parse('2026-03-02T00:00:10.000Z') / 1000 + (30 + 365) * 86_400,
        },
      },
    ]);
  });

  it('are read back, every run of the job, to the last page', async () => {
    const { executionName, readAt, resumes, ended, events } = steps;
    const item = { pk: jobId, sk: `STEPS#${executionName}`, executionName, readAt, resumes, ended };
    ddb
      .on(QueryCommand)
      .resolvesOnce({
        Items: [{ ...item, events: JSON.stringify(events), expiresAt: 1 }],
        LastEvaluatedKey: { pk: jobId },
      })
      .resolvesOnce({ Items: [] });

    await expect(timeline.keptSteps(jobId)).resolves.toEqual([steps]);

    const calls = ddb.commandCalls(QueryCommand).map((call) => call.args[0].input);
    expect(calls).toEqual([
      {
        TableName: 'jobs',
        KeyConditionExpression: 'pk = :job AND begins_with(sk, :steps)',
        ExpressionAttributeValues: { ':job': jobId, ':steps': 'STEPS#' },
        ConsistentRead: true,
        ExclusiveStartKey: undefined,
      },
      {
        TableName: 'jobs',
        KeyConditionExpression: 'pk = :job AND begins_with(sk, :steps)',
        ExpressionAttributeValues: { ':job': jobId, ':steps': 'STEPS#' },
        ConsistentRead: true,
        ExclusiveStartKey: { pk: jobId },
      },
    ]);
  });
});

describe('jobTimeline', () => {
  it('shows a job created again under an expired key none of the earlier job history', async () => {
    const memory = new MemoryTimeline();
    await memory.record(jobId, { at: '2026-03-01T00:00:05.000Z', type: 'step.failed', step: 'submit' });
    const again = sampleJob(new Date('2026-04-01T00:00:00.000Z'), { id: jobId });
    await memory.record(jobId, { at: '2026-04-01T00:00:01.000Z', type: 'job.dispatched' });

    const events = await jobTimeline(
      memory,
      new MemoryWorkflow(),
      again,
      new Date('2026-04-01T00:00:02.000Z'),
    );

    expect(events.map((e) => e.type)).toEqual(['job.accepted', 'job.dispatched']);
  });
});
