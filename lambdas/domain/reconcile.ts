import { jobTypeModule } from '../../config/job-types';
import { FIX_KINDS, type TENANT_USAGE_LOG } from '../../config/metrics';
import { LEGACY_PROVIDER, PROVIDER_NAMES, PROVIDERS, type ProviderName } from '../../config/providers';
import { StepError } from '../../config/workflow-errors';
import { childSettled } from './children';
import { resumeParent } from './chunk-jobs';
import { mapWithConcurrency } from './concurrency';
import { grantedNotStarted, handOnFreeSlots, startJob } from './dispatch';
import { discardVectors } from './embedding';
import { JOB_CANCELED_CAUSE, JobAlreadyFinishedError, ProviderDownError } from './errors';
import { type EventDeps, publishJobEvent } from './events';
import { waitingEntryOf } from './fair-share';
import { cancelChildren, cancelMadeChild, enterLines } from './intake';
import {
  currentExecutionOf,
  executionNameOf,
  goesOn,
  isCanceling,
  isTerminal,
  type Job,
  jobIdOf,
  providerMayBeRunning,
  providerOf,
  takesSlot,
} from './job';
import type {
  ActiveStatus,
  EnqueueOptions,
  InFlightLimits,
  JobQueue,
  JobStore,
  OutputStore,
  ReconcilerPosition,
  ReconcilerProgress,
  SlotPools,
  TenantBacklogs,
  TenantShares,
  Timeline,
  VectorIndex,
  WaitingLines,
  Workflow,
} from './ports';
import type { Provider } from './provider';
import { resumeAwait } from './provider-events';
import { isPaused } from './provider-pauses';
import { discardOutputs } from './publish';
import { RESUME_REDRIVE_WINDOW_MS, resumeRefusalOf } from './resume';
import { queryLeaseEndOf } from './search';
import {
  holdsOwnSlot,
  isOwnSlot,
  ownHolders,
  releaseOwnSlot,
  resumeTokenOf,
  slotRedriveTokenOf,
  waitsForSlotBack,
} from './slots';
import { endMissedStart, missedStartBy } from './start-deadline';
import { providerDeps, stopAtProvider } from './workflow';

/**
 * The reconciler: one pass over the active jobs (the sparse index, so its cost
 * grows with active jobs, never with history) that moves each one toward its
 * true state whatever events were lost or whatever process crashed. Every
 * action is a conditional write or an idempotent call, so two overlapping
 * passes do no harm; every fix is counted and written to the job's timeline.
 */

export { FIX_KINDS };
export type FixKind = (typeof FIX_KINDS)[number];

export interface ReconcileDeps extends EventDeps {
  readonly store: JobStore;
  readonly slots: SlotPools;
  readonly workflow: Workflow;
  readonly queue: JobQueue;
  /** Each tenant's line of waiting jobs: a slot a pass frees goes to the job whose turn it is. */
  readonly waiting: WaitingLines;
  readonly tenantShares: TenantShares;
  /** Each provider's adapter, built from its secret. */
  readonly providers: (name: ProviderName) => Promise<Provider>;
  readonly timeline: Timeline;
  /** What jobs derived, which the orphan sweep removes for a failed, canceled or vanished publish. */
  readonly outputs: Pick<OutputStore, 'getOutput' | 'deleteOutputs'>;
  readonly vectors: Pick<VectorIndex, 'delete'>;
  readonly now: () => Date;
  readonly maxInFlight: InFlightLimits;
  readonly queuedGraceMs: number;
  /** How long a job may run at its provider, unless its job type says otherwise. */
  readonly jobTimeoutMs: number;
  /** A deferred message may be delayed this long; no sign of life within grace + this means it is lost. */
  readonly slotWaitMaxSeconds: number;
  readonly pageSize: number;
  /**
   * Time a pass may spend on the active jobs. A pass that runs out saves
   * where it stopped and the next goes on from there, so under a large
   * backlog every job is reached in turn, not only the first pages.
   */
  readonly budgetMs: number;
  readonly progress: ReconcilerProgress;
  /** Tenants' backlog counters, which each pass recounts a few of (`recountBacklogs`). */
  readonly backlogs: TenantBacklogs;
  /** How a due scheduled job's message goes, as intake's for a new job (`firstLookOf`). */
  readonly firstLook: (job: Job) => Promise<EnqueueOptions>;
  /** Due scheduled jobs one pass moves to `queued` (SCHEDULE_PROMOTIONS_PER_PASS); the rest wait for the next. */
  readonly promotionsPerPass: number;
}

