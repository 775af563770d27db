import { CfnOutput, Duration, Stack, type StackProps } from 'aws-cdk-lib';
import type { Construct } from 'constructs';
import type { ProviderName } from '../config/providers';
import { queueVisibilityTimeoutSeconds, type Settings } from '../config/settings';
import { Alarms } from './constructs/alarms';
import { LifecycleEventBus } from './constructs/event-bus';
import { HttpApi } from './constructs/http-api';
import { JobDispatcher } from './constructs/job-dispatcher';
import { JobInputs } from './constructs/job-inputs';
import { JobOutputs } from './constructs/job-outputs';
import { JobQueue } from './constructs/job-queue';
import { JobSchedules } from './constructs/job-schedules';
import { JobStore } from './constructs/job-store';
import { JobWorkflow } from './constructs/job-workflow';
import { LiveProgress } from './constructs/live-progress';
import { MediaCompute } from './constructs/media-compute';
import { Observability } from './constructs/observability';
import { ProviderEvents } from './constructs/provider-events';
import { ProviderSecrets } from './constructs/provider-secrets';
import { Reconciler } from './constructs/reconciler';
import { SearchIndex } from './constructs/search-index';
import { WorkflowSteps } from './constructs/workflow-steps';
import { providerIdSuffix } from './provider-ids';

/**
 * Days an input object outlives the retention of the job that used it: covers
 * the time a job may spend queued and running before its retention clock starts.
 */
const INPUT_EXPIRY_MARGIN_DAYS = 7;

/**
 * Days an output object outlives the retention of its job: outputs are written
 * as the job finishes, and DynamoDB may take days to delete an expired job item,
 * which stays readable (with its output URLs) until then.
 */
const OUTPUT_EXPIRY_MARGIN_DAYS = 7;

export interface LonghaulStackProps extends StackProps {
  /** Longhaul settings, from `loadSettings(process.env)`. */
  readonly settings: Settings;

  /**
   * An address subscribed to the alarm topic.
   * @default - no subscription
   */
  readonly alarmEmail?: string;
}

/**
 * Longhaul in one stack. The stack only composes capabilities; each construct
 * under lib/constructs owns one of them and its safe defaults.
 */
export class LonghaulStack extends Stack {
  public readonly alarms: Alarms;
  public readonly jobStore: JobStore;
  public readonly jobQueue: JobQueue;
  public readonly jobInputs: JobInputs;
  public readonly jobOutputs: JobOutputs;
  public readonly providerSecrets: ProviderSecrets;
  public readonly httpApi: HttpApi;
  /** Where providers post their webhooks (a function URL), off the REST API. */
  public readonly providerEvents: ProviderEvents;
  public readonly workflowSteps: WorkflowSteps;
  /** Where audio.publish's compute steps run: the compute function and the Fargate task. */
  public readonly mediaCompute: MediaCompute;
  public readonly jobWorkflow: JobWorkflow;
  public readonly jobDispatcher: JobDispatcher;
  public readonly liveProgress: LiveProgress;
  public readonly reconciler: Reconciler;
  public readonly jobSchedules: JobSchedules;
  /** The passages of published recordings, embedded, for search. */
  public readonly searchIndex: SearchIndex;
  public readonly observability: Observability;
  /** Where job and media lifecycle changes are put, for other teams' rules. */
  public readonly eventBus: LifecycleEventBus;

