import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import {
  createServer as createHttp2Server,
  type Http2ServerRequest,
  type Http2ServerResponse,
} from 'node:http2';
import { createServer as createNetServer, type Server, type Socket } from 'node:net';
import * as z from 'zod';
import { listenOn } from '../emulators/listen';
import { BedrockDialect } from './bedrock';
import { DeepgramDialect } from './deepgram';
import type { Dialect, DialectConfig, SimulatorContext } from './dialect';
import { FAULT_MODES, FaultQueue, PROVIDERS, type ProviderName } from './faults';
import { GenericDialect } from './generic';
import {
  allow,
  genericError,
  HttpError,
  parse,
  readJson,
  type SimRequest,
  type SimResponse,
  sendJson,
} from './http';
import { JobRunner } from './jobs';
import { ChargeLedger } from './ledger';
import { defaultBurst, type RateLimit, RateLimiter, REPLICATE_LOW_CREDIT_LIMITS } from './rates';
import { ReplicateDialect } from './replicate';
import { type DeliveryPolicy, WebhookDispatcher } from './webhooks';

/**
 * The simulated media provider (contract section 3): a slow, paid, external
 * API with the failure modes Longhaul has to survive. It speaks four
 * dialects: the generic API under `/v1`, Replicate's under `/replicate/v1`,
 * Deepgram's under `/deepgram/v1` and Bedrock's runtime under `/bedrock`.
 * Jobs run on timers and report through webhooks (Bedrock's calls are
 * answered when they end); the `/_sim/*` routes let tests inspect what was
 * charged and inject faults, for every dialect or for one.
 *
 * One port speaks HTTP/1.1 and, for the Bedrock dialect, HTTP/2 with prior
 * knowledge: the AWS SDK's Bedrock runtime client sends every call over
 * HTTP/2 (the service's bidirectional streams need it), and on a plain
 * `http://` endpoint that means h2c without an upgrade, which Node's HTTP/1
 * server cannot answer. Each connection goes to one server or the other by
 * its first bytes.
 */

export { FAULT_MODES, type FaultMode, PROVIDERS, type ProviderName } from './faults';
export { type GenerationStatus, SIMULATED_GENERATION_FAILURE } from './generic';
export type { Ledger, LedgerEntry, ProviderLedger } from './ledger';
export { REPLICATE_CREATES_PER_MINUTE, REPLICATE_LOW_CREDIT_LIMITS } from './rates';

