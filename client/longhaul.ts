import { randomUUID } from 'node:crypto';
import {
  LonghaulConnectionError,
  LonghaulError,
  LonghaulUsageError,
  type UnexpectedResponse,
} from './errors';
import {
  defaultRetryOptions,
  sleep as defaultSleep,
  parseRetryAfter,
  type RetryOptions,
  retryDelayMs,
} from './retry';
import { type OperationId, operations } from './routes';
import {
  type AdminJob,
  type CreateJobRequest,
  FILE_INPUT_FIELD,
  type FileInput,
  type Job,
  type JobStatus,
  type Page,
  type Problem,
  type RedriveStarted,
  type Resolution,
  type TimelineEvent,
  type UploadTicket,
} from './types';
import { type WaitOptions, type WebSocketConstructor, waitForJob } from './wait';

/** What fetch accepts as a body (the DOM's BodyInit). */
type RequestBody = NonNullable<RequestInit['body']>;

/** Largest file sent as a multipart part; larger files go through a presigned upload. */
export const MULTIPART_FILE_LIMIT_BYTES = 4 * 1024 * 1024;

export interface LonghaulOptions {
  /** The API's base URL: the stack output ApiUrl, or `http://127.0.0.1:3000` locally. */
  readonly baseUrl: string;
  /** A tenant's API key, for the job and upload routes. */
  readonly apiKey?: string;
  /** The operator key, for the admin routes. */
  readonly adminKey?: string;
  /**
   * The live-progress WebSocket: the stack output StreamUrl in AWS. Defaults
   * to `/v1/stream` on the API's host, where the local stack serves it.
   */
  readonly streamUrl?: string;
  /** The fetch to send requests with (a proxy, a test transport). @default globalThis.fetch */
  readonly fetch?: typeof fetch;
  /** The WebSocket class for live progress; null to always poll. @default globalThis.WebSocket */
  readonly webSocket?: WebSocketConstructor | null;
  readonly retry?: RetryOptions;
  /** Each attempt of a request is abandoned (and, if safe, retried) after this long. @default 30000 */
  readonly timeoutMs?: number;
  /** Seams for tests: the random source of the jitter and the wait between attempts. */
  readonly random?: () => number;
  readonly sleep?: (ms: number, signal?: AbortSignal) => Promise<void>;
}

export interface RequestOptions {
  /** Aborts the request, its retries and their waits. */
  readonly signal?: AbortSignal;
}

/**
 * One thing a user asked for, such as one click on "Generate". It carries the
 * Idempotency-Key, minted when the action is created, that every attempt and
 * retry of its request sends: however often the request reaches the server,
 * it makes one job and one provider charge.
 */
export class UserAction {
  /** The presigned upload of this action's file, made once however often the request is retried. */
  upload: Promise<UploadTicket> | undefined;

  constructor(
    readonly idempotencyKey: string = randomUUID(),
    /** True when the key came from an earlier run (resuming); false when minted here. */
    readonly resumed: boolean = false,
  ) {
    if (!/^[\x21-\x7e]{1,255}$/.test(idempotencyKey)) {
      throw new LonghaulUsageError('An idempotency key is 1 to 255 visible ASCII characters.');
    }
  }
}

export interface CreatedJob {
  readonly job: Job;
  /** The server had seen this action before and repeated its first answer (`Idempotent-Replayed: true`). */
  readonly replayed: boolean;
  /** The job's URL, as the Location header gave it. */
  readonly location: string;
}

export interface ListQuery {
  readonly status?: JobStatus;
  /** Page size, 1..100. */
  readonly limit?: number;
  readonly cursor?: string;
}

export interface ReviewQuery {
  /** Active jobs of this status. @default 'needs_review' */
  readonly status?: 'queued' | 'running' | 'needs_review';
  readonly limit?: number;
  readonly cursor?: string;
}

interface Answer {
  readonly status: number;
  readonly headers: Headers;
  readonly body: unknown;
}

