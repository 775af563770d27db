import { appendFileSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { crc32 } from 'node:zlib';
import {
  CreateIndexCommand,
  type CreateIndexCommandInput,
  CreateVectorBucketCommand,
  DeleteVectorsCommand,
  GetIndexCommand,
  GetVectorBucketCommand,
  GetVectorsCommand,
  ListVectorsCommand,
  type ListVectorsCommandInput,
  type PutInputVector,
  PutVectorsCommand,
  QueryVectorsCommand,
  type QueryVectorsCommandInput,
  type S3VectorsClient,
} from '@aws-sdk/client-s3vectors';
import { S3_VECTORS_LIMITS } from '../../config/s3-vectors';
import {
  type EmulatedS3Vectors,
  refusal,
  refusalOf,
  removeDataDir,
  startEmulatedS3Vectors,
} from './support/emulated-s3-vectors';

/**
 * The local S3 Vectors (local/emulators/s3-vectors.ts) as the real
 * `@aws-sdk/client-s3vectors` sees it over HTTP: each call's shapes, every
 * documented limit refused with the service's error, the filter language,
 * exact rankings under both metrics, pagination, and vectors that outlive a
 * restart.
 */

jest.setTimeout(60_000);

const ACCOUNT = '000000000000';
const REGION = 'us-east-1';
const bucketArn = (bucket: string) => `arn:aws:s3vectors:${REGION}:${ACCOUNT}:bucket/${bucket}`;

let s3v: EmulatedS3Vectors;
let now = Date.UTC(2026, 11, 6, 12, 0, 0);

beforeAll(async () => {
  // A clock of the test's own: the write rates count its seconds, which a test moves on.
  s3v = await startEmulatedS3Vectors({ clock: () => now });
});
afterAll(async () => {
  await s3v?.stop();
  if (s3v) removeDataDir(s3v.dir);
});

let bucketCount = 0;
/** A bucket of its own for each test, so tests never see one another's vectors. */
async function newBucket(client: S3VectorsClient = s3v.client): Promise<string> {
  bucketCount += 1;
  const name = `bucket-${bucketCount}`;
  await client.send(new CreateVectorBucketCommand({ vectorBucketName: name }));
  return name;
}

async function newIndex(
  input: Partial<CreateIndexCommandInput> & { dimension: number; distanceMetric: 'cosine' | 'euclidean' },
  client: S3VectorsClient = s3v.client,
): Promise<{ bucket: string; index: string; arn: string }> {
  const bucket = await newBucket(client);
  const { indexArn } = await client.send(
    new CreateIndexCommand({
      vectorBucketName: bucket,
      indexName: 'passages',
      dataType: 'float32',
      ...input,
    }),
  );
  return { bucket, index: 'passages', arn: indexArn as string };
}

const vector = (key: string, float32: number[], metadata?: Record<string, unknown>): PutInputVector => ({
  key,
  data: { float32 },
  ...(metadata ? { metadata: metadata as PutInputVector['metadata'] } : {}),
});

const put = (target: { bucket: string; index: string }, vectors: PutInputVector[]) =>
  s3v.client.send(
    new PutVectorsCommand({ vectorBucketName: target.bucket, indexName: target.index, vectors }),
  );

const query = (
  target: { bucket: string; index: string },
  input: Omit<QueryVectorsCommandInput, 'topK'> & { topK?: number },
) =>
  s3v.client.send(
    new QueryVectorsCommand({
      vectorBucketName: target.bucket,
      indexName: target.index,
      topK: 100,
      ...input,
    }),
  );

const list = (target: { bucket: string; index: string }, input: Partial<ListVectorsCommandInput> = {}) =>
  s3v.client.send(
    new ListVectorsCommand({ vectorBucketName: target.bucket, indexName: target.index, ...input }),
  );

/** A vector of `dimension` values, all `value`. */
const filled = (dimension: number, value: number) => Array.from({ length: dimension }, () => value);

describe('buckets and indexes', () => {
  test('a bucket is made and described, SSE-S3 unless told otherwise', async () => {
    const bucket = await newBucket();
    const { vectorBucket } = await s3v.client.send(new GetVectorBucketCommand({ vectorBucketName: bucket }));
    expect(vectorBucket).toEqual({
      vectorBucketName: bucket,
      vectorBucketArn: bucketArn(bucket),
      creationTime: new Date(now),
      encryptionConfiguration: { sseType: 'AES256' },
    });
    // By ARN as well as by name.
    const byArn = await s3v.client.send(new GetVectorBucketCommand({ vectorBucketArn: bucketArn(bucket) }));
    expect(byArn.vectorBucket?.vectorBucketName).toBe(bucket);
  });

  test('an index is made with what CreateIndex says and described by GetIndex', async () => {
    const bucket = await newBucket();
    const created = await s3v.client.send(
      new CreateIndexCommand({
        vectorBucketName: bucket,
        indexName: 'passages.v1',
        dataType: 'float32',
        dimension: 3,
        distanceMetric: 'euclidean',
        metadataConfiguration: { nonFilterableMetadataKeys: ['text', 'title'] },
      }),
    );
    expect(created.indexArn).toBe(`${bucketArn(bucket)}/index/passages.v1`);
    const { index } = await s3v.client.send(new GetIndexCommand({ indexArn: created.indexArn }));
    expect(index).toEqual({
      vectorBucketName: bucket,
      indexName: 'passages.v1',
      indexArn: created.indexArn,
      creationTime: new Date(now),
      dataType: 'float32',
      dimension: 3,
      distanceMetric: 'euclidean',
      metadataConfiguration: { nonFilterableMetadataKeys: ['text', 'title'] },
    });
  });

  test('a name taken is a ConflictException (409), an unknown one a NotFoundException (404)', async () => {
    const { bucket, index } = await newIndex({ dimension: 2, distanceMetric: 'cosine' });
    expect(
      refusal(await refusalOf(s3v.client.send(new CreateVectorBucketCommand({ vectorBucketName: bucket })))),
    ).toEqual({ name: 'ConflictException', status: 409 });
    expect(
      refusal(
        await refusalOf(
          s3v.client.send(
            new CreateIndexCommand({
              vectorBucketName: bucket,
              indexName: index,
              dataType: 'float32',
              dimension: 2,
              distanceMetric: 'cosine',
            }),
          ),
        ),
      ),
    ).toEqual({ name: 'ConflictException', status: 409 });
    for (const act of [
      s3v.client.send(new GetVectorBucketCommand({ vectorBucketName: 'no-such-bucket' })),
      s3v.client.send(new GetIndexCommand({ vectorBucketName: bucket, indexName: 'no-such-index' })),
      s3v.client.send(new GetIndexCommand({ vectorBucketName: 'no-such-bucket', indexName: index })),
      put({ bucket, index: 'no-such-index' }, [vector('a', [1, 0])]),
      s3v.client.send(new GetIndexCommand({ indexArn: `${bucketArn('no-such-bucket')}/index/${index}` })),
    ]) {
      expect(refusal(await refusalOf(act))).toEqual({ name: 'NotFoundException', status: 404 });
    }
  });

  test.each<[string, Partial<CreateIndexCommandInput>]>([
    ['a name with capitals', { indexName: 'Passages' }],
    ['a name of two characters', { indexName: 'ab' }],
    ['dimension 0', { dimension: 0 }],
    ['dimension 4097', { dimension: 4097 }],
    ['a metric S3 Vectors does not offer', { distanceMetric: 'dotproduct' as 'cosine' }],
    ['another data type', { dataType: 'float16' as 'float32' }],
    [
      'eleven non-filterable keys',
      { metadataConfiguration: { nonFilterableMetadataKeys: Array.from({ length: 11 }, (_, i) => `k${i}`) } },
    ],
    [
      'a non-filterable key of 64 characters',
      { metadataConfiguration: { nonFilterableMetadataKeys: ['k'.repeat(64)] } },
    ],
  ])('CreateIndex with %s is a ValidationException (400)', async (_, overrides) => {
    const bucket = await newBucket();
    const error = await refusalOf(
      s3v.client.send(
        new CreateIndexCommand({
          vectorBucketName: bucket,
          indexName: 'passages',
          dataType: 'float32',
          dimension: 4,
          distanceMetric: 'cosine',
          ...overrides,
        }),
      ),
    );
    expect(refusal(error)).toEqual({ name: 'ValidationException', status: 400 });
  });

  test('bucket names are refused as S3 Vectors refuses them', async () => {
    for (const name of ['ab', 'Bucket-1', 'bucket.dots', '-bucket', 'b'.repeat(64)]) {
      const error = await refusalOf(
        s3v.client.send(new CreateVectorBucketCommand({ vectorBucketName: name })),
      );
      expect(refusal(error)).toEqual({ name: 'ValidationException', status: 400 });
    }
  });

  test('an index is named by ARN or by bucket and index name, not both', async () => {
    const target = await newIndex({ dimension: 2, distanceMetric: 'cosine' });
    await put(target, [vector('a', [1, 0])]);
    const byArn = await s3v.client.send(
      new QueryVectorsCommand({ indexArn: target.arn, topK: 1, queryVector: { float32: [1, 0] } }),
    );
    expect(byArn.vectors).toEqual([{ key: 'a' }]);
    const both = await refusalOf(
      s3v.client.send(
        new QueryVectorsCommand({
          indexArn: target.arn,
          indexName: target.index,
          topK: 1,
          queryVector: { float32: [1, 0] },
        }),
      ),
    );
    expect(refusal(both)).toEqual({ name: 'ValidationException', status: 400 });
  });
});

describe('vectors', () => {
  test('PutVectors stores float32 data and metadata; GetVectors answers what it is asked for, for the keys that exist', async () => {
    const target = await newIndex({ dimension: 3, distanceMetric: 'cosine' });
    await put(target, [
      vector('a', [0.1, 0.2, 0.3], { tenant: 'acme', labels: ['x', 'y'], date: 20_000 }),
      vector('b', [1, 2, 3]),
    ]);
    const get = (input: { returnData?: boolean; returnMetadata?: boolean }) =>
      s3v.client.send(
        new GetVectorsCommand({
          vectorBucketName: target.bucket,
          indexName: target.index,
          keys: ['b', 'missing', 'a'],
          ...input,
        }),
      );
    expect((await get({})).vectors).toEqual([{ key: 'b' }, { key: 'a' }]);
    expect((await get({ returnData: true, returnMetadata: true })).vectors).toEqual([
      { key: 'b', data: { float32: [1, 2, 3] }, metadata: {} },
      {
        key: 'a',
        // As float32, which is what S3 Vectors stores and answers.
        data: { float32: [Math.fround(0.1), Math.fround(0.2), Math.fround(0.3)] },
        metadata: { tenant: 'acme', labels: ['x', 'y'], date: 20_000 },
      },
    ]);
  });

  test('a put of a key replaces its vector and metadata; DeleteVectors removes keys and ignores absent ones', async () => {
    const target = await newIndex({ dimension: 2, distanceMetric: 'euclidean' });
    await put(target, [vector('a', [1, 1], { v: 1 }), vector('b', [2, 2]), vector('c', [3, 3])]);
    await put(target, [vector('a', [5, 5], { v: 2 })]);
    await s3v.client.send(
      new DeleteVectorsCommand({
        vectorBucketName: target.bucket,
        indexName: target.index,
        keys: ['b', 'zzz'],
      }),
    );
    const { vectors } = await list(target, { returnData: true, returnMetadata: true });
    expect(vectors).toEqual([
      { key: 'a', data: { float32: [5, 5] }, metadata: { v: 2 } },
      { key: 'c', data: { float32: [3, 3] }, metadata: {} },
    ]);
  });

  test('ListVectors pages in key order, and its segments split the keys between them', async () => {
    const target = await newIndex({ dimension: 2, distanceMetric: 'euclidean' });
    const keys = Array.from({ length: 25 }, (_, i) => `key-${String(i).padStart(2, '0')}`);
    await put(
      target,
      keys.map((key, i) => vector(key, [i, i])),
    );
    const pages: string[][] = [];
    let nextToken: string | undefined;
    do {
      const page = await list(target, { maxResults: 10, ...(nextToken ? { nextToken } : {}) });
      pages.push((page.vectors ?? []).map((v) => v.key as string));
      nextToken = page.nextToken;
    } while (nextToken);
    expect(pages).toEqual([keys.slice(0, 10), keys.slice(10, 20), keys.slice(20)]);
    const segments = await Promise.all(
      [0, 1, 2].map(async (segmentIndex) =>
        ((await list(target, { segmentCount: 3, segmentIndex })).vectors ?? []).map((v) => v.key as string),
      ),
    );
    expect(segments.flat().sort()).toEqual(keys);
    segments.forEach((segment, i) => {
      for (const key of segment) expect(crc32(key) % 3).toBe(i);
    });
    // Without returnData and returnMetadata, keys alone.
    expect((await list(target, { maxResults: 1 })).vectors).toEqual([{ key: keys[0] }]);
  });
});

describe('limits, refused as S3 Vectors refuses them', () => {
  let target: { bucket: string; index: string };
  beforeAll(async () => {
    target = await newIndex({
      dimension: 4,
      distanceMetric: 'cosine',
      metadataConfiguration: { nonFilterableMetadataKeys: ['text'] },
    });
  });

  const invalid = async (act: Promise<unknown>) =>
    expect(refusal(await refusalOf(act))).toEqual({ name: 'ValidationException', status: 400 });

  test('vectors per PutVectors (1 to 500), keys per DeleteVectors (1 to 500) and GetVectors (1 to 100)', async () => {
    await invalid(put(target, []));
    await invalid(
      put(
        target,
        Array.from({ length: 501 }, (_, i) => vector(`k${i}`, [1, 2, 3, 4])),
      ),
    );
    await put(
      target,
      Array.from({ length: 500 }, (_, i) => vector(`k${i}`, [1, 2, 3, 4])),
    );
    const keys = (n: number) => Array.from({ length: n }, (_, i) => `k${i}`);
    const target2 = { vectorBucketName: target.bucket, indexName: target.index };
    await invalid(s3v.client.send(new DeleteVectorsCommand({ ...target2, keys: keys(501) })));
    await invalid(s3v.client.send(new DeleteVectorsCommand({ ...target2, keys: [] })));
    await invalid(s3v.client.send(new GetVectorsCommand({ ...target2, keys: keys(101) })));
    expect(
      (await s3v.client.send(new GetVectorsCommand({ ...target2, keys: keys(100) }))).vectors,
    ).toHaveLength(100);
  });

  test("a vector of another dimension than the index's, a value that is not finite, a zero vector under cosine", async () => {
    await invalid(put(target, [vector('a', [1, 2, 3])]));
    await invalid(put(target, [vector('a', [1, 2, 3, 4, 5])]));
    await invalid(put(target, [vector('a', [1, Number.NaN, 3, 4])]));
    await invalid(put(target, [vector('a', [1, Number.POSITIVE_INFINITY, 3, 4])]));
    // Finite as a double, beyond float32.
    await invalid(put(target, [vector('a', [1, 1e39, 3, 4])]));
    await invalid(put(target, [vector('a', [0, 0, 0, 0])]));
    await invalid(query(target, { queryVector: { float32: [1, 2, 3] } }));
    // Under euclidean a zero vector is a vector like any other.
    const euclidean = await newIndex({ dimension: 2, distanceMetric: 'euclidean' });
    await put(euclidean, [vector('zero', [0, 0])]);
  });

  test('keys of 1 to 1,024 characters, each once in a request', async () => {
    await invalid(put(target, [vector('k'.repeat(1025), [1, 2, 3, 4])]));
    await invalid(put(target, [vector('', [1, 2, 3, 4])]));
    await put(target, [vector('k'.repeat(1024), [1, 2, 3, 4])]);
    await invalid(put(target, [vector('twice', [1, 2, 3, 4]), vector('twice', [4, 3, 2, 1])]));
  });

  test('metadata: 50 keys, 2 KB filterable, 40 KB in all, of strings, numbers, booleans and lists of them', async () => {
    const keys = (n: number) => Object.fromEntries(Array.from({ length: n }, (_, i) => [`m${i}`, i]));
    await put(target, [vector('fifty', [1, 2, 3, 4], keys(50))]);
    await invalid(put(target, [vector('fifty-one', [1, 2, 3, 4], keys(51))]));
    // {"tenant":"…"} is 13 bytes besides the value.
    await put(target, [vector('filterable', [1, 2, 3, 4], { tenant: 'x'.repeat(2048 - 13) })]);
    await invalid(put(target, [vector('filterable', [1, 2, 3, 4], { tenant: 'x'.repeat(2048 - 12) })]));
    // Non-filterable text may take what filterable metadata may not, up to 40 KB in all.
    await put(target, [vector('text', [1, 2, 3, 4], { text: 't'.repeat(40 * 1024 - 11) })]);
    await invalid(put(target, [vector('text', [1, 2, 3, 4], { text: 't'.repeat(40 * 1024 - 10) })]));
    await invalid(put(target, [vector('nested', [1, 2, 3, 4], { nested: { a: 1 } })]));
    await invalid(put(target, [vector('null', [1, 2, 3, 4], { gone: null })]));
    await invalid(put(target, [vector('lists', [1, 2, 3, 4], { lists: [['a']] })]));
  });

  test('topK from 1 to 10,000', async () => {
    await invalid(query(target, { topK: 0, queryVector: { float32: [1, 2, 3, 4] } }));
    await invalid(query(target, { topK: 10_001, queryVector: { float32: [1, 2, 3, 4] } }));
    const { vectors, nextToken } = await query(target, {
      topK: 10_000,
      queryVector: { float32: [1, 2, 3, 4] },
    });
    expect(vectors).toHaveLength(100);
    expect(nextToken).toEqual(expect.any(String));
  });

  test('ListVectors: 1 to 1,000 a page, segments 1 to 16 given with their index', async () => {
    await invalid(list(target, { maxResults: 1001 }));
    await invalid(list(target, { maxResults: 0 }));
    await invalid(list(target, { segmentCount: 17, segmentIndex: 0 }));
    await invalid(list(target, { segmentCount: 2 }));
    await invalid(list(target, { segmentCount: 2, segmentIndex: 2 }));
  });

  test('a request of more than 20 MiB', async () => {
    // 500 vectors with 42,500 characters each: 21.3 MB of JSON, over the 20.97 MB of 20 MiB.
    const error = await refusalOf(
      put(
        target,
        Array.from({ length: 500 }, (_, i) => vector(`big-${i}`, [1, 2, 3, 4], { text: 't'.repeat(42_500) })),
      ),
    );
    expect(refusal(error)).toEqual({ name: 'ValidationException', status: 400 });
    expect(error.message).toContain(`a request may take ${20 * 1024 * 1024}`);
  });

  test('writes beyond 2,500 vectors or 1,000 requests a second to one index are TooManyRequestsException (429)', async () => {
    const rated = await newIndex({ dimension: 2, distanceMetric: 'euclidean' });
    now = Math.ceil(now / 1000) * 1000 + 1000;
    const batch = (n: number) => Array.from({ length: 500 }, (_, i) => vector(`v${n}-${i}`, [i, n]));
    for (let n = 0; n < 5; n++) await put(rated, batch(n));
    const throttled = await refusalOf(put(rated, [vector('one-more', [1, 1])]));
    expect(refusal(throttled)).toEqual({ name: 'TooManyRequestsException', status: 429 });
    expect(throttled.$retryable).toEqual({ throttling: true });
    // Another index has rates of its own.
    await put(target, [vector('elsewhere', [1, 2, 3, 4])]);
    // The next second takes writes again, deletes counted with puts.
    now += 1000;
    const remove = (key: string) =>
      s3v.client.send(
        new DeleteVectorsCommand({ vectorBucketName: rated.bucket, indexName: rated.index, keys: [key] }),
      );
    for (let i = 0; i < 1000; i += 50)
      await Promise.all(Array.from({ length: 50 }, (_, j) => remove(`k${i + j}`)));
    expect(refusal(await refusalOf(remove('k1000')))).toEqual({
      name: 'TooManyRequestsException',
      status: 429,
    });
    now += 1000;
    await remove('k1000');
  });

  test('10,000 vector buckets a region and 10,000 indexes a bucket are ServiceQuotaExceededException (402)', async () => {
    const quotas = await startEmulatedS3Vectors();
    try {
      const { client } = quotas;
      const names = Array.from({ length: S3_VECTORS_LIMITS.vectorBucketsPerRegion }, (_, i) => `quota-${i}`);
      for (let i = 0; i < names.length; i += 250) {
        await Promise.all(
          names
            .slice(i, i + 250)
            .map((name) => client.send(new CreateVectorBucketCommand({ vectorBucketName: name }))),
        );
      }
      const bucket = await refusalOf(
        client.send(new CreateVectorBucketCommand({ vectorBucketName: 'one-more' })),
      );
      expect(refusal(bucket)).toEqual({ name: 'ServiceQuotaExceededException', status: 402 });
      const index = (n: number) =>
        client.send(
          new CreateIndexCommand({
            vectorBucketName: 'quota-0',
            indexName: `index-${n}`,
            dataType: 'float32',
            dimension: 1,
            distanceMetric: 'euclidean',
          }),
        );
      for (let i = 0; i < S3_VECTORS_LIMITS.indexesPerBucket; i += 250) {
        await Promise.all(Array.from({ length: 250 }, (_, j) => index(i + j)));
      }
      expect(refusal(await refusalOf(index(S3_VECTORS_LIMITS.indexesPerBucket)))).toEqual({
        name: 'ServiceQuotaExceededException',
        status: 402,
      });
    } finally {
      await quotas.stop();
      removeDataDir(quotas.dir);
    }
  });
});

describe('filters', () => {
  let target: { bucket: string; index: string };
  beforeAll(async () => {
    target = await newIndex({
      dimension: 2,
      distanceMetric: 'euclidean',
      metadataConfiguration: { nonFilterableMetadataKeys: ['text'] },
    });
    await put(target, [
      vector('a', [0, 1], { tenant: 'acme', date: 100, labels: ['advent', 'hope'], text: 'a', live: true }),
      vector('b', [0, 2], { tenant: 'acme', date: 200, labels: ['lent'], text: 'b', live: false }),
      vector('c', [0, 3], { tenant: 'globex', date: 300, labels: [], text: 'c' }),
      vector('d', [0, 4], { tenant: 'globex', date: '400', labels: ['advent'], text: 'd', live: true }),
      vector('e', [0, 5], { tenant: 'initech', text: 'e' }),
    ]);
  });

  /** The keys a filter lets through, in key order. */
  const matching = async (filter: unknown) =>
    (
      (
        await query(target, {
          queryVector: { float32: [0, 0] },
          filter: filter as QueryVectorsCommandInput['filter'],
        })
      ).vectors ?? []
    )
      .map((v) => v.key)
      .sort();

  test.each<[string, unknown, string[]]>([
    ['a bare value ($eq implied)', { tenant: 'acme' }, ['a', 'b']],
    ['$eq', { tenant: { $eq: 'globex' } }, ['c', 'd']],
    ['$eq on an array: any element', { labels: { $eq: 'advent' } }, ['a', 'd']],
    ['$eq never converts types', { date: 400 }, []],
    ['$eq on a boolean', { live: true }, ['a', 'd']],
    ['$ne: also where the key is absent', { tenant: { $ne: 'acme' } }, ['c', 'd', 'e']],
    ['$ne on an array: no element equal', { labels: { $ne: 'advent' } }, ['b', 'c', 'e']],
    ['$gt', { date: { $gt: 100 } }, ['b', 'c']],
    ['$gte', { date: { $gte: 200 } }, ['b', 'c']],
    ['$lt', { date: { $lt: 300 } }, ['a', 'b']],
    ['$lte', { date: { $lte: 300 } }, ['a', 'b', 'c']],
    ['two operators on one key, both holding', { date: { $gte: 150, $lte: 350 } }, ['b', 'c']],
    ['$in', { tenant: { $in: ['globex', 'initech'] } }, ['c', 'd', 'e']],
    ['$in on an array: any element', { labels: { $in: ['hope', 'lent'] } }, ['a', 'b']],
    ['$nin: also where the key is absent', { labels: { $nin: ['advent'] } }, ['b', 'c', 'e']],
    ['$exists true', { labels: { $exists: true } }, ['a', 'b', 'c', 'd']],
    ['$exists false', { date: { $exists: false } }, ['e']],
    ['$startsWith', { tenant: { $startsWith: 'gl' } }, ['c', 'd']],
    ['$and', { $and: [{ tenant: 'acme' }, { date: { $gte: 150 } }] }, ['b']],
    ['$or', { $or: [{ tenant: 'initech' }, { labels: 'lent' }] }, ['b', 'e']],
    [
      '$and within $or',
      { $or: [{ $and: [{ tenant: 'globex' }, { labels: 'advent' }] }, { date: { $lt: 150 } }] },
      ['a', 'd'],
    ],
  ])('%s', async (_, filter, keys) => {
    await expect(matching(filter)).resolves.toEqual(keys);
  });

  test.each<[string, unknown]>([
    ['two keys in one filter object', { tenant: 'acme', date: 100 }],
    ['an empty filter', {}],
    ['an unknown operator', { tenant: { $regex: 'ac.*' } }],
    ['an operator at the top', { $eq: 'acme' }],
    ['$and of nothing', { $and: [] }],
    ['$or of something other than filters', { $or: { tenant: 'acme' } }],
    ['$gt of a string', { date: { $gt: '100' } }],
    ['$in of nothing', { tenant: { $in: [] } }],
    ['$in of an object', { tenant: { $in: [{ a: 1 }] } }],
    ['$exists of a string', { tenant: { $exists: 'yes' } }],
    ['$startsWith of a number', { tenant: { $startsWith: 1 } }],
    ['an array to equal', { labels: ['advent'] }],
    ['a condition that is an empty object', { tenant: {} }],
    ['a key that is non-filterable', { text: 'a' }],
    ['101 constraints', { tenant: { $in: Array.from({ length: 101 }, (_, i) => `t${i}`) } }],
    ['a filter that is not an object', 'tenant = acme'],
  ])('refuses %s with ValidationException (400)', async (_, filter) => {
    const error = await refusalOf(
      query(target, {
        queryVector: { float32: [0, 0] },
        filter: filter as QueryVectorsCommandInput['filter'],
      }),
    );
    expect(refusal(error)).toEqual({ name: 'ValidationException', status: 400 });
  });

  test('100 constraints are within the limit, $and and $or not counted', async () => {
    const values = Array.from({ length: 99 }, (_, i) => `t${i}`);
    await expect(matching({ $and: [{ tenant: { $in: [...values, 'acme'] } }] })).resolves.toEqual(['a', 'b']);
    await expect(
      matching({ $or: [{ tenant: { $in: values } }, { date: 300 }, { date: 200 }] }),
    ).rejects.toThrow(/101 constraints/);
  });

  test('filters before it searches: the top K among the matching vectors, however far', async () => {
    const { vectors } = await query(target, {
      topK: 1,
      queryVector: { float32: [0, 0] },
      filter: { tenant: 'initech' },
    });
    expect(vectors).toEqual([{ key: 'e' }]);
  });
});

describe('ranking', () => {
  test('cosine: nearest first by 1 − cosine similarity, with distance and metadata when asked', async () => {
    const target = await newIndex({ dimension: 3, distanceMetric: 'cosine' });
    const stored: [string, number[]][] = [
      ['same-direction', [2, 4, 6]],
      ['close', [1, 2, 2]],
      ['orthogonal', [2, -1, 0]],
      ['opposite', [-1, -2, -3]],
      ['apart', [3, 0, 1]],
    ];
    await put(
      target,
      stored.map(([key, data]) => vector(key, data, { key })),
    );
    const q = [1, 2, 3];
    const cosineDistance = (v: number[]) => {
      const dot = v.reduce((sum, x, i) => sum + x * (q[i] as number), 0);
      const norm = (u: number[]) => Math.sqrt(u.reduce((sum, x) => sum + x * x, 0));
      return 1 - dot / (norm(v) * norm(q));
    };
    const expected = stored
      .map(([key, data]) => ({ key, distance: cosineDistance(data) }))
      .sort((a, b) => a.distance - b.distance);
    const answer = await query(target, {
      queryVector: { float32: q },
      returnDistance: true,
      returnMetadata: true,
    });
    expect(answer.distanceMetric).toBe('cosine');
    expect(answer.vectors?.map((v) => v.key)).toEqual(expected.map((e) => e.key));
    expect(answer.vectors?.map((v) => v.key)).toEqual([
      'same-direction',
      'close',
      'apart',
      'orthogonal',
      'opposite',
    ]);
    answer.vectors?.forEach((v, i) => {
      expect(v.distance).toBeCloseTo(expected[i]?.distance as number, 6);
      expect(v.metadata).toEqual({ key: v.key });
    });
    expect(answer.vectors?.[0]?.distance).toBeCloseTo(0, 6);
    expect(answer.vectors?.at(-1)?.distance).toBeCloseTo(2, 6);
    // Neither distance nor metadata unless asked for.
    expect((await query(target, { topK: 2, queryVector: { float32: q } })).vectors).toEqual([
      { key: 'same-direction' },
      { key: 'close' },
    ]);
  });

  test('euclidean: nearest first by the L2 distance; equal distances in key order', async () => {
    const target = await newIndex({ dimension: 2, distanceMetric: 'euclidean' });
    await put(target, [
      vector('far', [10, 10]),
      vector('b-tie', [3, 4]),
      vector('a-tie', [-3, -4]),
      vector('near', [1, 0]),
      vector('origin', [0, 0]),
    ]);
    const answer = await query(target, { queryVector: { float32: [0, 0] }, returnDistance: true });
    expect(answer.distanceMetric).toBe('euclidean');
    expect(answer.vectors).toEqual([
      { key: 'origin', distance: 0 },
      { key: 'near', distance: 1 },
      { key: 'a-tie', distance: 5 },
      { key: 'b-tie', distance: 5 },
      { key: 'far', distance: Math.fround(Math.sqrt(200)) },
    ]);
  });

  test('the same ranking over dimensions that are no multiple of the SIMD lanes, against a plain computation', async () => {
    const dimension = 13;
    const target = await newIndex({ dimension, distanceMetric: 'euclidean' });
    // A fixed sequence rather than Math.random: a failure reproduces.
    let seed = 7;
    const next = () => {
      seed = (seed * 48_271) % 2_147_483_647;
      return seed / 2_147_483_647 - 0.5;
    };
    const stored = Array.from({ length: 300 }, (_, i) => ({
      key: `v${i}`,
      data: Array.from({ length: dimension }, () => Math.fround(next())),
    }));
    await put(
      target,
      stored.slice(0, 300).map(({ key, data }) => vector(key, data)),
    );
    const q = Array.from({ length: dimension }, () => Math.fround(next()));
    const expected = stored
      .map(({ key, data }) => ({
        key,
        distance: Math.sqrt(data.reduce((s, x, i) => s + (x - (q[i] as number)) ** 2, 0)),
      }))
      .sort((a, b) => a.distance - b.distance)
      .slice(0, 20);
    const answer = await query(target, { topK: 20, queryVector: { float32: q }, returnDistance: true });
    expect(answer.vectors?.map((v) => v.key)).toEqual(expected.map((e) => e.key));
    answer.vectors?.forEach((v, i) => {
      expect(v.distance).toBeCloseTo(expected[i]?.distance as number, 5);
    });
  });

  test('more than 100 results come in pages of 100, each page continuing the one ranking', async () => {
    const target = await newIndex({ dimension: 1, distanceMetric: 'euclidean' });
    const keys = Array.from({ length: 300 }, (_, i) => `k${String(i).padStart(3, '0')}`);
    for (let i = 0; i < keys.length; i += 100) {
      await put(
        target,
        keys.slice(i, i + 100).map((key, j) => vector(key, [i + j])),
      );
    }
    const input = {
      topK: 250,
      queryVector: { float32: [0] },
      filter: { $or: [{ none: 1 }, { none: { $exists: false } }] },
    };
    const first = await query(target, input);
    expect(first.vectors?.map((v) => v.key)).toEqual(keys.slice(0, 100));
    const second = await query(target, { ...input, nextToken: first.nextToken });
    expect(second.vectors?.map((v) => v.key)).toEqual(keys.slice(100, 200));
    const third = await query(target, { ...input, nextToken: second.nextToken });
    expect(third.vectors?.map((v) => v.key)).toEqual(keys.slice(200, 250));
    expect(third.nextToken).toBeUndefined();
    // The token is good for the same query only.
    for (const other of [
      { topK: 251 },
      { queryVector: { float32: [1] } },
      { filter: { none: { $exists: false } } },
    ]) {
      const error = await refusalOf(query(target, { ...input, ...other, nextToken: first.nextToken }));
      expect(refusal(error)).toEqual({ name: 'ValidationException', status: 400 });
    }
    expect(refusal(await refusalOf(query(target, { ...input, nextToken: 'not-a-token' })))).toEqual({
      name: 'ValidationException',
      status: 400,
    });
    // Up to 100 results, one page.
    expect((await query(target, { topK: 100, queryVector: { float32: [0] } })).nextToken).toBeUndefined();
  });

  test('a page token expires after some minutes', async () => {
    const target = await newIndex({ dimension: 1, distanceMetric: 'euclidean' });
    await put(
      target,
      Array.from({ length: 150 }, (_, i) => vector(`k${i}`, [i])),
    );
    const input = { topK: 150, queryVector: { float32: [0] } };
    const first = await query(target, input);
    now += 10 * 60_000;
    const error = await refusalOf(query(target, { ...input, nextToken: first.nextToken }));
    expect(refusal(error)).toEqual({ name: 'ValidationException', status: 400 });
  });
});

describe('durability', () => {
  test('buckets, indexes and vectors, as last written, outlive a restart', async () => {
    let own = await startEmulatedS3Vectors();
    try {
      await own.client.send(new CreateVectorBucketCommand({ vectorBucketName: 'durable' }));
      await own.client.send(
        new CreateIndexCommand({
          vectorBucketName: 'durable',
          indexName: 'passages',
          dataType: 'float32',
          dimension: 3,
          distanceMetric: 'cosine',
          metadataConfiguration: { nonFilterableMetadataKeys: ['text'] },
        }),
      );
      const at = { vectorBucketName: 'durable', indexName: 'passages' };
      await own.client.send(
        new PutVectorsCommand({
          ...at,
          vectors: [
            vector('a', [1, 0, 0], { text: 'first' }),
            vector('b', [0, 1, 0]),
            vector('c', [0, 0, 1]),
          ],
        }),
      );
      await own.client.send(
        new PutVectorsCommand({ ...at, vectors: [vector('a', [1, 1, 0], { text: 'second' })] }),
      );
      await own.client.send(new DeleteVectorsCommand({ ...at, keys: ['b'] }));
      own = await own.restart();
      const { index } = await own.client.send(new GetIndexCommand(at));
      expect(index?.metadataConfiguration).toEqual({ nonFilterableMetadataKeys: ['text'] });
      const { vectors } = await own.client.send(
        new ListVectorsCommand({ ...at, returnData: true, returnMetadata: true }),
      );
      expect(vectors).toEqual([
        { key: 'a', data: { float32: [1, 1, 0] }, metadata: { text: 'second' } },
        { key: 'c', data: { float32: [0, 0, 1] }, metadata: {} },
      ]);
      // The non-filterable key is still refused in a filter, and queries rank as before.
      const filtered = await refusalOf(
        own.client.send(
          new QueryVectorsCommand({
            ...at,
            topK: 1,
            queryVector: { float32: [1, 0, 0] },
            filter: { text: 'x' },
          }),
        ),
      );
      expect(refusal(filtered)).toEqual({ name: 'ValidationException', status: 400 });
      const nearest = await own.client.send(
        new QueryVectorsCommand({ ...at, topK: 1, queryVector: { float32: [1, 0, 0] } }),
      );
      expect(nearest.vectors).toEqual([{ key: 'a' }]);
    } finally {
      await own.stop();
      removeDataDir(own.dir);
    }
  });

  test('a log mostly of replaced vectors is rewritten with the live ones on start', async () => {
    let own = await startEmulatedS3Vectors({ writeRateLimits: false });
    try {
      await own.client.send(new CreateVectorBucketCommand({ vectorBucketName: 'compacted' }));
      await own.client.send(
        new CreateIndexCommand({
          vectorBucketName: 'compacted',
          indexName: 'passages',
          dataType: 'float32',
          dimension: 64,
          distanceMetric: 'euclidean',
        }),
      );
      const at = { vectorBucketName: 'compacted', indexName: 'passages' };
      for (let round = 0; round < 5; round++) {
        await own.client.send(
          new PutVectorsCommand({
            ...at,
            vectors: Array.from({ length: 100 }, (_, i) => vector(`k${i}`, filled(64, round))),
          }),
        );
      }
      const logSize = () => statSync(join(own.dir, 'vectors.log')).size;
      const before = logSize();
      own = await own.restart();
      expect(logSize()).toBeLessThan(before / 4);
      const { vectors } = await own.client.send(
        new GetVectorsCommand({ ...at, keys: ['k0', 'k99'], returnData: true }),
      );
      expect(vectors).toEqual([
        { key: 'k0', data: { float32: filled(64, 4) } },
        { key: 'k99', data: { float32: filled(64, 4) } },
      ]);
      // No temporary file is left beside it.
      expect(readdirSync(own.dir)).toEqual(['vectors.log']);
    } finally {
      await own.stop();
      removeDataDir(own.dir);
    }
  });

  test('a record cut short by a crash is dropped, and what came before it is kept', async () => {
    const lines: string[] = [];
    let own = await startEmulatedS3Vectors({ log: (line) => lines.push(line) });
    try {
      await own.client.send(new CreateVectorBucketCommand({ vectorBucketName: 'torn' }));
      await own.stop();
      // The frame of a record of 100 bytes, and 10 of them.
      const frame = Buffer.alloc(8);
      frame.writeUInt32LE(100, 0);
      appendFileSync(join(own.dir, 'vectors.log'), Buffer.concat([frame, Buffer.alloc(10)]));
      own = await startEmulatedS3Vectors({ dir: own.dir, log: (line) => lines.push(line) });
      const { vectorBucket } = await own.client.send(
        new GetVectorBucketCommand({ vectorBucketName: 'torn' }),
      );
      expect(vectorBucket?.vectorBucketName).toBe('torn');
      expect(lines).toEqual([expect.stringContaining('dropped a record cut short')]);
      // And the log goes on from there.
      await own.client.send(new CreateVectorBucketCommand({ vectorBucketName: 'after-tear' }));
      own = await own.restart();
      await own.client.send(new GetVectorBucketCommand({ vectorBucketName: 'after-tear' }));
    } finally {
      await own.stop();
      removeDataDir(own.dir);
    }
  });
});
