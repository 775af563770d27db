import type { LifecycleEvent } from '../../../config/events';
import { LEGACY_PROVIDER, PROVIDER_NAMES, type ProviderName } from '../../../config/providers';
import { S3_VECTORS_LIMITS } from '../../../config/s3-vectors';
import {
  executionNameOf,
  type Job,
  type JobStatus,
  type ProviderOutcome,
  providerOf,
  type SubmitIntent,
} from '../../../lambdas/domain/job';
import type { MediaItem, MediaStore, Retirement } from '../../../lambdas/domain/media-library';
import type {
  ActiveStatus,
  CreateOutcome,
  EnqueueOptions,
  EventPublisher,
  ExecutionStatus,
  InFlightLimits,
  InputStore,
  JobPage,
  JobQueue,
  JobStore,
  KeptSteps,
  LiveChannel,
  LiveMessage,
  OutputStore,
  PassageVector,
  PoolRate,
  ProgressTick,
  ProviderPause,
  QueuedJobRef,
  RateLimit,
  RateToken,
  ReconcilerPosition,
  ReconcilerProgress,
  SlotGiveBack,
  SlotGrant,
  SlotGrantOutcome,
  SlotPool,
  SlotPoolState,
  SlotPools,
  StatusChange,
  StepHistory,
  TenantBacklogs,
  TenantClaim,
  TenantJobQuery,
  TenantKeys,
  TenantShare,
  TenantShares,
  TenantStore,
  Timeline,
  TimelineEvent,
  VectorFilter,
  VectorHit,
  VectorIndex,
  WaitingEntry,
  WaitingLines,
  WaitingTenant,
  Workflow,
} from '../../../lambdas/domain/ports';
import type { Provider, ProviderJobStatus, ProviderSubmission } from '../../../lambdas/domain/provider';
import { rateTokenOf, TOKEN_READINGS } from '../../../lambdas/domain/rates';
import type {
  Schedule,
  ScheduleCreateOutcome,
  ScheduleStore,
  ScheduleTriggers,
} from '../../../lambdas/domain/schedules';
import {
  inBacklog,
  TENANT_DEFAULTS,
  type TenantChanges,
  type TenantRecord,
  USAGE_STATUSES,
} from '../../../lambdas/domain/tenants';

/**
 * In-memory ports with the semantics the domain relies on (conditional create
 * and transitions, an exact slot limit), for testing use cases without AWS.
 */
export class MemoryStore implements JobStore {
  readonly jobs = new Map<string, Job>();
  /** Each tenant's backlog counter, which status writes move as the table's do (see MemoryBacklogs). */
  readonly backlogs = new Map<string, number>();
  moveBacklog(tenant: string, delta: number) {
    this.backlogs.set(tenant, Math.max(0, (this.backlogs.get(tenant) ?? 0) + delta));
  }
  async create(job: Job): Promise<CreateOutcome> {
    const existing = this.jobs.get(job.id);
    if (existing) return { created: false, existing };
    this.jobs.set(job.id, job);
    return { created: true };
  }
  async get(jobId: string) {
    return this.jobs.get(jobId);
  }
  /** Ids asked for by each getMany, to tell a batch's one lookup from a read per item. */
  readonly lookups: (readonly string[])[] = [];
  async getMany(jobIds: readonly string[]) {
    this.lookups.push(jobIds);
    return new Map(jobIds.flatMap((id) => (this.jobs.has(id) ? [[id, this.jobs.get(id) as Job]] : [])));
  }
  async markEnqueued(jobId: string, at: Date) {
    this.patch(jobId, { enqueuedAt: at.toISOString() });
  }
  /**
   * Newest first (then by id), the cursor the last job's key, as the index's is: a page after
   * jobs left the listing (canceled out of a status) goes on where the last one stopped.
   */
  async listByTenant(tenantId: string, query: TenantJobQuery): Promise<JobPage> {
    this.listings.push({ tenantId, query });
    const all = [...this.jobs.values()]
      .filter(
        (job) =>
          job.tenantId === tenantId &&
          job.parent === undefined &&
          (query.status === undefined || job.status === query.status) &&
          (query.type === undefined || job.type === query.type) &&
          (query.createdAfter === undefined || Date.parse(job.createdAt) > Date.parse(query.createdAfter)) &&
          (query.createdBefore === undefined || Date.parse(job.createdAt) < Date.parse(query.createdBefore)),
      )
      .sort((a, b) => b.createdAt.localeCompare(a.createdAt) || b.id.localeCompare(a.id));
    const after = (job: Job) => {
      if (!query.cursor) return true;
      const [createdAt = '', id = ''] = query.cursor.split('|');
      return job.createdAt < createdAt || (job.createdAt === createdAt && job.id < id);
    };
    const rest = all.filter(after);
    const items = rest.slice(0, query.limit);
    const last = items.at(-1);
    return { items, nextCursor: rest.length > query.limit && last ? `${last.createdAt}|${last.id}` : null };
  }
  /** Each listing asked for, to tell a bounded walk from one that reads everything. */
  readonly listings: { readonly tenantId: string; readonly query: TenantJobQuery }[] = [];
  async transition(job: Pick<Job, 'id'>, from: readonly JobStatus[], change: StatusChange, at: Date) {
    const current = this.jobs.get(job.id);
    if (!current || !from.includes(current.status)) return undefined;
    if (inBacklog(current.status) && !inBacklog(change.status)) this.moveBacklog(current.tenantId, -1);
    return this.patch(job.id, { ...change, statusAt: at.toISOString(), updatedAt: at.toISOString() });
  }
  async requestCancel(jobId: string, at: Date) {
    const current = this.jobs.get(jobId);
    if (!current || !['running', 'needs_review'].includes(current.status)) return undefined;
    return this.patch(jobId, { cancelRequestedAt: current.cancelRequestedAt ?? at.toISOString() });
  }
  async recordSubmitIntent(jobId: string, intent: SubmitIntent, replacing: string | undefined) {
    const current = this.jobs.get(jobId);
    if (current?.status !== 'running' || current.providerJobId) return undefined;
    if (current.submitIntent?.attemptId !== replacing) return undefined;
    return this.patch(jobId, { submitIntent: intent, attempts: current.attempts + 1 });
  }
  async settleSubmitIntent(
    jobId: string,
    providerJobId: string | undefined,
    _at?: Date,
    answeredCalls?: number,
  ) {
    const current = this.jobs.get(jobId);
    if (!current || current.providerJobId) return;
    const { submitIntent: _intent, answeredCalls: before, ...rest } = current;
    const answered = providerJobId ? undefined : answeredCalls || before;
    this.jobs.set(jobId, {
      ...rest,
      ...(providerJobId ? { providerJobId } : {}),
      ...(answered ? { answeredCalls: answered } : {}),
    });
  }
  async recordTaskToken(jobId: string, taskToken: string) {
    const current = this.jobs.get(jobId);
    if (current?.status !== 'running') return undefined;
    return this.patch(jobId, { taskToken });
  }
  async recordParentToken(jobId: string, taskToken: string) {
    const parent = this.jobs.get(jobId)?.parent;
    if (!parent) return undefined;
    return this.patch(jobId, { parent: { ...parent, taskToken } });
  }
  async recordProviderOutcome(
    job: Pick<Job, 'id' | 'createdAt' | 'resubmissions'>,
    outcome: ProviderOutcome,
  ) {
    const current = this.jobs.get(job.id);
    if (!current) return undefined;
    const same =
      current.createdAt === job.createdAt &&
      (current.resubmissions ?? 0) === (job.resubmissions ?? 0) &&
      (!outcome.providerJobId || !current.providerJobId || current.providerJobId === outcome.providerJobId);
    return current.providerOutcome || !same ? current : this.patch(job.id, { providerOutcome: outcome });
  }

