import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import {
  DescribeExecutionCommand,
  type DescribeExecutionCommandOutput,
  GetExecutionHistoryCommand,
  SFNClient,
  StartExecutionCommand,
  StopExecutionCommand,
} from '@aws-sdk/client-sfn';
import { App, Stack } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { AttributeType, Table } from 'aws-cdk-lib/aws-dynamodb';
import { Bucket } from 'aws-cdk-lib/aws-s3';
import { DefinitionBody, StateMachine } from 'aws-cdk-lib/aws-stepfunctions';
import { computeContainer, computeTaskEnv } from '../../config/layout';
import { loadSettings } from '../../config/settings';
import { MediaCompute } from '../../lib/constructs/media-compute';
import { type LocalEcs, localEcsIds, startLocalEcs } from '../../local/ecs';
import { type LocalStepFunctions, startLocalStepFunctions } from '../../local/stepfunctions';
import { LocalTemplate, type TemplateJson } from '../../local/template';
import { localWorkflowDefinition } from '../../local/workflow';

/**
 * The local stack's ECS: an `ecs:runTask.sync` state on the local Step
 * Functions endpoint runs the task definition's container as a child process
 * (a fixture that reports its environment, or the compute task itself), and
 * the state ends with the stopped task's description, or States.TaskFailed.
 */

// A task is a process starting TypeScript with tsx: a second or two each, more on a busy machine.
jest.setTimeout(30_000);

const REGION = 'us-east-1';
const REPO_ROOT = join(__dirname, '..', '..');
const FIXTURE_CONTAINER = relative(REPO_ROOT, join(__dirname, 'fixtures', 'ecs', 'container.ts'));
const FAMILY = 'fixture-compute';

/** A template with what a run-task state and its container's environment refer to. */
const template = new LocalTemplate(
  {
    Resources: {
      Jobs: { Type: 'AWS::DynamoDB::Table', Properties: {} },
      ComputeRole: { Type: 'AWS::IAM::Role', Properties: {} },
      ComputeFunction: {
        Type: 'AWS::Lambda::Function',
        Properties: {
          Role: { 'Fn::GetAtt': ['ComputeRole', 'Arn'] },
          Environment: { Variables: { POWERTOOLS_SERVICE_NAME: 'compute', JOB_TABLE_NAME: { Ref: 'Jobs' } } },
        },
      },
      Cluster: { Type: 'AWS::ECS::Cluster', Properties: {} },
      TaskRole: { Type: 'AWS::IAM::Role', Properties: {} },
      TaskRolePolicy: {
        Type: 'AWS::IAM::Policy',
        Properties: {
          Roles: [{ Ref: 'TaskRole' }],
          PolicyDocument: {
            Version: '2012-10-17',
            Statement: [
              { Effect: 'Allow', Action: 'dynamodb:GetItem', Resource: { 'Fn::GetAtt': ['Jobs', 'Arn'] } },
            ],
          },
        },
      },
      WebSocketStage: { Type: 'AWS::ApiGatewayV2::Stage', Properties: { StageName: 'live' } },
      Task: {
        Type: 'AWS::ECS::TaskDefinition',
        Properties: {
          Family: FAMILY,
          TaskRoleArn: { 'Fn::GetAtt': ['TaskRole', 'Arn'] },
          Cpu: '1024',
          Memory: '2048',
          ContainerDefinitions: [
            {
              Name: computeContainer.name,
              Environment: [
                { Name: 'FIXTURE_SETTING', Value: 'from-template' },
                { Name: 'JOB_TABLE_NAME', Value: { Ref: 'Jobs' } },
              ],
            },
          ],
        },
      },
    },
  } as TemplateJson,
  'the fixture template',
);

