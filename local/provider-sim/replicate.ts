import { createHash, createHmac, randomBytes } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import * as z from 'zod';
import { DEFAULT_REPLICATE_WEBHOOK_SECRET } from './defaults';
import type { Dialect, SimulatorContext } from './dialect';
import { answerAccepted, type FaultMode, jobFault } from './faults';
import { describeIssues, HttpError, hasApiKey, readJson, sendJson } from './http';
import type { Job, JobOutcome } from './jobs';
import { generationOutput, SAMPLE_PNG_BASE64, type TranscriptOutput } from './outputs';

/**
 * Replicate's predictions API (provider `replicate`) under `/replicate/v1`, as
 * its HTTP reference and the `replicate` npm client use it: create (official
 * models and versions), get, cancel. No deduplication: every accepted create
 * is a new prediction and a new charge, `Idempotency-Key` or not. Webhooks are
 * signed per Standard Webhooks, `logs` and `output` ones at most every 500 ms.
 * Progress is what a model prints: tqdm lines in `logs`. Output files are
 * served under `/replicate/files/` and deleted `outputTtlMs` after completion,
 * as Replicate deletes API outputs after an hour.
 */

export const REPLICATE_WEBHOOK_EVENTS = ['start', 'output', 'logs', 'completed'] as const;
export type ReplicateWebhookEvent = (typeof REPLICATE_WEBHOOK_EVENTS)[number];

export type PredictionStatus = 'starting' | 'processing' | 'succeeded' | 'failed' | 'canceled';

/** The `error` of a prediction the `fail-job` fault hits. */
export const SIMULATED_PREDICTION_ERROR = 'The simulated model failed while running this prediction.';

/** Replicate sends `logs` and `output` webhooks at most this often; `start` and `completed` always go out. */
export const REPLICATE_WEBHOOK_THROTTLE_MS = 500;

/** A Standard Webhooks secret as Replicate hands them out: `whsec_` and the base64 of the signing key. */
export const REPLICATE_WEBHOOK_SECRET_FORMAT = /^whsec_[A-Za-z0-9+/]+={0,2}$/;

const PREFIX = '/replicate/v1';
const FILES_PREFIX = '/replicate/files/';

const createSchema = z.looseObject({
  input: z.record(z.string(), z.unknown()),
  version: z.string().min(1).optional(),
  webhook: z.url({ protocol: /^https?$/ }).optional(),
  webhook_events_filter: z.array(z.enum(REPLICATE_WEBHOOK_EVENTS)).min(1).optional(),
});

interface Prediction {
  readonly id: string;
  readonly model: string;
  readonly version: string;
  readonly input: Readonly<Record<string, unknown>>;
  readonly webhook: string | undefined;
  readonly webhookEventsFilter: readonly ReplicateWebhookEvent[];
  readonly createdAt: string;
  readonly outputTtlMs: number;
  readonly job: Job;
  startedAt?: string;
  completedAt?: string;
  completedAtMs?: number;
  logs: string;
  output: unknown;
  error: string | null;
  lastThrottledWebhookMs: number;
}

/** Replicate's error bodies: RFC 9457 problem details. */
function problem(status: number, title: string, detail: string, headers?: Record<string, string>): HttpError {
  return new HttpError(status, { title, detail, status }, headers);
}

export class ReplicateDialect implements Dialect {
  readonly provider = 'replicate';
  private readonly predictions = new Map<string, Prediction>();
  private readonly signingKey: Buffer;

  constructor(
    private readonly context: SimulatorContext,
    webhookSecret: string = DEFAULT_REPLICATE_WEBHOOK_SECRET,
  ) {
    if (!REPLICATE_WEBHOOK_SECRET_FORMAT.test(webhookSecret)) {
      throw new Error('Invalid simulator options: replicateWebhookSecret must be whsec_ followed by base64.');
    }
    this.signingKey = Buffer.from(webhookSecret.slice('whsec_'.length), 'base64');
  }

