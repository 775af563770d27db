import { firstLookOf } from '../domain/dispatch';
import type { IntakeDeps } from '../domain/intake';
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
    firstLook: (job: Job) =>
      firstLookOf(
        {
          slots: slotPools(),
          maxInFlight: inFlightLimits(),
          maxWaitSeconds: settings.slotWaitMaxSeconds,
          random: Math.random,
        },
        job,
      ),
  };
}
