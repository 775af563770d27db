import { App, Stack, Validations } from 'aws-cdk-lib';
import { Queue } from 'aws-cdk-lib/aws-sqs';
import { AwsSolutionsChecks } from 'cdk-nag';
import type { IConstruct } from 'constructs';
import { type RouteLayout, routes } from '../../config/layout';
import {
  cdkJsonContext,
  SYNTH_TIMEOUT_MS,
  type SynthesizedLonghaul,
  synthesizeLonghaul,
} from './longhaul-app';

jest.setTimeout(SYNTH_TIMEOUT_MS);

let longhaul: SynthesizedLonghaul;

beforeAll(() => {
  // Synthesis itself throws if AwsSolutions reports anything that is not acknowledged.
  longhaul = synthesizeLonghaul({}, { nag: true, skipBundling: true });
});

/** `path rule` for every finding AwsSolutions reports and no acknowledgement covers. */
function unacknowledgedFindings(scope: IConstruct): string[] {
  const report = new AwsSolutionsChecks().validateScope(scope);
  return report.violations.flatMap((violation) =>
    violation.violatingResources.map(
      (resource) => `${violation.severity} ${violation.ruleName} at ${resource.constructPath}`,
    ),
  );
}

/** Every acknowledgement in the stack as `path rule`, with its reason. */
function acknowledgements(scope: IConstruct): { at: string; id: string; reason: string }[] {
  return scope.node.findAll().flatMap((construct) =>
    construct.node.metadata
      .filter((entry) => entry.type === Validations.ACKNOWLEDGED_RULES_METADATA_KEY)
      .flatMap((entry) =>
        Object.entries(entry.data as Record<string, string>).map(([id, reason]) => ({
          at: construct.node.path,
          id: id.replace(/^annotation::/i, ''),
          reason,
        })),
      ),
  );
}

test('the stack has no unacknowledged AwsSolutions errors or warnings', () => {
  expect(unacknowledgedFindings(longhaul.app)).toEqual([]);
});

test('the check does find problems: a bare queue is reported', () => {
  const app = new App({ context: cdkJsonContext() });
  const stack = new Stack(app, 'Bare');
  new Queue(stack, 'Queue');
  expect(unacknowledgedFindings(app)).toEqual(
    expect.arrayContaining([
      'error AwsSolutions-SQS3 at Bare/Queue/Resource',
      'error AwsSolutions-SQS4 at Bare/Queue/Resource',
    ]),
  );
  Validations.of(app).addPlugins(new AwsSolutionsChecks(app));
  expect(() => app.synth()).toThrow(/AwsSolutions-SQS4/);
});

