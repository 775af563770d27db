import {
  deferDelaySeconds,
  dispatchJob,
  firstLookOf,
  handOnFreeSlots,
  waitDelaySeconds,
} from '../../lambdas/domain/dispatch';
import { waitingEntryOf } from '../../lambdas/domain/fair-share';
import { executionNameOf, type Job, newJob, slotHolderOf } from '../../lambdas/domain/job';
import {
  granting,
  limits,
  MemoryEvents,
  MemoryQueue,
  MemoryStore,
  MemoryTimeline,
  MemoryWaitingLines,
  MemoryWorkflow,
  memorySlots,
  memoryTenantShares,
} from './support/memory-ports';

const clock = new Date('2026-05-01T10:00:00.000Z');

function setup(maxInFlight: number) {
  const deps = granting({
    store: new MemoryStore(),
    slots: memorySlots(),
    workflow: new MemoryWorkflow(),
    queue: new MemoryQueue(),
    waiting: new MemoryWaitingLines(),
    tenantShares: memoryTenantShares(),
    timeline: new MemoryTimeline(),
    maxInFlight: limits(maxInFlight),
    maxWaitSeconds: 30,
    now: () => clock,
    random: () => 0.5,
  });
  const add = (n: number, status: Job['status'] = 'queued') => {
    const job = {
      ...newJob(
        {
          id: `job_${String.fromCharCode(97 + n).repeat(26)}`,
          tenantId: 'acme',
          type: 'image.generate',
          input: { prompt: 'x' },
          idempotencyKey: `k${n}`,
          fingerprint: 'f',
        },
        clock,
      ),
      status,
    } as Job;
    deps.store.jobs.set(job.id, job);
    return job;
  };
  return { deps, add };
}

