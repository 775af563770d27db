import { randomBytes } from 'node:crypto';
import {
  Agent,
  createServer,
  request as httpRequest,
  type IncomingMessage,
  type OutgoingHttpHeaders,
  type Server,
} from 'node:http';
import { crc32 } from 'node:zlib';
import {
  BatchWriteItemCommand,
  CreateTableCommand,
  type CreateTableCommandInput,
  DescribeTableCommand,
  DynamoDBClient,
  paginateListTables,
  paginateScan,
  waitUntilTableExists,
} from '@aws-sdk/client-dynamodb';

import dynalite = require('dynalite');

import {
  type ArmedConflicts,
  type Call,
  type Item,
  type PlainWrite,
  type Reply,
  Transactions,
} from './dynamodb-transactions';
import { type Listening, listen } from './listen';
import { ReadersWriterLock } from './readers-writer-lock';

/**
 * DynamoDB, emulated by dynalite on LevelDB behind a proxy of ours. Verified
 * against what Longhaul relies on: conditional PutItem and UpdateItem, GSIs
 * with ALL and KEYS_ONLY projections, sparse indexes and ExclusiveStartKey
 * paging on a GSI query. Not implemented: UpdateTimeToLive
 * (UnknownOperationException) and TTL expiry.
 *
 * dynalite has no TransactWriteItems, TransactGetItems nor
 * ReturnValuesOnConditionCheckFailure; the proxy adds them (see
 * dynamodb-transactions.ts) and passes every other request to dynalite and
 * its answer back untouched. Every request holds a readers-writer lock shared;
 * a transaction holds it alone, so no request sees one half done. A write
 * asking ReturnValuesOnConditionCheckFailure ALL_OLD runs as any other; when
 * its condition fails, it runs again holding the lock alone and, failing
 * again, reads the item it failed on before anything else can change it
 * (a success the second time is a success at that later moment).
 *
 * Transactions are optimistic, as in DynamoDB: a transaction naming an item
 * another transaction holds is cancelled with TransactionConflict, and a
 * PutItem, UpdateItem or DeleteItem of such an item fails with
 * TransactionConflictException (HTTP 400, which the SDK does not retry). A
 * test can arm such conflicts on one item (`armConflicts`).
 *
 * dynalite's indexes are updated with their table, but DynamoDB's global
 * secondary indexes are eventually consistent: an index read may miss a write
 * made a moment ago, or still see what it overwrote. With `indexLagMs`, index
 * reads (Query and Scan naming an `IndexName`) are answered by a second,
 * in-memory dynalite that replays every successful write `indexLagMs` later,
 * in order (a transaction's as the single-item writes it made); it starts as
 * a copy of the tables. Everything else reads the tables themselves.
 */
export interface DynamoDbEmulator {
  readonly endpoint: string;
  /**
   * Makes requests naming one item conflict as if other transactions held it
   * (see ArmedConflicts); undefined disarms. Answers nothing until armed.
   */
  armConflicts(conflicts: ArmedConflicts | undefined): Promise<void>;
  /** How many requests the conflicts armed last failed. */
  armedConflicts(): number;
  stop(): Promise<void>;
}

const TARGET_PREFIX = 'DynamoDB_20120810.';
const WRITES = new Set(['PutItem', 'UpdateItem', 'DeleteItem', 'BatchWriteItem']);
const TABLE_CHANGES = new Set(['CreateTable', 'UpdateTable', 'DeleteTable']);
const RETURN_ON_FAILURE = 'ReturnValuesOnConditionCheckFailure';
/** The writes that take ReturnValuesOnConditionCheckFailure, and where each names its item. */
const ITEM_OF = new Map([
  ['PutItem', 'Item'],
  ['UpdateItem', 'Key'],
  ['DeleteItem', 'Key'],
]);
/** What the proxy's own requests to dynalite carry: dynalite wants a signature's form, never checks one. */
const OWN_HEADERS = {
  'content-type': 'application/x-amz-json-1.0',
  authorization:
    'AWS4-HMAC-SHA256 Credential=local/20260101/us-east-1/dynamodb/aws4_request, SignedHeaders=host, Signature=0',
  'x-amz-date': '20260101T000000Z',
};

