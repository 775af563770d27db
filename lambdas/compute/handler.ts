import type { Context } from 'aws-lambda';
import * as z from 'zod';
import { COMPUTE_STEPS, collectComputeOutcome, runComputeStep } from '../domain/compute';
import { runtimeSettings } from '../shared/env';
import { instrument, logger } from '../shared/observability';
import { jobStore } from '../shared/ports/job-store';
import { outputStore } from '../shared/ports/output-store';
import { computeDeps } from './deps';

const settings = runtimeSettings();

const computeEvent = z.object({
  step: z.enum(COMPUTE_STEPS),
  jobId: z.string().min(1),
  /** Set by the state after a Fargate task: read the outcome the task recorded instead of running the step. */
  collect: z.boolean().optional(),
});

/** The compute function: runs one compute step of audio.publish, or collects one a Fargate task ran. */
export const handler = instrument(async (raw: unknown, _context: Context): Promise<unknown> => {
  const event = computeEvent.parse(raw);
  logger.appendKeys({ jobId: event.jobId, step: event.step });
  if (event.collect) return collectComputeOutcome({ store: jobStore(), outputs: outputStore() }, event);
  return runComputeStep(computeDeps(settings), event);
});
