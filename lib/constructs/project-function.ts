import { ArnFormat, type Duration, IgnoreMode, RemovalPolicy, Size, Stack } from 'aws-cdk-lib';
import type { ITable } from 'aws-cdk-lib/aws-dynamodb';
import { Platform } from 'aws-cdk-lib/aws-ecr-assets';
import {
  type IGrantable,
  type IPrincipal,
  type IRole,
  Policy,
  PolicyStatement,
  Role,
  ServicePrincipal,
} from 'aws-cdk-lib/aws-iam';
import {
  Architecture,
  DockerImageCode,
  DockerImageFunction,
  type FunctionOptions,
  type Function as LambdaFunction,
  Tracing,
} from 'aws-cdk-lib/aws-lambda';
import { NodejsFunction } from 'aws-cdk-lib/aws-lambda-nodejs';
import { LogGroup, type RetentionDays } from 'aws-cdk-lib/aws-logs';
import type { IBucket } from 'aws-cdk-lib/aws-s3';
import type { ISecret } from 'aws-cdk-lib/aws-secretsmanager';
import type { IQueue } from 'aws-cdk-lib/aws-sqs';
import type { IStateMachine, StateMachine } from 'aws-cdk-lib/aws-stepfunctions';
import { Construct } from 'constructs';
import { EMBEDDING_MODELS, type EmbeddingModelName } from '../../config/embedding-models';
import { jobQueueEnv, providerSecretEnv, resourceEnv } from '../../config/layout';
import type { ProviderName } from '../../config/providers';
import { type Settings, settingsEnvironment } from '../../config/settings';
import { HANDLER_BUNDLING, HANDLER_NODE_OPTIONS, HANDLER_RUNTIME } from '../bundling';
import { DEPS_LOCK_FILE, REPO_ROOT } from '../handlers';
import { acknowledge, acknowledgeActionsOnAnyResource, iam5ResourceFinding } from '../nag';
import type { LifecycleEventBus } from './event-bus';
import type { SearchIndex, SearchIndexAccess } from './search-index';

/** Resources a handler learns through `resourceEnv` (config/layout.ts), by kind. */
export type TableEnvKey = Extract<keyof typeof resourceEnv, 'jobTable' | 'apiKeyTable' | 'connectionTable'>;
export type QueueEnvKey = Extract<keyof typeof resourceEnv, 'handOffQueueUrl'>;
/** Queues a handler names by ARN: the two ends of a dead-letter redrive. */
export type QueueArnEnvKey = Extract<keyof typeof resourceEnv, 'deadLetterQueueArn' | 'jobQueueArn'>;
export type BucketEnvKey = Extract<keyof typeof resourceEnv, 'inputBucket' | 'outputBucket'>;
export type SecretEnvKey = Extract<keyof typeof resourceEnv, 'webhookSecretArn'>;
export type StateMachineEnvKey = Extract<keyof typeof resourceEnv, 'stateMachineArn'>;
/** Addresses a handler is told about but needs no permission for. */
export type UrlEnvKey = Extract<keyof typeof resourceEnv, 'providerEventsUrl' | 'streamCallbackUrl'>;
export type ResourceEnvKey =
  | TableEnvKey
  | QueueEnvKey
  | QueueArnEnvKey
  | BucketEnvKey
  | SecretEnvKey
  | StateMachineEnvKey
  | UrlEnvKey;

/**
 * What a function may do with a table: `getItem` (point reads of the base table
 * only), `itemReadUpdate` (point reads, puts and updates of single items of the
 * base table: no deletes, queries, scans or indexes), `itemReadWrite` (reads
 * and writes of single items of the base table, deletes included), `read`
 * (reads, queries and scans, indexes included) or `readWrite`.
 */
export type TableAccess = 'getItem' | 'itemReadUpdate' | 'itemReadWrite' | 'read' | 'readWrite';
/** What a function may do with a queue: `send` messages, or `consume` them. */
export type QueueAccess = 'send' | 'consume';
/**
 * What a function may do with a bucket's objects: `read` (GetObject),
 * `readWrite` (GetObject, PutObject), `readWriteDelete` (those, DeleteObject,
 * and ListBucket on the bucket: deleting by prefix lists the keys first) or
 * `readDelete` (the same without PutObject: a sweep that only removes).
 */