  async handle(req: IncomingMessage, res: ServerResponse, path: string, method: string): Promise<boolean> {
    if (path.startsWith(FILES_PREFIX)) {
      this.serveFile(res, path.slice(FILES_PREFIX.length), method);
      return true;
    }
    if (path !== PREFIX && !path.startsWith(`${PREFIX}/`)) return false;
    if (!hasApiKey(req, 'Bearer', this.context.apiKey)) {
      throw problem(401, 'Unauthenticated', 'You did not pass a valid authentication token');
    }
    const route = path.slice(PREFIX.length);
    const official = /^\/models\/([^/]+)\/([^/]+)\/predictions$/.exec(route);
    const prediction = /^\/predictions\/([^/]+)(\/cancel)?$/.exec(route);
    if (official && method === 'POST') {
      await this.create(
        req,
        res,
        `${decodeURIComponent(official[1] ?? '')}/${decodeURIComponent(official[2] ?? '')}`,
      );
    } else if (route === '/predictions' && method === 'POST') {
      await this.create(req, res, undefined);
    } else if (prediction && this.context.faults.down(this.provider)) {
      // An outage refuses reads and cancels as it refuses creates.
      throw problem(503, 'Service unavailable', 'Replicate is temporarily unavailable (simulated outage).', {
        'Retry-After': '1',
      });
    } else if (prediction?.[2] && method === 'POST') {
      const found = this.find(decodeURIComponent(prediction[1] ?? ''));
      this.context.runner.cancel(found.job);
      sendJson(res, 200, this.describe(found));
    } else if (prediction && !prediction[2] && method === 'GET') {
      sendJson(res, 200, this.describe(this.find(decodeURIComponent(prediction[1] ?? ''))));
    } else if (official || prediction || route === '/predictions') {
      throw problem(405, 'Method not allowed', `${method} is not allowed on ${route}.`);
    } else {
      throw problem(404, 'Not found', 'The requested resource could not be found.');
    }
    return true;
  }

  reset(): void {
    this.predictions.clear();
  }

  private async create(
    req: IncomingMessage,
    res: ServerResponse,
    officialModel: string | undefined,
  ): Promise<void> {
    const parsed = createSchema.safeParse(
      await readJson(req, () => problem(400, 'Bad request', 'The request body is not valid JSON.')),
    );
    if (!parsed.success) throw problem(422, 'Input validation failed', describeIssues(parsed.error));
    const body = parsed.data;
    if (officialModel === undefined && body.version === undefined) {
      throw problem(422, 'Input validation failed', 'version: Field required');
    }

    const wait = this.context.throttle(this.provider);
    if (wait !== undefined) {
      // As Replicate's API words it (Django REST framework's throttle), with the wait in Retry-After too.
      throw problem(
        429,
        'Request was throttled.',
        `Request was throttled. Expected available in ${wait} ${wait === 1 ? 'second' : 'seconds'}.`,
        { 'Retry-After': String(wait) },
      );
    }
    const fault = this.context.faults.take(this.provider);
    if (fault === 'reject') {
      throw problem(422, 'Input validation failed', 'The model rejected this input (simulated fault).');
    }
    if (fault === 'unavailable') {
      throw problem(503, 'Service unavailable', 'Replicate is temporarily unavailable (simulated fault).', {
        'Retry-After': '1',
      });
    }
    const created = this.accept(body, officialModel, fault);
    answerAccepted(fault, req, () => sendJson(res, 201, this.describe(created)));
  }

  private accept(
    body: z.infer<typeof createSchema>,
    officialModel: string | undefined,
    fault: FaultMode | undefined,
  ): Prediction {
    const { jobMs, progressHz, outputTtlMs } = this.context.config(this.provider);
    const id = predictionId();
    const { model, version } = identify(officialModel, body.version);
    const prediction: Prediction = {
      id,
      model,
      version,
      input: body.input,
      webhook: body.webhook,
      webhookEventsFilter: body.webhook_events_filter ?? REPLICATE_WEBHOOK_EVENTS,
      createdAt: new Date().toISOString(),
      outputTtlMs,
      logs: '',
      output: null,
      error: null,
      lastThrottledWebhookMs: Number.NEGATIVE_INFINITY,
      job: this.context.runner.start({
        id,
        provider: this.provider,
        idempotencyKey: null,
        jobMs,
        progressHz,
        fault: jobFault(fault),
        hooks: {
          progress: (tick, ticks, percent) => this.progress(prediction, tick, ticks, percent),
          finished: (outcome, at) => this.finish(prediction, outcome, at),
        },
      }),
    };
    this.predictions.set(id, prediction);
    this.notify(prediction, 'start');
    return prediction;
  }

