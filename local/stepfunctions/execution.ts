import { ExecutionError, type StateMachine } from 'aws-local-stepfunctions';
import { StatesError } from '../../config/workflow-errors';
import {
  type CompiledDefinition,
  EXECUTION_CONTEXT_KEY,
  functionNameOf,
  type Json,
  statesRuntimeError,
  type TaskLimits,
  type TaskSpec,
} from './definition';
import type { ExecutionRecord, ExecutionStatus, ExecutionStore } from './store';
import {
  ExecutionHaltedError,
  ecsTaskOutcome,
  isTimeout,
  jsonCopy,
  lambdaFunctionError,
  lambdaInvokeOutput,
  longTimeout,
  TaskAttempt,
  timeoutError,
} from './tasks';
import type { TaskTokens } from './tokens';

export type InvokeLambda = (functionName: string, payload: unknown) => Promise<unknown>;

/**
 * Runs an ECS task from a `ecs:runTask.sync` state's Parameters (a JSON
 * copy) and settles once it has stopped, with the task's description
 * (`DescribeTasks`' shape). `signal` aborts once the state no longer waits
 * (a timeout, StopExecution, the emulator closing): the task must then be
 * stopped, and the promise settle once it has. A rejection fails the state
 * with the error's name and message.
 */
export type RunTask = (parameters: Json, options: { readonly signal: AbortSignal }) => Promise<Json>;

export interface MachineRuntime {
  readonly name: string;
  readonly arn: string;
  readonly roleArn: string;
  /** The definition as given, which DescribeStateMachine answers with. */
  readonly definition: string;
  readonly compiled: CompiledDefinition;
  readonly invokeLambda: InvokeLambda;
  /** Runs `ecs:runTask.sync` states; without it they fail with States.Runtime. */
  readonly runTask?: RunTask;
}

export interface ExecutionEnvironment {
  readonly store: ExecutionStore;
  readonly tokens: TaskTokens;
  readonly region: string;
  readonly timeoutErrorClass: new () => Error;
  /** Called once the execution no longer runs in this process, whatever the reason. */
  readonly onHalted: (execution: RunningExecution) => void;
}

type EventLog = ReturnType<StateMachine['run']>['eventLogs'] extends AsyncGenerator<infer E> ? E : never;

interface StateEntry {
  readonly enteredTime: string;
  retryCount: number;
}

/** Lets the events the interpreter dispatched in this turn of the event loop reach the history first. */
const nextTurn = () => new Promise<void>((resolve) => setImmediate(resolve));

/**
 * One execution running in this process: the interpreter walks the states,
 * the emulator runs the Task states (so it can issue task tokens, enforce
 * timeouts and heartbeats, and stop them), and both feed one history.
 */
export class RunningExecution {
  private halted = false;
  private readonly attempts = new Set<TaskAttempt>();
  /** Keyed by the raw state input, which the interpreter passes again, as the same object, to each retry. */
  private readonly entries = new WeakMap<object, Map<string, StateEntry>>();
  private abortInterpreter: (() => void) | undefined;
  private clearExecutionTimeout: (() => void) | undefined;
  private finished: Promise<void> = Promise.resolve();

  constructor(
    private readonly env: ExecutionEnvironment,
    private readonly machine: MachineRuntime,
    readonly record: ExecutionRecord,
  ) {}

  get executionArn(): string {
    return this.record.executionArn;
  }

  /** Settles once the interpreter has let go of the execution. */
  get done(): Promise<void> {
    return this.finished;
  }

