import { S3Client } from '@aws-sdk/client-s3';
import { resourceEnv } from '../../../config/layout';
import { once } from '../once';

/** The S3 client of the input and output buckets. */
export const s3Client = once(
  () => new S3Client({ forcePathStyle: process.env[resourceEnv.s3ForcePathStyle] === 'true' }),
);
