import type { JobWaiting } from './api-types';
import { abortError, LonghaulAPIError, LonghaulConnectionError, LonghaulTimeoutError } from './errors';
import { backoffDelayMs, defaultRetryOptions, type RetryOptions } from './retry';
import { type Job, type JobStatus, type LiveMessage, SETTLED_STATUSES } from './types';

/** The parts of the WHATWG WebSocket the SDK uses (Node's global one, `ws`, a browser's). */
export interface WebSocketLike {
  addEventListener(
    type: 'open' | 'message' | 'error' | 'close',
    listener: (event: { data?: unknown; code?: number }) => void,
  ): void;
  send(data: string): void;
  close(code?: number, reason?: string): void;
}
export type WebSocketConstructor = new (url: string) => WebSocketLike;

/** The job moved: its status changed or its progress went forward. */
export interface ProgressUpdate {
  readonly type: 'progress';
  readonly jobId: string;
  readonly status: JobStatus;
  readonly progress: number;
  readonly at: string;
  /** Where the update came from: a WebSocket message or a GET of the job. */
  readonly via: 'stream' | 'poll';
  /** Why the queued job waits, as a read of it said (`Job.waiting`); absent from live messages. */
  readonly waiting?: JobWaiting;
}

/** The API could not be reached (connection error, 5xx, 429); the wait goes on and retries. */
export interface OutageUpdate {
  readonly type: 'outage';
  readonly jobId: string;
  /** What the last attempt ran into. */
  readonly error: Error;
  /** When the outage began (ISO-8601). */
  readonly since: string;
  /** The next attempt is in this many milliseconds. */
  readonly retryInMs: number;
}

/** The API answers again after an outage. */
export interface RestoredUpdate {
  readonly type: 'restored';
  readonly jobId: string;
  /** How long the outage lasted. */
  readonly downMs: number;
}

/** The live-progress socket opened, or closed and will be reopened after `retryInMs`. */
export interface StreamUpdate {
  readonly type: 'stream';
  readonly jobId: string;
  readonly state: 'open' | 'closed';
  readonly retryInMs?: number;
}

/** What a wait reports on its way. */
export type WaitUpdate = ProgressUpdate | OutageUpdate | RestoredUpdate | StreamUpdate;

/** The last thing a watch yields: the job as it settled (or reached a status of `until`). */
export interface SettledUpdate {
  readonly type: 'settled';
  readonly jobId: string;
  readonly job: Job;
}

/** What `watchJob` yields: every update of a wait, then the settled job. */
export type WatchUpdate = WaitUpdate | SettledUpdate;

export interface WaitOptions {
  /**
   * Called whenever the status changes or the progress moves forward (never
   * with an older progress), and when the API becomes unreachable or reachable
   * again, or the live socket opens or closes: switch on `update.type`.
   */
  readonly onProgress?: (update: WaitUpdate) => void;
  /** Stops waiting (the job itself goes on); the promise rejects with a LonghaulUserAbortError (`cause`: the signal's reason). */
  readonly signal?: AbortSignal;
  /**
   * Gives up waiting after this long, however things stand (the job goes on);
   * the promise rejects with a LonghaulTimeoutError. @default no deadline
   */
  readonly timeoutMs?: number;
  /** Between GETs while the socket is down. @default 1000 */
  readonly pollIntervalMs?: number;
  /**
   * Between GETs while the socket is open, in case a live message was lost
   * (they are best effort; the job is the truth). @default 10000
   */
  readonly livePollIntervalMs?: number;
  /** A socket that has not opened by then counts as failed. @default 5000 */
  readonly connectTimeoutMs?: number;
  /**
   * How often the client pings an open socket, so no idle timeout closes it
   * (API Gateway closes WebSockets idle for 10 minutes). @default 240000
   */
  readonly keepAliveMs?: number;
  /** Statuses that end the wait. @default succeeded, failed, canceled, needs_review */
  readonly until?: readonly JobStatus[];
  /** Backoff between attempts while the API is unreachable, and between socket reconnects. */
  readonly retry?: Pick<RetryOptions, 'baseDelayMs' | 'maxDelayMs'>;
}