/** What the local handlers run with; the task gets its AWS part. */
const handlerEnvironment = {
  AWS_REGION: REGION,
  AWS_ACCESS_KEY_ID: 'local',
  AWS_SECRET_ACCESS_KEY: 'local',
  // Nothing listens here: the compute task's calls fail at once.
  AWS_ENDPOINT_URL_DYNAMODB: 'http://127.0.0.1:9',
  AWS_ENDPOINT_URL_S3: 'http://127.0.0.1:9',
  AWS_LAMBDA_FUNCTION_NAME: 'longhaul-local',
  S3_FORCE_PATH_STYLE: 'true',
  POWERTOOLS_DEV: 'true',
  JOB_TABLE_NAME: 'local-jobs',
};

/** One run-task state whose overrides come from the input, caught on States.TaskFailed. */
const definition = {
  StartAt: 'Run',
  States: {
    Run: {
      Type: 'Task',
      Resource: 'arn:aws:states:::ecs:runTask.sync',
      Parameters: {
        Cluster: localEcsIds.cluster('Cluster'),
        TaskDefinition: FAMILY,
        LaunchType: 'FARGATE',
        NetworkConfiguration: {
          AwsvpcConfiguration: { AssignPublicIp: 'ENABLED', Subnets: [localEcsIds.subnet('Subnet')] },
        },
        Overrides: {
          ContainerOverrides: [
            {
              Name: computeContainer.name,
              Environment: [
                { Name: computeTaskEnv.step, 'Value.$': '$.step' },
                { Name: computeTaskEnv.jobId, 'Value.$': '$.jobId' },
                { Name: 'FIXTURE_EXIT_CODE', 'Value.$': '$.exitCode' },
                { Name: 'FIXTURE_SLEEP_MS', 'Value.$': '$.sleepMs' },
                { Name: 'FIXTURE_TABLE', 'Value.$': '$.table' },
              ],
            },
          ],
        },
      },
      ResultPath: '$.task',
      Catch: [{ ErrorEquals: ['States.TaskFailed'], ResultPath: '$.failure', Next: 'Failed' }],
      End: true,
    },
    Failed: { Type: 'Pass', End: true },
  },
};

interface Report {
  readonly pid: number;
  readonly environment: Record<string, string>;
}