export interface SimulatorOptions {
  /** 0 picks a free port. @default 0 */
  readonly port?: number;
  /** @default '127.0.0.1' */
  readonly host?: '127.0.0.1';
  /** How long a job runs, fixed at submission. */
  readonly jobMs: number;
  /** Progress ticks (and progress webhooks) per second. */
  readonly progressHz: number;
  /** Whether a repeated `Idempotency-Key` returns the first generation instead of charging again (generic dialect only). */
  readonly idempotent: boolean;
  /** How long Replicate output files stay downloadable after completion. @default 3_600_000, as Replicate's one hour */
  readonly outputTtlMs?: number;
  /**
   * How long Deepgram takes per second of audio whose length it can read
   * (FLAC or WAV), on top of `jobMs`: 0.01 is an hour of audio in 36 s.
   * @default DEFAULT_DEEPGRAM_REAL_TIME_FACTOR
   */
  readonly deepgramRealTimeFactor?: number;
  /** Secret for the `Provider-Signature` on every generic webhook. */
  readonly webhookSecret: string;
  /** Standard Webhooks secret (`whsec_<base64 key>`) Replicate webhooks are signed with. @default DEFAULT_REPLICATE_WEBHOOK_SECRET */
  readonly replicateWebhookSecret?: string;
  /** The API Key Identifier Deepgram puts in a callback's `dg-token` header. @default DEFAULT_DEEPGRAM_API_KEY_ID */
  readonly deepgramApiKeyId?: string;
  /** The project Deepgram's request lookup answers for. @default DEFAULT_DEEPGRAM_PROJECT_ID */
  readonly deepgramProjectId?: string;
  /**
   * How long a Bedrock call takes, instead of `jobMs`: a model call is
   * answered in a fraction of a second, not after a media job's minutes.
   * @default DEFAULT_BEDROCK_JOB_MS
   */
  readonly bedrockJobMs?: number;
  /**
   * When set, every provider API requires it: `Authorization: Bearer <apiKey>`
   * on `/v1` and `/replicate/v1`, `Authorization: Token <apiKey>` on `/deepgram/v1`.
   * Not on `/bedrock`, whose calls are SigV4-signed by an AWS identity.
   */
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

/** The generic dialect's settings, as `/_sim/config` has always answered them. */
export interface SimulatorConfig {
  readonly jobMs: number;
  readonly progressHz: number;
  readonly idempotent: boolean;
}

export const DEFAULT_OUTPUT_TTL_MS = 3_600_000;
export const MAX_OUTPUT_TTL_MS = 7 * 86_400_000;
/**
 * A hosted batch speech model works through audio far faster than real
 * time: at 0.01 an hour takes 36 s and a 10-minute chunk 6 s, besides
 * `jobMs`. 0 makes every request last `jobMs` alone.
 */
export const DEFAULT_DEEPGRAM_REAL_TIME_FACTOR = 0.01;
export const MAX_REAL_TIME_FACTOR = 100;
/** An embedding call's time: Titan and Cohere answer one in about a tenth of a second. */
export const DEFAULT_BEDROCK_JOB_MS = 100;

const configSchema = z.strictObject({
  jobMs: z.number().int().min(1).max(86_400_000),
  progressHz: z.number().positive().max(1000),
  idempotent: z.boolean(),
  outputTtlMs: z.number().int().min(0).max(MAX_OUTPUT_TTL_MS),
  realTimeFactor: z.number().min(0).max(MAX_REAL_TIME_FACTOR),
});

/** The most a limit may admit a minute: far past any provider's, yet a bucket the clock can still refill. */
const MAX_REQUESTS_PER_MINUTE = 1_000_000;

const configPatchSchema = configSchema
  .partial()
  .extend({
    provider: z.enum(PROVIDERS).optional(),
    /** Submissions admitted a minute; null lifts the limit. Zero is refused: an outage is how a provider admits none. */
    requestsPerMinute: z.number().positive().max(MAX_REQUESTS_PER_MINUTE).nullable().optional(),
    burst: z.number().int().min(1).max(MAX_REQUESTS_PER_MINUTE).optional(),
    lowCredit: z.boolean().optional(),
  })
  .refine(
    (patch) =>
      patch.idempotent === undefined || patch.provider === undefined || patch.provider === 'longhaul-http',
    {
      message: 'idempotent applies to longhaul-http only; Replicate, Deepgram and Bedrock never deduplicate',
      path: ['idempotent'],
    },
  )
  .refine((patch) => patch.burst === undefined || typeof patch.requestsPerMinute === 'number', {
    message: 'burst needs requestsPerMinute in the same request',
    path: ['burst'],
  })
  .refine((patch) => patch.lowCredit === undefined || patch.provider === 'replicate', {
    message: "lowCredit is Replicate's own tightening; name provider replicate",
    path: ['lowCredit'],
  });

type ConfigPatch = z.infer<typeof configPatchSchema>;

/** A dialect's settings with a patch applied: a new rate limit starts its buckets full. */
function patched(config: DialectConfig, patch: Omit<ConfigPatch, 'provider'>): DialectConfig {
  const { requestsPerMinute, burst, lowCredit, ...settings } = patch;
  const rateLimit =
    requestsPerMinute === undefined
      ? config.rateLimit
      : requestsPerMinute === null
        ? null
        : { requestsPerMinute, burst: burst ?? defaultBurst(requestsPerMinute) };
  return { ...config, ...settings, rateLimit, lowCredit: lowCredit ?? config.lowCredit };
}

/** Every limit a dialect's submissions are held to now. */
function limitsOf(config: DialectConfig): readonly RateLimit[] {
  return [
    ...(config.rateLimit ? [config.rateLimit] : []),
    ...(config.lowCredit ? REPLICATE_LOW_CREDIT_LIMITS : []),
  ];
}

const faultSchema = z.union([
  z.strictObject({
    mode: z.literal('outage'),
    /** How long the provider is down: every submission answers 503 until then. */
    seconds: z.number().positive().max(86_400),
    provider: z.enum(PROVIDERS).optional(),
  }),
  z.strictObject({
    mode: z.enum(FAULT_MODES).exclude(['outage']),
    count: z.number().int().min(1).max(10_000).default(1),
    provider: z.enum(PROVIDERS).optional(),
  }),
]);

/** The routes of the test controls; docs/local-stack.md describes each (test/unit/readme.test.ts holds it to that). */
export const SIM_CONTROLS = ['/_sim/ledger', '/_sim/faults', '/_sim/config', '/_sim/reset'] as const;
type SimControl = (typeof SIM_CONTROLS)[number];

/** Every setting `POST /_sim/config` takes besides `provider`. */
export const SIM_CONFIG_KEYS = Object.keys(configPatchSchema.shape).filter((key) => key !== 'provider');

/**
 * What one dialect's `/_sim/config` answer shows: only the settings that
 * dialect uses, a rate limit only once set and low credit only while it
 * holds, so an untouched dialect answers as it always has.
 */
function configView(provider: ProviderName, config: DialectConfig) {
  return { ...settingsView(provider, config), ...(config.rateLimit ?? {}) };
}

/** The settings a dialect uses. */
function settingsView(provider: ProviderName, config: DialectConfig) {
  const { jobMs, progressHz, idempotent, outputTtlMs, realTimeFactor, lowCredit } = config;
  if (provider === 'longhaul-http') return { jobMs, progressHz, idempotent };
  if (provider === 'replicate')
    return { jobMs, progressHz, outputTtlMs, ...(lowCredit ? { lowCredit } : {}) };
  // A call has no progress to report: only its length matters.
  if (provider === 'bedrock') return { jobMs };
  return { jobMs, progressHz, realTimeFactor };
}

class ProviderSimulator {
  private configs: Record<ProviderName, DialectConfig>;
  private readonly ledger = new ChargeLedger();
  private readonly faults = new FaultQueue();
  private readonly rates = new RateLimiter();
  private readonly runner: JobRunner;
  private readonly webhooks: WebhookDispatcher;
  private readonly dialects: readonly Dialect[];
  private readonly bedrock: BedrockDialect;
  origin = '';

