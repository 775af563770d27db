import type { PoolRate, RateLimit, RateToken, SlotPoolState } from './ports';

/**
 * A provider's rate, held in the same conditional write as its slot.
 *
 * GCRA (the generic cell rate algorithm) needs one number per pool, the
 * theoretical arrival time `tat`: a grant at `now` may go when `tat - (burst
 * - 1) × interval <= now`, and sets `tat = max(tat, now) + interval`. A write
 * cannot take a max, so the grant's chooser reckons the next `tat` from the
 * pool it read and the write holds only while `tat` is still the one read:
 * two grants on one reading are one grant and a lost race.
 *
 * The rate adapts to what the provider says. A throttle that starts a pause
 * halves a declared rate grants are held to, never under one a minute, when
 * it repeats: a first throttle at the declared rate, after a quiet spell, only
 * pauses (submissions granted at the rate can still reach the provider closer
 * together than they were granted, and one such pair says nothing of the
 * rate); one within `REPEAT_THROTTLE_MS` of the last, or met while the rate
 * is still coming back, halves it. Where none was declared, the first throttle
 * learns one from the grants it met, and each later one takes a fifth off it
 * (`LEARNED_BACKOFF`). Each
 * ten seconds without another throttle add back a twentieth of the declared
 * (or learned) rate, never above the declared one: from half, the whole rate
 * is back in under two minutes, so one throttle met at a burst's edge (two
 * submissions that reached the provider closer than they were granted) costs
 * little, and a provider that keeps throttling halves it again.
 *
 * A pause that ends is probed: the first grant after it marks the pool
 * `probeUntil`, and no other grant goes until then. A probe the provider
 * refuses pauses it again, for longer (`pauseSecondsOf`); one it takes lets
 * grants go on when the probe's time is up.
 */

const MINUTE_MS = 60_000;
/** The slowest rate a throttle lowers a pool to, in grants a minute. */
export const RATE_FLOOR_PER_MINUTE = 1;
/** The share of the declared (or learned) rate that each `RECOVERY_PERIOD_MS` without a throttle gives back. */
const RECOVERY_SHARE = 0.05;
const RECOVERY_PERIOD_MS = 10_000;
/** How soon after the last throttle another one lowers a declared rate that was in force in full. */
const REPEAT_THROTTLE_MS = 2 * MINUTE_MS;
/** A rate learned from what met the throttle stays a tenth under it. */
const LEARNED_SHARE = 0.9;
/**
 * What a throttle leaves of a learned rate: it was found by meeting the
 * provider's limit, so the next throttle says it came back a little too far,
 * not that the provider halved its rate. Between four fifths of the limit
 * and all of it, grants average nine tenths of what the provider takes; a
 * declared rate, which the provider should not throttle at all, halves.
 */
const LEARNED_BACKOFF = 0.8;
/** How often a grant that reckons its own token (`SlotPool.acquire`) reads the pool before it gives way to concurrent grants. */
export const TOKEN_READINGS = 5;
/** How long the probe after a pause goes alone: time for its start, its prepare step and the provider's answer. */
export const PROBE_SECONDS = 3;

/** The rate grants are held to at `now`: the declared one, or what the last throttle left of it, recovering. */
export function effectiveRate(rate: PoolRate | undefined, now: number): RateLimit | undefined {
  const declared = rate?.declared;
  const throttled = rate?.throttled;
  if (!throttled) return declared;
  const base = declared?.perMinute ?? throttled.perMinute;
  const step = Math.max(1, Math.ceil(base * RECOVERY_SHARE));
  const periods = Math.floor(Math.max(0, now - throttled.at) / RECOVERY_PERIOD_MS);
  const perMinute = throttled.perMinute + step * periods;
  if (declared && perMinute >= declared.perMinute) return declared;
  // Fewer at once too: a burst at the declared size would meet the throttle again at once.
  const burst = declared
    ? Math.max(1, Math.floor((declared.burst * perMinute) / declared.perMinute))
    : Math.max(1, Math.floor(perMinute / 60));
  return { perMinute, burst };
}

/** The shortest span a rate is observed over: a handful of grants at once is a burst, not a rate. */
const SHORTEST_OBSERVED_MS = 10_000;

/**
 * Grants a minute seen over the last minute, from the counts of this minute
 * and the one before; over the time since they began when that is shorter (a
 * run that started seconds ago made its grants in those seconds, not in a
 * minute).
 */
