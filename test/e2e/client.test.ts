import { createHash } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import {
  type Job,
  Longhaul,
  LonghaulError,
  MULTIPART_FILE_LIMIT_BYTES,
  type ProgressUpdate,
  type WebSocketConstructor,
} from '../../client';
import { pollUntil, type RunningLocalStack, startLocalStack } from './support/local-stack';

/**
 * The SDK against the local stack: a retried submission whose first answer
 * was lost is one job and one provider charge; waitForJob follows the
 * WebSocket and falls back to polling; files, listing, cancel and the admin
 * routes work end to end.
 */

jest.setTimeout(120_000);

const KEY = 'client-key-6d2e';
const ADMIN_KEY = 'client-admin-key-19fa';

interface Ledger {
  readonly submissions: readonly { id: string; idempotencyKey: string; acceptedAt: string }[];
}

let stack: RunningLocalStack;
let client: Longhaul;

beforeAll(async () => {
  stack = await startLocalStack({
    env: {
      LONGHAUL_API_KEYS: `${KEY}:acme`,
      LONGHAUL_ADMIN_KEY: ADMIN_KEY,
      SIM_JOB_MS: '300',
      SIM_PROGRESS_HZ: '10',
      // Every accepted submission is a charge, and a submission whose answer the provider
      // loses cannot be resent safely: the job goes to review (for the operator test).
      SIM_IDEMPOTENT: '0',
      PROVIDER_IDEMPOTENT: '0',
      PROVIDER_TIMEOUT_MS: '1000',
      SLOT_WAIT_MAX_SECONDS: '1',
    },
  });
  client = new Longhaul({ baseUrl: stack.baseUrl, apiKey: KEY, adminKey: ADMIN_KEY });
});

afterAll(async () => {
  await stack?.stop();
});

