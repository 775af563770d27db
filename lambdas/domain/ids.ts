/**
 * The shapes of the ids derived from (tenant, Idempotency-Key)
 * (lambdas/domain/idempotency.ts derives them): plain constants the resource
 * schemas (lambdas/domain/resources.ts) check them by too.
 */

export const JOB_ID_PATTERN = /^job_[a-z2-7]{26}$/;

export const SCHEDULE_ID_PATTERN = /^sch_[a-z2-7]{26}$/;