  /** The slot pools and lines a grant writes with the job, as one table holds them all: a setup wires them. */
  granting?: {
    readonly pool: (provider: ProviderName) => MemorySlots;
    readonly waiting?: MemoryWaitingLines;
  };
  /** Each grant's job id, whatever its outcome. */
  readonly grants: string[] = [];
  /** Grants still to meet another transaction and do nothing, as DynamoDB cancels them (`conflict`). */
  conflictingGrants = 0;
  async startWithSlot(grant: SlotGrant, at: Date): Promise<SlotGrantOutcome> {
    if (!this.granting) throw new Error('MemoryStore: wire `granting` to grant slots');
    this.grants.push(grant.job.id);
    if (this.conflictingGrants > 0) {
      this.conflictingGrants -= 1;
      return { refused: 'conflict' };
    }
    // All of it at once, with no await in between: a transaction.
    const current = this.jobs.get(grant.job.id);
    if (current?.status !== 'queued' || current.createdAt !== grant.job.createdAt) return { refused: 'job' };
    if (current.startBy !== undefined && current.startBy <= at.toISOString() && !current.submitIntent) {
      return { refused: 'job' };
    }
    if (
      !this.granting.pool(providerOf(current)).take(grant.holder, grant.limit, grant.claim, at, grant.token)
    ) {
      return { refused: 'slot' };
    }
    if (grant.entry) this.granting.waiting?.removeNow(grant.entry);
    this.moveBacklog(current.tenantId, -1);
    const stamp = at.toISOString();
    // A probe's grant says so on the job; any other leaves no word of an earlier run's probe.
    const { probes: _earlier, ...unprobed } = current;
    this.jobs.set(current.id, unprobed);
    const granted = this.patch(current.id, {
      status: 'running',
      statusAt: stamp,
      updatedAt: stamp,
      startedAt: stamp,
      executionName: executionNameOf(current),
      enqueuedAt: stamp,
      ...(grant.token.probe !== undefined ? { probes: true } : {}),
    }) as Job;
    return { granted };
  }
  async touchEnqueued(jobId: string, at: Date) {
    if (this.jobs.get(jobId)?.status !== 'queued') return false;
    this.patch(jobId, { enqueuedAt: at.toISOString() });
    return true;
  }
  async claimRequeue(job: Pick<Job, 'id' | 'enqueuedAt'>, at: Date) {
    const current = this.jobs.get(job.id);
    if (current?.status !== 'queued' || current.enqueuedAt !== job.enqueuedAt) return false;
    this.patch(job.id, { enqueuedAt: at.toISOString() });
    return true;
  }
  /** The table's condition on a tick's write, checked on the job as it is (see DynamoDbJobStore). */
  async recordProgressTick(jobId: string, tick: ProgressTick) {
    const current = this.jobs.get(jobId);
    if (current?.status !== 'running' || current.progress >= tick.progress) return undefined;
    if (tick.submission !== undefined && current.createdAt !== tick.submission.createdAt) return undefined;
    if ((current.resubmissions ?? 0) !== (tick.submission?.number ?? 0)) return undefined;
    if (
      current.providerJobId === undefined
        ? current.submitIntent === undefined
        : current.providerJobId !== tick.providerJobId
    ) {
      return undefined;
    }
    const last = this.progressAt.get(jobId);
    if (last !== undefined && last > tick.notSince.getTime()) return undefined;
    this.progressWrites++;
    this.progressAt.set(jobId, tick.at.getTime());
    return this.patch(jobId, { progress: tick.progress, updatedAt: tick.at.toISOString() });
  }
  private readonly progressAt = new Map<string, number>();
  /** Progress writes that the condition let through. */
  progressWrites = 0;
  async recordNewRun(job: Job) {
    const current = this.jobs.get(job.id);
    if (!current || current.runs !== job.runs) return undefined;
    const runs = (job.runs ?? 0) + 1;
    const { taskToken: _token, ...rest } = current;
    this.jobs.set(job.id, { ...rest, runs, executionName: executionNameOf({ ...current, runs }) });
    return this.jobs.get(job.id);
  }
  async requeueForResubmission(job: Job, at: Date) {
    const current = this.jobs.get(job.id);
    if (current?.status !== 'needs_review') return undefined;
    const {
      submitIntent: _i,
      providerJobId: _p,
      providerOutcome: _o,
      taskToken: _t,
      executionName: _e,
      enqueuedAt: _q,
      ...rest
    } = current;
    this.jobs.set(job.id, {
      ...rest,
      status: 'queued',
      statusAt: at.toISOString(),
      runs: (current.runs ?? 0) + 1,
      resubmissions: (current.resubmissions ?? 0) + 1,
      progress: 0,
      error: null,
    });
    this.moveBacklog(current.tenantId, 1);
    return this.jobs.get(job.id);
  }
  async returnToQueue(job: Job, at: Date) {
    const current = this.jobs.get(job.id);
    if (current?.status !== 'running' || current.providerJobId !== undefined) return undefined;
    if ((current.runs ?? 0) !== (job.runs ?? 0)) return undefined;
    const { executionName: _e, startedAt: _s, taskToken: _t, enqueuedAt: _q, ...rest } = current;
    const stamp = at.toISOString();
    this.jobs.set(job.id, {
      ...rest,
      status: 'queued',
      statusAt: stamp,
      updatedAt: stamp,
      runs: (current.runs ?? 0) + 1,
      progress: 0,
      attempts: Math.max(0, current.attempts - 1),
    });
    this.moveBacklog(current.tenantId, 1);
    return this.jobs.get(job.id);
  }
  async reopenFailed(job: Pick<Job, 'id' | 'resumes'>, at: Date) {
    const current = this.jobs.get(job.id);
    if (current?.status !== 'failed' || current.replacedBy !== undefined) return undefined;
    const { finishedAt: _f, ...rest } = current;
    const stamp = at.toISOString();
    this.jobs.set(job.id, {
      ...rest,
      status: 'running',
      statusAt: stamp,
      updatedAt: stamp,
      resumedAt: stamp,
      resumes: (job.resumes ?? 0) + 1,
      error: null,
    });
    return this.jobs.get(job.id);
  }
  async markReplaced(
    job: Pick<Job, 'id' | 'status'>,
    replacement: string | undefined,
    was: string | undefined,
    replacementKey?: string,
  ) {
    const current = this.jobs.get(job.id);
    if (current?.status !== job.status || current.replacedBy !== was) return undefined;
    const { replacedBy: _r, replacedByKey: _k, ...rest } = current;
    const named = {
      ...(replacement !== undefined ? { replacedBy: replacement } : {}),
      ...(replacement !== undefined && replacementKey !== undefined ? { replacedByKey: replacementKey } : {}),
    };
    this.jobs.set(job.id, { ...rest, ...named });
    return this.jobs.get(job.id);
  }
  /** Jobs this store lists are all listed by provider already. */
  async listDue(now: Date, limit: number) {
    // Earliest runAt first, as the due index's sort key orders them.
    return [...this.jobs.values()]
      .filter((job) => job.status === 'scheduled' && (job.runAt ?? '') <= now.toISOString())
      .sort((a, b) => (a.runAt ?? '').localeCompare(b.runAt ?? ''))
      .slice(0, limit);
  }
  async countActive(provider: ProviderName, status: ActiveStatus) {
    return [...this.jobs.values()].filter((job) => job.status === status && providerOf(job) === provider)
      .length;
  }
  async listActive(provider: ProviderName, status: ActiveStatus, page: { limit: number; cursor?: string }) {
    // Oldest first, as the active index's sort key orders them.
    const all = [...this.jobs.values()]
      .filter((job) => job.status === status && providerOf(job) === provider)
      .sort((a, b) => a.createdAt.localeCompare(b.createdAt));
    const offset = page.cursor ? Number(page.cursor) : 0;
    const items = all.slice(offset, offset + page.limit);
    const next = offset + page.limit;
    return { items, itemsRead: items.length, nextCursor: next < all.length ? String(next) : null };
  }
  private patch(jobId: string, patch: Partial<Job>): Job | undefined {
    const current = this.jobs.get(jobId);
    if (!current) return undefined;
    const next = { ...current, ...patch } as Job;
    this.jobs.set(jobId, next);
    return next;
  }
}

