import { mkdirSync, readFileSync, rmSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { JOB_TYPES } from '../../config/job-types';
import { PROVIDER_NAMES } from '../../config/providers';
import { pollUntil, type RunningLocalStack, startLocalStack } from '../../local/harness/local-stack';
import { UNTHROTTLED_API } from './support/api';
import { useBrowser } from './support/chromium';

/**
 * The local ops view: after a burst of five jobs, one of which the provider
 * fails, a job scheduled an hour ahead and another scheduled and canceled
 * twice, `/v1/admin/metrics` shows what CloudWatch would (counts from the
 * captured EMF metrics, the queues, each provider's slots against its own
 * limit), only to the admin key, and `/dashboard` shows it in a real browser,
 * each figure as the API reports it, down to the failed job's steps.
 */

jest.setTimeout(60_000);

/** Each provider's limit: MAX_IN_FLIGHT, but Deepgram's own. */
const MAX_IN_FLIGHT = 2;
const DEEPGRAM_MAX_IN_FLIGHT = 3;
const limitOf = (provider: string) => (provider === 'deepgram' ? DEEPGRAM_MAX_IN_FLIGHT : MAX_IN_FLIGHT);

const TENANT_KEY = 'ops-tenant-key-5d21';
const ADMIN_KEY = 'ops-admin-key-9e47';
const SIM_JOB_MS = 400;
const ARTIFACT_DIR = resolve(__dirname, '../../test-artifacts');
const SCREENSHOT = join(ARTIFACT_DIR, 'dashboard.png');
const PNG_SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);

let stack: RunningLocalStack;
let failedJobId: string;
const jobIds: string[] = [];
/** Scheduled an hour ahead: it stays scheduled for the whole file. */
let scheduledJobId: string;
/** Scheduled, then canceled twice: one canceled job, two cancel requests. */
let canceledJobId: string;

async function api(path: string, key: string | undefined, init: RequestInit = {}) {
  const response = await fetch(`${stack.baseUrl}${path}`, {
    ...init,
    headers: { ...(key ? { 'x-api-key': key } : {}), ...(init.headers as Record<string, string>) },
  });
  const text = await response.text();
  return {
    status: response.status,
    contentType: response.headers.get('content-type'),
    body: JSON.parse(text),
  };
}

const metrics = async () => {
  const { status, body } = await api('/v1/admin/metrics', ADMIN_KEY);
  if (status !== 200) throw new Error(`/v1/admin/metrics answered ${status}`);
  return body;
};

beforeAll(async () => {
  stack = await startLocalStack({
    env: {
      LONGHAUL_API_KEYS: `${TENANT_KEY}:acme`,
      LONGHAUL_ADMIN_KEY: ADMIN_KEY,
      MAX_IN_FLIGHT: String(MAX_IN_FLIGHT),
      MAX_IN_FLIGHT_DEEPGRAM: String(DEEPGRAM_MAX_IN_FLIGHT),
      SIM_JOB_MS: String(SIM_JOB_MS),
      SIM_PROGRESS_HZ: '5',
      SLOT_WAIT_MAX_SECONDS: '1',
      ...UNTHROTTLED_API,
    },
  });
  const providerUrl = stack.endpoints.providerUrl;
  const fault = await fetch(`${providerUrl}/_sim/faults`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ mode: 'fail-job', count: 1 }),
  });
  expect(fault.ok).toBe(true);

  const created = await Promise.all(
    Array.from({ length: 5 }, (_, index) =>
      api('/v1/jobs', TENANT_KEY, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'idempotency-key': `ops-burst-${index}` },
        body: JSON.stringify({ type: 'image.generate', input: { prompt: `harbour at dawn ${index}` } }),
      }),
    ),
  );
  for (const { status, body } of created) {
    expect(status).toBe(202);
    jobIds.push(body.id);
  }
  const settled = await Promise.all(
    jobIds.map((id) =>
      pollUntil(
        async () => {
          const { body } = await api(`/v1/jobs/${id}`, TENANT_KEY);
          return ['succeeded', 'failed', 'canceled', 'needs_review'].includes(body.status) ? body : undefined;
        },
        { timeoutMs: 30_000, intervalMs: 100, description: `job ${id} to settle` },
      ),
    ),
  );
  expect(settled.map((job) => job.status).sort()).toEqual([
    'failed',
    'succeeded',
    'succeeded',
    'succeeded',
    'succeeded',
  ]);
  failedJobId = settled.find((job) => job.status === 'failed').id;

  const runAt = new Date(Date.now() + 3_600_000).toISOString();
  const schedule = (key: string) =>
    api('/v1/jobs', TENANT_KEY, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'idempotency-key': key },
      body: JSON.stringify({ type: 'image.generate', input: { prompt: `harbour at ${key}` }, runAt }),
    });
  const [scheduled, toCancel] = await Promise.all([schedule('ops-later'), schedule('ops-canceled')]);
  expect([scheduled.body.status, toCancel.body.status]).toEqual(['scheduled', 'scheduled']);
  scheduledJobId = scheduled.body.id;
  canceledJobId = toCancel.body.id;
  for (let request = 0; request < 2; request++) {
    const cancel = await api(`/v1/jobs/${canceledJobId}/cancel`, TENANT_KEY, { method: 'POST' });
    expect({ status: cancel.status, job: cancel.body.status }).toEqual({ status: 202, job: 'canceled' });
  }
});