  private progress(prediction: Prediction, tick: number, ticks: number, percent: number): void {
    prediction.startedAt ??= new Date().toISOString();
    // The model starts working at acceptance; the first line only shows up after its first step.
    const elapsedMs = Date.now() - Date.parse(prediction.createdAt);
    prediction.logs += `${tqdmLine(tick, ticks, percent, elapsedMs)}\n`;
    this.notify(prediction, 'logs');
  }

  private finish(prediction: Prediction, outcome: JobOutcome, at: Date): void {
    const now = at.getTime();
    prediction.completedAt = at.toISOString();
    prediction.completedAtMs = now;
    if (outcome === 'succeeded') {
      prediction.output = this.outputFor(prediction);
      this.notify(prediction, 'output');
    } else if (outcome === 'failed') {
      prediction.error = SIMULATED_PREDICTION_ERROR;
    }
    this.notify(prediction, 'completed');
  }

  /** An image job (`input.prompt`) yields file URLs; an audio job (`input.audio`) a Whisper-style transcript. */
  private outputFor(prediction: Prediction): unknown {
    if (prediction.input.audio !== undefined && prediction.input.prompt === undefined) {
      const { transcript } = generationOutput('audio.transcribe', prediction.input) as TranscriptOutput;
      return {
        transcription: transcript.text,
        segments: transcript.segments,
        detected_language: transcript.language,
      };
    }
    return [`${this.context.origin()}${FILES_PREFIX}${prediction.id}/out-0.png`];
  }

  private notify(prediction: Prediction, event: ReplicateWebhookEvent): void {
    if (!prediction.webhook || prediction.job.fault === 'lose-webhooks') return;
    if (!prediction.webhookEventsFilter.includes(event)) return;
    if (event === 'logs' || event === 'output') {
      const now = Date.now();
      if (now - prediction.lastThrottledWebhookMs < REPLICATE_WEBHOOK_THROTTLE_MS) return;
      prediction.lastThrottledWebhookMs = now;
    }
    const body = JSON.stringify(this.describe(prediction));
    const messageId = `msg_${randomBytes(16).toString('hex')}`;
    this.context.webhooks.enqueue({
      jobId: prediction.id,
      url: prediction.webhook,
      label: event,
      final: event === 'completed',
      body,
      headers: () => this.sign(messageId, body),
    });
  }

  /** Standard Webhooks: the id stays the same across retries, the timestamp and signature are the attempt's. */
  private sign(messageId: string, body: string): Record<string, string> {
    const timestamp = String(Math.floor(Date.now() / 1000));
    const signature = createHmac('sha256', this.signingKey)
      .update(`${messageId}.${timestamp}.${body}`)
      .digest('base64');
    return {
      'webhook-id': messageId,
      'webhook-timestamp': timestamp,
      'webhook-signature': `v1,${signature}`,
    };
  }

  private serveFile(res: ServerResponse, rest: string, method: string): void {
    const match = /^([^/]+)\/out-0\.png$/.exec(rest);
    const prediction = match ? this.predictions.get(decodeURIComponent(match[1] ?? '')) : undefined;
    if (!prediction || !this.hasFiles(prediction)) {
      throw problem(404, 'Not found', 'The requested file does not exist or has been deleted.');
    }
    if (method !== 'GET' && method !== 'HEAD') throw problem(405, 'Method not allowed', 'Use GET.');
    const png = Buffer.from(SAMPLE_PNG_BASE64, 'base64');
    res.writeHead(200, { 'content-type': 'image/png', 'content-length': png.length });
    res.end(method === 'HEAD' ? undefined : png);
  }

