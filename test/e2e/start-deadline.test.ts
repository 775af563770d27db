import { jobIdOf } from '../../lambdas/domain/job';
import { pollUntil, type RunningLocalStack, startLocalStack } from '../../local/harness/local-stack';
import { apiCall, settledJob, UNTHROTTLED_API } from './support/api';
import { simulatorCall } from './support/simulator';

/**
 * A client's deadline for its job to reach its provider, kept while the
 * provider is down: the job with a short `startBy` waits in its line, says
 * why, and ends `failed` with `start_deadline_passed` and no charge; the job
 * without one waits out the outage and succeeds, charged once.
 */

jest.setTimeout(60_000);

const KEY = 'deadline-key-4b2a';
const OUTAGE_SECONDS = 14;

interface Ledger {
  readonly submissions: readonly { idempotencyKey: string }[];
}

let stack: RunningLocalStack;

beforeAll(async () => {
  stack = await startLocalStack({
    env: {
      LONGHAUL_API_KEYS: `${KEY}:acme`,
      ...UNTHROTTLED_API,
      SIM_PORT: '0',
      SIM_JOB_MS: '1000',
      PROVIDER_TIMEOUT_MS: '2000',
      SLOT_WAIT_MAX_SECONDS: '2',
      MAX_IN_FLIGHT: '2',
      PROVIDER_PAUSE_SECONDS: '3',
      PROVIDER_PAUSE_MAX_SECONDS: '3',
      RECONCILE_INTERVAL_MS: '1000',
    },
  });
});

afterAll(async () => {
  await stack?.stop();
});

const api = apiCall(() => stack.baseUrl, KEY);
const sim = (path: string, body?: unknown) => simulatorCall(stack.endpoints.providerUrl)(path, body);

async function submit(key: string, startBy?: string): Promise<string> {
  const created = await api(
    'POST',
    '/v1/jobs',
    { type: 'image.generate', input: { prompt: 'a lamp in the rain' }, ...(startBy ? { startBy } : {}) },
    key,
  );
  expect(created.status).toBe(202);
  return created.body.id as string;
}

const settled = (jobId: string) => settledJob(api, jobId, 45_000);

test('a job that cannot reach its down provider by its startBy ends start_deadline_passed, uncharged; one without waits and succeeds', async () => {
  await sim('/_sim/faults', { mode: 'outage', seconds: OUTAGE_SECONDS });
  const startBy = new Date(Date.now() + 8_000).toISOString();
  const hurried = await submit(`deadline-${Date.now()}-a`, startBy);
  const patient = await submit(`deadline-${Date.now()}-b`);

  // While it waits, it says why: its provider is paused, until when.
  const waiting = await pollUntil(
    async () => {
      const { body } = await api('GET', `/v1/jobs/${hurried}`);
      return body.waiting?.reason === 'provider_paused' ? body.waiting : undefined;
    },
    { timeoutMs: 7_000, intervalMs: 100, description: 'the job to say its provider is paused' },
  );
  expect(Date.parse(waiting.until)).toBeGreaterThan(Date.now() - 5_000);

  const [ended, done] = await Promise.all([settled(hurried), settled(patient)]);
  expect(ended.status).toBe('failed');
  expect(ended.error.code).toBe('start_deadline_passed');
  expect(ended.startBy).toBe(startBy);
  expect(Date.parse(ended.finishedAt)).toBeGreaterThanOrEqual(Date.parse(startBy));
  expect(done.status).toBe('succeeded');

  const ledger = (await sim('/_sim/ledger')) as Ledger;
  expect(ledger.submissions.map(({ idempotencyKey }) => jobIdOf(idempotencyKey))).toEqual([patient]);
  // Resuming it would run a job its client no longer wants: refused, to be submitted again.
  const resumed = await api('POST', `/v1/jobs/${hurried}/resume`, undefined, `resume-${hurried}`);
  expect(resumed.status).toBe(409);
});
