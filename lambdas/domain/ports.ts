import type { LifecycleEvent } from '../../config/events';
import type { ProviderName } from '../../config/providers';
import type { Job, JobError, JobStatus, JobType, ProviderOutcome, SubmitIntent } from './job';
import type { liveMessage, Resource, timelineEvent } from './resources';
import type { TenantChanges, TenantRecord, TenantUsage } from './tenant-settings';

/** Ports of the job domain; each has one AWS adapter under `lambdas/adapters/`. */

export type CreateOutcome = { readonly created: true } | { readonly created: false; readonly existing: Job };

export interface JobPage {
  readonly items: readonly Job[];
  /** Opaque; pass back as `cursor` for the next page. Null on the last page. */
  readonly nextCursor: string | null;
}

/** Which of a tenant's jobs a listing reads, a page at a time. */
export interface TenantJobQuery {
  readonly status?: JobStatus;
  readonly type?: JobType;
  /** Only jobs created strictly after this instant (ISO 8601 in UTC, as `createdAt` is stored). */
  readonly createdAfter?: string;
  /** Only jobs created strictly before this instant (ISO 8601 in UTC). */
  readonly createdBefore?: string;
  readonly limit: number;
  readonly cursor?: string;
}

export interface StatusChange {
  readonly status: JobStatus;
  readonly error?: JobError | null;
  readonly result?: Record<string, unknown> | null;
  readonly progress?: number;
  readonly startedAt?: string;
  readonly finishedAt?: string;
  readonly executionName?: string;
}

