import { createServer, type IncomingHttpHeaders, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Longhaul, LonghaulError, type SearchResult } from '../../client';
import { searchResult } from '../../config/search';

/**
 * `search` against a local HTTP server standing in for the API: the exact
 * request it sends, the typed hits it answers, a refusal raised as the typed
 * error with its field errors, and the answers it retries (a search changes
 * nothing), never sooner than Retry-After.
 */

const KEY = 'tenant-key-search';

/** An answer as the handler gives it: parsed with the handler's own schema, so a fixture of another shape fails here. */
const answer = searchResult.parse({
  items: [
    {
      score: 0.8312,
      item: {
        id: 'job_abcdefghijklmnopqrstuvwxyz',
        title: 'Advent 1: Waiting',
        date: '2025-11-30',
        labels: ['advent', 'sermon'],
      },
      passage: { index: 3, start: 95.5, end: 131.25, text: 'Grace is not earned; it is given.' },
      playback: {
        playlistUrl: 'https://media.example.test/p/master.m3u8?X-Amz-Signature=abc',
        startSeconds: 95.5,
        url: 'https://media.example.test/p/master.m3u8?X-Amz-Signature=abc#t=95.5',
      },
    },
  ],
});

interface Received {
  readonly method: string | undefined;
  readonly url: string | undefined;
  readonly headers: IncomingHttpHeaders;
  readonly body: string;
}

type Reply = (response: ServerResponse) => void;

const json =
  (status: number, body: unknown, headers: Record<string, string> = {}): Reply =>
  (response) => {
    response.writeHead(status, {
      'content-type': status < 400 ? 'application/json' : 'application/problem+json',
      ...headers,
    });
    response.end(JSON.stringify(body));
  };

const problem = (status: number, code: string, extra: Record<string, unknown> = {}) => ({
  type: `urn:longhaul:problem:${code}`,
  title: code,
  status,
  detail: `${code} detail`,
  code,
  ...extra,
});

/** Answers each request with the next reply and records it; a request beyond the script fails the test. */
async function api(replies: Reply[]): Promise<{ server: Server; baseUrl: string; received: Received[] }> {
  const received: Received[] = [];
  const server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      received.push({
        method: request.method,
        url: request.url,
        headers: request.headers,
        body: Buffer.concat(chunks).toString('utf8'),
      });
      const reply = replies.shift();
      if (reply) reply(response);
      else json(500, problem(500, 'internal-error', { detail: 'unexpected request' }))(response);
    });
  });
  await new Promise<void>((listening) => server.listen(0, '127.0.0.1', listening));
  return { server, baseUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, received };
}

let running: Server | undefined;
afterEach(async () => {
  running?.closeAllConnections();
  await new Promise((closed) => running?.close(closed) ?? closed(undefined));
  running = undefined;
});

async function setUp(replies: Reply[]) {
  const stand = await api(replies);
  running = stand.server;
  const sleeps: number[] = [];
  const client = new Longhaul({
    baseUrl: stand.baseUrl,
    apiKey: KEY,
    retry: { maxAttempts: 4, baseDelayMs: 100, maxDelayMs: 1000 },
    random: () => 0.5,
    // Waits are recorded, not slept: the test asserts how long the SDK would wait.
    sleep: async (ms) => {
      sleeps.push(ms);
    },
  });
  return { client, received: stand.received, sleeps };
}

describe('search', () => {
  it('sends the query, limit and filter as one JSON body with the tenant key, and answers the typed hits', async () => {
    const { client, received } = await setUp([json(200, answer)]);
    const request = {
      query: 'grace is a gift',
      limit: 5,
      filter: { itemIds: ['job_abcdefghijklmnopqrstuvwxyz'], dateFrom: '2025-11-01', labels: ['advent'] },
    } as const;

    const found: SearchResult = await client.search(request);

    expect(found).toEqual(answer);
    expect(found.items[0]?.playback.url).toBe(
      'https://media.example.test/p/master.m3u8?X-Amz-Signature=abc#t=95.5',
    );
    expect(received).toHaveLength(1);
    const [sent] = received;
    expect({ method: sent?.method, url: sent?.url }).toEqual({ method: 'POST', url: '/v1/search' });
    expect(sent?.headers).toMatchObject({
      'content-type': 'application/json',
      'x-api-key': KEY,
      accept: 'application/json, application/problem+json',
    });
    expect(sent?.headers['idempotency-key']).toBeUndefined();
    expect(JSON.parse(sent?.body ?? '')).toEqual(request);
  });

  it('takes a bare query as `{ query }` and answers no hits as no items', async () => {
    const { client, received } = await setUp([json(200, { items: [] })]);

    expect(await client.search('nothing published says this')).toEqual({ items: [] });
    expect(received.map((r) => r.body)).toEqual([JSON.stringify({ query: 'nothing published says this' })]);
  });

  it('raises a refused search as a LonghaulError carrying the field errors, without retrying it', async () => {
    const errors = [
      { pointer: '/limit', detail: 'Too big: expected number to be <=50' },
      { pointer: '/filter/dateTo', detail: 'dateFrom must not be after dateTo' },
    ];
    const { client, received, sleeps } = await setUp([
      json(400, problem(400, 'validation-failed', { errors })),
    ]);

    const error = await client
      .search({ query: 'grace', limit: 51, filter: { dateFrom: '2026-03-02', dateTo: '2026-03-01' } })
      .catch((caught: unknown) => caught);

    expect(error).toBeInstanceOf(LonghaulError);
    expect(error).toMatchObject({ code: 'validation-failed', status: 400, problem: { errors } });
    expect(received).toHaveLength(1);
    expect(sleeps).toEqual([]);
  });

  it('retries a 429 no sooner than its Retry-After, and a 503 and a reset connection with backoff, sending the same body', async () => {
    const { client, received, sleeps } = await setUp([
      json(429, problem(429, 'rate-limited'), { 'retry-after': '2' }),
      json(503, problem(503, 'service-unavailable')),
      (response) => response.socket?.destroy(),
      json(200, answer),
    ]);

    expect(await client.search({ query: 'grace', limit: 3 })).toEqual(answer);

    expect(received.map((r) => `${r.method} ${r.url} ${r.body}`)).toEqual(
      Array(4).fill(`POST /v1/search ${JSON.stringify({ query: 'grace', limit: 3 })}`),
    );
    // random() = 0.5: half of each ceiling (100, 200, 400), but never under the 2 s the server asked for.
    expect(sleeps).toEqual([2000, 100, 200]);
  });

  it('gives up on a 429 whose Retry-After is longer than it waits for, with the time asked for on the error', async () => {
    const { client, received } = await setUp([
      json(429, problem(429, 'rate-limited'), { 'retry-after': '600' }),
    ]);

    const error = await client.search('grace').catch((caught: unknown) => caught);

    expect(error).toMatchObject({ code: 'rate-limited', status: 429, retryAfterMs: 600_000 });
    expect(received).toHaveLength(1);
  });
});
