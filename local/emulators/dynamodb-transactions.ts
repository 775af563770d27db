import canonicalize from 'canonicalize';
import { seededRandom } from '../seeded-random';
import type { ReadersWriterLock } from './readers-writer-lock';

/**
 * TransactWriteItems and TransactGetItems over dynalite, which has neither.
 *
 * A transaction holds the emulator's lock alone, so no other request runs
 * while it does: it reads the items it names, applies each action as the
 * single-item write it stands for (dynalite evaluates the condition against
 * the stored item and writes, or refuses), and when any action is refused
 * puts every item it changed back as it was read. Nobody can observe the
 * items in between, so the transaction is all-or-nothing and isolated.
 *
 * A ConditionCheck changes nothing, yet its condition must be dynalite's own
 * verdict on the stored item: it is sent as a conditional PutItem of the item
 * exactly as read (or, for an absent item, a conditional DeleteItem of its
 * key). When the condition holds, the put stores the attributes that were
 * already there and the delete removes nothing; when it fails, nothing is
 * written either. Nothing else can write between the read and the check.
 *
 * Where AWS answers depends on what the answer needs, and so does it here:
 * what the request alone shows wrong (member constraints, an expression that
 * does not parse, an unused value, an empty key value, an oversized Put, a
 * missing table, two actions on one item) is a ValidationException (or
 * ResourceNotFoundException) before anything is read; what only the stored
 * items show (a failed condition, a key that does not match the schema, an
 * update that does not apply) cancels the transaction with one reason per
 * action, in order. The request alone is judged by a dynalite with no tables,
 * which validates each action as the single-item request it stands for and
 * then, having no table, answers ResourceNotFoundException.
 *
 * Contention is modelled as DynamoDB's optimistic concurrency shows it to a
 * client: while a valid transaction runs (holding the lock, until it has
 * committed or been cancelled), its items are in flight; not while it
 * queues for the lock, a wait of the emulator's that AWS does not have. A second transaction
 * naming one of them is cancelled at once, with `TransactionConflict` as that
 * action's reason (and `None` for the others); a PutItem, UpdateItem or
 * DeleteItem of one of them fails with TransactionConflictException
 * (`conflictOf`). Nothing waits for the item. The lock still runs one
 * transaction's writes at a time, so what a reader sees is isolated as in
 * DynamoDB. A test can also arm conflicts on one item (`armConflicts`): each
 * transaction naming it and each single-item write to it then fails so with
 * a given probability, as under a storm of other transactions on that item.
 */

/** DynamoDB JSON of an item or key: attribute name to typed value, `{ id: { S: 'a' } }`. */
export type Item = Record<string, Record<string, unknown>>;
type Json = Record<string, unknown>;

/** A dynalite's answer, or the emulator's, its body parsed. */
export interface Reply {
  readonly status: number;
  readonly body: Json;
}

/** Sends one DynamoDB operation to a dynalite. */
export type Call = (operation: string, body: Json) => Promise<Reply>;

/** A write as a single-item request, which the lagging index replays. */
export interface PlainWrite {
  readonly operation: 'PutItem' | 'DeleteItem';
  readonly body: Json;
}

export interface TransactionsOptions {
  /** The dynalite holding the tables. */
  readonly tables: Call;
  /** A dynalite with no tables, for the checks a request fails on its own. */
  readonly validator: Call;
  /** Held shared by every other request to the tables. */
  readonly lock: ReadersWriterLock;
  /** Called, still holding the lock, with the writes of each transaction that succeeded. */
  readonly replay: (writes: readonly PlainWrite[]) => void;
  readonly now?: () => number;
}

const MAX_ACTIONS = 100;
/** How long AWS remembers a ClientRequestToken after the request that used it. */
const TOKEN_WINDOW_MS = 10 * 60_000;
const WRITE_KINDS = ['ConditionCheck', 'Put', 'Delete', 'Update'] as const;
type WriteKind = (typeof WRITE_KINDS)[number];
const DYNAMODB_ERROR = 'com.amazonaws.dynamodb.v20120810#';
const CONDITION_FAILED = 'The conditional request failed';
/** What DynamoDB says of an item another transaction holds, both in a cancellation reason and in TransactionConflictException. */
const TRANSACTION_ONGOING = 'Transaction is ongoing for the item';
/** What an action shares with the single-item write it stands for, besides its key or item. */
const CONDITION_FIELDS = [
  'TableName',
  'ConditionExpression',
  'ExpressionAttributeNames',
  'ExpressionAttributeValues',
];

