import type { JobFault, ProviderName } from './faults';
import type { ChargeLedger } from './ledger';

/**
 * Every dialect's jobs run on the same timers: a job is split into ticks
 * (`progressHz` a second over `jobMs`), each tick reports progress, the last
 * one succeeds. The dialect decides what a tick and an outcome look like on its
 * wire; the runner decides when they happen and keeps the ledger's running
 * count.
 */

export type JobState = 'running' | 'succeeded' | 'failed' | 'canceled';
export type JobOutcome = Exclude<JobState, 'running'>;

export interface JobHooks {
  /** Tick `tick` of `ticks` happened; `percent` is rounded. */
  progress(tick: number, ticks: number, percent: number): void;
  /**
   * The job reached a terminal state at `at`, the instant its charge in the
   * ledger ends; called exactly once, and never for a stalled job.
   */
  finished(outcome: JobOutcome, at: Date): void;
}

export interface JobSpec {
  readonly id: string;
  readonly provider: ProviderName;
  readonly idempotencyKey: string | null;
  readonly jobMs: number;
  readonly progressHz: number;
  readonly fault: JobFault | undefined;
  /** Recorded with the charge where the provider bills by input tokens. */
  readonly inputTokens?: number;
  /** Recorded with the charge: a digest of each text it read (`inputDigestOf`). */
  readonly inputDigests?: readonly string[];
  readonly hooks: JobHooks;
}

export interface Job {
  readonly id: string;
  readonly provider: ProviderName;
  readonly fault: JobFault | undefined;
  readonly acceptedAtMs: number;
  /** Ticks over the whole run; the last one reaches 100. */
  readonly ticks: number;
  readonly ticksDone: number;
  readonly percent: number;
  readonly state: JobState;
}

interface RunningJob extends Job {
  readonly hooks: JobHooks;
  readonly tickIntervalMs: number;
  ticksDone: number;
  percent: number;
  state: JobState;
  timer?: NodeJS.Timeout;
}

export class JobRunner {
  private readonly jobs = new Set<RunningJob>();

  constructor(
    private readonly ledger: ChargeLedger,
    private readonly log: (line: string) => void,
  ) {}

  /** Charges the job to its provider and starts its timers. */
  start(spec: JobSpec): Job {
    const acceptedAtMs = Date.now();
    const ticks = Math.max(1, Math.round((spec.jobMs / 1000) * spec.progressHz));
    const job: RunningJob = {
      id: spec.id,
      provider: spec.provider,
      fault: spec.fault,
      hooks: spec.hooks,
      acceptedAtMs,
      ticks,
      tickIntervalMs: spec.jobMs / ticks,
      ticksDone: 0,
      percent: 0,
      state: 'running',
    };
    this.jobs.add(job);
    this.ledger.charge(spec.provider, {
      id: spec.id,
      idempotencyKey: spec.idempotencyKey,
      acceptedAt: new Date(acceptedAtMs).toISOString(),
      ...(spec.inputTokens === undefined ? {} : { inputTokens: spec.inputTokens }),
      ...(spec.inputDigests === undefined ? {} : { inputDigests: spec.inputDigests }),
    });
    this.log(
      `${spec.provider}: accepted ${spec.id} (key ${spec.idempotencyKey ?? '-'}, ${spec.jobMs} ms` +
        `${spec.fault ? `, fault ${spec.fault}` : ''})`,
    );
    this.scheduleTick(job);
    return job;
  }

  /** Cancels a running job; false when it had already finished. */
  cancel(job: Job): boolean {
    const running = job as RunningJob;
    if (running.state !== 'running') return false;
    this.settle(running, 'canceled');
    return true;
  }

  /** Stops every timer; jobs stay where they are. */
  stopAll(): void {
    for (const job of this.jobs) clearTimeout(job.timer);
  }

  clear(): void {
    this.stopAll();
    this.jobs.clear();
  }

  /**
   * A timer may fire up to a millisecond before the wall clock reaches its due time (Node counts
   * timers on a monotonic clock, truncated to whole milliseconds); a tick that comes early waits out
   * the rest, so a job never finishes before its whole run is over by the clock its ledger reads.
   */
  private scheduleTick(job: RunningJob): void {
    const due = job.acceptedAtMs + (job.ticksDone + 1) * job.tickIntervalMs;
    const onTime = () => {
      if (Date.now() < due) job.timer = setTimeout(onTime, due - Date.now());
      else this.tick(job);
    };
    job.timer = setTimeout(onTime, Math.max(0, due - Date.now()));
  }

  /**
   * `fail-job` and `stall` strike at the first tick past half of the run:
   * the job has visibly made progress by then, as a real one would have.
   */
  private tick(job: RunningJob): void {
    job.timer = undefined;
    if (job.state !== 'running') return;
    const tick = job.ticksDone + 1;
    const pastHalf = tick > Math.floor(job.ticks / 2);
    if (job.fault === 'fail-job' && pastHalf) {
      this.settle(job, 'failed');
      return;
    }
    if (job.fault === 'stall' && pastHalf) {
      // Still running as far as anyone can tell, but nothing will ever move it again.
      this.log(`${job.provider}: ${job.id} stalled at ${job.percent}%`);
      return;
    }
    job.ticksDone = tick;
    job.percent = Math.round((100 * tick) / job.ticks);
    job.hooks.progress(tick, job.ticks, job.percent);
    if (tick === job.ticks) this.settle(job, 'succeeded');
    else this.scheduleTick(job);
  }

  private settle(job: RunningJob, outcome: JobOutcome): void {
    clearTimeout(job.timer);
    job.timer = undefined;
    job.state = outcome;
    // One reading of the clock: the provider's own record of the end and the ledger's charge agree.
    const at = new Date();
    this.ledger.settled(job.provider, job.id, at, outcome);
    if (outcome === 'succeeded') job.percent = 100;
    this.log(`${job.provider}: ${job.id} ${outcome} at ${job.percent}%`);
    job.hooks.finished(outcome, at);
  }
}
