import { Template } from 'aws-cdk-lib/assertions';
import { CfnAccount } from 'aws-cdk-lib/aws-apigateway';
import { AttributeType, Table } from 'aws-cdk-lib/aws-dynamodb';
import { connectionTable } from '../../config/layout';
import { defaultSettings } from '../../config/settings';
import { LiveProgress } from '../../lib/constructs/live-progress';
import {
  grantsOn,
  logicalIdAt,
  longhaulTemplate,
  policyStatements,
  SYNTH_TIMEOUT_MS,
  stackUnderTest,
  standInFunction,
  statementsFor,
} from './longhaul-app';

jest.setTimeout(SYNTH_TIMEOUT_MS);

const PATH = 'Test/LiveProgress';
/** A function given the right to publish (`grantPublish`), standing in for those that move jobs. */
const PUBLISHER = 'Test/Publisher';

/** LiveProgress alone in a stack of its own, with stand-ins for what the app gives it and a publisher. */
function build() {
  const stack = stackUnderTest();
  const standInTable = (id: string) =>
    new Table(stack, id, { partitionKey: { name: 'pk', type: AttributeType.STRING } });
  new LiveProgress(stack, 'LiveProgress', {
    settings: defaultSettings,
    jobTable: standInTable('Jobs'),
    apiKeyTable: standInTable('ApiKeys'),
    apiGatewayAccount: new CfnAccount(stack, 'ApiGatewayAccount'),
  }).grantPublish(standInFunction(stack, 'Publisher'));
  const template = Template.fromStack(stack);
  const idAt = (type: string, path: string) => logicalIdAt(template, type, path);
  return {
    template,
    resources: template.toJSON().Resources,
    api: idAt('AWS::ApiGatewayV2::Api', `${PATH}/WebSocketApi/Resource`),
    stage: idAt('AWS::ApiGatewayV2::Stage', `${PATH}/Stage/Resource`),
    table: idAt('AWS::DynamoDB::Table', `${PATH}/ConnectionTable/Resource`),
    streamFunction: idAt('AWS::Lambda::Function', `${PATH}/StreamFunction/Function/Resource`),
    // The stand-ins.
    jobTable: idAt('AWS::DynamoDB::Table', 'Test/Jobs/Resource'),
    apiKeyTable: idAt('AWS::DynamoDB::Table', 'Test/ApiKeys/Resource'),
    account: idAt('AWS::ApiGateway::Account', 'Test/ApiGatewayAccount'),
  };
}

let built: ReturnType<typeof build>;
beforeAll(() => {
  built = build();
});

/** `https://` (callback) or `wss://` (clients) URL of the `live` stage of the API `apiId`. */
const stageUrl = (scheme: string, apiId = built.api) => ({
  'Fn::Join': [
    '',
    [
      `${scheme}://`,
      { Ref: apiId },
      '.execute-api.',
      { Ref: 'AWS::Region' },
      '.',
      { Ref: 'AWS::URLSuffix' },
      '/live',
    ],
  ],
});