/** `delete`: DeleteObject alone, for a handler that removes objects it never reads (a media item's uploads). */
export type BucketAccess = 'read' | 'readWrite' | 'readWriteDelete' | 'readDelete' | 'delete';

/** Environment variables ProjectFunction sets itself; `environment` may not override them. */
const OWN_ENV_PREFIXES = ['POWERTOOLS_', 'NODE_OPTIONS'] as const;

/**
 * A container image built from a Dockerfile target (for arm64), for a handler
 * that needs what a zip cannot carry: ffmpeg built for arm64, which only an
 * arm64 build installs. The image must run the handler on the Lambda Node.js
 * base image; its `CMD` names the handler.
 */
export interface ProjectFunctionImage {
  /** Absolute path of the build context. */
  readonly directory: string;
  /** The Dockerfile, relative to `directory`. */
  readonly file: string;
  /** The Dockerfile's build target (stage) that is the function's image. */
  readonly target: string;
  /**
   * What of `directory` is not sent to Docker, in Docker's ignore syntax: a
   * synthesis copies the rest into the cloud assembly.
   */
  readonly exclude: readonly string[];
}

export interface ProjectFunctionProps {
  /**
   * Absolute path of the handler's entry file, bundled with esbuild into a zip;
   * see `handlerEntry()` in lib/handlers.ts. Exactly one of `entry` and `image`.
   * @default - none: `image` is the code
   */
  readonly entry?: string;

  /**
   * A container image as the function's code instead of a bundle of `entry`.
   * `cdk synth` only stages its build context; `cdk deploy` builds it.
   * @default - none: `entry` is bundled
   */
  readonly image?: ProjectFunctionImage;

  /**
   * Name of the exported handler function in `entry`; not for `image`, whose `CMD` names it.
   * @default 'handler'
   */
  readonly handler?: string;

  /** Longhaul settings: handed to the function as its environment, and the source of its log retention. */
  readonly settings: Settings;

  /** Longest a single invocation may run. Required: every function states its own, there is no safe default. */
  readonly timeout: Duration;

  /**
   * Memory in MB; CPU grows with it.
   * @default 512
   */
  readonly memorySize?: number;

  /**
   * Size of the function's `/tmp`, in MB (512 to 10240): a compute step keeps its
   * input and what it makes there.
   * @default 512
   */
  readonly ephemeralStorageMb?: number;

  /**
   * Concurrent executions reserved for the function, which also caps them: a
   * burst of its events cannot take the account's whole concurrency.
   * @default - none: the function shares the account's unreserved concurrency
   */
  readonly reservedConcurrency?: number;

  /** Powertools service name: the `service` of every log line, metric and trace of this function. */
  readonly serviceName: string;

  /**
   * Description of the function shown in the console.
   * @default - none
   */
  readonly description?: string;

  /**
   * Extra environment variables. Resource names are set with the `use*` methods
   * instead, so a grant and the variable that points at the resource never drift apart.
   * @default - none
   */
  readonly environment?: Readonly<Record<string, string>>;
}

/**
 * A Node.js Lambda function with Longhaul's fixed defaults: Node 24 on arm64,
 * active X-Ray tracing, minified bundles with source maps, the AWS SDK taken from
 * the runtime (or a container image, see `image`), its own log group (retained, with the configured retention) and its
 * own role whose only built-in permission is writing to that log group.
 *
 * Resources are attached with `useTable`, `useTableIndex`, `useQueue`, `useJobQueues`, `useBucket`, `useSecret`,
 * `useStateMachine`, `useDeadLetterRedrive`, `useSearchIndex` and `useEventBus`, which grant the access and set the
 * handler's environment variables in one step; `useUrl` sets an address that
 * needs no permission.
 */
