import { type Job, type JobStatus, Longhaul, type ProgressUpdate } from '../../client';
import { sleep } from '../../client/retry';
import { type WebSocketLike, waitForJob } from '../../client/wait';

/**
 * waitForJob over a scripted WebSocket and a scripted job store: live
 * progress, the settling status message, and the fall back to polling when
 * the socket is refused, never opens or drops.
 */

type Listener = (event: { data?: unknown }) => void;

/** A WebSocket the test drives: open, send messages, drop, refuse. */
class FakeSocket implements WebSocketLike {
  static instances: FakeSocket[] = [];
  readonly listeners = new Map<string, Listener[]>();
  closedByClient = false;

  constructor(readonly url: string) {
    FakeSocket.instances.push(this);
  }

  addEventListener(type: string, listener: Listener): void {
    this.listeners.set(type, [...(this.listeners.get(type) ?? []), listener]);
  }

  close(): void {
    this.closedByClient = true;
  }

  emit(type: 'open' | 'error' | 'close' | 'message', data?: unknown): void {
    for (const listener of this.listeners.get(type) ?? []) listener({ data });
  }

  send(message: Record<string, unknown>): void {
    this.emit('message', JSON.stringify({ jobId: JOB_ID, at: new Date().toISOString(), ...message }));
  }
}

const JOB_ID = 'job_waitwaitwaitwaitwaitwaitwa';

const job = (status: JobStatus, progress: number): Job => ({
  id: JOB_ID,
  type: 'image.generate',
  status,
  progress,
  input: { prompt: 'x' },
  result:
    status === 'succeeded' ? { outputUrl: 'https://out.example.test/i.png', contentType: 'image/png' } : null,
  error: null,
  attempts: 1,
  idempotencyKey: 'k',
  createdAt: '2026-01-01T00:00:00.000Z',
  updatedAt: '2026-01-01T00:00:01.000Z',
});

/** A job store read: each GET answers the current state, which the test moves on. */
function store(initial: Job) {
  let current = initial;
  const reads: string[] = [];
  return {
    set: (next: Job) => {
      current = next;
    },
    reads,
    getJob: async (id: string) => {
      reads.push(`${current.status} ${current.progress}`);
      expect(id).toBe(JOB_ID);
      return current;
    },
  };
}

const until = async (condition: () => boolean) => {
  const deadline = Date.now() + 2000;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error('condition not met within 2 s');
    await sleep(2);
  }
};

const summary = (updates: ProgressUpdate[]) => updates.map((u) => `${u.via} ${u.status} ${u.progress}`);

beforeEach(() => {
  FakeSocket.instances = [];
});