export async function startDynamoDbEmulator(options: {
  readonly host: string;
  /** LevelDB directory; a restart on the same directory resumes from it. */
  readonly path: string;
  /** How late global secondary index reads see a write; 0 (the default): at once. */
  readonly indexLagMs?: number;
  /** Where a failure of the emulator's own is told. @default standard error */
  readonly log?: (line: string) => void;
}): Promise<DynamoDbEmulator> {
  const log = options.log ?? ((line: string) => process.stderr.write(`${line}\n`));
  // Tables still pass through CREATING (callers wait for ACTIVE as in AWS), just without the emulator's 500 ms pause.
  const instant = { createTableMs: 0, deleteTableMs: 0, updateTableMs: 0 };
  const lagMs = options.indexLagMs ?? 0;
  const started: Listening[] = [];
  // Stopping a dynalite closes its LevelDB once pending writes are done, so the next start finds every write.
  const start = async (server: Server) => {
    const listening = await listen(server, options.host);
    started.push(listening);
    return listening;
  };
  const abandon = async (error: unknown): Promise<never> => {
    await Promise.allSettled(started.map((server) => server.stop()));
    throw error;
  };
  let tables: Listening;
  let validator: Listening;
  let index: Listening | undefined;
  try {
    tables = await start(dynalite({ path: options.path, ...instant }));
    validator = await start(dynalite(instant));
    if (lagMs > 0) {
      index = await start(dynalite(instant));
      await copyTables(tables.endpoint, index.endpoint);
    }
  } catch (error) {
    return abandon(error);
  }

  // Every hop to dynalite reuses a connection: the proxy sits in front of every request of the local stack.
  const agent = new Agent({ keepAlive: true });
  const send = (endpoint: string, forward: Forwarded) => sendTo(agent, endpoint, forward);
  const call =
    (endpoint: string): Call =>
    async (operation, body) => {
      const answer = await send(endpoint, ownRequest(operation, body));
      return { status: answer.status, body: JSON.parse(answer.body.toString('utf8')) as Reply['body'] };
    };

  // One replay after another, each at its write's time plus the lag, so the index sees the writes in order.
  let replays: Promise<void> = Promise.resolve();
  const replay = (forward: Forwarded) => {
    if (!index) return;
    const due = Date.now() + lagMs;
    const target = index.endpoint;
    replays = replays.then(async () => {
      const wait = due - Date.now();
      if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
      // A write that succeeded on the tables succeeds on their copy, which has seen every write before it.
      await send(target, forward).catch(() => undefined);
    });
  };

  const lock = new ReadersWriterLock();
  const transactions = new Transactions({
    tables: call(tables.endpoint),
    validator: call(validator.endpoint),
    lock,
    replay: (writes: readonly PlainWrite[]) => {
      for (const write of writes) replay(ownRequest(write.operation, write.body));
    },
  });

  /** dynalite's answer to a request, with what a success implies for the index and the key schemas. */
  const passOn = async (operation: string, forward: Forwarded): Promise<Answer> => {
    const answer = await send(tables.endpoint, forward);
    if (answer.status === 200 && WRITES.has(operation)) replay(forward);
    if (answer.status === 200 && TABLE_CHANGES.has(operation)) {
      transactions.forgetTables();
      if (index) await send(index.endpoint, forward);
    }
    return answer;
  };

  const transact = async (operation: string, forward: Forwarded): Promise<Answer> => {
    // What dynalite checks before any operation's own validation (content type, JSON, a signature's
    // form) it checks here on the request sent as a ListTables to the validator, which has no tables:
    // anything but a 200 is dynalite's answer to the request itself.
    const gate = await send(validator.endpoint, {
      ...forward,
      headers: { ...forward.headers, 'x-amz-target': `${TARGET_PREFIX}ListTables` },
    });
    if (gate.status !== 200) return gate;
    const parsed: unknown = JSON.parse(forward.body.toString('utf8'));
    const request = isObject(parsed) ? parsed : {};
    const reply =
      operation === 'TransactWriteItems'
        ? await transactions.write(request)
        : await transactions.get(request);
    return answerOf(reply, forward.headers['content-type']);
  };

  const conditionalWrite = async (
    operation: string,
    forward: Forwarded,
    request: Record<string, unknown>,
  ): Promise<Answer> => {
    const wanted = request[RETURN_ON_FAILURE];
    if (wanted !== 'ALL_OLD' && wanted !== 'NONE') {
      const message =
        `1 validation error detected: Value '${String(wanted)}' at 'returnValuesOnConditionCheckFailure' ` +
        'failed to satisfy constraint: Member must satisfy enum value set: [ALL_OLD, NONE]';
      return answerOf(
        { status: 400, body: { __type: 'com.amazon.coral.validate#ValidationException', message } },
        forward.headers['content-type'],
      );
    }
    const first = await lock.shared(() => passOn(operation, forward));
    if (wanted === 'NONE' || !conditionFailed(first)) return first;
    return lock.exclusive(async () => {
      const again = await passOn(operation, forward);
      if (!conditionFailed(again)) return again;
      const item = await transactions.current(
        String(request.TableName),
        request[ITEM_OF.get(operation) ?? 'Key'] as Item,
      );
      return item ? withItem(again, item) : again;
    });
  };

  /** TransactionConflictException for a single-item write of an item a transaction holds (or armed to conflict). */
  const conflictOf = async (operation: string, forward: Forwarded): Promise<Reply | undefined> => {
    if (!transactions.contended()) return undefined;
    let request: unknown;
    try {
      request = JSON.parse(forward.body.toString('utf8'));
    } catch {
      return undefined;
    }
    if (!isObject(request)) return undefined;
    return transactions.conflictOf(String(request.TableName), request[ITEM_OF.get(operation) ?? 'Key']);
  };

  const proxy = createServer((req, res) => {
    void (async () => {
      const forward: Forwarded = {
        method: req.method ?? 'POST',
        path: req.url ?? '/',
        headers: req.headers,
        body: await readAll(req),
      };
      const operation = String(req.headers['x-amz-target'] ?? '').replace(TARGET_PREFIX, '');
      let answer: Answer;
      if (index && (operation === 'Query' || operation === 'Scan') && hasIndexName(forward.body)) {
        answer = await send(index.endpoint, forward);
      } else if (
        forward.method === 'POST' &&
        (operation === 'TransactWriteItems' || operation === 'TransactGetItems')
      ) {
        answer = await transact(operation, forward);
      } else {
        const conflict = ITEM_OF.has(operation) ? await conflictOf(operation, forward) : undefined;
        const request = ITEM_OF.has(operation) ? askingOldItem(forward.body) : undefined;
        answer = conflict
          ? answerOf(conflict, forward.headers['content-type'])
          : request
            ? await conditionalWrite(operation, forward, request)
            : await lock.shared(() => passOn(operation, forward));
      }
      res.writeHead(answer.status, answer.headers);
      res.end(answer.body);
    })().catch((error: unknown) => {
      // What DynamoDB answers to a failure of its own, which the SDK retries: never a dropped connection,
      // which a client reads as a network fault, nor silence about the cause.
      log(
        `dynamodb: internal error: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`,
      );
      if (res.headersSent) return res.destroy();
      const answer = answerOf(
        {
          status: 500,
          body: {
            __type: 'com.amazonaws.dynamodb.v20120810#InternalServerError',
            message: 'Internal server error',
          },
        },
        req.headers['content-type'],
      );
      res.writeHead(answer.status, answer.headers);
      res.end(answer.body);
    });
  });
  const front = await start(proxy).catch(async (error: unknown) => {
    agent.destroy();
    return abandon(error);
  });
  return {
    endpoint: front.endpoint,
    armConflicts: (conflicts) => transactions.armConflicts(conflicts),
    armedConflicts: () => transactions.armedConflicts,
    async stop() {
      await front.stop();
      await Promise.all([tables.stop(), validator.stop(), index?.stop()]);
      agent.destroy();
    },
  };
}

