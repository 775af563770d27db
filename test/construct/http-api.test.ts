import { Match, Template } from 'aws-cdk-lib/assertions';
import { AttributeType, Table } from 'aws-cdk-lib/aws-dynamodb';
import { Queue } from 'aws-cdk-lib/aws-sqs';
import { API_KEY_HEADER, allRoutes as routes } from '../../config/layout';
import { gatewayProblems, PROBLEM_CONTENT_TYPE, RATE_LIMIT_RETRY_AFTER_SECONDS } from '../../config/problems';
import { LEGACY_PROVIDER, PROVIDER_NAMES } from '../../config/providers';
import { defaultSettings } from '../../config/settings';
import { Alarms } from '../../lib/constructs/alarms';
import { HttpApi } from '../../lib/constructs/http-api';
import { providerIdSuffix } from '../../lib/provider-ids';
import {
  grantsOn,
  logicalIdAt,
  longhaulTemplate,
  policyStatements,
  SYNTH_TIMEOUT_MS,
  stackUnderTest,
  standIns,
  statementsFor,
} from './longhaul-app';

jest.setTimeout(SYNTH_TIMEOUT_MS);

type CfnProperties = Record<string, any>;

interface CfnResource {
  readonly Type: string;
  readonly Properties: CfnProperties;
}

/** The HTTP API alone, in a stack of its own. */
let template: Template;
/** The whole app, for what is about it: what the stack gives the API, and the app's outputs. */
let app: Template;
let resources: Record<string, CfnResource>;
let restApi: string;
let authorizer: string;
let apiFunction: string;
/** The stand-ins the API is given. */
let given: ReturnType<typeof standIns>;
/** Their logical ids, the API key table's and the dead-letter queue's among them. */
let ids: typeof given.ids & { readonly apiKeyTable: string; readonly deadLetterQueue: string };

/** Full paths of the REST API's resources by logical id, rebuilt from their PathPart/ParentId chain. */
function resourcePaths(): Map<string, string> {
  const parts = new Map<string, { part: string; parent: unknown }>();
  for (const [id, resource] of Object.entries(resources)) {
    if (resource.Type === 'AWS::ApiGateway::Resource') {
      parts.set(id, { part: resource.Properties.PathPart, parent: resource.Properties.ParentId });
    }
  }
  const pathOf = (id: string): string => {
    const entry = parts.get(id);
    if (!entry) throw new Error(`no resource ${id}`);
    const parent = entry.parent as { Ref?: string; 'Fn::GetAtt'?: [string, string] };
    if (parent['Fn::GetAtt']?.[1] === 'RootResourceId') return `/${entry.part}`;
    return `${pathOf(parent.Ref as string)}/${entry.part}`;
  };
  return new Map([...parts.keys()].map((id) => [id, pathOf(id)]));
}

/** Every method as `METHOD /path`, with its properties. */
function methodsByRoute(): Map<string, CfnProperties> {
  const paths = resourcePaths();
  const methods = new Map<string, CfnProperties>();
  for (const resource of Object.values(resources)) {
    if (resource.Type !== 'AWS::ApiGateway::Method') continue;
    const { HttpMethod, ResourceId } = resource.Properties;
    const path = paths.get(ResourceId.Ref);
    if (!path) throw new Error(`method ${HttpMethod} on unknown resource ${JSON.stringify(ResourceId)}`);
    methods.set(`${HttpMethod} ${path}`, resource.Properties);
  }
  return methods;
}

