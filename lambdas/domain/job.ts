import { JOB_TYPES, type JobType, jobTypeModule, type StoredJobType } from '../../config/job-types';
import { LEGACY_PROVIDER, type ProviderName } from '../../config/providers';
import {
  DEFAULT_PRIORITY,
  isTerminal,
  JOB_PRIORITIES,
  JOB_STATUSES,
  type JobPriority,
  type JobStatus,
  TERMINAL_STATUSES,
} from './job-statuses';
import { jobOutputPrefix } from './output-keys';
import type { job, jobError, Resource } from './resources';

/**
 * The job lifecycle: the stored record and its public representation, over
 * the statuses and priorities of lambdas/domain/job-statuses.ts.
 */

export {
  DEFAULT_PRIORITY,
  isTerminal,
  JOB_PRIORITIES,
  JOB_STATUSES,
  JOB_TYPES,
  type JobPriority,
  type JobStatus,
  type JobType,
  type StoredJobType,
  TERMINAL_STATUSES,
};

/**
 * A job whose client asked to cancel it while it runs jobs of its own
 * (`audio.publish`): it stays `running`, carrying the request, until every
 * child job it made is settled, and only then becomes `canceled`. Its
 * workflow makes nothing new meanwhile.
 */
export const isCanceling = (job: Pick<Job, 'status' | 'cancelRequestedAt'>): boolean =>
  job.status === 'running' && job.cancelRequestedAt !== undefined;

/** Whether the job's workflow goes on with its work: it runs, and nobody asked to cancel it. */
export const goesOn = (job: Pick<Job, 'status' | 'cancelRequestedAt'>): boolean =>
  job.status === 'running' && job.cancelRequestedAt === undefined;

/** Why a failed or reviewed job is where it is. */
export type JobError = Resource<typeof jobError>;

/** A job as the store keeps it: the public fields plus what intake and operations need. */
export interface Job {
  readonly id: string;
  readonly tenantId: string;
  readonly type: StoredJobType;
  /** The provider that runs the job, chosen at intake (absent on jobs stored before jobs named theirs). */
  readonly provider?: ProviderName;
  /** Absent on jobs stored before jobs had one: those are `standard` (`priorityOf`). */
  readonly priority?: JobPriority;
  /** When the job was asked to run (RFC 3339, UTC); absent: at once. A job whose runAt is ahead waits `scheduled`. */
  readonly runAt?: string;
  /**
   * The latest instant the job may reach its provider (RFC 3339, UTC): one
   * still waiting then ends `failed` (`start_deadline_passed`), uncharged.
   * Absent: it waits however long its provider is paused or down.
   */
  readonly startBy?: string;
  readonly status: JobStatus;
  readonly progress: number;
  readonly input: Record<string, unknown>;
  readonly result: Record<string, unknown> | null;
  readonly error: JobError | null;
  readonly attempts: number;
  readonly idempotencyKey: string;
  /** SHA-256 of the canonical request, to tell a replay from a reused key. */
  readonly fingerprint: string;
  readonly webhookUrl?: string;
  readonly createdAt: string;
  readonly updatedAt: string;
  /** When the job entered its current status. */
  readonly statusAt: string;
  /** Set once the job's first queue message was sent; absent while intake is still in progress or enqueueing failed. */
  readonly enqueuedAt?: string;
  /** When a cancel was asked of a job that could not be canceled at once (in review, or canceling its children). */
  readonly cancelRequestedAt?: string;
  readonly startedAt?: string;
  readonly finishedAt?: string;
  /** Name of the workflow execution running the job. */
  readonly executionName?: string;
  /** Recorded before each provider submission; cleared once the outcome is known. */
  readonly submitIntent?: SubmitIntent;
  /** The provider's id for the job, once a submission was accepted. */
  readonly providerJobId?: string;
  /**
   * Calls of the submission its provider answered before it refused one
   * without doing any work (a throttle halfway through a run of embeddings):
   * what they answered is kept at `answeredPartKeyOf(job)`, and the next
   * attempt makes only the calls left. Dropped once a submission is accepted.
   */
  readonly answeredCalls?: number;
  /**
   * This run's grant was the probe after its provider's pause (`RateToken.probe`):
   * its accepted submission ends the probe at once (`SlotPool.endProbe`), so the
   * other jobs go as soon as the provider showed it takes submissions again.
   */
  readonly probes?: boolean;
  /** Task token of the workflow's await step, for resuming it when the provider finishes. */
  readonly taskToken?: string;
  /** What the provider reported at the end, recorded by whichever of webhook and await step comes first. */
  readonly providerOutcome?: ProviderOutcome;
  /** Workflow executions started after the first (reconciler restarts, operator requeues). */
  readonly runs?: number;
  /** Operator requeues: each sends the job to the provider again, under a new idempotency key. */
  readonly resubmissions?: number;
  /** How often its client resumed it after it failed (`POST /v1/jobs/{id}/resume`). */
  readonly resumes?: number;
  /** When its client last resumed it: its run since then is bounded by the job timeout anew. */
  readonly resumedAt?: string;
  /** The job an operator replayed as this one (`POST /v1/admin/jobs/replay`). */
  readonly replayOf?: string;
  /** The job an operator replayed this one as: it is never resumed, so one user action runs once. */
  readonly replacedBy?: string;
  /**
   * The idempotency key that replay is made under: named with it, so a
   * replay that stopped after naming it and before making it is made by the
   * next replay of this job, never replaced by another.
   */
  readonly replacedByKey?: string;
  /** The recurring schedule whose firing created the job. */
  readonly scheduleId?: string;
  /** Set on a job another job's workflow made (a chunk of `audio.publish`): whose part it is. */
  readonly parent?: JobParent;
  /** Set on an `audio.publish` job that publishes a version of a media item (`POST /v1/media/{id}/versions`). */
  readonly media?: { readonly id: string; readonly version: number };
}

