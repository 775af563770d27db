import { Template } from 'aws-cdk-lib/assertions';
import { AttributeType, Table } from 'aws-cdk-lib/aws-dynamodb';
import { Secret } from 'aws-cdk-lib/aws-secretsmanager';
import { Queue } from 'aws-cdk-lib/aws-sqs';
import { DefinitionBody, Pass, StateMachine } from 'aws-cdk-lib/aws-stepfunctions';
import { jobQueueEnv, providerSecretEnv } from '../../config/layout';
import { defaultSettings } from '../../config/settings';
import { Alarms } from '../../lib/constructs/alarms';
import { Reconciler, type ReconcilerProps } from '../../lib/constructs/reconciler';
import {
  logicalIdAt,
  longhaulTemplate,
  perProvider,
  policyStatements,
  SYNTH_TIMEOUT_MS,
  stackUnderTest,
  statementsFor,
} from './longhaul-app';

jest.setTimeout(SYNTH_TIMEOUT_MS);

const PATH = 'Test/Reconciler';
const FUNCTION_PATH = `${PATH}/ReconcileFunction`;

/** The reconciler alone in a stack of its own, with stand-ins for what the app gives it. */
function build() {
  const stack = stackUnderTest();
  const jobTable = new Table(stack, 'Jobs', { partitionKey: { name: 'pk', type: AttributeType.STRING } });
  jobTable.addGlobalSecondaryIndex({
    indexName: 'active',
    partitionKey: { name: 'status', type: AttributeType.STRING },
  });
  const props: ReconcilerProps = {
    settings: defaultSettings,
    jobTable,
    jobQueues: perProvider((provider) => new Queue(stack, `Jobs-${provider}`)),
    handOffQueue: new Queue(stack, 'HandOff'),
    stateMachine: new StateMachine(stack, 'Workflow', {
      definitionBody: DefinitionBody.fromChainable(new Pass(stack, 'Start')),
    }),
    providerSecrets: perProvider((provider) => new Secret(stack, `Secret-${provider}`)),
    alarms: new Alarms(stack, 'Alarms'),
  };
  new Reconciler(stack, 'Reconciler', props);
  const template = Template.fromStack(stack);
  const fnId = logicalIdAt(template, 'AWS::Lambda::Function', `${FUNCTION_PATH}/Function/Resource`);
  return { stack, props, template, resources: template.toJSON().Resources, fnId };
}

let built: ReturnType<typeof build>;
beforeAll(() => {
  built = build();
});

/** What `token` (an ARN, a name, a URL of a stand-in) is in the template. */
const resolved = (token: string) => built.stack.resolve(token);

/** An ARN as CDK synthesizes it: `arn:<partition>` followed by `parts`. */
const arn = (...parts: unknown[]) => ({ 'Fn::Join': ['', ['arn:', { Ref: 'AWS::Partition' }, ...parts]] });

describe('schedule', () => {
  test('invokes the reconcile function on reconcileSchedule, without a flexible window or retries', () => {
    const { template, fnId } = built;
    const schedules = template.findResources('AWS::Scheduler::Schedule');
    expect(Object.keys(schedules)).toHaveLength(1);
    const role = logicalIdAt(template, 'AWS::IAM::Role', `${PATH}/SchedulerRole/Resource`);
    expect(Object.values(schedules)[0]?.Properties).toEqual(
      expect.objectContaining({
        ScheduleExpression: defaultSettings.reconcileSchedule,
        FlexibleTimeWindow: { Mode: 'OFF' },
        State: 'ENABLED',
        Target: {
          Arn: { 'Fn::GetAtt': [fnId, 'Arn'] },
          RoleArn: { 'Fn::GetAtt': [role, 'Arn'] },
          RetryPolicy: { MaximumRetryAttempts: 0, MaximumEventAgeInSeconds: 60 },
        },
      }),
    );
    expect(defaultSettings.reconcileSchedule).toBe('rate(1 minute)');
  });

  test('its role is assumable only by Scheduler for this account’s default group, and invokes only the reconciler', () => {
    const { template, resources, fnId } = built;
    const role = resources[logicalIdAt(template, 'AWS::IAM::Role', `${PATH}/SchedulerRole/Resource`)];
    expect(role.Properties.AssumeRolePolicyDocument.Statement).toEqual([
      {
        Action: 'sts:AssumeRole',
        Effect: 'Allow',
        Principal: { Service: 'scheduler.amazonaws.com' },
        Condition: {
          StringEquals: {
            'aws:SourceAccount': { Ref: 'AWS::AccountId' },
            'aws:SourceArn': arn(
              ':scheduler:',
              { Ref: 'AWS::Region' },
              ':',
              { Ref: 'AWS::AccountId' },
              ':schedule-group/default',
            ),
          },
        },
      },
    ]);
    expect(role.Properties.ManagedPolicyArns).toBeUndefined();
    const fnArn = { 'Fn::GetAtt': [fnId, 'Arn'] };
    expect(policyStatements(template, `${PATH}/SchedulerRole/DefaultPolicy/Resource`)).toEqual([
      {
        Effect: 'Allow',
        Action: 'lambda:InvokeFunction',
        Resource: [fnArn, { 'Fn::Join': ['', [fnArn, ':*']] }],
      },
    ]);
  });
});