export interface WaitDeps {
  /** One GET of the job; no retries of its own (the wait retries). */
  readonly getJob: (jobId: string, signal: AbortSignal) => Promise<Job>;
  /** The URL of a socket for this job (asks for a fresh stream ticket); undefined: poll only. */
  readonly socketUrl: ((jobId: string, signal: AbortSignal) => Promise<string>) | undefined;
  readonly WebSocket: WebSocketConstructor | undefined;
  readonly sleep: (ms: number, signal?: AbortSignal) => Promise<void>;
  readonly random: () => number;
}

/**
 * Whether an error while waiting is an outage to ride out: no answer, a 5xx
 * or a 429. Anything else (401, 404, …) will not change by waiting.
 */
export function isTemporary(error: unknown): boolean {
  if (error instanceof LonghaulConnectionError) return true;
  if (error instanceof LonghaulAPIError) return error.status >= 500 || error.status === 429;
  return false;
}

/**
 * Resolves once the job reaches one of `until`. Follows the job over its
 * live-progress socket, reopened with backoff whenever it drops, and polls
 * only while the socket is down. Outages of the API (connection errors, 5xx,
 * 429) do not end the wait: it retries with capped backoff until the job
 * settles, the signal aborts or the deadline passes.
 */
export async function waitForJob(deps: WaitDeps, jobId: string, options: WaitOptions = {}): Promise<Job> {
  const deadline = options.timeoutMs === undefined ? undefined : AbortSignal.timeout(options.timeoutMs);
  try {
    return await follow(deps, jobId, options, deadline);
  } catch (error) {
    // Whatever was under way when the wait ended (a GET, a sleep), the wait says why it ended.
    if (deadline?.aborted && !options.signal?.aborted) {
      throw new LonghaulTimeoutError(
        `Stopped waiting for ${jobId} after ${options.timeoutMs} ms; the job goes on.`,
        { cause: deadline.reason },
      );
    }
    if (options.signal?.aborted) throw abortError(options.signal, `Waiting for ${jobId}`);
    throw error;
  }
}

async function follow(
  deps: WaitDeps,
  jobId: string,
  options: WaitOptions,
  deadline: AbortSignal | undefined,
): Promise<Job> {
  const present = [options.signal, deadline].filter((s): s is AbortSignal => s !== undefined);
  const stop = new AbortController();
  const signal = AbortSignal.any([...present, stop.signal]);
  signal.throwIfAborted();
  const until = new Set(options.until ?? SETTLED_STATUSES);
  const pollIntervalMs = options.pollIntervalMs ?? 1000;
  const livePollIntervalMs = options.livePollIntervalMs ?? 10_000;
  const backoff = { ...defaultRetryOptions, maxDelayMs: 15_000, ...options.retry };

  let last: { status: JobStatus; progress: number; waiting: string } | undefined;
  const emit = (update: WaitUpdate) => options.onProgress?.(update);
  const report = (update: Omit<ProgressUpdate, 'type' | 'jobId'>) => {
    // A live message knows nothing of why a job waits: only a read changes what was said of it.
    const waiting =
      update.via === 'poll' ? JSON.stringify(update.waiting ?? null) : (last?.waiting ?? 'null');
    if (
      last &&
      last.status === update.status &&
      update.progress <= last.progress &&
      last.waiting === waiting
    ) {
      return;
    }
    last = { status: update.status, progress: update.progress, waiting };
    emit({ type: 'progress', jobId, ...update });
  };

  /** Something happened that the loop should look at now (a settled status, a closed socket). */
  const wakeUp = new Wakeup();
  /** Set once the first read is under way: a (re)opened socket then asks for one more read. */
  let reading = false;
  const live =
    deps.socketUrl && deps.WebSocket
      ? new LiveSocket({
          jobId,
          url: deps.socketUrl,
          WebSocket: deps.WebSocket,
          sleep: deps.sleep,
          random: deps.random,
          backoff,
          connectTimeoutMs: options.connectTimeoutMs ?? 5000,
          keepAliveMs: options.keepAliveMs ?? 240_000,
          signal,
          onMessage: (message) => {
            report({ status: message.status, progress: message.progress, at: message.at, via: 'stream' });
            if (message.type === 'status' && until.has(message.status)) wakeUp.ring();
          },
          onState: (state, retryInMs) => {
            emit({ type: 'stream', jobId, state, ...(retryInMs === undefined ? {} : { retryInMs }) });
            // Reopened or dropped: read the job now, so a change made while the socket was down is not missed.
            if (reading) wakeUp.ring();
          },
        })
      : undefined;

  let outage: { since: number; attempt: number } | undefined;
  try {
    live?.start();
    // Once the socket is open or has failed its first try, so a change between the two is seen by one or the other.
    await live?.firstAttempt;
    reading = true;
    for (;;) {
      let job: Job | undefined;
      try {
        job = await deps.getJob(jobId, signal);
      } catch (error) {
        signal.throwIfAborted();
        if (!isTemporary(error)) throw error;
        outage ??= { since: Date.now(), attempt: 0 };
        const retryInMs = Math.max(pollIntervalMs, backoffDelayMs(outage.attempt++, backoff, deps.random));
        emit({
          type: 'outage',
          jobId,
          error: error as Error,
          since: new Date(outage.since).toISOString(),
          retryInMs,
        });
        await deps.sleep(retryInMs, signal);
        continue;
      }
      if (outage) {
        emit({ type: 'restored', jobId, downMs: Date.now() - outage.since });
        outage = undefined;
      }
      report({
        status: job.status,
        progress: job.progress,
        at: job.updatedAt,
        via: 'poll',
        ...(job.waiting ? { waiting: job.waiting } : {}),
      });
      if (until.has(job.status)) return job;
      await wakeUp.wait(live?.isOpen() ? livePollIntervalMs : pollIntervalMs, signal, deps.sleep);
    }
  } finally {
    stop.abort();
    live?.close();
  }
}

