import { fireSchedule, parseFiring } from '../domain/schedules';
import { intakeDeps, recordSubmission } from '../shared/intake';
import { instrument, logger } from '../shared/observability';
import { scheduleStore } from '../shared/ports/schedule-store';

/** A firing submits its schedule's JSON request, never a file: the fire function has no input bucket. */
const noInputs = (): never => {
  throw new Error('The fire function has no input bucket');
};

/**
 * One firing of a tenant's schedule, invoked by its EventBridge Scheduler
 * schedule: submits the schedule's job through intake under the firing's
 * key, or nothing for a schedule that is disabled or gone. A malformed event
 * is logged and dropped (a retry could not make it valid); any other failure
 * is thrown, so Scheduler retries the firing, which replays the same job.
 */
export const handler = instrument(async (event: unknown) => {
  let firing: ReturnType<typeof parseFiring>;
  try {
    firing = parseFiring(event);
  } catch (error) {
    logger.error('firing refused: not an event of a Longhaul schedule', error as Error);
    return { outcome: 'malformed' };
  }
  logger.appendKeys({ tenantId: firing.tenantId, scheduleId: firing.scheduleId });
  const outcome = await fireSchedule({ schedules: scheduleStore(), intake: intakeDeps(noInputs) }, firing);
  if (outcome.kind !== 'submitted') {
    logger.warn('firing created no job', { reason: outcome.reason, scheduledTime: firing.scheduledTime });
    return { outcome: outcome.reason };
  }
  recordSubmission(outcome.result, { scheduledTime: firing.scheduledTime });
  const { job, replayed } = outcome.result;
  return { outcome: replayed ? 'replayed' : 'submitted', jobId: job.id };
});
