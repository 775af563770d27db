import { Template } from 'aws-cdk-lib/assertions';
import { AttributeType, Table } from 'aws-cdk-lib/aws-dynamodb';
import { Queue } from 'aws-cdk-lib/aws-sqs';
import { resourceEnv } from '../../config/layout';
import { defaultSettings } from '../../config/settings';
import { Alarms } from '../../lib/constructs/alarms';
import { JobSchedules } from '../../lib/constructs/job-schedules';
import {
  logicalIdAt,
  longhaulTemplate,
  perProvider,
  policyStatements,
  SYNTH_TIMEOUT_MS,
  stackUnderTest,
  standInFunction,
  statementsFor,
} from './longhaul-app';

jest.setTimeout(SYNTH_TIMEOUT_MS);

const PATH = 'Test/Schedules';
/** The stand-in for the function that keeps the schedules' triggers (the API's, in the app). */
const MANAGER = 'Test/Manager';

/** JobSchedules alone in a stack of its own, with stand-ins for what the app gives it. */
function build() {
  const stack = stackUnderTest();
  new JobSchedules(stack, 'Schedules', {
    settings: defaultSettings,
    jobTable: new Table(stack, 'Jobs', { partitionKey: { name: 'pk', type: AttributeType.STRING } }),
    jobQueues: perProvider((provider) => new Queue(stack, `Jobs-${provider}`)),
    manager: standInFunction(stack, 'Manager'),
    alarms: new Alarms(stack, 'Alarms'),
  });
  const template = Template.fromStack(stack);
  const idAt = (type: string, path: string) => logicalIdAt(template, type, `${PATH}/${path}`);
  return {
    template,
    resources: template.toJSON().Resources,
    fire: idAt('AWS::Lambda::Function', 'FireFunction/Function/Resource'),
    role: idAt('AWS::IAM::Role', 'SchedulerRole/Resource'),
    group: idAt('AWS::Scheduler::ScheduleGroup', 'Group/Resource'),
    dlq: idAt('AWS::SQS::Queue', 'DeadLetterQueue/Resource'),
  };
}

let built: ReturnType<typeof build>;
beforeAll(() => {
  built = build();
});

test('a schedule group of its own, kept when the stack leaves (tenants’ schedules live in it)', () => {
  expect(built.resources[built.group].DeletionPolicy).toBe('Retain');
  expect(Object.keys(built.template.findResources('AWS::Scheduler::ScheduleGroup'))).toEqual([built.group]);
});

test('the scheduler role may be assumed only by Scheduler for this group, and may only invoke the fire function and dead-letter', () => {
  const role = built.resources[built.role].Properties;
  expect(role.AssumeRolePolicyDocument.Statement).toEqual([
    {
      Action: 'sts:AssumeRole',
      Effect: 'Allow',
      Principal: { Service: 'scheduler.amazonaws.com' },
      Condition: {
        StringEquals: {
          'aws:SourceAccount': { Ref: 'AWS::AccountId' },
          'aws:SourceArn': { 'Fn::GetAtt': [built.group, 'Arn'] },
        },
      },
    },
  ]);
  const statements = policyStatements(built.template, `${PATH}/SchedulerRole/DefaultPolicy/Resource`);
  expect(statementsFor(statements, 'lambda')).toEqual([
    { Effect: 'Allow', Action: 'lambda:InvokeFunction', Resource: { 'Fn::GetAtt': [built.fire, 'Arn'] } },
  ]);
  expect(statements.flatMap((statement) => [statement.Action].flat()).sort()).toEqual([
    'lambda:InvokeFunction',
    'sqs:GetQueueAttributes',
    'sqs:GetQueueUrl',
    'sqs:SendMessage',
  ]);
  expect(JSON.stringify(statementsFor(statements, 'sqs'))).toContain(built.dlq);
});