beforeAll(() => {
  const stack = stackUnderTest();
  given = standIns(stack);
  const apiKeyTable = new Table(stack, 'ApiKeyTable', {
    partitionKey: { name: 'keyHash', type: AttributeType.STRING },
  });
  const deadLetterQueue = new Queue(stack, 'DeadLetterQueue');
  new HttpApi(stack, 'Api', {
    settings: defaultSettings,
    alarms: new Alarms(stack, 'Alarms'),
    jobTable: given.jobTable,
    apiKeyTable,
    jobQueues: given.jobQueues,
    deadLetterQueue,
    // As in the app: dead letters go back to the first provider's queue.
    redriveQueue: given.jobQueues[LEGACY_PROVIDER],
    inputBucket: given.inputBucket,
    outputBucket: given.outputBucket,
    providerSecrets: given.providerSecrets,
  });
  ids = { ...given.ids, apiKeyTable: given.idOf(apiKeyTable), deadLetterQueue: given.idOf(deadLetterQueue) };
  template = Template.fromStack(stack);
  resources = template.toJSON().Resources;
  restApi = logicalIdAt(template, 'AWS::ApiGateway::RestApi', 'Test/Api/RestApi/Resource');
  authorizer = logicalIdAt(template, 'AWS::ApiGateway::Authorizer', 'Test/Api/Authorizer/Resource');
  apiFunction = logicalIdAt(template, 'AWS::Lambda::Function', 'Test/Api/ApiFunction/Function/Resource');
  app = longhaulTemplate();
});

describe('REST API', () => {
  test('is regional, takes usage-plan keys from the authorizer and passes multipart bodies as binary', () => {
    template.resourceCountIs('AWS::ApiGateway::RestApi', 1);
    template.hasResourceProperties('AWS::ApiGateway::RestApi', {
      ApiKeySourceType: 'AUTHORIZER',
      BinaryMediaTypes: ['multipart/form-data'],
      EndpointConfiguration: { Types: ['REGIONAL'] },
    });
  });

  test('serves exactly the routes of config/layout.ts', () => {
    expect([...methodsByRoute().keys()].sort()).toEqual(routes.map((r) => `${r.method} ${r.path}`).sort());
  });

  test.each(routes.filter((route) => route.auth !== 'none'))(
    '$method $path ($auth) needs the API key authorizer and a usage-plan key',
    (route) => {
      const method = methodsByRoute().get(`${route.method} ${route.path}`);
      expect(method).toEqual(
        expect.objectContaining({
          AuthorizationType: 'CUSTOM',
          AuthorizerId: { Ref: authorizer },
          ApiKeyRequired: true,
        }),
      );
    },
  );

  test('the admin routes are exactly these, each behind the authorizer with a usage-plan key', () => {
    const admin = routes.filter((route) => route.auth === 'admin').map((r) => `${r.method} ${r.path}`);
    expect(admin).toEqual([
      'GET /v1/admin/jobs',
      'GET /v1/admin/providers',
      'POST /v1/admin/providers/{provider}/pause',
      'POST /v1/admin/providers/{provider}/resume',
      'GET /v1/admin/tenants/{tenant}',
      'PUT /v1/admin/tenants/{tenant}',
      'POST /v1/admin/jobs/{id}/resolve',
      'POST /v1/admin/jobs/replay',
      'POST /v1/admin/jobs/resume',
      'POST /v1/admin/dlq/redrive',
    ]);
    for (const key of admin) {
      expect(methodsByRoute().get(key)).toEqual(
        expect.objectContaining({
          AuthorizationType: 'CUSTOM',
          AuthorizerId: { Ref: authorizer },
          ApiKeyRequired: true,
        }),
      );
    }
  });

  test('GET /healthz is public and needs no key', () => {
    const method = methodsByRoute().get('GET /healthz');
    expect(method?.AuthorizationType).toBe('NONE');
    expect(method?.AuthorizerId).toBeUndefined();
    expect(method?.ApiKeyRequired).toBeUndefined();
  });

  test.each(routes)('$method $path proxies to the api function', (route) => {
    const method = methodsByRoute().get(`${route.method} ${route.path}`);
    expect(method?.Integration).toEqual(
      expect.objectContaining({
        Type: 'AWS_PROXY',
        IntegrationHttpMethod: 'POST',
        Uri: expect.objectContaining({
          'Fn::Join': ['', expect.arrayContaining([{ 'Fn::GetAtt': [apiFunction, 'Arn'] }])],
        }),
      }),
    );
  });
});

