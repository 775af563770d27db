import {
  DeleteVectorsCommand,
  GetVectorsCommand,
  PutVectorsCommand,
  QueryVectorsCommand,
  type S3VectorsClient,
} from '@aws-sdk/client-s3vectors';
import { S3_VECTORS_LIMITS } from '../../config/s3-vectors';
import type { PassageMetadata, PassageVector, VectorFilter, VectorHit, VectorIndex } from '../domain/ports';

/**
 * The search index in Amazon S3 Vectors: one vector bucket and one index per
 * deployment, within the service's limits (config/s3-vectors.ts): 500 vectors
 * per PutVectors and per DeleteVectors call, a page of 100 results per
 * QueryVectors (a search asks for at most 50, so one page), a request of
 * 20 MiB. A call of 500 vectors of 1,024 dimensions is about 5 MB of JSON.
 */
const { vectorsPerPut, keysPerDelete, keysPerGet, queryResultsPerPage } = S3_VECTORS_LIMITS;

export class S3VectorsIndex implements VectorIndex {
  constructor(
    private readonly client: S3VectorsClient,
    private readonly vectorBucketName: string,
    private readonly indexName: string,
    readonly metric: 'cosine' | 'euclidean',
  ) {}

  async put(vectors: readonly PassageVector[]): Promise<void> {
    for (let from = 0; from < vectors.length; from += vectorsPerPut) {
      await this.client.send(
        new PutVectorsCommand({
          vectorBucketName: this.vectorBucketName,
          indexName: this.indexName,
          vectors: vectors.slice(from, from + vectorsPerPut).map((vector) => ({
            key: vector.key,
            data: { float32: [...vector.data] },
            metadata: { ...vector.metadata, labels: [...vector.metadata.labels] },
          })),
        }),
      );
    }
  }

  async delete(keys: readonly string[]): Promise<void> {
    for (let from = 0; from < keys.length; from += keysPerDelete) {
      await this.client.send(
        new DeleteVectorsCommand({
          vectorBucketName: this.vectorBucketName,
          indexName: this.indexName,
          keys: keys.slice(from, from + keysPerDelete),
        }),
      );
    }
  }

  async get(keys: readonly string[]): Promise<PassageVector[]> {
    const found: PassageVector[] = [];
    for (let from = 0; from < keys.length; from += keysPerGet) {
      const answer = await this.client.send(
        new GetVectorsCommand({
          vectorBucketName: this.vectorBucketName,
          indexName: this.indexName,
          keys: keys.slice(from, from + keysPerGet),
          returnData: true,
          returnMetadata: true,
        }),
      );
      for (const vector of answer.vectors ?? []) {
        const data = vector.data?.float32;
        if (vector.key === undefined || !data || !vector.metadata) continue;
        found.push({ key: vector.key, data, metadata: vector.metadata as unknown as PassageMetadata });
      }
    }
    return found;
  }

  async query(vector: readonly number[], topK: number, filter: VectorFilter): Promise<VectorHit[]> {
    const answer = await this.client.send(
      new QueryVectorsCommand({
        vectorBucketName: this.vectorBucketName,
        indexName: this.indexName,
        topK: Math.min(topK, queryResultsPerPage),
        queryVector: { float32: [...vector] },
        filter: filter as Record<string, never>,
        returnMetadata: true,
        returnDistance: true,
      }),
    );
    return (answer.vectors ?? []).flatMap((hit) =>
      hit.key === undefined || hit.distance === undefined || !hit.metadata
        ? []
        : [{ key: hit.key, distance: hit.distance, metadata: hit.metadata as unknown as PassageMetadata }],
    );
  }
}