/** Every job of the tenant in `status`, as the API lists them. */
async function listed(status: string): Promise<{ id: string; type: string }[]> {
  const { status: answered, body } = await api(`/v1/jobs?status=${status}&limit=100`, TENANT_KEY);
  if (answered !== 200) throw new Error(`/v1/jobs?status=${status} answered ${answered}`);
  return body.items;
}

afterAll(async () => {
  await stack?.stop();
});

test('/v1/admin/metrics reports the jobs as CloudWatch would: 7 submitted, 4 succeeded, 1 failed, 1 canceled', async () => {
  // The workflow's last metrics are written as its last step ends, a moment after the job settles.
  const report = await pollUntil(
    async () => {
      const body = await metrics();
      return body.jobs.succeeded === 4 &&
        body.jobs.failed === 1 &&
        body.queue.depth === 0 &&
        body.inFlight.current === 0
        ? body
        : undefined;
    },
    { timeoutMs: 10_000, intervalMs: 200, description: 'the metrics of five settled jobs' },
  );

  // Two canceled requests of one job: one job canceled.
  expect(report.jobs).toEqual({
    submitted: 7,
    started: 5,
    succeeded: 4,
    failed: 1,
    canceled: 1,
    needsReview: 0,
  });
  expect(report.inFlight).toEqual({ current: 0, holders: [] });
  // Every provider with its own limit, and every registered job type with the provider it runs on.
  expect(report.providers).toEqual(
    PROVIDER_NAMES.map((name) => ({ name, state: 'open', limit: limitOf(name), inFlight: 0, queued: 0 })),
  );
  // The tenant's scheduled job, as the reconciler's usage line counts it.
  expect(report.tenants).toEqual([{ tenant: 'acme', queued: 0, scheduled: 1, inFlight: 0 }]);
  expect(report.jobTypes.map((t: { type: string; provider: string }) => [t.type, t.provider])).toEqual(
    JOB_TYPES.map((type) => [type, type === 'audio.publish' ? 'deepgram' : 'longhaul-http']),
  );
  expect(report.jobTypes.reduce((sum: number, t: { submitted: number }) => sum + t.submitted, 0)).toBe(7);
  expect(report.queue.depth).toBe(0);
  expect(report.deadLetterQueue).toEqual({ depth: 0 });
  expect(report.activeByStatus).toEqual({ queued: 0, running: 0, needs_review: 0 });
  expect(report.needsReview).toEqual([]);

  // Ten-second periods over ten minutes, and the burst in them.
  expect(report.rates).toHaveLength(60);
  const sum = (field: string) => report.rates.reduce((total: number, p: any) => total + p[field], 0);
  expect([sum('submitted'), sum('succeeded'), sum('failed')]).toEqual([7, 4, 1]);

  // Every job waited in the queue; only the four that succeeded have a duration, each at least the provider's run.
  expect(report.latency.queueWait.samples).toBe(5);
  expect(report.latency.jobDuration.samples).toBe(4);
  const { p50, p90, p99 } = report.latency.jobDuration;
  expect(p50).toBeGreaterThanOrEqual(SIM_JOB_MS);
  expect(p50).toBeLessThanOrEqual(p90);
  expect(p90).toBeLessThanOrEqual(p99);

  // The failed job is among the recent ones, with its reason, and so are the scheduled and the canceled one.
  const failed = report.recentJobs.find((job: any) => job.id === failedJobId);
  expect(failed).toMatchObject({ status: 'failed', error: { code: expect.any(String) } });
  expect(report.recentJobs.find((job: any) => job.id === scheduledJobId)).toMatchObject({
    status: 'scheduled',
  });
  expect(report.recentJobs.find((job: any) => job.id === canceledJobId)).toMatchObject({
    status: 'canceled',
  });
  expect(report.recentJobs.map((job: any) => job.id).sort()).toEqual(
    [...jobIds, scheduledJobId, canceledJobId].sort(),
  );
});

