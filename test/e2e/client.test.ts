import { createHash } from 'node:crypto';
import { mkdtempSync, openAsBlob, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  ApiGatewayManagementApiClient,
  DeleteConnectionCommand,
} from '@aws-sdk/client-apigatewaymanagementapi';
import { HeadObjectCommand } from '@aws-sdk/client-s3';
import { QueryCommand } from '@aws-sdk/lib-dynamodb';
import WebSocketClient from 'ws';
import {
  type Job,
  Longhaul,
  LonghaulError,
  MULTIPART_FILE_LIMIT_BYTES,
  MULTIPART_UPLOAD_THRESHOLD_BYTES,
  type StreamTicket,
  type WaitUpdate,
  type WebSocketConstructor,
} from '../../client';
import { jobIdOf } from '../../lambdas/domain/job';
import {
  documentClient,
  pollUntil,
  type RunningLocalStack,
  s3Client,
  startLocalStack,
} from '../../local/harness/local-stack';
import { startWebhookReceiver } from './support/webhook-receiver';

/**
 * The SDK against the local stack: a retried submission whose first answer
 * was lost is one job and one provider charge; waitForJob follows the
 * WebSocket (opened with a stream ticket, reopened when the server closes it)
 * and polls while it is down; files (a 200 MiB one in parts), listing,
 * cancel and the admin routes work end to end; and no URL the SDK sends
 * anything to carries an API key.
 */

jest.setTimeout(120_000);

const KEY = 'client-key-6d2e';
const ADMIN_KEY = 'client-admin-key-19fa';
const WEBHOOK_SECRET = 'client-webhook-secret-5e0b';

interface Ledger {
  readonly submissions: readonly { id: string; idempotencyKey: string; acceptedAt: string }[];
}

let stack: RunningLocalStack;
let client: Longhaul;

/** Every URL the SDK sent a request to or opened a socket on, in every test of this file. */
const urls: string[] = [];
const recordingFetch: typeof fetch = (input, init) => {
  urls.push(String(input instanceof Request ? input.url : input));
  return fetch(input, init);
};
class RecordingWebSocket extends WebSocket {
  constructor(url: string) {
    urls.push(url);
    super(url);
  }
}

