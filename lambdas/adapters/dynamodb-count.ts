import { type DynamoDBDocumentClient, QueryCommand } from '@aws-sdk/lib-dynamodb';
import { jobTable } from '../../config/layout';

/** The items of one partition of an index, counted a page (1 MB of index) at a time: nothing is read back. */
export async function countPartition(
  client: DynamoDBDocumentClient,
  index: { readonly tableName: string; readonly indexName: string; readonly partitionKey: string },
  partition: string,
): Promise<number> {
  let count = 0;
  let start: Record<string, unknown> | undefined;
  do {
    const { Count = 0, LastEvaluatedKey } = await client.send(
      new QueryCommand({
        TableName: index.tableName,
        IndexName: index.indexName,
        KeyConditionExpression: '#partition = :partition',
        ExpressionAttributeNames: { '#partition': index.partitionKey },
        ExpressionAttributeValues: { ':partition': partition },
        Select: 'COUNT',
        ...(start ? { ExclusiveStartKey: start } : {}),
      }),
    );
    count += Count;
    start = LastEvaluatedKey;
  } while (start);
  return count;
}

const [, byTenantStatus] = jobTable.indexes;

/** The jobs of one partition (a tenant's status) of the job table's per-tenant status index. */
export function countTenantJobs(
  client: DynamoDBDocumentClient,
  tableName: string,
  partition: string,
): Promise<number> {
  return countPartition(
    client,
    { tableName, indexName: byTenantStatus.name, partitionKey: byTenantStatus.partitionKey },
    partition,
  );
}