/** Tenants whose backlog one pass recounts: each costs a count of its queued and scheduled jobs. */
export const BACKLOG_RECOUNTS_PER_PASS = 20;

/**
 * One tenant's jobs as a pass found them, what operators see per tenant: its
 * queued and scheduled jobs, and the slots it holds summed over the providers.
 */
export type TenantUsageLine = { readonly tenant: string } & {
  readonly [field in Exclude<(typeof TENANT_USAGE_LOG.fields)[number], 'tenant'>]: number;
};

export interface ReconcileReport {
  /** Index items read: the pass's cost, which must not grow with finished jobs. */
  itemsRead: number;
  jobsChecked: number;
  fixes: Record<FixKind, number>;
  /** Jobs this pass sent to review, by job type. */
  reviewedByType: Record<string, number>;
  /** Slots held when the pass began: the in-flight gauge. */
  inFlight: number;
  /** The same, per provider. */
  inFlightByProvider: Record<ProviderName, number>;
  /** The providers whose grants were paused when the pass read their pools. */
  pausedProviders: ProviderName[];
  /** Jobs in review that the pass saw. */
  inReview: number;
  errors: number;
  /** Whether the pass reached the last active job; if not, the next goes on where it stopped. */
  complete: boolean;
  /** The tenants whose backlog this pass recounted. */
  tenants: TenantUsageLine[];
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
    inFlightByProvider: Object.fromEntries(PROVIDER_NAMES.map((name) => [name, 0])) as Record<
      ProviderName,
      number
    >,
    pausedProviders: [],
    inReview: 0,
    errors: 0,
    complete: true,
    tenants: [],
  };
  const freed = new Map<ProviderName, number>();
  const fix: Fix = async (job, kind, detail) => {
    report.fixes[kind]++;
    if (kind === 'slot_released') freed.set(providerOf(job), (freed.get(providerOf(job)) ?? 0) + 1);
    // A search's slot has no job and no timeline: counted, and handed on, only.
    if (queryLeaseEndOf(job.id) !== undefined) return;
    if ((kind === 'reviewed' || kind === 'timed_out') && job.type) {
      report.reviewedByType[job.type] = (report.reviewedByType[job.type] ?? 0) + 1;
    }
    await deps.timeline.record(job.id, {
      at: deps.now().toISOString(),
      type: `reconciler.${kind}`,
      ...(detail ? { detail } : {}),
    });
  };
  const holders = new Map<ProviderName, Set<string>>();
  const tenantInFlight = new Map<string, number>();
  for (const provider of PROVIDER_NAMES) {
    const state = await deps.slots(provider).state();
    const held = new Set(state.holders);
    for (const [tenant, count] of Object.entries(state.tenantInFlight)) {
      tenantInFlight.set(tenant, (tenantInFlight.get(tenant) ?? 0) + count);
    }
    holders.set(provider, held);
    report.inFlightByProvider[provider] = held.size;
    report.inFlight += held.size;
    if (isPaused(state, deps.now())) report.pausedProviders.push(provider);
  }
  const seen = new Set<string>();
  /** The tenants of the queued jobs this pass walks: each has a backlog, so it belongs on the recount list. */
  const queuedTenants = new Set<string>();

  // Scheduled jobs now due go first: a pass's period is all the lateness they may have.
  try {
    await promoteDue(deps, fix, report, onError);
  } catch (error) {
    report.errors++;
    onError('promoting due scheduled jobs', error);
  }

  const startedAt = deps.now().getTime();
  const resumeAt = await deps.progress.load();
  const listings = PROVIDER_NAMES.flatMap((provider) => ACTIVE.map((status) => ({ provider, status })));
  const resumeIndex = resumeAt
    ? listings.findIndex(
        (l) => l.provider === (resumeAt.provider ?? LEGACY_PROVIDER) && l.status === resumeAt.status,
      )
    : 0;
  let stoppedAt: ReconcilerPosition | undefined;
  scan: for (const [index, { provider, status }] of listings.entries()) {
    if (index < resumeIndex) continue;
    let cursor = index === resumeIndex ? resumeAt?.cursor : undefined;
    do {
      if (deps.now().getTime() - startedAt > deps.budgetMs) {
        stoppedAt = { provider, status, ...(cursor ? { cursor } : {}) };
        report.complete = false;
        break scan;
      }
      const page = await deps.store.listActive(provider, status, {
        limit: deps.pageSize,
        ...(cursor ? { cursor } : {}),
      });
      report.itemsRead += page.itemsRead;
      try {
        report.itemsRead += await cancelOrphans(deps, page.items, fix);
      } catch (error) {
        report.errors++;
        onError('canceling orphaned child jobs', error);
      }
      for (const job of page.items) {
        for (const holder of ownHolders(job)) seen.add(holder);
        if (job.status === 'queued') queuedTenants.add(job.tenantId);
        report.jobsChecked++;
        if (job.status === 'needs_review') report.inReview++;
        try {
          await reconcileJob(deps, job, holdsOwnSlot(holders.get(providerOf(job)) ?? new Set(), job), fix);
        } catch (error) {
          report.errors++;
          onError(job.id, error);
        }
      }
      cursor = page.nextCursor ?? undefined;
    } while (cursor);
  }
  await deps.progress.save(stoppedAt);

  // Slots whose holder finished, vanished, was replaced, or never got going.
  for (const [provider, held] of holders) {
    for (const holder of held) {
      if (seen.has(holder)) continue;
      try {
        report.itemsRead++;
        await reconcileHolder(deps, provider, holder, fix);
      } catch (error) {
        report.errors++;
        onError(jobIdOf(holder), error);
      }
    }
  }

  // Slots this pass freed go to the jobs that waited longest at the same provider, as a release step's do.
  for (const [provider, count] of freed) {
    try {
      await handOnFreeSlots(deps, provider, 'a slot the reconciler freed', count);
    } catch (error) {
      report.errors++;
      onError('slot hand-off', error);
    }
  }

  try {
    for (const recount of await recountBacklogs(deps, queuedTenants)) {
      if (recount.corrected) report.fixes.backlog_recounted++;
      const { tenant, queued, scheduled } = recount;
      report.tenants.push({ tenant, queued, scheduled, inFlight: tenantInFlight.get(tenant) ?? 0 });
    }
  } catch (error) {
    report.errors++;
    onError('recounting backlogs', error);
  }
  return report;
}

