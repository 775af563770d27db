import {
  DescribeExecutionCommand,
  ExecutionAlreadyExists,
  ExecutionDoesNotExist,
  ExecutionNotRedrivable,
  GetExecutionHistoryCommand,
  type HistoryEvent,
  InvalidToken,
  RedriveExecutionCommand,
  SendTaskFailureCommand,
  SendTaskHeartbeatCommand,
  SendTaskSuccessCommand,
  type SFNClient,
  StartExecutionCommand,
  StopExecutionCommand,
  TaskDoesNotExist,
  TaskTimedOut,
} from '@aws-sdk/client-sfn';
import { WORKFLOW_STEPS } from '../../config/layout';
import { StatesError } from '../../config/workflow-errors';
import { causeMessage } from '../domain/errors';
import type { ExecutionStatus, StepHistory, TimelineEvent, Workflow } from '../domain/ports';

/** Execution ARN of a named execution: `arn:…:stateMachine:NAME` → `arn:…:execution:NAME:EXECUTION`. */
export function executionArn(stateMachineArn: string, executionName: string): string {
  return `${stateMachineArn.replace(':stateMachine:', ':execution:')}:${executionName}`;
}

const isGoneToken = (error: unknown) =>
  error instanceof TaskTimedOut || error instanceof TaskDoesNotExist || error instanceof InvalidToken;

export class SfnWorkflow implements Workflow {
  /** `stateMachineArn` is needed to start and stop executions; task tokens work without it. */
  constructor(
    private readonly client: SFNClient,
    private readonly stateMachineArn: string | undefined,
  ) {}

  private machine(): string {
    if (!this.stateMachineArn)
      throw new Error('No state machine ARN configured for starting or stopping executions.');
    return this.stateMachineArn;
  }

  async start(
    executionName: string,
    input: { readonly jobId: string },
    stateMachine?: string,
  ): Promise<void> {
    try {
      // Standard workflows treat a repeated name with the same input as the same execution.
      await this.client.send(
        new StartExecutionCommand({
          stateMachineArn: stateMachine ?? this.machine(),
          name: executionName,
          input: JSON.stringify(input),
        }),
      );
    } catch (error) {
      // Already ran (and closed) under this name: the job's status tells the caller what to do.
      if (!(error instanceof ExecutionAlreadyExists)) throw error;
    }
  }

  async stop(executionName: string, cause: string): Promise<void> {
    try {
      await this.client.send(
        new StopExecutionCommand({
          executionArn: executionArn(this.machine(), executionName),
          error: 'Canceled',
          cause,
        }),
      );
    } catch (error) {
      if (!(error instanceof ExecutionDoesNotExist)) throw error;
    }
  }

  async redrive(executionName: string, clientToken: string): Promise<'redriven' | 'running' | 'ended'> {
    // An execution on its failure path is not redrivable until it has failed; one that failed between
    // the refusal and the look at its status is redriven then. Once: a second refusal stands.
    for (let attempt = 1; ; attempt++) {
      try {
        await this.client.send(
          new RedriveExecutionCommand({
            executionArn: executionArn(this.machine(), executionName),
            clientToken,
          }),
        );
        return 'redriven';
      } catch (error) {
        if (error instanceof ExecutionDoesNotExist) return 'ended';
        if (!(error instanceof ExecutionNotRedrivable)) throw error;
        const status = await this.status(executionName);
        if (status === 'RUNNING') return 'running';
        if (status !== 'FAILED' || attempt === 2) return 'ended';
      }
    }
  }

  async status(executionName: string): Promise<ExecutionStatus> {
    try {
      const { status } = await this.client.send(
        new DescribeExecutionCommand({ executionArn: executionArn(this.machine(), executionName) }),
      );
      return (status ?? 'RUNNING') as ExecutionStatus;
    } catch (error) {
      if (error instanceof ExecutionDoesNotExist) return 'NOT_FOUND';
      throw error;
    }
  }

