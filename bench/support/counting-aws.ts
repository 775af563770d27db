import { createRequire } from 'node:module';
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { IndexDescription, Item } from './dynamodb-units.cjs';

/**
 * AWS as the media library's adapters see it, counted request by request:
 * DynamoDB is the real thing's emulator (dynalite, its units as it reports
 * them, its index writes by the billing rules of ./dynamodb-units.cjs), while
 * S3, S3 Vectors and EventBridge are small in-memory services behind the
 * adapters' own SDK calls, so what is counted is what the adapters send.
 */

/** What was sent, by `service:Operation`, and what it moved. */
export interface Counts {
  readonly requests: Record<string, number>;
  /** DynamoDB reads and writes (a batch's or transaction's items each one) and their units. */
  readonly dynamodb: {
    reads: number;
    writes: number;
    readUnits: number;
    writeUnits: number;
    indexWriteUnits: number;
    /** Requests dynalite reported no units for, counted at the least AWS bills. */
    estimated: number;
  };
  readonly vectors: { written: number; read: number; deleted: number; bytesPut: number; dataChanged: number };
  /** EventBridge events as billed: each 64 KB of an entry one. */
  events: number;
}

export const emptyCounts = (): Counts => ({
  requests: {},
  dynamodb: { reads: 0, writes: 0, readUnits: 0, writeUnits: 0, indexWriteUnits: 0, estimated: 0 },
  vectors: { written: 0, read: 0, deleted: 0, bytesPut: 0, dataChanged: 0 },
  events: 0,
});

/** `after` less `before`, request by request. */
export function countsBetween(before: Counts, after: Counts): Counts {
  const less = <T extends Record<string, number>>(a: T, b: T) =>
    Object.fromEntries(
      Object.keys({ ...a, ...b })
        .map((key) => [key, (a[key] ?? 0) - (b[key] ?? 0)] as const)
        .filter(([, n]) => n !== 0),
    ) as T;
  return {
    requests: less(after.requests, before.requests),
    dynamodb: { ...emptyCounts().dynamodb, ...less(after.dynamodb, before.dynamodb) },
    vectors: { ...emptyCounts().vectors, ...less(after.vectors, before.vectors) },
    events: after.events - before.events,
  };
}

export const snapshot = (counts: Counts): Counts => structuredClone(counts);

const add = (counts: Counts, key: string, n = 1) => {
  counts.requests[key] = (counts.requests[key] ?? 0) + n;
};

const DYNAMODB_OPERATIONS: Readonly<Record<string, string>> = {
  GetCommand: 'GetItem',
  PutCommand: 'PutItem',
  UpdateCommand: 'UpdateItem',
  DeleteCommand: 'DeleteItem',
  QueryCommand: 'Query',
  BatchGetCommand: 'BatchGetItem',
  BatchWriteCommand: 'BatchWriteItem',
  TransactWriteCommand: 'TransactWriteItems',
};
const READS = new Set(['GetItem', 'Query', 'BatchGetItem']);

/**
 * A document client that counts what it sends and asks dynalite for the
 * units each request consumed. A conditional write whose condition failed is
 * billed a write unit, as DynamoDB bills it.
 */
export function countingDocuments(client: DynamoDBDocumentClient, counts: Counts): DynamoDBDocumentClient {
  return {
    send: async (command: { constructor: { name: string }; input: Record<string, unknown> }) => {
      const operation = DYNAMODB_OPERATIONS[command.constructor.name] ?? command.constructor.name;
      add(counts, `dynamodb:${operation}`);
      const isRead = READS.has(operation);
      if (isRead) counts.dynamodb.reads++;
      else counts.dynamodb.writes++;
      command.input.ReturnConsumedCapacity = 'TOTAL';
      try {
        const output = (await client.send(command as never)) as {
          ConsumedCapacity?: { CapacityUnits?: number };
        };
        const reported = output.ConsumedCapacity?.CapacityUnits;
        const consistent = command.input.ConsistentRead === true;
        const units = reported ?? (isRead && !consistent ? 0.5 : 1);
        if (reported === undefined) counts.dynamodb.estimated++;
        if (isRead) counts.dynamodb.readUnits += units;
        else counts.dynamodb.writeUnits += units;
        return output;
      } catch (error) {
        if ((error as { name?: string }).name === 'ConditionalCheckFailedException') {
          counts.dynamodb.writeUnits += 1;
          counts.dynamodb.estimated++;
        }
        throw error;
      }
    },
  } as unknown as DynamoDBDocumentClient;
}

type UpdateIndexes = (
  store: unknown,
  table: TableDescription,
  before: Item,
  after: Item,
  ...rest: unknown[]
) => unknown;
interface TableDescription {
  readonly TableName: string;
  readonly KeySchema: readonly { readonly AttributeName: string }[];
  readonly GlobalSecondaryIndexes?: readonly IndexDescription[];
}

/**
 * Counts the global secondary index writes of every write dynalite makes
 * while `counts` is given, by the item before and after (dynalite reports
 * only the table's units). Answers the function that stops counting.
 */
