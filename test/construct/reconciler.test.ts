import type { Template } from 'aws-cdk-lib/assertions';
import { defaultSettings } from '../../config/settings';
import {
  jobQueueArns,
  jobQueueEnvironment,
  logicalIdAt,
  longhaulTemplate,
  policyStatements,
  providerSecretEnvironment,
  readsEveryProviderSecret,
  SYNTH_TIMEOUT_MS,
  statementsFor,
} from './longhaul-app';

jest.setTimeout(SYNTH_TIMEOUT_MS);

const PATH = 'Longhaul/Reconciler';
const FUNCTION_PATH = `${PATH}/ReconcileFunction`;

type Json = Record<string, any>;

let template: Template;
let resources: Json;
let fnId: string;
let stateMachineId: string;

beforeAll(() => {
  template = longhaulTemplate();
  resources = template.toJSON().Resources;
  fnId = logicalIdAt(template, 'AWS::Lambda::Function', `${FUNCTION_PATH}/Function/Resource`);
  stateMachineId = logicalIdAt(
    template,
    'AWS::StepFunctions::StateMachine',
    'Longhaul/Workflow/StateMachine/Resource',
  );
});

/** An ARN as CDK synthesizes it: `arn:<partition>` followed by `parts`. */
const arn = (...parts: unknown[]) => ({ 'Fn::Join': ['', ['arn:', { Ref: 'AWS::Partition' }, ...parts]] });

describe('schedule', () => {
  test('invokes the reconcile function on reconcileSchedule, without a flexible window or retries', () => {
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
    const fn = resources[fnId];
    expect(fn.Properties.Timeout).toBe(300);
    expect(fn.Properties.MemorySize).toBe(512);
    expect(fn.Properties.ReservedConcurrentExecutions).toBeUndefined();
  });

  test('describes, stops and redrives (a resume left undone) only executions of this state machine, and starts executions of it', () => {
    const statements = policyStatements(template, `${FUNCTION_PATH}/Role/DefaultPolicy/Resource`);
    expect(statementsFor(statements, 'states')).toEqual([
      { Effect: 'Allow', Action: 'states:StartExecution', Resource: { Ref: stateMachineId } },
      {
        Effect: 'Allow',
        Action: ['states:DescribeExecution', 'states:RedriveExecution', 'states:StopExecution'],
        Resource: arn(
          ':states:',
          { Ref: 'AWS::Region' },
          ':',
          { Ref: 'AWS::AccountId' },
          ':execution:',
          { 'Fn::GetAtt': [stateMachineId, 'Name'] },
          ':*',
        ),
      },
    ]);
  });

  test("may read and delete outputs for its sweeps, delete a deleted media item's uploads, and never write either", () => {
    const statements = policyStatements(template, `${FUNCTION_PATH}/Role/DefaultPolicy/Resource`);
    const outputBucket = logicalIdAt(
      template,
      'AWS::S3::Bucket',
      'Longhaul/JobOutputs/OutputBucket/Resource',
    );
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

  test('may complete, fail and keep alive waiting steps, in a policy of its own that grants nothing else', () => {
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

  test("reads and writes the job table (the active index included), sends to every provider's jobs queue and the hand-off lane and reads every provider's secret", () => {
    const statements = policyStatements(template, `${FUNCTION_PATH}/Role/DefaultPolicy/Resource`);
    const table = logicalIdAt(template, 'AWS::DynamoDB::Table', 'Longhaul/JobStore/JobTable/Resource');
    const lane = logicalIdAt(template, 'AWS::SQS::Queue', 'Longhaul/JobQueue/HandOffQueue/Resource');
    expect(statementsFor(statements, 'dynamodb')).toEqual(
      expect.arrayContaining([
        expect.objectContaining({
          Action: expect.arrayContaining(['dynamodb:Query', 'dynamodb:UpdateItem', 'dynamodb:PutItem']),
          Resource: [
            { 'Fn::GetAtt': [table, 'Arn'] },
            { 'Fn::Join': ['', [{ 'Fn::GetAtt': [table, 'Arn'] }, '/index/*']] },
          ],
        }),
      ]),
    );
    expect(statementsFor(statements, 'sqs')).toEqual([
      {
        Effect: 'Allow',
        Action: ['sqs:GetQueueAttributes', 'sqs:GetQueueUrl', 'sqs:SendMessage'],
        Resource: expect.arrayContaining([...jobQueueArns(template), { 'Fn::GetAtt': [lane, 'Arn'] }]),
      },
    ]);
    expect(statementsFor(statements, 'secretsmanager')).toEqual([readsEveryProviderSecret(template)]);
  });

  test('finds every resource it uses through its environment', () => {
    expect(resources[fnId].Properties.Environment.Variables).toEqual(
      expect.objectContaining({
        JOB_TABLE_NAME: {
          Ref: logicalIdAt(template, 'AWS::DynamoDB::Table', 'Longhaul/JobStore/JobTable/Resource'),
        },
        ...jobQueueEnvironment(template),
        HAND_OFF_QUEUE_URL: {
          Ref: logicalIdAt(template, 'AWS::SQS::Queue', 'Longhaul/JobQueue/HandOffQueue/Resource'),
        },
        STATE_MACHINE_ARN: { Ref: stateMachineId },
        ...providerSecretEnvironment(template),
        CONNECTION_TABLE_NAME: {
          Ref: logicalIdAt(
            template,
            'AWS::DynamoDB::Table',
            'Longhaul/LiveProgress/ConnectionTable/Resource',
          ),
        },
        STREAM_CALLBACK_URL: expect.anything(),
        POWERTOOLS_SERVICE_NAME: 'reconcile',
      }),
    );
  });
});

describe('alarms', () => {
  const topic = () => ({ Ref: logicalIdAt(template, 'AWS::SNS::Topic', 'Longhaul/Alarms/Topic/Resource') });

  test('errors in three passes in a row alarm, and notify the alarm topic', () => {
    const alarm = resources[logicalIdAt(template, 'AWS::CloudWatch::Alarm', `${PATH}/ErrorsAlarm/Resource`)];
    expect(alarm.Properties).toEqual(
      expect.objectContaining({
        Namespace: 'AWS/Lambda',
        MetricName: 'Errors',
        Dimensions: [{ Name: 'FunctionName', Value: { Ref: fnId } }],
        Statistic: 'Sum',
        Period: 60,
        Threshold: 0,
        ComparisonOperator: 'GreaterThanThreshold',
        EvaluationPeriods: 3,
        DatapointsToAlarm: 3,
        TreatMissingData: 'notBreaching',
        AlarmActions: [topic()],
        OKActions: [topic()],
      }),
    );
  });

  test('three periods without a pass alarm too: a stopped loop repairs nothing', () => {
    const alarm = resources[logicalIdAt(template, 'AWS::CloudWatch::Alarm', `${PATH}/StalledAlarm/Resource`)];
    expect(alarm.Properties).toEqual(
      expect.objectContaining({
        Namespace: 'AWS/Lambda',
        MetricName: 'Invocations',
        Dimensions: [{ Name: 'FunctionName', Value: { Ref: fnId } }],
        Statistic: 'Sum',
        Period: 60,
        Threshold: 1,
        ComparisonOperator: 'LessThanThreshold',
        EvaluationPeriods: 3,
        DatapointsToAlarm: 3,
        TreatMissingData: 'breaching',
        AlarmActions: [topic()],
        OKActions: [topic()],
      }),
    );
  });
});
