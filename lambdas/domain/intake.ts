import { createHash, randomBytes } from 'node:crypto';
import { mediaTypeMatches } from '../../config/job-types/job-type';
import type { ProviderName } from '../../config/providers';
import { StepError } from '../../config/workflow-errors';
import { childrenOf, childSettled } from './children';
import { mapWithConcurrency } from './concurrency';
import {
  JOB_CANCELED_CAUSE,
  JobAlreadyFinishedError,
  JobNotFoundError,
  TenantQueueFullError,
  ValidationError,
} from './errors';
import { type EventDeps, publishJobEvent } from './events';
import { waitingEntryOf } from './fair-share';
import { decideOnExisting, deriveJobId, fingerprint } from './idempotency';
import {
  currentExecutionOf,
  DEFAULT_PRIORITY,
  executionNameOf,
  isTerminal,
  type Job,
  type JobType,
  newJob,
  providerOf,
  takesSlot,
} from './job';
import type {
  CreateOutcome,
  EnqueueOptions,
  InputStore,
  JobPage,
  JobQueue,
  JobStore,
  KeptSteps,
  TenantBacklogs,
  Timeline,
  TimelineEvent,
  WaitingLines,
  Workflow,
} from './ports';
import type { BatchEntry, CreateJobRequest, CreateUploadRequest, ListJobsQuery } from './requests';
import { fileSourceOf } from './requests';
import type { createJobBatchItemResult, Resource, uploadTicket } from './resources';

export interface IntakeDeps {
  readonly store: JobStore;
  readonly queue: JobQueue;
  /** Each tenant's line of waiting jobs at each provider: a new job joins its tenant's. */
  readonly waiting: WaitingLines;
  /** Each tenant's queued and scheduled jobs, counted against its `maxQueued`. */
  readonly backlogs: TenantBacklogs;
  readonly inputs: InputStore;
  readonly now: () => Date;
  readonly idempotencyInProgressMs: number;
  /** The provider each job type runs on (settings). */
  readonly jobTypeProviders: Readonly<Record<JobType, ProviderName>>;
  /** How the new job's message goes: at once, or as a later look when its provider is full (`firstLookOf`). */
  readonly firstLook: (job: Job) => Promise<EnqueueOptions>;
}

export interface InputFile {
  readonly bytes: Uint8Array;
  readonly contentType: string;
}

export interface SubmitResult {
  readonly job: Job;
  /** The key's job already existed: this answer repeats the first one. */
  readonly replayed: boolean;
  /** Set when the job was written but could not be enqueued; the reconciler re-enqueues it. */
  readonly enqueueError?: unknown;
  /** Set when the job was enqueued but that could not be recorded; duplicates get 409 a little longer. */
  readonly markEnqueuedError?: unknown;
}

/**
 * Accepts one user action: one job per (tenant, Idempotency-Key), written
 * with one conditional write, then enqueued. A failed enqueue leaves a durable
 * `queued` job for the reconciler, so the answer is still "accepted".
 *
 * The job is admitted into its tenant's backlog first (one conditional
 * write against `maxQueued`): a tenant at its cap gets TenantQueueFullError
 * and nothing is stored or uploaded, unless the key's job exists, which is
 * replayed as always. An admission that stores no job is taken back.
 */
