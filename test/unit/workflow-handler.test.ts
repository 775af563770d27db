import type { Context } from 'aws-lambda';

/**
 * The steps function's handler: what the state machine sends reaches the
 * steps as it was sent, or the step fails loudly. The steps themselves are
 * tested through `runStep` (workflow.test.ts); here only the handler's
 * parsing, with the payloads the synthesized state machine sends.
 */

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
  POWERTOOLS_LOG_LEVEL: 'SILENT',
  POWERTOOLS_TRACE_ENABLED: 'false',
  POWERTOOLS_METRICS_DISABLED: 'true',
});

const runStep = jest.fn(async () => null);
jest.mock('../../lambdas/domain/workflow', () => ({
  ...jest.requireActual('../../lambdas/domain/workflow'),
  runStep: (...args: unknown[]) => runStep(...(args as [])),
}));

const { handler } =
  require('../../lambdas/workflow/handler') as typeof import('../../lambdas/workflow/handler');

const context = { functionName: 'longhaul-workflow', awsRequestId: 'aws-req-1' } as Context;

beforeEach(() => runStep.mockClear());

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
