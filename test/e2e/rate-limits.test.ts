import { type RunningLocalStack, startLocalStack } from '../../local/harness/local-stack';
import { apiCall, settledJob, UNTHROTTLED_API } from './support/api';
import { chargesByJob, simulatorCall } from './support/simulator';

/**
 * A burst of jobs at a provider that limits submissions by rate. While the
 * declared rate is the provider's own, grants go at that rate and the
 * provider throttles nothing; when the provider tightens below it (as
 * Replicate does when a team's credit runs low), its 429s pause the grants
 * and lower the rate they are held to. Either way every job succeeds, is
 * charged once, and the in-flight limit holds.
 */

jest.setTimeout(120_000);

const KEY = 'rates-key-3b9d';
const LIMIT = 3;
/** The provider's rate, and Longhaul's declared one: a submission every 2 s. */
const PER_MINUTE = 30;
/**
 * The provider takes two at once; Longhaul declares one, as the operations
 * guide advises: a submission reaches the provider some milliseconds after
 * its grant, not evenly, and the token left over absorbs that.
 */
const PROVIDER_BURST = 2;
const BURST = 1;

interface Ledger {
  readonly submissions: readonly { idempotencyKey: string; acceptedAt: string }[];
  readonly maxConcurrent: number;
  readonly throttled?: number;
}

let stack: RunningLocalStack;
let submitted = 0;

beforeAll(async () => {
  stack = await startLocalStack({
    env: {
      LONGHAUL_API_KEYS: `${KEY}:acme`,
      ...UNTHROTTLED_API,
      SIM_PORT: '0',
      SIM_JOB_MS: '500',
      SLOT_WAIT_MAX_SECONDS: '2',
      MAX_IN_FLIGHT: String(LIMIT),
      RATE_PER_MINUTE_LONGHAUL_HTTP: String(PER_MINUTE),
      RATE_BURST_LONGHAUL_HTTP: String(BURST),
      PROVIDER_PAUSE_SECONDS: '1',
      PROVIDER_PAUSE_MAX_SECONDS: '6',
      RECONCILE_INTERVAL_MS: '1000',
    },
  });
});

afterAll(async () => {
  await stack?.stop();
});

const api = apiCall(() => stack.baseUrl, KEY);
const sim = (path: string, body?: unknown) => simulatorCall(stack.endpoints.providerUrl)(path, body);

async function submit(): Promise<string> {
  const created = await api(
    'POST',
    '/v1/jobs',
    { type: 'image.generate', input: { prompt: 'a lighthouse at dusk' } },
    `rates-${Date.now()}-${++submitted}`,
  );
  expect(created.status).toBe(202);
  return created.body.id as string;
}

const settled = (jobId: string) => settledJob(api, jobId, 90_000);

/** The most submissions accepted within any window of `ms` (GCRA allows the burst plus one per interval). */
function mostWithin(ledger: Ledger, ms: number): number {
  const times = ledger.submissions.map((s) => Date.parse(s.acceptedAt)).sort((a, b) => a - b);
  let most = 0;
  for (let i = 0, j = 0; i < times.length; i++) {
    while ((times[i] as number) - (times[j] as number) >= ms) j++;
    most = Math.max(most, i - j + 1);
  }
  return most;
}

test('a burst at the declared rate goes at that rate, throttled never; a provider that tightens below it pauses and slows the grants, and no job fails', async () => {
  // Every function warm first, at the limit's concurrency: a cold start delays a submission after its
  // grant by seconds, and the next ones, granted on time, would reach the provider all at once.
  const warmUp = await Promise.all(Array.from({ length: LIMIT }, () => submit()));
  expect((await Promise.all(warmUp.map(settled))).map((job) => job.status)).toEqual(
    Array(LIMIT).fill('succeeded'),
  );
  await sim('/_sim/reset', {});
  await sim('/_sim/config', {
    provider: 'longhaul-http',
    requestsPerMinute: PER_MINUTE,
    burst: PROVIDER_BURST,
  });
  const declared = await Promise.all(Array.from({ length: 6 }, () => submit()));
  const first = await Promise.all(declared.map(settled));
  expect(first.map((job) => job.status)).toEqual(Array(6).fill('succeeded'));
  let ledger = (await sim('/_sim/ledger')) as Ledger;
  expect(ledger.throttled ?? 0).toBe(0);
  expect(chargesByJob(ledger.submissions)).toEqual(Object.fromEntries(declared.map((id) => [id, 1])));
  // Within any 4 s: the declared burst and the two tokens of those seconds, never all six at once.
  expect(mostWithin(ledger, 4_000)).toBeLessThanOrEqual(BURST + 2);
  expect(ledger.maxConcurrent).toBeLessThanOrEqual(LIMIT);

  // The provider now takes a submission every 5 s, one at a time: below what Longhaul declared.
  await sim('/_sim/config', { provider: 'longhaul-http', requestsPerMinute: 12, burst: 1 });
  const tightened = await Promise.all(Array.from({ length: 4 }, () => submit()));
  const second = await Promise.all(tightened.map(settled));
  expect(second.map((job) => job.status)).toEqual(Array(4).fill('succeeded'));
  ledger = (await sim('/_sim/ledger')) as Ledger;
  // It said so, and was heard: each refusal cost nothing, each job was charged once.
  expect(ledger.throttled ?? 0).toBeGreaterThan(0);
  expect(chargesByJob(ledger.submissions)).toEqual(
    Object.fromEntries([...declared, ...tightened].map((id) => [id, 1])),
  );
  expect(ledger.maxConcurrent).toBeLessThanOrEqual(LIMIT);
});
