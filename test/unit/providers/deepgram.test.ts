import { createHmac } from 'node:crypto';
import { ValidationError } from '../../../lambdas/domain/errors';
import type { ProviderSubmission, ProviderWebhookRequest } from '../../../lambdas/domain/provider';
import type { ProviderConfig } from '../../../lambdas/providers/common';
import { deepgram, signedCallbackUrl } from '../../../lambdas/providers/deepgram';
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

const SECRET = 'deepgram-callback-signing-secret';
const config = (overrides: Partial<ProviderConfig> = {}): ProviderConfig => ({
  baseUrl: fake.url,
  apiKey: 'dg_test',
  webhookSecret: SECRET,
  deduplicates: true,
  // Generous, so a slow machine never turns a prompt answer into a timeout; the faults use a short one.
  submitTimeoutMs: 5000,
  readTimeoutMs: 5000,
  ...overrides,
});
const WEBHOOK_URL = 'https://longhaul.example/v1/provider/deepgram/events?jobId=job_x&submission=1';
const submission: ProviderSubmission<'deepgram'> = {
  idempotencyKey: 'job_x:1',
  request: {
    url: 'https://media.example/sermon.mp3',
    options: { model: 'nova-3', smart_format: true, language: 'en' },
  },
  webhookUrl: WEBHOOK_URL,
};
/** What the callback's `sig` must be: HMAC-SHA256 over the job and submission it names, written out here on purpose. */
const expectedSig = createHmac('sha256', SECRET).update('jobId=job_x&submission=1').digest('hex');

describe('deepgram submit', () => {
  it('posts the audio URL with the options and the signed callback, once, and returns the request id', async () => {
    fake.behaviour = answer(200, { request_id: 'req_1' });

    const result = await deepgram(config()).submit(submission);

    expect(result).toEqual({ providerJobId: 'req_1' });
    expect(fake.seen).toHaveLength(1);
    const [seen] = fake.seen;
    const url = new URL(seen!.url!, fake.url);
    expect(seen).toMatchObject({
      method: 'POST',
      headers: { authorization: 'Token dg_test', 'content-type': 'application/json' },
    });
    expect(url.pathname).toBe('/v1/listen');
    expect(Object.fromEntries(url.searchParams)).toEqual({
      callback: `${WEBHOOK_URL}&sig=${expectedSig}`,
      model: 'nova-3',
      smart_format: 'true',
      language: 'en',
    });
    expect(JSON.parse(seen!.body)).toEqual({ url: 'https://media.example/sermon.mp3' });
  });

  // The SDK on its own resends after 408, 429 and 5xx: each resend would be a second charge.
  it.each(SUBMISSION_FAULTS)(
    'classifies $fault and sends the request exactly once',
    async ({ behaviour, error }) => {
      fake.behaviour = behaviour;

      await expect(
        deepgram(config({ submitTimeoutMs: FAULT_TIMEOUT_MS })).submit(submission),
      ).rejects.toMatchObject(error);

      expect(fake.seen).toHaveLength(1);
    },
  );

  it('treats a refused connection as unavailable: nothing was sent', async () => {
    const provider = deepgram(config({ baseUrl: await closedUrl() }));

    await expect(provider.submit(submission)).rejects.toMatchObject({ name: 'ProviderUnavailable' });
  });

  it('does not deduplicate, whatever the setting says', () => {
    expect(deepgram(config({ deduplicates: true })).deduplicates).toBe(false);
  });

  it('needs an API key and a signing secret long enough to guess at', () => {
    expect(() => deepgram(config({ apiKey: undefined }))).toThrow('The deepgram provider needs an apiKey');
    expect(() => deepgram(config({ webhookSecret: 'short' }))).toThrow('16 or more characters');
  });
});

describe('deepgram status', () => {
  it('has nothing to read without a project', async () => {
    await expect(deepgram(config()).status('req_1')).rejects.toMatchObject({ name: 'ProviderUnavailable' });
    expect(fake.seen).toHaveLength(0);
  });

  it.each([
    [
      'a request with no answer yet',
      { request: { request_id: 'req_1', path: '/v1/listen' } },
      { id: 'req_1', status: 'running', progress: 0 },
    ],
    [
      'an accepted request, whose transcript only travels by callback',
      { request: { request_id: 'req_1', code: 200, response: { details: { duration: 61.2 } } } },
      { id: 'req_1', status: 'running', progress: 0 },
    ],
    [
      'a failed request',
      { request: { request_id: 'req_1', code: 400, response: { err_msg: 'corrupt or unsupported data' } } },
      {
        id: 'req_1',
        status: 'failed',
        progress: 0,
        error: { code: 'provider_failed', message: 'corrupt or unsupported data' },
      },
    ],
    [
      'a record that carries the transcript',
      { request: { request_id: 'req_1', code: 200, response: { metadata: {}, results: { channels: [] } } } },
      {
        id: 'req_1',
        status: 'succeeded',
        progress: 100,
        output: { metadata: {}, results: { channels: [] } },
      },
    ],
  ])('reads %s from the project request record', async (_, record, expected) => {
    fake.behaviour = answer(200, record);

    await expect(deepgram(config({ projectId: 'proj_1' })).status('req_1')).resolves.toEqual(expected);

    expect(fake.seen).toEqual([
      expect.objectContaining({
        method: 'GET',
        url: '/v1/projects/proj_1/requests/req_1',
        headers: expect.objectContaining({ authorization: 'Token dg_test' }),
      }),
    ]);
  });

  it.each([
    ['a 500', answer(500, {})],
    ['a 404', answer(404, { err_msg: 'not found' })],
    ['a reset', reset],
    ['a timeout', silence],
    ['no record', answer(200, {})],
  ])('reports %s as unavailable', async (_, behaviour) => {
    fake.behaviour = behaviour;
    const provider = deepgram(config({ projectId: 'proj_1', readTimeoutMs: FAULT_TIMEOUT_MS }));

    await expect(provider.status('req_1')).rejects.toMatchObject({ name: 'ProviderUnavailable' });
  });
});

