import type { ProviderName } from '../../config/providers';
import { chooseTenant, type TenantCandidate, waitingEntryOf } from './fair-share';
import { currentExecutionOf, executionNameOf, type Job, providerOf, slotHolderOf, takesSlot } from './job';
import type {
  EnqueueOptions,
  EventPublisher,
  InFlightLimits,
  JobQueue,
  JobStore,
  SlotGrant,
  SlotGrantOutcome,
  SlotPoolState,
  SlotPools,
  TenantShares,
  Timeline,
  WaitingEntry,
  WaitingLines,
  Workflow,
} from './ports';
import { isPaused, lookAfterPauseSeconds } from './provider-pauses';
import { rateTokenOf, tokenWaitSeconds } from './rates';
import { holdsOwnSlot, resumedSinceStart, slotRedriveTokenOf, waitsForSlotBack } from './slots';
import { endMissedStart, missedStartBy } from './start-deadline';
import { TENANT_DEFAULTS } from './tenants';

export interface DispatchDeps extends FillDeps {
  readonly workflow: Workflow;
  readonly timeline: Timeline;
  /** Cap of the backoff between two looks for a free slot. */
  readonly maxWaitSeconds: number;
  readonly random: () => number;
}

export type DispatchOutcome = 'started' | 'dropped' | 'deferred';

/**
 * Hands a queued job to the workflow once it holds a slot of its provider.
 * A job that holds none joins its tenant's waiting line, and free slots are
 * given out by fair share (`fillFreeSlot`): to this job if its turn has come,
 * else to the jobs whose turn it is, which are started here as well. A job still without
 * a slot goes back to the queue as a new, delayed message (its receive count
 * starts again, so a long peak never pushes it to the dead-letter queue): a
 * fallback, since the slot it waits for is normally handed to it.
 * Duplicate messages and jobs that already started or finished are dropped.
 */
export async function dispatchJob(
  deps: DispatchDeps,
  jobId: string,
  deferrals: number,
  inLine = false,
  /** Whether this look already waited in place for a token (once at most). */
  waitedForToken = false,
): Promise<DispatchOutcome> {
  const job = await deps.store.get(jobId);
  // Given its slot and started in one write, its start sent by the hand-off lane: the same execution, by name.
  if (
    job &&
    grantedNotStarted(job) &&
    holdsOwnSlot(new Set(await deps.slots(providerOf(job)).holders()), job)
  ) {
    await startJob(deps, job);
    return 'started';
  }
  if (job?.status !== 'queued') return 'dropped';
  if (missedStartBy(job, deps.now())) {
    await endMissedStart(deps, job);
    return 'dropped';
  }
  if (!takesSlot(job)) {
    // It holds no slot (its chunk jobs each wait for one in the tenant's line): nothing to wait for.
    await startJob(deps, job);
    return 'started';
  }
  const provider = providerOf(job);
  const state = await deps.slots(provider).state();
  if (!holdsOwnSlot(new Set(state.holders), job)) {
    if (state.pausedUntil !== undefined && isPaused(state, deps.now())) {
      // Its provider throttles or is down: the job waits in its line, and looks again once the pause ends.
      if (!(inLine && deferrals === 0)) await deps.waiting.add(waitingEntryOf(job));
      await deps.store.touchEnqueued(job.id, deps.now());
      await deps.queue.enqueue(job, {
        delaySeconds: lookAfterPauseSeconds(state.pausedUntil, deps.now(), deps.random),
        deferrals: deferrals + 1,
      });
      return 'deferred';
    }
    const full = state.holders.length >= deps.maxInFlight[provider];
    const rate = rateTokenOf(state, deps.now());
    if (!full && 'waitMs' in rate && deps.sleep && rate.waitMs <= TOKEN_WAIT_IN_PLACE_MS && !waitedForToken) {
      // A token about to come: waited for here, and the job looked at again as it then is.
      await deps.sleep(rate.waitMs);
      return dispatchJob(deps, jobId, deferrals, inLine, true);
    }
    if (!full && 'waitMs' in rate) {
      // A slot is free but the provider's rate has no token for it yet (or a probe goes alone): the job
      // waits in its line, and looks again when the next token comes, known from the pool as read.
      if (!(inLine && deferrals === 0)) await deps.waiting.add(waitingEntryOf(job));
      await deps.store.touchEnqueued(job.id, deps.now());
      await deps.queue.enqueue(job, {
        delaySeconds: tokenWaitSeconds(rate.waitMs),
        deferrals: deferrals + 1,
      });
      return 'deferred';
    }
    // A free slot nobody waits for is taken at once: no line to join and leave again.
    if (!full && !inLine) {
      const granted = await takeUncontendedSlot(deps, job, state);
      if (granted) {
        await startJob(deps, granted);
        return 'started';
      }
    }
    // Every other look puts the job in its line (again: a lost entry, or a job queued before jobs waited
    // in lines, is never left out for long; looks at a full provider are minutes apart), except the
    // first look of intake's message, which put it there just before sending.
    if (!(inLine && deferrals === 0)) await deps.waiting.add(waitingEntryOf(job));
    if (
      full ||
      !(await fillFreeSlots({ ...deps, start: (chosen) => startJob(deps, chosen) }, provider, job.id))
    ) {
      // The touch tells the reconciler this job's message is alive, so it does not enqueue another.
      await deps.store.touchEnqueued(job.id, deps.now());
      await deps.queue.enqueue(job, {
        // At a full provider the job's turn comes through its line (a release hands the slot on), so its
        // message only looks again after about the longest wait: a backlog of thousands costs a few
        // messages a second, not hundreds. A slot lost to another chooser is looked for again soon.
        delaySeconds: full
          ? waitDelaySeconds(deps.maxWaitSeconds, deps.random)
          : deferDelaySeconds(deferrals, deps.maxWaitSeconds, deps.random),
        deferrals: deferrals + 1,
      });
      return 'deferred';
    }
    // Its turn came: granted and moved to running in that write, started here.
    await startJob(deps, job);
    return 'started';
  }
  // Queued while a slot of its submission is still held: its last run, sent back to the line by a refused
  // submission, gives that slot back next (or a dispatcher that took it lost its message, which the
  // reconciler frees). Every grant moves a queued job to running in the same write, so starting it here
  // would run it without its slot once that release lands: it looks again shortly, leaving the job as it
  // is read (no touch), so a slot nobody gives back is still the reconciler's to free.
  await deps.queue.enqueue(job, {
    delaySeconds: deferDelaySeconds(deferrals, deps.maxWaitSeconds, deps.random),
    deferrals: deferrals + 1,
  });
  return 'deferred';
}

