import {
  DeleteVectorsCommand,
  PutVectorsCommand,
  QueryVectorsCommand,
  type S3VectorsClient,
} from '@aws-sdk/client-s3vectors';
import type { PassageMetadata, PassageVector, VectorFilter, VectorHit, VectorIndex } from '../domain/ports';

/**
 * The search index in Amazon S3 Vectors: one vector bucket and one index per
 * deployment. Limits of the service ("Limitations and restrictions",
 * https://docs.aws.amazon.com/AmazonS3/latest/userguide/s3-vectors-limitations.html):
 * at most 500 vectors per PutVectors and per DeleteVectors call, 100 results
 * per QueryVectors, a request payload of 20 MiB, 2 KB of filterable metadata
 * and 40 KB in all per vector. A run of 500 vectors of 1,024 dimensions is
 * about 5 MB of JSON, well inside a call.
 */
export const VECTORS_PER_CALL = 500;
export const TOP_K_MAX = 100;

export class S3VectorsIndex implements VectorIndex {
  constructor(
    private readonly client: S3VectorsClient,
    private readonly vectorBucketName: string,
    private readonly indexName: string,
    readonly metric: 'cosine' | 'euclidean',
  ) {}

  async put(vectors: readonly PassageVector[]): Promise<void> {
    for (let from = 0; from < vectors.length; from += VECTORS_PER_CALL) {
      await this.client.send(
        new PutVectorsCommand({
          vectorBucketName: this.vectorBucketName,
          indexName: this.indexName,
          vectors: vectors.slice(from, from + VECTORS_PER_CALL).map((vector) => ({
            key: vector.key,
            data: { float32: [...vector.data] },
            metadata: { ...vector.metadata, labels: [...vector.metadata.labels] },
          })),
        }),
      );
    }
  }

  async delete(keys: readonly string[]): Promise<void> {
    for (let from = 0; from < keys.length; from += VECTORS_PER_CALL) {
      await this.client.send(
        new DeleteVectorsCommand({
          vectorBucketName: this.vectorBucketName,
          indexName: this.indexName,
          keys: keys.slice(from, from + VECTORS_PER_CALL),
        }),
      );
    }
  }

  async query(vector: readonly number[], topK: number, filter: VectorFilter): Promise<VectorHit[]> {
    const answer = await this.client.send(
      new QueryVectorsCommand({
        vectorBucketName: this.vectorBucketName,
        indexName: this.indexName,
        topK: Math.min(topK, TOP_K_MAX),
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
