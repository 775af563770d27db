import { mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { type BrowserContext, chromium } from 'playwright-core';
import { JOB_TYPES } from '../../config/job-types';
import { PROVIDER_NAMES } from '../../config/providers';
import { chromiumForTests } from './support/chromium';
import { pollUntil, type RunningLocalStack, startLocalStack } from './support/local-stack';

/**
 * The local ops view: after a burst of five jobs, one of which the provider
 * fails, `/v1/admin/metrics` shows what CloudWatch would (counts from the
 * captured EMF metrics, the queues, the in-flight limit), only to the admin
 * key, and `/dashboard` shows it in a real browser, down to the failed job's
 * steps.
 */

jest.setTimeout(60_000);

/** The generic provider, which every job type runs on here but audio.publish, and Deepgram, which runs its chunks. */
const PROVIDERS_IN_USE = 2;

const TENANT_KEY = 'ops-tenant-key-5d21';
const ADMIN_KEY = 'ops-admin-key-9e47';
const SIM_JOB_MS = 400;
const ARTIFACT_DIR = resolve(__dirname, '../../test-artifacts');
const SCREENSHOT = join(ARTIFACT_DIR, 'dashboard.png');
const PNG_SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);

let stack: RunningLocalStack;
let failedJobId: string;
const jobIds: string[] = [];

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
      MAX_IN_FLIGHT: '2',
      SIM_JOB_MS: String(SIM_JOB_MS),
      SIM_PROGRESS_HZ: '5',
      SLOT_WAIT_MAX_SECONDS: '1',
      API_RATE_LIMIT: '1000',
      API_BURST_LIMIT: '2000',
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
});

afterAll(async () => {
  await stack?.stop();
});

test('/v1/admin/metrics reports the burst as CloudWatch would: 5 submitted, 4 succeeded, 1 failed', async () => {
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

  expect(report.jobs).toEqual({
    submitted: 5,
    started: 5,
    succeeded: 4,
    failed: 1,
    canceled: 0,
    needsReview: 0,
  });
  // The providers job types run on: the generic one, and Deepgram for audio.publish's chunks.
  expect(report.inFlight).toEqual({ current: 0, limit: 2 * PROVIDERS_IN_USE, holders: [] });
  // Every provider with its own limit, and every registered job type with the provider it runs on.
  expect(report.providers).toEqual(
    PROVIDER_NAMES.map((name) => ({ name, limit: 2, inFlight: 0, queued: 0 })),
  );
  expect(report.jobTypes.map((t: { type: string; provider: string }) => [t.type, t.provider])).toEqual(
    JOB_TYPES.map((type) => [type, type === 'audio.publish' ? 'deepgram' : 'longhaul-http']),
  );
  expect(report.jobTypes.reduce((sum: number, t: { submitted: number }) => sum + t.submitted, 0)).toBe(5);
  expect(report.queue.depth).toBe(0);
  expect(report.deadLetterQueue).toEqual({ depth: 0 });
  expect(report.activeByStatus).toEqual({ queued: 0, running: 0, needs_review: 0 });
  expect(report.needsReview).toEqual([]);

  // Ten-second periods over ten minutes, and the burst in them.
  expect(report.rates).toHaveLength(60);
  const sum = (field: string) => report.rates.reduce((total: number, p: any) => total + p[field], 0);
  expect([sum('submitted'), sum('succeeded'), sum('failed')]).toEqual([5, 4, 1]);

  // Every job waited in the queue; only the four that succeeded have a duration, each at least the provider's run.
  expect(report.latency.queueWait.samples).toBe(5);
  expect(report.latency.jobDuration.samples).toBe(4);
  const { p50, p90, p99 } = report.latency.jobDuration;
  expect(p50).toBeGreaterThanOrEqual(SIM_JOB_MS);
  expect(p50).toBeLessThanOrEqual(p90);
  expect(p90).toBeLessThanOrEqual(p99);

  // The failed job is among the recent ones, with its reason.
  const failed = report.recentJobs.find((job: any) => job.id === failedJobId);
  expect(failed).toMatchObject({ status: 'failed', error: { code: expect.any(String) } });
  expect(report.recentJobs.map((job: any) => job.id).sort()).toEqual([...jobIds].sort());
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
  /** The unpacked browser and its profile, removed afterwards. */
  let browserDir: string;
  let browser: BrowserContext;

  beforeAll(async () => {
    browserDir = mkdtempSync(join(tmpdir(), 'longhaul-chromium-'));
    const { executablePath, args, env } = await chromiumForTests(browserDir);
    // launchPersistentContext is launch() with the user data directory of our choosing: a fresh one.
    browser = await chromium.launchPersistentContext(join(browserDir, 'profile'), {
      executablePath,
      args,
      env,
      headless: true,
      viewport: { width: 1280, height: 900 },
    });
  });

  afterAll(async () => {
    await browser?.close();
    rmSync(browserDir, { recursive: true, force: true });
  });

  test('shows in flight against the limit, the failed job and its steps', async () => {
    const page = browser.pages()[0] ?? (await browser.newPage());
    const pageErrors: string[] = [];
    page.on('pageerror', (error) => pageErrors.push(error.message));

    await page.goto(`${stack.baseUrl}/dashboard`);
    await page.getByLabel('Admin API key').fill(ADMIN_KEY);
    await page.getByRole('button', { name: 'Show the dashboard' }).click();

    const inFlight = page.getByRole('definition').filter({ hasText: /^\d+ \/ \d+$/ });
    await inFlight.waitFor({ timeout: 10_000 });
    expect(await inFlight.textContent()).toBe(`0 / ${2 * PROVIDERS_IN_USE}`);

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
    expect(await page.getByText('Last 10 minutes: 5 submitted, 4 succeeded, 1 failed.').count()).toBe(1);

    mkdirSync(ARTIFACT_DIR, { recursive: true });
    rmSync(SCREENSHOT, { force: true });
    await page.screenshot({ path: SCREENSHOT, fullPage: true });
    expect(readFileSync(SCREENSHOT).subarray(0, PNG_SIGNATURE.length).equals(PNG_SIGNATURE)).toBe(true);
    expect(pageErrors).toEqual([]);
  });

  test('takes the key from ?key= once, drops it from the address, and never logs it', async () => {
    const page = await browser.newPage();
    await page.goto(`${stack.baseUrl}/dashboard?key=${ADMIN_KEY}`);
    // Loaded with the key: the submitted total is there.
    await page.locator('#total-submitted').filter({ hasText: /^5$/ }).waitFor({ timeout: 10_000 });
    expect(page.url()).toBe(`${stack.baseUrl}/dashboard`);
    await page.close();
    expect(stack.output()).not.toContain(ADMIN_KEY);
  });
});
