import { Aws, Duration } from 'aws-cdk-lib';
import {
  type Alarm,
  AlarmStatusWidget,
  Color,
  ComparisonOperator,
  Dashboard,
  GraphWidget,
  type GraphWidgetProps,
  type IMetric,
  type IWidget,
  LogQueryVisualizationType,
  LogQueryWidget,
  MathExpression,
  TreatMissingData,
} from 'aws-cdk-lib/aws-cloudwatch';
import type { ILogGroup } from 'aws-cdk-lib/aws-logs';
import type { IStateMachine } from 'aws-cdk-lib/aws-stepfunctions';
import { Construct } from 'constructs';
import { TENANT_USAGE_LOG } from '../../config/metrics';
import { LEGACY_PROVIDER, PROVIDER_NAMES, PROVIDERS } from '../../config/providers';
import type { Settings } from '../../config/settings';
import {
  type LonghaulMetricName,
  type LonghaulMetricOptions,
  type LonghaulSeries,
  longhaulMetric,
  longhaulSeries,
  longhaulTotal,
} from '../metrics';
import type { Alarms } from './alarms';
import type { HttpApi } from './http-api';
import type { JobQueue } from './job-queue';
import type { ProjectFunction } from './project-function';

/** Resolution of the dashboard's graphs: jobs are slow, but intake and errors come in bursts. */
const GRAPH_PERIOD = Duration.minutes(1);

/** Window of the job alarms: their thresholds (settings) count per 5 minutes. */
const ALARM_PERIOD = Duration.minutes(5);

/** CloudWatch allows at most this many metrics in the metric math of one alarm. */
const MAX_ALARM_METRICS = 10;

const PERCENTILES = ['p50', 'p90', 'p99'] as const;

/** Three graphs side by side fill the dashboard's 24 columns. */
const GRAPH_WIDTH = 8;
const GRAPH_HEIGHT = 6;

export interface ObservabilityProps {
  /** Longhaul settings: each provider's in-flight limit and the failed-jobs alarm threshold (`alarmFailedJobs`). */
  readonly settings: Settings;
  /** The alarm topic; the job alarms notify it, and the dashboard shows every alarm notified through it. */
  readonly alarms: Alarms;
  /** The jobs queue and its dead-letter queue, with their alarms. */
  readonly jobQueue: JobQueue;
  /** The REST API, its stage's metrics and its 5xx alarm. */
  readonly httpApi: HttpApi;
  /** The media workflow. */
  readonly stateMachine: IStateMachine;
  /** Every function of the app; each gets an errors and a throttles line. */
  readonly functions: readonly ProjectFunction[];
  /** The reconciler's log group, whose per-tenant usage lines make the dashboard's tenants table. */
  readonly reconcilerLogGroup: ILogGroup;
}

/**
 * What an operator looks at: one CloudWatch dashboard of the queue, the
 * in-flight limit, the job flow and its latencies, retries, reconciler fixes,
 * the functions, the workflow and the API; and the alarms on the job metrics
 * (jobs sent to review, jobs failing). Resource alarms stay with their
 * resources (queue, API, workflow, reconciler); the dashboard shows all of
 * them, so it is created after every other construct.
 *
 * Application metrics come from the catalog in config/metrics.ts through
 * lib/metrics.ts, so a plotted series is always one the runtime emits.
 */
export class Observability extends Construct {
  /** The Longhaul dashboard. */
  public readonly dashboard: Dashboard;
  /** Console address of the dashboard in the stack's region. */
  public readonly dashboardUrl: string;
  /** In ALARM when any job was sent to review (by the workflow or the reconciler) within 5 minutes. */
  public readonly needsReviewAlarm: Alarm;
  /** In ALARM when at least `alarmFailedJobs` jobs failed within 5 minutes. */
  public readonly failedJobsAlarm: Alarm;
  /** In ALARM when a provider was paused at every reconciler pass of a 5-minute window. */
  public readonly providerPausedAlarm: Alarm;

