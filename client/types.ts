/**
 * The resources of the Longhaul HTTP API as the SDK sees them. Most are
 * generated from the OpenAPI document (./api-types.ts, ./job-types.ts). The
 * SDK ships alone and imports none of the server's code, so the ones written
 * here (those a job's type narrows, the problem with its codes, the SDK's own
 * shapes) restate the API's schemas (lambdas/domain/resources.ts):
 * test/unit/api-schemas.test.ts holds each of them to its schema when it
 * compiles, and test/unit/client-contract.test.ts checks them against the
 * OpenAPI document.
 */

import type { JobError, JobWaiting, ReplayJobsResult, ResumeJobsResult } from './api-types';
import type { JobPriority, JobStatus, JobType, JobTypeSchemas } from './job-types';

export * from './api-types';
export * from './job-types';

/** Statuses a job never leaves. */
export const TERMINAL_STATUSES: readonly JobStatus[] = ['succeeded', 'failed', 'canceled'];

/**
 * Statuses after which waiting is pointless without a person: the terminal
 * ones and `needs_review`, which only an operator (or the reconciler) leaves.
 */
export const SETTLED_STATUSES: readonly JobStatus[] = [...TERMINAL_STATUSES, 'needs_review'];

/** The API's problem codes, restated from config/problems.ts (test/unit/client-contract.test.ts holds them equal). */
export const PROBLEM_CODES = [
  'idempotency-key-missing',
  'validation-failed',
  'unauthorized',
  'forbidden',
  'not-found',
  'idempotency-key-in-use',
  'job-already-finished',
  'job-not-in-review',
  'job-not-resumable',
  'payload-too-large',
  'unsupported-media-type',
  'idempotency-key-reused',
  'rate-limited',
  'tenant-queue-full',
  'internal-error',
  'service-unavailable',
] as const;
export type ProblemCode = (typeof PROBLEM_CODES)[number];

/**
 * An RFC 9457 problem as the API sends it (`application/problem+json`),
 * restated from the server's (config/problems.ts), which the SDK cannot
 * import: test/unit/api-schemas.test.ts holds both to the schema.
 */
export type Problem = {
  readonly type: string;
  readonly title: string;
  readonly status: number;
  readonly detail: string;
  readonly code: ProblemCode;
  readonly instance?: string;
  readonly errors?: readonly {
    readonly pointer?: string;
    readonly parameter?: string;
    readonly detail: string;
  }[];
};

/** The fields every job has, whatever its type. */
type JobBase = {
  readonly id: string;
  /** The provider that runs the job. */
  readonly provider: 'longhaul-http' | 'replicate' | 'deepgram' | 'bedrock';
  /** Which of the tenant's waiting jobs goes first: interactive, then standard, then batch. */
  readonly priority: JobPriority;
  readonly status: JobStatus;
  readonly progress: number;
  readonly error: JobError | null;
  readonly attempts: number;
  readonly idempotencyKey: string;
  readonly webhookUrl?: string;
  /** When the job was to run: the runAt it was submitted with, or its creation time. */
  readonly runAt: string;
  /** The latest it may reach its provider: still waiting then, it ends failed with `start_deadline_passed`, uncharged. */
  readonly startBy?: string;
  /** Why it waits, while it is queued and the reason is known. */
  readonly waiting?: JobWaiting;
  /** The recurring schedule whose firing created the job. */
  readonly scheduleId?: string;
  readonly createdAt: string;
  readonly updatedAt: string;
  readonly startedAt?: string;
  readonly finishedAt?: string;
  /** The job an operator replayed as this one. */
  readonly replayOf?: string;
  /** The job an operator replayed this one as: follow it for the outcome; a replaced job is never resumed. */
  readonly replacedBy?: string;
  /** A cancel asked of a job not yet settled: a publish whose child jobs are still running out, or a job in review. */
  readonly cancelRequestedAt?: string;
  /** It succeeded, but its outputs were removed since (its media item deleted, its version replaced): `result` is null. */
  readonly outputsRemoved?: true;
};

