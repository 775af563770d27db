import { deriveJobId } from '../../lambdas/domain/idempotency';
import { jobIdOf } from '../../lambdas/domain/job';
import { pollUntil, type RunningLocalStack, startLocalStack } from '../../local/harness/local-stack';
import { simulatorCall } from './support/simulator';

/**
 * Scheduled jobs over real HTTP against the local stack: a job with a runAt a
 * few seconds ahead waits `scheduled`, listed as such, and starts once the
 * reconciler finds it due; a canceled one never reaches the provider; a past
 * runAt runs now; a bad one is refused and stores nothing.
 */

jest.setTimeout(60_000);

const KEY = 'scheduled-key-8c1d';
const TENANT = 'planner';

let stack: RunningLocalStack;
beforeAll(async () => {
  stack = await startLocalStack({
    env: {
      LONGHAUL_API_KEYS: `${KEY}:${TENANT}`,
      SIM_JOB_MS: '300',
      SIM_PROGRESS_HZ: '1',
      // The reconciler's period bounds a scheduled job's lateness: short, for a short test.
      RECONCILE_INTERVAL_MS: '1000',
      SLOT_WAIT_MAX_SECONDS: '1',
    },
  });
});
afterAll(async () => {
  await stack?.stop();
});

const run = `run-${Date.now()}`;
const keyOf = (name: string) => `${run}-${name}`;
const image = (prompt: string) => ({ type: 'image.generate', input: { prompt } });
const inSeconds = (seconds: number) => new Date(Date.now() + seconds * 1000).toISOString();

async function call(method: string, path: string, options: { json?: unknown; idempotencyKey?: string } = {}) {
  const response = await fetch(`${stack.baseUrl}${path}`, {
    method,
    headers: {
      'x-api-key': KEY,
      ...(options.json !== undefined ? { 'content-type': 'application/json' } : {}),
      ...(options.idempotencyKey ? { 'idempotency-key': options.idempotencyKey } : {}),
    },
    body: options.json === undefined ? undefined : JSON.stringify(options.json),
  });
  const text = await response.text();
  return { status: response.status, body: text ? JSON.parse(text) : undefined };
}

const submit = (name: string, body: unknown) =>
  call('POST', '/v1/jobs', { json: body, idempotencyKey: keyOf(name) });

const finished = (id: string) =>
  pollUntil(
    async () => {
      const { body } = await call('GET', `/v1/jobs/${id}`);
      return ['succeeded', 'failed', 'needs_review'].includes(body.status) ? body : undefined;
    },
    { timeoutMs: 30_000, intervalMs: 200, description: `job ${id} to finish` },
  );

/** Provider submissions of each job. */
async function charges(): Promise<Map<string, number>> {
  const ledger = await simulatorCall(stack.endpoints.providerUrl)('/_sim/ledger');
  const counts = new Map<string, number>();
  for (const submission of ledger.submissions as { idempotencyKey: string }[]) {
    const jobId = jobIdOf(submission.idempotencyKey);
    counts.set(jobId, (counts.get(jobId) ?? 0) + 1);
  }
  return counts;
}

describe('a job with a runAt ahead', () => {
  it('waits scheduled, listed by status, then runs and succeeds no earlier than its runAt', async () => {
    const runAt = inSeconds(3);
    const answer = await submit('soon', { ...image('a lighthouse at dawn'), runAt });

    expect(answer.status).toBe(202);
    expect(answer.body).toMatchObject({ status: 'scheduled', runAt });
    const listed = await call('GET', '/v1/jobs?status=scheduled');
    expect(listed.body.items.map((job: { id: string }) => job.id)).toContain(answer.body.id);
    // Replayed for the same body; another runAt under the key is another request.
    expect((await submit('soon', { ...image('a lighthouse at dawn'), runAt })).body).toMatchObject({
      id: answer.body.id,
      status: 'scheduled',
    });
    expect((await submit('soon', { ...image('a lighthouse at dawn'), runAt: inSeconds(60) })).status).toBe(
      422,
    );

    const job = await finished(answer.body.id);

    expect(job.status).toBe('succeeded');
    expect(Date.parse(job.startedAt)).toBeGreaterThanOrEqual(Date.parse(runAt));
    expect((await charges()).get(job.id)).toBe(1);
    const events = (await call('GET', `/v1/jobs/${job.id}/events`)).body.items.map(
      (event: { type: string }) => event.type,
    );
    // The promotion and the enqueue it makes may share a millisecond: their order is not asserted.
    expect(events.slice(0, 2)).toEqual(['job.accepted', 'job.scheduled']);
    expect(events.slice(2, 4).sort()).toEqual(['job.enqueued', 'reconciler.promoted']);
  });

  it('is canceled at once with no provider charge, while one due at the same time runs', async () => {
    const runAt = inSeconds(2);
    const canceled = await submit('canceled', { ...image('never drawn'), runAt });
    const control = await submit('control', { ...image('drawn beside it'), runAt });
    expect([canceled.body.status, control.body.status]).toEqual(['scheduled', 'scheduled']);

    const answer = await call('POST', `/v1/jobs/${canceled.body.id}/cancel`);
    expect(answer.status).toBe(202);
    expect(answer.body).toMatchObject({ status: 'canceled' });

    // The reconciler has found the pair due once the control job has run.
    expect((await finished(control.body.id)).status).toBe('succeeded');
    expect((await call('GET', `/v1/jobs/${canceled.body.id}`)).body.status).toBe('canceled');
    expect((await charges()).has(canceled.body.id)).toBe(false);
  });

  it('is taken as multipart form field runAt too', async () => {
    const form = new FormData();
    form.set('type', 'image.generate');
    form.set('input', JSON.stringify({ prompt: 'a form for later' }));
    form.set('runAt', inSeconds(3600));
    const response = await fetch(`${stack.baseUrl}/v1/jobs`, {
      method: 'POST',
      headers: { 'x-api-key': KEY, 'idempotency-key': keyOf('multipart') },
      body: form,
    });
    expect(response.status).toBe(202);
    expect(await response.json()).toMatchObject({ status: 'scheduled' });
  });
});

describe('a runAt that is past or bad', () => {
  it('runs a job with a past runAt now', async () => {
    const answer = await submit('past', { ...image('at once'), runAt: inSeconds(-3600) });

    expect(answer.status).toBe(202);
    expect(answer.body.status).toBe('queued');
    expect((await finished(answer.body.id)).status).toBe('succeeded');
  });

  it.each([
    ['not RFC 3339', 'words', 'tomorrow at nine', 'must be an RFC 3339 date-time'],
    ['without an offset', 'local', '2030-01-01T09:00:00', 'must be an RFC 3339 date-time'],
    ['beyond 365 days', 'far', inSeconds(366 * 86_400), 'must be at most 365 days ahead'],
  ])('refuses a runAt %s with 400 and stores nothing', async (_, name, runAt, detail) => {
    const answer = await submit(`bad-${name}`, { ...image('refused'), runAt });

    expect(answer.status).toBe(400);
    expect(answer.body).toMatchObject({
      code: 'validation-failed',
      errors: [{ pointer: '/runAt', detail: expect.stringContaining(detail) }],
    });
    expect((await call('GET', `/v1/jobs/${deriveJobId(TENANT, keyOf(`bad-${name}`))}`)).status).toBe(404);
  });
});