interface Call {
  readonly path?: Record<string, string>;
  readonly query?: Record<string, string | number | undefined>;
  readonly headers?: Record<string, string>;
  /** Called once per attempt, so every attempt sends a fresh body. */
  readonly body?: () => RequestBody;
  readonly signal?: AbortSignal | undefined;
}

/** The Longhaul API client. */
export class Longhaul {
  readonly baseUrl: string;
  readonly streamUrl: string;
  private readonly fetch: typeof fetch;
  private readonly retry: Required<RetryOptions>;
  private readonly random: () => number;
  private readonly sleep: (ms: number, signal?: AbortSignal) => Promise<void>;

  constructor(private readonly options: LonghaulOptions) {
    let base: URL;
    try {
      base = new URL(options.baseUrl);
    } catch {
      throw new LonghaulUsageError(`The base URL ${JSON.stringify(options.baseUrl)} is not an absolute URL.`);
    }
    if (base.protocol !== 'http:' && base.protocol !== 'https:') {
      throw new LonghaulUsageError(`The base URL must be http or https, not ${base.protocol}`);
    }
    this.baseUrl = base.href.replace(/\/+$/, '');
    this.streamUrl = options.streamUrl ?? `${this.baseUrl.replace(/^http/, 'ws')}/v1/stream`;
    const fetchImplementation = options.fetch ?? globalThis.fetch;
    this.fetch = (input, init) => fetchImplementation(input, init);
    this.retry = { ...defaultRetryOptions, ...options.retry };
    this.random = options.random ?? Math.random;
    this.sleep = options.sleep ?? defaultSleep;
  }

  /** Starts a user action; pass `idempotencyKey` to resume one an earlier run started. */
  userAction(idempotencyKey?: string): UserAction {
    return idempotencyKey === undefined ? new UserAction() : new UserAction(idempotencyKey, true);
  }

  /**
   * Submits the action's job. Network errors, 5xx, 429 and 409
   * `idempotency-key-in-use` are retried with backoff, always with the
   * action's key, so the answer is the one job of this action. A file goes
   * as a multipart part up to 4 MiB and through a presigned upload above.
   */
  async createJob(
    action: UserAction,
    request: CreateJobRequest,
    options: RequestOptions = {},
  ): Promise<CreatedJob> {
    const { file, ...submission } = request;
    let body: () => RequestBody;
    const headers: Record<string, string> = { 'idempotency-key': action.idempotencyKey };
    if (file && sendsInline(file)) {
      body = () => multipartBody(submission, file);
    } else {
      let json: object = submission;
      if (file) {
        if (action.resumed && action.upload === undefined) {
          // A resumed action's upload ref is lost with the run that made it: look for its job before uploading again.
          const existing = await this.findJobByIdempotencyKey(action.idempotencyKey, options);
          if (existing) return { job: existing, replayed: true, location: `/v1/jobs/${existing.id}` };
        }
        action.upload ??= this.uploadFile(file, options);
        const ticket = await action.upload.catch((error: unknown) => {
          action.upload = undefined;
          throw error;
        });
        json = {
          ...submission,
          input: { ...submission.input, [FILE_INPUT_FIELD[submission.type]]: ticket.ref },
        };
      }
      const text = JSON.stringify(json);
      headers['content-type'] = 'application/json';
      body = () => text;
    }
    const answer = await this.call('createJob', { headers, body, signal: options.signal });
    const job = answer.body as Job;
    return {
      job,
      replayed: answer.headers.get('idempotent-replayed') === 'true',
      location: answer.headers.get('location') ?? `/v1/jobs/${job.id}`,
    };
  }

  async getJob(jobId: string, options: RequestOptions = {}): Promise<Job> {
    return (await this.call('getJob', { path: { id: jobId }, signal: options.signal })).body as Job;
  }

  /** One page of the tenant's jobs, newest first. */
  async listJobPage(query: ListQuery = {}, options: RequestOptions = {}): Promise<Page<Job>> {
    const answer = await this.call('listJobs', { query: { ...query }, signal: options.signal });
    return answer.body as Page<Job>;
  }