export class MemoryLive implements LiveChannel {
  readonly messages: LiveMessage[] = [];
  async publish(message: LiveMessage) {
    this.messages.push(message);
  }
}

export class MemoryQueue implements JobQueue {
  readonly messages: { jobId: string; provider: ProviderName; options: EnqueueOptions }[] = [];
  failing = false;
  /** Jobs whose messages a batch enqueue fails to send, as SQS fails single entries of a batch. */
  readonly refusing = new Set<string>();
  /** The job ids of each enqueueMany, to tell batched sends from one send per job. */
  readonly batches: (readonly string[])[] = [];
  async enqueue(job: QueuedJobRef, options: EnqueueOptions = {}) {
    if (this.failing) throw new Error('queue unavailable');
    this.messages.push({ jobId: job.id, provider: providerOf(job), options });
  }
  async enqueueMany(jobs: readonly QueuedJobRef[], options: EnqueueOptions = {}) {
    this.batches.push(jobs.map((job) => job.id));
    const failed = new Map<string, unknown>();
    for (const job of jobs) {
      if (this.failing || this.refusing.has(job.id)) failed.set(job.id, new Error('queue unavailable'));
      else this.messages.push({ jobId: job.id, provider: providerOf(job), options });
    }
    return failed;
  }
}

export class MemoryInputs implements InputStore {
  readonly objects = new Map<string, { bytes: Uint8Array; contentType: string }>();
  async putInput(tenantId: string, ref: string, bytes: Uint8Array, contentType: string) {
    this.objects.set(`${tenantId}/${ref}`, { bytes, contentType });
  }
  async presignUpload(tenantId: string, ref: string) {
    return `https://uploads.example/${tenantId}/${ref}`;
  }
  async downloadUrl(tenantId: string, ref: string) {
    return `https://inputs.example/${tenantId}/${ref}`;
  }
  async deleteInput(tenantId: string, ref: string) {
    this.objects.delete(`${tenantId}/${ref}`);
  }
  async inputInfo(tenantId: string, ref: string) {
    const object = this.objects.get(`${tenantId}/${ref}`);
    return object ? { size: object.bytes.length, contentType: object.contentType } : undefined;
  }
}

export class MemoryOutputs implements OutputStore {
  readonly objects = new Map<string, { body: Uint8Array | string; contentType: string }>();
  async putOutput(key: string, body: Uint8Array | string, contentType: string) {
    this.objects.set(key, { body, contentType });
  }
  async outputUrl(key: string) {
    return `https://outputs.example/${key}`;
  }
  async getOutput(key: string) {
    const object = this.objects.get(key);
    if (!object) return undefined;
    return typeof object.body === 'string' ? new TextEncoder().encode(object.body) : object.body;
  }
  async deleteOutputs(prefix: string) {
    const keys = [...this.objects.keys()].filter((key) => key.startsWith(prefix));
    for (const key of keys) this.objects.delete(key);
    return keys.length;
  }
}

