import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { z } from 'zod';
import { type GenerationOutput, type GenerationType, generationOutput } from './outputs';
import { type DeliveryPolicy, type ProviderError, type ProviderEvent, WebhookDispatcher } from './webhooks';

/**
 * The simulated media provider (contract section 3): a slow, paid, external
 * API with the failure modes Longhaul has to survive. Jobs run on timers and
 * report through signed webhooks; the `/_sim/*` routes let tests inspect what
 * was charged and inject faults.
 */

export interface SimulatorOptions {
  /** 0 picks a free port. @default 0 */
  readonly port?: number;
  /** @default '127.0.0.1' */
  readonly host?: '127.0.0.1';
  /** How long a generation runs, fixed at submission. */
  readonly jobMs: number;
  /** Progress ticks (and progress webhooks) per second. */
  readonly progressHz: number;
  /** Whether a repeated `Idempotency-Key` returns the first generation instead of charging again. */
  readonly idempotent: boolean;
  /** Secret for the `Provider-Signature` on every webhook. */
  readonly webhookSecret: string;
  /** When set, `/v1/*` requires `Authorization: Bearer <apiKey>`. */
  readonly apiKey?: string;
  /** Operational messages (submissions, outcomes, failed deliveries). @default silent */
  readonly log?: (line: string) => void;
  /** Webhook retry and queueing policy. @default defaultDeliveryPolicy */
  readonly delivery?: DeliveryPolicy;
}

export interface RunningSimulator {
  readonly url: string;
  readonly port: number;
  /** Stops every timer and delivery and drops open connections, held answers included. */
  close(): Promise<void>;
}

export const FAULT_MODES = [
  'reject',
  'unavailable',
  'accept-then-drop',
  'timeout',
  'lose-webhooks',
  'fail-job',
  'stall',
] as const;
export type FaultMode = (typeof FAULT_MODES)[number];

export type GenerationStatus = 'queued' | 'running' | 'succeeded' | 'failed' | 'canceled';

/** What `/_sim/config` changes; each generation keeps the values it was submitted with. */
export interface SimulatorConfig {
  readonly jobMs: number;
  readonly progressHz: number;
  readonly idempotent: boolean;
}

export interface LedgerEntry {
  readonly id: string;
  readonly idempotencyKey: string | null;
  readonly acceptedAt: string;
}

export interface Ledger {
  readonly submissions: readonly LedgerEntry[];
  readonly maxConcurrent: number;
  readonly running: number;
}

/** The failure a generation itself carries when the `fail-job` fault hits it. */
export const SIMULATED_GENERATION_FAILURE: ProviderError = {
  code: 'generation_failed',
  message: 'The simulated provider failed this generation while it was running.',
};

const MAX_BODY_BYTES = 1024 * 1024;

const configSchema = z.strictObject({
  jobMs: z.number().int().min(1).max(86_400_000),
  progressHz: z.number().positive().max(1000),
  idempotent: z.boolean(),
});

const configPatchSchema = configSchema.partial();

const faultSchema = z.strictObject({
  mode: z.enum(FAULT_MODES),
  count: z.number().int().min(1).max(10_000).default(1),
});

const submissionSchema = z.discriminatedUnion('type', [
  z.object({
    type: z.literal('image.generate'),
    input: z.looseObject({ prompt: z.string().min(1).max(4000) }),
    webhookUrl: z.url({ protocol: /^https?$/ }),
  }),
  z.object({
    type: z.literal('audio.transcribe'),
    input: z.looseObject({ language: z.string().min(1).optional() }),
    webhookUrl: z.url({ protocol: /^https?$/ }),
  }),
]);

/** Per the IETF Idempotency-Key draft as Longhaul applies it: 1..255 visible ASCII characters. */
const IDEMPOTENCY_KEY = /^[\x21-\x7e]{1,255}$/;

type JobFault = Extract<FaultMode, 'lose-webhooks' | 'fail-job' | 'stall'>;

interface Generation {
  readonly id: string;
  readonly type: GenerationType;
  readonly input: Readonly<Record<string, unknown>>;
  readonly webhookUrl: string;
  readonly fault: JobFault | undefined;
  readonly startedAtMs: number;
  /** Ticks over the whole run; the last one reaches 100. */
  readonly ticks: number;
  readonly tickIntervalMs: number;
  ticksDone: number;
  status: GenerationStatus;
  progress: number;
  output?: GenerationOutput;
  error?: ProviderError;
  timer?: NodeJS.Timeout;
}

class HttpError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

