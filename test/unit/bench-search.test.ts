import { loadRetrievalSet } from '../../bench/retrieval/set';
import { costAssumptions, setSize } from '../../bench/sections/search';
import { emulatedS3VectorsIndex } from '../../bench/support/emulated-vector-index';
import { EMBEDDING } from '../../bench/support/retrieval';
import { measureSearchLatency, OTHER_TENANT, TENANT } from '../../bench/support/search-latency';
import { publishedHours, seededRandom, sentencesOf } from '../../bench/support/synthetic-corpus';
import { ExactScanIndex, type IndexedVector } from '../../bench/support/vector-index';

/** The search latency harness: the in-process index answers exactly, the corpus is deterministic, the run counts what it did. */

const set = loadRetrievalSet();

const randomVectors = (count: number, dimensions: number, seed: number, tenantOf: (i: number) => string) => {
  const random = seededRandom(seed);
  return Array.from(
    { length: count },
    (_, i): IndexedVector => ({
      key: `v${i}`,
      data: Float32Array.from({ length: dimensions }, () => random() * 2 - 1),
      metadata: { tenant: tenantOf(i) },
    }),
  );
};

const cosine = (a: Float32Array, b: Float32Array) => {
  let dot = 0;
  let aa = 0;
  let bb = 0;
  for (let i = 0; i < a.length; i++) {
    dot += a[i]! * b[i]!;
    aa += a[i]! * a[i]!;
    bb += b[i]! * b[i]!;
  }
  return dot / Math.sqrt(aa * bb);
};

describe('the in-process exact scan', () => {
  test("answers a tenant's topK closest by cosine, closest first, as a full sort does", async () => {
    // Past one block of 4,096, and a tenant's count not a multiple of the four compared a pass.
    const index = new ExactScanIndex(13);
    const vectors = randomVectors(5000, 13, 1, (i) => (i % 3 === 0 ? 't1' : 't2'));
    for (let i = 0; i < vectors.length; i += 500) await index.put(vectors.slice(i, i + 500));
    const query = randomVectors(1, 13, 2, () => 't1')[0]!.data;

    const hits = await index.query(query, 10, { tenant: 't1' });

    const expected = vectors
      .filter((v) => v.metadata.tenant === 't1')
      .map((v) => ({ key: v.key, distance: 1 - cosine(query, v.data) }))
      .sort((a, b) => a.distance - b.distance)
      .slice(0, 10);
    expect(hits.map((hit) => hit.key)).toEqual(expected.map((hit) => hit.key));
    for (const [i, hit] of hits.entries()) expect(hit.distance).toBeCloseTo(expected[i]!.distance, 5);
    expect(index.size).toBe(5000);
  });

  test('putting a key again replaces its vector and its metadata', async () => {
    const index = new ExactScanIndex(2);
    await index.put([
      { key: 'a', data: Float32Array.of(1, 0), metadata: { tenant: 't1' } },
      { key: 'b', data: Float32Array.of(0, 1), metadata: { tenant: 't1' } },
    ]);
    await index.put([{ key: 'a', data: Float32Array.of(0, -1), metadata: { tenant: 't2' } }]);

    expect(index.size).toBe(2);
    expect(await index.query(Float32Array.of(0, -1), 2, { tenant: 't1' })).toEqual([
      { key: 'b', distance: 2 },
    ]);
    expect(await index.query(Float32Array.of(0, -1), 2, { tenant: 't2' })).toEqual([
      { key: 'a', distance: 0 },
    ]);
  });

  test('refuses what S3 Vectors refuses: more than 500 a put, a topK past 100, another dimension', async () => {
    const index = new ExactScanIndex(4);

    await expect(index.put(randomVectors(501, 4, 3, () => 't'))).rejects.toThrow(
      'PutVectors takes at most 500 vectors, got 501',
    );
    await expect(index.put(randomVectors(1, 3, 3, () => 't'))).rejects.toThrow(
      'vector v0 has 3 dimensions; the index has 4',
    );
    await expect(index.query(new Float32Array(4), 101, {})).rejects.toThrow('topK must be 1 to 100, got 101');
    await expect(index.query(new Float32Array(3), 1, {})).rejects.toThrow(
      'the query has 3 dimensions; the index has 4',
    );
    expect(index.size).toBe(0);
  });
});

