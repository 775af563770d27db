import { ProviderUnavailableError } from '../../lambdas/domain/errors';
import { waitingEntryOf } from '../../lambdas/domain/fair-share';
import { type Job, newJob, slotHolderOf } from '../../lambdas/domain/job';
import { providerStatuses } from '../../lambdas/domain/operator';
import {
  PAUSE_BY_HAND_MAX_SECONDS,
  parseProviderName,
  parseProviderPause,
  pauseProviderByHand,
  resumeProviderByHand,
} from '../../lambdas/domain/provider-admin';
import { PAUSE_DEFAULTS, pauseProvider } from '../../lambdas/domain/provider-pauses';
import {
  granting,
  limits,
  MemoryEvents,
  MemoryQueue,
  MemoryStore,
  MemoryTimeline,
  MemoryWaitingLines,
  memorySlots,
  memoryTenantShares,
} from './support/memory-ports';
import { errorsOf } from './support/validation';

const clock = new Date('2026-05-01T10:00:00.000Z');
const PROVIDER = 'longhaul-http';

function setup() {
  const deps = granting({
    store: new MemoryStore(),
    slots: memorySlots(),
    queue: new MemoryQueue(),
    waiting: new MemoryWaitingLines(),
    tenantShares: memoryTenantShares(),
    timeline: new MemoryTimeline(),
    events: new MemoryEvents(),
    maxInFlight: limits(2),
    now: () => clock,
  });
  const pool = deps.slots.pool(PROVIDER);
  pool.clock = () => clock;
  return { deps, pool };
}