export class MemorySlots implements SlotPool {
  /** Whether the tenant has a waiting marker at this pool's provider; wired by `granting`. */
  waiting: (tenant: string) => boolean = () => false;
  readonly held = new Set<string>();
  /** Each tenant's holders. */
  readonly byTenant = new Map<string, Set<string>>();
  readonly passes = new Map<string, number>();
  floor = 0;
  /** The pool's pause, as the item keeps it. */
  paused?: { until: number; seconds: number; reason: string };
  /** The probe after a pause, as the item keeps it. */
  probe?: { until: number; holder: string };
  /** The provider's declared rate, as the adapter is given it. */
  declared?: RateLimit;
  /** The rate's clock, the throttle's rate and the grants' count, as the item keeps them. */
  tat?: number;
  throttled?: { perMinute: number; at: number };
  lastThrottleAt?: number;
  grants?: { minute: number; count: number; before: number; since?: number };
  /** The time `acquire` judges a pause and the rate by, as the adapter's clock. */
  clock: () => Date = () => new Date();
  async acquire(holder: string, limit: number, claim?: TenantClaim, token?: RateToken) {
    if (this.held.has(holder)) return true;
    // As the adapter: a token it reckons itself is reckoned again from a new read when it went stale.
    let state = token ? undefined : await this.state();
    for (let reading = 1; ; reading++) {
      const at = this.clock();
      const decision = state ? rateTokenOf(state, at) : { token: token as RateToken };
      if (state && !('token' in decision)) return state.holders.includes(holder);
      if ('token' in decision && this.take(holder, limit, claim, at, decision.token)) return true;
      const seen = await this.state();
      if (seen.holders.includes(holder)) return true;
      if (!state || !('token' in decision) || seen.holders.length >= limit || reading >= TOKEN_READINGS) {
        return false;
      }
      state = seen;
    }
  }
  /** The conditional update itself, at once: refused for a holder that has a slot already, as the item's condition is. */
  take(holder: string, limit: number, claim: TenantClaim | undefined, at: Date, token: RateToken): boolean {
    const now = at.getTime();
    if (this.held.has(holder)) return false;
    if (this.held.size >= limit) return false;
    const paused = this.paused?.until ? this.paused.until : undefined;
    if (token.probe) {
      if (paused !== token.probe.pausedUntil || paused > now) return false;
      if (this.probe && this.probe.until > paused) return false;
    } else if (paused !== undefined) {
      if (paused > now || !this.probe || this.probe.until <= paused || this.probe.until > now) return false;
    }
    if (token.tat && this.tat !== token.tat.expected) return false;
    const count = token.count;
    if (
      count &&
      this.grants?.minute !== (count.expectedMinute === count.minute ? count.minute : count.expectedMinute)
    ) {
      return false;
    }
    if (claim) {
      const mine = this.byTenant.get(claim.tenant) ?? new Set<string>();
      if (claim.maxInFlight !== undefined && mine.size >= claim.maxInFlight) return false;
      if (claim.pass && this.passes.get(claim.tenant) !== claim.pass.expected) return false;
      mine.add(holder);
      this.byTenant.set(claim.tenant, mine);
      if (claim.pass) {
        this.passes.set(claim.tenant, claim.pass.next);
        this.floor = claim.pass.floor;
      }
    }
    if (token.probe) this.probe = { until: token.probe.until, holder };
    if (token.tat) this.tat = token.tat.next;
    if (count) {
      this.grants =
        count.expectedMinute === count.minute && this.grants
          ? { ...this.grants, count: this.grants.count + 1 }
          : {
              minute: count.minute,
              count: 1,
              before: count.before,
              ...(count.since !== undefined
                ? { since: count.since }
                : this.grants?.since !== undefined
                  ? { since: this.grants.since }
                  : {}),
            };
    }
    this.held.add(holder);
    return true;
  }
  async release(holder: string, tenant?: string) {
    const left = await this.giveBack(holder, tenant);
    if (left === 'last' && tenant !== undefined) await this.forgetIdlePass(tenant);
    return left !== 'not held';
  }
  async giveBack(holder: string, tenant?: string): Promise<SlotGiveBack> {
    if (!this.held.delete(holder)) return 'not held';
    if (tenant === undefined) return 'others held';
    this.byTenant.get(tenant)?.delete(holder);
    if (this.byTenant.get(tenant)?.size) return 'others held';
    // As the item keeps them: an emptied set is gone; the pass stays for `forgetIdlePass`.
    this.byTenant.delete(tenant);
    return 'last';
  }
  async forgetIdlePass(tenant: string) {
    if (!this.waiting(tenant)) this.forgetIfIdle(tenant);
  }
  /** Drops the tenant's pass if it holds no slot (a retired marker's transaction). */
  forgetIfIdle(tenant: string) {
    if (!this.byTenant.get(tenant)?.size) this.passes.delete(tenant);
  }
  async holders() {
    return [...this.held];
  }
  async pause(pause: ProviderPause) {
    const until = pause.until.getTime();
    if (this.paused && this.paused.until >= until) return false;
    this.paused = { until, seconds: pause.seconds, reason: pause.reason.slice(0, 500) };
    this.probe = undefined;
    if (pause.throttled) this.throttled = { ...pause.throttled };
    if (pause.throttleAt !== undefined) this.lastThrottleAt = pause.throttleAt;
    return true;
  }
  async endProbe(holder: string, at: Date) {
    const now = at.getTime();
    const paused = this.paused?.until ?? 0;
    if (this.probe?.holder !== holder || this.probe.until <= now || paused >= now) return false;
    this.probe = { until: now, holder: '' };
    return true;
  }
  async resume() {
    // As the item keeps it: the pause's length stays, for the next pause's backoff.
    if (this.paused) this.paused = { ...this.paused, until: 0, reason: '' };
    this.probe = undefined;
  }
  async state(): Promise<SlotPoolState> {
    return {
      holders: [...this.held],
      tenantInFlight: Object.fromEntries([...this.byTenant].map(([tenant, mine]) => [tenant, mine.size])),
      passes: Object.fromEntries(this.passes),
      floor: this.floor,
      ...(this.paused
        ? {
            ...(this.paused.until ? { pausedUntil: this.paused.until, pauseReason: this.paused.reason } : {}),
            pauseSeconds: this.paused.seconds,
          }
        : {}),
      ...(this.probe ? { probeUntil: this.probe.until } : {}),
      ...this.rate(),
    };
  }
  private rate(): { rate?: PoolRate } {
    const rate: PoolRate = {
      ...(this.declared ? { declared: this.declared } : {}),
      ...(this.tat === undefined ? {} : { tat: this.tat }),
      ...(this.throttled ? { throttled: { ...this.throttled } } : {}),
      ...(this.lastThrottleAt === undefined ? {} : { lastThrottleAt: this.lastThrottleAt }),
      ...(this.grants ? { grants: { ...this.grants } } : {}),
    };
    return Object.keys(rate).length ? { rate } : {};
  }
}