  start(): void {
    const handlers = Object.fromEntries(
      [...this.machine.compiled.tasks.values()].map((spec) => [
        spec.stateName,
        (input: unknown) => this.runTask(spec, input as Json),
      ]),
    );
    // A redriven execution goes on from the state it failed in, with the input that state had.
    const from = this.record.redriveFrom;
    const runnable = from ? this.machine.compiled.startingAt(from.stateName) : this.machine.compiled.runnable;
    const run = runnable.run(JSON.parse(from?.input ?? this.record.input) as Json as never, {
      overrides: { taskResourceLocalHandlers: handlers as never },
      context: this.executionContext(),
    });
    this.abortInterpreter = run.abort;
    void this.recordInterpreterEvents(run.eventLogs);
    this.finished = run.result.then(
      async (output) => {
        await nextTurn();
        const serialized = JSON.stringify(output ?? null);
        this.finish('SUCCEEDED', { output: serialized }, 'ExecutionSucceeded', {
          executionSucceededEventDetails: { output: serialized, outputDetails: { truncated: false } },
        });
      },
      async (error: unknown) => {
        await nextTurn();
        // A halted execution was stopped, timed out or let go of by close(); its end is already recorded, or must not be.
        if (this.halted) return;
        const failure =
          error instanceof ExecutionError && error.cause instanceof Error ? error.cause : (error as Error);
        this.finish('FAILED', { error: failure.name, cause: failure.message }, 'ExecutionFailed', {
          executionFailedEventDetails: { error: failure.name, cause: failure.message },
        });
      },
    );
    const timeoutSeconds = this.machine.compiled.timeoutSeconds;
    if (timeoutSeconds !== undefined) {
      // Counted from the original start (or redrive), so an execution restarted after a crash keeps its deadline.
      const deadline =
        (this.record.redriveFrom ? (this.record.redriveDate ?? 0) : this.record.startDate) +
        timeoutSeconds * 1000;
      this.clearExecutionTimeout = longTimeout(deadline - Date.now(), () => {
        const cause = `The execution ran longer than its TimeoutSeconds (${timeoutSeconds} s)`;
        this.finish('TIMED_OUT', { error: StatesError.timeout, cause }, 'ExecutionTimedOut', {
          executionTimedOutEventDetails: { error: StatesError.timeout, cause },
        });
      });
    }
  }

  /** StopExecution: the execution ends ABORTED and its task tokens stop working. */
  stop(error: string | undefined, cause: string | undefined): void {
    const fields = { ...(error === undefined ? {} : { error }), ...(cause === undefined ? {} : { cause }) };
    this.finish('ABORTED', fields, 'ExecutionAborted', { executionAbortedEventDetails: fields });
  }

  /**
   * Lets go of the execution without recording anything, as a crash would:
   * it stays RUNNING in the store, and the next start resumes it.
   */
  halt(): void {
    if (this.halted) return;
    this.halted = true;
    this.release();
  }

  private finish(
    status: ExecutionStatus,
    fields: Pick<ExecutionRecord, 'output' | 'error' | 'cause'>,
    eventType: string,
    details: Record<string, unknown>,
  ): void {
    if (this.halted) return;
    this.halted = true;
    Object.assign(this.record, fields, { status, stopDate: Date.now() });
    this.env.store.save(this.record);
    this.env.store.appendEvent(this.executionArn, eventType, details, this.record.stopDate);
    this.release();
  }

  private release(): void {
    this.clearExecutionTimeout?.();
    for (const attempt of this.attempts) attempt.fail(new ExecutionHaltedError());
    this.abortInterpreter?.();
    this.env.onHalted(this);
  }

  private executionContext(): Record<string, unknown> {
    return {
      [EXECUTION_CONTEXT_KEY]: {
        Id: this.executionArn,
        Input: JSON.parse(this.record.input) as Json,
        Name: this.record.name,
        RoleArn: this.machine.roleArn,
        StartTime: new Date(this.record.startDate).toISOString(),
        RedriveCount: this.record.redriveCount,
      },
      StateMachine: { Id: this.machine.arn, Name: this.machine.name },
    };
  }

  /** Runs synchronously up to the first await: the interpreter calls it right after evaluating the state's entry. */
  private runTask(spec: TaskSpec, rawInput: Json): Promise<Json> {
    if (this.halted) return Promise.reject(new ExecutionHaltedError());
    return this.attempt(spec, rawInput, this.enterOrRetry(spec.stateName, rawInput));
  }

  private enterOrRetry(stateName: string, rawInput: Json): StateEntry {
    const fresh = (): StateEntry => ({ enteredTime: new Date().toISOString(), retryCount: 0 });
    // A scalar input cannot be recognised again; every attempt then counts as a new entry.
    if (rawInput === null || typeof rawInput !== 'object') return fresh();
    let byState = this.entries.get(rawInput);
    if (!byState) {
      byState = new Map();
      this.entries.set(rawInput, byState);
    }
    const entry = byState.get(stateName);
    if (entry) {
      entry.retryCount += 1;
      return { ...entry };
    }
    const entered = fresh();
    byState.set(stateName, entered);
    return { ...entered };
  }

