import { Webhook } from 'standardwebhooks';
import { ValidationError } from '../../../lambdas/domain/errors';
import type { ProviderSubmission, ProviderWebhookRequest } from '../../../lambdas/domain/provider';
import type { ProviderConfig } from '../../../lambdas/providers/common';
import { replicate } from '../../../lambdas/providers/replicate';
import {
  answer,
  closedUrl,
  FAULT_TIMEOUT_MS,
  FakeProvider,
  reset,
  SUBMISSION_FAULTS,
  silence,
} from './fake-provider';

const fake = new FakeProvider();
beforeAll(() => fake.start());
afterAll(() => fake.stop());
beforeEach(() => fake.reset());

const SECRET = `whsec_${Buffer.from('replicate-test-signing-key-32-by').toString('base64')}`;
const config = (overrides: Partial<ProviderConfig> = {}): ProviderConfig => ({
  baseUrl: `${fake.url}/v1`,
  apiKey: 'r8_test',
  webhookSecret: SECRET,
  deduplicates: true,
  // Generous, so a slow machine never turns a prompt answer into a timeout; the faults below use a short one.
  submitTimeoutMs: 5000,
  readTimeoutMs: 5000,
  ...overrides,
});
const submission: ProviderSubmission<'replicate'> = {
  idempotencyKey: 'job_x:1',
  request: { model: 'black-forest-labs/flux-schnell', input: { prompt: 'a cat', num_outputs: 1 } },
  webhookUrl: 'https://longhaul.example/v1/provider/replicate/events?jobId=job_x&submission=1',
};
const predictionBody = (overrides: Record<string, unknown>) => ({
  id: 'p_1',
  model: 'black-forest-labs/flux-schnell',
  version: 'hidden',
  input: { prompt: 'a cat' },
  logs: '',
  output: null,
  error: null,
  status: 'starting',
  created_at: '2027-01-15T08:00:00Z',
  urls: { get: 'https://api.replicate.com/v1/predictions/p_1', cancel: '…' },
  ...overrides,
});
const LOGS_AT_40 = 'loading\n 20%|██        | 2/10 [00:01<00:04]\n 40%|████      | 4/10 [00:02<00:03]\n';

describe('replicate submit', () => {
  it('creates a prediction on the official model endpoint with the webhook, once', async () => {
    fake.behaviour = answer(201, predictionBody({ id: 'p_1' }));

    const result = await replicate(config()).submit(submission);

    expect(result).toEqual({ providerJobId: 'p_1' });
    expect(fake.seen).toHaveLength(1);
    expect(fake.seen[0]).toMatchObject({
      method: 'POST',
      url: '/v1/models/black-forest-labs/flux-schnell/predictions',
      headers: { authorization: 'Bearer r8_test', 'content-type': 'application/json' },
    });
    expect(fake.seen[0]?.headers.prefer).toBeUndefined();
    expect(JSON.parse(fake.seen[0]!.body)).toEqual({
      input: { prompt: 'a cat', num_outputs: 1 },
      webhook: submission.webhookUrl,
      webhook_events_filter: ['start', 'output', 'logs', 'completed'],
    });
  });

  it('creates a prediction of a version when the request names one', async () => {
    fake.behaviour = answer(201, predictionBody({ id: 'p_2' }));

    await replicate(config()).submit({
      ...submission,
      request: {
        ...submission.request,
        version: '5c7d5dc6dd8bf75c1acaa8565735e7986bc5b66206b55cca93cb72c9bf15ccaa',
      },
    });

    expect(fake.seen[0]).toMatchObject({ method: 'POST', url: '/v1/predictions' });
    expect(JSON.parse(fake.seen[0]!.body)).toEqual({
      version: '5c7d5dc6dd8bf75c1acaa8565735e7986bc5b66206b55cca93cb72c9bf15ccaa',
      input: { prompt: 'a cat', num_outputs: 1 },
      webhook: submission.webhookUrl,
      webhook_events_filter: ['start', 'output', 'logs', 'completed'],
    });
  });

  // The SDK on its own resends a create after a 429 and after a thrown network error: each would be a second charge.
  it.each(SUBMISSION_FAULTS)(
    'classifies $fault and sends the create exactly once',
    async ({ behaviour, error }) => {
      fake.behaviour = behaviour;

      await expect(
        replicate(config({ submitTimeoutMs: FAULT_TIMEOUT_MS })).submit(submission),
      ).rejects.toMatchObject(error);

      expect(fake.seen).toHaveLength(1);
    },
  );

  it('treats a refused connection as unavailable: nothing was sent', async () => {
    const provider = replicate(config({ baseUrl: `${await closedUrl()}/v1` }));

    await expect(provider.submit(submission)).rejects.toMatchObject({ name: 'ProviderUnavailable' });
  });

  it('does not deduplicate, whatever the setting says', () => {
    expect(replicate(config({ deduplicates: true })).deduplicates).toBe(false);
  });

  it('needs an API key', () => {
    expect(() => replicate(config({ apiKey: undefined }))).toThrow('The replicate provider needs an apiKey');
  });
});