export interface JobStore {
  /** Creates the job with one conditional write unless a job with its id exists, which it then returns. */
  create(job: Job): Promise<CreateOutcome>;
  get(jobId: string): Promise<Job | undefined>;
  /**
   * The jobs of these ids that exist, read consistently (a batch's keys are
   * looked up together, not one read each); an id with no job is absent.
   */
  getMany(jobIds: readonly string[]): Promise<ReadonlyMap<string, Job>>;
  /** Records that the job's queue message was sent: intake for this key is complete. */
  markEnqueued(jobId: string, at: Date): Promise<void>;
  /** Newest first. Throws a ValidationError for a cursor it did not issue. */
  listByTenant(tenantId: string, query: TenantJobQuery): Promise<JobPage>;
  /**
   * Moves the job to a new status only if it is currently in one of `from`
   * (a conditional write, so a late or duplicate event never moves it
   * backwards). Returns the updated job, or undefined if it was not in `from`.
   */
  transition(
    job: Pick<Job, 'id' | 'tenantId' | 'provider'>,
    from: readonly JobStatus[],
    change: StatusChange,
    at: Date,
  ): Promise<Job | undefined>;
  /** Records a cancel request on a job that is not queued, for the workflow to honour. */
  requestCancel(jobId: string, at: Date): Promise<Job | undefined>;
  /**
   * Takes the right to send a submission, and counts the attempt: only while
   * the job runs, has no provider job id, and its intent is still the one the
   * caller read (`replacing`, or none). Of two invocations racing, one takes
   * it; the other gets undefined and must not send.
   */
  recordSubmitIntent(
    jobId: string,
    intent: SubmitIntent,
    replacing: string | undefined,
  ): Promise<Job | undefined>;
  /**
   * The submission's outcome is known: keep the provider's id (if accepted)
   * and drop the intent. A refused submission whose first calls were answered
   * records how many (`answeredCalls`), in the same write.
   */
  settleSubmitIntent(
    jobId: string,
    providerJobId: string | undefined,
    at: Date,
    answeredCalls?: number,
  ): Promise<void>;
  /** Stores the await step's task token; returns the job as it then is (with any outcome already recorded). */
  recordTaskToken(jobId: string, taskToken: string, at: Date): Promise<Job | undefined>;
  /**
   * Records the task token of the parent's state now waiting for this chunk
   * job (a retried state waits with a new one); undefined when the job is not
   * a chunk job or is gone.
   */
  recordParentToken(jobId: string, taskToken: string): Promise<Job | undefined>;
  /**
   * Stores the provider's final outcome once, only while the job is still the
   * one it was read as (same creation, same submission) and the outcome's
   * provider job is the one on record or none is recorded yet: a write that
   * raced an operator's requeue lands on nothing. Returns the job as it then is.
   */
  recordProviderOutcome(
    job: Pick<Job, 'id' | 'createdAt' | 'resubmissions'>,
    outcome: ProviderOutcome,
  ): Promise<Job | undefined>;
  /**
   * Gives a queued job its provider slot and starts it, all or nothing (one
   * transaction): the slot taken as `SlotPool.acquire` takes it (the limit, the
   * tenant's cap and pass are its conditions, so the limit is still enforced in
   * that one item's update), the job moved from `queued` to `running` under the
   * name of its execution, and its line entry, if any, removed. Refused when
   * the slot cannot be taken (`slot`) or the job is no longer the queued job it
   * was read as (`job`, which wins when both hold), or it met another
   * transaction on its items (`conflict`); nothing is written then.
   * The job leaves its tenant's backlog as any move out of `queued` does.
   */
  startWithSlot(grant: SlotGrant, at: Date): Promise<SlotGrantOutcome>;
  /** A queued job's message was (re)sent now; false if the job is no longer queued. */
  touchEnqueued(jobId: string, at: Date): Promise<boolean>;
  /**
   * Claims the right to send a queued job another message: only if it is
   * still queued and its last message was sent when `job` (as read) says.
   * Of two claims on one reading one wins; a dispatcher's touch in between
   * makes both lose.
   */
  claimRequeue(job: Pick<Job, 'id' | 'enqueuedAt'>, at: Date): Promise<boolean>;
  /**
   * Stores a provider tick's progress with one conditional write that holds
   * only if the tick concerns the job as it is now (it is running, the tick's
   * submission is its current one, and the tick's provider job is the one on
   * record or one is being submitted), the progress moves forward, and no
   * progress was stored after `notSince`. Never moves a finished job or lowers
   * progress. Returns the job as the write left it, or undefined when the
   * condition did not hold (nothing is read then).
   */
  recordProgressTick(jobId: string, tick: ProgressTick): Promise<Job | undefined>;
  /**
   * Starts a new run of the job's workflow: `runs` goes from the job's value to
   * the next one (a conditional write, so of two overlapping callers one wins).
   * Returns the updated job, or undefined if another caller got there first.
   */
  recordNewRun(job: Job, at: Date): Promise<Job | undefined>;
  /**
   * An operator sends a job in review back to the queue for a fresh
   * submission: provider bookkeeping is cleared and the next submission uses a
   * new idempotency key. Undefined unless the job is in review.
   */
  requeueForResubmission(job: Job, at: Date): Promise<Job | undefined>;
  /**
   * A running job whose submission its provider did not take (throttled, or
   * down) goes back to `queued` to wait for its slot again: a conditional
   * write while it runs the run read and has no provider job, which counts
   * a new run (`runs`) for its next start, clears the run's start and keeps
   * any submit intent (a deduplicating provider's resend). Undefined when
   * the condition fails.
   */
  returnToQueue(job: Job, at: Date): Promise<Job | undefined>;
  /**
   * A client resumes its failed job: running again under the same execution
   * and submission, `resumes` counted up and `resumedAt` set, its error and
   * finish cleared, and no longer due to expire. A conditional write from
   * `failed` with no replay named (`replacedBy`): of two resumes at once, one
   * moves it, and a resume and a replay never both go on. Undefined unless
   * failed and not replaced.
   */
  reopenFailed(
    job: Pick<Job, 'id' | 'tenantId' | 'provider' | 'resumes'>,
    at: Date,
  ): Promise<Job | undefined>;
  /**
   * An operator's replay of the finished job names its replay (`replacement`),
   * or a replay that was refused takes its name back (`replacement`
   * undefined, `was` the replay's): one conditional write, while the job is
   * in the status it was read in and still names `was` (none: undefined). A
   * replaced job is never resumed (`reopenFailed`), and a resumed one is not
   * in the status it was listed in. Undefined when the condition fails.
   */
  markReplaced(
    job: Pick<Job, 'id' | 'status'>,
    replacement: string | undefined,
    was: string | undefined,
    /** The key the replacement is made under (`replacedByKey`), written with it. */
    replacementKey?: string,
  ): Promise<Job | undefined>;
  /**
   * Up to `limit` scheduled jobs whose runAt is at or before `now`, earliest
   * first, from the sparse due index, each read again from the table (the
   * index lags it: a job that left `scheduled` since is left out).
   */
  listDue(now: Date, limit: number): Promise<readonly Job[]>;
  /** How many of one provider's active jobs have this status (the sparse index, counted, not read). */
  countActive(provider: ProviderName, status: ActiveStatus): Promise<number>;
  /**
   * One provider's active jobs (queued, running, needs_review) of one status,
   * oldest first, from the sparse index, each read again from the table (the
   * index keeps keys only, and lags the table).
   */
  listActive(
    provider: ProviderName,
    status: ActiveStatus,
    page: { readonly limit: number; readonly cursor?: string },
  ): Promise<JobPage & { readonly itemsRead: number }>;
}

