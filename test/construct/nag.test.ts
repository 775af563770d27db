import { App, Stack, Validations } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { Policy, PolicyStatement, Role, ServicePrincipal } from 'aws-cdk-lib/aws-iam';
import { Bucket } from 'aws-cdk-lib/aws-s3';
import { Queue } from 'aws-cdk-lib/aws-sqs';
import { AwsSolutionsChecks } from 'cdk-nag';
import type { IConstruct } from 'constructs';
import { type RouteLayout, allRoutes as routes } from '../../config/layout';
import { acknowledge, acknowledgeActionsOnAnyResource, iam5ResourceFinding } from '../../lib/nag';
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

/** A stack of its own with one role that may read every object of one bucket, acknowledged as Longhaul does. */
function roleReadingObjects() {
  const app = new App({ context: cdkJsonContext() });
  const stack = new Stack(app, 'Grants');
  const bucket = new Bucket(stack, 'Bucket', { enforceSSL: true });
  const role = new Role(stack, 'Role', { assumedBy: new ServicePrincipal('lambda.amazonaws.com') });
  role.addToPrincipalPolicy(
    new PolicyStatement({ actions: ['s3:GetObject'], resources: [bucket.arnForObjects('*')] }),
  );
  acknowledge(role, iam5ResourceFinding(role, bucket.bucketArn, '/*'), 'Object keys are chosen at run time.');
  return { app, stack, bucket, role };
}

const iam5Findings = (scope: IConstruct) =>
  unacknowledgedFindings(scope).filter((finding) => finding.includes('AwsSolutions-IAM5'));

test('an acknowledgement covers its own resource only, not a second policy of the same role', () => {
  const { app, bucket, role } = roleReadingObjects();
  expect(iam5Findings(app)).toEqual([]);
  new Policy(role, 'Extra', {
    roles: [role],
    statements: [new PolicyStatement({ actions: ['s3:PutObject'], resources: [bucket.arnForObjects('*')] })],
  });
  expect(iam5Findings(app)).toEqual([
    'error AwsSolutions-IAM5[Resource::<Bucket83908E77.Arn>/*] at Grants/Role/Extra/Resource',
  ]);
});

test('a grant on "*" is acknowledged with its actions, and synthesis fails once the policy grants another', () => {
  const { app, role } = roleReadingObjects();
  expect(() => acknowledge(role, 'AwsSolutions-IAM5[Resource::*]', 'X-Ray names no resources.')).toThrow(
    /acknowledgeActionsOnAnyResource/,
  );
  role.addToPrincipalPolicy(new PolicyStatement({ actions: ['xray:PutTraceSegments'], resources: ['*'] }));
  acknowledgeActionsOnAnyResource(role, ['xray:PutTraceSegments'], 'X-Ray names no resources.');
  expect(iam5Findings(app)).toEqual([]);
  role.addToPrincipalPolicy(new PolicyStatement({ actions: ['s3:ListAllMyBuckets'], resources: ['*'] }));
  expect(() => app.synth()).toThrow(
    /Grants\/Role\/DefaultPolicy\/Resource grants s3:ListAllMyBuckets on "\*", which its AwsSolutions-IAM5\[Resource::\*\] acknowledgement does not name/,
  );
});

