import {
  abortError,
  LonghaulAPIError,
  LonghaulConnectionError,
  LonghaulError,
  LonghaulTimeoutError,
  LonghaulUsageError,
  type UnexpectedResponse,
} from './errors';
import { PagedList } from './pagination';
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
  type BatchItem,
  type BatchItemResult,
  type BulkOptions,
  type CancelJobsResult,
  type CreateJobRequest,
  type CreateMediaRequest,
  type CreateScheduleRequest,
  type CreateVersionRequest,
  FILE_INPUT_FIELD,
  type FileInput,
  type Job,
  type JobFilter,
  type JobStatus,
  type JobType,
  type ListMediaQuery,
  MAX_BATCH_ITEMS,
  type MediaItem,
  type MultipartUploadState,
  type MultipartUploadTicket,
  type Page,
  type Problem,
  type ProviderStatus,
  type RedriveStarted,
  type ReplayFilter,
  type ReplayResult,
  type Resolution,
  type ResumeFilter,
  type ResumeResult,
  type Schedule,
  type SearchRequest,
  type SearchResult,
  type StreamTicket,
  type Submission,
  type Tenant,
  type TenantSettings,
  type TimelineEvent,
  type UpdateMediaRequest,
  type UploadedFile,
  type UploadTicket,
} from './types';
import { SDK_VERSION } from './version';
import { updatesOf, type WaitOptions, type WatchUpdate, type WebSocketConstructor, waitForJob } from './wait';
import { webhooks } from './webhooks';

/** What fetch accepts as a body (the DOM's BodyInit). */
type RequestBody = NonNullable<RequestInit['body']>;

/** Largest file sent as a multipart part; larger files go through a presigned upload. */
export const MULTIPART_FILE_LIMIT_BYTES = 4 * 1024 * 1024;

/** Files above this go in parts (S3 multipart upload), each retried alone; smaller ones in one PUT. */
export const MULTIPART_UPLOAD_THRESHOLD_BYTES = 32 * 1024 * 1024;

/** Parts of a multipart upload sent at once. */
const UPLOAD_CONCURRENCY = 4;

/** A part URL this close to its expiresAt is renewed before it is used, so no part starts on a URL about to lapse. */
const PART_URL_RENEWAL_MARGIN_MS = 60_000;

/**
 * The slowest upload speed an upload is given time for: a transfer's timeout
 * is the request timeout plus the time its bytes take at this speed, so a
 * large file on a slow link is not cut off at 30 seconds.
 */
const MIN_UPLOAD_BYTES_PER_SECOND = 128 * 1024;

/** Where the SDK reports requests (debug) and retries (warn); console works. */
export interface LonghaulLogger {
  debug(message: string, fields?: Record<string, unknown>): void;
  warn(message: string, fields?: Record<string, unknown>): void;
}

export interface LonghaulOptions {
  /** The API's base URL: the stack output ApiUrl, or `http://127.0.0.1:3000` locally. */
  readonly baseUrl: string;
  /** A tenant's API key, for the job and upload routes. Sent only in the X-API-Key header. */
  readonly apiKey?: string;
  /** The operator key, for the admin routes. Never sent to the live-progress stream. */
  readonly adminKey?: string;
  /**
   * The live-progress WebSocket URL. @default the `streamUrl` of each stream
   * ticket (the stack output StreamUrl in AWS)
   */
  readonly streamUrl?: string;
  /**
   * Plain `http` (and `ws`) to a host that is not this machine sends the API
   * key readable by anyone on the way, so it is refused unless this is true.
   * @default false
   */
  readonly allowInsecureHttp?: boolean;
  /** The fetch to send requests with (a proxy, a test transport). @default globalThis.fetch */
  readonly fetch?: typeof fetch;
  /** The WebSocket class for live progress; null to always poll. @default globalThis.WebSocket */
  readonly webSocket?: WebSocketConstructor | null;
  readonly retry?: RetryOptions;
  /** Retries after the first attempt (overrides `retry.maxAttempts`); 0 for none. @default 2 */
  readonly maxRetries?: number;
  /** Each attempt of a request is abandoned (and, if safe, retried) after this long. @default 30000 */
  readonly timeoutMs?: number;
  /** Headers sent with every request (a tracing header, say). */
  readonly defaultHeaders?: Readonly<Record<string, string>>;
  /** Told of every request and retry. @default none */
  readonly logger?: LonghaulLogger;
  /** Seams for tests: the random source of the jitter and the wait between attempts. */
  readonly random?: () => number;
  readonly sleep?: (ms: number, signal?: AbortSignal) => Promise<void>;
}

/** Options of one call; each overrides the client's for that call only. */
export interface RequestOptions {
  /** Aborts the request, its retries and their waits. */
  readonly signal?: AbortSignal;
  /** Each attempt's timeout. */
  readonly timeoutMs?: number;
  /** Retries after the first attempt; 0 for none. */
  readonly maxRetries?: number;
  /** Extra headers for this call. */
  readonly headers?: Readonly<Record<string, string>>;
}

export interface UploadOptions extends RequestOptions {
  /** Told after each part (or the single PUT) is stored; `state` can be saved to resume later. */
  readonly onUploadProgress?: (progress: {
    readonly uploadedBytes: number;
    readonly totalBytes: number;
    readonly state?: MultipartUploadState;
  }) => void;
  /** A multipart upload an earlier run began (its saved `state`): only the parts it lacks are sent. */
  readonly resume?: MultipartUploadState;
}

/**
 * One thing a user asked for, such as one click on "Generate". It carries the
 * Idempotency-Key, minted when the action is created, that every attempt and
 * retry of its request sends: however often the request reaches the server,
 * it makes one job and one provider charge.
 */
export class UserAction {
  /** The upload of this action's file, made once however often the request is retried. */
  upload: Promise<UploadedFile> | undefined;
  /** A multipart upload in progress: a retried request goes on from the parts already stored. */
  uploadState: MultipartUploadState | undefined;

