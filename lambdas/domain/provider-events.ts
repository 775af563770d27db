import * as z from 'zod';
import { StepError } from '../../config/workflow-errors';
import { tellCancelingParent } from './children';
import { ValidationError } from './errors';
import { type Job, type ProviderOutcome, providerOutputKeyOf, submissionOf, submissionTagOf } from './job';
import type { JobStore, OutputStore, Timeline, Workflow } from './ports';
import type { ProviderEvent } from './provider';

/** Events the provider posts to `/v1/provider/events?jobId=…` (signed; see shared/signature.ts). */
export const providerEvent = z.discriminatedUnion('type', [
  z.object({
    type: z.literal('progress'),
    id: z.string().min(1),
    progress: z.number().min(0).max(100),
    at: z.string(),
  }),
  z.object({
    type: z.literal('succeeded'),
    id: z.string().min(1),
    output: z.unknown().optional(),
    at: z.string(),
  }),
  z.object({
    type: z.literal('failed'),
    id: z.string().min(1),
    error: z.object({ code: z.string().max(100), message: z.string().max(2000) }),
    at: z.string(),
  }),
  z.object({ type: z.literal('canceled'), id: z.string().min(1), at: z.string() }),
]);
/** An event of the generic provider (`longhaul-http`), as it posts it. */
export type GenericProviderEvent = z.infer<typeof providerEvent>;

export function parseProviderEvent(body: unknown): GenericProviderEvent {
  const parsed = providerEvent.safeParse(body);
  if (!parsed.success) {
    throw new ValidationError(
      'The provider event is invalid.',
      parsed.error.issues.map((issue) => ({ pointer: `/${issue.path.join('/')}`, detail: issue.message })),
    );
  }
  return parsed.data;
}

export interface ProviderEventDeps {
  readonly store: JobStore;
  readonly workflow: Workflow;
  readonly timeline: Timeline;
  readonly now: () => Date;
  /** Keeps the output a completion carries, for finalize; without it finalize asks the provider. */
  readonly outputs?: Pick<OutputStore, 'putOutput'>;
}

export type ProviderEventOutcome = 'progress' | 'resumed' | 'recorded' | 'ignored';

/**
 * Applies a provider's final event. The outcome is recorded on the job once
 * and resumes the waiting workflow step through its task token; if the step
 * has not stored its token yet, it finds the outcome itself when it does. An
 * event counts only for the submission it was sent for (the `submission` of
 * its webhook URL) and the provider job on record: a late event of a
 * submission an operator has replaced touches nothing. For a job in review the
 * outcome is recorded, not acted on: it is the evidence an operator needs. So
 * is the end of a provider job its job's cancel could not stop: it tells the
 * reconciler the provider is done, and the slot the job kept can go.
 * Other events are ignored (and acknowledged, so the provider stops retrying).
 */
export async function applyProviderEvent(
  deps: ProviderEventDeps,
  jobId: string,
  event: ProviderEvent,
  submission: string | undefined,
): Promise<ProviderEventOutcome> {
  if (event.type === 'progress') return 'progress';
  const job = await deps.store.get(jobId);
  if (!job) return 'ignored';
  const ranOn = ranOnAfterCancel(job, event.id, submission);
  if (!ranOn && !concerns(job, event.id, submission)) return 'ignored';
  let outputKey: string | undefined;
  if (
    event.type === 'succeeded' &&
    event.output !== undefined &&
    deps.outputs &&
    !job.providerOutcome &&
    !ranOn
  ) {
    // Kept before the outcome is recorded, so a recorded outcome's output is always there to read
    // (a canceled job's never is).
    outputKey = providerOutputKeyOf(job);
    await deps.outputs.putOutput(outputKey, JSON.stringify(event.output), 'application/json');
  }
  const outcome: ProviderOutcome = {
    status: event.type,
    ...(event.type === 'failed' ? { error: { code: event.error.code, message: event.error.message } } : {}),
    at: deps.now().toISOString(),
    providerJobId: event.id,
    ...(outputKey ? { outputKey } : {}),
  };
  const updated = await deps.store.recordProviderOutcome(job, outcome);
  // A canceled child that ran out at its provider is settled now: its canceling parent looks again.
  if (ranOn && updated) await tellCancelingParent(deps, updated);
  // The resume and the timeline's record go together: a freed slot's next job waits for the resume only.
  const [resumed] = await Promise.all([
    job.status === 'running' && updated?.taskToken && updated.providerOutcome
      ? resumeAwait(deps.workflow, updated.taskToken, updated.providerOutcome)
      : false,
    job.providerOutcome
      ? undefined
      : deps.timeline.record(job.id, { at: outcome.at, type: `provider.${event.type}` }),
  ]);
  return resumed ? 'resumed' : 'recorded';
}

/**
 * Whether an event about provider job `providerJobId`, sent for `submission`,
 * is about this job as it is now: its current submission, and that provider
 * job, or a submission under way whose id is not recorded yet (a fast
 * provider can answer before the submit step stores the id). Running jobs and
 * jobs in review (whose outcome is evidence) qualify.
 */
export function concerns(
  job: Pick<Job, 'status' | 'providerJobId' | 'submitIntent' | 'createdAt' | 'resubmissions'>,
  providerJobId: string,
  submission: string | undefined,
): boolean {
  if (job.status !== 'running' && job.status !== 'needs_review') return false;
  if (!isCurrentSubmission(job, submission)) return false;
  if (job.providerJobId !== undefined) return job.providerJobId === providerJobId;
  return job.submitIntent !== undefined || job.status === 'needs_review';
}

/**
 * Whether an event is about the provider job of a job canceled while that
 * provider job ran, with no outcome recorded: the cancel did not stop it (a
 * provider that cannot cancel, like Deepgram, or one that could not be
 * reached), so the job kept its slot until the provider is done. A job
 * canceled while its submission was under way has no provider job on record
 * yet: a provider that answers at once (Bedrock) ends it with that answer.
 */
function ranOnAfterCancel(job: Job, providerJobId: string, submission: string | undefined): boolean {
  return (
    job.status === 'canceled' &&
    job.providerOutcome === undefined &&
    (job.providerJobId === providerJobId ||
      (job.providerJobId === undefined && job.submitIntent !== undefined)) &&
    isCurrentSubmission(job, submission)
  );
}

/** Webhook URLs made before submissions were tagged carry none: they are the first submission's. */
const isCurrentSubmission = (
  job: Pick<Job, 'createdAt' | 'resubmissions'>,
  submission: string | undefined,
): boolean => (submission === undefined ? submissionOf(job) === 0 : submission === submissionTagOf(job));

/** Resumes the await step with what the provider reported. */
export async function resumeAwait(
  workflow: Workflow,
  taskToken: string,
  outcome: NonNullable<Job['providerOutcome']>,
): Promise<boolean> {
  if (outcome.status === 'succeeded')
    return workflow.completeTask(taskToken, { providerStatus: 'succeeded' });
  const error = outcome.error ?? {
    code: `provider_${outcome.status}`,
    message: `The provider job was ${outcome.status}.`,
  };
  return workflow.failTask(taskToken, StepError.providerJobFailed, `[${error.code}] ${error.message}`);
}
