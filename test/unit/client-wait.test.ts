import {
  type Job,
  type JobStatus,
  Longhaul,
  LonghaulAPIError,
  LonghaulConnectionError,
  LonghaulTimeoutError,
  LonghaulUserAbortError,
  type WaitUpdate,
} from '../../client';
import { sleep } from '../../client/retry';
import { type WaitDeps, waitForJob } from '../../client/wait';
import { FakeSocket, until } from './support/fake-socket';

/**
 * waitForJob over a scripted WebSocket and a scripted job store: live
 * progress, the settling status message, polling only while the socket is
 * down, reconnecting with backoff, keep-alive pings, and outages of the API
 * waited out until the job settles, the signal aborts or the deadline passes.
 */

const JOB_ID = 'job_waitwaitwaitwaitwaitwaitwa';

/** A live message about the job (or the job it names) on the socket. */
const push = (socket: FakeSocket, message: Record<string, unknown>) =>
  socket.emit('message', JSON.stringify({ jobId: JOB_ID, at: new Date().toISOString(), ...message }));

const job = (status: JobStatus, progress: number): Job => ({
  id: JOB_ID,
  type: 'image.generate',
  provider: 'replicate',
  priority: 'standard',
  status,
  progress,
  input: { prompt: 'x' },
  result:
    status === 'succeeded' ? { outputUrl: 'https://out.example.test/i.png', contentType: 'image/png' } : null,
  error: null,
  attempts: 1,
  idempotencyKey: 'k',
  runAt: '2026-01-01T00:00:00.000Z',
  createdAt: '2026-01-01T00:00:00.000Z',
  updatedAt: '2026-01-01T00:00:01.000Z',
});

/** A job store read: each GET answers the current state (or the failure queued next), which the test moves on. */
function store(initial: Job) {
  let current = initial;
  const failures: Error[] = [];
  const reads: string[] = [];
  return {
    set: (next: Job) => {
      current = next;
    },
    fail: (...errors: Error[]) => failures.push(...errors),
    reads,
    getJob: async (id: string) => {
      expect(id).toBe(JOB_ID);
      const failure = failures.shift();
      if (failure) {
        reads.push(`error ${failure.name}`);
        throw failure;
      }
      reads.push(`${current.status} ${current.progress}`);
      return current;
    },
  };
}

const summary = (updates: WaitUpdate[]) =>
  updates.flatMap((u) => (u.type === 'progress' ? [`${u.via} ${u.status} ${u.progress}`] : [u.type]));

/** Tickets handed out, one per (re)connection. */
let tickets: number;
const deps = (jobs: ReturnType<typeof store>, withSocket = true): WaitDeps => ({
  getJob: jobs.getJob,
  socketUrl: withSocket ? async () => `ws://stream.test/v1/stream?ticket=t${++tickets}` : undefined,
  WebSocket: withSocket ? FakeSocket : undefined,
  sleep,
  // Backoff delays at their ceiling, so the tests know what the client waits.
  random: () => 0.999,
});
const fastRetry = { retry: { baseDelayMs: 4, maxDelayMs: 20 } } as const;

const unavailable = () =>
  LonghaulAPIError.of({
    type: 'urn:longhaul:problem:service-unavailable',
    title: 'Service Unavailable',
    status: 503,
    detail: 'down',
    code: 'service-unavailable',
  });

beforeEach(() => {
  FakeSocket.instances = [];
  tickets = 0;
});