/** Every tenant's waiting lines, in memory, in the order the DynamoDB adapter keeps them. */
export class MemoryWaitingLines implements WaitingLines {
  /** The slot pools whose passes a retired marker drops; wired by `granting`. */
  pools?: (provider: ProviderName) => MemorySlots;
  readonly lines = new Map<string, Map<string, WaitingEntry>>();
  readonly marks = new Map<string, number>();
  private static line(provider: ProviderName, tenant: string) {
    return `${provider}#${tenant}`;
  }
  async add(entry: WaitingEntry) {
    const key = MemoryWaitingLines.line(entry.provider, entry.tenant);
    const line = this.lines.get(key) ?? new Map<string, WaitingEntry>();
    line.set(entry.place, entry);
    this.lines.set(key, line);
    this.marks.set(key, (this.marks.get(key) ?? 0) + 1);
  }
  /** Jobs whose line entries a batch add fails to write. */
  readonly refusing = new Set<string>();
  /** The job ids of each addMany, to tell a batch's writes from one per job. */
  readonly batches: (readonly string[])[] = [];
  async addMany(entries: readonly WaitingEntry[]) {
    this.batches.push(entries.map((entry) => entry.jobId));
    const failed = new Map<string, unknown>();
    for (const entry of entries) {
      if (this.refusing.has(entry.jobId)) failed.set(entry.jobId, new Error('table unavailable'));
      else await this.add(entry);
    }
    return failed;
  }
  async remove(entry: WaitingEntry) {
    this.removeNow(entry);
  }
  removeNow(entry: WaitingEntry) {
    this.lines.get(MemoryWaitingLines.line(entry.provider, entry.tenant))?.delete(entry.place);
  }
  async tenants(provider: ProviderName) {
    return [...this.marks]
      .filter(([key]) => key.startsWith(`${provider}#`))
      .map(([key, marks]) => ({ tenant: key.slice(provider.length + 1), marks }))
      .sort((a, b) => (a.tenant < b.tenant ? -1 : 1));
  }
  async head(provider: ProviderName, tenant: string, limit: number) {
    const line = this.lines.get(MemoryWaitingLines.line(provider, tenant)) ?? new Map<string, WaitingEntry>();
    return [...line.keys()]
      .sort()
      .slice(0, limit)
      .map((place) => line.get(place) as WaitingEntry);
  }
  async retire(provider: ProviderName, tenant: WaitingTenant) {
    const key = MemoryWaitingLines.line(provider, tenant.tenant);
    if (this.marks.get(key) !== tenant.marks) return;
    this.marks.delete(key);
    this.pools?.(provider).forgetIfIdle(tenant.tenant);
  }
  /** Whether the tenant is marked waiting at the provider. */
  marked(provider: ProviderName, tenant: string) {
    return this.marks.has(MemoryWaitingLines.line(provider, tenant));
  }
  /** Every entry, in no particular order. */
  entries(): WaitingEntry[] {
    return [...this.lines.values()].flatMap((line) => [...line.values()]);
  }
}

/** Every tenant has the defaults unless given a share here. */
export function memoryTenantShares(shares: Record<string, TenantShare> = {}): TenantShares {
  return async (tenants) => new Map(tenants.map((tenant) => [tenant, shares[tenant] ?? { weight: 1 }]));
}

/**
 * Every provider's slot pool, each a MemorySlots; called as a SlotPools, and
 * used directly as the pool of the provider the tests' jobs run on.
 */
export type MemorySlotPools = SlotPools &
  SlotPool & {
    readonly held: Set<string>;
    pool(provider: ProviderName): MemorySlots;
    /** Lets each pool see which tenants wait, as the pool's transactions see the lines' markers. */
    linkWaiting(waiting: MemoryWaitingLines): void;
  };
export function memorySlots(): MemorySlotPools {
  const pools = new Map<ProviderName, MemorySlots>();
  let lines: MemoryWaitingLines | undefined;
  const link = (provider: ProviderName, slots: MemorySlots) => {
    slots.waiting = (tenant) => lines?.marked(provider, tenant) ?? false;
  };
  const pool = (provider: ProviderName) => {
    let found = pools.get(provider);
    if (!found) {
      found = new MemorySlots();
      link(provider, found);
      pools.set(provider, found);
    }
    return found;
  };
  const legacy = pool(LEGACY_PROVIDER);
  return Object.assign((provider: ProviderName) => pool(provider), {
    held: legacy.held,
    pool,
    acquire: (holder: string, limit: number, claim?: TenantClaim) => legacy.acquire(holder, limit, claim),
    release: (holder: string, tenant?: string) => legacy.release(holder, tenant),
    giveBack: (holder: string, tenant?: string) => legacy.giveBack(holder, tenant),
    forgetIdlePass: (tenant: string) => legacy.forgetIdlePass(tenant),
    holders: () => legacy.holders(),
    state: () => legacy.state(),
    pause: (pause: ProviderPause) => legacy.pause(pause),
    resume: () => legacy.resume(),
    endProbe: (holder: string, at: Date) => legacy.endProbe(holder, at),
    linkWaiting: (waiting: MemoryWaitingLines) => {
      lines = waiting;
    },
  });
}

/** Wires a store to the pools and lines its slot grants write with the job, as one table holds them all. */
export function granting<
  D extends { store: MemoryStore; slots: MemorySlotPools; waiting?: MemoryWaitingLines },
>(deps: D): D {
  deps.store.granting = { pool: deps.slots.pool, ...(deps.waiting ? { waiting: deps.waiting } : {}) };
  const waiting = deps.waiting;
  if (waiting) {
    waiting.pools = deps.slots.pool;
    deps.slots.linkWaiting(waiting);
  }
  return deps;
}

/** The same in-flight limit at every provider. */
export const limits = (limit: number): InFlightLimits =>
  Object.fromEntries(PROVIDER_NAMES.map((name) => [name, limit])) as InFlightLimits;

