import { isJobType, jobTypeModule } from '../../config/job-types';
import { IdempotencyKeyInUseError, IdempotencyKeyReusedError, TenantQueueFullError } from './errors';
import { type IntakeDeps, submitJob } from './intake';
import type { Job } from './job';
import type { Timeline } from './ports';

/**
 * A succeeded job's follow-ups (its type's `followUps`): each submitted
 * through intake as the tenant's own submission would be, under a key derived
 * from the parent's id and the follow-up's name, so a step that runs again
 * (a retry, a redelivered invocation) lands on the job the first run made.
 */

/** The idempotency key of a follow-up, in the tenant's key space. */
export const followUpKeyOf = (parentJobId: string, name: string): string =>
  `follow-up:${parentJobId}:${name}`;

/** How the parent's timeline records a follow-up: made (`… as job_…`), or not made and why. */
export const FOLLOW_UP_EVENTS = { submitted: 'follow-up.submitted', refused: 'follow-up.refused' } as const;

export interface FollowUpDeps {
  readonly intake: IntakeDeps;
  readonly timeline: Pick<Timeline, 'record'>;
  readonly now: () => Date;
  /** Hears of each follow-up submitted, counted as a client's job is. */
  readonly observe?: (observation: { readonly kind: 'submitted'; readonly jobType: string }) => void;
}

/**
 * Submits each follow-up of the succeeded `parent`, in the parent's tenant,
 * with its priority and webhook. One that intake refuses for good (the
 * tenant's queue is full, the key was used for another request, the input
 * does not fit its type) is recorded on the parent and not retried; any
 * other failure is thrown for the step's retry, which makes nothing twice.
 */
export async function startFollowUps(deps: FollowUpDeps, parent: Job): Promise<void> {
  if (parent.status !== 'succeeded' || parent.parent) return;
  for (const followUp of jobTypeModule(parent.type).followUps ?? []) {
    const refuse = (why: string) =>
      deps.timeline.record(parent.id, {
        at: deps.now().toISOString(),
        type: FOLLOW_UP_EVENTS.refused,
        detail: `${followUp.name}: ${why}`,
      });
    const type = followUp.jobType;
    const input = jobTypeModule(type).input.safeParse(
      followUp.input({ input: parent.input, result: parent.result ?? {} }),
    );
    if (!isJobType(type) || !input.success) {
      await refuse(`its input does not fit ${type}`);
      continue;
    }
    try {
      const { job, replayed } = await submitJob(deps.intake, {
        tenantId: parent.tenantId,
        idempotencyKey: followUpKeyOf(parent.id, followUp.name),
        request: {
          type,
          input: input.data,
          ...(parent.webhookUrl !== undefined ? { webhookUrl: parent.webhookUrl } : {}),
          ...(parent.priority !== undefined ? { priority: parent.priority } : {}),
        },
      });
      if (!replayed) {
        deps.observe?.({ kind: 'submitted', jobType: job.type });
        await deps.timeline.record(parent.id, {
          at: deps.now().toISOString(),
          type: FOLLOW_UP_EVENTS.submitted,
          detail: `${followUp.name} as ${job.id}`,
        });
      }
    } catch (error) {
      // Made by an earlier run of the step that stopped before enqueueing it: the job is stored once, and
      // the reconciler enqueues a queued job whose message never went, as it does for any submission.
      if (error instanceof IdempotencyKeyInUseError) continue;
      if (error instanceof TenantQueueFullError) await refuse("the tenant's queue is full");
      else if (error instanceof IdempotencyKeyReusedError)
        await refuse('its key was used for another request');
      else throw error;
    }
  }
}
