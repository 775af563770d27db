import { pollUntil, type RunningLocalStack, startLocalStack } from '../../local/harness/local-stack';
import { UNTHROTTLED_API } from './support/api';
import { simulatorCall } from './support/simulator';

/**
 * Weighted fair share over the local stack: tenants share one provider's
 * slots, so a tenant that submits a flood of jobs never makes another wait
 * behind all of it, and inside a tenant an interactive job goes first. All of
 * it through a storm on the provider's slot pool item: a share of the
 * requests naming it conflict, as other transactions on it make them in AWS.
 */

jest.setTimeout(90_000);

const FLOOD = 'fair-flood-key-1a2b';
const SMALL = 'fair-small-key-3c4d';
const HEAVY = 'fair-heavy-key-5e6f';
const LIGHT = 'fair-light-key-7a8b';
const CAPPED = 'fair-capped-key-9c0d';
const BOUNDED = 'fair-bounded-key-1f3a';
const ADMIN = 'fair-admin-key-2e4f';
const FLOODED = 12;
const STORM = 'fair-storm-key-3b5d';
const CALM = 'fair-calm-key-4c6e';
/** The share of requests naming the slot pool item that conflict. */
const SLOT_CONFLICTS = '0.3';

let stack: RunningLocalStack;
let counter = 0;

beforeAll(async () => {
  stack = await startLocalStack({
    env: {
      LONGHAUL_API_KEYS: [
        `${FLOOD}:flood`,
        `${SMALL}:small`,
        `${HEAVY}:heavy`,
        `${LIGHT}:light`,
        `${CAPPED}:capped`,
        `${BOUNDED}:bounded`,
        `${STORM}:storm`,
        `${CALM}:calm`,
      ].join(','),
      LONGHAUL_ADMIN_KEY: ADMIN,
      ...UNTHROTTLED_API,
      MAX_IN_FLIGHT: '2',
      SIM_JOB_MS: '400',
      SIM_PROGRESS_HZ: '2',
      LONGHAUL_FAULT_SLOT_CONFLICTS: SLOT_CONFLICTS,
    },
  });
});

afterAll(async () => {
  await stack?.stop();
});

interface JobView {
  readonly id: string;
  readonly status: string;
  readonly priority: string;
  readonly createdAt: string;
  readonly startedAt?: string;
}

async function submit(key: string, priority?: string): Promise<string> {
  const response = await fetch(`${stack.baseUrl}/v1/jobs`, {
    method: 'POST',
    headers: { 'x-api-key': key, 'content-type': 'application/json', 'idempotency-key': `fair-${++counter}` },
    body: JSON.stringify({ type: 'image.generate', input: { prompt: `job ${counter}` }, priority }),
  });
  expect(response.status).toBe(202);
  return ((await response.json()) as JobView).id;
}

const read = async (key: string, id: string): Promise<JobView> =>
  (await (
    await fetch(`${stack.baseUrl}/v1/jobs/${id}`, { headers: { 'x-api-key': key } })
  ).json()) as JobView;

const allSucceeded = (key: string, ids: readonly string[]) =>
  pollUntil(
    async () => {
      const jobs = await Promise.all(ids.map((id) => read(key, id)));
      return jobs.every((job) => job.status === 'succeeded') ? jobs : undefined;
    },
    { timeoutMs: 60_000, intervalMs: 200, description: 'every job to succeed' },
  );

/** How many of `others` started after `job` was submitted and before it started: the starts it waited for. */
const startedBefore = (job: JobView, others: readonly JobView[]) =>
  others.filter((other) => {
    const started = Date.parse(other.startedAt as string);
    return started > Date.parse(job.createdAt) && started < Date.parse(job.startedAt as string);
  }).length;

it("starts another tenant's job next, not behind a flood submitted before it", async () => {
  const flood: string[] = [];
  for (let i = 0; i < FLOODED; i++) flood.push(await submit(FLOOD));
  const small = await submit(SMALL);

  const floodJobs = await allSucceeded(FLOOD, flood);
  const [smallJob] = await allSucceeded(SMALL, [small]);

  // Both slots were the flood's when it came, and either may have been handed on but not started yet:
  // at most those two start after it arrived and before it; under FIFO it would wait for the whole flood.
  expect(startedBefore(smallJob as JobView, floodJobs)).toBeLessThanOrEqual(2);
});

it("starts a tenant's interactive job before its standard jobs submitted earlier", async () => {
  const standard: string[] = [];
  for (let i = 0; i < 8; i++) standard.push(await submit(FLOOD));
  const urgent = await submit(FLOOD, 'interactive');

  const standardJobs = await allSucceeded(FLOOD, standard);
  const [urgentJob] = await allSucceeded(FLOOD, [urgent]);

  expect(urgentJob?.priority).toBe('interactive');
  expect(startedBefore(urgentJob as JobView, standardJobs)).toBeLessThanOrEqual(1);
});

async function putTenant(tenant: string, settings: Record<string, unknown>): Promise<void> {
  const response = await fetch(`${stack.baseUrl}/v1/admin/tenants/${tenant}`, {
    method: 'PUT',
    headers: { 'x-api-key': ADMIN, 'content-type': 'application/json' },
    body: JSON.stringify(settings),
  });
  expect(response.status).toBe(200);
}