it('reports live progress and resolves with the job once a settled status arrives', async () => {
  const jobs = store(job('queued', 0));
  const updates: ProgressUpdate[] = [];
  const waiting = waitForJob(
    { getJob: jobs.getJob, socketUrl: 'ws://stream.test/v1/stream?x', WebSocket: FakeSocket, sleep },
    JOB_ID,
    { onProgress: (u) => updates.push(u), pollIntervalMs: 5 },
  );
  await until(() => FakeSocket.instances.length === 1);
  const socket = FakeSocket.instances[0]!;
  socket.emit('open');
  await until(() => updates.length === 1);
  socket.send({ type: 'status', status: 'running', progress: 0, error: null });
  socket.send({ type: 'progress', status: 'running', progress: 40 });
  socket.send({ type: 'progress', status: 'running', progress: 40 });
  socket.send({ type: 'progress', status: 'running', progress: 80 });
  socket.send({ type: 'progress', status: 'running', progress: 60 });
  socket.send({ type: 'progress', jobId: 'job_someoneelse', status: 'running', progress: 99 });
  socket.emit('message', 'not json');
  jobs.set(job('succeeded', 100));
  socket.send({ type: 'status', status: 'succeeded', progress: 100, error: null });

  const finished = await waiting;
  expect(finished).toEqual(job('succeeded', 100));
  expect(summary(updates)).toEqual([
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

it.each([
  ['is refused', (socket: FakeSocket) => socket.emit('error')],
  ['closes before opening', (socket: FakeSocket) => socket.emit('close')],
  [
    'opens and then drops',
    (socket: FakeSocket) => {
      socket.emit('open');
      socket.emit('close');
    },
  ],
])('polls when the socket %s', async (_, misbehave) => {
  const jobs = store(job('queued', 0));
  const updates: ProgressUpdate[] = [];
  const waiting = waitForJob(
    { getJob: jobs.getJob, socketUrl: 'ws://stream.test/v1/stream', WebSocket: FakeSocket, sleep },
    JOB_ID,
    { onProgress: (u) => updates.push(u), pollIntervalMs: 5 },
  );
  await until(() => FakeSocket.instances.length === 1);
  misbehave(FakeSocket.instances[0]!);
  await until(() => jobs.reads.length >= 2);
  jobs.set(job('running', 50));
  await until(() => updates.some((u) => u.progress === 50));
  jobs.set(job('succeeded', 100));

  expect((await waiting).status).toBe('succeeded');
  expect(summary(updates)).toEqual(['poll queued 0', 'poll running 50', 'poll succeeded 100']);
  expect(FakeSocket.instances).toHaveLength(1);
});

it('polls when the socket never opens', async () => {
  const jobs = store(job('succeeded', 100));
  const started = Date.now();
  const finished = await waitForJob(
    { getJob: jobs.getJob, socketUrl: 'ws://stream.test/v1/stream', WebSocket: FakeSocket, sleep },
    JOB_ID,
    { connectTimeoutMs: 30 },
  );
  expect(finished.status).toBe('succeeded');
  expect(Date.now() - started).toBeGreaterThanOrEqual(25);
  expect(FakeSocket.instances[0]?.closedByClient).toBe(true);
});

it('stops waiting when aborted, leaving the job alone', async () => {
  const jobs = store(job('running', 10));
  const controller = new AbortController();
  const waiting = waitForJob(
    { getJob: jobs.getJob, socketUrl: 'ws://stream.test/v1/stream', WebSocket: FakeSocket, sleep },
    JOB_ID,
    { signal: controller.signal },
  );
  await until(() => FakeSocket.instances.length === 1);
  FakeSocket.instances[0]!.emit('open');
  await until(() => jobs.reads.length === 1);
  controller.abort(new Error('enough'));
  await expect(waiting).rejects.toThrow('enough');
  expect(FakeSocket.instances[0]!.closedByClient).toBe(true);
});

it('stops at needs_review by default, and at any status it is told to', async () => {
  const review = store(job('needs_review', 40));
  expect(
    (await waitForJob({ getJob: review.getJob, socketUrl: undefined, WebSocket: undefined, sleep }, JOB_ID))
      .status,
  ).toBe('needs_review');

  const running = store(job('running', 5));
  const waited = await waitForJob(
    { getJob: running.getJob, socketUrl: undefined, WebSocket: undefined, sleep },
    JOB_ID,
    { until: ['running'] },
  );
  expect(waited.status).toBe('running');
});

it('connects to the stream URL with the job id and the API key', async () => {
  const transport = (async () =>
    new Response(JSON.stringify(job('succeeded', 100)), {
      status: 200,
      headers: { 'content-type': 'application/json' },
    })) as typeof fetch;
  const client = new Longhaul({
    baseUrl: 'https://api.example.test/prod/',
    apiKey: 'key with/odd+chars',
    fetch: transport,
    webSocket: FakeSocket,
  });
  expect(client.streamUrl).toBe('wss://api.example.test/prod/v1/stream');
  const waiting = client.waitForJob(JOB_ID);
  await until(() => FakeSocket.instances.length === 1);
  FakeSocket.instances[0]!.emit('open');
  await waiting;
  expect(FakeSocket.instances[0]!.url).toBe(
    `wss://api.example.test/prod/v1/stream?jobId=${JOB_ID}&apiKey=key%20with%2Fodd%2Bchars`,
  );

  const polling = new Longhaul({
    baseUrl: 'http://127.0.0.1:1',
    apiKey: 'k',
    fetch: transport,
    webSocket: null,
  });
  await polling.waitForJob(JOB_ID);
  expect(FakeSocket.instances).toHaveLength(1);
});
