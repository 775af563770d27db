import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { apiKeyTable, jobTable, type TableLayout } from '../../config/layout';
import { type DynamoDbEmulator, startDynamoDbEmulator } from '../emulators/dynamodb';
import { ensureTable } from '../resources';
import type { TableFacts } from '../template';

/**
 * The job and API key tables as config/layout.ts lays them out, in a dynalite
 * of their own, for adapter tests and bench sections that need DynamoDB's
 * real behaviour (conditions, indexes, paging) rather than asserted requests.
 */
export interface DynaliteTables {
  readonly client: DynamoDBClient;
  readonly documents: DynamoDBDocumentClient;
  readonly jobTableName: string;
  readonly apiKeyTableName: string;
  /** Makes requests naming one item of a table conflict (see DynamoDbEmulator.armConflicts). */
  readonly armConflicts: DynamoDbEmulator['armConflicts'];
  /** How many requests the conflicts armed last failed. */
  readonly armedConflicts: DynamoDbEmulator['armedConflicts'];
  stop(): Promise<void>;
}

function factsOf(layout: TableLayout): TableFacts {
  const keys = [
    layout.partitionKey,
    layout.sortKey,
    ...layout.indexes.flatMap((i) => [i.partitionKey, i.sortKey]),
  ];
  return {
    logicalId: 'Table',
    partitionKey: layout.partitionKey,
    ...(layout.sortKey ? { sortKey: layout.sortKey } : {}),
    attributeTypes: Object.fromEntries(keys.flatMap((key) => (key ? [[key, 'S']] : []))),
    indexes: layout.indexes.map((index) => ({ ...index })),
  };
}

export async function startDynaliteTables(): Promise<DynaliteTables> {
  const dir = mkdtempSync(join(tmpdir(), 'longhaul-dynalite-'));
  const emulator = await startDynamoDbEmulator({ host: '127.0.0.1', path: dir });
  const client = new DynamoDBClient({
    endpoint: emulator.endpoint,
    region: 'us-east-1',
    credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
  });
  const tables = { jobTableName: 'jobs', apiKeyTableName: 'api-keys' };
  for (const [name, layout] of [
    [tables.jobTableName, jobTable],
    [tables.apiKeyTableName, apiKeyTable],
  ] as const) {
    await ensureTable(client, name, factsOf(layout));
  }
  return {
    client,
    documents: DynamoDBDocumentClient.from(client, { marshallOptions: { removeUndefinedValues: true } }),
    ...tables,
    armConflicts: (conflicts) => emulator.armConflicts(conflicts),
    armedConflicts: () => emulator.armedConflicts(),
    async stop() {
      client.destroy();
      await emulator.stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