  private async attempt(spec: TaskSpec, rawInput: Json, entry: StateEntry): Promise<Json> {
    await nextTurn();
    if (this.halted) throw new ExecutionHaltedError();
    const callback = spec.kind === 'lambda:invoke.waitForTaskToken';
    const token = callback ? this.env.tokens.issue(this.executionArn) : undefined;
    const context = {
      ...this.executionContext(),
      State: { Name: spec.stateName, EnteredTime: entry.enteredTime, RetryCount: entry.retryCount },
      ...(token ? { Task: { Token: token } } : {}),
    };
    const [input, limits] = await Promise.all([
      spec.effectiveInput(rawInput, context),
      spec.limits(rawInput, context),
    ]);
    if (this.halted) throw new ExecutionHaltedError();
    if (spec.kind === 'ecs:runTask.sync') return this.runEcsTask(spec, input, limits);

    const lambdaFunction = spec.kind === 'lambda-function';
    const resourceType = 'lambda';
    const resource = spec.kind === 'lambda:invoke' ? 'invoke' : 'invoke.waitForTaskToken';
    const limitDetails = {
      ...(limits.timeoutSeconds === undefined ? {} : { timeoutInSeconds: limits.timeoutSeconds }),
      ...(limits.heartbeatSeconds === undefined || !callback
        ? {}
        : { heartbeatInSeconds: limits.heartbeatSeconds }),
    };
    let functionName: string;
    let payload: Json;
    if (lambdaFunction) {
      functionName = spec.functionName as string;
      payload = input;
    } else {
      const parameters = input as Record<string, Json> | null;
      if (typeof parameters?.FunctionName !== 'string') {
        throw statesRuntimeError(`The Parameters of ${spec.stateName} have no FunctionName string`);
      }
      functionName = functionNameOf(parameters.FunctionName);
      payload = parameters.Payload ?? {};
    }

    const attempt = new TaskAttempt(limits, (name, cause) =>
      timeoutError(this.env.timeoutErrorClass, name, cause),
    );
    this.attempts.add(attempt);
    const record = (type: string, details: Record<string, unknown>) =>
      this.env.store.appendEvent(this.executionArn, type, details);
    const invoke = () =>
      Promise.resolve().then(() => this.machine.invokeLambda(functionName, jsonCopy(payload)));
    try {
      if (lambdaFunction) {
        record('LambdaFunctionScheduled', {
          lambdaFunctionScheduledEventDetails: {
            resource: spec.resource,
            input: JSON.stringify(input),
            ...limitDetails,
          },
        });
        record('LambdaFunctionStarted', {});
      } else {
        record('TaskScheduled', {
          taskScheduledEventDetails: {
            resourceType,
            resource,
            region: this.env.region,
            parameters: JSON.stringify(input),
            ...limitDetails,
          },
        });
        record('TaskStarted', { taskStartedEventDetails: { resourceType, resource } });
      }

      if (callback && token) {
        this.env.tokens.register(token, attempt);
        attempt.startHeartbeat();
        // The function only hands the token on; the task ends with SendTaskSuccess/Failure, a timeout or a stop.
        invoke().then(
          (result) => {
            if (attempt.settled) return;
            record('TaskSubmitted', {
              taskSubmittedEventDetails: {
                resourceType,
                resource,
                output: JSON.stringify(lambdaInvokeOutput(jsonCopy(result))),
              },
            });
          },
          (error: unknown) => attempt.fail(lambdaFunctionError(error)),
        );
      } else if (!lambdaFunction && (input as Record<string, Json>).InvocationType === 'Event') {
        // Asynchronous invocation: Lambda accepts the event and the task ends at once.
        invoke().catch(() => undefined);
        attempt.succeed(lambdaInvokeOutput('', 202));
      } else {
        invoke().then(
          (result) =>
            attempt.succeed(lambdaFunction ? jsonCopy(result) : lambdaInvokeOutput(jsonCopy(result))),
          (error: unknown) => attempt.fail(lambdaFunctionError(error)),
        );
      }

      const output = await attempt.outcome;
      const serialized = JSON.stringify(output);
      if (lambdaFunction) {
        record('LambdaFunctionSucceeded', { lambdaFunctionSucceededEventDetails: { output: serialized } });
      } else {
        record('TaskSucceeded', {
          taskSucceededEventDetails: { resourceType, resource, output: serialized },
        });
      }
      return output;
    } catch (error) {
      // A halted execution records nothing more: StopExecution already wrote its end, and close() must write none.
      if (!(error instanceof ExecutionHaltedError)) {
        const failure = error as Error;
        const outcome = { error: failure.name, cause: failure.message };
        if (lambdaFunction) {
          record(
            isTimeout(failure) ? 'LambdaFunctionTimedOut' : 'LambdaFunctionFailed',
            isTimeout(failure)
              ? { lambdaFunctionTimedOutEventDetails: outcome }
              : { lambdaFunctionFailedEventDetails: outcome },
          );
        } else {
          this.recordTaskFailure(failure, resourceType, resource);
        }
      }
      throw error;
    } finally {
      this.attempts.delete(attempt);
      if (token) this.env.tokens.revoke(token);
    }
  }

