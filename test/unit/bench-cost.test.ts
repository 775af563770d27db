import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fixedMonthlyCost, itemBytes, jobCost } from '../../bench/cost';
import { prices } from '../../bench/prices';
import { keysChargedTwice } from '../../bench/sections/ambiguity';
import { verdicts } from '../../bench/summary';
import { EMULATOR_HOP_HEADER } from '../../local/emulators/dynamodb';

/** The bench's cost model: counted calls times the unit prices, nothing added, nothing dropped. */

const measured = {
  requests: {
    'dynamodb:PutItem': 2,
    'dynamodb:UpdateItem': 5,
    'dynamodb:UpdateItem(progress)': 3, // already among the UpdateItems: not counted twice
    'dynamodb:GetItem': 4,
    'dynamodb:Query': 1,
    'sqs:SendMessage': 1,
    'sqs:DeleteMessageBatch': 1,
    'sqs:ReceiveMessage': 9, // polling: a fixed cost, not a per-job one
    's3:PUT': 1,
    'execute-api:POST': 30,
    'states:SendTaskSuccess': 1, // an API call, not a transition
  },
  dynamodb: {
    reads: 5,
    writes: 7,
    'read-units': 4.5,
    'write-units': 9,
    'index-write-units': 6,
    'index-write-units:jobs/byTenant': 4,
    'index-write-units:jobs/byTenantStatus': 2,
  },
  lambda: {
    'longhaul-api': { invocations: 31, gbSeconds: 0.5 },
    'longhaul-workflow': { invocations: 6, gbSeconds: 0.25 },
    'longhaul-reconcile': { invocations: 1, gbSeconds: 0.1 }, // on its schedule: a fixed cost, not a per-job one
  },
  restApiRequests: 31,
};

test('each line is the counted quantity times its unit price, per 1,000 jobs', () => {
  const cost = jobCost(measured, 7);
  const line = (service: string) => cost.lines.find((l) => l.service === service);

  expect(line('Step Functions state transitions')?.perJob).toBe(7);
  expect(line('Lambda requests')?.perJob).toBe(37);
  expect(line('Lambda duration (GB-s)')?.perJob).toBeCloseTo(0.75, 9);
  expect(line('API Gateway REST requests')?.perJob).toBe(31);
  expect(line('API Gateway WebSocket messages')?.perJob).toBe(30);
  // The table's units and the indexes', as counted; not one unit per request.
  expect(line('DynamoDB write units')?.perJob).toBe(9 + 6);
  expect(line('DynamoDB write units')?.basis).toContain('indexes 6.0 (byTenant 4.0, byTenantStatus 2.0)');
  expect(line('DynamoDB read units')?.perJob).toBe(4.5);
  expect(line('DynamoDB write units')?.usdPerThousandJobs).toBeCloseTo(
    15 * prices.dynamoDbPerWriteRequestUnit.usd * 1000,
    12,
  );
  expect(line('SQS requests')?.perJob).toBe(2);
  expect(line('S3 PUT')?.perJob).toBe(1);

  expect(line('Step Functions state transitions')?.usdPerThousandJobs).toBeCloseTo(
    7 * prices.stepFunctionsStandardPerTransition.usd * 1000,
    12,
  );
  const total = cost.lines.reduce((sum, l) => sum + l.usdPerThousandJobs, 0);
  expect(cost.usdPerThousandJobs).toBeCloseTo(total, 12);
  expect(cost.usdPerThousandJobs).toBeGreaterThan(0);
});

test('the fixed monthly cost counts one reconciler pass per period', () => {
  const fixed = fixedMonthlyCost(60, 20, 512);
  expect(fixed.reconcilerPassesPerMonth).toBe(43_200);
  expect(fixed.reconcilerGbSeconds).toBeCloseTo(43_200 * 0.5 * 0.02, 9);
  expect(fixed.reconcilerUsdPerMonth).toBeGreaterThan(0);
});