/** Due jobs whose move to `queued` is in flight at once. */
const PROMOTIONS_AT_ONCE = 25;

/**
 * Moves the scheduled jobs now due (the due index, earliest first, at most
 * `promotionsPerPass`) to `queued`, each by a conditional write from
 * `scheduled`, so of two overlapping passes only one moves a job and only
 * that one sends it; then sends them as intake sends new jobs (`enterLines`:
 * into their lines, one first look per provider, batched messages). A pass
 * that stops between the two leaves a `queued` job with no message, which
 * the queued repair (`reconcileQueued`) re-enqueues once its grace has passed,
 * as it does for intake's lost messages. The job stays in its tenant's
 * backlog throughout: `queued` counts as `scheduled` did.
 */
async function promoteDue(
  deps: ReconcileDeps,
  fix: Fix,
  report: ReconcileReport,
  onError: (job: string, error: unknown) => void,
): Promise<void> {
  const now = deps.now();
  const due = await deps.store.listDue(now, deps.promotionsPerPass);
  report.itemsRead += due.length;
  const promoted: Job[] = [];
  await mapWithConcurrency(due, PROMOTIONS_AT_ONCE, async (job) => {
    try {
      const moved = await deps.store.transition(job, ['scheduled'], { status: 'queued' }, now);
      if (!moved) return; // canceled, or moved by an overlapping pass
      promoted.push(moved);
      await fix(moved, 'promoted', `due at ${moved.runAt}`);
    } catch (error) {
      report.errors++;
      onError(job.id, error);
    }
  });
  // A job whose message fails here is answered with its error by enterLines and left to the queued repair.
  await enterLines(
    deps,
    promoted.sort((a, b) => (a.runAt ?? '').localeCompare(b.runAt ?? '')),
  );
}