describe('replicate status', () => {
  it.each([
    [{ status: 'starting' }, { id: 'p_1', status: 'queued', progress: 0 }],
    [
      { status: 'processing', logs: LOGS_AT_40 },
      { id: 'p_1', status: 'running', progress: 40 },
    ],
    [
      { status: 'processing', logs: 'warming up' },
      { id: 'p_1', status: 'running', progress: 0 },
    ],
    [
      { status: 'succeeded', logs: LOGS_AT_40, output: ['https://replicate.delivery/x.webp'] },
      { id: 'p_1', status: 'succeeded', progress: 100, output: ['https://replicate.delivery/x.webp'] },
    ],
    [
      { status: 'failed', logs: LOGS_AT_40, error: 'CUDA out of memory' },
      {
        id: 'p_1',
        status: 'failed',
        progress: 40,
        error: { code: 'provider_failed', message: 'CUDA out of memory' },
      },
    ],
    [{ status: 'canceled' }, { id: 'p_1', status: 'canceled', progress: 0 }],
    [{ status: 'aborted' }, { id: 'p_1', status: 'canceled', progress: 0 }],
  ])('maps %j', async (fields, expected) => {
    fake.behaviour = answer(200, predictionBody(fields));

    await expect(replicate(config()).status('p_1')).resolves.toEqual(expected);

    expect(fake.seen).toEqual([
      expect.objectContaining({
        method: 'GET',
        url: '/v1/predictions/p_1',
        headers: expect.objectContaining({ authorization: 'Bearer r8_test' }),
      }),
    ]);
  });

  it.each([
    ['a 500', answer(500, {})],
    ['a 404', answer(404, { detail: 'Not found.' })],
    ['a 429', answer(429, {})],
    ['a reset', reset],
    ['a timeout', silence],
    ['a malformed prediction', answer(200, { id: 'p_1', status: 'exploded' })],
  ])('reports %s as unavailable', async (_, behaviour) => {
    fake.behaviour = behaviour;

    await expect(replicate(config({ readTimeoutMs: FAULT_TIMEOUT_MS })).status('p_1')).rejects.toMatchObject({
      name: 'ProviderUnavailable',
    });
  });
});

describe('replicate cancel', () => {
  it.each(['canceled', 'succeeded', 'failed'])('resolves once Replicate says %s', async (status) => {
    fake.behaviour = answer(200, predictionBody({ status }));

    await replicate(config()).cancel('p_1');

    expect(fake.seen).toEqual([
      expect.objectContaining({ method: 'POST', url: '/v1/predictions/p_1/cancel' }),
    ]);
  });

  it('refuses to call it canceled while the prediction still runs', async () => {
    fake.behaviour = answer(200, predictionBody({ status: 'processing' }));

    await expect(replicate(config()).cancel('p_1')).rejects.toMatchObject({ name: 'ProviderUnavailable' });
  });

  it('reports a failed cancel as unavailable', async () => {
    fake.behaviour = answer(500, {});

    await expect(replicate(config()).cancel('p_1')).rejects.toMatchObject({ name: 'ProviderUnavailable' });
  });

  it.each([
    ['still starting', answer(200, predictionBody({ status: 'starting' }))],
    ['a reset', reset],
    ['a timeout', silence],
  ])(
    'is not confirmed by %s, in one exchange the SDK never resends: asking again is the caller’s',
    async (_, behaviour) => {
      fake.behaviour = behaviour;

      await expect(
        replicate(config({ readTimeoutMs: FAULT_TIMEOUT_MS })).cancel('p_1'),
      ).rejects.toMatchObject({
        name: 'ProviderUnavailable',
      });
      expect(fake.seen).toHaveLength(1);
    },
  );
});