function isActive(status: GenerationStatus): boolean {
  return status === 'queued' || status === 'running';
}

/**
 * The fault queue: a FIFO of modes, each posted with a count. One fault is
 * consumed by every submission request that passes authentication and body
 * validation, idempotent repeats included, because faults model what happens
 * to a request, and a client's retry is a request too. A malformed or
 * unauthorised request consumes none, so a buggy test client does not eat the
 * fault meant for the real attempt. On an idempotent repeat the job faults
 * (`lose-webhooks`, `fail-job`, `stall`) are consumed without effect: the
 * generation already exists and keeps the behaviour it was accepted with.
 */
class FaultQueue {
  private readonly pending: { mode: FaultMode; remaining: number }[] = [];

  add(mode: FaultMode, count: number): void {
    this.pending.push({ mode, remaining: count });
  }

  take(): FaultMode | undefined {
    const head = this.pending[0];
    if (!head) return undefined;
    head.remaining -= 1;
    if (head.remaining === 0) this.pending.shift();
    return head.mode;
  }

  clear(): void {
    this.pending.length = 0;
  }
}

class ProviderSimulator {
  private config: SimulatorConfig;
  private readonly initialConfig: SimulatorConfig;
  private readonly generations = new Map<string, Generation>();
  private readonly firstIdByKey = new Map<string, string>();
  private submissions: LedgerEntry[] = [];
  private readonly faults = new FaultQueue();
  private running = 0;
  private maxConcurrent = 0;
  private readonly webhooks: WebhookDispatcher;
  private readonly apiKeyDigest: Buffer | undefined;

  constructor(
    config: SimulatorConfig,
    webhookSecret: string,
    apiKey: string | undefined,
    private readonly log: (line: string) => void,
    delivery: DeliveryPolicy | undefined,
  ) {
    this.config = config;
    this.initialConfig = config;
    this.webhooks = new WebhookDispatcher(webhookSecret, log, delivery);
    this.apiKeyDigest = apiKey === undefined ? undefined : sha256(apiKey);
  }

  async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const path = new URL(req.url ?? '/', 'http://simulator').pathname;
    const method = req.method ?? 'GET';
    const generationRoute = /^\/v1\/generations\/([^/]+)(\/cancel)?$/.exec(path);

    if (path.startsWith('/v1/')) this.authorize(req);

