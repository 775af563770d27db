import type { ProviderEvent } from '../../local/provider-sim/webhooks';

/**
 * Routes the provider's webhooks to the worker attempt waiting for that
 * generation. A webhook can arrive before the attempt knows the generation's
 * id (the submit answer is still on its way, or was lost to a connection
 * reset and a retry is about to get the same id back from an idempotent
 * provider), so events for generations nobody is watching yet are held for a
 * while: the latest progress and the outcome, which is all a late watcher needs.
 */

export type GenerationOutcome = Extract<ProviderEvent, { type: 'succeeded' | 'failed' | 'canceled' }>;

type ProgressListener = (progress: number) => Promise<void>;

interface Watch {
  readonly onProgress: ProgressListener;
  readonly settle: (outcome: GenerationOutcome) => void;
}

interface Held {
  progress?: number;
  outcome?: GenerationOutcome;
  heldAtMs: number;
}

export class GenerationTimeoutError extends Error {
  constructor(generationId: string, timeoutMs: number) {
    super(`no outcome for generation ${generationId} within ${timeoutMs} ms`);
    this.name = 'GenerationTimeoutError';
  }
}

export class GenerationEvents {
  private readonly watches = new Map<string, Watch>();
  private readonly held = new Map<string, Held>();

  constructor(
    /** How long events for an unwatched generation are kept. */
    private readonly holdMs: number,
    /** Most unwatched generations kept at once; the oldest is dropped beyond it. */
    private readonly maxHeld: number,
  ) {}

  /** Hands `event` to its watcher, waiting for the progress listener, or holds it. */
  async deliver(event: ProviderEvent): Promise<void> {
    const watch = this.watches.get(event.id);
    if (!watch) {
      this.hold(event);
      return;
    }
    if (event.type === 'progress') await watch.onProgress(event.progress);
    else watch.settle(event);
  }

  /**
   * Resolves with the generation's outcome, calling `onProgress` for each tick
   * on the way (and once for the latest held tick); rejects with
   * GenerationTimeoutError when no outcome arrives within `timeoutMs`, and
   * with an Error carrying the signal's reason when `signal` aborts first.
   */
  async watch(
    generationId: string,
    onProgress: ProgressListener,
    { timeoutMs, signal }: { timeoutMs: number; signal?: AbortSignal },
  ): Promise<GenerationOutcome> {
    if (signal?.aborted) throw new Error(`stopped waiting for ${generationId}: ${String(signal.reason)}`);
    const held = this.held.get(generationId);
    this.held.delete(generationId);
    if (held?.outcome) return held.outcome;

    let timer: NodeJS.Timeout | undefined;
    let onAbort: (() => void) | undefined;
    const outcome = new Promise<GenerationOutcome>((resolveOutcome, rejectOutcome) => {
      this.watches.set(generationId, { onProgress, settle: resolveOutcome });
      timer = setTimeout(() => rejectOutcome(new GenerationTimeoutError(generationId, timeoutMs)), timeoutMs);
      onAbort = () =>
        rejectOutcome(new Error(`stopped waiting for ${generationId}: ${String(signal?.reason)}`));
      signal?.addEventListener('abort', onAbort, { once: true });
    });
    try {
      if (held?.progress !== undefined) await onProgress(held.progress);
      return await outcome;
    } finally {
      clearTimeout(timer);
      if (onAbort) signal?.removeEventListener('abort', onAbort);
      this.watches.delete(generationId);
    }
  }

  private hold(event: ProviderEvent): void {
    this.forgetExpired();
    const held = this.held.get(event.id) ?? { heldAtMs: Date.now() };
    if (event.type === 'progress') held.progress = Math.max(held.progress ?? 0, event.progress);
    else held.outcome = event;
    this.held.set(event.id, held);
    if (this.held.size > this.maxHeld) {
      const [oldest] = this.held.keys();
      if (oldest !== undefined) this.held.delete(oldest);
    }
  }

  private forgetExpired(): void {
    const cutoff = Date.now() - this.holdMs;
    // Insertion order is arrival order, so the expired ones come first.
    for (const [id, held] of this.held) {
      if (held.heldAtMs > cutoff) break;
      this.held.delete(id);
    }
  }
}
