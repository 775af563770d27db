import { DeleteCommand, type DynamoDBDocumentClient, PutCommand, ScanCommand } from '@aws-sdk/lib-dynamodb';
import { type ApiKeyRecord, hashApiKey } from '../lambdas/shared/api-keys';
import type { ApiKeyGrant } from './config';

/**
 * Makes the API key table hold exactly the configured keys, as hashes: the
 * contract says these keys are the ones accepted locally, so a key dropped
 * from LONGHAUL_API_KEYS stops working on the next start. A record that is
 * already right is left alone, keeping its createdAt.
 */
export async function seedApiKeys(
  client: DynamoDBDocumentClient,
  tableName: string,
  grants: readonly ApiKeyGrant[],
  now: Date = new Date(),
): Promise<{ readonly written: number; readonly removed: number }> {
  const wanted = new Map(grants.map((grant) => [hashApiKey(grant.key), grant]));
  const existing = new Map<string, Partial<ApiKeyRecord>>();
  let startKey: Record<string, unknown> | undefined;
  do {
    const page = await client.send(new ScanCommand({ TableName: tableName, ExclusiveStartKey: startKey }));
    for (const item of page.Items ?? []) existing.set(String(item.keyHash), item as Partial<ApiKeyRecord>);
    startKey = page.LastEvaluatedKey;
  } while (startKey);

  let written = 0;
  for (const [keyHash, grant] of wanted) {
    const current = existing.get(keyHash);
    if (current && current.tenantId === grant.tenantId && current.role === grant.role && !current.disabled)
      continue;
    const record: ApiKeyRecord = {
      keyHash,
      tenantId: grant.tenantId,
      role: grant.role,
      createdAt: now.toISOString(),
    };
    await client.send(new PutCommand({ TableName: tableName, Item: record }));
    written += 1;
  }
  let removed = 0;
  for (const keyHash of existing.keys()) {
    if (wanted.has(keyHash)) continue;
    await client.send(new DeleteCommand({ TableName: tableName, Key: { keyHash } }));
    removed += 1;
  }
  return { written, removed };
}