beforeAll(async () => {
  stack = await startLocalStack({
    env: {
      LONGHAUL_API_KEYS: `${KEY}:acme`,
      LONGHAUL_ADMIN_KEY: ADMIN_KEY,
      LONGHAUL_WEBHOOK_SECRET: WEBHOOK_SECRET,
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
  client = new Longhaul({
    baseUrl: stack.baseUrl,
    apiKey: KEY,
    adminKey: ADMIN_KEY,
    fetch: recordingFetch,
    webSocket: RecordingWebSocket as WebSocketConstructor,
  });
});

afterAll(async () => {
  await stack?.stop();
  // Checked last, over every request and socket of every test above.
  expect(urls.length).toBeGreaterThan(20);
  expect(urls.some((url) => url.includes('?ticket=lhst_'))).toBe(true);
  for (const url of urls) {
    expect(url).not.toContain(KEY);
    expect(url).not.toContain(ADMIN_KEY);
    expect(url).not.toMatch(/apiKey=/i);
  }
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
  ((await sim('/_sim/ledger')) as Ledger).submissions.filter((s) => jobIdOf(s.idempotencyKey) === job.id);

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
    const flaky = new Longhaul({
      baseUrl: stack.baseUrl,
      apiKey: KEY,
      fetch: (input, init) => {
        urls.push(String(input));
        return dropFirstAnswer(input, init);
      },
    });
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
    for await (const job of client.listJobs({ limit: 100 })) {
      if (job.idempotencyKey === action.idempotencyKey) mine.push(job);
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
    const updates: WaitUpdate[] = [];
    const done = await client.waitForJob(job.id, { onProgress: (u) => updates.push(u), signal: deadline() });

    expect(done).toMatchObject({ id: job.id, type: 'image.generate', status: 'succeeded', progress: 100 });
    expect(done.type === 'image.generate' && done.result?.outputUrl).toEqual(expect.stringMatching(/^http/));
    const progress = updates.flatMap((u) => (u.type === 'progress' ? [u] : []));
    const streamed = progress.filter((u) => u.via === 'stream' && u.status === 'running');
    expect(streamed.length).toBeGreaterThanOrEqual(3);
    const values = progress.map((u) => u.progress);
    expect(values).toEqual([...values].sort((a, b) => a - b));
    expect(progress.at(-1)).toMatchObject({ status: 'succeeded', progress: 100 });
    expect(updates.filter((u) => u.type === 'outage')).toEqual([]);
  });

  it('reopens a socket the server closed, with a new ticket, and hears the job to its end', async () => {
    await sim('/_sim/config', { jobMs: 6000 });
    try {
      const { job } = await client.createJob(client.userAction(), {
        type: 'image.generate',
        input: { prompt: 'closed on me' },
      });
      const updates: WaitUpdate[] = [];
      const waiting = client.waitForJob(job.id, {
        onProgress: (u) => updates.push(u),
        // Polling would find the job too: only the socket can hear the progress ticks counted below.
        pollIntervalMs: 100,
        livePollIntervalMs: 60_000,
        retry: { baseDelayMs: 100, maxDelayMs: 200 },
        signal: deadline(),
      });
      const connectionOf = async () => {
        const { Items } = await documentClient(stack.endpoints).send(
          new QueryCommand({
            TableName: stack.endpoints.connectionTableName,
            IndexName: 'byJob',
            KeyConditionExpression: 'jobId = :job',
            ExpressionAttributeValues: { ':job': job.id },
          }),
        );
        return Items?.[0]?.connectionId as string | undefined;
      };
      const first = await pollUntil(connectionOf, { description: "the job's first subscription" });
      await pollUntil(async () => updates.some((u) => u.type === 'progress' && u.via === 'stream'), {
        description: 'live progress over the first socket',
      });
      // The server side of what API Gateway does after 10 idle minutes or 2 hours.
      await new ApiGatewayManagementApiClient({
        endpoint: stack.endpoints.streamCallbackUrl,
        region: 'us-east-1',
        credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
      }).send(new DeleteConnectionCommand({ ConnectionId: first }));
      const second = await pollUntil(
        async () => {
          const id = await connectionOf();
          return id && id !== first ? id : undefined;
        },
        { description: 'a second subscription after the server closed the first' },
      );
      expect(second).not.toBe(first);

      const done = await waiting;
      expect(done.status).toBe('succeeded');
      const states = updates.flatMap((u) => (u.type === 'stream' ? [u.state] : []));
      expect(states.slice(0, 3)).toEqual(['open', 'closed', 'open']);
      const reopenedAt = updates.findIndex((u, i) => u.type === 'stream' && u.state === 'open' && i > 0);
      expect(updates.slice(reopenedAt).some((u) => u.type === 'progress' && u.via === 'stream')).toBe(true);
      const ticketUrls = urls.filter((url) => url.includes('?ticket='));
      expect(new Set(ticketUrls).size).toBe(ticketUrls.length);
    } finally {
      await sim('/_sim/config', { jobMs: 1500 });
    }
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
      fetch: recordingFetch,
      webSocket: Recording as unknown as WebSocketConstructor,
    });
    const { job } = await refused.createJob(refused.userAction(), {
      type: 'image.generate',
      input: { prompt: 'polled' },
    });
    const updates: WaitUpdate[] = [];

    const done = await refused.waitForJob(job.id, {
      onProgress: (u) => updates.push(u),
      pollIntervalMs: 100,
      signal: deadline(),
    });

    expect(done.status).toBe('succeeded');
    expect(opened.length).toBeGreaterThanOrEqual(1);
    for (const url of opened)
      expect(url).toMatch(new RegExp(`^ws://127\\.0\\.0\\.1:${port}/v1/stream\\?ticket=lhst_`));
    expect(failures).toHaveLength(opened.length);
    const progress = updates.flatMap((u) => (u.type === 'progress' ? [u] : []));
    expect(progress.length).toBeGreaterThanOrEqual(2);
    expect(progress.every((u) => u.via === 'poll')).toBe(true);
    expect(progress.at(-1)?.status).toBe('succeeded');
  });

  it('polls while the WebSocket is down, and reopens it after it drops', async () => {
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
        fetch: recordingFetch,
        streamUrl: `ws://127.0.0.1:${port}/x`,
      });
      const { job } = await dropped.createJob(dropped.userAction(), {
        type: 'image.generate',
        input: { prompt: 'dropped' },
      });
      const updates: WaitUpdate[] = [];
      const done = await dropped.waitForJob(job.id, {
        onProgress: (u) => updates.push(u),
        pollIntervalMs: 100,
        retry: { baseDelayMs: 100, maxDelayMs: 200 },
        signal: deadline(),
      });
      expect(done.status).toBe('succeeded');
      expect(sockets.size).toBeGreaterThanOrEqual(2);
      expect(updates.every((u) => u.type !== 'progress' || u.via === 'poll')).toBe(true);
    } finally {
      for (const socket of sockets) socket.destroy();
      await new Promise((closed) => dropping.close(closed));
    }
  });
});

