import { BatchProcessor, EventType, processPartialResponse } from '@aws-lambda-powertools/batch';
import type { Context, SQSBatchResponse, SQSEvent, SQSRecord } from 'aws-lambda';
import { jobMessage } from '../adapters/sqs-job-queue';
import { dispatchJob } from '../domain/dispatch';
import { queueWaitMsOf } from '../domain/job';
import { runtimeSettings } from '../shared/env';
import { emit, instrument, logger } from '../shared/observability';
import { eventPublisher } from '../shared/ports/events';
import { jobQueue } from '../shared/ports/job-queue';
import { jobStore } from '../shared/ports/job-store';
import { inFlightLimits, slotPools, waitingLines } from '../shared/ports/slots';
import { tenantShares } from '../shared/ports/tenants';
import { timeline } from '../shared/ports/timeline';
import { workflow } from '../shared/ports/workflow';
import { waitingForTokens } from '../shared/token-waits';

const settings = runtimeSettings();
const processor = new BatchProcessor(EventType.SQS);

/**
 * The jobs queue consumer. Each message is handled on its own; a message that
 * throws is reported as a batch item failure and comes back after the
 * visibility timeout, until the redrive policy moves it to the dead-letter queue.
 */
async function dispatchRecord(record: SQSRecord): Promise<void> {
  const message = jobMessage.parse(JSON.parse(record.body));
  const outcome = await dispatchJob(
    {
      store: jobStore(),
      slots: slotPools(),
      workflow: workflow(),
      queue: jobQueue(),
      waiting: waitingLines(),
      tenantShares: tenantShares(),
      timeline: timeline(),
      events: eventPublisher(),
      maxInFlight: inFlightLimits(),
      maxWaitSeconds: settings.slotWaitMaxSeconds,
      now: () => new Date(),
      random: Math.random,
      ...waitingForTokens,
      // A job's start is counted where its slot is granted, once: a granted job's prepare moves nothing.
      observeStart: (job) => {
        emit('JobsStarted', 1);
        emit('QueueWait', queueWaitMsOf(job), { jobType: job.type });
      },
    },
    message.jobId,
    message.deferrals ?? 0,
    message.inLine === true,
  );
  if (outcome === 'deferred') emit('SlotWaits', 1);
  else if (outcome === 'dropped') emit('DuplicatesDropped', 1);
  // The job id goes with the line, not into the logger's keys: the batch's records are handled at
  // once, and one record's keys would be another's, or removed under it.
  logger.info('job dispatched', { jobId: message.jobId, outcome });
}

export const handler = instrument(
  (event: SQSEvent, context: Context): Promise<SQSBatchResponse> =>
    processPartialResponse(event, dispatchRecord, processor, { context }),
);
