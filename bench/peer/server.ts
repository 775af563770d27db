import { randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { type Job, type JobsOptions, Queue, Worker } from 'bullmq';
import * as z from 'zod';
import { JOB_PRIORITIES, type JobPriority } from '../../lambdas/domain/job';
import type { GenerationOutput } from '../../local/provider-sim/outputs';
import { PROVIDER_SIGNATURE_HEADER, verifyProviderSignature } from '../../local/provider-sim/signature';
import { startSimulator } from '../../local/provider-sim/simulator';
import type { ProviderEvent } from '../../local/provider-sim/webhooks';
import { GenerationEvents } from './generation-events';
import { PEER_PRIORITIES } from './priorities';

/**
 * The peer: the job service a careful team would build on BullMQ instead of
 * Longhaul, set up the way BullMQ's documentation advises. An HTTP intake adds
 * jobs with the client's Idempotency-Key as the BullMQ job id (BullMQ ignores
 * a second add with the same id), three attempts with exponential backoff;
 * one Worker with `concurrency` as the in-flight limit submits each job to the
 * provider under the same key on every attempt, waits for the signed
 * completion webhook and persists every progress webhook with
 * `job.updateProgress`, which is how BullMQ stores progress and streams it to
 * QueueEvents listeners. A request that names a `priority` gets BullMQ's own
 * job priority (`PEER_PRIORITIES`); one that names none is added as BullMQ
 * adds jobs by default, first in, first out. `POST /v1/jobs/batch` adds up
 * to a thousand such jobs with one `Queue.addBulk`. The provider is the simulator
 * Longhaul runs against, in this process, as in Longhaul's local stack.
 *
 * Rate limits as BullMQ's documentation sets them: a provider's 429 rate-limits
 * the queue for the Retry-After it names (`Queue.rateLimit`) and moves the job
 * back to wait with `Worker.RateLimitError`, which spends no attempt; a
 * declared rate (PEER_RATE_PER_MINUTE, PEER_RATE_BURST) is the Worker's
 * `limiter`, its burst of jobs per window of the same rate. Any other refusal
 * (a 503 of an outage) fails the attempt, retried as every failure is.
 *
 * Run by bench/peer/bullmq.ts as `tsx bench/peer/server.ts`. Environment:
 * REDIS_PORT (required), PEER_QUEUE, PEER_LIMIT, PEER_ATTEMPT_TIMEOUT_MS,
 * PEER_RATE_PER_MINUTE, PEER_RATE_BURST, SIM_JOB_MS, SIM_PROGRESS_HZ,
 * SIM_IDEMPOTENT. Prints
 * `bullmq peer: ready at <url> provider <url>` once it takes requests.
 */

const HOST = '127.0.0.1';
const MAX_BODY_BYTES = 1024 * 1024;
/** As many jobs as Longhaul's batch route takes in one request. */
const MAX_BATCH_JOBS = 1000;
const SIGNATURE_TOLERANCE_SECONDS = 300;
/** The provider contract's Idempotency-Key, less `:`, which BullMQ does not allow in a job id. */
const IDEMPOTENCY_KEY = /^[\x21-\x39\x3b-\x7e]{1,255}$/;

interface PeerEnv {
  readonly redisPort: number;
  /** Peers that share one Redis each keep their own queue. */
  readonly queue: string;
  readonly limit: number;
  /** The Worker's `limiter`: `max` jobs every `duration` ms; absent, none. */
  readonly limiter?: { readonly max: number; readonly duration: number };
  readonly attemptTimeoutMs: number;
  readonly simJobMs: number;
  readonly simProgressHz: number;
  readonly simIdempotent: boolean;
}

interface GenerationRequest {
  readonly type: 'image.generate';
  readonly input: { readonly prompt: string };
}

/** What `GET /v1/jobs/{id}` answers: BullMQ's state and its own timestamps of the job. */
export interface PeerJob {
  readonly id: string;
  readonly status: string;
  readonly progress: unknown;
  readonly attemptsMade: number;
  /** When the job was added (BullMQ's `timestamp`). */
  readonly createdAt: string;
  /** When a worker first took it (`processedOn`). */
  readonly startedAt?: string;
  /** When it completed or failed for good (`finishedOn`). */
  readonly finishedAt?: string;
}

/** What the bench reads from `/_peer/stats`; counters since start. */
export interface PeerStats {
  /** Verified progress webhooks received. */
  readonly progressEvents: number;
  /** `job.updateProgress` calls that completed, i.e. progress values persisted in Redis. */
  readonly progressWrites: number;
  /** Verified succeeded, failed or canceled webhooks received. */
  readonly outcomeEvents: number;
  /** Webhooks answered 401 for a missing, stale or wrong signature. */
  readonly rejectedWebhooks: number;
  /** Provider submissions that threw or answered an error, 429s included. */
  readonly submitErrors: number;
  /** Provider submissions answered 429, each of which rate-limited the queue. */
  readonly throttled: number;
  /** Attempts that ended in an error, retried or not (the Worker's `failed` events). */
  readonly failedAttempts: number;
  /** BullMQ's job counts per state. */
  readonly jobCounts: Record<string, number>;
}

export interface PeerInfo {
  readonly url: string;
  readonly providerUrl: string;
  readonly limit: number;
  readonly attemptTimeoutMs: number;
}

class HttpError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

const jobRequestSchema = z.strictObject({
  type: z.literal('image.generate'),
  input: z.strictObject({ prompt: z.string().min(1).max(4000) }),
  priority: z.enum(JOB_PRIORITIES).optional(),
});

const batchRequestSchema = z.strictObject({
  items: z
    .array(
      jobRequestSchema.extend({
        idempotencyKey: z
          .string()
          .regex(IDEMPOTENCY_KEY)
          .refine((key) => !/^\d+$/.test(key), 'must not be a plain integer'),
      }),
    )
    .min(1)
    .max(MAX_BATCH_JOBS),
});

const providerEventSchema = z.discriminatedUnion('type', [
  z.looseObject({ type: z.literal('progress'), id: z.string(), progress: z.number(), at: z.string() }),
  z.looseObject({ type: z.literal('succeeded'), id: z.string(), output: z.looseObject({}), at: z.string() }),
  z.looseObject({
    type: z.literal('failed'),
    id: z.string(),
    error: z.object({ code: z.string(), message: z.string() }),
    at: z.string(),
  }),
  z.looseObject({ type: z.literal('canceled'), id: z.string(), at: z.string() }),
]);

const submitAnswerSchema = z.object({ id: z.string().min(1) });

function readEnv(): PeerEnv {
  const number = (name: string, fallback?: number): number => {
    const text = process.env[name];
    const value = text === undefined || text === '' ? fallback : Number(text);
    if (value === undefined || !Number.isFinite(value) || value <= 0) {
      throw new Error(`${name} must be a positive number, got ${JSON.stringify(text)}`);
    }
    return value;
  };
  const ratePerMinute = process.env.PEER_RATE_PER_MINUTE ? number('PEER_RATE_PER_MINUTE') : undefined;
  const burst = number('PEER_RATE_BURST', 1);
  return {
    redisPort: number('REDIS_PORT'),
    queue: process.env.PEER_QUEUE || 'generations',
    limit: number('PEER_LIMIT', 5),
    ...(ratePerMinute === undefined
      ? {}
      : { limiter: { max: burst, duration: Math.round((burst * 60_000) / ratePerMinute) } }),
    attemptTimeoutMs: number('PEER_ATTEMPT_TIMEOUT_MS', 110_000),
    simJobMs: number('SIM_JOB_MS', 1000),
    simProgressHz: number('SIM_PROGRESS_HZ', 10),
    simIdempotent: (process.env.SIM_IDEMPOTENT ?? '1') === '1',
  };
}

class Counters {
  progressEvents = 0;
  progressWrites = 0;
  outcomeEvents = 0;
  rejectedWebhooks = 0;
  submitErrors = 0;
  throttled = 0;
  failedAttempts = 0;
}

/** A 429: the provider took nothing and names how long to wait. */
class ProviderThrottledError extends Error {
  constructor(
    readonly retryAfterMs: number,
    message: string,
  ) {
    super(message);
  }
}

/** Retry-After in seconds, as the providers send it; a second when it is missing or unreadable. */
function retryAfterMs(header: string | null): number {
  const seconds = Number(header);
  return Number.isFinite(seconds) && seconds > 0 ? seconds * 1000 : 1000;
}

/** The provider's generation API as the worker calls it. */
class ProviderClient {
  constructor(
    private readonly baseUrl: string,
    private readonly webhookUrl: string,
  ) {}

  /** Starts a generation and returns its id; throws on a network error or a non-2xx answer. */
  async submit(idempotencyKey: string, request: GenerationRequest, signal?: AbortSignal): Promise<string> {
    const timeout = AbortSignal.timeout(10_000);
    const response = await fetch(`${this.baseUrl}/v1/generations`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'idempotency-key': idempotencyKey },
      body: JSON.stringify({ type: request.type, input: request.input, webhookUrl: this.webhookUrl }),
      signal: signal ? AbortSignal.any([signal, timeout]) : timeout,
    });
    const text = await response.text();
    if (response.status === 429) {
      throw new ProviderThrottledError(
        retryAfterMs(response.headers.get('retry-after')),
        `provider answered 429: ${text.slice(0, 200)}`,
      );
    }
    if (!response.ok) throw new Error(`provider answered ${response.status}: ${text.slice(0, 200)}`);
    return submitAnswerSchema.parse(JSON.parse(text)).id;
  }
}

