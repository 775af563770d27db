import { Duration } from 'aws-cdk-lib';
import { type Alarm, ComparisonOperator, TreatMissingData } from 'aws-cdk-lib/aws-cloudwatch';
import { Queue, QueueEncryption } from 'aws-cdk-lib/aws-sqs';
import { Construct } from 'constructs';
import { LEGACY_PROVIDER, PROVIDER_NAMES, type ProviderName } from '../../config/providers';
import { providerIdSuffix } from '../provider-ids';
import type { Alarms } from './alarms';

/** SQS keeps a message at most 14 days. */
const MAX_RETENTION = Duration.days(14);

export interface JobQueueProps {
  /**
   * How long a received message stays invisible to other consumers; at least six
   * times the consumer's timeout (see `queueVisibilityTimeoutSeconds` in config/settings.ts).
   */
  readonly visibilityTimeout: Duration;

  /** Receives before a message moves to the dead-letter queue; at least 5, as AWS advises for Lambda consumers. */
  readonly maxReceiveCount: number;

  /**
   * Age of the oldest job message at which the queue alarms: a message has
   * waited that long without dispatch taking it. A job waiting for a free slot
   * is sent again as a new message each time, so this catches dispatch not
   * consuming, not a full in-flight limit (that shows as queue wait and depth).
   */
  readonly oldestMessageAlarmAge: Duration;

  /** Where the queue's alarms are sent. */
  readonly alarms: Alarms;
}

/**
 * The durable queues between job intake and dispatch, one per provider
 * (config/providers.ts): thousands of jobs waiting for one provider's slots
 * never stand in front of another provider's jobs. One dead-letter queue takes
 * the messages that keep failing, with an alarm as soon as one lands there, and
 * each queue alarms when a job has waited too long in it.
 *
 * Beside them, the hand-off lane: a queue for jobs that were granted a freed slot
 * and already hold it, when the step that granted it could not start them itself. Under a backlog a jobs queue holds thousands of visible
 * messages of jobs still looking for a slot; a hand-off sent there would wait
 * behind all of them while the slot it took sits idle. The lane has the same
 * settings, dead-letter queue and alarms as the jobs queues.
 *
 * Every queue uses SQS-managed encryption (SSE-SQS): every producer and consumer
 * (Lambda now, Scheduler or Step Functions later) can use it without key grants,
 * and it adds no KMS requests per message. Every queue refuses requests without TLS.
 */
export class JobQueue extends Construct {
  /** Each provider's job messages, one per job to dispatch. */
  public readonly queues: { readonly [P in ProviderName]: Queue };
  /**
   * Where the dead-letter queue's messages are moved back to: the first
   * provider's queue, which was the only one. The dispatcher takes any job from
   * any of its queues, and a job that waits again goes on in its own provider's.
   */
  public readonly redriveQueue: Queue;
  /** Messages received `maxReceiveCount` times without being deleted. */
  public readonly deadLetterQueue: Queue;
  /** In ALARM while the dead-letter queue holds at least one visible message. */
  public readonly deadLetterAlarm: Alarm;
  /** Per provider: in ALARM while its oldest job message is older than `oldestMessageAlarmAge`. */
  public readonly oldestMessageAlarms: { readonly [P in ProviderName]: Alarm };
  /** The hand-off lane: one message per job handed a freed slot, which it already holds. */
  public readonly handOffQueue: Queue;
  /** In ALARM while the oldest hand-off message is older than `oldestMessageAlarmAge`. */
  public readonly handOffOldestMessageAlarm: Alarm;

