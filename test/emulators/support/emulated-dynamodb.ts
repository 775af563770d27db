import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  CreateTableCommand,
  type CreateTableCommandInput,
  DynamoDBClient,
  waitUntilTableExists,
} from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { type DynamoDbEmulator, startDynamoDbEmulator } from '../../../local/emulators/dynamodb';

/** The local DynamoDB emulator on a data directory, with the SDK clients the local stack uses. */
export interface EmulatedDynamoDb {
  readonly dir: string;
  readonly client: DynamoDBClient;
  readonly documents: DynamoDBDocumentClient;
  /** The emulator itself, to arm conflicts. */
  readonly emulator: DynamoDbEmulator;
  /** Stops the emulator and the clients; the data directory stays. */
  stop(): Promise<void>;
}

export function newDataDir(): string {
  return mkdtempSync(join(tmpdir(), 'longhaul-dynamodb-'));
}

export function removeDataDir(dir: string): void {
  rmSync(dir, { recursive: true, force: true });
}

export async function startEmulatedDynamoDb(
  options: { readonly dir?: string; readonly indexLagMs?: number } = {},
): Promise<EmulatedDynamoDb> {
  const dir = options.dir ?? newDataDir();
  const emulator = await startDynamoDbEmulator({
    host: '127.0.0.1',
    path: dir,
    ...(options.indexLagMs ? { indexLagMs: options.indexLagMs } : {}),
  });
  // One attempt: a retried request would hide an answer the emulator got wrong.
  const client = new DynamoDBClient({
    endpoint: emulator.endpoint,
    region: 'us-east-1',
    credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
    maxAttempts: 1,
  });
  return {
    dir,
    client,
    documents: DynamoDBDocumentClient.from(client),
    emulator,
    async stop() {
      client.destroy();
      await emulator.stop();
    },
  };
}

/** A table keyed by `pk` (a string), with `sk` (a number) as sort key and a `byGroup` index on `group` when asked. */
export async function createTable(
  client: DynamoDBClient,
  TableName: string,
  shape: { readonly sortKey?: boolean; readonly groupIndex?: boolean } = {},
): Promise<void> {
  const input: CreateTableCommandInput = {
    TableName,
    BillingMode: 'PAY_PER_REQUEST',
    KeySchema: [
      { AttributeName: 'pk', KeyType: 'HASH' },
      ...(shape.sortKey ? [{ AttributeName: 'sk', KeyType: 'RANGE' as const }] : []),
    ],
    AttributeDefinitions: [
      { AttributeName: 'pk', AttributeType: 'S' },
      ...(shape.sortKey ? [{ AttributeName: 'sk', AttributeType: 'N' as const }] : []),
      ...(shape.groupIndex ? [{ AttributeName: 'group', AttributeType: 'S' as const }] : []),
    ],
    ...(shape.groupIndex
      ? {
          GlobalSecondaryIndexes: [
            {
              IndexName: 'byGroup',
              KeySchema: [{ AttributeName: 'group', KeyType: 'HASH' }],
              Projection: { ProjectionType: 'ALL' },
            },
          ],
        }
      : {}),
  };
  await client.send(new CreateTableCommand(input));
  await waitUntilTableExists({ client, minDelay: 1, maxDelay: 1, maxWaitTime: 30 }, { TableName });
}

/** Polls `read` until `done` holds of what it read, or fails once `timeoutMs` have passed. */
export async function eventually<T>(
  read: () => Promise<T>,
  done: (value: T) => boolean,
  timeoutMs = 10_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await read();
    if (done(value)) return value;
    if (Date.now() > deadline)
      throw new Error(`still not there after ${timeoutMs} ms: ${JSON.stringify(value)}`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}