  constructor(scope: Construct, id: string, props: ObservabilityProps) {
    super(scope, id);
    const { settings, jobQueue, httpApi, stateMachine } = props;
    if (props.functions.length === 0) {
      throw new Error(`Observability ${this.node.path}: functions must not be empty`);
    }

    // A workflow execution also fails for a job that legitimately failed, so
    // failures are alarmed on the job metric, by count rather than at the first one.
    const failedJobs = this.alarmTotal('JobsFailed', 'jobs failed per 5 minutes');
    this.failedJobsAlarm = failedJobs.createAlarm(this, 'FailedJobsAlarm', {
      alarmDescription: `At least ${settings.alarmFailedJobs} Longhaul jobs failed within 5 minutes. Look for a common cause in the failed jobs' errors (a provider outage, rejected inputs, a bad deploy).`,
      threshold: settings.alarmFailedJobs,
      evaluationPeriods: 1,
      comparisonOperator: ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
      treatMissingData: TreatMissingData.NOT_BREACHING,
    });
    props.alarms.notify(this.failedJobsAlarm);

    // Counts arrivals in review: the alarm recovers 5 minutes later even if the job still waits there.
    const sentToReview = this.alarmTotal('JobsNeedingReview', 'jobs sent to review per 5 minutes');
    this.needsReviewAlarm = sentToReview.createAlarm(this, 'NeedsReviewAlarm', {
      alarmDescription:
        'A Longhaul job was sent to review (an ambiguous provider submission, a job past its timeout, ...; the reason is on the job). ' +
        'It waits for an operator: list the jobs in needs_review and resolve them.',
      threshold: 0,
      evaluationPeriods: 1,
      comparisonOperator: ComparisonOperator.GREATER_THAN_THRESHOLD,
      treatMissingData: TreatMissingData.NOT_BREACHING,
    });
    props.alarms.notify(this.needsReviewAlarm);

    // A pause of a few seconds is how a 429 is met, and no job fails of it; a provider paused at every
    // pass of a window (each pass samples 1 or 0) is down or was paused by hand, and its jobs pile up.
    const paused = Object.fromEntries(
      PROVIDER_NAMES.map((provider, index) => [
        `providerPaused${index}`,
        this.metric(
          'ProviderPaused',
          'reconcile',
          { provider },
          { period: ALARM_PERIOD, statistic: 'Minimum' },
        ),
      ]),
    );
    this.providerPausedAlarm = new MathExpression({
      expression: `MAX([${Object.keys(paused)
        .map((id) => `FILL(${id}, 0)`)
        .join(', ')}])`,
      usingMetrics: paused,
      period: ALARM_PERIOD,
      label: 'a provider paused at every pass',
    }).createAlarm(this, 'ProviderPausedAlarm', {
      alarmDescription:
        'A Longhaul provider was paused at every reconciler pass for 5 minutes: it keeps answering 429 or 503, is unreachable, or an operator paused it. ' +
        'Its jobs wait in their lines and none fails; GET /v1/admin/providers says which one, until when and why, and POST /v1/admin/providers/{provider}/resume ends a pause by hand.',
      threshold: 1,
      evaluationPeriods: 1,
      comparisonOperator: ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
      treatMissingData: TreatMissingData.NOT_BREACHING,
    });
    props.alarms.notify(this.providerPausedAlarm);

    const every = { period: GRAPH_PERIOD, statistic: 'Sum' } as const;

    this.dashboard = new Dashboard(this, 'Dashboard', {
      // Jobs run for minutes to hours; a short window hides whole jobs.
      defaultInterval: Duration.hours(6),
    });
    this.dashboard.addWidgets(
      new AlarmStatusWidget({ title: 'Alarms', alarms: props.alarms.alarms, width: 24, height: 4 }),
    );
    this.dashboard.addWidgets(
      graph('Jobs queue depth', {
        left: [
          ...PROVIDER_NAMES.flatMap((provider) => {
            const queue = jobQueue.queues[provider];
            return [
              queue.metricApproximateNumberOfMessagesVisible({ ...max(), label: `${provider}: waiting` }),
              queue.metricApproximateNumberOfMessagesNotVisible({
                ...max(),
                label: `${provider}: being dispatched`,
              }),
              queue.metricApproximateNumberOfMessagesDelayed({
                ...max(),
                label: `${provider}: delayed (waiting for a slot)`,
              }),
            ];
          }),
          jobQueue.handOffQueue.metricApproximateNumberOfMessagesVisible({
            ...max(),
            label: 'handed a slot, waiting for dispatch',
          }),
        ],
        stacked: true,
      }),
      graph('Oldest job message (seconds)', {
        left: [
          ...PROVIDER_NAMES.map((provider) =>
            jobQueue.queues[provider].metricApproximateAgeOfOldestMessage({
              ...max(),
              label: `${provider}: age of the oldest message`,
            }),
          ),
          jobQueue.handOffQueue.metricApproximateAgeOfOldestMessage({
            ...max(),
            label: 'age of the oldest hand-off',
          }),
        ],
        // One threshold for every queue: the annotation of one alarm shows it.
        leftAnnotations: [jobQueue.oldestMessageAlarms[LEGACY_PROVIDER].toAnnotation()],
      }),
      graph('Dead-letter queue depth', {
        left: [
          jobQueue.deadLetterQueue.metricApproximateNumberOfMessagesVisible({
            ...max(),
            label: 'dead letters',
          }),
        ],
        leftAnnotations: [jobQueue.deadLetterAlarm.toAnnotation()],
      }),
    );
    this.dashboard.addWidgets(
      // One per provider, each against its own limit. Sampled by each reconciliation pass; the limit
      // itself is enforced by the provider's slot pool.
      ...PROVIDER_NAMES.map((provider) =>
        graph(`${PROVIDERS[provider].title}: jobs in flight vs its limit`, {
          left: [
            this.metric('InFlight', 'reconcile', { provider }, { ...max(), label: `${provider} slots held` }),
          ],
          // A paused provider holds no slot, as an idle one: this line tells them apart.
          right: [
            this.metric(
              'ProviderPaused',
              'reconcile',
              { provider },
              { ...max(), label: `${provider} paused (1) or open (0)` },
            ),
          ],
          rightYAxis: { min: 0, max: 1, showUnits: false },
          leftAnnotations: [
            {
              value: settings.providers[provider].maxInFlight,
              label: `limit (${settings.providers[provider].maxInFlight})`,
              color: Color.RED,
            },
          ],
          leftYAxis: { min: 0 },
        }),
      ),
      graph('Jobs in review', {
        left: [this.metric('JobsInReview', 'reconcile', {}, { ...max(), label: 'jobs in review' })],
        leftYAxis: { min: 0 },
      }),
      graph('Dispatch per minute', {
        left: [
          longhaulTotal('JobsStarted', { period: GRAPH_PERIOD, label: 'jobs started' }),
          this.metric('SlotWaits', 'dispatch', {}, { ...every, label: 'requeued for lack of a slot' }),
          this.metric('DuplicatesDropped', 'dispatch', {}, { ...every, label: 'duplicate messages dropped' }),
        ],
      }),
      graph('Workflow executions per minute', {
        left: [
          stateMachine.metricStarted({ ...every, label: 'started' }),
          stateMachine.metricSucceeded({ ...every, label: 'succeeded' }),
          stateMachine.metricFailed({ ...every, label: 'failed' }),
          stateMachine.metricAborted({ ...every, label: 'aborted' }),
          stateMachine.metricTimedOut({ ...every, label: 'timed out' }),
        ],
      }),
    );
    this.dashboard.addWidgets(
      graph('Jobs per minute', {
        left: [
          longhaulTotal('JobsSubmitted', { period: GRAPH_PERIOD, label: 'submitted' }),
          longhaulTotal('JobsSucceeded', { period: GRAPH_PERIOD, label: 'succeeded' }),
          longhaulTotal('JobsFailed', { period: GRAPH_PERIOD, label: 'failed' }),
          longhaulTotal('JobsCanceled', { period: GRAPH_PERIOD, label: 'canceled' }),
        ],
      }),
      graph('Jobs sent to review, and failed, per 5 minutes', {
        left: [sentToReview, failedJobs],
        leftAnnotations: [this.failedJobsAlarm.toAnnotation()],
      }),
      graph('Reviews settled by operators', {
        left: this.series('JobsResolved', every, (s) => String(s.dimensions.outcome)),
      }),
    );
    this.dashboard.addWidgets(
      graph('Queue wait, created to started (ms)', {
        left: this.percentiles('QueueWait'),
      }),
      graph('Job duration, started to succeeded (ms)', {
        left: this.percentiles('JobDuration'),
      }),
      graph('Provider submissions by outcome', {
        left: this.series('ProviderLatency', { period: GRAPH_PERIOD, statistic: 'SampleCount' }, (s) =>
          String(s.dimensions.outcome),
        ),
        right: this.series(
          'ProviderLatency',
          { period: GRAPH_PERIOD, statistic: 'p99' },
          (s) => `${s.dimensions.outcome} p99 (ms)`,
        ),
      }),
    );
    this.dashboard.addWidgets(
      graph('Step retries by step', {
        left: this.series('StepRetries', every, (s) => String(s.dimensions.step)),
      }),
      graph('Reconciler fixes by kind', {
        left: this.series('ReconcilerFixes', every, (s) => String(s.dimensions.kind)),
      }),
      graph('Reconciler passes', {
        left: [this.metric('ReconcilerItemsRead', 'reconcile', {}, { ...every, label: 'index items read' })],
        right: [
          this.metric('ReconcilerErrors', 'reconcile', {}, { ...every, label: 'jobs a pass failed on' }),
        ],
      }),
    );
    this.dashboard.addWidgets(
      graph('Lambda errors', {
        left: props.functions.map((fn) =>
          fn.lambdaFunction.metricErrors({ ...every, label: fn.serviceName }),
        ),
      }),
      graph('Lambda throttles', {
        left: props.functions.map((fn) =>
          fn.lambdaFunction.metricThrottles({ ...every, label: fn.serviceName }),
        ),
      }),
      graph('Intake problems per minute', {
        left: [
          this.metric('EnqueueFailures', 'api', {}, { ...every, label: 'stored but not enqueued' }),
          this.metric('IdempotentReplays', 'api', {}, { ...every, label: 'answered by replay' }),
        ],
      }),
    );
    const stage = httpApi.restApi.deploymentStage;
    this.dashboard.addWidgets(
      graph('API requests per minute', {
        left: [
          stage.metricCount({ ...every, label: 'requests' }),
          stage.metricClientError({ ...every, label: '4xx' }),
          stage.metricServerError({ ...every, label: '5xx' }),
        ],
      }),
      graph('API 5xx rate (%)', {
        left: [httpApi.serverErrorRate],
        leftAnnotations: [httpApi.serverErrorRateAlarm.toAnnotation()],
        leftYAxis: { min: 0 },
      }),
      graph('API latency (ms)', {
        left: [
          stage.metricLatency({ period: GRAPH_PERIOD, statistic: 'p50', label: 'p50' }),
          stage.metricLatency({ period: GRAPH_PERIOD, statistic: 'p99', label: 'p99' }),
        ],
      }),
    );

    this.dashboard.addWidgets(
      graph('Searches', {
        left: [this.metric('Searches', 'api', {}, { ...every, label: 'searches answered' })],
        right: [
          this.metric(
            'SearchLatency',
            'api',
            {},
            { period: GRAPH_PERIOD, statistic: 'p50', label: 'latency p50 (ms)' },
          ),
          this.metric(
            'SearchLatency',
            'api',
            {},
            { period: GRAPH_PERIOD, statistic: 'p99', label: 'latency p99 (ms)' },
          ),
        ],
      }),
    );

    // Tenants are never a metric dimension (thousands of tenants would be thousands of custom
    // metrics): their usage is the reconciler's log lines, read by one Logs Insights query.
    const [tenant, ...usage] = TENANT_USAGE_LOG.fields;
    this.dashboard.addWidgets(
      new LogQueryWidget({
        title: 'Tenants: queued, scheduled and in flight (latest recount)',
        logGroupNames: [props.reconcilerLogGroup.logGroupName],
        queryLines: [
          `fields ${TENANT_USAGE_LOG.fields.join(', ')}`,
          `filter message = "${TENANT_USAGE_LOG.message}"`,
          `stats ${usage.map((field) => `latest(${field}) as ${field}`).join(', ')} by ${tenant}`,
          `sort queued desc`,
          'limit 100',
        ],
        view: LogQueryVisualizationType.TABLE,
        width: 24,
        height: 6,
      }),
    );

    this.dashboardUrl = `https://${Aws.REGION}.console.aws.amazon.com/cloudwatch/home?region=${Aws.REGION}#dashboards/dashboard/${this.dashboard.dashboardName}`;
  }