  async stepEvents(executionName: string): Promise<StepHistory> {
    const history: HistoryEvent[] = [];
    let nextToken: string | undefined;
    try {
      do {
        const page = await this.client.send(
          new GetExecutionHistoryCommand({
            executionArn: executionArn(this.machine(), executionName),
            maxResults: 1000,
            // The scheduled task's parameters name the step and its retry; nothing else of the data is kept.
            includeExecutionData: true,
            ...(nextToken ? { nextToken } : {}),
          }),
        );
        history.push(...(page.events ?? []));
        nextToken = page.nextToken;
      } while (nextToken);
    } catch (error) {
      if (error instanceof ExecutionDoesNotExist) return { events: [], ended: false };
      throw error;
    }
    // Events come oldest first; a redrive appends to an ended history, so only its last event tells.
    const last = history.at(-1)?.type;
    return { events: stepEventsOf(history), ended: last !== undefined && EXECUTION_ENDS.has(last) };
  }

  async heartbeat(taskToken: string): Promise<boolean> {
    try {
      await this.client.send(new SendTaskHeartbeatCommand({ taskToken }));
      return true;
    } catch (error) {
      if (isGoneToken(error)) return false;
      throw error;
    }
  }

  async completeTask(taskToken: string, output: unknown): Promise<boolean> {
    try {
      await this.client.send(new SendTaskSuccessCommand({ taskToken, output: JSON.stringify(output) }));
      return true;
    } catch (error) {
      if (isGoneToken(error)) return false;
      throw error;
    }
  }

  async failTask(taskToken: string, error: string, cause: string): Promise<boolean> {
    try {
      await this.client.send(new SendTaskFailureCommand({ taskToken, error, cause }));
      return true;
    } catch (failure) {
      if (isGoneToken(failure)) return false;
      throw failure;
    }
  }
}

const STEPS: ReadonlySet<string> = new Set(WORKFLOW_STEPS);

/** The history events that end an execution (until a redrive, which appends ExecutionRedriven). */
const EXECUTION_ENDS: ReadonlySet<string> = new Set([
  'ExecutionSucceeded',
  'ExecutionFailed',
  'ExecutionAborted',
  'ExecutionTimedOut',
]);

/**
 * The execution's start (`job.dispatched`) and the steps function's tasks in
 * its history, as timeline events: each task's scheduling is a start (a retry past the first attempt), its
 * success an end, its failure or timeout a failure with the error. The step and
 * the attempt come from the payload the state machine hands the function
 * (`step`, `retryCount`); tasks of other functions (the compute steps, which
 * record their own) are left out.
 */
export function stepEventsOf(history: readonly HistoryEvent[]): TimelineEvent[] {
  const events: TimelineEvent[] = [];
  let current: { step: string; attempt: number } | undefined;
  for (const event of history) {
    const at = (event.timestamp ?? new Date(0)).toISOString();
    if (event.type === 'ExecutionStarted') {
      events.push({ at, type: 'job.dispatched' });
    } else if (event.type === 'TaskScheduled') {
      current = stepOf(event.taskScheduledEventDetails?.parameters);
      if (current) {
        events.push({
          at,
          type: current.attempt > 1 ? 'step.retry' : 'step.started',
          step: current.step,
          attempt: current.attempt,
        });
      }
    } else if (current && event.type === 'TaskSucceeded') {
      events.push({ at, type: 'step.succeeded', ...current });
      current = undefined;
    } else if (current && (event.type === 'TaskFailed' || event.type === 'TaskTimedOut')) {
      const details = event.taskFailedEventDetails ?? event.taskTimedOutEventDetails;
      events.push({
        at,
        type: 'step.failed',
        ...current,
        detail: failureDetail(details?.error, details?.cause),
      });
      current = undefined;
    }
  }
  return events;
}

function stepOf(parameters: string | undefined): { step: string; attempt: number } | undefined {
  try {
    const payload = (JSON.parse(parameters ?? '') as { Payload?: { step?: unknown; retryCount?: unknown } })
      .Payload;
    if (typeof payload?.step !== 'string' || !STEPS.has(payload.step)) return undefined;
    const retries = typeof payload.retryCount === 'number' ? payload.retryCount : 0;
    return { step: payload.step, attempt: retries + 1 };
  } catch {
    return undefined;
  }
}

/** `Error: message`, the message taken out of a Lambda error's JSON cause where it is one. */
function failureDetail(error: string | undefined, cause: string | undefined): string {
  return `${error ?? StatesError.taskFailed}: ${causeMessage(cause ?? '')}`.slice(0, 1000);
}
