import { setTimeout as sleep } from 'node:timers/promises';
import type { GenerationOutput } from './outputs';

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
  /** Attempts for a final message (a completion); a progress message gets exactly one. */
  readonly completionAttempts: number;
  /** Pause before retry `n` (1-based) of a completion. */
  readonly backoffMs: (retry: number) => number;
  /** How long one POST may take before it counts as failed. */
  readonly attemptTimeoutMs: number;
  /** Undelivered messages kept per job; beyond it the oldest progress message is dropped. */
  readonly maxQueuedPerGeneration: number;
}

export const defaultDeliveryPolicy: DeliveryPolicy = {
  completionAttempts: 5,
  backoffMs: (retry) => Math.min(200 * 2 ** (retry - 1), 3000),
  attemptTimeoutMs: 5000,
  maxQueuedPerGeneration: 1000,
};

/**
 * One HTTP POST a dialect wants delivered: its body is fixed, its headers are
 * built for each attempt (signatures carry the attempt's time).
 */
export interface OutgoingWebhook {
  /** The job the message is about: a job's messages go out in order, one at a time. */
  readonly jobId: string;
  readonly url: string;
  /** What it is, for the log. */
  readonly label: string;
  /** Final messages (outcomes) are retried until a 2xx; others get one attempt and may be dropped. */
  readonly final: boolean;
  /** @default 'POST' */
  readonly method?: 'POST' | 'PUT';
  readonly body: string;
  readonly headers: () => Readonly<Record<string, string>>;
}

interface Outbox {
  readonly messages: OutgoingWebhook[];
  draining: boolean;
}

/**
 * Sends each job's messages in order, one at a time: live progress streams
 * every tick, so ticks are queued rather than coalesced, and a completion
 * never overtakes the ticks before it. Jobs do not wait for each other.
 * Progress is fire-and-forget; completions are retried until a 2xx, as a
 * receiver that missed one would otherwise never learn the outcome.
 */
export class WebhookDispatcher {
  private readonly outboxes = new Map<string, Outbox>();
  private lifetime = new AbortController();

  constructor(
    private readonly log: (line: string) => void,
    private readonly policy: DeliveryPolicy = defaultDeliveryPolicy,
  ) {}

  enqueue(message: OutgoingWebhook): void {
    let outbox = this.outboxes.get(message.jobId);
    if (!outbox) {
      outbox = { messages: [], draining: false };
      this.outboxes.set(message.jobId, outbox);
    }
    if (!message.final && outbox.messages.length >= this.policy.maxQueuedPerGeneration) {
      const oldestProgress = outbox.messages.findIndex((queued) => !queued.final);
      if (oldestProgress >= 0) outbox.messages.splice(oldestProgress, 1);
    }
    outbox.messages.push(message);
    if (!outbox.draining) void this.drain(message.jobId, outbox, this.lifetime.signal);
  }

  /** Drops every queued message and aborts deliveries in flight, including completion retries. */
  abortAll(): void {
    this.lifetime.abort();
    this.lifetime = new AbortController();
    this.outboxes.clear();
  }

  private async drain(jobId: string, outbox: Outbox, signal: AbortSignal): Promise<void> {
    outbox.draining = true;
    try {
      for (
        let message = outbox.messages.shift();
        message && !signal.aborted;
        message = outbox.messages.shift()
      ) {
        await this.deliver(message, signal);
      }
    } finally {
      outbox.draining = false;
      if (outbox.messages.length === 0 && this.outboxes.get(jobId) === outbox) {
        this.outboxes.delete(jobId);
      }
    }
  }

  private async deliver(message: OutgoingWebhook, signal: AbortSignal): Promise<void> {
    const attempts = message.final ? this.policy.completionAttempts : 1;
    for (let attempt = 1; attempt <= attempts; attempt++) {
      if (attempt > 1) {
        try {
          await sleep(this.policy.backoffMs(attempt - 1), undefined, { signal });
        } catch {
          return;
        }
      }
      const outcome = await this.post(message, signal);
      if (outcome === 'delivered' || signal.aborted) return;
      const verdict = attempt < attempts ? 'will retry' : 'giving up';
      this.log(
        `webhook ${message.label} for ${message.jobId} to ${message.url}: ${outcome} ` +
          `(attempt ${attempt} of ${attempts}, ${verdict})`,
      );
    }
  }

  private async post(message: OutgoingWebhook, signal: AbortSignal): Promise<string> {
    try {
      const response = await fetch(message.url, {
        method: message.method ?? 'POST',
        headers: { 'content-type': 'application/json', ...message.headers() },
        body: message.body,
        signal: AbortSignal.any([signal, AbortSignal.timeout(this.policy.attemptTimeoutMs)]),
      });
      // Reading the body to its end frees the connection for the next message.
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
