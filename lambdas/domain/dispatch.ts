import type { ProviderName } from '../../config/providers';
import { executionNameOf, providerOf, slotHolderOf } from './job';
import type { InFlightLimits, JobQueue, JobStore, SlotPools, Timeline, Workflow } from './ports';
import { holdsOwnSlot } from './slots';

export interface DispatchDeps {
  readonly store: JobStore;
  readonly slots: SlotPools;
  readonly workflow: Workflow;
  readonly queue: JobQueue;
  readonly timeline: Timeline;
  readonly maxInFlight: InFlightLimits;
  /** Cap of the backoff between two looks for a free slot. */
  readonly maxWaitSeconds: number;
  readonly now: () => Date;
  readonly random: () => number;
}

export type DispatchOutcome = 'started' | 'dropped' | 'deferred';

/**
 * Hands a queued job to the workflow if a slot of its provider is free. Without a
 * slot the job goes back to the queue as a new, delayed message (its receive
 * count starts again, so a long peak never pushes it to the dead-letter queue).
 * Duplicate messages and jobs that already started or finished are dropped.
 */
export async function dispatchJob(
  deps: DispatchDeps,
  jobId: string,
  deferrals: number,
): Promise<DispatchOutcome> {
  const job = await deps.store.get(jobId);
  if (job?.status !== 'queued') return 'dropped';
  const provider = providerOf(job);
  if (!(await deps.slots(provider).acquire(slotHolderOf(job), deps.maxInFlight[provider]))) {
    // The touch tells the reconciler this job's message is alive, so it does not enqueue another.
    await deps.store.touchEnqueued(job.id, deps.now());
    await deps.queue.enqueue(job, {
      delaySeconds: deferDelaySeconds(deferrals, deps.maxWaitSeconds, deps.random),
      deferrals: deferrals + 1,
    });
    return 'deferred';
  }
  await deps.workflow.start(executionNameOf(job), { jobId: job.id });
  await deps.timeline.record(job.id, { at: deps.now().toISOString(), type: 'job.dispatched' });
  return 'started';
}

export interface HandOffDeps {
  readonly store: Pick<JobStore, 'get' | 'listActive' | 'touchEnqueued'>;
  readonly slots: SlotPools;
  readonly queue: JobQueue;
  readonly maxInFlight: InFlightLimits;
  readonly now: () => Date;
}

/** Waiting jobs looked at for a hand-off: more than can hold a slot while still queued, so one is free. */
const handOffCandidates = (maxInFlight: number) => Math.min(maxInFlight + 1, 100);

/**
 * Gives a free slot of `provider` to its job that has waited longest, so provider capacity
 * is not idle until some waiting job's backoff ends. The slot is taken for
 * that job with the same conditional update as every dispatch (the limit
 * holds), and the job is sent to the dispatcher at once; the dispatcher finds
 * it already holds a slot and starts it. If the message is lost, the job's own
 * delayed message or the reconciler starts it later. Returns the job's id, or
 * undefined when no slot is free or nothing waits.
 *
 * The index of queued jobs lags its table: a job it lists may have started or
 * finished already. Each candidate is read again from the table before a slot
 * is taken for it, and a slot taken for a job that left `queued` meanwhile is
 * given back unless the job runs (then it is that job's own slot).
 */
export async function handOffFreeSlot(
  deps: HandOffDeps,
  provider: ProviderName,
): Promise<string | undefined> {
  const slots = deps.slots(provider);
  const limit = deps.maxInFlight[provider];
  const holders = new Set(await slots.holders());
  if (holders.size >= limit) return undefined;
  const { items } = await deps.store.listActive(provider, 'queued', { limit: handOffCandidates(limit) });
  // Oldest first; a queued job that holds a slot is already on its way.
  for (const listed of items) {
    if (holdsOwnSlot(holders, listed)) continue;
    const candidate = await deps.store.get(listed.id);
    if (candidate?.status !== 'queued' || holdsOwnSlot(holders, candidate)) continue;
    const holder = slotHolderOf(candidate);
    if (!(await slots.acquire(holder, limit))) return undefined;
    if (await deps.store.touchEnqueued(candidate.id, deps.now())) {
      await deps.queue.enqueue(candidate, { handOff: true });
      return candidate.id;
    }
    if ((await deps.store.get(candidate.id))?.status !== 'running') await slots.release(holder);
  }
  return undefined;
}

/** Exponential backoff with full jitter: 1, 2, 4 … up to `maxSeconds`, times a random fraction, at least 1 s. */
export function deferDelaySeconds(deferrals: number, maxSeconds: number, random: () => number): number {
  const ceiling = Math.min(maxSeconds, 2 ** Math.min(deferrals, 10));
  return Math.max(1, Math.round(ceiling * random()));
}
