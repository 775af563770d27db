import type { LedgerEntry } from '../../local/provider-sim/ledger';
import type { RateLimit } from '../../local/provider-sim/rates';

/**
 * The limits section's figures, read from the provider's ledger: the rate of
 * submissions once the burst the provider allows is spent, and how long the
 * slots stay short of full after an outage ends.
 */

/** Submissions a minute over the window that starts once the burst is spent and ends at the last acceptance. */
export interface RateAfterBurst {
  /** Whether the provider's bucket ever ran empty; if not, the window starts at the first acceptance. */
  readonly burstSpent: boolean;
  /** The acceptance that emptied the bucket (epoch ms). */
  readonly windowStartAt: number;
  readonly windowMs: number;
  /** Acceptances after the window's start. */
  readonly submissions: number;
  readonly perMinute: number;
}

/**
 * Replays the provider's bucket (as the simulator keeps it: GCRA, the time
 * the next submission is due) over the accepted submissions, and measures
 * the rate from the first acceptance that left no whole token for another at
 * the same instant. Refused submissions take nothing from the bucket, so the
 * accepted ones alone rebuild its state. Undefined without two acceptances
 * in the window.
 */
export function rateAfterBurst(acceptedAt: readonly number[], limit: RateLimit): RateAfterBurst | undefined {
  const times = [...acceptedAt].sort((a, b) => a - b);
  const first = times[0];
  if (first === undefined) return undefined;
  const intervalMs = 60_000 / limit.requestsPerMinute;
  let dueAt = first;
  let start = -1;
  for (const [i, at] of times.entries()) {
    dueAt = Math.max(dueAt, at) + intervalMs;
    if (dueAt - (limit.burst - 1) * intervalMs - at > 0) {
      start = i;
      break;
    }
  }
  const burstSpent = start >= 0;
  const from = burstSpent ? start : 0;
  const windowStartAt = times[from] as number;
  const submissions = times.length - 1 - from;
  const windowMs = (times.at(-1) as number) - windowStartAt;
  if (submissions < 1 || windowMs <= 0) return undefined;
  return { burstSpent, windowStartAt, windowMs, submissions, perMinute: (submissions * 60_000) / windowMs };
}

/**
 * Milliseconds from `from` (the provider's recovery) to the acceptance that
 * had `limit` jobs running at once; undefined if none did. A job runs from
 * its acceptance until its finish, or on if it has none yet.
 */
export function slotsFullAfter(
  ledger: readonly Pick<LedgerEntry, 'acceptedAt' | 'finishedAt'>[],
  from: number,
  limit: number,
): number | undefined {
  const jobs = ledger.map((entry) => ({
    acceptedAt: Date.parse(entry.acceptedAt),
    finishedAt: entry.finishedAt === undefined ? Number.POSITIVE_INFINITY : Date.parse(entry.finishedAt),
  }));
  const acceptances = jobs
    .map((job) => job.acceptedAt)
    .filter((at) => at >= from)
    .sort((a, b) => a - b);
  for (const at of acceptances) {
    const running = jobs.filter((job) => job.acceptedAt <= at && at < job.finishedAt).length;
    if (running >= limit) return at - from;
  }
  return undefined;
}

/** 429s as a percentage of every submission the provider answered, refused or accepted. */
export function throttledSharePct(throttled: number, accepted: number): number {
  const answered = throttled + accepted;
  return answered === 0 ? 0 : (100 * throttled) / answered;
}