/**
 * Recounts the backlog counters of up to BACKLOG_RECOUNTS_PER_PASS tenants,
 * taking each tenant in turn from one pass to the next (by the pass's
 * minute), so a counter a crash left off is set right within
 * (tenants / BACKLOG_RECOUNTS_PER_PASS + 1) minutes of passes. The
 * tenants of the queued jobs the pass walked join the list first if a stop
 * left them off it.
 */
async function recountBacklogs(deps: ReconcileDeps, queuedTenants: ReadonlySet<string>) {
  const tenants = await deps.backlogs.tenants();
  // A stop between a raise from 0 and its listing leaves a backlog off the list: listed again here, recounted from then on.
  const unlisted = [...queuedTenants].filter((tenant) => !tenants.includes(tenant));
  await deps.backlogs.list(unlisted);
  const turn = Math.floor(deps.now().getTime() / 60_000) * BACKLOG_RECOUNTS_PER_PASS;
  const chosen =
    tenants.length <= BACKLOG_RECOUNTS_PER_PASS
      ? tenants
      : Array.from(
          { length: BACKLOG_RECOUNTS_PER_PASS },
          (_, i) => tenants[(turn + i) % tenants.length] as string,
        );
  const recounts = [];
  for (const tenant of chosen) recounts.push(await deps.backlogs.recount(tenant));
  return recounts;
}

/**
 * A slot held by no job the active index listed: its job finished, vanished,
 * or was given a new submission. The slot goes once the provider cannot be
 * running what it was held for; a cancel whose word to the waiting step was
 * lost is sent again, and a provider job left running by a cancel is asked to
 * stop again, where the provider can stop jobs.
 */
async function reconcileHolder(
  deps: ReconcileDeps,
  provider: ProviderName,
  holder: string,
  fix: Fix,
): Promise<void> {
  const leaseEnd = queryLeaseEndOf(holder);
  if (leaseEnd !== undefined) {
    // A search's slot: its query is over long before its lease ends, unless its function died mid-call.
    if (deps.now().getTime() > leaseEnd && (await deps.slots(provider).release(holder))) {
      await fix({ id: holder, provider }, 'slot_released', "a search's lease ended");
    }
    return;
  }
  const job = await deps.store.get(jobIdOf(holder));
  const release = async (detail: string) => {
    if (await deps.slots(provider).release(holder, job?.tenantId))
      await fix({ id: jobIdOf(holder), provider }, 'slot_released', detail);
  };
  if (!job || providerOf(job) !== provider) return release('holder vanished');
  if (!isOwnSlot(holder, job)) return release('an earlier submission of the job');
  if (!isTerminal(job.status)) return; // listed late by the index; the next pass sees it
  if (job.taskToken && (await deps.workflow.status(currentExecutionOf(job))) === 'RUNNING') {
    // Its waiting step never heard of the cancel: tell it again; its settle path frees the slot.
    if (job.status === 'canceled') {
      await deps.workflow.failTask(job.taskToken, StepError.jobCanceled, JOB_CANCELED_CAUSE);
    }
    return;
  }
  if (!providerMayBeRunning(job)) return release('holder finished');
  if (job.providerJobId && PROVIDERS[provider].cancels) {
    try {
      await stopAtProvider(await providerDeps(deps, job), job, job.providerJobId);
    } catch {
      return; // not confirmed; the next pass asks again
    }
    return release('the provider confirmed the stop');
  }
  if (outlivedJobTimeout(deps, job, deps.now()))
    return release('the provider cannot still be running this job');
}

/** How long the job may run at its provider: its type's timeout, or the deployment's. */
const timeoutOf = (deps: Pick<ReconcileDeps, 'jobTimeoutMs'>, job: Pick<Job, 'type'>): number =>
  jobTypeModule(job.type).timeoutMs ?? deps.jobTimeoutMs;

/**
 * Whether the provider cannot be running the job any more by the clock alone:
 * the job timeout bounds a job's time at its provider, and it has passed
 * since the submission. That is all there is to go by for a submission whose
 * outcome is unknown, and for a job at a provider that cannot stop jobs
 * (Deepgram), whose end is never heard of if its callback is lost. A provider
 * that can stop jobs is asked to, and its confirmation counts instead. The
 * submission went out at its intent; an accepted job's id was recorded, so
 * it was last updated, after its provider accepted it.
 */