  constructor(
    readonly idempotencyKey: string = crypto.randomUUID(),
    /** True when the key came from an earlier run (resuming); false when minted here. */
    readonly resumed: boolean = false,
  ) {
    if (!/^[\x21-\x7e]{1,255}$/.test(idempotencyKey)) {
      throw new LonghaulUsageError('An idempotency key is 1 to 255 visible ASCII characters.');
    }
  }
}

/** What `createJob` answers: the job, of the type it was asked for. */
export interface CreatedJob<T extends JobType = JobType> {
  readonly job: Job<T>;
  /** The server had seen this action before and repeated its first answer (`Idempotent-Replayed: true`). */
  readonly replayed: boolean;
  /** The job's URL, as the Location header gave it. */
  readonly location: string;
}

/** Options of a call that creates something under an Idempotency-Key. */
export interface IdempotentOptions extends RequestOptions {
  /**
   * The key to send: the one an earlier run used, to resume its request.
   * @default a new key, minted once for this call and sent with every retry of it
   */
  readonly idempotencyKey?: string;
}

export interface CreatedMedia {
  readonly item: MediaItem;
  /** The server had seen this key before and repeated its first answer (`Idempotent-Replayed: true`). */
  readonly replayed: boolean;
  /** The key the request went under: keep it to resume the request if this run is cut short. */
  readonly idempotencyKey: string;
}

export interface PublishedVersion extends CreatedMedia {
  /** The version's audio.publish job: follow it with `waitForJob`. */
  readonly jobId: string;
  /** The job's URL, as the Location header gave it. */
  readonly location: string;
}

/** A new recording of a media item: an upload ref or an https URL, or a file the SDK uploads first. */
export type VersionSource = CreateVersionRequest | { readonly file: FileInput; readonly language?: string };

export interface ListQuery {
  readonly status?: JobStatus;
  /** Page size, 1..100 (the API's default when absent). */
  readonly limit?: number;
  /** Start after this page (a `nextCursor`). */
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

interface Call extends RequestOptions {
  readonly path?: Record<string, string>;
  readonly query?: Record<string, string | number | undefined>;
  /** Headers the operation itself needs (Idempotency-Key, Content-Type); they win over the caller's. */
  readonly operationHeaders?: Record<string, string>;
  /** Called once per attempt, so every attempt sends a fresh body. */
  readonly body?: () => RequestBody;
}

/** How one request is sent and retried. */
interface Attempts {
  readonly what: string;
  readonly retry: 'idempotent' | 'unprocessed';
  readonly signal: AbortSignal | undefined;
  readonly maxAttempts: number;
  readonly timeoutMs: number;
  readonly send: (signal: AbortSignal) => Promise<Response>;
}

/** The Longhaul API client. */
export class Longhaul {
  /** Helpers for receivers of Longhaul's webhooks: `Longhaul.webhooks.verify(rawBody, header, secret)`. */
  static readonly webhooks = webhooks;

  readonly baseUrl: string;
  /** The stream URL set in the options, if any (else each ticket's). */
  readonly streamUrl: string | undefined;
  /** The User-Agent sent with every request. */
  readonly userAgent = `longhaul-node/${SDK_VERSION} node/${globalThis.process?.versions?.node ?? 'unknown'}`;
  private readonly fetch: typeof fetch;
  private readonly retry: Required<RetryOptions>;
  private readonly timeoutMs: number;
  private readonly random: () => number;
  private readonly sleep: (ms: number, signal?: AbortSignal) => Promise<void>;

