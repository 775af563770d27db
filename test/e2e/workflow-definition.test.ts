import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  DescribeExecutionCommand,
  RedriveExecutionCommand,
  SendTaskFailureCommand,
  SendTaskSuccessCommand,
  SFNClient,
  StartExecutionCommand,
} from '@aws-sdk/client-sfn';
import { loadSettings } from '../../config/settings';
import { synthesizeWorkflowDefinition } from '../../lib/workflow-definition';
import { pollUntil } from '../../local/harness/local-stack';
import { type LocalStepFunctions, startLocalStepFunctions } from '../../local/stepfunctions';

/**
 * The state machine CDK synthesizes, run directly with scripted steps: each
 * scenario makes the steps fail the way the real ones can and checks which
 * path the definition takes (retries, catches, the review and settle paths).
 */

jest.setTimeout(60_000);

interface StepCall {
  readonly step: string;
  readonly jobId: string;
  readonly retryCount?: number;
  readonly taskToken?: string;
  readonly error?: { Error: string; Cause?: string };
  readonly failedAt?: string;
}

/** How often Lambda throttles each step before running it (each throttle waits up to 1, then 2 seconds). */
const THROTTLES_PER_STEP = 2;

const namedError = (name: string, message = name) => Object.assign(new Error(message), { name });

/** What a step does, per scenario (the job id names the scenario). */
type Script = (call: StepCall, calls: readonly StepCall[]) => Promise<unknown>;
const scripts: Record<string, Script> = {};
const calls: StepCall[] = [];
/** Jobs resumed by their client: their park step lets the execution go on, as it does for a running job. */
const resumed = new Set<string>();

let sfn: LocalStepFunctions;
let client: SFNClient;
let stateMachineArn: string;
let dataDir: string;

beforeAll(async () => {
  dataDir = mkdtempSync(join(tmpdir(), 'longhaul-definition-'));
  // Nearly the shortest allowed job timeout and heartbeat, so the timeout path takes seconds.
  const settings = loadSettings({ JOB_TIMEOUT_MS: '11000', AWAIT_HEARTBEAT_SECONDS: '10' });
  sfn = await startLocalStepFunctions({
    dataDir,
    stateMachines: [
      {
        name: 'longhaul-jobs',
        definition: synthesizeWorkflowDefinition(
          settings,
          'arn:aws:lambda:us-east-1:000000000000:function:steps',
        ),
        invokeLambda: async (_name, payload) => {
          const call = payload as StepCall;
          calls.push(call);
          // Where a failed job's execution fails, until the job is resumed.
          if (call.step === 'park' && !resumed.has(call.jobId))
            throw namedError('JobFailed', 'The job failed.');
          const script = scripts[call.jobId];
          if (!script) throw new Error(`no script for ${call.jobId}`);
          const answer = await script(
            call,
            calls.filter((c) => c.jobId === call.jobId),
          );
          // prepare answers how the job runs, which the route after it reads: one submission here.
          return call.step === 'prepare' && answer === null ? { flow: 'submission' } : answer;
        },
      },
    ],
  });
  stateMachineArn = sfn.stateMachineArn('longhaul-jobs');
  client = new SFNClient({
    region: 'us-east-1',
    endpoint: sfn.endpoint,
    credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
  });
});

afterAll(async () => {
  await sfn?.close();
  rmSync(dataDir, { recursive: true, force: true });
});

/** Runs one execution for `jobId` to its end; returns its status, error and the steps it called in order. */
async function run(jobId: string, script: Script) {
  scripts[jobId] = script;
  const { executionArn } = await client.send(
    new StartExecutionCommand({ stateMachineArn, name: jobId, input: JSON.stringify({ jobId }) }),
  );
  const done = await pollUntil(
    async () => {
      const execution = await client.send(new DescribeExecutionCommand({ executionArn }));
      return execution.status === 'RUNNING' ? undefined : execution;
    },
    { timeoutMs: 45_000, intervalMs: 100, description: `execution ${jobId} to end` },
  );
  const steps = calls.filter((c) => c.jobId === jobId);
  return { status: done.status, error: done.error, steps: steps.map((c) => c.step), calls: steps };
}