/**
 * Grants `job` a free slot when no tenant waits at its provider: the fair
 * choice among the waiting has nobody to weigh it against. The tenant's pass
 * moves on as if it had been chosen (so its share counts what it took this
 * way), and the grant's conditions are the limit, the tenant's cap and that
 * pass. Answers the started job, or undefined when someone waits, the tenant
 * is at its cap, or the slot went to another meanwhile: the job then takes
 * its turn in its line.
 */
async function takeUncontendedSlot(deps: FillDeps, job: Job, state: SlotPoolState): Promise<Job | undefined> {
  const provider = providerOf(job);
  const rate = rateTokenOf(state, deps.now());
  if (!('token' in rate) || (await deps.waiting.tenants(provider)).length > 0) return undefined;
  const shares = await deps.tenantShares([job.tenantId]);
  const candidate = candidateOf(job.tenantId, shares, state);
  const choice = chooseTenant([candidate], state.floor);
  if (!choice) return undefined;
  const outcome = await deps.store.startWithSlot(
    {
      job,
      holder: slotHolderOf(job),
      limit: deps.maxInFlight[provider],
      claim: {
        tenant: job.tenantId,
        ...capOf(candidate),
        pass: { expected: choice.expectedPass, next: choice.nextPass, floor: choice.floor },
      },
      token: rate.token,
    },
    deps.now(),
  );
  if (!('granted' in outcome)) return undefined;
  deps.observeStart?.(outcome.granted);
  return outcome.granted;
}

/**
 * A job given its slot and moved to `running` in one write whose execution
 * may not have started yet: nothing of the run is recorded beyond its name.
 */
export const grantedNotStarted = (job: Job): boolean =>
  job.status === 'running' &&
  job.executionName === executionNameOf(job) &&
  job.submitIntent === undefined &&
  job.providerJobId === undefined &&
  job.taskToken === undefined;

