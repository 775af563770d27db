import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { Template } from 'aws-cdk-lib/assertions';
import { Secret } from 'aws-cdk-lib/aws-secretsmanager';
import { Queue } from 'aws-cdk-lib/aws-sqs';
import { PUBLISH_TIMEOUT_MS } from '../../config/job-types/audio-publish';
import { PROVIDER_NAMES } from '../../config/providers';
import { defaultSettings, loadSettings, queueVisibilityTimeoutSeconds } from '../../config/settings';
import { WORKFLOW_ERROR_NAMES } from '../../config/workflow-errors';
import { stepEvent } from '../../lambdas/domain/step-event';
import { Alarms } from '../../lib/constructs/alarms';
import { JobDispatcher } from '../../lib/constructs/job-dispatcher';
import { JobWorkflow } from '../../lib/constructs/job-workflow';
import { MediaCompute } from '../../lib/constructs/media-compute';
import { WorkflowSteps } from '../../lib/constructs/workflow-steps';
import { REPO_ROOT } from '../../lib/handlers';
import { resolveIntrinsics, synthesizeWorkflowDefinition } from '../../lib/workflow-definition';
import {
  logicalIdAt,
  longhaulTemplate,
  policyStatements,
  SYNTH_TIMEOUT_MS,
  stackUnderTest,
  standIns,
  statementsFor,
} from './longhaul-app';

jest.setTimeout(SYNTH_TIMEOUT_MS);

const STEPS_ARN = 'arn:aws:lambda:us-east-1:000000000000:function:longhaul-workflow';
const COMPUTE_ARN = 'arn:aws:lambda:us-east-1:000000000000:function:longhaul-compute';
const PROVIDER_EVENTS_URL = 'https://provider-events.example.com/';
const STEPS_PATH = 'Test/WorkflowSteps/StepsFunction';
const DISPATCH_PATH = 'Test/Dispatcher/DispatchFunction';
const COMPUTE_PATH = 'Test/Compute/ComputeFunction';

type Json = Record<string, any>;

let template: Template;
let resources: Json;
let stateMachineId: string;
let stepsFunctionId: string;
/** The stand-ins the constructs are given. */
let given: ReturnType<typeof standIns>;
/** Their logical ids, the hand-off queue's and the webhook secret's among them. */
let ids: typeof given.ids & { readonly handOffQueue: string; readonly webhookSecret: string };
/** The deployed DefinitionString, resolved as the local stack would see it, with the steps function at STEPS_ARN. */
let definition: Json;
let states: Json;

/**
 * The workflow with its steps function, its compute places and the dispatcher that starts it, in a
 * stack of their own, given a stand-in table, queues, buckets and secrets.
 */
function buildWorkflow(): Template {
  const stack = stackUnderTest();
  const settings = defaultSettings;
  const alarms = new Alarms(stack, 'Alarms');
  const common = standIns(stack);
  const { jobTable, jobQueues, inputBucket, outputBucket } = common;
  const handOffQueue = new Queue(stack, 'HandOffQueue');
  const webhookSecret = new Secret(stack, 'WebhookSecret');
  const steps = new WorkflowSteps(stack, 'WorkflowSteps', {
    settings,
    jobTable,
    handOffQueue,
    jobQueues,
    inputBucket,
    outputBucket,
    providerSecrets: common.providerSecrets,
    webhookSecret,
    providerEventsUrl: PROVIDER_EVENTS_URL,
  });
  const compute = new MediaCompute(stack, 'Compute', { settings, jobTable, inputBucket, outputBucket });
  const workflow = new JobWorkflow(stack, 'Workflow', {
    settings,
    stepsFunction: steps.stepsFunction.lambdaFunction,
    alarms,
    compute: {
      computeFunction: compute.computeFunction.lambdaFunction,
      fargateStep: (scope, stateName, step) => compute.fargateStep(scope, stateName, step),
    },
  });
  new JobDispatcher(stack, 'Dispatcher', {
    settings,
    jobTable,
    jobQueues,
    handOffQueue,
    stateMachine: workflow.stateMachine,
  });
  given = common;
  ids = { ...common.ids, handOffQueue: common.idOf(handOffQueue), webhookSecret: common.idOf(webhookSecret) };
  return Template.fromStack(stack);
}

beforeAll(() => {
  template = buildWorkflow();
  resources = template.toJSON().Resources;
  stateMachineId = logicalIdAt(
    template,
    'AWS::StepFunctions::StateMachine',
    'Test/Workflow/StateMachine/Resource',
  );
  stepsFunctionId = logicalIdAt(template, 'AWS::Lambda::Function', `${STEPS_PATH}/Function/Resource`);
  const stepsArn = JSON.stringify({ 'Fn::GetAtt': [stepsFunctionId, 'Arn'] });
  const computeArn = JSON.stringify({
    'Fn::GetAtt': [
      logicalIdAt(template, 'AWS::Lambda::Function', `${COMPUTE_PATH}/Function/Resource`),
      'Arn',
    ],
  });
  // The Fargate states' cluster, subnets and security groups stand as `<logical id>`.
  const resolved = resolveIntrinsics(resources[stateMachineId].Properties.DefinitionString, (node) => {
    const text = JSON.stringify(node);
    if (text === stepsArn) return STEPS_ARN;
    if (text === computeArn) return COMPUTE_ARN;
    const named =
      (node as { 'Fn::GetAtt'?: [string]; Ref?: string })['Fn::GetAtt']?.[0] ??
      (node as { Ref?: string }).Ref;
    return named && named in resources ? `<${named}>` : undefined;
  });
  definition = JSON.parse(resolved as string);
  states = definition.States;
});

