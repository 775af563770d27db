import { ListVectorsCommand } from '@aws-sdk/client-s3vectors';
import { type LocalEndpoints, s3VectorsClient } from '../../../local/harness/local-stack';

/** Every key in the local stack's passage index, page by page, as an operator's listing would read them. */
export async function storedVectorKeys(endpoints: LocalEndpoints): Promise<string[]> {
  const client = s3VectorsClient(endpoints);
  const keys: string[] = [];
  let nextToken: string | undefined;
  do {
    const page = await client.send(
      new ListVectorsCommand({
        vectorBucketName: endpoints.vectorBucketName,
        indexName: endpoints.vectorIndexName,
        ...(nextToken ? { nextToken } : {}),
      }),
    );
    for (const vector of page.vectors ?? []) if (vector.key) keys.push(vector.key);
    nextToken = page.nextToken;
  } while (nextToken);
  return keys;
}

/** The recording (publish job) a vector key belongs to: `<tenant>/<job>/<passage>`. */
export const itemOfVectorKey = (key: string): string | undefined => key.split('/')[1];
