import {
  ConflictException,
  CreateScheduleCommand,
  DeleteScheduleCommand,
  ResourceNotFoundException,
  SchedulerClient,
  UpdateScheduleCommand,
} from '@aws-sdk/client-scheduler';
import { mockClient } from 'aws-sdk-client-mock';
import { DynamoDbJobStore } from '../../lambdas/adapters/dynamodb-job-store';
import { DynamoDbScheduleStore } from '../../lambdas/adapters/dynamodb-schedule-store';
import { SchedulerScheduleTriggers } from '../../lambdas/adapters/scheduler-schedule-triggers';
import { ValidationError } from '../../lambdas/domain/errors';
import { deriveScheduleId } from '../../lambdas/domain/idempotency';
import type { Schedule } from '../../lambdas/domain/schedules';
import { type DynaliteTables, startDynaliteTables } from '../../local/harness/dynalite-tables';

/** The schedules' adapters: Scheduler's requests asserted exactly, the store against dynalite. */

jest.setTimeout(60_000);

const scheduleOf = (tenantId: string, key: string, overrides: Partial<Schedule> = {}): Schedule => ({
  id: deriveScheduleId(tenantId, key),
  tenantId,
  expression: 'rate(5 minutes)',
  timezone: 'Europe/Berlin',
  job: { type: 'image.generate', input: { prompt: 'a lighthouse' } },
  enabled: true,
  idempotencyKey: key,
  fingerprint: 'f',
  startAt: '2026-03-01T12:01:00.000Z',
  createdAt: '2026-03-01T12:00:30.000Z',
  updatedAt: '2026-03-01T12:00:30.000Z',
  ...overrides,
});

describe('SchedulerScheduleTriggers', () => {
  const scheduler = mockClient(SchedulerClient);
  const triggers = new SchedulerScheduleTriggers(new SchedulerClient({ region: 'us-east-1' }), {
    groupName: 'longhaul-schedules',
    targetArn: 'arn:aws:lambda:us-east-1:111111111111:function:fire',
    roleArn: 'arn:aws:iam::111111111111:role/scheduler',
    deadLetterQueueArn: 'arn:aws:sqs:us-east-1:111111111111:schedule-dlq',
    retryAttempts: 3,
    maxEventAgeSeconds: 3600,
  });
  const schedule = scheduleOf('acme', 'k1');
  const expected = (state: 'ENABLED' | 'DISABLED', start?: Date) => ({
    Name: schedule.id,
    GroupName: 'longhaul-schedules',
    ScheduleExpression: 'rate(5 minutes)',
    ScheduleExpressionTimezone: 'Europe/Berlin',
    ...(start ? { StartDate: start } : {}),
    State: state,
    FlexibleTimeWindow: { Mode: 'OFF' },
    Target: {
      Arn: 'arn:aws:lambda:us-east-1:111111111111:function:fire',
      RoleArn: 'arn:aws:iam::111111111111:role/scheduler',
      Input: `{"tenantId":"acme","scheduleId":"${schedule.id}","scheduledTime":"<aws.scheduler.scheduled-time>"}`,
      RetryPolicy: { MaximumRetryAttempts: 3, MaximumEventAgeInSeconds: 3600 },
      DeadLetterConfig: { Arn: 'arn:aws:sqs:us-east-1:111111111111:schedule-dlq' },
    },
  });

  beforeEach(() => scheduler.reset());

  it('creates one Scheduler schedule per schedule, named by its id, in its time zone, invoking the fire function', async () => {
    scheduler.on(CreateScheduleCommand).resolves({ ScheduleArn: 'arn' });
    const start = new Date('2026-03-01T12:01:00.000Z');
    await triggers.put(schedule, start);
    expect(scheduler.commandCalls(CreateScheduleCommand).map((call) => call.args[0].input)).toEqual([
      expected('ENABLED', start),
    ]);
    expect(scheduler.commandCalls(UpdateScheduleCommand)).toHaveLength(0);
  });

  it('updates the schedule that exists already', async () => {
    scheduler
      .on(CreateScheduleCommand)
      .rejects(new ConflictException({ message: 'exists', Message: 'exists', $metadata: {} }))
      .on(UpdateScheduleCommand)
      .resolves({ ScheduleArn: 'arn' });
    await triggers.put({ ...schedule, enabled: false }, undefined);
    expect(scheduler.commandCalls(UpdateScheduleCommand).map((call) => call.args[0].input)).toEqual([
      expected('DISABLED'),
    ]);
  });

  it('deletes, and takes a schedule already gone as deleted; other errors are thrown', async () => {
    scheduler
      .on(DeleteScheduleCommand)
      .rejectsOnce(new ResourceNotFoundException({ message: 'gone', Message: 'gone', $metadata: {} }))
      .rejectsOnce(new Error('throttled'));
    await triggers.remove(schedule.id);
    await expect(triggers.remove(schedule.id)).rejects.toThrow('throttled');
    expect(scheduler.commandCalls(DeleteScheduleCommand).map((call) => call.args[0].input)).toEqual([
      { Name: schedule.id, GroupName: 'longhaul-schedules' },
      { Name: schedule.id, GroupName: 'longhaul-schedules' },
    ]);
  });
});

