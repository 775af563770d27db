import { dispatchJob, firstLookOf, handOnFreeSlots } from '../../lambdas/domain/dispatch';
import { ProviderDownError, ProviderThrottledError } from '../../lambdas/domain/errors';
import { waitingEntryOf } from '../../lambdas/domain/fair-share';
import { executionNameOf, newJob, slotHolderOf } from '../../lambdas/domain/job';
import type { RateLimit, SlotPool } from '../../lambdas/domain/ports';
import { askProvider, PAUSE_DEFAULTS, pauseProvider } from '../../lambdas/domain/provider-pauses';
import { effectiveRate, rateTokenOf } from '../../lambdas/domain/rates';
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

/**
 * A provider's rate, through the dispatcher and the pauses with the
 * in-memory ports (the conformance suite holds them to the DynamoDB
 * adapters): a grant needs a token as well as a slot, a job without one waits
 * for it in its line, and the rate follows the provider's throttles.
 */

const clock = new Date('2026-05-01T10:00:00.000Z');
const PROVIDER = 'longhaul-http';

/** How a pause of the provider's pool is set at `now`: the bus it tells goes nowhere here. */
const pausing = (pool: SlotPool, now: Date, random: () => number) =>
  ({ provider: PROVIDER, pool, now, settings: PAUSE_DEFAULTS, random, events: new MemoryEvents() }) as const;

function setup(declared: RateLimit | undefined, maxInFlight = 5) {
  let now = clock;
  const deps = granting({
    store: new MemoryStore(),
    slots: memorySlots(),
    workflow: new MemoryWorkflow(),
    queue: new MemoryQueue(),
    waiting: new MemoryWaitingLines(),
    tenantShares: memoryTenantShares(),
    timeline: new MemoryTimeline(),
    maxInFlight: limits(maxInFlight),
    maxWaitSeconds: 300,
    now: () => now,
    random: () => 0.5,
  });
  const pool = deps.slots.pool(PROVIDER);
  if (declared) pool.declared = declared;
  pool.clock = () => now;
  const add = (n: number) => {
    const job = newJob(
      {
        id: `job_${String(n).padStart(26, '0')}`,
        tenantId: 'acme',
        type: 'image.generate',
        input: { prompt: 'x' },
        idempotencyKey: `k${n}`,
        fingerprint: 'f',
      },
      clock,
    );
    deps.store.jobs.set(job.id, job);
    return job;
  };
  const at = (seconds: number) => {
    now = new Date(clock.getTime() + seconds * 1000);
    return now;
  };
  return { deps, pool, add, at };
}

const throttle = (retryAfterSeconds?: number) =>
  new ProviderThrottledError(`${PROVIDER} answered 429.`, retryAfterSeconds);

describe('a declared rate at dispatch', () => {
  it('starts the burst at once, and a job that finds no token waits in its line, its look due when the next token comes', async () => {
    const { deps, add, at } = setup({ perMinute: 6, burst: 2 });
    const jobs = [add(0), add(1), add(2)] as const;

    await expect(dispatchJob(deps, jobs[0].id, 0)).resolves.toBe('started');
    await expect(dispatchJob(deps, jobs[1].id, 0)).resolves.toBe('started');
    await expect(dispatchJob(deps, jobs[2].id, 0)).resolves.toBe('deferred');

    // Slots are free (2 of 5 held): the rate alone holds the third back, for the 10 s of one token.
    expect(await deps.slots.holders()).toEqual([slotHolderOf(jobs[0]), slotHolderOf(jobs[1])]);
    expect(deps.waiting.entries()).toEqual([waitingEntryOf(jobs[2])]);
    expect(deps.queue.messages).toEqual([
      { jobId: jobs[2].id, provider: PROVIDER, options: { delaySeconds: 10, deferrals: 1 } },
    ]);
    at(10);
    await expect(dispatchJob(deps, jobs[2].id, 1)).resolves.toBe('started');
    expect(deps.workflow.started).toEqual(jobs.map(executionNameOf));
    expect(deps.waiting.entries()).toEqual([]);
  });

  it('waits in place for a token due within a second, where a delayed message would wait a whole one: 120 a minute are 120 a minute', async () => {
    const { deps, add, at } = setup({ perMinute: 120, burst: 1 });
    let waited = 0;
    const sleeping = {
      ...deps,
      sleep: async (ms: number) => {
        waited += ms;
        at(waited / 1000);
      },
    };
    const jobs = Array.from({ length: 4 }, (_, n) => add(n));
    for (const job of jobs) await expect(dispatchJob(sleeping, job.id, 0)).resolves.toBe('started');

    // One at once, then one every 500 ms: three waits of half a second, and no look by message.
    expect(waited).toBe(1500);
    expect(deps.queue.messages).toEqual([]);
    expect(deps.workflow.started).toEqual(jobs.map(executionNameOf));
  });

  it('sends a new job in line with its first look when the next token comes, while no token is left', async () => {
    const { deps, add } = setup({ perMinute: 6, burst: 1 });
    await expect(dispatchJob(deps, add(0).id, 0)).resolves.toBe('started');
    expect(await firstLookOf(deps, add(1))).toEqual({ inLine: true, delaySeconds: 10, deferrals: 1 });
  });

  it('hands a freed slot on to nobody while no token is left, and has the first job in line look when one comes', async () => {
    const { deps, add, at } = setup({ perMinute: 6, burst: 1 }, 1);
    const [running, waiting] = [add(0), add(1)];
    await expect(dispatchJob(deps, running.id, 0)).resolves.toBe('started');
    await expect(dispatchJob(deps, waiting.id, 0)).resolves.toBe('deferred');
    deps.queue.messages.length = 0;
    at(4);
    await deps.slots.release(slotHolderOf(running), running.tenantId);

    await handOnFreeSlots(deps, PROVIDER, 'released by a finished job');

    expect(await deps.slots.holders()).toEqual([]);
    // The next token comes 10 s after the first grant: 6 s from now.
    expect(deps.queue.messages).toEqual([
      { jobId: waiting.id, provider: PROVIDER, options: { inLine: true, delaySeconds: 6, deferrals: 1 } },
    ]);
    at(10);
    await expect(dispatchJob(deps, waiting.id, 1, true)).resolves.toBe('started');
  });
});

