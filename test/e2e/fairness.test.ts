import { pollUntil, type RunningLocalStack, startLocalStack } from './support/local-stack';

/**
 * Weighted fair share over the local stack: tenants share one provider's
 * slots, so a tenant that submits a flood of jobs never makes another wait
 * behind all of it, and inside a tenant an interactive job goes first.
 */

jest.setTimeout(90_000);

const FLOOD = 'fair-flood-key-1a2b';
const SMALL = 'fair-small-key-3c4d';
const FLOODED = 12;

let stack: RunningLocalStack;
let counter = 0;

beforeAll(async () => {
  stack = await startLocalStack({
    env: {
      LONGHAUL_API_KEYS: `${FLOOD}:flood,${SMALL}:small`,
      API_RATE_LIMIT: '1000',
      API_BURST_LIMIT: '2000',
      MAX_IN_FLIGHT: '1',
      SIM_JOB_MS: '400',
      SIM_PROGRESS_HZ: '2',
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

/** How many of `others` started before `job`. */
const startedBefore = (job: JobView, others: readonly JobView[]) =>
  others.filter((other) => Date.parse(other.startedAt as string) < Date.parse(job.startedAt as string))
    .length;

it("starts another tenant's job next, not behind a flood submitted before it", async () => {
  const flood: string[] = [];
  for (let i = 0; i < FLOODED; i++) flood.push(await submit(FLOOD));
  const small = await submit(SMALL);

  const floodJobs = await allSucceeded(FLOOD, flood);
  const [smallJob] = await allSucceeded(SMALL, [small]);

  // One slot: the flood's first job (and at most the one handed its slot meanwhile) goes before it.
  expect(startedBefore(smallJob as JobView, floodJobs)).toBeLessThanOrEqual(2);
});

it("starts a tenant's interactive job before its standard jobs submitted earlier", async () => {
  const standard: string[] = [];
  for (let i = 0; i < 8; i++) standard.push(await submit(FLOOD));
  const urgent = await submit(FLOOD, 'interactive');

  const standardJobs = await allSucceeded(FLOOD, standard);
  const [urgentJob] = await allSucceeded(FLOOD, [urgent]);

  expect(urgentJob?.priority).toBe('interactive');
  expect(startedBefore(urgentJob as JobView, standardJobs)).toBeLessThanOrEqual(2);
});