test('/v1/admin/metrics meters billed usage: every REST API request and Lambda invocation, none of its own', async () => {
  const before = (await metrics()).usage;
  for (const id of jobIds.slice(0, 3)) expect((await api(`/v1/jobs/${id}`, TENANT_KEY)).status).toBe(200);
  const after = (await metrics()).usage;

  expect(after.since).toBe(before.since);
  // Three API requests, each one api invocation; the admin routes are the local stack's own, not the API's.
  expect(after.restApiRequests - before.restApiRequests).toBe(3);
  const apiFunction = (usage: any) => usage.lambda['longhaul-api'];
  expect(apiFunction(after).invocations - apiFunction(before).invocations).toBe(3);
  expect(apiFunction(after).billedMs - apiFunction(before).billedMs).toBeGreaterThanOrEqual(3);

  // The burst ran the workflow's steps and the dispatcher; each function is billed at its configured memory.
  for (const name of ['longhaul-api', 'longhaul-authorizer', 'longhaul-workflow', 'longhaul-dispatch']) {
    const fn = after.lambda[name];
    expect(fn.invocations).toBeGreaterThan(0);
    expect(fn.gbSeconds).toBeCloseTo((fn.memoryMb / 1024) * (fn.billedMs / 1000), 9);
  }
  expect(after.lambda['longhaul-workflow'].memoryMb).toBe(1024);
  expect(after.lambda['longhaul-dispatch'].memoryMb).toBe(512);
});

test('/v1/admin/metrics is for the admin key only', async () => {
  const tenant = await api('/v1/admin/metrics', TENANT_KEY);
  expect(tenant.status).toBe(403);
  expect(tenant.contentType).toBe('application/problem+json');
  expect(tenant.body).toMatchObject({ status: 403, code: 'forbidden' });

  const anonymous = await api('/v1/admin/metrics', undefined);
  expect(anonymous.status).toBe(401);
  expect(anonymous.body).toMatchObject({ status: 401, code: 'unauthorized' });

  const timeline = await api(`/dashboard/api/jobs/${failedJobId}/events`, TENANT_KEY);
  expect(timeline.status).toBe(403);
});

