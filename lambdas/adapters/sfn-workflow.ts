import {
  DescribeExecutionCommand,
  ExecutionAlreadyExists,
  ExecutionDoesNotExist,
  InvalidToken,
  SendTaskFailureCommand,
  SendTaskHeartbeatCommand,
  SendTaskSuccessCommand,
  type SFNClient,
  StartExecutionCommand,
  StopExecutionCommand,
  TaskDoesNotExist,
  TaskTimedOut,
} from '@aws-sdk/client-sfn';
import type { ExecutionStatus, Workflow } from '../domain/ports';

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