  constructor(private readonly options: LonghaulOptions) {
    let base: URL;
    try {
      base = new URL(options.baseUrl);
    } catch {
      throw new LonghaulUsageError(
        `The base URL ${JSON.stringify(options.baseUrl)} is not an absolute URL.`,
        ['baseUrl'],
      );
    }
    if (base.protocol !== 'http:' && base.protocol !== 'https:') {
      throw new LonghaulUsageError(`The base URL must be http or https, not ${base.protocol}`, ['baseUrl']);
    }
    this.checkTransport(base, 'baseUrl');
    this.baseUrl = base.href.replace(/\/+$/, '');
    if (options.streamUrl !== undefined) this.checkStreamUrl(options.streamUrl);
    this.streamUrl = options.streamUrl;
    const fetchImplementation = options.fetch ?? globalThis.fetch;
    this.fetch = (input, init) => fetchImplementation(input, init);
    this.retry = {
      ...defaultRetryOptions,
      ...options.retry,
      ...(options.maxRetries === undefined ? {} : { maxAttempts: options.maxRetries + 1 }),
    };
    this.timeoutMs = options.timeoutMs ?? 30_000;
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
  async createJob<T extends JobType>(
    action: UserAction,
    request: Submission<T>,
    options: UploadOptions = {},
  ): Promise<CreatedJob<T>> {
    const { file, ...submission } = request;
    let body: () => RequestBody;
    const operationHeaders: Record<string, string> = { 'idempotency-key': action.idempotencyKey };
    if (file && sendsInline(file)) {
      body = () => multipartBody(submission, file);
    } else {
      let json: object = submission;
      if (file) {
        if (action.resumed && action.upload === undefined && action.uploadState === undefined) {
          // A resumed action's upload ref is lost with the run that made it: look for its job before uploading again.
          const existing = await this.findJobByIdempotencyKey(action.idempotencyKey, options);
          if (existing) {
            return { job: existing as Job<T>, replayed: true, location: `/v1/jobs/${existing.id}` };
          }
        }
        action.upload ??= this.uploadFile(file, {
          ...options,
          ...(action.uploadState ? { resume: action.uploadState } : {}),
          onUploadProgress: (progress) => {
            if (progress.state) action.uploadState = progress.state;
            options.onUploadProgress?.(progress);
          },
        });
        const uploaded = await action.upload.catch((error: unknown) => {
          action.upload = undefined;
          throw error;
        });
        json = {
          ...submission,
          input: { ...submission.input, [FILE_INPUT_FIELD[submission.type]]: uploaded.ref },
        };
      }
      const text = JSON.stringify(json);
      operationHeaders['content-type'] = 'application/json';
      body = () => text;
    }
    const answer = await this.call('createJob', { ...options, operationHeaders, body });
    const job = answer.body as Job<T>;
    return {
      job,
      replayed: answer.headers.get('idempotent-replayed') === 'true',
      location: answer.headers.get('location') ?? `/v1/jobs/${job.id}`,
    };
  }

  /**
   * Submits up to 1,000 user actions in one request; each item carries its
   * action's idempotency key, so retrying the batch (which is done on network
   * errors, 5xx and 429 like `createJob`) never makes a job twice. Answers
   * each item in item order: `status` 202 with its `job`, or its `problem`.
   * Items refused with a status worth retrying (409, 429, 5xx) can be sent
   * again, alone or in another batch, under the same keys.
   */
  async submitBatch(
    items: readonly BatchItem[],
    options: RequestOptions = {},
  ): Promise<readonly BatchItemResult[]> {
    if (items.length < 1 || items.length > MAX_BATCH_ITEMS) {
      throw new LonghaulUsageError(`A batch has 1 to ${MAX_BATCH_ITEMS} items, not ${items.length}.`);
    }
    const text = JSON.stringify({ items });
    const answer = await this.call('createJobBatch', {
      ...options,
      operationHeaders: { 'content-type': 'application/json' },
      body: () => text,
    });
    return (answer.body as { items: readonly BatchItemResult[] }).items;
  }

  async getJob(jobId: string, options: RequestOptions = {}): Promise<Job> {
    return (await this.call('getJob', { ...options, path: { id: jobId } })).body as Job;
  }

  /** One page of the tenant's jobs, newest first. */
  async listJobPage(query: ListQuery = {}, options: RequestOptions = {}): Promise<Page<Job>> {
    const answer = await this.call('listJobs', { ...options, query: { ...query } });
    return answer.body as Page<Job>;
  }

  /**
   * The tenant's jobs, newest first, fetched page by page as they are reached:
   * `for await (const job of client.listJobs())`, `.pages()` for the pages,
   * `.toArray({ limit: 50 })` for the first fifty.
   */
  listJobs(query: ListQuery = {}, options: RequestOptions = {}): PagedList<Job> {
    return pagedList(query, (page) => this.listJobPage(page, options));
  }

  /**
   * Creates the action's recurring schedule. Retried like `createJob`, always
   * with the action's key, so the answer is the one schedule of this action.
   */
  async createSchedule(
    action: UserAction,
    request: CreateScheduleRequest,
    options: RequestOptions = {},
  ): Promise<{ readonly schedule: Schedule; readonly replayed: boolean }> {
    const text = JSON.stringify(request);
    const answer = await this.call('createSchedule', {
      ...options,
      operationHeaders: { 'idempotency-key': action.idempotencyKey, 'content-type': 'application/json' },
      body: () => text,
    });
    return {
      schedule: answer.body as Schedule,
      replayed: answer.headers.get('idempotent-replayed') === 'true',
    };
  }

  async getSchedule(scheduleId: string, options: RequestOptions = {}): Promise<Schedule> {
    return (await this.call('getSchedule', { ...options, path: { id: scheduleId } })).body as Schedule;
  }

  /** One page of the tenant's schedules, in id order. */
  async listSchedulePage(
    query: { readonly limit?: number; readonly cursor?: string } = {},
    options: RequestOptions = {},
  ): Promise<Page<Schedule>> {
    return (await this.call('listSchedules', { ...options, query: { ...query } })).body as Page<Schedule>;
  }

  /** The tenant's schedules, fetched page by page as they are reached. */
  listSchedules(
    query: { readonly limit?: number; readonly cursor?: string } = {},
    options: RequestOptions = {},
  ): PagedList<Schedule> {
    return pagedList(query, (page) => this.listSchedulePage(page, options));
  }

  /** Enables or disables a schedule; idempotent. A disabled schedule creates no job from that moment. */
  async updateSchedule(
    scheduleId: string,
    changes: { readonly enabled: boolean },
    options: RequestOptions = {},
  ): Promise<Schedule> {
    const text = JSON.stringify(changes);
    const answer = await this.call('updateSchedule', {
      ...options,
      path: { id: scheduleId },
      operationHeaders: { 'content-type': 'application/json' },
      body: () => text,
    });
    return answer.body as Schedule;
  }

  /** Deletes a schedule; the jobs it created stay. A schedule already deleted is a `not-found` error. */
  async deleteSchedule(scheduleId: string, options: RequestOptions = {}): Promise<void> {
    await this.call('deleteSchedule', { ...options, path: { id: scheduleId } });
  }

  /**
   * Runs a failed job again from the step that failed, keeping what the steps
   * before it produced; the job comes back `running`. A job that is not
   * failed, needs review, or whose failure may have been charged at its
   * provider with no known outcome is a `job-not-resumable` error.
   */
  async resumeJob(jobId: string, options: RequestOptions = {}): Promise<Job> {
    return (await this.call('resumeJob', { ...options, path: { id: jobId } })).body as Job;
  }

  /** Idempotent: a canceled job comes back as it is; a finished one is a `job-already-finished` error. */
  async cancelJob(jobId: string, options: RequestOptions = {}): Promise<Job> {
    return (await this.call('cancelJob', { ...options, path: { id: jobId } })).body as Job;
  }

  /**
   * Cancels the tenant's jobs that match `filter`, each as `cancelJob` would.
   * One request does at most the server's BULK_MAX_PER_REQUEST jobs: while
   * the answer has a `nextCursor`, call again with it (or use `cancelAllJobs`).
   * `dryRun` only counts. Safe to retry: a canceled job is not matched again.
   */
  async cancelJobs(
    filter: JobFilter,
    bulk: BulkOptions = {},
    options: RequestOptions = {},
  ): Promise<CancelJobsResult> {
    const text = JSON.stringify({ filter, ...bulk });
    const answer = await this.call('cancelJobs', {
      ...options,
      operationHeaders: { 'content-type': 'application/json' },
      body: () => text,
    });
    return answer.body as CancelJobsResult;
  }

  /** `cancelJobs` request after request until no `nextCursor` is left; the answers' counts added up. */
  async cancelAllJobs(
    filter: JobFilter,
    bulk: Pick<BulkOptions, 'dryRun'> = {},
    options: RequestOptions = {},
  ): Promise<Omit<CancelJobsResult, 'nextCursor'>> {
    const total = { matched: 0, canceled: 0, cancelRequested: 0 };
    let cursor: string | undefined;
    do {
      const page = await this.cancelJobs(filter, { ...bulk, ...(cursor ? { cursor } : {}) }, options);
      total.matched += page.matched;
      total.canceled += page.canceled;
      total.cancelRequested += page.cancelRequested;
      cursor = page.nextCursor ?? undefined;
    } while (cursor);
    return total;
  }

  /**
   * The passages of the tenant's published recordings (audio.publish) closest
   * to `request` (a query, or a query with a `limit` and a `filter`): `items`,
   * closest first, each with the URL that plays it from its first word. A search
   * changes nothing, so network errors, 5xx and 429 (the embedding model at
   * capacity, say) are retried, never sooner than Retry-After.
   */
  async search(request: string | SearchRequest, options: RequestOptions = {}): Promise<SearchResult> {
    const text = JSON.stringify(typeof request === 'string' ? { query: request } : request);
    const answer = await this.call('search', {
      ...options,
      operationHeaders: { 'content-type': 'application/json' },
      body: () => text,
    });
    return answer.body as SearchResult;
  }

  /**
   * Creates a media item of the library: its metadata; its recordings come as
   * versions (`publishVersion`). Retried like `createJob`, always under one
   * key (`idempotencyKey`, or one minted for this call), so the answer is
   * one item however often the request reaches the server.
   */
  async createMedia(request: CreateMediaRequest, options: IdempotentOptions = {}): Promise<CreatedMedia> {
    const { idempotencyKey: given, ...rest } = options;
    const { idempotencyKey } = new UserAction(given);
    const text = JSON.stringify(request);
    const answer = await this.call('createMedia', {
      ...rest,
      operationHeaders: { 'idempotency-key': idempotencyKey, 'content-type': 'application/json' },
      body: () => text,
    });
    return {
      item: answer.body as MediaItem,
      replayed: answer.headers.get('idempotent-replayed') === 'true',
      idempotencyKey,
    };
  }

  /** A media item, with its current version and the one being published; their URLs are short-lived. */
  async getMedia(mediaId: string, options: RequestOptions = {}): Promise<MediaItem> {
    return (await this.call('getMedia', { ...options, path: { id: mediaId } })).body as MediaItem;
  }

  /** One page of the tenant's media items that match `query`. */
  async listMediaPage(query: ListMediaQuery = {}, options: RequestOptions = {}): Promise<Page<MediaItem>> {
    return (await this.call('listMedia', { ...options, query: { ...query } })).body as Page<MediaItem>;
  }

  /**
   * The tenant's media items that match `query`, fetched page by page as
   * they are reached: `for await (const item of client.listMedia({ label: 'advent' }))`,
   * `.pages()` for the pages, `.toArray({ limit: 50 })` for the first fifty.
   */
  listMedia(query: ListMediaQuery = {}, options: RequestOptions = {}): PagedList<MediaItem> {
    return pagedList(query, (page) => this.listMediaPage(page, options));
  }

  /**
   * Changes a media item's metadata (`null` removes the speaker or the date;
   * `labels` replaces the labels). No provider is called. Retried like any
   * idempotent request: the same change again leaves the same item.
   */
  async updateMedia(
    mediaId: string,
    patch: UpdateMediaRequest,
    options: RequestOptions = {},
  ): Promise<MediaItem> {
    const text = JSON.stringify(patch);
    const answer = await this.call('updateMedia', {
      ...options,
      path: { id: mediaId },
      operationHeaders: { 'content-type': 'application/json' },
      body: () => text,
    });
    return answer.body as MediaItem;
  }

  /**
   * Deletes a media item: the version being published is canceled, and what
   * every version made is deleted by the server. An item already deleted is
   * a `not-found` error.
   */
  async deleteMedia(mediaId: string, options: RequestOptions = {}): Promise<void> {
    await this.call('deleteMedia', { ...options, path: { id: mediaId } });
  }

  /**
   * Publishes a new recording of a media item as its next version: an upload
   * ref, an https URL, or a file, uploaded once (before the request) however
   * often the request is retried. The item's current version switches to it
   * only once it has fully published; follow its job (`jobId`) with
   * `waitForJob`. Retried like `createJob`, always under one key. To resume
   * with an earlier run's `idempotencyKey`, send the same source: a file
   * uploaded again is a new ref, another request under that key (422).
   */
  async publishVersion(
    mediaId: string,
    source: VersionSource,
    options: IdempotentOptions & Pick<UploadOptions, 'onUploadProgress'> = {},
  ): Promise<PublishedVersion> {
    const { idempotencyKey: given, onUploadProgress, ...rest } = options;
    const { idempotencyKey } = new UserAction(given);
    let request: CreateVersionRequest;
    if ('file' in source) {
      const { file, ...fields } = source;
      const uploaded = await this.uploadFile(file, {
        ...rest,
        ...(onUploadProgress ? { onUploadProgress } : {}),
      });
      request = { ...fields, audioRef: uploaded.ref };
    } else {
      request = source;
    }
    const text = JSON.stringify(request);
    const answer = await this.call('publishMediaVersion', {
      ...rest,
      path: { id: mediaId },
      operationHeaders: { 'idempotency-key': idempotencyKey, 'content-type': 'application/json' },
      body: () => text,
    });
    const item = answer.body as MediaItem;
    const location = answer.headers.get('location') ?? '';
    return {
      item,
      replayed: answer.headers.get('idempotent-replayed') === 'true',
      idempotencyKey,
      jobId: /\/v1\/jobs\/([^/?#]+)$/.exec(location)?.[1] ?? item.inProgress?.jobId ?? '',
      location,
    };
  }

  /** The job's timeline, oldest first. */
  async jobEvents(jobId: string, options: RequestOptions = {}): Promise<readonly TimelineEvent[]> {
    const answer = await this.call('getJobEvents', { ...options, path: { id: jobId } });
    return (answer.body as { items: readonly TimelineEvent[] }).items;
  }

  /**
   * A short-lived ticket that opens the job's live-progress WebSocket
   * (`streamUrl?ticket=…`), so no API key goes into a URL.
   */
  async createStreamTicket(jobId: string, options: RequestOptions = {}): Promise<StreamTicket> {
    const answer = await this.call('createStreamTicket', { ...options, path: { id: jobId } });
    return answer.body as StreamTicket;
  }

  /**
   * Uploads a file for a job's sourceImageRef or audioRef: one presigned PUT
   * up to 32 MiB, an S3 multipart upload above (parts sent four at a time,
   * each retried alone; `onUploadProgress` hands out a state to resume from).
   * Timeouts grow with the bytes sent.
   */
  async uploadFile(file: FileInput, options: UploadOptions = {}): Promise<UploadedFile> {
    const contentLength = byteLength(file);
    if (options.resume || contentLength > MULTIPART_UPLOAD_THRESHOLD_BYTES) {
      return this.uploadInParts(file, contentLength, options);
    }
    const ticket = (
      await this.call('createUpload', {
        ...options,
        operationHeaders: { 'content-type': 'application/json' },
        body: () => JSON.stringify({ contentType: file.contentType, contentLength }),
      })
    ).body as UploadTicket;
    // The PUT is idempotent: retried like any idempotent request.
    await this.attempts({
      what: 'PUT upload',
      retry: 'idempotent',
      signal: options.signal,
      maxAttempts: this.maxAttempts(options),
      timeoutMs: this.transferTimeoutMs(contentLength, options),
      send: (signal) =>
        this.fetch(ticket.uploadUrl, {
          method: 'PUT',
          headers: { 'content-type': file.contentType },
          body: file.data as RequestBody,
          signal,
        }),
    });
    options.onUploadProgress?.({ uploadedBytes: contentLength, totalBytes: contentLength });
    return { ref: ticket.ref, expiresAt: ticket.expiresAt };
  }

  private async uploadInParts(
    file: FileInput,
    contentLength: number,
    options: UploadOptions,
  ): Promise<UploadedFile> {
    let state = options.resume;
    if (!state) {
      const ticket = (
        await this.call('createMultipartUpload', {
          ...options,
          operationHeaders: { 'content-type': 'application/json' },
          body: () => JSON.stringify({ contentType: file.contentType, contentLength }),
        })
      ).body as MultipartUploadTicket;
      state = { ...ticket, parts: ticket.parts.map((part) => ({ ...part, etag: null })) };
    }
    const { ref, uploadId, partSizeBytes } = state;
    const partNumbers = state.parts.map((part) => part.partNumber);
    const urls = new Map<number, string>();
    const etags = new Map<number, string>();
    for (const part of state.parts) {
      urls.set(part.partNumber, part.uploadUrl);
      if (part.etag) etags.set(part.partNumber, part.etag);
    }
    let expiresAt = state.expiresAt;
    const snapshot = (): MultipartUploadState => ({
      ref,
      uploadId,
      partSizeBytes,
      expiresAt,
      parts: partNumbers.map((partNumber) => ({
        partNumber,
        uploadUrl: urls.get(partNumber) as string,
        etag: etags.get(partNumber) ?? null,
      })),
    });
    // Part URLs expire, the upload does not: the parts still missing get fresh ones, in one request shared by all.
    let renewal: Promise<void> | undefined;
    const renewUrls = () =>
      (renewal ??= (async () => {
        const ticket = (
          await this.call('renewMultipartUploadParts', {
            ...options,
            path: { ref },
            operationHeaders: { 'content-type': 'application/json' },
            body: () =>
              JSON.stringify({
                uploadId,
                contentLength,
                partNumbers: partNumbers.filter((partNumber) => !etags.has(partNumber)),
              }),
          })
        ).body as MultipartUploadTicket;
        for (const part of ticket.parts) urls.set(part.partNumber, part.uploadUrl);
        expiresAt = ticket.expiresAt;
      })().finally(() => {
        renewal = undefined;
      }));
    const expiring = () => Date.parse(expiresAt) - PART_URL_RENEWAL_MARGIN_MS <= Date.now();
    const partBytes = (partNumber: number) => {
      const start = (partNumber - 1) * partSizeBytes;
      return Math.min(partSizeBytes, contentLength - start);
    };
    let uploadedBytes = [...etags.keys()].reduce((sum, n) => sum + partBytes(n), 0);
    const pending = partNumbers.filter((partNumber) => !etags.has(partNumber));
    const sendPart = async (partNumber: number) => {
      const start = (partNumber - 1) * partSizeBytes;
      const end = start + partBytes(partNumber);
      let answer: Answer;
      for (let renewed = false; ; renewed = true) {
        if (expiring()) await renewUrls();
        const url = urls.get(partNumber) as string;
        try {
          answer = await this.attempts({
            what: `PUT upload part ${partNumber}`,
            retry: 'idempotent',
            signal: options.signal,
            maxAttempts: this.maxAttempts(options),
            timeoutMs: this.transferTimeoutMs(end - start, options),
            send: (signal) => this.fetch(url, { method: 'PUT', body: slice(file, start, end), signal }),
          });
          break;
        } catch (error) {
          // S3 refuses an expired URL with 403 (its clock, not ours, decides); a second refusal is no expiry.
          if (renewed || !(error instanceof LonghaulError && error.status === 403)) throw error;
          if (urls.get(partNumber) === url) await renewUrls();
        }
      }
      const etag = answer.headers.get('etag');
      if (!etag) {
        throw new LonghaulConnectionError(
          `PUT upload part ${partNumber}: the answer carried no ETag (a proxy or a browser without the bucket's CORS ExposeHeaders?)`,
        );
      }
      etags.set(partNumber, etag);
      uploadedBytes += end - start;
      options.onUploadProgress?.({ uploadedBytes, totalBytes: contentLength, state: snapshot() });
    };
    // A few parts at once: enough to fill a link, few enough to keep memory to a few parts.
    let next = 0;
    await Promise.all(
      Array.from({ length: Math.min(UPLOAD_CONCURRENCY, pending.length) }, async () => {
        while (next < pending.length) await sendPart(pending[next++] as number);
      }),
    );
    await this.call('completeMultipartUpload', {
      ...options,
      path: { ref },
      operationHeaders: { 'content-type': 'application/json' },
      body: () =>
        JSON.stringify({
          uploadId,
          parts: partNumbers.map((partNumber) => ({ partNumber, etag: etags.get(partNumber) })),
        }),
    });
    return { ref, expiresAt };
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
    for await (const page of this.listJobs({ limit: 100 }, options).pages()) {
      const found = page.items.find((job) => job.idempotencyKey === idempotencyKey);
      if (found) return found;
      if (++pages >= (options.maxPages ?? 10)) return undefined;
    }
    return undefined;
  }

  /**
   * Resolves once the job is settled (succeeded, failed, canceled or
   * needs_review, by default), reporting progress on the way. Follows the
   * live-progress WebSocket (opened with a stream ticket, reopened with
   * backoff when it drops) and polls while it is down. Outages of the API
   * are waited out (reported as `outage` updates) until `signal` or
   * `timeoutMs` ends the wait. Needs the tenant key for live progress; with
   * the admin key alone it polls.
   */
  waitForJob(jobId: string, options: WaitOptions = {}): Promise<Job> {
    const WebSocketClass =
      this.options.webSocket === undefined
        ? (globalThis.WebSocket as WebSocketConstructor | undefined)
        : this.options.webSocket;
    return waitForJob(
      {
        // One attempt each: the wait itself retries, for as long as it lasts.
        getJob: (id, signal) => this.getJob(id, { signal, maxRetries: 0 }),
        socketUrl:
          WebSocketClass && this.options.apiKey
            ? async (id, signal) => {
                const ticket = await this.createStreamTicket(id, { signal, maxRetries: 0 });
                const streamUrl = this.streamUrl ?? ticket.streamUrl;
                this.checkStreamUrl(streamUrl);
                const url = new URL(streamUrl);
                url.searchParams.set('ticket', ticket.ticket);
                return url.href;
              }
            : undefined,
        WebSocket: WebSocketClass ?? undefined,
        sleep: this.sleep,
        random: this.random,
      },
      jobId,
      { ...(this.options.retry ? { retry: this.options.retry } : {}), ...options },
    );
  }

  /**
   * `waitForJob` as an async iterator: `for await (const update of
   * client.watchJob(id))` yields each update `onProgress` would get (live over
   * the WebSocket, by polling while it is down), then `{ type: 'settled', job }`,
   * and ends. Breaking out of the loop stops watching (the job goes on); a
   * deadline, an abort or an API error is thrown from the loop.
   */
  watchJob(
    jobId: string,
    options: Omit<WaitOptions, 'onProgress'> = {},
  ): AsyncGenerator<WatchUpdate, Job, undefined> {
    return updatesOf((waitOptions) => this.waitForJob(jobId, waitOptions), options);
  }

  /** One page of active jobs of every tenant (admin key). */
  async reviewListPage(query: ReviewQuery = {}, options: RequestOptions = {}): Promise<Page<AdminJob>> {
    const answer = await this.call('adminListJobs', { ...options, query: { ...query } });
    return answer.body as Page<AdminJob>;
  }

  /** Jobs in review (or another active status) of every tenant, item by item (admin key); `.pages()` too. */
  reviewList(query: ReviewQuery = {}, options: RequestOptions = {}): PagedList<AdminJob> {
    return pagedList(query, (page) => this.reviewListPage(page, options));
  }

  /** Each provider's state (open or paused, until when and why), in-flight limit, slots held and queued jobs (admin key). */
  async providers(options: RequestOptions = {}): Promise<readonly ProviderStatus[]> {
    const answer = await this.call('adminListProviders', options);
    return (answer.body as { items: ProviderStatus[] }).items;
  }

  /** Pauses a provider by hand for `pause.seconds` (admin key): its jobs wait in their lines, none fails. */
  async pauseProvider(
    name: ProviderStatus['name'],
    pause: { readonly seconds: number; readonly reason: string },
    options: RequestOptions = {},
  ): Promise<ProviderStatus> {
    const answer = await this.call('adminPauseProvider', {
      ...options,
      path: { provider: name },
      operationHeaders: { 'content-type': 'application/json' },
      body: () => JSON.stringify(pause),
    });
    return answer.body as ProviderStatus;
  }

  /** Ends a provider's pause now (admin key): its waiting jobs are handed its free slots. */
  async resumeProvider(name: ProviderStatus['name'], options: RequestOptions = {}): Promise<ProviderStatus> {
    const answer = await this.call('adminResumeProvider', { ...options, path: { provider: name } });
    return answer.body as ProviderStatus;
  }

  /** A tenant's settings and usage (admin key). */
  async tenant(name: string, options: RequestOptions = {}): Promise<Tenant> {
    return (await this.call('adminGetTenant', { ...options, path: { tenant: name } })).body as Tenant;
  }

  /**
   * Sets the settings `settings` names for a tenant (admin key); the others
   * keep their values. Retried like any idempotent request: the same settings
   * again leave the same record.
   */
  async putTenant(name: string, settings: TenantSettings, options: RequestOptions = {}): Promise<Tenant> {
    const answer = await this.call('adminPutTenant', {
      ...options,
      path: { tenant: name },
      operationHeaders: { 'content-type': 'application/json' },
      body: () => JSON.stringify(settings),
    });
    return answer.body as Tenant;
  }

  /** Settles a job in review (admin key). Not retried unless the server certainly did nothing. */
  async resolve(jobId: string, resolution: Resolution, options: RequestOptions = {}): Promise<Job> {
    const answer = await this.call('adminResolveJob', {
      ...options,
      path: { id: jobId },
      operationHeaders: { 'content-type': 'application/json' },
      body: () => JSON.stringify(resolution),
    });
    return answer.body as Job;
  }

  /**
   * Replays finished jobs as new ones with `replayOf` (admin key). `note`
   * says why; the same note replays a job once however often the request is
   * repeated, another note replays it again. One request does at most the
   * server's REPLAY_MAX_PER_REQUEST jobs: while the answer has a
   * `nextCursor`, call again with it and the same filter and note.
   */
  async replayJobs(
    filter: ReplayFilter,
    note: string,
    bulk: BulkOptions = {},
    options: RequestOptions = {},
  ): Promise<ReplayResult> {
    const text = JSON.stringify({ filter, note, ...bulk });
    const answer = await this.call('adminReplayJobs', {
      ...options,
      operationHeaders: { 'content-type': 'application/json' },
      body: () => text,
    });
    return answer.body as ReplayResult;
  }

  /**
   * Resumes failed jobs by filter (admin key), each as its client's
   * `resumeJob` would: what an outage failed goes on from the step that
   * failed, waiting in its tenant's line for its slot. `note` goes on each
   * resumed job's timeline. One request reads at most the server's
   * REPLAY_MAX_PER_REQUEST failed jobs: while the answer has a `nextCursor`,
   * call again with it and the same filter and note.
   */
  async resumeJobsByFilter(
    filter: ResumeFilter,
    note: string,
    bulk: BulkOptions = {},
    options: RequestOptions = {},
  ): Promise<ResumeResult> {
    const text = JSON.stringify({ filter, note, ...bulk });
    const answer = await this.call('adminResumeJobs', {
      ...options,
      operationHeaders: { 'content-type': 'application/json' },
      body: () => text,
    });
    return answer.body as ResumeResult;
  }

  /** Moves the dead-letter queue back to the jobs queue (admin key). */
  async redriveDeadLetters(options: RequestOptions = {}): Promise<RedriveStarted> {
    return (await this.call('adminRedriveDeadLetters', options)).body as RedriveStarted;
  }

  async health(options: RequestOptions = {}): Promise<{ status: string }> {
    return (await this.call('getHealth', options)).body as { status: string };
  }

  private checkTransport(url: URL, option: 'baseUrl' | 'streamUrl'): void {
    const plain = url.protocol === 'http:' || url.protocol === 'ws:';
    if (plain && !isLoopback(url.hostname) && !this.options.allowInsecureHttp) {
      const what = option === 'baseUrl' ? 'base URL' : 'stream URL';
      const secure = url.protocol === 'ws:' ? 'wss' : 'https';
      throw new LonghaulUsageError(
        `The ${what} ${url.origin} is plain ${url.protocol.slice(0, -1)} to another machine: keys and data would cross the network unencrypted. Use ${secure}, or set allowInsecureHttp if you really mean it.`,
        [option, 'allowInsecureHttp'],
      );
    }
  }

  private checkStreamUrl(streamUrl: string): void {
    let url: URL;
    try {
      url = new URL(streamUrl);
    } catch {
      throw new LonghaulUsageError(`The stream URL ${JSON.stringify(streamUrl)} is not an absolute URL.`, [
        'streamUrl',
      ]);
    }
    if (url.protocol !== 'ws:' && url.protocol !== 'wss:') {
      throw new LonghaulUsageError(`The stream URL must be ws or wss, not ${url.protocol}`, ['streamUrl']);
    }
    this.checkTransport(url, 'streamUrl');
  }

  private maxAttempts(options: RequestOptions): number {
    return options.maxRetries === undefined ? this.retry.maxAttempts : Math.max(0, options.maxRetries) + 1;
  }

  /** A transfer's timeout: the request timeout, plus the time its bytes take at the slowest speed allowed. */
  private transferTimeoutMs(bytes: number, options: RequestOptions): number {
    return (options.timeoutMs ?? this.timeoutMs) + Math.ceil((bytes / MIN_UPLOAD_BYTES_PER_SECOND) * 1000);
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
      throw operation.auth === 'admin'
        ? new LonghaulUsageError('This needs the admin key (the adminKey option).', ['adminKey'])
        : new LonghaulUsageError('This needs an API key (the apiKey option).', ['apiKey']);
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
      'user-agent': this.userAgent,
      ...lowerCaseKeys(this.options.defaultHeaders),
      ...lowerCaseKeys(call.headers),
      ...call.operationHeaders,
    };
    // The key goes in its header only, never in a URL.
    if (key) headers['x-api-key'] = key;
    return this.attempts({
      what: `${operation.method} ${path}`,
      retry: operation.retry,
      signal: call.signal,
      maxAttempts: this.maxAttempts(call),
      timeoutMs: call.timeoutMs ?? this.timeoutMs,
      send: (signal) =>
        this.fetch(`${this.baseUrl}${path}`, {
          method: operation.method,
          headers,
          ...(call.body ? { body: call.body() } : {}),
          signal,
        }),
    });
  }

  /** Sends until an answer that is not to be retried, or the attempts run out. */
  private async attempts(request: Attempts): Promise<Answer> {
    const { what, retry, signal, maxAttempts } = request;
    const logger = this.options.logger;
    for (let attempt = 1; ; attempt++) {
      const last = attempt >= maxAttempts;
      const started = Date.now();
      const wait = async (retryAfterMs: number | undefined, reason: string) => {
        const delayMs = retryDelayMs(attempt - 1, retryAfterMs, this.retry, this.random);
        logger?.warn(`${what}: ${reason}; retrying in ${delayMs} ms`, { attempt, delayMs });
        await this.sleep(delayMs, signal).catch((error: unknown) => {
          throw signal?.aborted ? abortError(signal, what) : error;
        });
      };
      let response: Response;
      try {
        response = await request.send(attemptSignal(request.timeoutMs, signal));
      } catch (error) {
        if (signal?.aborted) throw abortError(signal, what);
        const failure = isTimeout(error)
          ? new LonghaulTimeoutError(`${what}: no answer within ${request.timeoutMs} ms`, { cause: error })
          : new LonghaulConnectionError(`${what}: no answer (${describeNetworkError(error)})`, {
              cause: error,
            });
        logger?.debug(`${what}: no answer`, { attempt, ms: Date.now() - started });
        if (last || (retry === 'unprocessed' && !connectionRefused(error))) throw failure;
        await wait(undefined, failure.message);
        continue;
      }
      const answer = await readAnswer(response).catch((error: unknown) => {
        if (signal?.aborted) throw abortError(signal, what);
        return new LonghaulConnectionError(
          `${what}: the answer was cut off (${describeNetworkError(error)})`,
          {
            cause: error,
          },
        );
      });
      logger?.debug(`${what}: ${response.status}`, { attempt, ms: Date.now() - started });
      if (answer instanceof LonghaulConnectionError) {
        if (last || retry === 'unprocessed') throw answer;
        await wait(undefined, answer.message);
        continue;
      }
      if (response.ok) return answer;
      const error = toError(response, answer.body);
      if (last || !retryable(error, retry)) throw error;
      if (error.retryAfterMs !== undefined && error.retryAfterMs > this.retry.maxRetryAfterMs) throw error;
      await wait(error.retryAfterMs, `${response.status} ${error.code}`);
    }
  }
}

/**
 * The items of a listing, fetched page by page by `fetchPage` from
 * `query`'s cursor on, each page no larger than the items still wanted.
 */
function pagedList<T, Q extends { readonly cursor?: string; readonly limit?: number }>(
  query: Q,
  fetchPage: (page: Q) => Promise<Page<T>>,
): PagedList<T> {
  return new PagedList(
    (cursor, want) => fetchPage({ ...query, cursor, limit: pageSize(query.limit, want) }),
    query.cursor,
  );
}

/** The page size to ask for: the caller's, but no more than the items still wanted. */
function pageSize(limit: number | undefined, want: number | undefined): number | undefined {
  if (want === undefined) return limit;
  return Math.min(limit ?? 100, want, 100);
}

function lowerCaseKeys(headers: Readonly<Record<string, string>> | undefined): Record<string, string> {
  return Object.fromEntries(
    Object.entries(headers ?? {}).map(([name, value]) => [name.toLowerCase(), value]),
  );
}

/** This machine: plain http here crosses no network. */
function isLoopback(hostname: string): boolean {
  const host = hostname.replace(/^\[|\]$/g, '');
  return host === 'localhost' || host.endsWith('.localhost') || host === '::1' || /^127\./.test(host);
}

function retryable(error: LonghaulError, retry: 'idempotent' | 'unprocessed'): boolean {
  if (error.status === 429) return true;
  if (retry === 'unprocessed') return false;
  return error.status >= 500 || error.code === 'idempotency-key-in-use';
}

/** Each attempt has its own deadline; the caller's signal aborts all of them. */
function attemptSignal(timeoutMs: number, signal: AbortSignal | undefined): AbortSignal {
  const timeout = AbortSignal.timeout(timeoutMs);
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

function toError(response: Response, body: unknown): LonghaulAPIError {
  const retryAfterMs = parseRetryAfter(response.headers.get('retry-after'));
  const options = { headers: response.headers, ...(retryAfterMs === undefined ? {} : { retryAfterMs }) };
  if (isProblem(body)) return LonghaulAPIError.of(body, options);
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
  return LonghaulAPIError.of(unexpected, options);
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

/** An attempt that ran out of time (its AbortSignal.timeout fired), anywhere in the cause chain. */
function isTimeout(error: unknown): boolean {
  for (let cause: unknown = error; cause; cause = (cause as { cause?: unknown }).cause) {
    if ((cause as { name?: unknown }).name === 'TimeoutError') return true;
  }
  return false;
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
  if (submission.priority !== undefined) form.set('priority', submission.priority);
  if (submission.runAt !== undefined) form.set('runAt', runAtText(submission.runAt));
  if (submission.startBy !== undefined) form.set('startBy', runAtText(submission.startBy));
  const blob = file.data instanceof Blob ? file.data : new Blob([file.data as Uint8Array<ArrayBuffer>]);
  form.set('file', new Blob([blob], { type: file.contentType }), file.filename ?? 'file');
  return form;
}

/** A runAt or startBy as the API takes it (a Date goes as its instant in UTC, as JSON bodies carry it). */
function runAtText(runAt: Date | string): string {
  return typeof runAt === 'string' ? runAt : runAt.toISOString();
}

/** Bytes [start, end) of the file, without copying a Blob into memory. */
function slice(file: FileInput, start: number, end: number): RequestBody {
  return (
    file.data instanceof Blob ? file.data.slice(start, end) : file.data.subarray(start, end)
  ) as RequestBody;
}
