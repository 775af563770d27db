import { type Job, type JobStatus, submissionOfTag } from './job';
import type { JobStore, LiveChannel, StatusChange, Workflow } from './ports';
import { concerns } from './provider-events';

/**
 * At most one `true` per key per interval, remembering a bounded number of
 * keys: heartbeats of waiting steps are throttled with it.
 */
export class ProgressThrottle {
  private readonly lastTaken = new Map<string, number>();

  constructor(
    readonly intervalMs: number,
    /** Jobs remembered at most; the oldest are forgotten first. */
    private readonly capacity = 10_000,
  ) {}

  /** Whether `jobId` may act at `nowMs`; if so, it counts as having acted. */
  take(jobId: string, nowMs: number): boolean {
    const last = this.lastTaken.get(jobId);
    if (last !== undefined && nowMs - last < this.intervalMs) return false;
    remember(this.lastTaken, jobId, nowMs, this.capacity);
    return true;
  }
}

/** What a progress tick needs to know of its job: whether the tick concerns it, and how to tell its clients. */
export type TickView = Pick<
  Job,
  'status' | 'progress' | 'taskToken' | 'providerJobId' | 'submitIntent' | 'createdAt' | 'resubmissions'
>;

/** What storage last said of a job (undefined: there is none), and when. */
interface Learned {
  readonly job: TickView | undefined;
  readonly atMs: number;
}

/**
 * What one execution environment last learned of each job from storage,
 * through a tick's write (its new state) or read: for one interval after,
 * the job's ticks are streamed with what was learned and cost no request at
 * all. A tick after that asks storage again, with the write that stores it
 * when it may move progress forward, else with a read. So a job's status as
 * streamed lags storage by at most one interval (the status change itself is
 * published by whatever made it), and storage sees about one request per job
 * per interval from each warm environment.
 */
export class ProgressMemory {
  private readonly learned = new Map<string, Learned>();

  constructor(
    readonly intervalMs: number,
    /** Jobs remembered at most; the oldest are forgotten first. */
    private readonly capacity = 10_000,
  ) {}

  /** What was learned of the job less than an interval before `nowMs`, if anything was. */
  recall(jobId: string, nowMs: number): Learned | undefined {
    const learned = this.learned.get(jobId);
    return learned && nowMs - learned.atMs < this.intervalMs ? learned : undefined;
  }

  /** What was learned of the job last, however long ago. */
  last(jobId: string): Learned | undefined {
    return this.learned.get(jobId);
  }

  learn(jobId: string, job: Job | undefined, nowMs: number): TickView | undefined {
    const view: TickView | undefined = job && {
      status: job.status,
      progress: job.progress,
      createdAt: job.createdAt,
      ...(job.taskToken === undefined ? {} : { taskToken: job.taskToken }),
      ...(job.providerJobId === undefined ? {} : { providerJobId: job.providerJobId }),
      ...(job.submitIntent === undefined ? {} : { submitIntent: job.submitIntent }),
      ...(job.resubmissions === undefined ? {} : { resubmissions: job.resubmissions }),
    };
    remember(this.learned, jobId, { job: view, atMs: nowMs }, this.capacity);
    return view;
  }
}

/** Sets `key` as the newest entry of `map`, forgetting the oldest beyond `capacity`. */
function remember<V>(map: Map<string, V>, key: string, value: V, capacity: number): void {
  map.delete(key);
  map.set(key, value);
  if (map.size > capacity) {
    const oldest = map.keys().next().value;
    if (oldest !== undefined) map.delete(oldest);
  }
}

export interface ProgressDeps {
  readonly store: Pick<JobStore, 'get' | 'recordProgressTick'>;
  readonly live: LiveChannel;
  /** This environment's memory of jobs, whose interval is also the interval between stored writes. */
  readonly memory: ProgressMemory;
  readonly now: () => Date;
  /** Heartbeats of waiting steps, also throttled: the job is evidently alive. */
  readonly heartbeat?: {
    readonly throttle: ProgressThrottle;
    readonly workflow: Pick<Workflow, 'heartbeat'>;
  };
}

export type ProgressOutcome = { readonly streamed: boolean; readonly persisted: boolean };

/** Which provider job and which of the job's submissions a tick was sent for. */
export interface TickSource {
  readonly providerJobId: string;
  readonly submission: string | undefined;
}

