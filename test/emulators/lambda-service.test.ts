import { invoke, type LocalFunction } from '../../local/lambda';
import {
  chainDepth,
  LambdaServiceError,
  SYNC_REQUEST_PAYLOAD_BYTES,
  setThrottleFault,
  traceHeaderAt,
} from '../../local/lambda-service';
import { lambdaFunctionError } from '../../local/stepfunctions/tasks';

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
