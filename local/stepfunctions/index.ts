import { listenOn } from '../emulators/listen';
import { ApiThrottle } from './api-quotas';
import { compileDefinition } from './definition';
import type { InvokeLambda, MachineRuntime, RunTask } from './execution';
import { createApiServer } from './server';
import { isValidName, StepFunctionsService } from './service';
import { ExecutionStore } from './store';
import { loadTimeoutErrorClass } from './tasks';

/**
 * A local Step Functions endpoint: the handlers reach it through the real
 * `@aws-sdk/client-sfn` (`AWS_ENDPOINT_URL_SFN`), and it runs the
 * definition CDK synthesizes with aws-local-stepfunctions. What the
 * interpreter lacks is done here: task tokens, heartbeats, task and
 * execution timeouts, StopExecution, execution records and histories that
 * survive a restart, and restarting the executions a previous process left
 * running (Longhaul's steps are idempotent, so a rerun stands in for Step
 * Functions' durable progress).
 *
 * Runs: `arn:aws:states:::lambda:invoke`, `...:lambda:invoke.waitForTaskToken`,
 * `...:ecs:runTask.sync` (through the machine's `runTask`) and Lambda
 * function ARNs as Task resources; any other resource is refused at
 * start-up. JSONPath definitions only.
 *
 * Where it differs from Step Functions:
 * - a restarted execution reruns from its first state (a redriven one from
 *   the state its redrive went on from), under the definition given now; its
 *   history records an `ExecutionRedriven` event and `redriveCount` counts
 *   restarts as well as redrives. Task tokens issued before the restart
 *   answer TaskTimedOut;
 * - RedriveExecution enters a failed Map or Parallel state again whole, where
 *   Step Functions reruns only its unsuccessful iterations or branches; it
 *   keeps the last 10 client tokens, as the service does;
 * - `$$.Task.Token` and `$$.State.*` exist in Task states' `Parameters`
 *   only; `$$.State.RetryCount` stays 0 for a Task whose input is not an
 *   object or array;
 * - `HeartbeatSeconds` applies to `.waitForTaskToken` tasks only; Lambda's
 *   own service errors and timeouts are left to `invokeLambda`;
 * - requests are not authenticated (SigV4 is ignored), so it listens on
 *   loopback by default;
 * - the API is throttled by the documented buckets of each action, per
 *   emulator (the account in its Region), answering ThrottlingException
 *   (./api-quotas.ts).
 */

export interface LocalStateMachine {
  readonly name: string;
  /** Amazon States Language (JSONPath), fully resolved: no CloudFormation functions left. */
  readonly definition: object;
  /**
   * Runs a Lambda function: receives the function's name (an ARN or a
   * qualifier in the definition is reduced to the name) and a JSON copy of
   * the payload. A rejection fails the task with the error's `name` as the
   * error and Lambda's `{errorType, errorMessage, trace}` as the cause.
   * Resumed executions call it as soon as the emulator has started.
   */
  readonly invokeLambda: InvokeLambda;
  /**
   * Runs the ECS task of an `ecs:runTask.sync` state, from its Parameters
   * once they are evaluated, and settles once the task has stopped (see
   * `RunTask`). A container that exited with anything but 0 fails the state
   * with `States.TaskFailed`, the description as its cause.
   * @default - none: such a state fails with States.Runtime
   */
  readonly runTask?: RunTask;
}

export interface LocalStepFunctionsOptions {
  /** @default 0 (any free port) */
  readonly port?: number;
  /** @default '127.0.0.1' */
  readonly host?: string;
  /** @default 'us-east-1' */
  readonly region?: string;
  /** @default '000000000000' */
  readonly accountId?: string;
  /** Where executions and their histories are kept; one running emulator per directory. */
  readonly dataDir: string;
  readonly stateMachines: readonly LocalStateMachine[];
  /**
   * Restart, from the beginning and under the same ARN, the executions that
   * were running when the previous process stopped.
   * @default true
   */
  readonly resumeRunning?: boolean;
}

export interface LocalStepFunctions {
  /** For `AWS_ENDPOINT_URL_SFN` or an SFNClient's `endpoint`. */
  readonly endpoint: string;
  stateMachineArn(name: string): string;
  /**
   * Stops serving and lets go of running executions without recording them
   * as stopped, as a crash would, so the next start on the same data
   * directory resumes them.
   */
  close(): Promise<void>;
}

export async function startLocalStepFunctions(
  options: LocalStepFunctionsOptions,
): Promise<LocalStepFunctions> {
  const region = options.region ?? 'us-east-1';
  const accountId = options.accountId ?? '000000000000';
  const host = options.host ?? '127.0.0.1';
  const arnOf = (name: string) => `arn:aws:states:${region}:${accountId}:stateMachine:${name}`;

  const machines = new Map<string, MachineRuntime>();
  for (const { name, definition, invokeLambda, runTask } of options.stateMachines) {
    if (!isValidName(name)) throw new Error(`${JSON.stringify(name)} is not a valid state machine name`);
    const arn = arnOf(name);
    if (machines.has(arn)) throw new Error(`state machine ${name} is defined twice`);
    machines.set(arn, {
      name,
      arn,
      roleArn: `arn:aws:iam::${accountId}:role/${name}-role`,
      definition: JSON.stringify(definition),
      compiled: compileDefinition(name, definition),
      invokeLambda,
      ...(runTask ? { runTask } : {}),
    });
  }
  const timeoutErrorClass = await loadTimeoutErrorClass();

  const store = new ExecutionStore(options.dataDir);
  const service = new StepFunctionsService({
    store,
    region,
    accountId,
    machines,
    timeoutErrorClass,
    creationDate: Date.now(),
  });
  const throttle = new ApiThrottle(region);
  const server = createApiServer((action, body) => {
    throttle.admit(action);
    return service.handle(action, body);
  });
  let port: number;
  try {
    port = await listenOn(server, options.port ?? 0, host);
  } catch (error) {
    store.close();
    throw error;
  }
  if (options.resumeRunning ?? true) service.resumeRunning();

  let closed: Promise<void> | undefined;
  return {
    endpoint: `http://${host.includes(':') ? `[${host}]` : host}:${port}`,
    stateMachineArn(name) {
      const arn = arnOf(name);
      if (!machines.has(arn)) throw new Error(`no state machine named ${name} runs here`);
      return arn;
    },
    close() {
      closed ??= (async () => {
        const serverClosed = new Promise<void>((resolve) => server.close(() => resolve()));
        server.closeAllConnections();
        await service.shutdown();
        await serverClosed;
        store.close();
      })();
      return closed;
    },
  };
}