export async function submitJob(
  deps: IntakeDeps,
  command: {
    readonly tenantId: string;
    readonly idempotencyKey: string;
    readonly request: CreateJobRequest;
    readonly file?: InputFile;
    /** The job an operator replays as this one (`replayJobs`); not part of the request's fingerprint. */
    readonly replayOf?: string;
    /** The recurring schedule whose firing this is; part of the request a replay must repeat. */
    readonly scheduleId?: string;
    /** The media item version the job publishes (`startVersion`); its key is in the item's key space. */
    readonly media?: Job['media'];
  },
): Promise<SubmitResult> {
  const { tenantId, idempotencyKey, file, replayOf, scheduleId, media } = command;
  const request = file ? withFileRef(command.request, file) : command.request;
  const { job, requestFingerprint } = draftJob(deps, tenantId, idempotencyKey, request, {
    replayOf,
    scheduleId,
    media,
  });

  if (file) {
    // Look before uploading, so a replay or a reused key stores nothing.
    const existing = await deps.store.get(job.id);
    if (existing) return replay(deps, existing, requestFingerprint);
  }
  if (!(await deps.backlogs.admit(tenantId))) {
    // A retry of an accepted request still gets its answer; only a new job is refused.
    const existing = await deps.store.get(job.id);
    if (existing) return replay(deps, existing, requestFingerprint);
    throw new TenantQueueFullError(tenantId);
  }

  let outcome: CreateOutcome;
  try {
    if (file) {
      await deps.inputs.putInput(
        tenantId,
        String(request.input[fileSourceOf(request.type)?.refField ?? '']),
        file.bytes,
        file.contentType,
      );
    }
    outcome = await deps.store.create(job);
  } catch (error) {
    // Nothing was stored that counts: the admission goes back (a miss here is the reconciler's to recount).
    await deps.backlogs.giveBack(tenantId).catch(() => {});
    throw error;
  }
  if (!outcome.created) {
    await deps.backlogs.giveBack(tenantId);
    return replay(deps, outcome.existing, requestFingerprint);
  }
  // Stored, and sent nowhere until it is due: the reconciler finds it then (`promoteDue`).
  if (job.status === 'scheduled') return { job, replayed: false };
  return sendToLine(deps, job);
}

/**
 * Sends a stored, queued job on its way: into its tenant's line at its
 * provider, then to the dispatcher, and records that it was sent. A job whose
 * type holds no slot of its own (`audio.publish`) waits in no line: its
 * message starts it. A send that fails leaves a durable `queued` job for the
 * reconciler, so the job is still accepted.
 */
export async function sendToLine(
  deps: Pick<IntakeDeps, 'waiting' | 'queue' | 'store' | 'now' | 'firstLook'>,
  job: Job,
): Promise<SubmitResult> {
  try {
    if (takesSlot(job)) {
      // At a full provider, in line before its message can reach the dispatcher (a job whose line entry
      // is lost joins when its message is read); with a slot free, the dispatcher decides.
      const look = await firstLook(deps, job);
      if (look.inLine) await deps.waiting.add(waitingEntryOf(job));
      await deps.queue.enqueue(job, look);
    } else {
      await deps.queue.enqueue(job);
    }
  } catch (enqueueError) {
    return { job, replayed: false, enqueueError };
  }
  try {
    await deps.store.markEnqueued(job.id, deps.now());
  } catch (markEnqueuedError) {
    return { job, replayed: false, markEnqueuedError };
  }
  return { job, replayed: false };
}

/** One item's answer in a batch's response. */
export type BatchItemResult = Resource<typeof createJobBatchItemResult>;

/** What one item of a batch got: what a single submission of it would have, the result or the error. */
export type BatchItemOutcome = { readonly result: SubmitResult } | { readonly error: unknown };

/** Conditional writes of one batch in flight at once. */
const BATCH_WRITES_AT_ONCE = 25;

/**
 * Accepts many user actions in one request, each item answered as a single
 * submission with its key and body would be (same job ids, same replays,
 * same refusals), with the work batched: one BatchGetItem read per 100 keys
 * finds the jobs that exist, one admission takes the tenant's backlog for all
 * the new ones at once (those beyond `maxQueued` are refused, in item order),
 * each new job is created by its own conditional write (BatchWriteItem has no
 * conditions, so it would overwrite a job a concurrent request just created:
 * a second run and a second charge), 25 at a time, and the jobs are sent ten
 * to a queue message batch. A job stored but not enqueued is accepted and left
 * to the reconciler, as a single one is.
 *
 * A key given twice is one job: the first valid item with it decides; a
 * later item with the same body repeats its answer as a replay, one with
 * another body is refused as a reused key.
 */