  constructor(
    private readonly initialConfig: DialectConfig,
    private readonly bedrockJobMs: number,
    options: SimulatorOptions,
    private readonly log: (line: string) => void,
  ) {
    this.configs = this.initialConfigs();
    this.runner = new JobRunner(this.ledger, log);
    this.webhooks = new WebhookDispatcher(log, options.delivery);
    const context: SimulatorContext = {
      faults: this.faults,
      runner: this.runner,
      webhooks: this.webhooks,
      apiKey: options.apiKey,
      log,
      config: (provider) => this.configs[provider],
      throttle: (provider, scope) => this.throttle(provider, scope),
      origin: () => this.origin,
    };
    this.bedrock = new BedrockDialect(context);
    this.dialects = [
      new GenericDialect(context, options.webhookSecret),
      new ReplicateDialect(context, options.replicateWebhookSecret),
      new DeepgramDialect(context, {
        apiKeyId: options.deepgramApiKeyId,
        projectId: options.deepgramProjectId,
      }),
      this.bedrock,
    ];
  }

  /** Only Bedrock's SDK speaks HTTP/2; the other dialects and the controls answer HTTP/1.1, as their clients speak it. */
  async handleHttp2(req: Http2ServerRequest, res: Http2ServerResponse): Promise<void> {
    const path = new URL(req.url ?? '/', 'http://simulator').pathname;
    if (await this.bedrock.handle(req, res, path, req.method)) return;
    throw genericError(505, 'http_version_not_supported', `${path} is served over HTTP/1.1 only.`);
  }

