import { firstLookOf } from '../domain/dispatch';
import type { IntakeDeps, SubmitResult } from '../domain/intake';
import type { Job } from '../domain/job';
import {
  inFlightLimits,
  inputStore,
  jobQueue,
  jobStore,
  slotPools,
  tenantBacklogs,
  waitingLines,
} from './aws';
import { runtimeSettings } from './env';
import { emit, logger } from './observability';

/** Intake's ports, for every function that submits jobs: the API's routes and the schedules' firings. */
export function intakeDeps(): IntakeDeps {
  const settings = runtimeSettings();
  return {
    store: jobStore(),
    queue: jobQueue(),
    waiting: waitingLines(),
    backlogs: tenantBacklogs(),
    // Only multipart submissions upload; functions that never take a file (the fire function) have no bucket.
    get inputs() {
      return inputStore();
    },
    now: () => new Date(),
    idempotencyInProgressMs: settings.idempotencyInProgressMs,
    jobTypeProviders: settings.jobTypeProviders,
    firstLook,
  };
}

/** A fresh job's first look for a free slot of its provider, for intake and the reconciler's promotions. */
export function firstLook(job: Job): ReturnType<IntakeDeps['firstLook']> {
  return firstLookOf(
    {
      slots: slotPools(),
      maxInFlight: inFlightLimits(),
      maxWaitSeconds: runtimeSettings().slotWaitMaxSeconds,
      random: Math.random,
    },
    job,
  );
}

/** The metrics and log lines of one submission's outcome, the same whoever submitted it. */
export function recordSubmission(
  { job, replayed, enqueueError }: SubmitResult,
  detail: Readonly<Record<string, unknown>> = {},
): void {
  logger.appendKeys({ jobId: job.id });
  if (replayed) {
    emit('IdempotentReplays', 1);
    logger.info('idempotent replay', detail);
  } else {
    emit('JobsSubmitted', 1, { jobType: job.type });
    logger.info('job accepted', { jobType: job.type, ...detail });
  }
  if (enqueueError) {
    emit('EnqueueFailures', 1);
    logger.error('job stored but not enqueued; the reconciler will enqueue it', enqueueError as Error);
  }
}