describe('reconcile function', () => {
  test('runs a pass for up to 5 minutes with 512 MB, and without reserved concurrency (passes may overlap)', () => {
    const fn = built.resources[built.fnId];
    expect(fn.Properties.Timeout).toBe(300);
    expect(fn.Properties.MemorySize).toBe(512);
    expect(fn.Properties.ReservedConcurrentExecutions).toBeUndefined();
  });

  test('describes, stops and redrives (a resume left undone) only executions of this state machine, and starts executions of it', () => {
    const { stateMachine } = built.props;
    const statements = policyStatements(built.template, `${FUNCTION_PATH}/Role/DefaultPolicy/Resource`);
    expect(statementsFor(statements, 'states')).toEqual([
      { Effect: 'Allow', Action: 'states:StartExecution', Resource: resolved(stateMachine.stateMachineArn) },
      {
        Effect: 'Allow',
        Action: ['states:DescribeExecution', 'states:RedriveExecution', 'states:StopExecution'],
        Resource: arn(
          ':states:',
          { Ref: 'AWS::Region' },
          ':',
          { Ref: 'AWS::AccountId' },
          ':execution:',
          resolved(stateMachine.stateMachineName),
          ':*',
        ),
      },
    ]);
  });

  test('may complete, fail and keep alive waiting steps, in a policy of its own that grants nothing else', () => {
    const { template, resources, fnId } = built;
    expect(policyStatements(template, `${FUNCTION_PATH}/TaskResponsePolicy/Resource`)).toEqual([
      {
        Effect: 'Allow',
        Action: ['states:SendTaskFailure', 'states:SendTaskHeartbeat', 'states:SendTaskSuccess'],
        Resource: '*',
      },
    ]);
    const policy = logicalIdAt(template, 'AWS::IAM::Policy', `${FUNCTION_PATH}/TaskResponsePolicy/Resource`);
    expect(resources[fnId].DependsOn).toContain(policy);
  });

  test("reads and writes the job table (its indexes included), sends to every provider's jobs queue and the hand-off lane and reads every provider's secret", () => {
    const { jobTable, jobQueues, handOffQueue, providerSecrets } = built.props;
    const statements = policyStatements(built.template, `${FUNCTION_PATH}/Role/DefaultPolicy/Resource`);
    const tableArn = resolved(jobTable.tableArn);
    expect(statementsFor(statements, 'dynamodb')).toEqual(
      expect.arrayContaining([
        expect.objectContaining({
          Action: expect.arrayContaining(['dynamodb:Query', 'dynamodb:UpdateItem', 'dynamodb:PutItem']),
          Resource: [tableArn, { 'Fn::Join': ['', [tableArn, '/index/*']] }],
        }),
      ]),
    );
    expect(statementsFor(statements, 'sqs')).toEqual([
      {
        Effect: 'Allow',
        Action: ['sqs:GetQueueAttributes', 'sqs:GetQueueUrl', 'sqs:SendMessage'],
        Resource: expect.arrayContaining(
          [...Object.values(jobQueues), handOffQueue].map((queue) => resolved(queue.queueArn)),
        ),
      },
    ]);
    expect(statementsFor(statements, 'secretsmanager')).toEqual([
      {
        Effect: 'Allow',
        Action: 'secretsmanager:GetSecretValue',
        Resource: expect.arrayContaining(
          Object.values(providerSecrets).map((secret) => resolved(secret.secretArn)),
        ),
      },
    ]);
  });

  test('finds every resource it is given through its environment', () => {
    const { jobTable, jobQueues, handOffQueue, stateMachine, providerSecrets } = built.props;
    expect(built.resources[built.fnId].Properties.Environment.Variables).toEqual(
      expect.objectContaining({
        JOB_TABLE_NAME: resolved(jobTable.tableName),
        ...Object.fromEntries(
          Object.entries(jobQueues).map(([provider, queue]) => [
            jobQueueEnv(provider),
            resolved(queue.queueUrl),
          ]),
        ),
        HAND_OFF_QUEUE_URL: resolved(handOffQueue.queueUrl),
        STATE_MACHINE_ARN: resolved(stateMachine.stateMachineArn),
        ...Object.fromEntries(
          Object.entries(providerSecrets).map(([provider, secret]) => [
            providerSecretEnv(provider),
            resolved(secret.secretArn),
          ]),
        ),
        POWERTOOLS_SERVICE_NAME: 'reconcile',
      }),
    );
  });
});

