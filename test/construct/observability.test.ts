import { Duration } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { AttributeType, Table } from 'aws-cdk-lib/aws-dynamodb';
import { LogGroup } from 'aws-cdk-lib/aws-logs';
import { DefinitionBody, Pass, StateMachine } from 'aws-cdk-lib/aws-stepfunctions';
import { STORED_JOB_TYPES } from '../../config/job-types';
import { WORKFLOW_STEPS } from '../../config/layout';
import {
  FIX_KINDS,
  JOB_TYPE_VALUES,
  type MetricName,
  metricCatalog,
  type PROVIDER_OUTCOMES,
  type RESOLUTION_OUTCOMES,
  TENANT_USAGE_LOG,
} from '../../config/metrics';
import { PROVIDER_NAMES, PROVIDERS, type ProviderName } from '../../config/providers';
import { defaultSettings } from '../../config/settings';
import type { Resolution } from '../../lambdas/domain/operator';
import type { Observation } from '../../lambdas/domain/workflow';
import { Alarms } from '../../lib/constructs/alarms';
import { HttpApi } from '../../lib/constructs/http-api';
import { JobQueue } from '../../lib/constructs/job-queue';
import { Observability } from '../../lib/constructs/observability';
import { dimensionValues, longhaulMetric } from '../../lib/metrics';
import { providerIdSuffix } from '../../lib/provider-ids';
import {
  type DashboardJson,
  dashboardBody,
  type GraphedMetric,
  graphedMetrics,
  logicalIdAt,
  longhaulTemplate,
  SYNTH_TIMEOUT_MS,
  stackUnderTest,
  standIns,
} from './longhaul-app';

jest.setTimeout(SYNTH_TIMEOUT_MS);

type Json = Record<string, any>;

/** Observability in a stack of its own, with the jobs queues and the REST API it watches, and a stand-in workflow. */
let template: Template;
let dashboard: DashboardJson;
let graphed: GraphedMetric[];
/** The whole app, for what is about it: every function, stage, alarm and log group of the stack. */
let app: Template;

beforeAll(() => {
  const stack = stackUnderTest();
  const given = standIns(stack);
  const settings = defaultSettings;
  const alarms = new Alarms(stack, 'Alarms');
  const jobQueue = new JobQueue(stack, 'JobQueue', {
    visibilityTimeout: Duration.minutes(3),
    maxReceiveCount: 5,
    oldestMessageAlarmAge: Duration.minutes(15),
    alarms,
  });
  const httpApi = new HttpApi(stack, 'Api', {
    settings,
    alarms,
    jobTable: given.jobTable,
    apiKeyTable: new Table(stack, 'ApiKeyTable', {
      partitionKey: { name: 'keyHash', type: AttributeType.STRING },
    }),
    jobQueues: jobQueue.queues,
    deadLetterQueue: jobQueue.deadLetterQueue,
    redriveQueue: jobQueue.redriveQueue,
    inputBucket: given.inputBucket,
    outputBucket: given.outputBucket,
    providerSecrets: given.providerSecrets,
  });
  new Observability(stack, 'Observability', {
    settings,
    alarms,
    jobQueue,
    httpApi,
    stateMachine: new StateMachine(stack, 'Workflow', {
      definitionBody: DefinitionBody.fromChainable(new Pass(stack, 'Start')),
    }),
    reconcilerLogGroup: new LogGroup(stack, 'ReconcilerLogs'),
    functions: [httpApi.apiFunction, httpApi.authorizerFunction],
  });
  template = Template.fromStack(stack);
  dashboard = dashboardBody(template);
  graphed = graphedMetrics(dashboard);
  app = longhaulTemplate();
});

const ref = (type: string, path: string) => `\${${logicalIdAt(template, type, path)}}`;
const alarmAt = (of: Template, path: string) =>
  of.toJSON().Resources[logicalIdAt(of, 'AWS::CloudWatch::Alarm', path)].Properties;
