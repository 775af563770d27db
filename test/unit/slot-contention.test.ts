import { PutCommand } from '@aws-sdk/lib-dynamodb';
import type { ProviderName } from '../../config/providers';
import { DynamoDbJobStore, toItem } from '../../lambdas/adapters/dynamodb-job-store';
import { DynamoDbSlotPool, slotPoolKey } from '../../lambdas/adapters/dynamodb-slot-pool';
import { DynamoDbWaitingLines } from '../../lambdas/adapters/dynamodb-waiting-lines';
import { type DispatchDeps, dispatchJob, handOnFreeSlots } from '../../lambdas/domain/dispatch';
import { type Job, newJob, providerOf } from '../../lambdas/domain/job';
import type { SlotPool } from '../../lambdas/domain/ports';
import { withQuerySlot } from '../../lambdas/domain/search';
import { releaseOwnSlot } from '../../lambdas/domain/slots';
import { type DynaliteTables, startDynaliteTables } from '../../local/harness/dynalite-tables';
import { limits, MemoryQueue, MemoryTimeline, MemoryWorkflow } from './support/memory-ports';

/**
 * Dispatch, release and a search's query lease through the domain, against
 * the DynamoDB adapters on the local emulator, while half of the requests
 * naming the provider's pool item conflict as under a storm of other
 * transactions: every job is granted its slot and runs once, every query is
 * granted its slot, the limit and each tenant's cap are never passed, no slot
 * is left held and no error escapes.
 */

jest.setTimeout(120_000);

const PROVIDER: ProviderName = 'longhaul-http';
const LIMIT = 3;
/** acme may hold one slot at a time; the others only the limit. */
const CAPS: Record<string, number> = { acme: 1 };
const TENANTS = ['acme', 'globex', 'initech'];
const JOBS_PER_TENANT = 5;
const QUERIES = 6;
const at = new Date('2026-03-01T12:00:00.000Z');

let db: DynaliteTables;
beforeAll(async () => {
  db = await startDynaliteTables();
});
afterAll(async () => {
  await db?.stop();
});

function queuedJob(tenantId: string, n: number): Job {
  const id = `job_${tenantId.padEnd(8, '0')}${String(n).padStart(18, '0')}`;
  return newJob(
    { id, tenantId, type: 'image.generate', input: { prompt: id }, idempotencyKey: id, fingerprint: 'f' },
    at,
  );
}

it('grants, runs and frees every slot through a storm of conflicts on the pool item, within the limit and caps', async () => {
  const table = db.jobTableName;
  const store = new DynamoDbJobStore(db.documents, { tableName: table, retentionDays: 30 });
  const pool: SlotPool = new DynamoDbSlotPool(db.documents, table, PROVIDER);
  const queue = new MemoryQueue();
  const workflow = new MemoryWorkflow();
  const timeline = new MemoryTimeline();
  const deps: DispatchDeps = {
    store,
    slots: () => pool,
    queue,
    waiting: new DynamoDbWaitingLines(db.documents, table),
    tenantShares: async (tenants) =>
      new Map(
        tenants.map((tenant) => [
          tenant,
          { weight: 1, ...(CAPS[tenant] === undefined ? {} : { maxInFlight: CAPS[tenant] }) },
        ]),
      ),
    maxInFlight: limits(LIMIT),
    now: () => new Date(),
    workflow,
    timeline,
    maxWaitSeconds: 60,
    random: Math.random,
  };

  const jobs = TENANTS.flatMap((tenant) =>
    Array.from({ length: JOBS_PER_TENANT }, (_, n) => queuedJob(tenant, n)),
  );
  for (const job of jobs) {
    expect(providerOf(job)).toBe(PROVIDER);
    await db.documents.send(new PutCommand({ TableName: table, Item: toItem(job, 30) }));
  }
  await db.armConflicts({ table, key: slotPoolKey(PROVIDER), rate: 0.5, seed: 11 });

  // What the pool holds, watched after every change anyone makes: never past the limit or a cap.
  const breaches: string[] = [];
  const watch = async () => {
    const state = await pool.state();
    if (state.holders.length > LIMIT) breaches.push(`${state.holders.length} slots held`);
    for (const [tenant, cap] of Object.entries(CAPS)) {
      if ((state.tenantInFlight[tenant] ?? 0) > cap)
        breaches.push(`${tenant} held ${state.tenantInFlight[tenant]}`);
    }
  };

  // A job's run: started by the dispatcher or a hand-on, it ends and its release step gives the slot back
  // and hands every free slot on, as the release step does.
  const runs: Promise<void>[] = [];
  const started = new Map<string, number>();
  const start = workflow.start.bind(workflow);
  workflow.start = async (name, input, stateMachine) => {
    // A start is named after the job: a second one (a hand-off's message and a look meeting) is the same run.
    const again = workflow.started.includes(name);
    await start(name, input, stateMachine);
    if (again) return;
    started.set(input.jobId, (started.get(input.jobId) ?? 0) + 1);
    runs.push(
      (async () => {
        await watch();
        const job = (await store.get(input.jobId)) as Job;
        const done = await store.transition(job, ['running'], { status: 'succeeded' }, deps.now());
        expect([job.status, done?.status]).toEqual(['running', 'succeeded']);
        expect(await releaseOwnSlot(deps.slots, job)).toBe(true);
        await handOnFreeSlots(deps, PROVIDER, 'released by a finished job');
        await watch();
      })(),
    );
  };

  // The dispatcher: each job's first message, then whatever comes back (a hand-off, or a look deferred
  // while its line waits), until every job has run.
  const dispatcher = async () => {
    for (const job of jobs) await dispatchJob(deps, job.id, 0);
    const deadline = Date.now() + 60_000;
    while (started.size < jobs.length && Date.now() < deadline) {
      const message = queue.messages.shift();
      if (message) await dispatchJob(deps, message.jobId, message.options.deferrals ?? 0);
      else await new Promise((resolve) => setTimeout(resolve, 20));
    }
  };

  // Searches meanwhile, each retrying after a 429 as a client does until its query got a slot.
  let queried = 0;
  const searches = Array.from({ length: QUERIES }, async () => {
    for (;;) {
      try {
        await withQuerySlot(
          pool,
          LIMIT,
          Date.now,
          async () => {
            await watch();
            queried += 1;
          },
          () => handOnFreeSlots(deps, PROVIDER, 'released by a search'),
        );
        return;
      } catch (error) {
        if ((error as Error).name !== 'RateLimitedError') throw error;
      }
    }
  });

  await Promise.all([dispatcher(), ...searches]);
  await Promise.all(runs);
  // The last hand-ons may still have started jobs whose runs began after the wait above.
  await Promise.all(runs);
  const struck = db.armedConflicts();
  await db.armConflicts(undefined);

  expect(struck).toBeGreaterThan(20);
  expect(breaches).toEqual([]);
  expect(queried).toBe(QUERIES);
  expect([...started.values()]).toEqual(jobs.map(() => 1));
  expect(new Set(started.keys())).toEqual(new Set(jobs.map((job) => job.id)));
  for (const job of jobs) expect((await store.get(job.id))?.status).toBe('succeeded');
  expect(await pool.state()).toEqual({
    holders: [],
    tenantInFlight: {},
    passes: {},
    floor: expect.any(Number),
    // The grants of the last minutes, counted for a first throttle to learn a rate from: a few numbers.
    rate: {
      grants: {
        minute: expect.any(Number),
        count: expect.any(Number),
        before: expect.any(Number),
        since: expect.any(Number),
      },
    },
  });
});