describe('authorizer', () => {
  test('is a REQUEST authorizer on the X-API-Key header, cached for the configured time', () => {
    const authorizerFunction = logicalIdAt(
      template,
      'AWS::Lambda::Function',
      'Test/Api/AuthorizerFunction/Function/Resource',
    );
    template.resourceCountIs('AWS::ApiGateway::Authorizer', 1);
    template.hasResourceProperties('AWS::ApiGateway::Authorizer', {
      Type: 'REQUEST',
      IdentitySource: `method.request.header.${API_KEY_HEADER}`,
      AuthorizerResultTtlInSeconds: defaultSettings.authorizerCacheSeconds,
      RestApiId: { Ref: restApi },
      AuthorizerUri: Match.objectLike({
        'Fn::Join': ['', Match.arrayWith([{ 'Fn::GetAtt': [authorizerFunction, 'Arn'] }])],
      }),
    });
  });

  test('may only read single items of the API key table', () => {
    const keyTable = ids.apiKeyTable;
    const policy = logicalIdAt(
      template,
      'AWS::IAM::Policy',
      'Test/Api/AuthorizerFunction/Role/DefaultPolicy/Resource',
    );
    const statements = resources[policy]?.Properties.PolicyDocument.Statement;
    const dynamo = statements.filter((s: { Action: string | string[] }) =>
      [s.Action].flat().some((a) => a.startsWith('dynamodb:')),
    );
    expect(dynamo).toEqual([
      { Effect: 'Allow', Action: 'dynamodb:GetItem', Resource: { 'Fn::GetAtt': [keyTable, 'Arn'] } },
    ]);
  });
});

