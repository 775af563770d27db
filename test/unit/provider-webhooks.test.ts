import {
  ApiGatewayManagementApiClient,
  PostToConnectionCommand,
} from '@aws-sdk/client-apigatewaymanagementapi';
import { ConditionalCheckFailedException } from '@aws-sdk/client-dynamodb';
import { GetSecretValueCommand, SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import { SendTaskHeartbeatCommand, SFNClient } from '@aws-sdk/client-sfn';
import { DynamoDBDocumentClient, GetCommand, QueryCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { mockClient } from 'aws-sdk-client-mock';
import { LAMBDA_SYNC_REQUEST_BYTES } from '../../config/settings';
import { toItem } from '../../lambdas/adapters/dynamodb-job-store';
import { type Job, newJob, submissionTagOf } from '../../lambdas/domain/job';
import { signPayload } from '../../lambdas/shared/signature';
import { SYNC_REQUEST_PAYLOAD_BYTES } from '../../local/lambda-service';

/**
 * The webhook logic both endpoints share (the REST API's routes and the
 * provider events function's URL), over the real adapters with their SDK
 * clients mocked: what reaches storage per tick, and what a refused webhook
 * is answered.
 */

const WEBHOOK_SECRET = 'generic-provider-webhook-secret';
Object.assign(process.env, {
  JOB_TABLE_NAME: 'jobs',
  CONNECTION_TABLE_NAME: 'connections',
  STREAM_CALLBACK_URL: 'https://ws.example/live',
  OUTPUT_BUCKET_NAME: 'outputs',
  PROVIDER_SECRET_ARN_LONGHAUL_HTTP: 'arn:aws:secretsmanager:us-east-1:000000000000:secret:generic',
  AWS_REGION: 'us-east-1',
  POWERTOOLS_LOG_LEVEL: 'SILENT',
  POWERTOOLS_TRACE_ENABLED: 'false',
  POWERTOOLS_METRICS_DISABLED: 'true',
});

const ddb = mockClient(DynamoDBDocumentClient);
const secrets = mockClient(SecretsManagerClient);
const sfn = mockClient(SFNClient);
const sockets = mockClient(ApiGatewayManagementApiClient);

const { answerProviderWebhook, PROVIDER_EVENT_MAX_BYTES } =
  require('../../lambdas/shared/provider-webhooks') as typeof import('../../lambdas/shared/provider-webhooks');

const created = new Date('2026-05-01T10:00:00.000Z');
let jobs = 0;
/** A running job at the provider (a fresh id each time: the module remembers jobs between tests). */
function runningJob(patch: Partial<Job> = {}): Job {
  jobs += 1;
  return {
    ...newJob(
      {
        id: `job_${'a'.repeat(25)}${'bcdefghijklmnopqrstuvwxyz'[jobs]}`,
        tenantId: 'acme',
        type: 'image.generate',
        input: {},
        idempotencyKey: `k${jobs}`,
        fingerprint: 'f',
      },
      created,
    ),
    status: 'running',
    providerJobId: 'gen_1',
    taskToken: 'token-1',
    ...patch,
  };
}

/** A delivery as the generic provider signs it, for the job's current submission. */
function delivery(job: Job, event: Record<string, unknown>, query?: Record<string, string>) {
  const body = JSON.stringify(event);
  return {
    headers: {
      'content-type': 'application/json',
      'provider-signature': signPayload(WEBHOOK_SECRET, body, Math.floor(Date.now() / 1000)),
    },
    query: query ?? { jobId: job.id, submission: submissionTagOf(job) },
    body: Buffer.from(body),
  };
}

const tick = (progress: number) => ({
  type: 'progress',
  id: 'gen_1',
  progress,
  at: new Date().toISOString(),
});

beforeEach(() => {
  ddb.reset();
  sfn.reset();
  sockets.reset();
  secrets.reset();
  secrets
    .on(GetSecretValueCommand)
    .resolves({ SecretString: JSON.stringify({ webhookSecret: WEBHOOK_SECRET }) });
  sfn.on(SendTaskHeartbeatCommand).resolves({});
  sockets.on(PostToConnectionCommand).resolves({});
});

describe('answerProviderWebhook', () => {
  it('stores a tick of a running job with its one conditional write, streams it and keeps the step alive', async () => {
    const job = runningJob();
    ddb.on(UpdateCommand).resolves({ Attributes: toItem({ ...job, progress: 40 }, 30) });
    ddb.on(QueryCommand).resolves({ Items: [{ connectionId: 'c1', connectedAt: created.toISOString() }] });

    const answer = await answerProviderWebhook('longhaul-http', delivery(job, tick(40)), 'req-1');

    expect(answer).toEqual({ statusCode: 204, headers: { 'cache-control': 'no-store' }, body: '' });
    expect(ddb.commandCalls(GetCommand)).toHaveLength(0);
    expect(ddb.commandCalls(UpdateCommand)).toHaveLength(1);
    expect(ddb.commandCalls(UpdateCommand)[0]?.args[0].input).toMatchObject({
      Key: { pk: job.id, sk: 'JOB' },
      ExpressionAttributeValues: {
        ':progress': 40,
        ':providerJobId': 'gen_1',
        ':submission': 0,
        ':createdAt': job.createdAt,
      },
      ReturnValues: 'ALL_NEW',
    });
    const pushed = sockets.commandCalls(PostToConnectionCommand)[0]?.args[0].input;
    expect(pushed?.ConnectionId).toBe('c1');
    expect(JSON.parse(Buffer.from(pushed?.Data as Uint8Array).toString('utf8'))).toMatchObject({
      type: 'progress',
      jobId: job.id,
      status: 'running',
      progress: 40,
    });
    expect(sfn.commandCalls(SendTaskHeartbeatCommand).map((call) => call.args[0].input)).toEqual([
      { taskToken: 'token-1' },
    ]);
  });

  it('answers ten ticks of one second with one write and no read, streaming each', async () => {
    const job = runningJob();
    ddb.on(UpdateCommand).resolves({ Attributes: toItem({ ...job, progress: 1 }, 30) });
    ddb.on(QueryCommand).resolves({ Items: [{ connectionId: 'c1', connectedAt: created.toISOString() }] });

    for (let progress = 1; progress <= 10; progress++) {
      const answer = await answerProviderWebhook('longhaul-http', delivery(job, tick(progress)), 'req-1');
      expect(answer.statusCode).toBe(204);
    }

    expect(ddb.commandCalls(UpdateCommand)).toHaveLength(1);
    expect(ddb.commandCalls(GetCommand)).toHaveLength(0);
    expect(sockets.commandCalls(PostToConnectionCommand)).toHaveLength(10);
    expect(sfn.commandCalls(SendTaskHeartbeatCommand)).toHaveLength(1);
  });

  it('reads the job once when the write is refused, and streams nothing for a job that finished', async () => {
    const job = runningJob({ status: 'succeeded', progress: 100 });
    ddb.on(UpdateCommand).rejects(new ConditionalCheckFailedException({ message: 'failed', $metadata: {} }));
    ddb.on(GetCommand).resolves({ Item: toItem(job, 30) });

    await answerProviderWebhook('longhaul-http', delivery(job, tick(50)), 'req-1');
    await answerProviderWebhook('longhaul-http', delivery(job, tick(51)), 'req-2');

    expect(ddb.commandCalls(UpdateCommand)).toHaveLength(1);
    expect(ddb.commandCalls(GetCommand)).toHaveLength(1);
    expect(sockets.commandCalls(PostToConnectionCommand)).toHaveLength(0);
    expect(sfn.commandCalls(SendTaskHeartbeatCommand)).toHaveLength(0);
  });

  it('refuses a forged signature with 401 before anything is read', async () => {
    const job = runningJob();
    const forged = {
      ...delivery(job, tick(10)),
      headers: { 'content-type': 'application/json', 'provider-signature': `t=1,v1=${'0'.repeat(64)}` },
    };

    const answer = await answerProviderWebhook('longhaul-http', forged, 'req-forged');

    expect(answer.statusCode).toBe(401);
    expect(answer.headers).toMatchObject({ 'content-type': 'application/problem+json' });
    expect(JSON.parse(answer.body)).toEqual({
      type: 'urn:longhaul:problem:unauthorized',
      title: 'Unauthorized',
      status: 401,
      detail: 'Missing, stale or invalid longhaul-http webhook signature.',
      code: 'unauthorized',
      instance: 'urn:longhaul:request:req-forged',
    });
    expect(ddb.calls()).toHaveLength(0);
  });

  it('takes what Lambda carries, and no less: the 6 MB of a synchronous invocation, as the local function URL', () => {
    expect(PROVIDER_EVENT_MAX_BYTES).toBe(LAMBDA_SYNC_REQUEST_BYTES);
    expect(SYNC_REQUEST_PAYLOAD_BYTES).toBe(LAMBDA_SYNC_REQUEST_BYTES);
  });

  it('applies an event of 2 MB, the size of a Deepgram callback for an hour of speech', async () => {
    const job = runningJob();
    ddb.on(UpdateCommand).resolves({ Attributes: toItem({ ...job, progress: 10 }, 30) });
    ddb.on(QueryCommand).resolves({ Items: [] });
    const event = { ...tick(10), words: 'w'.repeat(2 * 1024 * 1024) };

    const answer = await answerProviderWebhook('longhaul-http', delivery(job, event), 'req-hour');

    expect(answer.statusCode).toBe(204);
    expect(ddb.commandCalls(UpdateCommand)).toHaveLength(1);
  });

  it('refuses a body larger than Lambda carries with 413 before its signature is even looked up', async () => {
    const job = runningJob();
    const large = { ...delivery(job, tick(10)), body: Buffer.alloc(PROVIDER_EVENT_MAX_BYTES + 1, 0x20) };

    const answer = await answerProviderWebhook('longhaul-http', large, 'req-large');

    expect(answer.statusCode).toBe(413);
    expect(JSON.parse(answer.body)).toMatchObject({
      code: 'payload-too-large',
      instance: 'urn:longhaul:request:req-large',
    });
    expect(secrets.calls()).toHaveLength(0);
    expect(ddb.calls()).toHaveLength(0);
  });

  it.each([
    ['no job id', {}, 'jobId'],
    [
      'a malformed submission tag',
      { jobId: 'job_aaaaaaaaaaaaaaaaaaaaaaaaaa', submission: '1' },
      'submission',
    ],
  ])('refuses a signed event whose URL has %s with 400', async (_, query, parameter) => {
    const answer = await answerProviderWebhook(
      'longhaul-http',
      delivery(runningJob(), tick(10), query),
      'req-400',
    );

    expect(answer.statusCode).toBe(400);
    expect(JSON.parse(answer.body)).toMatchObject({
      code: 'validation-failed',
      errors: [{ parameter }],
      instance: 'urn:longhaul:request:req-400',
    });
    expect(ddb.calls()).toHaveLength(0);
  });

  it('answers a failure of its own with a 500 problem that tells nothing of it', async () => {
    const job = runningJob();
    ddb.on(UpdateCommand).rejects(new Error('table is on fire'));

    const answer = await answerProviderWebhook('longhaul-http', delivery(job, tick(10)), 'req-500');

    expect(answer.statusCode).toBe(500);
    expect(answer.body).not.toContain('fire');
    expect(JSON.parse(answer.body)).toMatchObject({
      code: 'internal-error',
      instance: 'urn:longhaul:request:req-500',
    });
  });
});
