import { Duration } from 'aws-cdk-lib';
import type { ITable } from 'aws-cdk-lib/aws-dynamodb';
import type { IBucket } from 'aws-cdk-lib/aws-s3';
import type { ISecret } from 'aws-cdk-lib/aws-secretsmanager';
import type { IQueue } from 'aws-cdk-lib/aws-sqs';
import { Construct } from 'constructs';
import type { ProviderName } from '../../config/providers';
import type { Settings } from '../../config/settings';
import { handlerEntry } from '../handlers';
import { ProjectFunction } from './project-function';

export interface WorkflowStepsProps {
  /** Longhaul settings, handed to the function as its environment. */
  readonly settings: Settings;
  /** The job table: jobs, the slot item and the timelines. */
  readonly jobTable: ITable;
  /** The hand-off lane; `release` sends a job it granted a freed slot when it cannot start it itself. */
  readonly handOffQueue: IQueue;
  /** Each provider's jobs queue; `transcribe` sends each new chunk job of audio.publish to its provider's. */
  readonly jobQueues: Readonly<Record<ProviderName, IQueue>>;
  /** The input bucket; `prepare` checks uploaded inputs in it (HeadObject). */
  readonly inputBucket: IBucket;
  /** The output bucket; `finalize` stores outputs and `notify` presigns them for the webhook body. */
  readonly outputBucket: IBucket;
  /** Each provider's secret (API key, webhook signing key). */
  readonly providerSecrets: Readonly<Record<ProviderName, ISecret>>;
  /** The key that signs client webhooks. */
  readonly webhookSecret: ISecret;
  /**
   * The provider events function's URL, under which each provider's webhook
   * route's path is handed to the provider with each submission.
   */
  readonly providerEventsUrl: string;

  /**
   * Entry file of the steps handler.
   * @default lambdas/workflow/handler.ts
   */
  readonly entry?: string;
}

/**
 * The one function that runs every step of the media workflow; the state
 * machine names the step in each payload. It talks to the provider and to
 * clients' webhooks, each call bounded by its own timeout well inside the
 * function's minute.
 *
 * It has no STATE_MACHINE_ARN: the state machine refers to this function, so
 * the reverse reference would be circular. Resuming a step by its task token
 * needs no ARN, and the steps that start the next job's execution are handed
 * their machine's ARN in their payload (`$$.StateMachine.Id`).
 */
export class WorkflowSteps extends Construct {
  /** The steps function. */
  public readonly stepsFunction: ProjectFunction;

  constructor(scope: Construct, id: string, props: WorkflowStepsProps) {
    super(scope, id);
    this.stepsFunction = new ProjectFunction(this, 'StepsFunction', {
      entry: props.entry ?? handlerEntry('workflow'),
      settings: props.settings,
      serviceName: 'workflow',
      description:
        'Longhaul workflow steps: prepare, submit, await, release, finalize, notify, fail, review, settle, transcribe',
      timeout: Duration.seconds(60),
      memorySize: 1024,
    })
      .useTable('jobTable', props.jobTable, 'readWrite')
      // The release step starts the job it granted a freed slot; the dispatcher does when that start fails.
      .useQueue('handOffQueueUrl', props.handOffQueue, 'send')
      .useJobQueues(props.jobQueues, 'send')
      .useBucket('inputBucket', props.inputBucket, 'read')
      .useBucket('outputBucket', props.outputBucket, 'readWriteDelete')
      .useProviderSecrets(props.providerSecrets)
      .useEmbeddingModel(props.settings)
      .useSecret('webhookSecretArn', props.webhookSecret)
      .useUrl('providerEventsUrl', props.providerEventsUrl)
      // The await step resumes itself when the provider finished before its token was stored.
      .allowTaskResponses();
  }
}