describe('state machine', () => {
  test('is Standard, traced, and logs errors without execution data to its own retained log group', () => {
    const logGroup = logicalIdAt(template, 'AWS::Logs::LogGroup', 'Test/Workflow/LogGroup/Resource');
    const machine = resources[stateMachineId];
    expect(machine.Properties.StateMachineType).toBe('STANDARD');
    expect(machine.Properties.TracingConfiguration).toEqual({ Enabled: true });
    expect(machine.Properties.LoggingConfiguration).toEqual({
      Destinations: [{ CloudWatchLogsLogGroup: { LogGroupArn: { 'Fn::GetAtt': [logGroup, 'Arn'] } } }],
      IncludeExecutionData: false,
      Level: 'ERROR',
    });
    expect(resources[logGroup].Properties.RetentionInDays).toBe(defaultSettings.logRetentionDays);
    expect(resources[logGroup].DeletionPolicy).toBe('Retain');
  });

  test('logs under /aws/vendedlogs/states/, in a log group named after the workflow and this stack instance', () => {
    const logGroup = logicalIdAt(template, 'AWS::Logs::LogGroup', 'Test/Workflow/LogGroup/Resource');
    const [delimiter, parts] = resources[logGroup].Properties.LogGroupName['Fn::Join'];
    expect(delimiter).toBe('');
    expect(parts).toEqual([
      expect.stringMatching(/^\/aws\/vendedlogs\/states\/TestWorkflow[A-Za-z0-9]+-$/),
      { 'Fn::Select': [2, { 'Fn::Split': ['/', { Ref: 'AWS::StackId' }] }] },
    ]);
  });

  test('its role may invoke the steps and compute functions, run the one compute task, and nothing else by name', () => {
    const statements = policyStatements(template, 'Test/Workflow/StateMachine/Role/DefaultPolicy/Resource');
    const arnOf = (id: string) => ({ 'Fn::GetAtt': [id, 'Arn'] });
    const stepsArn = arnOf(stepsFunctionId);
    const computeArn = arnOf(
      logicalIdAt(template, 'AWS::Lambda::Function', `${COMPUTE_PATH}/Function/Resource`),
    );
    expect(statementsFor(statements, 'lambda')).toEqual([
      {
        Effect: 'Allow',
        Action: 'lambda:InvokeFunction',
        Resource: [
          computeArn,
          stepsArn,
          { 'Fn::Join': ['', [computeArn, ':*']] },
          { 'Fn::Join': ['', [stepsArn, ':*']] },
        ],
      },
    ]);
    const taskDefinition = logicalIdAt(
      template,
      'AWS::ECS::TaskDefinition',
      'Test/Compute/TaskDefinition/Resource',
    );
    expect(statements).toContainEqual({
      Effect: 'Allow',
      Action: 'ecs:RunTask',
      Resource: { Ref: taskDefinition },
    });
    const passed = statements.find((statement) => statement.Action === 'iam:PassRole');
    expect(passed?.Resource).toEqual([
      arnOf(logicalIdAt(template, 'AWS::IAM::Role', 'Test/Compute/TaskDefinition/ExecutionRole/Resource')),
      arnOf(logicalIdAt(template, 'AWS::IAM::Role', 'Test/Compute/TaskDefinition/TaskRole/Resource')),
    ]);
    // What is left on "*" is log delivery, X-Ray, and watching or stopping the task a state started.
    for (const statement of statements.filter((s) => s.Resource === '*')) {
      for (const action of [statement.Action].flat())
        expect(action).toMatch(/^(logs:|xray:|ecs:DescribeTasks$|ecs:StopTask$)/);
    }
  });
});

/** The states whose unexpected errors take the failure path, in the order the resume route lists them. */
const RESUMABLE = [
  'prepare',
  'submit',
  'await',
  'finalize',
  'probe',
  'media',
  'index',
  'plan-embedding',
  'embed-passages',
  'store-vectors',
];

