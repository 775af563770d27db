import { randomUUID } from 'node:crypto';
import { LambdaInvokeError, StepError } from '../config/workflow-errors';
import { type IntrinsicLookup, resolveIntrinsics } from '../lib/workflow-definition';
import { ecsReferenceLookup } from './ecs';
import type { LocalHandlers } from './handlers';
import {
  functionArn,
  InvocationTimeoutError,
  invoke,
  LOCAL_ACCOUNT_ID,
  type LocalFunction,
  localFunctionName,
  localFunctions,
} from './lambda';
import { type LocalStepFunctions, startLocalStepFunctions } from './stepfunctions';
import type { RunTask } from './stepfunctions/execution';
import type { LocalTemplate } from './template';

/**
 * The media workflow on the local Step Functions endpoint: the definition of
 * the template's state machine, its Task states invoking the workflow and
 * compute handlers as Lambda would, and running the compute task as ECS
 * would (local/ecs.ts).
 */

/** The functions the state machine invokes. */
const WORKFLOW_FUNCTIONS = ['workflow', 'compute'] as const satisfies readonly (keyof LocalHandlers)[];

export const WORKFLOW_STATE_MACHINE_NAME = 'longhaul-jobs';

export interface LocalWorkflow {
  readonly endpoint: string;
  readonly stateMachineArn: string;
  /** Lets go of running executions as a crash would; the next start on the same data directory resumes them. */
  close(): Promise<void>;
}

/** An error as Step Functions reports it for a Lambda invocation that went wrong outside the function's code. */
function lambdaServiceError(name: string, message: string): Error {
  const error = new Error(message);
  error.name = name;
  return error;
}

export async function startLocalWorkflow(options: {
  readonly host: string;
  readonly region: string;
  readonly dataDir: string;
  readonly template: LocalTemplate;
  /**
   * Settles once the handler environment is in place and the handlers have
   * loaded. Executions left running by the previous process resume as soon as
   * the endpoint starts; their first invocations wait for it.
   */
  readonly handlers: Promise<Pick<LocalHandlers, (typeof WORKFLOW_FUNCTIONS)[number]>>;
  /** Runs the `ecs:runTask.sync` states' tasks (local/ecs.ts). */
  readonly runTask: RunTask;
  /** How many jobs fail their first finalize with an unusable provider output (LONGHAUL_FAULT_UNUSABLE_OUTPUTS). */
  readonly unusableOutputs?: number;
}): Promise<LocalWorkflow> {
  const unusableOutputFor = new Set<string>();
  const definition = localWorkflowDefinition(options.template);
  const functions = new Map<string, LocalFunction & { service: (typeof WORKFLOW_FUNCTIONS)[number] }>(
    WORKFLOW_FUNCTIONS.map((service) => [
      localFunctions[service].name,
      { ...localFunctions[service], service },
    ]),
  );
  const stepFunctions: LocalStepFunctions = await startLocalStepFunctions({
    host: options.host,
    region: options.region,
    accountId: LOCAL_ACCOUNT_ID,
    dataDir: options.dataDir,
    stateMachines: [
      {
        name: WORKFLOW_STATE_MACHINE_NAME,
        definition,
        runTask: options.runTask,
        async invokeLambda(functionName, payload) {
          const fn = functions.get(functionName);
          if (!fn) {
            throw lambdaServiceError(
              'Lambda.ResourceNotFoundException',
              `Function not found: ${functionArn({ name: functionName })}`,
            );
          }
          const handler = (await options.handlers)[fn.service];
          const { step, jobId } = payload as { step?: unknown; jobId?: unknown };
          if (
            fn.service === 'workflow' &&
            step === 'finalize' &&
            typeof jobId === 'string' &&
            !unusableOutputFor.has(jobId) &&
            unusableOutputFor.size < (options.unusableOutputs ?? 0)
          ) {
            unusableOutputFor.add(jobId);
            // As the steps function reports it: finalize's error for a provider output it cannot use.
            throw lambdaServiceError(
              StepError.invalidJobInput,
              '[output_invalid] The provider returned an unusable output: fault injected (LONGHAUL_FAULT_UNUSABLE_OUTPUTS).',
            );
          }
          try {
            return await invoke(fn, handler, payload);
          } catch (error) {
            // What Lambda reports for a function that runs out of time.
            if (error instanceof InvocationTimeoutError) {
              throw lambdaServiceError(
                LambdaInvokeError.sandboxTimedOut,
                `RequestId: ${randomUUID()} Error: Task timed out after ${(fn.timeoutMs / 1000).toFixed(2)} seconds`,
              );
            }
            throw error;
          }
        },
      },
    ],
  });
  return {
    endpoint: stepFunctions.endpoint,
    stateMachineArn: stepFunctions.stateMachineArn(WORKFLOW_STATE_MACHINE_NAME),
    close: () => stepFunctions.close(),
  };
}

/**
 * The template's state machine definition with every reference resolved
 * locally: the functions it invokes (their local ARNs) and what its run-task
 * states name (cluster, task definition, subnets, security groups). A
 * reference with no local value throws, naming it.
 */
export function localWorkflowDefinition(template: LocalTemplate): object {
  const services = new Set<string>(WORKFLOW_FUNCTIONS);
  const functionIds = new Map(
    template
      .functions()
      .filter((fn) => services.has(fn.service))
      .map((fn) => [fn.logicalId, { name: localFunctionName(fn.service) }]),
  );
  const ecs = ecsReferenceLookup(template);
  const lookup: IntrinsicLookup = (node) => {
    const [logicalId, attribute] = (node['Fn::GetAtt'] ?? []) as unknown[];
    const fn = functionIds.get(logicalId as string);
    if (fn && attribute === 'Arn') return functionArn(fn);
    return ecs(node);
  };
  const definitionString = resolveIntrinsics(template.stateMachine().definitionString, lookup);
  if (typeof definitionString !== 'string') throw new Error('the state machine has no definition string');
  return JSON.parse(definitionString) as object;
}