export type ActiveStatus = 'queued' | 'running' | 'needs_review';

/** A provider slot given to a queued job, with its start (`JobStore.startWithSlot`). */
export interface SlotGrant {
  /** The job as read, queued. */
  readonly job: Job;
  /** Its slot's holder (`slotHolderOf`). */
  readonly holder: string;
  readonly limit: number;
  readonly claim: TenantClaim;
  /** Its token of the provider's rate, from the pool as the choice read it (`rateTokenOf`). */
  readonly token: RateToken;
  /** Its entry in its tenant's line, if it waited in one. */
  readonly entry?: WaitingEntry;
}

/**
 * `conflict`: the grant met another transaction on one of its items and did
 * nothing; what the choice read may be stale, so it is a lost race like
 * `slot`, and the caller reads and chooses again.
 */
export type SlotGrantOutcome = { readonly granted: Job } | { readonly refused: 'slot' | 'job' | 'conflict' };

/** A provider's progress tick, as the job store checks it in the write that stores it. */
export interface ProgressTick {
  /** 0..100, whole. */
  readonly progress: number;
  readonly at: Date;
  /** The write is refused if progress was stored after this: about one write per job per interval. */
  readonly notSince: Date;
  /** The provider job the tick is about. */
  readonly providerJobId: string;
  /**
   * The job record and submission its webhook URL named (`submissionOfTag`);
   * absent for URLs made before they carried one, which belong to the first
   * submission.
   */
  readonly submission?: SubmissionRef;
}

/** One provider submission of one job record: the record's creation time and the submission's number. */
export interface SubmissionRef {
  readonly createdAt: string;
  readonly number: number;
}

/**
 * One provider's in-flight slots: one counter with the holders, so its limit
 * is enforced in one place whatever runs the jobs. A slot belongs to one provider submission
 * of a job (`slotHolderOf`), not to the job: releasing names it, so an old
 * submission's step or a stale reading can never free a newer one's.
 */
/**
 * What a slot taken for a tenant's job records beside the holder, in the same
 * conditional update that enforces the limit: the tenant's own cap is checked
 * there too, and the tenant's pass moves on (weighted fair share), on the
 * condition that it is still the one the choice was made on.
 */
export interface TenantClaim {
  readonly tenant: string;
  /** The most slots of this pool the tenant may hold; absent: no cap of its own. */
  readonly maxInFlight?: number;
  /** The tenant's pass as the choice read it (undefined: none stored), the pass it moves to, and the pool's new floor. */
  readonly pass?: { readonly expected: number | undefined; readonly next: number; readonly floor: number };
}