describe('webhooks', () => {
  it('are verified by the SDK, and a retried delivery carries the same event id', async () => {
    // The first delivery fails, so the workflow delivers the event again.
    const receiver = await startWebhookReceiver((count) => (count === 1 ? 500 : 204));
    const { deliveries } = receiver;
    try {
      const { job } = await client.createJob(client.userAction(), {
        type: 'image.generate',
        input: { prompt: 'hooked' },
        webhookUrl: receiver.url,
      });
      await pollUntil(() => deliveries.length >= 2, { timeoutMs: 60_000, description: 'a retried webhook' });
      const [first, again] = deliveries.map(({ rawBody, headers }) =>
        Longhaul.webhooks.verify(rawBody, headers, WEBHOOK_SECRET),
      );
      expect(first).toMatchObject({ type: 'job.succeeded', job: { id: job.id, status: 'succeeded' } });
      expect(first?.id).toMatch(/^evt_[A-Za-z0-9_-]{22}$/);
      expect(again?.id).toBe(first?.id);
      expect(deliveries).toHaveLength(2);
    } finally {
      await receiver.close();
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
    const [inline, uploaded] = jobs.map((job) =>
      job.type === 'image.generate' ? job.input.sourceImageRef : '',
    );
    expect(inline).toMatch(/^upl_/);
    expect(uploaded).toMatch(/^upl_/);
    expect(inline).not.toBe(uploaded);
  });
});

describe('stream tickets', () => {
  /** The status of a handshake: 101 when admitted, else the status it was refused with. */
  const handshake = (url: string) =>
    new Promise<number>((resolve, reject) => {
      const socket = new WebSocketClient(url);
      socket.once('open', () => {
        socket.close();
        resolve(101);
      });
      socket.once('unexpected-response', (_request, response) => {
        resolve(response.statusCode ?? 0);
        socket.terminate();
      });
      socket.once('error', (error) => reject(error));
    });

  it("open one job's stream to its tenant; the admin key and others' jobs are refused", async () => {
    const { job } = await client.createJob(client.userAction(), {
      type: 'image.generate',
      input: { prompt: 'ticketed' },
    });
    const ticket: StreamTicket = await client.createStreamTicket(job.id);
    expect(ticket.streamUrl).toBe(stack.endpoints.streamUrl);
    expect(ticket.ticket).toMatch(/^lhst_[A-Za-z0-9_-]{43}$/);
    const lifetime = Date.parse(ticket.expiresAt) - Date.now();
    expect(lifetime).toBeGreaterThan(30_000);
    expect(lifetime).toBeLessThanOrEqual(60_000);

    const stream = stack.endpoints.streamUrl;
    expect(await handshake(`${stream}?ticket=${ticket.ticket}`)).toBe(101);
    expect(await handshake(`${stream}?ticket=lhst_${'x'.repeat(43)}`)).toBe(401);
    expect(await handshake(`${stream}?ticket=not-a-ticket`)).toBe(401);
    // Kept for compatibility: a tenant key in the URL still works; the admin key never does.
    expect(await handshake(`${stream}?jobId=${job.id}&apiKey=${KEY}`)).toBe(101);
    expect(await handshake(`${stream}?jobId=${job.id}&apiKey=${ADMIN_KEY}`)).toBe(403);

    const missing = await client
      .createStreamTicket('job_aaaaaaaaaaaaaaaaaaaaaaaaaa')
      .catch((e: unknown) => e);
    expect(missing).toMatchObject({ status: 404, code: 'not-found' });
    const anonymous = await fetch(`${stack.baseUrl}/v1/jobs/${job.id}/stream-ticket`, { method: 'POST' });
    expect(anonymous.status).toBe(401);
  });
});

describe('a large file', () => {
  const dir = mkdtempSync(join(tmpdir(), 'longhaul-upload-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('goes up in parts: 200 MiB through S3 multipart upload, stored whole, and a job runs on it', async () => {
    const size = 200 * 1024 * 1024;
    const path = join(dir, 'sermon.wav');
    // Written in 8 MiB chunks and sent as a file-backed Blob: the test never holds the file in memory.
    const chunk = Buffer.alloc(8 * 1024 * 1024);
    for (let i = 0; i < chunk.length; i++) chunk[i] = (i * 31) & 0xff;
    writeFileSync(path, '');
    for (let written = 0; written < size; written += chunk.length) {
      writeFileSync(path, chunk, { flag: 'a' });
    }
    const data = await openAsBlob(path, { type: 'audio/wav' });
    expect(data.size).toBe(size);
    expect(size).toBeGreaterThan(MULTIPART_UPLOAD_THRESHOLD_BYTES);

    const progress: number[] = [];
    let parts = 0;
    const started = performance.now();
    const uploaded = await client.uploadFile(
      { data, contentType: 'audio/wav' },
      {
        onUploadProgress: (p) => {
          progress.push(p.uploadedBytes);
          parts = p.state?.parts.length ?? 0;
        },
        signal: AbortSignal.timeout(110_000),
      },
    );
    const seconds = (performance.now() - started) / 1000;
    process.stdout.write(`200 MiB multipart upload: ${parts} parts in ${seconds.toFixed(1)} s\n`);
    expect(parts).toBe(25);
    expect(progress).toHaveLength(25);
    expect(progress.at(-1)).toBe(size);
    const multipartCalls = urls.filter((url) => /\/v1\/uploads\/(multipart|upl_[^/]+\/complete)$/.test(url));
    expect(multipartCalls).toEqual([
      `${stack.baseUrl}/v1/uploads/multipart`,
      `${stack.baseUrl}/v1/uploads/${uploaded.ref}/complete`,
    ]);

    const head = await s3Client(stack.endpoints).send(
      new HeadObjectCommand({
        Bucket: stack.endpoints.inputBucketName,
        Key: `inputs/acme/${uploaded.ref}`,
      }),
    );
    expect(head.ContentLength).toBe(size);
    expect(head.ContentType).toBe('audio/wav');

    const { job } = await client.createJob(client.userAction(), {
      type: 'audio.transcribe',
      input: { audioRef: uploaded.ref },
    });
    const done = await client.waitForJob(job.id, { pollIntervalMs: 200, signal: deadline() });
    expect(done.status).toBe('succeeded');
  }, 180_000);
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
        for await (const item of client.reviewList()) if (item.id === job.id) return item;
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
