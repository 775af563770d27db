import { Template } from 'aws-cdk-lib/assertions';
import { Role, ServicePrincipal } from 'aws-cdk-lib/aws-iam';
import { resourceEnv } from '../../config/layout';
import { LifecycleEventBus } from '../../lib/constructs/event-bus';
import {
  logicalIdAt,
  longhaulTemplate,
  type PolicyStatementJson,
  SYNTH_TIMEOUT_MS,
  stackUnderTest,
  standInFunction,
} from './longhaul-app';

jest.setTimeout(SYNTH_TIMEOUT_MS);

/**
 * Every IAM statement of the template that lets a principal put events (or do anything with a bus), with
 * the path of its policy. The state machine's own events actions, on the rule Step Functions manages for
 * its ECS task (`ecs:runTask.sync`), put nothing and are left out.
 */
function eventStatements(template: Template): { policy: string; statement: PolicyStatementJson }[] {
  const putting = (action: string) =>
    action === 'events:PutEvents' || action === 'events:*' || action === '*';
  return Object.values(template.findResources('AWS::IAM::Policy')).flatMap((policy) =>
    (policy.Properties.PolicyDocument.Statement as PolicyStatementJson[])
      .filter((statement) => [statement.Action].flat().some(putting))
      .map((statement) => ({ policy: String(policy.Metadata?.['aws:cdk:path']), statement })),
  );
}

describe('the bus alone', () => {
  function build(props: { eventBusName?: string } = {}) {
    const stack = stackUnderTest('Media');
    const bus = new LifecycleEventBus(stack, 'Events', props);
    const putter = new Role(stack, 'Putter', { assumedBy: new ServicePrincipal('lambda.amazonaws.com') });
    new Role(stack, 'Bystander', { assumedBy: new ServicePrincipal('lambda.amazonaws.com') });
    bus.grantPut(putter);
    standInFunction(stack, 'Teller').useEventBus(bus);
    const template = Template.fromStack(stack);
    return { template, busId: logicalIdAt(template, 'AWS::Events::EventBus', 'Media/Events/Bus/Resource') };
  }
  let byDefault: ReturnType<typeof build>;
  beforeAll(() => {
    byDefault = build();
  });

  test('is named after its stack, or as told, and has no policy that lets other accounts in', () => {
    byDefault.template.hasResourceProperties('AWS::Events::EventBus', { Name: 'Media' });
    build({ eventBusName: 'media-events' }).template.hasResourceProperties('AWS::Events::EventBus', {
      Name: 'media-events',
    });
    expect(byDefault.template.findResources('AWS::Events::EventBusPolicy')).toEqual({});
  });

  test('lets the granted role and the function told of it put events on it alone, and nothing else of EventBridge', () => {
    const { template, busId } = byDefault;
    const statement = {
      Effect: 'Allow',
      Action: 'events:PutEvents',
      Resource: { 'Fn::GetAtt': [busId, 'Arn'] },
    };
    expect(eventStatements(template)).toEqual([
      { policy: 'Media/Putter/DefaultPolicy/Resource', statement },
      { policy: 'Media/Teller/Role/DefaultPolicy/Resource', statement },
    ]);
  });

  test('a project function told of it learns its name', () => {
    const { template, busId } = byDefault;
    const fn = logicalIdAt(template, 'AWS::Lambda::Function', 'Media/Teller/Function/Resource');
    const variables = template.toJSON().Resources[fn].Properties.Environment.Variables;
    expect(variables[resourceEnv.eventBusName]).toEqual({ Ref: busId });
  });
});

// About the app: which of its functions the stack tells of the bus, and its outputs.
describe('in the Longhaul stack', () => {
  const API = 'Longhaul/Api/ApiFunction';
  const STEPS = 'Longhaul/WorkflowSteps/StepsFunction';
  const RECONCILER = 'Longhaul/Reconciler/ReconcileFunction';
  const DISPATCHER = 'Longhaul/Dispatcher/DispatchFunction';
  let template: Template;
  let busId: string;

  beforeAll(() => {
    template = longhaulTemplate();
    busId = logicalIdAt(template, 'AWS::Events::EventBus', 'Longhaul/Events/Bus/Resource');
  });

  /** The Powertools service name of the project function at `path`: how a function is told apart at run time. */
  const serviceAt = (path: string): string => {
    const id = logicalIdAt(template, 'AWS::Lambda::Function', `${path}/Function/Resource`);
    return template.toJSON().Resources[id].Properties.Environment.Variables.POWERTOOLS_SERVICE_NAME;
  };

  test('there is one bus, named after the stack', () => {
    expect(Object.keys(template.findResources('AWS::Events::EventBus'))).toEqual([busId]);
    template.hasResourceProperties('AWS::Events::EventBus', { Name: 'Longhaul' });
  });

  test('only the API, the dispatcher, the workflow steps and the reconciler may put events, on this bus alone', () => {
    const granted = eventStatements(template);
    expect(granted.map(({ policy }) => policy).sort()).toEqual(
      [API, DISPATCHER, STEPS, RECONCILER].map((path) => `${path}/Role/DefaultPolicy/Resource`).sort(),
    );
    for (const { statement } of granted) {
      expect(statement).toEqual({
        Effect: 'Allow',
        Action: 'events:PutEvents',
        Resource: { 'Fn::GetAtt': [busId, 'Arn'] },
      });
    }
  });

  test('the functions that put are told the bus by name, and no other function is', () => {
    const told = Object.entries(template.findResources('AWS::Lambda::Function'))
      .filter(([, fn]) => fn.Properties.Environment?.Variables?.[resourceEnv.eventBusName] !== undefined)
      .map(([, fn]) => {
        expect(fn.Properties.Environment.Variables[resourceEnv.eventBusName]).toEqual({ Ref: busId });
        return fn.Properties.Environment.Variables.POWERTOOLS_SERVICE_NAME;
      });
    expect(told.sort()).toEqual([API, DISPATCHER, STEPS, RECONCILER].map(serviceAt).sort());
  });

  test("the bus's name and ARN are outputs", () => {
    template.hasOutput('EventBusName', { Value: { Ref: busId } });
    template.hasOutput('EventBusArn', { Value: { 'Fn::GetAtt': [busId, 'Arn'] } });
  });
});
