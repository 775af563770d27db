import type { Context } from 'aws-lambda';
import { lambdaRuntimeEnvironment } from '../../local/handler-env';

/**
 * The local stack runs every function's invocations in one process, and they
 * overlap. Each log line must still name the function and the request that
 * wrote it, and carry only the keys its own invocation appended, as it does
 * in AWS, where every invocation has an execution environment of its own.
 */

const out: string[] = [];
const write = jest.spyOn(process.stdout, 'write').mockImplementation((chunk: string | Uint8Array) => {
  out.push(String(chunk));
  return true;
});
Object.assign(process.env, {
  ...lambdaRuntimeEnvironment,
  POWERTOOLS_SERVICE_NAME: 'Longhaul',
  POWERTOOLS_LOG_LEVEL: 'INFO',
  POWERTOOLS_DEV: 'false',
  POWERTOOLS_METRICS_DISABLED: 'true',
});

// The local Lambda service first: it installs the runtime's invoke store, as the stack does before handlers load.
const { invoke } = require('../../local/lambda') as typeof import('../../local/lambda');
const { instrument, logger } =
  require('../../lambdas/shared/observability') as typeof import('../../lambdas/shared/observability');

afterAll(() => write.mockRestore());

const fn = (service: string) => ({ name: `longhaul-${service}`, service, timeoutMs: 5000, memoryMb: 256 });

/** A gate both invocations wait at, so each logs while the other is in the middle of its own. */
function gate() {
  let open: () => void = () => {};
  const opened = new Promise<void>((resolve) => {
    open = resolve;
  });
  return { open, opened };
}

test('overlapping invocations of two functions each log under their own function, request and keys', async () => {
  // Prepare: the api and the dispatcher each log, wait until the other has started, and log again.
  const apiStarted = gate();
  const dispatchStarted = gate();
  const requests: Record<string, string> = {};
  const handler = (name: string, started: ReturnType<typeof gate>, other: ReturnType<typeof gate>) =>
    instrument(async (event: { jobId: string }, context: Context) => {
      requests[name] = context.awsRequestId;
      logger.appendKeys({ jobId: event.jobId });
      started.open();
      await other.opened;
      logger.info('before yielding', { step: name });
      await new Promise((resolve) => setImmediate(resolve));
      logger.info('after yielding', { step: name });
      return name;
    });

  // Act
  const results = await Promise.all([
    invoke(fn('api'), handler('longhaul-api', apiStarted, dispatchStarted), { jobId: 'job_api' }),
    invoke(fn('dispatch'), handler('longhaul-dispatch', dispatchStarted, apiStarted), {
      jobId: 'job_dispatch',
    }),
  ]);

  // Assess
  expect(results).toEqual(['longhaul-api', 'longhaul-dispatch']);
  const lines = out
    .join('')
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => JSON.parse(line) as Record<string, unknown>)
    .filter((record) => typeof record.step === 'string');
  expect(lines).toHaveLength(4);
  for (const line of lines) {
    const name = line.step as string;
    expect({
      function_name: line.function_name,
      function_request_id: line.function_request_id,
      jobId: line.jobId,
    }).toEqual({
      function_name: name,
      function_request_id: requests[name],
      jobId: name === 'longhaul-api' ? 'job_api' : 'job_dispatch',
    });
  }
});
