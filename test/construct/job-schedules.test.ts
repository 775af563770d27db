import type { Template } from 'aws-cdk-lib/assertions';
import { resourceEnv } from '../../config/layout';
import {
  logicalIdAt,
  longhaulTemplate,
  policyStatements,
  SYNTH_TIMEOUT_MS,
  statementsFor,
} from './longhaul-app';

jest.setTimeout(SYNTH_TIMEOUT_MS);

const PATH = 'Longhaul/Schedules';

type Json = Record<string, any>;

let template: Template;
let resources: Json;
let fireId: string;
let roleId: string;
let groupId: string;
let dlqId: string;

beforeAll(() => {
  template = longhaulTemplate();
  resources = template.toJSON().Resources;
  fireId = logicalIdAt(template, 'AWS::Lambda::Function', `${PATH}/FireFunction/Function/Resource`);
  roleId = logicalIdAt(template, 'AWS::IAM::Role', `${PATH}/SchedulerRole/Resource`);
  groupId = logicalIdAt(template, 'AWS::Scheduler::ScheduleGroup', `${PATH}/Group/Resource`);
  dlqId = logicalIdAt(template, 'AWS::SQS::Queue', `${PATH}/DeadLetterQueue/Resource`);
});

test('a schedule group of its own, kept when the stack leaves (tenants’ schedules live in it)', () => {
  expect(resources[groupId].DeletionPolicy).toBe('Retain');
  expect(Object.keys(template.findResources('AWS::Scheduler::ScheduleGroup'))).toEqual([groupId]);
});

test('the scheduler role may be assumed only by Scheduler for this group, and may only invoke the fire function and dead-letter', () => {
  const role = resources[roleId].Properties;
  expect(role.AssumeRolePolicyDocument.Statement).toEqual([
    {
      Action: 'sts:AssumeRole',
      Effect: 'Allow',
      Principal: { Service: 'scheduler.amazonaws.com' },
      Condition: {
        StringEquals: {
          'aws:SourceAccount': { Ref: 'AWS::AccountId' },
          'aws:SourceArn': { 'Fn::GetAtt': [groupId, 'Arn'] },
        },
      },
    },
  ]);
  const statements = policyStatements(template, `${PATH}/SchedulerRole/DefaultPolicy/Resource`);
  expect(statementsFor(statements, 'lambda')).toEqual([
    { Effect: 'Allow', Action: 'lambda:InvokeFunction', Resource: { 'Fn::GetAtt': [fireId, 'Arn'] } },
  ]);
  expect(statements.flatMap((statement) => [statement.Action].flat()).sort()).toEqual([
    'lambda:InvokeFunction',
    'sqs:GetQueueAttributes',
    'sqs:GetQueueUrl',
    'sqs:SendMessage',
  ]);
  expect(JSON.stringify(statementsFor(statements, 'sqs'))).toContain(dlqId);
});

test('the API function manages schedules of that group only, and may pass only the scheduler role, only to Scheduler', () => {
  const statements = policyStatements(template, 'Longhaul/Api/ApiFunction/Role/DefaultPolicy/Resource');
  const groupName = resources[groupId].Properties.Name as string;
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
      Resource: { 'Fn::GetAtt': [roleId, 'Arn'] },
      Condition: { StringEquals: { 'iam:PassedToService': 'scheduler.amazonaws.com' } },
    },
  ]);
  const apiId = logicalIdAt(template, 'AWS::Lambda::Function', 'Longhaul/Api/ApiFunction/Function/Resource');
  expect(resources[apiId].Properties.Environment.Variables).toEqual(
    expect.objectContaining({
      [resourceEnv.scheduleGroup]: groupName,
      [resourceEnv.scheduleTargetArn]: { 'Fn::GetAtt': [fireId, 'Arn'] },
      [resourceEnv.scheduleRoleArn]: { 'Fn::GetAtt': [roleId, 'Arn'] },
      [resourceEnv.scheduleDeadLetterQueueArn]: { 'Fn::GetAtt': [dlqId, 'Arn'] },
    }),
  );
});

test('the fire function reads and writes the job table and sends to the jobs queues, and touches no schedule', () => {
  const statements = policyStatements(template, `${PATH}/FireFunction/Role/DefaultPolicy/Resource`);
  expect(statementsFor(statements, 'scheduler')).toEqual([]);
  expect(statementsFor(statements, 'iam')).toEqual([]);
  expect(statementsFor(statements, 'states')).toEqual([]);
  expect(statementsFor(statements, 's3')).toEqual([]);
  expect(statementsFor(statements, 'dynamodb').length).toBeGreaterThan(0);
  expect(statementsFor(statements, 'sqs').flatMap((s) => [s.Action].flat())).toContain('sqs:SendMessage');
});

test('an alarm as soon as a firing reaches the dead-letter queue', () => {
  const alarmId = logicalIdAt(template, 'AWS::CloudWatch::Alarm', `${PATH}/DeadLettersAlarm/Resource`);
  expect(resources[alarmId].Properties).toEqual(
    expect.objectContaining({
      MetricName: 'ApproximateNumberOfMessagesVisible',
      Threshold: 0,
      ComparisonOperator: 'GreaterThanThreshold',
      Dimensions: [{ Name: 'QueueName', Value: { 'Fn::GetAtt': [dlqId, 'QueueName'] } }],
    }),
  );
});
