import { DeleteCommand, type DynamoDBDocumentClient, PutCommand, QueryCommand } from '@aws-sdk/lib-dynamodb';
import { connectionTable } from '../../config/layout';

const [byJob] = connectionTable.indexes;

export interface Subscription {
  readonly connectionId: string;
  readonly jobId: string;
  readonly tenantId: string;
  readonly connectedAt: string;
  /** Epoch seconds: the item goes by itself if the disconnect is never seen. */
  readonly expiresAt: number;
}

/** Who watches which job: one item per WebSocket connection. */
export class DynamoDbSubscriptions {
  constructor(
    private readonly client: DynamoDBDocumentClient,
    private readonly tableName: string,
  ) {}

  async add(subscription: Subscription): Promise<void> {
    await this.client.send(new PutCommand({ TableName: this.tableName, Item: subscription }));
  }

  async remove(connectionId: string): Promise<void> {
    await this.client.send(new DeleteCommand({ TableName: this.tableName, Key: { connectionId } }));
  }

  async connectionsOf(jobId: string): Promise<string[]> {
    const connections: string[] = [];
    let ExclusiveStartKey: Record<string, unknown> | undefined;
    do {
      const page = await this.client.send(
        new QueryCommand({
          TableName: this.tableName,
          IndexName: byJob.name,
          KeyConditionExpression: '#job = :job',
          ExpressionAttributeNames: { '#job': byJob.partitionKey },
          ExpressionAttributeValues: { ':job': jobId },
          ExclusiveStartKey,
        }),
      );
      for (const item of page.Items ?? []) connections.push(item.connectionId as string);
      ExclusiveStartKey = page.LastEvaluatedKey;
    } while (ExclusiveStartKey);
    return connections;
  }
}
