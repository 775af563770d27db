import { slotGaps } from './hand-off';
import type { LoggedCall } from './stack';

/**
 * The arithmetic of the embedding section: how busy the embedding provider's
 * limit was, from the simulator's ledger of calls; the runs a recording's
 * passages are embedded in; and the calls the local stack made that belong to
 * the embedding, from the request counter's log.
 */

/** One call at the provider: accepted at `start`, answered at `end` (epoch ms). */
export interface CallInterval {
  readonly start: number;
  readonly end: number;
}

export interface LimitUse {
  readonly calls: number;
  /** From the first call's acceptance to the last call's answer. */
  readonly windowMs: number;
  /** The time-integral of calls in flight over the window: slot-milliseconds in use. */
  readonly busySlotMs: number;
  /** The most calls in flight at one moment. */
  readonly maxInFlight: number;
  /** busySlotMs / (limit × windowMs), 0 to 1 while the limit held. */
  readonly utilization: number;
}

/**
 * How much of a limit of `limit` calls at once the calls used over their
 * window. A call that ends at the very moment another starts does not
 * overlap it.
 */
export function limitUse(intervals: readonly CallInterval[], limit: number): LimitUse {
  if (!Number.isInteger(limit) || limit < 1)
    throw new RangeError(`limit must be a whole number above 0, got ${limit}`);
  if (intervals.length === 0) throw new RangeError('no calls to measure');
  for (const { start, end } of intervals) {
    if (!Number.isFinite(start) || !Number.isFinite(end) || end < start) {
      throw new RangeError(`a call must end at or after its start, got ${start}..${end}`);
    }
  }
  const first = Math.min(...intervals.map((call) => call.start));
  const last = Math.max(...intervals.map((call) => call.end));
  const busySlotMs = intervals.reduce((sum, call) => sum + (call.end - call.start), 0);
  // Ends before starts at the same instant: back-to-back calls never count as two at once.
  const edges = intervals
    .flatMap((call) => [
      [call.start, 1],
      [call.end, -1],
    ])
    .sort(([a, da], [b, db]) => (a as number) - (b as number) || (da as number) - (db as number));
  let inFlight = 0;
  let maxInFlight = 0;
  for (const [, delta] of edges) {
    inFlight += delta as number;
    maxInFlight = Math.max(maxInFlight, inFlight);
  }
  const windowMs = last - first;
  return {
    calls: intervals.length,
    windowMs,
    busySlotMs,
    maxInFlight,
    utilization: windowMs === 0 ? 0 : busySlotMs / (limit * windowMs),
  };
}

/** The ledger's calls as intervals; every one must have been answered. */
export function ledgerIntervals(
  submissions: readonly { readonly id: string; readonly acceptedAt: string; readonly finishedAt?: string }[],
): CallInterval[] {
  return submissions.map((entry) => {
    if (entry.finishedAt === undefined) throw new Error(`call ${entry.id} has not been answered`);
    return { start: Date.parse(entry.acceptedAt), end: Date.parse(entry.finishedAt) };
  });
}

/** One run's calls at the provider, and when the service had the run in hand (epoch ms). */
export interface RunCalls {
  readonly queuedAt: number;
  readonly calls: readonly CallInterval[];
}

/**
 * Where a limit's time goes between calls: within a run, from one call's
 * answer to the run's next call; between runs, from the answer that ended a
 * run to the first call of the run that took its slot, counted only while a
 * run waited (./hand-off.ts `slotGaps`, a run being a job there).
 */
export function runGaps(
  runs: readonly RunCalls[],
  limit: number,
): { withinRuns: number[]; betweenRuns: number[] } {
  const withinRuns: number[] = [];
  const accepted: number[] = [];
  const finished: number[] = [];
  for (const run of runs) {
    if (run.calls.length === 0) throw new RangeError('a run has no calls');
    const calls = [...run.calls].sort((a, b) => a.start - b.start);
    for (let i = 1; i < calls.length; i++) {
      withinRuns.push((calls[i] as CallInterval).start - (calls[i - 1] as CallInterval).end);
    }
    accepted.push((calls[0] as CallInterval).start);
    finished.push(Math.max(...calls.map((call) => call.end)));
  }
  const queued = runs.map((run) => run.queuedAt);
  return { withinRuns, betweenRuns: slotGaps({ accepted, finished, queued, limit }) };
}

