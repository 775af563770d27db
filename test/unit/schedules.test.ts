import {
  IdempotencyKeyReusedError,
  ScheduleNotFoundError,
  ValidationError,
} from '../../lambdas/domain/errors';
import { deriveJobId, deriveScheduleId } from '../../lambdas/domain/idempotency';
import type { IntakeDeps } from '../../lambdas/domain/intake';
import {
  type CreateScheduleRequest,
  createSchedule,
  deleteSchedule,
  fireSchedule,
  getSchedule,
  parseCreateSchedule,
  parseFiring,
  presentSchedule,
  type ScheduleDeps,
  setScheduleEnabled,
} from '../../lambdas/domain/schedules';
import type { TenantRecord } from '../../lambdas/domain/tenants';
import { MemorySchedules, type MemoryStore, MemoryTriggers, memoryIntake } from './support/memory-ports';

let clock: Date;
let deps: ScheduleDeps & { schedules: MemorySchedules; triggers: MemoryTriggers };
let intake: IntakeDeps & { store: MemoryStore };
let caps: Map<string, TenantRecord>;

beforeEach(() => {
  clock = new Date('2026-03-01T12:00:30.000Z');
  deps = { schedules: new MemorySchedules(), triggers: new MemoryTriggers(), now: () => clock };
  const memory = memoryIntake(() => clock, {
    'image.generate': 'longhaul-http',
    'audio.transcribe': 'longhaul-http',
  });
  intake = memory.deps;
  caps = memory.caps;
});

const policy = { allowPrivateWebhooks: false, scheduleMaxAheadDays: 365, now: () => clock };
const body = {
  expression: 'rate(5 minutes)',
  job: { type: 'image.generate', input: { prompt: 'a lighthouse' } },
};
const request = (overrides: Record<string, unknown> = {}): CreateScheduleRequest =>
  parseCreateSchedule({ ...body, ...overrides }, policy, clock);
const create = (overrides: Record<string, unknown> = {}, key = 'k1', tenantId = 'acme') =>
  createSchedule(deps, { tenantId, idempotencyKey: key, request: request(overrides) });

/** Triggers whose first put waits until `release`: `putHeld` resolves once it waits. */
function holdingFirstPut() {
  let release = () => {};
  const held = new Promise<void>((resolve) => {
    release = resolve;
  });
  let started = () => {};
  const putHeld = new Promise<void>((resolve) => {
    started = resolve;
  });
  let holding = true;
  const triggers = {
    put: async (...args: Parameters<MemoryTriggers['put']>) => {
      if (holding) {
        holding = false;
        started();
        await held;
      }
      return deps.triggers.put(...args);
    },
    remove: (id: string) => deps.triggers.remove(id),
  };
  return { triggers, putHeld, release: () => release() };
}

