import type { ProviderName } from '../../config/providers';
import {
  ProviderDownError,
  ProviderThrottledError,
  type ProviderUnavailableError,
  WaitingForProviderError,
} from './errors';
import type { SlotPool, SlotPoolState } from './ports';
import { throttledRateOf } from './rates';

/** How long a provider's grants pause when it throttles or is down without saying for how long. */
export interface PauseSettings {
  /** The first pause, in seconds; a pause met again within its own length doubles. */
  readonly baseSeconds: number;
  /** The longest pause, in seconds, whatever the provider asks. */
  readonly maxSeconds: number;
}

export const PAUSE_DEFAULTS: PauseSettings = { baseSeconds: 5, maxSeconds: 300 };

/** SQS delays a message at most this long: a longer pause is looked at again when it comes back. */
const MAX_LOOK_DELAY_SECONDS = 900;

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
 * How long to pause: what the provider asked (`Retry-After`), capped; else a
 * backoff that doubles while the provider keeps refusing (a pause met within
 * the last pause's length of its end), with jitter so the waiting jobs do not
 * all come back in the same second.
 */
export function pauseSecondsOf(
  error: Pick<ProviderUnavailableError, 'retryAfterSeconds'>,
  state: Pick<SlotPoolState, 'pausedUntil' | 'pauseSeconds'>,
  now: Date,
  settings: PauseSettings,
  random: () => number,
): number {
  const last = state.pauseSeconds;
  const recent =
    last !== undefined && state.pausedUntil !== undefined && now.getTime() - state.pausedUntil < last * 1000;
  // A provider that keeps refusing after the wait it named is down longer than it says: the backoff grows.
  if (error.retryAfterSeconds !== undefined && !recent) {
    return Math.min(settings.maxSeconds, Math.max(1, error.retryAfterSeconds));
  }
  const ceiling = Math.min(
    settings.maxSeconds,
    Math.max(error.retryAfterSeconds ?? 0, recent ? last * 2 : settings.baseSeconds),
  );
  return Math.max(1, Math.round(ceiling * (0.75 + random() / 4)));
}

/**
 * Pauses the provider's grants after it refused a submission it did not take,
 * unless a longer pause is on already. Answers the pause in force. A
 * throttle (`ProviderThrottledError`) that starts a pause lowers the
 * provider's rate in the same write (`throttledRateOf`), unless it is one of
 * the submissions sent before the pause coming back, or the probe after one
 * (one submission says nothing of a rate): an outage only pauses, so a long
 * one leaves the rate as it found it. A status read's throttle (`lowersRate`
 * false) leaves it too: reads are limited apart from submissions.
 */
export async function pauseProvider(
  pool: SlotPool,
  error: ProviderUnavailableError,
  now: Date,
  settings: PauseSettings,
  random: () => number,
  lowersRate = true,
): Promise<{ readonly until: Date; readonly reason: string; readonly started: boolean }> {
  const state = await pool.state();
  const seconds = pauseSecondsOf(error, state, now, settings, random);
  const until = new Date(now.getTime() + seconds * 1000);
  const throttled =
    lowersRate && error instanceof ProviderThrottledError && !isPaused(state, now) && !isProbing(state, now)
      ? throttledRateOf(state, now)
      : undefined;
  const started = await pool.pause({
    until,
    seconds,
    reason: error.message,
    ...(throttled ? { throttled } : {}),
  });
  if (started || state.pausedUntil === undefined) return { until, reason: error.message, started };
  return { until: new Date(state.pausedUntil), reason: state.pauseReason ?? error.message, started };
}

/**
 * Asks the provider what only it can answer (how a job it took is doing) and
 * waits for it as a submission does when it throttles or is down: its grants
 * pause, and `WaitingForProviderError` has the step tried again later, its job
 * running on. A retry while the pause lasts asks nothing (only a retry looks
 * at the pool: a first try pays no read for it).
 */
export async function askProvider<T>(
  deps: {
    readonly pool: SlotPool;
    readonly now: Date;
    readonly settings: PauseSettings;
    readonly random: () => number;
  },
  retried: boolean,
  ask: () => Promise<T>,
): Promise<T> {
  if (retried && isPaused(await deps.pool.state(), deps.now)) {
    throw new WaitingForProviderError('The provider is paused: asked again once the pause ends.');
  }
  try {
    return await ask();
  } catch (error) {
    if (!(error instanceof ProviderDownError)) throw error;
    const pause = await pauseProvider(deps.pool, error, deps.now, deps.settings, deps.random, false);
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