test('the manager manages schedules of that group only, and may pass only the scheduler role, only to Scheduler', () => {
  const statements = policyStatements(built.template, `${MANAGER}/Role/DefaultPolicy/Resource`);
  const groupName = built.resources[built.group].Properties.Name as string;
  const [scheduler] = statementsFor(statements, 'scheduler');
  expect(statementsFor(statements, 'scheduler')).toHaveLength(1);
  expect([scheduler?.Action].flat().sort()).toEqual([
    'scheduler:CreateSchedule',
    'scheduler:DeleteSchedule',
    'scheduler:UpdateSchedule',
  ]);
  expect(scheduler?.Resource).toEqual({
    'Fn::Join': [
      '',
      [
        'arn:',
        { Ref: 'AWS::Partition' },
        ':scheduler:',
        { Ref: 'AWS::Region' },
        ':',
        { Ref: 'AWS::AccountId' },
        `:schedule/${groupName}/*`,
      ],
    ],
  });
  expect(statementsFor(statements, 'iam')).toEqual([
    {
      Effect: 'Allow',
      Action: 'iam:PassRole',
      Resource: { 'Fn::GetAtt': [built.role, 'Arn'] },
      Condition: { StringEquals: { 'iam:PassedToService': 'scheduler.amazonaws.com' } },
    },
  ]);
  const manager = logicalIdAt(built.template, 'AWS::Lambda::Function', `${MANAGER}/Function/Resource`);
  expect(built.resources[manager].Properties.Environment.Variables).toEqual(
    expect.objectContaining({
      [resourceEnv.scheduleGroup]: groupName,
      [resourceEnv.scheduleTargetArn]: { 'Fn::GetAtt': [built.fire, 'Arn'] },
      [resourceEnv.scheduleRoleArn]: { 'Fn::GetAtt': [built.role, 'Arn'] },
      [resourceEnv.scheduleDeadLetterQueueArn]: { 'Fn::GetAtt': [built.dlq, 'Arn'] },
    }),
  );
});

test('the fire function reads and writes the job table and sends to the jobs queues, and touches no schedule', () => {
  const statements = policyStatements(built.template, `${PATH}/FireFunction/Role/DefaultPolicy/Resource`);
  expect(statementsFor(statements, 'scheduler')).toEqual([]);
  expect(statementsFor(statements, 'iam')).toEqual([]);
  expect(statementsFor(statements, 'states')).toEqual([]);
  expect(statementsFor(statements, 's3')).toEqual([]);
  expect(statementsFor(statements, 'dynamodb').length).toBeGreaterThan(0);
  expect(statementsFor(statements, 'sqs').flatMap((s) => [s.Action].flat())).toContain('sqs:SendMessage');
});

test('an alarm as soon as a firing reaches the dead-letter queue', () => {
  const alarmId = logicalIdAt(built.template, 'AWS::CloudWatch::Alarm', `${PATH}/DeadLettersAlarm/Resource`);
  expect(built.resources[alarmId].Properties).toEqual(
    expect.objectContaining({
      MetricName: 'ApproximateNumberOfMessagesVisible',
      Threshold: 0,
      ComparisonOperator: 'GreaterThanThreshold',
      Dimensions: [{ Name: 'QueueName', Value: { 'Fn::GetAtt': [built.dlq, 'QueueName'] } }],
    }),
  );
});

// About the app: the stack makes the API function the manager.
test('in the Longhaul stack, the API function keeps the triggers of the schedule group', () => {
  const app = longhaulTemplate();
  const group = logicalIdAt(app, 'AWS::Scheduler::ScheduleGroup', 'Longhaul/Schedules/Group/Resource');
  const api = logicalIdAt(app, 'AWS::Lambda::Function', 'Longhaul/Api/ApiFunction/Function/Resource');
  const appResources = app.toJSON().Resources;
  const groupName = appResources[group].Properties.Name;
  expect(groupName).toEqual(expect.any(String));
  expect(appResources[api].Properties.Environment.Variables[resourceEnv.scheduleGroup]).toBe(groupName);
});
