import { EVENT_SCHEMA_VERSION } from '../../config/events';
import type { ProviderName } from '../../config/providers';
import {
  ProviderDownError,
  ProviderThrottledError,
  type ProviderUnavailableError,
  WaitingForProviderError,
} from './errors';
import { eventIdOf, publishLifecycleEvent } from './events';
import type { EventPublisher, SlotPool, SlotPoolState } from './ports';
import { MAX_LOOK_DELAY_SECONDS, throttledRateOf } from './rates';

/** How long a provider's grants pause when it throttles or is down without saying for how long. */
export interface PauseSettings {
  /** The first pause, in seconds; a pause met again within its own length doubles. */
  readonly baseSeconds: number;
  /** The longest pause, in seconds, whatever the provider asks. */
  readonly maxSeconds: number;
}

export const PAUSE_DEFAULTS: PauseSettings = { baseSeconds: 5, maxSeconds: 300 };

/**
 * What an operator must see of a provider that throttles or is down: each
 * refusal it answered (or a call that could not reach it), and each pause it
 * led to, whether it started one or met one in force. The steps' `observe`
 * hears them, and the steps function writes each as a log line.
 */
export type PauseObservation =
  | {
      readonly kind: 'throttled';
      readonly provider: ProviderName;
      /** What was asked: a submission, or how a job it took is doing. */
      readonly asked: 'submit' | 'status';
      readonly reason: string;
      readonly retryAfterSeconds?: number;
    }
  | {
      readonly kind: 'paused';
      readonly provider: ProviderName;
      /** When grants resume (RFC 3339). */
      readonly until: string;
      readonly reason: string;
      /** Whether this refusal started the pause, or met a longer one in force. */
      readonly started: boolean;
    };

/** How a provider's pause is set and told of. */
export interface PauseDeps {
  readonly provider: ProviderName;
  readonly pool: SlotPool;
  readonly now: Date;
  readonly settings: PauseSettings;
  readonly random: () => number;
  /** Where a pause of an open provider is put (`provider.paused`). */
  readonly events: EventPublisher;
  readonly observe?: (observation: PauseObservation) => void;
}

/** A refusal of the provider's, as `PauseObservation` tells it. */
export const throttledObservation = (
  provider: ProviderName,
  asked: 'submit' | 'status',
  error: ProviderUnavailableError,
): PauseObservation => ({
  kind: 'throttled',
  provider,
  asked,
  reason: error.message,
  ...(error.retryAfterSeconds === undefined ? {} : { retryAfterSeconds: error.retryAfterSeconds }),
});

/** Whether the pool's grants are paused at `now`. */
export const isPaused = (state: Pick<SlotPoolState, 'pausedUntil'>, now: Date): boolean =>
  state.pausedUntil !== undefined && state.pausedUntil > now.getTime();

/** Whether the probe after a pause is under way at `now`: its refusal is the probe's, not the traffic's. */
const isProbing = (state: Pick<SlotPoolState, 'pausedUntil' | 'probeUntil'>, now: Date): boolean =>
  state.pausedUntil !== undefined &&
  state.probeUntil !== undefined &&
  state.probeUntil > state.pausedUntil &&
  state.probeUntil > now.getTime();

/**
 * How long to pause: what the provider asked (`Retry-After`), capped, each
 * time it asks; else a backoff that doubles while the provider keeps refusing
 * (a pause met within the last pause's length of its end), with jitter so the
 * waiting jobs do not all come back in the same second. The provider's word is
 * kept even while it keeps refusing: only one probe goes at the end of each
 * pause, so a short named wait costs it one request a pause, and a recovery is
 * seen as soon as the provider said it might come, not a doubled backoff later.
 */
export function pauseSecondsOf(
  error: Pick<ProviderUnavailableError, 'retryAfterSeconds'>,
  state: Pick<SlotPoolState, 'pausedUntil' | 'pauseSeconds'>,
  now: Date,
  settings: PauseSettings,
  random: () => number,
): number {
  if (error.retryAfterSeconds !== undefined) {
    return Math.min(settings.maxSeconds, Math.max(1, error.retryAfterSeconds));
  }
  const last = state.pauseSeconds;
  const recent =
    last !== undefined && state.pausedUntil !== undefined && now.getTime() - state.pausedUntil < last * 1000;
  const ceiling = Math.min(settings.maxSeconds, recent ? last * 2 : settings.baseSeconds);
  return Math.max(1, Math.round(ceiling * (0.75 + random() / 4)));
}

/** Where a provider's pauses and resumes are told: the provider's name and the deployment's bus. */
export interface PauseAnnouncer {
  readonly provider: ProviderName;
  readonly events: EventPublisher;
}