interface Action {
  readonly kind: WriteKind | 'Get';
  readonly detail: Json;
  readonly table: string;
}

/** The item an action names, once its table is known: no key when the one given does not fit the schema. */
interface Target {
  readonly table: string;
  readonly key?: Item;
}

interface KeySchema {
  /** The partition key, then the sort key if any. */
  readonly attributes: readonly { readonly name: string; readonly type: string }[];
}

interface CancellationReason {
  readonly Code: string;
  readonly Item?: Item;
  readonly Message?: string;
}

type Applied =
  | { readonly ok: true; readonly written?: PlainWrite }
  | { readonly ok: false; readonly reply: Reply; readonly reason?: CancellationReason };

/** Conflicts a test arms on one item: each request naming it fails with probability `rate`, from a seeded sequence. */
export interface ArmedConflicts {
  readonly table: string;
  /** The item's key, each attribute a string (S) or a number (N). */
  readonly key: Readonly<Record<string, string | number>>;
  /** 0..1: the share of requests naming the item that conflict. */
  readonly rate: number;
  readonly seed?: number;
}

export class Transactions {
  private readonly schemas = new Map<string, KeySchema>();
  /** Items of the transactions in flight, each with how many hold it. */
  private readonly flying = new Map<string, number>();
  private armed:
    | { readonly identity: string; readonly rate: number; readonly next: () => number }
    | undefined;
  /** How many requests the armed conflicts failed. */
  armedConflicts = 0;
  /** Tokens of the transactions that succeeded, oldest first. */
  private readonly tokens = new Map<string, { readonly fingerprint: string; readonly expiresAt: number }>();
  private readonly now: () => number;

  constructor(private readonly options: TransactionsOptions) {
    this.now = options.now ?? Date.now;
  }

  /** Arms conflicts on one item (see ArmedConflicts); undefined disarms them. */
  async armConflicts(conflicts: ArmedConflicts | undefined): Promise<void> {
    this.armedConflicts = 0;
    this.armed = undefined;
    if (!conflicts) return;
    const schema = await this.schemaOf(conflicts.table);
    if (!schema) throw new Error(`no table ${conflicts.table} to arm conflicts in`);
    const key = Object.fromEntries(
      Object.entries(conflicts.key).map(([name, value]) => [
        name,
        typeof value === 'number' ? { N: String(value) } : { S: value },
      ]),
    );
    this.armed = {
      identity: identityOfKey(conflicts.table, schema, key),
      rate: conflicts.rate,
      // Seeded, so an armed storm strikes the same requests on every run.
      next: seededRandom(conflicts.seed ?? 1),
    };
  }

  /**
   * Whether a single-item write of `keyOrItem` in `table` meets a transaction
   * in flight (or an armed conflict) and fails with
   * TransactionConflictException: the answer it gets then.
   */
  async conflictOf(table: string, keyOrItem: unknown): Promise<Reply | undefined> {
    if (!this.contended()) return undefined;
    const schema = await this.schemaOf(table);
    const found = schema && isJson(keyOrItem) ? keyIn(schema, keyOrItem as Item, false) : undefined;
    if (!schema || !found || !('key' in found)) return undefined;
    if (!this.conflicts(identityOfKey(table, schema, found.key))) return undefined;
    return error('TransactionConflictException', 'message', TRANSACTION_ONGOING);
  }

  /** Whether any request may conflict now: a transaction is in flight, or conflicts are armed. */
  contended(): boolean {
    return this.flying.size > 0 || this.armed !== undefined;
  }

  /** Whether a request naming the item now conflicts: another transaction holds it, or an armed conflict strikes. */
  private conflicts(identity: string): boolean {
    if (this.flying.has(identity)) return true;
    if (this.armed?.identity !== identity || this.armed.next() >= this.armed.rate) return false;
    this.armedConflicts += 1;
    return true;
  }

