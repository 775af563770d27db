import {
  indexWriteUnits,
  itemBytes,
  requestItems,
  requestUnits,
} from '../../bench/support/dynamodb-units.cjs';

/** DynamoDB's billing rules as the bench's request counter applies them. */

const S = (s: string) => ({ S: s });
const tableKeys = ['pk', 'sk'];
const all = {
  KeySchema: [{ AttributeName: 'tenantStatus' }, { AttributeName: 'createdAt' }],
  Projection: { ProjectionType: 'ALL' },
};
const keysOnly = {
  KeySchema: [{ AttributeName: 'activeKey' }, { AttributeName: 'statusAt' }],
  Projection: { ProjectionType: 'KEYS_ONLY' },
};
const job = {
  pk: S('job_1'),
  sk: S('JOB'),
  tenantStatus: S('acme#queued'),
  createdAt: S('2026-01-01T00:00:00Z'),
  activeKey: S('replicate#queued'),
  statusAt: S('2026-01-01T00:00:00Z'),
  progress: { N: '0' },
};

describe('item size', () => {
  it("counts each attribute's name and value, as the developer guide sizes them", () => {
    expect(itemBytes({ pk: S('abc') })).toBe(2 + 3);
    expect(itemBytes({ n: { N: '12345' } })).toBe(1 + 3 + 1); // 5 significant digits: 3 bytes, plus 1
    expect(itemBytes({ n: { N: '1000' } })).toBe(1 + 1 + 1); // trailing zeroes trimmed
    expect(itemBytes({ m: { M: { a: S('xy') } } })).toBe(1 + 3 + 1 + 1 + 2);
    expect(itemBytes({ l: { L: [S('ab'), { BOOL: true }] } })).toBe(1 + 3 + (1 + 2) + (1 + 1));
    expect(itemBytes({ s: S('é') })).toBe(1 + 2); // UTF-8 bytes, not characters
  });
});

describe('index writes', () => {
  it('charges one write to put an item into an index and one to take it out', () => {
    expect(indexWriteUnits(keysOnly, tableKeys, undefined, job)).toBe(1);
    const { activeKey: _gone, ...finished } = job;
    expect(indexWriteUnits(keysOnly, tableKeys, job, finished)).toBe(1);
  });

  it('charges two writes when the index key changes: a delete and a put', () => {
    expect(indexWriteUnits(all, tableKeys, job, { ...job, tenantStatus: S('acme#running') })).toBe(2);
  });

  it('charges a write for a projected attribute that changed, and none for one that is not projected', () => {
    const progressed = { ...job, progress: { N: '40' } };
    expect(indexWriteUnits(all, tableKeys, job, progressed)).toBe(1);
    expect(indexWriteUnits(keysOnly, tableKeys, job, progressed)).toBe(0);
  });

  it('charges nothing for an item in the index neither before nor after', () => {
    const slot = { pk: S('slot#replicate'), sk: S('SLOT'), held: { N: '3' } };
    expect(indexWriteUnits(all, tableKeys, slot, { ...slot, held: { N: '4' } })).toBe(0);
  });

  it("charges by the index entry's size, 1 KB a unit", () => {
    const big = { ...job, input: S('x'.repeat(3000)) };
    expect(indexWriteUnits(all, tableKeys, undefined, big)).toBe(Math.ceil(itemBytes(big) / 1024));
    expect(indexWriteUnits(keysOnly, tableKeys, undefined, big)).toBe(1); // its keys only
  });
});

describe('requests', () => {
  it("counts a batch's and a transaction's items each as one read or write, a Query as one read", () => {
    expect(requestItems('UpdateItem', {})).toEqual({ reads: 0, writes: 1 });
    expect(requestItems('Query', {})).toEqual({ reads: 1, writes: 0 });
    expect(requestItems('BatchWriteItem', { RequestItems: { jobs: [{}, {}], lines: [{}] } })).toEqual({
      reads: 0,
      writes: 3,
    });
    expect(requestItems('BatchGetItem', { RequestItems: { jobs: { Keys: [{}, {}] } } })).toEqual({
      reads: 2,
      writes: 0,
    });
    expect(requestItems('TransactWriteItems', { TransactItems: [{}, {}, {}] })).toEqual({
      reads: 0,
      writes: 3,
    });
    expect(requestItems('TransactGetItems', { TransactItems: [{}, {}] })).toEqual({ reads: 2, writes: 0 });
  });

  it('takes the units the answer reports, one or a list', () => {
    expect(requestUnits('Query', {}, 200, { ConsumedCapacity: { CapacityUnits: 3.5 } })).toEqual({
      read: 3.5,
      write: 0,
      estimated: false,
    });
    // A Query that read nothing is still charged: half a unit, or one when strongly consistent.
    const nothing = { ConsumedCapacity: { CapacityUnits: 0 } };
    expect(requestUnits('Query', {}, 200, nothing).read).toBe(0.5);
    expect(requestUnits('Query', { ConsistentRead: true }, 200, nothing).read).toBe(1);
    const batch = { ConsumedCapacity: [{ CapacityUnits: 2 }, { CapacityUnits: 3 }] };
    expect(requestUnits('BatchWriteItem', {}, 200, batch)).toEqual({ read: 0, write: 5, estimated: false });
  });

  it('counts a failed condition as a write AWS still bills, and other errors as nothing', () => {
    const failed = { __type: 'com.amazonaws.dynamodb.v20120810#ConditionalCheckFailedException' };
    expect(requestUnits('UpdateItem', {}, 400, failed)).toEqual({ read: 0, write: 1, estimated: true });
    expect(requestUnits('GetItem', {}, 400, { __type: 'ValidationException' })).toEqual({
      read: 0,
      write: 0,
      estimated: false,
    });
  });

  it('counts an unreported transaction at two units an item, the least AWS bills', () => {
    expect(requestUnits('TransactWriteItems', { TransactItems: [{}, {}] }, 200, {})).toEqual({
      read: 0,
      write: 4,
      estimated: true,
    });
    expect(requestUnits('GetItem', {}, 200, {})).toEqual({ read: 0.5, write: 0, estimated: true });
  });
});
