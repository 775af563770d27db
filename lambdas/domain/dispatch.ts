import { executionNameOf } from './job';
import type { JobQueue, JobStore, SlotPool, Timeline, Workflow } from './ports';

export interface DispatchDeps {
  readonly store: JobStore;
  readonly slots: SlotPool;
  readonly workflow: Workflow;
  readonly queue: JobQueue;
  readonly timeline: Timeline;
  readonly maxInFlight: number;
  /** Cap of the backoff between two looks for a free slot. */
  readonly maxWaitSeconds: number;
  readonly now: () => Date;
  readonly random: () => number;
}

export type DispatchOutcome = 'started' | 'dropped' | 'deferred';

/**
 * Hands a queued job to the workflow if an in-flight slot is free. Without a
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
  if (!(await deps.slots.acquire(job.id, deps.maxInFlight))) {
    // The touch tells the reconciler this job's message is alive, so it does not enqueue another.
    await deps.store.touchEnqueued(job.id, deps.now());
    await deps.queue.enqueue(job.id, {
      delaySeconds: deferDelaySeconds(deferrals, deps.maxWaitSeconds, deps.random),
      deferrals: deferrals + 1,
    });
    return 'deferred';
  }
  await deps.workflow.start(executionNameOf(job), { jobId: job.id });
  await deps.timeline.record(job.id, { at: deps.now().toISOString(), type: 'job.dispatched' });
  return 'started';
}

/** Exponential backoff with full jitter: 1, 2, 4 … up to `maxSeconds`, times a random fraction, at least 1 s. */
export function deferDelaySeconds(deferrals: number, maxSeconds: number, random: () => number): number {
  const ceiling = Math.min(maxSeconds, 2 ** Math.min(deferrals, 10));
  return Math.max(1, Math.round(ceiling * random()));
}