function outlivedJobTimeout(deps: Pick<ReconcileDeps, 'jobTimeoutMs'>, job: Job, now: Date): boolean {
  if (job.providerJobId !== undefined && PROVIDERS[providerOf(job)].cancels) return false;
  const since = Date.parse(
    job.submitIntent?.at ?? (job.providerJobId !== undefined ? job.updatedAt : job.statusAt),
  );
  return now.getTime() - since > timeoutOf(deps, job);
}

type Fix = (
  job: Pick<Job, 'id'> & Partial<Pick<Job, 'type' | 'provider'>>,
  kind: FixKind,
  detail?: string,
) => Promise<void>;

async function reconcileJob(deps: ReconcileDeps, job: Job, holdsSlot: boolean, fix: Fix): Promise<void> {
  const now = deps.now();
  if (job.status === 'queued') return reconcileQueued(deps, job, holdsSlot, now, fix);
  if (job.status === 'running') return reconcileRunning(deps, job, holdsSlot, now, fix);
  return reconcileInReview(deps, job, holdsSlot, now, fix);
}

/**
 * In review the job waits for a person, but its slot follows the provider: it
 * is held while the provider may be running the job and freed once it cannot
 * be. A provider job on record is asked how it ended, and the answer is kept
 * on the job as the evidence the operator decides on; a provider that cannot
 * answer (Deepgram without a project to read) fails the pass for this job,
 * but only after its slot has had its turn with the clock.
 */
async function reconcileInReview(deps: ReconcileDeps, listed: Job, holdsSlot: boolean, now: Date, fix: Fix) {
  let job = listed;
  let unanswered: { readonly error: unknown } | undefined;
  if (job.providerJobId && !job.providerOutcome) {
    const remote = await (await deps.providers(providerOf(job))).status(job.providerJobId).catch((error) => {
      unanswered = { error };
      return undefined;
    });
    if (remote?.status === 'succeeded' || remote?.status === 'failed' || remote?.status === 'canceled') {
      job =
        (await deps.store.recordProviderOutcome(job, {
          status: remote.status,
          ...(remote.error ? { error: remote.error } : {}),
          at: now.toISOString(),
          providerJobId: job.providerJobId,
        })) ?? job;
      await fix(job, 'completed_from_provider', `in review; provider says ${remote.status}`);
    } else if (
      remote &&
      holdsSlot &&
      now.getTime() - Date.parse(job.startedAt ?? job.statusAt) > timeoutOf(deps, job)
    ) {
      try {
        await stopAtProvider(await providerDeps(deps, job), job, job.providerJobId);
        job = (await deps.store.get(job.id)) ?? job;
      } catch {
        // Not confirmed: the slot stays; the next pass asks again.
      }
    }
  }
  // A chunk job in review holds up its parent's wait: a resume the chunk's own workflow missed is made here.
  if (job.parent?.taskToken && (await resumeParent(deps, job))) {
    await fix(job, 'parent_resumed', `chunk ${job.parent.index} of ${job.parent.jobId} is in review`);
  }
  if (holdsSlot) {
    const free =
      (job.providerJobId ? !providerMayBeRunning(job) : !job.submitIntent) ||
      outlivedJobTimeout(deps, job, now);
    // Named by the submission the listing saw: if an operator has requeued the job since, that slot is gone already.
    if (free && (await releaseOwnSlot(deps.slots, job))) {
      await fix(job, 'slot_released', 'the provider cannot still be running this job');
    }
  }
  if (unanswered) throw unanswered.error;
}

