import { ArnFormat, Aws, Duration, Stack } from 'aws-cdk-lib';
import { type Alarm, ComparisonOperator, TreatMissingData } from 'aws-cdk-lib/aws-cloudwatch';
import type { ITable } from 'aws-cdk-lib/aws-dynamodb';
import { PolicyStatement, Role, ServicePrincipal } from 'aws-cdk-lib/aws-iam';
import { Schedule, ScheduleExpression, TimeWindow } from 'aws-cdk-lib/aws-scheduler';
import { LambdaInvoke } from 'aws-cdk-lib/aws-scheduler-targets';
import type { ISecret } from 'aws-cdk-lib/aws-secretsmanager';
import type { IQueue } from 'aws-cdk-lib/aws-sqs';
import type { StateMachine } from 'aws-cdk-lib/aws-stepfunctions';
import { Construct } from 'constructs';
import type { ProviderName } from '../../config/providers';
import type { Settings } from '../../config/settings';
import { handlerEntry } from '../handlers';
import { longhaulMetric } from '../metrics';
import { acknowledge, iam5ResourceFinding } from '../nag';
import type { Alarms } from './alarms';
import { ProjectFunction } from './project-function';

/** Consecutive failing (or missing) passes before an alarm: one bad pass is noise, three are a trend. */
const PASSES_BEFORE_ALARM = 3;

/** CloudWatch evaluates an alarm over at most one day, so three passes must fit in it. */
const LONGEST_PASS_INTERVAL_SECONDS = 86_400 / PASSES_BEFORE_ALARM;

const RATE = /^rate\((\d+) (minute|minutes|hour|hours)\)$/;

export interface ReconcilerProps {
  /** Longhaul settings: the schedule (`reconcileSchedule`), the handler's environment and log retention. */
  readonly settings: Settings;
  /** The job table: the active-jobs index, jobs, the slot item and the timelines. */
  readonly jobTable: ITable;
  /** Each provider's jobs queue; jobs whose message was lost are enqueued again in their provider's. */
  readonly jobQueues: Readonly<Record<ProviderName, IQueue>>;
  /** The hand-off lane; a slot a pass frees is handed to the job that waited longest through it. */
  readonly handOffQueue: IQueue;
  /** The media workflow: its executions are described, stopped and (for dead ones) started again. */
  readonly stateMachine: StateMachine;
  /** Each provider's secret (API key, webhook signing key); the reconciler asks the provider about jobs whose webhooks were lost. */
  readonly providerSecrets: Readonly<Record<ProviderName, ISecret>>;
  /** Where the reconciler's alarms are sent. */
  readonly alarms: Alarms;

  /**
   * Entry file of the reconcile handler.
   * @default lambdas/reconcile/handler.ts
   */
  readonly entry?: string;
}

/**
 * The reconciliation loop: EventBridge Scheduler runs one pass over the active
 * jobs on `reconcileSchedule`, converging each job to its true state whatever
 * events were lost. Passes are safe to overlap, so the function has no reserved
 * concurrency, and a failed pass is not retried: the next one comes soon.
 *
 * The function moves jobs between statuses, so it needs the live channel too:
 * `LiveProgress.grantPublish` gives it (the stack does).
 */
export class Reconciler extends Construct {
  /** One reconciliation pass per invocation. */
  public readonly reconcileFunction: ProjectFunction;
  /** The schedule invoking it. */
  public readonly schedule: Schedule;
  /** The role EventBridge Scheduler invokes the function with. */
  public readonly schedulerRole: Role;
  /** In ALARM when three passes in a row failed. */
  public readonly errorsAlarm: Alarm;
  /**
   * In ALARM when three passes in a row could not reconcile some job (the
   * ReconcilerErrors metric): the pass itself finished, so `errorsAlarm` stays quiet.
   */
  public readonly jobErrorsAlarm: Alarm;
  /** In ALARM when no pass ran for three periods: the schedule is off or cannot invoke the function. */
  public readonly stalledAlarm: Alarm;