  /** The tenant's jobs, newest first, page by page: `for await (const page of client.listJobs())`. */
  async *listJobs(
    query: ListQuery = {},
    options: RequestOptions = {},
  ): AsyncGenerator<Page<Job>, void, undefined> {
    let cursor = query.cursor;
    do {
      const page = await this.listJobPage({ ...query, cursor }, options);
      yield page;
      cursor = page.nextCursor ?? undefined;
    } while (cursor);
  }

  /** Idempotent: a canceled job comes back as it is; a finished one is a `job-already-finished` error. */
  async cancelJob(jobId: string, options: RequestOptions = {}): Promise<Job> {
    return (await this.call('cancelJob', { path: { id: jobId }, signal: options.signal })).body as Job;
  }

  /** The job's timeline, oldest first. */
  async jobEvents(jobId: string, options: RequestOptions = {}): Promise<readonly TimelineEvent[]> {
    const answer = await this.call('getJobEvents', { path: { id: jobId }, signal: options.signal });
    return (answer.body as { items: readonly TimelineEvent[] }).items;
  }

  /** Uploads a file through a presigned PUT; use the ticket's `ref` as the job's sourceImageRef or audioRef. */
  async uploadFile(file: FileInput, options: RequestOptions = {}): Promise<UploadTicket> {
    const contentLength = byteLength(file);
    const ticket = (
      await this.call('createUpload', {
        headers: { 'content-type': 'application/json' },
        body: () => JSON.stringify({ contentType: file.contentType, contentLength }),
        signal: options.signal,
      })
    ).body as UploadTicket;
    // The PUT is idempotent: retried like any idempotent request.
    await this.attempts('PUT upload', 'idempotent', options.signal, () =>
      this.fetch(ticket.uploadUrl, {
        method: 'PUT',
        headers: { 'content-type': file.contentType },
        body: file.data as RequestBody,
        signal: attemptSignal(this.options.timeoutMs, options.signal),
      }),
    );
    return ticket;
  }

  /**
   * The tenant's job created with this Idempotency-Key, looked for among the
   * newest `maxPages` pages of jobs; undefined if it is not there.
   */
  async findJobByIdempotencyKey(
    idempotencyKey: string,
    options: RequestOptions & { readonly maxPages?: number } = {},
  ): Promise<Job | undefined> {
    let pages = 0;
    for await (const page of this.listJobs({ limit: 100 }, options)) {
      const found = page.items.find((job) => job.idempotencyKey === idempotencyKey);
      if (found) return found;
      if (++pages >= (options.maxPages ?? 10)) return undefined;
    }
    return undefined;
  }

  /**
   * Resolves once the job is settled (succeeded, failed, canceled or
   * needs_review, by default), reporting progress on the way. Follows the
   * live-progress WebSocket and falls back to polling when the socket is
   * refused, does not open or drops.
   */
  waitForJob(jobId: string, options: WaitOptions = {}): Promise<Job> {
    const liveKey = this.options.apiKey ?? this.options.adminKey;
    const WebSocketClass =
      this.options.webSocket === undefined
        ? (globalThis.WebSocket as WebSocketConstructor | undefined)
        : this.options.webSocket;
    return waitForJob(
      {
        getJob: (id, signal) => this.getJob(id, { signal }),
        socketUrl:
          WebSocketClass && liveKey
            ? `${this.streamUrl}?jobId=${encodeURIComponent(jobId)}&apiKey=${encodeURIComponent(liveKey)}`
            : undefined,
        WebSocket: WebSocketClass ?? undefined,
        sleep: this.sleep,
      },
      jobId,
      options,
    );
  }

  /** One page of active jobs of every tenant (admin key). */
  async reviewListPage(query: ReviewQuery = {}, options: RequestOptions = {}): Promise<Page<AdminJob>> {
    const answer = await this.call('adminListJobs', { query: { ...query }, signal: options.signal });
    return answer.body as Page<AdminJob>;
  }

