'use strict';
/**
 * DynamoDB's billing rules, as the request counter (./request-counter.cjs)
 * applies them to what the local stack's functions send and what the
 * emulator answers. Sources (checked 2026-12-05):
 * - Amazon DynamoDB developer guide, "DynamoDB read and write operations"
 *   (https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/read-write-operations.html):
 *   reads by 4 KB (strongly consistent 1 unit, eventually consistent 1/2,
 *   transactional 2); a Query or Scan by the total size of the items it
 *   reads, filtered out or not, rounded up once, and charged even when it
 *   finds nothing; a BatchGetItem as one GetItem per item; writes by 1 KB, an
 *   update by the larger of the item before and after; a conditional write
 *   whose condition fails is still charged.
 * - Amazon DynamoDB pricing, on-demand (https://aws.amazon.com/dynamodb/pricing/on-demand/):
 *   a transactional read or write takes two request units per item's 4 KB / 1 KB.
 * - Amazon DynamoDB developer guide, "Global secondary indexes", provisioned
 *   throughput considerations (awsdocs/amazon-dynamodb-developer-guide,
 *   doc_source/GSI.md): a write that puts an item into an index, takes it out,
 *   or changes a projected attribute of an item in it is one index write by
 *   the index entry's size in 1 KB; one that changes the index's key is two
 *   (a delete and a put); an item in the index neither before nor after costs
 *   the index nothing. On-demand tables bill index writes as write request units.
 */

const READS = new Set(['GetItem', 'BatchGetItem', 'Query', 'Scan', 'TransactGetItems']);
const WRITES = new Set(['PutItem', 'UpdateItem', 'DeleteItem', 'BatchWriteItem', 'TransactWriteItems']);
const TRANSACTIONS = new Set(['TransactGetItems', 'TransactWriteItems']);

/** Bytes of one attribute value in DynamoDB's JSON form ({S}, {N}, {M}, …), by the developer guide's size rules. */
function valueBytes(value) {
  const [type] = Object.keys(value);
  const inner = value[type];
  switch (type) {
    case 'S':
      return Buffer.byteLength(inner);
    case 'N':
      return numberBytes(inner);
    case 'B':
      return Buffer.from(inner, 'base64').length;
    case 'SS':
      return inner.reduce((sum, s) => sum + Buffer.byteLength(s), 0);
    case 'NS':
      return inner.reduce((sum, n) => sum + numberBytes(n), 0);
    case 'BS':
      return inner.reduce((sum, b) => sum + Buffer.from(b, 'base64').length, 0);
    case 'NULL':
    case 'BOOL':
      return 1;
    case 'L':
      return 3 + inner.reduce((sum, element) => sum + 1 + valueBytes(element), 0);
    case 'M':
      return (
        3 +
        Object.entries(inner).reduce((sum, [name, v]) => sum + 1 + Buffer.byteLength(name) + valueBytes(v), 0)
      );
    default:
      return 0;
  }
}

/** A number: about one byte per two significant digits, plus one. */
function numberBytes(text) {
  const digits = String(text)
    .replace(/^-/, '')
    .replace(/e.*$/i, '')
    .replace('.', '')
    .replace(/^0+/, '')
    .replace(/0+$/, '');
  return Math.ceil(Math.max(1, digits.length) / 2) + 1;
}

/** Bytes of an item: each attribute's name and value. */
function itemBytes(item) {
  return Object.entries(item).reduce(
    (sum, [name, value]) => sum + Buffer.byteLength(name) + valueBytes(value),
    0,
  );
}

/** The same value, whatever order a map's attributes came in. */
function canonical(value) {
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    return `{${Object.keys(value)
      .sort()
      .map((key) => `${JSON.stringify(key)}:${canonical(value[key])}`)
      .join(',')}}`;
  }
  return JSON.stringify(value);
}

/**
 * What an item looks like in an index: all of it (ALL), or the index's and
 * the table's keys with the included attributes (KEYS_ONLY, INCLUDE); undefined when the
 * item lacks one of the index's key attributes and so is not in it.
 */
function indexEntry(index, tableKeys, item) {
  if (!item) return undefined;
  const keys = index.KeySchema.map((key) => key.AttributeName);
  if (!keys.every((key) => item[key] !== undefined && item[key] !== null)) return undefined;
  const projection = index.Projection ?? { ProjectionType: 'ALL' };
  if (projection.ProjectionType === 'ALL') return item;
  const names = new Set([...keys, ...tableKeys, ...(projection.NonKeyAttributes ?? [])]);
  return Object.fromEntries(Object.entries(item).filter(([name]) => names.has(name)));
}

