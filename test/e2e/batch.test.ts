import { deriveJobId } from '../../lambdas/domain/idempotency';
import { jobIdOf } from '../../lambdas/domain/job';
import { pollUntil, type RunningLocalStack, startLocalStack } from '../../local/harness/local-stack';
import { UNTHROTTLED_API } from './support/api';
import { simulatorCall } from './support/simulator';

/**
 * POST /v1/jobs/batch over real HTTP against the local stack: per-item
 * answers, jobs that run, a retried batch that creates and charges nothing
 * more, the key space shared with single submissions, and refusals that store
 * nothing.
 */

jest.setTimeout(90_000);

const KEY = 'batch-key-4f2a';
const TENANT = 'batcher';

let stack: RunningLocalStack;
beforeAll(async () => {
  stack = await startLocalStack({
    env: {
      LONGHAUL_API_KEYS: `${KEY}:${TENANT}`,
      ...UNTHROTTLED_API,
      MAX_IN_FLIGHT: '50',
      SIM_JOB_MS: '300',
      // Each tick is a webhook through the API: the batch's jobs need none to run.
      SIM_PROGRESS_HZ: '1',
      // The jobs run without the reconciler's help; its passes would only take CPU from them.
      RECONCILE_INTERVAL_MS: '60000',
      SLOT_WAIT_MAX_SECONDS: '1',
    },
  });
});
afterAll(async () => {
  await stack?.stop();
});

async function call(
  method: string,
  path: string,
  options: { json?: unknown; body?: string; idempotencyKey?: string } = {},
) {
  const response = await fetch(`${stack.baseUrl}${path}`, {
    method,
    headers: {
      'x-api-key': KEY,
      ...(options.json !== undefined || options.body !== undefined
        ? { 'content-type': 'application/json' }
        : {}),
      ...(options.idempotencyKey ? { 'idempotency-key': options.idempotencyKey } : {}),
    },
    body: options.body ?? (options.json === undefined ? undefined : JSON.stringify(options.json)),
  });
  const text = await response.text();
  return { status: response.status, headers: response.headers, body: text ? JSON.parse(text) : undefined };
}

interface ItemResult {
  idempotencyKey: string | null;
  status: number;
  replayed: boolean;
  job?: { id: string; status: string; input: { prompt: string } };
  problem?: { code: string; errors?: { pointer?: string; detail: string }[] };
}

/** The tenant's jobs, all of them (the tests make fewer than a page). */
const storedJobs = async (): Promise<{ id: string; status: string }[]> =>
  (await call('GET', '/v1/jobs?limit=100')).body.items;

const run = `run-${Date.now()}`;
const keyOf = (n: number) => `${run}-${n}`;
const image = (n: number) => ({ type: 'image.generate', input: { prompt: `lighthouse number ${n}` } });
const VALID = 46;
/** 46 valid items, one of them repeated at the end, and three invalid ones between. */
const items = [
  ...Array.from({ length: VALID }, (_, n) => ({ idempotencyKey: keyOf(n), ...image(n) })),
  { idempotencyKey: keyOf(100), ...image(100), runAt: '2099-01-01T00:00:00Z' },
  { idempotencyKey: keyOf(101), type: 'image.generate', input: { prompt: '' } },
  { ...image(102) },
  { idempotencyKey: keyOf(0), ...image(0) },
];
const expectedStatuses = [...Array<number>(VALID).fill(202), 400, 400, 400, 202];

let first: ItemResult[];