/** A tenant as the fair choice weighs it: its share, and its slots and pass as the pool holds them. */
function candidateOf(
  tenant: string,
  shares: ReadonlyMap<string, { readonly weight: number; readonly maxInFlight?: number }>,
  state: SlotPoolState,
): TenantCandidate {
  const share = shares.get(tenant);
  return {
    tenant,
    weight: share?.weight ?? TENANT_DEFAULTS.weight,
    inFlight: state.tenantInFlight[tenant] ?? 0,
    ...(state.passes[tenant] === undefined ? {} : { pass: state.passes[tenant] }),
    ...(share?.maxInFlight === undefined ? {} : { maxInFlight: share.maxInFlight }),
  };
}

/** The tenant's own cap, as a claim carries it (absent: none). */
const capOf = (candidate: TenantCandidate) =>
  candidate.maxInFlight === undefined ? {} : { maxInFlight: candidate.maxInFlight };

/**
 * Starts the workflow of a job that holds its slot (named after the job: a second start is the same
 * execution), on `stateMachine` when the caller runs in one and knows it. A job resumed since its run
 * started and given its slot back goes on instead: its execution, parked to wait in line, is redriven
 * from where it failed, or, where it can no longer be, a new run goes on from where the job is.
 */
export async function startJob(deps: StartDeps, job: Job, stateMachine?: string): Promise<void> {
  if (resumedSinceStart(job)) {
    const redrive = await deps.workflow.redrive(currentExecutionOf(job), slotRedriveTokenOf(job));
    if (redrive === 'redriven') return;
    // Still on its way to fail where it parked: its start is tried again (the hand-off lane's message
    // comes back, and the reconciler redrives a parked job that holds its slot).
    if (redrive === 'running') throw new Error(`The execution of job ${job.id} has not parked yet.`);
    const next = await deps.store.recordNewRun(job, deps.now());
    if (next) await deps.workflow.start(executionNameOf(next), { jobId: job.id });
    return;
  }
  // The timeline shows the start from the execution's history (`job.dispatched`): nothing to write here.
  await deps.workflow.start(executionNameOf(job), { jobId: job.id }, stateMachine);
}

/** What starting a job takes: the workflow, and the job's record for a resumed job's new run. */
export interface StartDeps {
  readonly workflow: Workflow;
  readonly store: Pick<JobStore, 'recordNewRun'>;
  readonly now: () => Date;
}

export interface FillDeps {
  readonly store: Pick<JobStore, 'get' | 'touchEnqueued' | 'startWithSlot' | 'transition' | 'recordNewRun'>;
  /** Hears each job that a grant started (its wait in the queue ends there), for metrics. */
  readonly observeStart?: (job: Job) => void;
  readonly slots: SlotPools;
  readonly queue: JobQueue;
  readonly waiting: WaitingLines;
  readonly tenantShares: TenantShares;
  readonly maxInFlight: InFlightLimits;
  readonly now: () => Date;
  /** Where a waiting job that missed its startBy, ended instead of granted, puts its `job.failed` event. */
  readonly events?: EventPublisher;
  /**
   * Starts a chosen job at once, where the caller may (the dispatcher, a step
   * that freed a slot); without it, or when it fails, the job goes to the
   * dispatcher by the hand-off lane.
   */
  readonly start?: (job: Job) => Promise<void>;
  /**
   * Waits in place for a token of the provider's rate that comes within
   * TOKEN_WAIT_IN_PLACE_MS, where the caller may spend that time; without it,
   * a job looks again by a delayed message, which SQS counts in whole seconds.
   */
  readonly sleep?: (ms: number) => Promise<void>;
}

/**
 * The longest wait for a rate's token spent in place rather than in a
 * delayed message: SQS delays by whole seconds, so at 120 a minute (a token
 * every 500 ms) each grant that waited by message would wait twice too long.
 */
export const TOKEN_WAIT_IN_PLACE_MS = 1_000;

/** How often a choice is made again after another chooser changed the pool under it. */
const CHOICE_ATTEMPTS = 5;
/** Entries read at the head of a line at once: a few stale ones (jobs canceled while waiting) are passed in one read. */
const HEAD_READ = 10;

