import { randomUUID } from 'node:crypto';
import { resolveIntrinsics } from '../lib/workflow-definition';
import type { WorkflowHandler } from './handlers';
import { functionArn, InvocationTimeoutError, invoke, LOCAL_ACCOUNT_ID, localFunctions } from './lambda';
import { type LocalStepFunctions, startLocalStepFunctions } from './stepfunctions';
import type { LocalTemplate } from './template';

/**
 * The media workflow on the local Step Functions endpoint: the definition of
 * the template's state machine, its Task states invoking the workflow handler
 * as Lambda would.
 */

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
   * Settles once the handler environment is in place and the handler has
   * loaded. Executions left running by the previous process resume as soon as
   * the endpoint starts; their first invocations wait for it.
   */
  readonly workflowHandler: Promise<WorkflowHandler>;
}): Promise<LocalWorkflow> {
  const fn = localFunctions.workflow;
  const stepsFunctionId = options.template.function(fn.service).logicalId;
  const definitionString = resolveIntrinsics(options.template.stateMachine().definitionString, (node) => {
    const [logicalId, attribute] = (node['Fn::GetAtt'] ?? []) as unknown[];
    return logicalId === stepsFunctionId && attribute === 'Arn' ? functionArn(fn) : undefined;
  });
  if (typeof definitionString !== 'string') throw new Error('the state machine has no definition string');
  const definition = JSON.parse(definitionString) as object;
  const stepFunctions: LocalStepFunctions = await startLocalStepFunctions({
    host: options.host,
    region: options.region,
    accountId: LOCAL_ACCOUNT_ID,
    dataDir: options.dataDir,
    stateMachines: [
      {
        name: WORKFLOW_STATE_MACHINE_NAME,
        definition,
        async invokeLambda(functionName, payload) {
          if (functionName !== fn.name) {
            throw lambdaServiceError(
              'Lambda.ResourceNotFoundException',
              `Function not found: ${functionArn({ name: functionName })}`,
            );
          }
          const handler = await options.workflowHandler;
          try {
            return await invoke(fn, handler, payload);
          } catch (error) {
            // What Lambda reports for a function that runs out of time.
            if (error instanceof InvocationTimeoutError) {
              throw lambdaServiceError(
                'Sandbox.Timedout',
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
