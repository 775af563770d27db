import type fc from 'fast-check';
import { convergence, INVARIANTS } from './invariants';
import type { Action, Workload } from './workloads';
import { World } from './world';

/** Quiet-phase rounds: each jumps the clock past every timeout and runs one reconciler pass. */
const QUIET_ROUNDS = 6;

/**
 * Runs one workload: every job is submitted, every action starts when the
 * scheduler says, and then faults stop and the world is left to settle.
 */
export async function explore(scheduler: fc.Scheduler, workload: Workload): Promise<World> {
  const world = new World(scheduler, workload.world);
  for (let job = 0; job < workload.world.jobs; job++) void world.submit(job);
  for (const { after, action } of workload.actions)
    void later(world, after).then(() => perform(world, action));
  await scheduler.waitIdle();
  await world.quiesce(QUIET_ROUNDS);
  return world;
}

async function later(world: World, points: number): Promise<void> {
  for (let i = 0; i < points; i++) await world.scheduler.schedule(Promise.resolve(), 'time passes');
}

function perform(world: World, action: Action): Promise<unknown> {
  const jobIndex = 'job' in action ? action.job % world.options.jobs : 0;
  const jobId = world.jobIds[jobIndex] ?? '';
  switch (action.kind) {
    case 'submit':
      return world.submit(jobIndex);
    case 'cancel':
      return world.cancel(jobIndex, action.crashAfter);
    case 'resolve':
      return world.resolve(jobIndex, action.outcome);
    case 'reconcile':
      return world.reconcilePass(action.crashAfter);
    case 'resume':
      return world.resume(jobIndex, action);
    default:
      // Whatever the action looks at is read when it happens, not when the workload was written.
      return world.scheduler.schedule(Promise.resolve(), label(action)).then(() => {
        switch (action.kind) {
          case 'redeliver':
            return world.redeliver(jobIndex, action.crashAfter);
          case 'webhook':
            return world.webhook(jobIndex, action.run, action.outcome, action.times);
          case 'progress':
            return world.progress(jobIndex, action.run, action.progress);
          case 'stepRetry':
            return world.stepFunctions.duplicateNextInvoke(jobId, action.step);
          case 'throttle':
            return world.stepFunctions.throttle(jobId, action.step, action.times);
          case 'crash':
            return world.stepFunctions.crash(jobId, action.closeExecution);
          case 'missHeartbeat':
            return world.stepFunctions.missHeartbeat(jobId);
          case 'portFault':
            return world.faults.arm(action);
          case 'providerFault':
            return action.fault === 'cancel'
              ? world.provider.failNextCancel()
              : world.provider.failNextSubmit(action.fault);
          case 'expire':
            return world.expireAndResubmit(jobIndex);
          case 'tick':
            return world.advance(action.ms);
          case 'failStep':
            return world.stepFunctions.failNextInvoke(jobId, action.step);
        }
      });
  }
}

const label = (action: Action) =>
  Object.entries(action)
    .map(([key, value]) => (key === 'kind' ? value : `${key}=${value}`))
    .join(' ');

/** Everything wrong with a finished run, as one message; undefined when it kept every promise. */
export function verdict(world: World): string | undefined {
  const defects = [...world.defects, ...world.stepFunctions.defects];
  if (defects.length > 0) return `The harness broke: ${String(defects[0])}`;
  const breaches = [
    ...world.violations,
    ...[...convergence(world)].map((breach) => ({ ...breach, trail: world.trail.slice(-30) })),
  ];
  const first = breaches[0];
  if (!first) return undefined;
  return [
    `Broken: ${INVARIANTS[first.invariant]}`,
    `  job ${first.jobId}: ${first.detail}`,
    ...breaches.slice(1).map((b) => `  also (${b.invariant}) job ${b.jobId}: ${b.detail}`),
    `  faults that fired: ${world.faults.fired.join('; ') || 'none'}`,
    '  port calls leading there:',
    ...first.trail.map((line) => `    ${line}`),
  ].join('\n');
}