/** The job a child job (a chunk, a run of embeddings) belongs to, and the parent's state waiting for it. */
export interface JobParent {
  readonly jobId: string;
  /** The child's place among its stage's children (0 first). */
  readonly index: number;
  /**
   * Which of the parent's fan-outs the child is part of: `embed`, a run of
   * passages to embed; absent, a chunk of the recording to transcribe (the
   * only kind there was before).
   */
  readonly stage?: 'embed';
  /**
   * The task token of the parent's `transcribe` state waiting for this job:
   * resumed once this job is settled. A later attempt of that state records its own.
   */
  readonly taskToken?: string;
}

/** The job's priority: the one it was submitted with, or the default for jobs stored before jobs had one. */
export const priorityOf = (job: Pick<Job, 'priority'>): JobPriority => job.priority ?? DEFAULT_PRIORITY;

/**
 * When the job became due: its `runAt`, unless that was already past when it
 * was submitted. A job waits in its tenant's line from then, so a runAt in the
 * past never buys a place ahead of jobs submitted before it.
 */
export const dueAtOf = (job: Pick<Job, 'createdAt' | 'runAt'>): string =>
  job.runAt !== undefined && job.runAt > job.createdAt ? job.runAt : job.createdAt;

/**
 * Whether the job holds a provider slot of its own while it runs. A job
 * whose type fans out (`audio.publish`) does not: its chunk jobs each hold one.
 */
export const takesSlot = (job: Pick<Job, 'type'>): boolean => jobTypeModule(job.type).flow !== 'publish';

/** The provider that runs the job: the one intake chose, or the only one there was before. */
export const providerOf = (job: Pick<Job, 'provider'>): ProviderName => job.provider ?? LEGACY_PROVIDER;

/**
 * The workflow execution of a job's current run, so starting it twice starts
 * it once (its provider slot is named by its submission, `slotHolderOf`). The job's creation
 * time is in it: a job created again under a key whose earlier job expired has
 * the same id, and Step Functions keeps a closed execution's name for 90 days.
 */
export const executionNameOf = (job: Pick<Job, 'id' | 'runs' | 'createdAt'>): string =>
  job.runs ? `${job.id}-${generationOf(job)}-run${job.runs}` : `${job.id}-${generationOf(job)}`;

/** The execution running the job now: named when it started, or the name its next run gets. */
export const currentExecutionOf = (job: Job): string => job.executionName ?? executionNameOf(job);