  async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const path = new URL(req.url ?? '/', 'http://simulator').pathname;
    const method = req.method ?? 'GET';
    for (const dialect of this.dialects) {
      if (await dialect.handle(req, res, path, method)) return;
    }
    if (!Object.hasOwn(this.controls, path)) throw genericError(404, 'not_found', `No route for ${path}.`);
    return this.controls[path as SimControl](req, res, method);
  }

  /** The test controls, by route: the only routes outside the dialects' prefixes. */
  private readonly controls: Record<
    SimControl,
    (req: IncomingMessage, res: ServerResponse, method: string) => Promise<void>
  > = {
    '/_sim/ledger': async (_req, res, method) => {
      allow(method, 'GET');
      sendJson(res, 200, this.ledger.snapshot());
    },
    '/_sim/faults': async (req, res, method) => {
      allow(method, 'POST');
      const fault = parse(faultSchema, await readJson(req));
      if (fault.mode === 'outage') {
        this.faults.outage(fault.seconds, fault.provider);
        this.log(`outage of ${fault.provider ?? 'every provider'} for ${fault.seconds} s`);
      } else {
        this.faults.add(fault.mode, fault.count, fault.provider);
        this.log(
          `fault ${fault.mode} armed for the next ${fault.count} ${fault.provider ?? 'any'} submission(s)`,
        );
      }
      res.writeHead(204).end();
    },
    '/_sim/config': (req, res, method) => this.configure(req, res, method),
    '/_sim/reset': async (_req, res, method) => {
      allow(method, 'POST');
      this.reset();
      res.writeHead(204).end();
    },
  };

  /**
   * `POST {…, provider?}` changes one dialect or all; the answer is that
   * dialect's settings, the generic one's when none is named (as before there
   * were dialects). `GET ?provider=` reads one.
   */
  private async configure(req: IncomingMessage, res: ServerResponse, method: string): Promise<void> {
    allow(method, 'GET', 'POST');
    let provider: ProviderName = 'longhaul-http';
    if (method === 'POST') {
      const { provider: target, ...patch } = parse(configPatchSchema, await readJson(req));
      for (const name of target ? [target] : PROVIDERS) {
        this.configs[name] = patched(this.configs[name], patch);
      }
      provider = target ?? provider;
      this.log(`config ${target ?? 'all'} ${JSON.stringify(patch)}`);
    } else {
      const asked = new URL(req.url ?? '/', 'http://simulator').searchParams.get('provider');
      if (asked !== null) provider = parse(z.enum(PROVIDERS), asked);
    }
    sendJson(res, 200, configView(provider, this.configs[provider]));
  }

  private throttle(provider: ProviderName, scope?: string): number | undefined {
    if (this.faults.down(provider)) return undefined;
    const waitMs = this.rates.admit(
      scope === undefined ? provider : `${provider}/${scope}`,
      limitsOf(this.configs[provider]),
    );
    if (waitMs === 0) return undefined;
    this.ledger.throttled(provider);
    const seconds = Math.max(1, Math.ceil(waitMs / 1000));
    this.log(`throttled a submission to ${scope ?? provider}: try again in ${seconds} s`);
    return seconds;
  }

  /** Back to the state right after start: no jobs, charges, faults, rate limits or config changes. */
  reset(): void {
    this.stopEverything();
    this.runner.clear();
    for (const dialect of this.dialects) dialect.reset();
    this.ledger.reset();
    this.faults.clear();
    this.rates.clear();
    this.configs = this.initialConfigs();
  }

  stopEverything(): void {
    this.runner.stopAll();
    this.webhooks.abortAll();
  }

