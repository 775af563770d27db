import { Longhaul, LonghaulTimeoutError, type WatchUpdate } from '../../client';
import { FakeSocket, until } from './support/fake-socket';
import { jobBody, jsonResponse } from './support/scripted-fetch';

/**
 * client.watchJob: the updates of waitForJob as an async iterator, over the
 * live-progress WebSocket opened with a stream ticket, polling while it is
 * down, ending with the settled job; leaving the loop stops the watch.
 */

const JOB_ID = 'job_watchwatchwatchwatchwatchw';
const STREAM = 'wss://stream.example.test/live';

/** The API as the watch uses it: stream tickets, and GETs of a job whose state the test moves on. */
function api() {
  let job = jobBody(JOB_ID, 'running', 10);
  const requests: string[] = [];
  const fetch = (async (input: string | URL | Request, init?: RequestInit) => {
    const url = new URL(String(input));
    requests.push(`${init?.method ?? 'GET'} ${url.pathname}`);
    if (url.pathname === `/v1/jobs/${JOB_ID}/stream-ticket`) {
      return jsonResponse(
        { ticket: `tk${requests.length}`, expiresAt: '2030-01-01T00:00:00.000Z', streamUrl: STREAM },
        201,
      );
    }
    if (url.pathname === `/v1/jobs/${JOB_ID}`) return jsonResponse(job);
    throw new Error(`unexpected ${url.pathname}`);
  }) as typeof globalThis.fetch;
  return {
    fetch,
    requests,
    set: (status: string, progress: number) => {
      job = jobBody(JOB_ID, status, progress);
    },
  };
}

const live = (type: 'progress' | 'status', status: string, progress: number) =>
  JSON.stringify({ type, jobId: JOB_ID, status, progress, at: new Date().toISOString(), error: null });

/** What each update says, in a line. */
const line = (update: WatchUpdate): string =>
  update.type === 'progress'
    ? `${update.via} ${update.status} ${update.progress}`
    : update.type === 'stream'
      ? `stream ${update.state}`
      : update.type === 'settled'
        ? `settled ${update.job.status}`
        : update.type;

beforeEach(() => {
  FakeSocket.instances = [];
});

it('yields live progress from the stream, then the settled job, and ends', async () => {
  const server = api();
  const longhaul = new Longhaul({
    baseUrl: 'https://api.example.test',
    apiKey: 'k',
    fetch: server.fetch,
    webSocket: FakeSocket,
  });
  const seen: string[] = [];
  const watching = (async () => {
    for await (const update of longhaul.watchJob(JOB_ID)) seen.push(line(update));
  })();
  await until(() => FakeSocket.instances.length === 1);
  const socket = FakeSocket.instances[0] as FakeSocket;
  expect(socket.url).toBe(`${STREAM}?ticket=tk1`);
  socket.emit('open');
  await until(() => seen.includes('poll running 10'));
  socket.emit('message', live('progress', 'running', 40));
  socket.emit('message', live('progress', 'running', 80));
  server.set('succeeded', 100);
  socket.emit('message', live('status', 'succeeded', 100));
  await watching;
  expect(seen).toEqual([
    'stream open',
    'poll running 10',
    'stream running 40',
    'stream running 80',
    'stream succeeded 100',
    'settled succeeded',
  ]);
  expect(socket.closedByClient).toBe(true);
});

it('polls when there is no WebSocket, and stops the watch when the loop is left', async () => {
  const server = api();
  /** The signal of each wait between polls: aborted once the watch has stopped. */
  const waits: AbortSignal[] = [];
  const longhaul = new Longhaul({
    baseUrl: 'https://api.example.test',
    apiKey: 'k',
    fetch: server.fetch,
    webSocket: null,
    sleep: (ms, signal) =>
      new Promise<void>((resolve, reject) => {
        if (signal) waits.push(signal);
        const timer = setTimeout(resolve, ms);
        signal?.addEventListener('abort', () => {
          clearTimeout(timer);
          reject(signal.reason);
        });
      }),
  });
  const seen: string[] = [];
  for await (const update of longhaul.watchJob(JOB_ID, { pollIntervalMs: 1 })) {
    seen.push(line(update));
    if (seen.length === 1) server.set('running', 50);
    if (update.type === 'progress' && update.progress === 50) break;
  }
  expect(seen).toEqual(['poll running 10', 'poll running 50']);
  // Leaving the loop aborted the wait between polls: no further GET can follow.
  await until(() => waits.length > 0 && waits.every((signal) => signal.aborted));
  expect(server.requests).toEqual([`GET /v1/jobs/${JOB_ID}`, `GET /v1/jobs/${JOB_ID}`]);
});

it('throws the wait’s LonghaulTimeoutError from the loop', async () => {
  const server = api();
  const longhaul = new Longhaul({
    baseUrl: 'https://api.example.test',
    apiKey: 'k',
    fetch: server.fetch,
    webSocket: null,
  });
  const seen: string[] = [];
  const looping = (async () => {
    for await (const update of longhaul.watchJob(JOB_ID, { timeoutMs: 30, pollIntervalMs: 5 })) {
      seen.push(line(update));
    }
  })();
  await expect(looping).rejects.toBeInstanceOf(LonghaulTimeoutError);
  expect(seen).toEqual(['poll running 10']);
});
