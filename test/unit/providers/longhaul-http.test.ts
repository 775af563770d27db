import { ValidationError } from '../../../lambdas/domain/errors';
import type { ProviderSubmission } from '../../../lambdas/domain/provider';
import type { ProviderConfig } from '../../../lambdas/providers/common';
import { longhaulHttp } from '../../../lambdas/providers/longhaul-http';
import { signPayload } from '../../../lambdas/shared/signature';
import { answer, closedUrl, FAULT_TIMEOUT_MS, FakeProvider, reset, SUBMISSION_FAULTS } from './fake-provider';

const fake = new FakeProvider();
beforeAll(() => fake.start());
afterAll(() => fake.stop());
beforeEach(() => fake.reset());

const config = (overrides: Partial<ProviderConfig> = {}): ProviderConfig => ({
  baseUrl: fake.url,
  apiKey: 'pk_test',
  webhookSecret: 'whsec-generic-test-secret',
  deduplicates: true,
  // Generous, so a slow machine never turns a prompt answer into a timeout; the faults below use a short one.
  submitTimeoutMs: 5000,
  readTimeoutMs: 5000,
  ...overrides,
});
const submission: ProviderSubmission<'longhaul-http'> = {
  idempotencyKey: 'job_x:1',
  request: { type: 'image.generate', input: { prompt: 'a cat' } },
  webhookUrl: 'https://longhaul.example/v1/provider/events?jobId=job_x&submission=1',
};

describe('longhaul-http submit', () => {
  it('posts the request with the idempotency key and bearer key, and returns the id', async () => {
    fake.behaviour = answer(201, { id: 'gen_1' });

    const result = await longhaulHttp(config()).submit(submission);

    expect(result).toEqual({ providerJobId: 'gen_1' });
    expect(fake.seen).toHaveLength(1);
    expect(fake.seen[0]).toMatchObject({
      method: 'POST',
      url: '/v1/generations',
      headers: {
        'idempotency-key': 'job_x:1',
        authorization: 'Bearer pk_test',
        'content-type': 'application/json',
      },
    });
    expect(JSON.parse(fake.seen[0]!.body)).toEqual({
      type: 'image.generate',
      input: { prompt: 'a cat' },
      webhookUrl: submission.webhookUrl,
    });
  });

  it.each(SUBMISSION_FAULTS)('classifies $fault and sends the request once', async ({ behaviour, error }) => {
    fake.behaviour = behaviour;

    await expect(
      longhaulHttp(config({ submitTimeoutMs: FAULT_TIMEOUT_MS })).submit(submission),
    ).rejects.toMatchObject(error);

    expect(fake.seen).toHaveLength(1);
  });

  it('treats a refused connection as unavailable: nothing was sent', async () => {
    const provider = longhaulHttp(config({ baseUrl: await closedUrl() }));

    await expect(provider.submit(submission)).rejects.toMatchObject({ name: 'ProviderUnavailable' });
  });

  it('takes whether it deduplicates from the setting, as its catalog entry says', () => {
    expect(longhaulHttp(config({ deduplicates: true })).deduplicates).toBe(true);
    expect(longhaulHttp(config({ deduplicates: false })).deduplicates).toBe(false);
  });
});

describe('longhaul-http status and cancel', () => {
  it('reads a status', async () => {
    fake.behaviour = answer(200, { id: 'gen_1', status: 'running', progress: 40 });

    await expect(longhaulHttp(config()).status('gen_1')).resolves.toEqual({
      id: 'gen_1',
      status: 'running',
      progress: 40,
    });
    expect(fake.seen[0]).toMatchObject({
      method: 'GET',
      url: '/v1/generations/gen_1',
      headers: { authorization: 'Bearer pk_test' },
    });
  });

  it('cancels', async () => {
    fake.behaviour = answer(200, { id: 'gen_1', status: 'canceled', progress: 10 });

    await longhaulHttp(config()).cancel('gen_1');

    expect(fake.seen).toEqual([
      expect.objectContaining({ method: 'POST', url: '/v1/generations/gen_1/cancel' }),
    ]);
  });

  it('reports every failure of a repeatable call as unavailable', async () => {
    const provider = longhaulHttp(config());
    fake.behaviour = answer(500, {});
    await expect(provider.status('gen_1')).rejects.toMatchObject({ name: 'ProviderUnavailable' });
    fake.behaviour = answer(200, { nonsense: true });
    await expect(provider.status('gen_1')).rejects.toMatchObject({ name: 'ProviderUnavailable' });
    fake.behaviour = reset;
    await expect(provider.cancel('gen_1')).rejects.toMatchObject({ name: 'ProviderUnavailable' });
    fake.behaviour = answer(409, {});
    await expect(provider.cancel('gen_1')).rejects.toMatchObject({ name: 'ProviderUnavailable' });
  });
});

describe('longhaul-http webhooks', () => {
  const provider = longhaulHttp({
    baseUrl: 'http://127.0.0.1:1',
    webhookSecret: 'whsec-generic-test-secret',
    deduplicates: true,
    submitTimeoutMs: 300,
    readTimeoutMs: 300,
  });
  const now = 1_800_000_000;
  const body = JSON.stringify({ type: 'progress', id: 'gen_1', progress: 42, at: '2027-01-15T08:00:00Z' });
  const signed = (text: string, secret = 'whsec-generic-test-secret', t = now) => ({
    headers: { 'provider-signature': signPayload(secret, text, t) },
    query: { jobId: 'job_x' },
    body: text,
  });

  it('accepts a fresh webhook signed with the secret', () => {
    expect(provider.verify(signed(body), now + 10)).toBe('valid');
  });

  it('refuses a tampered body, a wrong secret, a stale signature and a missing header', () => {
    expect(provider.verify({ ...signed(body), body: body.replace('42', '43') }, now)).toBe('mismatch');
    expect(provider.verify(signed(body, 'another-secret'), now)).toBe('mismatch');
    expect(provider.verify(signed(body), now + 301)).toBe('stale');
    expect(provider.verify({ headers: {}, query: {}, body }, now)).toBe('malformed');
  });

  it.each([
    [
      { type: 'progress', id: 'gen_1', progress: 42 },
      { type: 'progress', id: 'gen_1', progress: 42 },
    ],
    [
      { type: 'succeeded', id: 'gen_1', output: { url: 'https://cdn.example/1.png' } },
      { type: 'succeeded', id: 'gen_1', output: { url: 'https://cdn.example/1.png' } },
    ],
    [
      { type: 'failed', id: 'gen_1', error: { code: 'nsfw', message: 'Refused.' } },
      { type: 'failed', id: 'gen_1', error: { code: 'nsfw', message: 'Refused.' } },
    ],
    [
      { type: 'canceled', id: 'gen_1' },
      { type: 'canceled', id: 'gen_1' },
    ],
  ])('parses %j', (event, expected) => {
    const text = JSON.stringify({ ...event, at: '2027-01-15T08:00:00Z' });

    expect(provider.parse(signed(text))).toEqual([expected]);
  });

  it.each([
    ['not JSON', '{"type":'],
    ['an unknown event', JSON.stringify({ type: 'exploded', id: 'gen_1', at: 'x' })],
    ['progress out of range', JSON.stringify({ type: 'progress', id: 'gen_1', progress: 101, at: 'x' })],
  ])('refuses %s with a ValidationError', (_, text) => {
    expect(() => provider.parse(signed(text))).toThrow(ValidationError);
  });
});
