import { emulatedS3VectorsIndex } from './emulated-vector-index';
import { type IndexUnderTest, inProcessIndex } from './vector-index';

/**
 * The indexes the search section measures, in the order it prints them: the
 * in-process exact scan, then the local S3 Vectors emulator over HTTP through
 * the AWS SDK (./emulated-vector-index.ts), each filled with the same vectors
 * and asked the same queries.
 */
export async function vectorIndexesUnderTest(dimensions: number): Promise<IndexUnderTest[]> {
  return [inProcessIndex(dimensions), await emulatedS3VectorsIndex(dimensions)];
}
