import type { Job, JobStatus } from './job';
import type { JobStore, LiveChannel, StatusChange, Workflow } from './ports';

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
  readonly store: Pick<JobStore, 'recordProgress'>;
  readonly live: LiveChannel;
  readonly throttle: ProgressThrottle;
  readonly now: () => Date;
  /** Heartbeats of waiting steps, also throttled: the job is evidently alive. */
  readonly heartbeat?: {
    readonly throttle: ProgressThrottle;
    readonly send: (jobId: string) => Promise<void>;
  };
}

export type ProgressOutcome = { readonly streamed: true; readonly persisted: boolean };

export async function applyProgress(
  deps: ProgressDeps,
  jobId: string,
  progress: number,
): Promise<ProgressOutcome> {
  const now = deps.now();
  const rounded = Math.max(0, Math.min(100, Math.round(progress)));
  try {
    await deps.live.publish({
      type: 'progress',
      jobId,
      status: 'running',
      progress: rounded,
      at: now.toISOString(),
    });
  } catch {
    // Live ticks are best effort: a failed push must not cost the provider's webhook or the stored progress.
  }
  const persisted =
    deps.throttle.take(jobId, now.getTime()) &&
    (await deps.store.recordProgress(
      jobId,
      rounded,
      now,
      new Date(now.getTime() - deps.throttle.intervalMs),
    ));
  if (deps.heartbeat?.throttle.take(jobId, now.getTime())) await deps.heartbeat.send(jobId);
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

/** Sends a heartbeat to a job's waiting step, if it has one. */
export function heartbeatSender(store: Pick<JobStore, 'get'>, workflow: Pick<Workflow, 'heartbeat'>) {
  return async (jobId: string) => {
    const job = await store.get(jobId);
    if (job?.taskToken && job.status === 'running') await workflow.heartbeat(job.taskToken);
  };
}
