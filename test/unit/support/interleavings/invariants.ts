import type { Settings } from '../../../../config/settings';
import {
  executionNameOf,
  isTerminal,
  type Job,
  type JobStatus,
  jobIdOf,
  slotHolderOf,
} from '../../../../lambdas/domain/job';
import type { LiveMessage } from '../../../../lambdas/domain/ports';
import type { ProgressMemory } from '../../../../lambdas/domain/progress';
import type { MemorySlots } from '../memory-ports';
import type { ProviderRun, SimulatedProvider } from './provider';
import type { Actor, PortCall } from './scheduled';
import type { SimulatedStepFunctions } from './step-functions';

/** The promises of issue 12, each checked against the world as it is. */
export const INVARIANTS = {
  slotLimit: 'slot holders never exceed the limit, and every holder is a run that may be at the provider',
  slotKeptWhileProviderRuns:
    'no job ends failed or canceled with its slot freed while its provider job may still run',
  oneSubmissionPerRun:
    'a provider that cannot deduplicate is sent at most one submission per run, and a new run only by an operator requeue',
  outcomeOfCurrentRun: "a job's recorded outcome belongs to its current run",
  convergence:
    'once faults stop, reconciler passes converge every job to a terminal state or needs_review, and release every slot',
  progressOfCurrentRun:
    'a progress tick never raises the stored progress of, nor keeps alive the waiting step of, a submission it was not sent for',
  liveStatusTrue:
    'live progress messages never claim running for a job that left running more than one progress interval before',
  tenantCap: 'no tenant ever holds more provider slots, or runs more provider jobs, than its cap (caps.ts)',
  submitHoldsSlot: 'a submission reaches the provider only while it holds its provider slot (caps.ts)',
  stepPayloadKept:
    "every payload the state machine sends the steps passes the steps function's strict schema whole: no key refused, none dropped",
} as const;
export type Invariant = keyof typeof INVARIANTS;

export interface Breach {
  readonly invariant: Invariant;
  readonly jobId: string;
  readonly detail: string;
}

/**
 * What the invariants read of the world. The world runs them after every
 * port call, so they take this view of it rather than importing world.ts.
 */
export interface WorldView {
  readonly settings: Settings;
  readonly slots: MemorySlots;
  readonly provider: SimulatedProvider;
  readonly stepFunctions: SimulatedStepFunctions;
  readonly progressMemory: ProgressMemory;
  readonly jobIds: readonly string[];
  job(jobId: string): Job | undefined;
  readonly ticks: ReadonlyMap<Actor, { readonly run: ProviderRun; readonly statusOnArrival?: JobStatus }>;
  readonly incarnations: ReadonlyMap<string, number>;
  readonly startedFor: ReadonlyMap<string, number>;
  readonly outcomeFrom: ReadonlyMap<string, string>;
  readonly requeues: ReadonlyMap<string, number>;
}

/** A job record's part of its slot holders: a job created again under an expired key is another record. */
export const generationOf = (holder: string): string => holder.replace(/\.\d+$/, '');

/**
 * The invariants that hold after every port call. Capacity is counted at the
 * provider, by submission (slot holder): a submission uses one unit while it
 * holds a slot, and one per provider job of it still running (more than one
 * is a slot the limit did not see, and so is a provider job still running
 * for a submission whose slot was freed).
 */