  constructor(scope: Construct, id: string, props: ReconcilerProps) {
    super(scope, id);
    const { settings, stateMachine } = props;
    const intervalSeconds = rateSeconds(settings.reconcileSchedule);
    if (intervalSeconds === undefined) {
      throw new Error(
        `Reconciler ${this.node.path}: schedule must be rate(1 minute), rate(N minutes), rate(1 hour) or rate(N hours) with N > 1, got ${JSON.stringify(settings.reconcileSchedule)}`,
      );
    }
    if (intervalSeconds > LONGEST_PASS_INTERVAL_SECONDS) {
      throw new Error(
        `Reconciler ${this.node.path}: schedule must run at least every ${LONGEST_PASS_INTERVAL_SECONDS / 3600} hours (its alarms look at ${PASSES_BEFORE_ALARM} consecutive passes, and CloudWatch looks back at most one day), got ${settings.reconcileSchedule}`,
      );
    }

    this.reconcileFunction = new ProjectFunction(this, 'ReconcileFunction', {
      entry: props.entry ?? handlerEntry('reconcile'),
      settings,
      serviceName: 'reconcile',
      description: 'Longhaul reconciler: converges every active job to its true state',
      // A pass reads every active job and may call the provider for each.
      timeout: Duration.minutes(5),
      memorySize: 512,
    })
      .useTable('jobTable', props.jobTable, 'readWrite')
      .useJobQueues(props.jobQueues, 'send')
      .useQueue('handOffQueueUrl', props.handOffQueue, 'send')
      .useStateMachine('stateMachineArn', stateMachine)
      .useProviderSecrets(props.providerSecrets)
      // Completes steps whose provider finished unheard, and keeps waiting steps alive.
      .allowTaskResponses();

    // Executions are named after their job, so their ARNs are known only at run time.
    const executions = Stack.of(this).formatArn({
      service: 'states',
      resource: 'execution',
      resourceName: `${stateMachine.stateMachineName}:*`,
      arnFormat: ArnFormat.COLON_RESOURCE_NAME,
    });
    this.reconcileFunction.role.addToPrincipalPolicy(
      new PolicyStatement({
        // RedriveExecution: a resume that stopped between its write and its redrive is redriven here.
        actions: ['states:DescribeExecution', 'states:StopExecution', 'states:RedriveExecution'],
        resources: [executions],
      }),
    );
    acknowledge(
      this.reconcileFunction.role,
      iam5ResourceFinding(this, executions, ''),
      'Executions are named after their job at run time, so describing, stopping and redriving them is granted on every execution (":*") of this one state machine; executions of other state machines stay out of reach.',
    );

    const scheduleGroupArn = Stack.of(this).formatArn({
      service: 'scheduler',
      resource: 'schedule-group',
      resourceName: 'default',
    });
    this.schedulerRole = new Role(this, 'SchedulerRole', {
      description: `Lets EventBridge Scheduler invoke ${this.node.path}`,
      // Only schedules of this account's default group may use it (no confused deputy).
      assumedBy: new ServicePrincipal('scheduler.amazonaws.com', {
        conditions: {
          StringEquals: { 'aws:SourceAccount': Aws.ACCOUNT_ID, 'aws:SourceArn': scheduleGroupArn },
        },
      }),
    });
    this.schedule = new Schedule(this, 'Schedule', {
      description: 'Runs one Longhaul reconciliation pass',
      schedule: ScheduleExpression.expression(settings.reconcileSchedule),
      // Passes should be evenly spaced; a flexible window would bunch them up.
      timeWindow: TimeWindow.off(),
      target: new LambdaInvoke(this.reconcileFunction.lambdaFunction, {
        role: this.schedulerRole,
        // A pass that cannot start now is worth nothing later: the next tick comes soon.
        retryAttempts: 0,
        maxEventAge: Duration.minutes(1),
      }),
    });
    acknowledge(
      this.schedulerRole,
      iam5ResourceFinding(this, this.reconcileFunction.lambdaFunction.functionArn, ':*'),
      'The scheduler may invoke the reconcile function and its versions and aliases (":*"), as the Lambda target grants it; no other function is reachable.',
    );

    const period = Duration.seconds(intervalSeconds);
    const fn = this.reconcileFunction.lambdaFunction;
    this.errorsAlarm = fn.metricErrors({ period, statistic: 'Sum' }).createAlarm(this, 'ErrorsAlarm', {
      alarmDescription: `The Longhaul reconciler failed ${PASSES_BEFORE_ALARM} passes in a row: lost events are not being repaired. Check its logs.`,
      threshold: 0,
      comparisonOperator: ComparisonOperator.GREATER_THAN_THRESHOLD,
      evaluationPeriods: PASSES_BEFORE_ALARM,
      datapointsToAlarm: PASSES_BEFORE_ALARM,
      // A period without a finished pass reports no errors.
      treatMissingData: TreatMissingData.NOT_BREACHING,
    });
    props.alarms.notify(this.errorsAlarm);
    this.jobErrorsAlarm = longhaulMetric(
      { name: 'ReconcilerErrors', service: 'reconcile', dimensions: {} },
      { period, statistic: 'Sum' },
    ).createAlarm(this, 'JobErrorsAlarm', {
      alarmDescription: `${PASSES_BEFORE_ALARM} Longhaul reconciler passes in a row could not reconcile some jobs: those jobs are not being repaired. The reconciler's log names each one ("reconciling a job failed").`,
      threshold: 0,
      comparisonOperator: ComparisonOperator.GREATER_THAN_THRESHOLD,
      evaluationPeriods: PASSES_BEFORE_ALARM,
      datapointsToAlarm: PASSES_BEFORE_ALARM,
      // A pass that did not finish reports nothing; errorsAlarm and stalledAlarm cover that.
      treatMissingData: TreatMissingData.NOT_BREACHING,
    });
    props.alarms.notify(this.jobErrorsAlarm);
    this.stalledAlarm = fn.metricInvocations({ period, statistic: 'Sum' }).createAlarm(this, 'StalledAlarm', {
      alarmDescription: `The Longhaul reconciler has not run for ${PASSES_BEFORE_ALARM} periods: its schedule is disabled or cannot invoke it, and lost events are not being repaired.`,
      threshold: 1,
      comparisonOperator: ComparisonOperator.LESS_THAN_THRESHOLD,
      evaluationPeriods: PASSES_BEFORE_ALARM,
      datapointsToAlarm: PASSES_BEFORE_ALARM,
      // No invocations publish no datapoints: exactly the case to alarm on.
      treatMissingData: TreatMissingData.BREACHING,
    });
    props.alarms.notify(this.stalledAlarm);
  }
}

/** Seconds between two runs of `rate(N unit)`, or undefined for anything Scheduler would refuse. */
function rateSeconds(expression: string): number | undefined {
  const match = RATE.exec(expression);
  if (!match) return undefined;
  const value = Number(match[1]);
  const unit = match[2] as string;
  // Scheduler wants the singular unit for 1 and the plural for more.
  if (value < 1 || (value === 1) !== !unit.endsWith('s')) return undefined;
  return value * (unit.startsWith('hour') ? 3600 : 60);
}