async function reconcileQueued(deps: ReconcileDeps, job: Job, holdsSlot: boolean, now: Date, fix: Fix) {
  // A job waiting behind a long pause has no look due before the pause ends: its deadline is kept here.
  if (missedStartBy(job, now)) {
    const ended = await endMissedStart(deps, job);
    if (ended) await fix(ended, 'start_deadline_passed', `its startBy ${job.startBy} passed`);
    return;
  }
  const lastSignOfLife = Math.max(Date.parse(job.statusAt), Date.parse(job.enqueuedAt ?? job.statusAt));
  if (now.getTime() - lastSignOfLife < deps.queuedGraceMs + deps.slotWaitMaxSeconds * 1000) return;
  const execution = await deps.workflow.status(executionNameOf(job));
  if (execution === 'RUNNING') return; // started; its first step moves the job on
  // Only if nothing touched the job since it was read: a message that is merely slow (a
  // dispatcher deferred it meanwhile) must not get a second one beside it.
  if (!(await deps.store.claimRequeue(job, now))) return;
  if (execution !== 'NOT_FOUND') {
    // Its execution ended without starting it (e.g. stopped): the next one needs a new name.
    if (!(await deps.store.recordNewRun(job, now))) return; // another pass got there first
  }
  // A dispatcher that took a slot and then lost its message: free it, the new message takes one again.
  const released = holdsSlot && (await releaseOwnSlot(deps.slots, job));
  await deps.queue.enqueue(job);
  await fix(
    job,
    'requeued',
    execution === 'NOT_FOUND' ? 'no execution and no sign of its message' : `execution ${execution}`,
  );
  // The slot goes to the job whose turn it is, which may be this one.
  if (released) await handOnFreeSlots(deps, providerOf(job), 'a slot the reconciler freed');
}