test('every acknowledgement is one reviewed here, with a reason', () => {
  const found = acknowledgements(longhaul.stack);
  // Per route: none uses Cognito (COG4); open routes also have no gateway authorizer (APIG4), each saying why.
  const method = (route: RouteLayout) => `Longhaul/Api/RestApi/Default${route.path}/${route.method}`;
  const routeAcknowledgements = [
    ...routes.map((route) => `${method(route)} AwsSolutions-COG4`),
    ...routes.filter((route) => route.auth === 'none').map((route) => `${method(route)} AwsSolutions-APIG4`),
  ];
  // Logical ids end in a hash; the finding names the resource by it.
  const withoutHash = (id: string) => id.replace(/<(\w+?)[0-9A-F]{8}(\.\w+)?>/g, '<$1$2>');
  // Posting to live clients, on every connection of the one stage only.
  const manageConnections = (role: string) =>
    `${role} AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:execute-api:<AWS::Region>:<AWS::AccountId>:<LiveProgressWebSocketApi>/live/POST/@connections/*]`;
  expect(found.map(({ at, id }) => `${at} ${withoutHash(id)}`).sort()).toEqual(
    [
      'Longhaul/JobInputs/AccessLogBucket AwsSolutions-S1',
      'Longhaul/Api/ApiFunction/Role AwsSolutions-IAM5[Resource::*]',
      'Longhaul/Api/ApiFunction/Role AwsSolutions-IAM5[Resource::<JobStoreJobTable.Arn>/index/*]',
      'Longhaul/Api/ApiFunction/Role AwsSolutions-IAM5[Resource::<JobInputsInputBucket.Arn>/*]',
      'Longhaul/Api/ApiFunction/Role AwsSolutions-IAM5[Resource::<JobOutputsOutputBucket.Arn>/*]',
      'Longhaul/Api/ApiFunction/TaskResponsePolicy AwsSolutions-IAM5[Resource::*]',
      'Longhaul/Api/AuthorizerFunction/Role AwsSolutions-IAM5[Resource::*]',
      'Longhaul/Api/RestApi AwsSolutions-APIG2',
      'Longhaul/Api/RestApi/CloudWatchRole AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AmazonAPIGatewayPushToCloudWatchLogs]',
      'Longhaul/Api/RestApi/DeploymentStage.prod AwsSolutions-APIG3',
      ...routeAcknowledgements,
      'Longhaul/Secrets/ProviderSecret AwsSolutions-SMG4',
      'Longhaul/Secrets/WebhookSigningSecret AwsSolutions-SMG4',
      'Longhaul/WorkflowSteps/StepsFunction/Role AwsSolutions-IAM5[Resource::*]',
      'Longhaul/WorkflowSteps/StepsFunction/Role AwsSolutions-IAM5[Resource::<JobStoreJobTable.Arn>/index/*]',
      'Longhaul/WorkflowSteps/StepsFunction/Role AwsSolutions-IAM5[Resource::<JobInputsInputBucket.Arn>/*]',
      'Longhaul/WorkflowSteps/StepsFunction/Role AwsSolutions-IAM5[Resource::<JobOutputsOutputBucket.Arn>/*]',
      'Longhaul/WorkflowSteps/StepsFunction/TaskResponsePolicy AwsSolutions-IAM5[Resource::*]',
      'Longhaul/Workflow/StateMachine AwsSolutions-SF1',
      'Longhaul/Workflow/StateMachine AwsSolutions-IAM5[Resource::*]',
      'Longhaul/Workflow/StateMachine AwsSolutions-IAM5[Resource::<WorkflowStepsStepsFunction.Arn>:*]',
      'Longhaul/Dispatcher/DispatchFunction/Role AwsSolutions-IAM5[Resource::*]',
      'Longhaul/Dispatcher/DispatchFunction/Role AwsSolutions-IAM5[Resource::<JobStoreJobTable.Arn>/index/*]',
      'Longhaul/Reconciler/ReconcileFunction/Role AwsSolutions-IAM5[Resource::*]',
      'Longhaul/Reconciler/ReconcileFunction/Role AwsSolutions-IAM5[Resource::<JobStoreJobTable.Arn>/index/*]',
      'Longhaul/Reconciler/ReconcileFunction/Role AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:states:<AWS::Region>:<AWS::AccountId>:execution:<WorkflowStateMachine.Name>:*]',
      'Longhaul/Reconciler/ReconcileFunction/TaskResponsePolicy AwsSolutions-IAM5[Resource::*]',
      'Longhaul/Reconciler/SchedulerRole AwsSolutions-IAM5[Resource::<ReconcilerReconcileFunction.Arn>:*]',
      'Longhaul/LiveProgress/StreamFunction/Role AwsSolutions-IAM5[Resource::*]',
      'Longhaul/LiveProgress/WebSocketApi/$connect-Route AwsSolutions-APIG4',
      'Longhaul/LiveProgress/WebSocketApi/$disconnect-Route AwsSolutions-APIG4',
      'Longhaul/LiveProgress/WebSocketApi/$default-Route AwsSolutions-APIG4',
      manageConnections('Longhaul/Api/ApiFunction/Role'),
      manageConnections('Longhaul/WorkflowSteps/StepsFunction/Role'),
      manageConnections('Longhaul/Reconciler/ReconcileFunction/Role'),
    ].sort(),
  );
  for (const { reason } of found) expect(reason.length).toBeGreaterThan(40);
});

test('only the open routes, healthz, the OpenAPI document and the provider webhook, go without a gateway authorizer', () => {
  const open = acknowledgements(longhaul.stack)
    .filter(({ id, at }) => id === 'AwsSolutions-APIG4' && at.startsWith('Longhaul/Api/'))
    .map(({ at }) => at)
    .sort();
  expect(open).toEqual([
    'Longhaul/Api/RestApi/Default/healthz/GET',
    'Longhaul/Api/RestApi/Default/openapi.json/GET',
    'Longhaul/Api/RestApi/Default/v1/provider/events/POST',
  ]);
});

test('the WebSocket routes go without a gateway authorizer, and $connect says who checks the key instead', () => {
  const open = acknowledgements(longhaul.stack).filter(
    ({ id, at }) => id === 'AwsSolutions-APIG4' && !at.startsWith('Longhaul/Api/'),
  );
  expect(open.map(({ at }) => at).sort()).toEqual([
    'Longhaul/LiveProgress/WebSocketApi/$connect-Route',
    'Longhaul/LiveProgress/WebSocketApi/$default-Route',
    'Longhaul/LiveProgress/WebSocketApi/$disconnect-Route',
  ]);
  const connect = open.find(({ at }) => at.endsWith('/$connect-Route'));
  expect(connect?.reason).toMatch(/stream handler admits a connection only with an unexpired stream ticket/);
  expect(connect?.reason).toMatch(/refuses the admin key/);
});