async function main(): Promise<void> {
  const env = readEnv();
  const counters = new Counters();
  const webhookSecret = randomBytes(32).toString('hex');
  const events = new GenerationEvents(10 * 60_000, 10_000);
  const connection = { host: HOST, port: env.redisPort };

  const simulator = await startSimulator({
    jobMs: env.simJobMs,
    progressHz: env.simProgressHz,
    idempotent: env.simIdempotent,
    webhookSecret,
  });
  // An HTTP intake should fail fast while Redis is unreachable rather than hold the request.
  const queue = new Queue<GenerationRequest, GenerationOutput>(env.queue, {
    connection: { ...connection, enableOfflineQueue: false },
  });
  await queue.waitUntilReady();

  const server = createServer();
  await new Promise<void>((resolveListen, rejectListen) => {
    server.once('error', rejectListen);
    server.listen(0, HOST, () => resolveListen());
  });
  const url = `http://${HOST}:${(server.address() as AddressInfo).port}`;
  const provider = new ProviderClient(simulator.url, `${url}/provider/events`);

  const processGeneration = async (
    job: Job<GenerationRequest, GenerationOutput>,
    _token?: string,
    signal?: AbortSignal,
  ) => {
    const key = job.id;
    if (key === undefined) throw new Error('every job is added with its Idempotency-Key as the job id');
    let generationId: string;
    try {
      generationId = await provider.submit(key, job.data, signal);
    } catch (error) {
      counters.submitErrors += 1;
      if (signal?.aborted) throw new Error(`attempt cancelled: ${String(signal.reason)}`);
      if (error instanceof ProviderThrottledError) {
        counters.throttled += 1;
        await queue.rateLimit(error.retryAfterMs);
        throw Worker.RateLimitError();
      }
      throw error;
    }
    let reported = -1;
    const outcome = await events.watch(
      generationId,
      async (progress) => {
        // Every tick is written, as the provider sends it; only a replayed older tick is skipped.
        if (progress < reported) return;
        reported = progress;
        await job.updateProgress(progress);
        counters.progressWrites += 1;
      },
      { timeoutMs: env.attemptTimeoutMs, signal },
    );
    if (outcome.type === 'succeeded') return outcome.output;
    throw new Error(`generation ${generationId} ${outcome.type}`);
  };

  // Workers need maxRetriesPerRequest: null so their blocking commands survive a Redis reconnect.
  const worker = new Worker<GenerationRequest, GenerationOutput>(env.queue, processGeneration, {
    connection: { ...connection, maxRetriesPerRequest: null },
    concurrency: env.limit,
    ...(env.limiter ? { limiter: env.limiter } : {}),
  });
  worker.on('failed', () => {
    counters.failedAttempts += 1;
  });
  worker.on('error', (error) => process.stderr.write(`bullmq peer: worker error: ${error.message}\n`));
  await worker.waitUntilReady();

  const info: PeerInfo = {
    url,
    providerUrl: simulator.url,
    limit: env.limit,
    attemptTimeoutMs: env.attemptTimeoutMs,
  };
  const routes = {
    async addJob(req: IncomingMessage, res: ServerResponse) {
      const key = singleHeader(req, 'idempotency-key');
      if (key === undefined || !IDEMPOTENCY_KEY.test(key)) {
        throw new HttpError(400, 'Idempotency-Key is required: 1 to 255 visible ASCII characters, no ":".');
      }
      if (/^\d+$/.test(key)) throw new HttpError(400, 'Idempotency-Key must not be a plain integer.');
      const { priority, ...request } = parseJobRequest(await readBody(req));
      const job = await queue.add('generate', request, jobOptions(key, priority));
      sendJson(res, 202, { id: job.id });
    },
    /**
     * Many jobs in one request, added with one `Queue.addBulk`: BullMQ's own
     * way to add jobs in bulk, one round trip to Redis for all of them.
     */
    async addJobs(req: IncomingMessage, res: ServerResponse) {
      const parsed = batchRequestSchema.safeParse(parseJson(await readBody(req)));
      if (!parsed.success) throw new HttpError(400, z.prettifyError(parsed.error));
      const jobs = await queue.addBulk(
        parsed.data.items.map(({ idempotencyKey, priority, ...request }) => ({
          name: 'generate',
          data: request,
          opts: jobOptions(idempotencyKey, priority),
        })),
      );
      sendJson(res, 200, { items: jobs.map((job) => ({ id: job.id })) });
    },
    async describeJob(res: ServerResponse, id: string) {
      const job = await queue.getJob(id);
      if (!job) throw new HttpError(404, `No job ${id}.`);
      const at = (ms: number | undefined) => (ms === undefined ? undefined : new Date(ms).toISOString());
      const answer: PeerJob = {
        id,
        status: await job.getState(),
        progress: job.progress,
        attemptsMade: job.attemptsMade,
        createdAt: new Date(job.timestamp).toISOString(),
        startedAt: at(job.processedOn),
        finishedAt: at(job.finishedOn),
      };
      sendJson(res, 200, answer);
    },
    async receiveProviderEvent(req: IncomingMessage, res: ServerResponse) {
      const body = await readBody(req);
      const signature = singleHeader(req, PROVIDER_SIGNATURE_HEADER.toLowerCase());
      const now = Math.floor(Date.now() / 1000);
      if (!verifyProviderSignature(webhookSecret, signature, body, now, SIGNATURE_TOLERANCE_SECONDS)) {
        counters.rejectedWebhooks += 1;
        throw new HttpError(401, 'Invalid Provider-Signature.');
      }
      const event = parseProviderEvent(body);
      if (event.type === 'progress') counters.progressEvents += 1;
      else counters.outcomeEvents += 1;
      await events.deliver(event);
      res.writeHead(204).end();
    },
    async stats(res: ServerResponse) {
      const jobCounts = await queue.getJobCounts('waiting', 'active', 'delayed', 'completed', 'failed');
      const stats: PeerStats = { ...counters, jobCounts };
      sendJson(res, 200, stats);
    },
  };

  server.on('request', (req: IncomingMessage, res: ServerResponse) => {
    const path = new URL(req.url ?? '/', url).pathname;
    const method = req.method ?? 'GET';
    const jobRoute = /^\/v1\/jobs\/([^/]+)$/.exec(path);
    const handled = (async () => {
      if (method === 'POST' && path === '/v1/jobs') return routes.addJob(req, res);
      if (method === 'POST' && path === '/v1/jobs/batch') return routes.addJobs(req, res);
      if (method === 'GET' && jobRoute) return routes.describeJob(res, decodeURIComponent(jobRoute[1] ?? ''));
      if (method === 'POST' && path === '/provider/events') return routes.receiveProviderEvent(req, res);
      if (method === 'GET' && path === '/_peer/stats') return routes.stats(res);
      if (method === 'GET' && path === '/_peer/info') return sendJson(res, 200, info);
      throw new HttpError(404, `No route for ${method} ${path}.`);
    })();
    handled.catch((error: unknown) => {
      if (error instanceof HttpError) return sendJson(res, error.status, { error: error.message });
      process.stderr.write(`bullmq peer: ${method} ${path} failed: ${describe(error)}\n`);
      sendJson(res, 500, { error: 'Internal error.' });
    });
  });

  let stopping = false;
  const stop = async () => {
    if (stopping) return;
    stopping = true;
    // The worker goes first: its active jobs still need the webhook route to finish.
    await closeWorker(worker, 5000);
    server.close();
    server.closeAllConnections();
    await queue.close();
    await simulator.close();
    process.exit(0);
  };
  for (const signal of ['SIGTERM', 'SIGINT'] as const) {
    process.once(signal, () => {
      stop().catch((error: unknown) => {
        process.stderr.write(`bullmq peer: shutdown failed: ${describe(error)}\n`);
        process.exit(1);
      });
    });
  }

  process.stdout.write(`bullmq peer: ready at ${url} provider ${simulator.url}\n`);
}

