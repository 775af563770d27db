import { resourceEnv } from '../../../config/layout';
import { S3InputStore } from '../../adapters/s3-input-store';
import { S3MultipartInputs } from '../../adapters/s3-multipart-inputs';
import { s3Client } from '../clients/s3';
import { requireEnv } from '../env';
import { once } from '../once';

export const inputStore = once(() => new S3InputStore(s3Client(), requireEnv(resourceEnv.inputBucket)));

export const multipartInputs = once(
  () => new S3MultipartInputs(s3Client(), requireEnv(resourceEnv.inputBucket)),
);
