import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  fixedMonthlyCost,
  itemBytes,
  jobCost,
  queriedBytes,
  s3VectorsQueryCost,
  searchCostPerHour,
  storedBytes,
} from '../../bench/cost';
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

describe('search: embedding tokens and S3 Vectors at list prices', () => {
  const KB = 1024;
  const TB = 1024 ** 4;

  test("reproduces the S3 pricing page's S3 Vectors example 1: 1M queries on indexes of 250,000 vectors", () => {
    // 4 KB of vector data, 1 KB of filterable and 1 KB of non-filterable metadata, a 0.17 KB key.
    const vector = {
      dimensions: 1024,
      keyBytes: 0.17 * KB,
      filterableMetadataBytes: KB,
      nonFilterableMetadataBytes: KB,
    };
    expect(storedBytes(vector)).toBeCloseTo(6.17 * KB, 9);
    expect(queriedBytes(vector)).toBeCloseTo(5.17 * KB, 9);

    const cost = s3VectorsQueryCost(250_000, queriedBytes(vector), 1_000_000);

    // The page: tier 1 $1.93, tier 2 $1.44, requests $2.50, total $5.87.
    expect(cost.processedUsd).toBeCloseTo(1.93 + 1.44, 2);
    expect(cost.requestsUsd).toBeCloseTo(2.5, 9);
    expect(cost.usd).toBeCloseTo(5.87, 2);
    expect(cost.processedTb).toBeCloseTo((250_000 * 5.17 * KB * 1_000_000) / TB, 6);
  });

  test("reproduces example 2's query charges: 10M queries on indexes of 10 million vectors", () => {
    const cost = s3VectorsQueryCost(10_000_000, 5.17 * KB, 10_000_000);

    // The page: tier 1 $19.26, tier 2 $953.36, requests $25.00, total $997.62.
    expect(cost.processedUsd).toBeCloseTo(19.26 + 953.36, 1);
    expect(cost.usd).toBeCloseTo(997.62, 1);
  });

  test('an index past 10 million vectors is refused: its cheaper tier is not recorded', () => {
    expect(() => s3VectorsQueryCost(10_000_001, 4096, 1)).toThrow(
      'an index of 10000001 vectors is past 10000000, whose query price bench/prices.ts does not record',
    );
  });

  test('an hour: tokens from characters, vectors from passages, queries over the whole index', () => {
    const cost = searchCostPerHour({
      wordsPerHour: 9000,
      passageSeconds: 40,
      charsPerWord: 5,
      charsPerToken: { titan: 5, cohere: 4 },
      vector: {
        dimensions: 1024,
        keyBytes: 34,
        filterableMetadataBytes: 128,
        nonFilterableMetadataBytes: 600,
      },
      indexHours: 1000,
      queries: 1000,
      queryChars: 50,
    });
    const hourGb = (90 * (4096 + 34 + 128 + 600)) / 1024 ** 3;
    const processedTb = (90_000 * (4096 + 34 + 128) * 1000) / TB;

    expect(cost.passagesPerHour).toBe(90);
    expect(cost.tokensPerHour).toEqual({ titan: 9000, cohere: 11_250 });
    expect(cost.embedTitanUsd).toBeCloseTo(9000 * prices.bedrockTitanTextEmbeddingsV2PerInputToken.usd, 12);
    expect(cost.embedTitanUsd).toBeCloseTo(0.00018, 12);
    expect(cost.embedCohereUsd).toBeCloseTo(0.001125, 12);
    expect(cost.putUsd).toBeCloseTo(hourGb * prices.s3VectorsPutPerGb.usd, 15);
    expect(cost.storageUsdPerMonth).toBeCloseTo(hourGb * prices.s3VectorsStoragePerGbMonth.usd, 15);
    expect(cost.indexVectors).toBe(90_000);
    // 90,000 vectors: all in the first tier.
    expect(cost.queries.processedTb).toBeCloseTo(processedTb, 12);
    expect(cost.queries.processedUsd).toBeCloseTo(processedTb * 0.004, 12);
    expect(cost.queries.requestsUsd).toBeCloseTo(0.0025, 12);
    expect(cost.queries.embedUsd).toBeCloseTo(
      10_000 * prices.bedrockTitanTextEmbeddingsV2PerInputToken.usd,
      12,
    );
    expect(cost.queries.totalUsd).toBeCloseTo(0.0025 + processedTb * 0.004 + 0.0002, 12);
    expect(cost.lines.map((line) => line.usd).reduce((a, b) => a + b, 0)).toBeCloseTo(
      cost.embedTitanUsd +
        cost.embedCohereUsd +
        cost.putUsd +
        cost.storageUsdPerMonth +
        cost.queries.totalUsd,
      12,
    );
  });

  test('an index past 100 thousand vectors pays the second tier for the rest', () => {
    const cost = s3VectorsQueryCost(150_000, 4096, 1000);

    expect(cost.processedUsd).toBeCloseTo(
      ((100_000 * 4096 * 1000) / TB) * 0.004 + ((50_000 * 4096 * 1000) / TB) * 0.002,
      12,
    );
  });
});

describe('the summary sets search quality beside its keyword peer', () => {
  const base = {
    command: 'npm run bench -- search',
    machine: { cores: 2, cpu: 'cpu', memoryGiB: 24, node: 'v24', os: 'Linux' },
    startedAt: '2026-12-06T00:00:00.000Z',
    durationS: 40,
  };
  const quality = (recallAt5: number, mrr: number) => ({ recallAt5, mrr });

  it('puts recall@5 and MRR on the side that did better, the peer being MiniSearch', () => {
    const search = { quality: { embedder: quality(0.814, 0.738), bm25: quality(0.86, 0.738) } };

    const { peer, longhaul } = verdicts({ ...base, search } as any);

    expect(peer).toEqual([
      'search recall@5 on the labelled set: 81.4 % (the local embedder) vs 86.0 % (MiniSearch BM25+)',
    ]);
    expect(longhaul).toEqual([]);
  });
});
