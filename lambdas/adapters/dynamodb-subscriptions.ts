import { ConditionalCheckFailedException } from '@aws-sdk/client-dynamodb';
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

/** A connection watching a job, as the publisher needs it. */
export type Subscriber = Pick<Subscription, 'connectionId' | 'connectedAt'>;

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

  /**
   * Removes a subscription only if it was made before `cutoff` (ISO-8601), in
   * one conditional write, so a publisher that finds a connection gone can
   * never remove one that is still connecting; true if it was removed.
   */
  async removeIfConnectedBefore(connectionId: string, cutoff: string): Promise<boolean> {
    try {
      await this.client.send(
        new DeleteCommand({
          TableName: this.tableName,
          Key: { connectionId },
          ConditionExpression: 'connectedAt < :cutoff',
          ExpressionAttributeValues: { ':cutoff': cutoff },
        }),
      );
      return true;
    } catch (error) {
      if (error instanceof ConditionalCheckFailedException) return false;
      throw error;
    }
  }

  async connectionsOf(jobId: string): Promise<Subscriber[]> {
    const connections: Subscriber[] = [];
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
      for (const item of page.Items ?? []) {
        connections.push({
          connectionId: item.connectionId as string,
          connectedAt: item.connectedAt as string,
        });
      }
      ExclusiveStartKey = page.LastEvaluatedKey;
    } while (ExclusiveStartKey);
    return connections;
  }
}