describe('definition', () => {
  const LAMBDA_SERVICE_ERRORS = {
    ErrorEquals: [
      'Lambda.ClientExecutionTimeoutException',
      'Lambda.ServiceException',
      'Lambda.AWSLambdaException',
      'Lambda.SdkClientException',
    ],
    IntervalSeconds: 2,
    MaxAttempts: 6,
    BackoffRate: 2,
  };
  const THROTTLED = {
    ErrorEquals: ['Lambda.TooManyRequestsException'],
    IntervalSeconds: 1,
    MaxAttempts: 8,
    BackoffRate: 2,
    MaxDelaySeconds: 30,
    JitterStrategy: 'FULL',
  };
  const BOOKKEEPING = { ErrorEquals: ['States.ALL'], IntervalSeconds: 1, MaxAttempts: 3, BackoffRate: 2 };
  const RELEASE = {
    ErrorEquals: ['States.ALL'],
    IntervalSeconds: 1,
    MaxAttempts: 5,
    BackoffRate: 2,
    JitterStrategy: 'FULL',
  };
  /** A release that keeps failing leaves the slot to the reconciler, which frees a finished job's: the job goes on. */
  const releaseLeftTo = (next: string) => [{ ErrorEquals: ['States.ALL'], Next: next, ResultPath: null }];
  const WEBHOOK = {
    ErrorEquals: ['WebhookDeliveryFailed'],
    IntervalSeconds: 5,
    MaxAttempts: 5,
    BackoffRate: 2,
    MaxDelaySeconds: 120,
    JitterStrategy: 'FULL',
  };
  /** A notify step's: its webhook's, then quick ones for its event and follow-ups, none for a settled job. */
  const NOTIFY = [WEBHOOK, { ErrorEquals: ['JobSettled'], MaxAttempts: 0 }, BOOKKEEPING];
  const caught = (errors: string[], next: string) => ({
    ErrorEquals: errors,
    ResultPath: '$.error',
    Next: next,
  });

  /** state name → step, next state, own retriers (after the Lambda service one), catchers. */
  const tasks: [string, string, string, Json[], Json[] | undefined][] = [
    [
      'prepare',
      'prepare',
      'route',
      [
        {
          ErrorEquals: ['AssetUnavailable'],
          IntervalSeconds: 2,
          MaxAttempts: 3,
          BackoffRate: 2,
          JitterStrategy: 'FULL',
        },
      ],
      [caught(['JobSettled'], 'settle'), caught(['States.ALL'], 'failed-at-prepare')],
    ],
    [
      'submit',
      'submit',
      'await',
      [
        {
          ErrorEquals: ['ProviderAmbiguous'],
          IntervalSeconds: 2,
          MaxAttempts: 3,
          BackoffRate: 2,
          JitterStrategy: 'FULL',
        },
      ],
      [
        caught(['NeedsReview', 'ProviderAmbiguous'], 'review'),
        caught(['JobSettled'], 'settle'),
        caught(['ProviderPaused'], 'back-in-line'),
        caught(['States.ALL'], 'failed-at-submit'),
      ],
    ],
    [
      'await',
      'await',
      'release',
      [],
      [
        caught(['States.Timeout', 'States.HeartbeatTimeout'], 'review'),
        caught(['JobSettled', 'JobCanceled'], 'settle'),
        caught(['States.ALL'], 'failed-at-await'),
      ],
    ],
    ['release', 'release', 'finalize', [RELEASE], releaseLeftTo('finalize')],
    [
      'finalize',
      'finalize',
      'notify',
      [
        {
          ErrorEquals: ['ProviderUnavailable'],
          IntervalSeconds: 2,
          MaxAttempts: 4,
          BackoffRate: 2,
          JitterStrategy: 'FULL',
        },
        // A provider that is down is waited for at its pauses' pace (5 s doubling to 300 s) over the job's
        // timeout (600 s), counted twice for full jitter: 5+10+20+40+80+160+300+300+300 s reach 1,200 s.
        {
          ErrorEquals: ['WaitingForProvider'],
          IntervalSeconds: 5,
          MaxAttempts: 9,
          BackoffRate: 2,
          MaxDelaySeconds: 300,
          JitterStrategy: 'FULL',
        },
      ],
      [caught(['JobSettled'], 'finalize-settled'), caught(['States.ALL'], 'failed-at-finalize')],
    ],
    ['notify', 'notify', 'succeeded', NOTIFY, [caught(['States.ALL'], 'succeeded')]],
    // A failure meeting a publish being canceled goes on as finalize's JobSettled does.
    [
      'on-failure',
      'fail',
      'notify-failure',
      [{ ErrorEquals: ['JobSettled'], MaxAttempts: 0 }, BOOKKEEPING],
      [caught(['JobSettled'], 'finalize-settled')],
    ],
    [
      'notify-failure',
      'notify',
      'release-after-failure',
      [BOOKKEEPING],
      [caught(['States.ALL'], 'release-after-failure')],
    ],
    ['release-after-failure', 'release', 'failed', [RELEASE], releaseLeftTo('failed')],
    // A resumed job waiting for its slot parks again at once; the grant of its slot redrives the execution.
    ['failed', 'park', 'resume-at', [], undefined],
    ['review', 'review', 'needs-review', [BOOKKEEPING], undefined],
    ['settle', 'settle', 'notify-settled', [BOOKKEEPING], undefined],
    ['notify-settled', 'notify', 'settled', NOTIFY, [caught(['States.ALL'], 'settled')]],
  ];

  test('starts at prepare and has exactly the contract’s states', () => {
    expect(definition.StartAt).toBe('prepare');
    expect(Object.keys(states).sort()).toEqual(
      [
        ...tasks.map(([name]) => name),
        ...PUBLISH_STATES,
        ...['prepare', 'submit', 'await', 'finalize'].map((name) => `failed-at-${name}`),
        'resume-at',
        'succeeded',
        'settled',
        'back-in-line',
        'not-resumable',
        'needs-review',
      ].sort(),
    );
  });

  test('ends in Succeed for succeeded and settled jobs, at the park task for failed ones, and in named Fail states otherwise', () => {
    expect(states.succeeded).toEqual({ Type: 'Succeed' });
    expect(states.settled).toEqual(expect.objectContaining({ Type: 'Succeed' }));
    // A job whose provider throttled or was down waits in its line for a new run: this one ended well.
    expect(states['back-in-line']).toEqual(expect.objectContaining({ Type: 'Succeed' }));
    // A Task, so that the execution fails there and a redrive runs it again.
    expect(states.failed).toEqual(expect.objectContaining({ Type: 'Task', Next: 'resume-at' }));
    expect(states['not-resumable']).toEqual(expect.objectContaining({ Type: 'Fail', Error: 'JobFailed' }));
    expect(states['needs-review']).toEqual(expect.objectContaining({ Type: 'Fail', Error: 'NeedsReview' }));
  });

  test.each(RESUMABLE)(
    "%s's unexpected errors go to the failure path through a Pass state that names it, keeping its input",
    (name) => {
      const catchAll = states[name].Catch.find((c: Json) => c.ErrorEquals.includes('States.ALL'));
      expect(catchAll).toEqual({
        ErrorEquals: ['States.ALL'],
        ResultPath: '$.error',
        Next: `failed-at-${name}`,
      });
      expect(states[`failed-at-${name}`]).toEqual({
        Type: 'Pass',
        Result: name,
        ResultPath: '$.failedAt',
        Next: 'on-failure',
      });
    },
  );

  test('nothing on the failure path replaces the failed state’s input: every Task there discards its answer', () => {
    for (const name of ['on-failure', 'notify-failure', 'release-after-failure', 'failed']) {
      expect(states[name].ResultPath).toBeNull();
      expect(states[name].OutputPath).toBeUndefined();
    }
    // Only notify-failure catches, into $.error, beside the failed state's input.
    expect(states['notify-failure'].Catch).toEqual([caught(['States.ALL'], 'release-after-failure')]);
  });

  test('a resumed job goes back to the state that failed; a publish that failed at finalize to store-vectors', () => {
    expect(states['resume-at']).toEqual({
      Type: 'Choice',
      Comment: expect.any(String),
      Choices: RESUMABLE.map((name) => ({
        Variable: '$.failedAt',
        StringEquals: name,
        Next: name === 'finalize' ? 'resume-finalize' : name,
      })),
      Default: 'not-resumable',
    });
    expect(states['resume-finalize']).toEqual({
      Type: 'Choice',
      Choices: [{ Variable: '$.prepared.flow', StringEquals: 'publish', Next: 'store-vectors' }],
      Default: 'finalize',
    });
  });

  test('a publish canceled by the time it finalizes waits for its children in await-children; any other job settles', () => {
    expect(states['finalize-settled']).toEqual({
      Type: 'Choice',
      Comment: expect.any(String),
      Choices: [{ Variable: '$.prepared.flow', StringEquals: 'publish', Next: 'await-children' }],
      Default: 'settle',
    });
  });

  test('the success path has no state of the failure path between its steps', () => {
    const path: string[] = [];
    for (let name = 'submit'; name !== 'succeeded'; name = states[name].Next) path.push(name);
    expect(path).toEqual(['submit', 'await', 'release', 'finalize', 'notify']);
  });

  test.each(tasks)(
    '%s invokes the steps function with step %s, discards the result and goes to %s',
    (name, step, next) => {
      const state = states[name];
      const withError = step === 'fail' || step === 'review';
      expect(state).toEqual(
        expect.objectContaining({
          Type: 'Task',
          Resource:
            step === 'await'
              ? 'arn:aws:states:::lambda:invoke.waitForTaskToken'
              : 'arn:aws:states:::lambda:invoke',
          // prepare keeps the job's flow for the route; every other step's answer is dropped.
          ResultPath: name === 'prepare' ? '$.prepared' : null,
          Next: next,
        }),
      );
      expect(state.Parameters).toEqual({
        FunctionName: STEPS_ARN,
        Payload: {
          step,
          'jobId.$': '$.jobId',
          'retryCount.$': '$$.State.RetryCount',
          'executionName.$': '$$.Execution.Name',
          ...(step === 'await' ? { 'taskToken.$': '$$.Task.Token' } : {}),
          ...(withError ? { 'error.$': '$.error' } : {}),
          ...(step === 'park' ? { 'failedAt.$': '$.failedAt' } : {}),
          // The steps that may free a slot start the next job on their own state machine.
          ...(['release', 'settle', 'review'].includes(step)
            ? { 'stateMachineArn.$': '$$.StateMachine.Id' }
            : {}),
        },
      });
      // The payload is the handler's whole input; Step Functions' envelope stays out of it.
      expect(state.InputPath).toBeUndefined();
      expect(state.OutputPath).toBeUndefined();
    },
  );

  test.each(tasks)(
    '%s retries Lambda service errors and throttling, then as its step needs',
    (name, _step, _next, retries) => {
      expect(states[name].Retry).toEqual([LAMBDA_SERVICE_ERRORS, THROTTLED, ...retries]);
    },
  );

  test('every Task retries a throttled invocation with jittered backoff before any other retrier can take it', () => {
    const taskStates = Object.entries(states).filter(
      ([, state]) => state.Type === 'Task' && state.Parameters?.FunctionName !== COMPUTE_ARN,
    );
    expect(taskStates.length).toBeGreaterThan(0);
    for (const [name, state] of taskStates) {
      const retriers: Json[] = state.Retry ?? [];
      const first = retriers.findIndex((retrier) =>
        retrier.ErrorEquals.some((error: string) =>
          ['Lambda.TooManyRequestsException', 'States.ALL', 'States.TaskFailed'].includes(error),
        ),
      );
      expect({ name, retrier: retriers[first] }).toEqual({ name, retrier: THROTTLED });
    }
  });

  test('every Retry and Catch, in every branch and iterator, names only errors of config/workflow-errors.ts', () => {
    const named: { readonly state: string; readonly error: string }[] = [];
    const collect = (statesOf: Json, path: string): void => {
      for (const [name, state] of Object.entries(statesOf)) {
        const at = path ? `${path}/${name}` : name;
        for (const clause of [...(state.Retry ?? []), ...(state.Catch ?? [])] as Json[]) {
          for (const error of clause.ErrorEquals as string[]) named.push({ state: at, error });
        }
        for (const branch of state.Branches ?? []) collect(branch.States, at);
        const inner = state.ItemProcessor ?? state.Iterator;
        if (inner) collect(inner.States, at);
      }
    };
    collect(states, '');
    // Nested states (a Map's chunk jobs, the publish branches) are read too.
    expect(named.some(({ state }) => state.includes('/'))).toBe(true);
    expect(named.filter(({ error }) => !WORKFLOW_ERROR_NAMES.has(error))).toEqual([]);
  });

  test.each(tasks)('%s catches into $.error as specified', (name, _step, _next, _retries, catches) => {
    expect(states[name].Catch).toEqual(catches);
  });

  test('await waits for the task token up to the job timeout, with a shorter heartbeat', () => {
    expect(states.await.TimeoutSeconds).toBe(defaultSettings.jobTimeoutMs / 1000);
    expect(states.await.HeartbeatSeconds).toBe(defaultSettings.awaitHeartbeatSeconds);
    expect(states.await.HeartbeatSeconds).toBeLessThan(states.await.TimeoutSeconds);
  });

  test('no other task at the top level has a state timeout: the functions’ own timeouts bound each invocation', () => {
    const timed = Object.entries(states)
      .filter(([, state]) => state.TimeoutSeconds !== undefined || state.HeartbeatSeconds !== undefined)
      .map(([name]) => name);
    // await-children waits for a canceled publish's children, bounded by the publish's own timeout.
    expect(timed).toEqual(['await', 'await-children']);
  });
});