/**
 * Who holds the job's provider slot: its current submission. A run the
 * reconciler restarts goes on with the same submission and the same slot; an
 * operator's requeue is a new submission and takes a slot of its own.
 */
export const slotHolderOf = (job: Pick<Job, 'id' | 'createdAt' | 'resubmissions'>): string =>
  slotHolderFor(job.id, submissionTagOf(job));

/** The slot holder of the submission a webhook URL's tag names. */
export const slotHolderFor = (jobId: string, submissionTag: string): string => `${jobId}-${submissionTag}`;

/** The job a slot holder, an execution name or a provider key belongs to. */
export const jobIdOf = (name: string): string => name.split(/[-.:]/)[0] ?? name;

/**
 * The key the provider deduplicates on: one per submission the job is meant
 * to make. The job's creation time is in it: a job created again under a key
 * whose earlier job expired has the same id, and a provider that keeps keys
 * longer than the job retention would answer it with the earlier job's work.
 */
export const providerKeyOf = (job: Pick<Job, 'id' | 'createdAt' | 'resubmissions'>): string => {
  const key = `${job.id}.${generationOf(job)}`;
  return job.resubmissions ? `${key}:${job.resubmissions}` : key;
};

/**
 * The key of the submission the job is sending or has sent: the one its
 * intent recorded. An intent recorded before keys carried the creation time
 * has none; its submission went out under the key without it, and a resend
 * must use the same.
 */
export const submissionKeyOf = (job: Job): string => {
  if (!job.submitIntent) return providerKeyOf(job);
  if (job.submitIntent.providerKey) return job.submitIntent.providerKey;
  return job.resubmissions ? `${job.id}:${job.resubmissions}` : job.id;
};

/** Which of the job's provider submissions is current: 0 for the first, one more for each operator requeue. */
export const submissionOf = (job: Pick<Job, 'resubmissions'>): number => job.resubmissions ?? 0;

/** When the job was created, short: it tells a job from an earlier one with the same id. */
const generationOf = (job: Pick<Job, 'createdAt'>): string => Date.parse(job.createdAt).toString(36);

/** The job's current submission, told apart from an earlier job's with the same id: `<generation>.<submission>`. */
export const submissionTagOf = (job: Pick<Job, 'createdAt' | 'resubmissions'>): string =>
  `${generationOf(job)}.${submissionOf(job)}`;

/** Where a provider's reported output is kept until finalize makes the job's result of it (PROVIDER_OUTPUT_OBJECTS). */
export const providerOutputKeyOf = (
  job: Pick<Job, 'id' | 'tenantId' | 'createdAt' | 'resubmissions' | 'parent'>,
): string => `${jobOutputPrefix(job)}provider-output-${submissionTagOf(job)}.json`;

/** What a provider webhook URL's `submission` must look like. */
export const SUBMISSION_TAG_PATTERN = /^[0-9a-z]{1,12}\.(0|[1-9][0-9]{0,5})$/;

/**
 * The job record and submission a webhook URL's tag names (`submissionTagOf`
 * read back), or undefined for a tag that is not one.
 */
export const submissionOfTag = (tag: string): { createdAt: string; number: number } | undefined => {
  if (!SUBMISSION_TAG_PATTERN.test(tag)) return undefined;
  const [generation = '', number = ''] = tag.split('.');
  const created = new Date(Number.parseInt(generation, 36));
  if (Number.isNaN(created.getTime())) return undefined;
  return { createdAt: created.toISOString(), number: Number(number) };
};

/**
 * Where the provider posts the events of the job's current submission. The
 * submission in the URL ties each event to the submission it belongs to: a late event
 * of a submission an operator has replaced cannot touch the new one.
 */
export const providerWebhookUrlOf = (
  base: string,
  job: Pick<Job, 'id' | 'createdAt' | 'resubmissions'>,
): string => `${base}?jobId=${encodeURIComponent(job.id)}&submission=${submissionTagOf(job)}`;

/**
 * Whether the provider may be running the job: a submission was sent whose
 * outcome is unknown, or it was accepted and the provider has not said it is
 * done (succeeded, failed, or canceled at our request). Such a job keeps its
 * provider slot.
 */