  private initialConfigs(): Record<ProviderName, DialectConfig> {
    return Object.fromEntries(
      PROVIDERS.map((name) => [
        name,
        name === 'bedrock' ? { ...this.initialConfig, jobMs: this.bedrockJobMs } : this.initialConfig,
      ]),
    ) as Record<ProviderName, DialectConfig>;
  }
}

export async function startSimulator(options: SimulatorOptions): Promise<RunningSimulator> {
  const parsed = configSchema.safeParse({
    jobMs: options.jobMs,
    progressHz: options.progressHz,
    idempotent: options.idempotent,
    outputTtlMs: options.outputTtlMs ?? DEFAULT_OUTPUT_TTL_MS,
    realTimeFactor: options.deepgramRealTimeFactor ?? DEFAULT_DEEPGRAM_REAL_TIME_FACTOR,
  });
  if (!parsed.success) throw new Error(`Invalid simulator options: ${z.prettifyError(parsed.error)}`);
  if (!options.webhookSecret) throw new Error('Invalid simulator options: webhookSecret must not be empty.');
  const bedrockJobMs = configSchema.shape.jobMs.safeParse(options.bedrockJobMs ?? DEFAULT_BEDROCK_JOB_MS);
  if (!bedrockJobMs.success) {
    throw new Error(`Invalid simulator options: bedrockJobMs: ${z.prettifyError(bedrockJobMs.error)}`);
  }
  const log = options.log ?? (() => {});
  // No provider limits its rate until a test asks it to.
  const initial: DialectConfig = { ...parsed.data, rateLimit: null, lowCredit: false };
  const simulator = new ProviderSimulator(initial, bedrockJobMs.data, options, log);

  const answer = (handling: Promise<void>, req: SimRequest, res: SimResponse) => {
    handling.catch((error: unknown) => {
      if (error instanceof HttpError) {
        sendJson(res, error.status, error.body, error.headers);
        return;
      }
      log(
        `internal error on ${req.method} ${req.url}: ${error instanceof Error ? error.stack : String(error)}`,
      );
      sendJson(res, 500, { error: { code: 'internal', message: 'Internal simulator error.' } });
    });
  };
  const http1 = createServer((req, res) => answer(simulator.handle(req, res), req, res));
  const http2 = createHttp2Server((req, res) => answer(simulator.handleHttp2(req, res), req, res));
  const sockets = new Set<Socket>();
  const server = createNetServer((socket) => {
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
    routeByProtocol(socket, http1, http2);
  });

  const host = options.host ?? '127.0.0.1';
  const port = await listenOn(server, options.port ?? 0, host);
  simulator.origin = `http://${host}:${port}`;

  let closing: Promise<void> | undefined;
  return {
    url: simulator.origin,
    port,
    close() {
      closing ??= new Promise<void>((resolve) => {
        simulator.stopEverything();
        server.close(() => resolve());
        // Held `timeout` answers and idle keep-alive sockets would otherwise keep close() waiting.
        for (const socket of sockets) socket.destroy();
      });
      return closing;
    },
  };
}

/** The HTTP/2 connection preface's first bytes: a client with prior knowledge opens with it, an HTTP/1 request never does. */
const HTTP2_PREFACE_START = Buffer.from('PRI');

/**
 * Hands the connection to the server of the protocol its first bytes speak,
 * those bytes put back for it to read. An error before then (a client
 * that connects and resets) is the connection's own end, nobody's fault.
 */
function routeByProtocol(socket: Socket, http1: Server, http2: Server): void {
  const ignore = () => {};
  socket.on('error', ignore);
  const route = () => {
    const head = socket.read(HTTP2_PREFACE_START.length) as Buffer | null;
    if (head === null) {
      socket.once('readable', route);
      return;
    }
    socket.unshift(head);
    socket.off('error', ignore);
    (head.equals(HTTP2_PREFACE_START) ? http2 : http1).emit('connection', socket);
  };
  socket.once('readable', route);
}
