/**
 * The resources of the Longhaul HTTP API as the SDK sees them. The SDK does
 * not import the server's code; test/unit/client-contract.test.ts checks
 * these against the OpenAPI document and the server's own types.
 */

export const JOB_TYPES = ['image.generate', 'audio.transcribe'] as const;
export type JobType = (typeof JOB_TYPES)[number];

export const JOB_STATUSES = ['queued', 'running', 'succeeded', 'failed', 'canceled', 'needs_review'] as const;
export type JobStatus = (typeof JOB_STATUSES)[number];

/** Statuses a job never leaves. */
export const TERMINAL_STATUSES: readonly JobStatus[] = ['succeeded', 'failed', 'canceled'];

/**
 * Statuses after which waiting is pointless without a person: the terminal
 * ones and `needs_review`, which only an operator (or the reconciler) leaves.
 */
export const SETTLED_STATUSES: readonly JobStatus[] = [...TERMINAL_STATUSES, 'needs_review'];

export const PROBLEM_CODES = [
  'idempotency-key-missing',
  'validation-failed',
  'unauthorized',
  'forbidden',
  'not-found',
  'idempotency-key-in-use',
  'job-already-finished',
  'job-not-in-review',
  'payload-too-large',
  'unsupported-media-type',
  'idempotency-key-reused',
  'rate-limited',
  'internal-error',
  'service-unavailable',
] as const;
export type ProblemCode = (typeof PROBLEM_CODES)[number];

/** An RFC 9457 problem as the API sends it (`application/problem+json`). */
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

export type JobError = { readonly code: string; readonly message: string };

export type ImageResult = { readonly outputUrl: string; readonly contentType: string };

export type TranscriptResult = {
  readonly transcriptUrl: string;
  readonly language: string;
  /** The first 500 characters; the whole transcript is behind `transcriptUrl`. */
  readonly text: string;
  readonly segments: number;
};

export type Job = {
  readonly id: string;
  readonly type: JobType;
  readonly status: JobStatus;
  readonly progress: number;
  readonly input: Record<string, unknown>;
  /** An ImageResult or TranscriptResult once succeeded; output URLs are short-lived. */
  readonly result: Record<string, unknown> | null;
  readonly error: JobError | null;
  readonly attempts: number;
  readonly idempotencyKey: string;
  readonly webhookUrl?: string;
  readonly createdAt: string;
  readonly updatedAt: string;
  readonly startedAt?: string;
  readonly finishedAt?: string;
};

/** A job as the admin routes list it, with its tenant. */
export type AdminJob = Job & { readonly tenantId: string };

export type Page<T> = { readonly items: readonly T[]; readonly nextCursor: string | null };

export type TimelineEvent = {
  readonly at: string;
  readonly type: string;
  readonly step?: string;
  readonly attempt?: number;
  readonly detail?: string;
};

export type UploadTicket = { readonly ref: string; readonly uploadUrl: string; readonly expiresAt: string };

export type ImageGenerateInput = {
  readonly prompt: string;
  readonly width?: number;
  readonly height?: number;
  readonly sourceImageRef?: string;
};

/** Exactly one of `audioUrl` (https) and `audioRef`, or a `file` on the request instead. */
export type AudioTranscribeInput = {
  readonly audioUrl?: string;
  readonly audioRef?: string;
  readonly language?: string;
};

/** A file input: sent as a multipart part up to 4 MiB, through a presigned upload above. */
export type FileInput = {
  readonly data: Blob | Uint8Array;
  /** `image/*` for image.generate, `audio/*` for audio.transcribe. */
  readonly contentType: string;
  readonly filename?: string;
};

type Submission<T extends JobType, I> = {
  readonly type: T;
  readonly input: I;
  readonly webhookUrl?: string;
  /** Fills `sourceImageRef` (image.generate) or `audioRef` (audio.transcribe). */
  readonly file?: FileInput;
};

export type CreateJobRequest =
  | Submission<'image.generate', ImageGenerateInput>
  | Submission<'audio.transcribe', AudioTranscribeInput>;

/** The input field a file fills, per job type. */
export const FILE_INPUT_FIELD = {
  'image.generate': 'sourceImageRef',
  'audio.transcribe': 'audioRef',
} as const satisfies Record<JobType, string>;

export type Resolution = {
  readonly outcome: 'succeeded' | 'failed' | 'requeue';
  /** Why; recorded in the job's timeline. */
  readonly note: string;
};

export type RedriveStarted = { readonly taskHandle: string };

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