/** The states of audio.publish's branch at the top level of the definition (the rest are nested in `media`). */
const PUBLISH_STATES = [
  'route',
  'probe',
  'media',
  'index',
  'plan-embedding',
  'embed-passages',
  'store-vectors',
  'await-children',
  'resume-finalize',
  'finalize-settled',
  ...['probe', 'media', 'index', 'plan-embedding', 'embed-passages', 'store-vectors'].map(
    (name) => `failed-at-${name}`,
  ),
];

describe('the publish branch', () => {
  /** Every state of the definition, nested ones (Parallel branches, Map processors) included. */
  const everyState = (from: Json): Record<string, Json> =>
    Object.fromEntries(
      Object.entries(from).flatMap(([name, state]) => [
        [name, state],
        ...(state.Branches ?? []).flatMap((branch: Json) => Object.entries(everyState(branch.States))),
        ...(state.ItemProcessor ? Object.entries(everyState(state.ItemProcessor.States)) : []),
      ]),
    );
  let all: Record<string, Json>;
  beforeAll(() => {
    all = everyState(states);
  });

  test('prepare routes on the flow it answers: audio.publish to probe, every other type to submit', () => {
    expect(states.prepare.ResultSelector).toEqual({ 'flow.$': '$.Payload.flow' });
    expect(states.route).toEqual({
      Type: 'Choice',
      Comment: expect.any(String),
      Choices: [{ Variable: '$.prepared.flow', StringEquals: 'publish', Next: 'probe' }],
      Default: 'submit',
    });
  });

  test('runs probe, then transcode beside the chunks, then index, then the embedding steps', () => {
    expect(states.probe).toMatchObject({
      Resource: 'arn:aws:states:::lambda:invoke',
      Parameters: { FunctionName: COMPUTE_ARN, Payload: { step: 'probe', 'jobId.$': '$.jobId' } },
      ResultPath: '$.probe',
      Next: 'media',
    });
    // A media version supersedes the one in progress in its chunks' transcribe, which costs no state of its own.
    expect(Object.values(states).map((state) => state.Parameters?.Payload?.step)).not.toContain('supersede');
    expect(states.media.Type).toBe('Parallel');
    expect(states.media.Next).toBe('index');
    expect(states.media.Catch).toEqual([
      { ErrorEquals: ['NeedsReview', 'States.Timeout'], ResultPath: '$.error', Next: 'review' },
      // A chunk canceled with its canceled parent: the parent waits for the rest of its children.
      { ErrorEquals: ['JobSettled', 'ChunkCanceled'], ResultPath: '$.error', Next: 'await-children' },
      { ErrorEquals: ['States.ALL'], ResultPath: '$.error', Next: 'failed-at-media' },
    ]);
    expect(states.index).toMatchObject({ Parameters: { FunctionName: COMPUTE_ARN }, Next: 'plan-embedding' });
    expect(states.media.Branches.map((branch: Json) => branch.StartAt)).toEqual([
      'transcode-where',
      'split-where',
    ]);
  });

  test.each(['transcode', 'split'])(
    '%s runs on the compute function, or on Fargate when probe chose it, whose outcome the compute function collects',
    (step) => {
      expect(all[`${step}-where`]).toMatchObject({
        Type: 'Choice',
        Choices: [{ Variable: '$.probe.compute', StringEquals: 'fargate', Next: `${step}-on-fargate` }],
        Default: step,
      });
      expect(all[step]?.Parameters).toEqual({
        FunctionName: COMPUTE_ARN,
        Payload: { step, 'jobId.$': '$.jobId' },
      });
      expect(all[`${step}-on-fargate`]).toMatchObject({
        Resource: 'arn:aws:states:::ecs:runTask.sync',
        Next: `${step}-collect`,
        Parameters: {
          LaunchType: 'FARGATE',
          Overrides: {
            ContainerOverrides: [
              {
                Name: 'compute',
                Environment: [
                  { Name: 'COMPUTE_STEP', Value: step },
                  { Name: 'COMPUTE_JOB_ID', 'Value.$': '$.jobId' },
                ],
              },
            ],
          },
        },
      });
      expect(all[`${step}-on-fargate`]?.Retry).toEqual([
        expect.objectContaining({ ErrorEquals: ['States.ALL'] }),
      ]);
      expect(all[`${step}-collect`]?.Parameters).toEqual({
        FunctionName: COMPUTE_ARN,
        Payload: { step, 'jobId.$': '$.jobId', collect: true },
      });
    },
  );

  test('each compute step waits for compute capacity, first among its retriers, for as long as twice the function’s timeout', () => {
    const computeFunction = resources[
      logicalIdAt(template, 'AWS::Lambda::Function', `${COMPUTE_PATH}/Function/Resource`)
    ] as Json;
    const timeoutSeconds = computeFunction.Properties.Timeout as number;
    expect(timeoutSeconds).toBe(defaultSettings.computeTimeoutSeconds);
    const onCompute = Object.entries(all).filter(
      ([, state]) => state.Type === 'Task' && state.Parameters?.FunctionName === COMPUTE_ARN,
    );
    expect(onCompute.map(([name]) => name).sort()).toEqual(
      ['index', 'probe', 'split', 'split-collect', 'transcode', 'transcode-collect'].sort(),
    );
    for (const [name, state] of onCompute) {
      expect({ name, retry: state.Retry }).toEqual({
        name,
        retry: [
          {
            ErrorEquals: [
              'Lambda.TooManyRequestsException',
              'Lambda.ServiceException',
              'Lambda.AWSLambdaException',
              'Lambda.SdkClientException',
            ],
            IntervalSeconds: 1,
            BackoffRate: 2,
            MaxDelaySeconds: 60,
            MaxAttempts: expect.any(Number),
            JitterStrategy: 'FULL',
          },
          // The invocation may have run: a few tries, as CDK's default retry gives them.
          {
            ErrorEquals: ['Lambda.ClientExecutionTimeoutException'],
            IntervalSeconds: 2,
            MaxAttempts: 6,
            BackoffRate: 2,
          },
          { ErrorEquals: ['Sandbox.Timedout', 'Lambda.Unknown'], IntervalSeconds: 5, MaxAttempts: 1 },
        ],
      });
    }
    // Full jitter waits half of each delay on average: the delays add up to twice the step's timeout,
    // the longest a step holding the capacity can run, and one try fewer would not.
    const [, probe] = onCompute.find(([name]) => name === 'probe') as [string, Json];
    const waiting = probe.Retry[0] as Json;
    const delays = Array.from({ length: waiting.MaxAttempts }, (_, attempt) =>
      Math.min(waiting.MaxDelaySeconds, waiting.IntervalSeconds * waiting.BackoffRate ** attempt),
    );
    const span = delays.reduce((sum, delay) => sum + delay, 0);
    expect(span).toBeGreaterThanOrEqual(2 * timeoutSeconds);
    expect(span - (delays.at(-1) as number)).toBeLessThan(2 * timeoutSeconds);
  });

  test("fans the chunks out to transcribe states that wait for their chunk jobs, bounded by the provider's limit", () => {
    const map = all['transcribe-chunks'] as Json;
    expect(map).toMatchObject({
      Type: 'Map',
      ItemsPath: '$.split.value',
      ItemSelector: { 'jobId.$': '$.jobId', 'chunk.$': '$$.Map.Item.Value' },
      MaxConcurrency: defaultSettings.providers.deepgram.maxInFlight,
      ResultPath: null,
    });
    expect(all['split-collect']?.ResultPath).toBe('$.split');
    expect(all.transcribe).toMatchObject({
      Resource: 'arn:aws:states:::lambda:invoke.waitForTaskToken',
      Parameters: {
        FunctionName: STEPS_ARN,
        Payload: { step: 'transcribe', 'chunk.$': '$.chunk', 'taskToken.$': '$$.Task.Token' },
      },
      TimeoutSeconds: 24 * 3600,
    });
    expect(all.transcribe?.HeartbeatSeconds).toBeUndefined();
    expect(all.transcribe?.Retry).toContainEqual({
      ErrorEquals: ['ChunkFailed'],
      IntervalSeconds: 1,
      MaxAttempts: 1,
    });
  });
});