/** A slot pool as one consistent read: who holds its slots, per tenant, and the fair-share passes. */
export interface SlotPoolState {
  readonly holders: readonly string[];
  /** Slots each tenant holds; holders taken without a tenant count for none. */
  readonly tenantInFlight: Readonly<Record<string, number>>;
  /** Each tenant's pass (stride scheduling), absent for a tenant never served. */
  readonly passes: Readonly<Record<string, number>>;
  /** The pass of the tenant served last. */
  readonly floor: number;
  /** Until when (epoch ms) grants are paused because the provider throttled or went down; absent: never paused. */
  readonly pausedUntil?: number;
  /** Why, as the provider said it. */
  readonly pauseReason?: string;
  /** How long the last pause was, in seconds: a pause met again soon after doubles it. */
  readonly pauseSeconds?: number;
  /**
   * Until when (epoch ms) the one grant given after the pause ended probes
   * the provider alone; absent, or not after `pausedUntil`: no probe yet.
   */
  readonly probeUntil?: number;
  /** The rate grants are held to, and what it is reckoned from; absent: none declared, learned or counted. */
  readonly rate?: PoolRate;
}

/** Grants a minute, and how many may go at once after a quiet spell. */
export interface RateLimit {
  readonly perMinute: number;
  readonly burst: number;
}

/** What the pool's rate is reckoned from (`effectiveRate`). */
export interface PoolRate {
  /** The provider's declared rate (settings); absent: none. */
  readonly declared?: RateLimit;
  /** The theoretical arrival time of the next grant (GCRA), epoch ms; absent: no grant held to a rate yet. */
  readonly tat?: number;
  /** The rate the provider's last throttle set, and when (epoch ms): it recovers from there. */
  readonly throttled?: { readonly perMinute: number; readonly at: number };
  /** When the traffic's last throttle started a pause (epoch ms), whether or not it lowered the rate. */
  readonly lastThrottleAt?: number;
  /**
   * While no rate holds, the grants of the minute `minute` (epoch ms / 60,000)
   * and of the minute before: what a first throttle learns a rate from.
   */
  readonly grants?: {
    readonly minute: number;
    readonly count: number;
    readonly before: number;
    /** When the grants counted began, after a minute with none (epoch ms). */
    readonly since?: number;
  };
}

/**
 * What a grant takes of the provider's rate, computed from the pool as read
 * (`rateTokenOf`) and conditioned on it in the grant's own write: a change
 * by another grant in between refuses it, and the choice reads again.
 */
export interface RateToken {
  /** GCRA: the theoretical arrival time read (undefined: none stored) and the one this grant sets. */
  readonly tat?: { readonly expected: number | undefined; readonly next: number };
  /** While no rate holds: the grant counted in `minute`, the count read being of `expectedMinute`. */
  readonly count?: {
    readonly expectedMinute: number | undefined;
    readonly minute: number;
    /** The grants of the minute before `minute`, kept when a new minute's count starts. */
    readonly before: number;
    /** When the counted grants began (epoch ms): set by the first grant after a minute with none. */
    readonly since?: number;
  };
  /** The first grant after a pause ended probes the provider alone until `until` (epoch ms). */
  readonly probe?: { readonly pausedUntil: number; readonly until: number };
}

/** A pause of a provider's grants: until when, how long it is, and why. */
export interface ProviderPause {
  readonly until: Date;
  readonly seconds: number;
  readonly reason: string;
  /** The rate the throttle lowers the pool to (`throttledRateOf`); absent: the rate stays. */
  readonly throttled?: { readonly perMinute: number; readonly at: number };
  /** When a throttle of the traffic started this pause (epoch ms): the next one soon after repeats it (`throttledRateOf`). */
  readonly throttleAt?: number;
}

/** What a slot's give-back left its tenant holding (`SlotPool.giveBack`). */
export type SlotGiveBack = 'last' | 'others held' | 'not held';