  /** A table was created, changed or deleted: key schemas are read again. */
  forgetTables(): void {
    this.schemas.clear();
  }

  async write(request: Json): Promise<Reply> {
    const errors = [
      ...lengthErrors(request.ClientRequestToken, 'clientRequestToken', 36),
      ...enumErrors(request.ReturnConsumedCapacity, 'returnConsumedCapacity', ['INDEXES', 'TOTAL', 'NONE']),
      ...enumErrors(request.ReturnItemCollectionMetrics, 'returnItemCollectionMetrics', ['SIZE', 'NONE']),
      ...itemsErrors(request.TransactItems),
    ];
    const entries = Array.isArray(request.TransactItems) ? (request.TransactItems as unknown[]) : [];
    const actions = entries.map(writeAction);
    actions.forEach((action, i) => {
      if (action) errors.push(...writeActionErrors(action, i));
    });
    if (errors.length > 0) return validationErrors(errors);
    if (actions.some((action) => !action)) {
      return validation('TransactItems can only contain one of Check, Put, Update or Delete');
    }
    const valid = actions as Action[];
    const refusal = await this.refusalOf(valid.map(singleItemRequest));
    if (refusal) return refusal;
    const targets = await this.targetsOf(valid);
    if (!Array.isArray(targets)) return targets;

    // Optimistic: an item another transaction holds cancels this one now, rather than waiting for it.
    const identities = await Promise.all(targets.map((target) => this.identityOf(target)));
    const conflicting = identities.map((identity) => identity !== undefined && this.conflicts(identity));
    if (conflicting.some(Boolean)) {
      return cancellation(
        conflicting.map((conflict) =>
          conflict
            ? {
                ok: false,
                reply: { status: 400, body: {} },
                reason: { Code: 'TransactionConflict', Message: TRANSACTION_ONGOING },
              }
            : { ok: true },
        ),
      );
    }
    const held = identities.filter((identity): identity is string => identity !== undefined);
    // In flight while it runs, as in DynamoDB, not while it queues for the lock behind unrelated requests:
    // that queue is the emulator's, and counted in, a flight under load lasted as long as the queue did.
    return this.options.lock.exclusive(async () => {
      for (const identity of held) this.flying.set(identity, (this.flying.get(identity) ?? 0) + 1);
      try {
        const repeated = this.repeated(request);
        if (repeated) return repeated;

        const before = await allSettled(targets.map((target) => this.read(target)));
        const tried = await Promise.allSettled(valid.map((action, i) => this.apply(action, before[i])));
        const broken = tried.find((result) => result.status === 'rejected');
        if (broken) {
          // A write that failed on the way (not refused) undoes the others too: all or nothing, still.
          await allSettled(
            tried.map((result, i) =>
              result.status === 'fulfilled' && result.value.ok
                ? this.restore(valid[i] as Action, targets[i] as Target, before[i])
                : Promise.resolve(),
            ),
          );
          throw broken.reason;
        }
        const applied = tried.map((result) => (result as PromiseFulfilledResult<Applied>).value);
        if (applied.every((result) => result.ok)) {
          this.options.replay(
            applied.flatMap((result) => (result.ok && result.written ? [result.written] : [])),
          );
          this.remember(request);
          return { status: 200, body: {} };
        }
        await allSettled(
          applied.map((result, i) =>
            result.ok ? this.restore(valid[i] as Action, targets[i] as Target, before[i]) : Promise.resolve(),
          ),
        );
        return cancellation(applied);
      } finally {
        for (const identity of held) {
          const left = (this.flying.get(identity) ?? 1) - 1;
          if (left > 0) this.flying.set(identity, left);
          else this.flying.delete(identity);
        }
      }
    });
  }

  private async identityOf(target: Target): Promise<string | undefined> {
    const schema = await this.schemaOf(target.table);
    return schema && target.key ? identityOfKey(target.table, schema, target.key) : undefined;
  }

