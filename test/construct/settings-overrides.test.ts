import { Match, type Template } from 'aws-cdk-lib/assertions';
import { PROVIDER_NAMES } from '../../config/providers';
import { providerIdSuffix } from '../../lib/provider-ids';
import { resolveIntrinsics } from '../../lib/workflow-definition';
import { dashboardBody, graphedMetrics, longhaulTemplate, SYNTH_TIMEOUT_MS } from './longhaul-app';

jest.setTimeout(SYNTH_TIMEOUT_MS);

// Every value differs from its default, so a setting that does not reach the
// template leaves its default behind and fails the matching test.
const env = {
  MAX_IN_FLIGHT: '12',
  DISPATCH_TIMEOUT_SECONDS: '45',
  QUEUE_MAX_RECEIVE_COUNT: '8',
  API_RATE_LIMIT: '7',
  API_BURST_LIMIT: '9',
  AUTHORIZER_CACHE_SECONDS: '0',
  LOG_RETENTION_DAYS: '30',
  JOB_RETENTION_DAYS: '3',
  JOB_TIMEOUT_MS: String(3 * 86_400_000),
  RECONCILE_SCHEDULE: 'rate(5 minutes)',
  ALARM_OLDEST_MESSAGE_SECONDS: '1800',
  ALARM_API_5XX_PERCENT: '2.5',
  ALARM_FAILED_JOBS: '20',
};

let template: Template;

beforeAll(() => {
  template = longhaulTemplate(env);
});

test('the handlers get the overridden settings in their environment', () => {
  const functions = Object.values(template.findResources('AWS::Lambda::Function'));
  // api, authorizer, dispatch, steps, provider events, reconcile, fire, stream and compute.
  expect(functions).toHaveLength(9);
  for (const fn of functions) {
    expect(fn.Properties.Environment.Variables).toEqual(expect.objectContaining(env));
  }
});

test('the Fargate compute task gets the overridden settings in its environment', () => {
  const tasks = Object.values(template.findResources('AWS::ECS::TaskDefinition'));
  expect(tasks).toHaveLength(1);
  const [container] = tasks[0]?.Properties.ContainerDefinitions ?? [];
  const variables = Object.fromEntries(
    (container.Environment as { Name: string; Value: unknown }[]).map(({ Name, Value }) => [Name, Value]),
  );
  expect(variables).toEqual(expect.objectContaining(env));
});

test('the queue visibility timeout is six times the dispatch timeout, and the redrive count follows', () => {
  template.hasResourceProperties('AWS::SQS::Queue', {
    VisibilityTimeout: 270,
    RedrivePolicy: Match.objectLike({ maxReceiveCount: 8 }),
  });
});

test('the usage plan throttles each tenant at the overridden rate and burst', () => {
  template.hasResourceProperties('AWS::ApiGateway::UsagePlan', { Throttle: { RateLimit: 7, BurstLimit: 9 } });
});

test('the authorizer cache follows AUTHORIZER_CACHE_SECONDS, down to off', () => {
  template.hasResourceProperties('AWS::ApiGateway::Authorizer', { AuthorizerResultTtlInSeconds: 0 });
});

test('every log group keeps LOG_RETENTION_DAYS, and so do the access logs of the input bucket', () => {
  template.allResourcesProperties('AWS::Logs::LogGroup', { RetentionInDays: 30 });
  template.hasResourceProperties('AWS::S3::Bucket', {
    LifecycleConfiguration: {
      Rules: [{ Id: 'expire-access-logs', Status: 'Enabled', ExpirationInDays: 30 }],
    },
  });
});

test('inputs expire after the job retention plus the job timeout and a week', () => {
  template.hasResourceProperties('AWS::S3::Bucket', {
    LifecycleConfiguration: {
      Rules: Match.arrayWith([{ Id: 'expire-inputs', Status: 'Enabled', ExpirationInDays: 3 + 3 + 7 }]),
    },
  });
});