export interface SlotPool {
  /**
   * Takes a slot for the holder unless `limit` are held, the pool is paused
   * or probing, its rate has no token for it (`token`, else one reckoned from
   * a read of the pool), or, with a claim, the tenant holds its cap or its
   * pass moved since it was read. A holder that already has one keeps it (true).
   */
  acquire(holder: string, limit: number, claim?: TenantClaim, token?: RateToken): Promise<boolean>;
  /**
   * Gives the holder's slot back (and the tenant's count of it, if named);
   * false if it held none. The pass of a tenant left holding none and not
   * waiting goes with it (`giveBack`, then `forgetIdlePass`).
   */
  release(holder: string, tenant?: string): Promise<boolean>;
  /**
   * Gives the holder's slot back in one conditional write, which says what
   * the tenant named still holds: `last` when none (its pass stays, for
   * `forgetIdlePass` once the slot is handed on), `others held` when some or
   * no tenant is named, `not held` when the holder held no slot.
   */
  giveBack(holder: string, tenant?: string): Promise<SlotGiveBack>;
  /** Drops the pass of a tenant that holds no slot here and whose line does not wait (best effort). */
  forgetIdlePass(tenant: string): Promise<void>;
  holders(): Promise<readonly string[]>;
  state(): Promise<SlotPoolState>;
  /**
   * Pauses every grant of the pool (`acquire`, and `startWithSlot` in the same
   * condition as the slot) until `pause.until`, unless a pause already lasts
   * longer; false then. Slots held are not touched; a probe under way ends,
   * and the rate is lowered to `pause.throttled` when given.
   */
  pause(pause: ProviderPause): Promise<boolean>;
  /** Ends a pause now: grants go on. */
  resume(): Promise<void>;
  /**
   * Ends the probe `holder` is making now, the provider having taken its
   * submission: the grants it held back go on at once rather than when the
   * probe's time is up. False when `holder` probes no more (another pause
   * came, or the probe's time is up).
   */
  endProbe(holder: string, at: Date): Promise<boolean>;
}

/** A tenant's share of each provider's slots: its record, or the defaults. */
export interface TenantShare {
  /** 1..100: its share when several tenants wait. */
  readonly weight: number;
  /** The most slots it may hold at each provider; absent: no cap of its own. */
  readonly maxInFlight?: number;
}

/** The shares of the named tenants, each present (defaults for a tenant without a record). */
export type TenantShares = (tenants: readonly string[]) => Promise<ReadonlyMap<string, TenantShare>>;

/** One waiting job in its tenant's line at its provider, found by its place in the line. */
export interface WaitingEntry {
  readonly provider: ProviderName;
  readonly tenant: string;
  /** Priority with aging, then the job id (`waitingSortKey`): the line's order. */
  readonly place: string;
  readonly jobId: string;
}

/** A tenant with waiting jobs at a provider; `marks` counts the jobs put in its line. */
export interface WaitingTenant {
  readonly tenant: string;
  readonly marks: number;
}

/**
 * Each tenant's line of waiting jobs at each provider, in priority order, and
 * the set of tenants whose line may hold jobs: the fair choice reads the set
 * (O(tenants waiting)) and the head of one line, never every waiting job.
 * Entries are removed when their job takes a slot; an entry whose job left
 * `queued` another way is removed by the first choice that meets it.
 */
export interface WaitingLines {
  /** Puts the job in its tenant's line and marks the tenant waiting. Idempotent. */
  add(entry: WaitingEntry): Promise<void>;
  /**
   * Puts many jobs in their lines as `add` does, the entries written together
   * and each tenant marked once after its entries. Answers the jobs that
   * could not be put in line, each with its error.
   */
  addMany(entries: readonly WaitingEntry[]): Promise<ReadonlyMap<string, unknown>>;
  remove(entry: WaitingEntry): Promise<void>;
  tenants(provider: ProviderName): Promise<readonly WaitingTenant[]>;
  /** The first `limit` entries of the tenant's line, in order. */
  head(provider: ProviderName, tenant: string, limit: number): Promise<readonly WaitingEntry[]>;
  /** Takes the tenant off the waiting set, unless a job was put in its line since `marks` was read. */
  retire(provider: ProviderName, tenant: WaitingTenant): Promise<void>;
}

/** Each provider's slot pool: a burst at one provider never takes another's capacity. */
export type SlotPools = (provider: ProviderName) => SlotPool;

