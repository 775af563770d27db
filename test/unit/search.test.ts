import { searchRequest } from '../../config/search';
import { dayNumberOf, vectorKeyOf } from '../../lambdas/domain/embedding';
import { ProviderUnavailableError, RateLimitedError } from '../../lambdas/domain/errors';
import { type Job, newJob } from '../../lambdas/domain/job';
import type { PassageVector } from '../../lambdas/domain/ports';
import { parseSearch } from '../../lambdas/domain/requests';
import {
  QUERY_SLOT_LEASE_MS,
  queryLeaseEndOf,
  scoreOf,
  search,
  searchFiltersOf,
  withQuerySlot,
} from '../../lambdas/domain/search';
import { MemoryOutputs, MemorySlots, MemoryStore, MemoryVectorIndex } from './support/memory-ports';

const clock = new Date('2026-05-01T10:00:00.000Z');

/** A published recording of `tenant` with its stream stored, and one vector per passage text. */
async function publish(
  world: { store: MemoryStore; outputs: MemoryOutputs; vectors: MemoryVectorIndex },
  tenant: string,
  id: string,
  texts: readonly { text: string; vector: number[] }[],
  input: Record<string, unknown> = {},
): Promise<Job> {
  const prefix = `outputs/${encodeURIComponent(tenant)}/${id}/hls/`;
  const job: Job = {
    ...newJob(
      {
        id,
        tenantId: tenant,
        type: 'audio.publish',
        input: { audioUrl: 'https://media.example/a.mp3', ...input },
        idempotencyKey: id,
        fingerprint: 'f',
      },
      clock,
    ),
    status: 'succeeded',
    result: {
      stream: {
        playlistKey: `${prefix}master.m3u8`,
        renditions: [{ bitrateKbps: 64, playlistKey: `${prefix}64k/index.m3u8` }],
      },
    },
  };
  world.store.jobs.set(id, job);
  await world.outputs.putOutput(
    `${prefix}master.m3u8`,
    '#EXTM3U\n#EXT-X-STREAM-INF:BANDWIDTH=64000\n64k/index.m3u8\n',
    'application/vnd.apple.mpegurl',
  );
  await world.outputs.putOutput(
    `${prefix}64k/index.m3u8`,
    '#EXTM3U\n#EXT-X-TARGETDURATION:6\n#EXTINF:6.0,\nseg0.m4s\n#EXT-X-ENDLIST\n',
    'application/vnd.apple.mpegurl',
  );
  const { title, date, labels } = input as { title?: string; date?: string; labels?: string[] };
  const vectors: PassageVector[] = texts.map(({ text, vector }, passage) => ({
    key: vectorKeyOf(job, passage),
    data: vector,
    metadata: {
      tenant,
      item: id,
      date: dayNumberOf(date ?? job.createdAt),
      labels: labels ?? [],
      passage,
      start: passage * 40,
      end: passage * 40 + 40,
      text,
      ...(title ? { title } : {}),
    },
  }));
  await world.vectors.put(vectors);
  return job;
}

function world() {
  const store = new MemoryStore();
  const outputs = new MemoryOutputs();
  const vectors = new MemoryVectorIndex('cosine');
  const queries: string[] = [];
  const deps = {
    store,
    outputs,
    vectors,
    embedQuery: async (text: string) => {
      queries.push(text);
      return [1, 0, 0];
    },
  };
  return { store, outputs, vectors, deps, queries };
}

const A = 'job_aaaaaaaaaaaaaaaaaaaaaaaaaa';
const B = 'job_bbbbbbbbbbbbbbbbbbbbbbbbbb';
const OTHER = 'job_oooooooooooooooooooooooooo';

