import { createHash } from 'node:crypto';
import { mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import * as path from 'node:path';
import { App, type CfnElement, Duration, Stack, type StackProps, Validations } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { AttributeType, Table } from 'aws-cdk-lib/aws-dynamodb';
import { Bucket } from 'aws-cdk-lib/aws-s3';
import { Secret } from 'aws-cdk-lib/aws-secretsmanager';
import { Queue } from 'aws-cdk-lib/aws-sqs';
import type { Construct, IConstruct } from 'constructs';
import { jobQueueEnv, providerSecretEnv } from '../../config/layout';
import { PROVIDER_NAMES, type ProviderName } from '../../config/providers';
import { defaultSettings, loadSettings, type Settings } from '../../config/settings';
import { handlerEntry } from '../../lib/handlers';
import type { LonghaulStack } from '../../lib/longhaul-stack';
import { providerIdSuffix } from '../../lib/provider-ids';

/** Synthesizing the app takes seconds, bundling its handlers many more: room for both on a loaded machine. */
export const SYNTH_TIMEOUT_MS = 120_000;

const REPO_ROOT = path.join(__dirname, '..', '..');

/** The context (feature flags) of cdk.json, so tests synthesize what `cdk synth` does. */
export function cdkJsonContext(): Record<string, unknown> {
  const cdkJson = JSON.parse(readFileSync(path.join(REPO_ROOT, 'cdk.json'), 'utf8'));
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
 * then throws on any finding that is not acknowledged. A test that reads the
 * template alone takes it from longhaulTemplate, which shares one synthesis.
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
  // Loaded on a synthesis only: the constructs take seconds to load, which a file reading a kept template spares.
  const { LonghaulStack } = require('../../lib/longhaul-stack') as typeof import('../../lib/longhaul-stack');
  const settings = loadSettings(env);
  const stack = new LonghaulStack(app, 'Longhaul', { settings, alarmEmail: options.alarmEmail });
  if (options.nag) {
    const { AwsSolutionsChecks } = require('cdk-nag') as typeof import('cdk-nag');
    Validations.of(app).addPlugins(new AwsSolutionsChecks(app));
  }
  return { app, stack, settings, template: Template.fromStack(stack) };
}

/**
 * What a synthesis of the app without bundling reads: the constructs and
 * settings, the compute image's build context (package files, config/ and
 * lambdas/, whose fingerprint is the image asset's hash in the template), and
 * this file, which builds the app.
 */
const TEMPLATE_SOURCES = [
  'lib',
  'config',
  'lambdas',
  'cdk.json',
  'package.json',
  'package-lock.json',
  'tsconfig.json',
  path.relative(REPO_ROOT, __filename),
];
const TEMPLATE_CACHE_DIR = path.join(REPO_ROOT, 'cdk.out', 'construct-test-templates');

/** How often a file waiting for another's synthesis of the same template looks for it. */
const KEPT_TEMPLATE_POLL_MS = 100;

/**
 * A stack of its own for the construct under test, in an app with cdk.json's
 * context and path metadata (tests find resources by their construct path).
 * No stack matches an empty list of bundling stacks, so a function in it is
 * synthesized without bundling its handler: these tests read the template only.
 * Nor is it run through CDK's CloudFormation validation, whose first run in a
 * process takes seconds: the whole app's synthesis validates every construct.
 */
export function stackUnderTest(id = 'Test', props: StackProps = {}): Stack {
  const app = new App({
    builtinCloudFormationValidation: false,
    context: {
      ...cdkJsonContext(),
      'aws:cdk:enable-path-metadata': true,
      'aws:cdk:enable-asset-metadata': true,
      'aws:cdk:bundling-stacks': [],
    },
  });
  return new Stack(app, id, props);
}

/**
 * The template of the app as `synthesizeLonghaul(env, { alarmEmail, skipBundling: true })`
 * synthesizes it, for tests that read the template alone. A synthesis takes
 * seconds and jest gives each test file modules of its own, so the template is
 * kept on disk under a hash of its sources, `env` and the alarm address: the
 * files that read the same template, in this run or a later one with the same
 * sources, share one synthesis. While one file synthesizes it, a file that
 * needs the same template waits for it rather than synthesize it too on the
 * same cores.
 */
export function longhaulTemplate(
  env: Record<string, string> = {},
  options: { readonly alarmEmail?: string } = {},
): Template {
  const file = path.join(TEMPLATE_CACHE_DIR, `${templateKey(env, options.alarmEmail)}.template.json`);
  const lock = `${file}.lock`;
  const deadline = Date.now() + SYNTH_TIMEOUT_MS;
  let locked = false;
  for (;;) {
    try {
      return Template.fromString(readFileSync(file, 'utf8'));
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
    }
    locked = takeLock(lock);
    // Past the deadline the holder is taken to be stuck: synthesizing again costs time, not correctness.
    if (locked || Date.now() > deadline) break;
    Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, KEPT_TEMPLATE_POLL_MS);
  }
  try {
    const { template } = synthesizeLonghaul(env, { alarmEmail: options.alarmEmail, skipBundling: true });
    // Written whole under another name first: a reader finds either no template or a complete one.
    const partial = `${file}.${process.pid}.tmp`;
    writeFileSync(partial, JSON.stringify(template.toJSON()));
    renameSync(partial, file);
    return template;
  } finally {
    if (locked) rmSync(lock, { force: true });
  }
}