interface Forwarded {
  readonly method: string;
  readonly path: string;
  readonly headers: IncomingMessage['headers'];
  readonly body: Buffer;
}

interface Answer {
  readonly status: number;
  readonly headers: IncomingMessage['headers'] | OutgoingHttpHeaders;
  readonly body: Buffer;
}

function ownRequest(operation: string, body: object): Forwarded {
  const payload = Buffer.from(JSON.stringify(body));
  return {
    method: 'POST',
    path: '/',
    headers: {
      ...OWN_HEADERS,
      'x-amz-target': `${TARGET_PREFIX}${operation}`,
      'content-length': `${payload.length}`,
    },
    body: payload,
  };
}

/** An answer of the proxy's own, framed as dynalite frames its answers. */
function answerOf(reply: Reply, requestType: string | undefined): Answer {
  const body = Buffer.from(JSON.stringify(reply.body));
  const type =
    requestType?.split(';')[0]?.trim() === 'application/json'
      ? 'application/json'
      : 'application/x-amz-json-1.0';
  return {
    status: reply.status,
    headers: {
      'x-amzn-RequestId': randomBytes(39).toString('base64').toUpperCase().replace(/[+/]/g, '0'),
      'x-amz-crc32': `${crc32(body)}`,
      'content-type': type,
      'content-length': `${body.length}`,
    },
    body,
  };
}

/** dynalite's ConditionalCheckFailedException with the item it failed on, as DynamoDB answers ALL_OLD. */
function withItem(answer: Answer, item: Item): Answer {
  const body = Buffer.from(JSON.stringify({ ...JSON.parse(answer.body.toString('utf8')), Item: item }));
  return {
    ...answer,
    headers: { ...answer.headers, 'x-amz-crc32': `${crc32(body)}`, 'content-length': `${body.length}` },
    body,
  };
}

