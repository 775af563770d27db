import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { prices } from '../../bench/prices';
import type { Results } from '../../bench/results';
import {
  assertCheapMetadataChanges,
  type ChangeCost,
  type ChangeKind,
  measureChanges,
  priceChanges,
  priceCounts,
  publishCost,
} from '../../bench/sections/media-changes';
import { emptyCounts } from '../../bench/support/counting-aws';

/** The media changes section: each change's calls counted through the real adapters, then priced, nothing added. */

jest.setTimeout(60_000);

type Measured = Awaited<ReturnType<typeof measureChanges>>;
const byKind = (measured: Measured, kind: ChangeKind) =>
  measured.changes.find((change) => change.kind === kind) as Omit<ChangeCost, 'lines' | 'usd'>;

describe('an item whose current version has 1,200 passages', () => {
  let measured: Measured;
  beforeAll(async () => {
    measured = await measureChanges(1200);
  });

  test('a title or speaker change is one read and one conditional write of the item, and one event', () => {
    const change = byKind(measured, 'title-speaker');
    expect(change.counts.requests).toEqual({
      'dynamodb:GetItem': 1,
      'dynamodb:PutItem': 1,
      'events:PutEvents': 1,
    });
    expect(change.providerCalls).toBe(0);
    expect(change.jobsStarted).toBe(0);
    expect(change.counts.events).toBe(1);
  });

  test('a labels change rewrites the vectors in GetVectors pages of 100 and PutVectors of 500, with the same data', () => {
    const change = byKind(measured, 'labels-date');
    expect(change.counts.requests['s3vectors:GetVectors']).toBe(Math.ceil(1200 / 100));
    expect(change.counts.requests['s3vectors:PutVectors']).toBe(Math.ceil(1200 / 500));
    expect(change.counts.vectors).toMatchObject({ read: 1200, written: 1200, dataChanged: 0 });
    // The vectors manifest, then the item, the current version's job, and the item again after the
    // rewrite (a concurrent change's rewrite may have landed after this one's).
    expect(change.counts.requests['s3:GetObject']).toBe(1);
    expect(change.counts.requests['dynamodb:GetItem']).toBe(3);
    expect(change.providerCalls).toBe(0);
    expect(Object.keys(change.counts.requests).filter((key) => key.startsWith('states:'))).toEqual([]);
  });

  test("a new version's switch and retirement delete the old version's vectors and every output it left", () => {
    const change = byKind(measured, 'new-version');
    expect(change.jobsStarted).toBe(1);
    expect(change.counts.vectors.deleted).toBe(1200);
    expect(change.counts.requests['s3vectors:DeleteVectors']).toBe(Math.ceil(1200 / 500));
    expect(change.counts.requests['s3:DeleteObjects']).toBe(Math.ceil(measured.outputsPerVersion / 1000));
    // Published and superseded.
    expect(change.counts.events).toBe(2);
    expect(change.reconcilerPasses).toBe(2);
  });

  test('deleting the item retires its current version; a search reads each media item among its hits once', () => {
    const deleted = byKind(measured, 'delete');
    expect(deleted.counts.vectors.deleted).toBe(1200);
    expect(deleted.counts.events).toBe(1);
    expect(byKind(measured, 'search-per-item').counts.requests).toEqual({ 'dynamodb:GetItem': 1 });
  });

  test('every DynamoDB request had its units reported by the emulator', () => {
    for (const change of measured.changes) expect(change.counts.dynamodb.estimated).toBe(0);
  });
});

test('a metadata change that called a provider or re-embedded a vector fails the section', () => {
  const quiet = {
    kind: 'labels-date' as const,
    title: 'change the labels',
    counts: emptyCounts(),
    providerCalls: 0,
    jobsStarted: 0,
  };
  expect(() => assertCheapMetadataChanges([quiet])).not.toThrow();
  expect(() => assertCheapMetadataChanges([{ ...quiet, providerCalls: 1 }])).toThrow(
    '"change the labels" must be cheap, but made 1 Bedrock or Deepgram calls',
  );
  const reembedded = emptyCounts();
  reembedded.vectors.dataChanged = 3;
  expect(() => assertCheapMetadataChanges([{ ...quiet, counts: reembedded }])).toThrow(
    '3 vectors re-embedded',
  );
  // A new version may call providers: that is its publish.
  expect(() =>
    assertCheapMetadataChanges([{ ...quiet, kind: 'new-version', providerCalls: 6 }]),
  ).not.toThrow();
});

test('each line is the counted quantity times its unit price', () => {
  const counts = emptyCounts();
  counts.requests['s3vectors:GetVectors'] = 2;
  counts.requests['s3vectors:PutVectors'] = 1;
  counts.requests['s3:GetObject'] = 1;
  counts.vectors.bytesPut = 1024 ** 3 / 2;
  counts.dynamodb.readUnits = 2;
  counts.dynamodb.writeUnits = 1;
  counts.dynamodb.indexWriteUnits = 2;
  counts.events = 1;
  const lines = priceCounts(counts, { restRequests: 1, invocations: 1 });
  const usd = (item: string) => lines.find((line) => line.item === item)?.usd;
  expect(usd('S3 Vectors PutVectors (GB uploaded)')).toBeCloseTo(0.5 * prices.s3VectorsPutPerGb.usd, 12);
  expect(usd('S3 Vectors GetVectors and DeleteVectors')).toBeCloseTo(
    2 * prices.s3VectorsOtherPerRequest.usd,
    12,
  );
  expect(usd('DynamoDB write units')).toBeCloseTo(3 * prices.dynamoDbPerWriteRequestUnit.usd, 12);
  expect(usd('EventBridge events')).toBeCloseTo(prices.eventBridgeCustomEventPer64Kb.usd, 12);
  expect(lines.map((line) => line.item)).not.toContain('S3 PUT and LIST');
});

test("a new version's cost adds its publish, priced from the other sections' figures", () => {
  const results = JSON.parse(readFileSync(join(__dirname, '../../bench/results.json'), 'utf8')) as Results;
  const publish = publishCost(results, 'committed', 90, 3600);
  expect(publish).toBeDefined();
  const lambda = results.media?.cost.compute.find((c) => c.place === 'lambda');
  expect(publish?.lines[0]?.usd).toBeCloseTo(lambda?.usdPerAudioHour ?? Number.NaN, 9);
  expect(publish?.usd).toBeCloseTo(publish?.lines.reduce((sum, line) => sum + line.usd, 0) ?? Number.NaN, 12);
  const change = {
    kind: 'new-version' as const,
    title: 'publish',
    counts: emptyCounts(),
    providerCalls: 0,
    jobsStarted: 1,
  };
  const [priced] = priceChanges([change], publish);
  const own = priceCounts(emptyCounts(), { restRequests: 1, invocations: 1 });
  expect(priced?.usd).toBeCloseTo((publish?.usd ?? 0) + own.reduce((sum, line) => sum + line.usd, 0), 12);
  expect(publishCost({ ...results, embedding: undefined }, 'partial', 90, 3600)).toBeUndefined();
});
