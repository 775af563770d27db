import { Aws, Duration, Fn, Names, RemovalPolicy } from 'aws-cdk-lib';
import { type Alarm, ComparisonOperator, type Metric, TreatMissingData } from 'aws-cdk-lib/aws-cloudwatch';
import { Policy, PolicyStatement } from 'aws-cdk-lib/aws-iam';
import type { IFunction } from 'aws-cdk-lib/aws-lambda';
import { LogGroup, type RetentionDays } from 'aws-cdk-lib/aws-logs';
import {
  type Chain,
  Choice,
  Condition,
  DefinitionBody,
  Fail,
  type IChainable,
  IntegrationPattern,
  JitterType,
  JsonPath,
  LogLevel,
  Map as MapState,
  Parallel,
  Pass,
  Result,
  type RetryProps,
  StateMachine,
  StateMachineType,
  Succeed,
  TaskInput,
  type TaskStateBase,
  Timeout,
} from 'aws-cdk-lib/aws-stepfunctions';
import { LambdaInvoke } from 'aws-cdk-lib/aws-stepfunctions-tasks';
import { Construct } from 'constructs';
import { JOB_TYPE_MODULES } from '../../config/job-types';
import { PUBLISH_TIMEOUT_MS } from '../../config/job-types/audio-publish';
import type { WorkflowStep } from '../../config/layout';
import type { Settings } from '../../config/settings';
import { LambdaInvokeError, StatesError, StepError } from '../../config/workflow-errors';
import { acknowledge, acknowledgeActionsOnAnyResource, iam5ResourceFinding } from '../nag';
import type { Alarms } from './alarms';

type StepName = WorkflowStep;

/** Where a Catch puts what it caught (`{Error, Cause}`); the fail and review steps read it from there. */
const ERROR_PATH = '$.error';

/** Where the failure path keeps the name of the state that failed, for a resume to go back to. */
const FAILED_AT_PATH = '$.failedAt';

/** The compute steps of audio.publish, as the compute function and the Fargate task name them. */
type ComputeStep = 'probe' | 'transcode' | 'split' | 'index';

/**
 * Where audio.publish's compute steps run (`MediaCompute`): the compute
 * function, and a Fargate task for recordings too long for it.
 */
export interface ComputePlaces {
  readonly computeFunction: IFunction;
  /** An `ecs:runTask.sync` state running one compute step on Fargate; its answer is the task's description. */
  fargateStep(scope: Construct, stateName: string, step: ComputeStep): TaskStateBase;
}

const seconds = Duration.seconds;

/** The steps that wait, with a task token, for a job: the provider's, or a child job of the publish flow. */
const WAITS_FOR_A_JOB: ReadonlySet<StepName> = new Set(['await', 'transcribe', 'embed', 'await-children']);

/** The steps that may free a provider slot (`release`, and `settle` and `review`, which release): they hand it on. */
const HANDS_SLOTS_ON: ReadonlySet<StepName> = new Set(['release', 'settle', 'review']);

/**
 * Lambda refused to start the steps function: the account's or the function's
 * concurrency or invoke rate is exhausted (small on new accounts). Step
 * Functions reports that as Lambda.TooManyRequestsException, which CDK's
 * default Lambda retry does not cover. The function never ran, so retrying is
 * safe for every step, including submit; without it a throttle would fall into
 * the steps' catches (the failure path). Full jitter spreads the tries of the
 * executions throttled together; the tries span about two minutes, longer than
 * a running step (the function's timeout) holds the capacity it is waiting for.
 * The other throttling errors of Invoke (EC2ThrottledException,
 * ENILimitReachedException) come from VPC networking, which the steps function
 * does not use.
 */
const RETRY_THROTTLED: RetryProps = {
  errors: [LambdaInvokeError.tooManyRequests],
  interval: seconds(1),
  backoffRate: 2,
  maxAttempts: 8,
  maxDelay: seconds(30),
  jitterStrategy: JitterType.FULL,
};

/** Bookkeeping steps (fail, review, settle) only touch the job table: a few quick tries. */
const RETRY_BOOKKEEPING: RetryProps = {
  errors: [StatesError.all],
  interval: seconds(1),
  backoffRate: 2,
  maxAttempts: 3,
};
/** A job settled elsewhere stays settled: ahead of a States.ALL retrier, it goes straight to its catch. */
const NO_RETRY_SETTLED: RetryProps = { errors: [StepError.jobSettled], maxAttempts: 0 };
/**
 * Releasing a slot should happen at once, or the slot stays held until the
 * reconciler frees it. Every release of a provider writes its one pool item,
 * so releases that fail together (contention on that item) must not try
 * again together: full jitter.
 */