export class ProjectFunction extends Construct implements IGrantable {
  /** The Lambda function: a bundle of `entry` (a NodejsFunction), or a DockerImageFunction of `image`. */
  public readonly lambdaFunction: LambdaFunction;
  /** The function's execution role. */
  public readonly role: Role;
  /** The function's log group. */
  public readonly logGroup: LogGroup;
  /** Powertools service name: the `service` dimension of every metric the function emits. */
  public readonly serviceName: string;

  constructor(scope: Construct, id: string, props: ProjectFunctionProps) {
    super(scope, id);
    const timeoutSeconds = props.timeout.toSeconds();
    if (!Number.isInteger(timeoutSeconds) || timeoutSeconds < 1 || timeoutSeconds > 900) {
      throw new Error(
        `ProjectFunction ${this.node.path}: timeout must be a whole number of seconds from 1 to 900, got ${timeoutSeconds}`,
      );
    }
    const memorySize = props.memorySize ?? 512;
    if (!Number.isInteger(memorySize) || memorySize < 128 || memorySize > 10_240) {
      throw new Error(
        `ProjectFunction ${this.node.path}: memorySize must be an integer from 128 to 10240 MB, got ${memorySize}`,
      );
    }
    const ephemeralStorageMb = props.ephemeralStorageMb ?? 512;
    if (!Number.isInteger(ephemeralStorageMb) || ephemeralStorageMb < 512 || ephemeralStorageMb > 10_240) {
      throw new Error(
        `ProjectFunction ${this.node.path}: ephemeralStorageMb must be an integer from 512 to 10240 MB, got ${ephemeralStorageMb}`,
      );
    }
    if (
      props.reservedConcurrency !== undefined &&
      !(Number.isInteger(props.reservedConcurrency) && props.reservedConcurrency >= 1)
    ) {
      throw new Error(
        `ProjectFunction ${this.node.path}: reservedConcurrency must be a positive integer, got ${props.reservedConcurrency}`,
      );
    }
    if ((props.entry === undefined) === (props.image === undefined)) {
      throw new Error(`ProjectFunction ${this.node.path}: exactly one of entry and image must be given`);
    }
    if (props.image !== undefined && props.handler !== undefined) {
      throw new Error(
        `ProjectFunction ${this.node.path}: handler applies to entry only; an image's CMD names its handler`,
      );
    }
    if (props.serviceName.trim() === '') {
      throw new Error(`ProjectFunction ${this.node.path}: serviceName must not be empty`);
    }
    this.serviceName = props.serviceName;
    const ownNames = new Set([
      ...Object.keys(settingsEnvironment(props.settings)),
      ...Object.values(resourceEnv),
    ]);
    for (const name of Object.keys(props.environment ?? {})) {
      if (ownNames.has(name) || OWN_ENV_PREFIXES.some((prefix) => name.startsWith(prefix))) {
        throw new Error(
          `ProjectFunction ${this.node.path}: environment variable ${name} is managed by ProjectFunction; ` +
            'settings come from the settings prop and resource names from the use* methods',
        );
      }
    }

    this.logGroup = new LogGroup(this, 'LogGroup', {
      retention: props.settings.logRetentionDays as RetentionDays,
      removalPolicy: RemovalPolicy.RETAIN,
    });

    // An own role instead of the default one: the default attaches the managed
    // AWSLambdaBasicExecutionRole, which may write to every log group in the account.
    this.role = new Role(this, 'Role', {
      assumedBy: new ServicePrincipal('lambda.amazonaws.com'),
      description: `Execution role of ${this.node.path}`,
    });
    this.role.addToPrincipalPolicy(
      new PolicyStatement({
        actions: ['logs:CreateLogStream', 'logs:PutLogEvents'],
        resources: [this.logGroup.logGroupArn],
      }),
    );

    const options: FunctionOptions = {
      architecture: Architecture.ARM_64,
      tracing: Tracing.ACTIVE,
      timeout: props.timeout,
      memorySize,
      ...(props.ephemeralStorageMb === undefined
        ? {}
        : { ephemeralStorageSize: Size.mebibytes(ephemeralStorageMb) }),
      ...(props.reservedConcurrency === undefined
        ? {}
        : { reservedConcurrentExecutions: props.reservedConcurrency }),
      role: this.role,
      logGroup: this.logGroup,
      description: props.description,
      environment: {
        ...settingsEnvironment(props.settings),
        POWERTOOLS_SERVICE_NAME: props.serviceName,
        POWERTOOLS_METRICS_NAMESPACE: 'Longhaul',
        POWERTOOLS_LOG_LEVEL: 'INFO',
        NODE_OPTIONS: HANDLER_NODE_OPTIONS,
        ...props.environment,
      },
    };
    this.lambdaFunction = props.image
      ? new DockerImageFunction(this, 'Function', {
          ...options,
          code: DockerImageCode.fromImageAsset(props.image.directory, {
            file: props.image.file,
            target: props.image.target,
            platform: Platform.LINUX_ARM64,
            exclude: [...props.image.exclude],
            ignoreMode: IgnoreMode.DOCKER,
          }),
        })
      : new NodejsFunction(this, 'Function', {
          ...options,
          entry: props.entry,
          handler: props.handler ?? 'handler',
          projectRoot: REPO_ROOT,
          depsLockFilePath: DEPS_LOCK_FILE,
          runtime: HANDLER_RUNTIME,
          bundling: { ...HANDLER_BUNDLING, externalModules: [...HANDLER_BUNDLING.externalModules] },
        });

    acknowledgeActionsOnAnyResource(
      this.role,
      ['xray:PutTraceSegments', 'xray:PutTelemetryRecords'],
      'Active X-Ray tracing needs xray:PutTraceSegments and xray:PutTelemetryRecords, which support no resource-level permissions, so they are granted on "*". Every other statement of this policy names its resources.',
    );
  }

