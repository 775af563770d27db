import { DeleteCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { ProviderName } from '../../config/providers';
import { DynamoDbSlotPool, slotPoolKey } from '../../lambdas/adapters/dynamodb-slot-pool';
import { DynamoDbWaitingLines } from '../../lambdas/adapters/dynamodb-waiting-lines';
import type { WaitingEntry } from '../../lambdas/domain/ports';
import { type DynaliteTables, startDynaliteTables } from '../../local/harness/dynalite-tables';

/**
 * What a release of the DynamoDB slot pool sends to the pool item: every
 * grant's transaction names that item, so a release that added a transaction
 * of its own there made conflicts frequent with a few tenants served at once.
 */

jest.setTimeout(60_000);

const PROVIDER: ProviderName = 'replicate';
let db: DynaliteTables;
/** Every command sent, by name, with the item it names. */
let sent: { readonly command: string; readonly input: Record<string, unknown> }[];
let pool: DynamoDbSlotPool;
let lines: DynamoDbWaitingLines;
let recording: DynamoDBDocumentClient;

beforeAll(async () => {
  db = await startDynaliteTables();
  recording = {
    send: (command: { constructor: { name: string }; input: Record<string, unknown> }) => {
      sent.push({ command: command.constructor.name, input: command.input });
      return db.documents.send(command as never);
    },
  } as unknown as DynamoDBDocumentClient;
  pool = new DynamoDbSlotPool(recording, db.jobTableName, PROVIDER);
  lines = new DynamoDbWaitingLines(db.documents, db.jobTableName);
});
afterAll(async () => {
  await db?.stop();
});

let run = 0;
beforeEach(() => {
  run += 1;
  sent = [];
});

const claim = (tenant: string, next: number) => ({ tenant, pass: { expected: undefined, next, floor: 0 } });
const entry = (tenant: string): WaitingEntry => ({ provider: PROVIDER, tenant, place: 'p1', jobId: 'job_w' });
/** The writes a release sent to the pool item. */
const poolWrites = () =>
  sent.filter(
    ({ command, input }) =>
      command === 'TransactWriteCommand' ||
      (command === 'UpdateCommand' && JSON.stringify(input.Key) === JSON.stringify(slotPoolKey(PROVIDER))),
  );

describe('DynamoDbSlotPool.release', () => {
  it('gives a slot back in one request, its own conditional update saying that the tenant holds none now', async () => {
    const tenant = `hand-off-${run}`;
    await pool.acquire('h1', 5, claim(tenant, 10));
    sent = [];

    await expect(pool.giveBack('h1', tenant)).resolves.toBe('last');

    expect(sent.map(({ command }) => command)).toEqual(['UpdateCommand']);
    expect((await pool.state()).passes[tenant]).toBe(10);
  });

  it("drops an idle tenant's pass in a plain update after its last slot's, and sends no transaction", async () => {
    const tenant = `idle-${run}`;
    await pool.acquire('h1', 5, claim(tenant, 10));
    sent = [];

    await expect(pool.release('h1', tenant)).resolves.toBe(true);

    expect(poolWrites().map(({ command }) => command)).toEqual(['UpdateCommand', 'UpdateCommand']);
    expect((await pool.state()).passes[tenant]).toBeUndefined();
    expect((await pool.state()).holders).toEqual([]);
  });

  it('keeps the pass of a tenant holding another slot, and drops it with the last one', async () => {
    const tenant = `two-${run}`;
    await pool.acquire('h1', 5, claim(tenant, 10));
    await pool.acquire('h2', 5, { tenant, pass: { expected: 10, next: 20, floor: 10 } });

    await expect(pool.release('h1', tenant)).resolves.toBe(true);
    expect((await pool.state()).passes[tenant]).toBe(20);
    expect((await pool.state()).tenantInFlight[tenant]).toBe(1);
    await expect(pool.release('h2', tenant)).resolves.toBe(true);
    expect((await pool.state()).passes[tenant]).toBeUndefined();
    expect(sent.some(({ command }) => command === 'TransactWriteCommand')).toBe(false);
  });

  it('keeps the pass of a tenant whose line waits, in one write', async () => {
    const tenant = `waiting-${run}`;
    await pool.acquire('h1', 5, claim(tenant, 10));
    await lines.add(entry(tenant));
    sent = [];

    await expect(pool.release('h1', tenant)).resolves.toBe(true);

    expect(poolWrites().map(({ command }) => command)).toEqual(['UpdateCommand']);
    expect((await pool.state()).passes[tenant]).toBe(10);
  });

  it('drops the pass of a tenant whose line was retired while it still held its last slot', async () => {
    const tenant = `retired-${run}`;
    await pool.acquire('h1', 5, claim(tenant, 10));
    await lines.add(entry(tenant));
    await lines.remove(entry(tenant));
    const [marker] = (await lines.tenants(PROVIDER)).filter((waiting) => waiting.tenant === tenant);
    // Its slot still held, the retire takes the marker alone: the release is what drops the pass.
    await lines.retire(PROVIDER, marker as { tenant: string; marks: number });
    expect((await pool.state()).passes[tenant]).toBe(10);

    await expect(pool.release('h1', tenant)).resolves.toBe(true);
    expect((await pool.state()).passes[tenant]).toBeUndefined();
  });

  it('answers false for a holder that holds no slot, and changes nothing', async () => {
    const tenant = `none-${run}`;
    await pool.acquire('h1', 5, claim(tenant, 10));
    await expect(pool.release('nobody', tenant)).resolves.toBe(false);
    await expect(pool.release('nobody')).resolves.toBe(false);
    expect((await pool.state()).holders).toEqual(['h1']);
    expect((await pool.state()).passes[tenant]).toBe(10);
    await pool.release('h1', tenant);
  });
});

describe('DynamoDbSlotPool.acquire and pause, with a rate', () => {
  const RATED: ProviderName = 'deepgram';
  const at = new Date('2026-06-01T08:00:00.000Z');
  let rated: DynamoDbSlotPool;
  beforeEach(async () => {
    await db.documents.send(new DeleteCommand({ TableName: db.jobTableName, Key: slotPoolKey(RATED) }));
    rated = new DynamoDbSlotPool(recording, db.jobTableName, RATED, () => at, { perMinute: 60, burst: 2 });
    sent = [];
  });

  it('takes the token in the slot’s own conditional update: one request for a grant that read the pool already', async () => {
    const token = { tat: { expected: undefined, next: at.getTime() + 1000 } };
    await expect(rated.acquire('g1', 5, undefined, token)).resolves.toBe(true);

    expect(sent.map(({ command }) => command)).toEqual(['UpdateCommand']);
    expect(sent[0]?.input).toMatchObject({
      UpdateExpression: 'SET tat = :tat ADD inFlight :one, holders :holder',
      ConditionExpression:
        '(attribute_not_exists(inFlight) OR inFlight < :limit) AND NOT contains(holders, :holderId) AND ' +
        '(attribute_not_exists(pausedUntil) OR (pausedUntil <= :now AND probeUntil > pausedUntil AND probeUntil <= :now)) AND ' +
        'attribute_not_exists(tat)',
      ExpressionAttributeValues: expect.objectContaining({
        ':tat': at.getTime() + 1000,
        ':now': at.getTime(),
      }),
    });
    expect((await rated.state()).rate).toEqual({
      declared: { perMinute: 60, burst: 2 },
      tat: at.getTime() + 1000,
    });
  });

  it('reads the pool once for a grant that read nothing (a search’s query), and reads nothing more when out of tokens', async () => {
    await expect(rated.acquire('g1', 5)).resolves.toBe(true);
    await expect(rated.acquire('g2', 5)).resolves.toBe(true);
    expect(sent.map(({ command }) => command)).toEqual([
      'GetCommand',
      'UpdateCommand',
      'GetCommand',
      'UpdateCommand',
    ]);
    sent = [];

    // The burst of 2 is spent: refused from the read, with no write sent.
    await expect(rated.acquire('g3', 5)).resolves.toBe(false);
    expect(sent.map(({ command }) => command)).toEqual(['GetCommand']);
  });

  it('lowers the rate and ends a probe in the pause’s own write', async () => {
    const until = new Date(at.getTime() + 5000);
    await expect(
      rated.pause({
        until,
        seconds: 5,
        reason: 'deepgram answered 429.',
        throttled: { perMinute: 30, at: at.getTime() },
      }),
    ).resolves.toBe(true);

    expect(sent.map(({ command }) => command)).toEqual(['UpdateCommand']);
    expect(sent[0]?.input).toMatchObject({
      UpdateExpression:
        'SET pausedUntil = :until, pauseSeconds = :seconds, pauseReason = :reason, throttledRate = :rate, throttledAt = :throttledAt REMOVE probeUntil, probing',
      ConditionExpression: 'attribute_not_exists(pausedUntil) OR pausedUntil < :until',
    });
    expect((await rated.state()).rate).toEqual({
      declared: { perMinute: 60, burst: 2 },
      throttled: { perMinute: 30, at: at.getTime() },
    });
  });
});
