import { readdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Duration } from 'aws-cdk-lib';
import type { Template } from 'aws-cdk-lib/assertions';
import { build } from 'esbuild';
import { defaultSettings, settingsEnvironment } from '../../config/settings';
import { handlerBuildOptions } from '../../lib/bundling';
import { ProjectFunction, type ProjectFunctionProps } from '../../lib/constructs/project-function';
import { handlerEntry } from '../../lib/handlers';
import { logicalIdAt, SYNTH_TIMEOUT_MS, stackUnderTest, synthesizeLonghaul } from './longhaul-app';

jest.setTimeout(SYNTH_TIMEOUT_MS);

/** Functions bundled from an entry file into a zip. */
const BUNDLED = [
  'Longhaul/Api/ApiFunction',
  'Longhaul/Api/AuthorizerFunction',
  'Longhaul/ProviderEvents/EventsFunction',
  'Longhaul/WorkflowSteps/StepsFunction',
  'Longhaul/Dispatcher/DispatchFunction',
  'Longhaul/Reconciler/ReconcileFunction',
  'Longhaul/LiveProgress/StreamFunction',
  'Longhaul/Schedules/FireFunction',
] as const;
/** Every project function, the container-image compute function included: what does not depend on the code. */
const FUNCTIONS = [...BUNDLED, 'Longhaul/Compute/ComputeFunction'] as const;

let template: Template;
let outdir: string;

beforeAll(() => {
  const longhaul = synthesizeLonghaul();
  template = longhaul.template;
  outdir = longhaul.app.outdir;
});

test('the functions above are every function the stack bundles', () => {
  const bundled = Object.values(template.findResources('AWS::Lambda::Function'))
    .filter((fn) => fn.Metadata?.['aws:asset:is-bundled'] === true)
    .map((fn) => String(fn.Metadata['aws:cdk:path']).replace(/\/Function\/Resource$/, ''));
  expect(bundled.sort()).toEqual([...BUNDLED].sort());
});

describe.each(BUNDLED)('%s', (path) => {
  test('runs Node 24 on arm64 with active tracing and a bundled handler', () => {
    const id = logicalIdAt(template, 'AWS::Lambda::Function', `${path}/Function/Resource`);
    const fn = template.toJSON().Resources[id];
    expect(fn.Properties).toEqual(
      expect.objectContaining({
        Runtime: 'nodejs24.x',
        Architectures: ['arm64'],
        TracingConfig: { Mode: 'Active' },
        Handler: 'index.handler',
      }),
    );
    expect(fn.Metadata['aws:asset:is-bundled']).toBe(true);
  });

  test('ships a minified bundle with its source map, without the sources or the AWS SDK', () => {
    const id = logicalIdAt(template, 'AWS::Lambda::Function', `${path}/Function/Resource`);
    const assetDir = join(outdir, template.toJSON().Resources[id].Metadata['aws:asset:path']);
    expect(readdirSync(assetDir).sort()).toEqual(['index.js', 'index.js.map']);
    const map = JSON.parse(readFileSync(join(assetDir, 'index.js.map'), 'utf8'));
    expect(map.sourcesContent).toBeUndefined();
    expect(map.sources.some((source: string) => source.includes('@aws-sdk/'))).toBe(false);
    expect(map.sources.some((source: string) => source.endsWith('handler.ts'))).toBe(true);
  });

  // What the bench's cold-start section bundles and loads (bench/sections/coldstart.ts).
  test('ships the very bundle handlerBuildOptions builds from its handler', async () => {
    const id = logicalIdAt(template, 'AWS::Lambda::Function', `${path}/Function/Resource`);
    const assetDir = join(outdir, template.toJSON().Resources[id].Metadata['aws:asset:path']);
    const map = JSON.parse(readFileSync(join(assetDir, 'index.js.map'), 'utf8'));
    const name: string = map.sources
      .map((source: string) => /(?:^|\/)lambdas\/([^/]+)\/handler\.ts$/.exec(source)?.[1])
      .find(Boolean);
    expect(name).toEqual(expect.any(String));
    // Not written: only the name of the output matters, which the bundle's sourceMappingURL carries.
    const outfile = join(tmpdir(), 'index.js');
    const built = await build({ ...handlerBuildOptions(handlerEntry(name), outfile), write: false });
    const bundle = built.outputFiles.find((file) => file.path === outfile);
    expect(Buffer.from(bundle?.contents ?? []).equals(readFileSync(join(assetDir, 'index.js')))).toBe(true);
  });
});

