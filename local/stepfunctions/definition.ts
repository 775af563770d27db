import { ExecutionError, StateMachine, type StateMachineDefinition } from 'aws-local-stepfunctions';
import { StatesError } from '../../config/workflow-errors';

/**
 * Turns an Amazon States Language definition (JSONPath) into what
 * aws-local-stepfunctions runs, plus what the emulator itself does for each
 * Task state.
 *
 * The interpreter evaluates `Parameters` before calling a local handler, with
 * one context object for the whole execution, so a handler cannot give each
 * attempt its own `$$.Task.Token` or `$$.State.RetryCount`. Task states are
 * therefore run without `InputPath`/`Parameters`: the handler receives the
 * raw state input (the same object on every retry of one state entry, which
 * is how attempts are counted) and evaluates them itself with the
 * interpreter, against a context built for that attempt. The interpreter
 * also imposes a 60 s default task timeout that Step Functions does not
 * have, and it has no heartbeats, so task timeouts are the emulator's too.
 */

export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

export type TaskKind =
  | 'lambda:invoke'
  | 'lambda:invoke.waitForTaskToken'
  | 'lambda-function'
  | 'ecs:runTask.sync';

export interface TaskLimits {
  readonly timeoutSeconds?: number;
  readonly heartbeatSeconds?: number;
}

export interface TaskSpec {
  readonly stateName: string;
  readonly kind: TaskKind;
  readonly resource: string;
  /** The invoked function's name when the resource is a Lambda function ARN. */
  readonly functionName?: string;
  /** `InputPath` then `Parameters`, applied to the raw state input. */
  effectiveInput(rawInput: Json, context: object): Promise<Json>;
  /** `TimeoutSeconds`/`HeartbeatSeconds`, or their `...Path` read from the raw state input. */
  limits(rawInput: Json, context: object): Promise<TaskLimits>;
}

export interface CompiledDefinition {
  readonly runnable: StateMachine;
  readonly tasks: ReadonlyMap<string, TaskSpec>;
  /** The execution's `TimeoutSeconds`, enforced by the emulator so a resumed execution keeps its deadline. */
  readonly timeoutSeconds?: number;
  /** The states of the top level, where a redriven execution may go on from. */
  readonly topLevelStates: ReadonlySet<string>;
  /** The same machine entered at one of its top-level states: what RedriveExecution runs. */
  startingAt(stateName: string): StateMachine;
}

/**
 * The interpreter then never times a task out by itself; setTimeout cannot
 * wait longer (2^31 - 1 ms).
 */
const INTERPRETER_TASK_TIMEOUT_SECONDS = 2_147_483;

/**
 * `$$.Execution` is read from this key instead: the interpreter overwrites
 * `Execution.Input` and `Execution.StartTime` in the context it is given,
 * which would be wrong for a resumed execution and for the per-attempt
 * evaluation of `Parameters`.
 */
export const EXECUTION_CONTEXT_KEY = '__Execution';

const LAMBDA_INVOKE = /^arn:aws[a-z-]*:states:[a-z0-9-]*:\d*:lambda:invoke(\.waitForTaskToken)?$/;
const ECS_RUN_TASK_SYNC = /^arn:aws[a-z-]*:states:[a-z0-9-]*:\d*:ecs:runTask\.sync$/;
const LAMBDA_FUNCTION =
  /^arn:aws[a-z-]*:lambda:[a-z0-9-]+:\d{12}:function:([A-Za-z0-9_-]+)(?::[A-Za-z0-9$_-]+)?$/;

const PATH_FIELDS = [
  'InputPath',
  'OutputPath',
  'ItemsPath',
  'SecondsPath',
  'TimestampPath',
  'ErrorPath',
  'CausePath',
  'MaxConcurrencyPath',
  'TimeoutSecondsPath',
  'HeartbeatSecondsPath',
] as const;
const TEMPLATE_FIELDS = ['Parameters', 'ResultSelector', 'ItemSelector'] as const;

export class DefinitionError extends Error {
  constructor(stateMachineName: string, problem: string) {
    super(`state machine ${stateMachineName}: ${problem}`);
    this.name = 'DefinitionError';
  }
}

/** What Lambda's Invoke accepts as FunctionName (name, name:qualifier, partial or full ARN), reduced to the name. */
export function functionNameOf(functionName: string): string {
  const parts = functionName.split(':');
  const marker = parts.indexOf('function');
  return (marker >= 0 ? parts[marker + 1] : parts[0]) || functionName;
}

