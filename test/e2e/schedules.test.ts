import { deriveJobId, deriveScheduleId } from '../../lambdas/domain/idempotency';
import { pollUntil, type RunningLocalStack, startLocalStack } from '../../local/harness/local-stack';

/**
 * Recurring schedules over real HTTP against the local stack, fired by its
 * EventBridge Scheduler emulator: a firing creates one job carrying the
 * schedule's id under `schedule:<id>:<time>`, a disabled schedule fires
 * nothing, a deleted one is gone, and bad requests store nothing. The
 * emulator's clock is moved forward a minute at a time instead of waiting.
 */

jest.setTimeout(180_000);

const KEY = 'schedules-key-7c1d';
const TENANT = 'scheduler';

let stack: RunningLocalStack;
beforeAll(async () => {
  stack = await startLocalStack({
    env: {
      LONGHAUL_API_KEYS: `${KEY}:${TENANT},other-key-7c1d:other`,
      SIM_JOB_MS: '200',
      SIM_PROGRESS_HZ: '1',
      RECONCILE_INTERVAL_MS: '60000',
    },
    // The first start after a change to the stack synthesizes its template.
    readyTimeoutMs: 120_000,
  });
});
afterAll(async () => {
  await stack?.stop();
});

async function call(
  method: string,
  path: string,
  options: { json?: unknown; idempotencyKey?: string; apiKey?: string } = {},
) {
  const response = await fetch(`${stack.baseUrl}${path}`, {
    method,
    headers: {
      'x-api-key': options.apiKey ?? KEY,
      ...(options.json !== undefined ? { 'content-type': 'application/json' } : {}),
      ...(options.idempotencyKey ? { 'idempotency-key': options.idempotencyKey } : {}),
    },
    body: options.json === undefined ? undefined : JSON.stringify(options.json),
  });
  const text = await response.text();
  return { status: response.status, headers: response.headers, body: text ? JSON.parse(text) : undefined };
}

/** Moves the emulated Scheduler's clock forward; it fires what fell due before answering. */
async function advanceClock(ms: number): Promise<void> {
  const response = await fetch(`${stack.endpoints.schedulerEndpoint}/_scheduler/clock`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ advanceMs: ms }),
  });
  expect(response.status).toBe(200);
}

const scheduledJobs = async (scheduleId: string) =>
  (
    (await call('GET', '/v1/jobs?limit=100')).body.items as {
      scheduleId?: string;
      idempotencyKey: string;
      id: string;
    }[]
  ).filter((job) => job.scheduleId === scheduleId);

const schedule = {
  expression: 'rate(1 minute)',
  job: { type: 'image.generate', input: { prompt: 'a lighthouse every minute' } },
};

test('a firing creates one job with the schedule id under schedule:<id>:<time>; disabled fires nothing; deleted is gone', async () => {
  const created = await call('POST', '/v1/schedules', { json: schedule, idempotencyKey: 'every-minute' });
  expect(created.status).toBe(201);
  const id = created.body.id as string;
  expect(created.body).toEqual({
    id,
    expression: 'rate(1 minute)',
    timezone: 'UTC',
    job: schedule.job,
    enabled: true,
    nextRunAt: expect.stringMatching(/:00\.000Z$/),
    createdAt: expect.any(String),
  });
  expect(created.headers.get('location')).toMatch(new RegExp(`/v1/schedules/${id}$`));
  const replay = await call('POST', '/v1/schedules', { json: schedule, idempotencyKey: 'every-minute' });
  expect([replay.status, replay.body.id, replay.headers.get('idempotent-replayed')]).toEqual([
    201,
    id,
    'true',
  ]);

  // The first firing is at nextRunAt: a minute on the emulated clock reaches it.
  const firstRun = created.body.nextRunAt as string;
  await advanceClock(60_000);
  const [job] = await pollUntil(
    async () => {
      const jobs = await scheduledJobs(id);
      return jobs.length > 0 && jobs;
    },
    { description: 'the first firing’s job' },
  );
  const key = `schedule:${id}:${firstRun.replace('.000Z', 'Z')}`;
  expect(job).toEqual(
    expect.objectContaining({ scheduleId: id, idempotencyKey: key, id: deriveJobId(TENANT, key) }),
  );
  expect((await scheduledJobs(id)).length).toBe(1);

  const disabled = await call('PATCH', `/v1/schedules/${id}`, { json: { enabled: false } });
  expect([disabled.status, disabled.body.enabled, disabled.body.nextRunAt]).toEqual([200, false, null]);
  await advanceClock(180_000);
  expect((await scheduledJobs(id)).length).toBe(1);

  // Enabled again, it fires on its own minute grid: one more job, under the next firing's key.
  const enabled = await call('PATCH', `/v1/schedules/${id}`, { json: { enabled: true } });
  expect([enabled.status, enabled.body.enabled]).toEqual([200, true]);
  await advanceClock(60_000);
  const jobs = await pollUntil(
    async () => {
      const found = await scheduledJobs(id);
      return found.length === 2 && found;
    },
    { description: 'the firing after re-enabling' },
  );
  const keys = jobs.map((each) => each.idempotencyKey).sort();
  expect(keys[0]).toBe(key);
  expect(keys[1]).toMatch(new RegExp(`^schedule:${id}:\\d{4}-\\d\\d-\\d\\dT\\d\\d:\\d\\d:00Z$`));
  expect((keys[1] ?? '') > key).toBe(true);

  expect((await call('GET', `/v1/schedules/${id}`, { apiKey: 'other-key-7c1d' })).status).toBe(404);
  expect((await call('GET', '/v1/schedules')).body.items.map((s: { id: string }) => s.id)).toEqual([id]);
  expect((await call('DELETE', `/v1/schedules/${id}`)).status).toBe(204);
  expect((await call('GET', `/v1/schedules/${id}`)).status).toBe(404);
  expect((await call('DELETE', `/v1/schedules/${id}`)).status).toBe(404);
});

test('a bad expression, a too frequent one or an unknown time zone is a 400 naming it, and nothing is stored', async () => {
  const refused = await call('POST', '/v1/schedules', {
    json: { ...schedule, expression: 'rate(30 seconds)', timezone: 'Nowhere/Special' },
    idempotencyKey: 'bad-one',
  });
  expect(refused.status).toBe(400);
  expect(refused.body.code).toBe('validation-failed');
  expect(refused.body.errors.map((error: { pointer: string }) => error.pointer)).toEqual([
    '/expression',
    '/timezone',
  ]);
  const badCron = await call('POST', '/v1/schedules', {
    json: { ...schedule, expression: 'cron(0 12 * * * *)' },
    idempotencyKey: 'bad-two',
  });
  expect([badCron.status, badCron.body.errors]).toEqual([
    400,
    [{ pointer: '/expression', detail: 'cron must have ? in exactly one of day-of-month and day-of-week' }],
  ]);
  for (const key of ['bad-one', 'bad-two']) {
    expect((await call('GET', `/v1/schedules/${deriveScheduleId(TENANT, key)}`)).status).toBe(404);
  }
});
