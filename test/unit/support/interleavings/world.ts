import { isDeepStrictEqual } from 'node:util';
import type fc from 'fast-check';
import type { ProviderName } from '../../../../config/providers';
import { defaultSettings, type Settings } from '../../../../config/settings';
import { dispatchJob, firstLookOf } from '../../../../lambdas/domain/dispatch';
import { deriveJobId } from '../../../../lambdas/domain/idempotency';
import { cancelJob, submitJob } from '../../../../lambdas/domain/intake';
import {
  currentExecutionOf,
  isTerminal,
  type Job,
  type JobStatus,
  jobIdOf,
  slotHolderFor,
  slotHolderOf,
} from '../../../../lambdas/domain/job';
import { resolveJob } from '../../../../lambdas/domain/operator';
import { applyProgress, ProgressMemory, ProgressThrottle } from '../../../../lambdas/domain/progress';
import type { ProviderEvent } from '../../../../lambdas/domain/provider';
import { applyProviderEvent } from '../../../../lambdas/domain/provider-events';
import { reconcile } from '../../../../lambdas/domain/reconcile';
import { resumeJob } from '../../../../lambdas/domain/resume';
import { stepEvent } from '../../../../lambdas/domain/step-event';
import { runStep, type StepEvent, type WorkflowDeps } from '../../../../lambdas/domain/workflow';
import { synthesizeWorkflowDefinition } from '../../../../lib/workflow-definition';
import {
  limits,
  MemoryBacklogs,
  MemoryEvents,
  MemoryInputs,
  MemoryLive,
  MemoryOutputs,
  MemoryQueue,
  MemoryReconcilerProgress,
  MemorySlots,
  MemoryStore,
  MemoryTimeline,
  MemoryVectorIndex,
  MemoryWaitingLines,
  memoryIntake,
  memoryTenantShares,
} from '../memory-ports';
import { type CapsView, capInvariants, type TenantSetup } from './caps';
import {
  type Breach,
  callInvariants,
  generationOf,
  type Invariant,
  stepInvariants,
  type WorldView,
} from './invariants';
import { type ProviderRun, SimulatedProvider } from './provider';
import type { ResumeAction } from './resume-actions';
import { Actor, Faults, type PortCall, scheduled } from './scheduled';
import {
  type Definition,
  EXECUTION_RETENTION_MS,
  LAMBDA_TIMEOUT_MS,
  SimulatedStepFunctions,
} from './step-functions';

export const TENANT = 'acme';
const T0 = Date.parse('2026-05-01T10:00:00.000Z');
const STEPS_ARN = 'arn:aws:lambda:us-east-1:000000000000:function:steps';
const DAY_MS = 86_400_000;

/** How a client resumes a job (a `resume` action without its job). */
export type ResumeOptions = Omit<Extract<ResumeAction, { kind: 'resume' }>, 'kind' | 'job'>;

export interface WorldOptions {
  readonly jobs: number;
  readonly maxInFlight: number;
  readonly deduplicates: boolean;
  /** Queue messages delivered while faults run; later ones wait for the quiet phase. */
  readonly deliveries: number;
  /** The tenants whose jobs these are, job `i` the `i mod n`th's; by default one, TENANT, with no cap. */
  readonly tenants?: readonly TenantSetup[];
}

const definitions = new Map<number, Definition>();
/** The state machine as deployed, for the settings the world runs with. */
function definitionFor(settings: Settings): Definition {
  const cached = definitions.get(settings.maxInFlight);
  if (cached) return cached;
  const definition = synthesizeWorkflowDefinition(settings, STEPS_ARN) as Definition;
  definitions.set(settings.maxInFlight, definition);
  return definition;
}

export interface Violation {
  readonly invariant: Invariant;
  readonly jobId: string;
  readonly detail: string;
  /** The port calls that led there, last ones last. */
  readonly trail: readonly string[];
}

/** The provider every job of a workload runs on. */
const WORLD_PROVIDER: ProviderName = 'longhaul-http';

/**
 * Longhaul in memory: the store, slots, queue and timeline of memory-ports.ts,
 * the simulated provider and Step Functions, and the domain's entry points
 * (dispatcher, steps, provider webhook, cancel, operator, reconciler). Every
 * port call any of them makes goes through the scheduler, which picks what
 * runs next.
 */
