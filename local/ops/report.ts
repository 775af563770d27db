import { GetQueueAttributesCommand, type SQSClient } from '@aws-sdk/client-sqs';
import { JOB_TYPES } from '../../config/job-types';
import { PROVIDER_NAMES, type ProviderName } from '../../config/providers';
import { type Job, type JobError, providerOf } from '../../lambdas/domain/job';
import { type ProviderStatus, providerStateOf } from '../../lambdas/domain/operator';
import type { ActiveStatus, InFlightLimits, JobStore, SlotPools } from '../../lambdas/domain/ports';
import { FIX_KINDS, type TenantUsageLine } from '../../lambdas/domain/reconcile';
import { STEP_NAMES } from '../../lambdas/domain/workflow';
import type { Usage } from '../usage';
import {
  LATENCY_WINDOW_MS,
  type MetricStore,
  type Percentiles,
  RATE_WINDOW_MS,
  type SeriesView,
} from './metric-store';
import type { RecentlyFinishedJobs } from './recent-jobs';

/**
 * `GET /v1/admin/metrics`: what an operator's CloudWatch dashboard would show
 * for this stack, from the same sources. Counters, rates and latencies come
 * from the captured EMF metrics; the queues from SQS's GetQueueAttributes
 * (as CloudWatch's SQS metrics do); in flight from the slot item; active jobs
 * from the job table's sparse active index, through the job store.
 */

export interface OpsSources {
  readonly sqs: SQSClient;
  readonly jobQueueUrl: string;
  readonly deadLetterQueueUrl: string;
  readonly jobs: JobStore;
  readonly slots: SlotPools;
  readonly maxInFlight: InFlightLimits;
  /** The provider each job type runs on (settings). */
  readonly jobTypeProviders: Readonly<Record<string, ProviderName>>;
  readonly metrics: MetricStore;
  readonly finished: RecentlyFinishedJobs;
  /** When capture began: the totals count from here. */
  readonly since: Date;
  /** Billed usage of the functions and the REST API, metered by the local stack. */
  readonly usage: () => Usage;
}

export interface JobSummary {
  readonly id: string;
  readonly tenantId: string;
  readonly type: string;
  readonly status: string;
  readonly progress: number;
  readonly attempts: number;
  readonly error: JobError | null;
  /** When the job entered its status. */
  readonly statusAt: string;
}

export interface OpsReport {
  readonly generatedAt: string;
  readonly since: string;
  /** Depth counts every message: visible, in flight to the dispatcher, and delayed (jobs waiting for a slot). */
  readonly queue: { depth: number; visible: number; notVisible: number; delayed: number };
  readonly deadLetterQueue: { depth: number };
  /** Slots held, at every provider together; each provider's against its own limit is in `providers`. */
  readonly inFlight: { current: number; holders: readonly string[] };
  /**
   * Each provider: whether it takes submissions (`open`, or `paused` until
   * when and why, as GET /v1/admin/providers says), its limit (its
   * maxInFlight), slots held and jobs waiting for one.
   */
  readonly providers: readonly ({ name: string; limit: number; inFlight: number; queued: number } & Pick<
    ProviderStatus,
    'state' | 'pausedUntil' | 'reason'
  >)[];
  /** Each tenant with queued, scheduled or running jobs: as the reconciler's usage lines report it in AWS. */
  readonly tenants: readonly TenantUsageLine[];
  /** Each registered job type: the provider it runs on and its totals since `since`. */
  readonly jobTypes: readonly {
    type: string;
    provider: string;
    submitted: number;
    succeeded: number;
    failed: number;
  }[];
  /** Totals since `since`, from the captured metrics. */
  readonly jobs: {
    submitted: number;
    started: number;
    succeeded: number;
    failed: number;
    canceled: number;
    needsReview: number;
  };
  readonly activeByStatus: Record<ActiveStatus, number>;
  /** Ten-second periods over the last ten minutes, oldest first. */
  readonly rates: readonly { at: string; submitted: number; succeeded: number; failed: number }[];
  readonly latency: {
    windowSeconds: number;
    queueWait: Percentiles;
    jobDuration: Percentiles;
    providerLatency: Percentiles;
  };
  readonly stepRetries: Record<string, number>;
  readonly reconcilerFixes: Record<string, number>;
  readonly needsReview: readonly { id: string; type: string; error: JobError | null; statusAt: string }[];
  /** Active and scheduled jobs and the ones that finished lately, most recently changed first. */
  readonly recentJobs: readonly JobSummary[];
  readonly rateWindowSeconds: number;
  /** Every captured series, as CloudWatch's metric listing would show it. */
  readonly metrics: readonly SeriesView[];
  /** Lambda invocations and GB-seconds, and REST API requests, since the stack started. */
  readonly usage: Usage;
}

