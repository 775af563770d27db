import * as path from 'node:path';
import { Duration, IgnoreMode, RemovalPolicy } from 'aws-cdk-lib';
import type { ITable } from 'aws-cdk-lib/aws-dynamodb';
import { FlowLogDestination, GatewayVpcEndpointAwsService, SubnetType, Vpc } from 'aws-cdk-lib/aws-ec2';
import { Platform } from 'aws-cdk-lib/aws-ecr-assets';
import {
  Cluster,
  type ContainerDefinition,
  ContainerImage,
  ContainerInsights,
  CpuArchitecture,
  FargateTaskDefinition,
  LogDrivers,
  OperatingSystemFamily,
} from 'aws-cdk-lib/aws-ecs';
import { PolicyStatement } from 'aws-cdk-lib/aws-iam';
import { LogGroup, type RetentionDays } from 'aws-cdk-lib/aws-logs';
import type { IBucket } from 'aws-cdk-lib/aws-s3';
import { IntegrationPattern, JsonPath } from 'aws-cdk-lib/aws-stepfunctions';
import { EcsFargateLaunchTarget, EcsRunTask } from 'aws-cdk-lib/aws-stepfunctions-tasks';
import { Construct } from 'constructs';
import { computeContainer, computeTaskEnv, resourceEnv } from '../../config/layout';
import { type Settings, settingsEnvironment } from '../../config/settings';
import { REPO_ROOT } from '../handlers';
import { acknowledge, acknowledgeActionsOnAnyResource, iam5ResourceFinding } from '../nag';
import { ProjectFunction } from './project-function';

/** Where the compute image is built from: the repository, of which only what the task needs is sent to Docker. */
const IMAGE_CONTEXT = REPO_ROOT;
const DOCKERFILE = path.join('lambdas', 'compute', 'Dockerfile');
/** Everything but the sources and lock file the images build their bundles from (Docker's ignore rules). */
const IMAGE_EXCLUDE = [
  '*',
  '!package.json',
  '!package-lock.json',
  '!tsconfig.json',
  '!config/**',
  '!lambdas/**',
];
/** The Dockerfile's targets: the Fargate task, and the compute function on the Lambda base image. */
export const COMPUTE_IMAGE_TARGETS = { task: 'task', function: 'function' } as const;

export interface MediaComputeProps {
  /** Longhaul settings: each compute place's size and the compute function's concurrency. */
  readonly settings: Settings;
  /** The job table: a compute step reads its job (GetItem only). */
  readonly jobTable: ITable;
  /** Uploaded inputs: read only. */
  readonly inputBucket: IBucket;
  /** Job outputs: the steps write the stream, chunks and transcript, and read them back. */
  readonly outputBucket: IBucket;
}

/**
 * Where audio.publish's compute steps run (probe, transcode, split, index):
 * the compute function for recordings that fit Lambda's limits, and a Fargate
 * task for longer ones, both running the same code (`lambdas/compute/`). See
 * docs/media-publishing.md's sizing section for the thresholds.
 *
 * The Fargate task runs in a VPC of its own with public subnets only and no
 * NAT gateway: the task needs outbound HTTPS (an `audioUrl` anywhere on the
 * internet, the ECR pull) and nothing inbound, and a NAT gateway would cost
 * more each month than hours of Fargate. S3 and DynamoDB are reached through
 * gateway endpoints. Both run images of one Dockerfile (`lambdas/compute/`),
 * one target each, as Docker assets: `cdk synth` only stages their build
 * context (no Docker needed); they are built when `cdk deploy` publishes them.
 */
export class MediaCompute extends Construct {
  /** The compute function: sized by COMPUTE_MEMORY_MB, COMPUTE_EPHEMERAL_STORAGE_MB and COMPUTE_TIMEOUT_SECONDS. */
  public readonly computeFunction: ProjectFunction;
  public readonly vpc: Vpc;
  public readonly cluster: Cluster;
  public readonly taskDefinition: FargateTaskDefinition;
  public readonly container: ContainerDefinition;
  public readonly taskLogGroup: LogGroup;