describe('usage plan and stage', () => {
  test('one usage plan throttles each tenant key to the configured rate and burst on the stage', () => {
    const stage = logicalIdAt(
      template,
      'AWS::ApiGateway::Stage',
      'Test/Api/RestApi/DeploymentStage.prod/Resource',
    );
    template.resourceCountIs('AWS::ApiGateway::UsagePlan', 1);
    template.hasResourceProperties('AWS::ApiGateway::UsagePlan', {
      Throttle: { RateLimit: defaultSettings.apiRateLimit, BurstLimit: defaultSettings.apiBurstLimit },
      ApiStages: [Match.objectLike({ ApiId: { Ref: restApi }, Stage: { Ref: stage } })],
    });
  });

  test('the stage traces, logs errors and access, and throttles all methods', () => {
    const accessLogs = logicalIdAt(template, 'AWS::Logs::LogGroup', 'Test/Api/AccessLogs/Resource');
    const stage = resources[
      logicalIdAt(template, 'AWS::ApiGateway::Stage', 'Test/Api/RestApi/DeploymentStage.prod/Resource')
    ] as CfnResource;
    expect(stage.Properties.TracingEnabled).toBe(true);
    expect(stage.Properties.MethodSettings).toEqual([
      {
        HttpMethod: '*',
        ResourcePath: '/*',
        LoggingLevel: 'ERROR',
        DataTraceEnabled: false,
        MetricsEnabled: true,
        ThrottlingRateLimit: 500,
        ThrottlingBurstLimit: 1000,
      },
    ]);
    expect(JSON.stringify(stage.Properties.AccessLogSetting.DestinationArn)).toContain(accessLogs);
    const format = JSON.parse(stage.Properties.AccessLogSetting.Format);
    expect(format).toEqual(
      expect.objectContaining({
        requestId: '$context.requestId',
        ip: '$context.identity.sourceIp',
        status: '$context.status',
        latency: '$context.responseLatency',
        authorizerError: '$context.authorizer.error',
        tenantId: '$context.authorizer.tenantId',
      }),
    );
  });

  test('API Gateway may write execution logs through the account CloudWatch role, the app’s only one', () => {
    template.resourceCountIs('AWS::ApiGateway::Account', 1);
    // About the app: the live progress API uses this one rather than make its own.
    app.resourceCountIs('AWS::ApiGateway::Account', 1);
  });

  test('ApiUrl is the stage URL without a trailing slash, and the usage plan id is an output', () => {
    // About the app: its outputs.
    const appRestApi = logicalIdAt(app, 'AWS::ApiGateway::RestApi', 'Longhaul/Api/RestApi/Resource');
    const stage = logicalIdAt(
      app,
      'AWS::ApiGateway::Stage',
      'Longhaul/Api/RestApi/DeploymentStage.prod/Resource',
    );
    app.hasOutput('ApiUrl', {
      Value: {
        'Fn::Join': [
          '',
          [
            'https://',
            { Ref: appRestApi },
            '.execute-api.',
            { Ref: 'AWS::Region' },
            '.',
            { Ref: 'AWS::URLSuffix' },
            '/',
            { Ref: stage },
          ],
        ],
      },
    });
    app.hasOutput('UsagePlanId', {
      Value: {
        Ref: logicalIdAt(app, 'AWS::ApiGateway::UsagePlan', 'Longhaul/Api/RestApi/UsagePlan/Resource'),
      },
    });
    expect(Object.keys(app.toJSON().Outputs).sort()).toEqual(
      [
        'AlarmTopicArn',
        'ApiKeyTableName',
        'ApiUrl',
        'DashboardUrl',
        'DeadLetterQueueUrl',
        'EventBusArn',
        'EventBusName',
        'HandOffQueueUrl',
        'InputBucketName',
        ...PROVIDER_NAMES.map((provider) => `JobQueueUrl${providerIdSuffix(provider)}`),
        'JobTableName',
        'OutputBucketName',
        'ProviderEventsUrl',
        'ProviderSecretArn',
        'ProviderSecretArnBedrock',
        'ProviderSecretArnDeepgram',
        'ProviderSecretArnReplicate',
        'ScheduleGroupName',
        'SearchIndexArn',
        'StateMachineArn',
        'StreamUrl',
        'UsagePlanId',
        'WebhookSecretArn',
      ].sort(),
    );
  });
});