function conditionFailed(answer: Answer): boolean {
  return answer.status === 400 && answer.body.includes('#ConditionalCheckFailedException"');
}

/** The request of a single-item write naming ReturnValuesOnConditionCheckFailure, parsed; undefined for any other. */
function askingOldItem(body: Buffer): Record<string, unknown> | undefined {
  if (!body.includes(RETURN_ON_FAILURE)) return undefined;
  try {
    const request: unknown = JSON.parse(body.toString('utf8'));
    return isObject(request) && request[RETURN_ON_FAILURE] != null ? request : undefined;
  } catch {
    return undefined;
  }
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function hasIndexName(body: Buffer): boolean {
  try {
    return typeof (JSON.parse(body.toString('utf8')) as { IndexName?: unknown }).IndexName === 'string';
  } catch {
    return false;
  }
}

function readAll(req: IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.once('end', () => resolve(Buffer.concat(chunks)));
    req.once('error', reject);
  });
}

/**
 * Marks the proxy's own requests to dynalite, which are the emulator's
 * workings, not requests of the stack: the bench's request counter
 * (bench/support/request-counter.cjs, checked by test/unit/bench-cost.test.ts)
 * leaves them out.
 */
export const EMULATOR_HOP_HEADER = 'x-longhaul-emulator-hop';

/**
 * One request to a dynalite over the kept-alive connections. A connection the
 * server closed as idle just as this request reused it is reset before the
 * server read anything: that request is sent again on a fresh connection
 * (Node's documented remedy), once; any other error is the caller's.
 */
async function sendTo(agent: Agent, endpoint: string, forward: Forwarded): Promise<Answer> {
  try {
    return await sendOnce(agent, endpoint, forward);
  } catch (error) {
    if (!(error instanceof ReusedSocketReset)) throw error;
    return sendOnce(agent, endpoint, forward);
  }
}

class ReusedSocketReset extends Error {}

function sendOnce(agent: Agent, endpoint: string, forward: Forwarded): Promise<Answer> {
  const url = new URL(forward.path, endpoint);
  return new Promise((resolve, reject) => {
    const outgoing = httpRequest(
      url,
      {
        method: forward.method,
        headers: { ...forward.headers, host: url.host, [EMULATOR_HOP_HEADER]: '1' },
        agent,
      },
      (incoming) => {
        readAll(incoming).then(
          (body) => resolve({ status: incoming.statusCode ?? 500, headers: incoming.headers, body }),
          reject,
        );
      },
    );
    outgoing.once('error', (error: NodeJS.ErrnoException) => {
      reject(
        outgoing.reusedSocket && error.code === 'ECONNRESET'
          ? new ReusedSocketReset(error.message, { cause: error })
          : error,
      );
    });
    outgoing.end(forward.body);
  });
}

/** Creates every table of `from` in `to` and copies its items: where the lagging index starts. */
async function copyTables(from: string, to: string): Promise<void> {
  const config = { region: 'us-east-1', credentials: { accessKeyId: 'local', secretAccessKey: 'local' } };
  const source = new DynamoDBClient({ ...config, endpoint: from });
  const target = new DynamoDBClient({ ...config, endpoint: to });
  try {
    for await (const page of paginateListTables({ client: source }, {})) {
      for (const TableName of page.TableNames ?? []) {
        const { Table } = await source.send(new DescribeTableCommand({ TableName }));
        if (!Table) continue;
        const input: CreateTableCommandInput = {
          TableName,
          KeySchema: Table.KeySchema,
          AttributeDefinitions: Table.AttributeDefinitions,
          BillingMode: 'PAY_PER_REQUEST',
          ...(Table.GlobalSecondaryIndexes?.length
            ? {
                GlobalSecondaryIndexes: Table.GlobalSecondaryIndexes.map((gsi) => ({
                  IndexName: gsi.IndexName,
                  KeySchema: gsi.KeySchema,
                  Projection: gsi.Projection,
                })),
              }
            : {}),
        };
        await target.send(new CreateTableCommand(input));
        await waitUntilTableExists(
          { client: target, minDelay: 1, maxDelay: 1, maxWaitTime: 30 },
          { TableName },
        );
        for await (const scanned of paginateScan({ client: source }, { TableName })) {
          const items = scanned.Items ?? [];
          for (let start = 0; start < items.length; start += 25) {
            await target.send(
              new BatchWriteItemCommand({
                RequestItems: {
                  [TableName]: items.slice(start, start + 25).map((Item) => ({ PutRequest: { Item } })),
                },
              }),
            );
          }
        }
      }
    }
  } finally {
    source.destroy();
    target.destroy();
  }
}
