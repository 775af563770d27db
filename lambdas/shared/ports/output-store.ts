import { resourceEnv } from '../../../config/layout';
import { S3OutputStore } from '../../adapters/s3-output-store';
import { s3Client } from '../clients/s3';
import { requireEnv, runtimeSettings } from '../env';
import { once } from '../once';

export const outputStore = once(
  () =>
    new S3OutputStore(
      s3Client(),
      requireEnv(resourceEnv.outputBucket),
      runtimeSettings().outputUrlTtlSeconds,
    ),
);