it('reports live progress and resolves with the job once a settled status arrives, without polling', async () => {
  const jobs = store(job('queued', 0));
  const updates: WaitUpdate[] = [];
  const waiting = waitForJob(deps(jobs), JOB_ID, { onProgress: (u) => updates.push(u), pollIntervalMs: 5 });
  await until(() => FakeSocket.instances.length === 1);
  const socket = FakeSocket.instances[0]!;
  expect(socket.url).toBe('ws://stream.test/v1/stream?ticket=t1');
  socket.emit('open');
  await until(() => updates.some((u) => u.type === 'progress'));
  push(socket, { type: 'status', status: 'running', progress: 0, error: null });
  push(socket, { type: 'progress', status: 'running', progress: 40 });
  push(socket, { type: 'progress', status: 'running', progress: 40 });
  push(socket, { type: 'progress', status: 'running', progress: 80 });
  push(socket, { type: 'progress', status: 'running', progress: 60 });
  push(socket, { type: 'progress', jobId: 'job_someoneelse', status: 'running', progress: 99 });
  socket.emit('message', 'not json');
  jobs.set(job('succeeded', 100));
  push(socket, { type: 'status', status: 'succeeded', progress: 100, error: null });

  const finished = await waiting;
  expect(finished).toEqual(job('succeeded', 100));
  expect(summary(updates)).toEqual([
    'stream',
    'poll queued 0',
    'stream running 0',
    'stream running 40',
    'stream running 80',
    'stream succeeded 100',
  ]);
  // One read once subscribed, one for the result after the settling message: no polling on the way.
  expect(jobs.reads).toEqual(['queued 0', 'succeeded 100']);
  expect(socket.closedByClient).toBe(true);
});

it('reopens a socket the server closed, with a fresh ticket, and polls only while it is down', async () => {
  const jobs = store(job('running', 10));
  const updates: WaitUpdate[] = [];
  const waiting = waitForJob(deps(jobs), JOB_ID, {
    onProgress: (u) => updates.push(u),
    pollIntervalMs: 5,
    livePollIntervalMs: 60_000,
    ...fastRetry,
  });
  await until(() => FakeSocket.instances.length === 1);
  FakeSocket.instances[0]!.emit('open');
  await until(() => jobs.reads.length === 1);
  // Open: no polling, however long the test waits.
  await sleep(40);
  expect(jobs.reads).toHaveLength(1);

  // API Gateway closes idle and two-hour-old connections (1001 going away).
  FakeSocket.instances[0]!.emit('close');
  await until(() => FakeSocket.instances.length === 2);
  expect(FakeSocket.instances[1]!.url).toBe('ws://stream.test/v1/stream?ticket=t2');
  const readsWhileDown = jobs.reads.length;
  expect(readsWhileDown).toBeGreaterThanOrEqual(2);

  FakeSocket.instances[1]!.emit('open');
  // Reopened: one read catches up with what happened while it was down; then quiet again.
  await until(() => updates.filter((u) => u.type === 'stream').length === 3);
  await sleep(40);
  const readsWhileUp = jobs.reads.length;
  await sleep(40);
  expect(jobs.reads).toHaveLength(readsWhileUp);

  jobs.set(job('succeeded', 100));
  push(FakeSocket.instances[1]!, { type: 'status', status: 'succeeded', progress: 100, error: null });
  expect((await waiting).status).toBe('succeeded');
  expect(updates.filter((u) => u.type === 'stream').map((u) => (u.type === 'stream' ? u.state : ''))).toEqual(
    ['open', 'closed', 'open'],
  );
});

it.each([
  ['is refused', (socket: FakeSocket) => socket.emit('error')],
  ['closes before opening', (socket: FakeSocket) => socket.emit('close')],
])('polls when the socket %s, and tries it again with backoff', async (_, misbehave) => {
  const jobs = store(job('queued', 0));
  const updates: WaitUpdate[] = [];
  const waiting = waitForJob(deps(jobs), JOB_ID, {
    onProgress: (u) => updates.push(u),
    pollIntervalMs: 5,
    ...fastRetry,
  });
  await until(() => FakeSocket.instances.length === 1);
  misbehave(FakeSocket.instances[0]!);
  await until(() => jobs.reads.length >= 2);
  jobs.set(job('running', 50));
  await until(() => updates.some((u) => u.type === 'progress' && u.progress === 50));
  await until(() => FakeSocket.instances.length >= 2);
  jobs.set(job('succeeded', 100));

  expect((await waiting).status).toBe('succeeded');
  expect(summary(updates)).toEqual(['poll queued 0', 'poll running 50', 'poll succeeded 100']);
});

