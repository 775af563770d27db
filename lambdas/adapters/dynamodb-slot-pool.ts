import { ConditionalCheckFailedException } from '@aws-sdk/client-dynamodb';
import { type DynamoDBDocumentClient, GetCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { LEGACY_PROVIDER, type ProviderName } from '../../config/providers';
import type { SlotPool } from '../domain/ports';

/**
 * The item holding one provider's in-flight count and the set of its slot
 * holders. The first provider keeps the item it had when it was the only one,
 * so slots held across the upgrade stay counted.
 */
export const slotPoolKey = (provider: ProviderName) =>
  provider === LEGACY_PROVIDER
    ? ({ pk: 'SLOTS', sk: 'SLOTS' } as const)
    : { pk: `SLOTS#${provider}`, sk: 'SLOTS' };

/**
 * The in-flight limit as one DynamoDB item: a counter and the holders' ids,
 * changed only by conditional updates (the AWS sample "Controlling concurrency
 * in distributed systems using AWS Step Functions"). The count and the set are
 * updated together, so the count is always the set's size.
 */
export class DynamoDbSlotPool implements SlotPool {
  private readonly key: { readonly pk: string; readonly sk: string };

  constructor(
    private readonly client: DynamoDBDocumentClient,
    private readonly tableName: string,
    provider: ProviderName = LEGACY_PROVIDER,
  ) {
    this.key = slotPoolKey(provider);
  }

  async acquire(jobId: string, limit: number): Promise<boolean> {
    try {
      await this.client.send(
        new UpdateCommand({
          TableName: this.tableName,
          Key: this.key,
          UpdateExpression: 'ADD inFlight :one, holders :job',
          ConditionExpression:
            '(attribute_not_exists(inFlight) OR inFlight < :limit) AND NOT contains(holders, :jobId)',
          ExpressionAttributeValues: {
            ':one': 1,
            ':job': new Set([jobId]),
            ':jobId': jobId,
            ':limit': limit,
          },
        }),
      );
      return true;
    } catch (error) {
      if (!(error instanceof ConditionalCheckFailedException)) throw error;
    }
    // Full, or this job already holds a slot (a redelivered message): only the latter may go on.
    return (await this.holders()).includes(jobId);
  }

  async release(jobId: string): Promise<boolean> {
    try {
      await this.client.send(
        new UpdateCommand({
          TableName: this.tableName,
          Key: this.key,
          UpdateExpression: 'ADD inFlight :minusOne DELETE holders :job',
          ConditionExpression: 'contains(holders, :jobId)',
          ExpressionAttributeValues: { ':minusOne': -1, ':job': new Set([jobId]), ':jobId': jobId },
        }),
      );
      return true;
    } catch (error) {
      if (error instanceof ConditionalCheckFailedException) return false;
      throw error;
    }
  }

  async holders(): Promise<readonly string[]> {
    const { Item } = await this.client.send(
      new GetCommand({ TableName: this.tableName, Key: this.key, ConsistentRead: true }),
    );
    const holders = Item?.holders as Set<string> | undefined;
    return holders ? [...holders] : [];
  }
}
