import type { Context } from 'aws-lambda';
import type { WorkflowDeps } from '../../lambdas/domain/workflow';

/**
 * The steps function's handler: what the state machine sends reaches the
 * steps as it was sent, or the step fails loudly. The steps themselves are
 * tested through `runStep` (workflow.test.ts); here only the handler's
 * parsing, with the payloads the synthesized state machine sends, and the
 * log lines it writes of what the steps observe.
 */

// Powertools writes info lines to stdout, warnings and errors to stderr, as Node's console does.
const out: string[] = [];
const capture = (chunk: string | Uint8Array) => {
  out.push(String(chunk));
  return true;
};
const writes = [
  jest.spyOn(process.stdout, 'write').mockImplementation(capture),
  jest.spyOn(process.stderr, 'write').mockImplementation(capture),
];

Object.assign(process.env, {
  PROVIDER_EVENTS_URL: 'https://provider-events.example.com/',
  JOB_TABLE_NAME: 'jobs',
  CONNECTION_TABLE_NAME: 'connections',
  STREAM_CALLBACK_URL: 'https://ws.example/live',
  INPUT_BUCKET_NAME: 'inputs',
  OUTPUT_BUCKET_NAME: 'outputs',
  HAND_OFF_QUEUE_URL: 'https://sqs.us-east-1.amazonaws.com/000000000000/hand-off',
  WEBHOOK_SECRET_ARN: 'arn:aws:secretsmanager:us-east-1:000000000000:secret:webhook',
  VECTOR_BUCKET_NAME: 'vectors',
  VECTOR_INDEX_NAME: 'passages',
  EVENT_BUS_NAME: 'longhaul',
  AWS_REGION: 'us-east-1',
  // The level every function logs at in AWS and locally (lib/constructs/project-function.ts).
  POWERTOOLS_LOG_LEVEL: 'INFO',
  POWERTOOLS_TRACE_ENABLED: 'false',
  POWERTOOLS_METRICS_DISABLED: 'true',
});

const runStep = jest.fn(async (_deps: WorkflowDeps, _event: unknown): Promise<unknown> => null);
jest.mock('../../lambdas/domain/workflow', () => ({
  ...jest.requireActual('../../lambdas/domain/workflow'),
  runStep: (...args: unknown[]) => runStep(...(args as [WorkflowDeps, unknown])),
}));

const { handler } =
  require('../../lambdas/workflow/handler') as typeof import('../../lambdas/workflow/handler');

const context = { functionName: 'longhaul-workflow', awsRequestId: 'aws-req-1' } as Context;

afterAll(() => {
  for (const write of writes) write.mockRestore();
});
beforeEach(() => {
  runStep.mockClear();
  out.length = 0;
});

/** The log records the handler wrote, each as Powertools writes it: one JSON document a line. */
const records = () =>
  out
    .join('')
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => JSON.parse(line) as Record<string, unknown>)
    .filter((record) => typeof record.level === 'string');

describe('steps handler', () => {
  it('hands park the state that failed, so a resume that goes back to it can take its slot back', async () => {
    // As the `failed` Task sends it: `failedAt` was put at `$.failedAt` by the `failed-at-submit` Pass.
    const payload = {
      step: 'park',
      jobId: 'job_01',
      retryCount: 0,
      executionName: 'job_01-abc',
      failedAt: 'submit',
    };

    await handler(payload, context);

    expect(runStep).toHaveBeenCalledTimes(1);
    expect(runStep).toHaveBeenCalledWith(expect.anything(), payload);
  });

  it('fails a step whose payload carries a key it does not know, rather than dropping it', async () => {
    await expect(
      handler({ step: 'park', jobId: 'job_01', retryCount: 0, failedAtState: 'submit' }, context),
    ).rejects.toThrow(/failedAtState/);
    expect(runStep).not.toHaveBeenCalled();
  });
});

describe('what the steps function logs at its default level', () => {
  it('writes one line for each throttle answer, each pause and each failed or reviewed job: provider, until and why', async () => {
    runStep.mockImplementationOnce(async (deps) => {
      deps.observe?.({
        kind: 'throttled',
        provider: 'bedrock',
        asked: 'submit',
        reason: 'bedrock answered ThrottlingException (429) to call 3; the 2 answered before it are kept.',
      });
      deps.observe?.({
        kind: 'paused',
        provider: 'bedrock',
        until: '2026-05-01T10:00:07.000Z',
        reason: 'bedrock answered ThrottlingException (429) to call 3; the 2 answered before it are kept.',
        started: true,
      });
      deps.observe?.({
        kind: 'throttled',
        provider: 'replicate',
        asked: 'status',
        reason: 'replicate answered 503.',
        retryAfterSeconds: 30,
      });
      deps.observe?.({
        kind: 'paused',
        provider: 'replicate',
        until: '2026-05-01T10:05:00.000Z',
        reason: 'replicate answered 503.',
        started: false,
      });
      deps.observe?.({
        kind: 'finished',
        jobType: 'image.generate',
        status: 'failed',
        error: { code: 'provider_rejected_400', message: 'replicate refused the submission (400).' },
      });
      deps.observe?.({
        kind: 'finished',
        jobType: 'audio.transcribe',
        status: 'needs_review',
        error: { code: 'ambiguous_submission', message: 'deepgram submission outcome unknown.' },
      });
      deps.observe?.({ kind: 'finished', jobType: 'image.generate', status: 'succeeded', durationMs: 900 });
      return null;
    });

    await handler({ step: 'submit', jobId: 'job_01', retryCount: 0, executionName: 'job_01-abc' }, context);

    const shown = ['provider', 'asked', 'until', 'reason', 'retryAfterSeconds', 'jobType', 'code'];
    const lines = records().map((record) => ({
      level: record.level,
      message: record.message,
      jobId: record.jobId,
      step: record.step,
      ...Object.fromEntries(shown.filter((key) => key in record).map((key) => [key, record[key]])),
    }));
    const job = { jobId: 'job_01', step: 'submit' };
    expect(lines).toEqual([
      {
        level: 'WARN',
        message: 'provider throttled',
        ...job,
        provider: 'bedrock',
        asked: 'submit',
        reason: 'bedrock answered ThrottlingException (429) to call 3; the 2 answered before it are kept.',
      },
      {
        level: 'WARN',
        message: 'provider paused',
        ...job,
        provider: 'bedrock',
        until: '2026-05-01T10:00:07.000Z',
        reason: 'bedrock answered ThrottlingException (429) to call 3; the 2 answered before it are kept.',
      },
      {
        level: 'WARN',
        message: 'provider throttled',
        ...job,
        provider: 'replicate',
        asked: 'status',
        reason: 'replicate answered 503.',
        retryAfterSeconds: 30,
      },
      {
        level: 'WARN',
        message: 'provider already paused',
        ...job,
        provider: 'replicate',
        until: '2026-05-01T10:05:00.000Z',
        reason: 'replicate answered 503.',
      },
      {
        level: 'ERROR',
        message: 'job failed',
        ...job,
        jobType: 'image.generate',
        code: 'provider_rejected_400',
        reason: 'replicate refused the submission (400).',
      },
      {
        level: 'WARN',
        message: 'job needs review',
        ...job,
        jobType: 'audio.transcribe',
        code: 'ambiguous_submission',
        reason: 'deepgram submission outcome unknown.',
      },
    ]);
  });
});