describe('alarms', () => {
  test.each([
    [
      'errors in three passes in a row alarm',
      'ErrorsAlarm',
      {
        MetricName: 'Errors',
        Threshold: 0,
        ComparisonOperator: 'GreaterThanThreshold',
        TreatMissingData: 'notBreaching',
      },
    ],
    [
      'three periods without a pass alarm too: a stopped loop repairs nothing',
      'StalledAlarm',
      {
        MetricName: 'Invocations',
        Threshold: 1,
        ComparisonOperator: 'LessThanThreshold',
        TreatMissingData: 'breaching',
      },
    ],
  ])('%s, and notify the alarm topic', (_title, id, own) => {
    const { template, resources, fnId, props } = built;
    const topic = resolved(props.alarms.topic.topicArn);
    const alarm = resources[logicalIdAt(template, 'AWS::CloudWatch::Alarm', `${PATH}/${id}/Resource`)];
    expect(alarm.Properties).toEqual(
      expect.objectContaining({
        Namespace: 'AWS/Lambda',
        Dimensions: [{ Name: 'FunctionName', Value: { Ref: fnId } }],
        Statistic: 'Sum',
        Period: 60,
        EvaluationPeriods: 3,
        DatapointsToAlarm: 3,
        AlarmActions: [topic],
        OKActions: [topic],
        ...own,
      }),
    );
  });
});

// About the app: the stack, not the reconciler, gives its function the buckets (its sweeps).
test("in the Longhaul stack, it may read and delete outputs for its sweeps, delete a deleted media item's uploads, and never write either", () => {
  const template = longhaulTemplate();
  const statements = policyStatements(
    template,
    'Longhaul/Reconciler/ReconcileFunction/Role/DefaultPolicy/Resource',
  );
  const outputBucket = logicalIdAt(template, 'AWS::S3::Bucket', 'Longhaul/JobOutputs/OutputBucket/Resource');
  const inputBucket = logicalIdAt(template, 'AWS::S3::Bucket', 'Longhaul/JobInputs/InputBucket/Resource');
  expect(statementsFor(statements, 's3')).toEqual([
    {
      Effect: 'Allow',
      Action: ['s3:DeleteObject', 's3:GetObject'],
      Resource: { 'Fn::Join': ['', [{ 'Fn::GetAtt': [outputBucket, 'Arn'] }, '/*']] },
    },
    { Effect: 'Allow', Action: 's3:ListBucket', Resource: { 'Fn::GetAtt': [outputBucket, 'Arn'] } },
    {
      Effect: 'Allow',
      Action: 's3:DeleteObject',
      Resource: { 'Fn::Join': ['', [{ 'Fn::GetAtt': [inputBucket, 'Arn'] }, '/*']] },
    },
  ]);
});