describe('the embedding steps', () => {
  const collect = (from: Json): Record<string, Json> =>
    Object.fromEntries(
      Object.entries(from as Record<string, Json>).flatMap(([name, state]) => [
        [name, state],
        ...Object.entries(state.ItemProcessor ? collect(state.ItemProcessor.States) : {}),
      ]),
    );

  test('plan the runs, wait for each run’s embedding job, store the vectors, then finalize', () => {
    const all = collect(states);
    expect(states['plan-embedding']).toMatchObject({
      Parameters: { FunctionName: STEPS_ARN, Payload: { step: 'plan-embedding', 'jobId.$': '$.jobId' } },
      ResultSelector: { 'passagesKey.$': '$.Payload.passagesKey', 'runs.$': '$.Payload.runs' },
      ResultPath: '$.embedding',
      Next: 'embed-passages',
    });
    expect(states['embed-passages']).toMatchObject({
      Type: 'Map',
      ItemsPath: '$.embedding.runs',
      ItemSelector: {
        'jobId.$': '$.jobId',
        'run.$': '$$.Map.Item.Value',
        'passagesKey.$': '$.embedding.passagesKey',
      },
      MaxConcurrency: defaultSettings.providers.bedrock.maxInFlight,
      ResultPath: '$.embedded',
      Next: 'store-vectors',
    });
    expect(states['embed-passages'].Catch).toEqual([
      { ErrorEquals: ['NeedsReview', 'States.Timeout'], ResultPath: '$.error', Next: 'review' },
      { ErrorEquals: ['JobSettled', 'ChunkCanceled'], ResultPath: '$.error', Next: 'await-children' },
      { ErrorEquals: ['States.ALL'], ResultPath: '$.error', Next: 'failed-at-embed-passages' },
    ]);
    expect(all.embed).toMatchObject({
      Resource: 'arn:aws:states:::lambda:invoke.waitForTaskToken',
      Parameters: {
        FunctionName: STEPS_ARN,
        Payload: {
          step: 'embed',
          'run.$': '$.run',
          'passagesKey.$': '$.passagesKey',
          'taskToken.$': '$$.Task.Token',
        },
      },
      ResultPath: '$.embedded',
      OutputPath: '$.embedded',
      TimeoutSeconds: 24 * 3600,
    });
    // A run whose job failed is made once more, under a new key; the transcode and transcription stay done.
    expect(all.embed?.Retry).toContainEqual({
      ErrorEquals: ['ChunkFailed'],
      IntervalSeconds: 1,
      MaxAttempts: 1,
    });
    expect(states['store-vectors']).toMatchObject({
      Parameters: {
        Payload: {
          step: 'store-vectors',
          'passagesKey.$': '$.embedding.passagesKey',
          'embedded.$': '$.embedded',
        },
      },
      Next: 'finalize',
    });
    // A job settled elsewhere is not retried: it goes to settle at once.
    const retries = states['store-vectors'].Retry as Json[];
    const settledAt = retries.findIndex((r) => r.ErrorEquals[0] === 'JobSettled');
    expect(retries[settledAt]).toEqual({ ErrorEquals: ['JobSettled'], MaxAttempts: 0 });
    expect(settledAt).toBeLessThan(retries.findIndex((r) => r.ErrorEquals[0] === 'States.ALL'));
  });
});