const RETRY_RELEASE: RetryProps = {
  errors: [StatesError.all],
  interval: seconds(1),
  backoffRate: 2,
  maxAttempts: 5,
  jitterStrategy: JitterType.FULL,
};
/** A client webhook endpoint may be down for a while; spread the tries over a few minutes. */
const RETRY_WEBHOOK: RetryProps = {
  errors: [StepError.webhookDeliveryFailed],
  interval: seconds(5),
  backoffRate: 2,
  maxAttempts: 5,
  maxDelay: seconds(120),
  jitterStrategy: JitterType.FULL,
};

/**
 * A notify step's retries: its webhook's long ones, then a few quick ones for what else it does (the
 * job's event on the bus, a succeeded job's follow-ups), which a catch would otherwise drop at once.
 */
const NOTIFY_RETRIES: readonly RetryProps[] = [RETRY_WEBHOOK, NO_RETRY_SETTLED, RETRY_BOOKKEEPING];

/**
 * A step that needs a provider that throttles or is down (`WaitingForProvider`) is tried again at the pace
 * of the provider's pauses (doubling from the first pause up to the longest), for as long as the job's own
 * timeout: full jitter waits half of each delay on average, so the tries are counted over twice the timeout.
 */
export function waitingForProvider(settings: Settings): RetryProps {
  const first = settings.providerPauseSeconds;
  const longest = Math.max(first, settings.providerPauseMaxSeconds);
  return {
    errors: [StepError.waitingForProvider],
    interval: seconds(first),
    backoffRate: 2,
    maxDelay: seconds(longest),
    maxAttempts: attemptsSpanning(first, longest, (2 * settings.jobTimeoutMs) / 1000),
    jitterStrategy: JitterType.FULL,
  };
}

/**
 * How many tries of a retrier doubling from `first` up to `longest` seconds it takes for the delays to
 * add up to `span` seconds: full jitter waits half of each delay on average, so callers ask for twice
 * the time they mean to wait.
 */
function attemptsSpanning(first: number, longest: number, span: number): number {
  let attempts = 0;
  for (let waited = 0, delay = first; waited < span; attempts++, delay = Math.min(longest, delay * 2)) {
    waited += delay;
  }
  return Math.max(1, attempts);
}

/**
 * A compute step that Lambda refused to start waits for compute capacity: the compute function's
 * reservation (COMPUTE_CONCURRENCY) or the account's concurrency is taken by steps that may each run
 * for the function's whole timeout, so the tries span twice that timeout (full jitter halves it). The
 * service errors of an invoke that never reached the function wait the same way; what a try costs is
 * one transition, nothing is charged.
 */
export function waitingForCompute(settings: Settings): RetryProps {
  const longest = 60;
  return {
    errors: [
      LambdaInvokeError.tooManyRequests,
      LambdaInvokeError.service,
      LambdaInvokeError.awsLambda,
      LambdaInvokeError.sdkClient,
    ],
    interval: seconds(1),
    backoffRate: 2,
    maxDelay: seconds(longest),
    maxAttempts: attemptsSpanning(1, longest, 2 * settings.computeTimeoutSeconds),
    jitterStrategy: JitterType.FULL,
  };
}

/** An invoke whose answer did not come back in time may have run the step: a few tries, as CDK's default retry. */
const RETRY_CLIENT_TIMEOUT: RetryProps = {
  errors: [LambdaInvokeError.clientExecutionTimeout],
  interval: seconds(2),
  backoffRate: 2,
  maxAttempts: 6,
};

export interface JobWorkflowProps {
  /** Longhaul settings: the await step's timeout and heartbeat, and the log retention. */
  readonly settings: Settings;

  /**
   * The one function that runs every step (lambdas/workflow/handler.ts); each
   * Task state names its step in the payload.
   */
  readonly stepsFunction: IFunction;

  /**
   * Where the workflow's alarms are sent.
   * @default - the alarms are created but notify nobody; only for building the
   * definition outside the deployed stack (see lib/workflow-definition.ts)
   */
  readonly alarms?: Alarms;

  /**
   * Where audio.publish's compute steps run. Without it the state machine
   * has no publish branch (the definition built alone, for tests of the
   * single-submission path).
   */
  readonly compute?: ComputePlaces;
}

