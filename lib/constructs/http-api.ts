import { Aws, Duration, RemovalPolicy, Stack } from 'aws-cdk-lib';
import {
  AccessLogField,
  AccessLogFormat,
  ApiKeySourceType,
  AuthorizationType,
  type CfnAccount,
  EndpointType,
  IdentitySource,
  LambdaIntegration,
  LogGroupLogDestination,
  type Method,
  MethodLoggingLevel,
  RequestAuthorizer,
  ResponseType,
  RestApi,
  type UsagePlan,
} from 'aws-cdk-lib/aws-apigateway';
import { type Alarm, ComparisonOperator, MathExpression, TreatMissingData } from 'aws-cdk-lib/aws-cloudwatch';
import type { ITable } from 'aws-cdk-lib/aws-dynamodb';
import { PolicyStatement } from 'aws-cdk-lib/aws-iam';
import { LogGroup, type RetentionDays } from 'aws-cdk-lib/aws-logs';
import type { IBucket } from 'aws-cdk-lib/aws-s3';
import type { ISecret } from 'aws-cdk-lib/aws-secretsmanager';
import type { IQueue } from 'aws-cdk-lib/aws-sqs';
import { Construct } from 'constructs';
import {
  API_KEY_HEADER,
  allRoutes,
  apiKeyTable,
  binaryMediaTypes,
  PROVIDER_OUTPUT_OBJECTS,
  type RouteKey,
  type RouteLayout,
  SERVED_STREAM_OBJECTS,
  VECTOR_REVISION_OBJECTS,
} from '../../config/layout';
import {
  type GatewayResponseType,
  gatewayProblems,
  PROBLEM_CONTENT_TYPE,
  RATE_LIMIT_RETRY_AFTER_SECONDS,
} from '../../config/problems';
import type { ProviderName } from '../../config/providers';
import type { Settings } from '../../config/settings';
import { handlerEntry } from '../handlers';
import { acknowledge, iam5ResourceFinding } from '../nag';
import type { Alarms } from './alarms';
import { createExecutionLogGroup } from './execution-log-group';
import { ProjectFunction } from './project-function';

/**
 * The fallback gateway responses. A status code set on one replaces the status
 * of every response that falls back to it (a WAF 403 would answer 400, an
 * authorizer failure's 500 a 502), so they set none and keep the status API
 * Gateway chose.
 */
const FALLBACK_RESPONSES: ReadonlySet<GatewayResponseType> = new Set(['DEFAULT_4XX', 'DEFAULT_5XX']);

/** Gateway responses that tell the client when to come back. */
const RETRY_AFTER_RESPONSES: ReadonlySet<GatewayResponseType> = new Set(['THROTTLED', 'QUOTA_EXCEEDED']);

const [apiKeyTenantIndex] = apiKeyTable.indexes;

export interface HttpApiProps {
  /**
   * Longhaul settings: per-tenant throttling, authorizer caching, log retention,
   * the 5xx alarm threshold (`alarmApi5xxPercent`), and the handlers' environment.
   */
  readonly settings: Settings;
  /** Where the API's alarms are sent. */
  readonly alarms: Alarms;
  /** The job table; the api handler reads and writes it. */
  readonly jobTable: ITable;
  /**
   * The API key table; the authorizer reads single keys from it, and the api
   * handler counts a tenant's keys on its tenant index (never reading a key).
   */
  readonly apiKeyTable: ITable;
  /** Each provider's jobs queue; the api handler sends each new job to its provider's. */
  readonly jobQueues: Readonly<Record<ProviderName, IQueue>>;
  /** The jobs queues' dead-letter queue; the admin redrive route moves its messages back to `redriveQueue`. */
  readonly deadLetterQueue: IQueue;
  /** Where a redrive moves dead letters (the dispatcher takes any job from any jobs queue). */
  readonly redriveQueue: IQueue;
  /** The input bucket; the api handler stores and reads job inputs in it. */
  readonly inputBucket: IBucket;
  /** The output bucket; the api handler presigns GET URLs of job outputs in it. */
  readonly outputBucket: IBucket;
  /** Each provider's secret (API key, webhook signing key); the api handler checks the signature of the provider's webhooks with it. */
  readonly providerSecrets: Readonly<Record<ProviderName, ISecret>>;

