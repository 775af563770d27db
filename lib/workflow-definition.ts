import { readFileSync } from 'node:fs';
import * as path from 'node:path';
import { App, Stack } from 'aws-cdk-lib';
import { Function as LambdaFunction } from 'aws-cdk-lib/aws-lambda';
import type { CfnStateMachine } from 'aws-cdk-lib/aws-stepfunctions';
import type { Settings } from '../config/settings';
import { JobWorkflow } from './constructs/job-workflow';
import { REPO_ROOT } from './handlers';

/**
 * What the pseudo parameters of an environment-agnostic stack stand for outside
 * AWS. The local stack accepts these in ARNs.
 */
export const LOCAL_PSEUDO_PARAMETERS: Readonly<Record<string, string>> = {
  'AWS::Partition': 'aws',
  'AWS::Region': 'us-east-1',
  'AWS::AccountId': '000000000000',
  'AWS::URLSuffix': 'amazonaws.com',
};

/**
 * Returns the value an intrinsic function stands for, or undefined when it has
 * none; `resolveIntrinsics` then fails.
 */
export type IntrinsicLookup = (intrinsic: Readonly<Record<string, unknown>>) => string | undefined;

/**
 * The Amazon States Language definition of the media workflow, exactly as the
 * deployed stack's `JobWorkflow` renders it, as a plain object, with every Task
 * invoking `stepsFunctionArn`. The local stack runs this, so it runs what AWS
 * runs; test/construct compares it with the synthesized template.
 *
 * It builds a throwaway app (with cdk.json's feature flags) holding only the
 * workflow and an imported function, and never synthesizes or bundles anything.
 */
export function synthesizeWorkflowDefinition(settings: Settings, stepsFunctionArn: string): object {
  const app = new App({ context: cdkJsonContext(), autoSynth: false });
  const stack = new Stack(app, 'LonghaulWorkflowDefinition');
  const stepsFunction = LambdaFunction.fromFunctionArn(stack, 'StepsFunction', stepsFunctionArn);
  const workflow = new JobWorkflow(stack, 'Workflow', { settings, stepsFunction });
  const cfn = workflow.stateMachine.node.defaultChild as CfnStateMachine;
  const definition = resolveIntrinsics(stack.resolve(cfn.definitionString));
  if (typeof definition !== 'string') {
    throw new Error('synthesizeWorkflowDefinition: the state machine has no definition string');
  }
  return JSON.parse(definition) as object;
}

/**
 * Replaces CloudFormation intrinsics in a resolved template value: `Fn::Join`,
 * `Ref` of the pseudo parameters (see {@link LOCAL_PSEUDO_PARAMETERS}), and
 * whatever `lookup` knows. Throws on anything else, naming it, so a definition
 * that starts referring to another resource cannot reach the local stack with a
 * hole in it.
 */
export function resolveIntrinsics(value: unknown, lookup: IntrinsicLookup = () => undefined): unknown {
  if (Array.isArray(value)) return value.map((item) => resolveIntrinsics(item, lookup));
  if (value === null || typeof value !== 'object') return value;
  const node = value as Record<string, unknown>;
  const keys = Object.keys(node);
  const intrinsic =
    keys.length === 1 && (keys[0] === 'Ref' || keys[0]?.startsWith('Fn::')) ? keys[0] : undefined;
  if (intrinsic === undefined) {
    return Object.fromEntries(keys.map((key) => [key, resolveIntrinsics(node[key], lookup)]));
  }
  const known = lookup(node);
  if (known !== undefined) return known;
  if (intrinsic === 'Ref' && typeof node.Ref === 'string' && node.Ref in LOCAL_PSEUDO_PARAMETERS) {
    return LOCAL_PSEUDO_PARAMETERS[node.Ref];
  }
  if (intrinsic === 'Fn::Join') {
    const [delimiter, parts] = node['Fn::Join'] as [unknown, unknown];
    if (typeof delimiter === 'string' && Array.isArray(parts)) {
      return parts
        .map((part) => {
          const resolved = resolveIntrinsics(part, lookup);
          if (typeof resolved !== 'string') throw unresolved(part);
          return resolved;
        })
        .join(delimiter);
    }
  }
  throw unresolved(node);
}

function unresolved(node: unknown): Error {
  return new Error(
    `The workflow definition refers to ${JSON.stringify(node)}, which has no value outside the deployed stack`,
  );
}

/** The feature flags of cdk.json, so the throwaway app renders the definition as `cdk synth` does. */
function cdkJsonContext(): Record<string, unknown> {
  const cdkJson = JSON.parse(readFileSync(path.join(REPO_ROOT, 'cdk.json'), 'utf8')) as {
    context?: Record<string, unknown>;
  };
  return cdkJson.context ?? {};
}
