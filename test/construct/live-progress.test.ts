import type { Template } from 'aws-cdk-lib/assertions';
import { connectionTable } from '../../config/layout';
import { defaultSettings } from '../../config/settings';
import {
  grantsOn,
  logicalIdAt,
  longhaulTemplate,
  policyStatements,
  SYNTH_TIMEOUT_MS,
  statementsFor,
} from './longhaul-app';

jest.setTimeout(SYNTH_TIMEOUT_MS);

const PATH = 'Longhaul/LiveProgress';
/** Every function that moves jobs between statuses or hears their progress. */
const PUBLISHERS = [
  'Longhaul/Api/ApiFunction',
  'Longhaul/ProviderEvents/EventsFunction',
  'Longhaul/WorkflowSteps/StepsFunction',
  'Longhaul/Reconciler/ReconcileFunction',
] as const;

type Json = Record<string, any>;

let template: Template;
let resources: Json;
let api: string;
let stage: string;
let table: string;
let streamFunction: string;

beforeAll(() => {
  template = longhaulTemplate();
  resources = template.toJSON().Resources;
  api = logicalIdAt(template, 'AWS::ApiGatewayV2::Api', `${PATH}/WebSocketApi/Resource`);
  stage = logicalIdAt(template, 'AWS::ApiGatewayV2::Stage', `${PATH}/Stage/Resource`);
  table = logicalIdAt(template, 'AWS::DynamoDB::Table', `${PATH}/ConnectionTable/Resource`);
  streamFunction = logicalIdAt(template, 'AWS::Lambda::Function', `${PATH}/StreamFunction/Function/Resource`);
});

/** `https://` (callback) or `wss://` (clients) URL of the `live` stage. */
const stageUrl = (scheme: string) => ({
  'Fn::Join': [
    '',
    [
      `${scheme}://`,
      { Ref: api },
      '.execute-api.',
      { Ref: 'AWS::Region' },
      '.',
      { Ref: 'AWS::URLSuffix' },
      '/live',
    ],
  ],
});

describe('WebSocket API', () => {
  test('is the only WebSocket API, and routes $connect, $disconnect and $default to the stream function', () => {
    const apis = Object.values(template.findResources('AWS::ApiGatewayV2::Api'));
    expect(apis.map((a) => a.Properties.ProtocolType)).toEqual(['WEBSOCKET']);
    const integrations = Object.entries(template.findResources('AWS::ApiGatewayV2::Integration'));
    expect(integrations).toHaveLength(1);
    const [integrationId, integration] = integrations[0] as [string, Json];
    expect(integration.Properties).toEqual(
      expect.objectContaining({
        ApiId: { Ref: api },
        IntegrationType: 'AWS_PROXY',
        IntegrationUri: {
          'Fn::Join': [
            '',
            expect.arrayContaining([{ 'Fn::GetAtt': [streamFunction, 'Arn'] }, '/invocations']),
          ],
        },
      }),
    );
    const routes = Object.values(template.findResources('AWS::ApiGatewayV2::Route')).map(
      (route) => route.Properties,
    );
    expect(routes.map((route) => route.RouteKey).sort()).toEqual(['$connect', '$default', '$disconnect']);
    for (const route of routes) {
      expect(route).toEqual(
        expect.objectContaining({
          ApiId: { Ref: api },
          AuthorizationType: 'NONE',
          Target: { 'Fn::Join': ['', ['integrations/', { Ref: integrationId }]] },
        }),
      );
    }
  });

  test('API Gateway may invoke the stream function for exactly these routes of this API', () => {
    const permissions = Object.values(template.findResources('AWS::Lambda::Permission')).filter(
      (permission) => JSON.stringify(permission.Properties.FunctionName).includes(streamFunction),
    );
    const routeKeys = permissions.map((permission) => {
      expect(permission.Properties.Principal).toBe('apigateway.amazonaws.com');
      const parts = permission.Properties.SourceArn['Fn::Join'][1];
      expect(parts).toContainEqual({ Ref: api });
      return parts.at(-1);
    });
    expect(routeKeys.sort()).toEqual(['/*$connect', '/*$default', '/*$disconnect']);
  });
});