  async get(request: Json): Promise<Reply> {
    const errors = [
      ...enumErrors(request.ReturnConsumedCapacity, 'returnConsumedCapacity', ['INDEXES', 'TOTAL', 'NONE']),
      ...itemsErrors(request.TransactItems),
    ];
    const entries = Array.isArray(request.TransactItems) ? (request.TransactItems as unknown[]) : [];
    const actions: Action[] = [];
    entries.forEach((entry, i) => {
      const detail = isJson(entry) && isJson(entry.Get) ? entry.Get : undefined;
      const at = `transactItems.${i + 1}.member.get`;
      if (!detail) {
        errors.push(nullError(at));
        return;
      }
      for (const field of ['Key', 'TableName']) {
        if (detail[field] == null) errors.push(nullError(`${at}.${lowerFirst(field)}`));
      }
      actions.push({ kind: 'Get', detail, table: String(detail.TableName) });
    });
    if (errors.length > 0) return validationErrors(errors);
    const reads = actions.map((action) => ({
      operation: 'GetItem',
      body: pick(action.detail, ['TableName', 'Key', 'ProjectionExpression', 'ExpressionAttributeNames']),
    }));
    const refusal = await this.refusalOf(reads);
    if (refusal) return refusal;

    // Held alone, like a transaction that writes: AWS serializes TransactGetItems with single-item writes too.
    return this.options.lock.exclusive(async () => {
      const targets = await this.targetsOf(actions);
      if (!Array.isArray(targets)) return targets;
      const replies = await Promise.all(
        reads.map((read) => this.options.tables(read.operation, { ...read.body, ConsistentRead: true })),
      );
      if (replies.every((reply) => reply.status === 200)) {
        return {
          status: 200,
          body: { Responses: replies.map(({ body }) => (body.Item ? { Item: body.Item } : {})) },
        };
      }
      return cancellation(
        replies.map((reply) =>
          reply.status === 200 ? { ok: true } : { ok: false, reply, reason: reasonOf(reply) },
        ),
      );
    });
  }

  /**
   * The item stored under the key of `keyOrItem` in `table`, read consistently; the
   * caller holds the lock alone, so it is the item a refused write was refused on.
   */
  async current(table: string, keyOrItem: Item): Promise<Item | undefined> {
    const schema = await this.schemaOf(table);
    const key = schema && keyIn(schema, keyOrItem, false);
    return key && 'key' in key ? this.read({ table, key: key.key }) : undefined;
  }

  /** The first action, in request order, that a single-item request would be refused for on its own. */
  private async refusalOf(
    requests: readonly { operation: string; body: Json }[],
  ): Promise<Reply | undefined> {
    const replies = await Promise.all(
      requests.map(({ operation, body }) => this.options.validator(operation, body)),
    );
    return replies.find((reply) => errorName(reply) !== 'ResourceNotFoundException');
  }

  private async targetsOf(actions: readonly Action[]): Promise<Target[] | Reply> {
    const tables = [...new Set(actions.map((action) => action.table))];
    const schemas = new Map(await Promise.all(tables.map(async (t) => [t, await this.schemaOf(t)] as const)));
    if ([...schemas.values()].some((schema) => !schema)) {
      return error('ResourceNotFoundException', 'message', 'Requested resource not found');
    }
    const targets: Target[] = [];
    const seen = new Set<string>();
    for (const action of actions) {
      const schema = schemas.get(action.table) as KeySchema;
      const isPut = action.kind === 'Put';
      const found = keyIn(schema, (isPut ? action.detail.Item : action.detail.Key) as Item, !isPut);
      if (found && 'empty' in found) {
        return validation(
          'One or more parameter values are not valid. The AttributeValue for a key attribute cannot ' +
            `contain an empty ${found.type === 'S' ? 'string' : 'binary'} value. Key: ${found.empty}`,
        );
      }
      if (found) {
        const identity = identityOfKey(action.table, schema, found.key);
        if (seen.has(identity))
          return validation('Transaction request cannot include multiple operations on one item');
        seen.add(identity);
      }
      targets.push({ table: action.table, ...(found ? { key: found.key } : {}) });
    }
    return targets;
  }

