import { StepError } from '../../config/workflow-errors';
import { isCanceling, isTerminal, type Job, providerMayBeRunning } from './job';
import type { JobStore, Timeline, TimelineEvent, Workflow } from './ports';

/**
 * How a job that makes jobs of its own (audio.publish: a chunk job per chunk,
 * an embedding job per run of passages) records each one it made, in its own
 * timeline: one event naming the child, which a cancel of the parent reads to
 * cancel the children too.
 */
export const CHILD_MADE = { transcribe: 'chunk.submitted', embed: 'embedding.submitted' } as const;

/** The event's detail: what the child is, which try, and its job: `chunk 3 (try 2) as job_…`. */
export const childMadeDetail = (label: string, attempt: number, childId: string): string =>
  `${label}${attempt > 0 ? ` (try ${attempt + 1})` : ''} as ${childId}`;

const NAMED_CHILD = / as (job_[a-z2-7]{26})$/;
const MADE: ReadonlySet<string> = new Set(Object.values(CHILD_MADE));

/** The jobs a parent's timeline says it made, each once, in the order it made them. */
export function childJobIdsOf(events: readonly TimelineEvent[]): string[] {
  const ids = events.flatMap((event) =>
    MADE.has(event.type) ? (NAMED_CHILD.exec(event.detail ?? '')?.slice(1, 2) ?? []) : [],
  );
  return [...new Set(ids)];
}

/**
 * The child jobs a parent made, as they are now: one read of its timeline and
 * one batched read of the jobs it names. A job named there that is not this
 * parent's (or is gone) is left out.
 */
export async function childrenOf(
  deps: { readonly timeline: Pick<Timeline, 'list'>; readonly store: Pick<JobStore, 'getMany'> },
  parent: Pick<Job, 'id' | 'createdAt'>,
): Promise<Job[]> {
  const ids = childJobIdsOf(await deps.timeline.list(parent.id, parent.createdAt));
  if (ids.length === 0) return [];
  const found = await deps.store.getMany(ids);
  return ids.flatMap((id) => {
    const child = found.get(id);
    return child?.parent?.jobId === parent.id ? [child] : [];
  });
}

/**
 * Whether a child job is settled for its parent: finished, and its provider
 * done with it. A child canceled at a provider that cannot stop (Deepgram) is
 * `canceled` at once but runs out there; it is settled when the provider's
 * end is heard of, or the cancel is confirmed where the provider can stop.
 */
export const childSettled = (child: Job): boolean => isTerminal(child.status) && !providerMayBeRunning(child);

/**
 * Tells a canceling parent's `await-children` state that one of its
 * children settled, so it looks again (and finishes the cancel once none is
 * left). Only a canceled child can be the last one a canceling parent waits
 * for, so only a canceled one is looked at: no read on any other path.
 * False when there was nobody to tell. Telling twice is harmless.
 */
export async function tellCancelingParent(
  deps: { readonly store: Pick<JobStore, 'get'>; readonly workflow: Pick<Workflow, 'failTask'> },
  child: Job,
): Promise<boolean> {
  if (!child.parent || child.status !== 'canceled' || !childSettled(child)) return false;
  const parent = await deps.store.get(child.parent.jobId);
  if (!parent?.taskToken || !isCanceling(parent)) return false;
  return deps.workflow.failTask(
    parent.taskToken,
    StepError.childSettled,
    `[child_settled] ${child.id} is settled; the cancel looks at the children again.`,
  );
}