  constructor(scope: Construct, id: string, props: JobQueueProps) {
    super(scope, id);
    if (
      !Number.isInteger(props.maxReceiveCount) ||
      props.maxReceiveCount < 5 ||
      props.maxReceiveCount > 1000
    ) {
      throw new Error(
        `JobQueue ${this.node.path}: maxReceiveCount must be an integer from 5 to 1000, got ${props.maxReceiveCount}`,
      );
    }
    const visibilitySeconds = props.visibilityTimeout.toSeconds();
    if (!Number.isInteger(visibilitySeconds) || visibilitySeconds < 0 || visibilitySeconds > 43_200) {
      throw new Error(
        `JobQueue ${this.node.path}: visibilityTimeout must be a whole number of seconds from 0 to 43200, got ${visibilitySeconds}`,
      );
    }
    const oldestMessageSeconds = props.oldestMessageAlarmAge.toSeconds();
    if (
      !Number.isInteger(oldestMessageSeconds) ||
      oldestMessageSeconds < 60 ||
      oldestMessageSeconds > MAX_RETENTION.toSeconds()
    ) {
      throw new Error(
        `JobQueue ${this.node.path}: oldestMessageAlarmAge must be a whole number of seconds from 60 to ${MAX_RETENTION.toSeconds()}, got ${oldestMessageSeconds}`,
      );
    }

    this.deadLetterQueue = new Queue(this, 'DeadLetterQueue', {
      encryption: QueueEncryption.SQS_MANAGED,
      enforceSSL: true,
      retentionPeriod: MAX_RETENTION,
    });
    const jobMessages = {
      encryption: QueueEncryption.SQS_MANAGED,
      enforceSSL: true,
      visibilityTimeout: props.visibilityTimeout,
      // A long peak lengthens the queue; messages must outlive it.
      retentionPeriod: MAX_RETENTION,
      deadLetterQueue: { queue: this.deadLetterQueue, maxReceiveCount: props.maxReceiveCount },
    };
    this.queues = byProvider(
      (provider) => new Queue(this, `Queue${providerIdSuffix(provider)}`, jobMessages),
    );
    this.redriveQueue = this.queues[LEGACY_PROVIDER];
    this.handOffQueue = new Queue(this, 'HandOffQueue', jobMessages);

    this.deadLetterAlarm = this.deadLetterQueue
      .metricApproximateNumberOfMessagesVisible({ period: Duration.minutes(5), statistic: 'Maximum' })
      .createAlarm(this, 'DeadLetterAlarm', {
        alarmDescription:
          'Longhaul job messages reached the dead-letter queue: they failed every delivery attempt. ' +
          'Inspect them, fix the cause, then move them back with StartMessageMoveTask.',
        threshold: 1,
        evaluationPeriods: 1,
        comparisonOperator: ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
        // An idle queue publishes no datapoints; that is the healthy case.
        treatMissingData: TreatMissingData.NOT_BREACHING,
      });
    props.alarms.notify(this.deadLetterAlarm);

    this.oldestMessageAlarms = byProvider((provider) => {
      const alarm = this.queues[provider]
        .metricApproximateAgeOfOldestMessage({ period: Duration.minutes(5), statistic: 'Maximum' })
        .createAlarm(this, `OldestMessageAlarm${providerIdSuffix(provider)}`, {
          alarmDescription:
            `A Longhaul job message has waited in the jobs queue of provider ${provider} for more than ${oldestMessageSeconds} seconds without dispatch taking it. ` +
            'Check the dispatch function: its errors, throttles and its event source mapping (disabled, or failing).',
          threshold: oldestMessageSeconds,
          evaluationPeriods: 1,
          comparisonOperator: ComparisonOperator.GREATER_THAN_THRESHOLD,
          // SQS stops publishing for a queue idle for six hours: nothing is waiting then.
          treatMissingData: TreatMissingData.NOT_BREACHING,
        });
      props.alarms.notify(alarm);
      return alarm;
    });

    this.handOffOldestMessageAlarm = this.handOffQueue
      .metricApproximateAgeOfOldestMessage({ period: Duration.minutes(5), statistic: 'Maximum' })
      .createAlarm(this, 'HandOffOldestMessageAlarm', {
        alarmDescription:
          `A Longhaul job handed a freed slot has waited in the hand-off queue for more than ${oldestMessageSeconds} seconds without dispatch taking it, ` +
          "while the slot it holds sits idle. Check the dispatch function: its errors, throttles and the hand-off queue's event source mapping.",
        threshold: oldestMessageSeconds,
        evaluationPeriods: 1,
        comparisonOperator: ComparisonOperator.GREATER_THAN_THRESHOLD,
        treatMissingData: TreatMissingData.NOT_BREACHING,
      });
    props.alarms.notify(this.handOffOldestMessageAlarm);
  }
}

function byProvider<T>(create: (provider: ProviderName) => T): { readonly [P in ProviderName]: T } {
  return Object.fromEntries(PROVIDER_NAMES.map((provider) => [provider, create(provider)])) as {
    readonly [P in ProviderName]: T;
  };
}
