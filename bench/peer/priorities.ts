import type { JobPriority } from '../../lambdas/domain/job';

/**
 * Longhaul's priorities as BullMQ job priorities (1 is BullMQ's highest), for
 * the peer's requests that name one. A job added without a priority is taken
 * before every prioritized job, so a workload that uses priorities names one
 * on every job.
 */
export const PEER_PRIORITIES: Readonly<Record<JobPriority, number>> = {
  interactive: 1,
  standard: 2,
  batch: 3,
};