/**
 * Takes the lock file `lock` for this process. A lock whose holder has
 * exited without removing it (a run stopped mid-synthesis) is removed, so the
 * next attempt can take it.
 */
function takeLock(lock: string): boolean {
  mkdirSync(path.dirname(lock), { recursive: true });
  try {
    writeFileSync(lock, String(process.pid), { flag: 'wx' });
    return true;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
  }
  let holder: number;
  try {
    holder = Number(readFileSync(lock, 'utf8'));
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return false;
    throw error;
  }
  // An empty lock is one its holder has created but not yet written its pid to.
  if (holder > 0 && !isRunning(holder)) rmSync(lock, { force: true });
  return false;
}

function isRunning(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** The files of `source`, a file or a folder of the repository, by their path from its root. */
function sourceFiles(source: string): string[] {
  const absolute = path.join(REPO_ROOT, source);
  if (!statSync(absolute).isDirectory()) return [source];
  return readdirSync(absolute, { withFileTypes: true, recursive: true })
    .filter((entry) => entry.isFile())
    .map((entry) => path.relative(REPO_ROOT, path.join(entry.parentPath, entry.name)))
    .sort();
}

function templateKey(env: Record<string, string>, alarmEmail: string | undefined): string {
  const hash = createHash('sha256');
  for (const file of TEMPLATE_SOURCES.flatMap(sourceFiles)) {
    hash
      .update(`${file}\0`)
      .update(readFileSync(path.join(REPO_ROOT, file)))
      .update('\0');
  }
  const settings = Object.entries(env).sort(([a], [b]) => a.localeCompare(b));
  hash.update(JSON.stringify({ settings, alarmEmail: alarmEmail ?? null }));
  return hash.digest('hex').slice(0, 32);
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

/**
 * Each action the statements allow on a resource that names `logicalId`, as
 * `[action, resource]`: CDK merges statements that share actions or resources,
 * so what a role may do is read pair by pair, not statement by statement.
 */
export function grantsOn(
  statements: readonly PolicyStatementJson[],
  logicalId: string,
): [action: string, resource: unknown][] {
  return statements.flatMap((statement) =>
    [statement.Resource]
      .flat()
      .filter((resource) => JSON.stringify(resource).includes(logicalId))
      .flatMap((resource) =>
        [statement.Action].flat().map((action): [string, unknown] => [action, resource]),
      ),
  );
}

/** Logical ids of the resources of `type` whose construct path is exactly `constructPath`. */
export function logicalIdAt(template: Template, type: string, constructPath: string): string {
  const ids = Object.entries(template.findResources(type))
    .filter(([, resource]) => resource.Metadata?.['aws:cdk:path'] === constructPath)
    .map(([id]) => id);
  if (ids.length !== 1) throw new Error(`expected one ${type} at ${constructPath}, found ${ids.length}`);
  return ids[0] as string;
}

/**
 * The body of the one dashboard in `template`, parsed. CloudFormation joins it
 * from strings and references; each reference becomes `${LogicalId}` (a Ref)
 * or `${LogicalId.Attribute}` (a GetAtt), `${AWS::Region}` for pseudo parameters.
 */
export function dashboardBody(template: Template): DashboardJson {
  const dashboards = Object.values(template.findResources('AWS::CloudWatch::Dashboard'));
  if (dashboards.length !== 1) throw new Error(`expected one dashboard, found ${dashboards.length}`);
  const body: unknown = dashboards[0]?.Properties.DashboardBody;
  const parts: unknown[] =
    typeof body === 'string' ? [body] : ((body as { 'Fn::Join': [string, unknown[]] })['Fn::Join'][1] ?? []);
  const text = parts
    .map((part) => {
      if (typeof part === 'string') return part;
      const node = part as { Ref?: string; 'Fn::GetAtt'?: [string, string] };
      if (node.Ref) return `\${${node.Ref}}`;
      if (node['Fn::GetAtt']) return `\${${node['Fn::GetAtt'].join('.')}}`;
      throw new Error(`unexpected intrinsic in the dashboard body: ${JSON.stringify(part)}`);
    })
    .join('');
  return JSON.parse(text) as DashboardJson;
}

export interface DashboardJson {
  readonly widgets: readonly WidgetJson[];
}

export interface WidgetJson {
  readonly type: string;
  readonly properties: {
    readonly title?: string;
    readonly alarms?: readonly string[];
    readonly metrics?: readonly (readonly unknown[])[];
    readonly annotations?: { readonly horizontal?: readonly { value: number; label?: string }[] };
    /** A log query widget's query, its log groups first (`SOURCE '…' | …`). */
    readonly query?: string;
    readonly view?: string;
  };
}

/** One entry of a graph widget's `metrics`: a metric (namespace, name, dimensions) or a math expression. */
export interface GraphedMetric {
  readonly widget: string;
  readonly namespace?: string;
  readonly name?: string;
  readonly dimensions: Readonly<Record<string, string>>;
  readonly expression?: string;
  readonly stat?: string;
  readonly period?: number;
  readonly id?: string;
  readonly label?: string;
}

/** Every metric and expression graphed on the dashboard, by widget title. */
export function graphedMetrics(dashboard: DashboardJson): GraphedMetric[] {
  return dashboard.widgets.flatMap((widget) =>
    (widget.properties.metrics ?? []).map((entry) => {
      const widgetTitle = widget.properties.title ?? '';
      if (typeof entry[0] !== 'string') {
        return { widget: widgetTitle, dimensions: {}, ...(entry[0] as Record<string, unknown>) };
      }
      // Rendering options (label, stat, period, id, …) come last, and only when any differs from the default.
      const last = entry.at(-1);
      const hasOptions = typeof last === 'object' && last !== null;
      const options = (hasOptions ? last : {}) as Record<string, unknown>;
      const [namespace, name, ...rest] = (hasOptions ? entry.slice(0, -1) : entry) as string[];
      const dimensions: Record<string, string> = {};
      for (let i = 0; i + 1 < rest.length; i += 2) dimensions[rest[i] as string] = rest[i + 1] as string;
      return { widget: widgetTitle, namespace, name, dimensions, ...options };
    }),
  );
}

/** Each provider's secret in the Longhaul stack, by provider. */
export function providerSecretIds(template: Template): Record<ProviderName, string> {
  const path = (provider: ProviderName) =>
    `Longhaul/Secrets/ProviderSecret${providerIdSuffix(provider)}/Resource`;
  return Object.fromEntries(
    PROVIDER_NAMES.map((provider) => [
      provider,
      logicalIdAt(template, 'AWS::SecretsManager::Secret', path(provider)),
    ]),
  ) as Record<ProviderName, string>;
}

/** The one statement that lets a function read every provider's secret, and nothing else. */
export function readsEveryProviderSecret(template: Template) {
  return {
    Effect: 'Allow',
    Action: 'secretsmanager:GetSecretValue',
    Resource: expect.arrayContaining(Object.values(providerSecretIds(template)).map((id) => ({ Ref: id }))),
  };
}

/** The environment naming each provider's secret. */
export function providerSecretEnvironment(template: Template): Record<string, unknown> {
  return Object.fromEntries(
    Object.entries(providerSecretIds(template)).map(([provider, id]) => [
      providerSecretEnv(provider),
      { Ref: id },
    ]),
  );
}

/** Each provider's jobs queue in the Longhaul stack, by provider. */
export function jobQueueIds(template: Template): Record<ProviderName, string> {
  return Object.fromEntries(
    PROVIDER_NAMES.map((provider) => [
      provider,
      logicalIdAt(
        template,
        'AWS::SQS::Queue',
        `Longhaul/JobQueue/Queue${providerIdSuffix(provider)}/Resource`,
      ),
    ]),
  ) as Record<ProviderName, string>;
}

/** The ARNs of every provider's jobs queue, in the order CDK lists a statement's resources. */
export function jobQueueArns(template: Template): { 'Fn::GetAtt': [string, 'Arn'] }[] {
  return Object.values(jobQueueIds(template))
    .sort()
    .map((id) => ({ 'Fn::GetAtt': [id, 'Arn'] }));
}

/** The environment naming each provider's jobs queue. */
export function jobQueueEnvironment(template: Template): Record<string, unknown> {
  return Object.fromEntries(
    Object.entries(jobQueueIds(template)).map(([provider, id]) => [jobQueueEnv(provider), { Ref: id }]),
  );
}

/** One stand-in per provider for a construct's props (its jobs queue, its secret, …), made by `make`. */
export function perProvider<T>(make: (provider: ProviderName) => T): Record<ProviderName, T> {
  return Object.fromEntries(PROVIDER_NAMES.map((provider) => [provider, make(provider)])) as Record<
    ProviderName,
    T
  >;
}

/**
 * A project function standing in for one the construct under test is given
 * or grants to; in a stackUnderTest its handler (the API's) is not bundled.
 */
export function standInFunction(scope: Construct, id: string, settings: Settings = defaultSettings) {
  // Loaded when first used, as in synthesizeLonghaul: a file reading a kept template spares the constructs' load.
  const { ProjectFunction } =
    require('../../lib/constructs/project-function') as typeof import('../../lib/constructs/project-function');
  return new ProjectFunction(scope, id, {
    entry: handlerEntry('api'),
    settings,
    serviceName: 'stand-in',
    timeout: Duration.seconds(10),
  });
}

/**
 * Stand-ins in `stack` for what the app gives most constructs: the job table,
 * the input and output buckets, and each provider's jobs queue and secret;
 * with their logical ids (`idOf` finds those of others), and the environment
 * and ARNs a construct given them should name.
 */
export function standIns(stack: Stack) {
  const idOf = (construct: IConstruct) => stack.getLogicalId(construct.node.defaultChild as CfnElement);
  const jobTable = new Table(stack, 'JobTable', { partitionKey: { name: 'pk', type: AttributeType.STRING } });
  // An index, as the app's job table has: a grant on the table covers its indexes too.
  jobTable.addGlobalSecondaryIndex({
    indexName: 'byTenant',
    partitionKey: { name: 'tenantId', type: AttributeType.STRING },
  });
  const inputBucket = new Bucket(stack, 'InputBucket');
  const outputBucket = new Bucket(stack, 'OutputBucket');
  const jobQueues = perProvider((provider) => new Queue(stack, `JobQueue-${provider}`));
  const providerSecrets = perProvider((provider) => new Secret(stack, `ProviderSecret-${provider}`));
  const ids = {
    jobTable: idOf(jobTable),
    inputBucket: idOf(inputBucket),
    outputBucket: idOf(outputBucket),
    jobQueues: perProvider((provider) => idOf(jobQueues[provider])),
    providerSecrets: perProvider((provider) => idOf(providerSecrets[provider])),
  };
  return {
    jobTable,
    inputBucket,
    outputBucket,
    jobQueues,
    providerSecrets,
    idOf,
    ids,
    /** The ARNs of the jobs queues, in the order CDK lists a statement's resources. */
    jobQueueArns: Object.values(ids.jobQueues)
      .sort()
      .map((id) => ({ 'Fn::GetAtt': [id, 'Arn'] })),
    jobQueueEnvironment: Object.fromEntries(
      PROVIDER_NAMES.map((provider) => [jobQueueEnv(provider), { Ref: ids.jobQueues[provider] }]),
    ),
    providerSecretEnvironment: Object.fromEntries(
      PROVIDER_NAMES.map((provider) => [providerSecretEnv(provider), { Ref: ids.providerSecrets[provider] }]),
    ),
  };
}
