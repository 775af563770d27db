import { ArnFormat, Duration, RemovalPolicy, Stack } from 'aws-cdk-lib';
import { AccessLogField, AccessLogFormat } from 'aws-cdk-lib/aws-apigateway';
import {
  type CfnStage,
  LogGroupLogDestination,
  WebSocketApi,
  WebSocketStage,
} from 'aws-cdk-lib/aws-apigatewayv2';
import { WebSocketLambdaIntegration } from 'aws-cdk-lib/aws-apigatewayv2-integrations';
import type { ITable, Table } from 'aws-cdk-lib/aws-dynamodb';
import { PolicyStatement } from 'aws-cdk-lib/aws-iam';
import { LogGroup, type RetentionDays } from 'aws-cdk-lib/aws-logs';
import { Construct, type IDependable } from 'constructs';
import { connectionTable, resourceEnv } from '../../config/layout';
import type { Settings } from '../../config/settings';
import { handlerEntry } from '../handlers';
import { acknowledge, iam5ResourceFinding } from '../nag';
import { createExecutionLogGroup } from './execution-log-group';
import { layoutTable } from './layout-table';
import { ProjectFunction } from './project-function';

const [byJob] = connectionTable.indexes;

/**
 * Why each route goes without a gateway authorizer. `$connect` could have a
 * Lambda REQUEST authorizer (API Gateway allows one there, and only there);
 * it has none because the credential, a stream ticket, is worth checking only
 * together with the job it names, which the stream handler reads anyway: an
 * authorizer would be a second invocation and a second read for every
 * connection, and its cache (keyed by the ticket) would outlive a ticket's
 * one-minute life for nothing.
 */
const ROUTES = {
  $connect:
    "Deliberately no authorizer (one is possible on $connect): the stream handler admits a connection only with an unexpired stream ticket (stored hashed, scoped to one job and tenant) or, for compatibility, a tenant API key whose tenant owns the job; it refuses the admin key (403), unknown or expired credentials (401) and other tenants' jobs (404) before anything is stored.",
  $disconnect:
    'API Gateway allows an authorizer on $connect only; $disconnect belongs to a connection the stream handler already admitted, and it only deletes that connection’s own subscription.',
  $default:
    'API Gateway allows an authorizer on $connect only; $default receives messages (keep-alive pings) on a connection the stream handler already admitted, and the handler ignores them.',
} as const;

export interface LiveProgressProps {
  /** Longhaul settings: the stream handler's environment and the log retention. */
  readonly settings: Settings;
  /** The job table; the stream handler reads single jobs to check their tenant. */
  readonly jobTable: ITable;
  /** The API key table; the stream handler reads single keys to admit a connection. */
  readonly apiKeyTable: ITable;

  /**
   * API Gateway's account settings naming its CloudWatch Logs role
   * (`AWS::ApiGateway::Account`, created with the REST API). API Gateway refuses
   * to create a logging stage while that role is unset, so the stage waits for it.
   * @default - none: the account's role must already be set
   */
  readonly apiGatewayAccount?: IDependable;

  /**
   * Name of the stage, the last segment of the stream URL.
   * @default 'live'
   */
  readonly stageName?: string;

  /**
   * Steady messages per second (connects included) the stage accepts from all clients together.
   * @default 100
   */
  readonly rateLimit?: number;

  /**
   * Burst of messages the stage accepts from all clients together.
   * @default 200
   */
  readonly burstLimit?: number;

  /**
   * What happens to the connection table when it leaves the stack. It only holds
   * live subscriptions, which expire within hours on their own and which clients
   * recreate by reconnecting; the jobs themselves are in the job table. Keeping an
   * orphaned copy would protect nothing.
   * @default RemovalPolicy.DESTROY
   */
  readonly removalPolicy?: RemovalPolicy;

  /**
   * Entry file of the stream handler.
   * @default lambdas/stream/handler.ts
   */
  readonly entry?: string;
}

