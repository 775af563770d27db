import { GetCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import type { ProviderName } from '../../config/providers';
import { DynamoDbJobStore, toItem } from '../../lambdas/adapters/dynamodb-job-store';
import { DynamoDbSlotPool, slotPoolKey } from '../../lambdas/adapters/dynamodb-slot-pool';
import { DynamoDbWaitingLines } from '../../lambdas/adapters/dynamodb-waiting-lines';
import { type Job, newJob, providerOf, slotHolderOf } from '../../lambdas/domain/job';
import type {
  JobStore,
  RateLimit,
  SlotGrant,
  SlotPool,
  SlotPoolState,
  WaitingLines,
} from '../../lambdas/domain/ports';
import { rateTokenOf, throttledRateOf } from '../../lambdas/domain/rates';
import { type DynaliteTables, startDynaliteTables } from '../../local/harness/dynalite-tables';
import { granting, MemoryStore, MemoryWaitingLines, memorySlots } from './support/memory-ports';

/**
 * One slot port, two implementations: the in-memory one the unit tests and
 * the interleaving explorer use, and the DynamoDB adapters on the local
 * emulator, which can conflict as DynamoDB does. Every case runs against
 * both, so the fake behaves as the real thing, contention and size included.
 */

jest.setTimeout(180_000);

const PROVIDER: ProviderName = 'longhaul-http';
const at = new Date('2026-03-01T12:00:00.000Z');

interface SlotPort {
  readonly pool: SlotPool;
  readonly store: Pick<JobStore, 'startWithSlot' | 'get'>;
  readonly waiting: WaitingLines;
  /** Stores a queued job, as intake does. */
  queued(job: Job): Promise<void>;
  /** The next `count` grants meet another transaction. */
  conflictGrants(count: number): Promise<void>;
  /** Requests naming the pool item conflict this often (0 disarms); only the DynamoDB pool can. */
  conflictOnPool(rate: number): Promise<void>;
  /** The pool item's size in bytes as DynamoDB stores it, roughly (names and values). */
  poolItemBytes(): Promise<number>;
}

let db: DynaliteTables;
beforeAll(async () => {
  db = await startDynaliteTables();
});
afterAll(async () => {
  await db?.stop();
});

/** A pool with a declared rate, judged by a clock the case moves. */
interface PortOptions {
  readonly declared?: RateLimit;
  readonly clock?: () => Date;
}

let run = 0;
const implementations: [string, (options?: PortOptions) => SlotPort][] = [
  [
    'memory',
    (options = {}) => {
      const deps = granting({
        store: new MemoryStore(),
        slots: memorySlots(),
        waiting: new MemoryWaitingLines(),
      });
      const pool = deps.slots.pool(PROVIDER);
      if (options.declared) pool.declared = options.declared;
      if (options.clock) pool.clock = options.clock;
      return {
        pool,
        store: deps.store,
        waiting: deps.waiting,
        queued: async (job) => {
          deps.store.jobs.set(job.id, job);
        },
        conflictGrants: async (count) => {
          deps.store.conflictingGrants = count;
        },
        conflictOnPool: async () => undefined,
        poolItemBytes: async () => Buffer.byteLength(JSON.stringify(await pool.state())),
      };
    },
  ],
  [
    'dynamodb',
    (options = {}) => {
      // Each case its own table prefix is not possible (one pool item per provider): each case its own provider item.
      const table = db.jobTableName;
      const pool = new DynamoDbSlotPool(db.documents, table, PROVIDER, options.clock, options.declared);
      return {
        pool,
        store: new DynamoDbJobStore(db.documents, { tableName: table, retentionDays: 30 }),
        waiting: new DynamoDbWaitingLines(db.documents, table),
        queued: async (job) => {
          await db.documents.send(new PutCommand({ TableName: table, Item: toItem(job, 30) }));
        },
        conflictGrants: (count) =>
          db.armConflicts(count > 0 ? { table, key: slotPoolKey(PROVIDER), rate: 1 } : undefined),
        conflictOnPool: (rate) =>
          db.armConflicts(rate > 0 ? { table, key: slotPoolKey(PROVIDER), rate, seed: 7 } : undefined),
        poolItemBytes: async () => {
          const { Item } = await db.documents.send(
            new GetCommand({ TableName: table, Key: slotPoolKey(PROVIDER), ConsistentRead: true }),
          );
          return Buffer.byteLength(
            JSON.stringify(Item ?? {}, (_, value) => (value instanceof Set ? [...value] : value)),
          );
        },
      };
    },
  ],
];

/** Empties the DynamoDB pool item between cases: every case starts from a pool nobody holds. */
async function freshPool(): Promise<void> {
  await db.armConflicts(undefined);
  await db.documents.send(
    new PutCommand({ TableName: db.jobTableName, Item: { ...slotPoolKey(PROVIDER), inFlight: 0 } }),
  );
}

function queuedJob(tenantId: string): Job {
  run += 1;
  const id = `job_${String(run).padStart(26, '0')}`;
  return newJob(
    { id, tenantId, type: 'image.generate', input: { prompt: 'p' }, idempotencyKey: id, fingerprint: 'f' },
    at,
  );
}

const claim = (tenant: string, expected: number | undefined, next: number) => ({
  tenant,
  pass: { expected, next, floor: expected ?? 0 },
});

/** The pool's slots and shares as read, without the rate's count. */
const slotsOf = ({ rate: _rate, ...slots }: SlotPoolState) => slots;

/** The minute of `at`, as the pool counts grants while no rate holds. */
const MINUTE = Math.floor(at.getTime() / 60_000);

/**
 * A grant as a chooser makes it: its token reckoned from the pool it read at
 * `when`; with none to give (paused, probing, out of tokens), a grant that
 * takes no token, which the write itself must refuse.
 */
async function grant(port: SlotPort, request: Omit<SlotGrant, 'token'>, when: Date) {
  const decision = rateTokenOf(await port.pool.state(), when);
  return port.store.startWithSlot({ ...request, token: 'token' in decision ? decision.token : {} }, when);
}

describe.each(implementations)('the %s slot port', (_name, make) => {
  let port: SlotPort;
  beforeEach(async () => {
    await freshPool();
    port = make();
  });

  it('grants a queued job its slot and starts it, refuses at the limit and for a job no longer queued', async () => {
    const [a, b] = [queuedJob('acme'), queuedJob('globex')];
    expect(providerOf(a)).toBe(PROVIDER);
    await port.queued(a);
    await port.queued(b);

    const granted = await grant(
      port,
      { job: a, holder: slotHolderOf(a), limit: 1, claim: claim('acme', undefined, 10) },
      at,
    );
    expect(granted).toEqual({ granted: expect.objectContaining({ id: a.id, status: 'running' }) });
    const full = await grant(
      port,
      { job: b, holder: slotHolderOf(b), limit: 1, claim: claim('globex', undefined, 10) },
      at,
    );
    expect(full).toEqual({ refused: 'slot' });
    const again = await grant(
      port,
      { job: a, holder: slotHolderOf(a), limit: 2, claim: claim('acme', 10, 20) },
      at,
    );
    expect(again).toEqual({ refused: 'job' });
    expect(await port.pool.state()).toEqual({
      holders: [slotHolderOf(a)],
      tenantInFlight: { acme: 1 },
      passes: { acme: 10 },
      floor: 0,
      // No rate declared: the grants are counted, and when they began, for a first throttle to learn one from.
      rate: { grants: { minute: MINUTE, count: 1, before: 0, since: at.getTime() } },
    });
  });

  it('refuses, in the grant’s own write, a job whose startBy has come, and takes no slot for it', async () => {
    const late = { ...queuedJob('acme'), startBy: at.toISOString() };
    const timely = { ...queuedJob('acme'), startBy: new Date(at.getTime() + 1).toISOString() };
    await port.queued(late);
    await port.queued(timely);

    const refused = await grant(
      port,
      { job: late, holder: slotHolderOf(late), limit: 2, claim: claim('acme', undefined, 10) },
      at,
    );
    expect(refused).toEqual({ refused: 'job' });
    expect((await port.pool.state()).holders).toEqual([]);
    expect((await port.store.get(late.id))?.status).toBe('queued');
    const granted = await grant(
      port,
      { job: timely, holder: slotHolderOf(timely), limit: 2, claim: claim('acme', undefined, 10) },
      at,
    );
    expect(granted).toEqual({ granted: expect.objectContaining({ id: timely.id, status: 'running' }) });
  });

  it('grants a job whose startBy has come while a submission of it is in doubt: only a resend can settle it', async () => {
    const inDoubt = {
      ...queuedJob('acme'),
      startBy: at.toISOString(),
      submitIntent: { attemptId: 'a1', at: at.toISOString() },
    };
    await port.queued(inDoubt);
    const granted = await grant(
      port,
      { job: inDoubt, holder: slotHolderOf(inDoubt), limit: 2, claim: claim('acme', undefined, 10) },
      at,
    );
    expect(granted).toEqual({ granted: expect.objectContaining({ id: inDoubt.id, status: 'running' }) });
  });

  it('refuses every grant while the provider is paused, in the grant’s own write, and grants again once the pause ends', async () => {
    const [a, b] = [queuedJob('acme'), queuedJob('globex')];
    await port.queued(a);
    await port.queued(b);
    const until = new Date(at.getTime() + 5000);
    expect(await port.pool.pause({ until, seconds: 5, reason: 'longhaul-http answered 503.' })).toBe(true);
    // A shorter pause than the one in force changes nothing.
    expect(await port.pool.pause({ until: at, seconds: 1, reason: 'shorter' })).toBe(false);

    const grantAt = (job: Job, when: Date) =>
      grant(
        port,
        { job, holder: slotHolderOf(job), limit: 2, claim: claim(job.tenantId, undefined, 10) },
        when,
      );
    expect(await grantAt(a, at)).toEqual({ refused: 'slot' });
    expect((await port.store.get(a.id))?.status).toBe('queued');
    expect(await port.pool.state()).toEqual({
      holders: [],
      tenantInFlight: {},
      passes: {},
      floor: 0,
      pausedUntil: until.getTime(),
      pauseReason: 'longhaul-http answered 503.',
      pauseSeconds: 5,
    });
    // The pause is over at its end, by the grant's own clock.
    expect(await grantAt(a, until)).toEqual({
      granted: expect.objectContaining({ id: a.id, status: 'running' }),
    });

    // acquire holds the pause too (judged by the adapter's clock, now), and grants again once it is resumed.
    expect(
      await port.pool.pause({ until: new Date(Date.now() + 60_000), seconds: 60, reason: 'throttled' }),
    ).toBe(true);
    expect(await port.pool.acquire('another', 2)).toBe(false);
    await port.pool.resume();
    expect(await port.pool.acquire('another', 2)).toBe(true);
    expect(await port.pool.holders()).toEqual(expect.arrayContaining([slotHolderOf(a), 'another']));
    expect(await port.pool.state()).toMatchObject({ pauseSeconds: 60 });
    expect((await port.pool.state()).pausedUntil).toBeUndefined();
  });

  it('holds a declared rate under a burst of concurrent grants: the burst at once, then one a token, and a refusal carries the wait', async () => {
    let now = at;
    port = make({ declared: { perMinute: 6, burst: 2 }, clock: () => now });
    const granted: number[] = [];
    // Every second of a minute, three grants at once, each reading the pool and taking a token of it.
    for (let second = 0; second < 60; second++) {
      now = new Date(at.getTime() + second * 1000);
      const taken = await Promise.all([0, 1, 2].map((n) => port.pool.acquire(`rate-${second}-${n}`, 100)));
      for (const ok of taken) if (ok) granted.push(second);
    }

    // 6 a minute is one every 10 s; a burst of 2 lets the first two go at once.
    expect(granted).toEqual([0, 0, 10, 20, 30, 40, 50]);
    const state = await port.pool.state();
    expect(state.holders).toHaveLength(7);
    expect(state.rate).toEqual({ declared: { perMinute: 6, burst: 2 }, tat: at.getTime() + 70_000 });
    // At 59 s the next token comes at 60 s: the refusal says so, from the item alone.
    expect(rateTokenOf(state, new Date(at.getTime() + 59_000))).toEqual({ waitMs: 1000 });
    expect(rateTokenOf(state, new Date(at.getTime() + 60_000))).toEqual({
      token: { tat: { expected: at.getTime() + 70_000, next: at.getTime() + 80_000 } },
    });
  });

  it('refuses, in its own write, a grant whose token was reckoned from a pool another grant changed since', async () => {
    port = make({ declared: { perMinute: 60, burst: 5 }, clock: () => at });
    const [a, b] = [queuedJob('acme'), queuedJob('globex')];
    await port.queued(a);
    await port.queued(b);
    const read = rateTokenOf(await port.pool.state(), at);
    if (!('token' in read)) throw new Error('a token was expected');
    expect(await port.pool.acquire('other', 5)).toBe(true);

    const stale = await port.store.startWithSlot(
      { job: a, holder: slotHolderOf(a), limit: 5, claim: { tenant: 'acme' }, token: read.token },
      at,
    );
    expect(stale).toEqual({ refused: 'slot' });
    expect((await port.store.get(a.id))?.status).toBe('queued');
    // Read again, the same grant goes.
    expect(
      await grant(port, { job: a, holder: slotHolderOf(a), limit: 5, claim: { tenant: 'acme' } }, at),
    ).toEqual({ granted: expect.objectContaining({ id: a.id, status: 'running' }) });
    expect((await port.pool.state()).rate?.tat).toBe(at.getTime() + 2000);
  });

  it('lowers the rate on a repeated throttle, and learns one where none was declared from the grants of the last minute', async () => {
    let now = at;
    const declared = { perMinute: 600, burst: 10 };
    port = make({ declared, clock: () => now });
    // A first throttle at the declared rate in full only pauses, and is remembered.
    expect(throttledRateOf(await port.pool.state(), at)).toBeUndefined();
    const reason = 'replicate answered 429.';
    expect(
      await port.pool.pause({
        until: new Date(at.getTime() + 5000),
        seconds: 5,
        reason,
        throttleAt: at.getTime(),
      }),
    ).toBe(true);
    expect((await port.pool.state()).rate).toEqual({ declared, lastThrottleAt: at.getTime() });
    // Another within two minutes halves it.
    now = new Date(at.getTime() + 60_000);
    const lowered = throttledRateOf(await port.pool.state(), now);
    expect(lowered).toEqual({ perMinute: 300, at: now.getTime() });
    expect(
      await port.pool.pause({
        until: new Date(now.getTime() + 5000),
        seconds: 5,
        reason,
        ...(lowered ? { throttled: lowered } : {}),
        throttleAt: now.getTime(),
      }),
    ).toBe(true);
    expect((await port.pool.state()).rate).toEqual({
      declared,
      throttled: { perMinute: 300, at: now.getTime() },
      lastThrottleAt: now.getTime(),
    });

    await freshPool();
    now = at;
    port = make({ clock: () => now });
    for (let n = 0; n < 20; n++) expect(await port.pool.acquire(`seen-${n}`, 100)).toBe(true);
    now = new Date(at.getTime() + 30_000);
    // 20 grants in the 30 s since they began, none the minute before: 40 a minute met the throttle, and the
    // rate learned is a tenth under it.
    expect(throttledRateOf(await port.pool.state(), now)).toEqual({ perMinute: 36, at: now.getTime() });
  });

  it('lets one grant probe a provider whose pause ended, alone until its time is up, and a new pause ends the probe', async () => {
    let now = at;
    port = make({ clock: () => now });
    const until = new Date(at.getTime() + 5000);
    await port.pool.pause({ until, seconds: 5, reason: 'longhaul-http answered 503.' });
    now = until;

    expect(await port.pool.acquire('probe', 5)).toBe(true);
    expect(await port.pool.acquire('second', 5)).toBe(false);
    const probing = await port.pool.state();
    expect(probing.probeUntil).toBe(until.getTime() + 3000);
    expect(rateTokenOf(probing, now)).toEqual({ waitMs: 3000 });

    // The probe's time up with no new pause: the provider takes submissions, and grants go on.
    now = new Date(until.getTime() + 3000);
    expect(await port.pool.acquire('second', 5)).toBe(true);
    expect(await port.pool.acquire('third', 5)).toBe(true);

    // A probe the provider refuses pauses it again: no grant, and the next pause's end is probed anew.
    const again = new Date(now.getTime() + 10_000);
    await port.pool.pause({ until: again, seconds: 10, reason: 'longhaul-http answered 429.' });
    expect((await port.pool.state()).probeUntil).toBeUndefined();
    expect(await port.pool.acquire('fourth', 5)).toBe(false);
    now = again;
    expect(await port.pool.acquire('fourth', 5)).toBe(true);
    expect(await port.pool.acquire('fifth', 5)).toBe(false);
    expect(await port.pool.holders()).toEqual(expect.arrayContaining(['probe', 'second', 'third', 'fourth']));
  });

  it("marks the job a probe's grant starts, and ends that probe at once when its holder says the provider took it", async () => {
    let now = at;
    port = make({ clock: () => now });
    const until = new Date(at.getTime() + 5000);
    await port.pool.pause({ until, seconds: 5, reason: 'longhaul-http answered 503.' });
    now = new Date(until.getTime() + 100);
    const [probe, next] = [queuedJob('acme'), queuedJob('globex')];
    await port.queued(probe);
    await port.queued(next);

    const probed = await grant(
      port,
      { job: probe, holder: slotHolderOf(probe), limit: 5, claim: claim('acme', undefined, 10) },
      now,
    );
    expect(probed).toEqual({ granted: expect.objectContaining({ id: probe.id, probes: true }) });
    expect(
      await grant(
        port,
        { job: next, holder: slotHolderOf(next), limit: 5, claim: claim('globex', undefined, 10) },
        now,
      ),
    ).toEqual({
      refused: 'slot',
    });
    // Only the probe's own holder ends it; then the next grant goes at once, long before the probe's time is up.
    expect(await port.pool.endProbe(slotHolderOf(next), now)).toBe(false);
    expect(await port.pool.endProbe(slotHolderOf(probe), now)).toBe(true);
    expect(await port.pool.endProbe(slotHolderOf(probe), now)).toBe(false);
    const granted = await grant(
      port,
      { job: next, holder: slotHolderOf(next), limit: 5, claim: claim('globex', undefined, 10) },
      now,
    );
    expect(granted).toEqual({ granted: expect.objectContaining({ id: next.id }) });
    expect('granted' in granted && granted.granted.probes).toBeFalsy();
    // A probe a new pause ended cannot be ended again by its holder.
    await port.pool.pause({ until: new Date(now.getTime() + 5000), seconds: 5, reason: 'again' });
    expect(await port.pool.endProbe(slotHolderOf(probe), now)).toBe(false);
  });

  it('answers a grant that meets another transaction as a conflict, having written nothing', async () => {
    const job = queuedJob('acme');
    await port.queued(job);
    await port.conflictGrants(1);
    const outcome = await grant(
      port,
      { job, holder: slotHolderOf(job), limit: 1, claim: claim('acme', undefined, 10) },
      at,
    );
    await port.conflictGrants(0);

    expect(outcome).toEqual({ refused: 'conflict' });
    expect((await port.store.get(job.id))?.status).toBe('queued');
    expect(await port.pool.state()).toEqual({ holders: [], tenantInFlight: {}, passes: {}, floor: 0 });
  });

  it('takes and gives back every slot through a storm of conflicts on the pool item, never past the limit', async () => {
    await port.conflictOnPool(0.4);
    const holders = Array.from({ length: 12 }, (_, i) => `storm-${i}`);
    const taken = await Promise.all(holders.map((holder) => port.pool.acquire(holder, 5)));
    expect(taken.filter(Boolean)).toHaveLength(5);
    expect((await port.pool.holders()).length).toBe(5);
    const released = await Promise.all(holders.map((holder) => port.pool.release(holder)));
    await port.conflictOnPool(0);

    expect(released.filter(Boolean)).toHaveLength(5);
    expect(await port.pool.holders()).toEqual([]);
  });

  it('keeps the pass of a tenant whose line waits, and drops it once the tenant neither holds nor waits', async () => {
    await port.pool.acquire('h1', 5, claim('acme', undefined, 10));
    await port.waiting.add({ provider: PROVIDER, tenant: 'acme', place: 'p1', jobId: 'job_w' });
    await port.pool.release('h1', 'acme');
    expect((await port.pool.state()).passes).toEqual({ acme: 10 });

    await port.waiting.remove({ provider: PROVIDER, tenant: 'acme', place: 'p1', jobId: 'job_w' });
    const [marker] = await port.waiting.tenants(PROVIDER);
    await port.waiting.retire(PROVIDER, marker as { tenant: string; marks: number });
    expect(await port.waiting.tenants(PROVIDER)).toEqual([]);
    expect(slotsOf(await port.pool.state())).toEqual({
      holders: [],
      tenantInFlight: {},
      passes: {},
      floor: 0,
    });
  });

  it('gives a slot back in one step that says whether the tenant holds any still, its idle pass dropped by a step of its own', async () => {
    await port.pool.acquire('h1', 5, claim('acme', undefined, 10));
    await port.pool.acquire('h2', 5, { tenant: 'acme', pass: { expected: 10, next: 20, floor: 10 } });
    await port.pool.acquire('h3', 5, claim('globex', undefined, 10));
    await port.waiting.add({ provider: PROVIDER, tenant: 'globex', place: 'p1', jobId: 'job_w' });

    expect(await port.pool.giveBack('h1', 'acme')).toBe('others held');
    expect(await port.pool.giveBack('h2', 'acme')).toBe('last');
    expect(await port.pool.giveBack('h2', 'acme')).toBe('not held');
    expect(await port.pool.giveBack('h3', 'globex')).toBe('last');
    // Until the follow-up, the pass stays: the hand-off waits for no look at the tenant's line.
    expect((await port.pool.state()).passes).toEqual({ acme: 20, globex: 10 });

    await port.pool.forgetIdlePass('acme');
    await port.pool.forgetIdlePass('globex');
    expect(slotsOf(await port.pool.state())).toEqual({
      holders: [],
      tenantInFlight: {},
      passes: { globex: 10 },
      floor: 0,
    });

    // A tenant holding a slot again keeps its pass.
    await port.pool.acquire('h4', 5, { tenant: 'acme', pass: { expected: undefined, next: 30, floor: 20 } });
    await port.pool.forgetIdlePass('acme');
    expect((await port.pool.state()).passes).toEqual({ acme: 30, globex: 10 });
  });

  it('stays small after serving 1,000 tenants: nothing of a tenant gone idle stays in the pool item', async () => {
    const TENANTS = 1_000;
    const empty = await port.poolItemBytes();
    let largest = 0;
    let next = 0;
    const serve = async () => {
      for (let n = next++; n < TENANTS; n = next++) {
        const tenant = `tenant-${n}`;
        const state = await port.pool.state();
        expect(
          await port.pool.acquire(`h-${n}`, 8, claim(tenant, state.passes[tenant], state.floor + 1)),
        ).toBe(true);
        if (n % 500 === 0) largest = Math.max(largest, await port.poolItemBytes());
        expect(await port.pool.release(`h-${n}`, tenant)).toBe(true);
      }
    };
    await serve();

    const state = await port.pool.state();
    expect(state.holders).toEqual([]);
    expect(state.tenantInFlight).toEqual({});
    expect(state.passes).toEqual({});
    // What stays is the grants' count of the minute (a few numbers), whatever the tenants served.
    expect(await port.poolItemBytes()).toBeLessThanOrEqual(empty + 100);
    // One tenant at a time holds a slot: a few hundred bytes, never O(tenants served).
    expect(largest).toBeLessThan(1_000);
  });
});
