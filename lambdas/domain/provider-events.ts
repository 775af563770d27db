import { z } from 'zod';
import { ValidationError } from './errors';
import type { Job, ProviderOutcome } from './job';
import type { JobStore, Timeline, Workflow } from './ports';
import { resumeAwait } from './workflow';

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
export type ProviderEvent = z.infer<typeof providerEvent>;

export function parseProviderEvent(body: unknown): ProviderEvent {
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
}

export type ProviderEventOutcome = 'progress' | 'resumed' | 'recorded' | 'ignored';

/**
 * Applies a provider event. The final outcome is recorded on the job once and
 * resumes the waiting workflow step through its task token; if the step has
 * not stored its token yet, it finds the outcome itself when it does. Events
 * for unknown jobs, or for another provider job than the one on record, are
 * ignored (and acknowledged, so the provider stops retrying).
 */
export async function applyProviderEvent(
  deps: ProviderEventDeps,
  jobId: string,
  event: ProviderEvent,
): Promise<ProviderEventOutcome> {
  if (event.type === 'progress') return 'progress';
  const job = await deps.store.get(jobId);
  if (!job || !concerns(job, event.id)) return 'ignored';
  const outcome: ProviderOutcome = {
    status: event.type,
    ...(event.type === 'failed' ? { error: { code: event.error.code, message: event.error.message } } : {}),
    at: deps.now().toISOString(),
  };
  const updated = await deps.store.recordProviderOutcome(job.id, outcome);
  if (!job.providerOutcome) {
    await deps.timeline.record(job.id, { at: outcome.at, type: `provider.${event.type}` });
  }
  if (!updated?.taskToken || !updated.providerOutcome) return 'recorded';
  return (await resumeAwait(deps.workflow, updated.taskToken, updated.providerOutcome))
    ? 'resumed'
    : 'recorded';
}

/**
 * Whether an event about provider job `providerJobId` can be about this job:
 * the job is still running and that is its provider job, or a submission is
 * under way whose id is not recorded yet (a fast provider can finish first).
 */
function concerns(job: Job, providerJobId: string): boolean {
  if (job.status !== 'running') return false;
  if (job.providerJobId !== undefined) return job.providerJobId === providerJobId;
  return job.submitIntent !== undefined;
}