  constructor(scope: Construct, id: string, props: LonghaulStackProps) {
    super(scope, id, {
      description:
        'Longhaul: durable, idempotent intake, a queue, one in-flight limit, a workflow, a reconciler and live progress for slow, expensive, long-running media jobs',
      ...props,
    });
    const { settings } = props;

    this.alarms = new Alarms(this, 'Alarms', { email: props.alarmEmail });
    this.jobStore = new JobStore(this, 'JobStore');
    this.jobQueue = new JobQueue(this, 'JobQueue', {
      visibilityTimeout: Duration.seconds(queueVisibilityTimeoutSeconds(settings)),
      maxReceiveCount: settings.maxReceiveCount,
      oldestMessageAlarmAge: Duration.seconds(settings.alarmOldestMessageSeconds),
      alarms: this.alarms,
    });
    this.jobInputs = new JobInputs(this, 'JobInputs', {
      expirationDays:
        settings.jobRetentionDays + Math.ceil(settings.jobTimeoutMs / 86_400_000) + INPUT_EXPIRY_MARGIN_DAYS,
      accessLogExpirationDays: settings.logRetentionDays,
    });
    this.jobOutputs = new JobOutputs(this, 'JobOutputs', {
      expirationDays: settings.jobRetentionDays + OUTPUT_EXPIRY_MARGIN_DAYS,
      accessLogBucket: this.jobInputs.accessLogBucket,
    });
    this.providerSecrets = new ProviderSecrets(this, 'Secrets');
    this.httpApi = new HttpApi(this, 'Api', {
      settings,
      alarms: this.alarms,
      jobTable: this.jobStore.jobTable,
      apiKeyTable: this.jobStore.apiKeyTable,
      jobQueues: this.jobQueue.queues,
      deadLetterQueue: this.jobQueue.deadLetterQueue,
      redriveQueue: this.jobQueue.redriveQueue,
      inputBucket: this.jobInputs.inputBucket,
      outputBucket: this.jobOutputs.outputBucket,
      providerSecrets: this.providerSecrets.providerSecrets,
    });
    this.providerEvents = new ProviderEvents(this, 'ProviderEvents', {
      settings,
      jobTable: this.jobStore.jobTable,
      outputBucket: this.jobOutputs.outputBucket,
      providerSecrets: this.providerSecrets.providerSecrets,
    });
    this.workflowSteps = new WorkflowSteps(this, 'WorkflowSteps', {
      settings,
      jobTable: this.jobStore.jobTable,
      handOffQueue: this.jobQueue.handOffQueue,
      jobQueues: this.jobQueue.queues,
      inputBucket: this.jobInputs.inputBucket,
      outputBucket: this.jobOutputs.outputBucket,
      providerSecrets: this.providerSecrets.providerSecrets,
      webhookSecret: this.providerSecrets.webhookSecret,
      providerEventsUrl: this.providerEvents.url,
    });
    this.mediaCompute = new MediaCompute(this, 'Compute', {
      settings,
      jobTable: this.jobStore.jobTable,
      inputBucket: this.jobInputs.inputBucket,
      outputBucket: this.jobOutputs.outputBucket,
    });
    this.jobWorkflow = new JobWorkflow(this, 'Workflow', {
      settings,
      stepsFunction: this.workflowSteps.stepsFunction.lambdaFunction,
      alarms: this.alarms,
      compute: {
        computeFunction: this.mediaCompute.computeFunction.lambdaFunction,
        fargateStep: (scope, stateName, step) => this.mediaCompute.fargateStep(scope, stateName, step),
      },
    });
    // A job's events show its steps from its executions' histories; a resume redrives its failed execution.
    this.httpApi.apiFunction.useExecutionHistory('stateMachineArn', this.jobWorkflow.stateMachine, {
      redrive: true,
    });
    this.searchIndex = new SearchIndex(this, 'SearchIndex', {
      dimension: settings.embeddingDimensions,
      distanceMetric: settings.vectorDistanceMetric,
    });
    // Publishing stores a recording's passages (and removes them); search reads them.
    this.workflowSteps.stepsFunction.useSearchIndex(this.searchIndex, 'write');
    this.httpApi.apiFunction.useSearchIndex(this.searchIndex, 'query');
    // A slot a search or an operator's resolve frees goes to the job whose turn it is, by the hand-off lane.
    this.httpApi.apiFunction.useQueue('handOffQueueUrl', this.jobQueue.handOffQueue, 'send');
    this.jobDispatcher = new JobDispatcher(this, 'Dispatcher', {
      settings,
      jobTable: this.jobStore.jobTable,
      jobQueues: this.jobQueue.queues,
      handOffQueue: this.jobQueue.handOffQueue,
      stateMachine: this.jobWorkflow.stateMachine,
    });
    this.reconciler = new Reconciler(this, 'Reconciler', {
      settings,
      jobTable: this.jobStore.jobTable,
      jobQueues: this.jobQueue.queues,
      handOffQueue: this.jobQueue.handOffQueue,
      stateMachine: this.jobWorkflow.stateMachine,
      providerSecrets: this.providerSecrets.providerSecrets,
      alarms: this.alarms,
    });
    // A media item's metadata change rewrites its current version's vector metadata (API), as does the
    // switch to a new version (steps). The reconciler's sweeps remove what failed, canceled, replaced and
    // deleted publishes left: their outputs, their passages' vectors, and a deleted item's uploads.
    this.httpApi.apiFunction.useSearchIndex(this.searchIndex, 'rewrite');
    this.workflowSteps.stepsFunction.useSearchIndex(this.searchIndex, 'rewrite');
    this.reconciler.reconcileFunction
      .useBucket('outputBucket', this.jobOutputs.outputBucket, 'readDelete')
      .useBucket('inputBucket', this.jobInputs.inputBucket, 'delete')
      .useSearchIndex(this.searchIndex, 'delete');
    this.jobSchedules = new JobSchedules(this, 'Schedules', {
      settings,
      jobTable: this.jobStore.jobTable,
      jobQueues: this.jobQueue.queues,
      manager: this.httpApi.apiFunction,
      alarms: this.alarms,
    });
    this.liveProgress = new LiveProgress(this, 'LiveProgress', {
      settings,
      jobTable: this.jobStore.jobTable,
      apiKeyTable: this.jobStore.apiKeyTable,
      apiGatewayAccount: this.httpApi.apiGatewayAccount,
    });
    // Whatever moves a job between statuses, or hears its progress, tells the clients watching it.
    for (const fn of [
      this.httpApi.apiFunction,
      this.providerEvents.eventsFunction,
      this.workflowSteps.stepsFunction,
      this.reconciler.reconcileFunction,
    ]) {
      this.liveProgress.grantPublish(fn);
    }

    this.eventBus = new LifecycleEventBus(this, 'Events');
    // Whatever settles a job (or sends it to review) puts its event: the workflow's steps, the API's cancels and
    // resolutions, the reconciler's reviews, and the dispatcher's ends of jobs that missed their startBy.
    for (const fn of [
      this.httpApi.apiFunction,
      this.jobDispatcher.dispatchFunction,
      this.workflowSteps.stepsFunction,
      this.reconciler.reconcileFunction,
    ]) {
      fn.useEventBus(this.eventBus);
    }

    // Last: the dashboard shows every alarm the constructs above created.
    this.observability = new Observability(this, 'Observability', {
      settings,
      alarms: this.alarms,
      jobQueue: this.jobQueue,
      httpApi: this.httpApi,
      stateMachine: this.jobWorkflow.stateMachine,
      reconcilerLogGroup: this.reconciler.reconcileFunction.logGroup,
      functions: [
        this.httpApi.apiFunction,
        this.httpApi.authorizerFunction,
        this.providerEvents.eventsFunction,
        this.jobDispatcher.dispatchFunction,
        this.workflowSteps.stepsFunction,
        this.reconciler.reconcileFunction,
        this.liveProgress.streamFunction,
        this.jobSchedules.fireFunction,
        this.mediaCompute.computeFunction,
      ],
    });

    const outputs: Record<string, [value: string, description: string]> = {
      ApiUrl: [this.httpApi.url, 'Base URL of the HTTP API, without a trailing slash'],
      StreamUrl: [
        this.liveProgress.url,
        'WebSocket URL of live job progress; connect with ?ticket=<ticket> from POST /v1/jobs/{id}/stream-ticket',
      ],
      ProviderEventsUrl: [
        this.providerEvents.url,
        "URL of the provider events function; each provider's webhooks are posted to its route's path under it",
      ],
      UsagePlanId: [
        this.httpApi.usagePlan.usagePlanId,
        'Usage plan every tenant API Gateway key is added to',
      ],
      ApiKeyTableName: [this.jobStore.apiKeyTable.tableName, 'Table of tenant API key hashes'],
      JobTableName: [this.jobStore.jobTable.tableName, 'Table of jobs'],
      ...Object.fromEntries(
        Object.entries(this.jobQueue.queues).map(([provider, queue]) => [
          `JobQueueUrl${providerIdSuffix(provider as ProviderName)}`,
          [queue.queueUrl, `Queue of jobs to dispatch to provider ${provider}`],
        ]),
      ),
      HandOffQueueUrl: [
        this.jobQueue.handOffQueue.queueUrl,
        'Queue of jobs handed a freed slot, dispatched ahead of the jobs queue',
      ],
      DeadLetterQueueUrl: [this.jobQueue.deadLetterQueue.queueUrl, 'Job messages that failed every delivery'],
      InputBucketName: [this.jobInputs.inputBucket.bucketName, 'Bucket of job inputs'],
      OutputBucketName: [this.jobOutputs.outputBucket.bucketName, 'Bucket of job outputs'],
      StateMachineArn: [
        this.jobWorkflow.stateMachine.stateMachineArn,
        'The media workflow; executions are named after their job',
      ],
      ...Object.fromEntries(
        Object.entries(this.providerSecrets.providerSecrets).map(([provider, secret]) => [
          `ProviderSecretArn${providerIdSuffix(provider as ProviderName)}`,
          [
            secret.secretArn,
            `Secret of provider ${provider}: set apiKey (and webhookSecret) after the first deploy`,
          ],
        ]),
      ),
      WebhookSecretArn: [this.providerSecrets.webhookSecret.secretArn, 'Key that signs webhooks to clients'],
      SearchIndexArn: [
        this.searchIndex.indexArn,
        'S3 Vectors index of the passages of published recordings, in its own vector bucket',
      ],
      ScheduleGroupName: [
        this.jobSchedules.scheduleGroup.scheduleGroupName,
        "EventBridge Scheduler group of tenants' schedules, one Scheduler schedule per Longhaul schedule",
      ],
      EventBusName: [
        this.eventBus.eventBusName,
        'EventBridge bus of job and media lifecycle events (source "longhaul"); hang your rules on it',
      ],
      EventBusArn: [this.eventBus.eventBusArn, 'ARN of the lifecycle event bus'],
      AlarmTopicArn: [this.alarms.topic.topicArn, 'SNS topic of every Longhaul alarm'],
      DashboardUrl: [this.observability.dashboardUrl, 'CloudWatch dashboard of Longhaul in the console'],
    };
    for (const [id, [value, description]] of Object.entries(outputs)) {
      new CfnOutput(this, id, { value, description });
    }
  }
}