    if (path === '/v1/generations') {
      allow(method, 'POST');
      return this.submit(req, res);
    }
    if (generationRoute) {
      const id = decodeURIComponent(generationRoute[1] ?? '');
      if (generationRoute[2]) {
        allow(method, 'POST');
        return sendJson(res, 200, this.cancel(id));
      }
      allow(method, 'GET');
      return sendJson(res, 200, this.describe(this.find(id)));
    }
    switch (path) {
      case '/_sim/ledger':
        allow(method, 'GET');
        return sendJson(res, 200, this.ledger());
      case '/_sim/faults': {
        allow(method, 'POST');
        const fault = parse(faultSchema, await readJson(req));
        this.faults.add(fault.mode, fault.count);
        this.log(`fault ${fault.mode} armed for the next ${fault.count} submission(s)`);
        res.writeHead(204).end();
        return;
      }
      case '/_sim/config':
        allow(method, 'GET', 'POST');
        if (method === 'POST') {
          const patch = parse(configPatchSchema, await readJson(req));
          this.config = { ...this.config, ...patch };
          this.log(`config ${JSON.stringify(this.config)}`);
        }
        return sendJson(res, 200, this.config);
      case '/_sim/reset':
        allow(method, 'POST');
        this.reset();
        res.writeHead(204).end();
        return;
      default:
        throw new HttpError(404, 'not_found', `No route for ${path}.`);
    }
  }

  /** Back to the state right after start: no generations, charges, faults or config changes. */
  reset(): void {
    this.stopEverything();
    this.generations.clear();
    this.firstIdByKey.clear();
    this.submissions = [];
    this.faults.clear();
    this.running = 0;
    this.maxConcurrent = 0;
    this.config = this.initialConfig;
  }

  stopEverything(): void {
    for (const generation of this.generations.values()) clearTimeout(generation.timer);
    this.webhooks.abortAll();
  }

  private authorize(req: IncomingMessage): void {
    if (!this.apiKeyDigest) return;
    const match = /^Bearer (.+)$/.exec(req.headers.authorization ?? '');
    if (!match?.[1] || !timingSafeEqual(sha256(match[1]), this.apiKeyDigest)) {
      throw new HttpError(401, 'unauthorized', 'Missing or invalid API key.');
    }
  }

  private async submit(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const submission = parse(submissionSchema, await readJson(req));
    const idempotencyKey = singleHeader(req, 'idempotency-key');
    if (idempotencyKey !== undefined && !IDEMPOTENCY_KEY.test(idempotencyKey)) {
      throw new HttpError(
        400,
        'invalid_request',
        'Idempotency-Key must be 1 to 255 visible ASCII characters.',
      );
    }

    const fault = this.faults.take();
    if (fault === 'reject') {
      throw new HttpError(400, 'invalid_request', 'The provider rejected this request (simulated fault).');
    }
    if (fault === 'unavailable') {
      res.setHeader('Retry-After', '1');
      throw new HttpError(
        503,
        'service_unavailable',
        'The provider is temporarily unavailable (simulated fault).',
      );
    }

    const firstId =
      this.config.idempotent && idempotencyKey !== undefined
        ? this.firstIdByKey.get(idempotencyKey)
        : undefined;
    const id = firstId ?? this.accept(submission, idempotencyKey, fault).id;
    if (firstId) this.log(`repeat of ${idempotencyKey} answered with ${firstId}, not charged`);

    if (fault === 'accept-then-drop') {
      // Accepted and charged, then the caller sees a reset instead of an answer.
      req.socket.resetAndDestroy();
      return;
    }
    if (fault === 'timeout') {
      // The answer never comes; the connection stays open until the caller gives up or the simulator closes.
      return;
    }
    if (firstId) res.setHeader('Idempotent-Replayed', 'true');
    sendJson(res, 201, { id });
  }

  private accept(
    submission: z.infer<typeof submissionSchema>,
    idempotencyKey: string | undefined,
    fault: FaultMode | undefined,
  ): Generation {
    const now = Date.now();
    const { jobMs, progressHz } = this.config;
    const ticks = Math.max(1, Math.round((jobMs / 1000) * progressHz));
    const generation: Generation = {
      id: `gen_${randomBytes(12).toString('hex')}`,
      type: submission.type,
      input: submission.input,
      webhookUrl: submission.webhookUrl,
      fault: fault === 'lose-webhooks' || fault === 'fail-job' || fault === 'stall' ? fault : undefined,
      startedAtMs: now,
      ticks,
      tickIntervalMs: jobMs / ticks,
      ticksDone: 0,
      status: 'running',
      progress: 0,
    };
    this.generations.set(generation.id, generation);
    this.submissions.push({
      id: generation.id,
      idempotencyKey: idempotencyKey ?? null,
      acceptedAt: new Date(now).toISOString(),
    });
    if (idempotencyKey !== undefined && !this.firstIdByKey.has(idempotencyKey)) {
      this.firstIdByKey.set(idempotencyKey, generation.id);
    }
    this.running += 1;
    this.maxConcurrent = Math.max(this.maxConcurrent, this.running);
    this.log(
      `accepted ${generation.id} (${generation.type}, key ${idempotencyKey ?? '-'}, ${jobMs} ms` +
        `${fault ? `, fault ${fault}` : ''})`,
    );
    this.scheduleTick(generation);
    return generation;
  }

  private scheduleTick(generation: Generation): void {
    const due = generation.startedAtMs + (generation.ticksDone + 1) * generation.tickIntervalMs;
    generation.timer = setTimeout(() => this.tick(generation), Math.max(0, due - Date.now()));
  }

  /**
   * `fail-job` and `stall` strike at the first tick past half of the run:
   * the job has visibly made progress by then, as a real one would have.
   */
  private tick(generation: Generation): void {
    generation.timer = undefined;
    if (generation.status !== 'running') return;
    const tick = generation.ticksDone + 1;
    const pastHalf = tick > Math.floor(generation.ticks / 2);
    if (generation.fault === 'fail-job' && pastHalf) {
      this.settle(generation, 'failed');
      return;
    }
    if (generation.fault === 'stall' && pastHalf) {
      // Still running as far as anyone can tell, but nothing will ever move it again.
      this.log(`${generation.id} stalled at ${generation.progress}%`);
      return;
    }
    generation.ticksDone = tick;
    generation.progress = Math.round((100 * tick) / generation.ticks);
    this.emit(generation, {
      type: 'progress',
      id: generation.id,
      progress: generation.progress,
      at: isoNow(),
    });
    if (tick === generation.ticks) this.settle(generation, 'succeeded');
    else this.scheduleTick(generation);
  }

  private settle(generation: Generation, status: 'succeeded' | 'failed' | 'canceled'): void {
    clearTimeout(generation.timer);
    generation.timer = undefined;
    if (isActive(generation.status)) this.running -= 1;
    generation.status = status;
    const at = isoNow();
    if (status === 'succeeded') {
      generation.progress = 100;
      generation.output = generationOutput(generation.type, generation.input);
      this.emit(generation, { type: 'succeeded', id: generation.id, output: generation.output, at });
    } else if (status === 'failed') {
      generation.error = SIMULATED_GENERATION_FAILURE;
      this.emit(generation, { type: 'failed', id: generation.id, error: generation.error, at });
    } else {
      this.emit(generation, { type: 'canceled', id: generation.id, at });
    }
    this.log(`${generation.id} ${status} at ${generation.progress}%`);
  }

  private emit(generation: Generation, event: ProviderEvent): void {
    if (generation.fault === 'lose-webhooks') return;
    this.webhooks.enqueue(generation.webhookUrl, event);
  }

  private cancel(id: string): { id: string; status: GenerationStatus } {
    const generation = this.find(id);
    if (isActive(generation.status)) this.settle(generation, 'canceled');
    return { id, status: generation.status };
  }

  private find(id: string): Generation {
    const generation = this.generations.get(id);
    if (!generation) throw new HttpError(404, 'not_found', `No generation ${id}.`);
    return generation;
  }

  private describe(generation: Generation) {
    return {
      id: generation.id,
      status: generation.status,
      progress: generation.progress,
      ...(generation.output ? { output: generation.output } : {}),
      ...(generation.error ? { error: generation.error } : {}),
    };
  }

  private ledger(): Ledger {
    return { submissions: this.submissions, maxConcurrent: this.maxConcurrent, running: this.running };
  }
}