export function observedPerMinute(rate: PoolRate | undefined, now: number): number {
  const grants = rate?.grants;
  if (!grants) return 0;
  const minute = Math.floor(now / MINUTE_MS);
  const into = (now % MINUTE_MS) / MINUTE_MS;
  const seen =
    grants.minute === minute
      ? grants.count + grants.before * (1 - into)
      : grants.minute === minute - 1
        ? grants.count * (1 - into)
        : 0;
  const span = grants.since === undefined ? MINUTE_MS : now - grants.since;
  if (seen === 0 || span >= MINUTE_MS) return seen;
  return (seen * MINUTE_MS) / Math.max(SHORTEST_OBSERVED_MS, span);
}

/**
 * The rate a throttle that starts a pause lowers the pool to: half the
 * declared rate in force, four fifths of a learned one, or, with none, a
 * little under the rate of the grants it met.
 * Undefined when there is nothing to learn from (no rate and no grants), or
 * when the declared rate is in force in full and no throttle came within
 * `REPEAT_THROTTLE_MS`: that one only pauses.
 */
export function throttledRateOf(
  state: Pick<SlotPoolState, 'rate'>,
  now: Date,
): { readonly perMinute: number; readonly at: number } | undefined {
  const at = now.getTime();
  const current = effectiveRate(state.rate, at);
  const declared = state.rate?.declared;
  const last = state.rate?.lastThrottleAt;
  const repeated = last !== undefined && at - last < REPEAT_THROTTLE_MS;
  // The declared rate in full, and no throttle lately: this one only pauses.
  if (declared && current === declared && !repeated) return undefined;
  const backoff = declared ? 0.5 : LEARNED_BACKOFF;
  if (current)
    return { perMinute: Math.max(RATE_FLOOR_PER_MINUTE, Math.floor(current.perMinute * backoff)), at };
  const observed = observedPerMinute(state.rate, at);
  if (observed < 1) return undefined;
  return { perMinute: Math.max(RATE_FLOOR_PER_MINUTE, Math.floor(observed * LEARNED_SHARE)), at };
}

/** SQS delays a message at most this long: a longer wait (a token, a pause) is looked at again when it comes back. */
export const MAX_LOOK_DELAY_SECONDS = 900;

/** The delay of a look for the next token: whole seconds (SQS's), never before it comes. */
export const tokenWaitSeconds = (waitMs: number): number =>
  Math.min(MAX_LOOK_DELAY_SECONDS, Math.max(1, Math.ceil(waitMs / 1000)));

/** A grant's token, or how long until the pool gives one (a pause, a probe under way, or the rate). */
export type RateDecision = { readonly token: RateToken } | { readonly waitMs: number };

/**
 * What a grant at `now` takes of the pool as read: a token to put in its
 * write, or the wait until one would be given. The wait is known from the
 * item: a pause's end, a probe's end, or the next theoretical arrival.
 */
export function rateTokenOf(
  state: Pick<SlotPoolState, 'pausedUntil' | 'probeUntil' | 'rate'>,
  now: Date,
): RateDecision {
  const at = now.getTime();
  let probe: RateToken['probe'];
  if (state.pausedUntil !== undefined) {
    if (state.pausedUntil > at) return { waitMs: state.pausedUntil - at };
    const probed = state.probeUntil !== undefined && state.probeUntil > state.pausedUntil;
    if (!probed) probe = { pausedUntil: state.pausedUntil, until: at + PROBE_SECONDS * 1000 };
    else if ((state.probeUntil as number) > at) return { waitMs: (state.probeUntil as number) - at };
  }
  const rate = effectiveRate(state.rate, at);
  if (!rate) {
    const minute = Math.floor(at / MINUTE_MS);
    const grants = state.rate?.grants;
    const before =
      grants?.minute === minute ? grants.before : grants?.minute === minute - 1 ? grants.count : 0;
    // The first grant after a minute with none marks when the counted grants began.
    const since = grants?.minute !== minute && before === 0 ? { since: at } : {};
    return {
      token: {
        count: { expectedMinute: grants?.minute, minute, before, ...since },
        ...(probe ? { probe } : {}),
      },
    };
  }
  const interval = MINUTE_MS / rate.perMinute;
  const tat = state.rate?.tat;
  const earliest = tat === undefined ? at : tat - (rate.burst - 1) * interval;
  if (earliest > at) return { waitMs: Math.ceil(earliest - at) };
  const next = Math.ceil(Math.max(tat ?? at, at) + interval);
  return { token: { tat: { expected: tat, next }, ...(probe ? { probe } : {}) } };
}
