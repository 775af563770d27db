import type { IncomingMessage, ServerResponse } from 'node:http';
import type { FaultQueue, ProviderName } from './faults';
import type { JobRunner } from './jobs';
import type { RateLimit } from './rates';
import type { WebhookDispatcher } from './webhooks';

/** What `/_sim/config` sets for one dialect; each job keeps the values it was submitted with. */
export interface DialectConfig {
  readonly jobMs: number;
  readonly progressHz: number;
  /** Only the generic dialect deduplicates; the real providers simulated here do not. */
  readonly idempotent: boolean;
  /** How long output files stay downloadable after a job completes. */
  readonly outputTtlMs: number;
  /**
   * Milliseconds of processing, beyond `jobMs`, per millisecond of audio the
   * dialect could hear (Deepgram only: see ./deepgram).
   */
  readonly realTimeFactor: number;
  /** How fast submissions are admitted (Bedrock: to each model); null admits every one. */
  readonly rateLimit: RateLimit | null;
  /** Replicate only: its account's credit runs low, and creates are held to REPLICATE_LOW_CREDIT_LIMITS. */
  readonly lowCredit: boolean;
}

/** The parts of the simulator every dialect shares: one fault queue, one ledger (behind the runner), one outbox. */
export interface SimulatorContext {
  readonly faults: FaultQueue;
  readonly runner: JobRunner;
  readonly webhooks: WebhookDispatcher;
  readonly apiKey: string | undefined;
  readonly log: (line: string) => void;
  config(provider: ProviderName): DialectConfig;
  /**
   * Takes a submission past the provider's rate limits: undefined when it is
   * admitted (or the provider is down, which answers it instead), else the
   * whole seconds it should wait, the refusal counted in the ledger.
   * Bedrock's limits hold per model, its `scope`.
   */
  throttle(provider: ProviderName, scope?: string): number | undefined;
  /** The simulator's own origin, for URLs it hands out (`http://127.0.0.1:<port>`). */
  origin(): string;
}

/** One provider's wire format, served under its own path prefix. */
export interface Dialect {
  readonly provider: ProviderName;
  /** Whether the request is this dialect's (and then it has been answered, or an HttpError thrown). */
  handle(req: IncomingMessage, res: ServerResponse, path: string, method: string): Promise<boolean>;
  /** Forgets every job. */
  reset(): void;
}
