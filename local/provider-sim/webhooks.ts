import { setTimeout as sleep } from 'node:timers/promises';
import type { GenerationOutput } from './outputs';
import { PROVIDER_SIGNATURE_HEADER, signProviderPayload } from './signature';

/** The webhook bodies the provider POSTs to a submission's `webhookUrl`. */
export interface ProviderError {
  readonly code: string;
  readonly message: string;
}

export type ProviderEvent =
  | { readonly type: 'progress'; readonly id: string; readonly progress: number; readonly at: string }
  | {
      readonly type: 'succeeded';
      readonly id: string;
      readonly output: GenerationOutput;
      readonly at: string;
    }
  | { readonly type: 'failed'; readonly id: string; readonly error: ProviderError; readonly at: string }
  | { readonly type: 'canceled'; readonly id: string; readonly at: string };

export interface DeliveryPolicy {
  /** Attempts for a completion (succeeded, failed, canceled); a progress tick gets exactly one. */
  readonly completionAttempts: number;
  /** Pause before retry `n` (1-based) of a completion. */
  readonly backoffMs: (retry: number) => number;
  /** How long one POST may take before it counts as failed. */
  readonly attemptTimeoutMs: number;
  /** Undelivered events kept per generation; beyond it the oldest progress tick is dropped. */
  readonly maxQueuedPerGeneration: number;
}

export const defaultDeliveryPolicy: DeliveryPolicy = {
  completionAttempts: 5,
  backoffMs: (retry) => Math.min(200 * 2 ** (retry - 1), 3000),
  attemptTimeoutMs: 5000,
  maxQueuedPerGeneration: 1000,
};

interface Outbox {
  readonly url: string;
  readonly events: ProviderEvent[];
  draining: boolean;
}

/**
 * Sends each generation's events in order, one at a time: live progress
 * streams every tick, so ticks are queued rather than coalesced, and a
 * completion never overtakes the ticks before it. Generations do not wait for
 * each other. Progress is fire-and-forget; completions are retried until a
 * 2xx, as a receiver that missed one would otherwise never learn the outcome.
 */
export class WebhookDispatcher {
  private readonly outboxes = new Map<string, Outbox>();
  private lifetime = new AbortController();

  constructor(
    private readonly secret: string,
    private readonly log: (line: string) => void,
    private readonly policy: DeliveryPolicy = defaultDeliveryPolicy,
  ) {}

  enqueue(url: string, event: ProviderEvent): void {
    let outbox = this.outboxes.get(event.id);
    if (!outbox) {
      outbox = { url, events: [], draining: false };
      this.outboxes.set(event.id, outbox);
    }
    if (event.type === 'progress' && outbox.events.length >= this.policy.maxQueuedPerGeneration) {
      const oldestTick = outbox.events.findIndex((queued) => queued.type === 'progress');
      if (oldestTick >= 0) outbox.events.splice(oldestTick, 1);
    }
    outbox.events.push(event);
    if (!outbox.draining) void this.drain(event.id, outbox, this.lifetime.signal);
  }

  /** Drops every queued event and aborts deliveries in flight, including completion retries. */
  abortAll(): void {
    this.lifetime.abort();
    this.lifetime = new AbortController();
    this.outboxes.clear();
  }

  private async drain(generationId: string, outbox: Outbox, signal: AbortSignal): Promise<void> {
    outbox.draining = true;
    try {
      for (let event = outbox.events.shift(); event && !signal.aborted; event = outbox.events.shift()) {
        await this.deliver(outbox.url, event, signal);
      }
    } finally {
      outbox.draining = false;
      if (outbox.events.length === 0 && this.outboxes.get(generationId) === outbox) {
        this.outboxes.delete(generationId);
      }
    }
  }

  private async deliver(url: string, event: ProviderEvent, signal: AbortSignal): Promise<void> {
    const body = JSON.stringify(event);
    const attempts = event.type === 'progress' ? 1 : this.policy.completionAttempts;
    for (let attempt = 1; attempt <= attempts; attempt++) {
      if (attempt > 1) {
        try {
          await sleep(this.policy.backoffMs(attempt - 1), undefined, { signal });
        } catch {
          return;
        }
      }
      const outcome = await this.post(url, body, signal);
      if (outcome === 'delivered' || signal.aborted) return;
      const verdict = attempt < attempts ? 'will retry' : 'giving up';
      this.log(
        `webhook ${event.type} for ${event.id} to ${url}: ${outcome} (attempt ${attempt} of ${attempts}, ${verdict})`,
      );
    }
  }

  private async post(url: string, body: string, signal: AbortSignal): Promise<string> {
    try {
      const response = await fetch(url, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          [PROVIDER_SIGNATURE_HEADER]: signProviderPayload(this.secret, body, Math.floor(Date.now() / 1000)),
        },
        body,
        signal: AbortSignal.any([signal, AbortSignal.timeout(this.policy.attemptTimeoutMs)]),
      });
      // Reading the body to its end frees the connection for the next event.
      await response.arrayBuffer();
      return response.ok ? 'delivered' : `HTTP ${response.status}`;
    } catch (error) {
      return describeFailure(error);
    }
  }
}

/** fetch reports every network failure as "fetch failed"; the cause says which one. */
function describeFailure(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  const cause =
    error.cause instanceof Error
      ? `: ${(error.cause as NodeJS.ErrnoException).code ?? error.cause.message}`
      : '';
  return `${error.name === 'TypeError' ? 'network error' : error.name}${cause || `: ${error.message}`}`;
}