  constructor(scope: Construct, id: string, props: MediaComputeProps) {
    super(scope, id);
    const { settings } = props;

    this.computeFunction = new ProjectFunction(this, 'ComputeFunction', {
      // A container image: ffmpeg for arm64 comes with an arm64 `npm ci`, which a zip bundled here cannot carry.
      image: {
        directory: IMAGE_CONTEXT,
        file: DOCKERFILE,
        target: COMPUTE_IMAGE_TARGETS.function,
        exclude: IMAGE_EXCLUDE,
      },
      settings,
      serviceName: 'compute',
      description: 'Longhaul audio.publish compute steps (probe, transcode, split, index) that fit Lambda',
      timeout: Duration.seconds(settings.computeTimeoutSeconds),
      memorySize: settings.computeMemoryMb,
      ephemeralStorageMb: settings.computeEphemeralStorageMb,
      reservedConcurrency: settings.computeConcurrency,
    })
      .useTable('jobTable', props.jobTable, 'getItem')
      .useBucket('inputBucket', props.inputBucket, 'read')
      // Delete too: a step that finishes after its job was canceled removes what it wrote (listed by prefix).
      .useBucket('outputBucket', props.outputBucket, 'readWriteDelete');
    // Each step names itself in its job's timeline: timeline events are new items (PutItem), never updates.
    this.computeFunction.role.addToPrincipalPolicy(
      new PolicyStatement({ actions: ['dynamodb:PutItem'], resources: [props.jobTable.tableArn] }),
    );
    props.jobTable.encryptionKey?.grantEncrypt(this.computeFunction.role);

    const flowLogs = new LogGroup(this, 'FlowLogs', {
      retention: settings.logRetentionDays as RetentionDays,
      removalPolicy: RemovalPolicy.RETAIN,
    });
    this.vpc = new Vpc(this, 'Vpc', {
      maxAzs: 2,
      natGateways: 0,
      // Nothing here uses the default security group (the run-task state gives tasks their own, and
      // gateway endpoints have none), so its rules are left alone: removing them takes a custom
      // resource, a Lambda function with a managed policy of its own.
      restrictDefaultSecurityGroup: false,
      subnetConfiguration: [{ name: 'tasks', subnetType: SubnetType.PUBLIC }],
      gatewayEndpoints: {
        s3: { service: GatewayVpcEndpointAwsService.S3 },
        dynamodb: { service: GatewayVpcEndpointAwsService.DYNAMODB },
      },
      flowLogs: { all: { destination: FlowLogDestination.toCloudWatchLogs(flowLogs) } },
    });
    this.cluster = new Cluster(this, 'Cluster', {
      vpc: this.vpc,
      containerInsightsV2: ContainerInsights.ENABLED,
    });

    this.taskDefinition = new FargateTaskDefinition(this, 'TaskDefinition', {
      cpu: settings.computeFargateCpu,
      memoryLimitMiB: settings.computeFargateMemoryMb,
      ephemeralStorageGiB: settings.computeFargateStorageGib,
      runtimePlatform: {
        cpuArchitecture: CpuArchitecture.ARM64,
        operatingSystemFamily: OperatingSystemFamily.LINUX,
      },
    });
    this.taskLogGroup = new LogGroup(this, 'TaskLogs', {
      retention: settings.logRetentionDays as RetentionDays,
      removalPolicy: RemovalPolicy.RETAIN,
    });
    this.container = this.taskDefinition.addContainer(computeContainer.name, {
      image: ContainerImage.fromAsset(IMAGE_CONTEXT, {
        file: DOCKERFILE,
        target: COMPUTE_IMAGE_TARGETS.task,
        platform: Platform.LINUX_ARM64,
        exclude: IMAGE_EXCLUDE,
        ignoreMode: IgnoreMode.DOCKER,
      }),
      logging: LogDrivers.awsLogs({ logGroup: this.taskLogGroup, streamPrefix: 'compute' }),
      environment: {
        ...settingsEnvironment(settings),
        [resourceEnv.jobTable]: props.jobTable.tableName,
        [resourceEnv.inputBucket]: props.inputBucket.bucketName,
        [resourceEnv.outputBucket]: props.outputBucket.bucketName,
      },
    });

    // The task role: what the compute steps do, as the function's role allows them and no more.
    const taskRole = this.taskDefinition.taskRole;
    taskRole.addToPrincipalPolicy(
      new PolicyStatement({
        actions: ['dynamodb:GetItem', 'dynamodb:PutItem'],
        resources: [props.jobTable.tableArn],
      }),
    );
    props.jobTable.encryptionKey?.grantEncryptDecrypt(taskRole);
    taskRole.addToPrincipalPolicy(
      new PolicyStatement({ actions: ['s3:GetObject'], resources: [props.inputBucket.arnForObjects('*')] }),
    );
    taskRole.addToPrincipalPolicy(
      new PolicyStatement({
        actions: ['s3:GetObject', 's3:PutObject', 's3:DeleteObject'],
        resources: [props.outputBucket.arnForObjects('*')],
      }),
    );
    taskRole.addToPrincipalPolicy(
      new PolicyStatement({ actions: ['s3:ListBucket'], resources: [props.outputBucket.bucketArn] }),
    );
    for (const bucket of [props.inputBucket, props.outputBucket]) {
      acknowledge(
        taskRole,
        iam5ResourceFinding(this, bucket.bucketArn, '/*'),
        'Object keys are chosen at run time (one per job), so object access is granted on every key of this one bucket; no other bucket is reachable.',
      );
    }
    acknowledge(
      this.taskDefinition,
      'AwsSolutions-ECS2',
      'The environment holds Longhaul settings and resource names, no secret: the task reads no secret at all.',
    );
    const executionPolicy = this.taskDefinition.obtainExecutionRole();
    acknowledgeActionsOnAnyResource(
      executionPolicy,
      ['ecr:GetAuthorizationToken'],
      'Pulling the image needs ecr:GetAuthorizationToken, which supports no resource-level permission; the pulls themselves are granted on the one asset repository.',
    );
  }

  /**
   * A Step Functions state that runs one compute step on Fargate and waits
   * for the task to stop (`ecs:runTask.sync`). Its answer is the task's
   * description, so the state after it collects the step's recorded outcome.
   */
  public fargateStep(scope: Construct, stateName: string, step: string): EcsRunTask {
    return new EcsRunTask(scope, stateName, {
      stateName,
      integrationPattern: IntegrationPattern.RUN_JOB,
      cluster: this.cluster,
      taskDefinition: this.taskDefinition,
      launchTarget: new EcsFargateLaunchTarget(),
      assignPublicIp: true,
      subnets: { subnetType: SubnetType.PUBLIC },
      containerOverrides: [
        {
          containerDefinition: this.container,
          environment: [
            { name: computeTaskEnv.step, value: step },
            { name: computeTaskEnv.jobId, value: JsonPath.stringAt('$.jobId') },
          ],
        },
      ],
      resultPath: JsonPath.DISCARD,
    });
  }
}
