import { quantile } from './common';

/**
 * How long a provider slot stays empty while jobs wait for it: from the
 * moment a job ends at the provider to the moment the provider accepts the
 * job that takes its place. With a limit of `limit`, the i-th acceptance
 * (in time order) can only take the slot the (i - limit)-th finish freed, so
 * sorted acceptances are paired with sorted finishes, offset by the limit.
 * A pair counts only while a job was waiting when the slot freed (the
 * service had accepted more jobs than the provider had): a slot that frees
 * with nothing queued waits for a client, not for the service.
 */

export interface SlotGaps {
  /** Slots handed on while a job waited. */
  readonly gaps: number;
  readonly p50Ms: number;
  readonly p99Ms: number;
  readonly maxMs: number;
}

export interface SlotTimes {
  /** When the provider accepted each job (epoch ms), in any order. */
  readonly accepted: readonly number[];
  /** When each job ended at the provider (epoch ms), in any order; jobs still running have none. */
  readonly finished: readonly number[];
  /** When the service had each job in hand (epoch ms), in any order: a job waits from then. */
  readonly queued: readonly number[];
  readonly limit: number;
}

/** Each hand-off's gap in ms, in the order the slots freed. */
export function slotGaps({ accepted, finished, queued, limit }: SlotTimes): number[] {
  if (!Number.isInteger(limit) || limit < 1)
    throw new Error(`limit must be a whole number above 0, got ${limit}`);
  const byTime = (xs: readonly number[]) => [...xs].sort((a, b) => a - b);
  const a = byTime(accepted);
  const f = byTime(finished);
  const q = byTime(queued);
  const gaps: number[] = [];
  let queuedBy = 0;
  let acceptedBy = 0;
  for (let i = limit; i < a.length && i - limit < f.length; i++) {
    const freedAt = f[i - limit] as number;
    while (queuedBy < q.length && (q[queuedBy] as number) <= freedAt) queuedBy++;
    while (acceptedBy < a.length && (a[acceptedBy] as number) <= freedAt) acceptedBy++;
    if (queuedBy > acceptedBy) gaps.push((a[i] as number) - freedAt);
  }
  return gaps;
}

/** The gaps' count and order statistics; undefined when no slot was handed on with a job waiting. */
export function slotGapFigures(times: SlotTimes): SlotGaps | undefined {
  const gaps = slotGaps(times);
  if (gaps.length === 0) return undefined;
  return {
    gaps: gaps.length,
    p50Ms: Math.round(quantile(gaps, 0.5)),
    p99Ms: Math.round(quantile(gaps, 0.99)),
    maxMs: Math.round(quantile(gaps, 1)),
  };
}

/** The ledger's times as `slotGaps` takes them. */
export function ledgerTimes(submissions: readonly { acceptedAt: string; finishedAt?: string }[]): {
  accepted: number[];
  finished: number[];
} {
  return {
    accepted: submissions.map((entry) => Date.parse(entry.acceptedAt)),
    finished: submissions.flatMap((entry) => (entry.finishedAt ? [Date.parse(entry.finishedAt)] : [])),
  };
}

export const slotGapsText = (g: SlotGaps | undefined) =>
  g === undefined
    ? 'not measured: no slot freed while a job waited'
    : `p50 ${g.p50Ms} ms, p99 ${g.p99Ms} ms, max ${g.maxMs} ms (n=${g.gaps})`;