  private metric(
    name: LonghaulMetricName,
    service: LonghaulSeries['service'],
    dimensions: LonghaulSeries['dimensions'],
    options: LonghaulMetricOptions,
  ): IMetric {
    return longhaulMetric({ name, service, dimensions }, options);
  }

  /** One line per series of `name`, labelled by `label`. */
  private series(
    name: LonghaulMetricName,
    options: Omit<LonghaulMetricOptions, 'label'>,
    label: (series: LonghaulSeries) => string,
  ): IMetric[] {
    return longhaulSeries(name).map((series) => longhaulMetric(series, { ...options, label: label(series) }));
  }

  /** p50, p90 and p99 of each job type: percentiles of different series cannot be added up. */
  private percentiles(name: 'QueueWait' | 'JobDuration'): IMetric[] {
    return PERCENTILES.flatMap((statistic) =>
      this.series(name, { period: GRAPH_PERIOD, statistic }, (s) => `${s.dimensions.jobType} ${statistic}`),
    );
  }

  /** The alarm window's total of every series of `name`, checked against CloudWatch's limit for alarms. */
  private alarmTotal(name: LonghaulMetricName, label: string): MathExpression {
    const total = longhaulTotal(name, { period: ALARM_PERIOD, label });
    const metrics = Object.keys(total.usingMetrics).length;
    if (metrics > MAX_ALARM_METRICS) {
      throw new Error(
        `Observability ${this.node.path}: an alarm on ${name} would sum ${metrics} series, more than the ${MAX_ALARM_METRICS} CloudWatch allows in one alarm`,
      );
    }
    return total;
  }
}

function max(): { readonly period: Duration; readonly statistic: string } {
  return { period: GRAPH_PERIOD, statistic: 'Maximum' };
}

function graph(title: string, options: Omit<GraphWidgetProps, 'title' | 'width' | 'height'>): IWidget {
  return new GraphWidget({ title, width: GRAPH_WIDTH, height: GRAPH_HEIGHT, ...options });
}