describe('gateway responses', () => {
  test('there is one per gateway problem', () => {
    template.resourceCountIs('AWS::ApiGateway::GatewayResponse', Object.keys(gatewayProblems).length);
  });

  test.each(Object.entries(gatewayProblems))(
    '%s answers its problem as application/problem+json',
    (type, problem) => {
      const responses = Object.values(resources).filter(
        (r) => r.Type === 'AWS::ApiGateway::GatewayResponse' && r.Properties.ResponseType === type,
      );
      expect(responses).toHaveLength(1);
      const { Properties } = responses[0] as CfnResource;
      expect(Properties.StatusCode).toBe(type.startsWith('DEFAULT_') ? undefined : String(problem.status));
      expect(Properties.RestApiId).toEqual({ Ref: restApi });
      expect(Properties.ResponseParameters['gatewayresponse.header.Content-Type']).toBe(
        `'${PROBLEM_CONTENT_TYPE}'`,
      );
      expect(JSON.parse(Properties.ResponseTemplates['application/json'])).toEqual(problem);
    },
  );

  /** API Gateway's own status per response type (API Gateway developer guide, "Gateway response types"). */
  const API_GATEWAY_STATUS: Record<string, number | null> = {
    ACCESS_DENIED: 403,
    API_CONFIGURATION_ERROR: 500,
    AUTHORIZER_CONFIGURATION_ERROR: 500,
    AUTHORIZER_FAILURE: 500,
    BAD_REQUEST_PARAMETERS: 400,
    BAD_REQUEST_BODY: 400,
    DEFAULT_4XX: null,
    DEFAULT_5XX: null,
    EXPIRED_TOKEN: 403,
    INTEGRATION_FAILURE: 504,
    INTEGRATION_TIMEOUT: 504,
    INVALID_API_KEY: 403,
    INVALID_SIGNATURE: 403,
    MISSING_AUTHENTICATION_TOKEN: 403,
    QUOTA_EXCEEDED: 429,
    REQUEST_TOO_LARGE: 413,
    RESOURCE_NOT_FOUND: 404,
    THROTTLED: 429,
    UNAUTHORIZED: 401,
    UNSUPPORTED_MEDIA_TYPE: 415,
    WAF_FILTERED: 403,
  };

  test('every response keeps the status API Gateway gives its type; an unknown route alone is a 404', () => {
    const statuses = Object.fromEntries(
      Object.values(resources)
        .filter((r) => r.Type === 'AWS::ApiGateway::GatewayResponse')
        .map((r) => [r.Properties.ResponseType, r.Properties.StatusCode ?? null]),
    );
    const expected = Object.fromEntries(
      Object.entries(API_GATEWAY_STATUS).map(([type, status]) => [
        type,
        status === null ? null : String(status),
      ]),
    );
    // API Gateway answers a route it does not know as a missing token (403); the contract says 404.
    expected.MISSING_AUTHENTICATION_TOKEN = '404';
    expect(statuses).toEqual(expected);
  });

  test('THROTTLED is a 429 with Retry-After', () => {
    template.hasResourceProperties('AWS::ApiGateway::GatewayResponse', {
      ResponseType: 'THROTTLED',
      StatusCode: '429',
      ResponseParameters: {
        'gatewayresponse.header.Content-Type': "'application/problem+json'",
        'gatewayresponse.header.Retry-After': `'${RATE_LIMIT_RETRY_AFTER_SECONDS}'`,
      },
    });
  });

  test('QUOTA_EXCEEDED has Retry-After too, and no other response does', () => {
    const withRetryAfter = Object.values(resources)
      .filter((r) => r.Type === 'AWS::ApiGateway::GatewayResponse')
      .filter((r) => 'gatewayresponse.header.Retry-After' in r.Properties.ResponseParameters)
      .map((r) => r.Properties.ResponseType)
      .sort();
    expect(withRetryAfter).toEqual(['QUOTA_EXCEEDED', 'THROTTLED']);
  });

  test('UNAUTHORIZED is a 401 unauthorized problem', () => {
    template.hasResourceProperties('AWS::ApiGateway::GatewayResponse', {
      ResponseType: 'UNAUTHORIZED',
      StatusCode: '401',
      ResponseParameters: { 'gatewayresponse.header.Content-Type': "'application/problem+json'" },
      ResponseTemplates: {
        'application/json': Match.serializedJson(Match.objectLike({ code: 'unauthorized', status: 401 })),
      },
    });
  });
});