describe('stage', () => {
  test('is `live`, deploys itself, throttles every route and logs errors without message bodies', () => {
    expect(resources[stage].Properties).toEqual(
      expect.objectContaining({
        ApiId: { Ref: api },
        StageName: 'live',
        AutoDeploy: true,
        DefaultRouteSettings: {
          ThrottlingRateLimit: 100,
          ThrottlingBurstLimit: 200,
          LoggingLevel: 'ERROR',
          DataTraceEnabled: false,
        },
      }),
    );
  });

  test('logs access as JSON to its own retained log group, never the query string (it carries the API key)', () => {
    const logGroup = logicalIdAt(template, 'AWS::Logs::LogGroup', `${PATH}/AccessLogs/Resource`);
    const { AccessLogSettings } = resources[stage].Properties;
    expect(AccessLogSettings.DestinationArn).toEqual({ 'Fn::GetAtt': [logGroup, 'Arn'] });
    const format = JSON.parse(AccessLogSettings.Format);
    expect(format).toEqual(
      expect.objectContaining({
        requestId: '$context.requestId',
        eventType: '$context.eventType',
        routeKey: '$context.routeKey',
        connectionId: '$context.connectionId',
        status: '$context.status',
      }),
    );
    expect(AccessLogSettings.Format).not.toMatch(/querystring|requestOverride|\$input/i);
    expect(resources[logGroup].Properties.RetentionInDays).toBe(defaultSettings.logRetentionDays);
    expect(resources[logGroup].DeletionPolicy).toBe('Retain');
  });

  test('is created after API Gateway’s account logging role is set, which logging requires', () => {
    const account = logicalIdAt(template, 'AWS::ApiGateway::Account', 'Longhaul/Api/RestApi/Account');
    expect(resources[stage].DependsOn).toContain(account);
  });

  test('StreamUrl is the wss:// URL of the stage', () => {
    template.hasOutput('StreamUrl', { Value: stageUrl('wss') });
  });

  test('the API function hands out the URL of the StreamUrl output with stream tickets (STREAM_URL)', () => {
    const streamUrl = template.findOutputs('StreamUrl').StreamUrl?.Value;
    expect(streamUrl).toEqual(stageUrl('wss'));
    const apiFunction = logicalIdAt(
      template,
      'AWS::Lambda::Function',
      'Longhaul/Api/ApiFunction/Function/Resource',
    );
    expect(resources[apiFunction].Properties.Environment.Variables.STREAM_URL).toEqual(streamUrl);
  });
});

describe('connection table', () => {
  test('is keyed by connection id, finds connections by job through byJob (keys only) and expires items by expiresAt', () => {
    const { Properties } = resources[table];
    expect(Properties.KeySchema).toEqual([{ AttributeName: 'connectionId', KeyType: 'HASH' }]);
    expect(Properties.GlobalSecondaryIndexes).toEqual([
      {
        IndexName: 'byJob',
        KeySchema: [
          { AttributeName: 'jobId', KeyType: 'HASH' },
          { AttributeName: 'connectionId', KeyType: 'RANGE' },
        ],
        Projection: { ProjectionType: 'KEYS_ONLY' },
      },
    ]);
    expect(connectionTable.indexes.map((index) => index.name)).toEqual(['byJob']);
    expect(Properties.TimeToLiveSpecification).toEqual({ AttributeName: 'expiresAt', Enabled: true });
    expect(Properties.BillingMode).toBe('PAY_PER_REQUEST');
  });

  test('has point-in-time recovery and encryption at rest, and goes with the stack (it holds only live subscriptions)', () => {
    const { Properties, DeletionPolicy, UpdateReplacePolicy } = resources[table];
    expect(Properties.PointInTimeRecoverySpecification).toEqual({ PointInTimeRecoveryEnabled: true });
    expect(Properties.SSESpecification).toEqual({ SSEEnabled: true });
    expect(Properties.DeletionProtectionEnabled).toBe(false);
    expect(DeletionPolicy).toBe('Delete');
    expect(UpdateReplacePolicy).toBe('Delete');
  });
});