  private async schemaOf(table: string): Promise<KeySchema | undefined> {
    const known = this.schemas.get(table);
    if (known) return known;
    const reply = await this.options.tables('DescribeTable', { TableName: table });
    const description = reply.body.Table as
      | {
          KeySchema: { AttributeName: string; KeyType: string }[];
          AttributeDefinitions: { AttributeName: string; AttributeType: string }[];
        }
      | undefined;
    if (reply.status !== 200 || !description) return undefined;
    const typeOf = (name: string) =>
      description.AttributeDefinitions.find((d) => d.AttributeName === name)?.AttributeType ?? 'S';
    const ordered = [...description.KeySchema].sort((a, b) =>
      a.KeyType === 'HASH' ? -1 : b.KeyType === 'HASH' ? 1 : 0,
    );
    const schema = {
      attributes: ordered.map((k) => ({ name: k.AttributeName, type: typeOf(k.AttributeName) })),
    };
    this.schemas.set(table, schema);
    return schema;
  }

  private async read(target: Target): Promise<Item | undefined> {
    if (!target.key) return undefined;
    const reply = await this.options.tables('GetItem', {
      TableName: target.table,
      Key: target.key,
      ConsistentRead: true,
    });
    if (reply.status !== 200)
      throw new Error(`reading an item of ${target.table} failed: ${JSON.stringify(reply.body)}`);
    return reply.body.Item as Item | undefined;
  }

  private async apply(action: Action, before: Item | undefined): Promise<Applied> {
    const single = singleItemRequest(action);
    const request =
      action.kind === 'ConditionCheck' && before
        ? { operation: 'PutItem', body: { ...pick(action.detail, CONDITION_FIELDS), Item: before } }
        : action.kind === 'Update'
          ? { operation: single.operation, body: { ...single.body, ReturnValues: 'ALL_NEW' } }
          : single;
    const reply = await this.options.tables(request.operation, request.body);
    if (reply.status !== 200) {
      const oldItem = action.detail.ReturnValuesOnConditionCheckFailure === 'ALL_OLD' ? before : undefined;
      return { ok: false, reply, reason: reasonOf(reply, oldItem) };
    }
    const { TableName, Item, Key } = action.detail;
    switch (action.kind) {
      case 'Put':
        return { ok: true, written: { operation: 'PutItem', body: { TableName, Item } } };
      case 'Update':
        return {
          ok: true,
          written: { operation: 'PutItem', body: { TableName, Item: reply.body.Attributes } },
        };
      case 'Delete':
        return { ok: true, written: { operation: 'DeleteItem', body: { TableName, Key } } };
      default:
        return { ok: true };
    }
  }

  /** Puts back an item a cancelled transaction wrote, as it was read before. */
  private async restore(action: Action, target: Target, before: Item | undefined): Promise<void> {
    if (action.kind === 'ConditionCheck' || !target.key) return;
    const reply = before
      ? await this.options.tables('PutItem', { TableName: target.table, Item: before })
      : await this.options.tables('DeleteItem', { TableName: target.table, Key: target.key });
    if (reply.status !== 200)
      throw new Error(`restoring an item of ${target.table} failed: ${JSON.stringify(reply.body)}`);
  }

  /** The answer to a retry of a transaction that succeeded with the same ClientRequestToken. */
  private repeated(request: Json): Reply | undefined {
    const token = request.ClientRequestToken;
    if (typeof token !== 'string') return undefined;
    const now = this.now();
    for (const [old, { expiresAt }] of this.tokens) {
      if (expiresAt > now) break;
      this.tokens.delete(old);
    }
    const seen = this.tokens.get(token);
    if (!seen) return undefined;
    if (seen.fingerprint === canonicalize(request)) return { status: 200, body: {} };
    return error(
      'IdempotentParameterMismatchException',
      'Message',
      'DynamoDB rejected the request because you retried a request with a different payload but with an ' +
        'idempotent token that was already used.',
    );
  }

  private remember(request: Json): void {
    const token = request.ClientRequestToken;
    if (typeof token !== 'string') return;
    this.tokens.delete(token);
    this.tokens.set(token, {
      fingerprint: canonicalize(request) ?? '',
      expiresAt: this.now() + TOKEN_WINDOW_MS,
    });
  }
}