export async function submitBatch(
  deps: IntakeDeps,
  command: { readonly tenantId: string; readonly entries: readonly BatchEntry[] },
): Promise<BatchItemOutcome[]> {
  const { tenantId, entries } = command;
  const outcomes = new Array<BatchItemOutcome>(entries.length);
  type Draft = { readonly index: number; readonly job: Job; readonly requestFingerprint: string };
  const firsts = new Map<string, Draft>();
  const repeats: Draft[] = [];
  entries.forEach((entry, index) => {
    if ('error' in entry) {
      outcomes[index] = { error: entry.error };
      return;
    }
    let draft: Draft;
    try {
      draft = { index, ...draftJob(deps, tenantId, entry.idempotencyKey, entry.request) };
    } catch (error) {
      outcomes[index] = { error };
      return;
    }
    if (firsts.has(draft.job.id)) repeats.push(draft);
    else firsts.set(draft.job.id, draft);
  });

  const existing = firsts.size > 0 ? await deps.store.getMany([...firsts.keys()]) : new Map<string, Job>();
  const fresh: Draft[] = [];
  for (const draft of firsts.values()) {
    const found = existing.get(draft.job.id);
    if (found) outcomes[draft.index] = settle(() => replay(deps, found, draft.requestFingerprint));
    else fresh.push(draft);
  }
  const admitted = fresh.length > 0 ? await deps.backlogs.admitUpTo(tenantId, fresh.length) : 0;
  for (const draft of fresh.slice(admitted)) {
    outcomes[draft.index] = { error: new TenantQueueFullError(tenantId) };
  }

  const created: Draft[] = [];
  let unused = 0;
  await mapWithConcurrency(fresh.slice(0, admitted), BATCH_WRITES_AT_ONCE, async (draft) => {
    try {
      const outcome = await deps.store.create(draft.job);
      if (outcome.created) {
        created.push(draft);
        return;
      }
      // Created meanwhile by a concurrent request with the key: answered as a single submission would be.
      unused++;
      outcomes[draft.index] = settle(() => replay(deps, outcome.existing, draft.requestFingerprint));
    } catch (error) {
      unused++;
      outcomes[draft.index] = { error };
    }
  });
  // Admissions that stored no job go back in one write (a miss is the reconciler's to recount).
  if (unused > 0) await deps.backlogs.giveBack(tenantId, unused).catch(() => {});

  // Scheduled jobs are stored and answered; they join their lines when the reconciler finds them due.
  const stored = await enterLines(
    deps,
    created
      .sort((a, b) => a.index - b.index)
      .map((draft) => draft.job)
      .filter((job) => job.status !== 'scheduled'),
  );
  for (const draft of created) {
    outcomes[draft.index] = { result: stored.get(draft.job.id) ?? { job: draft.job, replayed: false } };
  }

  for (const repeat of repeats) {
    const first = firsts.get(repeat.job.id) as Draft;
    const outcome = outcomes[first.index] as BatchItemOutcome;
    // As a single submission right after the first would be answered: a replay of its job (in use while
    // that job is not yet enqueued), the first's refusal again, or a reused key for another body.
    outcomes[repeat.index] =
      'result' in outcome || repeat.requestFingerprint !== first.requestFingerprint
        ? settle(() =>
            replay(
              deps,
              'result' in outcome ? asStored(outcome.result, deps.now()) : first.job,
              repeat.requestFingerprint,
            ),
          )
        : outcome;
  }
  return outcomes;
}

/**
 * Puts `queued` jobs that were never sent in their lines, then sends their
 * messages in batches and records each enqueue, as `submitJob` does for one:
 * a batch's new jobs, and scheduled jobs the reconciler found due. A job
 * whose line entry or message failed is answered with `enqueueError` and
 * left to the reconciler's repair of queued jobs without a message.
 */
