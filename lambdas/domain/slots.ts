import { type Job, providerOf, slotHolderOf } from './job';
import type { SlotPools } from './ports';

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
  const pool = slots(providerOf(job));
  for (const holder of ownHolders(job)) if (await pool.release(holder, job.tenantId)) return true;
  return false;
}

/** Whether `holder` is the job's own slot (now or from before slots were named by submission). */
export const isOwnSlot = (holder: string, job: Pick<Job, 'id' | 'createdAt' | 'resubmissions'>): boolean =>
  ownHolders(job).includes(holder);