/**
 * Gives one free slot of `provider` to the job whose turn it is, by weighted
 * fair share: among the tenants with waiting jobs, the one whose pass is
 * lowest and that is below its own cap (`chooseTenant`), then that tenant's
 * first job by priority with aging. The slot is taken with the same
 * conditional update that enforces the limit, the tenant's cap and the
 * tenant's pass as read; if another choice changed the pool meanwhile, the
 * choice is made again. The job chosen leaves its line and goes to the
 * dispatcher by the hand-off lane, or is started at once by a caller that can
 * (`start`); `self`, the job the caller is dispatching, is only returned. Returns the chosen job's id, or
 * undefined when no slot is free, nothing waits, or every waiting tenant is at
 * its cap.
 *
 * Cost: one read of the pool, one query of the waiting tenants and their
 * shares, and the head of one line: O(tenants waiting), never O(jobs waiting).
 * The lines lag nothing (consistent reads of the table), but a job may have
 * left `queued` another way (canceled, or started by a restart): each
 * candidate is read from the table first, and a stale entry is removed.
 */
export async function fillFreeSlot(
  deps: FillDeps,
  provider: ProviderName,
  self?: string,
): Promise<string | undefined> {
  const pool = deps.slots(provider);
  const limit = deps.maxInFlight[provider];
  for (let attempt = 0; attempt < CHOICE_ATTEMPTS; attempt++) {
    const state = await pool.state();
    // Full, or paused: no grant would hold (the grant's own condition checks both again).
    if (state.holders.length >= limit || isPaused(state, deps.now())) return undefined;
    const rate = rateTokenOf(state, deps.now());
    const waiting = await deps.waiting.tenants(provider);
    if (waiting.length === 0) return undefined;
    if ('waitMs' in rate) {
      // A token about to come is waited for here, and the choice made again with the pool as it is then.
      if (deps.sleep && rate.waitMs <= TOKEN_WAIT_IN_PLACE_MS) {
        await deps.sleep(rate.waitMs);
        continue;
      }
      // No token yet: the slot stays free, and a job in line looks for it when the token comes (the
      // dispatcher's own job, `self`, has its look already).
      if (self === undefined) await lookWhenTokenComes(deps, provider, waiting[0]?.tenant, rate.waitMs);
      return undefined;
    }
    const shares = await deps.tenantShares(waiting.map(({ tenant }) => tenant));
    const holders = new Set(state.holders);
    let candidates: TenantCandidate[] = waiting.map(({ tenant }) => candidateOf(tenant, shares, state));
    let changed = false;
    while (!changed) {
      const choice = chooseTenant(candidates, state.floor);
      if (!choice) return undefined;
      const next = await firstInLine(deps, provider, choice.tenant, holders);
      if (typeof next === 'string') {
        const emptied = waiting.find(({ tenant }) => tenant === choice.tenant);
        if (next === 'empty' && emptied) await deps.waiting.retire(provider, emptied);
        candidates = candidates.filter(({ tenant }) => tenant !== choice.tenant);
        continue;
      }
      const { job, entry } = next;
      const chosen = candidates.find(({ tenant }) => tenant === choice.tenant);
      // The slot, the job's start and its leaving the line in one write: never a slot taken for a job
      // that does not run, nor a job running without its slot.
      const grant: SlotGrant = {
        job,
        holder: slotHolderOf(job),
        limit,
        claim: {
          tenant: choice.tenant,
          ...(chosen ? capOf(chosen) : {}),
          pass: { expected: choice.expectedPass, next: choice.nextPass, floor: choice.floor },
        },
        token: rate.token,
        entry,
      };
      // The slot, the job's start and its leaving the line in one write: never a slot taken for a job
      // that does not run, nor a job running without its slot.
      const fresh = job.status === 'queued';
      const outcome = fresh
        ? await deps.store.startWithSlot(grant, deps.now())
        : await grantSlotBack(deps, grant);
      if ('granted' in outcome) {
        if (fresh) deps.observeStart?.(outcome.granted);
        if (job.id !== self) await startOrHandOff(deps, outcome.granted, fresh);
        return job.id;
      }
      // It left `queued` after it was read (canceled, say): its entry goes. Or its startBy came as it was
      // chosen, and the grant's own condition refused it: it ends. Or another chooser changed the pool:
      // the choice is made again.
      if (outcome.refused === 'job') {
        if (missedStartBy(job, deps.now())) await endMissedStart(deps, job, entry);
        else await deps.waiting.remove(entry);
      }
      changed = true;
    }
  }
  return undefined;
}