describe('a rate that follows the provider', () => {
  it('only pauses for a first throttle at the declared rate, and halves it for the traffic’s next, not for the throttles of the same pause nor for its probe', async () => {
    const { pool, at } = setup({ perMinute: 600, burst: 10 });
    const random = () => 0.5;

    // Granted at the rate, two submissions can still reach the provider closer than they were granted: one
    // throttle says nothing of the rate.
    await pauseProvider(pausing(pool, at(0), random), throttle());
    expect((await pool.state()).rate).toEqual({
      declared: { perMinute: 600, burst: 10 },
      lastThrottleAt: clock.getTime(),
    });
    // Submissions sent before the pause come back throttled while it lasts: the same throttle.
    await pauseProvider(pausing(pool, at(1), random), throttle());
    expect((await pool.state()).rate?.lastThrottleAt).toBe(clock.getTime());
    const { pausedUntil, pauseSeconds } = await pool.state();
    expect([pausedUntil, pauseSeconds]).toEqual([clock.getTime() + 8000, 7]);

    // Its end is probed, and the probe is throttled: the pause doubles, the rate stays (one submission is no rate).
    expect(await pool.acquire('probe', 5)).toBe(false);
    at(8);
    expect(await pool.acquire('probe', 5)).toBe(true);
    const again = await pauseProvider(pausing(pool, at(9), random), throttle());
    const state = await pool.state();
    expect(state.pauseSeconds).toBe(12);
    expect(again.until.getTime()).toBe(clock.getTime() + 21_000);
    expect(state.probeUntil).toBeUndefined();
    expect(state.rate?.throttled).toBeUndefined();

    // The next probe goes through; once its time is up the traffic's next throttle, within two minutes of the
    // first, halves the rate.
    at(21);
    expect(await pool.acquire('probe-2', 5)).toBe(true);
    at(24);
    expect(await pool.acquire('next', 5)).toBe(true);
    await pauseProvider(pausing(pool, at(25), random), throttle());
    expect((await pool.state()).rate?.throttled).toEqual({ perMinute: 300, at: clock.getTime() + 25_000 });
    // And the next, while it comes back, halves it again: the rate as far as it came back in the twenty-odd
    // seconds since (300 + 2 × 30).
    at(47);
    expect(await pool.acquire('probe-3', 5)).toBe(true);
    at(50);
    expect(await pool.acquire('last', 5)).toBe(true);
    await pauseProvider(pausing(pool, at(51), random), throttle());
    expect((await pool.state()).rate?.throttled).toEqual({ perMinute: 180, at: clock.getTime() + 51_000 });
  });

  it('leaves the rate alone for an outage: a 503 or an unreachable provider pauses its grants only', async () => {
    const { pool, at } = setup({ perMinute: 600, burst: 10 });
    await pauseProvider(
      pausing(pool, at(0), () => 0.5),
      new ProviderDownError(`${PROVIDER} answered 503.`),
    );
    const state = await pool.state();
    expect(state.pausedUntil).toBe(clock.getTime() + 4000);
    expect(state.rate).toEqual({ declared: { perMinute: 600, burst: 10 } });
  });

  it('rises back a twentieth of the declared rate every ten seconds without a throttle, never above it', async () => {
    const { pool, at } = setup({ perMinute: 600, burst: 10 });
    // A throttle, and the traffic's next once that pause is over: the second halves the rate.
    await pauseProvider(
      pausing(pool, at(-60), () => 0.5),
      throttle(5),
    );
    at(-55);
    expect(await pool.acquire('probe', 5)).toBe(true);
    at(-50);
    expect(await pool.acquire('next', 5)).toBe(true);
    await pauseProvider(
      pausing(pool, at(0), () => 0.5),
      throttle(),
    );
    const state = await pool.state();

    // From half, the whole rate is back within two minutes, not ten.
    expect(effectiveRate(state.rate, clock.getTime() + 9_000)).toEqual({ perMinute: 300, burst: 5 });
    expect(effectiveRate(state.rate, clock.getTime() + 10_000)).toEqual({ perMinute: 330, burst: 5 });
    expect(effectiveRate(state.rate, clock.getTime() + 50_000)).toEqual({ perMinute: 450, burst: 7 });
    expect(effectiveRate(state.rate, clock.getTime() + 100_000)).toEqual({ perMinute: 600, burst: 10 });
    expect(effectiveRate(state.rate, clock.getTime() + 60 * 60_000)).toEqual({ perMinute: 600, burst: 10 });
  });

  it('learns a rate where none was declared from the grants its first throttle met, and holds grants to it', async () => {
    const { deps, pool, add, at } = setup(undefined, 50);
    for (let n = 0; n < 20; n++) await expect(dispatchJob(deps, add(n).id, 0)).resolves.toBe('started');
    at(30);

    const pause = await pauseProvider(
      pausing(pool, at(30), () => 0.5),
      throttle(30),
    );

    // The provider named its wait (Retry-After): the pause lasts it.
    expect(pause.until.getTime()).toBe(clock.getTime() + 60_000);
    // 20 grants in the 30 s since they began: 40 a minute met the throttle, and a tenth under it is learned.
    expect((await pool.state()).rate?.throttled).toEqual({ perMinute: 36, at: clock.getTime() + 30_000 });
    // After the pause its probe goes, and then one grant every 60/36 s, a little sooner as the rate comes back
    // (by two a minute each ten seconds: 42 a minute three periods after the throttle, one every 1,429 ms).
    at(60);
    await expect(dispatchJob(deps, add(20).id, 0)).resolves.toBe('started');
    at(64);
    await expect(dispatchJob(deps, add(21).id, 0)).resolves.toBe('started');
    await expect(dispatchJob(deps, add(22).id, 0)).resolves.toBe('deferred');
    expect(rateTokenOf(await pool.state(), at(64))).toEqual({ waitMs: 1429 });
  });

  it('lowers a learned rate by a fifth at each throttle after the first, where a declared one halves', async () => {
    const { deps, pool, add, at } = setup(undefined, 50);
    for (let n = 0; n < 20; n++) await expect(dispatchJob(deps, add(n).id, 0)).resolves.toBe('started');
    await pauseProvider(
      pausing(pool, at(30), () => 0.5),
      throttle(1),
    );
    expect((await pool.state()).rate?.throttled).toEqual({ perMinute: 36, at: clock.getTime() + 30_000 });
    // Learned by meeting the provider's limit: the next throttle says the rate came back a little too far,
    // not that the provider halved it. 36 + 2 a minute for each of the 3 ten seconds since, less a fifth.
    at(31);
    expect(await pool.acquire('probe', 50)).toBe(true);
    at(34);
    expect(await pool.acquire('next', 50)).toBe(true);
    await pauseProvider(
      pausing(pool, at(60), () => 0.5),
      throttle(1),
    );
    expect((await pool.state()).rate?.throttled).toEqual({ perMinute: 33, at: clock.getTime() + 60_000 });
  });

  it('leaves the rate alone when a status read meets a throttle', async () => {
    const { pool, at } = setup({ perMinute: 600, burst: 10 });
    await expect(
      askProvider(
        pausing(pool, at(0), () => 0.5),
        false,
        async () => {
          throw throttle();
        },
      ),
    ).rejects.toThrow('answered 429');
    const state = await pool.state();
    expect(state.pausedUntil).toBeGreaterThan(clock.getTime());
    expect(state.rate).toEqual({ declared: { perMinute: 600, burst: 10 } });
  });
});
