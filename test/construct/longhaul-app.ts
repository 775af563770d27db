import { readFileSync } from 'node:fs';
import * as path from 'node:path';
import { App, Validations } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { AwsSolutionsChecks } from 'cdk-nag';
import { loadSettings, type Settings } from '../../config/settings';
import { LonghaulStack } from '../../lib/longhaul-stack';

/** Bundling four handlers and synthesizing takes seconds; each test file synthesizes once. */
export const SYNTH_TIMEOUT_MS = 120_000;

/** The context (feature flags) of cdk.json, so tests synthesize what `cdk synth` does. */
export function cdkJsonContext(): Record<string, unknown> {
  const cdkJson = JSON.parse(readFileSync(path.join(__dirname, '..', '..', 'cdk.json'), 'utf8'));
  return cdkJson.context ?? {};
}

export interface SynthesizedLonghaul {
  readonly app: App;
  readonly stack: LonghaulStack;
  readonly settings: Settings;
  readonly template: Template;
}

/**
 * Builds the Longhaul app as bin/longhaul.ts does, with settings read from `env`,
 * and synthesizes it. With `nag`, AwsSolutions checks run during synthesis, which
 * then throws on any finding that is not acknowledged.
 */
export function synthesizeLonghaul(
  env: Record<string, string> = {},
  options: { readonly nag?: boolean; readonly alarmEmail?: string; readonly skipBundling?: boolean } = {},
): SynthesizedLonghaul {
  const app = new App({
    context: {
      ...cdkJsonContext(),
      // The CLI turns on path and asset metadata; tests find resources and bundles by them.
      'aws:cdk:enable-path-metadata': true,
      'aws:cdk:enable-asset-metadata': true,
      // No stack matches an empty list, so nothing is bundled: for extra synths that only read the template.
      ...(options.skipBundling ? { 'aws:cdk:bundling-stacks': [] } : {}),
    },
  });
  const settings = loadSettings(env);
  const stack = new LonghaulStack(app, 'Longhaul', { settings, alarmEmail: options.alarmEmail });
  if (options.nag) Validations.of(app).addPlugins(new AwsSolutionsChecks(app));
  return { app, stack, settings, template: Template.fromStack(stack) };
}

/** The statements of the IAM policy at `constructPath` (e.g. `…/Role/DefaultPolicy/Resource`). */
export function policyStatements(template: Template, constructPath: string): PolicyStatementJson[] {
  const id = logicalIdAt(template, 'AWS::IAM::Policy', constructPath);
  return template.toJSON().Resources[id].Properties.PolicyDocument.Statement;
}

export interface PolicyStatementJson {
  readonly Effect: string;
  readonly Action: string | string[];
  readonly Resource: unknown;
}

/** The statements among `statements` that grant an action of `service` (`states`, `s3`, …). */
export function statementsFor(
  statements: readonly PolicyStatementJson[],
  service: string,
): PolicyStatementJson[] {
  return statements.filter((s) => [s.Action].flat().some((action) => action.startsWith(`${service}:`)));
}

/** Logical ids of the resources of `type` whose construct path is exactly `constructPath`. */
export function logicalIdAt(template: Template, type: string, constructPath: string): string {
  const ids = Object.entries(template.findResources(type))
    .filter(([, resource]) => resource.Metadata?.['aws:cdk:path'] === constructPath)
    .map(([id]) => id);
  if (ids.length !== 1) throw new Error(`expected one ${type} at ${constructPath}, found ${ids.length}`);
  return ids[0] as string;
}