/**
 * Live progress over WebSocket: an API Gateway WebSocket API whose `$connect`,
 * `$disconnect` and `$default` routes all go to one stream handler, which
 * admits a client to one job's updates and keeps one item per connection in the
 * connection table. Functions that move jobs get the right to push to those
 * connections with `grantPublish`.
 *
 * The stage logs access (JSON, without the query string, which carries the
 * stream ticket) and errors, and throttles all routes together. WebSocket APIs cannot be
 * traced with X-Ray; the handlers' own traces start at the Lambda invocation.
 */
export class LiveProgress extends Construct {
  /** One item per connection (`connectionId`), found by job through the `byJob` index; items expire by `expiresAt`. */
  public readonly connectionTable: Table;
  /** Admits, forgets and ignores clients: every route's integration. */
  public readonly streamFunction: ProjectFunction;
  /** The WebSocket API. */
  public readonly webSocketApi: WebSocketApi;
  /** The stage clients connect to. */
  public readonly stage: WebSocketStage;
  /** Access log of the stage, one JSON line per connect, message and disconnect. */
  public readonly accessLogGroup: LogGroup;
  /** `wss://` URL clients connect to (with `?ticket=…` from POST /v1/jobs/{id}/stream-ticket). */
  public readonly url: string;
  /** `https://` management endpoint through which functions push to connections (`@connections`). */
  public readonly callbackUrl: string;

  private readonly manageConnectionsArn: string;

  constructor(scope: Construct, id: string, props: LiveProgressProps) {
    super(scope, id);
    const { settings } = props;
    const stageName = props.stageName ?? 'live';
    if (!/^[A-Za-z0-9_]+$/.test(stageName)) {
      throw new Error(
        `LiveProgress ${this.node.path}: stageName must contain only letters, digits and underscores, got ${JSON.stringify(stageName)}`,
      );
    }
    const rateLimit = props.rateLimit ?? 100;
    const burstLimit = props.burstLimit ?? 200;
    if (!(rateLimit > 0) || !Number.isInteger(burstLimit) || burstLimit < 1) {
      throw new Error(
        `LiveProgress ${this.node.path}: rateLimit must be positive and burstLimit a positive integer, got ${rateLimit} and ${burstLimit}`,
      );
    }

    this.connectionTable = layoutTable(this, 'ConnectionTable', connectionTable, {
      removalPolicy: props.removalPolicy ?? RemovalPolicy.DESTROY,
      // Protection would only block the removal the policy above allows.
      deletionProtection: false,
    });

    this.streamFunction = new ProjectFunction(this, 'StreamFunction', {
      entry: props.entry ?? handlerEntry('stream'),
      settings,
      serviceName: 'stream',
      description: 'Longhaul live progress: admits WebSocket clients to one job’s updates',
      timeout: Duration.seconds(10),
    })
      .useTable('apiKeyTable', props.apiKeyTable, 'getItem')
      .useTable('jobTable', props.jobTable, 'getItem')
      .useTable('connectionTable', this.connectionTable, 'itemReadWrite');

    const integration = new WebSocketLambdaIntegration('Stream', this.streamFunction.lambdaFunction);
    this.webSocketApi = new WebSocketApi(this, 'WebSocketApi', {
      apiName: `${Stack.of(this).stackName}-live`,
      description: 'Longhaul live job progress',
      connectRouteOptions: { integration },
      disconnectRouteOptions: { integration },
      defaultRouteOptions: { integration },
    });

    this.accessLogGroup = new LogGroup(this, 'AccessLogs', {
      retention: settings.logRetentionDays as RetentionDays,
      removalPolicy: RemovalPolicy.RETAIN,
    });
    this.stage = new WebSocketStage(this, 'Stage', {
      webSocketApi: this.webSocketApi,
      stageName,
      autoDeploy: true,
      description: 'Live job progress',
      throttle: { rateLimit, burstLimit },
      accessLogSettings: {
        destination: new LogGroupLogDestination(this.accessLogGroup),
        format: AccessLogFormat.custom(
          JSON.stringify({
            requestId: AccessLogField.contextRequestId(),
            extendedRequestId: AccessLogField.contextExtendedRequestId(),
            requestTime: AccessLogField.contextRequestTime(),
            ip: AccessLogField.contextIdentitySourceIp(),
            userAgent: AccessLogField.contextIdentityUserAgent(),
            eventType: AccessLogField.contextEventType(),
            routeKey: AccessLogField.contextRouteKey(),
            connectionId: AccessLogField.contextConnectionId(),
            status: AccessLogField.contextStatus(),
            integrationLatency: AccessLogField.contextIntegrationLatency(),
            errorType: AccessLogField.contextErrorResponseType(),
            errorMessage: AccessLogField.contextErrorMessage(),
          }),
        ),
      },
    });
    // Execution logs at ERROR, without message bodies, as on the REST API.
    const cfnStage = this.stage.node.defaultChild as CfnStage;
    cfnStage.addPropertyOverride('DefaultRouteSettings.LoggingLevel', 'ERROR');
    cfnStage.addPropertyOverride('DefaultRouteSettings.DataTraceEnabled', false);
    createExecutionLogGroup(this, 'ExecutionLogs', {
      apiId: this.webSocketApi.apiId,
      stageName,
      stage: this.stage,
      retention: settings.logRetentionDays as RetentionDays,
    });
    if (props.apiGatewayAccount) this.stage.node.addDependency(props.apiGatewayAccount);

    this.url = this.stage.url;
    this.callbackUrl = this.stage.callbackUrl;
    this.manageConnectionsArn = Stack.of(this).formatArn({
      service: 'execute-api',
      resource: this.webSocketApi.apiId,
      resourceName: `${stageName}/POST/@connections/*`,
      arnFormat: ArnFormat.SLASH_RESOURCE_NAME,
    });

    for (const [routeKey, reason] of Object.entries(ROUTES)) {
      const route = this.webSocketApi.node.tryFindChild(`${routeKey}-Route`);
      if (!route) throw new Error(`LiveProgress ${this.node.path}: route ${routeKey} was not created`);
      acknowledge(route, 'AwsSolutions-APIG4', reason);
    }
  }

