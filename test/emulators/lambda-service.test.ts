import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DescribeExecutionCommand, SFNClient, StartExecutionCommand } from '@aws-sdk/client-sfn';
import { App, Stack } from 'aws-cdk-lib';
import { Function as LambdaFunction } from 'aws-cdk-lib/aws-lambda';
import {
  type CfnStateMachine,
  DefinitionBody,
  Parallel,
  StateMachine,
  TaskInput,
} from 'aws-cdk-lib/aws-stepfunctions';
import { LambdaInvoke } from 'aws-cdk-lib/aws-stepfunctions-tasks';
import { loadSettings } from '../../config/settings';
import { waitingForCompute } from '../../lib/constructs/job-workflow';
import { resolveIntrinsics } from '../../lib/workflow-definition';
import { invoke, type LocalFunction } from '../../local/lambda';
import {
  ACCOUNT_CONCURRENCY,
  chainDepth,
  checkReservations,
  LambdaServiceError,
  SYNC_REQUEST_PAYLOAD_BYTES,
  setThrottleFault,
  traceHeaderAt,
} from '../../local/lambda-service';
import { startLocalStepFunctions } from '../../local/stepfunctions';
import { lambdaFunctionError } from '../../local/stepfunctions/tasks';
import { LocalTemplate, type TemplateJson } from '../../local/template';

const fn: LocalFunction = { name: 'longhaul-workflow', service: 'workflow', timeoutMs: 1000, memoryMb: 512 };
const other: LocalFunction = { name: 'longhaul-api', service: 'api', timeoutMs: 1000, memoryMb: 512 };

afterEach(() => setThrottleFault(undefined));

test('refuses a synchronous event over 6 MB of JSON before the function runs', async () => {
  const handler = jest.fn(async () => 'ran');
  const event = { body: 'x'.repeat(SYNC_REQUEST_PAYLOAD_BYTES) };
  await expect(invoke(fn, handler, event)).rejects.toMatchObject({
    name: 'RequestEntityTooLargeException',
    statusCode: 413,
  });
  expect(handler).not.toHaveBeenCalled();
  await expect(invoke(fn, handler, { body: 'x'.repeat(SYNC_REQUEST_PAYLOAD_BYTES - 20) })).resolves.toBe(
    'ran',
  );
});

test('throttles the chosen share of the named functions only, before they run', async () => {
  const picks = [0.05, 0.5, 0.09];
  setThrottleFault({ share: 0.1, functions: new Set([fn.name]), random: () => picks.shift() ?? 1 });
  const handler = jest.fn(async () => 'ran');
  const outcomes = await Promise.allSettled([
    invoke(fn, handler, {}),
    invoke(fn, handler, {}),
    invoke(fn, handler, {}),
  ]);
  expect(outcomes.map((o) => (o.status === 'fulfilled' ? o.value : (o.reason as Error).name))).toEqual([
    'TooManyRequestsException',
    'ran',
    'TooManyRequestsException',
  ]);
  await expect(invoke(other, handler, {})).resolves.toBe('ran');
  expect(handler).toHaveBeenCalledTimes(2);
});