/**
 * Gives a running job its slot back (`waitsForSlotBack`), by the same
 * conditional update of the pool that grants any slot (the limit, the
 * tenant's cap and its pass). The job is then stamped running from now, so
 * its job timeout counts from its grant, and leaves its line; a job that
 * stopped running meanwhile (canceled) gives the slot back at once.
 */
async function grantSlotBack(deps: FillDeps, grant: SlotGrant): Promise<SlotGrantOutcome> {
  const { job } = grant;
  const pool = deps.slots(providerOf(job));
  if (!(await pool.acquire(grant.holder, grant.limit, grant.claim, grant.token))) return { refused: 'slot' };
  const granted = await deps.store.transition(job, ['running'], { status: 'running' }, deps.now());
  if (!granted || !waitsForSlotBack(granted)) {
    await pool.release(grant.holder, job.tenantId);
    return { refused: 'job' };
  }
  if (grant.entry) await deps.waiting.remove(grant.entry);
  return { granted };
}

/**
 * Has the first job in `tenant`'s line look for a free slot when the
 * provider's next token comes: a slot freed while the rate has none left is
 * handed on by no one else before the waiting jobs' own looks, minutes apart.
 * Its look gives the slot to the job whose turn it is, itself or another.
 */
async function lookWhenTokenComes(
  deps: FillDeps,
  provider: ProviderName,
  tenant: string | undefined,
  waitMs: number,
): Promise<void> {
  if (tenant === undefined) return;
  const next = await firstInLine(deps, provider, tenant, new Set());
  if (typeof next === 'string') return;
  await deps.queue.enqueue(next.job, { inLine: true, delaySeconds: tokenWaitSeconds(waitMs), deferrals: 1 });
}

/**
 * Starts a job given its slot where the caller can, else (or if the start
 * failed: its execution may not exist) sends it to the dispatcher by the
 * hand-off lane, whose start is the same execution by its name. A job whose
 * start and message both failed runs without an execution: the reconciler
 * starts it under the same name.
 */
async function startOrHandOff(deps: FillDeps, job: Job, fresh: boolean): Promise<void> {
  // A job given its slot back goes on by a redrive, which only the dispatcher (it knows the state
  // machine) makes: it goes there by the lane.
  if (deps.start && fresh) {
    try {
      await deps.start(job);
      return;
    } catch {
      // The lane below is the fallback.
    }
  }
  await deps.queue.enqueue(job, { handOff: true });
}

/**
 * Fills free slots of `provider` one by one while any is free and a job waits
 * for it, `self`'s turn included; true if `self` was given one. Bounded by the
 * limit: each slot is filled once, and none is left free while a job waits.
 */
export async function fillFreeSlots(deps: FillDeps, provider: ProviderName, self: string): Promise<boolean> {
  let served = false;
  for (let filled = 0; filled < deps.maxInFlight[provider]; filled++) {
    const chosen = await fillFreeSlot(deps, provider, served ? undefined : self);
    if (chosen === undefined) break;
    if (chosen === self) served = true;
  }
  return served;
}

/**
 * Hands every free slot of `provider` on to the jobs whose turn it is, each
 * recording on its timeline where its slot came from (`detail`): what any
 * path that frees a slot does, so no slot stays idle while a job waits.
 * Bounded by the limit: each slot is filled once.
 */
export async function handOnFreeSlots(
  deps: FillDeps & { readonly timeline: Pick<Timeline, 'record'> },
  provider: ProviderName,
  detail: string,
  most = deps.maxInFlight[provider],
): Promise<void> {
  for (let filled = 0; filled < Math.min(most, deps.maxInFlight[provider]); filled++) {
    const next = await fillFreeSlot(deps, provider);
    if (next === undefined) return;
    await deps.timeline.record(next, { at: deps.now().toISOString(), type: 'slot.received', detail });
  }
}

/**
 * The first job of the tenant's line that still waits and holds no slot, with
 * its entry: a queued job, or a running one waiting for its slot back
 * (`waitsForSlotBack`); entries of jobs that wait no more are removed on the way.
 * `empty` once the line holds nothing; `busy` when every job read is already
 * on its way to the dispatcher.
 */