describe('the index through the local S3 Vectors emulator', () => {
  test('answers over HTTP what the exact scan answers, once ready, the first batch put through PutVectors', async () => {
    const underTest = await emulatedS3VectorsIndex(13);
    try {
      const exact = new ExactScanIndex(13);
      const vectors = randomVectors(1200, 13, 4, (i) => (i % 4 === 0 ? 't2' : 't1'));
      for (let i = 0; i < vectors.length; i += 500) {
        await underTest.index.put(vectors.slice(i, i + 500));
        await exact.put(vectors.slice(i, i + 500));
      }
      const query = randomVectors(1, 13, 5, () => 't1')[0]!.data;
      await expect(underTest.index.query(query, 10, { tenant: 't1' })).rejects.toThrow(
        'the emulated index serves once it is ready',
      );

      await underTest.ready();
      const hits = await underTest.index.query(query, 10, { tenant: 't1' });

      const expected = await exact.query(query, 10, { tenant: 't1' });
      expect(hits.map((hit) => hit.key)).toEqual(expected.map((hit) => hit.key));
      for (const [i, hit] of hits.entries()) expect(hit.distance).toBeCloseTo(expected[i]!.distance, 5);
      expect(underTest.loading).toBe(
        "700 vectors written to the emulator's log in its own format and replayed at its start, 500 put through PutVectors",
      );
      // A key of the held-back first batch is there too.
      const first = vectors[0]!;
      expect((await underTest.index.query(first.data, 1, { tenant: 't2' }))[0]?.key).toBe(first.key);
    } finally {
      await underTest.close();
    }
  });
});

describe('the synthetic corpus', () => {
  const options = { hours: 3, tenant: 't', seed: 42, passageSeconds: 40, wordsPerSecond: 2.5 };

  test('is the same for the same seed and another for another seed', () => {
    const first = [...publishedHours(set.passages, options)];

    expect([...publishedHours(set.passages, options)]).toEqual(first);
    expect([...publishedHours(set.passages, { ...options, seed: 43 })].map((p) => p.text)).not.toEqual(
      first.map((p) => p.text),
    );
  });

  test('has 90 passages an hour of at least 100 words, each made of the set’s sentences in one language', () => {
    const passages = [...publishedHours(set.passages, options)];
    const languageOf = new Map(set.passages.flatMap((p) => sentencesOf(p.text).map((s) => [s, p.language])));

    expect(passages).toHaveLength(3 * 90);
    expect(passages[0]!.key).toBe('h0001#0');
    expect(passages.at(-1)!.key).toBe('h0003#89');
    for (const passage of passages) {
      expect(passage.text.split(/\s+/u).length).toBeGreaterThanOrEqual(100);
      for (const sentence of sentencesOf(passage.text))
        expect(languageOf.get(sentence)).toBe(passage.language);
    }
  });
});