/** Each provider's in-flight limit (settings). */
export type InFlightLimits = Readonly<Record<ProviderName, number>>;

/** Where a reconciler pass stopped when its time ran out: the next pass goes on from there. */
export interface ReconcilerPosition {
  /** Absent on positions saved before providers had their own listings: the one provider there was. */
  readonly provider?: ProviderName;
  readonly status: ActiveStatus;
  /** Absent: from the first job of that status. */
  readonly cursor?: string;
}

export interface ReconcilerProgress {
  load(): Promise<ReconcilerPosition | undefined>;
  /** Undefined: the last pass went through every active job; the next starts from the beginning. */
  save(position: ReconcilerPosition | undefined): Promise<void>;
}

export type TimelineEvent = Resource<typeof timelineEvent>;

/** The job's history as the client sees it on GET /v1/jobs/{id}/events. */
export interface Timeline {
  record(jobId: string, event: TimelineEvent): Promise<void>;
  /**
   * Events recorded at or after `since` (the job's `createdAt`), oldest first: a
   * job created again under a key whose earlier job expired has the same id, and
   * none of the earlier job's history.
   */
  list(jobId: string, since: string): Promise<readonly TimelineEvent[]>;
  /** The step events kept of each run of the job that had its timeline read (`keepSteps`). */
  keptSteps(jobId: string): Promise<readonly KeptSteps[]>;
  /** Keeps (replaces) what a run's history showed, for the timeline's later reads. */
  keepSteps(jobId: string, steps: KeptSteps): Promise<void>;
}

/** An execution's step events as its history showed them, and whether it had ended then. */
export interface StepHistory {
  readonly events: readonly TimelineEvent[];
  /** Its history ends with the execution's end (succeeded, failed, aborted or timed out). */
  readonly ended: boolean;
}

/** What a timeline read kept of one run's history: which run, when it was read, the job's resumes then. */
export interface KeptSteps extends StepHistory {
  readonly executionName: string;
  readonly readAt: string;
  /** A resume redrives the execution, which then goes on: what was kept before it is stale. */
  readonly resumes: number;
}

/** The workflow engine (Step Functions): executions named after jobs, and task tokens. */
export interface Workflow {
  /**
   * Starts (or finds the running) execution with this name; idempotent for the same name and input.
   * `stateMachine` names the machine where the caller learned it from its own execution (a step
   * handing its slot on); otherwise the configured one.
   */
  start(executionName: string, input: { readonly jobId: string }, stateMachine?: string): Promise<void>;
  stop(executionName: string, cause: string): Promise<void>;
  /**
   * Redrives the failed (stopped, timed-out) execution from the state it
   * failed in; `clientToken` makes a repeated request the same redrive.
   * `running` when it is not closed yet: still on its failure path, it goes
   * on by itself once its park step finds the job resumed. `ended` when it
   * can never be redriven (it succeeded, ended more than 14 days ago, used
   * up its redrives, or does not exist): a new run is the way on.
   */
  redrive(executionName: string, clientToken: string): Promise<'redriven' | 'running' | 'ended'>;
  /**
   * The execution's start (`job.dispatched`) and its steps' starts, retries,
   * ends and failures (`step.started`, `step.retry`, `step.succeeded`,
   * `step.failed`) from its history, oldest first; none for an execution that
   * was never started; and whether the execution had ended.
   */
  stepEvents(executionName: string): Promise<StepHistory>;
  /** The execution's status, or `NOT_FOUND` if it was never started. */
  status(executionName: string): Promise<ExecutionStatus>;
  /** Tells a waiting step its job is alive. False when the token is no longer valid. */
  heartbeat(taskToken: string): Promise<boolean>;
  /** Resumes a waiting step. False when the token is no longer valid (step timed out or execution ended). */
  completeTask(taskToken: string, output: unknown): Promise<boolean>;
  failTask(taskToken: string, error: string, cause: string): Promise<boolean>;
}

