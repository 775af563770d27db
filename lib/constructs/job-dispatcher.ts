import { Duration } from 'aws-cdk-lib';
import type { ITable } from 'aws-cdk-lib/aws-dynamodb';
import { type CfnFunction, RecursiveLoop } from 'aws-cdk-lib/aws-lambda';
import { SqsEventSource } from 'aws-cdk-lib/aws-lambda-event-sources';
import type { IQueue } from 'aws-cdk-lib/aws-sqs';
import type { IStateMachine } from 'aws-cdk-lib/aws-stepfunctions';
import { Construct } from 'constructs';
import type { ProviderName } from '../../config/providers';
import type { Settings } from '../../config/settings';
import { handlerEntry } from '../handlers';
import { ProjectFunction } from './project-function';

/**
 * Concurrent dispatch invocations. The in-flight limit is the slot item, not
 * Lambda concurrency, so two pollers are plenty; 2 is also SQS's minimum.
 */
const DISPATCH_MAX_CONCURRENCY = 2;

export interface JobDispatcherProps {
  /** Longhaul settings: the dispatch timeout (the queue's visibility timeout is six times it) and the environment. */
  readonly settings: Settings;
  /** The job table: jobs, the slot item and the timelines. */
  readonly jobTable: ITable;
  /** Each provider's jobs queue: consumed, and sent to when one of its jobs waits for a slot. */
  readonly jobQueues: Readonly<Record<ProviderName, IQueue>>;
  /**
   * The hand-off lane: consumed, and sent to when a job this function grants a
   * slot cannot be started at once (its start failed, or it goes on by a redrive).
   */
  readonly handOffQueue: IQueue;
  /** The media workflow; one execution is started per job, named after it. */
  readonly stateMachine: IStateMachine;

  /**
   * Entry file of the dispatch handler.
   * @default lambdas/dispatch/handler.ts
   */
  readonly entry?: string;
}

/**
 * The jobs queue consumer: takes an in-flight slot for each queued job and
 * starts its workflow execution, or puts the job back as a new delayed message
 * when every slot is taken. Failed messages are reported one by one, so one bad
 * message never redelivers its whole batch.
 *
 * It consumes the hand-off lane too, through its own event source mapping with
 * its own pollers, so a job handed a freed slot is started however deep the
 * jobs queue is. A hand-off message is handled like any other: the job is
 * found to hold its slot and is started.
 */
export class JobDispatcher extends Construct {
  /** The dispatch function. */
  public readonly dispatchFunction: ProjectFunction;

  constructor(scope: Construct, id: string, props: JobDispatcherProps) {
    super(scope, id);
    this.dispatchFunction = new ProjectFunction(this, 'DispatchFunction', {
      entry: props.entry ?? handlerEntry('dispatch'),
      settings: props.settings,
      serviceName: 'dispatch',
      description: 'Longhaul dispatch: acquires an in-flight slot and starts the workflow of each queued job',
      timeout: Duration.seconds(props.settings.dispatchTimeoutSeconds),
    })
      .useTable('jobTable', props.jobTable, 'readWrite')
      .useJobQueues(props.jobQueues, 'consume')
      .useJobQueues(props.jobQueues, 'send')
      .useQueue('handOffQueueUrl', props.handOffQueue, 'send')
      .useStateMachine('stateMachineArn', props.stateMachine);

    // A job that finds every slot taken goes back, as a new delayed message, to the
    // queue that triggers this function (SQS -> Lambda -> SQS). Lambda's recursive
    // loop detection stops such a chain after about 16 invocations and the message
    // ends in the dead-letter queue: a healthy job waiting through a long peak would
    // be dead-lettered. The loop is allowed rather than broken because it is the
    // design (a waiting job must not creep toward maxReceiveCount), and it is bounded
    // by the job: a message is only re-sent for a job the table still holds as queued,
    // and a finished, canceled or unknown job is dropped.
    (this.dispatchFunction.lambdaFunction.node.defaultChild as CfnFunction).recursiveLoop =
      RecursiveLoop.ALLOW;

    // The same allowance covers the hand-off lane: its messages reach this function
    // (workflow steps or reconciler -> SQS -> dispatch), and a hand-off whose job finds
    // the slot gone meanwhile goes on to the jobs queue as a deferred message.
    for (const queue of [...Object.values(props.jobQueues), props.handOffQueue]) {
      // Consuming is granted by the event source mapping itself.
      this.dispatchFunction.lambdaFunction.addEventSource(
        new SqsEventSource(queue, {
          batchSize: 10,
          // Short: a job should not wait for its batch to fill up.
          maxBatchingWindow: Duration.seconds(1),
          reportBatchItemFailures: true,
          maxConcurrency: DISPATCH_MAX_CONCURRENCY,
        }),
      );
    }
  }
}