  /** Jobs in review (or another active status) of every tenant, page by page (admin key). */
  async *reviewList(
    query: ReviewQuery = {},
    options: RequestOptions = {},
  ): AsyncGenerator<Page<AdminJob>, void, undefined> {
    let cursor = query.cursor;
    do {
      const page = await this.reviewListPage({ ...query, cursor }, options);
      yield page;
      cursor = page.nextCursor ?? undefined;
    } while (cursor);
  }

  /** Settles a job in review (admin key). Not retried unless the server certainly did nothing. */
  async resolve(jobId: string, resolution: Resolution, options: RequestOptions = {}): Promise<Job> {
    const answer = await this.call('adminResolveJob', {
      path: { id: jobId },
      headers: { 'content-type': 'application/json' },
      body: () => JSON.stringify(resolution),
      signal: options.signal,
    });
    return answer.body as Job;
  }

  /** Moves the dead-letter queue back to the jobs queue (admin key). */
  async redriveDeadLetters(options: RequestOptions = {}): Promise<RedriveStarted> {
    return (await this.call('adminRedriveDeadLetters', { signal: options.signal })).body as RedriveStarted;
  }

  async health(options: RequestOptions = {}): Promise<{ status: string }> {
    return (await this.call('getHealth', { signal: options.signal })).body as { status: string };
  }

  private async call(operationId: OperationId, call: Call): Promise<Answer> {
    const operation = operations[operationId];
    const key =
      operation.auth === 'tenant'
        ? this.options.apiKey
        : operation.auth === 'admin'
          ? this.options.adminKey
          : '';
    if (key === undefined || (operation.auth !== 'none' && key === '')) {
      throw new LonghaulUsageError(
        operation.auth === 'admin'
          ? 'This needs the admin key (adminKey).'
          : 'This needs an API key (apiKey).',
      );
    }
    let path = operation.path.replace(/\{(\w+)\}/g, (_, name: string) => {
      const value = call.path?.[name];
      if (!value) throw new LonghaulUsageError(`Missing ${name}.`);
      return encodeURIComponent(value);
    });
    const query = new URLSearchParams();
    for (const [name, value] of Object.entries(call.query ?? {})) {
      if (value !== undefined) query.set(name, String(value));
    }
    if (query.size > 0) path += `?${query}`;
    const headers: Record<string, string> = {
      accept: 'application/json, application/problem+json',
      ...call.headers,
    };
    if (key) headers['x-api-key'] = key;
    return this.attempts(`${operation.method} ${path}`, operation.retry, call.signal, () =>
      this.fetch(`${this.baseUrl}${path}`, {
        method: operation.method,
        headers,
        ...(call.body ? { body: call.body() } : {}),
        signal: attemptSignal(this.options.timeoutMs, call.signal),
      }),
    );
  }

  /** Sends until an answer that is not to be retried, or the attempts run out. */
  private async attempts(
    what: string,
    retry: 'idempotent' | 'unprocessed',
    signal: AbortSignal | undefined,
    send: () => Promise<Response>,
  ): Promise<Answer> {
    for (let attempt = 1; ; attempt++) {
      const last = attempt >= this.retry.maxAttempts;
      let response: Response;
      try {
        response = await send();
      } catch (error) {
        if (signal?.aborted) throw signal.reason;
        const failure = new LonghaulConnectionError(`${what}: no answer (${describeNetworkError(error)})`, {
          cause: error,
        });
        if (last || (retry === 'unprocessed' && !connectionRefused(error))) throw failure;
        await this.sleep(retryDelayMs(attempt - 1, undefined, this.retry, this.random), signal);
        continue;
      }
      const answer = await readAnswer(response).catch((error: unknown) => {
        if (signal?.aborted) throw signal.reason;
        return new LonghaulConnectionError(
          `${what}: the answer was cut off (${describeNetworkError(error)})`,
          {
            cause: error,
          },
        );
      });
      if (answer instanceof LonghaulConnectionError) {
        if (last || retry === 'unprocessed') throw answer;
        await this.sleep(retryDelayMs(attempt - 1, undefined, this.retry, this.random), signal);
        continue;
      }
      if (response.ok) return answer;
      const error = toError(response, answer.body);
      if (last || !retryable(error, retry)) throw error;
      if (error.retryAfterMs !== undefined && error.retryAfterMs > this.retry.maxRetryAfterMs) throw error;
      await this.sleep(retryDelayMs(attempt - 1, error.retryAfterMs, this.retry, this.random), signal);
    }
  }
}

