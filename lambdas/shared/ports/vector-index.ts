import { resourceEnv } from '../../../config/layout';
import { S3VectorsIndex } from '../../adapters/s3-vectors-index';
import { s3VectorsClient } from '../clients/s3vectors';
import { requireEnv, runtimeSettings } from '../env';
import { once } from '../once';

export const vectorIndex = once(
  () =>
    new S3VectorsIndex(
      s3VectorsClient(),
      requireEnv(resourceEnv.vectorBucketName),
      requireEnv(resourceEnv.vectorIndexName),
      runtimeSettings().vectorDistanceMetric as 'cosine' | 'euclidean',
    ),
);