export class World implements WorldView, CapsView {
  clock = T0;
  readonly settings: Settings;
  readonly store = new MemoryStore();
  /** The pool of the one provider the workloads' jobs run on. */
  readonly slots = new MemorySlots();
  /** The other providers' pools: empty, as each provider's slots are its own. */
  private readonly otherPools = new Map<ProviderName, MemorySlots>();
  readonly queue = new MemoryQueue();
  readonly waiting = new MemoryWaitingLines();
  readonly backlogs = new MemoryBacklogs(this.store);
  readonly timeline = new MemoryTimeline();
  readonly inputs = new MemoryInputs();
  readonly outputs = new MemoryOutputs();
  readonly live = new MemoryLive();
  /** Where the reconciler's passes stopped: one table, shared by every pass. */
  readonly reconcilerProgress = new MemoryReconcilerProgress();
  /** One warm environment takes every tick: its memory of jobs and its heartbeat throttle. */
  readonly progressMemory = new ProgressMemory(1000);
  readonly heartbeatThrottle = new ProgressThrottle(60_000);
  readonly provider: SimulatedProvider;
  readonly stepFunctions: SimulatedStepFunctions;
  readonly faults = new Faults();
  /** Requeues operators made, by job record (`generationOf`): the only way it may get a new submission. */
  readonly requeues = new Map<string, number>();
  /** The progress ticks being applied: which provider job each was sent for, and the job's status on arrival. */
  readonly ticks = new Map<Actor, { readonly run: ProviderRun; readonly statusOnArrival?: JobStatus }>();
  /** Records of each job id so far: a job created again under a key whose job expired is the next one. */
  readonly incarnations = new Map<string, number>();
  /** The job record each execution was started for, by execution name. */
  readonly startedFor = new Map<string, number>();
  /** Which provider job each recorded outcome came from. */
  readonly outcomeFrom = new Map<string, string>();
  readonly violations: Violation[] = [];
  /** Errors of the harness itself (a TypeError in a domain call is one too). */
  readonly defects: unknown[] = [];
  readonly trail: string[] = [];
  private delivered = 0;
  private deliveriesLeft: number;
  readonly jobIds: readonly string[];
  readonly tenants: readonly TenantSetup[];
  /** Jobs a client resumes once it sees them failed, and how. */
  private readonly resumeWhenFailed = new Map<number, ResumeOptions>();

  constructor(
    readonly scheduler: fc.Scheduler,
    readonly options: WorldOptions,
  ) {
    this.settings = { ...defaultSettings, maxInFlight: options.maxInFlight };
    this.provider = new SimulatedProvider(
      options.deduplicates,
      () => this.clock,
      (jobId, submission) => this.holderOf(jobId, submission),
    );
    this.stepFunctions = new SimulatedStepFunctions(
      definitionFor(this.settings),
      (event, actor) => this.runStepAs(event, actor),
      scheduler,
      () => this.clock,
    );
    this.deliveriesLeft = options.deliveries;
    // A grant writes the pool, the job and the line in one transaction: one scheduled store call.
    this.store.granting = {
      pool: (provider) => (provider === WORLD_PROVIDER ? this.slots : this.otherPool(provider)),
      waiting: this.waiting,
    };
    this.tenants = options.tenants ?? [{ tenant: TENANT, weight: 1 }];
    this.jobIds = Array.from({ length: options.jobs }, (_, i) => deriveJobId(this.tenantOf(i), keyOf(i)));
  }

  /** The tenant that submits job `job`. */
  tenantOf(job: number): string {
    return this.tenants[job % this.tenants.length]?.tenant ?? TENANT;
  }

  tenantOfJob(jobId: string): string | undefined {
    const index = this.jobIds.indexOf(jobId);
    return index < 0 ? undefined : this.tenantOf(index);
  }

  readonly now = () => new Date(this.clock);

  job(jobId: string): Job | undefined {
    return this.store.jobs.get(jobId);
  }

  /** The slot holder of one submission (`slotHolderOf`), from its tag: whose capacity a provider job uses. */
  holderOf(jobId: string, submission: string): string {
    return slotHolderFor(jobId, submission);
  }

  /** Whether any submission of the job holds a slot. */
  holdsSlot(jobId: string): boolean {
    return [...this.slots.held].some((holder) => jobIdOf(holder) === jobId);
  }

  /** The ports as one actor sees them: every call scheduled, faults applied, invariants checked after it. */
  private otherPool(provider: ProviderName): MemorySlots {
    const pool = this.otherPools.get(provider) ?? new MemorySlots();
    this.otherPools.set(provider, pool);
    return pool;
  }

