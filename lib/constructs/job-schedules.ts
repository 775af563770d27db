import { Aws, Duration, RemovalPolicy, Stack } from 'aws-cdk-lib';
import { type Alarm, ComparisonOperator, TreatMissingData } from 'aws-cdk-lib/aws-cloudwatch';
import type { ITable } from 'aws-cdk-lib/aws-dynamodb';
import { PolicyStatement, Role, ServicePrincipal } from 'aws-cdk-lib/aws-iam';
import { ScheduleGroup } from 'aws-cdk-lib/aws-scheduler';
import { type IQueue, Queue, QueueEncryption } from 'aws-cdk-lib/aws-sqs';
import { Construct } from 'constructs';
import type { ProviderName } from '../../config/providers';
import type { Settings } from '../../config/settings';
import { handlerEntry } from '../handlers';
import { acknowledge } from '../nag';
import type { Alarms } from './alarms';
import { ProjectFunction } from './project-function';

export interface JobSchedulesProps {
  /** Longhaul settings: the firings' retry policy, the handler's environment and log retention. */
  readonly settings: Settings;
  /** The job table: schedule items, and the jobs firings create. */
  readonly jobTable: ITable;
  /** Each provider's jobs queue; a firing's job is enqueued in its provider's, as intake's are. */
  readonly jobQueues: Readonly<Record<ProviderName, IQueue>>;
  /** The function that creates, updates and deletes the schedules' triggers (the API's). */
  readonly manager: ProjectFunction;
  /** Where the dead-letter alarm is sent. */
  readonly alarms: Alarms;

  /**
   * Entry file of the fire handler.
   * @default lambdas/fire/handler.ts
   */
  readonly entry?: string;
}

/** SQS keeps a message at most 14 days. */
const MAX_RETENTION = Duration.days(14);

/**
 * Tenants' recurring schedules in AWS: a schedule group of their own in
 * EventBridge Scheduler (one Scheduler schedule per Longhaul schedule, kept
 * by `manager`), the fire function every one of them invokes, the role they
 * invoke it with (which may invoke that function and nothing else, and only
 * Scheduler, for this group, may assume), and a dead-letter queue for
 * firings Scheduler could not deliver, with an alarm on it.
 */
export class JobSchedules extends Construct {
  public readonly scheduleGroup: ScheduleGroup;
  /** One firing per invocation: submits the schedule's job through intake. */
  public readonly fireFunction: ProjectFunction;
  /** The role EventBridge Scheduler invokes the fire function with. */
  public readonly schedulerRole: Role;
  /** Firings Scheduler gave up on after its retries. */
  public readonly deadLetterQueue: Queue;
  /** In ALARM as soon as a firing reaches the dead-letter queue. */
  public readonly deadLettersAlarm: Alarm;

  constructor(scope: Construct, id: string, props: JobSchedulesProps) {
    super(scope, id);
    const { settings } = props;

    // Tenants' schedules outlive a stack update; removing the group would delete them all.
    this.scheduleGroup = new ScheduleGroup(this, 'Group', { removalPolicy: RemovalPolicy.RETAIN });

    this.fireFunction = new ProjectFunction(this, 'FireFunction', {
      entry: props.entry ?? handlerEntry('fire'),
      settings,
      serviceName: 'fire',
      description: "Longhaul schedules: one firing of a tenant's schedule submits its job",
      timeout: Duration.seconds(30),
      memorySize: 256,
    })
      .useTable('jobTable', props.jobTable, 'readWrite')
      .useJobQueues(props.jobQueues, 'send');

    this.deadLetterQueue = new Queue(this, 'DeadLetterQueue', {
      encryption: QueueEncryption.SQS_MANAGED,
      enforceSSL: true,
      retentionPeriod: MAX_RETENTION,
    });
    acknowledge(
      this.deadLetterQueue,
      'AwsSolutions-SQS3',
      "This queue is the dead-letter queue of the schedules' Scheduler targets (RetryPolicy, DeadLetterConfig); Scheduler, not SQS, moves firings into it.",
    );

    this.schedulerRole = new Role(this, 'SchedulerRole', {
      description: `Lets EventBridge Scheduler invoke ${this.node.path}/FireFunction for Longhaul's schedule group`,
      // Only schedules of this account's Longhaul group may use it (no confused deputy).
      assumedBy: new ServicePrincipal('scheduler.amazonaws.com', {
        conditions: {
          StringEquals: {
            'aws:SourceAccount': Aws.ACCOUNT_ID,
            'aws:SourceArn': this.scheduleGroup.scheduleGroupArn,
          },
        },
      }),
    });
    this.schedulerRole.addToPrincipalPolicy(
      new PolicyStatement({
        actions: ['lambda:InvokeFunction'],
        resources: [this.fireFunction.lambdaFunction.functionArn],
      }),
    );
    this.deadLetterQueue.grantSendMessages(this.schedulerRole);

    props.manager.useScheduleTriggers({
      groupName: this.scheduleGroup.scheduleGroupName,
      groupSchedulesArn: Stack.of(this).formatArn({
        service: 'scheduler',
        resource: 'schedule',
        resourceName: this.scheduleGroup.scheduleGroupName,
      }),
      targetArn: this.fireFunction.lambdaFunction.functionArn,
      role: this.schedulerRole,
      deadLetterQueueArn: this.deadLetterQueue.queueArn,
    });

    this.deadLettersAlarm = this.deadLetterQueue
      .metricApproximateNumberOfMessagesVisible({ period: Duration.minutes(5), statistic: 'Maximum' })
      .createAlarm(this, 'DeadLettersAlarm', {
        alarmDescription:
          "A schedule's firing could not be delivered to the fire function after its retries: that firing created no job. The message names the tenant, the schedule and the time.",
        threshold: 0,
        comparisonOperator: ComparisonOperator.GREATER_THAN_THRESHOLD,
        evaluationPeriods: 1,
        treatMissingData: TreatMissingData.NOT_BREACHING,
      });
    props.alarms.notify(this.deadLettersAlarm);
  }
}
