import type { IncomingMessage, ServerResponse } from 'node:http';
import type { FaultQueue, ProviderName } from './faults';
import type { JobRunner } from './jobs';
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
}

/** The parts of the simulator every dialect shares: one fault queue, one ledger (behind the runner), one outbox. */
export interface SimulatorContext {
  readonly faults: FaultQueue;
  readonly runner: JobRunner;
  readonly webhooks: WebhookDispatcher;
  readonly apiKey: string | undefined;
  readonly log: (line: string) => void;
  config(provider: ProviderName): DialectConfig;
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