export function* stepInvariants(world: WorldView): Generator<Breach> {
  const { provider, slots } = world;
  const limit = world.settings.maxInFlight;
  const holders = new Set([...slots.held, ...[...provider.runs.values()].map((run) => run.holder)]);
  let inUse = 0;
  for (const holder of holders) {
    inUse += Math.max(slots.held.has(holder) ? 1 : 0, provider.runningFor(holder).length);
  }
  if (inUse > limit) {
    yield {
      invariant: 'slotLimit',
      jobId: '*',
      detail: `${inUse} runs use provider capacity; the limit is ${limit}`,
    };
  }

  for (const holder of slots.held) {
    const id = jobIdOf(holder);
    const job = world.job(id);
    if (!job) {
      yield {
        invariant: 'slotLimit',
        jobId: id,
        detail: `slot ${holder} is held for a job that no longer exists`,
      };
      continue;
    }
    if (generationOf(holder) !== generationOf(slotHolderOf(job))) {
      yield {
        invariant: 'slotLimit',
        jobId: id,
        detail: `slot ${holder} is held for an expired earlier job of this id`,
      };
      continue;
    }
    if (holder !== slotHolderOf(job)) continue; // an earlier submission's: counted above while its provider job runs
    // An execution of the same name left by an earlier job with this id (its key expired and was used again).
    const name = executionNameOf(job);
    const execution = world.stepFunctions.executions.get(name);
    const earlier = (world.startedFor.get(name) ?? 0) < (world.incarnations.get(id) ?? 0);
    if (job.status === 'queued' && execution && execution.status !== 'RUNNING' && earlier) {
      yield {
        invariant: 'slotLimit',
        jobId: id,
        detail: `a queued job holds a slot for execution ${name}, ${execution.status} since an earlier job of this id: it cannot start`,
      };
    }
  }

  for (const id of world.jobIds) {
    const job = world.job(id);
    if (!job) continue;
    const holder = slotHolderOf(job);
    if ((job.status === 'failed' || job.status === 'canceled') && !slots.held.has(holder)) {
      const running = provider.runningFor(holder);
      if (running.length > 0) {
        yield {
          invariant: 'slotKeptWhileProviderRuns',
          jobId: id,
          detail: `${job.status} with its slot free while provider job ${running.map((r) => r.id).join(', ')} runs`,
        };
      }
    }
    const origin = world.outcomeFrom.get(id);
    const originRun = origin ? provider.runs.get(origin) : undefined;
    if (job.providerOutcome && originRun && originRun.holder !== holder) {
      yield {
        invariant: 'outcomeOfCurrentRun',
        jobId: id,
        detail: `outcome ${job.providerOutcome.status} came from ${originRun.id} (submission ${originRun.holder}); the current one is ${holder}`,
      };
    }
  }

  const acceptedBySubmission = new Map<string, number>();
  for (const sent of provider.sent) {
    if (sent.accepted)
      acceptedBySubmission.set(sent.holder, (acceptedBySubmission.get(sent.holder) ?? 0) + 1);
  }
  const submissionsByRecord = new Map<string, number>();
  for (const [holder, count] of acceptedBySubmission) {
    const generation = generationOf(holder);
    submissionsByRecord.set(generation, (submissionsByRecord.get(generation) ?? 0) + 1);
    if (!provider.deduplicates && count > 1) {
      yield {
        invariant: 'oneSubmissionPerRun',
        jobId: jobIdOf(holder),
        detail: `${count} submissions for ${holder}`,
      };
    }
  }
  for (const [generation, submissions] of submissionsByRecord) {
    const allowed = 1 + (world.requeues.get(generation) ?? 0);
    if (submissions > allowed) {
      yield {
        invariant: 'oneSubmissionPerRun',
        jobId: jobIdOf(generation),
        detail: `${submissions} submissions of ${generation} sent; operators requeued it ${allowed - 1} times`,
      };
    }
  }
}

/**
 * The invariants about what one port call did, for the calls of progress
 * ticks: what a tick stored, kept alive or told live clients, against the
 * job as it was when the call took effect.
 */
export function* callInvariants(world: WorldView, call: PortCall): Generator<Breach> {
  const tick = world.ticks.get(call.actor);
  if (!tick || call.fault === 'before') return;
  const job = world.job(tick.run.jobId);
  const current = job ? slotHolderOf(job) : undefined;
  const stored = call.port === 'store' && call.method === 'recordProgressTick' && call.result !== undefined;
  const keptAlive = call.port === 'workflow' && call.method === 'heartbeat' && call.result === true;
  if ((stored || keptAlive) && tick.run.holder !== current) {
    yield {
      invariant: 'progressOfCurrentRun',
      jobId: tick.run.jobId,
      detail: `a tick of ${tick.run.id} (submission ${tick.run.holder}) ${stored ? 'raised the stored progress' : 'heartbeat the waiting step'} of ${current ?? 'no job'}`,
    };
  }
  if (call.port === 'live' && call.method === 'publish') {
    const message = call.args[0] as LiveMessage;
    // A tick inside the interval after the environment last asked storage streams what it learned
    // then: a job not running now must have entered its status more than an interval before the
    // message for the claim to be stale beyond that.
    if (
      message.type === 'progress' &&
      message.status === 'running' &&
      tick.statusOnArrival !== 'running' &&
      job?.status !== 'running' &&
      (job === undefined ||
        Date.parse(job.statusAt) <= Date.parse(message.at) - world.progressMemory.intervalMs)
    ) {
      yield {
        invariant: 'liveStatusTrue',
        jobId: tick.run.jobId,
        detail: `a tick of ${tick.run.id} told live clients running; the job was ${tick.statusOnArrival ?? 'absent'} when it arrived and is ${job?.status ?? 'absent'}`,
      };
    }
  }
}

/** After the quiet phase: every job settled and every slot free. */
export function* convergence(world: WorldView): Generator<Breach> {
  for (const id of world.jobIds) {
    const job = world.job(id);
    if (job && !isTerminal(job.status) && job.status !== 'needs_review') {
      yield {
        invariant: 'convergence',
        jobId: id,
        detail: `still ${job.status} after the reconciler passes`,
      };
    }
  }
  for (const holder of world.slots.held) {
    yield {
      invariant: 'convergence',
      jobId: jobIdOf(holder),
      detail: `slot ${holder} still held after the reconciler passes (job ${world.job(jobIdOf(holder))?.status ?? 'gone'})`,
    };
  }
}