describe('a canceled publish', () => {
  test('settles through await-children, which waits for its children, looks again when woken, and goes to review when they outlast the publish timeout', () => {
    for (const name of ['probe', 'index', 'plan-embedding', 'store-vectors']) {
      expect({ name, catches: states[name].Catch }).toEqual({
        name,
        catches: expect.arrayContaining([
          { ErrorEquals: ['JobSettled'], ResultPath: '$.error', Next: 'await-children' },
        ]),
      });
    }
    expect(states['await-children']).toMatchObject({
      Resource: 'arn:aws:states:::lambda:invoke.waitForTaskToken',
      Parameters: { Payload: { step: 'await-children', 'taskToken.$': '$$.Task.Token' } },
      TimeoutSeconds: PUBLISH_TIMEOUT_MS / 1000,
      Next: 'settle',
    });
    expect(states['await-children'].HeartbeatSeconds).toBeUndefined();
    expect(states['await-children'].Catch).toEqual([
      { ErrorEquals: ['ChildSettled'], ResultPath: '$.error', Next: 'await-children' },
      { ErrorEquals: ['States.Timeout'], ResultPath: '$.error', Next: 'review' },
    ]);
    // Being woken is no failure to retry: it goes straight to its catch, the state again with a new token.
    const retries = states['await-children'].Retry as { ErrorEquals: string[]; MaxAttempts?: number }[];
    const woken = retries.findIndex((r) => r.ErrorEquals[0] === 'ChildSettled');
    expect(retries[woken]).toEqual({ ErrorEquals: ['ChildSettled'], MaxAttempts: 0 });
    expect(woken).toBeLessThan(retries.findIndex((r) => r.ErrorEquals[0] === 'States.TaskFailed'));
    expect(retries.some((r) => r.ErrorEquals.includes('States.ALL'))).toBe(false);
  });
});

describe('the step payload', () => {
  /** Every state of the definition, those inside Map and Parallel states included, with the Map state around it. */
  function everyState(machine: Json, map?: Json): { name: string; state: Json; map?: Json }[] {
    return Object.entries(machine.States as Json).flatMap(([name, state]) => [
      { name, state, ...(map ? { map } : {}) },
      ...(state.ItemProcessor ? everyState(state.ItemProcessor, state) : []),
      ...(state.Iterator ? everyState(state.Iterator, state) : []),
      ...((state.Branches ?? []) as Json[]).flatMap((branch) => everyState(branch, map)),
    ]);
  }
  const keysOf = (object: Json): string[] => Object.keys(object).map((key) => key.replace(/\.\$$/, ''));
  const stepTasks = () =>
    everyState(definition).filter(
      ({ state }) => state.Type === 'Task' && state.Parameters?.FunctionName === STEPS_ARN,
    );

  test('every Task of the steps function sends only keys the step schema lists, and the schema lists only keys some Task sends', () => {
    const known = Object.keys(stepEvent.shape).sort();
    const sent = new Set<string>();
    const tasks = stepTasks();
    expect(tasks.length).toBeGreaterThan(10);
    for (const { name, state, map } of tasks) {
      const keys = keysOf(state.Parameters.Payload);
      expect({ name, unknown: keys.filter((key) => !known.includes(key)) }).toEqual({ name, unknown: [] });
      for (const key of keys) sent.add(key);
      // What a Map hands each iteration is what its steps' payloads read.
      if (map?.ItemSelector) {
        const selected = keysOf(map.ItemSelector);
        expect({ name, unknown: selected.filter((key) => !known.includes(key)) }).toEqual({
          name,
          unknown: [],
        });
      }
    }
    expect([...sent].sort()).toEqual(known);
  });

  test('the park step is sent the state that failed, and the steps function reads it', () => {
    expect(states.failed.Parameters.Payload['failedAt.$']).toBe('$.failedAt');
    const payload = {
      step: 'park',
      jobId: 'job_1',
      retryCount: 0,
      executionName: 'job_1-x',
      failedAt: 'submit',
    };
    expect(stepEvent.parse(payload)).toEqual(payload);
  });

  test('a key the schema does not list fails the step loudly', () => {
    expect(() => stepEvent.parse({ step: 'park', jobId: 'job_1', failedAtt: 'submit' })).toThrow(/failedAtt/);
  });
});

describe('synthesizeWorkflowDefinition', () => {
  test("is the deployed definition's single-submission path, with the function ARN it is given", () => {
    const alone = synthesizeWorkflowDefinition(defaultSettings, STEPS_ARN) as Json;
    expect(Object.keys(alone.States).sort()).toEqual(
      Object.keys(states)
        .filter((name) => !PUBLISH_STATES.includes(name))
        .sort(),
    );
    // Without compute places there is no route: prepare goes straight to submit; and a resume goes
    // back to the single submission's states only, finalize included.
    const resumeAt = {
      ...states['resume-at'],
      Choices: states['resume-at'].Choices.map((choice: Json) =>
        choice.Next === 'resume-finalize' ? { ...choice, Next: 'finalize' } : choice,
      ).filter((choice: Json) => !PUBLISH_STATES.includes(choice.Next)),
    };
    for (const [name, state] of Object.entries(alone.States)) {
      expect(state).toEqual(
        name === 'prepare'
          ? { ...states.prepare, Next: 'submit' }
          : name === 'resume-at'
            ? resumeAt
            : name === 'finalize' || name === 'on-failure'
              ? {
                  ...states[name],
                  Catch: states[name].Catch.map((c: Json) =>
                    c.Next === 'finalize-settled' ? { ...c, Next: 'settle' } : c,
                  ),
                }
              : states[name],
      );
    }
  });

  test('follows the settings: the await timeout rounded up to whole seconds, and a heartbeat below it', () => {
    const settings = loadSettings({ JOB_TIMEOUT_MS: '3600500', AWAIT_HEARTBEAT_SECONDS: '120' });
    const built = synthesizeWorkflowDefinition(settings, STEPS_ARN) as Json;
    expect(built.States.await).toEqual(
      expect.objectContaining({ TimeoutSeconds: 3601, HeartbeatSeconds: 120 }),
    );
  });

  test('is quick enough to run at every start of the local stack', () => {
    const started = performance.now();
    synthesizeWorkflowDefinition(defaultSettings, STEPS_ARN);
    expect(performance.now() - started).toBeLessThan(2000);
  });

  test('refuses to leave a reference to another resource in the definition', () => {
    const definitionString = {
      'Fn::Join': ['', ['{"Resource":"', { 'Fn::GetAtt': ['Other', 'Arn'] }, '"}']],
    };
    expect(() => resolveIntrinsics(definitionString)).toThrow(
      'The workflow definition refers to {"Fn::GetAtt":["Other","Arn"]}, which has no value outside the deployed stack',
    );
    expect(() => resolveIntrinsics({ Ref: 'AWS::StackName' })).toThrow(
      /refers to \{"Ref":"AWS::StackName"\}/,
    );
  });

  test('resolves the pseudo parameters to the local stack’s values', () => {
    const arn = {
      'Fn::Join': [
        ':',
        ['arn', { Ref: 'AWS::Partition' }, 'states', { Ref: 'AWS::Region' }, { Ref: 'AWS::AccountId' }],
      ],
    };
    expect(resolveIntrinsics(arn)).toBe('arn:aws:states:us-east-1:000000000000');
  });

  test('nothing under lib/ imports the runtime in lambdas/', () => {
    const files = (dir: string): string[] =>
      readdirSync(dir, { withFileTypes: true }).flatMap((entry) =>
        entry.isDirectory()
          ? files(join(dir, entry.name))
          : entry.name.endsWith('.ts')
            ? [join(dir, entry.name)]
            : [],
      );
    const importing = files(join(REPO_ROOT, 'lib')).filter((file) =>
      /from '(\.\.\/)+lambdas\//.test(readFileSync(file, 'utf8')),
    );
    expect(importing).toEqual([]);
  });
});

