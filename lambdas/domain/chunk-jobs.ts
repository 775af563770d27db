import { jobTypeModule, type StoredJobType } from '../../config/job-types';
import { StepError } from '../../config/workflow-errors';
import { CHILD_MADE, childMadeDetail } from './children';
import { deriveJobId, fingerprint } from './idempotency';
import { cancelMadeChild, sendToLine } from './intake';
import { goesOn, type Job, newJob, priorityOf, providerOf } from './job';
import type {
  EnqueueOptions,
  JobQueue,
  JobStore,
  TenantBacklogs,
  Timeline,
  WaitingLines,
  Workflow,
} from './ports';
import type { StoredChunk } from './publish';

/**
 * The transcription fan-out of `audio.publish`: each chunk the split step cut
 * is transcribed by a job of its own (`audio.publish.chunk`), made here under
 * the chunk's idempotency key. It waits in its tenant's line at the provider,
 * holds one provider slot while it runs and converges through the reconciler
 * like any job, so chunks and whole jobs of every tenant share one line and
 * one limit, and a chunk's submission is as safe as a job's (its key reused
 * on every resend, an unknown outcome sent to review). The parent's
 * `transcribe` state (one per chunk, in a Map) waits with a task token that
 * the chunk job carries; its settling resumes it (`resumeParent`).
 */

/** Tries of a chunk: a chunk job that failed is made once more, under a new key, before the parent fails. */
export const CHUNK_ATTEMPTS = 2;

/** The key of a chunk's try: the chunk's own key first, then one per retry. */
export const chunkAttemptKey = (chunk: Pick<StoredChunk, 'idempotencyKey'>, attempt: number): string =>
  attempt === 0 ? chunk.idempotencyKey : `${chunk.idempotencyKey}.retry-${attempt}`;

export interface ChunkDeps {
  readonly store: JobStore;
  readonly queue: JobQueue;
  readonly waiting: WaitingLines;
  readonly backlogs: Pick<TenantBacklogs, 'admitPastCap'>;
  readonly workflow: Pick<Workflow, 'completeTask' | 'failTask'>;
  readonly timeline: Pick<Timeline, 'record'>;
  readonly now: () => Date;
  readonly firstLook: (job: Job) => Promise<EnqueueOptions>;
  /** Hears of each child job made, counted as submitted as a client's job is (its start is counted too). */
  readonly observe?: (observation: { readonly kind: 'submitted'; readonly jobType: string }) => void;
}

/**
 * One child job of a fan-out, as its parent's waiting state makes it: its
 * type, its place, its key (the first try's) and its input.
 */
export interface ChildSpec {
  readonly type: StoredJobType;
  readonly index: number;
  readonly stage?: 'embed';
  readonly idempotencyKey: string;
  readonly input: Readonly<Record<string, unknown>>;
  /** How the parent's timeline names it: `chunk 3`. */
  readonly label: string;
}

/**
 * The `transcribe` state of one chunk: its chunk job, made or found (see
 * {@link awaitChild}).
 */
export const awaitChunk = (
  deps: ChunkDeps,
  parent: Job,
  chunk: StoredChunk,
  taskToken: string,
): Promise<Job> =>
  awaitChild(
    deps,
    parent,
    {
      type: 'audio.publish.chunk',
      index: chunk.index,
      idempotencyKey: chunk.idempotencyKey,
      input: {
        chunkKey: chunk.key,
        ...(typeof parent.input.language === 'string' ? { language: parent.input.language } : {}),
      },
      label: `chunk ${chunk.index}`,
    },
    taskToken,
  );

/**
 * A state waiting for one child job: finds the child's current try (the
 * first whose job did not end without a result, or the last), makes its job
 * if there is none, and hands it the state's task token. A try that is
 * settled already resumes the state at once, so a retried state, or one
 * whose child finished before its token was recorded, never waits for
 * nothing. A try ends without a result when its job failed, or was canceled
 * while the parent goes on (the orphan sweep cancels a failed parent's
 * children not yet sent; its client then resumes it); a canceled try whose
 * submission's outcome is unknown is never followed by another: the provider
 * may be running it, so the state goes to review (`resumeParent`).
 */
export async function awaitChild(
  deps: ChunkDeps,
  parent: Job,
  child: ChildSpec,
  taskToken: string,
): Promise<Job> {
  // A resumed parent gets its attempts again: one generation of keys per resume, after the first's.
  const attempts = CHUNK_ATTEMPTS * ((parent.resumes ?? 0) + 1);
  for (let attempt = 0; ; attempt++) {
    const key = chunkAttemptKey(child, attempt);
    const existing = await deps.store.get(deriveJobId(parent.tenantId, key));
    if (existing && endedWithoutResult(existing, parent) && attempt + 1 < attempts) continue;
    const job = existing
      ? ((await deps.store.recordParentToken(existing.id, taskToken)) ?? existing)
      : await makeChildJob(deps, parent, child, key, attempt, taskToken);
    await resumeParent(deps, job);
    return job;
  }
}