export async function enterLines(
  deps: Pick<IntakeDeps, 'waiting' | 'queue' | 'store' | 'now' | 'firstLook'>,
  entering: readonly Job[],
): Promise<Map<string, SubmitResult>> {
  const results = new Map<string, SubmitResult>();
  for (const job of entering) if (!takesSlot(job)) results.set(job.id, await sendToLine(deps, job));
  const jobs = entering.filter(takesSlot);
  let notInLine: ReadonlyMap<string, unknown>;
  try {
    notInLine = jobs.length > 0 ? await deps.waiting.addMany(jobs.map(waitingEntryOf)) : new Map();
  } catch (error) {
    notInLine = new Map(jobs.map((job) => [job.id, error]));
  }
  const lined = jobs.filter((job) => {
    if (!notInLine.has(job.id)) return true;
    results.set(job.id, { job, replayed: false, enqueueError: notInLine.get(job.id) });
    return false;
  });
  // One first look per provider: its jobs' messages go at once, or as later looks if it is full.
  const byProvider = new Map<ProviderName, Job[]>();
  for (const job of lined) byProvider.set(providerOf(job), [...(byProvider.get(providerOf(job)) ?? []), job]);
  const failed = new Map<string, unknown>();
  for (const jobs of byProvider.values()) {
    try {
      // In line already, free slot or not: the dispatcher need not put them there again.
      const look = { ...(await firstLook(deps, jobs[0] as Job)), inLine: true };
      const sent = await deps.queue.enqueueMany(jobs, look);
      for (const [id, error] of sent) failed.set(id, error);
    } catch (error) {
      for (const job of jobs) failed.set(job.id, error);
    }
  }
  const enqueued = lined.filter((job) => {
    if (!failed.has(job.id)) return true;
    results.set(job.id, { job, replayed: false, enqueueError: failed.get(job.id) });
    return false;
  });
  await mapWithConcurrency(enqueued, BATCH_WRITES_AT_ONCE, async (job) => {
    try {
      await deps.store.markEnqueued(job.id, deps.now());
      results.set(job.id, { job, replayed: false });
    } catch (markEnqueuedError) {
      results.set(job.id, { job, replayed: false, markEnqueuedError });
    }
  });
  return results;
}

/** The job of a submission as it is now stored: its enqueue is recorded unless the result says it is not. */
function asStored(result: SubmitResult, now: Date): Job {
  if (result.replayed || result.enqueueError !== undefined || result.markEnqueuedError !== undefined) {
    return result.job;
  }
  return { ...result.job, enqueuedAt: result.job.enqueuedAt ?? now.toISOString() };
}

function settle(answer: () => SubmitResult): BatchItemOutcome {
  try {
    return { result: answer() };
  } catch (error) {
    return { error };
  }
}

/**
 * The job a request makes under its key, not yet stored, and the request's
 * fingerprint: what a later request with the key must match to be a replay.
 */
function draftJob(
  deps: Pick<IntakeDeps, 'now' | 'jobTypeProviders'>,
  tenantId: string,
  idempotencyKey: string,
  request: CreateJobRequest,
  origin: {
    readonly replayOf?: string | undefined;
    readonly scheduleId?: string | undefined;
    readonly media?: Job['media'] | undefined;
  } = {},
): { readonly job: Job; readonly requestFingerprint: string } {
  const priority = request.priority ?? DEFAULT_PRIORITY;
  const requestFingerprint = fingerprint({
    type: request.type,
    input: request.input,
    webhookUrl: request.webhookUrl ?? null,
    // The default is left out, so a job stored before jobs had a priority still matches its replay
    // (and asking for `standard` is the same request as not asking).
    ...(priority !== DEFAULT_PRIORITY ? { priority } : {}),
    // Left out when absent, so jobs stored before jobs had a runAt still match their replays.
    ...(request.runAt !== undefined ? { runAt: request.runAt } : {}),
    // Left out when absent, as runAt is: a request without a deadline is the request it always was.
    ...(request.startBy !== undefined ? { startBy: request.startBy } : {}),
    // Only a schedule's firing has one, so a tenant's own request under the key never matches it.
    ...(origin.scheduleId !== undefined ? { scheduleId: origin.scheduleId } : {}),
  });
  const job = newJob(
    {
      id: deriveJobId(tenantId, idempotencyKey),
      tenantId,
      type: request.type,
      provider: deps.jobTypeProviders[request.type],
      priority,
      ...(request.runAt !== undefined ? { runAt: request.runAt } : {}),
      ...(request.startBy !== undefined ? { startBy: request.startBy } : {}),
      input: request.input,
      ...(request.webhookUrl !== undefined ? { webhookUrl: request.webhookUrl } : {}),
      idempotencyKey,
      fingerprint: requestFingerprint,
      ...(origin.replayOf !== undefined ? { replayOf: origin.replayOf } : {}),
      ...(origin.scheduleId !== undefined ? { scheduleId: origin.scheduleId } : {}),
      ...(origin.media !== undefined ? { media: origin.media } : {}),
    },
    deps.now(),
  );
  return { job, requestFingerprint };
}

/** The job's first look; one that cannot tell whether the provider is full sends the message at once. */
function firstLook(deps: Pick<IntakeDeps, 'firstLook'>, job: Job): Promise<EnqueueOptions> {
  return deps.firstLook(job).catch((): EnqueueOptions => ({ inLine: true }));
}