it('shares the slots 3:1 between two tenants of weights 3 and 1 that both keep jobs waiting', async () => {
  await putTenant('heavy', { weight: 3 });
  const heavy: string[] = [];
  const light: string[] = [];
  for (let i = 0; i < 12; i++) {
    heavy.push(await submit(HEAVY));
    light.push(await submit(LIGHT));
  }
  const jobs = [
    ...(await allSucceeded(HEAVY, heavy)).map((job) => ({ ...job, tenant: 'heavy' })),
    ...(await allSucceeded(LIGHT, light)).map((job) => ({ ...job, tenant: 'light' })),
  ].sort((a, b) => Date.parse(a.startedAt as string) - Date.parse(b.startedAt as string));

  // While both still wait (the light tenant's 12 last until the end), three heavy starts to one light.
  const whileBothWait = jobs.slice(2, 14).filter((job) => job.tenant === 'heavy').length;
  expect(whileBothWait).toBeGreaterThanOrEqual(8);
  expect(whileBothWait).toBeLessThanOrEqual(10);
});

it("holds a tenant to its own cap inside the provider's limit", async () => {
  await putTenant('capped', { maxInFlight: 1 });
  await simulatorCall(stack.endpoints.providerUrl)('/_sim/reset', {});
  const ids: string[] = [];
  for (let i = 0; i < 5; i++) ids.push(await submit(CAPPED));
  await allSucceeded(CAPPED, ids);

  // The provider had two slots and the tenant alone kept five jobs waiting: one ran at a time.
  const ledger = await simulatorCall(stack.endpoints.providerUrl)('/_sim/ledger');
  expect(ledger.submissions).toHaveLength(5);
  expect(ledger.maxConcurrent).toBe(1);
});

it("refuses a job beyond the tenant's maxQueued with 429 and stores nothing, until one leaves its queue", async () => {
  await putTenant('bounded', { maxQueued: 2, maxInFlight: 1 });
  await simulatorCall(stack.endpoints.providerUrl)('/_sim/faults', { mode: 'stall', count: 1 });
  const post = (key: string, prompt: string) =>
    fetch(`${stack.baseUrl}/v1/jobs`, {
      method: 'POST',
      headers: { 'x-api-key': BOUNDED, 'content-type': 'application/json', 'idempotency-key': key },
      body: JSON.stringify({ type: 'image.generate', input: { prompt } }),
    });
  const accepted = async (key: string) => {
    const response = await post(key, key);
    expect(response.status).toBe(202);
    return ((await response.json()) as JobView).id;
  };
  // The first job runs (stalled at the provider): it has left the queue, so two more fill it.
  const running = await accepted('bounded-a');
  await pollUntil(async () => ((await read(BOUNDED, running)).status === 'running' ? true : undefined), {
    timeoutMs: 10_000,
    intervalMs: 100,
    description: 'the first job to run',
  });
  const queued = [await accepted('bounded-b'), await accepted('bounded-c')];

  const refused = await post('bounded-d', 'bounded-d');

  expect(refused.status).toBe(429);
  expect(refused.headers.get('retry-after')).toBe('30');
  expect(refused.headers.get('content-type')).toMatch(/^application\/problem\+json/);
  expect(await refused.json()).toMatchObject({ status: 429, code: 'tenant-queue-full' });
  const listed = await fetch(`${stack.baseUrl}/v1/jobs?limit=10`, { headers: { 'x-api-key': BOUNDED } });
  const ids = ((await listed.json()) as { items: JobView[] }).items.map((job) => job.id).sort();
  expect(ids).toEqual([running, ...queued].sort());
  // A retry of an accepted request is answered as always.
  const retried = await post('bounded-c', 'bounded-c');
  expect([retried.status, retried.headers.get('idempotent-replayed')]).toEqual([202, 'true']);

  // The operator sees the same figures, through the admin API and the dashboard's report.
  const tenant = await fetch(`${stack.baseUrl}/v1/admin/tenants/bounded`, {
    headers: { 'x-api-key': ADMIN },
  });
  expect(((await tenant.json()) as { usage: unknown }).usage).toEqual({
    queued: 2,
    scheduled: 0,
    inFlight: 1,
  });
  const report = await fetch(`${stack.baseUrl}/v1/admin/metrics`, { headers: { 'x-api-key': ADMIN } });
  const { tenants } = (await report.json()) as { tenants: { tenant: string }[] };
  expect(tenants.find((line) => line.tenant === 'bounded')).toEqual({
    tenant: 'bounded',
    queued: 2,
    scheduled: 0,
    inFlight: 1,
  });

  const cancel = (id: string) =>
    fetch(`${stack.baseUrl}/v1/jobs/${id}/cancel`, { method: 'POST', headers: { 'x-api-key': BOUNDED } });
  expect((await cancel(queued[0] as string)).status).toBe(202);
  const later = await accepted('bounded-d');
  for (const id of [running, queued[1] as string, later]) expect((await cancel(id)).status).toBe(202);
});

it('runs a batch of two tenants to success through the conflicts on the slot pool item, one charge each, never past the limit', async () => {
  await simulatorCall(stack.endpoints.providerUrl)('/_sim/reset', {});
  const storm: string[] = [];
  const calm: string[] = [];
  for (let i = 0; i < 4; i++) {
    storm.push(await submit(STORM));
    calm.push(await submit(CALM));
  }
  await allSucceeded(STORM, storm);
  await allSucceeded(CALM, calm);

  const ledger = await simulatorCall(stack.endpoints.providerUrl)('/_sim/ledger');
  expect(ledger.submissions).toHaveLength(8);
  expect(
    new Set(ledger.submissions.map((submission: { idempotencyKey: string }) => submission.idempotencyKey))
      .size,
  ).toBe(8);
  expect(ledger.maxConcurrent).toBeLessThanOrEqual(2);
});
