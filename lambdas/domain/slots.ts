import { type Job, providerOf, slotHolderOf, takesSlot } from './job';
import type { SlotGiveBack, SlotPools } from './ports';

/**
 * The job's own slot: its current submission's (`slotHolderOf`), or one
 * taken before slots were named by submission, which the bare job id holds.
 * Jobs in flight when a deployment moved to named slots keep the slot they
 * took until they give it back here, so the limit holds across the upgrade.
 */
export const ownHolders = (job: Pick<Job, 'id' | 'createdAt' | 'resubmissions'>): readonly string[] => [
  slotHolderOf(job),
  job.id,
];

/** Whether the job holds its own slot among `holders`. */
export const holdsOwnSlot = (
  holders: ReadonlySet<string>,
  job: Pick<Job, 'id' | 'createdAt' | 'resubmissions'>,
): boolean => ownHolders(job).some((holder) => holders.has(holder));

/** Gives back the job's own slot at its provider; false if it held none. */
export async function releaseOwnSlot(
  slots: SlotPools,
  job: Pick<Job, 'id' | 'tenantId' | 'createdAt' | 'resubmissions' | 'provider'>,
): Promise<boolean> {
  const left = await giveBackOwnSlot(slots, job);
  if (left === 'last') await slots(providerOf(job)).forgetIdlePass(job.tenantId);
  return left !== 'not held';
}

/**
 * Gives back the job's own slot at its provider in one write, saying whether
 * its tenant holds none now: a release that hands the slot on drops an idle
 * tenant's pass (`SlotPool.forgetIdlePass`) once the next job has started.
 */
export async function giveBackOwnSlot(
  slots: SlotPools,
  job: Pick<Job, 'id' | 'tenantId' | 'createdAt' | 'resubmissions' | 'provider'>,
): Promise<SlotGiveBack> {
  const pool = slots(providerOf(job));
  for (const holder of ownHolders(job)) {
    const left = await pool.giveBack(holder, job.tenantId);
    if (left !== 'not held') return left;
  }
  return 'not held';
}

/** Whether `holder` is the job's own slot (now or from before slots were named by submission). */
export const isOwnSlot = (holder: string, job: Pick<Job, 'id' | 'createdAt' | 'resubmissions'>): boolean =>
  ownHolders(job).includes(holder);

/** The steps that run while the job holds its provider slot: going back to one takes the slot again. */
const STEPS_WITH_SLOT: ReadonlySet<string> = new Set(['prepare', 'submit', 'await']);

/** Whether going back to `failedAt` needs the job's provider slot (released on the failure path). */
export const resumeNeedsSlot = (job: Pick<Job, 'type'>, failedAt: string | undefined): boolean =>
  takesSlot(job) && failedAt !== undefined && STEPS_WITH_SLOT.has(failedAt);

/**
 * Resumed since its run last started: its execution goes on by a redrive
 * (or a new run where it cannot be redriven), never by a start under a name
 * that has already run.
 */
export const resumedSinceStart = (job: Pick<Job, 'status' | 'resumedAt' | 'startedAt'>): boolean =>
  job.status === 'running' && job.resumedAt !== undefined && job.resumedAt > (job.startedAt ?? '');

/**
 * A job resumed to a state that ran with its provider slot, which has sent
 * nothing under it since: while it holds none, it waits for one in its
 * tenant's line, at the place its submission gave it, and is granted one by
 * fair share as a queued job is.
 */
export const waitsForSlotBack = (
  job: Pick<
    Job,
    'status' | 'type' | 'resumedAt' | 'startedAt' | 'submitIntent' | 'providerJobId' | 'providerOutcome'
  >,
): boolean =>
  resumedSinceStart(job) &&
  takesSlot(job) &&
  job.submitIntent === undefined &&
  job.providerJobId === undefined &&
  job.providerOutcome === undefined;

/**
 * The client token of a resume's redrive (`resume-<n>`): the same resume
 * redriven twice (the API and the reconciler racing, or retrying) is one
 * redrive. Step Functions scopes tokens to the execution.
 */
export const resumeTokenOf = (job: Pick<Job, 'resumes'>): string => `resume-${job.resumes ?? 0}`;

/**
 * The client token of the redrive that a resumed job's slot grant makes: its
 * own, since the resume's redrive (which parked the execution again to wait
 * in line) answers its token with that earlier redrive for 15 minutes.
 */
export const slotRedriveTokenOf = (job: Pick<Job, 'resumes'>): string => `${resumeTokenOf(job)}-slot`;
