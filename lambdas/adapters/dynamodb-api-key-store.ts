import { type DynamoDBDocumentClient, GetCommand, QueryCommand } from '@aws-sdk/lib-dynamodb';
import { apiKeyTable } from '../../config/layout';
import type { TenantKeys } from '../domain/ports';
import type { ApiKeyRecord } from '../shared/api-keys';

const [byTenant] = apiKeyTable.indexes;

export class DynamoDbApiKeyStore implements TenantKeys {
  constructor(
    private readonly client: DynamoDBDocumentClient,
    private readonly tableName: string,
  ) {}

  async findByHash(keyHash: string): Promise<ApiKeyRecord | undefined> {
    const { Item } = await this.client.send(new GetCommand({ TableName: this.tableName, Key: { keyHash } }));
    return Item as ApiKeyRecord | undefined;
  }

  /** Counted on the tenant index, which holds keys only: no key record is read. */
  async hasKeys(tenant: string): Promise<boolean> {
    const { Count = 0 } = await this.client.send(
      new QueryCommand({
        TableName: this.tableName,
        IndexName: byTenant.name,
        KeyConditionExpression: '#tenant = :tenant',
        ExpressionAttributeNames: { '#tenant': byTenant.partitionKey },
        ExpressionAttributeValues: { ':tenant': tenant },
        Select: 'COUNT',
        Limit: 1,
      }),
    );
    return Count > 0;
  }
}