test('every acknowledgement is one reviewed here, with a reason', () => {
  const found = acknowledgements(longhaul.stack);
  // Per route: none uses Cognito (COG4); open routes also have no gateway authorizer (APIG4), each saying why.
  const method = (route: RouteLayout) => `Longhaul/Api/RestApi/Default${route.path}/${route.method}/Resource`;
  const routeAcknowledgements = [
    ...routes.map((route) => `${method(route)} AwsSolutions-COG4`),
    ...routes.filter((route) => route.auth === 'none').map((route) => `${method(route)} AwsSolutions-APIG4`),
  ];
  // Logical ids end in a hash; the finding names the resource by it.
  const withoutHash = (id: string) => id.replace(/<(\w+?)[0-9A-F]{8}(\.\w+)?>/g, '<$1$2>');
  // Posting to live clients, on every connection of the one stage only.
  const scheduleGroupName = Object.values(
    Template.fromStack(longhaul.stack).findResources('AWS::Scheduler::ScheduleGroup'),
  )[0]?.Properties.Name as string;
  const manageConnections = (role: string) =>
    `${role}/DefaultPolicy/Resource AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:execute-api:<AWS::Region>:<AWS::AccountId>:<LiveProgressWebSocketApi>/live/POST/@connections/*]`;
  expect(found.map(({ at, id }) => `${at} ${withoutHash(id)}`).sort()).toEqual(
    [
      'Longhaul/JobInputs/AccessLogBucket/Resource AwsSolutions-S1',
      'Longhaul/Api/ApiFunction/Role/DefaultPolicy/Resource AwsSolutions-IAM5[Resource::*]',
      // A job's steps are read from the histories of its executions, named at run time.
      'Longhaul/Api/ApiFunction/Role/DefaultPolicy/Resource AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:states:<AWS::Region>:<AWS::AccountId>:execution:<WorkflowStateMachine.Name>:*]',
      'Longhaul/Api/ApiFunction/Role/DefaultPolicy/Resource AwsSolutions-IAM5[Resource::<JobStoreJobTable.Arn>/index/*]',
      'Longhaul/Api/ApiFunction/Role/DefaultPolicy/Resource AwsSolutions-IAM5[Resource::<JobInputsInputBucket.Arn>/*]',
      'Longhaul/Api/ApiFunction/Role/DefaultPolicy/Resource AwsSolutions-IAM5[Resource::<JobOutputsOutputBucket.Arn>/*]',
      'Longhaul/Api/ApiFunction/Role/DefaultPolicy/Resource AwsSolutions-IAM5[Resource::<JobOutputsOutputBucket.Arn>/outputs/*/provider-output-*]',
      'Longhaul/Api/ApiFunction/Role/DefaultPolicy/Resource AwsSolutions-IAM5[Resource::<JobOutputsOutputBucket.Arn>/outputs/*/served/*]',
      'Longhaul/Api/ApiFunction/Role/DefaultPolicy/Resource AwsSolutions-IAM5[Resource::<JobOutputsOutputBucket.Arn>/outputs/*/vectors-revision.json]',
      'Longhaul/Api/ApiFunction/TaskResponsePolicy/Resource AwsSolutions-IAM5[Resource::*]',
      'Longhaul/Api/AuthorizerFunction/Role/DefaultPolicy/Resource AwsSolutions-IAM5[Resource::*]',
      'Longhaul/Api/RestApi/Resource AwsSolutions-APIG2',
      'Longhaul/Api/RestApi/CloudWatchRole/Resource AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AmazonAPIGatewayPushToCloudWatchLogs]',
      'Longhaul/Api/RestApi/DeploymentStage.prod/Resource AwsSolutions-APIG3',
      ...routeAcknowledgements,
      // Providers' webhooks off the REST API: X-Ray, the task tokens, a completion's output under its job.
      'Longhaul/ProviderEvents/EventsFunction/Role/DefaultPolicy/Resource AwsSolutions-IAM5[Resource::*]',
      'Longhaul/ProviderEvents/EventsFunction/Role/DefaultPolicy/Resource AwsSolutions-IAM5[Resource::<JobOutputsOutputBucket.Arn>/outputs/*/provider-output-*]',
      'Longhaul/ProviderEvents/EventsFunction/TaskResponsePolicy/Resource AwsSolutions-IAM5[Resource::*]',
      'Longhaul/Secrets/ProviderSecret/Resource AwsSolutions-SMG4',
      'Longhaul/Secrets/ProviderSecretBedrock/Resource AwsSolutions-SMG4',
      'Longhaul/Secrets/ProviderSecretDeepgram/Resource AwsSolutions-SMG4',
      'Longhaul/Secrets/ProviderSecretReplicate/Resource AwsSolutions-SMG4',
      'Longhaul/Secrets/WebhookSigningSecret/Resource AwsSolutions-SMG4',
      'Longhaul/WorkflowSteps/StepsFunction/Role/DefaultPolicy/Resource AwsSolutions-IAM5[Resource::*]',
      'Longhaul/WorkflowSteps/StepsFunction/Role/DefaultPolicy/Resource AwsSolutions-IAM5[Resource::<JobStoreJobTable.Arn>/index/*]',
      'Longhaul/WorkflowSteps/StepsFunction/Role/DefaultPolicy/Resource AwsSolutions-IAM5[Resource::<JobInputsInputBucket.Arn>/*]',
      'Longhaul/WorkflowSteps/StepsFunction/Role/DefaultPolicy/Resource AwsSolutions-IAM5[Resource::<JobOutputsOutputBucket.Arn>/*]',
      'Longhaul/WorkflowSteps/StepsFunction/TaskResponsePolicy/Resource AwsSolutions-IAM5[Resource::*]',
      'Longhaul/Workflow/StateMachine/Resource AwsSolutions-SF1',
      'Longhaul/Workflow/StateMachine/Role/DefaultPolicy/Resource AwsSolutions-IAM5[Resource::*]',
      'Longhaul/Workflow/StateMachine/Role/DefaultPolicy/Resource AwsSolutions-IAM5[Resource::<ComputeComputeFunction.Arn>:*]',
      'Longhaul/Workflow/StateMachine/Role/DefaultPolicy/Resource AwsSolutions-IAM5[Resource::<WorkflowStepsStepsFunction.Arn>:*]',
      'Longhaul/Dispatcher/DispatchFunction/Role/DefaultPolicy/Resource AwsSolutions-IAM5[Resource::*]',
      'Longhaul/Dispatcher/DispatchFunction/Role/DefaultPolicy/Resource AwsSolutions-IAM5[Resource::<JobStoreJobTable.Arn>/index/*]',
      'Longhaul/Reconciler/ReconcileFunction/Role/DefaultPolicy/Resource AwsSolutions-IAM5[Resource::*]',
      'Longhaul/Reconciler/ReconcileFunction/Role/DefaultPolicy/Resource AwsSolutions-IAM5[Resource::<JobInputsInputBucket.Arn>/*]',
      'Longhaul/Reconciler/ReconcileFunction/Role/DefaultPolicy/Resource AwsSolutions-IAM5[Resource::<JobOutputsOutputBucket.Arn>/*]',
      'Longhaul/Reconciler/ReconcileFunction/Role/DefaultPolicy/Resource AwsSolutions-IAM5[Resource::<JobStoreJobTable.Arn>/index/*]',
      'Longhaul/Reconciler/ReconcileFunction/Role/DefaultPolicy/Resource AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:states:<AWS::Region>:<AWS::AccountId>:execution:<WorkflowStateMachine.Name>:*]',
      'Longhaul/Reconciler/ReconcileFunction/TaskResponsePolicy/Resource AwsSolutions-IAM5[Resource::*]',
      'Longhaul/Reconciler/SchedulerRole/DefaultPolicy/Resource AwsSolutions-IAM5[Resource::<ReconcilerReconcileFunction.Arn>:*]',
      'Longhaul/LiveProgress/StreamFunction/Role/DefaultPolicy/Resource AwsSolutions-IAM5[Resource::*]',
      'Longhaul/LiveProgress/WebSocketApi/$connect-Route/Resource AwsSolutions-APIG4',
      'Longhaul/LiveProgress/WebSocketApi/$disconnect-Route/Resource AwsSolutions-APIG4',
      'Longhaul/LiveProgress/WebSocketApi/$default-Route/Resource AwsSolutions-APIG4',
      manageConnections('Longhaul/Api/ApiFunction/Role'),
      manageConnections('Longhaul/ProviderEvents/EventsFunction/Role'),
      manageConnections('Longhaul/WorkflowSteps/StepsFunction/Role'),
      manageConnections('Longhaul/Reconciler/ReconcileFunction/Role'),
      // Tenants' schedules, named at run time, in Longhaul's own schedule group only.
      `Longhaul/Api/ApiFunction/Role/DefaultPolicy/Resource AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:scheduler:<AWS::Region>:<AWS::AccountId>:schedule/${scheduleGroupName}/*]`,
      'Longhaul/Schedules/DeadLetterQueue/Resource AwsSolutions-SQS3',
      'Longhaul/Schedules/FireFunction/Role/DefaultPolicy/Resource AwsSolutions-IAM5[Resource::*]',
      'Longhaul/Schedules/FireFunction/Role/DefaultPolicy/Resource AwsSolutions-IAM5[Resource::<JobStoreJobTable.Arn>/index/*]',
      // audio.publish's compute places: X-Ray, objects of one job chosen at run time, the image pull, no secrets.
      'Longhaul/Compute/ComputeFunction/Role/DefaultPolicy/Resource AwsSolutions-IAM5[Resource::*]',
      'Longhaul/Compute/ComputeFunction/Role/DefaultPolicy/Resource AwsSolutions-IAM5[Resource::<JobInputsInputBucket.Arn>/*]',
      'Longhaul/Compute/ComputeFunction/Role/DefaultPolicy/Resource AwsSolutions-IAM5[Resource::<JobOutputsOutputBucket.Arn>/*]',
      'Longhaul/Compute/TaskDefinition/ExecutionRole/DefaultPolicy/Resource AwsSolutions-IAM5[Resource::*]',
      'Longhaul/Compute/TaskDefinition/Resource AwsSolutions-ECS2',
      'Longhaul/Compute/TaskDefinition/TaskRole/DefaultPolicy/Resource AwsSolutions-IAM5[Resource::<JobInputsInputBucket.Arn>/*]',
      'Longhaul/Compute/TaskDefinition/TaskRole/DefaultPolicy/Resource AwsSolutions-IAM5[Resource::<JobOutputsOutputBucket.Arn>/*]',
      // aws-cdk-lib's own, not Longhaul's: the VPC's literal AZs, and the camelCase its flow log's DestinationOptions take.
      'Longhaul CloudFormation-Validate::W3010',
      'Longhaul/Compute/Vpc/all CloudFormation-Validate::F3002',
      'Longhaul/Compute/Vpc/all CloudFormation-Validate::F3003',
    ].sort(),
  );
  for (const { reason } of found) expect(reason.length).toBeGreaterThan(40);
});

