import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { App, Stack } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { AttributeType, Table } from 'aws-cdk-lib/aws-dynamodb';
import { Bucket } from 'aws-cdk-lib/aws-s3';
import { DefinitionBody, StateMachine } from 'aws-cdk-lib/aws-stepfunctions';
import { AwsSolutionsChecks } from 'cdk-nag';
import { computeTaskEnv } from '../../config/layout';
import { loadSettings } from '../../config/settings';
import { MediaCompute } from '../../lib/constructs/media-compute';
import { grantsOn, logicalIdAt, policyStatements, SYNTH_TIMEOUT_MS, stackUnderTest } from './longhaul-app';

jest.setTimeout(SYNTH_TIMEOUT_MS);

/** The compute places of audio.publish, in a small stack of their own with a state running a step on Fargate. */

const settings = loadSettings({
  COMPUTE_MEMORY_MB: '4096',
  COMPUTE_EPHEMERAL_STORAGE_MB: '6144',
  COMPUTE_TIMEOUT_SECONDS: '600',
  COMPUTE_CONCURRENCY: '7',
  COMPUTE_FARGATE_CPU: '4096',
  COMPUTE_FARGATE_MEMORY_MB: '16384',
  COMPUTE_FARGATE_STORAGE_GIB: '80',
});

let app: App;
let stack: Stack;
let template: Template;
const ids: Record<string, string> = {};

beforeAll(() => {
  // No bundling: the compute function's bundle is not what these tests read.
  stack = stackUnderTest('Media', { env: { account: '123456789012', region: 'eu-west-1' } });
  app = stack.node.root as App;
  const jobTable = new Table(stack, 'Jobs', { partitionKey: { name: 'pk', type: AttributeType.STRING } });
  const inputBucket = new Bucket(stack, 'Inputs');
  const outputBucket = new Bucket(stack, 'Outputs');
  const compute = new MediaCompute(stack, 'Compute', { settings, jobTable, inputBucket, outputBucket });
  new StateMachine(stack, 'Workflow', {
    definitionBody: DefinitionBody.fromChainable(
      compute.fargateStep(stack, 'transcode-on-fargate', 'transcode'),
    ),
  });
  template = Template.fromStack(stack);
  ids.jobs = stack.getLogicalId(jobTable.node.defaultChild as never);
  ids.inputs = stack.getLogicalId(inputBucket.node.defaultChild as never);
  ids.outputs = stack.getLogicalId(outputBucket.node.defaultChild as never);
});

test('the compute function is sized and bounded by the settings', () => {
  template.hasResourceProperties('AWS::Lambda::Function', {
    Description: 'Longhaul audio.publish compute steps (probe, transcode, split, index) that fit Lambda',
    MemorySize: 4096,
    EphemeralStorage: { Size: 6144 },
    Timeout: 600,
    ReservedConcurrentExecutions: 7,
    Architectures: ['arm64'],
  });
});

/** The Docker image assets the synthesis staged: each one's build target and Dockerfile, from the asset manifest. */
function stagedImages(): {
  directory: string;
  dockerBuildTarget?: string;
  dockerFile?: string;
  platform?: string;
}[] {
  const manifest = JSON.parse(readFileSync(join(app.outdir, `${stack.artifactId}.assets.json`), 'utf8'));
  return Object.values(manifest.dockerImages ?? {}).map((image) => (image as { source: never }).source);
}

test('the compute function reserves no concurrency unless COMPUTE_CONCURRENCY asks it to: a new account could not deploy it', () => {
  const stack = stackUnderTest('Unreserved');
  const jobTable = new Table(stack, 'Jobs', { partitionKey: { name: 'pk', type: AttributeType.STRING } });
  new MediaCompute(stack, 'Compute', {
    settings: loadSettings({}),
    jobTable,
    inputBucket: new Bucket(stack, 'Inputs'),
    outputBucket: new Bucket(stack, 'Outputs'),
  });
  const functions = Template.fromStack(stack).findResources('AWS::Lambda::Function');
  expect(Object.values(functions).map((fn) => fn.Properties.ReservedConcurrentExecutions)).toEqual([
    undefined,
  ]);
});

test("the compute function is an arm64 container image of the Dockerfile's function target, with no runtime of its own", () => {
  const id = logicalIdAt(
    template,
    'AWS::Lambda::Function',
    'Media/Compute/ComputeFunction/Function/Resource',
  );
  const fn = template.toJSON().Resources[id];
  expect(fn.Properties).toMatchObject({ PackageType: 'Image', Architectures: ['arm64'] });
  expect(fn.Properties.Runtime).toBeUndefined();
  expect(fn.Properties.Handler).toBeUndefined();
  expect(fn.Metadata).toMatchObject({
    'aws:asset:dockerfile-path': 'lambdas/compute/Dockerfile',
    'aws:asset:docker-build-target': 'function',
  });
  // ffmpeg is the image's (FFMPEG_PATH there); the function's environment leaves it to the image.
  expect(fn.Properties.Environment.Variables.FFMPEG_PATH).toBeUndefined();
});

test('the compute function may read its job, write its timeline, read inputs and write outputs (and delete them when its job was canceled meanwhile), nothing more', () => {
  const statements = policyStatements(template, 'Media/Compute/ComputeFunction/Role/DefaultPolicy/Resource');
  // Its job read, and its timeline events written (new items only).
  expect(grantsOn(statements, ids.jobs as string).map(([action]) => action)).toEqual([
    'dynamodb:GetItem',
    'dynamodb:PutItem',
  ]);
  expect(grantsOn(statements, ids.inputs as string).map(([action]) => action)).toEqual(['s3:GetObject']);
  expect(
    grantsOn(statements, ids.outputs as string)
      .map(([action]) => action)
      .sort(),
  ).toEqual(['s3:DeleteObject', 's3:GetObject', 's3:ListBucket', 's3:PutObject']);
});