const longhaul = (name: string) => graphed.filter((m) => m.namespace === 'Longhaul' && m.name === name);
const inWidget = (title: string) => graphed.filter((m) => m.widget === title);

describe('traces', () => {
  // About the app: every function, state machine and stage in it.
  test('every Lambda function traces actively', () => {
    const functions = Object.values(app.findResources('AWS::Lambda::Function'));
    expect(functions).toHaveLength(9);
    for (const fn of functions) expect(fn.Properties.TracingConfig).toEqual({ Mode: 'Active' });
  });

  test('the state machine and the REST API stage trace with X-Ray', () => {
    expect(Object.values(app.findResources('AWS::StepFunctions::StateMachine'))).toEqual([
      expect.objectContaining({
        Properties: expect.objectContaining({ TracingConfiguration: { Enabled: true } }),
      }),
    ]);
    expect(Object.values(app.findResources('AWS::ApiGateway::Stage'))).toEqual([
      expect.objectContaining({ Properties: expect.objectContaining({ TracingEnabled: true }) }),
    ]);
  });
});

describe('log groups', () => {
  // About the app: both its APIs' stages, the REST API's and the live progress WebSocket API's.
  const logGroups = () => Object.entries(app.findResources('AWS::Logs::LogGroup'));

  /** Every API Gateway stage that writes execution logs, with its API's logical id and its stage name. */
  const loggingStages = (): [stageId: string, apiId: string, stageName: string][] => [
    ...Object.entries(app.findResources('AWS::ApiGateway::Stage'))
      .filter(([, stage]) =>
        (stage.Properties.MethodSettings ?? []).some((s: Json) => (s.LoggingLevel ?? 'OFF') !== 'OFF'),
      )
      .map(([id, stage]): [string, string, string] => [
        id,
        stage.Properties.RestApiId.Ref,
        stage.Properties.StageName,
      ]),
    ...Object.entries(app.findResources('AWS::ApiGatewayV2::Stage'))
      .filter(([, stage]) => (stage.Properties.DefaultRouteSettings?.LoggingLevel ?? 'OFF') !== 'OFF')
      .map(([id, stage]): [string, string, string] => [
        id,
        stage.Properties.ApiId.Ref,
        stage.Properties.StageName,
      ]),
  ];

  test('both API stages write execution logs', () => {
    expect(
      loggingStages()
        .map(([, , stageName]) => stageName)
        .sort(),
    ).toEqual(['live', 'prod']);
  });

  test('each logging API stage waits for a log group of the stack under the name API Gateway writes its execution logs to', () => {
    for (const [stageId, apiId, stageName] of loggingStages()) {
      const name = { 'Fn::Join': ['', ['API-Gateway-Execution-Logs_', { Ref: apiId }, `/${stageName}`]] };
      const named = logGroups().filter(
        ([, logGroup]) => JSON.stringify(logGroup.Properties.LogGroupName) === JSON.stringify(name),
      );
      expect({ stageName, logGroups: named.length }).toEqual({ stageName, logGroups: 1 });
      expect(app.toJSON().Resources[stageId].DependsOn).toContain(named[0]?.[0]);
    }
  });
});