describe('dispatchJob', () => {
  it('grants nothing while the provider is paused, and looks again when the pause ends, not before', async () => {
    const { deps, add } = setup(2);
    const job = add(0);
    const pool = deps.slots.pool('longhaul-http');
    const until = new Date(clock.getTime() + 40_000);
    await pool.pause({ until, seconds: 40, reason: 'longhaul-http answered 503.' });
    await expect(dispatchJob(deps, job.id, 0)).resolves.toBe('deferred');
    expect(deps.workflow.started).toEqual([]);
    expect(await deps.slots.holders()).toEqual([]);
    expect(deps.waiting.entries()).toEqual([waitingEntryOf(job)]);
    expect(deps.queue.messages).toEqual([
      { jobId: job.id, provider: 'longhaul-http', options: { delaySeconds: 41, deferrals: 1 } },
    ]);
    // The grant's own condition holds the pause too, whatever the caller read.
    expect(
      await deps.store.startWithSlot(
        { job, holder: slotHolderOf(job), limit: 2, claim: { tenant: 'acme' }, token: {} },
        new Date(until.getTime() - 1),
      ),
    ).toEqual({ refused: 'slot' });
    // Once it is over, the job's look takes its slot from its line.
    const later = { ...deps, now: () => until };
    await expect(dispatchJob(later, job.id, 1)).resolves.toBe('started');
    expect(deps.workflow.started).toEqual([executionNameOf(job)]);
  });

  it('starts a job put back in line by a pause under a new run of its own', async () => {
    const { deps, add } = setup(2);
    const job = { ...add(0), runs: 1 };
    deps.store.jobs.set(job.id, job);
    await expect(dispatchJob(deps, job.id, 1)).resolves.toBe('started');
    expect(deps.workflow.started).toEqual([`${executionNameOf({ ...job, runs: 0 })}-run1`]);
  });

  it('sends a new job to a paused provider in its line, its first look after the pause', async () => {
    const { deps } = setup(2);
    await deps.slots
      .pool('longhaul-http')
      .pause({ until: new Date(clock.getTime() + 10_000), seconds: 10, reason: '429' });
    const look = await firstLookOf(deps, {
      ...newJob(
        {
          id: 'job_x',
          tenantId: 'acme',
          type: 'image.generate',
          input: {},
          idempotencyKey: 'k',
          fingerprint: 'f',
        },
        clock,
      ),
      provider: 'longhaul-http',
    } as Job);
    expect(look).toEqual({ inLine: true, delaySeconds: 11, deferrals: 1 });
  });

  it('starts one execution named after the job while a slot is free', async () => {
    const { deps, add } = setup(1);
    const job = add(0);
    await expect(dispatchJob(deps, job.id, 0)).resolves.toBe('started');
    expect(deps.workflow.started).toEqual([executionNameOf(job)]);
    expect(await deps.slots.holders()).toEqual([slotHolderOf(job)]);
  });

  it('takes a free slot nobody waits for without joining a line, moving its tenant’s pass on', async () => {
    const { deps, add } = setup(2);
    const job = add(0);
    await expect(dispatchJob(deps, job.id, 0)).resolves.toBe('started');
    expect(deps.waiting.marks.size).toBe(0); // never put in a line
    expect(deps.waiting.entries()).toEqual([]);
    const state = await deps.slots.pool('longhaul-http').state();
    expect(state.tenantInFlight).toEqual({ acme: 1 });
    expect(state.passes.acme).toBeGreaterThan(0);
  });

  it('puts a job in its line when another tenant waits, and the fair choice gives out the free slot', async () => {
    const { deps, add } = setup(2);
    const waiting = {
      ...newJob(
        {
          id: 'job_wwwwwwwwwwwwwwwwwwwwwwwwww',
          tenantId: 'globex',
          type: 'image.generate',
          input: { prompt: 'x' },
          idempotencyKey: 'kw',
          fingerprint: 'f',
        },
        new Date(clock.getTime() - 60_000),
      ),
    } as Job;
    deps.store.jobs.set(waiting.id, waiting);
    await deps.waiting.add(waitingEntryOf(waiting));
    const job = add(0);

    await expect(dispatchJob(deps, job.id, 0)).resolves.toBe('started');

    // Both slots go by the fair choice (a tie, broken by name): none is left free while globex waits.
    expect([...deps.workflow.started].sort()).toEqual(
      [executionNameOf(job), executionNameOf(waiting)].sort(),
    );
    expect(deps.waiting.marks.get('longhaul-http#acme')).toBe(1); // it joined its line to be weighed
    expect(deps.waiting.entries()).toEqual([]);
  });

  it('defers a job at a full provider as a new message delayed by about the longest wait, counting its waits', async () => {
    const { deps, add } = setup(1);
    const first = add(0);
    const second = add(1);
    await dispatchJob(deps, first.id, 0);
    await expect(dispatchJob(deps, second.id, 3)).resolves.toBe('deferred');
    // Its turn comes through its line; the message is only the look that follows if that was missed.
    expect(deps.queue.messages).toEqual([
      {
        jobId: second.id,
        provider: 'longhaul-http',
        options: { delaySeconds: waitDelaySeconds(deps.maxWaitSeconds, deps.random), deferrals: 4 },
      },
    ]);
    expect(deps.workflow.started).toEqual([executionNameOf(first)]);
  });

  it('never holds more slots than the limit, however many jobs arrive at once', async () => {
    const { deps, add } = setup(3);
    const jobs = Array.from({ length: 10 }, (_, n) => add(n));
    const outcomes = await Promise.all(jobs.map((job) => dispatchJob(deps, job.id, 0)));
    // A dispatch that fills free slots may start another waiting job than its own, whose own look then defers.
    expect(deps.workflow.started).toHaveLength(3);
    expect(await deps.slots.holders()).toHaveLength(3);
    expect(outcomes.filter((o) => o !== 'started' && o !== 'deferred')).toEqual([]);
  });

  it('lets a redelivered message of a job that holds its slot start it again (idempotently)', async () => {
    const { deps, add } = setup(1);
    const job = add(0);
    await dispatchJob(deps, job.id, 0);
    await expect(dispatchJob(deps, job.id, 0)).resolves.toBe('started');
    expect(deps.workflow.started).toEqual([executionNameOf(job)]);
  });

  it.each(['running', 'succeeded', 'canceled', 'needs_review'] as const)(
    'drops a message for a %s job',
    async (status) => {
      const { deps, add } = setup(1);
      const job = add(0, status);
      await expect(dispatchJob(deps, job.id, 0)).resolves.toBe('dropped');
      expect(await deps.slots.holders()).toEqual([]);
    },
  );

  it('ends a job whose startBy passed before it was granted: failed, out of its line, nothing started or held', async () => {
    const { deps: bare, add } = setup(2);
    const deps = { ...bare, events: new MemoryEvents() };
    const job = { ...add(0), startBy: new Date(clock.getTime() - 1).toISOString() };
    deps.store.jobs.set(job.id, job);
    await deps.waiting.add(waitingEntryOf(job));
    await expect(dispatchJob(deps, job.id, 3, true)).resolves.toBe('dropped');
    const ended = deps.store.jobs.get(job.id);
    expect(ended?.status).toBe('failed');
    expect(ended?.error).toEqual({
      code: 'start_deadline_passed',
      message: `It had not reached its provider by its startBy (${job.startBy}); nothing was sent to the provider.`,
    });
    expect(ended?.finishedAt).toBe(clock.toISOString());
    expect(deps.events.published.map((event) => event.detailType)).toEqual(['job.failed']);
    expect(deps.workflow.started).toEqual([]);
    expect(await deps.slots.holders()).toEqual([]);
    expect(deps.waiting.entries()).toEqual([]);
    expect(deps.queue.messages).toEqual([]);
  });

  it('starts a job whose startBy is still ahead', async () => {
    const { deps, add } = setup(2);
    const job = { ...add(0), startBy: new Date(clock.getTime() + 1).toISOString() };
    deps.store.jobs.set(job.id, job);
    await expect(dispatchJob(deps, job.id, 0)).resolves.toBe('started');
    expect(deps.workflow.started).toEqual([executionNameOf(job)]);
  });

  it('gives a freed slot past a waiting job whose startBy passed, ending it, to the next in line', async () => {
    const { deps: bare, add } = setup(1);
    const deps = { ...bare, events: new MemoryEvents() };
    const late = { ...add(0), startBy: new Date(clock.getTime() - 1000).toISOString() };
    deps.store.jobs.set(late.id, late);
    const next = add(1);
    await deps.waiting.add(waitingEntryOf(late));
    await deps.waiting.add(waitingEntryOf(next));
    await handOnFreeSlots(deps, 'longhaul-http', 'a slot freed');
    expect(deps.store.jobs.get(late.id)?.status).toBe('failed');
    expect(deps.store.jobs.get(late.id)?.error?.code).toBe('start_deadline_passed');
    expect(await deps.slots.holders()).toEqual([slotHolderOf(next)]);
    expect(deps.store.jobs.get(next.id)?.status).toBe('running');
    expect(deps.waiting.entries()).toEqual([]);
  });

  it('where no event can be put, passes a waiting job whose startBy passed without ending it: its message or the reconciler ends it', async () => {
    const { deps, add } = setup(1);
    const late = { ...add(0), startBy: new Date(clock.getTime() - 1000).toISOString() };
    deps.store.jobs.set(late.id, late);
    const next = add(1);
    await deps.waiting.add(waitingEntryOf(late));
    await deps.waiting.add(waitingEntryOf(next));
    await handOnFreeSlots(deps, 'longhaul-http', 'a slot freed');
    expect(deps.store.jobs.get(late.id)?.status).toBe('queued');
    expect(await deps.slots.holders()).toEqual([slotHolderOf(next)]);
    expect(deps.waiting.entries()).toEqual([]);
  });

  it('drops a message for an unknown job', async () => {
    const { deps } = setup(1);
    await expect(dispatchJob(deps, 'job_zzzzzzzzzzzzzzzzzzzzzzzzzz', 0)).resolves.toBe('dropped');
  });
});