test('the Fargate task is sized by the settings, on arm64, with its image staged but not built', () => {
  const id = logicalIdAt(template, 'AWS::ECS::TaskDefinition', 'Media/Compute/TaskDefinition/Resource');
  const task = template.toJSON().Resources[id].Properties;
  expect(task).toMatchObject({
    Cpu: '4096',
    Memory: '16384',
    EphemeralStorage: { SizeInGiB: 80 },
    RequiresCompatibilities: ['FARGATE'],
    RuntimePlatform: { CpuArchitecture: 'ARM64', OperatingSystemFamily: 'LINUX' },
  });
  const container = task.ContainerDefinitions[0];
  const environment = Object.fromEntries(
    container.Environment.map(({ Name, Value }: { Name: string; Value: unknown }) => [Name, Value]),
  );
  expect(environment).toMatchObject({ TRANSCRIBE_CHUNK_SECONDS: '600', COMPUTE_FARGATE_CPU: '4096' });
});

test('synthesis stages both images of the one Dockerfile, for arm64, each context narrowed to the sources', () => {
  const images = stagedImages();
  expect(images.map((image) => image.dockerBuildTarget).sort()).toEqual(['function', 'task']);
  for (const image of images) {
    expect(image).toMatchObject({ dockerFile: 'lambdas/compute/Dockerfile', platform: 'linux/arm64' });
    // The narrowed build context: the Dockerfile and sources, no node_modules.
    expect(existsSync(join(app.outdir, image.directory, 'lambdas', 'compute', 'Dockerfile'))).toBe(true);
    expect(readdirSync(join(app.outdir, image.directory)).sort()).toEqual([
      'config',
      'lambdas',
      'package-lock.json',
      'package.json',
      'tsconfig.json',
    ]);
  }
});

test('the Dockerfile has the two targets the images name, each running its own entrypoint', () => {
  const dockerfile = readFileSync(join(__dirname, '..', '..', 'lambdas', 'compute', 'Dockerfile'), 'utf8');
  const stages = [...dockerfile.matchAll(/^FROM\s+(\S+)\s+AS\s+(\S+)$/gm)].map(([, base, name]) => [
    name,
    base,
  ]);
  expect(Object.fromEntries(stages)).toMatchObject({
    task: expect.stringContaining('node:24'),
    function: 'public.ecr.aws/lambda/nodejs:24',
  });
  const functionStage = dockerfile.slice(dockerfile.indexOf('AS function'));
  expect(functionStage).toContain('CMD ["handler.handler"]');
  expect(functionStage).toContain('FFMPEG_PATH=/opt/bin/ffmpeg');
});

test('the task role may read its job, write its timeline, read inputs and write outputs (and delete them when its job was canceled meanwhile), nothing more', () => {
  const statements = policyStatements(
    template,
    'Media/Compute/TaskDefinition/TaskRole/DefaultPolicy/Resource',
  );
  // Its job read, and its timeline events written (new items only).
  expect(grantsOn(statements, ids.jobs as string).map(([action]) => action)).toEqual([
    'dynamodb:GetItem',
    'dynamodb:PutItem',
  ]);
  expect(grantsOn(statements, ids.inputs as string).map(([action]) => action)).toEqual(['s3:GetObject']);
  expect(
    grantsOn(statements, ids.outputs as string)
      .map(([action]) => action)
      .sort(),
  ).toEqual(['s3:DeleteObject', 's3:GetObject', 's3:ListBucket', 's3:PutObject']);
  expect(statements.flatMap((s) => [s.Action].flat()).sort()).toEqual([
    'dynamodb:GetItem',
    'dynamodb:PutItem',
    's3:DeleteObject',
    's3:GetObject',
    's3:GetObject',
    's3:ListBucket',
    's3:PutObject',
  ]);
});

test('a Fargate step runs the task with ecs:runTask.sync, naming its step and job in the overrides', () => {
  const id = logicalIdAt(template, 'AWS::StepFunctions::StateMachine', 'Media/Workflow/Resource');
  // The definition is a Fn::Join of ASL text and references; its text parts, unescaped, name the parameters.
  const text = JSON.stringify(template.toJSON().Resources[id].Properties.DefinitionString).replace(
    /\\"/g,
    '"',
  );
  expect(text).toContain(':states:::ecs:runTask.sync');
  expect(text).toContain(`"Name":"${computeTaskEnv.step}","Value":"transcode"`);
  expect(text).toContain(`"Name":"${computeTaskEnv.jobId}","Value.$":"$.jobId"`);
  expect(text).toContain('"AssignPublicIp":"ENABLED"');
});

test('the task runs in public subnets without a NAT gateway, reaching S3 and DynamoDB through gateway endpoints', () => {
  template.resourceCountIs('AWS::EC2::NatGateway', 0);
  template.resourceCountIs('AWS::EC2::VPCEndpoint', 2);
  template.resourceCountIs('AWS::EC2::FlowLog', 1);
});

test('AwsSolutions reports nothing in the compute places that is not acknowledged', () => {
  const compute = stack.node.findChild('Compute');
  const report = new AwsSolutionsChecks().validateScope(compute);
  expect(
    report.violations.flatMap((violation) =>
      violation.violatingResources.map((resource) => `${violation.ruleName} at ${resource.constructPath}`),
    ),
  ).toEqual([]);
});
