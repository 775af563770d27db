import type { APIGatewayProxyEvent, Context } from 'aws-lambda';

/**
 * GET /openapi.json answers the OpenAPI document, which the api function
 * builds on the first request for it instead of at every cold start.
 */

process.env.POWERTOOLS_LOG_LEVEL = 'SILENT';

let mockDocumentLoads = 0;
jest.mock('../../lambdas/api/openapi', () => {
  mockDocumentLoads++;
  return jest.requireActual('../../lambdas/api/openapi');
});

const { handler } = require('../../lambdas/api/handler') as typeof import('../../lambdas/api/handler');

const request = {
  httpMethod: 'GET',
  resource: '/openapi.json',
  path: '/openapi.json',
  headers: {},
  queryStringParameters: null,
  pathParameters: null,
  body: null,
  isBase64Encoded: false,
  requestContext: { requestId: 'req-1' },
} as unknown as APIGatewayProxyEvent;
const context = { functionName: 'api', awsRequestId: 'aws-req-1' } as Context;

it('builds the document on the first request for it, not when the function loads, and only once', async () => {
  expect(mockDocumentLoads).toBe(0);

  const first = await handler(request, context);
  const second = await handler(request, context);

  expect(first.statusCode).toBe(200);
  expect(first.headers).toMatchObject({ 'cache-control': 'public, max-age=300' });
  const { openApiDocument } =
    jest.requireActual<typeof import('../../lambdas/api/openapi')>('../../lambdas/api/openapi');
  expect(JSON.parse(first.body)).toEqual(JSON.parse(JSON.stringify(openApiDocument)));
  expect(second.body).toBe(first.body);
  expect(mockDocumentLoads).toBe(1);
});