function replay(
  deps: Pick<IntakeDeps, 'now' | 'idempotencyInProgressMs'>,
  existing: Job,
  requestFingerprint: string,
): SubmitResult {
  return {
    job: decideOnExisting(existing, requestFingerprint, deps.now(), deps.idempotencyInProgressMs),
    replayed: true,
  };
}

/**
 * Puts a multipart file part into the job's input as an upload ref. The ref is
 * derived from the file's bytes, so a retried upload lands on the same object
 * and the request fingerprint covers the file's content.
 */
function withFileRef(request: CreateJobRequest, file: InputFile): CreateJobRequest {
  const source = fileSourceOf(request.type);
  if (!source) {
    throw new ValidationError('The request body is invalid.', [
      { pointer: '/file', detail: `${request.type} jobs take no file` },
    ]);
  }
  const field = source.refField;
  if (!mediaTypeMatches(source.mediaTypes, file.contentType)) {
    throw new ValidationError('The request body is invalid.', [
      { pointer: '/file', detail: `must be a file of media type ${source.mediaTypes}` },
    ]);
  }
  const conflicting = source.urlField ? [field, source.urlField] : [field];
  const present = conflicting.filter((name) => request.input[name] !== undefined);
  if (present.length > 0) {
    throw new ValidationError('The request body is invalid.', [
      { pointer: `/input/${present[0]}`, detail: 'must be omitted when a file part is sent' },
    ]);
  }
  const digest = createHash('sha256').update(file.bytes).digest('base64url');
  return { ...request, input: { ...request.input, [field]: `upl_${digest.slice(0, 32)}` } };
}

/** A tenant's job, or JobNotFoundError: another tenant's job is indistinguishable from none. */
export async function getJob(store: JobStore, tenantId: string, jobId: string): Promise<Job> {
  const job = await store.get(jobId);
  // A workflow's own job (a chunk of audio.publish) is part of its parent, not a job of the tenant's.
  if (!job || job.tenantId !== tenantId || job.parent !== undefined) throw new JobNotFoundError(jobId);
  return job;
}

export function listJobs(store: JobStore, tenantId: string, query: ListJobsQuery): Promise<JobPage> {
  return store.listByTenant(tenantId, {
    limit: query.limit,
    ...(query.status !== undefined ? { status: query.status } : {}),
    ...(query.cursor !== undefined ? { cursor: query.cursor } : {}),
  });
}

/**
 * Cancels a job. Idempotent: a canceled job is returned as it is. A queued job
 * is canceled at once (the dispatcher drops its message), and so is a
 * scheduled one (it had none, and leaves the due index in the same write). A running job is
 * marked canceled with a conditional write (so a late completion cannot undo
 * it), and its waiting workflow step is failed with JobCanceled: the workflow's
 * settle path then cancels at the provider, notifies and frees the slot. A job
 * in review keeps its status (only an operator settles it) and carries the
 * request. Finished jobs cannot be canceled.
 *
 * A running job that makes jobs of its own (audio.publish) settles only when
 * every child has: it keeps `running` and carries the request
 * (`cancelRequestedAt`) while its children are canceled, and its workflow's
 * `await-children` state makes it `canceled` once none of them is left at a
 * provider (`finishCancel`).
 */
export async function cancelJob(deps: CancelDeps, tenantId: string, jobId: string): Promise<Job> {
  const load = () => getJob(deps.store, tenantId, jobId);
  const job = await load();
  if (!takesSlot(job) && job.status === 'running') {
    const requested =
      job.cancelRequestedAt !== undefined ? job : await deps.store.requestCancel(job.id, deps.now());
    // Moved on meanwhile (finished, or into review): decided below as any other job.
    if (requested?.status === 'running') {
      const children = await cancelChildren(deps, requested);
      // Its children were settled already and its workflow waits for them: it is told to look again.
      if (requested.taskToken && children.every(childSettled)) {
        await deps.workflow.failTask(
          requested.taskToken,
          StepError.childSettled,
          '[child_settled] Every child job is settled.',
        );
      }
      return requested;
    }
  }
  const canceled = await cancelLoaded(deps, load);
  if (canceled.status === 'canceled' && !takesSlot(canceled)) await cancelChildren(deps, canceled);
  return canceled;
}

