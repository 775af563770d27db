import { firstLookOf } from '../domain/dispatch';
import type { IntakeDeps, SubmitResult } from '../domain/intake';
import type { Job } from '../domain/job';
import type { InputStore } from '../domain/ports';
import { runtimeSettings } from './env';
import { emit, logger } from './observability';
import { jobQueue } from './ports/job-queue';
import { jobStore } from './ports/job-store';
import { inFlightLimits, slotPools, waitingLines } from './ports/slots';
import { tenantBacklogs } from './ports/tenants';

/**
 * Intake's ports, for every function that submits jobs: the API's routes and
 * the schedules' firings. The input bucket is the caller's to give, read only
 * when a multipart submission uploads: a function that never takes a file
 * (the fire function) neither has the bucket nor loads the S3 client.
 */
export function intakeDeps(inputs: () => InputStore): IntakeDeps {
  const settings = runtimeSettings();
  return {
    store: jobStore(),
    queue: jobQueue(),
    waiting: waitingLines(),
    backlogs: tenantBacklogs(),
    get inputs() {
      return inputs();
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
      waiting: waitingLines(),
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
