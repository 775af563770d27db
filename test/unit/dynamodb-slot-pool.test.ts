import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
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

beforeAll(async () => {
  db = await startDynaliteTables();
  const recording = {
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