/** The single-item request an action stands for; a ConditionCheck is a conditional delete until its item is known. */
function singleItemRequest(action: Action): { operation: string; body: Json } {
  switch (action.kind) {
    case 'Put':
      return { operation: 'PutItem', body: pick(action.detail, [...CONDITION_FIELDS, 'Item']) };
    case 'Update':
      return {
        operation: 'UpdateItem',
        body: pick(action.detail, [...CONDITION_FIELDS, 'Key', 'UpdateExpression']),
      };
    default:
      return { operation: 'DeleteItem', body: pick(action.detail, [...CONDITION_FIELDS, 'Key']) };
  }
}

function writeAction(entry: unknown): Action | undefined {
  if (!isJson(entry)) return undefined;
  const kinds = WRITE_KINDS.filter((kind) => entry[kind] != null);
  const kind = kinds[0];
  if (kinds.length !== 1 || !kind) return undefined;
  const detail = entry[kind];
  return isJson(detail) ? { kind, detail, table: String(detail.TableName) } : undefined;
}

function writeActionErrors(action: Action, i: number): string[] {
  const at = `transactItems.${i + 1}.member.${lowerFirst(action.kind)}`;
  const required: Record<string, readonly string[]> = {
    ConditionCheck: ['Key', 'TableName', 'ConditionExpression'],
    Put: ['Item', 'TableName'],
    Delete: ['Key', 'TableName'],
    Update: ['Key', 'UpdateExpression', 'TableName'],
  };
  return [
    ...(required[action.kind] ?? []).flatMap((field) =>
      action.detail[field] == null ? [nullError(`${at}.${lowerFirst(field)}`)] : [],
    ),
    ...enumErrors(
      action.detail.ReturnValuesOnConditionCheckFailure,
      `${at}.returnValuesOnConditionCheckFailure`,
      ['ALL_OLD', 'NONE'],
    ),
  ];
}

function itemsErrors(items: unknown): string[] {
  if (!Array.isArray(items)) return [nullError('transactItems')];
  if (items.length === 0) {
    return [
      "Value '[]' at 'transactItems' failed to satisfy constraint: Member must have length greater than or equal to 1",
    ];
  }
  if (items.length > MAX_ACTIONS) {
    return [
      `Value at 'TransactItems' failed to satisfy constraint: Member must have length less than or equal to ${MAX_ACTIONS}`,
    ];
  }
  return [];
}

function lengthErrors(value: unknown, at: string, max: number): string[] {
  if (value == null) return [];
  const text = String(value);
  if (text.length < 1)
    return [constraintError(text, at, 'Member must have length greater than or equal to 1')];
  if (text.length > max)
    return [constraintError(text, at, `Member must have length less than or equal to ${max}`)];
  return [];
}

function enumErrors(value: unknown, at: string, allowed: readonly string[]): string[] {
  if (value == null || allowed.includes(String(value))) return [];
  return [constraintError(String(value), at, `Member must satisfy enum value set: [${allowed.join(', ')}]`)];
}

const constraintError = (value: string, at: string, constraint: string) =>
  `Value '${value}' at '${at}' failed to satisfy constraint: ${constraint}`;
const nullError = (at: string) =>
  `Value null at '${at}' failed to satisfy constraint: Member must not be null`;

/** dynalite's and DynamoDB's summary of member constraint failures: at most ten, counted. */
function validationErrors(errors: readonly string[]): Reply {
  const shown = errors.slice(0, 10);
  return validation(
    `${shown.length} validation error${shown.length > 1 ? 's' : ''} detected: ${shown.join('; ')}`,
  );
}

function validation(message: string): Reply {
  return { status: 400, body: { __type: 'com.amazon.coral.validate#ValidationException', message } };
}

function error(name: string, messageField: 'message' | 'Message', message: string): Reply {
  return { status: 400, body: { __type: `${DYNAMODB_ERROR}${name}`, [messageField]: message } };
}