describe('firstLookOf', () => {
  it("sends a new job's message at once while its provider has a free slot, and as a later look once it is full", async () => {
    const { deps, add } = setup(1);
    const first = add(0);
    const second = add(1);
    // Not put in line: the dispatcher takes the free slot at once unless somebody waits.
    await expect(firstLookOf(deps, first)).resolves.toEqual({});

    await dispatchJob(deps, first.id, 0);

    await expect(firstLookOf(deps, second)).resolves.toEqual({
      inLine: true,
      delaySeconds: waitDelaySeconds(deps.maxWaitSeconds, deps.random),
      deferrals: 1,
    });
  });
});

describe('firstLookOf, with a slot free for a moment while jobs wait', () => {
  it('puts the new job in its line at once, so a release takes it by its priority', async () => {
    const { deps, add } = setup(2);
    const waiting = add(1);
    await deps.waiting.add(waitingEntryOf(waiting));
    // A release freed a slot and is handing it on: the pool shows it free.
    await expect(firstLookOf(deps, add(0))).resolves.toEqual({ inLine: true });
  });
});

describe('waitDelaySeconds', () => {
  it('is between half the longest wait and all of it, and at least a second', () => {
    expect([0, 0.5, 1].map((r) => waitDelaySeconds(30, () => r))).toEqual([15, 23, 30]);
    expect(waitDelaySeconds(1, () => 0)).toBe(1);
  });
});

describe('deferDelaySeconds', () => {
  it('grows with each wait up to the cap, with full jitter and at least a second', () => {
    expect([0, 1, 2, 3, 4, 5, 9].map((n) => deferDelaySeconds(n, 30, () => 1))).toEqual([
      1, 2, 4, 8, 16, 30, 30,
    ]);
    expect(deferDelaySeconds(9, 3, () => 1)).toBe(3);
    expect(deferDelaySeconds(5, 30, () => 0)).toBe(1);
    expect(deferDelaySeconds(5, 30, () => 0.5)).toBe(15);
  });
});