  public get grantPrincipal(): IPrincipal {
    return this.role;
  }

  /** Sets the environment variable through which the handler finds a resource (see `resourceEnv` in config/layout.ts). */
  public setResourceEnv(key: ResourceEnvKey, value: string): this {
    this.lambdaFunction.addEnvironment(resourceEnv[key], value);
    return this;
  }

  /** Grants `access` to `table` and sets the handler's `resourceEnv[key]` to its name. */
  public useTable(key: TableEnvKey, table: ITable, access: TableAccess): this {
    switch (access) {
      case 'getItem':
        // Point reads on the base table only; `grant()` would also cover every index.
        this.role.addToPrincipalPolicy(
          new PolicyStatement({ actions: ['dynamodb:GetItem'], resources: [table.tableArn] }),
        );
        table.encryptionKey?.grantDecrypt(this.role);
        break;
      case 'itemReadUpdate':
      case 'itemReadWrite':
        this.role.addToPrincipalPolicy(
          new PolicyStatement({
            actions: [
              'dynamodb:GetItem',
              'dynamodb:PutItem',
              'dynamodb:UpdateItem',
              ...(access === 'itemReadWrite' ? ['dynamodb:DeleteItem'] : []),
            ],
            resources: [table.tableArn],
          }),
        );
        table.encryptionKey?.grantEncryptDecrypt(this.role);
        break;
      case 'read':
        table.grantReadData(this.role);
        this.acknowledgeIndexWildcard(table);
        break;
      case 'readWrite':
        table.grantReadWriteData(this.role);
        this.acknowledgeIndexWildcard(table);
        break;
    }
    return this.setResourceEnv(key, table.tableName);
  }

  /**
   * Lets the handler query one index of `table` and nothing else of it (no
   * item of the table, no other index), and sets the handler's
   * `resourceEnv[key]` to the table's name.
   */
  public useTableIndex(key: TableEnvKey, table: ITable, indexName: string): this {
    this.role.addToPrincipalPolicy(
      new PolicyStatement({
        actions: ['dynamodb:Query'],
        resources: [`${table.tableArn}/index/${indexName}`],
      }),
    );
    table.encryptionKey?.grantDecrypt(this.role);
    return this.setResourceEnv(key, table.tableName);
  }

  /** Grants `access` to `queue` and sets the handler's `resourceEnv[key]` to its URL. */
  public useQueue(key: QueueEnvKey, queue: IQueue, access: QueueAccess): this {
    if (access === 'send') queue.grantSendMessages(this.role);
    else queue.grantConsumeMessages(this.role);
    return this.setResourceEnv(key, queue.queueUrl);
  }