/**
 * BullMQ's graceful shutdown: no new jobs, and the active ones finish first.
 * Those still waiting on the provider after `graceMs` are cancelled through
 * their AbortSignal; their attempt fails and BullMQ retries it later, under
 * the same Idempotency-Key.
 */
async function closeWorker(worker: Worker, graceMs: number): Promise<void> {
  const closed = worker.close();
  const timer = setTimeout(() => worker.cancelAllJobs('the peer is shutting down'), graceMs);
  try {
    await closed;
  } finally {
    clearTimeout(timer);
  }
}

/** How every job is added, alone or in bulk: keyed by its Idempotency-Key, three attempts. */
function jobOptions(key: string, priority: JobPriority | undefined): JobsOptions {
  return {
    jobId: key,
    attempts: 3,
    backoff: { type: 'exponential', delay: 1000 },
    removeOnComplete: false,
    ...(priority === undefined ? {} : { priority: PEER_PRIORITIES[priority] }),
  };
}

function parseJobRequest(body: string): GenerationRequest & { readonly priority?: JobPriority } {
  const parsed = jobRequestSchema.safeParse(parseJson(body));
  if (!parsed.success) throw new HttpError(400, z.prettifyError(parsed.error));
  return parsed.data;
}

function parseProviderEvent(body: string): ProviderEvent {
  const parsed = providerEventSchema.safeParse(parseJson(body));
  if (!parsed.success) throw new HttpError(400, z.prettifyError(parsed.error));
  return parsed.data as ProviderEvent;
}

function parseJson(body: string): unknown {
  try {
    return JSON.parse(body);
  } catch {
    throw new HttpError(400, 'The body is not valid JSON.');
  }
}

async function readBody(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > MAX_BODY_BYTES) throw new HttpError(413, 'Bodies are limited to 1 MiB.');
    chunks.push(chunk);
  }
  return Buffer.concat(chunks).toString('utf8');
}

function sendJson(res: ServerResponse, status: number, body: unknown): void {
  if (res.headersSent || res.destroyed) return;
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

function singleHeader(req: IncomingMessage, name: string): string | undefined {
  const value = req.headers[name];
  return Array.isArray(value) ? value[0] : value;
}

function describe(error: unknown): string {
  return error instanceof Error ? (error.stack ?? error.message) : String(error);
}

main().catch((error: unknown) => {
  process.stderr.write(`bullmq peer: failed to start: ${describe(error)}\n`);
  process.exit(1);
});