describe.each(FUNCTIONS)('%s', (path) => {
  test('runs on arm64 with active tracing', () => {
    const id = logicalIdAt(template, 'AWS::Lambda::Function', `${path}/Function/Resource`);
    expect(template.toJSON().Resources[id].Properties).toEqual(
      expect.objectContaining({ Architectures: ['arm64'], TracingConfig: { Mode: 'Active' } }),
    );
  });

  test('gets every setting, the Powertools defaults and source maps through its environment', () => {
    const id = logicalIdAt(template, 'AWS::Lambda::Function', `${path}/Function/Resource`);
    const variables = template.toJSON().Resources[id].Properties.Environment.Variables;
    expect(variables).toEqual(
      expect.objectContaining({
        ...settingsEnvironment(defaultSettings),
        POWERTOOLS_METRICS_NAMESPACE: 'Longhaul',
        POWERTOOLS_LOG_LEVEL: 'INFO',
        NODE_OPTIONS: '--enable-source-maps',
      }),
    );
  });

  test('logs to its own retained log group with the configured retention', () => {
    const logGroup = logicalIdAt(template, 'AWS::Logs::LogGroup', `${path}/LogGroup/Resource`);
    const id = logicalIdAt(template, 'AWS::Lambda::Function', `${path}/Function/Resource`);
    const resources = template.toJSON().Resources;
    expect(resources[id].Properties.LoggingConfig).toEqual({ LogGroup: { Ref: logGroup } });
    expect(resources[logGroup].Properties.RetentionInDays).toBe(defaultSettings.logRetentionDays);
    expect(resources[logGroup].DeletionPolicy).toBe('Retain');
  });

  test('has its own role with no managed policy, writing only to its own log group', () => {
    const role = logicalIdAt(template, 'AWS::IAM::Role', `${path}/Role/Resource`);
    const logGroup = logicalIdAt(template, 'AWS::Logs::LogGroup', `${path}/LogGroup/Resource`);
    const id = logicalIdAt(template, 'AWS::Lambda::Function', `${path}/Function/Resource`);
    const resources = template.toJSON().Resources;
    expect(resources[id].Properties.Role).toEqual({ 'Fn::GetAtt': [role, 'Arn'] });
    expect(resources[role].Properties.ManagedPolicyArns).toBeUndefined();
    expect(resources[role].Properties.AssumeRolePolicyDocument.Statement).toEqual([
      { Action: 'sts:AssumeRole', Effect: 'Allow', Principal: { Service: 'lambda.amazonaws.com' } },
    ]);
    const policy = logicalIdAt(template, 'AWS::IAM::Policy', `${path}/Role/DefaultPolicy/Resource`);
    const statements: { Action: string | string[]; Resource: unknown }[] =
      resources[policy].Properties.PolicyDocument.Statement;
    const logs = statements.filter((s) => [s.Action].flat().some((action) => action.startsWith('logs:')));
    expect(logs).toEqual([
      {
        Effect: 'Allow',
        Action: ['logs:CreateLogStream', 'logs:PutLogEvents'],
        Resource: { 'Fn::GetAtt': [logGroup, 'Arn'] },
      },
    ]);
  });
});

test('the only managed policy in the stack is the one of API Gateway’s CloudWatch role', () => {
  const managed = Object.entries(template.findResources('AWS::IAM::Role'))
    .filter(([, role]) => role.Properties.ManagedPolicyArns !== undefined)
    .map(([, role]) => [role.Metadata['aws:cdk:path'], JSON.stringify(role.Properties.ManagedPolicyArns)]);
  expect(managed).toEqual([
    [
      'Longhaul/Api/RestApi/CloudWatchRole/Resource',
      expect.stringContaining('AmazonAPIGatewayPushToCloudWatchLogs'),
    ],
  ]);
});

test('there are sixteen log groups (nine functions, two API access and two API execution logs, the workflow, the compute task and its VPC flow logs), all with the configured retention', () => {
  template.resourceCountIs('AWS::Logs::LogGroup', 16);
  template.allResourcesProperties('AWS::Logs::LogGroup', {
    RetentionInDays: defaultSettings.logRetentionDays,
  });
});

describe('props', () => {
  const props = (overrides: Partial<ProjectFunctionProps> = {}): ProjectFunctionProps => ({
    entry: handlerEntry('api'),
    settings: defaultSettings,
    serviceName: 'test',
    timeout: Duration.seconds(10),
    ...overrides,
  });
  const create = (overrides: Partial<ProjectFunctionProps>) => () =>
    new ProjectFunction(stackUnderTest(), 'Fn', props(overrides));

  test('rejects a timeout beyond Lambda’s 15 minutes', () => {
    expect(create({ timeout: Duration.minutes(16) })).toThrow(
      'ProjectFunction Test/Fn: timeout must be a whole number of seconds from 1 to 900, got 960',
    );
  });

  test('rejects a memory size Lambda does not offer', () => {
    expect(create({ memorySize: 64 })).toThrow(
      'ProjectFunction Test/Fn: memorySize must be an integer from 128 to 10240 MB, got 64',
    );
  });

  test('rejects a /tmp size or reserved concurrency Lambda does not offer', () => {
    expect(create({ ephemeralStorageMb: 20_000 })).toThrow(
      'ProjectFunction Test/Fn: ephemeralStorageMb must be an integer from 512 to 10240 MB, got 20000',
    );
    expect(create({ reservedConcurrency: 0 })).toThrow(
      'ProjectFunction Test/Fn: reservedConcurrency must be a positive integer, got 0',
    );
  });

  test('takes its code from exactly one of an entry file and an image', () => {
    const image = { directory: '/src', file: 'Dockerfile', target: 'function', exclude: ['*'] };
    expect(create({ image })).toThrow(
      'ProjectFunction Test/Fn: exactly one of entry and image must be given',
    );
    expect(create({ entry: undefined })).toThrow(
      'ProjectFunction Test/Fn: exactly one of entry and image must be given',
    );
    expect(create({ entry: undefined, image, handler: 'main' })).toThrow(
      "ProjectFunction Test/Fn: handler applies to entry only; an image's CMD names its handler",
    );
  });

  test('rejects an empty service name', () => {
    expect(create({ serviceName: ' ' })).toThrow('ProjectFunction Test/Fn: serviceName must not be empty');
  });

  test.each(['MAX_IN_FLIGHT', 'JOB_TABLE_NAME', 'POWERTOOLS_LOG_LEVEL', 'NODE_OPTIONS'])(
    'rejects %s in environment: it is managed by the construct',
    (name) => {
      expect(create({ environment: { [name]: 'x' } })).toThrow(
        `ProjectFunction Test/Fn: environment variable ${name} is managed by ProjectFunction; ` +
          'settings come from the settings prop and resource names from the use* methods',
      );
    },
  );
});
