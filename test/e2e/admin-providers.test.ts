import { pollUntil, type RunningLocalStack, startLocalStack } from '../../local/harness/local-stack';
import { apiCall, UNTHROTTLED_API } from './support/api';
import { simulatorCall } from './support/simulator';

/**
 * An operator pauses a provider by hand: a job submitted meanwhile waits
 * `queued` in its line (it does not fail), the admin view says the provider is
 * paused and why, the bus hears `provider.paused`; the operator resumes it and
 * the job runs and succeeds, charged once, and the bus hears `provider.resumed`.
 */

jest.setTimeout(60_000);

const KEY = 'admin-providers-key-3b9e';
const ADMIN_KEY = 'admin-providers-admin-key-8d2a';
const PROVIDER = 'longhaul-http';

let stack: RunningLocalStack;

beforeAll(async () => {
  stack = await startLocalStack({
    env: {
      LONGHAUL_API_KEYS: `${KEY}:acme`,
      LONGHAUL_ADMIN_KEY: ADMIN_KEY,
      ...UNTHROTTLED_API,
      SIM_PORT: '0',
      SIM_JOB_MS: '300',
      SLOT_WAIT_MAX_SECONDS: '2',
      RECONCILE_INTERVAL_MS: '1000',
    },
  });
});

afterAll(async () => {
  await stack?.stop();
});

const api = apiCall(() => stack.baseUrl, KEY);
const admin = apiCall(() => stack.baseUrl, ADMIN_KEY);
const sim = (path: string, body?: unknown) => simulatorCall(stack.endpoints.providerUrl)(path, body);

interface ProviderView {
  name: string;
  state: string;
  pausedUntil?: string;
  reason?: string;
  maxInFlight: number;
  inFlight: number;
  queued: number;
}

const providerView = async (): Promise<ProviderView> => {
  const { status, body } = await admin('GET', '/v1/admin/providers');
  expect(status).toBe(200);
  return (body.items as ProviderView[]).find((item) => item.name === PROVIDER) as ProviderView;
};

const busEvents = async (detailType: string) => {
  const { eventBridgeEndpoint, eventBusName } = stack.endpoints;
  const { events } = (await (await fetch(`${eventBridgeEndpoint}/_events/${eventBusName}`)).json()) as {
    events: { source: string; 'detail-type': string; detail: Record<string, unknown> }[];
  };
  return events.filter((event) => event['detail-type'] === detailType);
};

test('a provider paused by hand keeps a new job queued, says why, and runs it once resumed', async () => {
  // Refused with nothing changed: an unknown provider, a bad body, a tenant's key.
  expect(await admin('POST', '/v1/admin/providers/nope/pause', { seconds: 60, reason: 'x' })).toMatchObject({
    status: 404,
    body: { code: 'not-found' },
  });
  expect(await admin('POST', `/v1/admin/providers/${PROVIDER}/pause`, { seconds: 0 })).toMatchObject({
    status: 400,
    body: { code: 'validation-failed' },
  });
  expect(
    await api('POST', `/v1/admin/providers/${PROVIDER}/pause`, { seconds: 60, reason: 'x' }),
  ).toMatchObject({ status: 403, body: { code: 'forbidden' } });
  expect(await providerView()).toMatchObject({ state: 'open' });

  const paused = await admin('POST', `/v1/admin/providers/${PROVIDER}/pause`, {
    seconds: 600,
    reason: 'provider maintenance',
  });
  expect(paused.status).toBe(200);
  expect(paused.body).toMatchObject({ name: PROVIDER, state: 'paused', reason: 'provider maintenance' });
  const until = Date.parse(paused.body.pausedUntil);
  expect(until).toBeGreaterThan(Date.now() + 590_000);

  const created = await api(
    'POST',
    '/v1/jobs',
    { type: 'image.generate', input: { prompt: 'a lighthouse at dusk' } },
    `admin-providers-${Date.now()}`,
  );
  expect(created.status).toBe(202);
  const jobId = created.body.id as string;

  // The dispatcher has met the pause and put the job in its line: it waits, queued, and reached no provider.
  const waiting = await pollUntil(
    async () => ((await providerView()).queued === 1 ? providerView() : undefined),
    {
      timeoutMs: 10_000,
      intervalMs: 100,
      description: 'the job to wait for the paused provider',
    },
  );
  expect(waiting).toEqual({
    name: PROVIDER,
    state: 'paused',
    pausedUntil: new Date(until).toISOString(),
    reason: 'provider maintenance',
    maxInFlight: waiting.maxInFlight,
    inFlight: 0,
    queued: 1,
  });
  expect((await api('GET', `/v1/jobs/${jobId}`)).body.status).toBe('queued');
  expect((await sim('/_sim/ledger')) as { submissions: unknown[] }).toMatchObject({ submissions: [] });

  const pausedEvents = await busEvents('provider.paused');
  expect(pausedEvents.map((event) => event.detail)).toEqual([
    expect.objectContaining({
      provider: PROVIDER,
      pausedUntil: new Date(until).toISOString(),
      reason: 'provider maintenance',
      by: 'operator',
    }),
  ]);

  const resumed = await admin('POST', `/v1/admin/providers/${PROVIDER}/resume`);
  expect(resumed.status).toBe(200);
  expect(resumed.body).toMatchObject({ name: PROVIDER, state: 'open' });
  expect(resumed.body.pausedUntil).toBeUndefined();

  // Handed its slot by the resume, not by its next look (delayed to the end of the pause): it runs now.
  const done = await pollUntil(
    async () => {
      const { body } = await api('GET', `/v1/jobs/${jobId}`);
      return ['succeeded', 'failed', 'canceled', 'needs_review'].includes(body.status) ? body : undefined;
    },
    { timeoutMs: 20_000, intervalMs: 100, description: 'the job to settle after the resume' },
  );
  expect(done.status).toBe('succeeded');
  expect(((await sim('/_sim/ledger')) as { submissions: unknown[] }).submissions).toHaveLength(1);
  expect((await busEvents('provider.resumed')).map((event) => event.detail)).toEqual([
    expect.objectContaining({ provider: PROVIDER, by: 'operator' }),
  ]);
});
