/**
 * Weighted fair share of a provider's slots. When a slot frees, the next job
 * is chosen in two steps: first a tenant, among those with waiting jobs, in
 * proportion to their weights (stride scheduling, `chooseTenant`); then the
 * tenant's job that ranks first by priority with aging (`rankOf`). Pure: the
 * pool item that keeps the passes and the index of waiting jobs live behind
 * the ports.
 */

import { dueAtOf, type Job, type JobPriority, priorityOf, providerOf } from './job';
import type { WaitingEntry } from './ports';
import { MAX_WEIGHT, MIN_WEIGHT } from './tenants';

const MINUTE_MS = 60_000;

/**
 * How long a job of each priority is held back behind an `interactive` job
 * submitted at the same time. A job's rank is its submission time plus its
 * delay, so the delay is also the bound on how long it can be passed: a job is
 * never passed by a job submitted more than its delay after it, whatever that
 * job's priority, and never by a later job of its own or a lower priority.
 * After waiting its delay, a `batch` job ranks ahead of every job submitted
 * later: batch never starves.
 */
export const RANK_DELAY_MS: Readonly<Record<JobPriority, number>> = {
  interactive: 0,
  standard: 10 * MINUTE_MS,
  batch: 60 * MINUTE_MS,
};

/**
 * Digits of a rank: the latest instant a Date can hold (8.64e15 ms) plus the
 * longest delay still fits, so ranks of every valid date sort as numbers do.
 */
const RANK_DIGITS = 16;

/**
 * Where a job stands among its tenant's waiting jobs, lowest first: its
 * submission time plus its priority's delay (`RANK_DELAY_MS`), in epoch
 * milliseconds, zero-padded to a fixed width so an index sorted as strings
 * gives the next job in one read. Static: it is written once, at submission,
 * and aging needs no rewrite.
 */
export function rankOf(priority: JobPriority, createdAt: Date | string): string {
  const submittedMs = typeof createdAt === 'string' ? Date.parse(createdAt) : createdAt.getTime();
  if (!Number.isFinite(submittedMs) || submittedMs < 0) {
    throw new RangeError(`A job's rank needs a creation time from 1970 on; got ${String(createdAt)}.`);
  }
  return (submittedMs + RANK_DELAY_MS[priority]).toString().padStart(RANK_DIGITS, '0');
}

/** The sort key of a waiting job: its rank, ties broken by its id (`#` sorts before every digit of a rank). */
export const waitingSortKey = (priority: JobPriority, createdAt: Date | string, jobId: string): string =>
  `${rankOf(priority, createdAt)}#${jobId}`;

/** Whether `value` is a tenant weight: an integer from `MIN_WEIGHT` to `MAX_WEIGHT`. */
export const isWeight = (value: unknown): value is number =>
  Number.isInteger(value) && (value as number) >= MIN_WEIGHT && (value as number) <= MAX_WEIGHT;

/**
 * The pass a weight-1 tenant moves on by each time it is served. Passes are
 * integers, so every chooser computes the same ones and a conditional write
 * compares them exactly; they stay exact for billions of starts.
 */
export const STRIDE = 1_000_000;

/** How far a tenant's pass moves on each time it is served: inversely to its weight, and never by nothing. */
export function strideOf(weight: number): number {
  if (!isWeight(weight)) {
    throw new RangeError(
      `A tenant's weight is an integer from ${MIN_WEIGHT} to ${MAX_WEIGHT}; got ${weight}.`,
    );
  }
  return Math.max(1, Math.round(STRIDE / weight));
}

/** A tenant with waiting jobs at the provider, as the pool item and the tenant's settings describe it. */
export interface TenantCandidate {
  readonly tenant: string;
  readonly weight: number;
  /** The tenant's stored pass; undefined when it was never served at this provider. */
  readonly pass?: number;
  /** The tenant's jobs holding a slot at this provider. */
  readonly inFlight: number;
  /** The most slots of this provider the tenant may hold; undefined: no cap. */
  readonly maxInFlight?: number;
}

/** The tenant to serve next and what the pool item becomes once its job takes the slot. */
export interface TenantChoice {
  readonly tenant: string;
  /** Where the tenant stood when chosen: its stored pass, raised to the floor. */
  readonly pass: number;
  /**
   * The stored pass the choice was made from (undefined: none was stored).
   * The write of `nextPass` is conditioned on it still being stored, so a
   * chooser that served the tenant meanwhile is detected and this one chooses again.
   * It differs from `pass` when the tenant comes back from idle.
   */
  readonly expectedPass: number | undefined;
  /** The tenant's pass to store: one stride of its weight beyond `pass`. */
  readonly nextPass: number;
  /** The pool's floor to store: `pass`. The floor only rises; a write must not lower it. */
  readonly floor: number;
}

/**
 * Chooses the tenant to serve next among `candidates` (tenants with waiting
 * jobs), in proportion to their weights: the one below its cap whose pass is
 * lowest. `floor` is the pass of the tenant chosen last. A tenant never served,
 * or idle while the others went on, joins at the floor: it brings no credit
 * saved while it had nothing to run, so it cannot take a burst of slots on
 * return. A tenant whose pass is above the floor keeps it (going idle does not
 * clear a debt). A tenant at its cap is not a candidate, and earns no credit
 * while it is held there either.
 *
 * Ties at the same pass go to the tenant with the lowest stored pass (never
 * served first), the one that waited longest in pass terms, then to the first
 * by name. The name favours no tenant for long: the winner's pass moves on by
 * its stride, so the tie is gone by the next round.
 *
 * Undefined when no candidate is below its cap. One pass over the candidates.
 */
export function chooseTenant(
  candidates: readonly TenantCandidate[],
  floor: number,
): TenantChoice | undefined {
  let best: Contender | undefined;
  for (const candidate of candidates) {
    // Every weight is checked, a capped tenant's too: bad settings fail on the first choice, not on a later one.
    const stride = strideOf(candidate.weight);
    if (candidate.maxInFlight !== undefined && candidate.inFlight >= candidate.maxInFlight) continue;
    const contender = { candidate, pass: Math.max(candidate.pass ?? floor, floor), stride };
    if (best === undefined || ranksBefore(contender, best)) best = contender;
  }
  if (best === undefined) return undefined;
  return {
    tenant: best.candidate.tenant,
    pass: best.pass,
    expectedPass: best.candidate.pass,
    nextPass: best.pass + best.stride,
    floor: best.pass,
  };
}

interface Contender {
  readonly candidate: TenantCandidate;
  /** The candidate's pass raised to the floor. */
  readonly pass: number;
  readonly stride: number;
}

function ranksBefore(a: Contender, b: Contender): boolean {
  if (a.pass !== b.pass) return a.pass < b.pass;
  const storedA = a.candidate.pass ?? Number.NEGATIVE_INFINITY;
  const storedB = b.candidate.pass ?? Number.NEGATIVE_INFINITY;
  if (storedA !== storedB) return storedA < storedB;
  return a.candidate.tenant < b.candidate.tenant;
}

/** Where the job waits: its tenant's line at its provider, at its place by priority and age (from when it was due). */
export const waitingEntryOf = (
  job: Pick<Job, 'id' | 'tenantId' | 'provider' | 'priority' | 'createdAt' | 'runAt'>,
): WaitingEntry => ({
  provider: providerOf(job),
  tenant: job.tenantId,
  place: waitingSortKey(priorityOf(job), dueAtOf(job), job.id),
  jobId: job.id,
});