const PAGE_SIZE = 100;
/** Jobs shown in the recent list. */
const RECENT_JOBS_SHOWN = 25;
/** Every scheduled job is due by then (a job may be scheduled at most a year ahead), so the due index lists them all. */
const END_OF_SCHEDULES = new Date('9999-12-31T23:59:59.999Z');
/** Scheduled jobs read at most: a local stack's, not a fleet's. */
const SCHEDULED_READ = 1000;

/** Every active job of one status: the sparse index holds active jobs only, so this grows with them, not with history. */
async function allActive(jobs: JobStore, status: ActiveStatus): Promise<Job[]> {
  const found: Job[] = [];
  for (const provider of PROVIDER_NAMES) {
    let cursor: string | undefined;
    do {
      const page = await jobs.listActive(provider, status, {
        limit: PAGE_SIZE,
        ...(cursor ? { cursor } : {}),
      });
      found.push(...page.items);
      cursor = page.nextCursor ?? undefined;
    } while (cursor);
  }
  return found;
}

/** A queue's messages as CloudWatch's SQS metrics count them; depth is all three. */
export async function queueCounts(sqs: SQSClient, queueUrl: string) {
  const { Attributes = {} } = await sqs.send(
    new GetQueueAttributesCommand({
      QueueUrl: queueUrl,
      AttributeNames: [
        'ApproximateNumberOfMessages',
        'ApproximateNumberOfMessagesNotVisible',
        'ApproximateNumberOfMessagesDelayed',
      ],
    }),
  );
  const visible = Number(Attributes.ApproximateNumberOfMessages ?? 0);
  const notVisible = Number(Attributes.ApproximateNumberOfMessagesNotVisible ?? 0);
  const delayed = Number(Attributes.ApproximateNumberOfMessagesDelayed ?? 0);
  return { depth: visible + notVisible + delayed, visible, notVisible, delayed };
}

const summary = (job: Job): JobSummary => ({
  id: job.id,
  tenantId: job.tenantId,
  type: job.type,
  status: job.status,
  progress: job.progress,
  attempts: job.attempts,
  error: job.error,
  statusAt: job.statusAt,
});

/** Zero for every known key, then what was counted (including keys this list does not know yet). */
const withZeros = (keys: readonly string[], counted: Record<string, number>): Record<string, number> => ({
  ...Object.fromEntries(keys.map((key) => [key, 0])),
  ...counted,
});