/** Calls charged to some work: invocations and their billed time by function, requests by `service:Operation`. */
export interface ChargedCalls {
  readonly invocations: Readonly<Record<string, number>>;
  /** Billed as Lambda bills it: each invocation's duration rounded up to the millisecond, by its function's memory. */
  readonly gbSeconds: number;
  readonly requests: Readonly<Record<string, number>>;
  /** DynamoDB as billed: items read and written, and the table's units (index writes not included). */
  readonly dynamodb: {
    readonly reads: number;
    readonly writes: number;
    readonly readUnits: number;
    readonly writeUnits: number;
  };
}

/**
 * Charges the calls of the counter's log: each invocation by `shareOf` (1
 * wholly the work's, 0 none of it, between for a batch of messages only
 * some of which are the work's), and each request made in an invocation by
 * that invocation's share. Requests made in no invocation (the event
 * sources' polling) are charged to nothing.
 */
export function chargedCalls(
  log: readonly LoggedCall[],
  shareOf: (invocation: LoggedCall) => number,
  memoryMbOf: (fn: string) => number,
): ChargedCalls {
  const shares = new Map<number, number>();
  const invocations: Record<string, number> = {};
  let gbSeconds = 0;
  for (const call of log) {
    if (call.kind !== 'invocation' || call.id === undefined) continue;
    const share = shareOf(call);
    if (!(share > 0)) continue;
    if (call.end === undefined) throw new Error(`invocation ${call.id} of ${call.name} has not ended`);
    shares.set(call.id, share);
    invocations[call.name] = (invocations[call.name] ?? 0) + share;
    const billedMs = Math.max(1, Math.ceil(call.end - call.start));
    gbSeconds += share * (memoryMbOf(call.name) / 1024) * (billedMs / 1000);
  }
  const requests: Record<string, number> = {};
  const dynamodb = { reads: 0, writes: 0, readUnits: 0, writeUnits: 0 };
  for (const call of log) {
    if (call.kind !== 'request' || call.invocation === undefined) continue;
    const share = shares.get(call.invocation);
    if (share === undefined) continue;
    requests[call.name] = (requests[call.name] ?? 0) + share;
    dynamodb.reads += share * (call.reads ?? 0);
    dynamodb.writes += share * (call.writes ?? 0);
    dynamodb.readUnits += share * (call.readUnits ?? 0);
    dynamodb.writeUnits += share * (call.writeUnits ?? 0);
  }
  return { invocations, gbSeconds, requests, dynamodb };
}

/** The steps of an `audio.publish` job that are its embedding's: planning the runs, waiting for each, storing the vectors. */
export const PARENT_EMBEDDING_STEPS = ['plan-embedding', 'embed', 'store-vectors'] as const;

/**
 * Which share of an invocation is the embedding's: a step of one of the
 * runs' jobs, or an embedding step of one of their parents, wholly; a batch
 * of messages, by the share of them that are the runs' jobs'.
 */
export function embeddingShare(runs: ReadonlySet<string>, parents: ReadonlySet<string>) {
  const parentSteps = new Set<string>(PARENT_EMBEDDING_STEPS);
  return (invocation: LoggedCall): number => {
    const detail = invocation.detail ?? '';
    const step = /^(\S+) (job_\S+)$/.exec(detail);
    if (step) {
      const [, name, job] = step as unknown as [string, string, string];
      if (runs.has(job)) return 1;
      return parents.has(job) && parentSteps.has(name) ? 1 : 0;
    }
    const messages = /^\d+ message\(s\) for (.+)$/.exec(detail);
    if (messages) {
      const jobs = (messages[1] as string).split(' ');
      return jobs.filter((job) => runs.has(job)).length / jobs.length;
    }
    return 0;
  };
}