describe('dashboard', () => {
  test('is linked from the DashboardUrl output, in the console of the stack’s region', () => {
    // About the app: its outputs.
    const id = logicalIdAt(app, 'AWS::CloudWatch::Dashboard', 'Longhaul/Observability/Dashboard/Resource');
    app.hasOutput('DashboardUrl', {
      Value: {
        'Fn::Join': [
          '',
          [
            'https://',
            { Ref: 'AWS::Region' },
            '.console.aws.amazon.com/cloudwatch/home?region=',
            { Ref: 'AWS::Region' },
            '#dashboards/dashboard/',
            { Ref: id },
          ],
        ],
      },
    });
  });

  test('plots every metric of the catalog', () => {
    const plotted = new Set(graphed.filter((m) => m.namespace === 'Longhaul').map((m) => m.name));
    expect([...plotted].sort()).toEqual(Object.keys(metricCatalog).sort());
  });

  test('plots Longhaul metrics exactly as the runtime emits them: service plus the catalog’s dimensions', () => {
    for (const metric of graphed.filter((m) => m.namespace === 'Longhaul')) {
      const spec = metricCatalog[metric.name as MetricName];
      const { service, ...dimensions } = metric.dimensions;
      expect(spec.services).toContain(service);
      // A metric rolled up per service (config/metrics.ts `rollup`) is emitted with `service` alone too.
      const emitted = 'rollup' in spec ? [[], [...spec.dimensions].sort()] : [[...spec.dimensions].sort()];
      expect(emitted).toContainEqual(Object.keys(dimensions).sort());
    }
  });

  test.each(PROVIDER_NAMES)(
    "shows provider %s's jobs queue depth (visible, in flight and delayed) and the age of its oldest message",
    (provider) => {
      const queue = ref(
        'AWS::SQS::Queue',
        `Test/JobQueue/Queue${providerIdSuffix(provider)}/Resource`,
      ).replace('}', '.QueueName}');
      const sqs = graphed.filter((m) => m.namespace === 'AWS/SQS' && m.dimensions.QueueName === queue);
      expect(sqs.map((m) => m.name).sort()).toEqual([
        'ApproximateAgeOfOldestMessage',
        'ApproximateNumberOfMessagesDelayed',
        'ApproximateNumberOfMessagesNotVisible',
        'ApproximateNumberOfMessagesVisible',
      ]);
    },
  );

  test('the jobs queue depth graph stacks three lines per provider and the hand-off lane', () => {
    expect(inWidget('Jobs queue depth')).toHaveLength(3 * PROVIDER_NAMES.length + 1);
  });

  test('shows the hand-off lane beside the jobs queue: its waiting messages and the age of its oldest', () => {
    const lane = ref('AWS::SQS::Queue', 'Test/JobQueue/HandOffQueue/Resource').replace('}', '.QueueName}');
    const sqs = graphed.filter((m) => m.namespace === 'AWS/SQS' && m.dimensions.QueueName === lane);
    expect(sqs.map((m) => [m.name, m.stat]).sort()).toEqual([
      ['ApproximateAgeOfOldestMessage', 'Maximum'],
      ['ApproximateNumberOfMessagesVisible', 'Maximum'],
    ]);
  });

  test('shows the dead-letter queue depth', () => {
    const dlq = ref('AWS::SQS::Queue', 'Test/JobQueue/DeadLetterQueue/Resource').replace('}', '.QueueName}');
    expect(
      graphed
        .filter((m) => m.namespace === 'AWS/SQS' && m.dimensions.QueueName === dlq)
        .map((m) => [m.name, m.stat]),
    ).toEqual([['ApproximateNumberOfMessagesVisible', 'Maximum']]);
  });

  test("shows each provider's slots held against a line at that provider's limit", () => {
    expect(longhaul('InFlight')).toEqual(
      PROVIDER_NAMES.map((provider) =>
        expect.objectContaining({
          dimensions: { service: 'reconcile', provider },
          stat: 'Maximum',
          period: 60,
        }),
      ),
    );
    for (const series of longhaul('InFlight')) {
      const provider = series.dimensions.provider as ProviderName;
      const widget = dashboard.widgets.find((w) => w.properties.title === series.widget);
      expect(widget?.properties.title).toBe(`${PROVIDERS[provider].title}: jobs in flight vs its limit`);
      expect(widget?.properties.annotations?.horizontal).toEqual([
        expect.objectContaining({ value: defaultSettings.providers[provider].maxInFlight }),
      ]);
    }
  });

  test("shows beside each provider's slots whether it is paused, in that provider's graph", () => {
    expect(longhaul('ProviderPaused')).toEqual(
      PROVIDER_NAMES.map((provider) =>
        expect.objectContaining({
          widget: `${PROVIDERS[provider].title}: jobs in flight vs its limit`,
          dimensions: { service: 'reconcile', provider },
          stat: 'Maximum',
          period: 60,
          label: `${provider} paused (1) or open (0)`,
        }),
      ),
    );
  });

  test.each(['JobsSubmitted', 'JobsSucceeded', 'JobsFailed', 'JobsCanceled'])(
    'totals %s per minute over every job type',
    (name) => {
      const [total] = inWidget('Jobs per minute').filter((m) =>
        m.expression?.includes(name.charAt(0).toLowerCase() + name.slice(1)),
      );
      const parts = inWidget('Jobs per minute').filter((m) => m.name === name);
      // Each job type from each function that emits it (JobsSubmitted: the API and the schedules' firings).
      const services = metricCatalog[name as keyof typeof metricCatalog].services;
      expect(parts.map((m) => `${m.dimensions.service} ${m.dimensions.jobType}`).sort()).toEqual(
        services.flatMap((service) => JOB_TYPE_VALUES.map((type) => `${service} ${type}`)).sort(),
      );
      expect(total?.period).toBe(60);
      expect(total?.expression).toBe(`SUM([${parts.map((m) => `FILL(${m.id}, 0)`).join(', ')}])`);
    },
  );

  test('totals the jobs sent to review over every service that emits it, every job type rolled up', () => {
    const series = longhaul('JobsNeedingReview').map((m) => JSON.stringify(m.dimensions));
    expect(series.sort()).toEqual([
      JSON.stringify({ service: 'reconcile' }),
      JSON.stringify({ service: 'workflow' }),
    ]);
  });

  test.each(['QueueWait', 'JobDuration'])('shows p50, p90 and p99 of %s for every job type', (name) => {
    const lines = longhaul(name).map((m) => `${m.dimensions.jobType} ${m.stat}`);
    expect(lines.sort()).toEqual(
      JOB_TYPE_VALUES.flatMap((type) => ['p50', 'p90', 'p99'].map((p) => `${type} ${p}`)).sort(),
    );
  });

  test('shows step retries for every step, and reconciler fixes for every kind', () => {
    expect(longhaul('StepRetries').map((m) => m.dimensions.step)).toEqual([...WORKFLOW_STEPS]);
    expect(longhaul('ReconcilerFixes').map((m) => m.dimensions.kind)).toEqual([...FIX_KINDS]);
    for (const m of [...longhaul('StepRetries'), ...longhaul('ReconcilerFixes')]) expect(m.stat).toBe('Sum');
  });

  test("shows each tenant's queued, scheduled and in-flight jobs from the reconciler's usage lines", () => {
    const tables = dashboard.widgets.filter((widget) => widget.type === 'log');
    expect(tables).toHaveLength(1);
    const { query, view } = tables[0]?.properties ?? {};
    expect(view).toBe('table');
    const reconcilerLogs = ref('AWS::Logs::LogGroup', 'Test/ReconcilerLogs/Resource');
    expect(query).toBe(
      `SOURCE '${reconcilerLogs}' | fields tenant, queued, scheduled, inFlight\n` +
        `| filter message = "${TENANT_USAGE_LOG.message}"\n` +
        '| stats latest(queued) as queued, latest(scheduled) as scheduled, latest(inFlight) as inFlight by tenant\n' +
        '| sort queued desc\n| limit 100',
    );
  });

  test.each(['Errors', 'Throttles'])('shows Lambda %s of every function', (name) => {
    // About the app: a line for each of its functions.
    const functions = Object.keys(app.findResources('AWS::Lambda::Function')).map((id) => `\${${id}}`);
    const lines = graphedMetrics(dashboardBody(app)).filter(
      (m) => m.namespace === 'AWS/Lambda' && m.name === name,
    );
    expect(lines.map((m) => m.dimensions.FunctionName).sort()).toEqual(functions.sort());
    for (const line of lines) expect(line.stat).toBe('Sum');
  });

  test('shows failed, aborted and timed-out workflow executions', () => {
    const machine = ref('AWS::StepFunctions::StateMachine', 'Test/Workflow/Resource');
    const names = graphed
      .filter((m) => m.namespace === 'AWS/States' && m.dimensions.StateMachineArn === machine)
      .map((m) => m.name);
    expect(names).toEqual(
      expect.arrayContaining(['ExecutionsFailed', 'ExecutionsAborted', 'ExecutionsTimedOut']),
    );
  });

  test('shows 4xx, 5xx and p50 and p99 latency of the REST API stage', () => {
    const stage = ref('AWS::ApiGateway::Stage', 'Test/Api/RestApi/DeploymentStage.prod/Resource');
    const lines = graphed
      .filter((m) => m.namespace === 'AWS/ApiGateway')
      .map((m) => {
        // The API is named after its stack.
        expect(m.dimensions).toEqual({ ApiName: 'Test-api', Stage: stage });
        return `${m.name} ${m.stat}`;
      });
    expect(lines).toEqual(
      expect.arrayContaining(['4XXError Sum', '5XXError Sum', 'Count Sum', 'Latency p50', 'Latency p99']),
    );
  });

  test('lists every alarm of the stack', () => {
    // About the app: the dashboard is made after every alarm of the stack.
    const statusWidgets = dashboardBody(app).widgets.filter((w) => w.type === 'alarm');
    expect(statusWidgets).toHaveLength(1);
    const alarms = Object.keys(app.findResources('AWS::CloudWatch::Alarm')).map((id) => `\${${id}.Arn}`);
    expect([...(statusWidgets[0]?.properties.alarms ?? [])].sort()).toEqual(alarms.sort());
  });
});

