import type { Stack } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { AttributeType, Table } from 'aws-cdk-lib/aws-dynamodb';
import { Bucket } from 'aws-cdk-lib/aws-s3';
import { Secret } from 'aws-cdk-lib/aws-secretsmanager';
import { providerSecretEnv } from '../../config/layout';
import { defaultSettings } from '../../config/settings';
import { ProviderEvents, type ProviderEventsProps } from '../../lib/constructs/provider-events';
import {
  logicalIdAt,
  longhaulTemplate,
  perProvider,
  policyStatements,
  SYNTH_TIMEOUT_MS,
  stackUnderTest,
} from './longhaul-app';

jest.setTimeout(SYNTH_TIMEOUT_MS);

type Json = Record<string, any>;

const PATH = 'ProviderEventsUnderTest/ProviderEvents';

let stack: Stack;
let props: ProviderEventsProps;
let template: Template;
let resources: Json;
let fnId: string;
let urlId: string;

beforeAll(() => {
  stack = stackUnderTest('ProviderEventsUnderTest');
  props = {
    settings: defaultSettings,
    jobTable: new Table(stack, 'Jobs', {
      partitionKey: { name: 'pk', type: AttributeType.STRING },
      sortKey: { name: 'sk', type: AttributeType.STRING },
    }),
    outputBucket: new Bucket(stack, 'Outputs'),
    providerSecrets: perProvider((provider) => new Secret(stack, `Secret-${provider}`)),
  };
  new ProviderEvents(stack, 'ProviderEvents', props);
  template = Template.fromStack(stack);
  resources = template.toJSON().Resources;
  fnId = logicalIdAt(template, 'AWS::Lambda::Function', `${PATH}/EventsFunction/Function/Resource`);
  urlId = logicalIdAt(template, 'AWS::Lambda::Url', `${PATH}/EventsFunction/Function/FunctionUrl/Resource`);
});

/** What `token` (an ARN, a name of a stand-in) is in the template. */
const resolved = (token: string) => stack.resolve(token);

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
        JOB_TABLE_NAME: resolved(props.jobTable.tableName),
        OUTPUT_BUCKET_NAME: resolved(props.outputBucket.bucketName),
        ...Object.fromEntries(
          Object.entries(props.providerSecrets).map(([provider, secret]) => [
            providerSecretEnv(provider),
            resolved(secret.secretArn),
          ]),
        ),
      }),
    );
  });

  test('may read and update single jobs, keep a completion’s output, read the secrets and answer steps, and nothing else', () => {
    const table = resolved(props.jobTable.tableArn);
    const bucket = resolved(props.outputBucket.bucketArn);
    const role = logicalIdAt(template, 'AWS::IAM::Role', `${PATH}/EventsFunction/Role/Resource`);
    const statements = Object.values(template.findResources('AWS::IAM::Policy'))
      .filter((policy) => policy.Properties.Roles.some((r: Json) => r.Ref === role))
      .flatMap((policy) => policy.Properties.PolicyDocument.Statement as Json[])
      .map(({ Action, Resource }) => ({ Action, Resource }));
    expect(statements).toEqual(
      expect.arrayContaining([
        {
          Action: ['dynamodb:GetItem', 'dynamodb:PutItem', 'dynamodb:UpdateItem'],
          Resource: table,
        },
        {
          Action: 's3:PutObject',
          Resource: { 'Fn::Join': ['', [bucket, '/outputs/*/provider-output-*']] },
        },
        {
          Action: ['states:SendTaskFailure', 'states:SendTaskHeartbeat', 'states:SendTaskSuccess'],
          Resource: '*',
        },
        {
          Action: 'secretsmanager:GetSecretValue',
          Resource: expect.arrayContaining(
            Object.values(props.providerSecrets).map((secret) => resolved(secret.secretArn)),
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

// About the app: where the stack sends the URL, its output, and the live progress it gives the function.
describe('in the Longhaul stack', () => {
  const EVENTS = 'Longhaul/ProviderEvents/EventsFunction';
  let app: Template;
  let url: { 'Fn::GetAtt': [string, 'FunctionUrl'] };

  beforeAll(() => {
    app = longhaulTemplate();
    url = {
      'Fn::GetAtt': [
        logicalIdAt(app, 'AWS::Lambda::Url', `${EVENTS}/Function/FunctionUrl/Resource`),
        'FunctionUrl',
      ],
    };
  });

  /** The environment of the function at `path`. */
  const variablesAt = (path: string): Json => {
    const id = logicalIdAt(app, 'AWS::Lambda::Function', `${path}/Function/Resource`);
    return app.toJSON().Resources[id].Properties.Environment.Variables;
  };

  test('hands its URL to the workflow steps, which give providers their webhook URLs under it', () => {
    expect(variablesAt('Longhaul/WorkflowSteps/StepsFunction').PROVIDER_EVENTS_URL).toEqual(url);
  });

  test('publishes its URL as a stack output', () => {
    app.hasOutput('ProviderEventsUrl', { Value: url });
  });

  test('may post live progress to the WebSocket connections, and knows where', () => {
    expect(Object.keys(variablesAt(EVENTS))).toEqual(
      expect.arrayContaining(['CONNECTION_TABLE_NAME', 'STREAM_CALLBACK_URL', 'STREAM_URL']),
    );
    const actions = policyStatements(app, `${EVENTS}/Role/DefaultPolicy/Resource`).flatMap((statement) =>
      [statement.Action].flat(),
    );
    expect(actions).toEqual(expect.arrayContaining(['execute-api:ManageConnections', 'dynamodb:Query']));
  });
});
