/**
 * The values a job's status and priority take: plain constants under the job
 * lifecycle (lambdas/domain/job.ts) and the resource schemas
 * (lambdas/domain/resources.ts), which both build on them.
 */

/** `scheduled`: waiting for its `runAt`, stored but sent nowhere until the reconciler finds it due. */
export const JOB_STATUSES = [
  'scheduled',
  'queued',
  'running',
  'succeeded',
  'failed',
  'canceled',
  'needs_review',
] as const;
export type JobStatus = (typeof JOB_STATUSES)[number];

/**
 * How a job goes before the tenant's other waiting jobs: `interactive` before
 * `standard` before `batch` (CONTRACT section 1, fairness).
 */
export const JOB_PRIORITIES = ['interactive', 'standard', 'batch'] as const;
export type JobPriority = (typeof JOB_PRIORITIES)[number];
export const DEFAULT_PRIORITY: JobPriority = 'standard';

export const TERMINAL_STATUSES: ReadonlySet<JobStatus> = new Set(['succeeded', 'failed', 'canceled']);
export const isTerminal = (status: JobStatus): boolean => TERMINAL_STATUSES.has(status);

/** The statuses a cancel can move a job out of: every one but the terminal ones. */
export const CANCELABLE_STATUSES: readonly JobStatus[] = JOB_STATUSES.filter((status) => !isTerminal(status));

/** The error code of a job that could not reach its provider by its `startBy`: it ended uncharged. */
export const START_DEADLINE_PASSED = 'start_deadline_passed';
