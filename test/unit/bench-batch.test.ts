import { acceptanceRun, batchSizes, intakeRequests } from '../../bench/sections/batch';
import { requestsOf } from '../../bench/summary';
import type { Measured } from '../../bench/support/stack';

/** The batch section's arithmetic: jobs per second, the requests a batch made, and its size from env. */

test('a run accepts its jobs over its elapsed time, with the answer times of its requests', () => {
  const answers = [900, 1100, 1000, 4000, 1000].map((ms) => ({ status: 200, ms }));

  expect(acceptanceRun(5000, 1, 8000, answers)).toEqual({
    jobs: 5000,
    requests: 5,
    clients: 1,
    seconds: 8,
    jobsPerS: 625,
    answerP50Ms: 1000,
    answerMaxMs: 4000,
    serverErrors: 0,
  });
});

test('a request answered 5xx and sent again counts as a request and a server error', () => {
  const answers = [
    { status: 502, ms: 15_012 },
    { status: 200, ms: 6_000 },
  ];

  expect(acceptanceRun(1000, 1, 21_500, answers)).toMatchObject({
    requests: 2,
    jobsPerS: 47,
    answerMaxMs: 15_012,
    serverErrors: 1,
  });
});

test('a run that sent no request is an error, not infinitely fast', () => {
  expect(() => acceptanceRun(0, 1, 10, [])).toThrow('a run with no requests accepted nothing');
});

test("a batch's requests are its DynamoDB and SQS calls, less the event source's polling", () => {
  const measured: Measured = {
    requests: {
      'dynamodb:BatchGetItem': 10,
      'dynamodb:PutItem': 1000,
      'dynamodb:UpdateItem': 1001,
      'sqs:ReceiveMessage': 37,
      'sqs:SendMessageBatch': 100,
      'states:StartExecution': 1,
    },
    dynamodb: {},
    lambda: {},
    restApiRequests: 1,
  };

  const requests = intakeRequests(measured);

  expect(requests).toEqual({
    'dynamodb:BatchGetItem': 10,
    'dynamodb:PutItem': 1000,
    'dynamodb:UpdateItem': 1001,
    'sqs:SendMessageBatch': 100,
  });
  expect(requestsOf(requests, 'dynamodb')).toBe('2011 (BatchGetItem 10, PutItem 1000, UpdateItem 1001)');
  expect(requestsOf(requests, 'sqs')).toBe('100 (SendMessageBatch 100)');
});

test('the section submits 5,000 jobs in batches and 2,000 one at a time unless the environment says otherwise', () => {
  expect(batchSizes({})).toEqual({ batched: 3000, single: 1000 });
  expect(batchSizes({ BENCH_BATCH_JOBS: '2000', BENCH_BATCH_SINGLE_JOBS: '300' })).toEqual({
    batched: 2000,
    single: 300,
  });
  expect(() => batchSizes({ BENCH_BATCH_JOBS: '1500' })).toThrow(
    'BENCH_BATCH_JOBS must be a multiple of 1000, got 1500',
  );
  expect(() => batchSizes({ BENCH_BATCH_SINGLE_JOBS: '0' })).toThrow(
    'BENCH_BATCH_SINGLE_JOBS must be a whole number above 0, got 0',
  );
});
