import { SendMessageCommand, SQSClient } from '@aws-sdk/client-sqs';
import { DynamoDBDocumentClient, PutCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import type { APIGatewayProxyEvent, Context } from 'aws-lambda';
import { mockClient } from 'aws-sdk-client-mock';
import { metricCatalog } from '../../config/metrics';

/**
 * What operators get from the handlers: EMF metrics CloudWatch can read back
 * with the catalog's names, units and dimensions, and JSON log lines that
 * carry the job id and never a secret.
 */

const out: string[] = [];
const write = jest.spyOn(process.stdout, 'write').mockImplementation((chunk: string | Uint8Array) => {
  out.push(String(chunk));
  return true;
});
Object.assign(process.env, {
  POWERTOOLS_SERVICE_NAME: 'api',
  POWERTOOLS_LOG_LEVEL: 'INFO',
  POWERTOOLS_DEV: 'false',
  AWS_REGION: 'us-east-1',
  JOB_TABLE_NAME: 'jobs',
  JOB_QUEUE_URL: 'https://sqs.us-east-1.amazonaws.com/000000000000/jobs',
  INPUT_BUCKET_NAME: 'inputs',
});

const ddb = mockClient(DynamoDBDocumentClient);
const sqs = mockClient(SQSClient);
const { emit, metrics } =
  require('../../lambdas/shared/observability') as typeof import('../../lambdas/shared/observability');
const { handler } = require('../../lambdas/api/handler') as typeof import('../../lambdas/api/handler');

afterAll(() => write.mockRestore());
beforeEach(() => {
  out.length = 0;
  ddb.reset();
  sqs.reset();
});

/** Every JSON document written to stdout. */
const documents = () =>
  out
    .join('')
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => JSON.parse(line) as Record<string, any>);

describe('metrics', () => {
  it('come out as EMF with the catalog names, units and dimensions', () => {
    emit('JobsSubmitted', 1, { jobType: 'image.generate' });
    emit('QueueWait', 1234, { jobType: 'audio.transcribe' });
    emit('SlotWaits', 1);
    metrics.publishStoredMetrics();

    const blobs = documents().filter((doc) => doc._aws?.CloudWatchMetrics);
    const found = blobs.flatMap((doc) =>
      doc._aws.CloudWatchMetrics.flatMap((directive: any) =>
        directive.Metrics.map((metric: { Name: string; Unit: string }) => ({
          name: metric.Name,
          unit: metric.Unit,
          namespace: directive.Namespace,
          dimensions: [...directive.Dimensions[0]].sort(),
          value: doc[metric.Name],
        })),
      ),
    );
    expect(found).toEqual(
      expect.arrayContaining([
        {
          name: 'JobsSubmitted',
          unit: 'Count',
          namespace: 'Longhaul',
          dimensions: ['jobType', 'service'],
          value: 1,
        },
        {
          name: 'QueueWait',
          unit: 'Milliseconds',
          namespace: 'Longhaul',
          dimensions: ['jobType', 'service'],
          value: 1234,
        },
        { name: 'SlotWaits', unit: 'Count', namespace: 'Longhaul', dimensions: ['service'], value: 1 },
      ]),
    );
    for (const metric of found) {
      const spec = metricCatalog[metric.name as keyof typeof metricCatalog];
      expect(metric.dimensions).toEqual([...spec.dimensions, 'service'].sort());
    }
  });

  it('roll a metric up per service too where the catalog says so, for an alarm over every job type', () => {
    out.length = 0;
    emit('JobsNeedingReview', 1, { jobType: 'audio.publish.embedding' });
    metrics.publishStoredMetrics();
    const review = documents()
      .filter((doc) => doc._aws?.CloudWatchMetrics?.[0]?.Metrics?.[0]?.Name === 'JobsNeedingReview')
      .map((doc) => ({
        dimensions: [...doc._aws.CloudWatchMetrics[0].Dimensions[0]].sort(),
        value: doc.JobsNeedingReview,
      }));
    expect(review).toEqual([
      { dimensions: ['jobType', 'service'], value: 1 },
      { dimensions: ['service'], value: 1 },
    ]);
  });
});

describe('logs', () => {
  it('carry the job id and tenant on a job path, and never the API key or the prompt', async () => {
    ddb.on(PutCommand).resolves({});
    ddb.on(UpdateCommand).resolves({});
    sqs.on(SendMessageCommand).resolves({ MessageId: 'm1' });
    const event = {
      httpMethod: 'POST',
      resource: '/v1/jobs',
      path: '/v1/jobs',
      headers: {
        'X-API-Key': 'super-secret-tenant-key-123',
        'Idempotency-Key': 'k-1',
        'Content-Type': 'application/json',
      },
      body: JSON.stringify({ type: 'image.generate', input: { prompt: 'a very private prompt' } }),
      isBase64Encoded: false,
      queryStringParameters: null,
      pathParameters: null,
      requestContext: {
        requestId: 'req-1',
        path: '/prod/v1/jobs',
        authorizer: { tenantId: 'acme', role: 'tenant', principalId: 'acme' },
      },
    } as unknown as APIGatewayProxyEvent;

    const result = await handler(event, { awsRequestId: 'aws-req-1', functionName: 'api' } as Context);

    expect(result.statusCode).toBe(202);
    const jobId = JSON.parse(result.body).id;
    const lines = documents().filter((doc) => doc.level);
    expect(lines.length).toBeGreaterThan(0);
    const accepted = lines.find((line) => line.message === 'job accepted');
    expect(accepted).toMatchObject({
      jobId,
      tenantId: 'acme',
      service: 'api',
      function_request_id: 'aws-req-1',
    });
    const everything = out.join('');
    expect(everything).not.toContain('super-secret-tenant-key-123');
    expect(everything).not.toContain('a very private prompt');
  });
});
