import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  DescribeExecutionCommand,
  type DescribeExecutionCommandOutput,
  DescribeStateMachineCommand,
  ExecutionAlreadyExists,
  ExecutionDoesNotExist,
  ExecutionNotRedrivable,
  GetExecutionHistoryCommand,
  InvalidArn,
  InvalidExecutionInput,
  InvalidName,
  InvalidToken,
  ListExecutionsCommand,
  RedriveExecutionCommand,
  SendTaskFailureCommand,
  SendTaskHeartbeatCommand,
  SendTaskSuccessCommand,
  SFNClient,
  StartExecutionCommand,
  StateMachineDoesNotExist,
  StopExecutionCommand,
  TaskTimedOut,
} from '@aws-sdk/client-sfn';
import { type LocalStepFunctions, startLocalStepFunctions } from '../../local/stepfunctions';
import { ApiThrottle, apiQuotas } from '../../local/stepfunctions/api-quotas';

/**
 * The local Step Functions endpoint, driven only through the real SFNClient,
 * running hand-written JSONPath definitions whose Lambda functions are test
 * doubles. aws-local-stepfunctions ships CommonJS, so the emulator runs in
 * the test process.
 */

const REGION = 'us-east-1';
const WORKFLOW = 'fixture-workflow';
const EXECUTION_TIMEOUT = 'fixture-execution-timeout';
const REDRIVE = 'fixture-redrive';
const PREPARE = 'fixture-prepare';
const SUBMIT = 'fixture-submit';

const fixture = (file: string): object =>
  JSON.parse(readFileSync(join(__dirname, 'fixtures', 'stepfunctions', file), 'utf8')) as object;

class ProviderUnavailable extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ProviderUnavailable';
  }
}

interface Payload {
  readonly job: string;
  readonly [field: string]: unknown;
}

/** Test doubles for the workflow's functions: every call is recorded; a job may script what its calls do. */
class FakeFunctions {
  private readonly calls: { functionName: string; payload: Payload }[] = [];
  private readonly scripts = new Map<string, (payload: Payload, call: number) => unknown>();

  readonly invoke = async (functionName: string, payload: unknown): Promise<unknown> => {
    const call = payload as Payload;
    this.calls.push({ functionName, payload: call });
    const script = this.scripts.get(`${functionName}/${call.job}`);
    return script ? script(call, this.callsTo(functionName, call.job).length) : { ready: call.job };
  };

  script(functionName: string, job: string, behaviour: (payload: Payload, call: number) => unknown): void {
    this.scripts.set(`${functionName}/${job}`, behaviour);
  }

  callsTo(functionName: string, job: string): Payload[] {
    return this.calls
      .filter((call) => call.functionName === functionName && call.payload.job === job)
      .map((call) => call.payload);
  }
}