export type ExecutionStatus =
  | 'RUNNING'
  | 'SUCCEEDED'
  | 'FAILED'
  | 'TIMED_OUT'
  | 'ABORTED'
  | 'PENDING_REDRIVE'
  | 'NOT_FOUND';

/** What live clients of a job receive (CONTRACT section 1, live progress). */
export type LiveMessage = Resource<typeof liveMessage>;

/** Pushes messages to the clients watching a job, without touching the job's storage. */
export interface LiveChannel {
  publish(message: LiveMessage): Promise<void>;
}

/** Where finished jobs' outputs are kept, and how clients get at them. */
export interface OutputStore {
  putOutput(key: string, body: Uint8Array | string, contentType: string): Promise<void>;
  /** A time-limited GET URL for an output. */
  outputUrl(key: string): Promise<string>;
  /** A stored output's bytes, or undefined if there is none. */
  getOutput(key: string): Promise<Uint8Array | undefined>;
  /** Deletes every output whose key starts with `prefix`; answers how many there were. */
  deleteOutputs(prefix: string): Promise<number>;
}

export interface EnqueueOptions {
  /** Hold the message back this long (SQS allows up to 900 s). */
  readonly delaySeconds?: number;
  /** How often the job already waited for a slot, for the next wait's backoff. */
  readonly deferrals?: number;
  /**
   * The job already holds a slot (a freed slot was handed to it): it goes to
   * the dispatcher by the hand-off lane, ahead of jobs still waiting for one.
   */
  readonly handOff?: boolean;
  /** The sender put the job in its tenant's line already (intake): its first look need not do it again. */
  readonly inLine?: boolean;
}

/** What the queue needs of a job: its id, and its provider, whose own queue it waits in. */
export type QueuedJobRef = Pick<Job, 'id' | 'provider'>;

export interface JobQueue {
  /**
   * Hands the job to the dispatcher, through its provider's queue (so a backlog
   * at one provider never delays another's jobs) or the hand-off lane.
   * At-least-once: the consumer tolerates duplicates.
   */
  enqueue(job: QueuedJobRef, options?: EnqueueOptions): Promise<void>;
  /**
   * Enqueues many jobs alike, several to a request. Answers the jobs that
   * could not be enqueued, each with its error; the others were.
   */
  enqueueMany(jobs: readonly QueuedJobRef[], options?: EnqueueOptions): Promise<ReadonlyMap<string, unknown>>;
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
  /** A time-limited GET URL of a stored input, for a provider that fetches its input itself. */
  downloadUrl(tenantId: string, ref: string, expiresInSeconds: number): Promise<string>;
  /** Size and media type of a stored input, or undefined if there is none. */
  inputInfo(tenantId: string, ref: string): Promise<{ size: number; contentType: string } | undefined>;
  /** Deletes a stored input; one that is not there is fine. */
  deleteInput(tenantId: string, ref: string): Promise<void>;
}

/** Tenants' settings (one record each) and what they have in the system. */
export interface TenantStore {
  /** The tenant's record, or undefined if none was ever written. */
  get(tenant: string): Promise<TenantRecord | undefined>;
  /**
   * Sets what `changes` names in one write, creating the record with the
   * defaults for the rest if it has none; `maxInFlight: null` removes the cap.
   * Returns the record as it then is.
   */
  update(tenant: string, changes: TenantChanges, at: Date): Promise<TenantRecord>;
  /** Creates the record with the defaults unless one exists (which is left as it is); true if it created it. */
  ensure(tenant: string, at: Date): Promise<boolean>;
  /** The tenant's jobs that wait or run now. */
  usage(tenant: string): Promise<TenantUsage>;
}

/**
 * Each tenant's backlog (its queued and scheduled jobs) as a counter kept
 * beside its settings, so that admitting a job against `maxQueued` is one
 * conditional write, never a count. Jobs leave the backlog with the status
 * write that takes them out of it (the job store's part); a process that
 * stops between the two leaves the counter off, and the reconciler's
 * recounts set it right.
 */
