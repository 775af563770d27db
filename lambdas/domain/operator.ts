import { z } from 'zod';
import { JobAlreadyFinishedError, JobNotFoundError, JobNotInReviewError, ValidationError } from './errors';
import { isTerminal, type Job } from './job';
import type { JobQueue, JobStore, SlotPools, Timeline } from './ports';
import { releaseOwnSlot } from './slots';

/** Operators settle what needs a person: jobs in review. */

const resolution = z.strictObject({
  outcome: z.enum(['succeeded', 'failed', 'requeue'], { error: 'must be succeeded, failed or requeue' }),
  note: z.string().trim().min(1, 'must say why').max(1000),
});
export type Resolution = z.infer<typeof resolution>;

export function parseResolution(body: unknown): Resolution {
  const parsed = resolution.safeParse(body);
  if (!parsed.success) {
    throw new ValidationError(
      'The resolution is invalid.',
      parsed.error.issues.map((issue) => ({
        pointer: `/${issue.path.join('/')}`,
        detail:
          issue.code === 'unrecognized_keys' ? `unknown field(s): ${issue.keys.join(', ')}` : issue.message,
      })),
    );
  }
  return parsed.data;
}

export interface OperatorDeps {
  readonly store: JobStore;
  readonly slots: SlotPools;
  readonly queue: JobQueue;
  readonly timeline: Timeline;
  readonly now: () => Date;
}

/**
 * Settles a job in review: `succeeded` or `failed` as the operator found it
 * at the provider, or `requeue` to submit it again under a new provider key.
 * Its slot is released in every case (a requeued job takes one again).
 */
export async function resolveJob(
  deps: OperatorDeps,
  jobId: string,
  { outcome, note }: Resolution,
): Promise<Job> {
  const job = await deps.store.get(jobId);
  if (!job) throw new JobNotFoundError(jobId);
  if (isTerminal(job.status)) throw new JobAlreadyFinishedError(job.id, job.status);
  if (job.status !== 'needs_review') throw new JobNotInReviewError(job.id, job.status);
  const now = deps.now();
  let resolved: Job | undefined;
  if (outcome === 'requeue') {
    resolved = await deps.store.requeueForResubmission(job, now);
  } else {
    resolved = await deps.store.transition(
      job,
      ['needs_review'],
      outcome === 'succeeded'
        ? { status: 'succeeded', progress: 100, error: null, finishedAt: now.toISOString() }
        : {
            status: 'failed',
            error: { code: 'resolved_failed', message: note },
            finishedAt: now.toISOString(),
          },
      now,
    );
  }
  if (!resolved) throw new JobNotInReviewError(job.id, 'changed');
  // The submission in review gives its slot back; a requeued job takes one for its new submission.
  await releaseOwnSlot(deps.slots, job);
  await deps.timeline.record(job.id, {
    at: now.toISOString(),
    type: 'operator.resolved',
    detail: `${outcome}: ${note}`,
  });
  if (outcome === 'requeue') {
    await deps.queue.enqueue(job.id);
    await deps.store.touchEnqueued(job.id, deps.now());
  }
  return resolved;
}
