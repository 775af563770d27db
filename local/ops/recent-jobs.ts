import type { MetricName } from '../../config/metrics';
import { JOB_ID_PATTERN } from '../../lambdas/domain/idempotency';
import type { JobStatus } from '../../lambdas/domain/job';
import type { Invocation } from '../lambda';
import type { MetricDatum } from './emf';

/**
 * The jobs that finished lately, fed by the captured metrics: a metric that
 * marks a job's end names no job (its dimensions stay low-cardinality), but
 * the invocation that emitted it does, through its event (a workflow step's
 * `jobId`, or the `{id}` of the API route that canceled it). Only ids are
 * kept; the ops view reads each job's current state from the job store.
 */

const FINISHING: Partial<Record<string, JobStatus>> = {
  JobsSucceeded: 'succeeded',
  JobsFailed: 'failed',
  JobsCanceled: 'canceled',
  JobsNeedingReview: 'needs_review',
} satisfies Partial<Record<MetricName, JobStatus>>;

/** How many finished jobs are remembered. */
export const RECENT_JOBS_KEPT = 50;

function jobIdOf(invocation: Invocation | undefined): string | undefined {
  const event = invocation?.event as { jobId?: unknown; pathParameters?: { id?: unknown } | null } | null;
  const id = event?.jobId ?? event?.pathParameters?.id;
  return typeof id === 'string' && JOB_ID_PATTERN.test(id) ? id : undefined;
}

export class RecentlyFinishedJobs {
  /** Most recent first. */
  #ids: string[] = [];

  note(data: readonly MetricDatum[], invocation: Invocation | undefined): void {
    if (!data.some((datum) => FINISHING[datum.name] !== undefined)) return;
    const id = jobIdOf(invocation);
    if (id === undefined) return;
    this.#ids = [id, ...this.#ids.filter((known) => known !== id)].slice(0, RECENT_JOBS_KEPT);
  }

  ids(): readonly string[] {
    return this.#ids;
  }
}
