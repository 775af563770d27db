import { App, Stack } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { AttributeType, Table } from 'aws-cdk-lib/aws-dynamodb';
import { Bucket } from 'aws-cdk-lib/aws-s3';
import { Secret } from 'aws-cdk-lib/aws-secretsmanager';
import { defaultSettings } from '../../config/settings';
import { ProviderEvents } from '../../lib/constructs/provider-events';
import { cdkJsonContext, logicalIdAt, longhaulTemplate, SYNTH_TIMEOUT_MS } from './longhaul-app';

jest.setTimeout(SYNTH_TIMEOUT_MS);

type Json = Record<string, any>;

const PATH = 'ProviderEventsUnderTest/ProviderEvents';

let template: Template;
let resources: Json;
let fnId: string;
let urlId: string;

beforeAll(() => {
  // No stack matches an empty list, so the handler is not bundled: only the template is read.
  const app = new App({
    context: { ...cdkJsonContext(), 'aws:cdk:bundling-stacks': [], 'aws:cdk:enable-path-metadata': true },
  });
  const stack = new Stack(app, 'ProviderEventsUnderTest');
  new ProviderEvents(stack, 'ProviderEvents', {
    settings: defaultSettings,
    jobTable: new Table(stack, 'Jobs', {
      partitionKey: { name: 'pk', type: AttributeType.STRING },
      sortKey: { name: 'sk', type: AttributeType.STRING },
    }),
    outputBucket: new Bucket(stack, 'Outputs'),
    providerSecrets: {
      'longhaul-http': new Secret(stack, 'GenericSecret'),
      replicate: new Secret(stack, 'ReplicateSecret'),
      deepgram: new Secret(stack, 'DeepgramSecret'),
      bedrock: new Secret(stack, 'BedrockSecret'),
    },
  });
  template = Template.fromStack(stack);
  resources = template.toJSON().Resources;
  fnId = logicalIdAt(template, 'AWS::Lambda::Function', `${PATH}/EventsFunction/Function/Resource`);
  urlId = logicalIdAt(template, 'AWS::Lambda::Url', `${PATH}/EventsFunction/Function/FunctionUrl/Resource`);
});

const idOf = (type: string, prefix: string) => {
  const ids = Object.keys(template.findResources(type)).filter((id) => id.startsWith(prefix));
  if (ids.length !== 1) throw new Error(`expected one ${type} ${prefix}, found ${ids.length}`);
  return ids[0] as string;
};

describe('function URL', () => {
  test('is open (auth type NONE) and buffered, on the events function itself', () => {
    expect(resources[urlId].Properties).toEqual({
      AuthType: 'NONE',
      InvokeMode: 'BUFFERED',
      TargetFunctionArn: { 'Fn::GetAtt': [fnId, 'Arn'] },
    });
  });

  test('anyone may invoke the function through its URL, and only through it', () => {
    const permissions = Object.values(template.findResources('AWS::Lambda::Permission')).map(
      (permission) => permission.Properties,
    );
    expect(permissions).toEqual([
      {
        Action: 'lambda:InvokeFunctionUrl',
        FunctionName: { 'Fn::GetAtt': [fnId, 'Arn'] },
        FunctionUrlAuthType: 'NONE',
        Principal: '*',
      },
      {
        Action: 'lambda:InvokeFunction',
        FunctionName: { 'Fn::GetAtt': [fnId, 'Arn'] },
        InvokedViaFunctionUrl: true,
        Principal: '*',
      },
    ]);
  });
});

