import { JobNotResumableError } from './errors';
import { getJob } from './intake';
import { currentExecutionOf, type Job, providerMayBeRunning } from './job';
import { RESOLVED_FAILED_CODE } from './operator';
import type { JobStore, Timeline, Workflow } from './ports';
import { resumeTokenOf } from './slots';
import { START_DEADLINE_PASSED } from './start-deadline';

/**
 * Resuming a failed job: its workflow execution is redriven, so it goes on
 * from the state that failed with what the states before it produced (a
 * transcode is not done again, an accepted provider job is not submitted
 * again). The execution fails at its park step while the job is failed; on
 * the redrive that step finds the job running again and goes back to the
 * failed state (lib/constructs/job-workflow.ts).
 */

export interface ResumeDeps {
  readonly store: JobStore;
  readonly workflow: Pick<Workflow, 'redrive'>;
  readonly timeline: Pick<Timeline, 'record'>;
  readonly now: () => Date;
}

/**
 * Why the job may not be resumed, or undefined when it may. Only a failed
 * job is; not one whose provider may still be running (or have charged) a
 * submission whose outcome is unknown, nor one whose provider's outcome was
 * final (a failure there would only fail again: replay it instead), nor one
 * an operator failed out of review (its execution ended in review, not at
 * the failed state), nor one an operator replayed (its replay runs the same
 * action: resuming it too would charge for it twice).
 */
export function resumeRefusalOf(job: Job): string | undefined {
  if (job.status === 'needs_review') {
    return `Job ${job.id} needs review: its provider submission may have been charged with no known outcome. An operator resolves the review first; it is never resumed.`;
  }
  if (job.status !== 'failed') return `Job ${job.id} is ${job.status}; only a failed job can be resumed.`;
  if (job.replacedBy !== undefined) {
    return `Job ${job.id} was replayed as job ${job.replacedBy}; follow that job instead.`;
  }
  if (job.error?.code === RESOLVED_FAILED_CODE) {
    return `Job ${job.id} was failed by an operator out of review; replay it instead.`;
  }
  if (job.error?.code === START_DEADLINE_PASSED) {
    // It has no run to go on from, and its client's deadline has passed: a new request decides anew.
    return `Job ${job.id} never reached its provider by its startBy; submit it again (under a new Idempotency-Key) with a later startBy or none.`;
  }
  if (providerMayBeRunning(job)) {
    return `Job ${job.id} failed after a provider submission whose outcome is unknown; it is never resumed.`;
  }
  if (job.providerOutcome && job.providerOutcome.status !== 'succeeded') {
    return `Job ${job.id} was ${job.providerOutcome.status} by its provider; resuming would not change that. Replay it instead.`;
  }
  return undefined;
}

/**
 * How long a resume's redrive may still be missing: the reconciler redrives
 * a resumed job whose execution is still failed within this window (Step
 * Functions answers a repeated client token for 15 minutes), and treats it
 * as any ended execution after it.
 */
export const RESUME_REDRIVE_WINDOW_MS = 15 * 60 * 1000;

/**
 * Resumes the tenant's failed job: one conditional write moves it from
 * failed to running (of two resumes at once, one moves it; the other is
 * refused as running), then its execution is redriven. A crash between the
 * two leaves a running job whose execution failed: the reconciler redrives it.
 */
export async function resumeJob(deps: ResumeDeps, tenantId: string, jobId: string): Promise<Job> {
  const job = await getJob(deps.store, tenantId, jobId);
  const refusal = resumeRefusalOf(job);
  if (refusal) throw new JobNotResumableError(job.id, refusal);
  const now = deps.now();
  const resumed = await deps.store.reopenFailed(job, now);
  if (!resumed) {
    const current = await getJob(deps.store, tenantId, jobId);
    throw new JobNotResumableError(
      job.id,
      resumeRefusalOf(current) ?? `Job ${job.id} changed while it was resumed; try again.`,
    );
  }
  const redrive = await deps.workflow.redrive(currentExecutionOf(resumed), resumeTokenOf(resumed));
  await deps.timeline.record(job.id, {
    at: now.toISOString(),
    type: 'job.resumed',
    // An execution that can never be redriven (one that ended over 14 days ago) leaves a running job
    // whose workflow has ended: the reconciler starts a new run of it, as for any such job.
    detail: `resume ${resumed.resumes ?? 1}${redrive === 'ended' ? '; its execution cannot be redriven, so a new run goes on from where the job is' : ''}`,
  });
  return resumed;
}