/**
 * The media workflow: a Standard state machine (task tokens need Standard, and
 * jobs run longer than Express allows) whose Task states all invoke one steps
 * function. State names are the contract's step names.
 *
 *   prepare ▶ submit ▶ await (task token) ▶ release ▶ finalize ▶ notify ▶ succeeded
 *   any step's unexpected error ▶ failed-at-<step> ▶ on-failure ▶ notify-failure ▶ release-after-failure ▶ failed
 *   (a redrive after a resume) failed ▶ resume-at ▶ the step that failed
 *   NeedsReview, or no word from the provider in time ▶ review ▶ needs-review
 *   JobSettled / JobCanceled (finished elsewhere) ▶ settle ▶ notify-settled ▶ settled
 *   audio.publish canceled ▶ await-children (until every child job is settled) ▶ settle ▶ …
 *
 * Every Task discards its result, so the execution input `{jobId}` flows through
 * unchanged; Catch clauses add what they caught at `$.error`, and the failure
 * path the failed step's name at `$.failedAt`. `failed` is a Task (step
 * `park`), not a Fail state: the execution fails there while the job is
 * failed, so a redrive runs it again and goes back to the failed step. The slot is
 * released right after the provider is done, before finalize and notify, so a
 * slow client webhook never holds provider capacity.
 *
 * Logs go to the workflow's own log group at level ERROR and without execution
 * data (payloads and errors can carry prompts); executions are traced with X-Ray.
 */
export class JobWorkflow extends Construct {
  /** The Standard state machine; each execution is named after its job. */
  public readonly stateMachine: StateMachine;
  /** The state machine's execution log. */
  public readonly logGroup: LogGroup;
  /** In ALARM when an execution was stopped: its job's slot stays held until the reconciler frees it. */
  public readonly abortedAlarm: Alarm;
  /** In ALARM when an execution ran out of time. */
  public readonly timedOutAlarm: Alarm;
  /** In ALARM when Step Functions throttled StartExecution: jobs wait in the queue longer. */
  public readonly throttledAlarm: Alarm;