describe('reserved concurrency', () => {
  const compute: LocalFunction = {
    ...fn,
    name: 'longhaul-compute',
    service: 'compute',
    reservedConcurrency: 1,
  };
  const deferred = () => {
    let resolve!: (value: string) => void;
    const promise = new Promise<string>((done) => {
      resolve = done;
    });
    return { promise, resolve };
  };

  test('refuses an invocation beyond the function’s reservation with TooManyRequestsException (429) before it runs, and admits the next once one ends', async () => {
    const first = deferred();
    const handler = jest.fn(() => first.promise);
    const running = invoke(compute, handler, {});

    await expect(invoke(compute, handler, {})).rejects.toMatchObject({
      name: 'TooManyRequestsException',
      statusCode: 429,
    });
    expect(handler).toHaveBeenCalledTimes(1);
    // Another function's invocations are not counted against it.
    await expect(invoke(other, async () => 'ran', {})).resolves.toBe('ran');
    first.resolve('first');
    await expect(running).resolves.toBe('first');
    await expect(invoke(compute, async () => 'next', {})).resolves.toBe('next');
  });

  test('a function that reserves none is never throttled for concurrency', async () => {
    const all = deferred();
    const outcomes = Promise.all(Array.from({ length: 20 }, () => invoke(fn, () => all.promise, {})));
    all.resolve('ran');
    expect(new Set(await outcomes)).toEqual(new Set(['ran']));
  });

  test('is read from the template, and a reservation leaving the account under 100 unreserved is refused as Lambda refuses it', () => {
    const functionOf = (reserved: number | undefined) => ({
      Type: 'AWS::Lambda::Function',
      Properties: {
        Role: { 'Fn::GetAtt': ['Role', 'Arn'] },
        Environment: { Variables: { POWERTOOLS_SERVICE_NAME: 'compute' } },
        ...(reserved === undefined ? {} : { ReservedConcurrentExecutions: reserved }),
      },
    });
    const templateOf = (reserved: number | undefined) =>
      new LocalTemplate(
        { Resources: { Compute: functionOf(reserved) } } as unknown as TemplateJson,
        'a template',
      );

    expect(templateOf(7).function('compute').reservedConcurrency).toBe(7);
    expect(templateOf(undefined).function('compute').reservedConcurrency).toBeUndefined();
    expect(() => checkReservations(templateOf(ACCOUNT_CONCURRENCY - 100).functions())).not.toThrow();
    expect(() => checkReservations(templateOf(ACCOUNT_CONCURRENCY - 99).functions())).toThrow(
      "Compute: InvalidParameterValueException: Specified ReservedConcurrentExecutions for function decreases account's UnreservedConcurrentExecution below its minimum value of [100]. (account concurrency 1000, reserved 901)",
    );
    // A new account, whose whole quota may be 10, can reserve nothing.
    expect(() => checkReservations(templateOf(1).functions(), 10)).toThrow(/minimum value of \[100\]/);
    expect(() => checkReservations(templateOf(undefined).functions(), 10)).not.toThrow();
  });

  test('two compute steps at once, under a reservation of 1, both succeed: the throttled one waits for the other', async () => {
    const COMPUTE_ARN = 'arn:aws:lambda:us-east-1:000000000000:function:longhaul-compute';
    const stack = new Stack(new App(), 'Compute');
    const computeFunction = LambdaFunction.fromFunctionArn(stack, 'ComputeFunction', COMPUTE_ARN);
    // Each step with the retrier the workflow gives its compute steps.
    const computeStep = (name: string) =>
      new LambdaInvoke(stack, name, {
        lambdaFunction: computeFunction,
        payload: TaskInput.fromObject({ step: name }),
        retryOnServiceExceptions: false,
      }).addRetry(waitingForCompute(loadSettings({ COMPUTE_TIMEOUT_SECONDS: '60' })));
    const machine = new StateMachine(stack, 'Machine', {
      definitionBody: DefinitionBody.fromChainable(
        new Parallel(stack, 'both').branch(computeStep('probe-a')).branch(computeStep('probe-b')),
      ),
    });
    const definition = JSON.parse(
      resolveIntrinsics(
        stack.resolve((machine.node.defaultChild as CfnStateMachine).definitionString),
      ) as string,
    );

    const ran: { step: string; start: number; end: number }[] = [];
    const refused: string[] = [];
    const dataDir = mkdtempSync(join(tmpdir(), 'longhaul-reserved-'));
    const emulator = await startLocalStepFunctions({
      dataDir,
      stateMachines: [
        {
          name: 'compute-steps',
          definition,
          invokeLambda: async (_name, payload) => {
            const { step } = payload as { step: string };
            try {
              return await invoke(
                compute,
                async () => {
                  const start = Date.now();
                  await new Promise((resolve) => setTimeout(resolve, 300));
                  ran.push({ step, start, end: Date.now() });
                  return { step };
                },
                payload,
              );
            } catch (error) {
              refused.push(step);
              throw error;
            }
          },
        },
      ],
    });
    const sfn = new SFNClient({
      region: 'us-east-1',
      endpoint: emulator.endpoint,
      credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
    });
    try {
      const { executionArn } = await sfn.send(
        new StartExecutionCommand({
          stateMachineArn: emulator.stateMachineArn('compute-steps'),
          input: '{}',
        }),
      );
      const deadline = Date.now() + 45_000;
      let status: string | undefined = 'RUNNING';
      while (status === 'RUNNING' && Date.now() < deadline) {
        await new Promise((resolve) => setTimeout(resolve, 50));
        status = (await sfn.send(new DescribeExecutionCommand({ executionArn }))).status;
      }

      expect(status).toBe('SUCCEEDED');
      expect(ran.map((run) => run.step).sort()).toEqual(['probe-a', 'probe-b']);
      // One was refused at least once, and ran only after the other had ended.
      expect(refused.length).toBeGreaterThanOrEqual(1);
      const [earlier, later] = [...ran].sort((a, b) => a.start - b.start);
      expect(later?.start).toBeGreaterThanOrEqual(earlier?.end as number);
    } finally {
      sfn.destroy();
      await emulator.close();
      rmSync(dataDir, { recursive: true, force: true });
    }
  }, 60_000);
});

test('Step Functions sees a throttled invocation as Lambda.TooManyRequestsException', () => {
  const error = lambdaFunctionError(
    new LambdaServiceError('TooManyRequestsException', 'Rate Exceeded.', 429),
  );
  expect(error.name).toBe('Lambda.TooManyRequestsException');
  expect(lambdaFunctionError(new TypeError('boom')).name).toBe('TypeError');
});

test('a trace header carries the chain depth for its own function only', () => {
  const header = traceHeaderAt('longhaul-dispatch', 7);
  expect(header).toMatch(
    /^Root=1-[0-9a-f]{8}-[0-9a-f]{24};Parent=[0-9a-f]{16};Sampled=0;Lineage=[0-9a-f]{8}:7$/,
  );
  expect(chainDepth(header, 'longhaul-dispatch')).toBe(7);
  expect(chainDepth(header, 'longhaul-workflow')).toBe(0);
  expect(chainDepth(undefined, 'longhaul-dispatch')).toBe(0);
});
