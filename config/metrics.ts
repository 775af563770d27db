/**
 * Every metric Longhaul emits (CloudWatch namespace `Longhaul`, embedded
 * metric format through Powertools), with the function (`service` dimension)
 * that emits it, its unit and its other dimensions. Handlers emit by these
 * names; the dashboard and alarms are built from this list, so the two cannot
 * drift apart. Dimensions stay low-cardinality: never a job id or a tenant.
 */

import { STORED_JOB_TYPES } from './job-types';
import { PROVIDER_NAMES } from './providers';

export const METRIC_NAMESPACE = 'Longhaul';

export type Service = 'api' | 'dispatch' | 'workflow' | 'reconcile' | 'stream' | 'authorizer' | 'fire';
export type MetricUnit = 'Count' | 'Milliseconds';

export interface MetricSpec {
  readonly services: readonly Service[];
  readonly unit: MetricUnit;
  readonly dimensions: readonly string[];
  readonly description: string;
  /**
   * Also emitted with `service` as its only dimension: an alarm then sums one
   * series per service, however many values its dimensions take (CloudWatch
   * allows 10 metrics in one alarm).
   */
  readonly rollup?: true;
}

/** The `jobType` dimension's values: every registered job type, the workflows' own included. */
export const JOB_TYPE_VALUES: readonly string[] = STORED_JOB_TYPES;

/** The `provider` dimension's values: every provider. */
export const PROVIDER_VALUES: readonly string[] = PROVIDER_NAMES;

/** What the reconciler counts its fixes as: the `kind` of ReconcilerFixes. */
export const FIX_KINDS = [
  'requeued',
  'restarted',
  'completed_from_provider',
  'timed_out',
  'reviewed',
  'slot_released',
  'backlog_recounted',
  // A chunk job's parent resumed by the reconciler: the chunk's own word to it was lost.
  'parent_resumed',
  // A client's resume whose redrive was never made (a crash after its write): redriven by the reconciler.
  'redriven',
  // Not a repair: a scheduled job found due and sent on its way, counted with the rest of a pass's work.
  'promoted',
  // Not a repair either: a media version replaced, superseded or deleted whose outputs and vectors went.
  'media_retired',
  // A child job still running whose parent is finished, gone or being canceled: canceled with it.
  'orphan_canceled',
  // What a failed, canceled or vanished publish derived (outputs, vectors), found behind such a child: removed.
  'derived_discarded',
  // A queued job whose client's startBy passed before it reached its provider: ended failed, uncharged.
  'start_deadline_passed',
] as const;

/** How a submission to the provider ended: the `outcome` of ProviderLatency. */
export const PROVIDER_OUTCOMES = ['accepted', 'unavailable', 'rejected', 'ambiguous'] as const;

/** How an operator settled a job in review: the `outcome` of JobsResolved. */
export const RESOLUTION_OUTCOMES = ['succeeded', 'failed', 'requeue'] as const;

/**
 * The log line the reconciler writes for each tenant whose backlog a pass
 * recounted, and its fields: the dashboard's per-tenant table is a Logs
 * Insights query over these lines, since a tenant is never a dimension.
 */
export const TENANT_USAGE_LOG = {
  message: 'tenant usage',
  fields: ['tenant', 'queued', 'scheduled', 'inFlight'],
} as const;

export const metricCatalog = {
  // The schedules' fire function submits through intake too, and the workflow makes jobs of its own
  // (chunks, embedding runs, follow-ups): every job started was counted here first.
  JobsSubmitted: {
    services: ['api', 'fire', 'workflow'],
    unit: 'Count',
    dimensions: ['jobType'],
    description: 'jobs accepted: from clients and schedules, and those a workflow made',
  },
  IdempotentReplays: {
    services: ['api', 'fire'],
    unit: 'Count',
    dimensions: [],
    description: 'requests answered by replay',
  },
  EnqueueFailures: {
    services: ['api', 'fire'],
    unit: 'Count',
    dimensions: [],
    description: 'jobs stored but not enqueued',
  },
  JobsCanceled: {
    services: ['api'],
    unit: 'Count',
    dimensions: ['jobType'],
    description: 'jobs canceled by clients',
  },
  Searches: {
    services: ['api'],
    unit: 'Count',
    dimensions: [],
    description: 'searches answered',
  },
  SearchLatency: {
    services: ['api'],
    unit: 'Milliseconds',
    dimensions: [],
    description: 'time to answer a search: the query embedded, the index asked, the hits made playable',
  },
  JobsResolved: {
    services: ['api'],
    unit: 'Count',
    dimensions: ['outcome'],
    description: 'reviews settled by operators',
  },
  // A job that takes a slot is started where its slot is granted: by dispatch, or by the workflow's hand-off.
  JobsStarted: {
    services: ['workflow', 'dispatch'],
    unit: 'Count',
    dimensions: [],
    description:
      'jobs started: moved from queued to running, once each, where their slot was granted or, taking none, by their workflow',
  },
  SlotWaits: {
    services: ['dispatch'],
    unit: 'Count',
    dimensions: [],
    description: 'jobs requeued for lack of a slot',
  },
  DuplicatesDropped: {
    services: ['dispatch'],
    unit: 'Count',
    dimensions: [],
    description: 'duplicate messages dropped',
  },
  QueueWait: {
    services: ['workflow'],
    unit: 'Milliseconds',
    dimensions: ['jobType'],
    description: 'created to started',
  },
  JobDuration: {
    services: ['workflow'],
    unit: 'Milliseconds',
    dimensions: ['jobType'],
    description: 'started to succeeded',
  },
  ProviderLatency: {
    services: ['workflow'],
    unit: 'Milliseconds',
    dimensions: ['outcome'],
    description: 'provider submission round trip',
  },
  JobsSucceeded: {
    services: ['workflow'],
    unit: 'Count',
    dimensions: ['jobType'],
    description: 'jobs succeeded',
  },
  JobsFailed: { services: ['workflow'], unit: 'Count', dimensions: ['jobType'], description: 'jobs failed' },
  JobsNeedingReview: {
    services: ['workflow', 'reconcile'],
    unit: 'Count',
    dimensions: ['jobType'],
    description: 'jobs sent to review',
    // Every job type, a workflow's own included, goes into one alarm.
    rollup: true,
  },
  StepRetries: {
    services: ['workflow'],
    unit: 'Count',
    dimensions: ['step'],
    description: 'step retries by step',
  },
  ReconcilerFixes: {
    services: ['reconcile'],
    unit: 'Count',
    dimensions: ['kind'],
    description: 'fixes by kind',
  },
  ReconcilerItemsRead: {
    services: ['reconcile'],
    unit: 'Count',
    dimensions: [],
    description: 'index items read',
  },
  ReconcilerErrors: {
    services: ['reconcile'],
    unit: 'Count',
    dimensions: [],
    description: 'jobs a pass failed on',
  },
  InFlight: {
    services: ['reconcile'],
    unit: 'Count',
    dimensions: ['provider'],
    description: "a provider's slots held, once per pass",
  },
  ProviderPaused: {
    services: ['reconcile'],
    unit: 'Count',
    dimensions: ['provider'],
    description:
      "1 while a provider's grants are paused (it throttled or went down, or an operator paused it), else 0; once per pass",
  },
  JobsInReview: {
    services: ['reconcile'],
    unit: 'Count',
    dimensions: [],
    description: 'jobs in review, once per pass',
  },
} as const satisfies Record<string, MetricSpec>;

export type MetricName = keyof typeof metricCatalog;