/**
 * What a cancel needs: the job, the workflow waiting for it, the event bus
 * (a job canceled before its workflow ran is put there by the cancel), and
 * (for a job with children) its timeline.
 */
export type CancelDeps = Pick<IntakeDeps, 'store' | 'now'> &
  EventDeps & {
    readonly workflow: Pick<Workflow, 'failTask'>;
    /** Where a job that makes child jobs (audio.publish) recorded them; without it, children are left to run. */
    readonly timeline?: Pick<Timeline, 'list'>;
    /**
     * Told of each job this cancel moved to `canceled` (children included),
     * once: never of one a cancel before it had canceled already.
     */
    readonly canceled?: (job: Job) => void;
  };

/**
 * Cancels the jobs a canceled (or canceling) job made (audio.publish's chunks
 * and embedding runs), so work it no longer wants is not charged: a child
 * still in its line is never submitted, one at a provider that can stop is
 * stopped there by its own workflow, one at a provider that cannot (Deepgram)
 * runs out and its result is discarded. A child made after this looked is
 * canceled by its maker (`awaitChild`). Answers the children as the cancel
 * left them. Requests: a timeline query and one batched read of the
 * children, then per unfinished child a read, a conditional write and, for
 * one whose workflow waits, a task failure.
 */
export async function cancelChildren(deps: CancelDeps, parent: Job): Promise<readonly Job[]> {
  if (!deps.timeline) return [];
  const children = await childrenOf({ timeline: deps.timeline, store: deps.store }, parent);
  const after: Job[] = [];
  for (const child of children) {
    if (isTerminal(child.status)) {
      after.push(child);
      continue;
    }
    const load = async () => (await deps.store.get(child.id)) ?? child;
    after.push(
      await cancelLoaded(deps, load).catch(async (error: unknown) => {
        // Finished meanwhile: nothing left to cancel.
        if (!(error instanceof JobAlreadyFinishedError)) throw error;
        return load();
      }),
    );
  }
  return after;
}

/** Cancels a child job its maker just made for a parent that is no longer running. */
export const cancelMadeChild = (deps: Omit<CancelDeps, 'timeline' | 'events'>, child: Job): Promise<Job> =>
  cancelLoaded(deps, async () => (await deps.store.get(child.id)) ?? child);

/** Cancels the job `load` reads: queued or running now, a request for one in review. */
async function cancelLoaded(
  deps: Omit<CancelDeps, 'timeline' | 'events'> & Partial<EventDeps>,
  load: () => Promise<Job>,
): Promise<Job> {
  // A concurrent status change makes the conditional write miss; re-read and decide again.
  for (let attempt = 0; attempt < 3; attempt++) {
    const job = await load();
    if (job.status === 'canceled') {
      // Repeated: the first cancel's word to the waiting step may have been lost after the status write.
      if (job.taskToken)
        await deps.workflow.failTask(job.taskToken, StepError.jobCanceled, JOB_CANCELED_CAUSE);
      // So may its event (the same event, by its id) when no workflow puts it.
      else if (deps.events) await publishJobEvent({ events: deps.events }, job);
      return job;
    }
    if (isTerminal(job.status)) throw new JobAlreadyFinishedError(job.id, job.status);
    const now = deps.now();
    if (job.status === 'needs_review') {
      const updated = job.cancelRequestedAt !== undefined ? job : await deps.store.requestCancel(job.id, now);
      if (updated) return updated;
      continue;
    }
    const updated = await deps.store.transition(
      job,
      [job.status],
      { status: 'canceled', finishedAt: now.toISOString() },
      now,
    );
    if (!updated) continue;
    deps.canceled?.(updated);
    if (updated.taskToken) {
      await deps.workflow.failTask(updated.taskToken, StepError.jobCanceled, JOB_CANCELED_CAUSE);
    }
    // A queued or scheduled job has no workflow whose settle path would put its event; a running one has.
    if (deps.events && (job.status === 'queued' || job.status === 'scheduled')) {
      await publishJobEvent({ events: deps.events }, updated);
    }
    return updated;
  }
  throw new Error(`Job ${(await load()).id} kept changing while being canceled.`);
}