describe('alarms', () => {
  test('every alarm notifies the alarm topic on alarm and on recovery', () => {
    // About the app: every construct that makes an alarm is given the alarm topic.
    const topic = { Ref: logicalIdAt(app, 'AWS::SNS::Topic', 'Longhaul/Alarms/Topic/Resource') };
    const alarms = Object.values(app.findResources('AWS::CloudWatch::Alarm'));
    // Thirteen (one on the schedules' dead letters, one on a provider paused), and one on the age of the
    // oldest message of each provider's jobs queue.
    expect(alarms).toHaveLength(13 + PROVIDER_NAMES.length);
    for (const alarm of alarms) {
      expect(alarm.Properties).toEqual(
        expect.objectContaining({ AlarmActions: [topic], OKActions: [topic] }),
      );
    }
  });

  test.each([
    ...PROVIDER_NAMES.map((provider) => [
      `jobs queue of ${provider}`,
      `Longhaul/JobQueue/OldestMessageAlarm${providerIdSuffix(provider)}/Resource`,
      `Longhaul/JobQueue/Queue${providerIdSuffix(provider)}/Resource`,
    ]),
    [
      'hand-off queue',
      'Longhaul/JobQueue/HandOffOldestMessageAlarm/Resource',
      'Longhaul/JobQueue/HandOffQueue/Resource',
    ],
  ])(
    'the %s alarms when its oldest message is older than alarmOldestMessageSeconds',
    (_name, alarm, queue) => {
      // About the app: the stack sets the age from the settings.
      expect(alarmAt(app, alarm)).toEqual(
        expect.objectContaining({
          Namespace: 'AWS/SQS',
          MetricName: 'ApproximateAgeOfOldestMessage',
          Dimensions: [
            {
              Name: 'QueueName',
              Value: {
                'Fn::GetAtt': [logicalIdAt(app, 'AWS::SQS::Queue', queue), 'QueueName'],
              },
            },
          ],
          Statistic: 'Maximum',
          Period: 300,
          Threshold: defaultSettings.alarmOldestMessageSeconds,
          ComparisonOperator: 'GreaterThanThreshold',
          EvaluationPeriods: 1,
          TreatMissingData: 'notBreaching',
        }),
      );
    },
  );

  test('any job sent to review within 5 minutes alarms, whoever sent it and whatever its type', () => {
    const alarm = alarmAt(template, 'Test/Observability/NeedsReviewAlarm/Resource');
    expect(alarm).toEqual(
      expect.objectContaining({
        Threshold: 0,
        ComparisonOperator: 'GreaterThanThreshold',
        EvaluationPeriods: 1,
        TreatMissingData: 'notBreaching',
      }),
    );
    const [expression, ...series] = alarm.Metrics;
    // One series per service, rolled up over every job type (a workflow's own included), however many
    // job types there are: an alarm takes at most 10 metrics, the expression included.
    const reviewSeries = ['jobsNeedingReview0', 'jobsNeedingReview1'];
    expect(expression).toEqual(
      expect.objectContaining({
        Expression: 'SUM([FILL(jobsNeedingReview0, 0), FILL(jobsNeedingReview1, 0)])',
        ReturnData: true,
      }),
    );
    expect(series.map((m: Json) => m.Id)).toEqual(reviewSeries);
    expect(
      series.map((m: Json) => {
        expect(m.MetricStat).toEqual(expect.objectContaining({ Period: 300, Stat: 'Sum' }));
        expect(m.MetricStat.Metric).toEqual(
          expect.objectContaining({ Namespace: 'Longhaul', MetricName: 'JobsNeedingReview' }),
        );
        return m.MetricStat.Metric.Dimensions;
      }),
    ).toEqual([[{ Name: 'service', Value: 'workflow' }], [{ Name: 'service', Value: 'reconcile' }]]);
  });

  test('alarmFailedJobs failed jobs within 5 minutes alarm, counted on the job metric of every type', () => {
    const alarm = alarmAt(template, 'Test/Observability/FailedJobsAlarm/Resource');
    expect(alarm).toEqual(
      expect.objectContaining({
        Threshold: defaultSettings.alarmFailedJobs,
        ComparisonOperator: 'GreaterThanOrEqualToThreshold',
        EvaluationPeriods: 1,
        TreatMissingData: 'notBreaching',
      }),
    );
    expect(alarm.Metrics[0].Expression).toBe(
      `SUM([${JOB_TYPE_VALUES.map((_, i) => `FILL(jobsFailed${i}, 0)`).join(', ')}])`,
    );
    expect(
      alarm.Metrics.slice(1).map((m: Json) => [
        m.MetricStat.Metric.Namespace,
        m.MetricStat.Metric.MetricName,
        m.MetricStat.Metric.Dimensions,
        m.MetricStat.Period,
        m.MetricStat.Stat,
      ]),
    ).toEqual(
      JOB_TYPE_VALUES.map((type) => [
        'Longhaul',
        'JobsFailed',
        [
          { Name: 'jobType', Value: type },
          { Name: 'service', Value: 'workflow' },
        ],
        300,
        'Sum',
      ]),
    );
  });

  test('a provider paused at every reconciler pass of 5 minutes alarms, whichever provider it is', () => {
    const alarm = alarmAt(template, 'Test/Observability/ProviderPausedAlarm/Resource');
    expect(alarm).toEqual(
      expect.objectContaining({
        Threshold: 1,
        ComparisonOperator: 'GreaterThanOrEqualToThreshold',
        EvaluationPeriods: 1,
        TreatMissingData: 'notBreaching',
      }),
    );
    const [expression, ...series] = alarm.Metrics;
    expect(expression).toEqual(
      expect.objectContaining({
        Expression: `MAX([${PROVIDER_NAMES.map((_, i) => `FILL(providerPaused${i}, 0)`).join(', ')}])`,
        ReturnData: true,
      }),
    );
    // Minimum over the window: a pause that ended, or a provider that was open at one pass, does not count.
    expect(
      series.map((m: Json) => [
        m.MetricStat.Metric.Namespace,
        m.MetricStat.Metric.MetricName,
        m.MetricStat.Metric.Dimensions,
        m.MetricStat.Period,
        m.MetricStat.Stat,
      ]),
    ).toEqual(
      PROVIDER_NAMES.map((provider) => [
        'Longhaul',
        'ProviderPaused',
        [
          { Name: 'provider', Value: provider },
          { Name: 'service', Value: 'reconcile' },
        ],
        300,
        'Minimum',
      ]),
    );
  });

  test('alarmApi5xxPercent % of API requests answered 5xx within 5 minutes alarm', () => {
    const alarm = alarmAt(template, 'Test/Api/ServerErrorRateAlarm/Resource');
    const stage = {
      Ref: logicalIdAt(template, 'AWS::ApiGateway::Stage', 'Test/Api/RestApi/DeploymentStage.prod/Resource'),
    };
    const stageMetric = (name: string) => ({
      Metric: {
        Namespace: 'AWS/ApiGateway',
        MetricName: name,
        Dimensions: [
          { Name: 'ApiName', Value: 'Test-api' },
          { Name: 'Stage', Value: stage },
        ],
      },
      Period: 300,
      Stat: 'Sum',
    });
    expect(alarm).toEqual(
      expect.objectContaining({
        Threshold: defaultSettings.alarmApi5xxPercent,
        ComparisonOperator: 'GreaterThanOrEqualToThreshold',
        EvaluationPeriods: 1,
        TreatMissingData: 'notBreaching',
        Metrics: [
          expect.objectContaining({ Expression: '100 * serverErrors / requests', ReturnData: true }),
          { Id: 'serverErrors', MetricStat: stageMetric('5XXError'), ReturnData: false },
          { Id: 'requests', MetricStat: stageMetric('Count'), ReturnData: false },
        ],
      }),
    );
  });

  test('jobs the reconciler fails on in three passes in a row alarm', () => {
    // The reconciler's, as the app builds it.
    expect(alarmAt(app, 'Longhaul/Reconciler/JobErrorsAlarm/Resource')).toEqual(
      expect.objectContaining({
        Namespace: 'Longhaul',
        MetricName: 'ReconcilerErrors',
        Dimensions: [{ Name: 'service', Value: 'reconcile' }],
        Statistic: 'Sum',
        Period: 60,
        Threshold: 0,
        ComparisonOperator: 'GreaterThanThreshold',
        EvaluationPeriods: 3,
        DatapointsToAlarm: 3,
        TreatMissingData: 'notBreaching',
      }),
    );
  });
});