/** Tenants' records, and their usage counted from the jobs of a store. */
export class MemoryTenants implements TenantStore {
  readonly records = new Map<string, TenantRecord>();
  constructor(private readonly store: MemoryStore = new MemoryStore()) {}
  async get(tenant: string) {
    return this.records.get(tenant);
  }
  async update(tenant: string, changes: TenantChanges) {
    const { maxInFlight, ...rest } = this.records.get(tenant) ?? { tenant, ...TENANT_DEFAULTS };
    const cap = changes.maxInFlight === undefined ? maxInFlight : (changes.maxInFlight ?? undefined);
    const record: TenantRecord = {
      ...rest,
      ...(changes.weight !== undefined ? { weight: changes.weight } : {}),
      ...(changes.maxQueued !== undefined ? { maxQueued: changes.maxQueued } : {}),
      ...(cap !== undefined ? { maxInFlight: cap } : {}),
    };
    this.records.set(tenant, record);
    return record;
  }
  async ensure(tenant: string) {
    if (this.records.has(tenant)) return false;
    this.records.set(tenant, { tenant, ...TENANT_DEFAULTS });
    return true;
  }
  async usage(tenant: string) {
    const count = (status: string) =>
      [...this.store.jobs.values()].filter((job) => job.tenantId === tenant && job.status === status).length;
    return {
      queued: count(USAGE_STATUSES.queued),
      scheduled: count(USAGE_STATUSES.scheduled),
      inFlight: count(USAGE_STATUSES.inFlight),
    };
  }
}

/** Tenants' backlog counters, kept in a store's `backlogs` and capped by tenants' records. */
export class MemoryBacklogs implements TenantBacklogs {
  constructor(
    private readonly store: MemoryStore,
    private readonly records: Map<string, TenantRecord> = new Map(),
  ) {}
  async admit(tenant: string) {
    const cap = this.records.get(tenant)?.maxQueued ?? TENANT_DEFAULTS.maxQueued;
    if ((this.store.backlogs.get(tenant) ?? 0) >= cap) return false;
    this.store.moveBacklog(tenant, 1);
    return true;
  }
  async admitPastCap(tenant: string) {
    this.store.moveBacklog(tenant, 1);
  }
  async admitUpTo(tenant: string, wanted: number) {
    const cap = this.records.get(tenant)?.maxQueued ?? TENANT_DEFAULTS.maxQueued;
    const count = Math.max(0, Math.min(wanted, cap - (this.store.backlogs.get(tenant) ?? 0)));
    this.store.moveBacklog(tenant, count);
    return count;
  }
  async giveBack(tenant: string, count = 1) {
    this.store.moveBacklog(tenant, -count);
  }
  /** Tenants with a counter but off the list, as a stop between a raise and its listing leaves them. */
  readonly unlisted = new Set<string>();
  async list(tenants: readonly string[]) {
    for (const tenant of tenants) {
      this.unlisted.delete(tenant);
      if (!this.store.backlogs.has(tenant)) this.store.backlogs.set(tenant, 0);
    }
  }
  async tenants() {
    return [...this.store.backlogs.keys()].filter((tenant) => !this.unlisted.has(tenant)).sort();
  }
  async recount(tenant: string) {
    const count = (status: string) =>
      [...this.store.jobs.values()].filter((job) => job.tenantId === tenant && job.status === status).length;
    const counted = this.store.backlogs.get(tenant) ?? 0;
    const queued = count(USAGE_STATUSES.queued);
    const scheduled = count(USAGE_STATUSES.scheduled);
    this.store.backlogs.set(tenant, queued + scheduled);
    return { tenant, counted, queued, scheduled, corrected: counted !== queued + scheduled };
  }
}

/** The tenant names API keys were issued to. */
export class MemoryTenantKeys implements TenantKeys {
  constructor(readonly tenants: Set<string> = new Set()) {}
  async hasKeys(tenant: string) {
    return this.tenants.has(tenant);
  }
}

export class MemoryReconcilerProgress implements ReconcilerProgress {
  position: ReconcilerPosition | undefined;
  async load() {
    return this.position;
  }
  async save(position: ReconcilerPosition | undefined) {
    this.position = position;
  }
}

/** The event bus in memory: every put, in order, repeats included (as a consumer sees them). */
export class MemoryEvents implements EventPublisher {
  readonly published: LifecycleEvent[] = [];
  /** Throws on the next `failures` puts, as a bus that did not take them. */
  failures = 0;
  async publish(events: readonly LifecycleEvent[]) {
    if (this.failures > 0) {
      this.failures--;
      throw new Error('The bus did not take the events.');
    }
    this.published.push(...events);
  }
  detailTypes(): string[] {
    return this.published.map((event) => event.detailType);
  }
}

export class MemoryTimeline implements Timeline {
  readonly events = new Map<string, TimelineEvent[]>();
  async record(jobId: string, event: TimelineEvent) {
    this.events.set(jobId, [...(this.events.get(jobId) ?? []), event]);
  }
  async list(jobId: string, since: string) {
    return (this.events.get(jobId) ?? []).filter((event) => event.at >= since);
  }
  readonly kept = new Map<string, Map<string, KeptSteps>>();
  async keptSteps(jobId: string) {
    return [...(this.kept.get(jobId)?.values() ?? [])];
  }
  async keepSteps(jobId: string, steps: KeptSteps) {
    this.kept.set(jobId, new Map(this.kept.get(jobId)).set(steps.executionName, steps));
  }
  types(jobId: string): string[] {
    return (this.events.get(jobId) ?? []).map((e) => (e.step ? `${e.type}:${e.step}` : e.type));
  }
}