  /** The dispatcher's first look at a job, as intake and the reconciler take it, over one actor's ports. */
  private firstLook(ports: Pick<ReturnType<World['ports']>, 'slots' | 'waiting'>) {
    return (job: Job) =>
      firstLookOf(
        {
          slots: ports.slots,
          waiting: ports.waiting,
          maxInFlight: limits(this.settings.maxInFlight),
          maxWaitSeconds: this.settings.slotWaitMaxSeconds,
          random: () => 0.5,
        },
        job,
      );
  }

  ports(actor: Actor) {
    const context = {
      scheduler: this.scheduler,
      actor,
      faults: this.faults,
      observe: (call: PortCall) => this.observe(call),
      now: () => this.clock,
    };
    const slots = scheduled(this.slots, 'slots', context);
    const provider = scheduled(this.provider, 'provider', context);
    return {
      store: scheduled(this.store, 'store', context),
      slots: (provider: ProviderName) => (provider === WORLD_PROVIDER ? slots : this.otherPool(provider)),
      providers: async () => provider,
      queue: scheduled(this.queue, 'queue', context),
      waiting: scheduled(this.waiting, 'waiting', context),
      backlogs: scheduled(this.backlogs, 'backlogs', context),
      tenantShares: memoryTenantShares(
        Object.fromEntries(this.tenants.map(({ tenant, ...share }) => [tenant, share])),
      ),
      timeline: scheduled(this.timeline, 'timeline', context),
      inputs: scheduled(this.inputs, 'inputs', context),
      outputs: scheduled(this.outputs, 'outputs', context),
      live: scheduled(this.live, 'live', context),
      workflow: scheduled(this.stepFunctions, 'workflow', context),
      events: new MemoryEvents(),
      provider,
    };
  }

  private observe(call: PortCall): void {
    const failed = call.fault ? ` ✗ failed ${call.fault} taking effect` : '';
    this.trail.push(`${call.actor.label} ▶ ${call.port}.${call.method}(${describeArgs(call.args)})${failed}`);
    if (call.fault === 'before') return;
    if (call.port === 'store' && call.method === 'recordProviderOutcome') {
      const jobId = String(call.args[0]);
      const job = this.job(jobId);
      if (job && job.providerOutcome === call.args[1]) {
        this.outcomeFrom.set(jobId, call.actor.providerJobId ?? job.providerJobId ?? 'unknown');
      }
    }
    if (
      call.port === 'store' &&
      call.method === 'requeueForResubmission' &&
      call.actor.label.startsWith('operator')
    ) {
      const generation = generationOf(slotHolderOf(call.args[0] as Job));
      this.requeues.set(generation, (this.requeues.get(generation) ?? 0) + 1);
    }
    if (call.port === 'queue' && call.method === 'enqueue') this.pump();
    if (call.port === 'workflow' && call.method === 'start' && !this.startedFor.has(String(call.args[0]))) {
      const { jobId } = call.args[1] as { jobId: string };
      this.startedFor.set(String(call.args[0]), this.incarnations.get(jobId) ?? 0);
    }
    this.check(callInvariants(this, call));
    this.check(stepInvariants(this));
    this.check(capInvariants(this, call));
    for (const [job, how] of this.resumeWhenFailed) {
      if (this.job(this.jobIds[job] ?? '')?.status !== 'failed') continue;
      this.resumeWhenFailed.delete(job);
      void this.resume(job, { ...how, whenFailed: false });
    }
  }

  /** Keeps the first breach of each invariant for each job. */
  check(breaches: Iterable<Breach>): void {
    for (const breach of breaches) {
      if (this.violations.some((v) => v.invariant === breach.invariant && v.jobId === breach.jobId)) continue;
      this.violations.push({ ...breach, trail: this.trail.slice(-30) });
    }
  }

  /** Runs a handler as one actor, in its own scheduled task; its errors are its callers' answers. */
  spawn(
    label: string,
    handler: (actor: Actor) => Promise<unknown>,
    crashAfterCalls?: number,
    providerJobId?: string,
  ) {
    const actor = new Actor(label, crashAfterCalls, providerJobId, this.clock + LAMBDA_TIMEOUT_MS);
    return this.scheduler
      .schedule(Promise.resolve(), `start ${label}`)
      .then(() => handler(actor))
      .catch((error) => this.answer(label, error));
  }

  private answer(label: string, error: unknown): void {
    if (error instanceof TypeError || error instanceof ReferenceError) this.defects.push(error);
    this.trail.push(`${label} answered ${(error as Error).name}: ${(error as Error).message}`);
  }

