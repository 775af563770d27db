import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { APIGatewayProxyEventV2 } from 'aws-lambda';
import { type FunctionUrlEndpoint, functionUrlEndpoint, functionUrlOf } from '../../local/function-urls';
import type { LocalFunction } from '../../local/lambda';
import { SYNC_REQUEST_PAYLOAD_BYTES } from '../../local/lambda-service';
import type { FunctionUrlFacts } from '../../local/template';
import { usage } from '../../local/usage';

/**
 * The local function URL, as Lambda serves one: payload format 2.0 events,
 * the synchronous payload limit, and the function's answer as the response.
 */

const fn: LocalFunction = {
  name: 'longhaul-provider-events',
  service: 'provider-events',
  timeoutMs: 1000,
  memoryMb: 512,
};
const facts: FunctionUrlFacts = {
  logicalId: 'ProviderEventsUrl1234',
  functionLogicalId: 'ProviderEventsFunction1234',
  service: 'provider-events',
  authType: 'NONE',
  invokeMode: 'BUFFERED',
  variables: ['PROVIDER_EVENTS_URL'],
};

let answer: (event: APIGatewayProxyEventV2) => Promise<unknown>;
const events: APIGatewayProxyEventV2[] = [];
let server: Server;
let url: string;
let endpoint: FunctionUrlEndpoint;

beforeAll(async () => {
  endpoint = functionUrlEndpoint({
    facts,
    fn: () => fn,
    handler: Promise.resolve(async (event: APIGatewayProxyEventV2) => {
      events.push(event);
      return answer(event);
    }),
    log: () => undefined,
  });
  server = createServer((req, res) => {
    void endpoint.serve(req, res);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  url = functionUrlOf(`http://127.0.0.1:${(server.address() as AddressInfo).port}`, endpoint);
});
afterAll(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});
beforeEach(() => {
  events.length = 0;
  answer = async () => ({ statusCode: 204, headers: { 'cache-control': 'no-store' }, body: '' });
});

test('is served under a prefix of its own, with a trailing slash as Lambda gives its URLs', () => {
  expect(endpoint.prefix).toBe('/lambda-url/longhaul-provider-events');
  expect(url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/lambda-url\/longhaul-provider-events\/$/);
});

test('hands the function a payload format 2.0 event: the path after the prefix, the raw query, a text body', async () => {
  const response = await fetch(`${url}v1/provider/events?jobId=job_x&submission=a.0&submission=b.1`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'X-Custom': 'one', cookie: 'a=1; b=2' },
    body: '{"type":"progress"}',
  });

  expect(response.status).toBe(204);
  expect(response.headers.get('cache-control')).toBe('no-store');
  const [event] = events;
  expect(event).toMatchObject({
    version: '2.0',
    routeKey: '$default',
    rawPath: '/v1/provider/events',
    rawQueryString: 'jobId=job_x&submission=a.0&submission=b.1',
    queryStringParameters: { jobId: 'job_x', submission: 'a.0,b.1' },
    cookies: ['a=1', 'b=2'],
    body: '{"type":"progress"}',
    isBase64Encoded: false,
    requestContext: {
      accountId: 'anonymous',
      routeKey: '$default',
      stage: '$default',
      http: { method: 'POST', path: '/v1/provider/events', sourceIp: '127.0.0.1' },
    },
  });
  expect(event?.headers).toMatchObject({ 'content-type': 'application/json', 'x-custom': 'one' });
  expect(event?.headers).not.toHaveProperty('cookie');
  expect(event?.requestContext.time).toMatch(/^\d{2}\/[A-Z][a-z]{2}\/\d{4}:\d{2}:\d{2}:\d{2} \+0000$/);
});

test('base64-encodes a body that is not text', async () => {
  await fetch(`${url}v1/provider/events`, {
    method: 'POST',
    headers: { 'content-type': 'application/octet-stream' },
    body: Buffer.from([0xff, 0x00, 0x7f]),
  });
  expect(events[0]).toMatchObject({ body: '/wB/', isBase64Encoded: true });
});

test('answers a body over the 6 MB synchronous limit itself, without running the function', async () => {
  const before = usage.read().lambda[fn.name]?.invocations ?? 0;
  const response = await fetch(`${url}v1/provider/events`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: Buffer.alloc(SYNC_REQUEST_PAYLOAD_BYTES + 1, 0x20),
  });

  expect(response.status).toBe(413);
  expect(response.headers.get('x-amzn-errortype')).toBe('RequestEntityTooLargeException');
  expect(await response.json()).toEqual({
    Message: `Request must be smaller than ${SYNC_REQUEST_PAYLOAD_BYTES} bytes for the InvokeFunction operation`,
  });
  expect(events).toEqual([]);
  expect(usage.read().lambda[fn.name]?.invocations ?? 0).toBe(before);
});

test('refuses a body that fits but whose event, base64-encoded, does not', async () => {
  const response = await fetch(`${url}v1/provider/events`, {
    method: 'POST',
    headers: { 'content-type': 'application/octet-stream' },
    body: Buffer.alloc(5 * 1024 * 1024, 1),
  });
  expect(response.status).toBe(413);
  expect(events).toEqual([]);
});

test('counts each request as an invocation of the function', async () => {
  const before = usage.read();
  await fetch(`${url}v1/provider/events`, { method: 'POST', body: '{}' });
  await fetch(`${url}v1/provider/events`, { method: 'POST', body: '{}' });
  const after = usage.read();
  expect((after.lambda[fn.name]?.invocations ?? 0) - (before.lambda[fn.name]?.invocations ?? 0)).toBe(2);
  expect(after.restApiRequests).toBe(before.restApiRequests);
});

test('takes a result without a statusCode as the JSON body of a 200', async () => {
  answer = async () => ({ accepted: true });
  const response = await fetch(`${url}anything`, { method: 'POST', body: 'x' });
  expect(response.status).toBe(200);
  expect(response.headers.get('content-type')).toBe('application/json');
  expect(await response.json()).toEqual({ accepted: true });
});

test('answers a failed invocation with 502, and never the error', async () => {
  answer = async () => {
    throw new Error('secret detail');
  };
  const response = await fetch(`${url}v1/provider/events`, { method: 'POST', body: '{}' });
  expect(response.status).toBe(502);
  expect(await response.text()).not.toContain('secret detail');
});
