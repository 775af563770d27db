import { createHmac } from 'node:crypto';
import { ApiGatewayManagementApiClient } from '@aws-sdk/client-apigatewaymanagementapi';
import { GetSecretValueCommand, SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import { DynamoDBDocumentClient, GetCommand, QueryCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import type { APIGatewayProxyEventV2, Context } from 'aws-lambda';
import { mockClient } from 'aws-sdk-client-mock';
import { PROVIDERS } from '../../config/providers';
import { toItem } from '../../lambdas/adapters/dynamodb-job-store';
import { newJob, submissionTagOf } from '../../lambdas/domain/job';
import { signPayload } from '../../lambdas/shared/signature';

/**
 * The provider events function behind its URL: events in payload format 2.0,
 * each provider's webhooks told apart by their path, answered as the REST
 * API's routes answer them.
 */

const WEBHOOK_SECRET = 'provider-webhook-secret-of-16+';
Object.assign(process.env, {
  JOB_TABLE_NAME: 'jobs',
  CONNECTION_TABLE_NAME: 'connections',
  STREAM_CALLBACK_URL: 'https://ws.example/live',
  OUTPUT_BUCKET_NAME: 'outputs',
  PROVIDER_SECRET_ARN_LONGHAUL_HTTP: 'arn:aws:secretsmanager:us-east-1:000000000000:secret:generic',
  PROVIDER_SECRET_ARN_REPLICATE: 'arn:aws:secretsmanager:us-east-1:000000000000:secret:replicate',
  PROVIDER_SECRET_ARN_DEEPGRAM: 'arn:aws:secretsmanager:us-east-1:000000000000:secret:deepgram',
  AWS_REGION: 'us-east-1',
  POWERTOOLS_LOG_LEVEL: 'SILENT',
  POWERTOOLS_TRACE_ENABLED: 'false',
  POWERTOOLS_METRICS_DISABLED: 'true',
});

const ddb = mockClient(DynamoDBDocumentClient);
const secrets = mockClient(SecretsManagerClient);
mockClient(ApiGatewayManagementApiClient);

const { handler } =
  require('../../lambdas/provider-events/handler') as typeof import('../../lambdas/provider-events/handler');

const context = { functionName: 'longhaul-provider-events', awsRequestId: 'aws-req-1' } as Context;
const created = new Date('2026-05-01T10:00:00.000Z');
/** A running job at the provider, and the query of its webhook URL (one per test: the function remembers jobs). */
function runningJob(letter: string) {
  const job = {
    ...newJob(
      {
        id: `job_${letter.repeat(26)}`,
        tenantId: 'acme',
        type: 'image.generate',
        input: {},
        idempotencyKey: letter,
        fingerprint: 'f',
      },
      created,
    ),
    status: 'running' as const,
    providerJobId: 'gen_1',
  };
  return { job, query: `jobId=${job.id}&submission=${submissionTagOf(job)}` };
}

/** A request as Lambda hands a function URL's to the function (payload format 2.0). */
function urlEvent(request: {
  method?: string;
  path: string;
  rawQueryString?: string;
  headers?: Record<string, string>;
  body?: string;
  isBase64Encoded?: boolean;
}): APIGatewayProxyEventV2 {
  const method = request.method ?? 'POST';
  return {
    version: '2.0',
    routeKey: '$default',
    rawPath: request.path,
    rawQueryString: request.rawQueryString ?? '',
    headers: { host: 'abc.lambda-url.us-east-1.on.aws', ...request.headers },
    requestContext: {
      accountId: 'anonymous',
      apiId: 'abc',
      domainName: 'abc.lambda-url.us-east-1.on.aws',
      domainPrefix: 'abc',
      http: { method, path: request.path, protocol: 'HTTP/1.1', sourceIp: '198.51.100.7', userAgent: 'test' },
      requestId: 'url-req-1',
      routeKey: '$default',
      stage: '$default',
      time: '01/May/2026:10:00:00 +0000',
      timeEpoch: created.getTime(),
    },
    isBase64Encoded: request.isBase64Encoded ?? false,
    ...(request.body === undefined ? {} : { body: request.body }),
  };
}

const signedTick = (progress: number) => {
  const body = JSON.stringify({ type: 'progress', id: 'gen_1', progress, at: new Date().toISOString() });
  return {
    body,
    headers: {
      'content-type': 'application/json',
      'provider-signature': signPayload(WEBHOOK_SECRET, body, Math.floor(Date.now() / 1000)),
    },
  };
};

beforeEach(() => {
  ddb.reset();
  secrets.reset();
  secrets.on(GetSecretValueCommand).resolves({
    SecretString: JSON.stringify({ apiKey: 'provider-api-key', webhookSecret: WEBHOOK_SECRET }),
  });
  ddb.on(QueryCommand).resolves({ Items: [] });
});

describe('provider events function', () => {
  it("applies a generic provider's signed tick posted to its route's path", async () => {
    const { job, query } = runningJob('b');
    ddb.on(UpdateCommand).resolves({ Attributes: toItem({ ...job, progress: 30 }, 30) });

    const answer = await handler(
      urlEvent({ path: PROVIDERS['longhaul-http'].webhookPath, rawQueryString: query, ...signedTick(30) }),
      context,
    );

    expect(answer).toEqual({ statusCode: 204, headers: { 'cache-control': 'no-store' }, body: '' });
    expect(ddb.commandCalls(UpdateCommand).map((call) => call.args[0].input.Key)).toEqual([
      { pk: job.id, sk: 'JOB' },
    ]);
    expect(ddb.commandCalls(GetCommand)).toHaveLength(0);
  });

  it('decodes a body the URL passed base64-encoded before checking its signature', async () => {
    const { job } = runningJob('c');
    ddb.on(UpdateCommand).resolves({ Attributes: toItem({ ...job, progress: 31 }, 30) });
    const { body, headers } = signedTick(31);

    const answer = await handler(
      urlEvent({
        path: PROVIDERS['longhaul-http'].webhookPath,
        rawQueryString: `jobId=${job.id}&submission=${submissionTagOf({ createdAt: job.createdAt, resubmissions: 7 })}&submission=${submissionTagOf(job)}`,
        headers: { ...headers, 'content-type': 'application/octet-stream' },
        body: Buffer.from(body).toString('base64'),
        isBase64Encoded: true,
      }),
      context,
    );

    expect(answer.statusCode).toBe(204);
    // The query's last value of a name counts, as in the REST API's queryStringParameters.
    expect(ddb.commandCalls(UpdateCommand)[0]?.args[0].input.ExpressionAttributeValues).toMatchObject({
      ':progress': 31,
      ':submission': 0,
    });
  });

  it("checks each provider's own signature, by the path it posted to", async () => {
    const { query } = runningJob('d');
    ddb.on(GetCommand).resolves({});
    const body = JSON.stringify({ err_code: 'INTERNAL_SERVER_ERROR', err_msg: 'gone', request_id: 'r1' });
    const sig = createHmac('sha256', WEBHOOK_SECRET).update(query).digest('hex');
    const deepgram = urlEvent({
      path: PROVIDERS.deepgram.webhookPath,
      rawQueryString: `${query}&sig=${sig}`,
      headers: { 'content-type': 'application/json' },
      body,
    });

    expect((await handler(deepgram, context)).statusCode).toBe(204);
    // The same callback at the generic provider's path carries no Provider-Signature.
    const elsewhere = await handler(
      { ...deepgram, rawPath: PROVIDERS['longhaul-http'].webhookPath },
      context,
    );
    expect(elsewhere.statusCode).toBe(401);
    expect(JSON.parse(elsewhere.body)).toMatchObject({
      code: 'unauthorized',
      instance: 'urn:longhaul:request:url-req-1',
    });
  });

  it.each([
    ['a path no provider posts to', 'POST', '/v1/jobs'],
    ['a GET of a webhook path', 'GET', PROVIDERS.replicate.webhookPath],
  ])('answers %s with a 404 problem and reads nothing', async (_, method, path) => {
    const answer = await handler(urlEvent({ method, path, ...signedTick(5) }), context);

    expect(answer.statusCode).toBe(404);
    expect(answer.headers).toMatchObject({ 'content-type': 'application/problem+json' });
    expect(JSON.parse(answer.body)).toEqual({
      type: 'urn:longhaul:problem:not-found',
      title: 'Not Found',
      status: 404,
      detail: `No provider posts its events to ${method} ${path}.`,
      code: 'not-found',
      instance: 'urn:longhaul:request:url-req-1',
    });
    expect(secrets.calls()).toHaveLength(0);
    expect(ddb.calls()).toHaveLength(0);
  });
});