it('polls when the socket never opens', async () => {
  const jobs = store(job('succeeded', 100));
  const started = Date.now();
  const finished = await waitForJob(deps(jobs), JOB_ID, { connectTimeoutMs: 30 });
  expect(finished.status).toBe('succeeded');
  expect(Date.now() - started).toBeGreaterThanOrEqual(25);
  expect(FakeSocket.instances[0]?.closedByClient).toBe(true);
});

it('pings an open socket, so idle timeouts leave it open', async () => {
  const jobs = store(job('running', 10));
  const controller = new AbortController();
  const waiting = waitForJob(deps(jobs), JOB_ID, { keepAliveMs: 10, signal: controller.signal });
  await until(() => FakeSocket.instances.length === 1);
  FakeSocket.instances[0]!.emit('open');
  await until(() => FakeSocket.instances[0]!.sent.length >= 3);
  expect(new Set(FakeSocket.instances[0]!.sent)).toEqual(new Set(['ping']));
  controller.abort(new Error('enough'));
  await expect(waiting).rejects.toBeInstanceOf(LonghaulUserAbortError);
  await expect(waiting).rejects.toMatchObject({ code: 'aborted', cause: new Error('enough') });
});

it('waits out connection errors, 5xx and 429, saying so, and finishes when the API is back', async () => {
  const jobs = store(job('running', 10));
  const updates: WaitUpdate[] = [];
  jobs.fail(
    new LonghaulConnectionError('GET /v1/jobs/x: no answer (ECONNREFUSED)'),
    unavailable(),
    new LonghaulConnectionError('GET /v1/jobs/x: no answer (socket hang up)'),
    LonghaulAPIError.of({
      type: 'urn:longhaul:problem:rate-limited',
      title: 'Too Many Requests',
      status: 429,
      detail: 'slow down',
      code: 'rate-limited',
    }),
  );
  const waiting = waitForJob(deps(jobs, false), JOB_ID, {
    onProgress: (u) => updates.push(u),
    pollIntervalMs: 1,
    ...fastRetry,
  });
  await until(() => jobs.reads.length >= 5);
  jobs.set(job('succeeded', 100));
  expect((await waiting).status).toBe('succeeded');
  expect(summary(updates).slice(0, 6)).toEqual([
    'outage',
    'outage',
    'outage',
    'outage',
    'restored',
    'poll running 10',
  ]);
  const outages = updates.filter((u) => u.type === 'outage');
  // Capped exponential backoff: the ceiling doubles, then stays at the cap.
  expect(outages.map((u) => (u.type === 'outage' ? u.retryInMs : 0))).toEqual([3, 7, 15, 19]);
  expect(new Set(outages.map((u) => (u.type === 'outage' ? u.since : '')))).toEqual(
    new Set([outages[0]?.type === 'outage' ? outages[0].since : '']),
  );
});

it('gives up at once on an error that waiting does not fix', async () => {
  const jobs = store(job('running', 10));
  jobs.fail(
    LonghaulAPIError.of({
      type: 'urn:longhaul:problem:not-found',
      title: 'Not Found',
      status: 404,
      detail: 'no such job',
      code: 'not-found',
    }),
  );
  await expect(waitForJob(deps(jobs, false), JOB_ID, fastRetry)).rejects.toMatchObject({ code: 'not-found' });
});

it('stops at its deadline during an outage, and when aborted, leaving the job alone', async () => {
  const down = store(job('running', 10));
  down.fail(...Array.from({ length: 1000 }, () => unavailable()));
  await expect(
    waitForJob(deps(down, false), JOB_ID, { timeoutMs: 50, pollIntervalMs: 1, ...fastRetry }),
  ).rejects.toBeInstanceOf(LonghaulTimeoutError);

  const jobs = store(job('running', 10));
  const controller = new AbortController();
  const waiting = waitForJob(deps(jobs), JOB_ID, { signal: controller.signal });
  await until(() => FakeSocket.instances.length === 1);
  FakeSocket.instances[0]!.emit('open');
  await until(() => jobs.reads.length === 1);
  controller.abort(new Error('enough'));
  await expect(waiting).rejects.toBeInstanceOf(LonghaulUserAbortError);
  await expect(waiting).rejects.toMatchObject({ code: 'aborted', cause: new Error('enough') });
  expect(FakeSocket.instances[0]!.closedByClient).toBe(true);
});