/** A flag the waiting loop sleeps on: set, it ends the current sleep (or the next one at once). */
class Wakeup {
  private pending = false;
  private wake: (() => void) | undefined;

  ring(): void {
    this.pending = true;
    this.wake?.();
  }

  async wait(
    ms: number,
    signal: AbortSignal,
    sleep: (ms: number, signal?: AbortSignal) => Promise<void>,
  ): Promise<void> {
    if (!this.pending) {
      const early = new AbortController();
      this.wake = () => early.abort();
      await sleep(ms, AbortSignal.any([signal, early.signal])).catch((error: unknown) => {
        if (signal.aborted) throw error;
      });
      this.wake = undefined;
    }
    this.pending = false;
  }
}

interface LiveSocketOptions {
  readonly jobId: string;
  readonly url: (jobId: string, signal: AbortSignal) => Promise<string>;
  readonly WebSocket: WebSocketConstructor;
  readonly sleep: (ms: number, signal?: AbortSignal) => Promise<void>;
  readonly random: () => number;
  readonly backoff: Required<RetryOptions>;
  readonly connectTimeoutMs: number;
  readonly keepAliveMs: number;
  readonly signal: AbortSignal;
  readonly onMessage: (message: LiveMessage) => void;
  readonly onState: (state: 'open' | 'closed', retryInMs?: number) => void;
}

/**
 * The job's live-progress socket, kept open for as long as the wait lasts:
 * pinged so that idle timeouts leave it alone, and reopened with backoff
 * (with a fresh ticket each time) when it closes, whoever closed it.
 */
class LiveSocket {
  private open = false;
  private socket: WebSocketLike | undefined;
  private resolveFirst: (() => void) | undefined;
  /** Settles once the first connection opened or failed. */
  readonly firstAttempt = new Promise<void>((resolve) => {
    this.resolveFirst = resolve;
  });

  constructor(private readonly options: LiveSocketOptions) {}

  isOpen(): boolean {
    return this.open;
  }

  start(): void {
    this.run().catch(() => undefined);
  }

  close(): void {
    this.open = false;
    this.resolveFirst?.();
    try {
      this.socket?.close(1000);
    } catch {
      // Already closing.
    }
  }

  private async run(): Promise<void> {
    const { signal, backoff } = this.options;
    let failures = 0;
    while (!signal.aborted) {
      const opened = await this.connectOnce();
      this.resolveFirst?.();
      if (signal.aborted) return;
      failures = opened ? 0 : failures + 1;
      const retryInMs = Math.max(250, backoffDelayMs(failures, backoff, this.options.random));
      if (opened) this.options.onState('closed', retryInMs);
      await this.options.sleep(retryInMs, signal).catch(() => undefined);
    }
  }

