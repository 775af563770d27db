import { createHash } from 'node:crypto';
import { existsSync, rmSync } from 'node:fs';
import { createServer as createHttpServer, type Server } from 'node:http';
import { type AddressInfo, createServer } from 'node:net';
import { join } from 'node:path';
import {
  ApiGatewayManagementApiClient,
  DeleteConnectionCommand,
  GetConnectionCommand,
  GoneException,
  PayloadTooLargeException,
  PostToConnectionCommand,
} from '@aws-sdk/client-apigatewaymanagementapi';
import { DescribeTableCommand } from '@aws-sdk/client-dynamodb';
import { HeadBucketCommand } from '@aws-sdk/client-s3';
import { GetIndexCommand, GetVectorsCommand, PutVectorsCommand } from '@aws-sdk/client-s3vectors';
import {
  CancelMessageMoveTaskCommand,
  CreateQueueCommand,
  DeleteMessageCommand,
  GetQueueAttributesCommand,
  GetQueueUrlCommand,
  ListMessageMoveTasksCommand,
  PurgeQueueCommand,
  ReceiveMessageCommand,
  ResourceNotFoundException,
  SendMessageCommand,
  type SQSClient,
  StartMessageMoveTaskCommand,
  UnsupportedOperation,
} from '@aws-sdk/client-sqs';
import { GetCommand, PutCommand, QueryCommand, ScanCommand } from '@aws-sdk/lib-dynamodb';
import type {
  APIGatewayAuthorizerResult,
  APIGatewayProxyEvent,
  APIGatewayRequestAuthorizerEvent,
  SQSEvent,
  SQSRecord,
} from 'aws-lambda';
import {
  API_KEY_HEADER,
  connectionTable,
  JOB_ITEM_SORT_KEY,
  jobTable,
  passageIndex,
  routes,
  STREAM_PATH,
} from '../../config/layout';
import { gatewayProblems, PROBLEM_CONTENT_TYPE } from '../../config/problems';
import { defaultSettings, queueVisibilityTimeoutSeconds } from '../../config/settings';
import { hashApiKey } from '../../lambdas/shared/api-keys';
import { failedMessageIds, startSqsEventSource } from '../../local/event-source';
import { type Gateway, startGateway } from '../../local/gateway';
import type { ApiHandler, AuthorizerHandler, StreamHandler } from '../../local/handlers';
import {
  documentClient,
  dynamoDbClient,
  pollUntil,
  queueDepth,
  type RunningLocalStack,
  s3Client,
  s3VectorsClient,
  sqsClient,
  startLocalStack,
  temporaryDataDir,
} from '../../local/harness/local-stack';
import { useTemplateFunctions } from '../../local/lambda';
import { startReconcilerSchedule } from '../../local/reconciler';
import { loadTemplate } from '../../local/template';
import type { WebSocketEvent } from '../../local/websocket-api/events';
import { startWebSocketApi, type WebSocketApi } from '../../local/websocket-api/server';
import { apiCall } from '../e2e/support/api';
import { connectStream, openStream } from './support/websocket';

const START_TIMEOUT_MS = 60_000;
const ALPHA_KEY = 'e2e-alpha-key-5f1c9a';
const BETA_KEY = 'e2e-beta-key-8d2e41';
const ADMIN_KEY = 'e2e-admin-key-3b7f06';
const keyEnv = {
  LONGHAUL_API_KEYS: `${ALPHA_KEY}:alpha, ${BETA_KEY}:beta`,
  LONGHAUL_ADMIN_KEY: ADMIN_KEY,
};

async function expectProblem(
  response: Response,
  status: number,
  code: string,
): Promise<Record<string, unknown>> {
  expect(response.status).toBe(status);
  expect(response.headers.get('content-type')).toBe(PROBLEM_CONTENT_TYPE);
  const body = (await response.json()) as Record<string, unknown>;
  expect(body).toMatchObject({ status, code });
  return body;
}

// The in-process gateways and WebSocket APIs below invoke functions with the template's timeouts, as the stack does.
beforeAll(() => useTemplateFunctions(loadTemplate(defaultSettings)));

