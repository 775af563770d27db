import { App, Stack } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { AttributeType, Table } from 'aws-cdk-lib/aws-dynamodb';
import { Queue } from 'aws-cdk-lib/aws-sqs';
import { DefinitionBody, Pass, StateMachine } from 'aws-cdk-lib/aws-stepfunctions';
import { defaultSettings } from '../../config/settings';
import { JobDispatcher } from '../../lib/constructs/job-dispatcher';
import { cdkJsonContext, SYNTH_TIMEOUT_MS } from './longhaul-app';

jest.setTimeout(SYNTH_TIMEOUT_MS);

let template: Template;

beforeAll(() => {
  // No stack matches an empty list, so the handler is not bundled: only the template is read.
  const app = new App({ context: { ...cdkJsonContext(), 'aws:cdk:bundling-stacks': [] } });
  const stack = new Stack(app, 'DispatcherUnderTest');
  new JobDispatcher(stack, 'Dispatcher', {
    settings: defaultSettings,
    jobTable: new Table(stack, 'Jobs', { partitionKey: { name: 'pk', type: AttributeType.STRING } }),
    jobQueue: new Queue(stack, 'JobQueue'),
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