  /**
   * Lets `fn` push live messages to the clients watching a job: it may find a
   * job's connections (Query on the `byJob` index), post to them through this
   * stage's management endpoint, and delete the subscription of a connection
   * that is gone. Sets CONNECTION_TABLE_NAME, STREAM_CALLBACK_URL and
   * STREAM_URL (which the api handler hands out with stream tickets).
   */
  public grantPublish(fn: ProjectFunction): void {
    fn.role.addToPrincipalPolicy(
      new PolicyStatement({
        actions: ['execute-api:ManageConnections'],
        resources: [this.manageConnectionsArn],
      }),
    );
    fn.role.addToPrincipalPolicy(
      new PolicyStatement({
        actions: ['dynamodb:Query'],
        resources: [`${this.connectionTable.tableArn}/index/${byJob.name}`],
      }),
    );
    fn.role.addToPrincipalPolicy(
      new PolicyStatement({ actions: ['dynamodb:DeleteItem'], resources: [this.connectionTable.tableArn] }),
    );
    acknowledge(
      fn.role,
      iam5ResourceFinding(fn, this.manageConnectionsArn, ''),
      'Connection ids are made by API Gateway at connect time, so posting is granted on every connection ("@connections/*") of this one WebSocket API and stage, and only with POST (sending a message), not GET or DELETE.',
    );
    fn.setResourceEnv('connectionTable', this.connectionTable.tableName);
    fn.setResourceEnv('streamCallbackUrl', this.callbackUrl);
    fn.lambdaFunction.addEnvironment(resourceEnv.streamUrl, this.url);
  }
}