export function providerMayBeRunning(job: Job): boolean {
  if (job.submitIntent !== undefined && job.providerJobId === undefined) return true;
  return job.providerJobId !== undefined && job.providerOutcome === undefined;
}

export interface SubmitIntent {
  readonly attemptId: string;
  readonly at: string;
  /** The key the submission is sent under (absent on intents recorded before keys carried the creation time). */
  readonly providerKey?: string;
}

export interface ProviderOutcome {
  readonly status: 'succeeded' | 'failed' | 'canceled';
  readonly error?: JobError;
  readonly at: string;
  /** The provider job it came from; recorded for a job in review, whose provider id may be unknown. */
  readonly providerJobId?: string;
  /**
   * Where the output the provider reported with it is kept (output bucket):
   * finalize reads it there, for providers that hand their output over only
   * once, in their completion webhook (Deepgram).
   */
  readonly outputKey?: string;
}

/** The job resource of the public API (CONTRACT section 1). */
export type JobResource = Resource<typeof job>;

export function toResource(job: Job): JobResource {
  return {
    id: job.id,
    // A workflow's own jobs (`internal` types) are never shown to clients.
    type: job.type as JobType,
    provider: providerOf(job),
    priority: priorityOf(job),
    status: job.status,
    progress: job.progress,
    input: job.input,
    result: job.result,
    error: job.error,
    attempts: attemptsOf(job),
    idempotencyKey: job.idempotencyKey,
    ...(job.webhookUrl !== undefined ? { webhookUrl: job.webhookUrl } : {}),
    runAt: job.runAt ?? job.createdAt,
    ...(job.startBy !== undefined ? { startBy: job.startBy } : {}),
    ...(job.scheduleId !== undefined ? { scheduleId: job.scheduleId } : {}),
    createdAt: job.createdAt,
    updatedAt: job.updatedAt,
    ...(job.startedAt !== undefined ? { startedAt: job.startedAt } : {}),
    ...(job.finishedAt !== undefined ? { finishedAt: job.finishedAt } : {}),
    ...(job.replayOf !== undefined ? { replayOf: job.replayOf } : {}),
    ...(job.replacedBy !== undefined ? { replacedBy: job.replacedBy } : {}),
    ...(job.cancelRequestedAt !== undefined && !isTerminal(job.status)
      ? { cancelRequestedAt: job.cancelRequestedAt }
      : {}),
  };
}

/**
 * What `attempts` says of a job: its submissions to its provider, or, for a
 * job that submits nothing itself (a publish, whose own jobs submit and show
 * theirs), the runs of its workflow: its start, each restart and each resume.
 */
function attemptsOf(job: Job): number {
  if (takesSlot(job)) return job.attempts;
  return job.startedAt === undefined ? 0 : 1 + (job.runs ?? 0) + (job.resumes ?? 0);
}

/**
 * What a job is created with: its own fields, which mean here what they mean
 * on the job (an absent priority is the default; a runAt ahead of `now`
 * stores the job `scheduled`). `newJob` sets the rest.
 */
export type NewJob = Pick<
  Job,
  | 'id'
  | 'tenantId'
  | 'type'
  | 'provider'
  | 'priority'
  | 'runAt'
  | 'startBy'
  | 'input'
  | 'webhookUrl'
  | 'idempotencyKey'
  | 'fingerprint'
  | 'replayOf'
  | 'scheduleId'
  | 'parent'
  | 'media'
>;

export function newJob(spec: NewJob, now: Date): Job {
  const at = now.toISOString();
  return {
    ...spec,
    priority: spec.priority ?? DEFAULT_PRIORITY,
    status: spec.runAt !== undefined && spec.runAt > at ? 'scheduled' : 'queued',
    progress: 0,
    result: null,
    error: null,
    attempts: 0,
    createdAt: at,
    updatedAt: at,
    statusAt: at,
  };
}

/** How long the job waited in the queue: from its creation to its start. */
export const queueWaitMsOf = (job: Pick<Job, 'createdAt' | 'startedAt' | 'updatedAt'>): number =>
  Date.parse(job.startedAt ?? job.updatedAt) - Date.parse(job.createdAt);
