import { ConditionalCheckFailedException } from '@aws-sdk/client-dynamodb';
import { type DynamoDBDocumentClient, PutCommand } from '@aws-sdk/lib-dynamodb';
import { jobTable } from '../../config/layout';

/**
 * Puts an item of the job table unless one with its key is there already:
 * the write a create under an Idempotency-Key makes. False when the key was
 * taken; the caller reads what holds it.
 */
export async function putIfAbsent(
  client: DynamoDBDocumentClient,
  tableName: string,
  item: Record<string, unknown>,
): Promise<boolean> {
  try {
    await client.send(
      new PutCommand({
        TableName: tableName,
        Item: item,
        ConditionExpression: 'attribute_not_exists(#pk)',
        ExpressionAttributeNames: { '#pk': jobTable.partitionKey },
      }),
    );
    return true;
  } catch (error) {
    if (error instanceof ConditionalCheckFailedException) return false;
    throw error;
  }
}