/**
 * A job of type `T`: `input` and `result` typed by its job type (from the
 * OpenAPI document, through client/job-types.ts). `result` is set once
 * succeeded; its output URLs are short-lived.
 */
export type JobOf<T extends JobType> = JobBase & {
  readonly type: T;
  readonly input: JobTypeSchemas[T]['input'];
  readonly result: JobTypeSchemas[T]['result'] | null;
};

/**
 * A job of one of the types `T` (any type by default): a union discriminated
 * by `type`, so `if (job.type === 'image.generate')` types its input and
 * result, and `Job<'audio.transcribe'>`'s result is a transcript.
 */
export type Job<T extends JobType = JobType> = { [K in T]: JobOf<K> }[T];

/** A job as the admin routes list it, with its tenant. */
export type AdminJob = Job & { readonly tenantId: string };

/** What `putTenant` sets: each setting named is set, the others keep their values; `maxInFlight: null` removes the cap. */
export type TenantSettings = {
  readonly weight?: number;
  readonly maxInFlight?: number | null;
  readonly maxQueued?: number;
};

export type Page<T> = { readonly items: readonly T[]; readonly nextCursor: string | null };

/** A stored upload: put `ref` into the job's sourceImageRef or audioRef. */
export type UploadedFile = { readonly ref: string; readonly expiresAt: string };

/**
 * A multipart upload in progress, as `onUploadProgress` reports it: save it
 * (JSON) and pass it back as `resume` to send only the parts still missing.
 * Part URLs past `expiresAt` are renewed; the upload itself lasts until the
 * input bucket's lifecycle rule aborts it.
 */
export type MultipartUploadState = {
  readonly ref: string;
  readonly uploadId: string;
  readonly partSizeBytes: number;
  readonly expiresAt: string;
  readonly parts: readonly {
    readonly partNumber: number;
    readonly uploadUrl: string;
    /** Set once the part is stored. */
    readonly etag: string | null;
  }[];
};

/** A file input: sent as a multipart part up to 4 MiB, through a presigned upload above. */
export type FileInput = {
  readonly data: Blob | Uint8Array;
  /** `image/*` for image.generate, `audio/*` for audio.transcribe. */
  readonly contentType: string;
  readonly filename?: string;
};

/** A request for one job of type `T`: what `createJob` takes. */
export type Submission<T extends JobType> = {
  readonly type: T;
  readonly input: JobTypeSchemas[T]['input'];
  readonly webhookUrl?: string;
  /** @default 'standard' */
  readonly priority?: JobPriority;
  /**
   * When to run the job: a Date, or RFC 3339 text with a time zone offset, at
   * most 365 days ahead (the deployment's SCHEDULE_MAX_AHEAD_DAYS). Until then
   * the job is `scheduled`; absent or past, it runs now.
   */
  readonly runAt?: Date | string;
  /**
   * The latest the job may reach its provider: a Date, or RFC 3339 text with
   * a time zone offset, in the future and after `runAt`. Still waiting then
   * (its provider down, say), it ends failed with `start_deadline_passed` and
   * nothing charged. Absent: it waits however long its provider is down.
   */
  readonly startBy?: Date | string;
  /** Fills `sourceImageRef` (image.generate) or `audioRef` (audio.transcribe). */
  readonly file?: FileInput;
};

/** A request for a job of one of the types `T` (any type by default). */
export type CreateJobRequest<T extends JobType = JobType> = { [K in T]: Submission<K> }[T];

/** The most items one `submitBatch` takes. */
export const MAX_BATCH_ITEMS = 1000;

/**
 * One item of a batch: a job request under the idempotency key of its user
 * action (the same key space as `createJob`'s). No file part: upload files
 * with `uploadFile` and put the ref into the input.
 */
export type BatchItem = {
  [T in JobType]: Omit<Submission<T>, 'file'> & { readonly idempotencyKey: string };
}[JobType];

