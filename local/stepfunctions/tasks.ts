import { randomUUID } from 'node:crypto';
import { StateMachine, type StateMachineDefinition } from 'aws-local-stepfunctions';
import { StatesError } from '../../config/workflow-errors';
import { isLambdaServiceError } from '../lambda-service';
import type { Json, TaskLimits } from './definition';

/** setTimeout fires at once for longer delays; a task may legitimately wait for days. */
const MAX_TIMER_MS = 2_147_483_647;

export function longTimeout(ms: number, fire: () => void): () => void {
  let timer: NodeJS.Timeout;
  const arm = (remaining: number) => {
    timer = setTimeout(
      () => (remaining > MAX_TIMER_MS ? arm(remaining - MAX_TIMER_MS) : fire()),
      Math.min(remaining, MAX_TIMER_MS),
    );
  };
  arm(Math.max(0, ms));
  return () => clearTimeout(timer);
}

type TimeoutErrorClass = new () => Error;
let timeoutErrorClass: Promise<TimeoutErrorClass> | undefined;

/**
 * The interpreter's `States.TaskFailed` matches every error that is not an
 * instance of its own (unexported) timeout error class, as Step Functions'
 * does not match timeouts. Emulator timeouts must be instances of it, so
 * the class is taken from a task the interpreter times out itself, in about
 * a millisecond.
 */
export function loadTimeoutErrorClass(): Promise<TimeoutErrorClass> {
  timeoutErrorClass ??= (async () => {
    const probe = new StateMachine(
      {
        StartAt: 'Probe',
        States: {
          Probe: {
            Type: 'Task',
            Resource: 'arn:aws:lambda:us-east-1:000000000000:function:probe',
            TimeoutSeconds: 0.000_001,
            End: true,
          },
        },
      } as StateMachineDefinition,
      { validationOptions: { noValidate: true } },
    );
    const run = probe.run(
      {},
      { overrides: { taskResourceLocalHandlers: { Probe: () => new Promise(() => {}) } } },
    );
    const outcome = await run.result.then(
      () => undefined,
      (error: Error) => error.cause,
    );
    if (!(outcome instanceof Error) || outcome.name !== StatesError.timeout) {
      throw new Error(
        'aws-local-stepfunctions no longer fails a late task with States.Timeout; update tasks.ts',
      );
    }
    return outcome.constructor as TimeoutErrorClass;
  })();
  return timeoutErrorClass;
}

export type TimeoutName = (typeof StatesError)['timeout' | 'heartbeatTimeout'];

export function timeoutError(errorClass: TimeoutErrorClass, name: TimeoutName, cause: string): Error {
  const error = new errorClass();
  error.name = name;
  error.message = cause;
  return error;
}

export const isTimeout = (error: unknown): error is Error =>
  error instanceof Error &&
  (error.name === StatesError.timeout || error.name === StatesError.heartbeatTimeout);

/**
 * Thrown into the interpreter once an execution is stopped or the emulator
 * closes: never retried or caught, so the interpreter stops at once.
 */
export class ExecutionHaltedError extends Error {
  readonly isRetryable = false;
  readonly isCatchable = false;
  constructor() {
    super('the execution is no longer running');
    this.name = 'ExecutionHalted';
  }
}

/**
 * A function error as the Lambda integration reports it: the error name is
 * the function's `errorType`, the cause the function's error payload. An
 * invocation the Lambda service refused (throttled, too large) never ran the
 * function: it is the service's exception with the `Lambda.` prefix, e.g.
 * `Lambda.TooManyRequestsException`, which a Retry must name to cover it.
 */
export function lambdaFunctionError(thrown: unknown): Error {
  if (isLambdaServiceError(thrown)) {
    const error = new Error(thrown.message);
    error.name = `Lambda.${thrown.name}`;
    return error;
  }
  const errorType = thrown instanceof Error ? thrown.name || thrown.constructor.name || 'Error' : 'Error';
  const errorMessage = thrown instanceof Error ? thrown.message : String(thrown);
  const trace = thrown instanceof Error && thrown.stack ? thrown.stack.split('\n') : [];
  const error = new Error(JSON.stringify({ errorType, errorMessage, trace }));
  error.name = errorType;
  return error;
}