describe('search', () => {
  it('answers the nearest passages of the tenant, closest first, each playable from its first word', async () => {
    const w = world();
    await publish(
      w,
      'acme',
      A,
      [
        { text: 'the harvest', vector: [0, 1, 0] },
        { text: 'forgive your brother', vector: [1, 0.1, 0] },
      ],
      { title: 'Seventy times seven', date: '2026-03-01', labels: ['lent'] },
    );
    await publish(w, 'acme', B, [{ text: 'forgiveness again', vector: [1, 0.5, 0] }]);
    const result = await search(w.deps, 'acme', parseSearch({ query: 'forgiving my brother', limit: 2 }));
    expect(w.queries).toEqual(['forgiving my brother']);
    expect(result.items.map((hit) => [hit.item.id, hit.passage.index])).toEqual([
      [A, 1],
      [B, 0],
    ]);
    const [first] = result.items;
    expect(first).toEqual({
      score: Number((1 / Math.hypot(1, 0.1)).toFixed(6)),
      item: { id: A, title: 'Seventy times seven', date: '2026-03-01', labels: ['lent'] },
      passage: { index: 1, start: 40, end: 80, text: 'forgive your brother' },
      playback: {
        playlistUrl: `https://outputs.example/outputs/acme/${A}/served/master.m3u8`,
        startSeconds: 40,
        url: `https://outputs.example/outputs/acme/${A}/served/master.m3u8#t=40`,
      },
    });
    // The served master names the presigned rendition, which names presigned segments.
    const master = new TextDecoder().decode(
      await w.outputs.getOutput(`outputs/acme/${A}/served/master.m3u8`),
    );
    expect(master).toContain(`https://outputs.example/outputs/acme/${A}/served/64k/index.m3u8`);
    expect(searchRequest.parse({ query: 'x' })).toEqual({ query: 'x' });
  });

  it('never shows another tenant’s passages, whatever the filter names', async () => {
    const w = world();
    await publish(w, 'acme', A, [{ text: 'ours', vector: [0, 1, 0] }]);
    await publish(w, 'globex', OTHER, [{ text: 'theirs, nearer', vector: [1, 0, 0] }]);
    const result = await search(w.deps, 'acme', parseSearch({ query: 'q', filter: { itemIds: [OTHER, A] } }));
    expect(result.items.map((hit) => hit.item.id)).toEqual([A]);
    expect(
      (await search(w.deps, 'acme', parseSearch({ query: 'q', filter: { itemIds: [OTHER] } }))).items,
    ).toEqual([]);
  });

  it('drops a hit whose vector claims the tenant but whose recording is not its own or not published', async () => {
    const w = world();
    await publish(w, 'acme', A, [{ text: 'ours', vector: [1, 0, 0] }]);
    await w.vectors.put([
      {
        key: `acme/${OTHER}/0`,
        data: [1, 0, 0],
        metadata: {
          tenant: 'acme',
          item: OTHER,
          date: 0,
          labels: [],
          passage: 0,
          start: 0,
          end: 1,
          text: 'stray',
        },
      },
    ]);
    await publish(w, 'globex', OTHER, []);
    const result = await search(w.deps, 'acme', parseSearch({ query: 'q' }));
    expect(result.items.map((hit) => hit.passage.text)).toEqual(['ours']);
  });

  it('narrows by item, date and label', async () => {
    const w = world();
    await publish(w, 'acme', A, [{ text: 'a', vector: [1, 0, 0] }], {
      date: '2026-01-10',
      labels: ['advent', 'choir'],
    });
    await publish(w, 'acme', B, [{ text: 'b', vector: [1, 0, 0] }], { date: '2026-02-10', labels: ['lent'] });
    const ids = async (filter: Record<string, unknown>) =>
      (await search(w.deps, 'acme', parseSearch({ query: 'q', filter }))).items
        .map((hit) => hit.item.id)
        .sort();
    expect(await ids({ dateFrom: '2026-02-01' })).toEqual([B]);
    expect(await ids({ dateTo: '2026-01-10' })).toEqual([A]);
    expect(await ids({ dateFrom: '2026-01-10', dateTo: '2026-02-10' })).toEqual([A, B]);
    expect(await ids({ labels: ['choir'] })).toEqual([A]);
    expect(await ids({ labels: ['lent', 'advent'] })).toEqual([A, B]);
    expect(await ids({ itemIds: [B] })).toEqual([B]);
  });

  it('answers the largest filter a request may name, though the index takes fewer constraints a query', async () => {
    const w = world();
    await publish(w, 'acme', A, [{ text: 'a', vector: [1, 0, 0] }], { date: '2026-01-10', labels: ['lent'] });
    await publish(w, 'acme', B, [{ text: 'b', vector: [0.9, 0.1, 0] }], {
      date: '2026-01-11',
      labels: ['lent'],
    });
    const base32 = 'abcdefghijklmnopqrstuvwxyz234567';
    const others = Array.from(
      { length: 98 },
      (_, n) => `job_${'c'.repeat(24)}${base32[n >> 5]}${base32[n & 31]}`,
    );
    const labels = ['lent', ...Array.from({ length: 9 }, (_, n) => `series ${n}`)];
    const request = parseSearch({
      query: 'q',
      filter: {
        itemIds: [...others.slice(0, 49), A, ...others.slice(49), B],
        dateFrom: '2026-01-01',
        dateTo: '2026-12-31',
        labels,
      },
    });

    const result = await search(w.deps, 'acme', request);

    expect(result.items.map((hit) => hit.item.id)).toEqual([A, B]);
  });
});

