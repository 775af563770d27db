import type { Job, JobError, JobStatus } from './job';

/** Ports of the job domain; each has one AWS adapter under `lambdas/adapters/`. */

export type CreateOutcome = { readonly created: true } | { readonly created: false; readonly existing: Job };

export interface JobPage {
  readonly items: readonly Job[];
  /** Opaque; pass back as `cursor` for the next page. Null on the last page. */
  readonly nextCursor: string | null;
}

export interface StatusChange {
  readonly status: JobStatus;
  readonly error?: JobError | null;
  readonly result?: Record<string, unknown> | null;
  readonly startedAt?: string;
  readonly finishedAt?: string;
}

export interface JobStore {
  /** Creates the job with one conditional write unless a job with its id exists, which it then returns. */
  create(job: Job): Promise<CreateOutcome>;
  get(jobId: string): Promise<Job | undefined>;
  /** Records that the job's queue message was sent: intake for this key is complete. */
  markEnqueued(jobId: string, at: Date): Promise<void>;
  /** Newest first. Throws a ValidationError for a cursor it did not issue. */
  listByTenant(
    tenantId: string,
    query: { readonly status?: JobStatus; readonly limit: number; readonly cursor?: string },
  ): Promise<JobPage>;
  /**
   * Moves the job to a new status only if it is currently in one of `from`
   * (a conditional write, so a late or duplicate event never moves it
   * backwards). Returns the updated job, or undefined if it was not in `from`.
   */
  transition(
    job: Pick<Job, 'id' | 'tenantId'>,
    from: readonly JobStatus[],
    change: StatusChange,
    at: Date,
  ): Promise<Job | undefined>;
  /** Records a cancel request on a job that is not queued, for the workflow to honour. */
  requestCancel(jobId: string, at: Date): Promise<Job | undefined>;
}

export interface JobQueue {
  /** Hands the job to the dispatcher. At-least-once: the consumer tolerates duplicates. */
  enqueue(jobId: string): Promise<void>;
}

export interface InputStore {
  /** Stores an input file of the tenant under `ref`. Idempotent for the same bytes. */
  putInput(tenantId: string, ref: string, bytes: Uint8Array, contentType: string): Promise<void>;
  /** A presigned PUT for a larger input; the signature binds the media type and length. */
  presignUpload(
    tenantId: string,
    ref: string,
    upload: { readonly contentType: string; readonly contentLength: number },
    expiresInSeconds: number,
  ): Promise<string>;
}