const writeUnitsOf = (bytes) => Math.max(1, Math.ceil(bytes / 1024));

/**
 * Write units one table write costs one global secondary index, from the item
 * before and after the write (either may be absent).
 * @param index {{KeySchema: {AttributeName: string}[], Projection?: {ProjectionType: string, NonKeyAttributes?: string[]}}}
 * @param tableKeys {string[]} the table's key attribute names
 */
function indexWriteUnits(index, tableKeys, before, after) {
  const was = indexEntry(index, tableKeys, before);
  const is = indexEntry(index, tableKeys, after);
  if (!was && !is) return 0;
  if (!was) return writeUnitsOf(itemBytes(is));
  if (!is) return writeUnitsOf(itemBytes(was));
  const keys = index.KeySchema.map((key) => key.AttributeName);
  if (keys.some((key) => canonical(was[key]) !== canonical(is[key]))) {
    return writeUnitsOf(itemBytes(was)) + writeUnitsOf(itemBytes(is));
  }
  return canonical(was) === canonical(is) ? 0 : writeUnitsOf(itemBytes(is));
}

/**
 * The reads and writes a request asks DynamoDB to perform, each item of a
 * batch or a transaction counted as one: a Query or a Scan is one read, whatever it returns.
 */
function requestItems(operation, body) {
  const none = { reads: 0, writes: 0 };
  const perTable = (requestItems, count) =>
    Object.values(requestItems ?? {}).reduce((sum, table) => sum + count(table), 0);
  switch (operation) {
    case 'GetItem':
    case 'Query':
    case 'Scan':
      return { reads: 1, writes: 0 };
    case 'BatchGetItem':
      return { reads: perTable(body.RequestItems, (table) => table.Keys?.length ?? 0), writes: 0 };
    case 'TransactGetItems':
      return { reads: body.TransactItems?.length ?? 0, writes: 0 };
    case 'PutItem':
    case 'UpdateItem':
    case 'DeleteItem':
      return { reads: 0, writes: 1 };
    case 'BatchWriteItem':
      return { reads: 0, writes: perTable(body.RequestItems, (table) => table.length ?? 0) };
    case 'TransactWriteItems':
      return { reads: 0, writes: body.TransactItems?.length ?? 0 };
    default:
      return none;
  }
}

/** The capacity units an answer reports (`ConsumedCapacity`, one or a list); undefined when it reports none. */
function reportedUnits(answer) {
  const consumed = answer?.ConsumedCapacity;
  if (consumed === undefined || consumed === null) return undefined;
  const list = Array.isArray(consumed) ? consumed : [consumed];
  return list.reduce((sum, c) => sum + (c.CapacityUnits ?? 0), 0);
}

/**
 * The table's read and write units of one request, from what it asked and
 * what the emulator answered: the units the answer reports where it reports
 * them; otherwise the least AWS would bill (an item of at most 1 KB or 4 KB):
 * a failed conditional write one write unit, a transaction two units per item.
 * Index writes are not in it: the emulator does not report them (see `indexWriteUnits`).
 * @returns {{read: number, write: number, estimated: boolean}}
 */
function requestUnits(operation, body, status, answer) {
  const isRead = READS.has(operation);
  const isWrite = WRITES.has(operation);
  if (!isRead && !isWrite) return { read: 0, write: 0, estimated: false };
  const side = (units, estimated) => ({
    read: isRead ? units : 0,
    write: isWrite ? units : 0,
    estimated,
  });
  const reported = status === 200 ? reportedUnits(answer) : undefined;
  // A Query or a Scan that reads nothing is still charged a read; the emulator reports none.
  const least = operation === 'Query' || operation === 'Scan' ? (body.ConsistentRead ? 1 : 0.5) : 0;
  if (reported !== undefined) return side(Math.max(least, reported), false);
  if (status === 200) {
    const items = requestItems(operation, body);
    const perItem = TRANSACTIONS.has(operation) ? 2 : isRead && !body.ConsistentRead ? 0.5 : 1;
    return side((items.reads + items.writes) * perItem, true);
  }
  const conditionFailed = String(answer?.__type ?? '').endsWith('ConditionalCheckFailedException');
  return conditionFailed && isWrite ? side(1, true) : side(0, false);
}

module.exports = { itemBytes, indexWriteUnits, requestItems, requestUnits, READS, WRITES };