  /**
   * The routes to serve, all proxied to the one api handler.
   * @default routes from config/layout.ts
   */
  readonly routes?: readonly RouteLayout[];

  /**
   * Name of the deployment stage; it is the first segment of every URL path.
   * @default 'prod'
   */
  readonly stageName?: string;

  /**
   * Requests per second across all tenants and routes before the stage throttles;
   * keeps one noisy client from using up the account's regional API Gateway limit.
   * Per-tenant limits come from the usage plan.
   * @default 500, or one tenant's rate limit if that is higher
   */
  readonly stageRateLimit?: number;

  /**
   * Burst across all tenants and routes before the stage throttles.
   * @default 1000, or one tenant's burst limit if that is higher
   */
  readonly stageBurstLimit?: number;

  /**
   * Entry file of the api handler.
   * @default lambdas/api/handler.ts
   */
  readonly apiEntry?: string;

  /**
   * Entry file of the API key authorizer.
   * @default lambdas/authorizer/handler.ts
   */
  readonly authorizerEntry?: string;
}

/**
 * The public HTTP interface: an API Gateway REST API whose routes (from
 * config/layout.ts) all proxy to one api handler. Tenant routes pass a REQUEST
 * Lambda authorizer keyed on the X-API-Key header; the authorizer answers with the
 * tenant's usage-plan key as `usageIdentifierKey`, so the one usage plan throttles
 * each tenant separately. Errors the gateway answers itself are RFC 9457 problems,
 * the same bodies the handlers and the local gateway send.
 */
export class HttpApi extends Construct {
  /** The REST API. */
  public readonly restApi: RestApi;
  /** Handles every route. */
  public readonly apiFunction: ProjectFunction;
  /** Turns an X-API-Key into a tenant, a policy and a usage-plan key. */
  public readonly authorizerFunction: ProjectFunction;
  /** The REQUEST authorizer of every tenant route. */
  public readonly authorizer: RequestAuthorizer;
  /** The usage plan giving each tenant's API Gateway key its own rate and burst limit. */
  public readonly usagePlan: UsagePlan;
  /** Access log of the stage, one JSON line per request. */
  public readonly accessLogGroup: LogGroup;
  /** Execution log of the stage (errors only, no bodies), under the name API Gateway writes to. */
  public readonly executionLogGroup: LogGroup;
  /**
   * API Gateway's account settings naming the CloudWatch Logs role this API
   * creates. Set once per account and region; other logging API Gateway stages
   * in the stack must be created after it.
   */
  public readonly apiGatewayAccount: CfnAccount;
  /** Every method, by route key (`GET /v1/jobs/{id}`). */
  public readonly methods: ReadonlyMap<string, Method>;
  /** Base URL of the API, without a trailing slash: `${url}/v1/jobs` is the jobs collection. */
  public readonly url: string;

  /** Percentage of the stage's requests answered 5xx, per 5 minutes. */
  public readonly serverErrorRate: MathExpression;
  /** In ALARM while `serverErrorRate` is at least `alarmApi5xxPercent`. */
  public readonly serverErrorRateAlarm: Alarm;

  private readonly routeKeys: ReadonlySet<string>;