export function compileDefinition(stateMachineName: string, definition: object): CompiledDefinition {
  try {
    // Rejects what CreateStateMachine would reject, before anything runs.
    new StateMachine(definition as StateMachineDefinition);
  } catch (error) {
    throw new DefinitionError(stateMachineName, (error as Error).message);
  }
  const root = structuredClone(definition) as Record<string, unknown>;
  const tasks = new Map<string, TaskSpec>();
  const seen = new Set<string>();
  const fail = (problem: string): never => {
    throw new DefinitionError(stateMachineName, problem);
  };
  if (root.QueryLanguage === 'JSONata') fail('JSONata definitions are not supported locally');
  const timeoutSeconds = typeof root.TimeoutSeconds === 'number' ? root.TimeoutSeconds : undefined;
  delete root.TimeoutSeconds;

  const visitMachine = (machine: Record<string, unknown>) => {
    const states = machine.States as Record<string, Record<string, unknown>>;
    for (const [name, state] of Object.entries(states)) {
      // Local handlers are keyed by state name across nested machines; Step Functions requires unique names anyway.
      if (seen.has(name)) fail(`state name ${name} is used more than once`);
      seen.add(name);
      if (state.QueryLanguage === 'JSONata') {
        fail(`state ${name} uses JSONata, which is not supported locally`);
      }
      rewriteContextPaths(state);
      for (const field of ['Retry', 'Catch'] as const) {
        if (Array.isArray(state[field])) state[field] = (state[field] as object[]).map(withHeartbeatTimeout);
      }
      if (state.Type === 'Task') tasks.set(name, compileTask(name, state, fail));
      for (const nested of [state.ItemProcessor, state.Iterator, ...((state.Branches as unknown[]) ?? [])]) {
        if (nested && typeof nested === 'object') visitMachine(nested as Record<string, unknown>);
      }
    }
  };
  visitMachine(root);

  const runnable = new StateMachine(root as unknown as StateMachineDefinition, {
    validationOptions: { noValidate: true },
  });
  const topLevelStates = new Set(Object.keys(root.States as object));
  const entered = new Map<string, StateMachine>();
  const startingAt = (stateName: string): StateMachine => {
    if (!topLevelStates.has(stateName)) throw new Error(`${stateName} is not a top-level state`);
    let machine = entered.get(stateName);
    if (!machine) {
      machine = new StateMachine({ ...root, StartAt: stateName } as unknown as StateMachineDefinition, {
        validationOptions: { noValidate: true },
      });
      entered.set(stateName, machine);
    }
    return machine;
  };
  return {
    runnable,
    tasks,
    topLevelStates,
    startingAt,
    ...(timeoutSeconds === undefined ? {} : { timeoutSeconds }),
  };
}

function compileTask(
  name: string,
  state: Record<string, unknown>,
  fail: (problem: string) => never,
): TaskSpec {
  const resource = state.Resource as string;
  const invoke = LAMBDA_INVOKE.exec(resource);
  const lambdaFunction = LAMBDA_FUNCTION.exec(resource);
  let kind: TaskKind;
  if (invoke) kind = invoke[1] ? 'lambda:invoke.waitForTaskToken' : 'lambda:invoke';
  else if (lambdaFunction) kind = 'lambda-function';
  else if (ECS_RUN_TASK_SYNC.test(resource)) kind = 'ecs:runTask.sync';
  else {
    return fail(
      `Task state ${name} uses ${resource}; locally only lambda:invoke, lambda:invoke.waitForTaskToken, ecs:runTask.sync and Lambda function ARNs run`,
    );
  }

  const inputState: Record<string, unknown> = {};
  if ('InputPath' in state) inputState.InputPath = state.InputPath;
  if ('Parameters' in state) inputState.Parameters = state.Parameters;
  const effectiveInput = passEvaluator(inputState);

  const staticLimits: TaskLimits = {
    ...(typeof state.TimeoutSeconds === 'number' ? { timeoutSeconds: state.TimeoutSeconds } : {}),
    ...(typeof state.HeartbeatSeconds === 'number' ? { heartbeatSeconds: state.HeartbeatSeconds } : {}),
  };
  const limitPaths: Record<string, string> = {};
  if (typeof state.TimeoutSecondsPath === 'string') limitPaths['timeoutSeconds.$'] = state.TimeoutSecondsPath;
  if (typeof state.HeartbeatSecondsPath === 'string') {
    limitPaths['heartbeatSeconds.$'] = state.HeartbeatSecondsPath;
  }
  const readLimits =
    Object.keys(limitPaths).length > 0 ? passEvaluator({ Parameters: limitPaths }) : undefined;

  for (const field of [
    'InputPath',
    'Parameters',
    'TimeoutSecondsPath',
    'HeartbeatSeconds',
    'HeartbeatSecondsPath',
  ]) {
    delete state[field];
  }
  state.TimeoutSeconds = INTERPRETER_TASK_TIMEOUT_SECONDS;

  return {
    stateName: name,
    kind,
    resource,
    ...(lambdaFunction?.[1] ? { functionName: lambdaFunction[1] } : {}),
    effectiveInput,
    async limits(rawInput, context) {
      if (!readLimits) return staticLimits;
      const read = (await readLimits(rawInput, context)) as Record<string, Json>;
      const limits: Record<string, number> = { ...staticLimits };
      for (const [key, value] of Object.entries(read)) {
        if (typeof value !== 'number' || !Number.isInteger(value) || value < 1) {
          throw statesRuntimeError(
            `${key} read from the state input must be a positive integer, not ${JSON.stringify(value)}`,
          );
        }
        limits[key] = value;
      }
      return limits;
    },
  };
}