describe('replicate webhooks', () => {
  const provider = replicate({ ...config(), baseUrl: 'http://127.0.0.1:1/v1' });
  const nowSeconds = () => Math.floor(Date.now() / 1000);
  const signed = (body: string, secret = SECRET, at = nowSeconds()): ProviderWebhookRequest => ({
    headers: {
      'webhook-id': 'msg_1',
      'webhook-timestamp': String(at),
      'webhook-signature': new Webhook(secret).sign('msg_1', new Date(at * 1000), body),
    },
    query: { jobId: 'job_x', submission: '1' },
    body,
  });
  const body = JSON.stringify(predictionBody({ status: 'processing', logs: LOGS_AT_40 }));

  it('accepts a fresh webhook signed with the whsec key', () => {
    expect(provider.verify(signed(body), nowSeconds())).toBe('valid');
  });

  it('refuses a tampered body', () => {
    expect(provider.verify({ ...signed(body), body: body.replace('p_1', 'p_2') }, nowSeconds())).toBe(
      'mismatch',
    );
  });

  it('refuses a webhook signed with another key', () => {
    const other = `whsec_${Buffer.from('another-signing-key-of-32-bytes!').toString('base64')}`;

    expect(provider.verify(signed(body, other), nowSeconds())).toBe('mismatch');
  });

  it('refuses a stale webhook, by the caller clock and by the process clock', () => {
    const old = nowSeconds() - 301;

    expect(provider.verify(signed(body, SECRET, old), nowSeconds())).toBe('stale');
    expect(provider.verify(signed(body), nowSeconds() + 301)).toBe('stale');
  });

  it.each(['webhook-id', 'webhook-timestamp', 'webhook-signature'])(
    'refuses a webhook without %s',
    (header) => {
      const request = signed(body);

      expect(
        provider.verify({ ...request, headers: { ...request.headers, [header]: undefined } }, nowSeconds()),
      ).toBe('malformed');
    },
  );

  it.each([
    [
      { status: 'starting', logs: null },
      { type: 'progress', id: 'p_1', progress: 0 },
    ],
    [
      { status: 'processing', logs: LOGS_AT_40 },
      { type: 'progress', id: 'p_1', progress: 40 },
    ],
    [
      { status: 'succeeded', output: ['https://replicate.delivery/x.webp'] },
      { type: 'succeeded', id: 'p_1', output: ['https://replicate.delivery/x.webp'] },
    ],
    [
      { status: 'failed', error: 'NSFW content detected' },
      { type: 'failed', id: 'p_1', error: { code: 'provider_failed', message: 'NSFW content detected' } },
    ],
    [{ status: 'canceled' }, { type: 'canceled', id: 'p_1' }],
    [{ status: 'aborted' }, { type: 'canceled', id: 'p_1' }],
  ])('parses a prediction %j', (fields, expected) => {
    expect(provider.parse(signed(JSON.stringify(predictionBody(fields))))).toEqual([expected]);
  });

  it.each([
    ['not JSON', '{"id":'],
    ['an unknown status', JSON.stringify(predictionBody({ status: 'exploded' }))],
    ['no id', JSON.stringify({ status: 'succeeded' })],
  ])('refuses %s with a ValidationError', (_, text) => {
    expect(() => provider.parse(signed(text))).toThrow(ValidationError);
  });
});
