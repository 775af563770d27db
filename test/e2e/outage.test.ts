import { pollUntil, type RunningLocalStack, startLocalStack } from '../../local/harness/local-stack';
import { apiCall, settledJob, UNTHROTTLED_API } from './support/api';
import { chargesByJob, simulatorCall } from './support/simulator';

/**
 * A provider outage longer than any retry window of the job path (the pauses
 * and the waiting step's heartbeat shortened by settings), with jobs in flight
 * and jobs queued: the queue grows and no job fails. One job in flight lost
 * its webhooks, so the reconciler's status reads meet the outage for longer
 * than its waiting step's heartbeat, and its finalize reads the provider's
 * status once it is back. Each job ends
 * `succeeded` with one charge, and the in-flight limit holds throughout.
 */

jest.setTimeout(60_000);

const KEY = 'outage-key-7c1e';
const LIMIT = 2;
/** Longer than the waiting step's heartbeat (AWAIT_HEARTBEAT_SECONDS, its least) and every pause. */
const OUTAGE_SECONDS = 12;

interface Ledger {
  readonly submissions: readonly { idempotencyKey: string }[];
  readonly maxConcurrent: number;
}

let stack: RunningLocalStack;
let submitted = 0;

beforeAll(async () => {
  stack = await startLocalStack({
    env: {
      LONGHAUL_API_KEYS: `${KEY}:acme`,
      ...UNTHROTTLED_API,
      SIM_PORT: '0',
      SIM_JOB_MS: '1500',
      PROVIDER_TIMEOUT_MS: '2000',
      SLOT_WAIT_MAX_SECONDS: '2',
      MAX_IN_FLIGHT: String(LIMIT),
      PROVIDER_PAUSE_SECONDS: '1',
      PROVIDER_PAUSE_MAX_SECONDS: '2',
      AWAIT_HEARTBEAT_SECONDS: '10',
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
    { type: 'image.generate', input: { prompt: 'a harbour in fog' } },
    `outage-${Date.now()}-${++submitted}`,
  );
  expect(created.status).toBe(202);
  return created.body.id as string;
}

const settled = (jobId: string) => settledJob(api, jobId, 45_000);

test('an outage longer than every retry window fails no job: each succeeds once the provider is back, charged once, within the limit', async () => {
  // The first job in flight hears nothing from the provider: only status reads tell how it is. The second's
  // end frees its slot during the outage, for the queued jobs the provider then refuses.
  await sim('/_sim/faults', { mode: 'lose-webhooks', count: 1 });
  const inFlight = [await submit(), await submit()];
  // Both accepted by the provider before it goes down.
  await pollUntil(
    async () => (((await sim('/_sim/ledger')) as Ledger).submissions.length === LIMIT ? true : undefined),
    { timeoutMs: 20_000, intervalMs: 100, description: 'the first jobs to reach the provider' },
  );
  const downSince = Date.now();
  await sim('/_sim/faults', { mode: 'outage', seconds: OUTAGE_SECONDS });
  const queued = [await submit(), await submit(), await submit(), await submit()];
  const jobs = await Promise.all([...inFlight, ...queued].map(settled));

  expect(jobs.map((job) => job.status)).toEqual(Array(jobs.length).fill('succeeded'));
  // The queued jobs could only start once the provider was back.
  for (const job of jobs.slice(LIMIT)) {
    expect(Date.parse(job.finishedAt)).toBeGreaterThanOrEqual(downSince + OUTAGE_SECONDS * 1000);
  }
  const ledger = (await sim('/_sim/ledger')) as Ledger;
  expect(chargesByJob(ledger.submissions)).toEqual(Object.fromEntries(jobs.map((job) => [job.id, 1])));
  expect(ledger.maxConcurrent).toBeLessThanOrEqual(LIMIT);
  // The job whose webhooks were lost was asked about while the provider was down, and waited for it.
  expect(Date.parse(jobs[0].finishedAt)).toBeGreaterThanOrEqual(downSince + OUTAGE_SECONDS * 1000);
  // A job the provider refused says why it waited.
  const { body: timeline } = await api('GET', `/v1/jobs/${queued[0]}/events`);
  expect((timeline.items as { type: string }[]).map((event) => event.type)).toContain('provider.paused');
  // And the stack's log, at its default level and format, says what the provider answered and how long it waits.
  const log = stack.output();
  expect(log).toMatch(/ workflow +WARN {2}provider throttled .*provider=\S+ asked=submit reason=/);
  expect(log).toMatch(/ workflow +WARN {2}provider paused .*provider=\S+ until=\d{4}-\d\d-\d\dT\S+ reason=/);
  // And the bus heard the provider pause by itself: once a pause, not once a refusal.
  const { eventBridgeEndpoint, eventBusName } = stack.endpoints;
  const { events } = (await (await fetch(`${eventBridgeEndpoint}/_events/${eventBusName}`)).json()) as {
    events: { 'detail-type': string; detail: { provider?: string; by?: string; pausedUntil?: string } }[];
  };
  const pauses = events.filter((event) => event['detail-type'] === 'provider.paused');
  expect(pauses.length).toBeGreaterThan(0);
  for (const { detail } of pauses)
    expect(detail).toMatchObject({ provider: 'longhaul-http', by: 'provider' });
  expect(new Set(pauses.map(({ detail }) => detail.pausedUntil)).size).toBe(pauses.length);
});