test("only the open routes, healthz, the OpenAPI document and each provider's webhook, go without a gateway authorizer", () => {
  const open = acknowledgements(longhaul.stack)
    .filter(({ id, at }) => id === 'AwsSolutions-APIG4' && at.startsWith('Longhaul/Api/'))
    .map(({ at }) => at)
    .sort();
  expect(open).toEqual([
    'Longhaul/Api/RestApi/Default/healthz/GET/Resource',
    'Longhaul/Api/RestApi/Default/openapi.json/GET/Resource',
    'Longhaul/Api/RestApi/Default/v1/provider/deepgram/events/POST/Resource',
    'Longhaul/Api/RestApi/Default/v1/provider/events/POST/Resource',
    'Longhaul/Api/RestApi/Default/v1/provider/replicate/events/POST/Resource',
  ]);
});

test('the WebSocket routes go without a gateway authorizer, and $connect says who checks the key instead', () => {
  const open = acknowledgements(longhaul.stack).filter(
    ({ id, at }) => id === 'AwsSolutions-APIG4' && !at.startsWith('Longhaul/Api/'),
  );
  expect(open.map(({ at }) => at).sort()).toEqual([
    'Longhaul/LiveProgress/WebSocketApi/$connect-Route/Resource',
    'Longhaul/LiveProgress/WebSocketApi/$default-Route/Resource',
    'Longhaul/LiveProgress/WebSocketApi/$disconnect-Route/Resource',
  ]);
  const connect = open.find(({ at }) => at.endsWith('/$connect-Route/Resource'));
  expect(connect?.reason).toMatch(/stream handler admits a connection only with an unexpired stream ticket/);
  expect(connect?.reason).toMatch(/refuses the admin key/);
});