function queuedJob(deps: ReturnType<typeof setup>['deps'], n: number): Job {
  const job = newJob(
    {
      id: `job_${String.fromCharCode(97 + n).repeat(26)}`,
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
}

describe('parseProviderName', () => {
  it('answers a provider of the catalog', () => {
    expect(parseProviderName('deepgram')).toBe('deepgram');
  });

  it.each([['nope'], [''], [undefined], ['constructor'], ['x'.repeat(80)]])(
    'refuses %j as a provider that is not found',
    (name) => {
      expect(() => parseProviderName(name)).toThrow(
        expect.objectContaining({ name: 'ProviderNotFoundError' }),
      );
    },
  );
});

describe('parseProviderPause', () => {
  it('accepts seconds and a reason', () => {
    expect(parseProviderPause({ seconds: 600, reason: 'Deepgram maintenance window' })).toEqual({
      seconds: 600,
      reason: 'Deepgram maintenance window',
    });
  });

  const seconds = `must be an integer from 1 to ${PAUSE_BY_HAND_MAX_SECONDS}`;
  const reason = 'must be 1 to 500 characters, not only white space';
  it.each([
    ['no seconds', { reason: 'r' }, '/seconds', seconds],
    ['0 seconds', { seconds: 0, reason: 'r' }, '/seconds', seconds],
    ['fractional seconds', { seconds: 1.5, reason: 'r' }, '/seconds', seconds],
    ['seconds as text', { seconds: '60', reason: 'r' }, '/seconds', seconds],
    ['seconds past the most', { seconds: PAUSE_BY_HAND_MAX_SECONDS + 1, reason: 'r' }, '/seconds', seconds],
    ['no reason', { seconds: 60 }, '/reason', reason],
    ['an empty reason', { seconds: 60, reason: '' }, '/reason', reason],
    ['a reason of white space', { seconds: 60, reason: '   ' }, '/reason', reason],
    ['a reason too long', { seconds: 60, reason: 'x'.repeat(501) }, '/reason', reason],
    ['an unknown field', { seconds: 60, reason: 'r', until: 'tomorrow' }, '', 'unknown field(s): until'],
    ['a body that is an array', [], '', 'Invalid input: expected object, received array'],
    ['no body', undefined, '', 'Invalid input: expected object, received undefined'],
  ])('refuses %s, naming the field', (_, body, pointer, detail) => {
    expect(errorsOf(() => parseProviderPause(body))).toEqual([{ pointer, detail }]);
  });
});

describe('pauseProviderByHand', () => {
  it("pauses the provider's grants until the time asked, says so in its status and puts provider.paused", async () => {
    const { deps, pool } = setup();
    const status = await pauseProviderByHand(deps, PROVIDER, { seconds: 600, reason: 'maintenance' });

    const until = clock.getTime() + 600_000;
    expect(pool.paused).toEqual({ until, seconds: PAUSE_DEFAULTS.baseSeconds, reason: 'maintenance' });
    expect(status).toEqual({
      name: PROVIDER,
      state: 'paused',
      pausedUntil: new Date(until).toISOString(),
      reason: 'maintenance',
      maxInFlight: 2,
      inFlight: 0,
      queued: 0,
    });
    expect(deps.events.published).toEqual([
      {
        detailType: 'provider.paused',
        detail: {
          schemaVersion: 1,
          eventId: expect.any(String),
          occurredAt: clock.toISOString(),
          provider: PROVIDER,
          pausedUntil: new Date(until).toISOString(),
          reason: 'maintenance',
          by: 'operator',
        },
      },
    ]);
    expect(await pool.acquire('someone', 2)).toBe(false);
  });

  it("leaves the provider's backoff as its own refusals left it: a 429 just after a maintenance pauses as after a first pause", async () => {
    const { deps, pool } = setup();
    await pauseProviderByHand(deps, PROVIDER, { seconds: 600, reason: 'maintenance' });
    const after = new Date(clock.getTime() + 601_000);
    const pause = await pauseProvider(
      {
        provider: PROVIDER,
        pool,
        now: after,
        settings: PAUSE_DEFAULTS,
        random: () => 0.5,
        events: deps.events,
      },
      new ProviderUnavailableError('longhaul-http answered 503.'),
    );
    // Refused, naming no wait, within a first pause of the end, as after a first pause of its own: twice that, jittered
    // (10 s × 0.875), not the maintenance's 600 s doubled to the longest pause.
    expect(pause.until).toEqual(new Date(after.getTime() + 9000));
  });

  it('keeps a longer pause in force, changes nothing and puts no event', async () => {
    const { deps, pool } = setup();
    await pool.pause({ until: new Date(clock.getTime() + 900_000), seconds: 900, reason: 'down' });
    const status = await pauseProviderByHand(deps, PROVIDER, { seconds: 60, reason: 'maintenance' });
    expect(status).toMatchObject({ state: 'paused', reason: 'down' });
    expect(pool.paused).toEqual({ until: clock.getTime() + 900_000, seconds: 900, reason: 'down' });
    expect(deps.events.published).toEqual([]);
  });
});

describe('resumeProviderByHand', () => {
  it('ends the pause, hands the free slots to the jobs waiting in line and puts provider.resumed', async () => {
    const { deps, pool } = setup();
    await pauseProviderByHand(deps, PROVIDER, { seconds: 600, reason: 'maintenance' });
    const waiting = [queuedJob(deps, 0), queuedJob(deps, 1), queuedJob(deps, 2)];
    for (const job of waiting) await deps.waiting.add(waitingEntryOf(job));
    deps.events.published.length = 0;

    const status = await resumeProviderByHand(deps, PROVIDER);

    expect(status).toEqual({ name: PROVIDER, state: 'open', maxInFlight: 2, inFlight: 2, queued: 1 });
    // The limit's worth of them took a slot at once, in their line's order; the third waits on.
    expect([...pool.held].sort()).toEqual([slotHolderOf(waiting[0]!), slotHolderOf(waiting[1]!)].sort());
    expect(deps.timeline.events.get(waiting[0]!.id)?.map((event) => event.type)).toEqual(['slot.received']);
    expect(deps.waiting.entries()).toEqual([waitingEntryOf(waiting[2]!)]);
    expect(deps.events.published).toEqual([
      {
        detailType: 'provider.resumed',
        detail: {
          schemaVersion: 1,
          eventId: expect.any(String),
          occurredAt: clock.toISOString(),
          provider: PROVIDER,
          by: 'operator',
        },
      },
    ]);
  });

  it('changes nothing and puts no event for a provider that is not paused', async () => {
    const { deps, pool } = setup();
    const status = await resumeProviderByHand(deps, PROVIDER);
    expect(status).toMatchObject({ state: 'open' });
    expect(pool.paused).toBeUndefined();
    expect(deps.events.published).toEqual([]);
  });
});

describe('providerStatuses', () => {
  it('shows a pause that has run out as open', async () => {
    const { deps, pool } = setup();
    await pool.pause({ until: new Date(clock.getTime() - 1), seconds: 5, reason: 'HTTP 503' });
    const statuses = await providerStatuses(deps);
    expect(statuses.find((status) => status.name === PROVIDER)).toEqual({
      name: PROVIDER,
      state: 'open',
      maxInFlight: 2,
      inFlight: 0,
      queued: 0,
    });
  });
});

describe('pauseProvider', () => {
  it('puts provider.paused when it pauses an open provider, and none while the pause is on', async () => {
    const { deps, pool } = setup();
    const pauseAt = (now: Date) =>
      ({
        provider: PROVIDER,
        pool,
        now,
        settings: PAUSE_DEFAULTS,
        random: () => 0.5,
        events: deps.events,
      }) as const;
    const error = new ProviderUnavailableError('longhaul-http answered 503.', 7);
    const first = await pauseProvider(pauseAt(clock), error);
    await pauseProvider(pauseAt(new Date(clock.getTime() + 1000)), error);

    expect(first.started).toBe(true);
    expect(deps.events.published).toEqual([
      {
        detailType: 'provider.paused',
        detail: {
          schemaVersion: 1,
          eventId: expect.any(String),
          occurredAt: clock.toISOString(),
          provider: PROVIDER,
          pausedUntil: new Date(clock.getTime() + 7000).toISOString(),
          reason: 'longhaul-http answered 503.',
          by: 'provider',
        },
      },
    ]);
  });
});
