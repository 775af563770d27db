import { resetExchange, type SimRequest } from './http';

/** The dialects the simulator speaks, each under its own provider name. */
export const PROVIDERS = ['longhaul-http', 'replicate', 'deepgram', 'bedrock'] as const;
export type ProviderName = (typeof PROVIDERS)[number];

export const FAULT_MODES = [
  'reject',
  'unavailable',
  'accept-then-drop',
  'timeout',
  'lose-webhooks',
  'fail-job',
  'stall',
  'outage',
] as const;
export type FaultMode = (typeof FAULT_MODES)[number];

/** The faults that ride along with an accepted job rather than with the request. */
export type JobFault = Extract<FaultMode, 'lose-webhooks' | 'fail-job' | 'stall'>;

export function jobFault(fault: FaultMode | undefined): JobFault | undefined {
  return fault === 'lose-webhooks' || fault === 'fail-job' || fault === 'stall' ? fault : undefined;
}

/**
 * The fault queue: a FIFO of modes, each posted with a count and optionally
 * aimed at one provider. One fault is consumed by every submission request
 * that passes authentication and body validation, idempotent repeats
 * included, because faults model what happens to a request, and a client's
 * retry is a request too. A malformed or unauthorised request consumes none,
 * so a buggy test client does not eat the fault meant for the real attempt.
 * A submission takes the oldest fault that applies to its provider, skipping
 * faults aimed at another one: they wait for their own provider's traffic.
 */
export class FaultQueue {
  private readonly pending: { mode: FaultMode; remaining: number; provider: ProviderName | undefined }[] = [];
  /** Outages, by provider (`*`: every one), as the time each ends. */
  private readonly outages = new Map<ProviderName | '*', number>();

  constructor(private readonly clock: () => number = Date.now) {}

  add(mode: FaultMode, count: number, provider?: ProviderName): void {
    this.pending.push({ mode, remaining: count, provider });
  }

  /** The provider (or every one) is down for `seconds`: every submission answers 503 meanwhile, consuming no fault. */
  outage(seconds: number, provider?: ProviderName): void {
    this.outages.set(provider ?? '*', this.clock() + seconds * 1000);
  }

  /** Whether the provider is down now. */
  down(provider: ProviderName): boolean {
    const now = this.clock();
    return (this.outages.get(provider) ?? 0) > now || (this.outages.get('*') ?? 0) > now;
  }

  take(provider: ProviderName): FaultMode | undefined {
    if (this.down(provider)) return 'unavailable';
    const index = this.pending.findIndex(
      (fault) => fault.provider === undefined || fault.provider === provider,
    );
    const fault = this.pending[index];
    if (!fault) return undefined;
    fault.remaining -= 1;
    if (fault.remaining === 0) this.pending.splice(index, 1);
    return fault.mode;
  }

  clear(): void {
    this.pending.length = 0;
    this.outages.clear();
  }
}

/**
 * Sends an accepted submission's answer unless a request fault eats it:
 * `accept-then-drop` resets the connection (the charge stands), `timeout`
 * never answers (the connection stays open until the caller gives up or the
 * simulator closes).
 */
export function answerAccepted(fault: FaultMode | undefined, req: SimRequest, answer: () => void): void {
  if (fault === 'accept-then-drop') {
    resetExchange(req);
    return;
  }
  if (fault === 'timeout') return;
  answer();
}
