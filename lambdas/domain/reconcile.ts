import { FIX_KINDS } from '../../config/metrics';
import { handOffFreeSlot } from './dispatch';
import { executionNameOf, isTerminal, type Job } from './job';
import type { ActiveStatus, JobQueue, JobStore, SlotPool, Timeline, Workflow } from './ports';
import type { Provider } from './provider';
import { resumeAwait } from './workflow';

/**
 * The reconciler: one pass over the active jobs (the sparse index, so its cost
 * grows with active jobs, never with history) that moves each one toward its
 * true state whatever events were lost or whatever process crashed. Every
 * action is a conditional write or an idempotent call, so two overlapping
 * passes do no harm; every fix is counted and written to the job's timeline.
 */

export { FIX_KINDS };
export type FixKind = (typeof FIX_KINDS)[number];

export interface ReconcileDeps {
  readonly store: JobStore;
  readonly slots: SlotPool;
  readonly workflow: Workflow;
  readonly queue: JobQueue;
  readonly provider: Provider;
  readonly timeline: Timeline;
  readonly now: () => Date;
  readonly maxInFlight: number;
  readonly queuedGraceMs: number;
  readonly jobTimeoutMs: number;
  /** A deferred message may be delayed this long; no sign of life within grace + this means it is lost. */
  readonly slotWaitMaxSeconds: number;
  readonly pageSize: number;
}

export interface ReconcileReport {
  /** Index items read: the pass's cost, which must not grow with finished jobs. */
  itemsRead: number;
  jobsChecked: number;
  fixes: Record<FixKind, number>;
  /** Jobs this pass sent to review, by job type. */
  reviewedByType: Record<string, number>;
  /** Slots held when the pass began: the in-flight gauge. */
  inFlight: number;
  /** Jobs in review that the pass saw. */
  inReview: number;
  errors: number;
}

const ACTIVE: readonly ActiveStatus[] = ['queued', 'running', 'needs_review'];

export async function reconcile(
  deps: ReconcileDeps,
  onError: (job: string, error: unknown) => void = () => {},
) {
  const report: ReconcileReport = {
    itemsRead: 0,
    jobsChecked: 0,
    fixes: Object.fromEntries(FIX_KINDS.map((kind) => [kind, 0])) as Record<FixKind, number>,
    reviewedByType: {},
    inFlight: 0,
    inReview: 0,
    errors: 0,
  };
  const fix = async (job: Pick<Job, 'id'> & Partial<Pick<Job, 'type'>>, kind: FixKind, detail?: string) => {
    report.fixes[kind]++;
    if ((kind === 'reviewed' || kind === 'timed_out') && job.type) {
      report.reviewedByType[job.type] = (report.reviewedByType[job.type] ?? 0) + 1;
    }
    await deps.timeline.record(job.id, {
      at: deps.now().toISOString(),
      type: `reconciler.${kind}`,
      ...(detail ? { detail } : {}),
    });
  };
  const holders = new Set(await deps.slots.holders());
  report.inFlight = holders.size;
  const seen = new Set<string>();

  for (const status of ACTIVE) {
    let cursor: string | undefined;
    do {
      const page = await deps.store.listActive(status, {
        limit: deps.pageSize,
        ...(cursor ? { cursor } : {}),
      });
      report.itemsRead += page.itemsRead;
      for (const job of page.items) {
        seen.add(job.id);
        report.jobsChecked++;
        if (job.status === 'needs_review') report.inReview++;
        try {
          await reconcileJob(deps, job, holders.has(job.id), fix);
        } catch (error) {
          report.errors++;
          onError(job.id, error);
        }
      }
      cursor = page.nextCursor ?? undefined;
    } while (cursor);
  }

  // Slots whose holder finished, vanished, or never got going.
  for (const jobId of holders) {
    if (seen.has(jobId)) continue;
    try {
      const job = await deps.store.get(jobId);
      report.itemsRead++;
      if (!job || isTerminal(job.status)) {
        if (await deps.slots.release(jobId)) await fix({ id: jobId }, 'slot_released', 'holder finished');
      }
    } catch (error) {
      report.errors++;
      onError(jobId, error);
    }
  }

  // Slots this pass freed go to the jobs that waited longest, as a release step's do.
  try {
    for (let freed = report.fixes.slot_released; freed > 0; freed--) {
      const next = await handOffFreeSlot(deps);
      if (!next) break;
      await deps.timeline.record(next, {
        at: deps.now().toISOString(),
        type: 'slot.received',
        detail: 'a slot the reconciler freed',
      });
    }
  } catch (error) {
    report.errors++;
    onError('slot hand-off', error);
  }
  return report;
}

type Fix = (
  job: Pick<Job, 'id'> & Partial<Pick<Job, 'type'>>,
  kind: FixKind,
  detail?: string,
) => Promise<void>;