function retryable(error: LonghaulError, retry: 'idempotent' | 'unprocessed'): boolean {
  if (error.status === 429) return true;
  if (retry === 'unprocessed') return false;
  return error.status >= 500 || error.code === 'idempotency-key-in-use';
}

/** Each attempt has its own deadline; the caller's signal aborts all of them. */
function attemptSignal(timeoutMs: number | undefined, signal: AbortSignal | undefined): AbortSignal {
  const timeout = AbortSignal.timeout(timeoutMs ?? 30_000);
  return signal ? AbortSignal.any([signal, timeout]) : timeout;
}

async function readAnswer(response: Response): Promise<Answer> {
  const text = await response.text();
  const type = response.headers.get('content-type') ?? '';
  let body: unknown = text === '' ? undefined : text;
  if (text !== '' && /[/+]json\b/.test(type)) {
    try {
      body = JSON.parse(text);
    } catch {
      body = text;
    }
  }
  return { status: response.status, headers: response.headers, body };
}

function toError(response: Response, body: unknown): LonghaulError {
  const retryAfterMs = parseRetryAfter(response.headers.get('retry-after'));
  const options = retryAfterMs === undefined ? {} : { retryAfterMs };
  if (isProblem(body)) return new LonghaulError(body, options);
  const unexpected: UnexpectedResponse = {
    type: 'about:blank',
    title: response.statusText || `HTTP ${response.status}`,
    status: response.status,
    detail:
      typeof body === 'string' && body.trim()
        ? body.trim().slice(0, 300)
        : `The server answered ${response.status} without a problem document.`,
    code: 'unexpected-response',
  };
  return new LonghaulError(unexpected, options);
}

function isProblem(body: unknown): body is Problem {
  if (!body || typeof body !== 'object') return false;
  const candidate = body as Partial<Problem>;
  return (
    typeof candidate.code === 'string' &&
    typeof candidate.status === 'number' &&
    typeof candidate.title === 'string' &&
    typeof candidate.detail === 'string'
  );
}

function connectionRefused(error: unknown): boolean {
  for (let cause: unknown = error; cause; cause = (cause as { cause?: unknown }).cause) {
    if ((cause as { code?: unknown }).code === 'ECONNREFUSED') return true;
  }
  return false;
}

function describeNetworkError(error: unknown): string {
  const parts: string[] = [];
  for (let cause: unknown = error; cause && parts.length < 3; cause = (cause as { cause?: unknown }).cause) {
    if (cause instanceof Error) parts.push(cause.message);
    else parts.push(String(cause));
  }
  return parts.join(': ');
}

/** Whether a file goes with the job as a multipart part (else through a presigned upload). */
function sendsInline(file: FileInput): boolean {
  return byteLength(file) <= MULTIPART_FILE_LIMIT_BYTES;
}

function byteLength(file: FileInput): number {
  return file.data instanceof Blob ? file.data.size : file.data.byteLength;
}

function multipartBody(submission: Omit<CreateJobRequest, 'file'>, file: FileInput): FormData {
  const form = new FormData();
  form.set('type', submission.type);
  form.set('input', JSON.stringify(submission.input));
  if (submission.webhookUrl !== undefined) form.set('webhookUrl', submission.webhookUrl);
  const blob = file.data instanceof Blob ? file.data : new Blob([file.data as Uint8Array<ArrayBuffer>]);
  form.set('file', new Blob([blob], { type: file.contentType }), file.filename ?? 'file');
  return form;
}