it('stops at needs_review by default, and at any status it is told to', async () => {
  const review = store(job('needs_review', 40));
  expect((await waitForJob(deps(review, false), JOB_ID)).status).toBe('needs_review');

  const running = store(job('running', 5));
  const waited = await waitForJob(deps(running, false), JOB_ID, { until: ['running'] });
  expect(waited.status).toBe('running');
});

describe('Longhaul.waitForJob', () => {
  const transport = (sent: { url: string; headers: Headers }[]) =>
    (async (input: string | URL | Request, init?: RequestInit) => {
      const url = String(input);
      sent.push({ url, headers: new Headers(init?.headers) });
      const body = url.endsWith('/stream-ticket')
        ? {
            ticket: `lhst_${'t'.repeat(43)}`,
            expiresAt: '2026-01-01T00:01:00.000Z',
            streamUrl: 'wss://stream.example.test/live',
          }
        : job('succeeded', 100);
      return new Response(JSON.stringify(body), {
        status: url.endsWith('/stream-ticket') ? 201 : 200,
        headers: { 'content-type': 'application/json' },
      });
    }) as typeof fetch;

  it("connects to the ticket's stream URL with the ticket; the key goes only in a header", async () => {
    const sent: { url: string; headers: Headers }[] = [];
    const client = new Longhaul({
      baseUrl: 'https://api.example.test/prod/',
      apiKey: 'key with/odd+chars',
      adminKey: 'the-admin-key',
      fetch: transport(sent),
      webSocket: FakeSocket,
    });
    const waiting = client.waitForJob(JOB_ID);
    await until(() => FakeSocket.instances.length === 1);
    FakeSocket.instances[0]!.emit('open');
    await waiting;
    expect(FakeSocket.instances[0]!.url).toBe(`wss://stream.example.test/live?ticket=lhst_${'t'.repeat(43)}`);
    expect(sent.map((s) => s.url)).toEqual([
      `https://api.example.test/prod/v1/jobs/${JOB_ID}/stream-ticket`,
      `https://api.example.test/prod/v1/jobs/${JOB_ID}`,
    ]);
    expect(sent[0]!.headers.get('x-api-key')).toBe('key with/odd+chars');
    for (const url of [...sent.map((s) => s.url), FakeSocket.instances[0]!.url]) {
      expect(url).not.toMatch(/key|admin/i);
    }
  });

  it('sends the admin key to no stream: waiting needs the tenant key, and says which option', async () => {
    const sent: { url: string; headers: Headers }[] = [];
    const admin = new Longhaul({
      baseUrl: 'http://127.0.0.1:1',
      adminKey: 'the-admin-key',
      apiKey: '',
      fetch: transport(sent),
      webSocket: FakeSocket,
    });
    // The SDK names its own option; the CLI maps it to LONGHAUL_API_KEY (unit/client-cli).
    await expect(admin.waitForJob(JOB_ID)).rejects.toMatchObject({
      message: expect.stringMatching(/apiKey option/),
      options: ['apiKey'],
    });
    expect(FakeSocket.instances).toHaveLength(0);
  });

  it('polls when told to use no WebSocket', async () => {
    const sent: { url: string; headers: Headers }[] = [];
    const polling = new Longhaul({
      baseUrl: 'http://127.0.0.1:1',
      apiKey: 'k',
      fetch: transport(sent),
      webSocket: null,
    });
    await polling.waitForJob(JOB_ID);
    expect(FakeSocket.instances).toHaveLength(0);
    expect(sent.map((s) => new URL(s.url).pathname)).toEqual([`/v1/jobs/${JOB_ID}`]);
  });
});