  constructor(scope: Construct, id: string, props: JobWorkflowProps) {
    super(scope, id);
    const { settings, stepsFunction } = props;
    const awaitTimeoutSeconds = Math.ceil(settings.jobTimeoutMs / 1000);
    // loadSettings guarantees the heartbeat is shorter than the timeout, as Step Functions requires.
    const awaitHeartbeatSeconds = settings.awaitHeartbeatSeconds;

    const states = new Construct(this, 'States');
    const step = (
      stateName: string,
      name: StepName,
      options: {
        readonly retries?: readonly RetryProps[];
        readonly withError?: boolean;
        /** Keep the step's answer here (`resultSelector` of the Lambda payload); discarded otherwise. */
        readonly resultAt?: { readonly path: string; readonly selector: Record<string, string> };
      } = {},
    ): LambdaInvoke => {
      const task = new LambdaInvoke(states, stateName, {
        stateName,
        lambdaFunction: stepsFunction,
        payload: TaskInput.fromObject({
          step: name,
          jobId: JsonPath.stringAt('$.jobId'),
          retryCount: JsonPath.numberAt('$$.State.RetryCount'),
          executionName: JsonPath.stringAt('$$.Execution.Name'),
          ...(WAITS_FOR_A_JOB.has(name) ? { taskToken: JsonPath.taskToken } : {}),
          ...(name === 'transcribe' ? { chunk: JsonPath.objectAt('$.chunk') } : {}),
          ...(name === 'embed'
            ? { run: JsonPath.objectAt('$.run'), passagesKey: JsonPath.stringAt('$.passagesKey') }
            : {}),
          ...(name === 'store-vectors'
            ? {
                passagesKey: JsonPath.stringAt('$.embedding.passagesKey'),
                embedded: JsonPath.listAt('$.embedded'),
              }
            : {}),
          // A step that may free a slot starts the next job's execution itself, on its own state machine.
          ...(HANDS_SLOTS_ON.has(name) ? { stateMachineArn: JsonPath.stringAt('$$.StateMachine.Id') } : {}),
          ...(options.withError ? { error: JsonPath.objectAt(ERROR_PATH) } : {}),
          ...(name === 'park' ? { failedAt: JsonPath.stringAt(FAILED_AT_PATH) } : {}),
        }),
        payloadResponseOnly: false,
        retryOnServiceExceptions: true,
        ...(options.resultAt
          ? { resultSelector: options.resultAt.selector, resultPath: options.resultAt.path }
          : name === 'embed'
            ? // A run's answer, {index, jobId} of its embedding job, is all the iteration passes on.
              { resultPath: '$.embedded', outputPath: '$.embedded' }
            : { resultPath: JsonPath.DISCARD }),
        ...(name === 'await'
          ? {
              integrationPattern: IntegrationPattern.WAIT_FOR_TASK_TOKEN,
              taskTimeout: Timeout.duration(seconds(awaitTimeoutSeconds)),
              heartbeatTimeout: Timeout.duration(seconds(awaitHeartbeatSeconds)),
            }
          : {}),
        // A chunk (a run of passages) waits for a slot in its tenant's line, then for the provider: bounded by
        // the job's own timeout.
        ...(name === 'transcribe' || name === 'embed' || name === 'await-children'
          ? {
              integrationPattern: IntegrationPattern.WAIT_FOR_TASK_TOKEN,
              taskTimeout: Timeout.duration(seconds(PUBLISH_TIMEOUT_MS / 1000)),
            }
          : {}),
      });
      // First among the step's own retriers: a States.ALL retrier would otherwise take throttles with its few tries.
      for (const retry of [RETRY_THROTTLED, ...(options.retries ?? [])]) task.addRetry(retry);
      return task;
    };
    const catchInto = (errors: string[]) => ({ errors, resultPath: ERROR_PATH });

    const succeeded = new Succeed(states, 'succeeded');
    const settled = new Succeed(states, 'settled', { comment: 'The job was finished elsewhere.' });
    // The failure path ends at a Task, not a Fail state, so that the execution fails *there*: a
    // redrive (a resume) runs it again, and it goes back to the state that failed, with the input
    // that state had, once the job was resumed. While the job is failed it fails the execution.
    // A resumed job that waits in its tenant's line for its slot parks here again, at once (no retry
    // spends transitions on the wait): the grant of its slot redrives the execution.
    const failed = step('failed', 'park');
    const notResumable = new Fail(states, 'not-resumable', {
      error: StepError.jobFailed,
      cause: 'The failed state is not one a resume can go back to.',
    });
    /** The states whose unexpected errors take the failure path, each a state a resume goes back to. */
    const resumable: { readonly stateName: string; readonly state: IChainable }[] = [];
    const needsReview = new Fail(states, 'needs-review', {
      error: StepError.needsReview,
      cause: 'The job needs an operator; its reason is on the job.',
    });

    // A failure notifies before releasing the slot; its webhook gets the short
    // bookkeeping retries, not the long webhook ones, to hold the slot briefly.
    // A release that keeps failing never fails the job: the reconciler frees the slot of a finished job.
    const releaseLeftToReconciler = { errors: [StatesError.all], resultPath: JsonPath.DISCARD };
    const releaseAfterFailure = step('release-after-failure', 'release', { retries: [RETRY_RELEASE] });
    releaseAfterFailure.addCatch(failed, releaseLeftToReconciler);
    releaseAfterFailure.next(failed);
    const notifyFailure = step('notify-failure', 'notify', { retries: [RETRY_BOOKKEEPING] });
    notifyFailure.addCatch(releaseAfterFailure, catchInto([StatesError.all]));
    notifyFailure.next(releaseAfterFailure);
    const onFailure = step('on-failure', 'fail', {
      retries: [NO_RETRY_SETTLED, RETRY_BOOKKEEPING],
      withError: true,
    });
    onFailure.next(notifyFailure);
    /**
     * The state's unexpected errors take the failure path through a Pass
     * state that names it (`failedAt`); the Catch keeps the state's input
     * beside the error, and nothing on the path replaces it, so a resume
     * finds both where the execution failed.
     */
    const onFailureOf = (state: TaskStateBase | MapState | Parallel): void => {
      // Every state here is created with its name as its id.
      const stateName = state.id;
      const record = new Pass(states, `failed-at-${stateName}`, {
        stateName: `failed-at-${stateName}`,
        result: Result.fromString(stateName),
        resultPath: FAILED_AT_PATH,
      });
      record.next(onFailure);
      state.addCatch(record, catchInto([StatesError.all]));
      resumable.push({ stateName, state });
    };

    // The review step decides itself whether the slot may go (an ambiguous submission keeps it).
    const review = step('review', 'review', { retries: [RETRY_BOOKKEEPING], withError: true });
    review.next(needsReview);

    const notifySettled = step('notify-settled', 'notify', { retries: NOTIFY_RETRIES });
    notifySettled.addCatch(settled, catchInto([StatesError.all]));
    notifySettled.next(settled);
    const settle = step('settle', 'settle', { retries: [RETRY_BOOKKEEPING] });
    settle.next(notifySettled);

    // prepare answers how the job runs (its type's flow), for the route below.
    const prepare = step('prepare', 'prepare', {
      resultAt: { path: '$.prepared', selector: { 'flow.$': '$.Payload.flow' } },
      retries: [
        {
          errors: [StepError.assetUnavailable],
          interval: seconds(2),
          backoffRate: 2,
          maxAttempts: 3,
          jitterStrategy: JitterType.FULL,
        },
      ],
    });
    prepare.addCatch(settle, catchInto([StepError.jobSettled]));
    onFailureOf(prepare);

    // A provider that throttles or is down is not retried here, holding the slot until the retries run out:
    // the step pauses the provider's grants and puts the job back in its line, and this run ends.
    const backInLine = new Succeed(states, 'back-in-line', {
      comment: 'The provider throttled or was down: the job waits in its line for a new run.',
    });
    const submit = step('submit', 'submit', {
      retries: [
        // Only reached with a provider that deduplicates: the step resends the same key.
        {
          errors: [StepError.providerAmbiguous],
          interval: seconds(2),
          backoffRate: 2,
          maxAttempts: 3,
          jitterStrategy: JitterType.FULL,
        },
      ],
    });
    // Resends that all ended with an unknown outcome: the provider may be running it, so review, not failure.
    submit.addCatch(review, catchInto([StepError.needsReview, StepError.providerAmbiguous]));
    submit.addCatch(settle, catchInto([StepError.jobSettled]));
    submit.addCatch(backInLine, catchInto([StepError.providerPaused]));
    onFailureOf(submit);

    const awaitProvider = step('await', 'await');
    awaitProvider.addCatch(review, catchInto([StatesError.timeout, StatesError.heartbeatTimeout]));
    awaitProvider.addCatch(settle, catchInto([StepError.jobSettled, StepError.jobCanceled]));
    // Also where ProviderJobFailed (sent by whoever resumes the step) goes.
    onFailureOf(awaitProvider);

    const release = step('release', 'release', { retries: [RETRY_RELEASE] });

    const finalize = step('finalize', 'finalize', {
      retries: [
        {
          errors: [StepError.providerUnavailable],
          interval: seconds(2),
          backoffRate: 2,
          maxAttempts: 4,
          jitterStrategy: JitterType.FULL,
        },
        // The provider throttles or is down: its work is done (and paid), so finalize waits for it to answer
        // for as long as the job's own timeout allows, at the pace of the provider's pauses.
        waitingForProvider(settings),
      ],
    });
    // A publish canceled by the time it finalizes waits for its children as any canceled publish does
    // (the publish branch adds that way); settled elsewhere, or any other job, goes to settle.
    const finalizeSettled = props.compute
      ? new Choice(states, 'finalize-settled', {
          comment: 'A canceled publish goes through await-children; any other job straight to settle.',
        })
      : undefined;
    finalize.addCatch(finalizeSettled ?? settle, catchInto([StepError.jobSettled]));
    // A failure that meets a publish being canceled: it ends canceled, through await-children.
    onFailure.addCatch(finalizeSettled ?? settle, catchInto([StepError.jobSettled]));
    // The provider's work is done (and paid): finalizing it never waits on the slot's release.
    release.addCatch(finalize, releaseLeftToReconciler);
    onFailureOf(finalize);

    // The job has succeeded before notify runs; a webhook that keeps failing does not undo that.
    const notify = step('notify', 'notify', { retries: NOTIFY_RETRIES });
    notify.addCatch(succeeded, catchInto([StatesError.all]));

    notify.next(succeeded);
    finalize.next(notify);
    const submission = submit.next(awaitProvider).next(release).next(finalize);
    const definition = props.compute
      ? prepare.next(
          new Choice(states, 'route', {
            comment: "How the job's type runs: one submission, or audio.publish.",
          })
            .when(
              Condition.stringEquals('$.prepared.flow', 'publish'),
              this.publishBranch(states, props, {
                step,
                catchInto,
                review,
                settle,
                onFailureOf,
                finalize,
                finalizeSettled: finalizeSettled as Choice,
              }),
            )
            .otherwise(submission),
        )
      : prepare.next(submission);

    // A resumed job goes back to the state that failed. A publish that failed at finalize goes back to
    // store-vectors: the failure took its passages out of the search index.
    const resumeAt = new Choice(states, 'resume-at', {
      comment: 'A resumed job goes back to the state that failed, with the input it had.',
    });
    const storeVectors = resumable.find((entry) => entry.stateName === 'store-vectors')?.state;
    for (const { stateName, state } of resumable) {
      const target =
        stateName === 'finalize' && storeVectors
          ? new Choice(states, 'resume-finalize')
              .when(Condition.stringEquals('$.prepared.flow', 'publish'), storeVectors)
              .otherwise(state)
          : state;
      resumeAt.when(Condition.stringEquals(FAILED_AT_PATH, stateName), target);
    }
    resumeAt.otherwise(notResumable);
    failed.next(resumeAt);

    // Under /aws/vendedlogs/, as AWS advises for Step Functions: CloudWatch Logs
    // then covers delivery with one entry of the account's log resource policy
    // (limited to 5,120 characters) instead of adding one per log group. The
    // stack's id ends the name, so a re-created stack never meets the group it
    // retained.
    const stackUuid = Fn.select(2, Fn.split('/', Aws.STACK_ID));
    this.logGroup = new LogGroup(this, 'LogGroup', {
      logGroupName: `/aws/vendedlogs/states/${Names.uniqueResourceName(this, { maxLength: 200 })}-${stackUuid}`,
      retention: settings.logRetentionDays as RetentionDays,
      removalPolicy: RemovalPolicy.RETAIN,
    });
    this.stateMachine = new StateMachine(this, 'StateMachine', {
      stateMachineType: StateMachineType.STANDARD,
      comment: 'Longhaul media workflow: one execution per job, named after it',
      definitionBody: DefinitionBody.fromChainable(definition),
      tracingEnabled: true,
      logs: { destination: this.logGroup, level: LogLevel.ERROR, includeExecutionData: false },
    });
    // A freed slot goes straight to the next job's execution. A policy of its own: the steps function's
    // default policy cannot name the state machine that names the function.
    new Policy(this, 'StartNextJob', {
      roles: stepsFunction.role ? [stepsFunction.role] : [],
      statements: [
        new PolicyStatement({
          actions: ['states:StartExecution'],
          resources: [this.stateMachine.stateMachineArn],
        }),
      ],
    });

    // No alarm on ExecutionsFailed: a failed execution is usually a job that
    // legitimately failed (rejected input, a provider failure), reported to its
    // client, and the needs-review end state fails the execution too. Failures
    // alarm on the job metric instead, from a threshold (Observability); stuck
    // and lost work shows up below, in the dead-letter queue and in needs_review jobs.
    const alarmOn = (alarmId: string, metric: Metric, description: string): Alarm => {
      const alarm = metric.createAlarm(this, alarmId, {
        alarmDescription: description,
        threshold: 1,
        evaluationPeriods: 1,
        comparisonOperator: ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
        // No executions, no datapoints: the healthy case.
        treatMissingData: TreatMissingData.NOT_BREACHING,
      });
      props.alarms?.notify(alarm);
      return alarm;
    };
    const every5Minutes = { period: Duration.minutes(5), statistic: 'Sum' } as const;
    this.abortedAlarm = alarmOn(
      'AbortedAlarm',
      this.stateMachine.metricAborted(every5Minutes),
      'A Longhaul workflow execution was stopped. Its job may still hold an in-flight slot until the reconciler frees it; check the job.',
    );
    this.timedOutAlarm = alarmOn(
      'TimedOutAlarm',
      this.stateMachine.metricTimedOut(every5Minutes),
      'A Longhaul workflow execution timed out. Its job may still hold an in-flight slot until the reconciler frees it; check the job.',
    );
    this.throttledAlarm = alarmOn(
      'ThrottledAlarm',
      this.stateMachine.metricThrottled(every5Minutes),
      'Step Functions throttled Longhaul workflow executions; jobs wait in the queue until dispatch retries them.',
    );

    acknowledge(
      this.stateMachine,
      'AwsSolutions-SF1',
      'The workflow logs at level ERROR without execution data: inputs, outputs and errors can carry tenants’ prompts, and every step already writes the job’s timeline and its own structured logs. The execution history keeps every event for 90 days.',
    );
    acknowledgeActionsOnAnyResource(
      this.stateMachine.role,
      [
        'logs:CreateLogDelivery',
        'logs:DeleteLogDelivery',
        'logs:DescribeLogGroups',
        'logs:DescribeResourcePolicies',
        'logs:GetLogDelivery',
        'logs:ListLogDeliveries',
        'logs:PutResourcePolicy',
        'logs:UpdateLogDelivery',
        'xray:GetSamplingRules',
        'xray:GetSamplingTargets',
        'xray:PutTelemetryRecords',
        'xray:PutTraceSegments',
        ...(props.compute ? ['ecs:DescribeTasks', 'ecs:StopTask'] : []),
      ],
      'Step Functions delivers its logs through CloudWatch Logs log delivery, whose actions (and the resource-policy and log-group lookups it makes) the Step Functions and CloudWatch Logs guides require on "*"; the X-Ray actions support no resource-level permissions. ' +
        (props.compute
          ? 'An ecs:runTask.sync state watches and stops the task it started with ecs:DescribeTasks and ecs:StopTask, which Step Functions grants on "*" because the task ARN is known only at run time; ecs:RunTask itself is granted on the one task definition. The role may invoke no function but the steps and compute functions.'
          : 'The role may invoke no function but the steps function.'),
    );
    if (props.compute) {
      acknowledge(
        this.stateMachine.role,
        iam5ResourceFinding(this, props.compute.computeFunction.functionArn, ':*'),
        'Invoking the compute function is granted on the function and its versions and aliases (":*"), which is how Step Functions calls a qualified function.',
      );
    }
    acknowledge(
      this.stateMachine.role,
      iam5ResourceFinding(this, stepsFunction.functionArn, ':*'),
      'Invoking the steps function is granted on the function and its versions and aliases (":*"), which is how Step Functions calls a qualified function; no other function is reachable.',
    );
  }
  /**
   * audio.publish: probe ▶ in parallel {transcode; split ▶ a Map of
   * `transcribe` states, one per chunk, each waiting for its chunk job} ▶
   * index ▶ finalize (shared with the single submission). The heavy steps
   * (transcode, split) run on the compute function, or on Fargate when
   * `probe` chose it for a long recording; a Fargate task's outcome is
   * collected by the compute function after it. No state holds a slot: each
   * chunk job takes one in its tenant's line. Steps pass keys, never payloads.
   */
  private publishBranch(
    states: Construct,
    props: JobWorkflowProps,
    shared: {
      readonly step: (
        stateName: string,
        name: StepName,
        options?: {
          readonly retries?: readonly RetryProps[];
          readonly resultAt?: { readonly path: string; readonly selector: Record<string, string> };
        },
      ) => LambdaInvoke;
      readonly catchInto: (errors: string[]) => { errors: string[]; resultPath: string };
      readonly review: IChainable & LambdaInvoke;
      readonly settle: LambdaInvoke;
      /** Sends the state's unexpected errors down the failure path, as a state a resume can go back to. */
      readonly onFailureOf: (state: TaskStateBase | MapState | Parallel) => void;
      readonly finalize: LambdaInvoke;
      /** Where finalize's JobSettled goes: the publish branch adds its way through await-children. */
      readonly finalizeSettled: Choice;
    },
  ): IChainable {
    const compute = props.compute as ComputePlaces;
    const { settings } = props;
    const { catchInto, review, settle, onFailureOf, finalize } = shared;
    /** A compute step on the compute function; `collect` reads what a Fargate task recorded instead. */
    const onLambda = (
      stateName: string,
      name: ComputeStep,
      options: {
        readonly collect?: boolean;
        readonly resultAt?: string;
        readonly selector?: Record<string, string>;
      } = {},
    ): LambdaInvoke => {
      const task = new LambdaInvoke(states, stateName, {
        stateName,
        lambdaFunction: compute.computeFunction,
        payload: TaskInput.fromObject({
          step: name,
          jobId: JsonPath.stringAt('$.jobId'),
          ...(options.collect ? { collect: true } : {}),
        }),
        payloadResponseOnly: false,
        // Its own retriers instead: CDK's would take the service errors with its few tries, ahead of the wait.
        retryOnServiceExceptions: false,
        ...(options.resultAt
          ? { resultSelector: options.selector ?? { 'value.$': '$.Payload' }, resultPath: options.resultAt }
          : { resultPath: JsonPath.DISCARD }),
      });
      task.addRetry(waitingForCompute(settings));
      task.addRetry(RETRY_CLIENT_TIMEOUT);
      // A compute function that ran out of time or memory: once more, then the failure path.
      task.addRetry({
        errors: [LambdaInvokeError.sandboxTimedOut, LambdaInvokeError.unknown],
        interval: seconds(5),
        maxAttempts: 1,
      });
      return task;
    };
    /** One heavy step, where probe chose: the compute function, or a Fargate task and the collection of its outcome. */
    const placed = (name: 'transcode' | 'split', resultAt?: string): Chain => {
      const selector = { 'value.$': '$.Payload' };
      const lambda = onLambda(name, name, resultAt ? { resultAt, selector } : {});
      const task = compute.fargateStep(states, `${name}-on-fargate`, name);
      // A task that could not start or was stopped (capacity, a killed container): run it again.
      task.addRetry({
        errors: [StatesError.all],
        interval: seconds(10),
        backoffRate: 2,
        maxAttempts: 2,
        jitterStrategy: JitterType.FULL,
      });
      const collected = onLambda(`${name}-collect`, name, {
        collect: true,
        ...(resultAt ? { resultAt, selector } : {}),
      });
      return new Choice(states, `${name}-where`)
        .when(Condition.stringEquals('$.probe.compute', 'fargate'), task.next(collected))
        .otherwise(lambda)
        .afterwards();
    };

    const probe = onLambda('probe', 'probe', {
      resultAt: '$.probe',
      selector: { 'compute.$': '$.Payload.compute', 'durationSeconds.$': '$.Payload.durationSeconds' },
    });
    // A canceled publish settles once every child job it made has: this state waits for them, and is
    // woken (ChildSettled) to look again as each canceled child settles.
    const awaitChildren = shared.step('await-children', 'await-children', {
      retries: [
        { errors: [StepError.childSettled], maxAttempts: 0 },
        { errors: [StatesError.taskFailed], interval: seconds(1), backoffRate: 2, maxAttempts: 3 },
      ],
    });
    awaitChildren.addCatch(awaitChildren, catchInto([StepError.childSettled]));
    awaitChildren.addCatch(review, catchInto([StatesError.timeout]));
    awaitChildren.next(settle);
    shared.finalizeSettled
      .when(Condition.stringEquals('$.prepared.flow', 'publish'), awaitChildren)
      .otherwise(settle);

    probe.addCatch(awaitChildren, catchInto([StepError.jobSettled]));
    onFailureOf(probe);

    const transcribe = shared.step('transcribe', 'transcribe', {
      // A failed chunk job is made again under a new key (CHUNK_ATTEMPTS); then the job fails, naming the chunk.
      retries: [{ errors: [StepError.chunkFailed], interval: seconds(1), maxAttempts: 1 }],
    });
    const chunks = new MapState(states, 'transcribe-chunks', {
      comment: "One transcribe state per chunk; the provider limit is enforced by the chunk jobs' slots.",
      itemsPath: '$.split.value',
      itemSelector: { 'jobId.$': '$.jobId', 'chunk.$': '$$.Map.Item.Value' },
      // Only keeps one job's chunks from all waiting at once; the slots hold the provider's limit.
      maxConcurrency: Math.max(
        1,
        ...JOB_TYPE_MODULES.filter((module) => module.flow === 'publish').map(
          (module) => settings.providers[settings.jobTypeProviders[module.name]].maxInFlight,
        ),
      ),
      resultPath: JsonPath.DISCARD,
    });
    chunks.itemProcessor(transcribe);

    const media = new Parallel(states, 'media', {
      comment: 'The stream and the transcript, at once.',
      resultPath: JsonPath.DISCARD,
    });
    media.branch(placed('transcode'));
    media.branch(placed('split', '$.split').next(chunks));
    media.addCatch(review, catchInto([StepError.needsReview, StatesError.timeout]));
    // A chunk canceled with its canceled parent: the parent waits for the rest of its children.
    media.addCatch(awaitChildren, catchInto([StepError.jobSettled, StepError.chunkCanceled]));
    onFailureOf(media);

    const index = onLambda('index', 'index');
    index.addCatch(awaitChildren, catchInto([StepError.jobSettled]));
    onFailureOf(index);
    return probe
      .next(media)
      .next(index)
      .next(this.embeddingSteps(states, props, { ...shared, settle: awaitChildren }))
      .next(finalize);
  }