  private hasFiles(prediction: Prediction): boolean {
    return Array.isArray(prediction.output) && !this.dataRemoved(prediction);
  }

  private dataRemoved(prediction: Prediction): boolean {
    return (
      prediction.completedAtMs !== undefined &&
      Date.now() >= prediction.completedAtMs + prediction.outputTtlMs
    );
  }

  private find(id: string): Prediction {
    const prediction = this.predictions.get(id);
    if (!prediction) throw problem(404, 'Not found', 'The requested resource could not be found.');
    return prediction;
  }

  /** The prediction object as Replicate's API and webhooks carry it; once deleted, input and output are gone. */
  private describe(prediction: Prediction) {
    const base = `${this.context.origin()}${PREFIX}/predictions/${prediction.id}`;
    const removed = this.dataRemoved(prediction);
    const { startedAt, completedAt } = prediction;
    return {
      id: prediction.id,
      model: prediction.model,
      version: prediction.version,
      input: removed ? {} : prediction.input,
      logs: prediction.logs,
      output: removed ? null : prediction.output,
      data_removed: removed,
      error: prediction.error,
      status: statusOf(prediction.job),
      created_at: prediction.createdAt,
      started_at: startedAt ?? null,
      completed_at: completedAt ?? null,
      urls: { get: base, cancel: `${base}/cancel` },
      metrics:
        startedAt && completedAt
          ? { predict_time: (Date.parse(completedAt) - Date.parse(startedAt)) / 1000 }
          : {},
      ...(prediction.webhook
        ? { webhook: prediction.webhook, webhook_events_filter: prediction.webhookEventsFilter }
        : {}),
    };
  }
}

function statusOf(job: Job): PredictionStatus {
  if (job.state === 'running') return job.ticksDone === 0 ? 'starting' : 'processing';
  return job.state;
}

/**
 * `version` may be a bare version id or `owner/name:id`; an official model
 * runs its current version, which the simulator names after the model.
 */
function identify(officialModel: string | undefined, version: string | undefined) {
  if (officialModel !== undefined) {
    return { model: officialModel, version: createHash('sha256').update(officialModel).digest('hex') };
  }
  const [model, id] = (version ?? '').includes(':') ? (version ?? '').split(':', 2) : [undefined, version];
  return { model: model ?? 'replicate-sim/unnamed', version: id ?? '' };
}

/** Replicate prediction ids: 26 characters of lowercase base32. */
function predictionId(): string {
  const alphabet = 'abcdefghijklmnopqrstuvwxyz234567';
  return [...randomBytes(26)].map((byte) => alphabet[byte % 32]).join('');
}

const BAR_WIDTH = 10;
const BLOCKS = ['', '▏', '▎', '▍', '▌', '▋', '▊', '▉'];

/** One line as tqdm prints it, e.g. ` 45%|████▌     | 9/20 [00:01<00:01,  8.00it/s]`. */
export function tqdmLine(tick: number, ticks: number, percent: number, elapsedMs: number): string {
  const eighths = Math.floor((tick / ticks) * BAR_WIDTH * 8);
  const full = Math.floor(eighths / 8);
  const partial = full < BAR_WIDTH ? (BLOCKS[eighths % 8] ?? '') : '';
  const bar = `${'█'.repeat(full)}${partial}`.padEnd(BAR_WIDTH, ' ');
  const rate = elapsedMs > 0 ? (tick * 1000) / elapsedMs : 0;
  const remainingMs = rate > 0 ? ((ticks - tick) / rate) * 1000 : 0;
  return `${String(percent).padStart(3, ' ')}%|${bar}| ${tick}/${ticks} [${clock(elapsedMs)}<${clock(remainingMs)}, ${rate.toFixed(2).padStart(5, ' ')}it/s]`;
}

function clock(ms: number): string {
  const seconds = Math.round(ms / 1000);
  return `${String(Math.floor(seconds / 60)).padStart(2, '0')}:${String(seconds % 60).padStart(2, '0')}`;
}