export async function opsReport(sources: OpsSources): Promise<OpsReport> {
  const { metrics, jobs } = sources;
  const [queue, deadLetters, pools, queued, running, review, scheduled, finished] = await Promise.all([
    queueCounts(sources.sqs, sources.jobQueueUrl),
    queueCounts(sources.sqs, sources.deadLetterQueueUrl),
    Promise.all(PROVIDER_NAMES.map((provider) => sources.slots(provider).state())),
    allActive(jobs, 'queued'),
    allActive(jobs, 'running'),
    allActive(jobs, 'needs_review'),
    jobs.listDue(END_OF_SCHEDULES, SCHEDULED_READ),
    Promise.all(sources.finished.ids().map((id) => jobs.get(id))),
  ]);
  const holders = pools.map((pool) => pool.holders);
  const now = new Date();
  const active = [...queued, ...running, ...review, ...scheduled];
  const activeIds = new Set(active.map((job) => job.id));
  const recent = [
    ...active,
    ...finished.filter((job): job is Job => job !== undefined && !activeIds.has(job.id)),
  ]
    .sort((a, b) => b.statusAt.localeCompare(a.statusAt))
    .slice(0, RECENT_JOBS_SHOWN);
  return {
    generatedAt: now.toISOString(),
    since: sources.since.toISOString(),
    queue,
    deadLetterQueue: { depth: deadLetters.depth },
    inFlight: { current: holders.flat().length, holders: holders.flat() },
    providers: PROVIDER_NAMES.map((name, index) => ({
      name,
      ...providerStateOf(pools[index] ?? {}, now),
      limit: sources.maxInFlight[name],
      inFlight: holders[index]?.length ?? 0,
      queued: queued.filter((job) => providerOf(job) === name).length,
    })),
    tenants: tenantsOf(queued, scheduled, running),
    jobTypes: JOB_TYPES.map((type) => ({
      type,
      provider: sources.jobTypeProviders[type] ?? '',
      submitted: metrics.totalBy('JobsSubmitted', 'jobType')[type] ?? 0,
      succeeded: metrics.totalBy('JobsSucceeded', 'jobType')[type] ?? 0,
      failed: metrics.totalBy('JobsFailed', 'jobType')[type] ?? 0,
    })),
    jobs: {
      submitted: metrics.total('JobsSubmitted'),
      started: metrics.total('JobsStarted'),
      succeeded: metrics.total('JobsSucceeded'),
      failed: metrics.total('JobsFailed'),
      canceled: metrics.total('JobsCanceled'),
      needsReview: metrics.total('JobsNeedingReview'),
    },
    activeByStatus: { queued: queued.length, running: running.length, needs_review: review.length },
    rates: metrics.rates({ submitted: 'JobsSubmitted', succeeded: 'JobsSucceeded', failed: 'JobsFailed' }),
    rateWindowSeconds: RATE_WINDOW_MS / 1000,
    latency: {
      windowSeconds: LATENCY_WINDOW_MS / 1000,
      queueWait: metrics.percentiles('QueueWait'),
      jobDuration: metrics.percentiles('JobDuration'),
      providerLatency: metrics.percentiles('ProviderLatency'),
    },
    stepRetries: withZeros(STEP_NAMES, metrics.totalBy('StepRetries', 'step')),
    reconcilerFixes: withZeros(FIX_KINDS, metrics.totalBy('ReconcilerFixes', 'kind')),
    needsReview: review.map((job) => ({
      id: job.id,
      type: job.type,
      error: job.error,
      statusAt: job.statusAt,
    })),
    recentJobs: recent.map(summary),
    metrics: metrics.series(),
    usage: sources.usage(),
  };
}

/** Each tenant's queued, scheduled and running jobs, busiest first. */
function tenantsOf(
  queued: readonly Job[],
  scheduled: readonly Job[],
  running: readonly Job[],
): TenantUsageLine[] {
  const lines = new Map<string, { tenant: string; queued: number; scheduled: number; inFlight: number }>();
  const line = (tenant: string) => {
    const found = lines.get(tenant) ?? { tenant, queued: 0, scheduled: 0, inFlight: 0 };
    lines.set(tenant, found);
    return found;
  };
  for (const job of queued) line(job.tenantId).queued++;
  for (const job of scheduled) line(job.tenantId).scheduled++;
  for (const job of running) line(job.tenantId).inFlight++;
  const jobsOf = (usage: TenantUsageLine) => usage.queued + usage.scheduled + usage.inFlight;
  return [...lines.values()].sort((a, b) => jobsOf(b) - jobsOf(a) || a.tenant.localeCompare(b.tenant));
}