export type UploadTicket = Resource<typeof uploadTicket>;

export async function createUpload(
  deps: Pick<IntakeDeps, 'inputs' | 'now'>,
  tenantId: string,
  upload: CreateUploadRequest,
  expiresInSeconds: number,
): Promise<UploadTicket> {
  const ref = `upl_${randomBytes(24).toString('base64url')}`;
  const uploadUrl = await deps.inputs.presignUpload(tenantId, ref, upload, expiresInSeconds);
  return {
    ref,
    uploadUrl,
    expiresAt: new Date(deps.now().getTime() + expiresInSeconds * 1000).toISOString(),
  };
}

/**
 * How long what a timeline read kept of a running execution's history serves the next reads: the
 * history's API is a small bucket shared by the whole account, which a client polling a job would drain.
 */
export const RUNNING_STEPS_FRESH_MS = 10_000;

/**
 * The job's timeline, oldest first: events derived from the job itself
 * (accepted, enqueued) followed by those the workflow recorded.
 */
export async function jobTimeline(
  timeline: Timeline,
  workflow: Pick<Workflow, 'stepEvents'>,
  job: Job,
  now: Date,
): Promise<TimelineEvent[]> {
  const derived: TimelineEvent[] = [{ at: job.createdAt, type: 'job.accepted' }];
  if (job.runAt !== undefined && job.runAt > job.createdAt) {
    derived.push({ at: job.createdAt, type: 'job.scheduled', detail: `to run at ${job.runAt}` });
  }
  if (job.enqueuedAt) derived.push({ at: job.enqueuedAt, type: 'job.enqueued' });
  // The steps of every run the job had: the first, then one per restart (`runs`).
  const runs = Array.from({ length: (job.runs ?? 0) + 1 }, (_, run) =>
    executionNameOf({ ...job, runs: run === 0 ? undefined : run }),
  );
  const [recorded, kept] = await Promise.all([
    timeline.list(job.id, job.createdAt),
    timeline.keptSteps(job.id),
  ]);
  const keptOf = new Map(kept.map((steps) => [steps.executionName, steps]));
  const steps = await Promise.all(
    runs.map((executionName) =>
      stepsOfRun({ timeline, workflow }, job, executionName, keptOf.get(executionName), now),
    ),
  );
  return [...derived, ...recorded, ...steps.flat()].sort((a, b) => a.at.localeCompare(b.at));
}

/** A kept history larger than this is not kept: the item holding it must stay under DynamoDB's 400 KB. */
const KEPT_STEPS_MAX_BYTES = 300_000;

/**
 * One run's step events: what an earlier read kept while it still holds, else its execution's history,
 * kept for the next reads. An ended execution's history is final, unless a resume redrives it, which
 * only the job's current execution can be, and only once the job was reopened (its resumes counted):
 * so a run's history is kept as final once it ended and it is an earlier run or its job is settled.
 */
async function stepsOfRun(
  deps: { readonly timeline: Timeline; readonly workflow: Pick<Workflow, 'stepEvents'> },
  job: Job,
  executionName: string,
  kept: KeptSteps | undefined,
  now: Date,
): Promise<readonly TimelineEvent[]> {
  const resumes = job.resumes ?? 0;
  if (
    kept &&
    kept.resumes === resumes &&
    (kept.ended ||
      // A running one's, for a few seconds, and only while the job's status is the one it was read under.
      (now.getTime() - Date.parse(kept.readAt) < RUNNING_STEPS_FRESH_MS && kept.readAt >= job.statusAt))
  ) {
    return kept.events;
  }
  const history = await deps.workflow.stepEvents(executionName);
  const final = history.ended && (executionName !== currentExecutionOf(job) || isTerminal(job.status));
  // An execution not started yet has nothing to keep: its start must show at the next read.
  if (
    history.events.length > 0 &&
    new TextEncoder().encode(JSON.stringify(history.events)).length <= KEPT_STEPS_MAX_BYTES
  ) {
    try {
      await deps.timeline.keepSteps(job.id, {
        executionName,
        readAt: now.toISOString(),
        resumes,
        ended: final,
        events: history.events,
      });
    } catch {
      // What could not be kept is read from the history again next time; this read has its answer.
    }
  }
  return history.events;
}