export function countIndexWrites(counts: Counts): () => void {
  const load = createRequire(__filename);
  const units = load('./dynamodb-units.cjs') as typeof import('./dynamodb-units.cjs');
  const db = load('dynalite/db') as { updateIndexes: UpdateIndexes };
  const original = db.updateIndexes;
  db.updateIndexes = function countedUpdateIndexes(store, table, before, after, ...rest) {
    const tableKeys = table.KeySchema.map((key) => key.AttributeName);
    for (const index of table.GlobalSecondaryIndexes ?? []) {
      counts.dynamodb.indexWriteUnits += units.indexWriteUnits(index, tableKeys, before, after);
    }
    return original.call(this, store, table, before, after, ...rest);
  };
  return () => {
    db.updateIndexes = original;
  };
}

interface Command {
  readonly constructor: { readonly name: string };
  readonly input: Record<string, unknown>;
}

/**
 * An S3 bucket in memory, behind the SDK calls S3OutputStore makes: pages of
 * 1,000 keys, as S3 lists them. Another client over the same `objects` with
 * counts of its own sets a scene without counting it.
 */
export function memoryS3(counts: Counts, objects = new Map<string, Uint8Array>()) {
  const client = {
    send: async (command: Command) => {
      const name = command.constructor.name.replace(/Command$/, '');
      add(counts, `s3:${name}`);
      const input = command.input as {
        Key?: string;
        Body?: Uint8Array | string;
        Prefix?: string;
        ContinuationToken?: string;
        Delete?: { Objects: { Key: string }[] };
      };
      switch (name) {
        case 'PutObject':
          objects.set(input.Key as string, Buffer.from(input.Body ?? ''));
          return {};
        case 'GetObject': {
          const body = objects.get(input.Key as string);
          if (!body) throw Object.assign(new Error(`NoSuchKey ${input.Key}`), { name: 'NoSuchKey' });
          return { Body: { transformToByteArray: async () => body } };
        }
        case 'ListObjectsV2': {
          // The token names the last key listed, so keys deleted since do not shift the next page.
          const after = input.ContinuationToken ?? '';
          const keys = [...objects.keys()]
            .filter((key) => key.startsWith(input.Prefix ?? '') && key > after)
            .sort();
          const page = keys.slice(0, 1000);
          const more = keys.length > page.length;
          return {
            Contents: page.map((Key) => ({ Key })),
            IsTruncated: more,
            ...(more ? { NextContinuationToken: page.at(-1) } : {}),
          };
        }
        case 'DeleteObjects':
          for (const { Key } of input.Delete?.Objects ?? []) objects.delete(Key);
          return { Errors: [] };
        default:
          throw new Error(`the in-memory S3 does not answer ${name}`);
      }
    },
  };
  return { client: client as never, objects };
}

interface StoredVector {
  readonly key: string;
  readonly data: { readonly float32: readonly number[] };
  readonly metadata: Record<string, unknown>;
}

/** A vector's logical size as PutVectors is billed: its data, its key and all its metadata. */
export const vectorBytes = (vector: StoredVector): number =>
  vector.data.float32.length * 4 +
  Buffer.byteLength(vector.key) +
  Buffer.byteLength(JSON.stringify(vector.metadata));

/** An S3 Vectors index in memory, behind the SDK calls S3VectorsIndex makes (`vectors` shared as `memoryS3`'s objects). */
export function memoryS3Vectors(counts: Counts, vectors = new Map<string, StoredVector>()) {
  const client = {
    send: async (command: Command) => {
      const name = command.constructor.name.replace(/Command$/, '');
      add(counts, `s3vectors:${name}`);
      const input = command.input as { vectors?: StoredVector[]; keys?: string[]; topK?: number };
      switch (name) {
        case 'PutVectors':
          for (const vector of input.vectors ?? []) {
            const stored = vectors.get(vector.key);
            if (stored && stored.data.float32.join() !== vector.data.float32.join())
              counts.vectors.dataChanged++;
            counts.vectors.written++;
            counts.vectors.bytesPut += vectorBytes(vector);
            vectors.set(vector.key, vector);
          }
          return {};
        case 'GetVectors': {
          const found = (input.keys ?? []).flatMap((key) => vectors.get(key) ?? []);
          counts.vectors.read += found.length;
          return { vectors: found };
        }
        case 'DeleteVectors':
          for (const key of input.keys ?? []) if (vectors.delete(key)) counts.vectors.deleted++;
          return {};
        case 'QueryVectors':
          return {
            vectors: [...vectors.values()]
              .slice(0, input.topK ?? 10)
              .map((vector, rank) => ({ key: vector.key, distance: rank / 100, metadata: vector.metadata })),
          };
        default:
          throw new Error(`the in-memory S3 Vectors does not answer ${name}`);
      }
    },
  };
  return { client: client as never, vectors };
}

/** An EventBridge bus that takes every entry, behind the SDK call EventBridgeEvents makes. */
export function memoryEventBus(counts: Counts) {
  const entries: { DetailType?: string; Detail?: string }[] = [];
  const client = {
    send: async (command: Command) => {
      add(counts, `events:${command.constructor.name.replace(/Command$/, '')}`);
      const put = (command.input.Entries ?? []) as { DetailType?: string; Detail?: string }[];
      // Each 64 KB of an entry is billed as one event.
      counts.events += put.reduce(
        (sum, entry) => sum + Math.max(1, Math.ceil(Buffer.byteLength(entry.Detail ?? '') / (64 * 1024))),
        0,
      );
      entries.push(...put);
      return { FailedEntryCount: 0, Entries: put.map((_, i) => ({ EventId: String(entries.length + i) })) };
    },
  };
  return { client: client as never, entries };
}