async function eventually<T>(
  probe: () => Promise<T | undefined> | T | undefined,
  what: string,
  timeoutMs = 10_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

const client = (endpoint?: string) =>
  new SFNClient({
    region: REGION,
    credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
    ...(endpoint ? { endpoint } : {}),
  });

const closed = (sfn: SFNClient, executionArn: string): Promise<DescribeExecutionCommandOutput> =>
  eventually(async () => {
    const execution = await sfn.send(new DescribeExecutionCommand({ executionArn }));
    return execution.status === 'RUNNING' ? undefined : execution;
  }, `${executionArn} to close`);

/** The task token handed to the submit function on its `call`-th invocation for `job`. */
const tokenFor = (functions: FakeFunctions, job: string, call = 1): Promise<string> =>
  eventually(
    () => functions.callsTo(SUBMIT, job)[call - 1]?.taskToken as string | undefined,
    `submit call ${call} of ${job}`,
  );

const jobInput = (job: string, limits: { heartbeatSeconds?: number; timeoutSeconds?: number } = {}) =>
  JSON.stringify({
    job,
    heartbeatSeconds: limits.heartbeatSeconds ?? 60,
    timeoutSeconds: limits.timeoutSeconds ?? 120,
  });

describe('local Step Functions endpoint', () => {
  const functions = new FakeFunctions();
  let dataDir: string;
  let emulator: LocalStepFunctions;
  let sfn: SFNClient;
  let workflowArn: string;

  beforeAll(async () => {
    dataDir = mkdtempSync(join(tmpdir(), 'longhaul-sfn-'));
    emulator = await startLocalStepFunctions({
      dataDir,
      stateMachines: [
        { name: WORKFLOW, definition: fixture('workflow.asl.json'), invokeLambda: functions.invoke },
        {
          name: EXECUTION_TIMEOUT,
          definition: fixture('execution-timeout.asl.json'),
          invokeLambda: functions.invoke,
        },
        { name: REDRIVE, definition: fixture('redrive.asl.json'), invokeLambda: functions.invoke },
      ],
    });
    workflowArn = emulator.stateMachineArn(WORKFLOW);
    // The handlers find the endpoint the same way.
    process.env.AWS_ENDPOINT_URL_SFN = emulator.endpoint;
    sfn = client();
  });

  afterAll(async () => {
    sfn?.destroy();
    delete process.env.AWS_ENDPOINT_URL_SFN;
    await emulator?.close();
    rmSync(dataDir, { recursive: true, force: true });
  });

  const start = async (job: string, input = jobInput(job), name: string = job) =>
    (await sfn.send(new StartExecutionCommand({ stateMachineArn: workflowArn, name, input })))
      .executionArn as string;

  test('a Lambda error is retried as often as Retry allows, then caught into the fallback state', async () => {
    functions.script(PREPARE, 'down', () => {
      throw new ProviderUnavailable('the provider is down');
    });

    const execution = await closed(sfn, await start('down'));

    expect(execution.status).toBe('SUCCEEDED');
    const output = JSON.parse(execution.output as string);
    expect(output.outcome).toBe('fallback');
    expect(output.failure.Error).toBe('ProviderUnavailable');
    expect(JSON.parse(output.failure.Cause)).toMatchObject({
      errorType: 'ProviderUnavailable',
      errorMessage: 'the provider is down',
    });
    // One attempt and MaxAttempts (2) retries, each seeing its own $$.State.RetryCount.
    expect(functions.callsTo(PREPARE, 'down').map((payload) => payload.attempt)).toEqual([0, 1, 2]);
    expect(functions.callsTo(SUBMIT, 'down')).toHaveLength(0);
  });

  test('a task token reaches the function and SendTaskSuccess completes the waiting task with its output', async () => {
    functions.script(PREPARE, 'flaky', (_payload, call) => {
      if (call === 1) throw new ProviderUnavailable('try again');
      return { prepared: true };
    });
    const executionArn = await start('flaky');

    const token = await tokenFor(functions, 'flaky');
    expect(functions.callsTo(SUBMIT, 'flaky')[0]).toEqual({
      taskToken: token,
      job: 'flaky',
      executionId: executionArn,
      stateName: 'Await',
    });
    await sfn.send(new SendTaskHeartbeatCommand({ taskToken: token }));
    await sfn.send(
      new SendTaskSuccessCommand({ taskToken: token, output: JSON.stringify({ providerJobId: 'p-1' }) }),
    );
    const execution = await closed(sfn, executionArn);

    expect(execution.status).toBe('SUCCEEDED');
    expect(JSON.parse(execution.output as string)).toEqual({
      job: 'flaky',
      heartbeatSeconds: 60,
      timeoutSeconds: 120,
      prepare: { prepared: { prepared: true } },
      result: { providerJobId: 'p-1' },
    });
    expect(
      functions.callsTo(PREPARE, 'flaky').map((payload) => [payload.attempt, payload.executionName]),
    ).toEqual([
      [0, 'flaky'],
      [1, 'flaky'],
    ]);
    await expect(
      sfn.send(new SendTaskSuccessCommand({ taskToken: token, output: '{}' })),
    ).rejects.toBeInstanceOf(TaskTimedOut);
  });

  test('SendTaskFailure fails the waiting task with its error and cause, which Catch routes', async () => {
    const executionArn = await start('rejected');
    const token = await tokenFor(functions, 'rejected');

    await sfn.send(
      new SendTaskFailureCommand({ taskToken: token, error: 'ProviderRejected', cause: 'no capacity' }),
    );
    const execution = await closed(sfn, executionArn);

    expect(execution).toMatchObject({ status: 'FAILED', error: 'JobRejected', cause: 'no capacity' });
    expect(execution.output).toBeUndefined();
  });

  test('a function that throws instead of handing on its token fails the task as States.TaskFailed catches', async () => {
    functions.script(SUBMIT, 'unsubmitted', () => {
      throw new TypeError('provider client misconfigured');
    });

    const execution = await closed(sfn, await start('unsubmitted'));

    const output = JSON.parse(execution.output as string);
    expect(output.outcome).toBe('submit-failed');
    expect(output.failure.Error).toBe('TypeError');
    expect(JSON.parse(output.failure.Cause).errorMessage).toBe('provider client misconfigured');
  });

  test('a missed heartbeat fails the task with States.HeartbeatTimeout, caught as a States.Timeout and not as States.TaskFailed', async () => {
    const startedAt = Date.now();
    const executionArn = await start('silent', jobInput('silent', { heartbeatSeconds: 1 }));
    const token = await tokenFor(functions, 'silent');

    const execution = await closed(sfn, executionArn);

    expect(Date.now() - startedAt).toBeGreaterThanOrEqual(1000);
    const output = JSON.parse(execution.output as string);
    expect(output).toMatchObject({ outcome: 'timed-out', failure: { Error: 'States.HeartbeatTimeout' } });
    await expect(
      sfn.send(new SendTaskSuccessCommand({ taskToken: token, output: '{}' })),
    ).rejects.toBeInstanceOf(TaskTimedOut);
  });

  test('a task that outlives TimeoutSeconds fails with States.Timeout despite heartbeats', async () => {
    const executionArn = await start('slow', jobInput('slow', { heartbeatSeconds: 60, timeoutSeconds: 1 }));
    const token = await tokenFor(functions, 'slow');
    await sfn.send(new SendTaskHeartbeatCommand({ taskToken: token }));

    const execution = await closed(sfn, executionArn);

    expect(JSON.parse(execution.output as string)).toMatchObject({
      outcome: 'timed-out',
      failure: { Error: 'States.Timeout' },
    });
    const history = await sfn.send(new GetExecutionHistoryCommand({ executionArn }));
    expect(
      history.events?.find((event) => event.type === 'TaskTimedOut')?.taskTimedOutEventDetails,
    ).toMatchObject({
      resourceType: 'lambda',
      resource: 'invoke.waitForTaskToken',
      error: 'States.Timeout',
    });
  });

  test("an execution that outlives the definition's TimeoutSeconds ends TIMED_OUT", async () => {
    const { executionArn } = await sfn.send(
      new StartExecutionCommand({
        stateMachineArn: emulator.stateMachineArn(EXECUTION_TIMEOUT),
        input: '{}',
      }),
    );

    const execution = await closed(sfn, executionArn as string);

    expect(execution).toMatchObject({ status: 'TIMED_OUT', error: 'States.Timeout' });
    const history = await sfn.send(
      new GetExecutionHistoryCommand({ executionArn, reverseOrder: true, maxResults: 1 }),
    );
    expect(history.events?.map((event) => event.type)).toEqual(['ExecutionTimedOut']);
  });

  test('StartExecution answers the same execution for the same name and input while it runs, and refuses any other', async () => {
    const input = jobInput('repeat');
    const first = await sfn.send(
      new StartExecutionCommand({ stateMachineArn: workflowArn, name: 'repeat', input }),
    );
    const again = await sfn.send(
      new StartExecutionCommand({ stateMachineArn: workflowArn, name: 'repeat', input }),
    );

    expect(again.executionArn).toBe(`arn:aws:states:${REGION}:000000000000:execution:${WORKFLOW}:repeat`);
    expect(again).toMatchObject({ executionArn: first.executionArn, startDate: first.startDate });
    await expect(
      sfn.send(
        new StartExecutionCommand({ stateMachineArn: workflowArn, name: 'repeat', input: jobInput('other') }),
      ),
    ).rejects.toBeInstanceOf(ExecutionAlreadyExists);
    await tokenFor(functions, 'repeat');
    expect(functions.callsTo(PREPARE, 'repeat')).toHaveLength(1);

    await sfn.send(new StopExecutionCommand({ executionArn: first.executionArn }));
    await expect(
      sfn.send(new StartExecutionCommand({ stateMachineArn: workflowArn, name: 'repeat', input })),
    ).rejects.toBeInstanceOf(ExecutionAlreadyExists);
  });

  test('StopExecution aborts the execution, records error and cause, and voids its task token', async () => {
    const executionArn = await start('cancelled');
    const token = await tokenFor(functions, 'cancelled');

    const { stopDate } = await sfn.send(
      new StopExecutionCommand({
        executionArn,
        error: 'Operator.Cancelled',
        cause: 'cancelled by the operator',
      }),
    );
    const execution = await sfn.send(new DescribeExecutionCommand({ executionArn }));

    expect(execution).toMatchObject({
      status: 'ABORTED',
      error: 'Operator.Cancelled',
      cause: 'cancelled by the operator',
      stopDate,
    });
    await expect(
      sfn.send(new SendTaskSuccessCommand({ taskToken: token, output: '{}' })),
    ).rejects.toBeInstanceOf(TaskTimedOut);
    const history = await sfn.send(
      new GetExecutionHistoryCommand({ executionArn, reverseOrder: true, maxResults: 1 }),
    );
    expect(history.events?.[0]).toMatchObject({
      type: 'ExecutionAborted',
      executionAbortedEventDetails: { error: 'Operator.Cancelled', cause: 'cancelled by the operator' },
    });
    expect((await sfn.send(new DescribeExecutionCommand({ executionArn }))).status).toBe('ABORTED');
  });

  test('DescribeExecution, ListExecutions and GetExecutionHistory answer in the service shapes', async () => {
    const input = jobInput('shapes');
    const executionArn = await start('shapes', input);
    const token = await tokenFor(functions, 'shapes');
    await sfn.send(new SendTaskSuccessCommand({ taskToken: token, output: '{"providerJobId":"p-2"}' }));
    await closed(sfn, executionArn);

    const described = await sfn.send(new DescribeExecutionCommand({ executionArn }));
    expect(described).toMatchObject({
      executionArn,
      stateMachineArn: workflowArn,
      name: 'shapes',
      status: 'SUCCEEDED',
      input,
      startDate: expect.any(Date),
      stopDate: expect.any(Date),
      redriveCount: 0,
    });
    expect((described.stopDate as Date).getTime()).toBeGreaterThanOrEqual(
      (described.startDate as Date).getTime(),
    );
    expect(JSON.parse(described.output as string).result).toEqual({ providerJobId: 'p-2' });

    const succeeded = await sfn.send(
      new ListExecutionsCommand({ stateMachineArn: workflowArn, statusFilter: 'SUCCEEDED', maxResults: 1 }),
    );
    expect(succeeded.executions).toEqual([
      {
        executionArn,
        stateMachineArn: workflowArn,
        name: 'shapes',
        status: 'SUCCEEDED',
        startDate: described.startDate,
        stopDate: described.stopDate,
        redriveCount: 0,
      },
    ]);
    const nextPage = await sfn.send(
      new ListExecutionsCommand({
        stateMachineArn: workflowArn,
        statusFilter: 'SUCCEEDED',
        maxResults: 1,
        nextToken: succeeded.nextToken,
      }),
    );
    expect(nextPage.executions?.map((execution) => execution.name)).toEqual(['slow']);
    const aborted = await sfn.send(
      new ListExecutionsCommand({ stateMachineArn: workflowArn, statusFilter: 'ABORTED' }),
    );
    expect(aborted.executions?.map((execution) => execution.name)).toEqual(['cancelled', 'repeat']);

    const history = await sfn.send(new GetExecutionHistoryCommand({ executionArn }));
    const events = history.events ?? [];
    expect(events.map((event) => event.type)).toEqual([
      'ExecutionStarted',
      'TaskStateEntered',
      'TaskScheduled',
      'TaskStarted',
      'TaskSucceeded',
      'TaskStateExited',
      'TaskStateEntered',
      'TaskScheduled',
      'TaskStarted',
      'TaskSubmitted',
      'TaskSucceeded',
      'TaskStateExited',
      'SucceedStateEntered',
      'SucceedStateExited',
      'ExecutionSucceeded',
    ]);
    expect(events.map((event) => [event.id, event.previousEventId])).toEqual(
      events.map((_event, index) => [index + 1, index]),
    );
    expect(events.every((event) => event.timestamp instanceof Date)).toBe(true);
    expect(events[0]?.executionStartedEventDetails?.input).toBe(input);
    expect(
      events
        .filter((event) => event.stateEnteredEventDetails)
        .map((event) => event.stateEnteredEventDetails?.name),
    ).toEqual(['Prepare', 'Await', 'Done']);
    expect(events[7]?.taskScheduledEventDetails).toMatchObject({
      resourceType: 'lambda',
      resource: 'invoke.waitForTaskToken',
      region: REGION,
      heartbeatInSeconds: 60,
      timeoutInSeconds: 120,
    });
    expect(JSON.parse(events[4]?.taskSucceededEventDetails?.output as string)).toMatchObject({
      Payload: { ready: 'shapes' },
      StatusCode: 200,
      ExecutedVersion: '$LATEST',
    });
    const withoutData = await sfn.send(
      new GetExecutionHistoryCommand({ executionArn, includeExecutionData: false, maxResults: 2 }),
    );
    expect(withoutData.events?.[0]?.executionStartedEventDetails?.input).toBeUndefined();
    expect(withoutData.events?.[1]?.stateEnteredEventDetails).toEqual({
      name: 'Prepare',
      inputDetails: { truncated: false },
    });
    expect(withoutData.nextToken).toEqual(expect.any(String));

    const machine = await sfn.send(new DescribeStateMachineCommand({ stateMachineArn: workflowArn }));
    expect(machine).toMatchObject({
      name: WORKFLOW,
      status: 'ACTIVE',
      type: 'STANDARD',
      stateMachineArn: workflowArn,
    });
    expect(JSON.parse(machine.definition as string)).toEqual(fixture('workflow.asl.json'));
  });

  test('RedriveExecution goes on from the failed state with the input it had, under the same ARN, without rerunning what succeeded', async () => {
    const { executionArn = '' } = await sfn.send(
      new StartExecutionCommand({
        stateMachineArn: emulator.stateMachineArn(REDRIVE),
        name: 'redrive',
        input: JSON.stringify({ job: 'redrive' }),
      }),
    );
    await sfn.send(
      new SendTaskFailureCommand({
        taskToken: await tokenFor(functions, 'redrive'),
        error: 'Boom',
        cause: 'not caught by Await',
      }),
    );
    const failed = await closed(sfn, executionArn);
    expect(failed).toMatchObject({
      status: 'FAILED',
      error: 'Boom',
      redriveCount: 0,
      redriveStatus: 'REDRIVABLE',
    });

    const redriven = await sfn.send(new RedriveExecutionCommand({ executionArn, clientToken: 'resume-1' }));
    // The same client token again is the same redrive, not a second one.
    const repeated = await sfn.send(new RedriveExecutionCommand({ executionArn, clientToken: 'resume-1' }));
    expect(repeated.redriveDate).toEqual(redriven.redriveDate);
    const running = await sfn.send(new DescribeExecutionCommand({ executionArn }));
    expect(running).toMatchObject({
      status: 'RUNNING',
      redriveCount: 1,
      redriveDate: redriven.redriveDate,
      redriveStatus: 'NOT_REDRIVABLE',
    });
    expect(running.stopDate).toBeUndefined();
    expect(running.error).toBeUndefined();
    await expect(sfn.send(new RedriveExecutionCommand({ executionArn }))).rejects.toBeInstanceOf(
      ExecutionNotRedrivable,
    );

    const token = await tokenFor(functions, 'redrive', 2);
    await sfn.send(new SendTaskSuccessCommand({ taskToken: token, output: '{"done":true}' }));
    const succeeded = await closed(sfn, executionArn);

    expect(succeeded.status).toBe('SUCCEEDED');
    // Prepare's result from before the redrive is still in the state's input; Prepare did not run again.
    expect(JSON.parse(succeeded.output as string)).toMatchObject({
      job: 'redrive',
      prepare: { prepared: { ready: 'redrive' } },
      result: { done: true },
    });
    expect(functions.callsTo(PREPARE, 'redrive')).toHaveLength(1);
    expect(functions.callsTo(SUBMIT, 'redrive').map((call) => call.redriveCount)).toEqual([0, 1]);
    const { events = [] } = await sfn.send(
      new GetExecutionHistoryCommand({ executionArn, maxResults: 1000 }),
    );
    const types = events.map((event) => event.type);
    expect(types.filter((type) => type === 'ExecutionRedriven')).toHaveLength(1);
    const afterRedrive = events.slice(types.indexOf('ExecutionRedriven'));
    expect(afterRedrive[0]?.executionRedrivenEventDetails).toEqual({ redriveCount: 1 });
    expect(
      afterRedrive
        .filter((event) => event.stateEnteredEventDetails)
        .map((e) => e.stateEnteredEventDetails?.name),
    ).toEqual(['Await', 'Done']);
    await expect(sfn.send(new RedriveExecutionCommand({ executionArn }))).rejects.toBeInstanceOf(
      ExecutionNotRedrivable,
    );
    await expect(
      sfn.send(
        new RedriveExecutionCommand({
          executionArn: `arn:aws:states:${REGION}:000000000000:execution:${REDRIVE}:never-started`,
        }),
      ),
    ).rejects.toBeInstanceOf(ExecutionDoesNotExist);
  });

  test('requests the service would refuse fail with its typed errors', async () => {
    const unknownExecution = `arn:aws:states:${REGION}:000000000000:execution:${WORKFLOW}:never-started`;
    await expect(
      sfn.send(new DescribeExecutionCommand({ executionArn: unknownExecution })),
    ).rejects.toBeInstanceOf(ExecutionDoesNotExist);
    await expect(
      sfn.send(new DescribeExecutionCommand({ executionArn: 'not-an-arn' })),
    ).rejects.toBeInstanceOf(InvalidArn);
    await expect(
      sfn.send(
        new StartExecutionCommand({
          stateMachineArn: `arn:aws:states:${REGION}:000000000000:stateMachine:missing`,
        }),
      ),
    ).rejects.toBeInstanceOf(StateMachineDoesNotExist);
    await expect(
      sfn.send(new StartExecutionCommand({ stateMachineArn: workflowArn, name: 'has space' })),
    ).rejects.toBeInstanceOf(InvalidName);
    await expect(
      sfn.send(new StartExecutionCommand({ stateMachineArn: workflowArn, name: 'bad-input', input: '{' })),
    ).rejects.toBeInstanceOf(InvalidExecutionInput);
    await expect(
      sfn.send(new SendTaskSuccessCommand({ taskToken: 'not-a-token', output: '{}' })),
    ).rejects.toBeInstanceOf(InvalidToken);
    const { executionArn } = await sfn.send(
      new StartExecutionCommand({ stateMachineArn: workflowArn, input: jobInput('unnamed') }),
    );
    expect(executionArn).toMatch(new RegExp(`:execution:${WORKFLOW}:[0-9a-f-]{36}$`));
    await sfn.send(new StopExecutionCommand({ executionArn }));
  });
});

describe('local Step Functions API throttling', () => {
  test('each action has its documented bucket, refilled at its documented rate, in the Region’s figures', () => {
    let now = 0;
    const throttle = new ApiThrottle('us-east-1', () => now);
    const admitted = (action: string, times: number) => {
      let count = 0;
      for (; count < times; count++) {
        try {
          throttle.admit(action);
        } catch (error) {
          expect(error).toMatchObject({ type: 'ThrottlingException', message: 'Rate exceeded' });
          break;
        }
      }
      return count;
    };
    expect(admitted('GetExecutionHistory', 1000)).toBe(400);
    now += 50; // 20 a second: one more
    expect(admitted('GetExecutionHistory', 10)).toBe(1);
    expect(admitted('DescribeExecution', 1000)).toBe(300);
    expect(admitted('StartExecution', 5000)).toBe(1300);
    expect(admitted('SendTaskSuccess', 5000)).toBe(3000);
    // Not among the documented quotas: never throttled.
    expect(admitted('RedriveExecution', 5000)).toBe(5000);
    expect(apiQuotas('ap-southeast-2').StartExecution).toEqual({ bucket: 800, refillPerSecond: 150 });
    expect(apiQuotas('ap-southeast-2').DescribeExecution).toEqual({ bucket: 250, refillPerSecond: 10 });
  });

  test('the endpoint answers ThrottlingException past a bucket, which the SDK’s retries ride out', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'longhaul-sfn-throttle-'));
    const emulator = await startLocalStepFunctions({
      dataDir,
      stateMachines: [
        { name: WORKFLOW, definition: fixture('workflow.asl.json'), invokeLambda: async () => ({}) },
      ],
    });
    const once = new SFNClient({
      region: REGION,
      endpoint: emulator.endpoint,
      credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
      maxAttempts: 1,
    });
    const retrying = client(emulator.endpoint);
    try {
      const { executionArn } = await once.send(
        new StartExecutionCommand({
          stateMachineArn: emulator.stateMachineArn(WORKFLOW),
          input: jobInput('t'),
        }),
      );
      const started = Date.now();
      let answered = 0;
      let refusal: unknown;
      while (refusal === undefined && answered < 2000) {
        try {
          await once.send(new GetExecutionHistoryCommand({ executionArn }));
          answered++;
        } catch (error) {
          refusal = error;
        }
      }
      const seconds = (Date.now() - started) / 1000;
      expect(refusal).toMatchObject({ name: 'ThrottlingException', $metadata: { httpStatusCode: 400 } });
      // The bucket's 400, and what refilled at 20 a second while they were read.
      expect(answered).toBeGreaterThanOrEqual(400);
      expect(answered).toBeLessThanOrEqual(400 + Math.ceil(20 * seconds) + 1);
      await expect(retrying.send(new GetExecutionHistoryCommand({ executionArn }))).resolves.toMatchObject({
        events: expect.any(Array),
      });
    } finally {
      once.destroy();
      retrying.destroy();
      await emulator.close();
      rmSync(dataDir, { recursive: true, force: true });
    }
  }, 30_000);
});

