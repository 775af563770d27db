import { dispatchJob, type FillDeps, fillFreeSlot } from '../../lambdas/domain/dispatch';
import { waitingEntryOf } from '../../lambdas/domain/fair-share';
import { executionNameOf, type Job, type JobPriority, newJob, slotHolderOf } from '../../lambdas/domain/job';
import type { TenantShare } from '../../lambdas/domain/ports';
import {
  granting,
  limits,
  MemoryQueue,
  MemoryStore,
  MemoryTimeline,
  MemoryWaitingLines,
  MemoryWorkflow,
  memorySlots,
  memoryTenantShares,
} from './support/memory-ports';

/**
 * Weighted fair share as the dispatcher, the release step and the reconciler
 * use it (`fillFreeSlot`), over the in-memory pool and waiting lines: which
 * job each freed slot goes to, whatever order the tenants submitted in.
 */

const T0 = Date.parse('2026-05-01T10:00:00.000Z');

/** A job id in the ids' alphabet (base32, a-z and 2-7), one per number. */
const jobIdNumbered = (n: number): string => {
  const alphabet = 'abcdefghijklmnopqrstuvwxyz234567';
  let digits = '';
  for (let rest = n; digits.length < 26; rest = Math.floor(rest / 32)) digits = alphabet[rest % 32] + digits;
  return `job_${digits}`;
};

function setup(maxInFlight: number, shares: Record<string, TenantShare> = {}) {
  let clock = T0;
  const deps = granting({
    store: new MemoryStore(),
    slots: memorySlots(),
    workflow: new MemoryWorkflow(),
    queue: new MemoryQueue(),
    waiting: new MemoryWaitingLines(),
    tenantShares: memoryTenantShares(shares),
    timeline: new MemoryTimeline(),
    maxInFlight: limits(maxInFlight),
    maxWaitSeconds: 30,
    now: () => new Date(clock),
    random: () => 0.5,
  });
  let n = 0;
  /** A job of `tenant` as intake leaves it: stored queued and in its tenant's line. */
  const submit = async (tenant: string, priority: JobPriority = 'standard') => {
    clock += 1;
    const job = newJob(
      {
        id: jobIdNumbered(n++),
        tenantId: tenant,
        type: 'image.generate',
        priority,
        input: { prompt: 'x' },
        idempotencyKey: `k${n}`,
        fingerprint: 'f',
      },
      new Date(clock),
    );
    deps.store.jobs.set(job.id, job);
    await deps.waiting.add(waitingEntryOf(job));
    return job;
  };
  const pool = deps.slots.pool('longhaul-http');
  /** Fills every free slot; the jobs given one, in order, now running. */
  const fill = async (): Promise<Job[]> => {
    const started: Job[] = [];
    for (;;) {
      const id = await fillFreeSlot(deps as FillDeps, 'longhaul-http');
      if (id === undefined) return started;
      const job = deps.store.jobs.get(id) as Job;
      deps.store.jobs.set(id, { ...job, status: 'running' });
      started.push(job);
    }
  };
  /** The oldest running job finishes and gives its slot back. */
  const finishOne = async () => {
    const [holder] = await pool.holders();
    const job = [...deps.store.jobs.values()].find((j) => slotHolderOf(j) === holder) as Job;
    deps.store.jobs.set(job.id, { ...job, status: 'succeeded' });
    await pool.release(holder as string, job.tenantId);
  };
  /** Runs until nothing waits, or `starts` jobs started; the jobs in start order. */
  const runJobs = async (starts: number): Promise<Job[]> => {
    const order: Job[] = [];
    while (order.length < starts) {
      const started = await fill();
      order.push(...started);
      if (started.length === 0 && (await pool.holders()).length === 0) break;
      await finishOne();
    }
    return order.slice(0, starts);
  };
  /** The same, as the tenants in start order. */
  const run = async (starts: number): Promise<string[]> => (await runJobs(starts)).map((job) => job.tenantId);
  return { deps, submit, fill, run, runJobs, pool };
}

it('gives a freed slot to a tenant that just arrived, not to the one that flooded before it', async () => {
  const { submit, run, fill } = setup(2);
  for (let i = 0; i < 50; i++) await submit('flood');
  expect((await fill()).map((job) => job.tenantId)).toEqual(['flood', 'flood']);
  await submit('small');

  // The next slot freed goes to the newcomer: its pass joins at the floor, below the flooder's.
  expect((await run(3)).slice(0, 1)).toEqual(['small']);
});

it('shares the slots 3:1 between two flooding tenants of weights 3 and 1', async () => {
  const { submit, run } = setup(5, { heavy: { weight: 3 }, light: { weight: 1 } });
  for (let i = 0; i < 400; i++) {
    await submit('heavy');
    await submit('light');
  }
  const order = await run(400);
  const heavy = order.filter((tenant) => tenant === 'heavy').length;
  expect(heavy / (order.length - heavy)).toBeCloseTo(3, 1);
});

it('starts a waiting tenant within (other weights ÷ its weight) starts, however many jobs the others wait with', async () => {
  const { submit, run } = setup(3, { a: { weight: 5 }, b: { weight: 2 }, c: { weight: 1 } });
  for (let i = 0; i < 100; i++) for (const tenant of ['a', 'b', 'c']) await submit(tenant);
  const order = await run(200);
  let since = 0;
  let worst = 0;
  for (const tenant of order) {
    since = tenant === 'c' ? 0 : since + 1;
    worst = Math.max(worst, since);
  }
  // (5 + 2) / 1 = 7, and the round it joined in.
  expect(worst).toBeLessThanOrEqual(7 + 2);
});