describe('searchFiltersOf', () => {
  it('always starts from the tenant, and adds each narrowing as a condition', () => {
    expect(searchFiltersOf('acme', undefined)).toEqual([{ tenant: { $eq: 'acme' } }]);
    expect(
      searchFiltersOf('acme', { itemIds: [A], dateFrom: '1970-01-02', dateTo: '1970-01-03', labels: ['x'] }),
    ).toEqual([
      {
        $and: [
          { tenant: { $eq: 'acme' } },
          { item: { $in: [A] } },
          { date: { $gte: 1 } },
          { date: { $lte: 2 } },
          { labels: { $in: ['x'] } },
        ],
      },
    ]);
  });

  it('shares the items out between filters that each stay within the constraints of a query', () => {
    const itemIds = Array.from({ length: 100 }, (_, n) => (n % 2 ? A : B));
    const labels = Array.from({ length: 10 }, (_, n) => `l${n}`);
    const filters = searchFiltersOf('acme', {
      itemIds,
      dateFrom: '1970-01-02',
      dateTo: '1970-01-03',
      labels,
    });
    const conditions = filters.map((filter) => filter.$and as Record<string, { $in?: unknown[] }>[]);

    // 1 tenant + 2 dates + 10 labels leave 87 item ids a query.
    expect(conditions.map((parts) => parts[1]?.item?.$in?.length)).toEqual([87, 13]);
    expect(conditions.flatMap((parts) => parts[1]?.item?.$in)).toEqual(itemIds);
    for (const parts of conditions) {
      expect(parts.filter((part) => !('item' in part))).toEqual([
        { tenant: { $eq: 'acme' } },
        { date: { $gte: 1 } },
        { date: { $lte: 2 } },
        { labels: { $in: labels } },
      ]);
    }
  });
});

describe('a search request', () => {
  const problems = (body: unknown) => {
    try {
      parseSearch(body);
      return [];
    } catch (error) {
      return (error as { errors: { pointer: string; detail: string }[] }).errors.map((e) => e.pointer);
    }
  };
  it('names each field that is wrong', () => {
    expect(problems({ query: '   ' })).toEqual(['/query']);
    expect(problems({ query: 'x'.repeat(1001) })).toEqual(['/query']);
    expect(problems({ query: 'x', limit: 0 })).toEqual(['/limit']);
    expect(problems({ query: 'x', limit: 51 })).toEqual(['/limit']);
    expect(problems({ query: 'x', limit: 2.5 })).toEqual(['/limit']);
    expect(problems({ query: 'x', filter: { speaker: 'me' } })).toEqual(['/filter']);
    expect(problems({ query: 'x', filter: { tenant: 'globex' } })).toEqual(['/filter']);
    expect(problems({ query: 'x', filter: { dateFrom: '2026-13-01' } })).toEqual(['/filter/dateFrom']);
    expect(problems({ query: 'x', filter: { dateFrom: '2026-02-01', dateTo: '2026-01-01' } })).toEqual([
      '/filter/dateTo',
    ]);
    expect(problems({ query: 'x', filter: { itemIds: ['job_x'] } })).toEqual(['/filter/itemIds/0']);
    expect(problems({ query: 'x', top: 3 })).toEqual(['']);
    expect(problems({ query: 'forgive', limit: 50, filter: { labels: ['lent'] } })).toEqual([]);
  });
});

describe('scoreOf', () => {
  it('makes higher mean closer under either metric', () => {
    expect(scoreOf(0, 'cosine')).toBe(1);
    expect(scoreOf(0.25, 'cosine')).toBe(0.75);
    expect(scoreOf(0, 'euclidean')).toBe(1);
    expect(scoreOf(1, 'euclidean')).toBe(0.5);
  });
});

describe('withQuerySlot', () => {
  it('holds a slot of the pool for the call only, under a lease the reconciler can read, and hands it on after', async () => {
    const pool = new MemorySlots();
    let held: readonly string[] = [];
    const handedOn: (readonly string[])[] = [];
    const answer = await withQuerySlot(
      pool,
      1,
      () => 1_000,
      async () => {
        held = await pool.holders();
        return 'embedded';
      },
      async () => {
        handedOn.push(await pool.holders());
      },
    );
    expect(answer).toBe('embedded');
    // Once, with the slot already given back.
    expect(handedOn).toEqual([[]]);
    expect(held).toHaveLength(1);
    expect(queryLeaseEndOf(held[0] as string)).toBe(1_000 + QUERY_SLOT_LEASE_MS);
    expect(await pool.holders()).toEqual([]);
    expect(queryLeaseEndOf('job_aaaaaaaaaaaaaaaaaaaaaaaaaa.x')).toBeUndefined();
  });

  it('answers 429 with a Retry-After when the pool stays full, and never calls the provider', async () => {
    const pool = new MemorySlots();
    await pool.acquire('job_busy', 1);
    let now = 0;
    let called = false;
    const waiting = withQuerySlot(
      pool,
      1,
      () => now,
      async () => {
        called = true;
      },
      async () => {},
    );
    // The wait polls with a growing pause; move the clock past its deadline.
    now = 5_000;
    await expect(waiting).rejects.toBeInstanceOf(RateLimitedError);
    expect(called).toBe(false);
  });

  it('gives the slot back, hands it on, and answers 429 when the provider throttles the query', async () => {
    const pool = new MemorySlots();
    let handedOn = 0;
    await expect(
      withQuerySlot(
        pool,
        1,
        Date.now,
        async () => {
          throw new ProviderUnavailableError('bedrock answered ThrottlingException (429).');
        },
        async () => {
          handedOn++;
        },
      ),
    ).rejects.toMatchObject({ name: 'RateLimitedError', retryAfterSeconds: 2 });
    expect(await pool.holders()).toEqual([]);
    expect(handedOn).toBe(1);
  });
});
