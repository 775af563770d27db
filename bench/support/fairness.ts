/**
 * The arithmetic of the fairness section, the same for Longhaul and the peer:
 * start waits of jobs some of which had not started when a run was stopped,
 * provider time used inside a window, the starts of two tenants while both
 * had jobs waiting, and the jobs that went before a given one; and how they
 * read in print. Pure: it reads only the timestamps each side recorded.
 */

/** A job's own timestamps (ISO 8601), as Longhaul's job table or BullMQ recorded them. */
export interface TimedJob {
  readonly id: string;
  readonly createdAt: string;
  readonly startedAt?: string;
  readonly finishedAt?: string;
}

/** An order statistic of waits: exact, or only a lower bound when jobs that had not started could change it. */
export interface Bound {
  readonly ms: number;
  readonly atLeast: boolean;
}

/** `createdAt` to `startedAt` over a batch whose run was stopped at a cutoff. */
export interface WaitsUntil {
  readonly jobs: number;
  /** Jobs started by the cutoff; the others count as waiting until it, a wait they exceed. */
  readonly started: number;
  readonly p50: Bound;
  readonly p95: Bound;
  readonly max: Bound;
}

const ms = (iso: string) => Date.parse(iso);

/** Whether the job had started by `atMs`. */
const startedBy = (job: TimedJob, atMs: number) => job.startedAt !== undefined && ms(job.startedAt) <= atMs;

/**
 * Start waits of `jobs` observed until `cutoffMs`. A job that had not started
 * by then is counted as waiting until the cutoff, which is less than its true
 * wait; a quantile is exact only when no such job ranks at or below it (it is
 * then the same whatever those jobs' true waits), and otherwise is marked as a
 * lower bound. Nearest rank, as `quantile`.
 */
export function startWaitsUntil(jobs: readonly TimedJob[], cutoffMs: number): WaitsUntil {
  if (jobs.length === 0) throw new Error('start waits need at least one job');
  const waits = jobs.map((job) => {
    const createdMs = ms(job.createdAt);
    if (createdMs > cutoffMs) throw new Error(`job ${job.id} was created after the cutoff`);
    const started = startedBy(job, cutoffMs);
    return { ms: (started ? ms(job.startedAt as string) : cutoffMs) - createdMs, censored: !started };
  });
  // At equal waits an unstarted job ranks last: its true wait is the longer.
  waits.sort((a, b) => a.ms - b.ms || Number(a.censored) - Number(b.censored));
  const at = (q: number): Bound => {
    const rank = Math.min(waits.length - 1, Math.max(0, Math.ceil(q * waits.length) - 1));
    return {
      ms: Math.round((waits[rank] as { ms: number }).ms),
      atLeast: waits.slice(0, rank + 1).some((wait) => wait.censored),
    };
  };
  return {
    jobs: jobs.length,
    started: waits.filter((wait) => !wait.censored).length,
    p50: at(0.5),
    p95: at(0.95),
    max: at(1),
  };
}

/**
 * Provider time used inside [fromMs, toMs]: each accepted submission runs
 * `jobMs` from its acceptance, and only the part inside the window counts.
 */
export function busySlotMsWithin(
  acceptedAt: readonly string[],
  jobMs: number,
  fromMs: number,
  toMs: number,
): number {
  let busy = 0;
  for (const at of acceptedAt) {
    const start = ms(at);
    busy += Math.max(0, Math.min(start + jobMs, toMs) - Math.max(start, fromMs));
  }
  return busy;
}

/** Jobs finished within [fromMs, toMs], per second of the window. */
export function finishedPerSecond(jobs: readonly TimedJob[], fromMs: number, toMs: number): number {
  if (toMs <= fromMs) throw new Error('the window must end after it begins');
  const finished = jobs.filter((job) => {
    if (job.finishedAt === undefined) return false;
    const at = ms(job.finishedAt);
    return at >= fromMs && at <= toMs;
  }).length;
  return finished / ((toMs - fromMs) / 1000);
}

/** Starts of two tenants counted while both had jobs waiting. */
export interface SharedStarts {
  readonly first: number;
  readonly second: number;
  /** The first and last start counted; undefined when none was. */
  readonly fromMs?: number;
  readonly toMs?: number;
}

/**
 * Each tenant's starts made while both tenants had jobs waiting: a start at
 * `t` counts when each tenant had a job created by `t` and not started before
 * `t` (the starting job itself is one of its tenant's). A job never started
 * waits to the end. Starts before the second tenant's first job was created,
 * or after one tenant's last job started, are choices with one tenant waiting
 * and say nothing of the share between them.
 */
export function startsWhileBothWait(first: readonly TimedJob[], second: readonly TimedJob[]): SharedStarts {
  const waitingAt = (jobs: readonly TimedJob[], t: number) =>
    jobs.some((job) => ms(job.createdAt) <= t && (job.startedAt === undefined || ms(job.startedAt) >= t));
  const counted = { first: 0, second: 0 };
  let fromMs: number | undefined;
  let toMs: number | undefined;
  for (const [side, jobs] of [
    ['first', first],
    ['second', second],
  ] as const) {
    for (const job of jobs) {
      if (job.startedAt === undefined) continue;
      const t = ms(job.startedAt);
      if (!waitingAt(first, t) || !waitingAt(second, t)) continue;
      counted[side] += 1;
      fromMs = Math.min(fromMs ?? t, t);
      toMs = Math.max(toMs ?? t, t);
    }
  }
  return { ...counted, ...(fromMs === undefined ? {} : { fromMs, toMs }) };
}

/** How `job` fared against `others` (jobs of its own tenant submitted before it): what it waited behind. */
export interface Overtaking {
  /** Of `others`, those created before `job` and not started when it was created. */
  readonly waitingAhead: number;
  /** Of those, the ones that started before it did (if it never started: the ones that started at all). */
  readonly startedFirst: number;
}

export function overtaking(job: TimedJob, others: readonly TimedJob[]): Overtaking {
  const created = ms(job.createdAt);
  const ahead = others.filter(
    (other) =>
      ms(other.createdAt) <= created && !(other.startedAt !== undefined && ms(other.startedAt) < created),
  );
  const started = job.startedAt === undefined ? Number.POSITIVE_INFINITY : ms(job.startedAt);
  return {
    waitingAhead: ahead.length,
    startedFirst: ahead.filter((other) => other.startedAt !== undefined && ms(other.startedAt) < started)
      .length,
  };
}

/** A ratio `a : b` as `x : 1` with two decimals, `a : 0` when b had none, "no starts" when neither had any. */
export function ratioText(a: number, b: number): string {
  if (b === 0) return a === 0 ? 'no starts' : `${a} : 0`;
  return `${(a / b).toFixed(2)} : 1`;
}

/** Whether `a : b` is within `tolerance` (a fraction) of `target : 1`. */
export const withinRatio = (a: number, b: number, target: number, tolerance: number): boolean =>
  b > 0 && Math.abs(a / b / target - 1) <= tolerance;

/** A bound as text: `>= ` before a lower bound. */
export const boundText = (bound: Bound) => `${bound.atLeast ? '>= ' : ''}${bound.ms}`;

/** Start waits as the section prints them: p50 / p95 / max, each marked if only a lower bound. */
export const waitsText = (w: WaitsUntil) =>
  `${boundText(w.p50)} / ${boundText(w.p95)} / ${boundText(w.max)} ms (n=${w.jobs}, ${w.started} started)`;