async function sim(path: string, body?: unknown): Promise<any> {
  const response = await fetch(`${stack.endpoints.providerUrl}${path}`, {
    method: body === undefined ? 'GET' : 'POST',
    headers: { 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await response.text();
  return text ? JSON.parse(text) : undefined;
}

const charges = async (job: Job) =>
  ((await sim('/_sim/ledger')) as Ledger).submissions.filter((s) => s.idempotencyKey === job.id);

/** Every wait in these tests ends: a job that never settles fails its test instead of hanging it. */
const deadline = () => AbortSignal.timeout(30_000);

/** A port nothing listens on: bound, then released. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((listening) => server.listen(0, '127.0.0.1', listening));
  const { port } = server.address() as AddressInfo;
  await new Promise((closed) => server.close(closed));
  return port;
}

describe('a submission whose answer is lost', () => {
  it('is retried with the same key: the same job, replayed, and one provider charge', async () => {
    const attempts: { key: string | null; status: number | 'dropped' }[] = [];
    const dropFirstAnswer: typeof fetch = async (input, init) => {
      const response = await fetch(input, init);
      const key = new Headers(init?.headers).get('idempotency-key');
      if (key !== null && attempts.length === 0) {
        // The server accepted the job; the client never hears of it.
        await response.arrayBuffer();
        attempts.push({ key, status: 'dropped' });
        throw new TypeError('fetch failed', { cause: new Error('socket hang up') });
      }
      if (key !== null) attempts.push({ key, status: response.status });
      return response;
    };
    const flaky = new Longhaul({ baseUrl: stack.baseUrl, apiKey: KEY, fetch: dropFirstAnswer });
    const action = flaky.userAction();

    const created = await flaky.createJob(action, {
      type: 'image.generate',
      input: { prompt: 'lost answer' },
    });

    expect(created.replayed).toBe(true);
    expect(created.job.idempotencyKey).toBe(action.idempotencyKey);
    expect(attempts[0]).toEqual({ key: action.idempotencyKey, status: 'dropped' });
    expect(attempts.at(-1)).toEqual({ key: action.idempotencyKey, status: 202 });
    // Any attempt in between met the first request still in intake.
    expect(attempts.slice(1, -1).every((a) => a.key === action.idempotencyKey && a.status === 409)).toBe(
      true,
    );

    const done = await client.waitForJob(created.job.id, { pollIntervalMs: 100, signal: deadline() });
    expect(done.status).toBe('succeeded');
    expect(await charges(done)).toHaveLength(1);
    const mine: Job[] = [];
    for await (const page of client.listJobs({ limit: 100 })) {
      mine.push(...page.items.filter((job) => job.idempotencyKey === action.idempotencyKey));
    }
    expect(mine.map((job) => job.id)).toEqual([created.job.id]);
  });
});

describe('waitForJob', () => {
  beforeAll(async () => {
    // Long enough for several ticks to stream after the socket opens.
    await sim('/_sim/config', { jobMs: 1500 });
  });
  afterAll(async () => {
    await sim('/_sim/config', { jobMs: 300 });
  });

  it('reports live progress over the WebSocket and resolves with the finished job', async () => {
    const { job } = await client.createJob(client.userAction(), {
      type: 'image.generate',
      input: { prompt: 'watched' },
    });
    const updates: ProgressUpdate[] = [];
    const done = await client.waitForJob(job.id, { onProgress: (u) => updates.push(u), signal: deadline() });

    expect(done).toMatchObject({ id: job.id, status: 'succeeded', progress: 100 });
    expect(done.result?.outputUrl).toEqual(expect.stringMatching(/^http/));
    const streamed = updates.filter((u) => u.via === 'stream' && u.status === 'running');
    expect(streamed.length).toBeGreaterThanOrEqual(3);
    const values = updates.map((u) => u.progress);
    expect(values).toEqual([...values].sort((a, b) => a - b));
    expect(updates.at(-1)).toMatchObject({ status: 'succeeded', progress: 100 });
  });

  it('polls when the WebSocket is refused', async () => {
    const port = await closedPort();
    const opened: string[] = [];
    const failures: string[] = [];
    const Recording = class extends WebSocket {
      constructor(url: string) {
        super(url);
        opened.push(url);
        this.addEventListener('error', () => failures.push(url));
      }
    };
    const refused = new Longhaul({
      baseUrl: stack.baseUrl,
      apiKey: KEY,
      streamUrl: `ws://127.0.0.1:${port}/v1/stream`,
      webSocket: Recording as unknown as WebSocketConstructor,
    });
    const { job } = await refused.createJob(refused.userAction(), {
      type: 'image.generate',
      input: { prompt: 'polled' },
    });
    const updates: ProgressUpdate[] = [];

    const done = await refused.waitForJob(job.id, {
      onProgress: (u) => updates.push(u),
      pollIntervalMs: 100,
      signal: deadline(),
    });

    expect(done.status).toBe('succeeded');
    expect(opened).toEqual([`ws://127.0.0.1:${port}/v1/stream?jobId=${job.id}&apiKey=${KEY}`]);
    expect(failures).toHaveLength(1);
    expect(updates.length).toBeGreaterThanOrEqual(2);
    expect(updates.every((u) => u.via === 'poll')).toBe(true);
    expect(updates.at(-1)?.status).toBe('succeeded');
  });

  it('polls when the WebSocket drops after opening', async () => {
    // Completes the handshake, then cuts the connection.
    const dropping: Server = createServer();
    const sockets = new Set<Socket>();
    dropping.on('upgrade', (request, socket: Socket) => {
      sockets.add(socket);
      const accept = createHash('sha1')
        .update(`${request.headers['sec-websocket-key']}258EAFA5-E914-47DA-95CA-C5AB0DC85B11`)
        .digest('base64');
      socket.write(
        `HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: ${accept}\r\n\r\n`,
      );
      setTimeout(() => socket.destroy(), 50);
    });
    await new Promise<void>((listening) => dropping.listen(0, '127.0.0.1', listening));
    try {
      const { port } = dropping.address() as AddressInfo;
      const dropped = new Longhaul({
        baseUrl: stack.baseUrl,
        apiKey: KEY,
        streamUrl: `ws://127.0.0.1:${port}/x`,
      });
      const { job } = await dropped.createJob(dropped.userAction(), {
        type: 'image.generate',
        input: { prompt: 'dropped' },
      });
      const updates: ProgressUpdate[] = [];
      const done = await dropped.waitForJob(job.id, {
        onProgress: (u) => updates.push(u),
        pollIntervalMs: 100,
        signal: deadline(),
      });
      expect(done.status).toBe('succeeded');
      expect(sockets.size).toBe(1);
      expect(updates.every((u) => u.via === 'poll')).toBe(true);
    } finally {
      for (const socket of sockets) socket.destroy();
      await new Promise((closed) => dropping.close(closed));
    }
  });
});

describe('files', () => {
  it('sends a small image with the job and a large one through a presigned upload', async () => {
    const small = new Uint8Array([137, 80, 78, 71, 13, 10, 26, 10, 1, 2, 3]);
    const large = new Uint8Array(MULTIPART_FILE_LIMIT_BYTES + 1024);
    large.set(small);
    const jobs = await Promise.all(
      [small, large].map(async (data) => {
        const { job } = await client.createJob(client.userAction(), {
          type: 'image.generate',
          input: { prompt: 'like this one' },
          file: { data, contentType: 'image/png', filename: 'source.png' },
        });
        return client.waitForJob(job.id, { pollIntervalMs: 100, signal: deadline() });
      }),
    );
    expect(jobs.map((job) => job.status)).toEqual(['succeeded', 'succeeded']);
    // Multipart refs are derived from the bytes (32 characters); upload refs are random (32 as well, but differ).
    const [inline, uploaded] = jobs.map((job) => job.input.sourceImageRef as string);
    expect(inline).toMatch(/^upl_/);
    expect(uploaded).toMatch(/^upl_/);
    expect(inline).not.toBe(uploaded);
  });
});

describe('the rest of the API', () => {
  it('cancels, reads timelines, types errors by code, and settles a job in review as an operator', async () => {
    await sim('/_sim/faults', { mode: 'accept-then-drop', count: 1 });
    const { job } = await client.createJob(client.userAction(), {
      type: 'image.generate',
      input: { prompt: 'answer lost at the provider' },
    });
    const review = await client.waitForJob(job.id, { pollIntervalMs: 100, signal: deadline() });
    expect(review.status).toBe('needs_review');

    const listed = await pollUntil(
      async () => {
        for await (const page of client.reviewList()) {
          const found = page.items.find((item) => item.id === job.id);
          if (found) return found;
        }
        return undefined;
      },
      { description: 'the job in the review list' },
    );
    expect(listed.tenantId).toBe('acme');
    const resolved = await client.resolve(job.id, {
      outcome: 'failed',
      note: 'the provider never finished it',
    });
    expect(resolved).toMatchObject({ status: 'failed', error: { code: 'resolved_failed' } });
    const events = await client.jobEvents(job.id);
    expect(events.map((e) => e.type)).toEqual(expect.arrayContaining(['job.accepted', 'operator.resolved']));

    const finished = await client.cancelJob(job.id).catch((error: unknown) => error);
    expect(finished).toBeInstanceOf(LonghaulError);
    expect(finished).toMatchObject({ code: 'job-already-finished', status: 409 });

    const missing = await client.getJob('job_aaaaaaaaaaaaaaaaaaaaaaaaaa').catch((error: unknown) => error);
    expect(missing).toMatchObject({ code: 'not-found', status: 404, problem: { code: 'not-found' } });

    await sim('/_sim/faults', { mode: 'stall', count: 1 });
    const queued = await client.createJob(client.userAction(), {
      type: 'image.generate',
      input: { prompt: 'never mind' },
    });
    const canceled = await client.cancelJob(queued.job.id);
    expect(canceled.status).toBe('canceled');
    expect((await client.cancelJob(queued.job.id)).status).toBe('canceled');

    expect(await client.redriveDeadLetters()).toEqual({ taskHandle: expect.any(String) });
    expect(await client.health()).toEqual({ status: 'ok' });
  });
});
