import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { BatchWriteCommand, DynamoDBDocumentClient, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { mockClient } from 'aws-sdk-client-mock';
import { DynamoDbWaitingLines } from '../../lambdas/adapters/dynamodb-waiting-lines';
import type { WaitingEntry } from '../../lambdas/domain/ports';

const documentClient = DynamoDBDocumentClient.from(new DynamoDBClient({ region: 'us-east-1' }));
const ddb = mockClient(documentClient);
const lines = new DynamoDbWaitingLines(documentClient, 'jobs');

const entry = (
  n: number,
  tenant = 'acme',
  provider: WaitingEntry['provider'] = 'replicate',
): WaitingEntry => ({
  provider,
  tenant,
  place: `p${String(n).padStart(3, '0')}`,
  jobId: `job_${n}`,
});
const put = (e: WaitingEntry) => ({
  PutRequest: { Item: { pk: `WAIT#${e.provider}#${e.tenant}`, sk: e.place, jobId: e.jobId } },
});

beforeEach(() => {
  ddb.reset();
  ddb.on(BatchWriteCommand).resolves({});
  ddb.on(UpdateCommand).resolves({});
});

describe('addMany', () => {
  it('writes the entries 25 to a batch, then marks each tenant once with the count of its jobs', async () => {
    const acme = Array.from({ length: 27 }, (_, n) => entry(n));
    const globex = entry(99, 'globex', 'deepgram');

    const failed = await lines.addMany([...acme, globex, acme[0] as WaitingEntry]);

    expect(failed).toEqual(new Map());
    expect(ddb.commandCalls(BatchWriteCommand).map((call) => call.args[0].input)).toEqual([
      { RequestItems: { jobs: acme.slice(0, 25).map(put) } },
      { RequestItems: { jobs: [...acme.slice(25), globex].map(put) } },
    ]);
    expect(ddb.commandCalls(UpdateCommand).map((call) => call.args[0].input)).toEqual([
      {
        TableName: 'jobs',
        Key: { pk: 'WAITING#replicate', sk: 'acme' },
        UpdateExpression: 'ADD marks :one',
        ExpressionAttributeValues: { ':one': 27 },
      },
      {
        TableName: 'jobs',
        Key: { pk: 'WAITING#deepgram', sk: 'globex' },
        UpdateExpression: 'ADD marks :one',
        ExpressionAttributeValues: { ':one': 1 },
      },
    ]);
  });

  it('writes again what DynamoDB left unprocessed, and marks only the tenants whose entries were written', async () => {
    const [a, b] = [entry(1), entry(2, 'globex')];
    ddb
      .on(BatchWriteCommand)
      .resolvesOnce({ UnprocessedItems: { jobs: [put(b)] } })
      .rejects(new Error('throttled'));

    const failed = await lines.addMany([a, b]);

    expect(ddb.commandCalls(BatchWriteCommand).map((call) => call.args[0].input)).toEqual([
      { RequestItems: { jobs: [put(a), put(b)] } },
      { RequestItems: { jobs: [put(b)] } },
    ]);
    expect([...failed.keys()]).toEqual([b.jobId]);
    expect(ddb.commandCalls(UpdateCommand).map((call) => call.args[0].input.Key)).toEqual([
      { pk: 'WAITING#replicate', sk: 'acme' },
    ]);
  });

  it("answers a tenant's jobs as not in line when its mark could not be written", async () => {
    ddb.on(UpdateCommand).rejects(new Error('throttled'));
    const failed = await lines.addMany([entry(1), entry(2)]);
    expect([...failed.keys()]).toEqual(['job_1', 'job_2']);
  });
});