describe('WebSocket API', () => {
  test('is one WebSocket API, and routes $connect, $disconnect and $default to the stream function', () => {
    const apis = Object.values(built.template.findResources('AWS::ApiGatewayV2::Api'));
    expect(apis.map((a) => a.Properties.ProtocolType)).toEqual(['WEBSOCKET']);
    const integrations = Object.entries(built.template.findResources('AWS::ApiGatewayV2::Integration'));
    expect(integrations).toHaveLength(1);
    const [integrationId, integration] = integrations[0] as [string, Record<string, any>];
    expect(integration.Properties).toEqual(
      expect.objectContaining({
        ApiId: { Ref: built.api },
        IntegrationType: 'AWS_PROXY',
        IntegrationUri: {
          'Fn::Join': [
            '',
            expect.arrayContaining([{ 'Fn::GetAtt': [built.streamFunction, 'Arn'] }, '/invocations']),
          ],
        },
      }),
    );
    const routes = Object.values(built.template.findResources('AWS::ApiGatewayV2::Route')).map(
      (route) => route.Properties,
    );
    expect(routes.map((route) => route.RouteKey).sort()).toEqual(['$connect', '$default', '$disconnect']);
    for (const route of routes) {
      expect(route).toEqual(
        expect.objectContaining({
          ApiId: { Ref: built.api },
          AuthorizationType: 'NONE',
          Target: { 'Fn::Join': ['', ['integrations/', { Ref: integrationId }]] },
        }),
      );
    }
  });

  test('API Gateway may invoke the stream function for exactly these routes of this API', () => {
    const permissions = Object.values(built.template.findResources('AWS::Lambda::Permission')).filter(
      (permission) => JSON.stringify(permission.Properties.FunctionName).includes(built.streamFunction),
    );
    const routeKeys = permissions.map((permission) => {
      expect(permission.Properties.Principal).toBe('apigateway.amazonaws.com');
      const parts = permission.Properties.SourceArn['Fn::Join'][1];
      expect(parts).toContainEqual({ Ref: built.api });
      return parts.at(-1);
    });
    expect(routeKeys.sort()).toEqual(['/*$connect', '/*$default', '/*$disconnect']);
  });
});

describe('stage', () => {
  test('is `live`, deploys itself, throttles every route and logs errors without message bodies', () => {
    expect(built.resources[built.stage].Properties).toEqual(
      expect.objectContaining({
        ApiId: { Ref: built.api },
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
    const logGroup = logicalIdAt(built.template, 'AWS::Logs::LogGroup', `${PATH}/AccessLogs/Resource`);
    const { AccessLogSettings } = built.resources[built.stage].Properties;
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
    expect(built.resources[logGroup].Properties.RetentionInDays).toBe(defaultSettings.logRetentionDays);
    expect(built.resources[logGroup].DeletionPolicy).toBe('Retain');
  });

  test('is created after API Gateway’s account logging role is set, which logging requires', () => {
    expect(built.resources[built.stage].DependsOn).toContain(built.account);
  });
});

describe('connection table', () => {
  test('is keyed by connection id, finds connections by job through byJob (keys only) and expires items by expiresAt', () => {
    const { Properties } = built.resources[built.table];
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
    const { Properties, DeletionPolicy, UpdateReplacePolicy } = built.resources[built.table];
    expect(Properties.PointInTimeRecoverySpecification).toEqual({ PointInTimeRecoveryEnabled: true });
    expect(Properties.SSESpecification).toEqual({ SSEEnabled: true });
    expect(Properties.DeletionProtectionEnabled).toBe(false);
    expect(DeletionPolicy).toBe('Delete');
    expect(UpdateReplacePolicy).toBe('Delete');
  });
});

describe('stream function', () => {
  test('times out after 10 s and finds its tables through its environment', () => {
    const fn = built.resources[built.streamFunction];
    expect(fn.Properties.Timeout).toBe(10);
    expect(fn.Properties.Environment.Variables).toEqual(
      expect.objectContaining({
        API_KEY_TABLE_NAME: { Ref: built.apiKeyTable },
        JOB_TABLE_NAME: { Ref: built.jobTable },
        CONNECTION_TABLE_NAME: { Ref: built.table },
        POWERTOOLS_SERVICE_NAME: 'stream',
      }),
    );
  });

  test('reads single keys and jobs, reads and writes single connections, and nothing else', () => {
    const statements = policyStatements(built.template, `${PATH}/StreamFunction/Role/DefaultPolicy/Resource`);
    expect(statementsFor(statements, 'dynamodb')).toEqual([
      {
        Effect: 'Allow',
        Action: 'dynamodb:GetItem',
        Resource: [{ 'Fn::GetAtt': [built.apiKeyTable, 'Arn'] }, { 'Fn::GetAtt': [built.jobTable, 'Arn'] }],
      },
      {
        Effect: 'Allow',
        Action: ['dynamodb:DeleteItem', 'dynamodb:GetItem', 'dynamodb:PutItem', 'dynamodb:UpdateItem'],
        Resource: { 'Fn::GetAtt': [built.table, 'Arn'] },
      },
    ]);
    const services = new Set(statements.flatMap((s) => [s.Action].flat().map((a) => a.split(':')[0])));
    expect([...services].sort()).toEqual(['dynamodb', 'logs', 'xray']);
  });
});

describe('a function given grantPublish', () => {
  test('posts only to connections of this API’s live stage', () => {
    const statements = policyStatements(built.template, `${PUBLISHER}/Role/DefaultPolicy/Resource`);
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
              { Ref: built.api },
              '/live/POST/@connections/*',
            ],
          ],
        },
      },
    ]);
  });

  test('finds a job’s connections through byJob only, and deletes the ones that are gone', () => {
    const statements = policyStatements(built.template, `${PUBLISHER}/Role/DefaultPolicy/Resource`);
    expect(grantsOn(statements, built.table)).toEqual([
      ['dynamodb:Query', { 'Fn::Join': ['', [{ 'Fn::GetAtt': [built.table, 'Arn'] }, '/index/byJob']] }],
      ['dynamodb:DeleteItem', { 'Fn::GetAtt': [built.table, 'Arn'] }],
    ]);
  });

  test('finds the connection table and the management endpoint through its environment, and learns the URL clients connect to (STREAM_URL)', () => {
    const fn = logicalIdAt(built.template, 'AWS::Lambda::Function', `${PUBLISHER}/Function/Resource`);
    expect(built.resources[fn].Properties.Environment.Variables).toEqual(
      expect.objectContaining({
        CONNECTION_TABLE_NAME: { Ref: built.table },
        STREAM_CALLBACK_URL: stageUrl('https'),
        STREAM_URL: stageUrl('wss'),
      }),
    );
  });
});