  private runStepAs(sent: StepEvent, actor: Actor): Promise<unknown> {
    // The steps function reads what the state machine sends through the one strict schema, as its
    // handler does: a key the schema refuses fails the step, and one it drops never reaches the step.
    const parsed = stepEvent.safeParse(sent);
    if (!parsed.success || !isDeepStrictEqual(parsed.data, sent)) {
      this.check([
        {
          invariant: 'stepPayloadKept',
          jobId: sent.jobId,
          detail: `${sent.step} was sent ${JSON.stringify(sent)}; the schema ${parsed.success ? `kept ${JSON.stringify(parsed.data)}` : `refused it: ${parsed.error.message}`}`,
        },
      ]);
      if (!parsed.success) return Promise.reject(parsed.error);
    }
    const event = parsed.data;
    const ports = this.ports(actor);
    const deps: WorkflowDeps = {
      ...ports,
      backlogs: { admitPastCap: async () => {} },
      firstLook: async () => ({ inLine: true }),
      maxInFlight: limits(this.settings.maxInFlight),
      now: this.now,
      maxUploadBytes: this.settings.maxUploadBytes,
      providerWebhookUrl: () => 'https://longhaul.example/v1/provider/events',
      fetchOutput: async (url) => ({ bytes: new TextEncoder().encode(url) }),
      inputUrlTtlSeconds: 900,
      deliverWebhook: async (job) => (isTerminal(job.status) ? 'sent' : 'skipped'),
      probeUrl: async () => ({ size: 10, contentType: 'audio/mpeg' }),
      vectors: new MemoryVectorIndex(),
      embedding: { model: 'titan-text-v2', dimensions: 256, normalize: true, passagesPerJob: 4 },
      intake: {
        ...memoryIntake(this.now, { 'image.generate': WORLD_PROVIDER, 'audio.transcribe': WORLD_PROVIDER })
          .deps,
        store: ports.store,
        queue: ports.queue,
        waiting: ports.waiting,
        backlogs: ports.backlogs,
      },
    };
    return runStep(deps, event).catch((error) => {
      if (error instanceof TypeError || error instanceof ReferenceError) this.defects.push(error);
      throw error;
    });
  }

  /** Delivers queue messages to the dispatcher as they are sent, while the delivery budget lasts. */
  private pump(): void {
    while (this.deliveriesLeft > 0 && this.delivered < this.queue.messages.length) {
      this.deliveriesLeft--;
      this.deliver(this.delivered++);
    }
  }

  /** Delivers every message sent so far and not yet delivered (the quiet phase's queue). */
  deliverPending(): void {
    while (this.delivered < this.queue.messages.length) this.deliver(this.delivered++);
  }

  private deliver(index: number, crashAfterCalls?: number): void {
    const message = this.queue.messages[index];
    if (!message) return;
    void this.spawn(
      `dispatch ${short(message.jobId)}`,
      (actor) =>
        dispatchJob(
          {
            ...this.ports(actor),
            maxInFlight: limits(this.settings.maxInFlight),
            maxWaitSeconds: this.settings.slotWaitMaxSeconds,
            now: this.now,
            random: () => 0.5,
          },
          message.jobId,
          message.options.deferrals ?? 0,
        ),
      crashAfterCalls,
    );
  }

  // The entry points a workload drives.

  submit(job: number) {
    return this.spawn(`submit ${job}`, (actor) => {
      const ports = this.ports(actor);
      return submitJob(
        {
          ...ports,
          now: this.now,
          idempotencyInProgressMs: this.settings.idempotencyInProgressMs,
          jobTypeProviders: {
            'image.generate': 'longhaul-http',
            'audio.transcribe': 'longhaul-http',
            'audio.publish': 'deepgram',
          },
          firstLook: this.firstLook(ports),
        },
        {
          tenantId: this.tenantOf(job),
          idempotencyKey: keyOf(job),
          request: { type: 'image.generate', input: { prompt: `p${job}` } },
        },
      );
    });
  }

  /** The queue delivers the job's latest message again (at-least-once). */
  redeliver(job: number, crashAfterCalls?: number) {
    const jobId = this.jobIds[job] ?? '';
    const index = this.queue.messages.map((m) => m.jobId).lastIndexOf(jobId);
    if (index >= 0) this.deliver(index, crashAfterCalls);
  }