describe('parseCreateSchedule', () => {
  it('defaults the time zone to UTC and the schedule to enabled, and validates the job as POST /v1/jobs does', () => {
    expect(request()).toEqual({
      expression: 'rate(5 minutes)',
      timezone: 'UTC',
      job: { type: 'image.generate', input: { prompt: 'a lighthouse' } },
      enabled: true,
    });
  });

  it('reports every problem at once, with pointers into the body', () => {
    let thrown: unknown;
    try {
      parseCreateSchedule(
        {
          expression: 'rate(30 seconds)',
          timezone: 'Mars/Base',
          job: { type: 'image.generate', input: { prompt: '' }, webhookUrl: 'http://10.0.0.1/x' },
        },
        policy,
        clock,
      );
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toBeInstanceOf(ValidationError);
    expect((thrown as ValidationError).errors).toEqual([
      { pointer: '/expression', detail: 'schedules run at most once a minute: use minutes, hours or days' },
      { pointer: '/timezone', detail: 'must be an IANA time zone name, e.g. Europe/Berlin' },
      { pointer: '/job/input/prompt', detail: expect.any(String) },
    ]);
  });

  it('refuses an expression that never fires again, an unknown job type and unknown fields', () => {
    expect(() => request({ expression: 'cron(0 0 1 1 ? 2020)' })).toThrow(
      expect.objectContaining({ errors: [{ pointer: '/expression', detail: 'never fires after now' }] }),
    );
    expect(() => request({ job: { type: 'video.render', input: {} } })).toThrow(
      expect.objectContaining({ errors: [expect.objectContaining({ pointer: '/job/type' })] }),
    );
    expect(() => request({ every: 'day' })).toThrow(ValidationError);
  });

  it('refuses a startBy in the job template, and a startWithinSeconds that is not a whole number of seconds from 1', () => {
    expect(() =>
      request({ job: { type: 'image.generate', input: { prompt: 'x' }, startBy: '2026-03-02T00:00:00Z' } }),
    ).toThrow(
      expect.objectContaining({
        errors: [
          {
            pointer: '/job/startBy',
            detail: "is not part of a schedule's job: give startWithinSeconds, counted from each firing",
          },
        ],
      }),
    );
    for (const startWithinSeconds of [0, 1.5, -60, '600']) {
      expect(() => request({ startWithinSeconds })).toThrow(
        expect.objectContaining({ errors: [expect.objectContaining({ pointer: '/startWithinSeconds' })] }),
      );
    }
  });

  it("refuses a runAt in the job template: each firing's job runs at the firing", () => {
    expect(() =>
      request({ job: { type: 'image.generate', input: { prompt: 'x' }, runAt: '2026-03-02T00:00:00Z' } }),
    ).toThrow(expect.objectContaining({ errors: [expect.objectContaining({ pointer: '/job/runAt' })] }));
  });
});

describe('createSchedule', () => {
  it('stores the schedule under the id derived from tenant and key and puts its trigger, starting on the next minute', async () => {
    const { schedule, replayed } = await create();
    expect(replayed).toBe(false);
    expect(schedule.id).toBe(deriveScheduleId('acme', 'k1'));
    expect(deps.triggers.triggers.get(schedule.id)).toEqual({
      enabled: true,
      firstRunAt: '2026-03-01T12:01:00.000Z',
    });
    expect(deps.schedules.items.size).toBe(1);
    expect(presentSchedule(schedule, clock)).toEqual({
      id: schedule.id,
      expression: 'rate(5 minutes)',
      timezone: 'UTC',
      job: { type: 'image.generate', input: { prompt: 'a lighthouse' } },
      enabled: true,
      nextRunAt: '2026-03-01T12:01:00.000Z',
      createdAt: '2026-03-01T12:00:30.000Z',
    });
  });

  it('replays the same key and body, and refuses the key with another body', async () => {
    const first = await create();
    clock = new Date('2026-03-01T12:07:00.000Z');
    const again = await create({ job: { input: { prompt: 'a lighthouse' }, type: 'image.generate' } });
    expect(again).toEqual({ schedule: first.schedule, replayed: true });
    await expect(create({ expression: 'rate(10 minutes)' })).rejects.toThrow(IdempotencyKeyReusedError);
    expect(deps.schedules.items.size).toBe(1);
  });

  it("puts the trigger on a replay when the first request stored the schedule but could not reach Scheduler, keeping the schedule's phase", async () => {
    deps.triggers.failNext = 1;
    await expect(create()).rejects.toThrow('Scheduler unavailable');
    const id = deriveScheduleId('acme', 'k1');
    expect(deps.triggers.triggers.has(id)).toBe(false);
    clock = new Date('2026-03-01T12:08:10.000Z');
    const { schedule, replayed } = await create();
    expect(replayed).toBe(true);
    expect(schedule).toMatchObject({ revision: 1, syncedRevision: 1 });
    expect(deps.triggers.triggers.get(id)).toEqual({ enabled: true, firstRunAt: '2026-03-01T12:11:00.000Z' });
  });

  it('gives a cron schedule no start date and a next run in its time zone', async () => {
    const { schedule } = await create({ expression: 'cron(0 9 ? * MON-FRI *)', timezone: 'Europe/Berlin' });
    expect(deps.triggers.triggers.get(schedule.id)).toEqual({ enabled: true });
    // 2026-03-01 is a Sunday; Monday 09:00 in Berlin is 08:00 UTC.
    expect(presentSchedule(schedule, clock).nextRunAt).toBe('2026-03-02T08:00:00.000Z');
  });
});

describe('reading, disabling and deleting', () => {
  it("never shows or changes another tenant's schedule", async () => {
    const { schedule } = await create();
    await expect(getSchedule(deps.schedules, 'other', schedule.id)).rejects.toThrow(ScheduleNotFoundError);
    await expect(setScheduleEnabled(deps, 'other', schedule.id, false)).rejects.toThrow(
      ScheduleNotFoundError,
    );
    await expect(deleteSchedule(deps, 'other', schedule.id)).rejects.toThrow(ScheduleNotFoundError);
    expect(deps.triggers.triggers.get(schedule.id)?.enabled).toBe(true);
  });

  it('disables the item and the trigger, shows no next run, and is idempotent', async () => {
    const { schedule } = await create();
    const disabled = await setScheduleEnabled(deps, 'acme', schedule.id, false);
    expect(disabled.enabled).toBe(false);
    expect(deps.triggers.triggers.get(schedule.id)?.enabled).toBe(false);
    expect(presentSchedule(disabled, clock).nextRunAt).toBeNull();
    deps.triggers.failNext = 1;
    // Nothing to change: Scheduler is not called again.
    await expect(setScheduleEnabled(deps, 'acme', schedule.id, false)).resolves.toMatchObject({
      enabled: false,
    });
  });

  it('leaves the trigger as the newest of two racing changes says, whichever put of the trigger lands last', async () => {
    const { schedule } = await create();
    // The disable's put of the trigger is held until the enable that follows it has finished.
    const { triggers, putHeld, release } = holdingFirstPut();
    const racing = { ...deps, triggers };
    const disabling = setScheduleEnabled(racing, 'acme', schedule.id, false);
    await putHeld;
    clock = new Date('2026-03-01T12:00:31.000Z');
    const enabled = await setScheduleEnabled(racing, 'acme', schedule.id, true);
    expect(enabled.enabled).toBe(true);
    release();
    // The disable lost: it answers what the schedule is now.
    expect((await disabling).enabled).toBe(true);
    expect(deps.schedules.items.get(`acme\n${schedule.id}`)?.enabled).toBe(true);
    expect(deps.triggers.triggers.get(schedule.id)?.enabled).toBe(true);
    // Synced, and truly so: enabling it again calls Scheduler for nothing.
    deps.triggers.failNext = 1;
    await expect(setScheduleEnabled(deps, 'acme', schedule.id, true)).resolves.toMatchObject({
      enabled: true,
    });
  });

  it('removes the trigger a change put after a delete removed it', async () => {
    const { schedule } = await create();
    const { triggers, putHeld, release } = holdingFirstPut();
    const disabling = setScheduleEnabled({ ...deps, triggers }, 'acme', schedule.id, false);
    await putHeld;
    await deleteSchedule(deps, 'acme', schedule.id);
    release();
    await expect(disabling).rejects.toThrow(ScheduleNotFoundError);
    expect(deps.triggers.triggers.size).toBe(0);
  });

  it('removes the trigger before the item, so a failed delete can be repeated', async () => {
    const { schedule } = await create();
    deps.triggers.failNext = 1;
    await expect(deleteSchedule(deps, 'acme', schedule.id)).rejects.toThrow('Scheduler unavailable');
    expect(deps.schedules.items.size).toBe(1);
    await deleteSchedule(deps, 'acme', schedule.id);
    expect(deps.schedules.items.size).toBe(0);
    expect(deps.triggers.triggers.size).toBe(0);
    await expect(deleteSchedule(deps, 'acme', schedule.id)).rejects.toThrow(ScheduleNotFoundError);
  });
});

describe('fireSchedule', () => {
  const fire = (scheduleId: string, scheduledTime = '2026-03-01T12:05:00Z', tenantId = 'acme') =>
    fireSchedule({ schedules: deps.schedules, intake }, { tenantId, scheduleId, scheduledTime });

  it("submits the schedule's job under the firing's key, with the schedule's id on it", async () => {
    const { schedule } = await create();
    const outcome = await fire(schedule.id);
    expect(outcome.kind).toBe('submitted');
    const key = `schedule:${schedule.id}:2026-03-01T12:05:00Z`;
    const job = intake.store.jobs.get(deriveJobId('acme', key));
    expect(job).toMatchObject({
      idempotencyKey: key,
      scheduleId: schedule.id,
      type: 'image.generate',
      input: { prompt: 'a lighthouse' },
      status: 'queued',
    });
  });

  it("gives each firing's job a startBy startWithinSeconds after the firing, and shows it on the schedule", async () => {
    const { schedule } = await create({ startWithinSeconds: 600 });
    expect(presentSchedule(schedule, clock).startWithinSeconds).toBe(600);
    await fire(schedule.id, '2026-03-01T12:05:00Z');
    await fire(schedule.id, '2026-03-01T12:10:00Z');
    const startBys = [...intake.store.jobs.values()].map((job) => job.startBy).sort();
    expect(startBys).toEqual(['2026-03-01T12:15:00.000Z', '2026-03-01T12:20:00.000Z']);
    // Without it, a firing's job waits however long its provider is down.
    const { schedule: patient } = await create({}, 'k2');
    await fire(patient.id);
    expect(
      intake.store.jobs.get(deriveJobId('acme', `schedule:${patient.id}:2026-03-01T12:05:00Z`))?.startBy,
    ).toBe(undefined);
  });

  it('lands a repeated firing on the same job, and another firing time on a new one', async () => {
    const { schedule } = await create();
    clock = new Date('2026-03-01T12:05:40.000Z');
    const first = await fire(schedule.id);
    const repeat = await fire(schedule.id, '2026-03-01T12:05:00.000Z');
    expect(repeat).toEqual({
      kind: 'submitted',
      result: {
        job: expect.objectContaining({ id: first.kind === 'submitted' ? first.result.job.id : '' }),
        replayed: true,
      },
    });
    await fire(schedule.id, '2026-03-01T12:10:00Z');
    expect(intake.store.jobs.size).toBe(2);
  });

  it('creates nothing for a disabled, a deleted or another tenant’s schedule', async () => {
    const { schedule } = await create();
    await setScheduleEnabled(deps, 'acme', schedule.id, false);
    expect(await fire(schedule.id)).toEqual({ kind: 'skipped', reason: 'disabled' });
    expect(await fire(schedule.id, '2026-03-01T12:05:00Z', 'other')).toEqual({
      kind: 'skipped',
      reason: 'missing',
    });
    await deleteSchedule(deps, 'acme', schedule.id);
    expect(await fire(schedule.id)).toEqual({ kind: 'skipped', reason: 'missing' });
    expect(intake.store.jobs.size).toBe(0);
  });

  it("refuses a firing when the tenant's backlog is full, storing nothing", async () => {
    const { schedule } = await create();
    caps.set('acme', {
      tenant: 'acme',
      weight: 1,
      maxQueued: 0,
      updatedAt: clock.toISOString(),
    } as TenantRecord);
    expect(await fire(schedule.id)).toEqual({ kind: 'refused', reason: 'tenant-queue-full' });
    expect(intake.store.jobs.size).toBe(0);
  });

  it('refuses a malformed event', () => {
    expect(() => parseFiring({ tenantId: 'acme', scheduleId: 'sch_x', scheduledTime: 'soon' })).toThrow(
      ValidationError,
    );
    expect(
      parseFiring({
        tenantId: 'acme',
        scheduleId: deriveScheduleId('acme', 'k'),
        scheduledTime: '2026-03-01T12:05:00Z',
      }).scheduledTime,
    ).toBe('2026-03-01T12:05:00Z');
  });
});
