import { waitingEntryOf } from '../../lambdas/domain/fair-share';
import { slotHolderOf } from '../../lambdas/domain/job';
import { waitingOf } from '../../lambdas/domain/waiting-reasons';
import { sampleJob } from './support/jobs';
import { limits, MemoryWaitingLines, memorySlots, memoryTenantShares } from './support/memory-ports';

const clock = new Date('2026-05-01T10:00:00.000Z');

function setup(caps: Record<string, number> = {}) {
  const slots = memorySlots();
  const deps = {
    slots,
    maxInFlight: limits(2),
    tenantShares: memoryTenantShares(
      Object.fromEntries(
        Object.entries(caps).map(([tenant, maxInFlight]) => [tenant, { weight: 1, maxInFlight }]),
      ),
    ),
    waiting: new MemoryWaitingLines(),
    now: () => clock,
  };
  return { deps, pool: slots.pool('longhaul-http') };
}

const queued = sampleJob(clock, { provider: 'longhaul-http' });
const holder = (n: number, tenantId = 'globex') =>
  slotHolderOf(sampleJob(clock, { id: `job_${String.fromCharCode(98 + n).repeat(26)}`, tenantId }));

describe('waitingOf', () => {
  it('says a queued job waits for its paused provider, until when', async () => {
    const { deps, pool } = setup();
    const until = new Date(clock.getTime() + 90_000);
    await pool.pause({ until, seconds: 90, reason: 'longhaul-http answered 503.' });
    await expect(waitingOf(deps, queued)).resolves.toEqual({
      reason: 'provider_paused',
      until: until.toISOString(),
    });
  });

  it('says a queued job waits for a full provider', async () => {
    const { deps, pool } = setup();
    await pool.acquire(holder(0), 2, { tenant: 'globex' });
    await pool.acquire(holder(1), 2, { tenant: 'globex' });
    await expect(waitingOf(deps, queued)).resolves.toEqual({ reason: 'provider_full' });
  });

  it("says its place in its tenant's line when it is near the head, and none when it is further back", async () => {
    const { deps, pool } = setup();
    await pool.acquire(holder(0), 2, { tenant: 'globex' });
    await pool.acquire(holder(1), 2, { tenant: 'globex' });
    const ahead = sampleJob(new Date(clock.getTime() - 1000), { id: 'job_0000000000000000000000000a' });
    await deps.waiting.add(waitingEntryOf(ahead));
    await deps.waiting.add(waitingEntryOf(queued));
    await expect(waitingOf(deps, queued)).resolves.toEqual({ reason: 'provider_full', position: 2 });
    for (let n = 0; n < 30; n++) {
      const earlier = sampleJob(new Date(clock.getTime() - 2000 - n), {
        id: `job_${String(n).padStart(26, '0')}`,
      });
      await deps.waiting.add(waitingEntryOf(earlier));
    }
    await expect(waitingOf(deps, queued)).resolves.toEqual({ reason: 'provider_full' });
  });

  it("says a queued job waits for its tenant's cap at a provider with slots free", async () => {
    const { deps, pool } = setup({ acme: 1 });
    await pool.acquire(holder(0, 'acme'), 2, { tenant: 'acme', maxInFlight: 1 });
    await expect(waitingOf(deps, queued)).resolves.toEqual({ reason: 'tenant_cap' });
  });

  it("says a queued job waits for its provider's rate at a provider with slots free, until its token comes, and when it should start", async () => {
    const { deps, pool } = setup();
    // 30 a minute, one at a time: a token every 2 s, the last one taken now.
    pool.declared = { perMinute: 30, burst: 1 };
    pool.clock = () => clock;
    expect(await pool.acquire(holder(0), 2, { tenant: 'globex' })).toBe(true);
    const ahead = sampleJob(new Date(clock.getTime() - 1000), { id: 'job_0000000000000000000000000a' });
    await deps.waiting.add(waitingEntryOf(ahead));
    await deps.waiting.add(waitingEntryOf(queued));
    // The next token in 2 s goes to the job ahead of it; its own comes 2 s later.
    await expect(waitingOf(deps, queued)).resolves.toEqual({
      reason: 'rate_limited',
      until: new Date(clock.getTime() + 2000).toISOString(),
      position: 2,
      estimatedStartAt: new Date(clock.getTime() + 4000).toISOString(),
    });
  });

  it('says when a job behind a pause should start: the pause, then a token each for the jobs ahead of it', async () => {
    const { deps, pool } = setup();
    pool.declared = { perMinute: 60, burst: 1 };
    const until = new Date(clock.getTime() + 90_000);
    await pool.pause({ until, seconds: 90, reason: 'longhaul-http answered 429.' });
    for (let n = 0; n < 2; n++) {
      await deps.waiting.add(
        waitingEntryOf(
          sampleJob(new Date(clock.getTime() - 1000 - n), { id: `job_${String(n).padStart(26, '0')}` }),
        ),
      );
    }
    await deps.waiting.add(waitingEntryOf(queued));
    await expect(waitingOf(deps, queued)).resolves.toEqual({
      reason: 'provider_paused',
      until: until.toISOString(),
      position: 3,
      estimatedStartAt: new Date(until.getTime() + 2000).toISOString(),
    });
  });

  it('says nothing of a job about to be granted, nor of one that is not queued', async () => {
    const { deps, pool } = setup();
    await expect(waitingOf(deps, queued)).resolves.toBeUndefined();
    await pool.pause({ until: new Date(clock.getTime() + 90_000), seconds: 90, reason: '429' });
    await expect(waitingOf(deps, { ...queued, status: 'running' })).resolves.toBeUndefined();
    await expect(waitingOf(deps, { ...queued, status: 'scheduled' })).resolves.toBeUndefined();
  });
});