  /** A provider job of the job: its latest or its first. */
  private runOf(job: number, which: 'latest' | 'first'): ProviderRun | undefined {
    const jobId = this.jobIds[job] ?? '';
    const runs = [...this.provider.runs.values()].filter((run) => run.jobId === jobId);
    return which === 'first' ? runs[0] : runs.at(-1);
  }

  /** The provider finishes a run of the job (its latest or its first) and posts the event, maybe twice. */
  webhook(job: number, which: 'latest' | 'first', outcome: 'succeeded' | 'failed', times: number) {
    const run = this.runOf(job, which);
    if (!run) return;
    this.provider.finish(run.id, outcome);
    const state = run.state === 'running' ? outcome : run.state;
    for (let i = 0; i < times; i++) this.postEvent(run, state);
  }

  /** The provider posts a run's final event to the webhook URL it was given, which names the submission. */
  postEvent(run: ProviderRun, state: string) {
    if (state !== 'succeeded' && state !== 'failed' && state !== 'canceled') return;
    const event: ProviderEvent =
      state === 'failed'
        ? { type: 'failed', id: run.id, error: { code: 'provider_failed', message: 'It broke.' } }
        : { type: state, id: run.id };
    void this.spawn(
      `webhook ${short(run.jobId)} ${run.id} ${state}`,
      (actor) =>
        applyProviderEvent({ ...this.ports(actor), now: this.now }, run.jobId, event, run.submission),
      undefined,
      run.id,
    );
  }

  /** The provider posts a progress tick of a run of the job (maybe late, after the run ended). */
  progress(job: number, which: 'latest' | 'first', progress: number) {
    const run = this.runOf(job, which);
    if (!run) return;
    void this.spawn(
      `tick ${short(run.jobId)} ${run.id} ${progress}%`,
      (actor) => {
        const status = this.job(run.jobId)?.status;
        this.ticks.set(actor, { run, ...(status ? { statusOnArrival: status } : {}) });
        const ports = this.ports(actor);
        return applyProgress(
          {
            store: ports.store,
            live: ports.live,
            memory: this.progressMemory,
            now: this.now,
            heartbeat: { throttle: this.heartbeatThrottle, workflow: ports.workflow },
          },
          run.jobId,
          progress,
          { providerJobId: run.id, submission: run.submission },
        );
      },
      undefined,
      run.id,
    );
  }

  cancel(job: number, crashAfterCalls?: number) {
    return this.spawn(
      `cancel ${job}`,
      (actor) =>
        cancelJob({ ...this.ports(actor), now: this.now }, this.tenantOf(job), this.jobIds[job] ?? ''),
      crashAfterCalls,
    );
  }

  /**
   * An operator settles a job in review, after looking at the provider once
   * the job is in review (a look before would miss a submission still on its
   * way): while a provider job of it still runs, the operator waits.
   */
  resolve(job: number, outcome: 'succeeded' | 'failed' | 'requeue') {
    const jobId = this.jobIds[job] ?? '';
    return this.spawn(`operator ${outcome} ${job}`, async (actor) => {
      const seen = await this.ports(actor).store.get(jobId);
      if (seen?.status === 'needs_review' && this.provider.running(jobId).length > 0) return;
      await resolveJob(
        { ...this.ports(actor), maxInFlight: limits(this.settings.maxInFlight), now: this.now },
        jobId,
        {
          outcome,
          note: 'checked at the provider',
        },
      );
    });
  }

  /**
   * The job's client resumes it (the API's resume: one conditional write,
   * then its execution's redrive): with `whenFailed`, once it sees the job
   * failed, else now, whatever the job is; `daysLater` days on (the clock
   * jumps first); with `reconciled`, the reconciler's next pass comes a
   * minute after the resume answered.
   */
  resume(job: number, how: ResumeOptions): Promise<unknown> {
    if (how.whenFailed && this.job(this.jobIds[job] ?? '')?.status !== 'failed') {
      this.resumeWhenFailed.set(job, how);
      return Promise.resolve();
    }
    if (how.daysLater > 0) {
      this.advance(how.daysLater * DAY_MS);
      this.trail.push(`${how.daysLater} days pass`);
    }
    return this.spawn(`resume ${job}`, (actor) => {
      const ports = this.ports(actor);
      return resumeJob(
        { store: ports.store, workflow: ports.workflow, timeline: ports.timeline, now: this.now },
        this.tenantOf(job),
        this.jobIds[job] ?? '',
      );
    }).then(() => {
      if (!how.reconciled) return;
      this.advance(61_000);
      return this.reconcilePass();
    });
  }