/** Whether a try of a child ended with nothing for its parent, which goes on, and may be followed by another. */
const endedWithoutResult = (child: Job, parent: Job): boolean =>
  child.status === 'failed' || (child.status === 'canceled' && goesOn(parent) && !ambiguouslySent(child));

/** Whether a submission of the job went out with no known outcome: the provider may be running, and charging, it. */
const ambiguouslySent = (job: Job): boolean =>
  job.submitIntent !== undefined && job.providerJobId === undefined;

async function makeChildJob(
  deps: ChunkDeps,
  parent: Job,
  child: ChildSpec,
  key: string,
  attempt: number,
  taskToken: string,
): Promise<Job> {
  const draft = newJob(
    {
      id: deriveJobId(parent.tenantId, key),
      tenantId: parent.tenantId,
      type: child.type,
      provider: child.stage === 'embed' ? jobTypeModule(child.type).provider : providerOf(parent),
      priority: priorityOf(parent),
      input: child.input,
      idempotencyKey: key,
      fingerprint: fingerprint({ type: child.type, input: child.input }),
      parent: {
        jobId: parent.id,
        index: child.index,
        ...(child.stage ? { stage: child.stage } : {}),
        taskToken,
      },
    },
    deps.now(),
  );
  const outcome = await deps.store.create(draft);
  if (!outcome.created) {
    return (await deps.store.recordParentToken(outcome.existing.id, taskToken)) ?? outcome.existing;
  }
  deps.observe?.({ kind: 'submitted', jobType: draft.type });
  // Counted in the tenant's backlog past its cap: the parent was admitted, and its children are its work.
  await deps.backlogs.admitPastCap(parent.tenantId);
  // Named in the parent's timeline before it goes anywhere, then sent only if the parent still wants
  // it: a cancel writes its request before it reads the timeline, so either the cancel finds this
  // child there, or this finds the request and cancels the child before its line could send it.
  await deps.timeline.record(parent.id, {
    at: deps.now().toISOString(),
    type: CHILD_MADE[child.stage ?? 'transcribe'],
    detail: childMadeDetail(child.label, attempt, draft.id),
  });
  const now = await deps.store.get(parent.id);
  if (!now || !goesOn(now))
    return cancelMadeChild({ store: deps.store, workflow: deps.workflow, now: deps.now }, draft);
  await sendToLine(deps, draft);
  return draft;
}

/**
 * Resumes the parent's state waiting for a chunk job once the chunk job is
 * settled: with the chunk on success, `ChunkFailed` when it failed (the
 * state's retry makes the next try), and `NeedsReview` when it needs a
 * person (so the parent does too). A canceled chunk job resumes it by what
 * its parent is doing now (one read): `ChunkCanceled`
 * while the parent is being canceled (it waits for the rest of its
 * children); while the parent goes on, `ChunkFailed`, so the state's retry
 * makes the next try, or `NeedsReview` when the canceled job's submission
 * outcome is unknown. False when the job is no chunk, is not settled, or the
 * state no longer waits for this token. Resuming twice is harmless.
 */
export async function resumeParent(
  deps: {
    readonly workflow: Pick<Workflow, 'completeTask' | 'failTask'>;
    readonly store: Pick<JobStore, 'get'>;
  },
  child: Job,
): Promise<boolean> {
  const { workflow } = deps;
  const parent = child.parent;
  if (!parent?.taskToken) return false;
  const chunk = parent.stage === 'embed' ? `Embedding run ${parent.index}` : `Chunk ${parent.index}`;
  const error = child.error ?? { code: 'chunk_failed', message: `The chunk job ended ${child.status}.` };
  switch (child.status) {
    case 'succeeded':
      return workflow.completeTask(parent.taskToken, { index: parent.index, jobId: child.id });
    case 'failed':
      return workflow.failTask(
        parent.taskToken,
        StepError.chunkFailed,
        `[${error.code}] ${chunk} failed: ${error.message}`,
      );
    case 'canceled': {
      const current = await deps.store.get(parent.jobId);
      if (current && goesOn(current) && ambiguouslySent(child)) {
        return workflow.failTask(
          parent.taskToken,
          StepError.needsReview,
          `[ambiguous_submission] ${chunk} was canceled after a submission whose outcome is unknown.`,
        );
      }
      if (current && goesOn(current)) {
        return workflow.failTask(
          parent.taskToken,
          StepError.chunkFailed,
          `[chunk_canceled] ${chunk} was canceled while its job goes on; it is made again.`,
        );
      }
      return workflow.failTask(
        parent.taskToken,
        StepError.chunkCanceled,
        `[chunk_canceled] ${chunk} was canceled.`,
      );
    }
    case 'needs_review':
      return workflow.failTask(
        parent.taskToken,
        StepError.needsReview,
        `[${error.code}] ${chunk} needs review: ${error.message}`,
      );
    default:
      return false;
  }
}