describe('alarms', () => {
  test.each([
    ['ExecutionsAborted', 'Test/Workflow/AbortedAlarm/Resource'],
    ['ExecutionsTimedOut', 'Test/Workflow/TimedOutAlarm/Resource'],
    ['ExecutionThrottled', 'Test/Workflow/ThrottledAlarm/Resource'],
  ])('%s of the state machine alarms on the first one and notifies the alarm topic', (metric, path) => {
    const topic = logicalIdAt(template, 'AWS::SNS::Topic', 'Test/Alarms/Topic/Resource');
    const alarm = resources[logicalIdAt(template, 'AWS::CloudWatch::Alarm', path)];
    expect(alarm.Properties).toEqual(
      expect.objectContaining({
        Namespace: 'AWS/States',
        MetricName: metric,
        Dimensions: [{ Name: 'StateMachineArn', Value: { Ref: stateMachineId } }],
        Statistic: 'Sum',
        Period: 300,
        Threshold: 1,
        EvaluationPeriods: 1,
        ComparisonOperator: 'GreaterThanOrEqualToThreshold',
        TreatMissingData: 'notBreaching',
        AlarmActions: [{ Ref: topic }],
        OKActions: [{ Ref: topic }],
      }),
    );
  });

  test('there is no alarm on failed executions: a failed job is a normal outcome', () => {
    // About the app: no construct alarms on ExecutionsFailed, the workflow's or any other.
    const states = Object.values(longhaulTemplate().findResources('AWS::CloudWatch::Alarm')).filter(
      (alarm) => alarm.Properties.Namespace === 'AWS/States',
    );
    expect(states.map((alarm) => alarm.Properties.MetricName).sort()).toEqual([
      'ExecutionThrottled',
      'ExecutionsAborted',
      'ExecutionsTimedOut',
    ]);
  });
});

describe('dispatch function', () => {
  test.each<[string, () => string]>([
    ...PROVIDER_NAMES.map((provider): [string, () => string] => [
      `jobs queue of ${provider}`,
      () => ids.jobQueues[provider],
    ]),
    ['hand-off queue', () => ids.handOffQueue],
  ])(
    'consumes the %s in batches of 10, reports failed items and runs at most 2 at once',
    (_name, queueId) => {
      const queue = queueId();
      const fn = logicalIdAt(template, 'AWS::Lambda::Function', `${DISPATCH_PATH}/Function/Resource`);
      template.resourceCountIs('AWS::Lambda::EventSourceMapping', PROVIDER_NAMES.length + 1);
      template.hasResourceProperties('AWS::Lambda::EventSourceMapping', {
        EventSourceArn: { 'Fn::GetAtt': [queue, 'Arn'] },
        FunctionName: { Ref: fn },
        BatchSize: 10,
        MaximumBatchingWindowInSeconds: 1,
        FunctionResponseTypes: ['ReportBatchItemFailures'],
        ScalingConfig: { MaximumConcurrency: 2 },
      });
    },
  );

  test('times out at the dispatch timeout, a sixth of the queue’s visibility timeout', () => {
    const fn =
      resources[logicalIdAt(template, 'AWS::Lambda::Function', `${DISPATCH_PATH}/Function/Resource`)];
    expect(fn.Properties.Timeout).toBe(defaultSettings.dispatchTimeoutSeconds);
    // The jobs queues' visibility timeout, which durable-state.test.ts finds on the app's queues.
    expect(queueVisibilityTimeoutSeconds(defaultSettings)).toBe(6 * defaultSettings.dispatchTimeoutSeconds);
  });

  test('may start executions of the state machine only, and nothing else in Step Functions', () => {
    const statements = policyStatements(template, `${DISPATCH_PATH}/Role/DefaultPolicy/Resource`);
    expect(statementsFor(statements, 'states')).toEqual([
      { Effect: 'Allow', Action: 'states:StartExecution', Resource: { Ref: stateMachineId } },
    ]);
  });

  test("reads and writes the job table, consumes each provider's jobs queue and sends delayed messages back to it, and consumes and sends to the hand-off lane", () => {
    const statements = policyStatements(template, `${DISPATCH_PATH}/Role/DefaultPolicy/Resource`);
    const lane = ids.handOffQueue;
    const table = ids.jobTable;
    const sqs = statementsFor(statements, 'sqs');
    const actionsOn = (queue: string) =>
      sqs
        .filter((statement) =>
          [statement.Resource]
            .flat()
            .some((target) => JSON.stringify(target) === JSON.stringify({ 'Fn::GetAtt': [queue, 'Arn'] })),
        )
        .flatMap((statement) => [statement.Action].flat())
        .sort();
    const consume = [
      'sqs:ChangeMessageVisibility',
      'sqs:DeleteMessage',
      'sqs:GetQueueAttributes',
      'sqs:GetQueueUrl',
      'sqs:ReceiveMessage',
    ];
    for (const queue of Object.values(ids.jobQueues)) {
      expect([...new Set(actionsOn(queue))]).toEqual([...consume, 'sqs:SendMessage'].sort());
    }
    // A job it grants a slot that it cannot start at once goes on by the lane.
    expect([...new Set(actionsOn(lane))]).toEqual([...consume, 'sqs:SendMessage'].sort());
    // Nothing on any other queue.
    const named = new Set([...Object.values(ids.jobQueues), lane]);
    for (const statement of sqs) {
      for (const target of [statement.Resource].flat() as { 'Fn::GetAtt': [string, string] }[]) {
        expect(named).toContain(target['Fn::GetAtt'][0]);
      }
    }
    expect(statementsFor(statements, 'dynamodb')).toEqual([
      expect.objectContaining({
        Action: expect.arrayContaining(['dynamodb:GetItem', 'dynamodb:PutItem', 'dynamodb:UpdateItem']),
        Resource: [
          { 'Fn::GetAtt': [table, 'Arn'] },
          { 'Fn::Join': ['', [{ 'Fn::GetAtt': [table, 'Arn'] }, '/index/*']] },
        ],
      }),
    ]);
    expect(statementsFor(statements, 's3')).toEqual([]);
    expect(statementsFor(statements, 'secretsmanager')).toEqual([]);
  });

  test('finds the table, the queues and the state machine through its environment', () => {
    const fn =
      resources[logicalIdAt(template, 'AWS::Lambda::Function', `${DISPATCH_PATH}/Function/Resource`)];
    expect(fn.Properties.Environment.Variables).toEqual(
      expect.objectContaining({
        JOB_TABLE_NAME: { Ref: ids.jobTable },
        ...given.jobQueueEnvironment,
        HAND_OFF_QUEUE_URL: { Ref: ids.handOffQueue },
        STATE_MACHINE_ARN: { Ref: stateMachineId },
        POWERTOOLS_SERVICE_NAME: 'dispatch',
      }),
    );
  });
});