  constructor(scope: Construct, id: string, props: HttpApiProps) {
    super(scope, id);
    const { settings } = props;
    const stageName = props.stageName ?? 'prod';
    if (!/^[A-Za-z0-9_]+$/.test(stageName)) {
      throw new Error(
        `HttpApi ${this.node.path}: stageName must contain only letters, digits and underscores, got ${JSON.stringify(stageName)}`,
      );
    }
    const stageRateLimit = props.stageRateLimit ?? Math.max(500, settings.apiRateLimit);
    const stageBurstLimit = props.stageBurstLimit ?? Math.max(1000, settings.apiBurstLimit);
    if (!(stageRateLimit > 0) || !Number.isInteger(stageBurstLimit) || stageBurstLimit < 1) {
      throw new Error(
        `HttpApi ${this.node.path}: stageRateLimit must be positive and stageBurstLimit a positive integer, got ${stageRateLimit} and ${stageBurstLimit}`,
      );
    }
    if (stageRateLimit < settings.apiRateLimit || stageBurstLimit < settings.apiBurstLimit) {
      throw new Error(
        `HttpApi ${this.node.path}: stage limits (${stageRateLimit}/s, burst ${stageBurstLimit}) must be at least one tenant's limits (${settings.apiRateLimit}/s, burst ${settings.apiBurstLimit})`,
      );
    }
    const apiRoutes = props.routes ?? allRoutes;
    if (apiRoutes.length === 0) throw new Error(`HttpApi ${this.node.path}: routes must not be empty`);
    const routeKeys = apiRoutes.map((route) => `${route.method} ${route.path}`);
    const duplicate = routeKeys.find((key, index) => routeKeys.indexOf(key) !== index);
    if (duplicate) throw new Error(`HttpApi ${this.node.path}: route ${duplicate} is listed twice`);

    this.apiFunction = new ProjectFunction(this, 'ApiFunction', {
      entry: props.apiEntry ?? handlerEntry('api'),
      settings,
      serviceName: 'api',
      description: 'Longhaul HTTP API: job intake, status, uploads, provider events and operator actions',
      // Well under the gateway's 29 s integration limit, so a slow dependency
      // ends as the handler's own problem response rather than a gateway 504.
      timeout: Duration.seconds(15),
      memorySize: 1024,
    })
      .useTable('jobTable', props.jobTable, 'readWrite')
      // Whether a name is a tenant's, for the admin tenant routes.
      .useTableIndex('apiKeyTable', props.apiKeyTable, apiKeyTenantIndex.name)
      .useJobQueues(props.jobQueues, 'send')
      .useBucket('inputBucket', props.inputBucket, 'readWrite')
      .useBucket('outputBucket', props.outputBucket, 'read')
      .useProviderSecrets(props.providerSecrets)
      .useEmbeddingModel(props.settings)
      .useDeadLetterRedrive(props.deadLetterQueue, props.redriveQueue)
      // Provider events resume the waiting workflow step (and their progress keeps it alive); a cancel fails it.
      .allowTaskResponses();
    // A provider's completion may carry the output it hands over only then: kept beside the job's
    // outputs for finalize. A stream's playlists are written signed each time its job is shown
    // (audio.publish). Nothing else of the output bucket is written here.
    this.apiFunction.role.addToPrincipalPolicy(
      new PolicyStatement({
        actions: ['s3:PutObject'],
        resources: [
          props.outputBucket.arnForObjects(PROVIDER_OUTPUT_OBJECTS),
          props.outputBucket.arnForObjects(SERVED_STREAM_OBJECTS),
          props.outputBucket.arnForObjects(VECTOR_REVISION_OBJECTS),
        ],
      }),
    );
    acknowledge(
      this.apiFunction.role,
      iam5ResourceFinding(this, props.outputBucket.bucketArn, `/${PROVIDER_OUTPUT_OBJECTS}`),
      "A provider's reported output is kept under its job, whose id is known only at run time; the grant is PutObject on those keys of this one bucket, nothing else of it.",
    );
    acknowledge(
      this.apiFunction.role,
      iam5ResourceFinding(this, props.outputBucket.bucketArn, `/${SERVED_STREAM_OBJECTS}`),
      "A stream's served playlists are kept under its job, whose id is known only at run time; the grant is PutObject on those keys of this one bucket, nothing else of it.",
    );
    acknowledge(
      this.apiFunction.role,
      iam5ResourceFinding(this, props.outputBucket.bucketArn, `/${VECTOR_REVISION_OBJECTS}`),
      "An operator's resolve switches a media version in, recording which metadata revision its vectors carry beside them, under its job, whose id is known only at run time; the grant is PutObject on those keys of this one bucket, nothing else of it.",
    );

    this.authorizerFunction = new ProjectFunction(this, 'AuthorizerFunction', {
      entry: props.authorizerEntry ?? handlerEntry('authorizer'),
      settings,
      serviceName: 'authorizer',
      description: 'Longhaul API key authorizer',
      timeout: Duration.seconds(5),
    }).useTable('apiKeyTable', props.apiKeyTable, 'getItem');

    this.accessLogGroup = new LogGroup(this, 'AccessLogs', {
      retention: settings.logRetentionDays as RetentionDays,
      removalPolicy: RemovalPolicy.RETAIN,
    });

    this.restApi = new RestApi(this, 'RestApi', {
      restApiName: `${Stack.of(this).stackName}-api`,
      description: 'Longhaul job API',
      endpointConfiguration: { types: [EndpointType.REGIONAL] },
      // The authorizer, not the client, supplies the usage-plan key.
      apiKeySourceType: ApiKeySourceType.AUTHORIZER,
      binaryMediaTypes: [...binaryMediaTypes],
      // Execution logging needs the account-level CloudWatch role.
      cloudWatchRole: true,
      cloudWatchRoleRemovalPolicy: RemovalPolicy.RETAIN,
      deployOptions: {
        stageName,
        tracingEnabled: true,
        metricsEnabled: true,
        loggingLevel: MethodLoggingLevel.ERROR,
        // Request and response bodies are tenants' data; keep them out of execution logs.
        dataTraceEnabled: false,
        throttlingRateLimit: stageRateLimit,
        throttlingBurstLimit: stageBurstLimit,
        accessLogDestination: new LogGroupLogDestination(this.accessLogGroup),
        accessLogFormat: AccessLogFormat.custom(
          JSON.stringify({
            requestId: AccessLogField.contextRequestId(),
            extendedRequestId: AccessLogField.contextExtendedRequestId(),
            requestTime: AccessLogField.contextRequestTime(),
            ip: AccessLogField.contextIdentitySourceIp(),
            userAgent: AccessLogField.contextIdentityUserAgent(),
            method: AccessLogField.contextHttpMethod(),
            resourcePath: AccessLogField.contextResourcePath(),
            path: AccessLogField.contextPath(),
            protocol: AccessLogField.contextProtocol(),
            status: AccessLogField.contextStatus(),
            responseLength: AccessLogField.contextResponseLength(),
            latency: AccessLogField.contextResponseLatency(),
            integrationLatency: AccessLogField.contextIntegrationLatency(),
            tenantId: AccessLogField.contextAuthorizer('tenantId'),
            usagePlanKeyId: AccessLogField.contextIdentityApiKeyId(),
            authorizerStatus: AccessLogField.contextAuthorizerStatus(),
            authorizerLatency: AccessLogField.contextAuthorizerLatency(),
            authorizerError: AccessLogField.contextAuthorizerError(),
            errorType: AccessLogField.contextErrorResponseType(),
            errorMessage: AccessLogField.contextErrorMessageString(),
            xrayTraceId: AccessLogField.contextXrayTraceId(),
          }),
        ),
      },
    });
    this.apiGatewayAccount = this.restApi.node.findChild('Account') as CfnAccount;
    // RestApi adds an `Endpoint` output ending in a slash; the stack's ApiUrl output replaces it.
    this.restApi.node.tryRemoveChild('Endpoint');
    const stage = this.restApi.deploymentStage;
    this.executionLogGroup = createExecutionLogGroup(this, 'ExecutionLogs', {
      apiId: this.restApi.restApiId,
      stageName,
      stage,
      retention: settings.logRetentionDays as RetentionDays,
    });
    this.url = `https://${this.restApi.restApiId}.execute-api.${Aws.REGION}.${Aws.URL_SUFFIX}/${stage.stageName}`;

    this.authorizer = new RequestAuthorizer(this, 'Authorizer', {
      handler: this.authorizerFunction.lambdaFunction,
      identitySources: [IdentitySource.header(API_KEY_HEADER)],
      resultsCacheTtl: Duration.seconds(settings.authorizerCacheSeconds),
    });

    // One integration for every route: the handler routes by resource path itself.
    const integration = new LambdaIntegration(this.apiFunction.lambdaFunction, { allowTestInvoke: false });
    const methods = new Map<string, Method>();
    for (const route of apiRoutes) {
      const key = `${route.method} ${route.path}`;
      const resource = this.restApi.root.resourceForPath(route.path);
      // Only a route explicitly marked `none` is open; every other kind (tenant,
      // and any role added later) goes through the API key authorizer.
      const method =
        route.auth === 'none'
          ? resource.addMethod(route.method, integration, { authorizationType: AuthorizationType.NONE })
          : resource.addMethod(route.method, integration, {
              authorizationType: AuthorizationType.CUSTOM,
              authorizer: this.authorizer,
              apiKeyRequired: true,
            });
      methods.set(key, method);
      if (route.auth === 'none') {
        acknowledge(
          method,
          'AwsSolutions-APIG4',
          `${key} has no gateway authorizer by design: ${'openBecause' in route ? route.openBecause : 'it is public'}.`,
        );
      }
      acknowledge(
        method,
        'AwsSolutions-COG4',
        route.auth === 'none'
          ? `${key} has no authorizer of any kind by design: ${'openBecause' in route ? route.openBecause : 'it is public'}.`
          : `${key} is called by programs holding a Longhaul API key (${route.auth} routes), not by users of a Cognito user pool; it is protected by the API key authorizer and the per-key usage plan.`,
      );
    }
    this.methods = methods;
    this.routeKeys = new Set(routeKeys);

    this.usagePlan = this.restApi.addUsagePlan('UsagePlan', {
      description: 'Per-tenant throttling: each tenant key gets this rate and burst.',
      throttle: { rateLimit: settings.apiRateLimit, burstLimit: settings.apiBurstLimit },
      apiStages: [{ api: this.restApi, stage }],
    });

    for (const [type, problem] of Object.entries(gatewayProblems) as [
      GatewayResponseType,
      (typeof gatewayProblems)[GatewayResponseType],
    ][]) {
      const body = JSON.stringify(problem);
      // The body is a Velocity template; these characters would be interpreted, not sent.
      if (/[$#]/.test(body)) {
        throw new Error(`HttpApi ${this.node.path}: gateway problem ${type} must not contain "$" or "#"`);
      }
      this.restApi.addGatewayResponse(`Gateway${type}`, {
        type: ResponseType.of(type),
        ...(FALLBACK_RESPONSES.has(type) ? {} : { statusCode: String(problem.status) }),
        responseHeaders: {
          'Content-Type': `'${PROBLEM_CONTENT_TYPE}'`,
          ...(RETRY_AFTER_RESPONSES.has(type)
            ? { 'Retry-After': `'${RATE_LIMIT_RETRY_AFTER_SECONDS}'` }
            : {}),
        },
        templates: { 'application/json': body },
      });
    }

    const every5Minutes = { period: Duration.minutes(5), statistic: 'Sum' } as const;
    this.serverErrorRate = new MathExpression({
      expression: '100 * serverErrors / requests',
      usingMetrics: {
        serverErrors: stage.metricServerError(every5Minutes),
        requests: stage.metricCount(every5Minutes),
      },
      period: Duration.minutes(5),
      label: '5xx responses (% of requests)',
    });
    // A rate, not a count: a busy hour with a handful of 5xx is fine, a quiet one
    // where every request fails is not. The gateway's own 5xx (an authorizer or
    // integration failure) count as well as the handler's.
    this.serverErrorRateAlarm = this.serverErrorRate.createAlarm(this, 'ServerErrorRateAlarm', {
      alarmDescription: `At least ${settings.alarmApi5xxPercent}% of Longhaul API requests in 5 minutes were answered with a 5xx. Check the api function's errors and logs, and the access log's errorType.`,
      threshold: settings.alarmApi5xxPercent,
      evaluationPeriods: 1,
      comparisonOperator: ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
      // No requests, no rate.
      treatMissingData: TreatMissingData.NOT_BREACHING,
    });
    props.alarms.notify(this.serverErrorRateAlarm);

    acknowledge(
      this.restApi,
      'AwsSolutions-APIG2',
      "The api handler validates every request with zod and answers RFC 9457 problems with the contract's codes (e.g. idempotency-key-missing); gateway request validation would answer a generic 400 first.",
    );
    acknowledge(
      stage,
      'AwsSolutions-APIG3',
      'No WAF web ACL is created here: every tenant route needs an API key checked by the authorizer and is throttled per tenant by the usage plan and per stage. Deployers who need WAF rules associate their own web ACL with this stage.',
    );
    const cloudWatchRole = this.restApi.node.tryFindChild('CloudWatchRole');
    if (cloudWatchRole) {
      acknowledge(
        cloudWatchRole,
        'AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AmazonAPIGatewayPushToCloudWatchLogs]',
        "API Gateway's account-wide logging role: AWS publishes AmazonAPIGatewayPushToCloudWatchLogs for exactly this role, and execution logs go to the log groups API Gateway names after each stage (created by this stack, with retention).",
      );
    }
  }

  /** Full URL of a route this API serves, e.g. the provider webhook endpoint; throws for a route it does not serve. */
  public routeUrl(route: RouteKey): string {
    if (!this.routeKeys.has(route))
      throw new Error(`HttpApi ${this.node.path}: route ${route} is not served`);
    return `${this.url}${route.slice(route.indexOf(' ') + 1)}`;
  }
}