describe('deepgram cancel', () => {
  it('cannot cancel, so the job keeps its slot until the callback comes', async () => {
    await expect(deepgram(config()).cancel('req_1')).rejects.toMatchObject({
      name: 'ProviderUnavailable',
      message: 'Deepgram cannot cancel a request',
    });
    expect(fake.seen).toHaveLength(0);
  });
});

describe('deepgram callbacks', () => {
  const provider = deepgram({ ...config(), baseUrl: 'http://127.0.0.1:1' });
  const callbackQuery = (url: string) => Object.fromEntries(new URL(url).searchParams);
  const received = (
    body: string,
    query = callbackQuery(signedCallbackUrl({ webhookSecret: SECRET }, WEBHOOK_URL)!),
  ) => ({ headers: { 'content-type': 'application/json' }, query, body }) satisfies ProviderWebhookRequest;
  const transcript = {
    metadata: { request_id: 'req_1', duration: 61.2, channels: 1 },
    results: { channels: [{ alternatives: [{ transcript: 'In the beginning', confidence: 0.98 }] }] },
  };
  const years = 10 * 365 * 24 * 3600;

  it('signs the callback over the job and submission and replaces any sig already there', () => {
    const url = signedCallbackUrl({ webhookSecret: SECRET }, `${WEBHOOK_URL}&sig=forged`)!;

    expect(callbackQuery(url)).toEqual({ jobId: 'job_x', submission: '1', sig: expectedSig });
  });

  it('accepts a callback whose sig matches, however late it comes', () => {
    expect(provider.verify(received('{}'), 0)).toBe('valid');
    expect(provider.verify(received('{}'), Math.floor(Date.now() / 1000) + years)).toBe('valid');
  });

  it('refuses a callback for another job or submission than the one signed', () => {
    const query = received('{}').query;

    expect(provider.verify(received('{}', { ...query, jobId: 'job_y' }), 0)).toBe('mismatch');
    expect(provider.verify(received('{}', { ...query, submission: '2' }), 0)).toBe('mismatch');
  });

  it('refuses a callback signed with another secret', () => {
    const query = callbackQuery(
      signedCallbackUrl({ webhookSecret: 'another-secret-of-enough-length' }, WEBHOOK_URL)!,
    );

    expect(provider.verify(received('{}', query), 0)).toBe('mismatch');
    expect(provider.verify(received('{}', { ...query, sig: 'not-hex' }), 0)).toBe('mismatch');
  });

  it('calls a callback without sig or job malformed', () => {
    const { sig: _, ...unsigned } = received('{}').query;
    const { jobId: __, ...jobless } = received('{}').query;

    expect(provider.verify(received('{}', unsigned), 0)).toBe('malformed');
    expect(provider.verify(received('{}', jobless), 0)).toBe('malformed');
  });

  it('reads a transcript as success, with the whole response as output', () => {
    expect(provider.parse(received(JSON.stringify(transcript)))).toEqual([
      { type: 'succeeded', id: 'req_1', output: transcript },
    ]);
  });

  it.each([
    [
      {
        err_code: 'Bad Request',
        err_msg: 'failed to process audio: corrupt or unsupported data',
        request_id: 'req_1',
      },
      'failed to process audio: corrupt or unsupported data',
    ],
    [
      {
        category: 'INVALID_AUDIO',
        message: 'Could not fetch the audio.',
        details: 'HTTP 404',
        request_id: 'req_1',
      },
      'Could not fetch the audio.: HTTP 404',
    ],
  ])('reads an error body %j as failure', (body, message) => {
    expect(provider.parse(received(JSON.stringify(body)))).toEqual([
      { type: 'failed', id: 'req_1', error: { code: 'provider_failed', message } },
    ]);
  });

  it.each([
    ['not JSON', '{"metadata":'],
    ['a transcript without a request id', JSON.stringify({ metadata: {}, results: {} })],
    ['neither a transcript nor an error', JSON.stringify({ request_id: 'req_1' })],
  ])('refuses %s with a ValidationError', (_, text) => {
    expect(() => provider.parse(received(text))).toThrow(ValidationError);
  });
});