  /** One connection, from ticket to close; resolves whether it ever opened once it is over. */
  private async connectOnce(): Promise<boolean> {
    const { signal } = this.options;
    let url: string;
    try {
      url = await this.options.url(this.options.jobId, signal);
    } catch {
      return false;
    }
    if (signal.aborted) return false;
    let socket: WebSocketLike;
    try {
      socket = new this.options.WebSocket(url);
    } catch {
      return false;
    }
    this.socket = socket;
    return new Promise<boolean>((resolve) => {
      let opened = false;
      let keepAlive: ReturnType<typeof setInterval> | undefined;
      const end = () => {
        clearTimeout(connectTimer);
        clearInterval(keepAlive);
        signal.removeEventListener('abort', end);
        const wasOpen = this.open;
        this.open = false;
        try {
          socket.close(1000);
        } catch {
          // Already closing.
        }
        if (wasOpen) this.resolveFirst?.();
        resolve(opened);
      };
      const connectTimer = setTimeout(end, this.options.connectTimeoutMs);
      signal.addEventListener('abort', end, { once: true });
      socket.addEventListener('open', () => {
        if (signal.aborted) return;
        clearTimeout(connectTimer);
        opened = true;
        this.open = true;
        keepAlive = setInterval(() => {
          try {
            socket.send('ping');
          } catch {
            end();
          }
        }, this.options.keepAliveMs);
        keepAlive.unref?.();
        this.resolveFirst?.();
        this.options.onState('open');
      });
      socket.addEventListener('error', end);
      socket.addEventListener('close', end);
      socket.addEventListener('message', (event) => {
        const message = parseMessage(event.data);
        if (message && message.jobId === this.options.jobId) this.options.onMessage(message);
      });
    });
  }
}

function parseMessage(data: unknown): LiveMessage | undefined {
  const text =
    typeof data === 'string'
      ? data
      : data instanceof ArrayBuffer
        ? new TextDecoder().decode(data)
        : undefined;
  if (text === undefined) return undefined;
  try {
    const message = JSON.parse(text) as Partial<LiveMessage>;
    if (
      (message.type === 'progress' || message.type === 'status') &&
      typeof message.jobId === 'string' &&
      typeof message.status === 'string' &&
      typeof message.progress === 'number' &&
      typeof message.at === 'string'
    ) {
      return message as LiveMessage;
    }
  } catch {
    // Not a message of ours.
  }
  return undefined;
}

/**
 * A wait's updates as an async iterator: `for await (const update of
 * updatesOf(wait, options))` yields each update as `onProgress` would get
 * it, then a `settled` update with the job, and ends. A wait that fails
 * throws from the loop; leaving the loop early (break, return, a throw)
 * stops the wait, closing its socket.
 */
export async function* updatesOf(
  wait: (options: WaitOptions) => Promise<Job>,
  options: Omit<WaitOptions, 'onProgress'>,
): AsyncGenerator<WatchUpdate, Job, undefined> {
  const stop = new AbortController();
  const queue: WatchUpdate[] = [];
  let outcome: { readonly job: Job } | { readonly error: unknown } | undefined;
  let wake: (() => void) | undefined;
  const signal = options.signal ? AbortSignal.any([options.signal, stop.signal]) : stop.signal;
  wait({
    ...options,
    signal,
    onProgress: (update) => {
      queue.push(update);
      wake?.();
    },
  }).then(
    (job) => {
      outcome = { job };
      wake?.();
    },
    (error: unknown) => {
      outcome = { error };
      wake?.();
    },
  );
  try {
    for (;;) {
      const update = queue.shift();
      if (update) {
        yield update;
        continue;
      }
      if (outcome && 'error' in outcome) throw outcome.error;
      if (outcome) {
        yield { type: 'settled', jobId: outcome.job.id, job: outcome.job };
        return outcome.job;
      }
      await new Promise<void>((resolve) => {
        wake = resolve;
      });
      wake = undefined;
    }
  } finally {
    stop.abort();
  }
}