test('item size counts attribute names and values', () => {
  expect(itemBytes({ pk: 'abc' })).toBe(5);
  expect(itemBytes({ n: 12345 })).toBe(1 + 4);
  expect(itemBytes({ m: { a: 'xy' } })).toBe(1 + 3 + 1 + 1 + 2);
  expect(itemBytes({ l: ['ab', true] })).toBe(1 + 3 + (1 + 2) + (1 + 1));
});

test('a key charged twice is counted once, whatever the order of the ledger', () => {
  const at = '2026-01-01T00:00:00.000Z';
  const ledger = {
    submissions: [
      { id: 'g1', idempotencyKey: 'a', acceptedAt: at },
      { id: 'g2', idempotencyKey: 'b', acceptedAt: at },
      { id: 'g3', idempotencyKey: 'a', acceptedAt: at },
      { id: 'g4', idempotencyKey: 'a', acceptedAt: at },
    ],
    maxConcurrent: 1,
    running: 0,
  };
  expect(keysChargedTwice(ledger)).toBe(1);
  expect(keysChargedTwice({ ...ledger, submissions: ledger.submissions.slice(0, 2) })).toBe(0);
});

describe('the summary says plainly which side came out ahead', () => {
  const burst = {
    jobs: 500,
    clients: 50,
    limit: 5,
    jobMs: 1000,
    maxInFlight: 5,
    makespanS: 120,
    utilizationPct: 83,
    submitP50Ms: 400,
    submitP99Ms: 700,
    idleP50Ms: 30,
    idleP99Ms: 70,
    deadLetters: 0,
    dispatchesPerJob: 9,
    outcome: { succeeded: 500 },
  };
  const drops = (charges: [number, number]) =>
    [true, false].map((providerIdempotent, i) => ({
      providerIdempotent,
      jobs: 20,
      charges: charges[i] as number,
      jobsChargedTwiceOrMore: (charges[i] as number) - 20,
      outcome: {},
    }));
  const results = {
    command: 'npm run bench',
    machine: { cores: 2, cpu: 'cpu', memoryGiB: 24, node: 'v24', os: 'Linux' },
    startedAt: '2026-11-29T00:00:00.000Z',
    durationS: 380,
    backPressure: burst,
    acceptThenDrop: drops([20, 20]),
    peer: {
      redisVersion: '7.0.15',
      bullmqVersion: '6.7.0',
      progress: {
        jobs: 3,
        ticksPerJob: 200,
        progressWritesPerJob: 200,
        writesPerTick: 1,
        redisWriteCommandsPerJob: 433,
        outcome: {},
      },
      burst: { ...burst, makespanS: 100, utilizationPct: 99, submitP50Ms: 27, idleP50Ms: 1, failedJobs: 0 },
      acceptThenDrop: drops([20, 40]),
      durationS: 130,
    },
  };

  it('lists each measured difference on the side that did better, and ties on neither', () => {
    const { peer, longhaul } = verdicts(results);
    expect(peer).toEqual([
      'makespan of the burst: 120 s (Longhaul) vs 100 s (BullMQ)',
      'provider utilization: 83 % (Longhaul) vs 99 % (BullMQ)',
      'submit latency p50 during the burst: 400 ms (Longhaul) vs 27 ms (BullMQ)',
      'submit latency p50 idle: 30 ms (Longhaul) vs 1 ms (BullMQ)',
    ]);
    expect(longhaul).toEqual([
      'charges for 20 jobs under accept-then-drop, non-deduplicating provider: 20 (Longhaul) vs 40 (BullMQ)',
    ]);
  });

  it('says nothing without the peer', () => {
    expect(verdicts({ ...results, peer: undefined })).toEqual({ peer: [], longhaul: [] });
  });
});

test("the request counter leaves out the local DynamoDB's own hops to dynalite, which the stack never made", () => {
  const counter = readFileSync(join(__dirname, '../../bench/support/request-counter.cjs'), 'utf8');
  expect(counter).toContain(`header(options?.headers, '${EMULATOR_HOP_HEADER}')`);
});