// About the app: what the stack gives the construct, which of its functions publish, and its output.
describe('in the Longhaul stack', () => {
  const LONGHAUL = 'Longhaul/LiveProgress';
  /** Every function that moves jobs between statuses or hears their progress. */
  const PUBLISHERS = [
    'Longhaul/Api/ApiFunction',
    'Longhaul/ProviderEvents/EventsFunction',
    'Longhaul/WorkflowSteps/StepsFunction',
    'Longhaul/Reconciler/ReconcileFunction',
  ] as const;
  let app: Template;
  let appApi: string;

  beforeAll(() => {
    app = longhaulTemplate();
    appApi = logicalIdAt(app, 'AWS::ApiGatewayV2::Api', `${LONGHAUL}/WebSocketApi/Resource`);
  });

  test('it is the only WebSocket API, and its stage waits for the REST API’s account settings', () => {
    expect(Object.keys(app.findResources('AWS::ApiGatewayV2::Api'))).toEqual([appApi]);
    const appStage = logicalIdAt(app, 'AWS::ApiGatewayV2::Stage', `${LONGHAUL}/Stage/Resource`);
    const account = logicalIdAt(app, 'AWS::ApiGateway::Account', 'Longhaul/Api/RestApi/Account');
    expect(app.toJSON().Resources[appStage].DependsOn).toContain(account);
  });

  test('StreamUrl is the wss:// URL of the stage, which the API function hands out with stream tickets (STREAM_URL)', () => {
    app.hasOutput('StreamUrl', { Value: stageUrl('wss', appApi) });
    const apiFunction = logicalIdAt(
      app,
      'AWS::Lambda::Function',
      'Longhaul/Api/ApiFunction/Function/Resource',
    );
    expect(app.toJSON().Resources[apiFunction].Properties.Environment.Variables.STREAM_URL).toEqual(
      stageUrl('wss', appApi),
    );
  });

  test('the functions that move jobs may post to live clients, and no other function may', () => {
    const posting = Object.values(app.findResources('AWS::IAM::Policy'))
      .filter((policy) =>
        JSON.stringify(policy.Properties.PolicyDocument).includes('execute-api:ManageConnections'),
      )
      .map((policy) => policy.Metadata['aws:cdk:path'])
      .sort();
    expect(posting).toEqual(PUBLISHERS.map((path) => `${path}/Role/DefaultPolicy/Resource`).sort());
  });
});
