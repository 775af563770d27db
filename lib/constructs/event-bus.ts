import { Stack } from 'aws-cdk-lib';
import { EventBus } from 'aws-cdk-lib/aws-events';
import type { Grant, IGrantable } from 'aws-cdk-lib/aws-iam';
import { Construct } from 'constructs';
import { EVENT_DETAIL_TYPES, EVENT_SOURCE } from '../../config/events';

export interface LifecycleEventBusProps {
  /**
   * The bus's name. Other teams' rules name the bus, so it is a fixed,
   * readable name rather than a generated one; two deployments in one
   * account and Region are two stacks, so two names.
   * @default - the stack's name
   */
  readonly eventBusName?: string;
}

/**
 * The deployment's custom EventBridge bus, where Longhaul puts every job and
 * media lifecycle change (`source` "longhaul", detail-types and detail
 * schemas in config/events.ts) for other teams to hang their own rules and
 * targets on, as a client hangs a webhook on a job. Longhaul itself puts
 * events only: it makes no rules, so nothing here delivers anywhere until a
 * consumer adds a rule.
 *
 * Only the functions given `grantPut` may put events, and on this bus alone
 * (`events:PutEvents` on its ARN). The bus has no resource policy: other
 * accounts neither put nor read.
 */
export class LifecycleEventBus extends Construct {
  public readonly eventBus: EventBus;
  /** The bus's name, for a function's EVENT_BUS_NAME and for consumers' rules. */
  public readonly eventBusName: string;
  public readonly eventBusArn: string;
  /** What every Longhaul event carries as `source`, and its detail-types: the fields a rule matches on. */
  public readonly source = EVENT_SOURCE;
  public readonly detailTypes = EVENT_DETAIL_TYPES;

  constructor(scope: Construct, id: string, props: LifecycleEventBusProps = {}) {
    super(scope, id);
    this.eventBus = new EventBus(this, 'Bus', {
      eventBusName: props.eventBusName ?? Stack.of(this).stackName,
      description: `Longhaul lifecycle events (source "${EVENT_SOURCE}"): job and media status changes`,
    });
    this.eventBusName = this.eventBus.eventBusName;
    this.eventBusArn = this.eventBus.eventBusArn;
  }

  /** Lets `grantee` put events on this bus and nothing else of EventBridge. */
  public grantPut(grantee: IGrantable): Grant {
    return this.eventBus.grantPutEventsTo(grantee);
  }
}
