import { executionNameOf, isTerminal, providerKeyOf } from '../../../../lambdas/domain/job';
import type { World } from './world';

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
} as const;
export type Invariant = keyof typeof INVARIANTS;

export interface Breach {
  readonly invariant: Invariant;
  readonly jobId: string;
  readonly detail: string;
}

/**
 * The invariants that hold after every port call. Capacity is counted at the
 * provider: a job uses one unit while it holds a slot, and one per provider
 * job of it still running (more than one is a slot the limit did not see).
 */
export function* stepInvariants(world: World): Generator<Breach> {
  const { provider, slots } = world;
  const limit = world.settings.maxInFlight;
  const ids = new Set([...world.jobIds, ...slots.held]);
  let inUse = 0;
  for (const id of ids) inUse += Math.max(slots.held.has(id) ? 1 : 0, provider.running(id).length);
  if (inUse > limit) {
    yield {
      invariant: 'slotLimit',
      jobId: '*',
      detail: `${inUse} runs use provider capacity; the limit is ${limit}`,
    };
  }

  for (const id of slots.held) {
    const job = world.job(id);
    if (!job) {
      yield { invariant: 'slotLimit', jobId: id, detail: 'a slot is held for a job that no longer exists' };
      continue;
    }
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
    const key = providerKeyOf(job);
    if ((job.status === 'failed' || job.status === 'canceled') && !slots.held.has(id)) {
      const running = provider.running(id, key);
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
    if (job.providerOutcome && originRun && originRun.key !== key) {
      yield {
        invariant: 'outcomeOfCurrentRun',
        jobId: id,
        detail: `outcome ${job.providerOutcome.status} came from ${originRun.id} (key ${originRun.key}); the current run's key is ${key}`,
      };
    }
  }

  const acceptedByKey = new Map<string, number>();
  for (const sent of provider.sent) {
    if (sent.accepted) acceptedByKey.set(sent.key, (acceptedByKey.get(sent.key) ?? 0) + 1);
  }
  const keysByJob = new Map<string, number>();
  for (const [key, count] of acceptedByKey) {
    const jobId = key.split(':')[0] ?? key;
    keysByJob.set(jobId, (keysByJob.get(jobId) ?? 0) + 1);
    if (!provider.deduplicates && count > 1) {
      yield { invariant: 'oneSubmissionPerRun', jobId, detail: `${count} submissions under key ${key}` };
    }
  }
  for (const [jobId, keys] of keysByJob) {
    const allowed = 1 + (world.requeues.get(jobId) ?? 0);
    if (keys > allowed) {
      yield {
        invariant: 'oneSubmissionPerRun',
        jobId,
        detail: `${keys} provider keys used; operators requeued it ${allowed - 1} times`,
      };
    }
  }
}

/** After the quiet phase: every job settled and every slot free. */
export function* convergence(world: World): Generator<Breach> {
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
  for (const id of world.slots.held) {
    yield {
      invariant: 'convergence',
      jobId: id,
      detail: `slot still held after the reconciler passes (job ${world.job(id)?.status ?? 'gone'})`,
    };
  }
}
