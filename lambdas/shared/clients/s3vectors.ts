import { S3VectorsClient } from '@aws-sdk/client-s3vectors';
import { once } from '../once';

/** The S3 Vectors client of the search index. */
export const s3VectorsClient = once(() => new S3VectorsClient({}));