  /**
   * The passages embedded and stored: plan-embedding ▶ a Map of `embed`
   * states, one per run of passages, each waiting for its embedding job (one
   * slot of the embedding provider each) ▶ store-vectors. A run whose job
   * failed is made once more under a new key; the transcode and the
   * transcription before it are never done again.
   */
  private embeddingSteps(
    states: Construct,
    props: JobWorkflowProps,
    shared: Parameters<JobWorkflow['publishBranch']>[2],
  ): Chain {
    const { settings } = props;
    // `settle` here is the publish branch's way there: through `await-children`.
    const { catchInto, review, settle, onFailureOf } = shared;
    const plan = shared.step('plan-embedding', 'plan-embedding', {
      resultAt: {
        path: '$.embedding',
        selector: { 'passagesKey.$': '$.Payload.passagesKey', 'runs.$': '$.Payload.runs' },
      },
      retries: [NO_RETRY_SETTLED, RETRY_BOOKKEEPING],
    });
    plan.addCatch(settle, catchInto([StepError.jobSettled]));
    onFailureOf(plan);

    const embed = shared.step('embed', 'embed', {
      retries: [{ errors: [StepError.chunkFailed], interval: seconds(1), maxAttempts: 1 }],
    });
    const runs = new MapState(states, 'embed-passages', {
      comment:
        "One embed state per run of passages; the provider limit is enforced by the runs' jobs' slots.",
      itemsPath: '$.embedding.runs',
      itemSelector: {
        'jobId.$': '$.jobId',
        'run.$': '$$.Map.Item.Value',
        'passagesKey.$': '$.embedding.passagesKey',
      },
      // Only keeps one job's runs from all waiting at once; the slots hold the provider's limit.
      maxConcurrency: settings.providers.bedrock.maxInFlight,
      resultPath: '$.embedded',
    });
    runs.itemProcessor(embed);
    runs.addCatch(review, catchInto([StepError.needsReview, StatesError.timeout]));
    runs.addCatch(settle, catchInto([StepError.jobSettled, StepError.chunkCanceled]));
    onFailureOf(runs);

    const store = shared.step('store-vectors', 'store-vectors', {
      retries: [NO_RETRY_SETTLED, RETRY_RELEASE],
    });
    store.addCatch(settle, catchInto([StepError.jobSettled]));
    onFailureOf(store);
    return plan.next(runs).next(store);
  }
}