export class MemoryWorkflow implements Workflow {
  readonly started: string[] = [];
  readonly heartbeats: string[] = [];
  /** Execution status by name; started executions are RUNNING unless set otherwise. */
  readonly statuses = new Map<string, ExecutionStatus>();
  async status(executionName: string): Promise<ExecutionStatus> {
    return (
      this.statuses.get(executionName) ?? (this.started.includes(executionName) ? 'RUNNING' : 'NOT_FOUND')
    );
  }
  async heartbeat(taskToken: string) {
    this.heartbeats.push(taskToken);
    return true;
  }
  readonly stopped: string[] = [];
  readonly completed: { taskToken: string; output: unknown }[] = [];
  readonly failed: { taskToken: string; error: string; cause: string }[] = [];
  /** The state machine each execution was started on, when the caller named one. */
  readonly machines = new Map<string, string>();
  /** Set to make the next starts fail, as a throttled StartExecution would. */
  failStarts = 0;
  async start(executionName: string, _input: { readonly jobId: string }, stateMachine?: string) {
    if (this.failStarts > 0) {
      this.failStarts--;
      throw new Error('Rate exceeded');
    }
    if (!this.started.includes(executionName)) this.started.push(executionName);
    if (stateMachine) this.machines.set(executionName, stateMachine);
  }
  /** Each execution's step events, as its history would show them. */
  readonly histories = new Map<string, TimelineEvent[]>();
  async stepEvents(executionName: string): Promise<StepHistory> {
    const status = await this.status(executionName);
    return {
      events: this.histories.get(executionName) ?? [],
      ended: status !== 'RUNNING' && status !== 'NOT_FOUND',
    };
  }
  async stop(executionName: string) {
    this.stopped.push(executionName);
  }
  /** Each redrive asked for, as `execution/clientToken`; a repeated token is one redrive, as in Step Functions. */
  readonly redriven: string[] = [];
  /** Executions Step Functions would not redrive although they failed (ended over 14 days ago). */
  readonly notRedrivable = new Set<string>();
  async redrive(executionName: string, clientToken: string): Promise<'redriven' | 'running' | 'ended'> {
    const status = await this.status(executionName);
    if (status === 'RUNNING') return 'running';
    if (status === 'SUCCEEDED' || status === 'NOT_FOUND' || this.notRedrivable.has(executionName))
      return 'ended';
    const request = `${executionName}/${clientToken}`;
    if (!this.redriven.includes(request)) this.redriven.push(request);
    this.statuses.set(executionName, 'RUNNING');
    return 'redriven';
  }
  async completeTask(taskToken: string, output: unknown) {
    this.completed.push({ taskToken, output });
    return true;
  }
  async failTask(taskToken: string, error: string, cause: string) {
    this.failed.push({ taskToken, error, cause });
    return true;
  }
}

/** A provider whose next answers are scripted: each entry is a result or an error to throw. */
export class ScriptedProvider implements Provider {
  readonly name = LEGACY_PROVIDER;
  readonly submissions: ProviderSubmission[] = [];
  readonly canceled: string[] = [];
  readonly script: (Error | { providerJobId: string; answer?: { output: unknown } })[] = [];
  statuses = new Map<string, ProviderJobStatus>();
  constructor(readonly deduplicates: boolean) {}
  async submit(submission: ProviderSubmission) {
    this.submissions.push(submission);
    const next = this.script.shift() ?? { providerJobId: `gen_${this.submissions.length}` };
    if (next instanceof Error) throw next;
    return next;
  }
  async status(providerJobId: string) {
    const status = this.statuses.get(providerJobId);
    if (!status) throw new Error(`unknown ${providerJobId}`);
    return status;
  }
  async cancel(providerJobId: string) {
    this.canceled.push(providerJobId);
  }
}

/** Intake's ports in memory, with the tenants' records (`caps`) its admissions read. */
export function memoryIntake(
  now: () => Date,
  jobTypeProviders: Readonly<Record<'image.generate' | 'audio.transcribe', ProviderName>>,
) {
  // audio.publish runs its chunks on Deepgram, the only provider that transcribes them.
  const providers = { 'audio.publish': 'deepgram', ...jobTypeProviders } as const;
  const store = new MemoryStore();
  const caps = new Map<string, TenantRecord>();
  return {
    caps,
    deps: {
      store,
      queue: new MemoryQueue(),
      waiting: new MemoryWaitingLines(),
      backlogs: new MemoryBacklogs(store, caps),
      inputs: new MemoryInputs(),
      now,
      idempotencyInProgressMs: 30_000,
      jobTypeProviders: providers,
      firstLook: async (): Promise<EnqueueOptions> => ({ inLine: true }),
      events: new MemoryEvents(),
    },
  };
}

/** Schedule items in memory, each tenant's apart, as the DynamoDB store keeps them. */
export class MemorySchedules implements ScheduleStore {
  readonly items = new Map<string, Schedule>();
  private key = (tenantId: string, id: string) => `${tenantId}\n${id}`;
  async create(schedule: Schedule): Promise<ScheduleCreateOutcome> {
    const existing = this.items.get(this.key(schedule.tenantId, schedule.id));
    if (existing) return { created: false, existing };
    this.items.set(this.key(schedule.tenantId, schedule.id), schedule);
    return { created: true };
  }
  async get(tenantId: string, id: string) {
    return this.items.get(this.key(tenantId, id));
  }
  async list(tenantId: string, query: { readonly limit: number; readonly cursor?: string }) {
    const all = [...this.items.values()]
      .filter((schedule) => schedule.tenantId === tenantId)
      .sort((a, b) => a.id.localeCompare(b.id))
      .filter((schedule) => query.cursor === undefined || schedule.id > query.cursor);
    const items = all.slice(0, query.limit);
    return { items, nextCursor: all.length > query.limit ? (items.at(-1)?.id ?? null) : null };
  }
  async setEnabled(tenantId: string, id: string, enabled: boolean, at: Date) {
    const current = this.items.get(this.key(tenantId, id));
    if (!current) return undefined;
    const updated = {
      ...current,
      enabled,
      updatedAt: at.toISOString(),
      revision: (current.revision ?? 0) + 1,
    };
    this.items.set(this.key(tenantId, id), updated);
    return updated;
  }
  async markSynced(schedule: Pick<Schedule, 'tenantId' | 'id' | 'revision'>) {
    const current = this.items.get(this.key(schedule.tenantId, schedule.id));
    if (!current || (current.revision ?? 0) !== (schedule.revision ?? 0)) return false;
    this.items.set(this.key(schedule.tenantId, schedule.id), {
      ...current,
      syncedRevision: schedule.revision ?? 0,
    });
    return true;
  }
  async delete(tenantId: string, id: string) {
    this.items.delete(this.key(tenantId, id));
  }
}

/** Triggers in memory: what each schedule's trigger says now, and a failure to script. */
export class MemoryTriggers implements ScheduleTriggers {
  readonly triggers = new Map<string, { enabled: boolean; firstRunAt?: string }>();
  failNext = 0;
  async put(schedule: Schedule, firstRunAt: Date | undefined) {
    if (this.failNext > 0) {
      this.failNext--;
      throw new Error('Scheduler unavailable');
    }
    this.triggers.set(schedule.id, {
      enabled: schedule.enabled,
      ...(firstRunAt ? { firstRunAt: firstRunAt.toISOString() } : {}),
    });
  }
  async remove(id: string) {
    if (this.failNext > 0) {
      this.failNext--;
      throw new Error('Scheduler unavailable');
    }
    this.triggers.delete(id);
  }
}