describe('local Step Functions endpoint across restarts', () => {
  const functions = new FakeFunctions();
  // Every emulator started, so a failing test still closes them all (close() is idempotent).
  const emulators: LocalStepFunctions[] = [];
  let dataDir: string;

  const startEmulator = async (resumeRunning?: boolean) => {
    const emulator = await startLocalStepFunctions({
      dataDir,
      ...(resumeRunning === undefined ? {} : { resumeRunning }),
      stateMachines: [
        { name: WORKFLOW, definition: fixture('workflow.asl.json'), invokeLambda: functions.invoke },
        { name: REDRIVE, definition: fixture('redrive.asl.json'), invokeLambda: functions.invoke },
      ],
    });
    emulators.push(emulator);
    return { emulator, sfn: client(emulator.endpoint) };
  };

  beforeAll(() => {
    dataDir = mkdtempSync(join(tmpdir(), 'longhaul-sfn-restart-'));
  });

  afterAll(async () => {
    await Promise.all(emulators.map((emulator) => emulator.close()));
    rmSync(dataDir, { recursive: true, force: true });
  });

  test('an execution left running is restarted from the beginning under the same ARN and can then complete', async () => {
    const first = await startEmulator();
    const workflowArn = first.emulator.stateMachineArn(WORKFLOW);
    const done = await first.sfn.send(
      new StartExecutionCommand({
        stateMachineArn: workflowArn,
        name: 'done-before',
        input: jobInput('done-before'),
      }),
    );
    await first.sfn.send(
      new SendTaskSuccessCommand({ taskToken: await tokenFor(functions, 'done-before'), output: '{}' }),
    );
    await closed(first.sfn, done.executionArn as string);
    const started = await first.sfn.send(
      new StartExecutionCommand({
        stateMachineArn: workflowArn,
        name: 'resume-me',
        input: jobInput('resume-me'),
      }),
    );
    const staleToken = await tokenFor(functions, 'resume-me');
    first.sfn.destroy();
    await first.emulator.close();

    // Without resumeRunning the execution stays as the crash left it.
    const idle = await startEmulator(false);
    expect(
      (await idle.sfn.send(new DescribeExecutionCommand({ executionArn: started.executionArn }))).status,
    ).toBe('RUNNING');
    expect(functions.callsTo(SUBMIT, 'resume-me')).toHaveLength(1);
    idle.sfn.destroy();
    await idle.emulator.close();

    const second = await startEmulator();
    const freshToken = await tokenFor(functions, 'resume-me', 2);
    expect(freshToken).not.toBe(staleToken);
    expect(functions.callsTo(PREPARE, 'resume-me')).toHaveLength(2);
    await expect(
      second.sfn.send(new SendTaskSuccessCommand({ taskToken: staleToken, output: '{}' })),
    ).rejects.toBeInstanceOf(TaskTimedOut);
    await second.sfn.send(
      new SendTaskSuccessCommand({ taskToken: freshToken, output: '{"providerJobId":"p-3"}' }),
    );
    const execution = await closed(second.sfn, started.executionArn as string);

    expect(execution).toMatchObject({
      executionArn: started.executionArn,
      status: 'SUCCEEDED',
      startDate: started.startDate,
      redriveCount: 1,
      redriveDate: expect.any(Date),
    });
    expect(JSON.parse(execution.output as string).result).toEqual({ providerJobId: 'p-3' });
    const history = await second.sfn.send(
      new GetExecutionHistoryCommand({ executionArn: started.executionArn }),
    );
    const types = history.events?.map((event) => event.type) ?? [];
    expect(types.filter((type) => type === 'ExecutionStarted' || type === 'ExecutionRedriven')).toEqual([
      'ExecutionStarted',
      'ExecutionRedriven',
    ]);
    expect(types.at(-1)).toBe('ExecutionSucceeded');
    expect(
      (await second.sfn.send(new DescribeExecutionCommand({ executionArn: done.executionArn }))).status,
    ).toBe('SUCCEEDED');
    second.sfn.destroy();
  });

  test('a redriven execution left running goes on, after the restart, from where its redrive went on from', async () => {
    const first = await startEmulator();
    const { executionArn = '' } = await first.sfn.send(
      new StartExecutionCommand({
        stateMachineArn: first.emulator.stateMachineArn(REDRIVE),
        name: 'redriven-then-crashed',
        input: JSON.stringify({ job: 'redriven-then-crashed' }),
      }),
    );
    await first.sfn.send(
      new SendTaskFailureCommand({
        taskToken: await tokenFor(functions, 'redriven-then-crashed'),
        error: 'Boom',
      }),
    );
    await closed(first.sfn, executionArn);
    await first.sfn.send(new RedriveExecutionCommand({ executionArn, clientToken: 'resume-1' }));
    await tokenFor(functions, 'redriven-then-crashed', 2);
    first.sfn.destroy();
    await first.emulator.close();

    const second = await startEmulator();
    const token = await tokenFor(functions, 'redriven-then-crashed', 3);
    await second.sfn.send(new SendTaskSuccessCommand({ taskToken: token, output: '{}' }));
    const execution = await closed(second.sfn, executionArn);

    expect(execution).toMatchObject({ status: 'SUCCEEDED', redriveCount: 2 });
    expect(JSON.parse(execution.output as string).prepare).toEqual({
      prepared: { ready: 'redriven-then-crashed' },
    });
    // Prepare ran once, before the failure: neither the redrive nor the restart ran it again.
    expect(functions.callsTo(PREPARE, 'redriven-then-crashed')).toHaveLength(1);
    second.sfn.destroy();
  });
});