describe('stream function', () => {
  test('times out after 10 s and finds its tables through its environment', () => {
    const fn = resources[streamFunction];
    expect(fn.Properties.Timeout).toBe(10);
    expect(fn.Properties.Environment.Variables).toEqual(
      expect.objectContaining({
        API_KEY_TABLE_NAME: {
          Ref: logicalIdAt(template, 'AWS::DynamoDB::Table', 'Longhaul/JobStore/ApiKeyTable/Resource'),
        },
        JOB_TABLE_NAME: {
          Ref: logicalIdAt(template, 'AWS::DynamoDB::Table', 'Longhaul/JobStore/JobTable/Resource'),
        },
        CONNECTION_TABLE_NAME: { Ref: table },
        POWERTOOLS_SERVICE_NAME: 'stream',
      }),
    );
  });

  test('reads single keys and jobs, reads and writes single connections, and nothing else', () => {
    const statements = policyStatements(template, `${PATH}/StreamFunction/Role/DefaultPolicy/Resource`);
    expect(statementsFor(statements, 'dynamodb')).toEqual([
      {
        Effect: 'Allow',
        Action: 'dynamodb:GetItem',
        Resource: [
          {
            'Fn::GetAtt': [
              logicalIdAt(template, 'AWS::DynamoDB::Table', 'Longhaul/JobStore/ApiKeyTable/Resource'),
              'Arn',
            ],
          },
          {
            'Fn::GetAtt': [
              logicalIdAt(template, 'AWS::DynamoDB::Table', 'Longhaul/JobStore/JobTable/Resource'),
              'Arn',
            ],
          },
        ],
      },
      {
        Effect: 'Allow',
        Action: ['dynamodb:DeleteItem', 'dynamodb:GetItem', 'dynamodb:PutItem', 'dynamodb:UpdateItem'],
        Resource: { 'Fn::GetAtt': [table, 'Arn'] },
      },
    ]);
    const services = new Set(statements.flatMap((s) => [s.Action].flat().map((a) => a.split(':')[0])));
    expect([...services].sort()).toEqual(['dynamodb', 'logs', 'xray']);
  });
});

describe.each(PUBLISHERS)('%s publishes live messages', (path) => {
  test('posts only to connections of this API’s live stage', () => {
    const statements = policyStatements(template, `${path}/Role/DefaultPolicy/Resource`);
    expect(statementsFor(statements, 'execute-api')).toEqual([
      {
        Effect: 'Allow',
        Action: 'execute-api:ManageConnections',
        Resource: {
          'Fn::Join': [
            '',
            [
              'arn:',
              { Ref: 'AWS::Partition' },
              ':execute-api:',
              { Ref: 'AWS::Region' },
              ':',
              { Ref: 'AWS::AccountId' },
              ':',
              { Ref: api },
              '/live/POST/@connections/*',
            ],
          ],
        },
      },
    ]);
  });

  test('finds a job’s connections through byJob only, and deletes the ones that are gone', () => {
    const statements = policyStatements(template, `${path}/Role/DefaultPolicy/Resource`);
    expect(grantsOn(statements, table)).toEqual([
      ['dynamodb:Query', { 'Fn::Join': ['', [{ 'Fn::GetAtt': [table, 'Arn'] }, '/index/byJob']] }],
      ['dynamodb:DeleteItem', { 'Fn::GetAtt': [table, 'Arn'] }],
    ]);
  });

  test('finds the connection table and the management endpoint through its environment', () => {
    const fn = logicalIdAt(template, 'AWS::Lambda::Function', `${path}/Function/Resource`);
    expect(resources[fn].Properties.Environment.Variables).toEqual(
      expect.objectContaining({
        CONNECTION_TABLE_NAME: { Ref: table },
        STREAM_CALLBACK_URL: stageUrl('https'),
      }),
    );
  });
});

test('no other function may post to live clients', () => {
  const posting = Object.values(template.findResources('AWS::IAM::Policy'))
    .filter((policy) =>
      JSON.stringify(policy.Properties.PolicyDocument).includes('execute-api:ManageConnections'),
    )
    .map((policy) => policy.Metadata['aws:cdk:path'])
    .sort();
  expect(posting).toEqual(PUBLISHERS.map((path) => `${path}/Role/DefaultPolicy/Resource`).sort());
});
