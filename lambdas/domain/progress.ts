import type { Job, JobStatus } from './job';
import type { JobStore, LiveChannel, StatusChange, Workflow } from './ports';
import { concerns } from './provider-events';

/**
 * Progress ticks arrive at the provider's rate (ten a second, say). Every tick
 * is streamed to live clients; storage sees at most one write per job per
 * interval. The throttle is in memory first because a refused conditional
 * write still costs a write. Each warm execution environment has its own
 * memory, so the conditional write itself refuses a write closer than the
 * interval to the last stored one: the promise holds across environments. The
 * same write guarantees progress never moves backwards and never touches a
 * finished job.
 */
export class ProgressThrottle {
  private readonly lastWrite = new Map<string, number>();

  constructor(
    readonly intervalMs: number,
    /** Jobs remembered at most; the oldest are forgotten first. */
    private readonly capacity = 10_000,
  ) {}

  /** Whether a tick of `jobId` at `nowMs` may be written; if so, it counts as written. */
  take(jobId: string, nowMs: number): boolean {
    const last = this.lastWrite.get(jobId);
    if (last !== undefined && nowMs - last < this.intervalMs) return false;
    this.lastWrite.delete(jobId);
    this.lastWrite.set(jobId, nowMs);
    if (this.lastWrite.size > this.capacity) {
      const oldest = this.lastWrite.keys().next().value;
      if (oldest !== undefined) this.lastWrite.delete(oldest);
    }
    return true;
  }
}

export interface ProgressDeps {
  readonly store: Pick<JobStore, 'get' | 'recordProgress'>;
  readonly live: LiveChannel;
  readonly throttle: ProgressThrottle;
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
 * Applies a provider progress tick. It is read against the job as it is now,
 * so a tick of a submission an operator replaced, or one that arrives after
 * the job finished, neither raises progress nor keeps a waiting step alive,
 * and live clients are told the job's true status. Each tick that concerns
 * the job is streamed; storage and heartbeats are throttled.
 */
export async function applyProgress(
  deps: ProgressDeps,
  jobId: string,
  progress: number,
  source: TickSource,
): Promise<ProgressOutcome> {
  const job = await deps.store.get(jobId);
  if (!job || !concerns(job, source.providerJobId, source.submission)) {
    return { streamed: false, persisted: false };
  }
  const now = deps.now();
  const rounded = Math.max(0, Math.min(100, Math.round(progress)));
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
  if (job.status !== 'running') return { streamed: true, persisted: false };
  const persisted =
    deps.throttle.take(jobId, now.getTime()) &&
    (await deps.store.recordProgress(
      jobId,
      rounded,
      now,
      new Date(now.getTime() - deps.throttle.intervalMs),
    ));
  if (job.taskToken && deps.heartbeat?.throttle.take(jobId, now.getTime())) {
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
          await publish(updated);
          return updated;
        };
      }
      if (property === 'requeueForResubmission') {
        return async (job: Job, at: Date) => {
          const updated = await target.requeueForResubmission(job, at);
          await publish(updated);
          return updated;
        };
      }
      const value = Reflect.get(target, property, receiver);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
}
