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
  return gapFigures(slotGaps(times));
}

/** Count, p50, p99 and max of some gaps, in whole ms; undefined when there were none. */
export function gapFigures(gaps: readonly number[]): SlotGaps | undefined {
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

/**
 * One call between a job's end at the provider and the next job's
 * acceptance: an AWS request or another HTTP call (the provider's webhook,
 * the submission to it), a function invocation, or a state transition.
 */
export interface PathCall {
  readonly kind: 'request' | 'invocation' | 'transition';
  /** `dynamodb:UpdateItem`, `http:POST /v1/generations`; the function invoked; the state entered. */
  readonly name: string;
  /** What an invocation was for, or which invocation a request was made in. */
  readonly detail?: string;
  readonly start: number;
  /**
   * When it was done (epoch ms): a request once answered; an invocation or a
   * transition once it started (what follows in it are calls of their own).
   */
  readonly end: number;
  /** The job it was for, where that is known. */
  readonly job?: string;
}

/** The counter's log entries as `PathCall`s, each request given its invocation's job. */
export function loggedPathCalls(
  log: readonly {
    kind: 'request' | 'invocation';
    name: string;
    start: number;
    end?: number;
    id?: number;
    invocation?: number;
    detail?: string;
  }[],
): PathCall[] {
  const invocations = new Map(log.filter((entry) => entry.kind === 'invocation').map((i) => [i.id, i]));
  // A workflow step's invocation is labelled `<step> <job id>`.
  const jobOf = (detail: string | undefined) => /^\S+ (job_\S+)$/.exec(detail ?? '')?.[1];
  return log.map((entry): PathCall => {
    if (entry.kind === 'invocation') {
      const job = jobOf(entry.detail);
      return {
        kind: 'invocation',
        name: entry.name,
        ...(entry.detail ? { detail: entry.detail } : {}),
        start: entry.start,
        end: entry.start,
        ...(job ? { job } : {}),
      };
    }
    const within = entry.invocation === undefined ? undefined : invocations.get(entry.invocation);
    const job = jobOf(within?.detail);
    return {
      kind: 'request',
      name: entry.name,
      ...(within ? { detail: `in ${within.name}${within.detail ? ` ${within.detail}` : ''}` } : {}),
      start: entry.start,
      end: entry.end ?? entry.start,
      ...(job ? { job } : {}),
    };
  });
}

/** An execution's state transitions (its `...StateEntered` events) as `PathCall`s of its job. */
export function transitionCalls(
  job: string,
  events: readonly { type: string; at: number; state?: string }[],
): PathCall[] {
  return events
    .filter((event) => event.type.endsWith('StateEntered'))
    .map((event) => ({
      kind: 'transition',
      name: event.state ?? event.type,
      start: event.at,
      end: event.at,
      job,
    }));
}

/**
 * The calls on the way from `from` (a job's end at the provider) to `to`
 * (the next job's acceptance), by start time: every call that started and
 * was done in between (one still open at the acceptance, such as a queue's
 * long poll, cannot have led to it), less those of other jobs that started
 * after the next job's execution did (the finished job's own last steps,
 * which run beside it).
 */
export function handOffCalls(
  calls: readonly PathCall[],
  window: {
    readonly from: number;
    readonly to: number;
    readonly nextJob: string;
    readonly nextStartedAt?: number;
  },
): PathCall[] {
  const { from, to, nextJob, nextStartedAt } = window;
  return calls
    .filter((call) => call.start >= from && call.end <= to)
    .filter((call) => call.job === nextJob || nextStartedAt === undefined || call.start <= nextStartedAt)
    .sort((a, b) => a.start - b.start || a.end - b.end);
}

/**
 * The longest chain of calls each starting once the one before it was done:
 * how many calls happened one after another. Taking, each time, the call
 * that is done first gives the longest such chain.
 */
export function sequentialChain(calls: readonly PathCall[]): PathCall[] {
  const byEnd = [...calls].sort((a, b) => a.end - b.end || a.start - b.start);
  const chain: PathCall[] = [];
  let doneAt = Number.NEGATIVE_INFINITY;
  for (const call of byEnd) {
    if (call.start < doneAt) continue;
    chain.push(call);
    doneAt = call.end;
  }
  return chain;
}