/** The await step's stand-in: hands the token to `resume` soon after storing it, as a webhook would. */
const resumeWith = (resume: (token: string) => Promise<unknown>) => (call: StepCall) => {
  if (call.step === 'await' && call.taskToken) setTimeout(() => void resume(call.taskToken as string), 50);
  return Promise.resolve(null);
};

const succeed = (token: string) =>
  client.send(new SendTaskSuccessCommand({ taskToken: token, output: '{"providerStatus":"succeeded"}' }));

describe('the synthesized workflow', () => {
  it('runs the steps in order on the happy path, releasing the slot before finalize and notify', async () => {
    const result = await run('job_happy', resumeWith(succeed));
    expect(result).toMatchObject({ status: 'SUCCEEDED' });
    expect(result.steps).toEqual(['prepare', 'submit', 'await', 'release', 'finalize', 'notify']);
    expect(result.calls.map((c) => c.retryCount)).toEqual([0, 0, 0, 0, 0, 0]);
  });

  it('retries a throttled invocation of every step, so a throttled account never takes the failure path', async () => {
    const invoked: Record<string, number> = {};
    const result = await run('job_throttled', async (call) => {
      // Lambda refused the invocation: the step never ran, as with a small concurrency quota.
      const invocations = (invoked[call.step] ?? 0) + 1;
      invoked[call.step] = invocations;
      if (invocations <= THROTTLES_PER_STEP) {
        throw namedError('Lambda.TooManyRequestsException', 'Rate Exceeded.');
      }
      return resumeWith(succeed)(call);
    });
    expect(result.status).toBe('SUCCEEDED');
    const ran = result.calls.filter((c) => c.retryCount === THROTTLES_PER_STEP).map((c) => c.step);
    expect(ran).toEqual(['prepare', 'submit', 'await', 'release', 'finalize', 'notify']);
    expect(result.calls).toHaveLength(ran.length * (THROTTLES_PER_STEP + 1));
  });

  it('ends the run, the job back in its line, when submit found the provider throttling or down', async () => {
    const result = await run('job_unavailable', async (call) => {
      // The step paused the provider and put the job back in its line: the next grant starts a new run.
      if (call.step === 'submit') throw namedError('ProviderPaused');
      return resumeWith(succeed)(call);
    });
    expect(result.status).toBe('SUCCEEDED');
    // Neither retried while holding the slot, nor the failure path: nothing else runs.
    expect(result.steps).toEqual(['prepare', 'submit']);
    expect(result.calls.filter((c) => c.step === 'submit').map((c) => c.retryCount)).toEqual([0]);
  });

  it('takes the failure path (record, notify, release) when the provider rejects', async () => {
    const result = await run('job_rejected', async (call) => {
      if (call.step === 'submit') throw namedError('ProviderRejected', '[provider_rejected_400] no');
      return null;
    });
    expect(result).toMatchObject({ status: 'FAILED', error: 'JobFailed' });
    expect(result.steps).toEqual(['prepare', 'submit', 'fail', 'notify', 'release', 'park']);
    const fail = result.calls.find((c) => c.step === 'fail');
    expect(fail?.error?.Error).toBe('ProviderRejected');
    expect(JSON.parse(fail?.error?.Cause ?? '{}')).toMatchObject({
      errorMessage: '[provider_rejected_400] no',
    });
  });

  it('goes back to the failed step, with the input it had, when a resumed job’s execution is redriven', async () => {
    let rejected = false;
    const result = await run('job_resumed', async (call) => {
      if (call.step === 'submit' && !rejected) {
        rejected = true;
        throw namedError('ProviderRejected', '[provider_rejected_400] not now');
      }
      return resumeWith(succeed)(call);
    });
    expect(result).toMatchObject({ status: 'FAILED', error: 'JobFailed' });
    expect(result.steps).toEqual(['prepare', 'submit', 'fail', 'notify', 'release', 'park']);

    resumed.add('job_resumed');
    const executionArn = `${stateMachineArn.replace(':stateMachine:', ':execution:')}:job_resumed`;
    await client.send(new RedriveExecutionCommand({ executionArn, clientToken: 'resume-1' }));
    await pollUntil(
      async () => (await client.send(new DescribeExecutionCommand({ executionArn }))).status === 'SUCCEEDED',
      { timeoutMs: 45_000, intervalMs: 100, description: 'the redriven execution to succeed' },
    );

    const after = calls.filter((c) => c.jobId === 'job_resumed').slice(result.calls.length);
    // prepare is not run again; park takes the slot back for submit, which the failure path released.
    expect(after.map((c) => c.step)).toEqual(['park', 'submit', 'await', 'release', 'finalize', 'notify']);
    expect(after[0]?.failedAt).toBe('submit');
  });

  it('fails through the failure path when the provider job fails', async () => {
    const result = await run(
      'job_provider_failed',
      resumeWith((token) =>
        client.send(
          new SendTaskFailureCommand({
            taskToken: token,
            error: 'ProviderJobFailed',
            cause: '[generation_failed] x',
          }),
        ),
      ),
    );
    expect(result).toMatchObject({ status: 'FAILED', error: 'JobFailed' });
    expect(result.steps).toEqual(['prepare', 'submit', 'await', 'fail', 'notify', 'release', 'park']);
    expect(result.calls.find((c) => c.step === 'fail')?.error).toEqual({
      Error: 'ProviderJobFailed',
      Cause: '[generation_failed] x',
    });
  });

  it('stops for review after an ambiguous submission, without releasing the slot or retrying', async () => {
    const result = await run('job_ambiguous', async (call) => {
      if (call.step === 'submit') throw namedError('NeedsReview', '[ambiguous_submission] unknown');
      return null;
    });
    expect(result).toMatchObject({ status: 'FAILED', error: 'NeedsReview' });
    expect(result.steps).toEqual(['prepare', 'submit', 'review']);
  });

  it('settles a job canceled while it waits: cancel path, notify, release inside settle', async () => {
    const result = await run(
      'job_canceled',
      resumeWith((token) =>
        client.send(
          new SendTaskFailureCommand({
            taskToken: token,
            error: 'JobCanceled',
            cause: '[canceled] by client',
          }),
        ),
      ),
    );
    expect(result).toMatchObject({ status: 'SUCCEEDED' });
    expect(result.steps).toEqual(['prepare', 'submit', 'await', 'settle', 'notify']);
  });

  it('reviews a job whose provider never finishes, once the job timeout has passed', async () => {
    const result = await run('job_stalled', async () => null);
    expect(result).toMatchObject({ status: 'FAILED', error: 'NeedsReview' });
    expect(result.steps).toEqual(['prepare', 'submit', 'await', 'review']);
    expect(['States.Timeout', 'States.HeartbeatTimeout']).toContain(result.calls.at(-1)?.error?.Error);
  });

  it('keeps a finished job finished when its webhook cannot be delivered', async () => {
    const result = await run('job_webhook_refused', async (call) => {
      if (call.step === 'notify') throw namedError('InvalidWebhookTarget');
      return resumeWith(succeed)(call);
    });
    expect(result.status).toBe('SUCCEEDED');
    // An error notify does not know is tried three times more (its bus event or follow-ups may have
    // failed on their way), then caught: the job stays succeeded.
    expect(result.steps).toEqual([
      'prepare',
      'submit',
      'await',
      'release',
      'finalize',
      ...Array.from({ length: 4 }, () => 'notify'),
    ]);
  });
});