describe('/dashboard in a browser', () => {
  const browser = useBrowser({ viewport: { width: 1280, height: 900 } });

  test('shows each figure as the API reports it, the failed job and its steps', async () => {
    const page = browser().pages()[0] ?? (await browser().newPage());
    const pageErrors: string[] = [];
    page.on('pageerror', (error) => pageErrors.push(error.message));

    await page.goto(`${stack.baseUrl}/dashboard`);
    await page.getByLabel('Admin API key').fill(ADMIN_KEY);
    await page.getByRole('button', { name: 'Show the dashboard' }).click();
    await page
      .locator('#updated')
      .filter({ hasText: /^Updated / })
      .waitFor({ timeout: 10_000 });
    const textOf = async (selector: string) => (await page.locator(selector).textContent())?.trim();

    // In flight: each provider against its own limit and in its state, as GET /v1/admin/providers has them;
    // a provider paused by hand says so, where it looked like an idle, healthy one.
    const paused = await api('/v1/admin/providers/bedrock/pause', ADMIN_KEY, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ seconds: 600, reason: 'quota review' }),
    });
    expect(paused.status).toBe(200);
    await page
      .locator('#in-flight li[data-provider="bedrock"] .state')
      .filter({ hasText: /^paused until / })
      .waitFor({ timeout: 10_000 });
    const providers = await api('/v1/admin/providers', ADMIN_KEY);
    expect(providers.status).toBe(200);
    expect(providers.body.items.map((p: { name: string }) => p.name)).toEqual([...PROVIDER_NAMES]);
    for (const provider of providers.body.items) {
      expect(provider.maxInFlight).toBe(limitOf(provider.name));
      expect(await textOf(`#in-flight li[data-provider="${provider.name}"] .count`)).toBe(
        `${provider.inFlight} / ${provider.maxInFlight}`,
      );
      expect(await textOf(`#in-flight li[data-provider="${provider.name}"] .state`)).toMatch(
        provider.name === 'bedrock' ? /^paused until \d\d:\d\d:\d\d: quota review$/ : /^open$/,
      );
    }
    expect(
      (await api('/v1/admin/providers/bedrock/resume', ADMIN_KEY, { method: 'POST' })).body,
    ).toMatchObject({ name: 'bedrock', state: 'open' });

    // Active jobs, as GET /v1/admin/jobs lists them.
    for (const [status, tile] of [
      ['queued', '#active-queued'],
      ['running', '#active-running'],
      ['needs_review', '#active-needs-review'],
    ] as const) {
      const active = await api(`/v1/admin/jobs?status=${status}&limit=100`, ADMIN_KEY);
      expect(await textOf(tile)).toBe(String(active.body.items.length));
    }

    // The totals, as the tenant's job listing has its jobs: a job canceled twice is one canceled job.
    const [succeeded, failed, canceled, scheduled, queued, running] = await Promise.all([
      listed('succeeded'),
      listed('failed'),
      listed('canceled'),
      listed('scheduled'),
      listed('queued'),
      listed('running'),
    ]);
    const all = [...succeeded, ...failed, ...canceled, ...scheduled, ...queued, ...running];
    expect(canceled.map((job) => job.id)).toEqual([canceledJobId]);
    expect(await textOf('#total-submitted')).toBe(String(all.length));
    expect(await textOf('#total-succeeded')).toBe(String(succeeded.length));
    expect(await textOf('#total-failed')).toBe(String(failed.length));
    expect(await textOf('#total-canceled')).toBe(String(canceled.length));

    // The tenant's row counts its scheduled job.
    const tenantRow = page.locator('#tenant-rows tr').filter({ hasText: 'acme' });
    expect(await tenantRow.locator('th, td').allTextContents()).toEqual([
      'acme',
      String(queued.length),
      String(scheduled.length),
      String(running.length),
    ]);

    // Each job type's row: its provider and its jobs, as listed.
    for (const type of JOB_TYPES) {
      const ofType = (jobs: { type: string }[]) => String(jobs.filter((job) => job.type === type).length);
      const cells = await page
        .locator('#job-type-rows tr')
        .filter({ has: page.getByRole('rowheader', { name: type, exact: true }) })
        .locator('th, td')
        .allTextContents();
      expect(cells).toEqual([
        type,
        type === 'audio.publish' ? 'deepgram' : 'longhaul-http',
        ofType(all),
        ofType(succeeded),
        ofType(failed),
      ]);
    }
    // The cards fit the 1280 px wide window: none of them scrolls sideways.
    for (const name of ['Job types', 'Providers', 'Tenants']) {
      const card = page.getByRole('region', { name, exact: true });
      const widths = await card.evaluate((element) => ({
        scrollWidth: element.scrollWidth,
        clientWidth: element.clientWidth,
      }));
      expect({ name, fits: widths.scrollWidth <= widths.clientWidth, ...widths }).toMatchObject({
        name,
        fits: true,
      });
    }

    // The scheduled job is among the recent jobs, as scheduled.
    expect(scheduled.map((job) => job.id)).toEqual([scheduledJobId]);
    const scheduledRow = page.getByRole('row').filter({ hasText: scheduledJobId });
    expect(await scheduledRow.getByText('scheduled', { exact: true }).count()).toBe(1);

    // The failed job, with its status, in the recent jobs.
    const row = page.getByRole('row').filter({ hasText: failedJobId });
    await row.waitFor({ timeout: 10_000 });
    expect(await row.getByText('failed', { exact: true }).count()).toBe(1);

    // Its timeline, down to the step that failed it.
    await row.getByRole('button', { name: failedJobId }).click();
    const timeline = page.getByRole('region', { name: 'Timeline' });
    await timeline.getByRole('cell', { name: 'fail', exact: true }).first().waitFor({ timeout: 10_000 });
    expect(await timeline.textContent()).toContain(failedJobId);

    // Chart.js drew the throughput chart (served by the stack: this machine has no internet).
    const chartWidth = await page
      .locator('#rates-chart')
      .evaluate((canvas) => ('Chart' in globalThis ? (canvas as unknown as { width: number }).width : 0));
    expect(chartWidth).toBeGreaterThan(0);
    expect(await page.getByText('Last 10 minutes: 7 submitted, 4 succeeded, 1 failed.').count()).toBe(1);

    mkdirSync(ARTIFACT_DIR, { recursive: true });
    rmSync(SCREENSHOT, { force: true });
    await page.screenshot({ path: SCREENSHOT, fullPage: true });
    expect(readFileSync(SCREENSHOT).subarray(0, PNG_SIGNATURE.length).equals(PNG_SIGNATURE)).toBe(true);
    expect(pageErrors).toEqual([]);
  });

  test('takes the key from ?key= once, drops it from the address, and never logs it', async () => {
    const page = await browser().newPage();
    await page.goto(`${stack.baseUrl}/dashboard?key=${ADMIN_KEY}`);
    // Loaded with the key: the submitted total is there.
    await page.locator('#total-submitted').filter({ hasText: /^7$/ }).waitFor({ timeout: 10_000 });
    expect(page.url()).toBe(`${stack.baseUrl}/dashboard`);
    await page.close();
    expect(stack.output()).not.toContain(ADMIN_KEY);
  });
});