describe('steps function', () => {
  test('runs each step for up to a minute with 1 GB', () => {
    const fn = resources[stepsFunctionId];
    expect(fn.Properties.Timeout).toBe(60);
    expect(fn.Properties.MemorySize).toBe(1024);
  });

  test('finds its resources through its environment, and has no STATE_MACHINE_ARN (it would be circular)', () => {
    const variables = resources[stepsFunctionId].Properties.Environment.Variables;
    expect(variables).toEqual(
      expect.objectContaining({
        JOB_TABLE_NAME: { Ref: ids.jobTable },
        INPUT_BUCKET_NAME: { Ref: ids.inputBucket },
        OUTPUT_BUCKET_NAME: { Ref: ids.outputBucket },
        ...given.providerSecretEnvironment,
        WEBHOOK_SECRET_ARN: { Ref: ids.webhookSecret },
        // Each provider's webhook route's path is under it (the app's events function URL: provider-events.test.ts).
        PROVIDER_EVENTS_URL: PROVIDER_EVENTS_URL,
        // The release step's fallback when it cannot start the job it granted a freed slot.
        HAND_OFF_QUEUE_URL: { Ref: ids.handOffQueue },
        POWERTOOLS_SERVICE_NAME: 'workflow',
      }),
    );
    expect(variables.STATE_MACHINE_ARN).toBeUndefined();
    // A new chunk job of audio.publish goes to its provider's jobs queue, as a new job from intake.
    expect(variables).toEqual(expect.objectContaining(given.jobQueueEnvironment));
  });

  test('reads inputs, reads, writes and deletes outputs, reads both secrets and sends to the hand-off lane and the jobs queues, nothing more', () => {
    const statements = policyStatements(template, `${STEPS_PATH}/Role/DefaultPolicy/Resource`);
    const bucketObjects = (bucket: string) => ({
      'Fn::Join': ['', [{ 'Fn::GetAtt': [bucket, 'Arn'] }, '/*']],
    });
    expect(statementsFor(statements, 's3')).toEqual([
      {
        Effect: 'Allow',
        Action: 's3:GetObject',
        Resource: bucketObjects(ids.inputBucket),
      },
      {
        Effect: 'Allow',
        Action: ['s3:DeleteObject', 's3:GetObject', 's3:PutObject'],
        Resource: bucketObjects(ids.outputBucket),
      },
      // A failed job's outputs are deleted by prefix, which lists the keys first.
      {
        Effect: 'Allow',
        Action: 's3:ListBucket',
        Resource: { 'Fn::GetAtt': [ids.outputBucket, 'Arn'] },
      },
    ]);
    const [reads] = statementsFor(statements, 'secretsmanager');
    expect(statementsFor(statements, 'secretsmanager')).toEqual([
      {
        Effect: 'Allow',
        Action: 'secretsmanager:GetSecretValue',
        Resource: expect.arrayContaining([
          ...Object.values(ids.providerSecrets).map((id) => ({ Ref: id })),
          { Ref: ids.webhookSecret },
        ]),
      },
    ]);
    expect(reads?.Resource).toHaveLength(PROVIDER_NAMES.length + 1);
    expect(statementsFor(statements, 'states')).toEqual([]);
    expect(statementsFor(statements, 'sqs')).toEqual([
      {
        Effect: 'Allow',
        Action: ['sqs:GetQueueAttributes', 'sqs:GetQueueUrl', 'sqs:SendMessage'],
        Resource: [
          ...Object.values(ids.jobQueues).map((id) => ({ 'Fn::GetAtt': [id, 'Arn'] })),
          { 'Fn::GetAtt': [ids.handOffQueue, 'Arn'] },
        ].sort((a, b) => JSON.stringify(a).localeCompare(JSON.stringify(b))),
      },
    ]);
  });

  test('may start executions of its own state machine only, in a policy of its own', () => {
    expect(policyStatements(template, 'Test/Workflow/StartNextJob/Resource')).toEqual([
      { Effect: 'Allow', Action: 'states:StartExecution', Resource: { Ref: stateMachineId } },
    ]);
    const policy = logicalIdAt(template, 'AWS::IAM::Policy', 'Test/Workflow/StartNextJob/Resource');
    expect(resources[policy].Properties.Roles).toEqual([
      { Ref: logicalIdAt(template, 'AWS::IAM::Role', `${STEPS_PATH}/Role/Resource`) },
    ]);
    // Not in the default policy: the state machine names the function, so the function cannot wait for it.
    expect(
      statementsFor(policyStatements(template, `${STEPS_PATH}/Role/DefaultPolicy/Resource`), 'states'),
    ).not.toContainEqual(expect.objectContaining({ Action: 'states:StartExecution' }));
  });

  test('may answer task tokens, in a policy of its own that grants nothing else', () => {
    expect(policyStatements(template, `${STEPS_PATH}/TaskResponsePolicy/Resource`)).toEqual([
      {
        Effect: 'Allow',
        Action: ['states:SendTaskFailure', 'states:SendTaskHeartbeat', 'states:SendTaskSuccess'],
        Resource: '*',
      },
    ]);
    const policy = logicalIdAt(template, 'AWS::IAM::Policy', `${STEPS_PATH}/TaskResponsePolicy/Resource`);
    expect(resources[policy].Properties.Roles).toEqual([
      { Ref: logicalIdAt(template, 'AWS::IAM::Role', `${STEPS_PATH}/Role/Resource`) },
    ]);
    // The function is created after the policy, so no step ever runs without it.
    expect(resources[stepsFunctionId].DependsOn).toContain(policy);
  });
});
