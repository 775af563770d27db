import type { Server } from 'node:http';
import { type Call, Transactions } from '../../local/emulators/dynamodb-transactions';
import { type Listening, listen } from '../../local/emulators/listen';
import { ReadersWriterLock } from '../../local/emulators/readers-writer-lock';

import dynalite = require('dynalite');

/**
 * The transactions of the local DynamoDB, over dynalites of their own: what a
 * write that breaks on the way (a reset connection, a store's error, not a
 * refusal) leaves behind.
 */

const TABLE = 'transactions';
const HEADERS = {
  'content-type': 'application/x-amz-json-1.0',
  authorization:
    'AWS4-HMAC-SHA256 Credential=local/20260101/us-east-1/dynamodb/aws4_request, SignedHeaders=host, Signature=0',
  'x-amz-date': '20260101T000000Z',
};

let tables: Listening;
let validator: Listening;

const callOf =
  (endpoint: string): Call =>
  async (operation, body) => {
    const response = await fetch(endpoint, {
      method: 'POST',
      headers: { ...HEADERS, 'x-amz-target': `DynamoDB_20120810.${operation}` },
      body: JSON.stringify(body),
    });
    return { status: response.status, body: (await response.json()) as Record<string, unknown> };
  };

beforeAll(async () => {
  const instant = { createTableMs: 0, deleteTableMs: 0, updateTableMs: 0 };
  tables = await listen(dynalite(instant) as Server, '127.0.0.1');
  validator = await listen(dynalite(instant) as Server, '127.0.0.1');
  const created = await callOf(tables.endpoint)('CreateTable', {
    TableName: TABLE,
    AttributeDefinitions: [{ AttributeName: 'pk', AttributeType: 'S' }],
    KeySchema: [{ AttributeName: 'pk', KeyType: 'HASH' }],
    BillingMode: 'PAY_PER_REQUEST',
  });
  expect(created.status).toBe(200);
});

afterAll(async () => {
  await Promise.all([tables?.stop(), validator?.stop()]);
});

const put = (pk: string) => ({ Put: { TableName: TABLE, Item: { pk: { S: pk }, v: { N: '1' } } } });

it('undoes the writes a transaction made when another of its writes broke on the way, and fails', async () => {
  const store = callOf(tables.endpoint);
  // The second item's write never reaches the store: its connection is reset.
  const breaking: Call = async (operation, body) => {
    const item = (body as { Item?: { pk?: { S?: string } } }).Item;
    if (operation === 'PutItem' && item?.pk?.S === 'broken-b') throw new Error('socket hang up');
    return store(operation, body);
  };
  const transactions = new Transactions({
    tables: breaking,
    validator: callOf(validator.endpoint),
    lock: new ReadersWriterLock(),
    replay: () => undefined,
  });

  await expect(transactions.write({ TransactItems: [put('broken-a'), put('broken-b')] })).rejects.toThrow(
    'socket hang up',
  );

  for (const pk of ['broken-a', 'broken-b']) {
    const read = await store('GetItem', { TableName: TABLE, Key: { pk: { S: pk } }, ConsistentRead: true });
    expect([pk, read.status, read.body.Item]).toEqual([pk, 200, undefined]);
  }
  // The item it held is free again: the next transaction on it goes through.
  await expect(transactions.write({ TransactItems: [put('broken-a')] })).resolves.toEqual({
    status: 200,
    body: {},
  });
});