/** Puts `provider.paused`, its id derived from the provider and the pause's end, so a repeat is the same event. */
export async function announcePause(
  announcer: PauseAnnouncer,
  pause: { readonly until: Date; readonly reason: string; readonly by: 'provider' | 'operator' },
  now: Date,
): Promise<void> {
  await publishLifecycleEvent(announcer, {
    detailType: 'provider.paused',
    detail: {
      schemaVersion: EVENT_SCHEMA_VERSION,
      eventId: eventIdOf('provider.paused', announcer.provider, String(pause.until.getTime())),
      occurredAt: now.toISOString(),
      provider: announcer.provider,
      by: pause.by,
      pausedUntil: pause.until.toISOString(),
      reason: pause.reason,
    },
  });
}

/** Puts `provider.resumed` for the pause that ended (its id derived from that pause's end). */
export async function announceResume(
  announcer: PauseAnnouncer,
  ended: { readonly pausedUntil: number; readonly by: 'provider' | 'operator' },
  now: Date,
): Promise<void> {
  await publishLifecycleEvent(announcer, {
    detailType: 'provider.resumed',
    detail: {
      schemaVersion: EVENT_SCHEMA_VERSION,
      eventId: eventIdOf('provider.resumed', announcer.provider, String(ended.pausedUntil)),
      occurredAt: now.toISOString(),
      provider: announcer.provider,
      by: ended.by,
    },
  });
}

/**
 * Pauses the provider's grants after it refused a submission it did not take,
 * unless a longer pause is on already. Answers the pause in force. A pause of
 * a provider that was open is put on the bus (`provider.paused`); one that
 * only lengthens a pause in force is not, so an outage's refusals while its
 * pause lasts put one event, not one each. A throttle
 * (`ProviderThrottledError`) that starts a pause lowers the provider's rate
 * in the same write (`throttledRateOf`), unless it is one of the submissions
 * sent before the pause coming back, or the probe after one (one submission
 * says nothing of a rate): an outage only pauses, so a long one leaves the
 * rate as it found it. A status read's throttle (`lowersRate` false) leaves
 * it too: reads are limited apart from submissions.
 */
export async function pauseProvider(
  deps: PauseDeps,
  error: ProviderUnavailableError,
  lowersRate = true,
): Promise<{ readonly until: Date; readonly reason: string; readonly started: boolean }> {
  const { pool, now } = deps;
  const state = await pool.state();
  const seconds = pauseSecondsOf(error, state, now, deps.settings, deps.random);
  const proposed = new Date(now.getTime() + seconds * 1000);
  // The traffic's throttle, not one of the submissions sent before the pause coming back, nor the probe's.
  const trafficThrottle =
    lowersRate && error instanceof ProviderThrottledError && !isPaused(state, now) && !isProbing(state, now);
  const throttled = trafficThrottle ? throttledRateOf(state, now) : undefined;
  const started = await pool.pause({
    until: proposed,
    seconds,
    reason: error.message,
    ...(throttled ? { throttled } : {}),
    ...(trafficThrottle ? { throttleAt: now.getTime() } : {}),
  });
  if (started && !isPaused(state, now)) {
    await announcePause(deps, { until: proposed, reason: error.message, by: 'provider' }, now);
  }
  const pause =
    started || state.pausedUntil === undefined
      ? { until: proposed, reason: error.message, started }
      : { until: new Date(state.pausedUntil), reason: state.pauseReason ?? error.message, started };
  deps.observe?.({
    kind: 'paused',
    provider: deps.provider,
    until: pause.until.toISOString(),
    reason: pause.reason,
    started,
  });
  return pause;
}

/**
 * Asks the provider what only it can answer (how a job it took is doing) and
 * waits for it as a submission does when it throttles or is down: its grants
 * pause, and `WaitingForProviderError` has the step tried again later, its job
 * running on. A retry while the pause lasts asks nothing (only a retry looks
 * at the pool: a first try pays no read for it).
 */
export async function askProvider<T>(deps: PauseDeps, retried: boolean, ask: () => Promise<T>): Promise<T> {
  if (retried && isPaused(await deps.pool.state(), deps.now)) {
    throw new WaitingForProviderError('The provider is paused: asked again once the pause ends.');
  }
  try {
    return await ask();
  } catch (error) {
    if (!(error instanceof ProviderDownError)) throw error;
    deps.observe?.(throttledObservation(deps.provider, 'status', error));
    const pause = await pauseProvider(deps, error, false);
    throw new WaitingForProviderError(`${error.message} Asked again after ${pause.until.toISOString()}.`);
  }
}

/** The delay of a waiting job's next look at a paused provider: just after the pause ends, spread out a little. */
export function lookAfterPauseSeconds(pausedUntil: number, now: Date, random: () => number): number {
  const left = Math.ceil((pausedUntil - now.getTime()) / 1000);
  return Math.min(MAX_LOOK_DELAY_SECONDS, Math.max(1, left + Math.round(random() * 2)));
}

/** The timeline's words for a pause. */
export const pauseDetail = (provider: ProviderName, until: Date, reason: string): string =>
  `${provider} paused until ${until.toISOString()}: ${reason}`;