export interface TenantBacklogs {
  /** Counts one more job into the tenant's backlog unless it already holds its `maxQueued`; false when full. */
  admit(tenant: string): Promise<boolean>;
  /**
   * Counts one more job in whatever the cap: a job made for work the tenant
   * was admitted for already (a chunk of an admitted `audio.publish` job).
   */
  admitPastCap(tenant: string): Promise<void>;
  /**
   * Counts up to `wanted` more jobs into the tenant's backlog at once, as many
   * as its `maxQueued` leaves room for; answers how many (0 when full).
   */
  admitUpTo(tenant: string, wanted: number): Promise<number>;
  /** Takes back admissions that stored no job (a replay, a reused key, a failed write): one, or `count`. */
  giveBack(tenant: string, count?: number): Promise<void>;
  /** The tenants on the list of backlogs to recount: every tenant with a backlog, and some at 0. */
  tenants(): Promise<string[]>;
  /** Puts tenants on that list: those a stop left off it after raising their backlog. */
  list(tenants: readonly string[]): Promise<void>;
  /**
   * Counts the tenant's queued and scheduled jobs and sets its counter to the
   * count if the counter is off. The index counted lags writes a little, so a
   * difference is set right only once two recounts in a row found the same
   * counter and the same count.
   */
  recount(tenant: string): Promise<BacklogRecount>;
}

export interface BacklogRecount {
  readonly tenant: string;
  /** The counter before the recount. */
  readonly counted: number;
  /** The jobs found. */
  readonly queued: number;
  readonly scheduled: number;
  /** Whether the counter was set to the jobs found. */
  readonly corrected: boolean;
}

/** Which tenant names API keys carry. */
export interface TenantKeys {
  /** Whether any API key (revoked ones included) was issued to this tenant. */
  hasKeys(tenant: string): Promise<boolean>;
}

/** What a passage's vector carries beside its data: what search filters by and what a hit shows. */
export interface PassageMetadata {
  readonly tenant: string;
  /** The recording: its media item (`med_…`), or its `audio.publish` job for a publish made without one. */
  readonly item: string;
  /** Days since 1970-01-01 of the recording's date: a number, so a range filter can compare it. */
  readonly date: number;
  readonly labels: readonly string[];
  readonly passage: number;
  readonly start: number;
  readonly end: number;
  /** Not filterable: only shown. */
  readonly text: string;
  readonly title?: string;
}

export interface PassageVector {
  readonly key: string;
  readonly data: readonly number[];
  readonly metadata: PassageMetadata;
}

/**
 * A filter over the filterable metadata, in the vector index's own language
 * (S3 Vectors: `$eq`, `$in`, `$gte`, `$lte`, `$and`, …).
 */
export type VectorFilter = Readonly<Record<string, unknown>>;

export interface VectorHit {
  readonly key: string;
  /** The index's distance: cosine distance (1 − similarity) or Euclidean. */
  readonly distance: number;
  readonly metadata: PassageMetadata;
}

/** The search index of every published passage (one per deployment). */
export interface VectorIndex {
  /** How the index compares vectors, fixed when it was made. */
  readonly metric: 'cosine' | 'euclidean';
  /** Writes (or overwrites) vectors, in calls of at most what the index takes. */
  put(vectors: readonly PassageVector[]): Promise<void>;
  /** Deletes vectors by key; keys with no vector are fine. */
  delete(keys: readonly string[]): Promise<void>;
  /** The vectors of these keys, data and metadata (a metadata change rewrites them with their own data). */
  get(keys: readonly string[]): Promise<PassageVector[]>;
  /** The `topK` nearest vectors that match `filter`, nearest first. */
  query(vector: readonly number[], topK: number, filter: VectorFilter): Promise<VectorHit[]>;
}

/**
 * The deployment's event bus (EventBridge), where lifecycle changes are put
 * for other teams' rules (config/events.ts). At-least-once: a caller that
 * retries puts the same events again, with the same `eventId`s.
 */
export interface EventPublisher {
  /** Puts every event, or throws: an event the bus did not take is never dropped silently. */
  publish(events: readonly LifecycleEvent[]): Promise<void>;
}
