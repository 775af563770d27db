import { CfnOutput, Duration, Stack, type StackProps } from 'aws-cdk-lib';
import type { Construct } from 'constructs';
import { queueVisibilityTimeoutSeconds, type Settings } from '../config/settings';
import { Alarms } from './constructs/alarms';
import { HttpApi } from './constructs/http-api';
import { JobInputs } from './constructs/job-inputs';
import { JobQueue } from './constructs/job-queue';
import { JobStore } from './constructs/job-store';

/**
 * Days an input object outlives the retention of the job that used it: covers
 * the time a job may spend queued and running before its retention clock starts.
 */
const INPUT_EXPIRY_MARGIN_DAYS = 7;

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
  public readonly httpApi: HttpApi;

  constructor(scope: Construct, id: string, props: LonghaulStackProps) {
    super(scope, id, {
      description:
        'Longhaul: durable, idempotent intake and a queue for slow, expensive, long-running media jobs',
      ...props,
    });
    const { settings } = props;

    this.alarms = new Alarms(this, 'Alarms', { email: props.alarmEmail });
    this.jobStore = new JobStore(this, 'JobStore');
    this.jobQueue = new JobQueue(this, 'JobQueue', {
      visibilityTimeout: Duration.seconds(queueVisibilityTimeoutSeconds(settings)),
      maxReceiveCount: settings.maxReceiveCount,
      alarms: this.alarms,
    });
    this.jobInputs = new JobInputs(this, 'JobInputs', {
      expirationDays:
        settings.jobRetentionDays + Math.ceil(settings.jobTimeoutMs / 86_400_000) + INPUT_EXPIRY_MARGIN_DAYS,
      accessLogExpirationDays: settings.logRetentionDays,
    });
    this.httpApi = new HttpApi(this, 'Api', {
      settings,
      jobTable: this.jobStore.jobTable,
      apiKeyTable: this.jobStore.apiKeyTable,
      jobQueue: this.jobQueue.queue,
      inputBucket: this.jobInputs.inputBucket,
    });

    const outputs: Record<string, [value: string, description: string]> = {
      ApiUrl: [this.httpApi.url, 'Base URL of the HTTP API, without a trailing slash'],
      UsagePlanId: [
        this.httpApi.usagePlan.usagePlanId,
        'Usage plan every tenant API Gateway key is added to',
      ],
      ApiKeyTableName: [this.jobStore.apiKeyTable.tableName, 'Table of tenant API key hashes'],
      JobTableName: [this.jobStore.jobTable.tableName, 'Table of jobs'],
      JobQueueUrl: [this.jobQueue.queue.queueUrl, 'Queue of jobs to dispatch'],
      DeadLetterQueueUrl: [this.jobQueue.deadLetterQueue.queueUrl, 'Job messages that failed every delivery'],
      InputBucketName: [this.jobInputs.inputBucket.bucketName, 'Bucket of job inputs'],
      AlarmTopicArn: [this.alarms.topic.topicArn, 'SNS topic of every Longhaul alarm'],
    };
    for (const [id, [value, description]] of Object.entries(outputs)) {
      new CfnOutput(this, id, { value, description });
    }
  }
}