  /** Grants `access` to each provider's jobs queue and sets `jobQueueEnv(provider)` to its URL. */
  public useJobQueues(queues: Readonly<Record<ProviderName, IQueue>>, access: QueueAccess): this {
    for (const [provider, queue] of Object.entries(queues)) {
      if (access === 'send') queue.grantSendMessages(this.role);
      else queue.grantConsumeMessages(this.role);
      this.lambdaFunction.addEnvironment(jobQueueEnv(provider), queue.queueUrl);
    }
    return this;
  }

  /** Grants `access` to the objects of `bucket` and sets the handler's `resourceEnv[key]` to its name. */
  public useBucket(key: BucketEnvKey, bucket: IBucket, access: BucketAccess): this {
    const actions = {
      read: ['s3:GetObject'],
      readWrite: ['s3:GetObject', 's3:PutObject'],
      readWriteDelete: ['s3:GetObject', 's3:PutObject', 's3:DeleteObject'],
      delete: ['s3:DeleteObject'],
      readDelete: ['s3:GetObject', 's3:DeleteObject'],
    }[access];
    this.role.addToPrincipalPolicy(new PolicyStatement({ actions, resources: [bucket.arnForObjects('*')] }));
    if (access === 'readWriteDelete' || access === 'readDelete') {
      this.role.addToPrincipalPolicy(
        new PolicyStatement({ actions: ['s3:ListBucket'], resources: [bucket.bucketArn] }),
      );
    }
    if (bucket.encryptionKey && access !== 'delete') {
      if (access === 'read' || access === 'readDelete') bucket.encryptionKey.grantDecrypt(this.role);
      else bucket.encryptionKey.grantEncryptDecrypt(this.role);
    }
    acknowledge(
      this.role,
      iam5ResourceFinding(this, bucket.bucketArn, '/*'),
      'Object keys are chosen at run time (one per job input or upload), so object access is granted on every key of this one bucket; the bucket itself and every other bucket stay out of reach.',
    );
    return this.setResourceEnv(key, bucket.bucketName);
  }

  /**
   * Grants `access` to the passage index (see `SearchIndex`) and sets the
   * handler's VECTOR_BUCKET_NAME and VECTOR_INDEX_NAME to its bucket's and its own name.
   */
  public useSearchIndex(index: SearchIndex, access: SearchIndexAccess): this {
    index.grantAccess(this.role, access);
    this.lambdaFunction.addEnvironment(resourceEnv.vectorBucketName, index.vectorBucketName);
    this.lambdaFunction.addEnvironment(resourceEnv.vectorIndexName, index.indexName);
    return this;
  }

  /**
   * Lets the handler put lifecycle events on the deployment's bus (`events:PutEvents`
   * on that bus alone) and sets EVENT_BUS_NAME to its name.
   */
  public useEventBus(bus: LifecycleEventBus): this {
    bus.grantPut(this.role);
    this.lambdaFunction.addEnvironment(resourceEnv.eventBusName, bus.eventBusName);
    return this;
  }

  /**
   * Lets the handler move what `deadLetterQueue` holds back to `destination`
   * with SQS's message move task, and sets DEAD_LETTER_QUEUE_ARN and
   * JOB_QUEUE_ARN to their ARNs. SQS requires the caller of StartMessageMoveTask
   * to hold, besides that action, ReceiveMessage, DeleteMessage and
   * GetQueueAttributes on the dead-letter queue and SendMessage on the
   * destination; each is granted on its own queue only.
   */
  public useDeadLetterRedrive(deadLetterQueue: IQueue, destination: IQueue): this {
    this.role.addToPrincipalPolicy(
      new PolicyStatement({
        actions: [
          'sqs:StartMessageMoveTask',
          'sqs:ReceiveMessage',
          'sqs:DeleteMessage',
          'sqs:GetQueueAttributes',
        ],
        resources: [deadLetterQueue.queueArn],
      }),
    );
    this.role.addToPrincipalPolicy(
      new PolicyStatement({ actions: ['sqs:SendMessage'], resources: [destination.queueArn] }),
    );
    deadLetterQueue.encryptionMasterKey?.grantDecrypt(this.role);
    destination.encryptionMasterKey?.grantEncrypt(this.role);
    this.setResourceEnv('deadLetterQueueArn', deadLetterQueue.queueArn);
    return this.setResourceEnv('jobQueueArn', destination.queueArn);
  }