  reconcilePass(crashAfterCalls?: number) {
    return this.spawn(
      'reconciler',
      (actor) => {
        const ports = this.ports(actor);
        return reconcile({
          ...ports,
          // No publish jobs in these worlds: the orphan sweep finds no vectors to remove.
          vectors: new MemoryVectorIndex(),
          now: this.now,
          maxInFlight: limits(this.settings.maxInFlight),
          queuedGraceMs: this.settings.queuedGraceMs,
          jobTimeoutMs: this.settings.jobTimeoutMs,
          slotWaitMaxSeconds: this.settings.slotWaitMaxSeconds,
          pageSize: 2,
          // As the reconcile handler gives it: half the invocation's time.
          budgetMs: LAMBDA_TIMEOUT_MS / 2,
          progress: this.reconcilerProgress,
          firstLook: this.firstLook(ports),
          promotionsPerPass: 10,
        });
      },
      crashAfterCalls,
    );
  }

  /**
   * The job's record expired (its retention passed, and with it the time the
   * clock jumps) and its client sends the same key again.
   */
  expireAndResubmit(job: number) {
    const jobId = this.jobIds[job] ?? '';
    const current = this.job(jobId);
    // Retention is weeks: by then the job's execution has closed and its slot is long free.
    const execution = current && this.stepFunctions.executions.get(currentExecutionOf(current));
    if (!current || !isTerminal(current.status) || this.holdsSlot(jobId) || execution?.status === 'RUNNING')
      return undefined;
    this.advance(this.settings.jobRetentionDays * DAY_MS);
    this.store.jobs.delete(jobId);
    this.incarnations.set(jobId, (this.incarnations.get(jobId) ?? 0) + 1);
    this.trail.push(`retention ▶ job ${short(jobId)} expired`);
    return this.submit(job);
  }

  /**
   * Faults stop; the provider finishes what it still runs and says so; then
   * reconciler passes run, the clock jumping past every timeout between them,
   * until every job is settled and every slot free (or the rounds run out).
   */
  async quiesce(rounds: number): Promise<void> {
    this.faults.stop();
    this.provider.stopFaults();
    this.stepFunctions.stopFaults();
    for (let round = 0; round < rounds; round++) {
      // The provider's work and the queue drain before the clock jumps, or the jump would time them out.
      for (let drain = 0; drain < rounds && (this.providerBusy() || this.messagesPending()); drain++) {
        for (const run of this.provider.runs.values()) {
          if (this.provider.finish(run.id, 'succeeded')) this.postEvent(run, 'succeeded');
        }
        this.deliverPending();
        await this.scheduler.waitIdle();
      }
      if (this.settled()) return;
      this.advance(this.settings.jobTimeoutMs + 60_000);
      this.stepFunctions.expireWaits();
      void this.reconcilePass();
      await this.scheduler.waitIdle();
    }
  }

  /** Time passes: provider jobs older than the job timeout end there (and the provider says so). */
  advance(ms: number): void {
    this.clock += ms;
    this.stepFunctions.forgetClosedBefore(this.clock - EXECUTION_RETENTION_MS);
    for (const run of this.provider.timeOut(this.clock - this.settings.jobTimeoutMs)) {
      this.postEvent(run, run.state);
    }
  }

  private providerBusy(): boolean {
    return [...this.provider.runs.values()].some((run) => run.state === 'running');
  }

  private messagesPending(): boolean {
    return this.delivered < this.queue.messages.length;
  }

  /** Every job terminal or in review, and no slot held. */
  settled(): boolean {
    return (
      this.slots.held.size === 0 &&
      this.jobIds.every((id) => {
        const job = this.job(id);
        return !job || isTerminal(job.status) || job.status === 'needs_review';
      })
    );
  }
}

export const keyOf = (job: number) => `key-${job}`;
export const short = (jobId: string) => jobId.slice(4, 9);

function describeArgs(args: unknown[]): string {
  return args
    .map((arg) => {
      if (typeof arg === 'string') return arg.startsWith('job_') ? short(arg) : arg.slice(0, 40);
      if (arg instanceof Date) return '';
      if (arg && typeof arg === 'object' && 'id' in arg) return short(String((arg as Job).id));
      if (Array.isArray(arg)) return `[${arg.join(',')}]`;
      if (arg && typeof arg === 'object') return JSON.stringify(arg).slice(0, 60);
      return String(arg);
    })
    .filter(Boolean)
    .join(', ');
}