async function firstInLine(
  deps: FillDeps,
  provider: ProviderName,
  tenant: string,
  holders: ReadonlySet<string>,
): Promise<{ job: Job; entry: WaitingEntry } | 'empty' | 'busy'> {
  for (;;) {
    const entries = await deps.waiting.head(provider, tenant, HEAD_READ);
    if (entries.length === 0) return 'empty';
    let removed = false;
    for (const entry of entries) {
      const job = await deps.store.get(entry.jobId);
      // Queued, or running and waiting for its slot back; any other entry is stale.
      const waits =
        job !== undefined &&
        (job.status === 'queued' || (waitsForSlotBack(job) && !holdsOwnSlot(holders, job)));
      if (!waits) {
        await deps.waiting.remove(entry);
        removed = true;
        continue;
      }
      // Its turn came too late for its client: it ends instead of being granted, and leaves its line.
      if (missedStartBy(job, deps.now())) {
        await endMissedStart(deps, job, entry);
        removed = true;
        continue;
      }
      // Holding its slot already: on its way to the dispatcher.
      if (holdsOwnSlot(holders, job)) continue;
      return { job, entry };
    }
    if (!removed) return 'busy';
  }
}

export interface FirstLookDeps {
  readonly slots: SlotPools;
  readonly waiting: Pick<WaitingLines, 'tenants'>;
  readonly maxInFlight: InFlightLimits;
  /** The longest wait between two looks of a waiting job's message (`SLOT_WAIT_MAX_SECONDS`). */
  readonly maxWaitSeconds: number;
  readonly random: () => number;
  /** The time a provider's pause is judged by (default: the clock). */
  readonly now?: () => Date;
}

/**
 * How a new job's first message should travel. With a free slot and nobody
 * waiting at its provider, at once and outside any line: the dispatcher
 * grants it the slot (or, if the slot went meanwhile, puts it in its line).
 * Otherwise the job goes in its line first and its message is delayed like a
 * waiting job's look: its turn comes through its line, and a flood of jobs
 * into a full provider costs the dispatcher nothing until their looks are due
 * (a read of the pool and of the waiting tenants here, against a dispatcher
 * invocation, two reads, a write and a message per job). A slot is free for a
 * moment whenever a release hands it on, so the waiting tenants decide: a job
 * that skipped its line then would wait for its message behind the queue
 * while later jobs of lower priority took the slots from the line.
 */
export async function firstLookOf(deps: FirstLookDeps, job: Job): Promise<EnqueueOptions> {
  const provider = providerOf(job);
  const state = await deps.slots(provider).state();
  const now = deps.now?.() ?? new Date();
  if (state.pausedUntil !== undefined && isPaused(state, now)) {
    // A paused provider: the job's first look comes once the pause ends.
    const delaySeconds = lookAfterPauseSeconds(state.pausedUntil, now, deps.random);
    return { inLine: true, delaySeconds, deferrals: 1 };
  }
  const held = state.holders.length;
  const rate = rateTokenOf(state, now);
  if (held < deps.maxInFlight[provider] && 'waitMs' in rate) {
    // A free slot, but no token for it yet: the job's first look comes with the next token.
    return { inLine: true, delaySeconds: tokenWaitSeconds(rate.waitMs), deferrals: 1 };
  }
  if (held < deps.maxInFlight[provider] && (await deps.waiting.tenants(provider)).length === 0) return {};
  if (held < deps.maxInFlight[provider]) return { inLine: true };
  return { inLine: true, delaySeconds: waitDelaySeconds(deps.maxWaitSeconds, deps.random), deferrals: 1 };
}

/** Between half of `maxSeconds` and all of it, at random, so the waiting jobs' looks spread out. */
export function waitDelaySeconds(maxSeconds: number, random: () => number): number {
  return Math.max(1, Math.round(maxSeconds * (0.5 + random() / 2)));
}

/** Exponential backoff with full jitter: 1, 2, 4 … up to `maxSeconds`, times a random fraction, at least 1 s. */
export function deferDelaySeconds(deferrals: number, maxSeconds: number, random: () => number): number {
  const ceiling = Math.min(maxSeconds, 2 ** Math.min(deferrals, 10));
  return Math.max(1, Math.round(ceiling * random()));
}
