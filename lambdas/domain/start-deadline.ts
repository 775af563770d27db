import { type EventDeps, publishJobEvent } from './events';
import { waitingEntryOf } from './fair-share';
import type { Job } from './job';
import { START_DEADLINE_PASSED } from './job-statuses';
import type { JobStore, WaitingEntry, WaitingLines } from './ports';

export { START_DEADLINE_PASSED };

/**
 * A client's deadline for its job to reach its provider (`startBy`). A job
 * still waiting then (its provider paused or down for hours, or its line
 * long) ends `failed` with nothing charged, where it would otherwise be
 * granted (the dispatcher's look, a freed slot's choice) and by the
 * reconciler's pass over queued jobs, whichever meets it first. A job with no
 * `startBy` waits however long its provider is down.
 */

/**
 * Whether the job still waits to reach its provider and its `startBy` has
 * come. A job with a submission on record is never one: a queued job keeps
 * the intent of a submission whose outcome is unknown (it may have been
 * accepted, and charged), and ending it would hide that.
 */
export const missedStartBy = (job: Job, now: Date): boolean =>
  job.status === 'queued' &&
  job.startBy !== undefined &&
  Date.parse(job.startBy) <= now.getTime() &&
  job.submitIntent === undefined &&
  job.providerJobId === undefined;

export interface StartDeadlineDeps extends Partial<EventDeps> {
  readonly store: Pick<JobStore, 'transition'>;
  readonly waiting: Pick<WaitingLines, 'remove'>;
  readonly now: () => Date;
}

/**
 * Ends a job that missed its `startBy` with one conditional write from
 * `queued` (so a grant or a cancel racing it wins or loses whole; the move
 * out of `queued` takes it out of its tenant's backlog), then takes it out of
 * its line and puts its `job.failed` event: no workflow ever ran for it to
 * put one. A caller that cannot put events (a function without the bus that
 * hands a freed slot on) only takes it out of its line, so it is never
 * chosen again: its own message or the reconciler's next pass ends it, event
 * and all. Undefined when the job was not ended here.
 */
export async function endMissedStart(
  deps: StartDeadlineDeps,
  job: Job,
  entry: WaitingEntry = waitingEntryOf(job),
): Promise<Job | undefined> {
  if (!deps.events) {
    await deps.waiting.remove(entry);
    return undefined;
  }
  const now = deps.now();
  const failed = await deps.store.transition(
    job,
    ['queued'],
    {
      status: 'failed',
      error: {
        code: START_DEADLINE_PASSED,
        message: `It had not reached its provider by its startBy (${job.startBy}); nothing was sent to the provider.`,
      },
      finishedAt: now.toISOString(),
    },
    now,
  );
  if (!failed) return undefined;
  await deps.waiting.remove(entry);
  if (deps.events) await publishJobEvent({ events: deps.events }, failed);
  return failed;
}