async function reconcileJob(deps: ReconcileDeps, job: Job, holdsSlot: boolean, fix: Fix): Promise<void> {
  const now = deps.now();
  if (job.status === 'queued') return reconcileQueued(deps, job, holdsSlot, now, fix);
  if (job.status === 'running') return reconcileRunning(deps, job, now, fix);
  // In review: an ambiguous submission keeps its slot while the provider might
  // still be running it; once the job timeout has passed, it cannot be.
  const since = Date.parse(job.submitIntent?.at ?? job.statusAt);
  if (holdsSlot && now.getTime() - since > deps.jobTimeoutMs && (await deps.slots.release(job.id))) {
    await fix(job, 'slot_released', 'the provider cannot still be running this job');
  }
}

async function reconcileQueued(deps: ReconcileDeps, job: Job, holdsSlot: boolean, now: Date, fix: Fix) {
  const lastSignOfLife = Math.max(Date.parse(job.statusAt), Date.parse(job.enqueuedAt ?? job.statusAt));
  if (now.getTime() - lastSignOfLife < deps.queuedGraceMs + deps.slotWaitMaxSeconds * 1000) return;
  const execution = await deps.workflow.status(executionNameOf(job));
  if (execution === 'RUNNING') return; // started; its first step moves the job on
  let current: Job | undefined = job;
  if (execution !== 'NOT_FOUND') {
    // Its execution ended without starting it (e.g. stopped): the next one needs a new name.
    current = await deps.store.recordNewRun(job, now);
    if (!current) return; // another pass got there first
  }
  // A dispatcher that took a slot and then lost its message: free it, the new message takes one again.
  if (holdsSlot) await deps.slots.release(job.id);
  await deps.queue.enqueue(job.id);
  await deps.store.touchEnqueued(job.id, now);
  await fix(
    job,
    'requeued',
    execution === 'NOT_FOUND' ? 'no execution and no sign of its message' : `execution ${execution}`,
  );
}

async function reconcileRunning(deps: ReconcileDeps, job: Job, now: Date, fix: Fix) {
  const executionName = job.executionName ?? executionNameOf(job);
  const execution = await deps.workflow.status(executionName);

  if (execution !== 'RUNNING') {
    // The workflow ended (or never began) without settling the job.
    if (job.submitIntent && !job.providerJobId && !deps.provider.deduplicates) {
      const moved = await deps.store.transition(
        job,
        ['running'],
        {
          status: 'needs_review',
          error: {
            code: 'ambiguous_submission',
            message: 'The workflow ended after a submission with an unknown outcome.',
          },
        },
        now,
      );
      if (moved) await fix(job, 'reviewed', `execution ${execution} after an ambiguous submission`);
      return;
    }
    // Every step is safe to repeat: a new run picks up where the job is
    // (a recorded provider job is not submitted again).
    if (!(await deps.slots.acquire(job.id, deps.maxInFlight))) return; // no slot yet; next pass
    const next = await deps.store.recordNewRun(job, now);
    if (!next) return;
    await deps.workflow.start(executionNameOf(next), { jobId: job.id });
    await fix(job, 'restarted', `execution ${execution}`);
    return;
  }

  if (job.startedAt && now.getTime() - Date.parse(job.startedAt) > deps.jobTimeoutMs) {
    const moved = await deps.store.transition(
      job,
      ['running'],
      {
        status: 'needs_review',
        error: { code: 'job_timeout', message: `Still running after ${deps.jobTimeoutMs} ms; stopped.` },
      },
      now,
    );
    if (!moved) return;
    await deps.workflow.stop(executionName, 'Job timeout passed; sent to review.');
    if (job.providerJobId) {
      try {
        await deps.provider.cancel(job.providerJobId);
        await deps.slots.release(job.id);
      } catch {
        // Keep the slot while the provider may still run it; released once it cannot.
      }
    }
    await fix(job, 'timed_out');
    return;
  }

  // Waiting on the provider: ask it, in case its completion webhook was lost.
  if (job.providerJobId && job.taskToken && !job.providerOutcome) {
    const remote = await deps.provider.status(job.providerJobId);
    if (remote.status === 'succeeded' || remote.status === 'failed' || remote.status === 'canceled') {
      const updated = await deps.store.recordProviderOutcome(job.id, {
        status: remote.status,
        ...(remote.error ? { error: remote.error } : {}),
        at: now.toISOString(),
      });
      if (updated?.providerOutcome && updated.taskToken) {
        await resumeAwait(deps.workflow, updated.taskToken, updated.providerOutcome);
        await fix(job, 'completed_from_provider', `provider says ${remote.status}`);
      }
      return;
    }
    // Still running there: keep the waiting step's heartbeat alive.
    await deps.workflow.heartbeat(job.taskToken);
  }
}
