import { type DynamoDBDocumentClient, GetCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import type { ReconcilerPosition, ReconcilerProgress } from '../domain/ports';

/** The one item that says where the reconciler's last pass stopped, beside the jobs it reads. */
export const RECONCILER_PROGRESS_KEY = { pk: 'RECONCILER', sk: 'PROGRESS' } as const;

export class DynamoDbReconcilerProgress implements ReconcilerProgress {
  constructor(
    private readonly client: DynamoDBDocumentClient,
    private readonly tableName: string,
  ) {}

  async load(): Promise<ReconcilerPosition | undefined> {
    const { Item } = await this.client.send(
      new GetCommand({ TableName: this.tableName, Key: RECONCILER_PROGRESS_KEY, ConsistentRead: true }),
    );
    return Item?.position as ReconcilerPosition | undefined;
  }

  async save(position: ReconcilerPosition | undefined): Promise<void> {
    await this.client.send(
      new PutCommand({
        TableName: this.tableName,
        Item: { ...RECONCILER_PROGRESS_KEY, ...(position ? { position } : {}) },
      }),
    );
  }
}