describe('api function', () => {
  test("reads and writes the job table, sends to every provider's jobs queue and reads and writes input objects", () => {
    const policy = logicalIdAt(
      template,
      'AWS::IAM::Policy',
      'Test/Api/ApiFunction/Role/DefaultPolicy/Resource',
    );
    const jobTableId = ids.jobTable;
    const bucket = ids.inputBucket;
    const statements = resources[policy]?.Properties.PolicyDocument.Statement;
    expect(statements).toEqual(
      expect.arrayContaining([
        expect.objectContaining({
          Action: expect.arrayContaining([
            'dynamodb:GetItem',
            'dynamodb:PutItem',
            'dynamodb:UpdateItem',
            'dynamodb:Query',
          ]),
          Resource: [
            { 'Fn::GetAtt': [jobTableId, 'Arn'] },
            { 'Fn::Join': ['', [{ 'Fn::GetAtt': [jobTableId, 'Arn'] }, '/index/*']] },
          ],
        }),
        expect.objectContaining({
          Action: expect.arrayContaining(['sqs:SendMessage']),
          Resource: given.jobQueueArns,
        }),
        {
          Effect: 'Allow',
          Action: ['s3:GetObject', 's3:PutObject'],
          Resource: { 'Fn::Join': ['', [{ 'Fn::GetAtt': [bucket, 'Arn'] }, '/*']] },
        },
      ]),
    );
    // Of the API key table, only a count on its tenant index: no key record, no usage-plan key value.
    const keyTableId = ids.apiKeyTable;
    expect(grantsOn(statements, keyTableId)).toEqual([
      ['dynamodb:Query', { 'Fn::Join': ['', [{ 'Fn::GetAtt': [keyTableId, 'Arn'] }, '/index/byTenant']] }],
    ]);
  });

  test('finds its resources through the resourceEnv variables', () => {
    template.hasResourceProperties('AWS::Lambda::Function', {
      Environment: {
        Variables: Match.objectLike({
          JOB_TABLE_NAME: {
            Ref: ids.jobTable,
          },
          ...given.jobQueueEnvironment,
          INPUT_BUCKET_NAME: {
            Ref: ids.inputBucket,
          },
          POWERTOOLS_SERVICE_NAME: 'api',
        }),
      },
      Timeout: 15,
      MemorySize: 1024,
    });
    template.hasResourceProperties('AWS::Lambda::Function', {
      Environment: {
        Variables: Match.objectLike({
          API_KEY_TABLE_NAME: {
            Ref: ids.apiKeyTable,
          },
          POWERTOOLS_SERVICE_NAME: 'authorizer',
        }),
      },
    });
  });

  test("reads output objects (to presign their URLs) and writes only a provider's reported output, a stream's served playlists and a media version's vector revision", () => {
    const statements = policyStatements(template, 'Test/Api/ApiFunction/Role/DefaultPolicy/Resource');
    const output = ids.outputBucket;
    expect(statementsFor(statements, 's3')).toEqual(
      expect.arrayContaining([
        {
          Effect: 'Allow',
          Action: 's3:GetObject',
          Resource: { 'Fn::Join': ['', [{ 'Fn::GetAtt': [output, 'Arn'] }, '/*']] },
        },
        {
          Effect: 'Allow',
          Action: 's3:PutObject',
          Resource: [
            { 'Fn::Join': ['', [{ 'Fn::GetAtt': [output, 'Arn'] }, '/outputs/*/provider-output-*']] },
            { 'Fn::Join': ['', [{ 'Fn::GetAtt': [output, 'Arn'] }, '/outputs/*/served/*']] },
            { 'Fn::Join': ['', [{ 'Fn::GetAtt': [output, 'Arn'] }, '/outputs/*/vectors-revision.json']] },
          ],
        },
      ]),
    );
    expect(statementsFor(statements, 's3')).toHaveLength(3);
  });

  test("reads each provider's secret to check that provider's webhooks, and no other secret", () => {
    const statements = policyStatements(template, 'Test/Api/ApiFunction/Role/DefaultPolicy/Resource');
    const [read] = statementsFor(statements, 'secretsmanager');
    expect(statementsFor(statements, 'secretsmanager')).toEqual([
      {
        Effect: 'Allow',
        Action: 'secretsmanager:GetSecretValue',
        Resource: expect.arrayContaining(Object.values(ids.providerSecrets).map((id) => ({ Ref: id }))),
      },
    ]);
    expect(read?.Resource).toHaveLength(PROVIDER_NAMES.length);
  });

  test('may answer task tokens and send heartbeats (provider events resume a step and keep it alive, a cancel fails it), and nothing else in Step Functions by itself', () => {
    expect(policyStatements(template, 'Test/Api/ApiFunction/TaskResponsePolicy/Resource')).toEqual([
      {
        Effect: 'Allow',
        Action: ['states:SendTaskFailure', 'states:SendTaskHeartbeat', 'states:SendTaskSuccess'],
        Resource: '*',
      },
    ]);
    const statements = policyStatements(template, 'Test/Api/ApiFunction/Role/DefaultPolicy/Resource');
    expect(statementsFor(statements, 'states')).toEqual([]);
  });

  test('in the app, reads executions’ histories, redrives and describes executions, and starts no execution', () => {
    // About the app: the stack gives the api function its state machine's executions.
    const statements = policyStatements(app, 'Longhaul/Api/ApiFunction/Role/DefaultPolicy/Resource');
    const machine = logicalIdAt(
      app,
      'AWS::StepFunctions::StateMachine',
      'Longhaul/Workflow/StateMachine/Resource',
    );
    const executions = {
      'Fn::Join': [
        '',
        [
          'arn:',
          { Ref: 'AWS::Partition' },
          ':states:',
          { Ref: 'AWS::Region' },
          ':',
          { Ref: 'AWS::AccountId' },
          ':execution:',
          { 'Fn::GetAtt': [machine, 'Name'] },
          ':*',
        ],
      ],
    };
    // A job's steps are read from its executions' histories, named after the job at run time; a resume
    // redrives its job's failed execution, and describes it when the redrive is refused because it still
    // runs its failure path. Nothing else of the executions, nor of the state machine.
    expect(statementsFor(statements, 'states')).toEqual([
      {
        Effect: 'Allow',
        Action: ['states:DescribeExecution', 'states:GetExecutionHistory', 'states:RedriveExecution'],
        Resource: executions,
      },
    ]);
    const fn = logicalIdAt(app, 'AWS::Lambda::Function', 'Longhaul/Api/ApiFunction/Function/Resource');
    expect(app.toJSON().Resources[fn].Properties.Environment.Variables.STATE_MACHINE_ARN).toEqual({
      Ref: machine,
    });
  });

  test('finds the output bucket and the provider secret through its environment', () => {
    const fn = logicalIdAt(template, 'AWS::Lambda::Function', 'Test/Api/ApiFunction/Function/Resource');
    expect(resources[fn]?.Properties.Environment.Variables).toEqual(
      expect.objectContaining({
        OUTPUT_BUCKET_NAME: {
          Ref: ids.outputBucket,
        },
        ...given.providerSecretEnvironment,
      }),
    );
  });

  test('may start a message move task on the dead-letter queue only, and send only to the jobs queues', () => {
    const statements = policyStatements(template, 'Test/Api/ApiFunction/Role/DefaultPolicy/Resource');
    const dlq = ids.deadLetterQueue;
    const queue = ids.jobQueues[LEGACY_PROVIDER];
    expect(statementsFor(statements, 'sqs')).toEqual([
      {
        Effect: 'Allow',
        Action: ['sqs:GetQueueAttributes', 'sqs:GetQueueUrl', 'sqs:SendMessage'],
        Resource: given.jobQueueArns,
      },
      {
        Effect: 'Allow',
        Action: [
          'sqs:DeleteMessage',
          'sqs:GetQueueAttributes',
          'sqs:ReceiveMessage',
          'sqs:StartMessageMoveTask',
        ],
        Resource: { 'Fn::GetAtt': [dlq, 'Arn'] },
      },
      // The move task sends to the redrive's destination with the caller's rights.
      { Effect: 'Allow', Action: 'sqs:SendMessage', Resource: { 'Fn::GetAtt': [queue, 'Arn'] } },
    ]);
  });

  test('names both ends of the redrive by ARN in its environment', () => {
    const fn = logicalIdAt(template, 'AWS::Lambda::Function', 'Test/Api/ApiFunction/Function/Resource');
    expect(resources[fn]?.Properties.Environment.Variables).toEqual(
      expect.objectContaining({
        DEAD_LETTER_QUEUE_ARN: {
          'Fn::GetAtt': [ids.deadLetterQueue, 'Arn'],
        },
        JOB_QUEUE_ARN: {
          'Fn::GetAtt': [ids.jobQueues[LEGACY_PROVIDER], 'Arn'],
        },
      }),
    );
  });
});
