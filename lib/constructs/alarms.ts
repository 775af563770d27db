import { Aws } from 'aws-cdk-lib';
import type { AlarmBase } from 'aws-cdk-lib/aws-cloudwatch';
import { SnsAction } from 'aws-cdk-lib/aws-cloudwatch-actions';
import { PolicyStatement, ServicePrincipal } from 'aws-cdk-lib/aws-iam';
import { Key } from 'aws-cdk-lib/aws-kms';
import { Topic } from 'aws-cdk-lib/aws-sns';
import { EmailSubscription } from 'aws-cdk-lib/aws-sns-subscriptions';
import { Construct } from 'constructs';

// Deliberately loose: SNS validates the address; this only catches obvious typos at synth time.
const EMAIL = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;

export interface AlarmsProps {
  /**
   * An address subscribed to the alarm topic (SNS sends it a confirmation mail first).
   * @default - no subscription; subscribe to the `AlarmTopicArn` output yourself
   */
  readonly email?: string;
}

/**
 * Where every Longhaul alarm goes: one SNS topic, encrypted with its own
 * customer-managed key (rotated yearly) and reachable only over TLS.
 */
export class Alarms extends Construct {
  /** The topic every alarm notifies, on alarm and on recovery. */
  public readonly topic: Topic;
  /** The key encrypting the topic's messages at rest. */
  public readonly key: Key;

  private readonly notified: AlarmBase[] = [];

  constructor(scope: Construct, id: string, props: AlarmsProps = {}) {
    super(scope, id);
    if (props.email !== undefined && !EMAIL.test(props.email)) {
      throw new Error(
        `Alarms ${this.node.path}: email must be an e-mail address, got ${JSON.stringify(props.email)}`,
      );
    }

    const cloudWatch = new ServicePrincipal('cloudwatch.amazonaws.com');
    // A customer-managed key rather than alias/aws/sns: CloudWatch can only publish
    // to an encrypted topic if the key policy lets it use the key, and the policy of
    // an AWS-managed key cannot be changed.
    this.key = new Key(this, 'Key', {
      description: 'Encrypts the Longhaul alarm topic',
      enableKeyRotation: true,
    });
    this.key.grant(cloudWatch, 'kms:Decrypt', 'kms:GenerateDataKey*');

    this.topic = new Topic(this, 'Topic', {
      displayName: 'Longhaul alarms',
      masterKey: this.key,
      enforceSSL: true,
    });
    // The topic policy replaces SNS's default one, so CloudWatch needs an explicit
    // allow; it is limited to alarms of this account and region.
    this.topic.addToResourcePolicy(
      new PolicyStatement({
        sid: 'AllowCloudWatchAlarmsOfThisAccount',
        principals: [cloudWatch],
        actions: ['sns:Publish'],
        resources: [this.topic.topicArn],
        conditions: {
          StringEquals: { 'aws:SourceAccount': Aws.ACCOUNT_ID },
          ArnLike: {
            'aws:SourceArn': `arn:${Aws.PARTITION}:cloudwatch:${Aws.REGION}:${Aws.ACCOUNT_ID}:alarm:*`,
          },
        },
      }),
    );
    if (props.email !== undefined) this.topic.addSubscription(new EmailSubscription(props.email));
  }

  /** Sends `alarm`'s state changes (into ALARM and back to OK) to the alarm topic. */
  public notify(alarm: AlarmBase): void {
    const action = new SnsAction(this.topic);
    alarm.addAlarmAction(action);
    alarm.addOkAction(action);
    this.notified.push(alarm);
  }

  /** Every alarm passed to `notify` so far, in that order (a copy). */
  public get alarms(): AlarmBase[] {
    return [...this.notified];
  }
}