/** One item's answer: what `createJob` with its key and request would have got, as a status and a job or a problem. */
export type BatchItemResult = {
  /** The item's key (null when it gave none that is a string). */
  readonly idempotencyKey: string | null;
  /** 202 accepted (new or replayed), or the problem's status: 400, 409, 422, 429, 5xx. */
  readonly status: number;
  readonly job?: Job;
  readonly problem?: Problem;
  /** The key's job existed already. */
  readonly replayed: boolean;
};

/**
 * A job template as a schedule fires it: what `createJob` takes, without a
 * file (upload it first and put its ref in the input), a runAt or a startBy
 * (the schedule's `startWithinSeconds` gives each firing's job its own).
 */
export type ScheduledJob = { [T in JobType]: Omit<Submission<T>, 'file' | 'startBy'> }[JobType];

/** A recurring schedule: each firing creates one job from `job` under the key `schedule:<id>:<fire time>`. */
export type Schedule = {
  readonly id: string;
  /** EventBridge Scheduler `rate(…)` or `cron(…)`. */
  readonly expression: string;
  /** IANA time zone the expression is evaluated in. */
  readonly timezone: string;
  readonly job: ScheduledJob;
  /** Each firing's job must reach its provider within this many seconds of the firing, or it ends failed, uncharged. */
  readonly startWithinSeconds?: number;
  readonly enabled: boolean;
  /** The next firing; null while disabled or when the expression never fires again. */
  readonly nextRunAt: string | null;
  readonly createdAt: string;
};

export type CreateScheduleRequest = {
  readonly expression: string;
  /** @default 'UTC' */
  readonly timezone?: string;
  readonly job: ScheduledJob;
  /** Each firing's job must reach its provider within this many seconds of the firing, or it ends failed, uncharged. */
  readonly startWithinSeconds?: number;
  /** @default true */
  readonly enabled?: boolean;
};

export type Resolution = {
  readonly outcome: 'succeeded' | 'failed' | 'requeue';
  /** Why; recorded in the job's timeline. */
  readonly note: string;
};

export type RedriveStarted = { readonly taskHandle: string };

/** Which of the tenant's jobs `cancelJobs` cancels. Times are RFC 3339; both bounds are exclusive. */
export type JobFilter = {
  /** Default: every unfinished status (finished jobs are never matched). */
  readonly status?: readonly JobStatus[];
  readonly type?: JobType;
  readonly createdAfter?: string;
  readonly createdBefore?: string;
};

/** Which jobs an operator replays: `status` is required; without `tenant`, every tenant's. */
export type ReplayFilter = JobFilter & {
  readonly tenant?: string;
  readonly status: readonly JobStatus[];
};

/** What one replay request matched and did (`POST /v1/admin/jobs/replay`). */
export type ReplayResult = ReplayJobsResult;

/** Which failed jobs an operator resumes: by what failed them, where and when; without `tenant`, every tenant's. */
export type ResumeFilter = Omit<JobFilter, 'status'> & {
  readonly tenant?: string;
  /** The failed jobs' `error.code`, e.g. `provider_unavailable`. */
  readonly errorCode?: string;
  readonly provider?: Job['provider'];
};

/** What one bulk resume matched and did (`POST /v1/admin/jobs/resume`). */
export type ResumeResult = ResumeJobsResult;

/** Why a matching job was not replayed. */
export type ReplayRefusal = ReplayResult['refused'][number]['reason'];

/** How a bulk request runs: `dryRun` only counts; `cursor` goes on from an earlier answer's `nextCursor`. */
export type BulkOptions = { readonly dryRun?: boolean; readonly cursor?: string };

/** Messages of the live-progress WebSocket. */
export type LiveMessage =
  | {
      readonly type: 'progress';
      readonly jobId: string;
      readonly status: JobStatus;
      readonly progress: number;
      readonly at: string;
    }
  | {
      readonly type: 'status';
      readonly jobId: string;
      readonly status: JobStatus;
      readonly progress: number;
      readonly at: string;
      readonly error: JobError | null;
    };