describe('DynamoDbScheduleStore', () => {
  let db: DynaliteTables;
  let store: DynamoDbScheduleStore;
  beforeAll(async () => {
    db = await startDynaliteTables();
    store = new DynamoDbScheduleStore(db.documents, db.jobTableName);
  });
  afterAll(() => db.stop());

  it('creates once, keeps tenants apart and stays out of the job listings', async () => {
    const schedule = scheduleOf('acme', 'a');
    expect(await store.create(schedule)).toEqual({ created: true });
    expect(await store.create({ ...schedule, expression: 'rate(1 hour)' })).toEqual({
      created: false,
      existing: schedule,
    });
    expect(await store.get('acme', schedule.id)).toEqual(schedule);
    expect(await store.get('other', schedule.id)).toBeUndefined();
    const jobs = new DynamoDbJobStore(db.documents, { tableName: db.jobTableName, retentionDays: 30 });
    expect((await jobs.listByTenant('acme', { limit: 10 })).items).toEqual([]);
  });

  it('sets enabled, moves the revision on, records the sync only for the revision it was put as, and deletes', async () => {
    const schedule = scheduleOf('acme', 'b', { revision: 1, syncedRevision: 1 });
    await store.create(schedule);
    const at = new Date('2026-03-01T13:00:00.000Z');
    const disabled = await store.setEnabled('acme', schedule.id, false, at);
    expect(disabled).toEqual({ ...schedule, enabled: false, updatedAt: at.toISOString(), revision: 2 });
    // A sync of the revision before the change records nothing, even within the same millisecond.
    expect(await store.markSynced(schedule)).toBe(false);
    expect((await store.get('acme', schedule.id))?.syncedRevision).toBe(1);
    expect(await store.markSynced(disabled as Schedule)).toBe(true);
    expect((await store.get('acme', schedule.id))?.syncedRevision).toBe(2);
    expect(await store.setEnabled('other', schedule.id, true, at)).toBeUndefined();
    await store.delete('acme', schedule.id);
    expect(await store.get('acme', schedule.id)).toBeUndefined();
  });

  it('counts a schedule stored before revisions from 0, and records no sync of one that is gone', async () => {
    const legacy = scheduleOf('acme', 'c');
    await store.create(legacy);
    expect(await store.markSynced(legacy)).toBe(true);
    expect((await store.get('acme', legacy.id))?.syncedRevision).toBe(0);
    const enabled = await store.setEnabled('acme', legacy.id, false, new Date('2026-03-01T13:00:00.000Z'));
    expect(enabled?.revision).toBe(1);
    expect(await store.markSynced(legacy)).toBe(false);
    await store.delete('acme', legacy.id);
    expect(await store.markSynced(enabled as Schedule)).toBe(false);
    expect(await store.get('acme', legacy.id)).toBeUndefined();
  });

  it('lists a tenant’s schedules page by page, and refuses a cursor it did not issue', async () => {
    for (const key of ['p1', 'p2', 'p3']) await store.create(scheduleOf('pages', key));
    await store.create(scheduleOf('someone-else', 'p1'));
    const first = await store.list('pages', { limit: 2 });
    expect(first.items).toHaveLength(2);
    const second = await store.list('pages', { limit: 2, cursor: first.nextCursor as string });
    const ids = [...first.items, ...second.items].map((schedule) => schedule.id);
    expect(ids).toEqual(['p1', 'p2', 'p3'].map((key) => deriveScheduleId('pages', key)).sort());
    expect(second.nextCursor).toBeNull();
    await expect(store.list('pages', { limit: 2, cursor: 'nope' })).rejects.toThrow(ValidationError);
  });
});