/** TransactionCanceledException as DynamoDB words it: a reason per action, in order, and their codes in the message. */
function cancellation(results: readonly Applied[]): Reply {
  const unexplained = results.find((result) => !result.ok && !result.reason);
  if (unexplained && !unexplained.ok) return unexplained.reply;
  const reasons = results.map((result) =>
    result.ok ? { Code: 'None' } : (result.reason as CancellationReason),
  );
  return {
    status: 400,
    body: {
      __type: `${DYNAMODB_ERROR}TransactionCanceledException`,
      CancellationReasons: reasons,
      Message: `Transaction cancelled, please refer cancellation reasons for specific reasons [${reasons
        .map((reason) => reason.Code)
        .join(', ')}]`,
    },
  };
}

/** Why dynalite refused an action, as a cancellation reason; none for a refusal a transaction does not explain. */
function reasonOf(reply: Reply, oldItem?: Item): CancellationReason | undefined {
  switch (errorName(reply)) {
    case 'ConditionalCheckFailedException':
      return {
        Code: 'ConditionalCheckFailed',
        ...(oldItem ? { Item: oldItem } : {}),
        Message: CONDITION_FAILED,
      };
    case 'ValidationException':
      return { Code: 'ValidationError', Message: String(reply.body.message ?? reply.body.Message ?? '') };
    default:
      return undefined;
  }
}

function errorName(reply: Reply): string | undefined {
  if (reply.status === 200) return undefined;
  return String(reply.body.__type ?? '')
    .split('#')
    .pop();
}

/**
 * The key `source` (a key, or a whole item for a Put) gives under `schema`:
 * undefined when it does not fit the schema (a missing attribute or one of
 * another type; with `exact`, also any attribute beyond the key's), `empty`
 * naming a key attribute whose string or binary value is empty.
 */
function keyIn(
  schema: KeySchema,
  source: Item | undefined,
  exact: boolean,
): { key: Item } | { empty: string; type: string } | undefined {
  if (!isJson(source)) return undefined;
  if (exact && Object.keys(source).length !== schema.attributes.length) return undefined;
  const key: Item = {};
  for (const { name, type } of schema.attributes) {
    const value = source[name];
    if (!isJson(value) || Object.keys(value).length !== 1 || typeof value[type] !== 'string')
      return undefined;
    if (value[type] === '' && type !== 'N') return { empty: name, type };
    key[name] = value;
  }
  return { key };
}

/** One name per item: its table and its key's values, each in one form. */
function identityOfKey(table: string, schema: KeySchema, key: Item): string {
  return JSON.stringify([table, ...schema.attributes.map((a) => identityOf(key[a.name]))]);
}

/** One form per key value: DynamoDB numbers that differ only in notation (`1`, `1.0`, `10E-1`) name the same item. */
function identityOf(value: Record<string, unknown> | undefined): string {
  const [type, raw] = Object.entries(value ?? {})[0] ?? ['', ''];
  return type === 'N' ? `N:${canonicalNumber(String(raw))}` : `${type}:${String(raw)}`;
}

function canonicalNumber(text: string): string {
  const match = /^([+-]?)(\d*)(?:\.(\d*))?(?:[eE]([+-]?\d+))?$/.exec(text.trim());
  if (!match) return text;
  const [, sign = '', whole = '', fraction = '', exponent = '0'] = match;
  const digits = `${whole}${fraction}`;
  const leading = digits.length - digits.replace(/^0+/, '').length;
  const significant = digits.slice(leading).replace(/0+$/, '');
  if (significant === '') return '0';
  // The value is 0.<significant> x 10^point.
  const point = whole.length - leading + Number(exponent);
  return `${sign === '-' ? '-' : ''}0.${significant}e${point}`;
}

/**
 * Every promise's value once all have settled, or the first failure then: the
 * lock is never given up while a write of the transaction is still on its way.
 */
async function allSettled<T>(promises: readonly Promise<T>[]): Promise<T[]> {
  const settled = await Promise.allSettled(promises);
  const failed = settled.find((result) => result.status === 'rejected');
  if (failed) throw failed.reason;
  return settled.map((result) => (result as PromiseFulfilledResult<T>).value);
}

function pick(from: Json, fields: readonly string[]): Json {
  return Object.fromEntries(
    fields.flatMap((field) => (from[field] === undefined ? [] : [[field, from[field]]])),
  );
}

function isJson(value: unknown): value is Json {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

const lowerFirst = (text: string) => `${text.charAt(0).toLowerCase()}${text.slice(1)}`;