describe('events function', () => {
  test('is the provider events handler with a short timeout and no reserved concurrency', () => {
    const fn = resources[fnId].Properties;
    expect(fn).toMatchObject({
      Handler: 'index.handler',
      Timeout: 10,
      MemorySize: 512,
      Architectures: ['arm64'],
      TracingConfig: { Mode: 'Active' },
    });
    expect(fn).not.toHaveProperty('ReservedConcurrentExecutions');
  });

  test('finds the job table, the output bucket and each provider secret through its environment', () => {
    expect(resources[fnId].Properties.Environment.Variables).toEqual(
      expect.objectContaining({
        POWERTOOLS_SERVICE_NAME: 'provider-events',
        JOB_TABLE_NAME: { Ref: idOf('AWS::DynamoDB::Table', 'Jobs') },
        OUTPUT_BUCKET_NAME: { Ref: idOf('AWS::S3::Bucket', 'Outputs') },
        PROVIDER_SECRET_ARN_LONGHAUL_HTTP: { Ref: idOf('AWS::SecretsManager::Secret', 'GenericSecret') },
        PROVIDER_SECRET_ARN_REPLICATE: { Ref: idOf('AWS::SecretsManager::Secret', 'ReplicateSecret') },
        PROVIDER_SECRET_ARN_DEEPGRAM: { Ref: idOf('AWS::SecretsManager::Secret', 'DeepgramSecret') },
      }),
    );
  });

  test('may read and update single jobs, keep a completion’s output, read the secrets and answer steps, and nothing else', () => {
    const table = idOf('AWS::DynamoDB::Table', 'Jobs');
    const bucket = idOf('AWS::S3::Bucket', 'Outputs');
    const role = logicalIdAt(template, 'AWS::IAM::Role', `${PATH}/EventsFunction/Role/Resource`);
    const statements = Object.values(template.findResources('AWS::IAM::Policy'))
      .filter((policy) => policy.Properties.Roles.some((r: Json) => r.Ref === role))
      .flatMap((policy) => policy.Properties.PolicyDocument.Statement as Json[])
      .map(({ Action, Resource }) => ({ Action, Resource }));
    expect(statements).toEqual(
      expect.arrayContaining([
        {
          Action: ['dynamodb:GetItem', 'dynamodb:PutItem', 'dynamodb:UpdateItem'],
          Resource: { 'Fn::GetAtt': [table, 'Arn'] },
        },
        {
          Action: 's3:PutObject',
          Resource: {
            'Fn::Join': ['', [{ 'Fn::GetAtt': [bucket, 'Arn'] }, '/outputs/*/provider-output-*']],
          },
        },
        {
          Action: ['states:SendTaskFailure', 'states:SendTaskHeartbeat', 'states:SendTaskSuccess'],
          Resource: '*',
        },
        {
          Action: 'secretsmanager:GetSecretValue',
          Resource: expect.arrayContaining(
            ['GenericSecret', 'ReplicateSecret', 'DeepgramSecret'].map((secret) => ({
              Ref: idOf('AWS::SecretsManager::Secret', secret),
            })),
          ),
        },
      ]),
    );
    const actions = statements.flatMap((statement) => [statement.Action].flat()).sort();
    expect(actions).toEqual(
      [
        'dynamodb:GetItem',
        'dynamodb:PutItem',
        'dynamodb:UpdateItem',
        'logs:CreateLogStream',
        'logs:PutLogEvents',
        's3:PutObject',
        'secretsmanager:GetSecretValue',
        'states:SendTaskFailure',
        'states:SendTaskHeartbeat',
        'states:SendTaskSuccess',
        'xray:PutTelemetryRecords',
        'xray:PutTraceSegments',
      ].sort(),
    );
  });
});

describe('in the Longhaul stack', () => {
  let stackTemplate: Template;
  let stackResources: Json;
  let url: string;
  let eventsFunction: string;

  beforeAll(() => {
    stackTemplate = longhaulTemplate();
    stackResources = stackTemplate.toJSON().Resources;
    url = logicalIdAt(
      stackTemplate,
      'AWS::Lambda::Url',
      'Longhaul/ProviderEvents/EventsFunction/Function/FunctionUrl/Resource',
    );
    eventsFunction = logicalIdAt(
      stackTemplate,
      'AWS::Lambda::Function',
      'Longhaul/ProviderEvents/EventsFunction/Function/Resource',
    );
  });

  test('hands its URL to the workflow steps, which give providers their webhook URLs under it', () => {
    const steps = logicalIdAt(
      stackTemplate,
      'AWS::Lambda::Function',
      'Longhaul/WorkflowSteps/StepsFunction/Function/Resource',
    );
    expect(stackResources[steps].Properties.Environment.Variables.PROVIDER_EVENTS_URL).toEqual({
      'Fn::GetAtt': [url, 'FunctionUrl'],
    });
  });

  test('publishes its URL as a stack output', () => {
    stackTemplate.hasOutput('ProviderEventsUrl', { Value: { 'Fn::GetAtt': [url, 'FunctionUrl'] } });
  });

  test('may post live progress to the WebSocket connections, and knows where', () => {
    const variables = stackResources[eventsFunction].Properties.Environment.Variables;
    expect(Object.keys(variables)).toEqual(
      expect.arrayContaining(['CONNECTION_TABLE_NAME', 'STREAM_CALLBACK_URL', 'STREAM_URL']),
    );
    const role = logicalIdAt(
      stackTemplate,
      'AWS::IAM::Role',
      'Longhaul/ProviderEvents/EventsFunction/Role/Resource',
    );
    const actions = Object.values(stackTemplate.findResources('AWS::IAM::Policy'))
      .filter((policy) => policy.Properties.Roles.some((r: Json) => r.Ref === role))
      .flatMap((policy) => policy.Properties.PolicyDocument.Statement as Json[])
      .flatMap((statement) => [statement.Action].flat());
    expect(actions).toEqual(expect.arrayContaining(['execute-api:ManageConnections', 'dynamodb:Query']));
  });
});