async function reconcileRunning(deps: ReconcileDeps, job: Job, holdsSlot: boolean, now: Date, fix: Fix) {
  if (!holdsSlot && waitsForSlotBack(job)) {
    // Resumed to a state that ran with its slot, it waits for one in its tenant's line as a queued job
    // does, and its job timeout counts once it has it. Its entry and the hand-off are made again, in case
    // either was lost; its grant redrives its execution (`startJob`).
    await deps.waiting.add(waitingEntryOf(job));
    await handOnFreeSlots(deps, providerOf(job), 'a slot the reconciler found free');
    return;
  }
  const executionName = currentExecutionOf(job);
  const execution = await deps.workflow.status(executionName);

  // The job timeout holds whatever the execution's status. A resumed job's counts from when it went
  // running again (`statusAt`): its resume, or the grant of the slot it waited for.
  const runningSince = job.resumedAt !== undefined ? job.statusAt : job.startedAt;
  if (runningSince && now.getTime() - Date.parse(runningSince) > timeoutOf(deps, job)) {
    const moved = await deps.store.transition(
      job,
      ['running'],
      {
        status: 'needs_review',
        error: { code: 'job_timeout', message: `Still running after ${timeoutOf(deps, job)} ms; stopped.` },
      },
      now,
    );
    if (!moved) return;
    if (execution === 'RUNNING')
      await deps.workflow.stop(executionName, 'Job timeout passed; sent to review.');
    if (job.providerJobId && !job.providerOutcome) {
      try {
        await stopAtProvider(await providerDeps(deps, job), job, job.providerJobId);
      } catch {
        // Keep the slot while the provider may still run it; released once it cannot.
      }
    }
    const current = (await deps.store.get(job.id)) ?? moved;
    const released = !providerMayBeRunning(current) && (await releaseOwnSlot(deps.slots, current));
    // Last: the stops and the slot matter more than the event, which a failure here would leave unput.
    await publishJobEvent(deps, moved);
    await fix(job, 'timed_out');
    if (released) await handOnFreeSlots(deps, providerOf(job), 'a slot the reconciler freed');
    return;
  }

  if (execution === 'NOT_FOUND' && grantedNotStarted(job) && (holdsSlot || !takesSlot(job))) {
    // Given its slot and started in one write, its execution not started yet: its granter's start may
    // be on its way. Once that had time, the start is made here under the same name (the granter's,
    // if it comes after all, is the same execution); a resumed job's goes on as its grant's would.
    if (now.getTime() - Date.parse(job.statusAt) < deps.queuedGraceMs) return;
    await startJob(deps, job);
    await fix(job, 'restarted', 'given its slot, its execution never started');
    return;
  }

  if (
    job.resumedAt &&
    (execution === 'FAILED' || execution === 'ABORTED' || execution === 'TIMED_OUT') &&
    now.getTime() - Date.parse(job.statusAt) < RESUME_REDRIVE_WINDOW_MS
  ) {
    // Resumed, and its execution still where it failed: the resume stopped between its write and its
    // redrive, or the grant of the slot it waited for before its redrive. The same client token makes
    // this that one redrive, whoever makes it first. One that can never be redriven goes on below as
    // any ended execution.
    const token = waitsForSlotBack(job) ? slotRedriveTokenOf(job) : resumeTokenOf(job);
    if ((await deps.workflow.redrive(executionName, token)) !== 'ended') {
      await fix(job, 'redriven', `resume ${job.resumes ?? 1}; execution ${execution}`);
      return;
    }
  }

  if (execution !== 'RUNNING') {
    // The workflow ended (or never began) without settling the job.
    if (job.submitIntent && !job.providerJobId && !(await deps.providers(providerOf(job))).deduplicates) {
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
      if (moved) {
        await publishJobEvent(deps, moved);
        await fix(job, 'reviewed', `execution ${execution} after an ambiguous submission`);
      }
      return;
    }
    // Every step is safe to repeat: a new run picks up where the job is (a
    // recorded provider job is not submitted again) with the same submission,
    // so with the same slot. A resumed job that needs one waited for it in its
    // line above; one the provider has, or has finished, waits for nothing. No
    // slot is taken here: every slot goes by the line, the limit and the
    // tenant's cap. A job that went running otherwise did so with its slot, in
    // the grant's one write, and gives it back only once sent or no longer
    // running; one that seems to hold none was granted after this pass read
    // the pool, and the next pass sees it with its slot.
    if (!holdsSlot && !sentToProvider(job) && takesSlot(job)) return;
    const next = await deps.store.recordNewRun(job, now);
    if (!next) return;
    await deps.workflow.start(executionNameOf(next), { jobId: job.id });
    await fix(job, 'restarted', `execution ${execution}`);
    return;
  }

  if (isCanceling(job) && !takesSlot(job)) return reconcileCanceling(deps, job, fix);
  if (!job.providerJobId || !job.taskToken) return;
  if (job.providerOutcome) {
    // Recorded, but the resume it should have caused was lost (or met a stale token). Resuming twice is harmless.
    if (await resumeAwait(deps.workflow, job.taskToken, job.providerOutcome)) {
      await fix(job, 'completed_from_provider', `recorded outcome ${job.providerOutcome.status} resumed`);
    }
    return;
  }
  // Waiting on the provider: ask it, in case its completion webhook was lost. A provider that throttles or is
  // down says nothing of the job: the waiting step lives on (bounded by the job's own timeout), as it would
  // if the provider said it still runs.
  const remote = await (await deps.providers(providerOf(job))).status(job.providerJobId).catch((error) => {
    if (error instanceof ProviderDownError) return undefined;
    throw error;
  });
  if (!remote) {
    await deps.workflow.heartbeat(job.taskToken);
    return;
  }
  if (remote.status === 'succeeded' || remote.status === 'failed' || remote.status === 'canceled') {
    const updated = await deps.store.recordProviderOutcome(job, {
      status: remote.status,
      ...(remote.error ? { error: remote.error } : {}),
      at: now.toISOString(),
      providerJobId: job.providerJobId,
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

/**
 * Child jobs of the page that still run while their parent cannot want them:
 * the parent is finished, gone, or being canceled (whatever crash came
 * between the parent's end and its children's cancel, or made a child its
 * cancel could not find in the timeline). Each is canceled as its parent's
 * cancel would have, and what a canceled or vanished parent (or a failed one
 * no resume can bring back) derived goes again: such a child may have
 * written under the parent's outputs after the parent's own discard. A
 * failed parent its client may still resume wants its children's paid work:
 * a child already sent to its provider runs on under its own slot, and its
 * transcript, with all the parent derived, stays for the resume (the output
 * bucket's lifecycle expires what no resume comes for); only a child not yet
 * sent is canceled, as it would charge for a job that may never go on.
 * Requests: one batched read of the page's parents
 * (at most a page's worth of keys, none for a page without children), then
 * per orphan a read, a conditional write and, for one whose workflow waits,
 * a task failure; per such parent, once a pass, a read of its vectors'
 * manifest, a listing of its outputs and the deletes of what is there.
 * Answers the parents read, which count among the pass's items read.
 */
async function cancelOrphans(deps: ReconcileDeps, page: readonly Job[], fix: Fix): Promise<number> {
  const children = page.filter((job) => job.parent !== undefined && !isTerminal(job.status));
  if (children.length === 0) return 0;
  const parentIds = [...new Set(children.map((child) => child.parent?.jobId ?? ''))];
  const parents = await deps.store.getMany(parentIds);
  const swept = new Set<string>();
  for (const child of children) {
    const parent = parents.get(child.parent?.jobId ?? '');
    if (parent && goesOn(parent)) continue;
    if (parent?.status === 'needs_review') continue; // an operator decides for the parent, and so for its children
    const resumable = parent?.status === 'failed' && resumeRefusalOf(parent) === undefined;
    if (resumable && sentToProvider(child)) continue;
    const canceled = await cancelMadeChild(deps, child).catch((error: unknown) => {
      if (error instanceof JobAlreadyFinishedError) return undefined;
      throw error;
    });
    if (canceled?.status === 'canceled') {
      await fix(
        child,
        'orphan_canceled',
        `its parent ${child.parent?.jobId} is ${parent ? (isCanceling(parent) ? 'canceling' : parent.status) : 'gone'}`,
      );
    }
    // A canceling parent's own cancel removes what it derived, once its children are settled.
    const source = parent ?? { id: child.parent?.jobId ?? '', tenantId: child.tenantId };
    if (
      (parent && !isTerminal(parent.status)) ||
      parent?.status === 'succeeded' ||
      resumable ||
      swept.has(source.id)
    )
      continue;
    swept.add(source.id);
    const vectors = await discardVectors(deps, source);
    const objects = await discardOutputs(deps.outputs, source);
    if (vectors + objects > 0) {
      await fix(child, 'derived_discarded', `${objects} outputs and ${vectors} vectors of ${source.id}`);
    }
  }
  return parentIds.length;
}

/** Whether a submission of the job went to its provider: it may have been charged. */
const sentToProvider = (job: Job): boolean =>
  job.providerJobId !== undefined || job.submitIntent !== undefined;

/**
 * A publish being canceled: its children not finished yet are canceled (again:
 * one made while its cancel looked), a canceled child its provider may still
 * be running (Deepgram runs a canceled job out) has its provider asked how
 * it stands, in case its callback was lost, and once every one is settled
 * its `await-children` state is woken to finish the cancel, in case the word
 * of the last one's end was lost. Requests: a timeline query and one batched
 * read of its children, a status request and a conditional write per child
 * its provider may be running, and one task failure once they are all settled.
 */
async function reconcileCanceling(deps: ReconcileDeps, job: Job, fix: Fix): Promise<void> {
  const children = await Promise.all(
    (await cancelChildren(deps, job)).map((child) => childAsItsProviderSays(deps, child)),
  );
  if (!job.taskToken || !children.every(childSettled)) return;
  if (
    await deps.workflow.failTask(
      job.taskToken,
      StepError.childSettled,
      '[child_settled] Every child job is settled (found by the reconciler).',
    )
  ) {
    await fix(job, 'parent_resumed', `its ${children.length} child jobs are settled; its cancel finishes`);
  }
}

/**
 * A canceled child whose provider may still be running it, with the outcome
 * its provider reports once it has ended there recorded on it (so it is
 * settled); as it was when the provider has not ended it or cannot say.
 */
async function childAsItsProviderSays(deps: ReconcileDeps, child: Job): Promise<Job> {
  if (child.status !== 'canceled' || !child.providerJobId || child.providerOutcome) return child;
  const providerJobId = child.providerJobId;
  const remote = await (await deps.providers(providerOf(child))).status(providerJobId).catch(() => undefined); // the next pass asks again
  if (remote?.status !== 'succeeded' && remote?.status !== 'failed' && remote?.status !== 'canceled')
    return child;
  const recorded = await deps.store.recordProviderOutcome(child, {
    status: remote.status,
    ...(remote.error ? { error: remote.error } : {}),
    at: deps.now().toISOString(),
    providerJobId,
  });
  return recorded ?? (await deps.store.get(child.id)) ?? child;
}
