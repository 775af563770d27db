import { type Job, type JobStatus, type LiveMessage, SETTLED_STATUSES } from './types';

/** The parts of the WHATWG WebSocket the SDK uses (Node's global one, `ws`, a browser's). */
export interface WebSocketLike {
  addEventListener(
    type: 'open' | 'message' | 'error' | 'close',
    listener: (event: { data?: unknown }) => void,
  ): void;
  close(code?: number, reason?: string): void;
}
export type WebSocketConstructor = new (url: string) => WebSocketLike;

export interface ProgressUpdate {
  readonly jobId: string;
  readonly status: JobStatus;
  readonly progress: number;
  readonly at: string;
  /** Where the update came from: a WebSocket message or a GET of the job. */
  readonly via: 'stream' | 'poll';
}

export interface WaitOptions {
  /** Called whenever the status changes or the progress moves forward; never with an older progress. */
  readonly onProgress?: (update: ProgressUpdate) => void;
  /** Stops waiting (the job itself goes on); the promise rejects with the signal's reason. */
  readonly signal?: AbortSignal;
  /** Between GETs while polling. @default 1000 */
  readonly pollIntervalMs?: number;
  /**
   * Between GETs while the socket is open, in case a live message was lost
   * (they are best effort; the job is the truth). @default 10000
   */
  readonly livePollIntervalMs?: number;
  /** A socket that has not opened by then counts as refused. @default 5000 */
  readonly connectTimeoutMs?: number;
  /** Statuses that end the wait. @default succeeded, failed, canceled, needs_review */
  readonly until?: readonly JobStatus[];
}

export interface WaitDeps {
  readonly getJob: (jobId: string, signal: AbortSignal | undefined) => Promise<Job>;
  /** Undefined: no live progress, poll only. */
  readonly socketUrl: string | undefined;
  readonly WebSocket: WebSocketConstructor | undefined;
  readonly sleep: (ms: number, signal?: AbortSignal) => Promise<void>;
}

/** An open live-progress socket. */
interface Live {
  /**
   * Resolves once a status message announced a settled status or the socket
   * closed (at once if that happened since the last call), or after `ms`.
   */
  readonly next: (ms: number) => Promise<void>;
  readonly closed: () => boolean;
  readonly close: () => void;
}

export async function waitForJob(deps: WaitDeps, jobId: string, options: WaitOptions = {}): Promise<Job> {
  const { signal } = options;
  signal?.throwIfAborted();
  const until = new Set(options.until ?? SETTLED_STATUSES);
  const pollIntervalMs = options.pollIntervalMs ?? 1000;
  const livePollIntervalMs = options.livePollIntervalMs ?? 10_000;
  let last: { status: JobStatus; progress: number } | undefined;
  const report = (update: ProgressUpdate) => {
    if (last && last.status === update.status && update.progress <= last.progress) return;
    last = { status: update.status, progress: update.progress };
    options.onProgress?.(update);
  };
  const observe = async (): Promise<Job> => {
    const job = await deps.getJob(jobId, signal);
    report({ jobId, status: job.status, progress: job.progress, at: job.updatedAt, via: 'poll' });
    return job;
  };

  const live =
    deps.socketUrl && deps.WebSocket
      ? await openLive(deps, deps.WebSocket, deps.socketUrl, {
          jobId,
          until,
          report,
          connectTimeoutMs: options.connectTimeoutMs ?? 5000,
          signal,
        })
      : undefined;
  try {
    // Read the job only once subscribed, so a change between the two is seen by one or the other.
    let job = await observe();
    while (!until.has(job.status)) {
      if (live && !live.closed()) {
        await live.next(livePollIntervalMs);
      } else {
        await deps.sleep(pollIntervalMs, signal);
      }
      signal?.throwIfAborted();
      job = await observe();
    }
    return job;
  } finally {
    live?.close();
  }
}

/** Opens the socket; undefined if it is refused, fails or does not open in time. */
function openLive(
  deps: Pick<WaitDeps, 'sleep'>,
  WebSocketClass: WebSocketConstructor,
  url: string,
  watch: {
    readonly jobId: string;
    readonly until: ReadonlySet<JobStatus>;
    readonly report: (update: ProgressUpdate) => void;
    readonly connectTimeoutMs: number;
    readonly signal: AbortSignal | undefined;
  },
): Promise<Live | undefined> {
  const { jobId, until, report, signal } = watch;
  return new Promise((resolve) => {
    let socket: WebSocketLike;
    try {
      socket = new WebSocketClass(url);
    } catch {
      resolve(undefined);
      return;
    }
    let opened = false;
    let closed = false;
    /** Something happened that the waiter has not looked at yet. */
    let pending = false;
    let wake: (() => void) | undefined;
    const notify = () => {
      pending = true;
      wake?.();
    };
    const live: Live = {
      async next(ms) {
        if (!pending) {
          // Waiting ends on a notification or after `ms`; the timer is cleared either way.
          const stop = new AbortController();
          wake = () => stop.abort();
          const waitSignal = signal ? AbortSignal.any([signal, stop.signal]) : stop.signal;
          await deps.sleep(ms, waitSignal).catch((error: unknown) => {
            if (signal?.aborted) throw error;
          });
          wake = undefined;
        }
        pending = false;
      },
      closed: () => closed,
      close: () => {
        closed = true;
        clearTimeout(timer);
        signal?.removeEventListener('abort', onAbort);
        try {
          socket.close(1000);
        } catch {
          // Already closing.
        }
      },
    };
    const fail = () => {
      if (!opened) {
        live.close();
        resolve(undefined);
        return;
      }
      closed = true;
      notify();
    };
    const timer = setTimeout(fail, watch.connectTimeoutMs);
    const onAbort = () => fail();
    signal?.addEventListener('abort', onAbort, { once: true });
    socket.addEventListener('open', () => {
      clearTimeout(timer);
      if (closed) return;
      opened = true;
      resolve(live);
    });
    socket.addEventListener('error', fail);
    socket.addEventListener('close', fail);
    socket.addEventListener('message', (event) => {
      const message = parseMessage(event.data);
      if (!message || message.jobId !== jobId) return;
      report({ jobId, status: message.status, progress: message.progress, at: message.at, via: 'stream' });
      if (message.type === 'status' && until.has(message.status)) notify();
    });
  });
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