describe('local stack', () => {
  let stack: RunningLocalStack;

  beforeAll(async () => {
    stack = await startLocalStack({ env: keyEnv });
  }, START_TIMEOUT_MS);

  afterAll(() => stack?.stop());

  it('prints the ready line with the loopback URL it publishes in local.json', () => {
    expect(stack.output()).toMatch(/^longhaul local: ready at http:\/\/127\.0\.0\.1:\d+$/m);
    expect(stack.endpoints.apiUrl).toBe(stack.baseUrl);
    expect(stack.endpoints.region).toBe('us-east-1');
  });

  it("serves the provider events function's URL on its port, as the template declares it", async () => {
    const url = stack.endpoints.functionUrls['provider-events'];
    expect(url).toBe(`${stack.baseUrl}/lambda-url/longhaul-provider-events/`);
    // The function answers, not the gateway: its own problems, with its request id.
    const elsewhere = await fetch(`${url}v1/jobs`, { method: 'POST', body: '{}' });
    expect(await expectProblem(elsewhere, 404, 'not-found')).toMatchObject({
      detail: 'No provider posts its events to POST /v1/jobs.',
      instance: expect.stringMatching(/^urn:longhaul:request:[0-9a-f-]{36}$/),
    });
    const unsigned = await fetch(`${url}v1/provider/events?jobId=job_${'a'.repeat(26)}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ type: 'progress', id: 'gen_1', progress: 5, at: new Date().toISOString() }),
    });
    await expectProblem(unsigned, 401, 'unauthorized');
  });

  it('answers GET /healthz without a key', async () => {
    const response = await fetch(`${stack.baseUrl}/healthz`);
    expect(response.status).toBe(200);
    expect(await response.json()).toMatchObject({ status: 'ok' });
    expect(response.headers.get('x-amzn-requestid')).toMatch(/^[0-9a-f-]{36}$/);
  });

  it('answers an unknown path, or a known path with another method, with the 404 problem', async () => {
    const unknown = await fetch(`${stack.baseUrl}/v1/nothing-here`);
    expect(await expectProblem(unknown, 404, 'not-found')).toEqual(
      gatewayProblems.MISSING_AUTHENTICATION_TOKEN,
    );
    await expectProblem(await fetch(`${stack.baseUrl}/v1/jobs`, { method: 'DELETE' }), 404, 'not-found');
    await expectProblem(await fetch(`${stack.baseUrl}/v1/jobs/`), 404, 'not-found');
  });

  it('refuses a tenant route without a key, and with an unknown key, with the 401 problem', async () => {
    const missing = await fetch(`${stack.baseUrl}/v1/jobs`);
    expect(await expectProblem(missing, 401, 'unauthorized')).toEqual(gatewayProblems.UNAUTHORIZED);
    const unknown = await fetch(`${stack.baseUrl}/v1/jobs`, { headers: { [API_KEY_HEADER]: 'not-a-key' } });
    await expectProblem(unknown, 401, 'unauthorized');
  });

  it('refuses a body over 10 MiB with the 413 problem, declared or streamed', async () => {
    const declared = await fetch(`${stack.baseUrl}/v1/jobs`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', [API_KEY_HEADER]: ALPHA_KEY },
      body: Buffer.alloc(10 * 1024 * 1024 + 1, 0x20),
    });
    expect(await expectProblem(declared, 413, 'payload-too-large')).toEqual(
      gatewayProblems.REQUEST_TOO_LARGE,
    );

    // No Content-Length: the gateway has to count while reading.
    const chunk = new Uint8Array(1024 * 1024).fill(0x20);
    let sent = 0;
    const streamed = await fetch(`${stack.baseUrl}/v1/jobs`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', [API_KEY_HEADER]: ALPHA_KEY },
      body: new ReadableStream<Uint8Array>({
        pull(controller) {
          if (sent++ < 11) controller.enqueue(chunk);
          else controller.close();
        },
      }),
      duplex: 'half',
    } as RequestInit);
    await expectProblem(streamed, 413, 'payload-too-large');
  });

  it('creates the job table, key table, queues and buckets from the shared layout and settings', async () => {
    const dynamodb = dynamoDbClient(stack.endpoints);
    const sqs = sqsClient(stack.endpoints);
    const s3 = s3Client(stack.endpoints);
    try {
      const jobs = (
        await dynamodb.send(new DescribeTableCommand({ TableName: stack.endpoints.jobTableName }))
      ).Table;
      expect(jobs?.KeySchema).toEqual([
        { AttributeName: 'pk', KeyType: 'HASH' },
        { AttributeName: 'sk', KeyType: 'RANGE' },
      ]);
      expect(jobs?.BillingModeSummary?.BillingMode).toBe('PAY_PER_REQUEST');
      const indexes = (jobs?.GlobalSecondaryIndexes ?? [])
        .map((index) => ({
          name: index.IndexName,
          keys: index.KeySchema?.map((key) => key.AttributeName),
          projection: index.Projection?.ProjectionType,
        }))
        .sort((a, b) => String(a.name).localeCompare(String(b.name)));
      expect(indexes).toEqual(
        jobTable.indexes
          .map((index) => ({
            name: index.name,
            keys: [index.partitionKey, index.sortKey],
            projection: index.projection,
          }))
          .sort((a, b) => a.name.localeCompare(b.name)),
      );
      const keys = (
        await dynamodb.send(new DescribeTableCommand({ TableName: stack.endpoints.apiKeyTableName }))
      ).Table;
      expect(keys?.KeySchema).toEqual([{ AttributeName: 'keyHash', KeyType: 'HASH' }]);

      const dlq = await sqs.send(
        new GetQueueAttributesCommand({
          QueueUrl: stack.endpoints.deadLetterQueueUrl,
          AttributeNames: ['QueueArn'],
        }),
      );
      const queue = await sqs.send(
        new GetQueueAttributesCommand({
          QueueUrl: stack.endpoints.jobQueueUrl,
          AttributeNames: ['VisibilityTimeout', 'RedrivePolicy'],
        }),
      );
      expect(queue.Attributes?.VisibilityTimeout).toBe(
        String(queueVisibilityTimeoutSeconds(defaultSettings)),
      );
      expect(JSON.parse(queue.Attributes?.RedrivePolicy ?? '{}')).toEqual({
        deadLetterTargetArn: dlq.Attributes?.QueueArn,
        maxReceiveCount: defaultSettings.maxReceiveCount,
      });

      for (const name of [stack.endpoints.inputBucketName, stack.endpoints.outputBucketName]) {
        const bucket = await s3.send(new HeadBucketCommand({ Bucket: name }));
        expect(bucket.$metadata.httpStatusCode).toBe(200);
      }
    } finally {
      dynamodb.destroy();
      sqs.destroy();
      s3.destroy();
    }
  });

  it('creates the passage index in its vector bucket as the template declares it', async () => {
    const s3vectors = s3VectorsClient(stack.endpoints);
    try {
      const { index } = await s3vectors.send(
        new GetIndexCommand({
          vectorBucketName: stack.endpoints.vectorBucketName,
          indexName: stack.endpoints.vectorIndexName,
        }),
      );
      expect(index).toEqual(
        expect.objectContaining({
          dataType: 'float32',
          dimension: defaultSettings.embeddingDimensions,
          distanceMetric: defaultSettings.vectorDistanceMetric,
          metadataConfiguration: { nonFilterableMetadataKeys: [...passageIndex.nonFilterableMetadataKeys] },
        }),
      );
    } finally {
      s3vectors.destroy();
    }
  });

  it('seeds the key table with hashes of the configured keys only, never the keys', async () => {
    const documents = documentClient(stack.endpoints);
    try {
      const { Items = [] } = await documents.send(
        new ScanCommand({ TableName: stack.endpoints.apiKeyTableName }),
      );
      const summary = Items.map(({ keyHash, tenantId, role }) => ({ keyHash, tenantId, role })).sort((a, b) =>
        String(a.tenantId).localeCompare(String(b.tenantId)),
      );
      expect(summary).toEqual([
        { keyHash: hashApiKey(ADMIN_KEY), tenantId: 'admin', role: 'admin' },
        { keyHash: hashApiKey(ALPHA_KEY), tenantId: 'alpha', role: 'tenant' },
        { keyHash: hashApiKey(BETA_KEY), tenantId: 'beta', role: 'tenant' },
      ]);
      const stored = JSON.stringify(Items);
      for (const key of [ALPHA_KEY, BETA_KEY, ADMIN_KEY]) expect(stored).not.toContain(key);
    } finally {
      documents.destroy();
    }
  });

  it('publishes the WebSocket endpoint on the API port, its management endpoint and the connection table', async () => {
    const { port } = new URL(stack.baseUrl);
    expect(stack.endpoints.streamUrl).toBe(`ws://127.0.0.1:${port}${STREAM_PATH}`);
    expect(stack.endpoints.streamCallbackUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/local$/);
    // Clients never reach the management API: API Gateway requires IAM credentials there.
    expect(new URL(stack.endpoints.streamCallbackUrl).port).not.toBe(port);
    const dynamodb = dynamoDbClient(stack.endpoints);
    try {
      const { Table } = await dynamodb.send(
        new DescribeTableCommand({ TableName: stack.endpoints.connectionTableName }),
      );
      expect(Table?.KeySchema).toEqual([{ AttributeName: connectionTable.partitionKey, KeyType: 'HASH' }]);
      expect(
        Table?.GlobalSecondaryIndexes?.map((index) => ({
          name: index.IndexName,
          keys: index.KeySchema?.map((key) => key.AttributeName),
          projection: index.Projection?.ProjectionType,
        })),
      ).toEqual(
        connectionTable.indexes.map((index) => ({
          name: index.name,
          keys: [index.partitionKey, index.sortKey],
          projection: index.projection,
        })),
      );
    } finally {
      dynamodb.destroy();
    }
  });

  it('admits a WebSocket client to its own job only, and pushes to it through the management API until it leaves', async () => {
    const created = await apiCall(() => stack.baseUrl, ALPHA_KEY)(
      'POST',
      '/v1/jobs',
      { type: 'image.generate', input: { prompt: 'watched' } },
      `stream-${Date.now()}`,
    );
    expect(created.status).toBe(202);
    const { id } = created.body as { id: string };
    const url = (query: string) => `${stack.endpoints.streamUrl}?${query}`;
    const key = (apiKey: string) => `jobId=${id}&apiKey=${encodeURIComponent(apiKey)}`;

    // The stream function's answers to $connect, passed on as the handshake's status.
    expect(await connectStream(url(key(BETA_KEY)))).toEqual({ outcome: 'refused', status: 404 });
    expect(await connectStream(url(key('not-a-key')))).toEqual({ outcome: 'refused', status: 401 });
    expect(await connectStream(url(`apiKey=${ALPHA_KEY}`))).toEqual({ outcome: 'refused', status: 400 });

    const client = await openStream(url(key(ALPHA_KEY)));
    const documents = documentClient(stack.endpoints);
    const management = new ApiGatewayManagementApiClient({
      endpoint: stack.endpoints.streamCallbackUrl,
      region: stack.endpoints.region,
      credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
    });
    const [byJob] = connectionTable.indexes;
    const subscribers = async () =>
      (
        await documents.send(
          new QueryCommand({
            TableName: stack.endpoints.connectionTableName,
            IndexName: byJob.name,
            KeyConditionExpression: '#job = :job',
            ExpressionAttributeNames: { '#job': byJob.partitionKey },
            ExpressionAttributeValues: { ':job': id },
          }),
        )
      ).Items ?? [];
    try {
      // The subscription the stream function stored names the connection the WebSocket API made.
      const [subscription] = await subscribers();
      const connectionId = String(subscription?.connectionId);
      expect(connectionId).toMatch(/^[A-Za-z0-9+/]{15}=$/);

      const data = JSON.stringify({ type: 'hello', jobId: id });
      await management.send(
        new PostToConnectionCommand({ ConnectionId: connectionId, Data: new TextEncoder().encode(data) }),
      );
      await pollUntil(() => client.messages.some((message) => message.text === data && !message.binary), {
        description: 'the posted message on the socket',
      });

      expect(await client.close(1000)).toEqual({ code: 1000, reason: '' });
      // $disconnect forgets the subscription; the connection is gone for the management API.
      await pollUntil(async () => (await subscribers()).length === 0, {
        description: 'the subscription to be removed on $disconnect',
      });
      await expect(
        management.send(
          new PostToConnectionCommand({ ConnectionId: connectionId, Data: new TextEncoder().encode(data) }),
        ),
      ).rejects.toBeInstanceOf(GoneException);
    } finally {
      client.socket.terminate();
      documents.destroy();
      management.destroy();
    }
  });

  it('never prints an API key', () => {
    for (const key of [ALPHA_KEY, BETA_KEY, ADMIN_KEY]) expect(stack.output()).not.toContain(key);
  });
});

describe('local stack with the jobs queue unconsumed', () => {
  let stack: RunningLocalStack;
  let sqs: SQSClient;

  beforeAll(async () => {
    stack = await startLocalStack({
      env: {
        ...keyEnv,
        LONGHAUL_DISPATCH: '0',
        RECONCILE_INTERVAL_MS: '1000',
        QUEUED_GRACE_MS: '1000',
        SLOT_WAIT_MAX_SECONDS: '1',
      },
    });
    sqs = sqsClient(stack.endpoints);
  }, START_TIMEOUT_MS);

  afterAll(async () => {
    sqs?.destroy();
    await stack?.stop();
  });

  const depth = (queueUrl: string) => queueDepth(sqs, queueUrl);

  it('runs the reconciler on its interval: a queued job whose message was purged is enqueued again', async () => {
    const created = await apiCall(() => stack.baseUrl, ALPHA_KEY)(
      'POST',
      '/v1/jobs',
      { type: 'image.generate', input: { prompt: 'lost message' } },
      `purged-${Date.now()}`,
    );
    expect(created.status).toBe(202);
    const { id } = created.body as { id: string };
    expect(await depth(stack.endpoints.jobQueueUrl)).toBe(1);
    await sqs.send(new PurgeQueueCommand({ QueueUrl: stack.endpoints.jobQueueUrl }));
    expect(await depth(stack.endpoints.jobQueueUrl)).toBe(0);

    // Past the grace (1 s plus the 1 s a deferred message may wait), a pass enqueues it again.
    const message = await pollUntil(
      async () =>
        (
          await sqs.send(
            new ReceiveMessageCommand({ QueueUrl: stack.endpoints.jobQueueUrl, WaitTimeSeconds: 1 }),
          )
        ).Messages?.[0],
      { timeoutMs: 15_000, description: 'the reconciler to enqueue the job again' },
    );
    expect(JSON.parse(message.Body ?? '{}')).toMatchObject({ jobId: id });
    // The pass records the fix on the job's timeline right after enqueueing.
    await pollUntil(
      async () => {
        const events = await fetch(`${stack.baseUrl}/v1/jobs/${id}/events`, {
          headers: { [API_KEY_HEADER]: ALPHA_KEY },
        });
        const { items } = (await events.json()) as { items: { type: string }[] };
        return items.some((event) => event.type === 'reconciler.requeued');
      },
      { description: 'reconciler.requeued on the timeline' },
    );
  });

  it('moves dead letters to the jobs queue with StartMessageMoveTask', async () => {
    const { deadLetterQueueUrl, deadLetterQueueArn, jobQueueUrl, jobQueueArn } = stack.endpoints;
    const bodies = ['one', 'two', 'three'].map((name) => `dead letter ${name} ${Date.now()}`);
    for (const body of bodies) {
      await sqs.send(
        new SendMessageCommand({
          QueueUrl: deadLetterQueueUrl,
          MessageBody: body,
          MessageAttributes: { origin: { DataType: 'String', StringValue: `of ${body}` } },
        }),
      );
    }
    // What SQS refuses: a source that is no queue's dead-letter queue, and a queue that does not exist.
    await expect(
      sqs.send(new StartMessageMoveTaskCommand({ SourceArn: jobQueueArn })),
    ).rejects.toBeInstanceOf(UnsupportedOperation);
    await expect(
      sqs.send(new StartMessageMoveTaskCommand({ SourceArn: `${deadLetterQueueArn}-missing` })),
    ).rejects.toBeInstanceOf(ResourceNotFoundException);

    // Two queues (the jobs queue and the hand-off lane) share the dead-letter queue, and these
    // letters were never dead-lettered by either, so the task names where they go, as the admin redrive does.
    const { TaskHandle } = await sqs.send(
      new StartMessageMoveTaskCommand({ SourceArn: deadLetterQueueArn, DestinationArn: jobQueueArn }),
    );
    expect(TaskHandle).toEqual(expect.any(String));
    const task = await pollUntil(
      async () => {
        const { Results = [] } = await sqs.send(
          new ListMessageMoveTasksCommand({ SourceArn: deadLetterQueueArn }),
        );
        return Results[0]?.Status === 'COMPLETED' ? Results[0] : undefined;
      },
      { description: 'the move task to complete' },
    );
    expect(task).toEqual({
      Status: 'COMPLETED',
      SourceArn: deadLetterQueueArn,
      DestinationArn: jobQueueArn,
      ApproximateNumberOfMessagesMoved: 3,
      ApproximateNumberOfMessagesToMove: 3,
      StartedTimestamp: expect.any(Number),
    });
    await expect(sqs.send(new CancelMessageMoveTaskCommand({ TaskHandle }))).rejects.toBeInstanceOf(
      UnsupportedOperation,
    );
    expect(await depth(deadLetterQueueUrl)).toBe(0);

    // Back in the jobs queue (which the reconciler also feeds), bodies and attributes intact.
    const moved = new Map<string, string | undefined>();
    await pollUntil(
      async () => {
        const { Messages = [] } = await sqs.send(
          new ReceiveMessageCommand({
            QueueUrl: jobQueueUrl,
            MaxNumberOfMessages: 10,
            MessageAttributeNames: ['All'],
            WaitTimeSeconds: 1,
          }),
        );
        for (const message of Messages) {
          if (bodies.includes(message.Body ?? '')) {
            moved.set(message.Body ?? '', message.MessageAttributes?.origin?.StringValue);
          }
        }
        return moved.size === bodies.length;
      },
      { description: 'the moved messages in the jobs queue' },
    );
    expect(Object.fromEntries(moved)).toEqual(Object.fromEntries(bodies.map((body) => [body, `of ${body}`])));
  });
});

describe('local stack throttling', () => {
  let stack: RunningLocalStack;

  beforeAll(async () => {
    stack = await startLocalStack({ env: { ...keyEnv, API_RATE_LIMIT: '1', API_BURST_LIMIT: '3' } });
  }, START_TIMEOUT_MS);

  afterAll(() => stack?.stop());

  it('throttles each tenant on its own token bucket with 429 and Retry-After', async () => {
    const list = (key: string) => fetch(`${stack.baseUrl}/v1/jobs`, { headers: { [API_KEY_HEADER]: key } });
    // Seeded keys pass the real authorizer; what the api handler answers is not this test's concern.
    const statuses: number[] = [];
    let throttled: Response | undefined;
    while (!throttled && statuses.length < 10) {
      const response = await list(ALPHA_KEY);
      statuses.push(response.status);
      if (response.status === 429) throttled = response;
      else await response.arrayBuffer();
    }
    // The bucket starts full: the burst passes the gateway (whatever the handler then answers),
    // then at 1 request/s the next ones cannot all pass.
    for (const status of statuses.slice(0, 3)) expect([401, 403, 429, 502]).not.toContain(status);
    expect(throttled).toBeDefined();
    expect(throttled?.headers.get('retry-after')).toBe('1');
    await expectProblem(throttled as Response, 429, 'rate-limited');

    const other = await list(BETA_KEY);
    expect([401, 403, 429, 502]).not.toContain(other.status);
  });
});

describe('local stack lifecycle', () => {
  it(
    'stops on SIGTERM with exit code 0, and a restart on the same data directory keeps items and messages',
    async () => {
      const dataDir = temporaryDataDir();
      const first = await startLocalStack({ dataDir });
      const item = {
        pk: 'job_e2e_restart',
        sk: JOB_ITEM_SORT_KEY,
        tenantId: 'dev',
        note: 'survives a restart',
      };
      const body = JSON.stringify({ jobId: item.pk });
      const documents = documentClient(first.endpoints);
      const sqs = sqsClient(first.endpoints);
      await documents.send(new PutCommand({ TableName: first.endpoints.jobTableName, Item: item }));
      // The dead-letter queue, which nothing consumes: the dispatcher would take it from the jobs queue.
      await sqs.send(
        new SendMessageCommand({ QueueUrl: first.endpoints.deadLetterQueueUrl, MessageBody: body }),
      );
      documents.destroy();
      sqs.destroy();

      // One data directory, one stack.
      await expect(startLocalStack({ dataDir })).rejects.toThrow(/in use by another local stack/);

      const stopping = Date.now();
      await first.stop();
      expect(await first.exited).toEqual({ code: 0, signal: null });
      expect(Date.now() - stopping).toBeLessThan(5000);
      expect(existsSync(join(dataDir, 'local.json'))).toBe(false);

      const second = await startLocalStack({ dataDir });
      const documentsAgain = documentClient(second.endpoints);
      const sqsAgain = sqsClient(second.endpoints);
      try {
        const { Item } = await documentsAgain.send(
          new GetCommand({ TableName: second.endpoints.jobTableName, Key: { pk: item.pk, sk: item.sk } }),
        );
        expect(Item).toEqual(item);
        // The queue was created on the first run's port; the SDK must be sent to this run's.
        const { QueueUrl } = await sqsAgain.send(
          new GetQueueUrlCommand({ QueueName: 'longhaul-jobs-queue' }),
        );
        expect(QueueUrl).toBe(second.endpoints.jobQueueUrl);
        const message = await pollUntil(
          async () =>
            (
              await sqsAgain.send(
                new ReceiveMessageCommand({
                  QueueUrl: second.endpoints.deadLetterQueueUrl,
                  WaitTimeSeconds: 1,
                }),
              )
            ).Messages?.[0],
          { timeoutMs: 10_000, description: 'the message sent before the restart' },
        );
        expect(message.Body).toBe(body);
        await sqsAgain.send(
          new DeleteMessageCommand({
            QueueUrl: second.endpoints.deadLetterQueueUrl,
            ReceiptHandle: message.ReceiptHandle,
          }),
        );
      } finally {
        documentsAgain.destroy();
        sqsAgain.destroy();
        await second.stop();
        rmSync(dataDir, { recursive: true, force: true });
      }
      expect(await second.exited).toEqual({ code: 0, signal: null });
    },
    3 * START_TIMEOUT_MS,
  );

  it(
    'restarts after a crash (SIGKILL) on the same data directory with every acknowledged write',
    async () => {
      const dataDir = temporaryDataDir();
      const item = { pk: 'job_e2e_crash', sk: JOB_ITEM_SORT_KEY, tenantId: 'dev' };
      const passage = {
        key: 'dev/job_e2e_crash/0',
        data: { float32: Array.from({ length: defaultSettings.embeddingDimensions }, (_, i) => (i % 7) - 3) },
        metadata: { tenant: 'dev', text: 'survives a crash' },
      };
      try {
        const crashed = await startLocalStack({ dataDir });
        const documents = documentClient(crashed.endpoints);
        await documents.send(new PutCommand({ TableName: crashed.endpoints.jobTableName, Item: item }));
        documents.destroy();
        const vectors = s3VectorsClient(crashed.endpoints);
        const index = {
          vectorBucketName: crashed.endpoints.vectorBucketName,
          indexName: crashed.endpoints.vectorIndexName,
        };
        await vectors.send(new PutVectorsCommand({ ...index, vectors: [passage] }));
        vectors.destroy();
        crashed.kill();
        expect(await crashed.exited).toEqual({ code: null, signal: 'SIGKILL' });

        // The crashed stack's pid file is still there; a new stack takes it over.
        expect(existsSync(join(dataDir, 'local.pid'))).toBe(true);
        const restarted = await startLocalStack({ dataDir });
        const documentsAgain = documentClient(restarted.endpoints);
        const vectorsAgain = s3VectorsClient(restarted.endpoints);
        try {
          const { Item } = await documentsAgain.send(
            new GetCommand({
              TableName: restarted.endpoints.jobTableName,
              Key: { pk: item.pk, sk: item.sk },
            }),
          );
          expect(Item).toEqual(item);
          const { vectors } = await vectorsAgain.send(
            new GetVectorsCommand({
              vectorBucketName: restarted.endpoints.vectorBucketName,
              indexName: restarted.endpoints.vectorIndexName,
              keys: [passage.key],
              returnData: true,
              returnMetadata: true,
            }),
          );
          expect(vectors).toEqual([passage]);
        } finally {
          documentsAgain.destroy();
          vectorsAgain.destroy();
          await restarted.stop();
        }
      } finally {
        rmSync(dataDir, { recursive: true, force: true });
      }
    },
    2 * START_TIMEOUT_MS,
  );

  it(
    'refuses a bad environment with a message naming the variable, exit code 1 and no stack trace',
    async () => {
      const failure = await startLocalStack({
        env: { PORT: 'eighty', LONGHAUL_API_KEYS: 'secret-value-without-tenant', MAX_IN_FLIGHT: '0' },
      }).then(
        () => undefined,
        (error: unknown) => error as { exit?: { code: number | null }; output: string },
      );
      expect(failure?.exit?.code).toBe(1);
      expect(failure?.output).toContain('PORT="eighty"');
      expect(failure?.output).toContain('LONGHAUL_API_KEYS: entry 1 must look like key:tenant');
      expect(failure?.output).toContain('MAX_IN_FLIGHT');
      expect(failure?.output).not.toContain('secret-value-without-tenant');
      expect(failure?.output).not.toMatch(/^\s+at /m);
    },
    START_TIMEOUT_MS,
  );

  it(
    'refuses bad provider and simulator variables by name, without repeating a secret',
    async () => {
      const failure = await startLocalStack({
        env: {
          SIM_JOB_MS: 'soon',
          SIM_IDEMPOTENT: 'yes',
          PROVIDER_URL: 'ftp://provider.example',
          PROVIDER_WEBHOOK_SECRET: 'short-pw-4e1f',
          LONGHAUL_WEBHOOK_SECRET: 'tiny-pw-9c3a',
        },
      }).then(
        () => undefined,
        (error: unknown) => error as { exit?: { code: number | null }; output: string },
      );
      expect(failure?.exit?.code).toBe(1);
      expect(failure?.output).toContain('SIM_JOB_MS="soon": must be a whole number');
      expect(failure?.output).toContain('SIM_IDEMPOTENT="yes": must be 1, 0, true or false');
      expect(failure?.output).toContain(
        'PROVIDER_URL="ftp://provider.example": must be an http or https URL',
      );
      expect(failure?.output).toContain('PROVIDER_WEBHOOK_SECRET: must be at least 16 characters');
      expect(failure?.output).toContain('LONGHAUL_WEBHOOK_SECRET: must be at least 16 characters');
      // PROVIDER_IDEMPOTENT follows SIM_IDEMPOTENT; a bad SIM_IDEMPOTENT is reported once, under its own name.
      expect(failure?.output).not.toContain('PROVIDER_IDEMPOTENT');
      expect(failure?.output).not.toContain('short-pw-4e1f');
      expect(failure?.output).not.toContain('tiny-pw-9c3a');
      expect(failure?.output).not.toMatch(/^\s+at /m);
    },
    START_TIMEOUT_MS,
  );

  it(
    'names SIM_PORT, and the ways out, when the simulator cannot have its port',
    async () => {
      const taken = createServer();
      await new Promise<void>((resolveListen) => taken.listen(0, '127.0.0.1', resolveListen));
      const port = (taken.address() as { port: number }).port;
      try {
        const failure = await startLocalStack({ env: { SIM_PORT: String(port) } }).then(
          () => undefined,
          (error: unknown) => error as { exit?: { code: number | null }; output: string },
        );
        expect(failure?.exit?.code).toBe(1);
        expect(failure?.output).toContain(`SIM_PORT ${port} is already in use`);
        expect(failure?.output).toContain('PROVIDER_URL');
      } finally {
        await new Promise((resolveClose) => taken.close(resolveClose));
      }
    },
    START_TIMEOUT_MS,
  );
});

/**
 * The event source mapping alone, in this process, with a stand-in function
 * and queues of its own on a local stack's SQS emulator: the events it builds
 * and what it deletes or leaves for another delivery, which the real dispatch
 * handler cannot all provoke on demand.
 */
describe('jobs queue event source mapping', () => {
  const region = 'us-east-1';
  let stack: RunningLocalStack;
  let sqs: SQSClient;
  let queueCounter = 0;

  beforeAll(async () => {
    stack = await startLocalStack();
    sqs = sqsClient(stack.endpoints);
  }, START_TIMEOUT_MS);

  afterAll(async () => {
    sqs?.destroy();
    await stack?.stop();
  });

  /** A queue whose unacknowledged messages come back after one second. */
  async function freshQueue(): Promise<{ url: string; arn: string }> {
    const created = await sqs.send(
      new CreateQueueCommand({
        QueueName: `esm-${Date.now()}-${++queueCounter}`,
        Attributes: { VisibilityTimeout: '1' },
      }),
    );
    const url = created.QueueUrl as string;
    const { Attributes } = await sqs.send(
      new GetQueueAttributesCommand({ QueueUrl: url, AttributeNames: ['QueueArn'] }),
    );
    return { url, arn: Attributes?.QueueArn as string };
  }

  async function depth(url: string): Promise<number> {
    const { Attributes = {} } = await sqs.send(
      new GetQueueAttributesCommand({
        QueueUrl: url,
        AttributeNames: ['ApproximateNumberOfMessages', 'ApproximateNumberOfMessagesNotVisible'],
      }),
    );
    return (
      Number(Attributes.ApproximateNumberOfMessages) +
      Number(Attributes.ApproximateNumberOfMessagesNotVisible)
    );
  }

  const md5 = (text: string) => createHash('md5').update(text).digest('hex');

  it('hands the function SQS events and deletes every message but the reported failures, which come back', async () => {
    const queue = await freshQueue();
    const sent = new Map<string, string>();
    for (const body of ['first', 'fails once', 'third']) {
      const { MessageId } = await sqs.send(
        new SendMessageCommand({
          QueueUrl: queue.url,
          MessageBody: body,
          MessageAttributes: {
            kind: { DataType: 'String', StringValue: body === 'first' ? 'a' : 'b' },
            raw: { DataType: 'Binary', BinaryValue: Buffer.from([1, 2, 3]) },
          },
        }),
      );
      sent.set(MessageId as string, body);
    }
    const delivered: SQSRecord[] = [];
    const lines: string[] = [];
    const source = startSqsEventSource({
      client: sqs,
      queueUrl: queue.url,
      queueArn: queue.arn,
      region,
      batchSize: 10,
      maxConcurrency: 1,
      invoke: async (event: SQSEvent) => {
        delivered.push(...event.Records);
        return {
          batchItemFailures: event.Records.filter(
            (record) => record.body === 'fails once' && record.attributes.ApproximateReceiveCount === '1',
          ).map((record) => ({ itemIdentifier: record.messageId })),
        };
      },
      log: (line) => lines.push(line),
    });
    try {
      await pollUntil(async () => (await depth(queue.url)) === 0 && delivered.length === 4, {
        timeoutMs: 10_000,
        description: 'every message handled, the failed one twice',
      });
    } finally {
      await source.stop();
    }

    const first = delivered.find((record) => record.body === 'first') as SQSRecord;
    expect(first).toEqual({
      messageId: expect.any(String),
      receiptHandle: expect.any(String),
      body: 'first',
      attributes: expect.objectContaining({
        ApproximateReceiveCount: '1',
        SentTimestamp: expect.stringMatching(/^\d{13}$/),
        ApproximateFirstReceiveTimestamp: expect.stringMatching(/^\d{13}$/),
        SenderId: expect.any(String),
      }),
      messageAttributes: {
        kind: { stringValue: 'a', stringListValues: [], binaryListValues: [], dataType: 'String' },
        raw: { binaryValue: 'AQID', stringListValues: [], binaryListValues: [], dataType: 'Binary' },
      },
      md5OfBody: md5('first'),
      md5OfMessageAttributes: expect.stringMatching(/^[0-9a-f]{32}$/),
      eventSource: 'aws:sqs',
      eventSourceARN: queue.arn,
      awsRegion: region,
    });
    expect(sent.get(first.messageId)).toBe('first');
    const receives = (body: string) =>
      delivered
        .filter((record) => record.body === body)
        .map((record) => record.attributes.ApproximateReceiveCount);
    expect(receives('first')).toEqual(['1']);
    expect(receives('third')).toEqual(['1']);
    expect(receives('fails once')).toEqual(['1', '2']);
    expect(lines).toEqual([
      'the function reported 1 of 3 message(s) as failed; they come back after the visibility timeout',
    ]);
  });

  it('leaves the whole batch for another delivery when the function throws', async () => {
    const queue = await freshQueue();
    for (const body of ['one', 'two']) {
      await sqs.send(new SendMessageCommand({ QueueUrl: queue.url, MessageBody: body }));
    }
    const calls: string[][] = [];
    const lines: string[] = [];
    const source = startSqsEventSource({
      client: sqs,
      queueUrl: queue.url,
      queueArn: queue.arn,
      region,
      batchSize: 10,
      maxConcurrency: 1,
      invoke: async (event: SQSEvent) => {
        calls.push(
          event.Records.map((record) => `${record.body}#${record.attributes.ApproximateReceiveCount}`),
        );
        if (calls.length === 1) throw new Error('the function crashed');
        return undefined;
      },
      log: (line) => lines.push(line),
    });
    try {
      await pollUntil(async () => (await depth(queue.url)) === 0 && calls.flat().length === 4, {
        timeoutMs: 10_000,
        description: 'both messages delivered again after the failed invocation',
      });
    } finally {
      await source.stop();
    }
    expect(calls.flat().sort()).toEqual(['one#1', 'one#2', 'two#1', 'two#2']);
    expect(lines).toEqual([expect.stringContaining('the function crashed')]);
  });

  it('runs at most maxConcurrency invocations at once, one per poller', async () => {
    const queue = await freshQueue();
    for (let index = 0; index < 12; index++) {
      await sqs.send(new SendMessageCommand({ QueueUrl: queue.url, MessageBody: `job ${index}` }));
    }
    let running = 0;
    let mostAtOnce = 0;
    let handled = 0;
    const pollersBusy = new Set<number>();
    const pollersSeen = new Set<number>();
    let pollerOverlaps = 0;
    const source = startSqsEventSource({
      client: sqs,
      queueUrl: queue.url,
      queueArn: queue.arn,
      region,
      batchSize: 1,
      maxConcurrency: 2,
      invoke: async (_event, poller) => {
        // Each poller stands for one execution environment: never two invocations at once.
        if (pollersBusy.has(poller)) pollerOverlaps += 1;
        pollersBusy.add(poller);
        pollersSeen.add(poller);
        running += 1;
        mostAtOnce = Math.max(mostAtOnce, running);
        await new Promise((resolveWait) => setTimeout(resolveWait, 50));
        running -= 1;
        pollersBusy.delete(poller);
        handled += 1;
        return { batchItemFailures: [] };
      },
      log: () => undefined,
    });
    try {
      await pollUntil(() => handled === 12, {
        timeoutMs: 10_000,
        description: 'all twelve messages handled',
      });
    } finally {
      await source.stop();
    }
    expect(mostAtOnce).toBe(2);
    expect([...pollersSeen].sort()).toEqual([0, 1]);
    expect(pollerOverlaps).toBe(0);
    expect(await depth(queue.url)).toBe(0);
  });

  it('stops within about one long poll when idle', async () => {
    const queue = await freshQueue();
    const source = startSqsEventSource({
      client: sqs,
      queueUrl: queue.url,
      queueArn: queue.arn,
      region,
      batchSize: 10,
      maxConcurrency: 2,
      invoke: async () => undefined,
      log: () => undefined,
    });
    await new Promise((resolveWait) => setTimeout(resolveWait, 200));
    const stopping = Date.now();
    await source.stop();
    expect(Date.now() - stopping).toBeLessThan(2000);
  });

  it("follows Lambda's rules for partial batch responses", () => {
    const records = ['m1', 'm2'].map((messageId) => ({ messageId }) as SQSRecord);
    const all = new Set(['m1', 'm2']);
    expect(failedMessageIds(undefined, records)).toEqual(new Set());
    expect(failedMessageIds(null, records)).toEqual(new Set());
    expect(failedMessageIds({}, records)).toEqual(new Set());
    expect(failedMessageIds({ batchItemFailures: null }, records)).toEqual(new Set());
    expect(failedMessageIds({ batchItemFailures: [] }, records)).toEqual(new Set());
    expect(failedMessageIds({ batchItemFailures: [{ itemIdentifier: 'm2' }] }, records)).toEqual(
      new Set(['m2']),
    );
    expect(failedMessageIds({ batchItemFailures: [{ itemIdentifier: 'elsewhere' }] }, records)).toEqual(all);
    expect(failedMessageIds({ batchItemFailures: [{ itemIdentifier: '' }] }, records)).toEqual(all);
    expect(failedMessageIds({ batchItemFailures: [{ id: 'm1' }] }, records)).toEqual(all);
    expect(failedMessageIds({ batchItemFailures: 'm1' }, records)).toEqual(all);
    expect(failedMessageIds('ok', records)).toEqual(all);
  });
});

/**
 * The gateway alone, in this process, with stand-in handlers: what API Gateway
 * does around the functions, which the real handlers cannot all provoke.
 */
describe('gateway', () => {
  const allowAll = (
    context: Record<string, string> = { tenantId: 'alpha', role: 'tenant' },
  ): APIGatewayAuthorizerResult => ({
    principalId: context.tenantId ?? 'someone',
    policyDocument: {
      Version: '2012-10-17',
      Statement: [{ Action: 'execute-api:Invoke', Effect: 'Allow', Resource: 'arn:aws:execute-api:*' }],
    },
    context,
  });
  let authorizerEvents: APIGatewayRequestAuthorizerEvent[];
  let apiEvents: APIGatewayProxyEvent[];
  let authorize: AuthorizerHandler;
  let api: ApiHandler;
  let gateway: Gateway;
  const lines: string[] = [];

  beforeAll(async () => {
    gateway = await startGateway({
      host: '127.0.0.1',
      port: 0,
      routes,
      settings: { authorizerCacheSeconds: 300 },
      throttles: {
        stage: { rateLimit: 100, burstLimit: 100 },
        usagePlan: { rateLimit: 100, burstLimit: 100 },
      },
      handlers: {
        authorizer: (event, context) => {
          authorizerEvents.push(event);
          return authorize(event, context);
        },
        api: (event, context) => {
          apiEvents.push(event);
          return api(event, context);
        },
      },
      log: (line) => lines.push(line),
    });
  });

  afterAll(() => gateway?.close());

  beforeEach(() => {
    authorizerEvents = [];
    apiEvents = [];
    authorize = async () => allowAll();
    api = async () => ({ statusCode: 200, body: '{}' });
  });

  const call = (path: string, init: RequestInit & { key?: string } = {}) =>
    fetch(`${gateway.url}${path}`, {
      ...init,
      headers: {
        ...(init.key ? { [API_KEY_HEADER]: init.key } : {}),
        ...(init.headers as Record<string, string>),
      },
    });

  it('hands the authorizer a REQUEST event and the api function a REST proxy event', async () => {
    api = async (_event, context) => ({
      statusCode: 201,
      headers: { 'x-one': 'a', 'X-Many': 'ignored' },
      multiValueHeaders: { 'x-many': ['b', 'c'] },
      body: JSON.stringify({ remaining: context.getRemainingTimeInMillis() > 0, fn: context.functionName }),
    });
    const response = await call('/v1/jobs/job%20one/cancel?x=1&x=2&y=3', {
      method: 'POST',
      key: 'event-key',
      headers: { 'content-type': 'application/json', 'X-Custom': 'first' },
      body: '{"a":1}',
    });
    expect(response.status).toBe(201);
    expect(response.headers.get('x-one')).toBe('a');
    expect(response.headers.get('x-many')).toBe('b, c');
    expect(await response.json()).toEqual({ remaining: true, fn: 'longhaul-api' });

    expect(authorizerEvents).toHaveLength(1);
    expect(authorizerEvents[0]).toMatchObject({
      type: 'REQUEST',
      methodArn: 'arn:aws:execute-api:us-east-1:000000000000:local/local/POST/v1/jobs/job%20one/cancel',
      resource: '/v1/jobs/{id}/cancel',
      path: '/v1/jobs/job%20one/cancel',
      httpMethod: 'POST',
      headers: { [API_KEY_HEADER]: 'event-key', 'X-Custom': 'first' },
      queryStringParameters: { x: '2', y: '3' },
      multiValueQueryStringParameters: { x: ['1', '2'], y: ['3'] },
      pathParameters: { id: 'job one' },
      stageVariables: null,
      requestContext: { stage: 'local', resourcePath: '/v1/jobs/{id}/cancel', httpMethod: 'POST' },
    });
    expect(apiEvents).toHaveLength(1);
    const [event] = apiEvents;
    expect(event).toMatchObject({
      resource: '/v1/jobs/{id}/cancel',
      path: '/v1/jobs/job%20one/cancel',
      httpMethod: 'POST',
      pathParameters: { id: 'job one' },
      queryStringParameters: { x: '2', y: '3' },
      multiValueQueryStringParameters: { x: ['1', '2'], y: ['3'] },
      stageVariables: null,
      body: '{"a":1}',
      isBase64Encoded: false,
      requestContext: {
        accountId: '000000000000',
        stage: 'local',
        path: '/v1/jobs/job%20one/cancel',
        authorizer: { principalId: 'alpha', tenantId: 'alpha', role: 'tenant' },
        identity: { sourceIp: '127.0.0.1' },
      },
    });
    expect(event?.multiValueHeaders['X-Custom']).toEqual(['first']);
    expect(event?.requestContext.requestId).toBe(response.headers.get('x-amzn-requestid'));
  });

  it('passes multipart bodies base64-encoded, and no body as null', async () => {
    const form = new FormData();
    form.set('type', 'image.generate');
    await call('/v1/jobs', { method: 'POST', key: 'binary-key', body: form });
    await call('/v1/jobs', { key: 'binary-key' });
    const [multipart, empty] = apiEvents;
    expect(multipart?.isBase64Encoded).toBe(true);
    expect(Buffer.from(multipart?.body ?? '', 'base64').toString('utf8')).toContain('image.generate');
    expect(empty).toMatchObject({ body: null, isBase64Encoded: false, queryStringParameters: null });
  });

  it('caches the decision per key, and applies a cached policy to each route', async () => {
    authorize = async (event) => ({
      ...allowAll(),
      policyDocument: {
        Version: '2012-10-17',
        Statement: [{ Action: 'execute-api:Invoke', Effect: 'Allow', Resource: event.methodArn }],
      },
    });
    expect((await call('/v1/jobs', { key: 'narrow-key' })).status).toBe(200);
    expect((await call('/v1/jobs', { key: 'narrow-key' })).status).toBe(200);
    await expectProblem(await call('/v1/jobs/abc', { key: 'narrow-key' }), 403, 'forbidden');
    expect(authorizerEvents).toHaveLength(1);
  });

  it('maps Unauthorized to 401, Deny to 403, other authorizer failures to 500 and never calls the api', async () => {
    authorize = async () => {
      throw new Error('Unauthorized');
    };
    await expectProblem(await call('/v1/jobs', { key: 'k-401' }), 401, 'unauthorized');
    authorize = async () => ({
      ...allowAll(),
      policyDocument: {
        Version: '2012-10-17',
        Statement: [{ Action: 'execute-api:Invoke', Effect: 'Deny', Resource: '*' }],
      },
    });
    await expectProblem(await call('/v1/jobs', { key: 'k-403' }), 403, 'forbidden');
    authorize = async () => {
      throw new Error('table not found');
    };
    expect(await expectProblem(await call('/v1/jobs', { key: 'k-5xx' }), 500, 'internal-error')).toEqual(
      gatewayProblems.AUTHORIZER_FAILURE,
    );
    expect(apiEvents).toHaveLength(0);
  });

  it('answers 502 when the api function throws or returns a malformed result', async () => {
    api = async () => {
      throw new Error('boom');
    };
    await expectProblem(await call('/healthz'), 502, 'internal-error');
    api = async () => ({ statusCode: 'ok' }) as never;
    await expectProblem(await call('/healthz'), 502, 'internal-error');
    expect(lines.some((line) => line.includes('Error: boom'))).toBe(true);
  });
});

/**
 * The WebSocket API alone, in this process, with a stand-in stream function:
 * the events API Gateway hands it, the handshake statuses and the management
 * API, including what the real function cannot provoke (a failure, binary
 * messages, a client's close code).
 */
describe('WebSocket API', () => {
  let server: Server;
  let api: WebSocketApi;
  let management: ApiGatewayManagementApiClient;
  let events: WebSocketEvent[];
  let answer: StreamHandler;
  const lines: string[] = [];
  const QUERY = '?jobId=job_x&apiKey=ws-secret-key-71c2';

  beforeAll(async () => {
    server = createHttpServer((_request, response) => response.writeHead(404).end());
    await new Promise<void>((resolveListen) => server.listen(0, '127.0.0.1', resolveListen));
    const { port } = server.address() as AddressInfo;
    api = await startWebSocketApi({
      server,
      gatewayUrl: `http://127.0.0.1:${port}`,
      path: STREAM_PATH,
      host: '127.0.0.1',
      handler: (event, context) => {
        events.push(event);
        return answer(event, context);
      },
      log: (line) => lines.push(line),
    });
    management = new ApiGatewayManagementApiClient({
      endpoint: api.callbackUrl,
      region: 'us-east-1',
      credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
    });
  });

  afterAll(async () => {
    management?.destroy();
    await api?.close();
    await new Promise((resolveClose) => server?.close(resolveClose));
  });

  beforeEach(() => {
    events = [];
    answer = async () => ({ statusCode: 200, body: '' });
  });

  const routeEvents = (routeKey: string) =>
    events.filter((event) => event.requestContext.routeKey === routeKey);

  it('hands $connect the handshake, and answers the handshake with its status', async () => {
    answer = async () => ({ statusCode: 401, body: 'unknown API key' });
    expect(await connectStream(`${api.url}${QUERY}`)).toEqual({ outcome: 'refused', status: 401 });
    answer = async () => {
      throw new Error('the function failed');
    };
    expect(await connectStream(`${api.url}${QUERY}`)).toEqual({ outcome: 'refused', status: 500 });
    expect(lines.some((line) => line.includes('Error: the function failed'))).toBe(true);
    answer = async () => ({ statusCode: 200, body: '' });
    const client = await openStream(`${api.url}${QUERY}`);
    await client.close();

    const connects = routeEvents('$connect');
    expect(connects).toHaveLength(3);
    const [event] = connects.slice(-1);
    expect(event).toEqual({
      headers: expect.objectContaining({
        'Sec-WebSocket-Version': '13',
        'Sec-WebSocket-Key': expect.any(String),
        'X-Forwarded-For': '127.0.0.1',
      }),
      multiValueHeaders: expect.objectContaining({ 'Sec-WebSocket-Version': ['13'] }),
      queryStringParameters: { jobId: 'job_x', apiKey: 'ws-secret-key-71c2' },
      multiValueQueryStringParameters: { jobId: ['job_x'], apiKey: ['ws-secret-key-71c2'] },
      requestContext: {
        routeKey: '$connect',
        eventType: 'CONNECT',
        extendedRequestId: expect.any(String),
        requestTime: expect.stringMatching(/^\d{2}\/[A-Z][a-z]{2}\/\d{4}:\d{2}:\d{2}:\d{2} \+0000$/),
        messageDirection: 'IN',
        stage: 'local',
        connectedAt: expect.any(Number),
        requestTimeEpoch: expect.any(Number),
        identity: { sourceIp: '127.0.0.1' },
        requestId: expect.stringMatching(/^[A-Za-z0-9+/]{15}=$/),
        domainName: new URL(api.url).host,
        connectionId: expect.stringMatching(/^[A-Za-z0-9+/]{15}=$/),
        apiId: 'local',
      },
      isBase64Encoded: false,
    });
    // Each handshake is a connection of its own.
    expect(new Set(connects.map((connect) => connect.requestContext.connectionId)).size).toBe(3);
  });

  it('refuses other paths without calling the function', async () => {
    const { port } = new URL(api.url);
    expect(await connectStream(`ws://127.0.0.1:${port}/v1/other${QUERY}`)).toEqual({
      outcome: 'refused',
      status: 404,
    });
    expect(events).toHaveLength(0);
  });

  it('hands client messages to $default and the close to $disconnect', async () => {
    const client = await openStream(`${api.url}${QUERY}`);
    const [connect] = routeEvents('$connect');
    const connectionId = connect?.requestContext.connectionId;
    client.socket.send('{"action":"ping"}');
    client.socket.send(Buffer.from([1, 2, 3]));
    await pollUntil(() => routeEvents('$default').length === 2, { description: 'two $default events' });
    expect(await client.close(4000, 'done watching')).toEqual({ code: 4000, reason: 'done watching' });
    await pollUntil(() => routeEvents('$disconnect').length === 1, { description: 'the $disconnect event' });

    const [text, binary] = routeEvents('$default');
    expect(text).toEqual({
      requestContext: expect.objectContaining({
        routeKey: '$default',
        eventType: 'MESSAGE',
        messageId: expect.stringMatching(/^[A-Za-z0-9+/]{15}=$/),
        connectionId,
        connectedAt: connect?.requestContext.connectedAt,
      }),
      body: '{"action":"ping"}',
      isBase64Encoded: false,
    });
    expect(binary).toMatchObject({ body: 'AQID', isBase64Encoded: true });
    expect(routeEvents('$disconnect')[0]).toMatchObject({
      requestContext: {
        routeKey: '$disconnect',
        eventType: 'DISCONNECT',
        connectionId,
        disconnectStatusCode: 4000,
        disconnectReason: 'done watching',
      },
      isBase64Encoded: false,
    });
  });

  it('posts to, describes and deletes connections through the SDK, and answers Gone once one is closed', async () => {
    const client = await openStream(`${api.url}${QUERY}`);
    const connectionId = routeEvents('$connect')[0]?.requestContext.connectionId as string;
    const data = '{"type":"progress","progress":42}';
    expect(
      (await management.send(new PostToConnectionCommand({ ConnectionId: connectionId, Data: data })))
        .$metadata.httpStatusCode,
    ).toBe(200);
    await pollUntil(() => client.messages.length === 1, { description: 'the posted message' });
    expect(client.messages).toEqual([{ text: data, binary: false }]);

    const described = await management.send(new GetConnectionCommand({ ConnectionId: connectionId }));
    expect(described.ConnectedAt).toBeInstanceOf(Date);
    expect(described.Identity).toEqual({ SourceIp: '127.0.0.1' });
    expect(described.LastActiveAt?.getTime()).toBeGreaterThanOrEqual(described.ConnectedAt?.getTime() ?? 0);

    await expect(
      management.send(
        new PostToConnectionCommand({ ConnectionId: connectionId, Data: Buffer.alloc(128 * 1024 + 1, 0x61) }),
      ),
    ).rejects.toBeInstanceOf(PayloadTooLargeException);
    // API Gateway's management API requires SigV4; an unsigned request is forbidden.
    const unsigned = await fetch(`${api.callbackUrl}/@connections/${encodeURIComponent(connectionId)}`, {
      method: 'POST',
      body: 'x',
    });
    expect(unsigned.status).toBe(403);
    expect(unsigned.headers.get('x-amzn-errortype')).toBe('ForbiddenException');

    await management.send(new DeleteConnectionCommand({ ConnectionId: connectionId }));
    expect((await client.closed).code).toBe(1000);
    await pollUntil(() => routeEvents('$disconnect').length === 1, { description: 'the $disconnect event' });
    for (const command of [
      new PostToConnectionCommand({ ConnectionId: connectionId, Data: data }),
      new GetConnectionCommand({ ConnectionId: connectionId }),
      new PostToConnectionCommand({ ConnectionId: 'AAAAAAAAAAAAAAA=', Data: data }),
    ]) {
      await expect(management.send(command as PostToConnectionCommand)).rejects.toBeInstanceOf(GoneException);
    }
    expect(client.messages).toHaveLength(1);
  });

  it('never logs the query string, which carries the API key', () => {
    expect(lines.length).toBeGreaterThan(0);
    expect(lines.join('\n')).not.toContain('ws-secret-key-71c2');
  });

  it('closes open connections when it stops, and each one reaches $disconnect', async () => {
    const otherServer = createHttpServer();
    await new Promise<void>((resolveListen) => otherServer.listen(0, '127.0.0.1', resolveListen));
    const { port } = otherServer.address() as AddressInfo;
    const disconnects: WebSocketEvent[] = [];
    const other = await startWebSocketApi({
      server: otherServer,
      gatewayUrl: `http://127.0.0.1:${port}`,
      path: STREAM_PATH,
      host: '127.0.0.1',
      handler: async (event) => {
        if (event.requestContext.routeKey === '$disconnect') disconnects.push(event);
        return { statusCode: 200, body: '' };
      },
      log: () => undefined,
    });
    const clients = await Promise.all([
      openStream(`${other.url}${QUERY}`),
      openStream(`${other.url}${QUERY}`),
    ]);
    await other.close();
    await new Promise((resolveClose) => otherServer.close(resolveClose));
    expect(await Promise.all(clients.map((client) => client.closed))).toEqual([
      { code: 1001, reason: 'Going away' },
      { code: 1001, reason: 'Going away' },
    ]);
    expect(disconnects.map((event) => event.requestContext.disconnectStatusCode)).toEqual([1001, 1001]);
  });
});

describe('WebSocket API with a slow $connect (LONGHAUL_FAULT_WS_CONNECT_MS)', () => {
  it('answers PostToConnection with Gone until $connect has returned, then delivers', async () => {
    const server = createHttpServer((_request, response) => response.writeHead(404).end());
    await new Promise<void>((resolveListen) => server.listen(0, '127.0.0.1', resolveListen));
    const { port } = server.address() as AddressInfo;
    const answered: string[] = [];
    const api = await startWebSocketApi({
      server,
      gatewayUrl: `http://127.0.0.1:${port}`,
      path: STREAM_PATH,
      host: '127.0.0.1',
      connectLatencyMs: 2_000,
      handler: async (event) => {
        if (event.requestContext.routeKey === '$connect') answered.push(event.requestContext.connectionId);
        return { statusCode: 200, body: '' };
      },
      log: () => undefined,
    });
    const management = new ApiGatewayManagementApiClient({
      endpoint: api.callbackUrl,
      region: 'us-east-1',
      credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
    });
    try {
      const opening = openStream(`${api.url}?jobId=job_x&apiKey=ws-slow-key-5b1e`);
      await pollUntil(() => answered.length === 1, { description: 'the function to answer $connect' });
      const ConnectionId = answered[0] as string;
      await expect(
        management.send(new PostToConnectionCommand({ ConnectionId, Data: 'early' })),
      ).rejects.toBeInstanceOf(GoneException);

      const client = await opening;
      const posted = await management.send(new PostToConnectionCommand({ ConnectionId, Data: 'late' }));
      expect(posted.$metadata.httpStatusCode).toBe(200);
      await pollUntil(() => client.messages.length === 1, { description: 'the posted message' });
      expect(client.messages).toEqual([{ text: 'late', binary: false }]);
      await client.close();
    } finally {
      management.destroy();
      await api.close();
      await new Promise((resolveClose) => server.close(resolveClose));
    }
  });
});

describe('reconciler schedule', () => {
  const sleep = (ms: number) => new Promise((resolveWait) => setTimeout(resolveWait, ms));

  it('runs a pass at once and then on its interval, skips ticks while a pass runs, and stops before the next', async () => {
    let passes = 0;
    let running = 0;
    let mostAtOnce = 0;
    const lines: string[] = [];
    const schedule = startReconcilerSchedule({
      intervalMs: 50,
      runPass: async () => {
        passes += 1;
        running += 1;
        mostAtOnce = Math.max(mostAtOnce, running);
        await sleep(120);
        running -= 1;
      },
      log: (line) => lines.push(line),
    });
    expect(passes).toBe(1);
    await sleep(700);
    await schedule.stop();
    // The stop waited for the pass in progress, and no pass starts after it.
    expect(running).toBe(0);
    const afterStop = passes;
    await sleep(200);
    expect(passes).toBe(afterStop);
    expect(passes).toBeGreaterThanOrEqual(3);
    expect(mostAtOnce).toBe(1);
    expect(lines).toContain('reconciler: skipped a tick, the previous pass is still running');
  });

  it('logs a failed pass and keeps to its schedule', async () => {
    let passes = 0;
    const lines: string[] = [];
    const schedule = startReconcilerSchedule({
      intervalMs: 30,
      runPass: async () => {
        passes += 1;
        if (passes === 1) throw new Error('table unavailable');
      },
      log: (line) => lines.push(line),
    });
    try {
      await pollUntil(() => passes >= 3, { timeoutMs: 2000, description: 'passes after the failed one' });
    } finally {
      await schedule.stop();
    }
    expect(lines.filter((line) => line.includes('the pass failed'))).toEqual([
      expect.stringContaining('Error: table unavailable'),
    ]);
  });
});