  /**
   * Grants reading the current value of `secret` (GetSecretValue only, which is all
   * a cached secret lookup calls) and sets the handler's `resourceEnv[key]` to its ARN.
   */
  public useSecret(key: SecretEnvKey, secret: ISecret): this {
    this.grantSecretRead(secret);
    return this.setResourceEnv(key, secret.secretArn);
  }

  /** Grants reading each provider's secret and sets `providerSecretEnv(provider)` to its ARN. */
  public useProviderSecrets(secrets: Readonly<Record<ProviderName, ISecret>>): this {
    for (const [provider, secret] of Object.entries(secrets)) {
      this.grantSecretRead(secret);
      this.lambdaFunction.addEnvironment(providerSecretEnv(provider), secret.secretArn);
    }
    return this;
  }

  /**
   * Grants invoking the deployment's embedding model (`EMBEDDING_MODEL`) and
   * nothing else of Bedrock: `bedrock:InvokeModel` on that one foundation
   * model in the stack's Region. The model must be enabled for the account in
   * the Bedrock console (model access) before the first call.
   */
  public useEmbeddingModel(settings: Pick<Settings, 'embeddingModel'>): this {
    const { modelId } = EMBEDDING_MODELS[settings.embeddingModel as EmbeddingModelName];
    const stack = Stack.of(this);
    this.role.addToPrincipalPolicy(
      new PolicyStatement({
        actions: ['bedrock:InvokeModel'],
        resources: [`arn:${stack.partition}:bedrock:${stack.region}::foundation-model/${modelId}`],
      }),
    );
    return this;
  }

  private grantSecretRead(secret: ISecret): void {
    this.role.addToPrincipalPolicy(
      new PolicyStatement({ actions: ['secretsmanager:GetSecretValue'], resources: [secret.secretArn] }),
    );
    secret.encryptionKey?.grantDecrypt(this.role);
  }

  /**
   * Grants starting executions of `stateMachine` (and nothing else on it) and sets
   * the handler's `resourceEnv[key]` to its ARN.
   */
  public useStateMachine(key: StateMachineEnvKey, stateMachine: IStateMachine): this {
    stateMachine.grantStartExecution(this.role);
    return this.setResourceEnv(key, stateMachine.stateMachineArn);
  }

  /**
   * Grants reading the history of `stateMachine`'s executions, where a job's
   * steps are recorded, and with `redrive` redriving them (a client's resume
   * of its failed job) and describing them (a redrive refused while the
   * execution still runs its failure path looks at whether it runs), and
   * nothing else on them; sets the handler's
   * `resourceEnv[key]` to its ARN. Executions are named after jobs at run
   * time, so the grant covers every execution of this one state machine.
   */
  public useExecutionHistory(
    key: StateMachineEnvKey,
    stateMachine: StateMachine,
    options: { readonly redrive?: boolean } = {},
  ): this {
    const executions = executionsOf(this, stateMachine);
    this.role.addToPrincipalPolicy(
      new PolicyStatement({
        actions: [
          'states:GetExecutionHistory',
          ...(options.redrive ? ['states:RedriveExecution', 'states:DescribeExecution'] : []),
        ],
        resources: [executions],
      }),
    );
    acknowledge(
      this.role,
      iam5ResourceFinding(this, executions, ''),
      `Executions are named after their job at run time, so reading a job's step history${options.redrive ? ' and redriving its failed execution (a resume), and describing it, is' : ' is'} granted on every execution (":*") of this one state machine, and on nothing else of it.`,
    );
    return this.setResourceEnv(key, stateMachine.stateMachineArn);
  }