/**
 * The search index in memory: exact nearest neighbours by the index's metric,
 * and the filter operators Longhaul's queries use ($eq, $in, $gte, $lte, $and;
 * an array field matches when any element does), so a unit test sees what the
 * S3 Vectors emulator would answer.
 */
export class MemoryVectorIndex implements VectorIndex {
  readonly vectors = new Map<string, PassageVector>();
  constructor(readonly metric: 'cosine' | 'euclidean' = 'cosine') {}

  async put(vectors: readonly PassageVector[]): Promise<void> {
    for (const vector of vectors) this.vectors.set(vector.key, vector);
  }

  async delete(keys: readonly string[]): Promise<void> {
    for (const key of keys) this.vectors.delete(key);
  }

  async get(keys: readonly string[]): Promise<PassageVector[]> {
    return keys.flatMap((key) => {
      const found = this.vectors.get(key);
      return found ? [found] : [];
    });
  }

  async query(vector: readonly number[], topK: number, filter: VectorFilter): Promise<VectorHit[]> {
    const constraints = constraintsOf(filter);
    if (constraints > S3_VECTORS_LIMITS.filterConstraintsPerQuery) {
      throw new Error(`ValidationException: the filter uses ${constraints} constraints.`);
    }
    return [...this.vectors.values()]
      .filter((stored) => matches(stored.metadata as unknown as Record<string, unknown>, filter))
      .map((stored) => ({
        key: stored.key,
        distance: this.distance(vector, stored.data),
        metadata: stored.metadata,
      }))
      .sort((a, b) => a.distance - b.distance)
      .slice(0, topK);
  }

  private distance(a: readonly number[], b: readonly number[]): number {
    if (this.metric === 'euclidean') return Math.hypot(...a.map((x, i) => x - (b[i] as number)));
    const dot = a.reduce((sum, x, i) => sum + x * (b[i] as number), 0);
    return 1 - dot / (Math.hypot(...a) * Math.hypot(...b) || 1);
  }
}

/** As S3 Vectors counts them: each value a condition evaluates is one, `$and` itself none. */
function constraintsOf(filter: VectorFilter): number {
  return Object.entries(filter).reduce((sum, [key, condition]) => {
    if (key === '$and')
      return sum + (condition as VectorFilter[]).reduce((n, part) => n + constraintsOf(part), 0);
    return (
      sum +
      Object.values(condition as Record<string, unknown>).reduce<number>(
        (n, operand) => n + (Array.isArray(operand) ? operand.length : 1),
        0,
      )
    );
  }, 0);
}

function matches(metadata: Record<string, unknown>, filter: VectorFilter): boolean {
  return Object.entries(filter).every(([key, condition]) => {
    if (key === '$and') return (condition as VectorFilter[]).every((part) => matches(metadata, part));
    const value = metadata[key];
    const values = Array.isArray(value) ? value : [value];
    return Object.entries(condition as Record<string, unknown>).every(([operator, operand]) => {
      switch (operator) {
        case '$eq':
          return values.includes(operand);
        case '$in':
          return values.some((v) => (operand as unknown[]).includes(v));
        case '$gte':
          return values.some((v) => (v as number) >= (operand as number));
        case '$lte':
          return values.some((v) => (v as number) <= (operand as number));
        default:
          throw new Error(`The memory index does not know ${operator}.`);
      }
    });
  });
}

/** Media items and retirements in memory, with the store's conditional write on `rev`. */
export class MemoryMediaStore implements MediaStore {
  readonly items = new Map<string, MediaItem>();
  readonly retirements = new Map<string, Retirement>();
  /** Runs once before the next `replace`, to put a concurrent writer between a read and a write. */
  beforeReplace?: () => void;

  async create(item: MediaItem) {
    const existing = this.items.get(`${item.tenantId}/${item.id}`);
    if (existing) return { created: false as const, existing };
    this.items.set(`${item.tenantId}/${item.id}`, item);
    return { created: true as const };
  }
  async get(tenantId: string, mediaId: string) {
    return this.items.get(`${tenantId}/${mediaId}`);
  }
  async replace(item: MediaItem) {
    const hook = this.beforeReplace;
    this.beforeReplace = undefined;
    hook?.();
    const key = `${item.tenantId}/${item.id}`;
    if (this.items.get(key)?.rev !== item.rev) return false;
    this.items.set(key, { ...item, rev: item.rev + 1 });
    return true;
  }
  async list(tenantId: string, query: { readonly limit: number; readonly label?: string }) {
    const items = [...this.items.values()]
      .filter((item) => item.tenantId === tenantId && !item.deletedAt)
      .filter((item) => query.label === undefined || item.labels.includes(query.label))
      .sort((a, b) => a.id.localeCompare(b.id))
      .slice(0, query.limit);
    return { items, nextCursor: null };
  }
  async putRetirement(retirement: Retirement) {
    this.retirements.set(`${retirement.tenantId}/${retirement.jobId}`, retirement);
  }
  async dueRetirements(now: Date, limit: number) {
    return [...this.retirements.values()]
      .filter((retirement) => retirement.runAt <= now.toISOString())
      .sort((a, b) => a.runAt.localeCompare(b.runAt))
      .slice(0, limit);
  }
  readonly uploads = new Map<string, Set<string>>();
  async claimUpload(tenantId: string, ref: string, mediaId: string) {
    const claims = this.uploads.get(`${tenantId}/${ref}`) ?? new Set<string>();
    claims.add(mediaId);
    this.uploads.set(`${tenantId}/${ref}`, claims);
  }
  async releaseUpload(tenantId: string, ref: string, mediaId: string) {
    const claims = this.uploads.get(`${tenantId}/${ref}`);
    claims?.delete(mediaId);
    if (!claims?.size) this.uploads.delete(`${tenantId}/${ref}`);
    return claims?.size ?? 0;
  }
  async deleteRetirement(retirement: Pick<Retirement, 'tenantId' | 'jobId'>) {
    this.retirements.delete(`${retirement.tenantId}/${retirement.jobId}`);
  }
}