async function eventually<T>(probe: () => Promise<T | undefined> | T | undefined, what: string): Promise<T> {
  const deadline = Date.now() + 15_000;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

describe('ecs:runTask.sync on the local Step Functions endpoint', () => {
  const lines: string[] = [];
  let dataDir: string;
  let fixtureEcs: LocalEcs;
  let computeEcs: LocalEcs;
  let emulator: LocalStepFunctions;
  let sfn: SFNClient;

  beforeAll(async () => {
    dataDir = mkdtempSync(join(tmpdir(), 'longhaul-ecs-'));
    const log = (line: string) => lines.push(line);
    fixtureEcs = startLocalEcs({
      template,
      handlerEnvironment: Promise.resolve(handlerEnvironment),
      log,
      containerEntries: { [computeContainer.name]: FIXTURE_CONTAINER },
    });
    computeEcs = startLocalEcs({ template, handlerEnvironment: Promise.resolve(handlerEnvironment), log });
    await Promise.all([fixtureEcs.ready, computeEcs.ready]);
    const invokeLambda = () => Promise.reject(new Error('no function runs here'));
    emulator = await startLocalStepFunctions({
      dataDir,
      stateMachines: [
        { name: 'fixture-task', definition, invokeLambda, runTask: fixtureEcs.runTask },
        { name: 'compute-task', definition, invokeLambda, runTask: computeEcs.runTask },
      ],
    });
    sfn = new SFNClient({
      region: REGION,
      endpoint: emulator.endpoint,
      credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
    });
  });

  afterAll(async () => {
    sfn?.destroy();
    await emulator?.close();
    await Promise.all([fixtureEcs?.close(), computeEcs?.close()]);
    rmSync(dataDir, { recursive: true, force: true });
  });

  const run = async (
    machine: string,
    input: { step?: string; jobId: string; exitCode?: string; sleepMs?: string; table?: string },
  ): Promise<string> => {
    const started = await sfn.send(
      new StartExecutionCommand({
        stateMachineArn: emulator.stateMachineArn(machine),
        name: input.jobId,
        input: JSON.stringify({ step: 'transcode', exitCode: '0', sleepMs: '0', table: '', ...input }),
      }),
    );
    return started.executionArn as string;
  };
  const closed = (executionArn: string): Promise<DescribeExecutionCommandOutput> =>
    eventually(async () => {
      const execution = await sfn.send(new DescribeExecutionCommand({ executionArn }));
      return execution.status === 'RUNNING' ? undefined : execution;
    }, `${executionArn} to close`);
  const reportOf = (jobId: string): Promise<Report> =>
    eventually(() => {
      const line = lines.find(
        (l) => l.includes('FIXTURE ') && l.includes(`"${computeTaskEnv.jobId}":"${jobId}"`),
      );
      return line ? (JSON.parse(line.slice(line.indexOf('FIXTURE ') + 8)) as Report) : undefined;
    }, `the container of ${jobId} to report`);

  test('a container that exits 0 ends the state with the stopped task, as ECS describes it', async () => {
    const execution = await closed(await run('fixture-task', { jobId: 'job-exit-0' }));
    expect(execution.status).toBe('SUCCEEDED');
    const output = JSON.parse(execution.output as string);
    expect(output.failure).toBeUndefined();
    expect(output.task).toMatchObject({
      LastStatus: 'STOPPED',
      DesiredStatus: 'STOPPED',
      StopCode: 'EssentialContainerExited',
      LaunchType: 'FARGATE',
      ClusterArn: localEcsIds.cluster('Cluster'),
      TaskDefinitionArn: localEcsIds.taskDefinition(FAMILY),
      Cpu: '1024',
      Memory: '2048',
      Containers: [{ Name: computeContainer.name, ExitCode: 0, LastStatus: 'STOPPED' }],
    });
    expect(output.task.TaskArn).toMatch(/^arn:aws:ecs:us-east-1:000000000000:task\/Cluster\/[0-9a-f]{32}$/);
    expect(output.task.Containers[0].TaskArn).toBe(output.task.TaskArn);

    const history = await sfn.send(new GetExecutionHistoryCommand({ executionArn: execution.executionArn }));
    const taskEvents = new Set([
      'TaskScheduled',
      'TaskStarted',
      'TaskSubmitted',
      'TaskSucceeded',
      'TaskFailed',
    ]);
    const task = (history.events ?? []).filter((event) => taskEvents.has(event.type as string));
    expect(task.map((event) => event.type)).toEqual(['TaskScheduled', 'TaskStarted', 'TaskSucceeded']);
    expect(task[0]?.taskScheduledEventDetails).toMatchObject({
      resourceType: 'ecs',
      resource: 'runTask.sync',
    });
  });

  test('a container that exits with anything else fails the state with States.TaskFailed, which Catch catches', async () => {
    const execution = await closed(await run('fixture-task', { jobId: 'job-exit-3', exitCode: '3' }));
    expect(execution.status).toBe('SUCCEEDED');
    const output = JSON.parse(execution.output as string);
    expect(output.task).toBeUndefined();
    expect(output.failure.Error).toBe('States.TaskFailed');
    expect(JSON.parse(output.failure.Cause)).toMatchObject({
      LastStatus: 'STOPPED',
      StopCode: 'EssentialContainerExited',
      Containers: [{ Name: computeContainer.name, ExitCode: 3, LastStatus: 'STOPPED' }],
    });
  });

  test("the container runs with the template's environment resolved locally, the state's overrides and the local endpoints", async () => {
    await closed(await run('fixture-task', { jobId: 'job-environment', step: 'split' }));
    const { environment } = await reportOf('job-environment');
    expect(environment).toMatchObject({
      FIXTURE_SETTING: 'from-template',
      JOB_TABLE_NAME: 'local-jobs',
      [computeTaskEnv.step]: 'split',
      [computeTaskEnv.jobId]: 'job-environment',
      AWS_REGION: REGION,
      AWS_ENDPOINT_URL_DYNAMODB: handlerEnvironment.AWS_ENDPOINT_URL_DYNAMODB,
      AWS_ACCESS_KEY_ID: 'local',
      S3_FORCE_PATH_STYLE: 'true',
    });
    // Neither Lambda's nor the image's: the task is no function, and ffmpeg is the npm packages' build here.
    expect(environment.AWS_LAMBDA_FUNCTION_NAME).toBeUndefined();
    expect(environment.POWERTOOLS_DEV).toBeUndefined();
    expect(environment.FFMPEG_PATH).toBeUndefined();
  });

  test("the task's AWS calls are allowed only what its task role's policies in the template allow", async () => {
    const callOf = (jobId: string) =>
      eventually(() => {
        const line = lines.find((l) => l.includes('FIXTURE_CALL ') && l.includes(`"jobId":"${jobId}"`));
        return line
          ? (JSON.parse(line.slice(line.indexOf('FIXTURE_CALL ') + 13)) as { outcome: string })
          : undefined;
      }, `the call of ${jobId}`);
    await Promise.all([
      closed(await run('fixture-task', { jobId: 'job-own-table', table: 'local-jobs' })),
      closed(await run('fixture-task', { jobId: 'job-other-table', table: 'someone-elses-table' })),
    ]);
    // Allowed, so it is sent, and nothing listens at the endpoint.
    expect((await callOf('job-own-table')).outcome).not.toBe('AccessDeniedException');
    expect((await callOf('job-other-table')).outcome).toBe('AccessDeniedException');
    expect(
      lines.some((line) =>
        line.includes(
          'denied dynamodb:GetItem on arn:aws:dynamodb:us-east-1:000000000000:table/someone-elses-table',
        ),
      ),
    ).toBe(true);
    // The task never sees the policies it is held to.
    expect((await reportOf('job-own-table')).environment.LONGHAUL_LOCAL_TASK_IAM).toBeUndefined();
  });

  test('stopping the execution stops its task', async () => {
    const executionArn = await run('fixture-task', { jobId: 'job-stopped', sleepMs: '60000' });
    const { pid } = await reportOf('job-stopped');
    await sfn.send(new StopExecutionCommand({ executionArn }));
    expect((await closed(executionArn)).status).toBe('ABORTED');
    await eventually(() => {
      try {
        process.kill(pid, 0);
        return undefined;
      } catch {
        return true;
      }
    }, `process ${pid} to exit`);
  });

  test('the compute task itself runs from its source: a step it does not know exits 2 and fails the state', async () => {
    const execution = await closed(
      await run('compute-task', { jobId: 'job-unknown-step', step: 'nonsense' }),
    );
    const output = JSON.parse(execution.output as string);
    expect(output.failure.Error).toBe('States.TaskFailed');
    expect(JSON.parse(output.failure.Cause).Containers).toEqual([
      expect.objectContaining({ Name: computeContainer.name, ExitCode: 2 }),
    ]);
    expect(lines.some((line) => line.includes(`${computeTaskEnv.step} must be one of`))).toBe(true);
  });

  test('a task definition the template does not have fails the state as ECS refuses it', async () => {
    const { Catch: _catch, ...run } = definition.States.Run;
    const other = {
      StartAt: 'Run',
      States: { Run: { ...run, Parameters: { ...run.Parameters, TaskDefinition: 'no-such-family' } } },
    };
    const ecs = startLocalEcs({
      template,
      handlerEnvironment: Promise.resolve(handlerEnvironment),
      log: () => {},
    });
    const refusedDir = mkdtempSync(join(tmpdir(), 'longhaul-ecs-refused-'));
    const local = await startLocalStepFunctions({
      dataDir: refusedDir,
      stateMachines: [
        { name: 'refused', definition: other, invokeLambda: async () => null, runTask: ecs.runTask },
      ],
    });
    const client = new SFNClient({
      region: REGION,
      endpoint: local.endpoint,
      credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
    });
    try {
      const { executionArn } = await client.send(
        new StartExecutionCommand({
          stateMachineArn: local.stateMachineArn('refused'),
          input: JSON.stringify({
            step: 'probe',
            jobId: 'job-refused',
            exitCode: '0',
            sleepMs: '0',
            table: '',
          }),
        }),
      );
      const execution = await eventually(async () => {
        const described = await client.send(new DescribeExecutionCommand({ executionArn }));
        return described.status === 'RUNNING' ? undefined : described;
      }, 'the refused execution to close');
      expect(execution).toMatchObject({
        status: 'FAILED',
        error: 'ECS.ClientException',
        cause: "Unable to find task definition 'no-such-family'.",
      });
    } finally {
      client.destroy();
      await local.close();
      rmSync(refusedDir, { recursive: true, force: true });
    }
  });
});

describe("the local workflow's definition", () => {
  test('resolves every reference a Fargate step makes: its cluster, task definition, subnets and security group', () => {
    const app = new App({ context: { 'aws:cdk:bundling-stacks': [] } });
    const stack = new Stack(app, 'Media');
    const jobTable = new Table(stack, 'Jobs', { partitionKey: { name: 'pk', type: AttributeType.STRING } });
    const compute = new MediaCompute(stack, 'Compute', {
      settings: loadSettings({}),
      jobTable,
      inputBucket: new Bucket(stack, 'Inputs'),
      outputBucket: new Bucket(stack, 'Outputs'),
    });
    new StateMachine(stack, 'Workflow', {
      definitionBody: DefinitionBody.fromChainable(
        compute.fargateStep(stack, 'transcode-on-fargate', 'transcode'),
      ),
    });
    const synthesized = new LocalTemplate(
      Template.fromStack(stack).toJSON() as TemplateJson,
      'the Media stack',
    );
    const resources = synthesized.json.Resources;
    const idOf = (type: string) => Object.keys(resources).filter((id) => resources[id]?.Type === type);

    const resolved = localWorkflowDefinition(synthesized) as {
      States: Record<string, { Resource: string; Parameters: Record<string, any> }>;
    };
    const state = resolved.States['transcode-on-fargate'];
    expect(state?.Resource).toBe('arn:aws:states:::ecs:runTask.sync');
    const [cluster] = idOf('AWS::ECS::Cluster');
    const [taskDefinition] = idOf('AWS::ECS::TaskDefinition');
    const family = resources[taskDefinition as string]?.Properties?.Family as string;
    expect(state?.Parameters.Cluster).toBe(localEcsIds.cluster(cluster as string));
    expect([localEcsIds.taskDefinition(family), family]).toContain(state?.Parameters.TaskDefinition);
    const network = state?.Parameters.NetworkConfiguration.AwsvpcConfiguration;
    expect(network.Subnets.sort()).toEqual(
      idOf('AWS::EC2::Subnet')
        .map((id) => localEcsIds.subnet(id))
        .sort(),
    );
    expect(network.SecurityGroups).toEqual(
      idOf('AWS::EC2::SecurityGroup').map((id) => localEcsIds.securityGroup(id)),
    );
    // And the local ECS runs what it names: the cluster and the task definition are found.
    expect(JSON.stringify(resolved)).not.toContain('Fn::');
  });

  test('refuses a reference it has no local value for, naming it', () => {
    const broken = new LocalTemplate(
      {
        Resources: {
          Machine: {
            Type: 'AWS::StepFunctions::StateMachine',
            Properties: {
              DefinitionString: {
                'Fn::Join': [
                  '',
                  [
                    '{"StartAt":"A","States":{"A":{"Type":"Pass","Result":"',
                    { Ref: 'Vpc' },
                    '","End":true}}}',
                  ],
                ],
              },
            },
          },
          Vpc: { Type: 'AWS::EC2::VPC', Properties: {} },
        },
      } as TemplateJson,
      'the broken template',
    );
    expect(() => localWorkflowDefinition(broken)).toThrow(
      'The workflow definition refers to {"Ref":"Vpc"}, which has no value outside the deployed stack',
    );
  });
});