/**
 * How `ecs:runTask.sync` ends once the task has stopped: with the task's
 * description, or `States.TaskFailed` (the description as its cause) when a
 * container exited with anything but 0, as Step Functions fails it.
 */
export function ecsTaskOutcome(
  task: Json,
): { readonly ok: true } | { readonly ok: false; readonly error: Error } {
  const containers = ((task as { Containers?: unknown } | null)?.Containers ?? []) as {
    ExitCode?: unknown;
  }[];
  if (containers.length > 0 && containers.every((container) => container.ExitCode === 0)) return { ok: true };
  const error = new Error(JSON.stringify(task));
  error.name = StatesError.taskFailed;
  return { ok: false, error };
}

/** The result of the optimized `lambda:invoke` integration (request-response). */
export function lambdaInvokeOutput(payload: Json, statusCode = 200): Json {
  const requestId = randomUUID();
  const headers = {
    Connection: 'keep-alive',
    'Content-Type': 'application/json',
    Date: new Date().toUTCString(),
    'X-Amz-Executed-Version': '$LATEST',
    'x-amzn-Remapped-Content-Length': '0',
    'x-amzn-RequestId': requestId,
  };
  return {
    ExecutedVersion: '$LATEST',
    Payload: payload,
    SdkHttpMetadata: {
      AllHttpHeaders: Object.fromEntries(Object.entries(headers).map(([name, value]) => [name, [value]])),
      HttpHeaders: headers,
      HttpStatusCode: statusCode,
    },
    SdkResponseMetadata: { RequestId: requestId },
    StatusCode: statusCode,
  };
}

/** A JSON copy, as a payload crosses a process boundary in AWS; `undefined` becomes null. */
export function jsonCopy(value: unknown): Json {
  const text = JSON.stringify(value);
  return text === undefined ? null : (JSON.parse(text) as Json);
}

/**
 * One attempt of a Task state: settles once, with the task's result, its
 * failure, a timeout (`TimeoutSeconds` from the start, `HeartbeatSeconds`
 * since the start or the last heartbeat) or a halt.
 */
export class TaskAttempt {
  readonly outcome: Promise<Json>;
  private resolve!: (value: Json) => void;
  private reject!: (error: Error) => void;
  private done = false;
  private readonly clearTimers: (() => void)[] = [];
  private clearHeartbeat: (() => void) | undefined;

  constructor(
    private readonly limits: TaskLimits,
    private readonly timeout: (name: TimeoutName, cause: string) => Error,
  ) {
    this.outcome = new Promise<Json>((resolve, reject) => {
      this.resolve = resolve;
      this.reject = reject;
    });
    if (limits.timeoutSeconds !== undefined) {
      const seconds = limits.timeoutSeconds;
      this.clearTimers.push(
        longTimeout(seconds * 1000, () =>
          this.fail(
            this.timeout(StatesError.timeout, `The task did not finish within TimeoutSeconds (${seconds} s)`),
          ),
        ),
      );
    }
  }

  get settled(): boolean {
    return this.done;
  }

  /** Heartbeats only count for tasks that wait for a callback. */
  startHeartbeat(): void {
    const seconds = this.limits.heartbeatSeconds;
    if (seconds === undefined || this.done) return;
    this.clearHeartbeat?.();
    this.clearHeartbeat = longTimeout(seconds * 1000, () =>
      this.fail(
        this.timeout(
          StatesError.heartbeatTimeout,
          `No heartbeat was received within HeartbeatSeconds (${seconds} s)`,
        ),
      ),
    );
  }

  heartbeat(): boolean {
    if (this.done) return false;
    if (this.clearHeartbeat) this.startHeartbeat();
    return true;
  }

  succeed(value: Json): boolean {
    if (!this.finish()) return false;
    this.resolve(value);
    return true;
  }

  fail(error: Error): boolean {
    if (!this.finish()) return false;
    this.reject(error);
    return true;
  }

  private finish(): boolean {
    if (this.done) return false;
    this.done = true;
    for (const clear of this.clearTimers) clear();
    this.clearHeartbeat?.();
    return true;
  }
}