/**
 * Evaluates `InputPath`/`Parameters` exactly as the interpreter would, by
 * running a one-state machine: its JSONPath, intrinsic functions and errors.
 */
function passEvaluator(fields: Record<string, unknown>): (input: Json, context: object) => Promise<Json> {
  if (Object.keys(fields).length === 0) return async (input) => input;
  const machine = new StateMachine(
    {
      StartAt: 'Evaluate',
      States: { Evaluate: { Type: 'Pass', ...fields, End: true } },
    } as StateMachineDefinition,
    { validationOptions: { noValidate: true } },
  );
  return async (input, context) => {
    try {
      return (await machine.run(input, { context: context as Record<string, unknown> }).result) as Json;
    } catch (error) {
      // The state's own error (States.Runtime for a missing path, States.IntrinsicFailure, ...), not the probe's.
      throw error instanceof ExecutionError && error.cause instanceof Error ? error.cause : error;
    }
  };
}

/** The error Step Functions fails an execution with when a definition cannot be evaluated; never retried or caught. */
export function statesRuntimeError(message: string): Error {
  return Object.assign(new Error(message), {
    name: StatesError.runtime,
    isRetryable: false,
    isCatchable: false,
  });
}

/**
 * Step Functions treats a heartbeat timeout as a kind of `States.Timeout`:
 * a retrier or catcher naming `States.Timeout` also matches
 * `States.HeartbeatTimeout`. The interpreter compares names exactly.
 */
function withHeartbeatTimeout(entry: object): object {
  const errors = (entry as { ErrorEquals?: unknown }).ErrorEquals;
  if (
    !Array.isArray(errors) ||
    !errors.includes(StatesError.timeout) ||
    errors.includes(StatesError.heartbeatTimeout)
  ) {
    return entry;
  }
  return { ...entry, ErrorEquals: [...errors, StatesError.heartbeatTimeout] };
}

function rewriteContextPaths(state: Record<string, unknown>): void {
  for (const field of PATH_FIELDS) {
    if (typeof state[field] === 'string') state[field] = rewritePath(state[field]);
  }
  for (const field of TEMPLATE_FIELDS) {
    if (field in state) state[field] = rewriteTemplate(state[field]);
  }
  if (Array.isArray(state.Choices)) state.Choices = state.Choices.map(rewriteChoiceRule);
}

function rewritePath(path: string): string {
  return path.replace(/\$\$\.Execution\b/g, () => `$$.${EXECUTION_CONTEXT_KEY}`);
}

function rewriteTemplate(template: unknown): unknown {
  if (Array.isArray(template)) return template.map(rewriteTemplate);
  if (template === null || typeof template !== 'object') return template;
  return Object.fromEntries(
    Object.entries(template).map(([key, value]) => [
      key,
      key.endsWith('.$') && typeof value === 'string' ? rewritePath(value) : rewriteTemplate(value),
    ]),
  );
}

function rewriteChoiceRule(rule: unknown): unknown {
  if (rule === null || typeof rule !== 'object') return rule;
  return Object.fromEntries(
    Object.entries(rule).map(([key, value]) => {
      if (key === 'And' || key === 'Or') return [key, (value as unknown[]).map(rewriteChoiceRule)];
      if (key === 'Not') return [key, rewriteChoiceRule(value)];
      if ((key === 'Variable' || key.endsWith('Path')) && typeof value === 'string') {
        return [key, rewritePath(value)];
      }
      return [key, value];
    }),
  );
}