describe('a batch of 50 items', () => {
  it('answers each item as a single submission would, and the valid jobs run to succeeded', async () => {
    const answer = await call('POST', '/v1/jobs/batch', { json: { items } });

    expect(answer.status).toBe(200);
    first = answer.body.items;
    expect(first.map((item) => item.status)).toEqual(expectedStatuses);
    expect(first.map((item) => item.replayed)).toEqual([...Array<boolean>(VALID + 3).fill(false), true]);
    expect(first.slice(0, VALID).map((item) => item.job?.id)).toEqual(
      Array.from({ length: VALID }, (_, n) => deriveJobId(TENANT, keyOf(n))),
    );
    expect(first[49]?.job?.id).toBe(first[0]?.job?.id);
    expect(first[46]?.problem).toMatchObject({
      code: 'validation-failed',
      errors: [{ pointer: '/items/46/runAt', detail: expect.stringContaining('at most 365 days ahead') }],
    });
    expect(first[47]?.problem?.errors?.[0]?.pointer).toBe('/items/47/input/prompt');
    expect(first[48]).toMatchObject({ idempotencyKey: null, problem: { code: 'idempotency-key-missing' } });

    const ids = new Set(first.slice(0, VALID).map((item) => item.job?.id));
    await pollUntil(
      async () => {
        const jobs = await storedJobs();
        return jobs.length === VALID && jobs.every((job) => ids.has(job.id) && job.status === 'succeeded');
      },
      { timeoutMs: 40_000, intervalMs: 250, description: 'every job of the batch to succeed' },
    );
  });

  it('replays every accepted item when sent again: no new job, and one provider charge per job', async () => {
    const again = await call('POST', '/v1/jobs/batch', { json: { items } });

    expect(again.status).toBe(200);
    const results: ItemResult[] = again.body.items;
    expect(results.map((item) => item.status)).toEqual(expectedStatuses);
    expect(results.slice(0, VALID).every((item) => item.replayed && item.job?.status === 'succeeded')).toBe(
      true,
    );
    expect(results.map((item) => item.job?.id)).toEqual(first.map((item) => item.job?.id));
    expect(await storedJobs()).toHaveLength(VALID);

    const ledger = await simulatorCall(stack.endpoints.providerUrl)('/_sim/ledger');
    const charges = new Map<string, number>();
    for (const submission of ledger.submissions as { idempotencyKey: string }[]) {
      const jobId = jobIdOf(submission.idempotencyKey);
      charges.set(jobId, (charges.get(jobId) ?? 0) + 1);
    }
    expect(new Set(charges.values())).toEqual(new Set([1]));
    expect([...charges.keys()].sort()).toEqual(
      first
        .slice(0, VALID)
        .map((item) => item.job?.id)
        .sort(),
    );
  });

  it("lands a single POST with an item's key on that item's job", async () => {
    const single = await call('POST', '/v1/jobs', { json: image(7), idempotencyKey: keyOf(7) });

    expect(single.status).toBe(202);
    expect(single.headers.get('idempotent-replayed')).toBe('true');
    expect(single.body.id).toBe(first[7]?.job?.id);
  });
});

describe('a batch refused whole', () => {
  it('answers 1001 items with 400 and stores none of them', async () => {
    const tooMany = Array.from({ length: 1001 }, (_, n) => ({
      idempotencyKey: `${run}-many-${n}`,
      ...image(n),
    }));
    const answer = await call('POST', '/v1/jobs/batch', { json: { items: tooMany } });

    expect(answer.status).toBe(400);
    expect(answer.body).toMatchObject({
      code: 'validation-failed',
      errors: [{ pointer: '/items', detail: 'must be an array of 1 to 1000 job requests' }],
    });
    expect((await call('GET', `/v1/jobs/${deriveJobId(TENANT, `${run}-many-0`)}`)).status).toBe(404);
    expect(await storedJobs()).toHaveLength(VALID);
  });

  it('answers a body over 1 MiB with 413 before reading it', async () => {
    const prompt = 'x'.repeat(3000);
    const large = Array.from({ length: 400 }, (_, n) => ({
      idempotencyKey: `${run}-large-${n}`,
      type: 'image.generate',
      input: { prompt },
    }));
    const body = JSON.stringify({ items: large });
    expect(body.length).toBeGreaterThan(1024 * 1024);

    const answer = await call('POST', '/v1/jobs/batch', { body });

    expect(answer.status).toBe(413);
    expect(answer.body).toMatchObject({ code: 'payload-too-large' });
    expect(await storedJobs()).toHaveLength(VALID);
  });
});
