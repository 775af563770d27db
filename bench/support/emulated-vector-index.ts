import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  CreateIndexCommand,
  CreateVectorBucketCommand,
  PutVectorsCommand,
  QueryVectorsCommand,
  S3VectorsClient,
} from '@aws-sdk/client-s3vectors';
import { S3_VECTORS_LIMITS } from '../../config/s3-vectors';
import { type S3VectorsEmulator, startS3VectorsEmulator } from '../../local/emulators/s3-vectors';
import { VectorLog } from '../../local/emulators/s3-vectors-store';
import type { IndexedVector, IndexUnderTest, VectorIndex } from './vector-index';

/**
 * The local S3 Vectors emulator (local/emulators/s3-vectors.ts) as the index
 * a search is timed through: every query a `QueryVectors` of
 * `@aws-sdk/client-s3vectors` over HTTP, with the tenant filter as the
 * search handler sends it (`{tenant: {$eq: …}}`), the emulator serving from
 * this process on loopback.
 *
 * Loading a thousand hours through `PutVectors` takes most of a minute (about
 * 180 requests of 5 MB of JSON), so the vectors are written straight into the
 * emulator's own log (`VectorLog` of local/emulators/s3-vectors-store.ts,
 * the records it writes itself) and the emulator replays it when it starts.
 * The bucket and the index are made through the API first, so the log holds
 * them as the emulator records them; and the first batch is held back and put
 * through `PutVectors` once the emulator serves, so the emulator's own checks
 * (keys, dimension, metadata, no zero vector) pass on vectors of the same
 * making as the rest.
 */

const BUCKET = 'bench-sermons';
const INDEX = 'passages';

function clientOf(emulator: S3VectorsEmulator): S3VectorsClient {
  return new S3VectorsClient({
    endpoint: emulator.url,
    region: 'us-east-1',
    credentials: { accessKeyId: 'bench', secretAccessKey: 'bench' },
  });
}

const putRequest = (vectors: readonly IndexedVector[]) =>
  new PutVectorsCommand({
    vectorBucketName: BUCKET,
    indexName: INDEX,
    vectors: vectors.map((vector) => ({
      key: vector.key,
      data: { float32: Array.from(vector.data) },
      metadata: { ...vector.metadata },
    })),
  });

export async function emulatedS3VectorsIndex(dimensions: number): Promise<IndexUnderTest> {
  const dataDir = mkdtempSync(join(tmpdir(), 'longhaul-bench-s3vectors-'));
  let emulator: S3VectorsEmulator | undefined;
  let client: S3VectorsClient | undefined;
  let log: VectorLog | undefined;
  const close = async () => {
    client?.destroy();
    await emulator?.close();
    log?.close();
    rmSync(dataDir, { recursive: true, force: true });
  };
  try {
    emulator = await startS3VectorsEmulator({ dataDir });
    client = clientOf(emulator);
    await client.send(new CreateVectorBucketCommand({ vectorBucketName: BUCKET }));
    await client.send(
      new CreateIndexCommand({
        vectorBucketName: BUCKET,
        indexName: INDEX,
        dataType: 'float32',
        dimension: dimensions,
        distanceMetric: 'cosine',
      }),
    );
    client.destroy();
    client = undefined;
    await emulator.close();
    emulator = undefined;
    // Replays the bucket and the index (nothing to apply here), then takes appended records.
    log = VectorLog.open(
      dataDir,
      () => {},
      () => {},
    );
  } catch (error) {
    await close();
    throw error;
  }

  let held: readonly IndexedVector[] | undefined;
  let logged = 0;
  const index: VectorIndex = {
    async put(vectors) {
      if (vectors.length > S3_VECTORS_LIMITS.vectorsPerPut) {
        throw new RangeError(
          `PutVectors takes at most ${S3_VECTORS_LIMITS.vectorsPerPut} vectors, got ${vectors.length}`,
        );
      }
      if (client) {
        await client.send(putRequest(vectors));
        return;
      }
      if (!log) throw new Error('the emulated index is closed');
      if (held === undefined) {
        held = vectors.map((vector) => ({ ...vector, data: Float32Array.from(vector.data) }));
        return;
      }
      const data = new Float32Array(vectors.length * dimensions);
      vectors.forEach((vector, i) => {
        if (vector.data.length !== dimensions) {
          throw new RangeError(
            `vector ${vector.key} has ${vector.data.length} dimensions; the index has ${dimensions}`,
          );
        }
        data.set(vector.data, i * dimensions);
      });
      log.append(
        {
          op: 'put',
          bucket: BUCKET,
          index: INDEX,
          keys: vectors.map((vector) => vector.key),
          metadata: vectors.map((vector) => ({ ...vector.metadata })),
        },
        data,
      );
      logged += vectors.length;
    },
    async query(vector, topK, filter) {
      if (!client) throw new Error('the emulated index serves once it is ready');
      const answer = await client.send(
        new QueryVectorsCommand({
          vectorBucketName: BUCKET,
          indexName: INDEX,
          topK,
          queryVector: { float32: Array.from(vector) },
          filter: Object.fromEntries(Object.entries(filter).map(([name, value]) => [name, { $eq: value }])),
          returnMetadata: true,
          returnDistance: true,
        }),
      );
      return (answer.vectors ?? []).map((hit) => {
        if (hit.key === undefined || hit.distance === undefined)
          throw new Error('QueryVectors answered a hit without its key or distance');
        return { key: hit.key, distance: hit.distance };
      });
    },
  };

  return {
    index,
    name: 'the local S3 Vectors emulator over HTTP, QueryVectors of @aws-sdk/client-s3vectors',
    get loading() {
      return `${logged.toLocaleString('en-US')} vectors written to the emulator's log in its own format and replayed at its start, ${held?.length ?? 0} put through PutVectors`;
    },
    async ready() {
      log?.close();
      log = undefined;
      emulator = await startS3VectorsEmulator({ dataDir });
      client = clientOf(emulator);
      if (held) await client.send(putRequest(held));
    },
    close,
  };
}