it("holds a tenant to its own cap inside the provider's limit, and gives the rest to others", async () => {
  const { submit, fill, deps } = setup(4, { capped: { weight: 10, maxInFlight: 1 } });
  for (let i = 0; i < 10; i++) await submit('capped');
  for (let i = 0; i < 10; i++) await submit('other');

  const started = await fill();
  expect(started.map((job) => job.tenantId).sort()).toEqual(['capped', 'other', 'other', 'other']);
  expect((await deps.slots.pool('longhaul-http').state()).tenantInFlight).toEqual({ capped: 1, other: 3 });
});

it('leaves a slot free rather than break a cap when only the capped tenant waits', async () => {
  const { submit, fill, pool } = setup(3, { capped: { weight: 1, maxInFlight: 2 } });
  for (let i = 0; i < 5; i++) await submit('capped');

  expect(await fill()).toHaveLength(2);
  expect(await pool.holders()).toHaveLength(2);
});

it("starts a tenant's interactive job before its standard jobs submitted earlier, and a batch job after them", async () => {
  const { submit, fill, runJobs } = setup(1);
  const standard = [];
  for (let i = 0; i < 20; i++) standard.push(await submit('acme'));
  await fill();
  const batch = await submit('acme', 'batch');
  const urgent = await submit('acme', 'interactive');

  const order = (await runJobs(21)).map((job) => job.id);
  expect(order[0]).toBe(urgent.id);
  expect(order.slice(1, 20)).toEqual(standard.slice(1).map((job) => job.id));
  expect(order[20]).toBe(batch.id);
});

it('chooses again when another chooser served the tenant between the read and the take', async () => {
  const { submit, deps, pool } = setup(2);
  const first = await submit('acme');
  const second = await submit('acme');
  // Another chooser serves `acme` right after this one read the pool.
  const state = pool.state.bind(pool);
  let raced = false;
  pool.state = async () => {
    const read = await state();
    if (!raced) {
      raced = true;
      await pool.acquire('job_other', 2, {
        tenant: 'acme',
        pass: { expected: undefined, next: 1_000_000, floor: 0 },
      });
    }
    return read;
  };

  const chosen = await fillFreeSlot(deps as FillDeps, 'longhaul-http');

  expect([first.id, second.id]).toContain(chosen);
  expect((await pool.holders()).sort()).toEqual([slotHolderOf(first), 'job_other'].sort());
  expect((await pool.state()).passes.acme).toBe(2_000_000);
});

it('starts the job it dispatches at once when its turn has come, without a hand-off message', async () => {
  const { submit, deps } = setup(1);
  const job = await submit('acme');

  expect(await dispatchJob(deps, job.id, 0)).toBe('started');
  expect(deps.queue.messages).toEqual([]);
  expect(deps.waiting.entries()).toEqual([]);
});

it('starts the job whose turn it is with the free slot, and defers the one it dispatches', async () => {
  const { submit, deps } = setup(1);
  const flooder = await submit('flood');
  await submit('flood');
  expect(await dispatchJob(deps, flooder.id, 0)).toBe('started');
  await deps.slots.pool('longhaul-http').release(slotHolderOf(flooder), 'flood');
  deps.store.jobs.set(flooder.id, { ...flooder, status: 'succeeded' });
  const newcomer = await submit('newcomer');
  const later = [...deps.store.jobs.values()].find(
    (job) => job.tenantId === 'flood' && job.status === 'queued',
  ) as Job;

  // The flooder's second job is dispatched first, but the slot is the newcomer's turn.
  expect(await dispatchJob(deps, later.id, 0)).toBe('deferred');
  expect(deps.workflow.started).toEqual([executionNameOf(flooder), executionNameOf(newcomer)]);
  expect(await deps.slots.holders()).toEqual([slotHolderOf(newcomer)]);
  expect(deps.queue.messages.map((m) => [m.jobId, m.options.handOff ?? false])).toEqual([[later.id, false]]);
});

it('keeps the slot with the job it started when its hand-off cannot be sent: the job runs, for the reconciler to start', async () => {
  const { submit, deps, pool } = setup(1);
  const job = await submit('acme');
  deps.queue.failing = true;

  await expect(fillFreeSlot(deps as FillDeps, 'longhaul-http')).rejects.toThrow('queue unavailable');

  // Given its slot and started in one write: never a slot without its job running, nor the reverse.
  expect(await pool.holders()).toEqual([slotHolderOf(job)]);
  expect(deps.store.jobs.get(job.id)?.status).toBe('running');
  expect(deps.waiting.entries()).toEqual([]);
});

it("skips writing the job in line on the first look of intake's message only, which put it there", async () => {
  const { submit, deps, pool } = setup(1);
  await pool.acquire('job_holder', 1);
  const job = await submit('acme');
  const marks = () => deps.waiting.marks.get('longhaul-http#acme');
  expect(marks()).toBe(1);

  expect(await dispatchJob(deps, job.id, 0, true)).toBe('deferred');
  expect(marks()).toBe(1);
  // Any other look puts it in line again: the reconciler's message, and each later wait.
  expect(await dispatchJob(deps, job.id, 0)).toBe('deferred');
  expect(marks()).toBe(2);
  expect(await dispatchJob(deps, job.id, 1)).toBe('deferred');
  expect(marks()).toBe(3);
});