test('a tenant limit above the stage default raises the stage limit with it', () => {
  const highLimits = longhaulTemplate({ API_RATE_LIMIT: '800', API_BURST_LIMIT: '1500' });
  highLimits.hasResourceProperties('AWS::ApiGateway::Stage', {
    MethodSettings: [Match.objectLike({ ThrottlingRateLimit: 800, ThrottlingBurstLimit: 1500 })],
  });
});

test('outputs expire a week after their job’s retention', () => {
  template.hasResourceProperties('AWS::S3::Bucket', {
    LifecycleConfiguration: {
      Rules: Match.arrayWith([{ Id: 'expire-outputs', Status: 'Enabled', ExpirationInDays: 3 + 7 }]),
    },
  });
});

test('the dispatch function times out at DISPATCH_TIMEOUT_SECONDS', () => {
  template.hasResourceProperties('AWS::Lambda::Function', {
    Environment: { Variables: Match.objectLike({ POWERTOOLS_SERVICE_NAME: 'dispatch' }) },
    Timeout: 45,
  });
});

test('the await step waits up to JOB_TIMEOUT_MS with the configured heartbeat', () => {
  const machines = Object.values(template.findResources('AWS::StepFunctions::StateMachine'));
  expect(machines).toHaveLength(1);
  // Every reference (the functions, the Fargate task's cluster and network) stands for some value.
  const definition = resolveIntrinsics(machines[0]?.Properties.DefinitionString, (node) =>
    'Fn::GetAtt' in node || ('Ref' in node && !String(node.Ref).startsWith('AWS::'))
      ? 'arn:aws:lambda:us-east-1:000000000000:function:steps'
      : undefined,
  );
  const awaitState = JSON.parse(definition as string).States.await;
  expect(awaitState).toEqual(expect.objectContaining({ TimeoutSeconds: 3 * 86_400, HeartbeatSeconds: 300 }));
});

test('the reconciler runs on RECONCILE_SCHEDULE, and its alarms count passes of that length', () => {
  template.hasResourceProperties('AWS::Scheduler::Schedule', { ScheduleExpression: 'rate(5 minutes)' });
  const reconcilerAlarms = Object.values(template.findResources('AWS::CloudWatch::Alarm'))
    .filter((alarm) => alarm.Metadata['aws:cdk:path'].startsWith('Longhaul/Reconciler/'))
    .map((alarm) => [
      alarm.Properties.MetricName,
      alarm.Properties.Period,
      alarm.Properties.EvaluationPeriods,
    ])
    .sort();
  expect(reconcilerAlarms).toEqual([
    ['Errors', 300, 3],
    ['Invocations', 300, 3],
    ['ReconcilerErrors', 300, 3],
  ]);
});

test('the alarm thresholds follow ALARM_OLDEST_MESSAGE_SECONDS, ALARM_API_5XX_PERCENT and ALARM_FAILED_JOBS', () => {
  const thresholds = Object.fromEntries(
    Object.values(template.findResources('AWS::CloudWatch::Alarm'))
      .filter((alarm) =>
        /(OldestMessage|ServerErrorRate|FailedJobs)Alarm/.test(alarm.Metadata['aws:cdk:path']),
      )
      .map((alarm) => [alarm.Metadata['aws:cdk:path'], alarm.Properties.Threshold]),
  );
  expect(thresholds).toEqual({
    ...Object.fromEntries(
      PROVIDER_NAMES.map((provider) => [
        `Longhaul/JobQueue/OldestMessageAlarm${providerIdSuffix(provider)}/Resource`,
        1800,
      ]),
    ),
    'Longhaul/JobQueue/HandOffOldestMessageAlarm/Resource': 1800,
    'Longhaul/Api/ServerErrorRateAlarm/Resource': 2.5,
    'Longhaul/Observability/FailedJobsAlarm/Resource': 20,
  });
});

test('the dashboard draws the in-flight limit at MAX_IN_FLIGHT', () => {
  const dashboard = dashboardBody(template);
  const inFlight = graphedMetrics(dashboard).find((m) => m.name === 'InFlight');
  const widget = dashboard.widgets.find((w) => w.properties.title === inFlight?.widget);
  expect(widget?.properties.annotations?.horizontal?.map((line) => line.value)).toEqual([12]);
});