  /**
   * `ecs:runTask.sync`: the task runs until it stops, and the state ends with
   * its description, or fails as Step Functions fails it. A task the state no
   * longer waits for (timed out, stopped, let go of) is stopped, and the
   * attempt settles only once it has, so nothing outlives its execution.
   */
  /** A task's failure in the history: TaskTimedOut when a timeout ended it, else TaskFailed. */
  private recordTaskFailure(failure: Error, resourceType: string, resource: string): void {
    const outcome = { error: failure.name, cause: failure.message };
    if (isTimeout(failure)) {
      this.env.store.appendEvent(this.executionArn, 'TaskTimedOut', {
        taskTimedOutEventDetails: { resourceType, resource, ...outcome },
      });
    } else {
      this.env.store.appendEvent(this.executionArn, 'TaskFailed', {
        taskFailedEventDetails: { resourceType, resource, ...outcome },
      });
    }
  }

  private async runEcsTask(spec: TaskSpec, parameters: Json, limits: TaskLimits): Promise<Json> {
    const resourceType = 'ecs';
    const resource = 'runTask.sync';
    const runTask = this.machine.runTask;
    if (!runTask) throw statesRuntimeError(`${spec.stateName} runs an ECS task, and none runs here`);
    const attempt = new TaskAttempt(limits, (name, cause) =>
      timeoutError(this.env.timeoutErrorClass, name, cause),
    );
    this.attempts.add(attempt);
    const record = (type: string, details: Record<string, unknown>) =>
      this.env.store.appendEvent(this.executionArn, type, details);
    const abort = new AbortController();
    let task: Promise<Json> | undefined;
    try {
      record('TaskScheduled', {
        taskScheduledEventDetails: {
          resourceType,
          resource,
          region: this.env.region,
          parameters: JSON.stringify(parameters),
          ...(limits.timeoutSeconds === undefined ? {} : { timeoutInSeconds: limits.timeoutSeconds }),
        },
      });
      record('TaskStarted', { taskStartedEventDetails: { resourceType, resource } });
      task = Promise.resolve().then(() => runTask(jsonCopy(parameters), { signal: abort.signal }));
      task.then(
        (described) => {
          const outcome = ecsTaskOutcome(described);
          if (outcome.ok) attempt.succeed(jsonCopy(described));
          else attempt.fail(outcome.error);
        },
        (error: unknown) => attempt.fail(error instanceof Error ? error : new Error(String(error))),
      );
      const output = await attempt.outcome;
      record('TaskSucceeded', {
        taskSucceededEventDetails: { resourceType, resource, output: JSON.stringify(output) },
      });
      return output;
    } catch (error) {
      if (!(error instanceof ExecutionHaltedError))
        this.recordTaskFailure(error as Error, resourceType, resource);
      throw error;
    } finally {
      this.attempts.delete(attempt);
      abort.abort();
      await task?.catch(() => undefined);
    }
  }

  private async recordInterpreterEvents(events: AsyncGenerator<EventLog>): Promise<void> {
    for await (const event of events) {
      if (this.halted) continue;
      for (const [type, details] of historyEventsFor(event)) {
        this.env.store.appendEvent(this.executionArn, type, details, event.timestamp);
      }
    }
  }
}

/**
 * State transitions as Step Functions names them in a history. Task results
 * and failures are recorded where the emulator runs the task; retries and
 * catches have no events of their own.
 */
function historyEventsFor(event: EventLog): [string, Record<string, unknown>][] {
  switch (event.type) {
    case 'StateEntered':
      return [
        [
          `${event.state.type}StateEntered`,
          {
            stateEnteredEventDetails: {
              name: event.state.name,
              input: JSON.stringify(event.state.input),
              inputDetails: { truncated: false },
            },
          },
        ],
      ];
    case 'StateExited':
      return [
        [
          `${event.state.type}StateExited`,
          {
            stateExitedEventDetails: {
              name: event.state.name,
              output: JSON.stringify(event.state.output ?? null),
              outputDetails: { truncated: false },
            },
          },
        ],
      ];
    case 'StateFailed':
      return event.state.type === 'Map' || event.state.type === 'Parallel'
        ? [[`${event.state.type}StateFailed`, {}]]
        : [];
    case 'MapIterationStarted':
    case 'MapIterationSucceeded':
    case 'MapIterationFailed': {
      const key = `${event.type[0]?.toLowerCase()}${event.type.slice(1)}EventDetails`;
      return [[event.type, { [key]: { name: event.parentState.name, index: event.index } }]];
    }
    default:
      return [];
  }
}