  /** Sets the handler's `resourceEnv[key]` to an address it calls or hands out; no permission goes with it. */
  /**
   * Lets the handler keep one EventBridge Scheduler schedule per tenant
   * schedule in `group` (create, update, delete; nothing else and no other
   * group), each invoking `target` with `role`, which only Scheduler may be
   * passed, and sets the variables naming all four.
   */
  public useScheduleTriggers(triggers: {
    readonly groupName: string;
    readonly groupSchedulesArn: string;
    readonly targetArn: string;
    readonly role: IRole;
    readonly deadLetterQueueArn: string;
  }): this {
    this.lambdaFunction.addEnvironment(resourceEnv.scheduleGroup, triggers.groupName);
    this.lambdaFunction.addEnvironment(resourceEnv.scheduleTargetArn, triggers.targetArn);
    this.lambdaFunction.addEnvironment(resourceEnv.scheduleRoleArn, triggers.role.roleArn);
    this.lambdaFunction.addEnvironment(resourceEnv.scheduleDeadLetterQueueArn, triggers.deadLetterQueueArn);
    this.role.addToPrincipalPolicy(
      new PolicyStatement({
        actions: ['scheduler:CreateSchedule', 'scheduler:UpdateSchedule', 'scheduler:DeleteSchedule'],
        resources: [`${triggers.groupSchedulesArn}/*`],
      }),
    );
    this.role.addToPrincipalPolicy(
      new PolicyStatement({
        actions: ['iam:PassRole'],
        resources: [triggers.role.roleArn],
        conditions: { StringEquals: { 'iam:PassedToService': 'scheduler.amazonaws.com' } },
      }),
    );
    acknowledge(
      this.role,
      iam5ResourceFinding(this, triggers.groupSchedulesArn, '/*'),
      'Each tenant schedule is a Scheduler schedule named by its id at run time, so they are managed on every schedule ("/*") of Longhaul\'s own schedule group; schedules of other groups stay out of reach.',
    );
    return this;
  }

  public useUrl(key: UrlEnvKey, url: string): this {
    return this.setResourceEnv(key, url);
  }

  /**
   * Lets the handler resume, fail or keep alive a workflow step that waits for a
   * task token (SendTaskSuccess, SendTaskFailure, SendTaskHeartbeat). These
   * actions name no resource in IAM, so they live in their own policy,
   * acknowledged on their own.
   */
  public allowTaskResponses(): this {
    if (this.node.tryFindChild('TaskResponsePolicy')) return this;
    const policy = new Policy(this, 'TaskResponsePolicy', {
      roles: [this.role],
      statements: [
        new PolicyStatement({
          actions: ['states:SendTaskSuccess', 'states:SendTaskFailure', 'states:SendTaskHeartbeat'],
          resources: ['*'],
        }),
      ],
    });
    // Not the role's default policy, so the function must wait for this one explicitly.
    this.lambdaFunction.node.addDependency(policy);
    acknowledgeActionsOnAnyResource(
      policy,
      ['states:SendTaskSuccess', 'states:SendTaskFailure', 'states:SendTaskHeartbeat'],
      'states:SendTaskSuccess, states:SendTaskFailure and states:SendTaskHeartbeat support no resource-level permissions (the Service Authorization Reference lists no resource type for them), so they must be granted on "*". The caller can only act on a step whose task token it holds, and this policy grants nothing else.',
    );
    return this;
  }

  // DynamoDB grants cover `<table>/index/*` so the handler can query the table's
  // indexes; the wildcard only ever matches indexes of this one table.
  private acknowledgeIndexWildcard(table: ITable): void {
    acknowledge(
      this.role,
      iam5ResourceFinding(this, table.tableArn, '/index/*'),
      'Queries go through the global secondary indexes of this table; "/index/*" matches only the indexes of this one table.',
    );
  }
}

/** Every execution of the state machine: executions are named after their job, known only at run time. */
function executionsOf(scope: Construct, stateMachine: StateMachine): string {
  return Stack.of(scope).formatArn({
    service: 'states',
    resource: 'execution',
    resourceName: `${stateMachine.stateMachineName}:*`,
    arnFormat: ArnFormat.COLON_RESOURCE_NAME,
  });
}
