import { Template } from 'aws-cdk-lib/assertions';
import { AttributeType, Table } from 'aws-cdk-lib/aws-dynamodb';
import { Queue } from 'aws-cdk-lib/aws-sqs';
import { DefinitionBody, Pass, StateMachine } from 'aws-cdk-lib/aws-stepfunctions';
import { defaultSettings } from '../../config/settings';
import { JobDispatcher } from '../../lib/constructs/job-dispatcher';
import { SYNTH_TIMEOUT_MS, stackUnderTest } from './longhaul-app';

jest.setTimeout(SYNTH_TIMEOUT_MS);

let template: Template;

beforeAll(() => {
  const stack = stackUnderTest('DispatcherUnderTest');
  new JobDispatcher(stack, 'Dispatcher', {
    settings: defaultSettings,
    jobTable: new Table(stack, 'Jobs', { partitionKey: { name: 'pk', type: AttributeType.STRING } }),
    jobQueues: {
      'longhaul-http': new Queue(stack, 'GenericJobs'),
      replicate: new Queue(stack, 'ReplicateJobs'),
      deepgram: new Queue(stack, 'DeepgramJobs'),
      bedrock: new Queue(stack, 'BedrockJobs'),
    },
    handOffQueue: new Queue(stack, 'HandOffQueue'),
    stateMachine: new StateMachine(stack, 'Workflow', {
      definitionBody: DefinitionBody.fromChainable(new Pass(stack, 'Start')),
    }),
  });
  template = Template.fromStack(stack);
});

test('allows the dispatch function its re-enqueue loop, which Lambda would stop after about 16 invocations', () => {
  template.hasResourceProperties('AWS::Lambda::Function', {
    Description: 'Longhaul dispatch: acquires an in-flight slot and starts the workflow of each queued job',
    RecursiveLoop: 'Allow',
  });
});

const queueId = (name: string) => {
  const [id] = Object.keys(template.findResources('AWS::SQS::Queue')).filter((logicalId) =>
    logicalId.startsWith(name),
  );
  if (id === undefined) throw new Error(`no queue ${name}`);
  return id;
};
const dispatchFunctionId = () =>
  Object.entries(template.findResources('AWS::Lambda::Function')).find(
    ([, fn]) => fn.Properties.RecursiveLoop === 'Allow',
  )?.[0];

test.each([
  ['jobs queue of longhaul-http', 'GenericJobs'],
  ['jobs queue of replicate', 'ReplicateJobs'],
  ['jobs queue of deepgram', 'DeepgramJobs'],
  ['jobs queue of bedrock', 'BedrockJobs'],
  ['hand-off queue', 'HandOffQueue'],
])(
  'consumes the %s through its own mapping, with partial batch failures and bounded pollers',
  (_name, queue) => {
    template.resourceCountIs('AWS::Lambda::EventSourceMapping', 5);
    template.hasResourceProperties('AWS::Lambda::EventSourceMapping', {
      EventSourceArn: { 'Fn::GetAtt': [queueId(queue), 'Arn'] },
      FunctionName: { Ref: dispatchFunctionId() },
      BatchSize: 10,
      MaximumBatchingWindowInSeconds: 1,
      FunctionResponseTypes: ['ReportBatchItemFailures'],
      ScalingConfig: { MaximumConcurrency: 2 },
    });
  },
);

/** The actions the policies allow on the queue with logical id `queue`, statements naming several queues included. */
const actionsOn = (queue: string) =>
  Object.values(template.findResources('AWS::IAM::Policy'))
    .flatMap(
      (policy) =>
        policy.Properties.PolicyDocument.Statement as { Action: string | string[]; Resource: unknown }[],
    )
    .filter((statement) =>
      [statement.Resource]
        .flat()
        .some((target) => JSON.stringify(target) === JSON.stringify({ 'Fn::GetAtt': [queue, 'Arn'] })),
    )
    .flatMap((statement) => [statement.Action].flat());

test('consumes the hand-off queue, and sends to it a job it grants a slot but cannot start at once', () => {
  const onLane = actionsOn(queueId('HandOffQueue'));
  expect(onLane).toEqual(
    expect.arrayContaining(['sqs:ReceiveMessage', 'sqs:DeleteMessage', 'sqs:SendMessage']),
  );
});

test.each(['GenericJobs', 'ReplicateJobs', 'DeepgramJobs'])(
  'consumes the jobs queue %s and may send waiting jobs back to it',
  (queue) => {
    expect(actionsOn(queueId(queue))).toEqual(
      expect.arrayContaining(['sqs:ReceiveMessage', 'sqs:DeleteMessage', 'sqs:SendMessage']),
    );
  },
);