describe('metrics of the catalog', () => {
  const options = { statistic: 'Sum', period: Duration.minutes(1) };

  test('a series of a service that does not emit the metric is refused', () => {
    expect(() =>
      longhaulMetric(
        { name: 'JobsFailed', service: 'api', dimensions: { jobType: 'image.generate' } },
        options,
      ),
    ).toThrow('lib/metrics.ts: JobsFailed is emitted by workflow, not by api');
  });

  test('a series without exactly the catalog’s dimensions is refused', () => {
    expect(() =>
      longhaulMetric({ name: 'JobsFailed', service: 'workflow', dimensions: {} }, options),
    ).toThrow('lib/metrics.ts: JobsFailed has dimensions [jobType], got []');
    expect(() =>
      longhaulMetric(
        { name: 'JobsStarted', service: 'workflow', dimensions: { jobType: 'image.generate' } },
        options,
      ),
    ).toThrow('lib/metrics.ts: JobsStarted has dimensions [], got [jobType]');
  });

  test('a dimension whose values are not listed is refused', () => {
    expect(() => dimensionValues('JobsSubmitted', 'outcome')).toThrow(
      'lib/metrics.ts: the values of dimension outcome of JobsSubmitted are not known; list them in dimensionValues',
    );
  });
});

describe('dimension values', () => {
  test('job types are the ones the runtime emits', () => {
    expect(JOB_TYPE_VALUES).toEqual(STORED_JOB_TYPES);
  });

  test('provider and resolution outcomes are the ones the runtime emits', () => {
    // The runtime has these only as types, so tsc (run by `npm test`) does this check.
    type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
    type ProviderOutcome = Extract<Observation, { kind: 'provider' }>['outcome'];
    const provider: Same<ProviderOutcome, (typeof PROVIDER_OUTCOMES)[number]> = true;
    const resolution: Same<Resolution['outcome'], (typeof RESOLUTION_OUTCOMES)[number]> = true;
    expect([provider, resolution]).toEqual([true, true]);
  });
});