describe('the latency run', () => {
  test('fills every index with the same vectors, readies each before its queries, and times them', async () => {
    const events: string[] = [];
    const counted = (name: string) => {
      const index = new ExactScanIndex(EMBEDDING.dimensions);
      return {
        name,
        index: {
          put: (vectors: readonly IndexedVector[]) => {
            events.push(`${name} put ${vectors.length}`);
            return index.put(vectors);
          },
          query: (vector: Float32Array, topK: number, filter: Record<string, string>) => {
            events.push(`${name} query`);
            return index.query(vector, topK, filter);
          },
        },
        ready: async () => {
          events.push(`${name} ready`);
        },
      };
    };

    const figures = await measureSearchLatency({
      indexes: [counted('a'), counted('b')],
      passages: set.passages,
      texts: set.queries.slice(0, 4).map((q) => q.text),
      hours: 7,
      otherTenantHours: 2,
      queries: 9,
      topK: 10,
      seed: 1,
      passageSeconds: 40,
      wordsPerSecond: 2.5,
    });

    expect(figures).toMatchObject({
      hours: 7,
      passages: 630,
      otherTenantPassages: 180,
      queries: 9,
      topK: 10,
    });
    // Each batch to both, then each index readied and asked 3 warm-up and 9 timed queries in turn.
    const queries = (name: string) => Array.from({ length: 12 }, () => `${name} query`);
    expect(events).toEqual([
      'a put 500',
      'b put 500',
      'a put 130',
      'b put 130',
      'a put 180',
      'b put 180',
      'a ready',
      ...queries('a'),
      'b ready',
      ...queries('b'),
    ]);
    expect(figures.byIndex.map((measured) => [measured.index, measured.sameAsFirst])).toEqual([
      ['a', 9],
      ['b', 9],
    ]);
    for (const measured of figures.byIndex) {
      expect(measured.p50Ms).toBeGreaterThan(0);
      expect(measured.p99Ms).toBeGreaterThanOrEqual(measured.p50Ms);
      expect(measured.maxMs).toBeGreaterThanOrEqual(measured.p99Ms);
    }
    expect(TENANT).not.toBe(OTHER_TENANT);
  });

  test('counts the queries whose top passages differ from the first index’s', async () => {
    const exact = new ExactScanIndex(EMBEDDING.dimensions);
    // Answers the same passages as the exact scan, less the last, and one more from further down.
    const shifted = {
      put: async () => {},
      query: async (vector: Float32Array, topK: number, filter: Record<string, string>) =>
        (await exact.query(vector, topK + 1, filter)).slice(1),
    };

    const figures = await measureSearchLatency({
      indexes: [
        { name: 'exact', index: exact },
        { name: 'shifted', index: shifted },
      ],
      passages: set.passages,
      texts: [set.queries[0]!.text],
      hours: 2,
      otherTenantHours: 1,
      queries: 3,
      topK: 10,
      seed: 1,
      passageSeconds: 40,
      wordsPerSecond: 2.5,
    });

    expect(figures.byIndex.map((measured) => measured.sameAsFirst)).toEqual([3, 0]);
  });

  test('a query that finds another tenant’s passage fails the run, naming the index', async () => {
    const leaky = new ExactScanIndex(EMBEDDING.dimensions);

    await expect(
      measureSearchLatency({
        indexes: [
          {
            name: 'leaky',
            index: { put: leaky.put.bind(leaky), query: (vector, topK) => leaky.query(vector, topK, {}) },
          },
        ],
        passages: set.passages,
        texts: [set.queries[0]!.text],
        hours: 1,
        otherTenantHours: 30,
        queries: 1,
        topK: 100,
        seed: 1,
        passageSeconds: 40,
        wordsPerSecond: 2.5,
      }),
    ).rejects.toThrow(`leaky: "${set.queries[0]!.text}" found tenant-b/`);
  });
});

describe("the section's own figures", () => {
  test('counts the set by language and kind', () => {
    const size = setSize(set);

    expect(size.byLanguage.en.sermons + size.byLanguage.ar.sermons).toBe(size.sermons);
    expect(size.byKind.verbatim + size.byKind.paraphrase + size.byKind.hard).toBe(size.queries);
    expect(size.passages).toBe(set.passages.length);
  });

  test("takes the cost's characters per word from the set's English passages", () => {
    const assumptions = costAssumptions(set, 1000);

    expect(assumptions.wordsPerHour).toBe(9000);
    expect(assumptions.charsPerWord).toBeGreaterThan(4);
    expect(assumptions.charsPerWord).toBeLessThan(7);
    expect(assumptions.vector.dimensions).toBe(1024);
    expect(assumptions.vector.nonFilterableMetadataBytes).toBe(
      Math.round(100 * assumptions.charsPerWord) + 32,
    );
  });
});
