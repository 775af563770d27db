import { ConditionalCheckFailedException } from '@aws-sdk/client-dynamodb';
import {
  DeleteCommand,
  type DynamoDBDocumentClient,
  PutCommand,
  QueryCommand,
  UpdateCommand,
} from '@aws-sdk/lib-dynamodb';
import type { ProviderName } from '../../config/providers';
import type { WaitingEntry, WaitingLines, WaitingTenant } from '../domain/ports';

/** One tenant's line at one provider: its entries sort by their place. */
const lineKey = (provider: ProviderName, tenant: string) => `WAIT#${provider}#${tenant}`;
/** The set of tenants whose line at the provider may hold jobs, one item each. */
const waitingKey = (provider: ProviderName) => `WAITING#${provider}`;

/**
 * The waiting lines in the job table, as items of their own (no index): an
 * entry per waiting job under its tenant's line (`WAIT#<provider>#<tenant>`,
 * sorted by place), and a marker per tenant with waiting jobs under the
 * provider (`WAITING#<provider>`). Reads are consistent, so a job put in a
 * line is seen by the next choice; a choice costs one query of the markers
 * (a page per 1 MB of tenants) and one of the chosen line's head.
 */
export class DynamoDbWaitingLines implements WaitingLines {
  constructor(
    private readonly client: DynamoDBDocumentClient,
    private readonly tableName: string,
  ) {}

  async add(entry: WaitingEntry): Promise<void> {
    await this.client.send(
      new PutCommand({
        TableName: this.tableName,
        Item: { pk: lineKey(entry.provider, entry.tenant), sk: entry.place, jobId: entry.jobId },
      }),
    );
    // After the entry: a retire that read the marks before this one finds them moved and keeps the tenant.
    await this.client.send(
      new UpdateCommand({
        TableName: this.tableName,
        Key: { pk: waitingKey(entry.provider), sk: entry.tenant },
        UpdateExpression: 'ADD marks :one',
        ExpressionAttributeValues: { ':one': 1 },
      }),
    );
  }

  async remove(entry: WaitingEntry): Promise<void> {
    await this.client.send(
      new DeleteCommand({
        TableName: this.tableName,
        Key: { pk: lineKey(entry.provider, entry.tenant), sk: entry.place },
      }),
    );
  }

  async tenants(provider: ProviderName): Promise<readonly WaitingTenant[]> {
    const tenants: WaitingTenant[] = [];
    let start: Record<string, unknown> | undefined;
    do {
      const page = await this.client.send(
        new QueryCommand({
          TableName: this.tableName,
          KeyConditionExpression: 'pk = :pk',
          ExpressionAttributeValues: { ':pk': waitingKey(provider) },
          ConsistentRead: true,
          ExclusiveStartKey: start,
        }),
      );
      for (const item of page.Items ?? [])
        tenants.push({ tenant: String(item.sk), marks: Number(item.marks) });
      start = page.LastEvaluatedKey;
    } while (start);
    return tenants;
  }

  async head(provider: ProviderName, tenant: string, limit: number): Promise<readonly WaitingEntry[]> {
    const page = await this.client.send(
      new QueryCommand({
        TableName: this.tableName,
        KeyConditionExpression: 'pk = :pk',
        ExpressionAttributeValues: { ':pk': lineKey(provider, tenant) },
        ConsistentRead: true,
        Limit: limit,
      }),
    );
    return (page.Items ?? []).map((item) => ({
      provider,
      tenant,
      place: String(item.sk),
      jobId: String(item.jobId),
    }));
  }

  async retire(provider: ProviderName, tenant: WaitingTenant): Promise<void> {
    try {
      await this.client.send(
        new DeleteCommand({
          TableName: this.tableName,
          Key: { pk: waitingKey(provider), sk: tenant.tenant },
          ConditionExpression: 'marks = :marks',
          ExpressionAttributeValues: { ':marks': tenant.marks },
        }),
      );
    } catch (error) {
      if (!(error instanceof ConditionalCheckFailedException)) throw error;
    }
  }
}