/**
 * Applies a provider progress tick. Progress ticks arrive at the provider's
 * rate (ten a second, say); every tick that concerns the job is streamed to
 * live clients, with the job's status, while storage sees about one request
 * per job per interval (see ProgressMemory). That request is the write
 * itself where the tick may move progress forward: its condition checks
 * what a read would have (the job runs, the tick is of its current
 * submission and provider job), moves progress only forward, and refuses a
 * write closer than the interval to the last stored one, so the promise of
 * about one write a second holds across environments, each with its own
 * memory. A refused write (the job moved on, another environment wrote) is
 * followed by a read, as is a tick that could not move progress.
 *
 * So a tick of a submission an operator replaced, or one that arrives after
 * the job finished, neither raises progress nor keeps a waiting step alive
 * (heartbeats go out only on what storage has just said), and live clients
 * are told the job's true status, at most one interval late.
 */
export async function applyProgress(
  deps: ProgressDeps,
  jobId: string,
  progress: number,
  source: TickSource,
): Promise<ProgressOutcome> {
  const now = deps.now();
  const nowMs = now.getTime();
  const rounded = Math.max(0, Math.min(100, Math.round(progress)));
  const recalled = deps.memory.recall(jobId, nowMs);
  let job = recalled?.job;
  let persisted = false;
  if (!recalled) {
    // A write is tried where it may land: a tick of a job last seen running this submission, behind it.
    const last = deps.memory.last(jobId);
    const mayMoveForward =
      last === undefined ||
      (last.job?.status === 'running' &&
        last.job.progress < rounded &&
        concerns(last.job, source.providerJobId, source.submission));
    const submission = source.submission === undefined ? undefined : submissionOfTag(source.submission);
    let stored: Job | undefined;
    // A tag that names no submission concerns no job: the read below says so.
    if (mayMoveForward && (source.submission === undefined || submission !== undefined)) {
      stored = await deps.store.recordProgressTick(jobId, {
        progress: rounded,
        at: now,
        notSince: new Date(nowMs - deps.memory.intervalMs),
        providerJobId: source.providerJobId,
        ...(submission ? { submission } : {}),
      });
      persisted = stored !== undefined;
    }
    stored ??= await deps.store.get(jobId);
    job = deps.memory.learn(jobId, stored, nowMs);
  }
  if (!job || !concerns(job, source.providerJobId, source.submission)) {
    return { streamed: false, persisted };
  }
  try {
    await deps.live.publish({
      type: 'progress',
      jobId,
      status: job.status,
      progress: rounded,
      at: now.toISOString(),
    });
  } catch {
    // Live ticks are best effort: a failed push must not cost the provider's webhook or the stored progress.
  }
  if (!recalled && job.status === 'running' && job.taskToken && deps.heartbeat?.throttle.take(jobId, nowMs)) {
    await deps.heartbeat.workflow.heartbeat(job.taskToken);
  }
  return { streamed: true, persisted };
}

/**
 * A job store that tells live clients about every status change it makes.
 * Wrapping the store keeps the many places that move a job (steps, cancel,
 * reconciler, operators) from each having to remember to publish.
 */
export function publishingStatusChanges<S extends JobStore>(store: S, live: LiveChannel): S {
  const publish = async (job: Job | undefined) => {
    if (!job) return;
    try {
      await live.publish({
        type: 'status',
        jobId: job.id,
        status: job.status as JobStatus,
        progress: job.progress,
        at: job.updatedAt,
        error: job.error,
      });
    } catch {
      // Live updates are best effort: storage is the truth, clients can always GET the job.
    }
  };
  return new Proxy(store, {
    get(target, property, receiver) {
      if (property === 'transition') {
        return async (
          job: Pick<Job, 'id' | 'tenantId'>,
          from: readonly JobStatus[],
          change: StatusChange,
          at: Date,
        ) => {
          const updated = await target.transition(job, from, change, at);
          // A write that can only keep the status (a resumed job given its slot back, running already)
          // changes nothing a client follows: its timeline says where the slot came from (`slot.received`).
          if (!(from.length === 1 && from[0] === change.status)) await publish(updated);
          return updated;
        };
      }
      // A job its provider refused goes back to its line (`returnToQueue`): a client following it sees it
      // queued, not running at 0 % for as long as the provider is down.
      if (
        property === 'requeueForResubmission' ||
        property === 'reopenFailed' ||
        property === 'returnToQueue'
      ) {
        return async (job: Job, at: Date) => {
          const updated = await target[property](job, at);
          await publish(updated);
          return updated;
        };
      }
      const value = Reflect.get(target, property, receiver);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
}