export async function startSimulator(options: SimulatorOptions): Promise<RunningSimulator> {
  const parsed = configSchema.safeParse({
    jobMs: options.jobMs,
    progressHz: options.progressHz,
    idempotent: options.idempotent,
  });
  if (!parsed.success) throw new Error(`Invalid simulator options: ${z.prettifyError(parsed.error)}`);
  if (!options.webhookSecret) throw new Error('Invalid simulator options: webhookSecret must not be empty.');
  const config = parsed.data;
  const log = options.log ?? (() => {});
  const simulator = new ProviderSimulator(
    config,
    options.webhookSecret,
    options.apiKey,
    log,
    options.delivery,
  );

  const server = createServer((req, res) => {
    simulator.handle(req, res).catch((error: unknown) => {
      if (error instanceof HttpError) {
        sendJson(res, error.status, { error: { code: error.code, message: error.message } });
        return;
      }
      log(
        `internal error on ${req.method} ${req.url}: ${error instanceof Error ? error.stack : String(error)}`,
      );
      sendJson(res, 500, { error: { code: 'internal', message: 'Internal simulator error.' } });
    });
  });

  const host = options.host ?? '127.0.0.1';
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const { port } = server.address() as AddressInfo;

  let closing: Promise<void> | undefined;
  return {
    url: `http://${host}:${port}`,
    port,
    close() {
      closing ??= new Promise<void>((resolve) => {
        simulator.stopEverything();
        server.close(() => resolve());
        // Held `timeout` answers and idle keep-alive sockets would otherwise keep close() waiting.
        server.closeAllConnections();
      });
      return closing;
    },
  };
}

function allow(method: string, ...allowed: string[]): void {
  if (!allowed.includes(method)) {
    throw new HttpError(405, 'method_not_allowed', `Use ${allowed.join(' or ')}.`);
  }
}

function parse<T>(schema: z.ZodType<T>, value: unknown): T {
  const result = schema.safeParse(value);
  if (result.success) return result.data;
  const details = result.error.issues.map((issue) => `${issue.path.join('.') || '(body)'}: ${issue.message}`);
  throw new HttpError(400, 'invalid_request', details.join('; '));
}

async function readJson(req: IncomingMessage): Promise<unknown> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > MAX_BODY_BYTES) throw new HttpError(413, 'payload_too_large', 'Bodies are limited to 1 MiB.');
    chunks.push(chunk);
  }
  try {
    return JSON.parse(Buffer.concat(chunks).toString('utf8'));
  } catch {
    throw new HttpError(400, 'invalid_request', 'The body is not valid JSON.');
  }
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

function sha256(value: string): Buffer {
  return createHash('sha256').update(value).digest();
}

function isoNow(): string {
  return new Date().toISOString();
}
