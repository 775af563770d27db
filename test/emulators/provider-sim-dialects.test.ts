import { createHash } from 'node:crypto';
import { Deepgram, DeepgramClient, DeepgramError, DeepgramTimeoutError } from '@deepgram/sdk';
import Replicate, { parseProgressFromLogs, validateWebhook } from 'replicate';
import { Webhook } from 'standardwebhooks';
import { DEEPGRAM_MODEL_UUID, SIMULATED_TRANSCRIPTION_FAILURE } from '../../local/provider-sim/deepgram';
import {
  DEFAULT_DEEPGRAM_API_KEY_ID,
  DEFAULT_DEEPGRAM_PROJECT_ID,
  DEFAULT_REPLICATE_WEBHOOK_SECRET,
} from '../../local/provider-sim/defaults';
import { SAMPLE_PNG_BASE64 } from '../../local/provider-sim/outputs';
import { SIMULATED_PREDICTION_ERROR } from '../../local/provider-sim/replicate';
import {
  DEFAULT_DEEPGRAM_REAL_TIME_FACTOR,
  type FaultMode,
  type Ledger,
  type ProviderName,
  type RunningSimulator,
  startSimulator,
} from '../../local/provider-sim/simulator';
import { simulatorCall } from '../e2e/support/simulator';
import { runSimCli } from './support/sim-cli';
import { thrown } from './support/thrown';
import { type InboxRequest, WebhookInbox, waitFor } from './support/webhook-inbox';

/**
 * The Replicate and Deepgram dialects of the simulated provider, driven by
 * each provider's official SDK with only its base URL changed. Jobs take
 * 600 ms at 20 Hz (twelve ticks of 50 ms); every wait polls with a deadline.
 */

jest.setTimeout(20_000);

const API_KEY = 'sim-api-key';
const JOB_MS = 600;
const PROGRESS_HZ = 20;
const TICKS = 12;
const TRANSCRIPT = 'Welcome to the long haul. Slow jobs finish exactly once. Thank you for waiting.';
const VERSION = '5c7d5dc6dd8bf75c1acaa8565735e7986bc5b66206b55cca93cb72c9bf15ccaa';

let simulator: RunningSimulator;
let inbox: WebhookInbox;
let sim: (path: string, body?: unknown) => Promise<any>;
let replicate: Replicate;
let deepgram: DeepgramClient;

beforeEach(async () => {
  inbox = await WebhookInbox.start();
  simulator = await startSimulator({
    jobMs: JOB_MS,
    progressHz: PROGRESS_HZ,
    idempotent: true,
    webhookSecret: 'generic-secret',
    apiKey: API_KEY,
  });
  sim = simulatorCall(simulator.url);
  replicate = new Replicate({ auth: API_KEY, baseUrl: `${simulator.url}/replicate/v1` });
  deepgram = new DeepgramClient({ apiKey: API_KEY, baseUrl: `${simulator.url}/deepgram` });
});

afterEach(async () => {
  await Promise.all([simulator.close(), inbox.close()]);
});

async function ledger(): Promise<Ledger> {
  return sim('/_sim/ledger');
}

async function charged(provider: ProviderName): Promise<string[]> {
  return ((await ledger()).byProvider?.[provider].submissions ?? []).map((entry) => entry.id);
}

async function injectFault(mode: FaultMode, provider?: ProviderName, count = 1): Promise<void> {
  const response = await fetch(`${simulator.url}/_sim/faults`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ mode, count, provider }),
  });
  expect(response.status).toBe(204);
}

/** Waits past twice the job time while `check` keeps holding, for faults whose point is that nothing happens. */
async function holdsFor(ms: number, check: () => Promise<boolean>): Promise<void> {
  const until = Date.now() + ms;
  await waitFor(
    `${ms} ms of an unchanged state`,
    async () => {
      expect(await check()).toBe(true);
      return Date.now() > until;
    },
    ms + 5000,
  );
}

describe('replicate dialect', () => {
  const webhookUrl = () => `${inbox.origin}/replicate-hooks`;
  const deliveriesFor = (id: string) =>
    inbox.at('/replicate-hooks').filter((request) => request.json.id === id);
  const completedFor = (id: string) =>
    deliveriesFor(id).find((request) => ['succeeded', 'failed', 'canceled'].includes(request.json.status));

  it('creates an official-model prediction, signs throttled webhooks, and serves an output that expires', async () => {
    await sim('/_sim/config', { provider: 'replicate', outputTtlMs: 1500 });

    const created = await replicate.predictions.create({
      model: 'black-forest-labs/flux-schnell',
      input: { prompt: 'a lighthouse at dusk' },
      webhook: webhookUrl(),
    });

    expect(created).toEqual({
      id: expect.stringMatching(/^[a-z2-7]{26}$/),
      model: 'black-forest-labs/flux-schnell',
      version: expect.stringMatching(/^[0-9a-f]{64}$/),
      input: { prompt: 'a lighthouse at dusk' },
      logs: '',
      output: null,
      data_removed: false,
      error: null,
      status: 'starting',
      created_at: expect.any(String),
      started_at: null,
      completed_at: null,
      urls: {
        get: `${simulator.url}/replicate/v1/predictions/${created.id}`,
        cancel: `${simulator.url}/replicate/v1/predictions/${created.id}/cancel`,
      },
      metrics: {},
      webhook: webhookUrl(),
      webhook_events_filter: ['start', 'output', 'logs', 'completed'],
    });

    const completed = await waitFor('the completed webhook', () => completedFor(created.id));
    const deliveries = deliveriesFor(created.id);
    const png = `${simulator.url}/replicate/files/${created.id}/out-0.png`;

    // start first, completed last; logs and output in between, at most one every 500 ms of a 600 ms job.
    expect(deliveries[0]?.json.status).toBe('starting');
    expect(deliveries.at(-1)).toBe(completed);
    const throttled = deliveries.slice(1, -1);
    expect(throttled.length).toBeGreaterThanOrEqual(1);
    expect(throttled.length).toBeLessThanOrEqual(2);
    expect(throttled.every((request) => request.json.status === 'processing')).toBe(true);
    expect(completed.json).toMatchObject({ status: 'succeeded', output: [png], error: null });
    expect(completed.json.metrics.predict_time).toBeGreaterThan(0);
    expect(parseProgressFromLogs(completed.json)).toEqual({ percentage: 1, current: TICKS, total: TICKS });
    expect(completed.json.logs.trimEnd().split('\n').at(-1)).toMatch(
      /^100%\|██████████\| 12\/12 \[00:0\d<00:00, +\d+\.\d\dit\/s\]$/,
    );
    const firstLogs = throttled[0]?.json;
    const progress = parseProgressFromLogs(firstLogs);
    expect(progress?.total).toBe(TICKS);
    expect(progress?.percentage).toBe(Math.round((100 * (progress?.current ?? 0)) / TICKS) / 100);

    // Every delivery verifies with both libraries; a changed byte does not.
    const verifier = new Webhook(DEFAULT_REPLICATE_WEBHOOK_SECRET);
    for (const request of deliveries) {
      const headers = webhookHeaders(request);
      expect(headers['webhook-id']).toMatch(/^msg_[0-9a-f]{32}$/);
      expect(verifier.verify(request.raw, headers)).toEqual(request.json);
      expect(
        await validateWebhook({
          id: headers['webhook-id'],
          timestamp: headers['webhook-timestamp'],
          signature: headers['webhook-signature'],
          body: request.raw,
          secret: DEFAULT_REPLICATE_WEBHOOK_SECRET,
        }),
      ).toBe(true);
    }
    const tampered = completed.raw.replace('"succeeded"', '"failed"');
    expect(() => verifier.verify(tampered, webhookHeaders(completed))).toThrow('No matching signature found');
    expect(
      await validateWebhook(
        { headers: webhookHeaders(completed), body: tampered } as never,
        DEFAULT_REPLICATE_WEBHOOK_SECRET,
      ),
    ).toBe(false);

    expect(await replicate.predictions.get(created.id)).toEqual(completed.json);
    const file = await fetch(png);
    expect(file.status).toBe(200);
    expect(file.headers.get('content-type')).toBe('image/png');
    expect(Buffer.from(await file.arrayBuffer()).toString('base64')).toBe(SAMPLE_PNG_BASE64);

    await waitFor('the output to expire', async () => (await fetch(png)).status === 404);
    expect(await replicate.predictions.get(created.id)).toMatchObject({
      status: 'succeeded',
      data_removed: true,
      input: {},
      output: null,
    });
  });

  it('sends only the filtered events', async () => {
    const created = await replicate.predictions.create({
      model: 'acme/painter',
      input: { prompt: 'x' },
      webhook: webhookUrl(),
      webhook_events_filter: ['completed'],
    });
    await waitFor('the completed webhook', () => completedFor(created.id));
    expect(deliveriesFor(created.id).map((request) => request.json.status)).toEqual(['succeeded']);
  });

  it('creates by version, reports progress in its logs, and cancels', async () => {
    await sim('/_sim/config', { provider: 'replicate', jobMs: 10_000 });
    const created = await replicate.predictions.create({ version: VERSION, input: { prompt: 'slow' } });
    expect(created).toMatchObject({ version: VERSION, model: 'replicate-sim/unnamed', status: 'starting' });
    expect(created).not.toHaveProperty('webhook');

    const running = await waitFor('progress in the logs', async () => {
      const prediction = await replicate.predictions.get(created.id);
      return (parseProgressFromLogs(prediction)?.current ?? 0) >= 2 && prediction;
    });
    const progress = parseProgressFromLogs(running);
    expect(running.status).toBe('processing');
    expect(progress?.total).toBe(200);
    expect(progress?.percentage).toBe(Math.round((100 * (progress?.current ?? 0)) / 200) / 100);

    const canceled = await replicate.predictions.cancel(created.id);
    expect(canceled).toMatchObject({ id: created.id, status: 'canceled', output: null });
    expect(canceled.completed_at).toEqual(expect.any(String));
    expect((await replicate.predictions.get(created.id)).status).toBe('canceled');
    const account = (await ledger()).byProvider?.replicate;
    expect(account?.running).toBe(0);
    // Still a charge, as Replicate bills a canceled prediction for the time it ran: until the cancel.
    const charge = account?.submissions.find((entry) => entry.id === created.id);
    expect(charge).toMatchObject({ outcome: 'canceled', finishedAt: canceled.completed_at });
    expect(Date.parse(charge?.finishedAt ?? '') - Date.parse(charge?.acceptedAt ?? '')).toBeLessThan(10_000);
    // A second cancel ends nothing more, and bills nothing more.
    expect(await replicate.predictions.cancel(created.id)).toMatchObject({ status: 'canceled' });
    expect(
      (await ledger()).byProvider?.replicate.submissions.find((entry) => entry.id === created.id),
    ).toEqual(charge);

    const named = await replicate.predictions.create({
      version: `acme/upscaler:${VERSION}`,
      input: { prompt: 'y' },
    });
    expect(named).toMatchObject({ model: 'acme/upscaler', version: VERSION });
  });

  it('charges every create, ignoring Idempotency-Key, and refuses to be made idempotent', async () => {
    const create = () =>
      fetch(`${simulator.url}/replicate/v1/models/acme/painter/predictions`, {
        method: 'POST',
        headers: {
          authorization: `Bearer ${API_KEY}`,
          'content-type': 'application/json',
          'idempotency-key': 'k1',
        },
        body: JSON.stringify({ input: { prompt: 'same' } }),
      });
    const first = (await (await create()).json()) as { id: string };
    const second = (await (await create()).json()) as { id: string };
    expect(first.id).not.toBe(second.id);
    // Either may already have finished: only the charges are asserted here.
    expect((await ledger()).byProvider?.replicate.submissions).toMatchObject([
      { id: first.id, idempotencyKey: null, acceptedAt: expect.any(String) },
      { id: second.id, idempotencyKey: null, acceptedAt: expect.any(String) },
    ]);

    const refused = await fetch(`${simulator.url}/_sim/config`, {
      method: 'POST',
      body: JSON.stringify({ provider: 'replicate', idempotent: true }),
    });
    expect(refused.status).toBe(400);
  });

  it('answers auth, validation and lookup errors as problem details, without charging or consuming a fault', async () => {
    await injectFault('reject', 'replicate');
    const anonymous = await thrown(
      new Replicate({ auth: 'wrong', baseUrl: `${simulator.url}/replicate/v1` }).predictions.create({
        model: 'acme/painter',
        input: { prompt: 'x' },
      }),
    );
    expect(anonymous.name).toBe('ApiError');
    expect(anonymous.response.status).toBe(401);
    expect(anonymous.message).toContain(
      '{"title":"Unauthenticated","detail":"You did not pass a valid authentication token","status":401}',
    );

    const invalid = await thrown(replicate.predictions.create({ model: 'acme/painter' } as never));
    expect(invalid.response.status).toBe(422);
    expect(invalid.message).toContain('"title":"Input validation failed"');
    const noVersion = await fetch(`${simulator.url}/replicate/v1/predictions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${API_KEY}` },
      body: JSON.stringify({ input: { prompt: 'x' } }),
    });
    expect(await noVersion.json()).toEqual({
      title: 'Input validation failed',
      detail: 'version: Field required',
      status: 422,
    });

    const unknown = await thrown(replicate.predictions.get('nosuchprediction'));
    expect(unknown.response.status).toBe(404);
    expect(await charged('replicate')).toEqual([]);

    // The reject fault is still armed for the first valid create.
    expect(
      (await thrown(replicate.predictions.create({ model: 'a/b', input: { prompt: 'x' } }))).response.status,
    ).toBe(422);
  });

  describe('faults, as the SDK sees them', () => {
    const create = (options: { webhook?: string; signal?: AbortSignal } = {}) =>
      replicate.predictions.create({ model: 'acme/painter', input: { prompt: 'x' }, ...options });

    it('reject: ApiError 422, nothing charged', async () => {
      await injectFault('reject', 'replicate');
      const error = await thrown(create());
      expect(error.response.status).toBe(422);
      expect(error.message).toContain(
        '{"title":"Input validation failed","detail":"The model rejected this input (simulated fault).","status":422}',
      );
      expect(await charged('replicate')).toEqual([]);
    });

    it('unavailable: ApiError 503, not retried by the SDK for a create, nothing charged', async () => {
      await injectFault('unavailable', 'replicate');
      const error = await thrown(create());
      expect(error.response.status).toBe(503);
      expect(error.response.headers.get('retry-after')).toBe('1');
      expect(await charged('replicate')).toEqual([]);
      expect((await create()).status).toBe('starting');
      expect(await charged('replicate')).toHaveLength(1);
    });

    it('accept-then-drop: the SDK silently retries the reset create, so one call is charged twice', async () => {
      await injectFault('accept-then-drop', 'replicate');
      const prediction = await create();
      const ids = await charged('replicate');
      expect(ids).toHaveLength(2);
      expect(ids[1]).toBe(prediction.id);
      // The dropped one runs too: it was accepted.
      await waitFor('both predictions to succeed', async () => {
        const states = await Promise.all(ids.map(async (id) => (await replicate.predictions.get(id)).status));
        return states.every((status) => status === 'succeeded');
      });
    });

    it('timeout: the caller gives up with a TimeoutError, the prediction was charged and runs', async () => {
      await injectFault('timeout', 'replicate');
      const error = await thrown(create({ signal: AbortSignal.timeout(300) }));
      expect(error.name).toBe('TimeoutError');
      const [id] = await charged('replicate');
      await waitFor('the held prediction to succeed', async () => {
        return (await replicate.predictions.get(id ?? '')).status === 'succeeded';
      });
    });

    it('lose-webhooks: the prediction succeeds with no webhook at all', async () => {
      await injectFault('lose-webhooks', 'replicate');
      const prediction = await create({ webhook: webhookUrl() });
      await waitFor(
        'success',
        async () => (await replicate.predictions.get(prediction.id)).status === 'succeeded',
      );
      const control = await create({ webhook: webhookUrl() });
      await waitFor('the control prediction', () => completedFor(control.id));
      expect(deliveriesFor(prediction.id)).toEqual([]);
    });

    it('fail-job: status failed with an error string, in the completed webhook too', async () => {
      await injectFault('fail-job', 'replicate');
      const prediction = await create({ webhook: webhookUrl() });
      const completed = await waitFor('the completed webhook', () => completedFor(prediction.id));
      expect(completed.json).toMatchObject({
        status: 'failed',
        error: SIMULATED_PREDICTION_ERROR,
        output: null,
      });
      expect(await replicate.predictions.get(prediction.id)).toMatchObject({
        status: 'failed',
        error: SIMULATED_PREDICTION_ERROR,
      });
      expect(parseProgressFromLogs(completed.json)?.current).toBe(TICKS / 2);
    });

    it('stall: stays processing half way and never completes', async () => {
      await injectFault('stall', 'replicate');
      const prediction = await create({ webhook: webhookUrl() });
      await holdsFor(2 * JOB_MS, async () => {
        const current = await replicate.predictions.get(prediction.id);
        return ['starting', 'processing'].includes(current.status);
      });
      const current = await replicate.predictions.get(prediction.id);
      expect(current.status).toBe('processing');
      expect(parseProgressFromLogs(current)).toEqual({ percentage: 0.5, current: TICKS / 2, total: TICKS });
      expect(completedFor(prediction.id)).toBeUndefined();
      expect((await ledger()).byProvider?.replicate.running).toBe(1);
    });
  });
});

describe('deepgram dialect', () => {
  const callbackUrl = (path = '/deepgram-callback') =>
    `http://listener:pa55@${inbox.origin.slice('http://'.length)}${path}`;
  const callbacksAt = (path = '/deepgram-callback') => inbox.at(path);
  const lookup = (requestId: string) =>
    deepgram.manage.v1.projects.requests.get(DEFAULT_DEEPGRAM_PROJECT_ID, requestId);
  const transcribe = (extra: Record<string, unknown> = {}, requestOptions: Record<string, unknown> = {}) =>
    deepgram.listen.v1.media.transcribeUrl(
      { url: 'https://example.com/haul.wav', callback: callbackUrl(), model: 'nova-3', ...extra } as never,
      requestOptions,
    );

  it('answers a callback request at once, then posts the full transcript with Basic auth, dg-token and extra', async () => {
    const accepted = await transcribe({
      language: 'fr',
      smart_format: true,
      utterances: true,
      extra: 'callback_secret:s3cret',
    });
    expect(accepted).toEqual({ request_id: expect.stringMatching(/^[0-9a-f-]{36}$/) });
    const requestId = (accepted as { request_id: string }).request_id;
    expect(await charged('deepgram')).toEqual([requestId]);

    const [callback] = await waitFor('the callback', () => callbacksAt().length > 0 && callbacksAt());
    expect(callback?.method).toBe('POST');
    expect(callback?.headers.authorization).toBe(`Basic ${Buffer.from('listener:pa55').toString('base64')}`);
    expect(callback?.headers['dg-token']).toBe(DEFAULT_DEEPGRAM_API_KEY_ID);
    const body = callback?.json;
    expect(body.metadata).toEqual({
      transaction_key: 'deprecated',
      request_id: requestId,
      sha256: expect.stringMatching(/^[0-9a-f]{64}$/),
      created: expect.any(String),
      duration: 8,
      channels: 1,
      models: [DEEPGRAM_MODEL_UUID],
      model_info: {
        [DEEPGRAM_MODEL_UUID]: { name: 'general-nova-3', version: '2025-01-01.0', arch: 'nova-3' },
      },
      extra: { callback_secret: 's3cret' },
    });
    const [alternative] = body.results.channels[0].alternatives;
    expect(alternative.transcript).toBe(TRANSCRIPT);
    expect(alternative.languages).toEqual(['fr']);
    expect(alternative.words).toHaveLength(14);
    expect(alternative.words.slice(0, 2)).toEqual([
      { word: 'welcome', start: 0, end: 0.5, confidence: 0.99, punctuated_word: 'Welcome' },
      { word: 'to', start: 0.5, end: 1, confidence: 0.99, punctuated_word: 'to' },
    ]);
    expect(alternative.words.at(-1)).toEqual({
      word: 'waiting',
      start: 7.438,
      end: 8,
      confidence: 0.99,
      punctuated_word: 'waiting.',
    });
    expect(alternative.paragraphs.paragraphs[0].sentences).toEqual([
      { text: 'Welcome to the long haul.', start: 0, end: 2.5 },
      { text: 'Slow jobs finish exactly once.', start: 2.5, end: 5.75 },
      { text: 'Thank you for waiting.', start: 5.75, end: 8 },
    ]);
    expect(
      body.results.utterances.map((utterance: { transcript: string; start: number }) => [
        utterance.start,
        utterance.transcript,
      ]),
    ).toEqual([
      [0, 'Welcome to the long haul.'],
      [2.5, 'Slow jobs finish exactly once.'],
      [5.75, 'Thank you for waiting.'],
    ]);

    const { request } = await lookup(requestId);
    expect(request).toEqual({
      request_id: requestId,
      project_uuid: DEFAULT_DEEPGRAM_PROJECT_ID,
      created: body.metadata.created,
      path: expect.stringMatching(/^\/v1\/listen\?/),
      api_key_id: DEFAULT_DEEPGRAM_API_KEY_ID,
      response: {
        details: {
          duration: 8,
          total_audio: 8,
          channels: 1,
          streams: 1,
          models: [DEEPGRAM_MODEL_UUID],
          method: 'async',
          tags: [],
          features: ['punctuate', 'paragraphs', 'utterances'],
          config: { language: 'fr', model: 'nova-3' },
        },
        code: 200,
        completed: expect.any(String),
      },
      code: 200,
      deployment: 'hosted',
      callback: `${inbox.origin}/deepgram-callback`,
    });
  });

  it('holds the answer until the transcript is ready when there is no callback, unpunctuated unless asked', async () => {
    const result = (await deepgram.listen.v1.media.transcribeUrl({
      url: 'https://example.com/a.wav',
    })) as any;
    expect(result.results.channels[0].alternatives[0].transcript).toBe(
      'welcome to the long haul slow jobs finish exactly once thank you for waiting',
    );
    expect(result.results.channels[0].alternatives[0].languages).toEqual(['en']);
    expect(result.results).not.toHaveProperty('utterances');
    expect(await charged('deepgram')).toEqual([result.metadata.request_id]);
  });

  it('PUTs the callback when callback_method is put, for audio sent as bytes, without credentials when the URL has none', async () => {
    const audio = Buffer.from('RIFF not really a wav');
    const query = new URLSearchParams({ callback: `${inbox.origin}/put-here`, callback_method: 'put' });
    const response = await fetch(`${simulator.url}/deepgram/v1/listen?${query}`, {
      method: 'POST',
      headers: { authorization: `Token ${API_KEY}`, 'content-type': 'audio/wav' },
      body: audio,
    });
    expect(response.status).toBe(200);
    const { request_id } = (await response.json()) as { request_id: string };
    const [callback] = await waitFor(
      'the callback',
      () => callbacksAt('/put-here').length > 0 && callbacksAt('/put-here'),
    );
    expect(callback?.method).toBe('PUT');
    expect(callback?.headers.authorization).toBeUndefined();
    expect(callback?.json.metadata).toMatchObject({
      request_id,
      sha256: createHash('sha256').update(audio).digest('hex'),
    });
    expect(callback?.json.metadata).not.toHaveProperty('extra');
  });

  it('refuses a wrong key in its own error format and does not know requests of other projects', async () => {
    const error = await thrown(
      new DeepgramClient({
        apiKey: 'wrong',
        baseUrl: `${simulator.url}/deepgram`,
      }).listen.v1.media.transcribeUrl({
        url: 'https://example.com/a.wav',
      }),
    );
    expect(error).toBeInstanceOf(DeepgramError);
    expect(error.statusCode).toBe(401);
    expect(error.body).toEqual({
      err_code: 'INVALID_AUTH',
      err_msg: 'Invalid credentials.',
      request_id: expect.any(String),
    });
    const other = await thrown(deepgram.manage.v1.projects.requests.get('another-project', 'whatever'));
    expect(other.statusCode).toBe(404);
    expect(await charged('deepgram')).toEqual([]);
  });

  describe('faults, as the SDK sees them', () => {
    it('reject: BadRequestError 400, nothing charged', async () => {
      await injectFault('reject', 'deepgram');
      const error = await thrown(transcribe());
      expect(error).toBeInstanceOf(Deepgram.BadRequestError);
      expect(error.statusCode).toBe(400);
      expect(error.body).toMatchObject({ err_code: 'Bad Request' });
      expect(await charged('deepgram')).toEqual([]);
    });

    it('unavailable: the SDK retries after Retry-After and the retry is charged once; without retries it throws 503', async () => {
      await injectFault('unavailable', 'deepgram');
      const accepted = (await transcribe()) as { request_id: string };
      expect(await charged('deepgram')).toEqual([accepted.request_id]);

      await injectFault('unavailable', 'deepgram');
      const error = await thrown(transcribe({}, { maxRetries: 0 }));
      expect(error).toBeInstanceOf(DeepgramError);
      expect(error.statusCode).toBe(503);
      expect(error.body).toMatchObject({ err_code: 'SERVICE_UNAVAILABLE' });
      expect(await charged('deepgram')).toEqual([accepted.request_id]);
    });

    it('accept-then-drop: the SDK throws without retrying, yet the request was charged and its callback comes', async () => {
      await injectFault('accept-then-drop', 'deepgram');
      // 5.13.0 leaves its request timer running when fetch rejects; a short one keeps jest from waiting on it.
      const error = await thrown(transcribe({}, { timeoutInSeconds: 1 }));
      expect(error).toBeInstanceOf(DeepgramError);
      expect(error.statusCode).toBeUndefined();
      const ids = await charged('deepgram');
      expect(ids).toHaveLength(1);
      const [callback] = await waitFor('the callback', () => callbacksAt().length > 0 && callbacksAt());
      expect(callback?.json.metadata.request_id).toBe(ids[0]);
    });

    it('timeout: a DeepgramError caused by "timeout" (5.13.0 does not raise its DeepgramTimeoutError on Node fetch), charged, the callback still comes', async () => {
      await injectFault('timeout', 'deepgram');
      const error = await thrown(transcribe({}, { timeoutInSeconds: 0.3 }));
      expect(error).toBeInstanceOf(DeepgramError);
      expect(error).not.toBeInstanceOf(DeepgramTimeoutError);
      expect(error.cause).toBe('timeout');
      expect(error.statusCode).toBeUndefined();
      const ids = await charged('deepgram');
      expect(ids).toHaveLength(1);
      const [callback] = await waitFor('the callback', () => callbacksAt().length > 0 && callbacksAt());
      expect(callback?.json.metadata.request_id).toBe(ids[0]);
    });

    it('lose-webhooks: no callback, but the request lookup shows it finished', async () => {
      await injectFault('lose-webhooks', 'deepgram');
      const { request_id } = (await transcribe()) as { request_id: string };
      const finished = await waitFor('the lookup to show completion', async () => {
        const { request } = await lookup(request_id);
        return request?.code === 200 && request;
      });
      expect(finished.response).toMatchObject({ code: 200 });
      const control = (await transcribe({}, {})) as { request_id: string };
      await waitFor('the control callback', () =>
        callbacksAt().some((request) => request.json.metadata?.request_id === control.request_id),
      );
      expect(callbacksAt()).toHaveLength(1);
    });

    it('fail-job: the callback carries an error body, and the lookup a 500', async () => {
      await injectFault('fail-job', 'deepgram');
      const { request_id } = (await transcribe()) as { request_id: string };
      const [callback] = await waitFor('the callback', () => callbacksAt().length > 0 && callbacksAt());
      expect(callback?.json).toEqual({ ...SIMULATED_TRANSCRIPTION_FAILURE, request_id });
      expect(callback?.headers['dg-token']).toBe(DEFAULT_DEEPGRAM_API_KEY_ID);
      const { request } = await lookup(request_id);
      expect(request).toMatchObject({
        code: 500,
        response: {
          ...SIMULATED_TRANSCRIPTION_FAILURE,
          request_id,
          code: 500,
          completed: expect.any(String),
        },
      });
    });

    it('stall: no callback ever, the lookup shows no response, the job keeps running', async () => {
      await injectFault('stall', 'deepgram');
      const { request_id } = (await transcribe()) as { request_id: string };
      await holdsFor(2 * JOB_MS, async () => callbacksAt().length === 0);
      const { request } = await lookup(request_id);
      expect(request).not.toHaveProperty('code');
      expect(request).not.toHaveProperty('response');
      expect((await ledger()).byProvider?.deepgram.running).toBe(1);
    });
  });
});

describe('dialects side by side', () => {
  const generic = () =>
    fetch(`${simulator.url}/v1/generations`, {
      method: 'POST',
      headers: { authorization: `Bearer ${API_KEY}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        type: 'image.generate',
        input: { prompt: 'p' },
        webhookUrl: `${inbox.origin}/generic`,
      }),
    });
  const predict = () => replicate.predictions.create({ model: 'acme/painter', input: { prompt: 'p' } });
  const listen = () =>
    deepgram.listen.v1.media.transcribeUrl({
      url: 'https://example.com/a.wav',
      callback: `${inbox.origin}/dg`,
    });

  it('keeps a fault aimed at one dialect for that dialect, while an untargeted one hits whoever comes first', async () => {
    await injectFault('reject', 'deepgram');
    expect((await generic()).status).toBe(201);
    expect((await predict()).status).toBe('starting');
    expect(await thrown(listen())).toBeInstanceOf(Deepgram.BadRequestError);

    await injectFault('unavailable');
    expect((await thrown(predict())).response.status).toBe(503);
    expect((await generic()).status).toBe(201);
  });

  it('refuses the status reads and cancels of every dialect during an outage, each with 503 and Retry-After, and answers them after', async () => {
    const gen = ((await (await generic()).json()) as { id: string }).id;
    const prediction = (await predict()).id;
    const { request_id } = (await listen()) as { request_id: string };
    const auth = (scheme: string) => ({ authorization: `${scheme} ${API_KEY}` });
    const reads = () => [
      fetch(`${simulator.url}/v1/generations/${gen}`, { headers: auth('Bearer') }),
      fetch(`${simulator.url}/replicate/v1/predictions/${prediction}`, { headers: auth('Bearer') }),
      fetch(`${simulator.url}/replicate/v1/predictions/${prediction}/cancel`, {
        method: 'POST',
        headers: auth('Bearer'),
      }),
      fetch(`${simulator.url}/deepgram/v1/projects/${DEFAULT_DEEPGRAM_PROJECT_ID}/requests/${request_id}`, {
        headers: auth('Token'),
      }),
      fetch(`${simulator.url}/v1/generations/${gen}/cancel`, { method: 'POST', headers: auth('Bearer') }),
    ];
    const OUTAGE_MS = 1500;
    const downSince = Date.now();
    await sim('/_sim/faults', { mode: 'outage', seconds: OUTAGE_MS / 1000 });
    const during = await Promise.all(reads());
    expect(Date.now() - downSince).toBeLessThan(OUTAGE_MS);
    expect(during.map((response) => [response.status, response.headers.get('retry-after')])).toEqual(
      Array(5).fill([503, '1']),
    );
    await waitFor(
      'the outage to end',
      async () => (await fetch(`${simulator.url}/v1/generations/${gen}`, { headers: auth('Bearer') })).ok,
    );
    expect(Date.now() - downSince).toBeGreaterThanOrEqual(OUTAGE_MS);
    expect((await Promise.all(reads())).map((response) => response.status)).toEqual([
      200, 200, 200, 200, 200,
    ]);
  });

  it('counts every dialect in the ledger and each in byProvider', async () => {
    const empty = await ledger();
    expect(empty).toEqual({ submissions: [], maxConcurrent: 0, running: 0 });

    const gen = ((await (await generic()).json()) as { id: string }).id;
    const prediction = (await predict()).id;
    const { request_id } = (await listen()) as { request_id: string };

    const all = await ledger();
    expect(all.submissions.map((entry) => entry.id)).toEqual([gen, prediction, request_id]);
    expect(all.running).toBe(3);
    expect(all.maxConcurrent).toBe(3);
    const entry = (id: string) => ({ id, idempotencyKey: null, acceptedAt: expect.any(String) });
    expect(all.byProvider).toEqual({
      'longhaul-http': { submissions: [entry(gen)], maxConcurrent: 1, running: 1 },
      replicate: { submissions: [entry(prediction)], maxConcurrent: 1, running: 1 },
      deepgram: { submissions: [entry(request_id)], maxConcurrent: 1, running: 1 },
      bedrock: { submissions: [], maxConcurrent: 0, running: 0 },
    });
    await waitFor('all three to finish', async () => (await ledger()).running === 0);
    expect((await ledger()).maxConcurrent).toBe(3);
  });

  it('configures one dialect or all, each showing its own settings, and resets them all', async () => {
    expect(await sim('/_sim/config', { provider: 'replicate', jobMs: 5000, outputTtlMs: 10 })).toEqual({
      jobMs: 5000,
      progressHz: PROGRESS_HZ,
      outputTtlMs: 10,
    });
    expect(await sim('/_sim/config?provider=deepgram')).toEqual({
      jobMs: JOB_MS,
      progressHz: PROGRESS_HZ,
      realTimeFactor: DEFAULT_DEEPGRAM_REAL_TIME_FACTOR,
    });
    expect(await sim('/_sim/config')).toEqual({ jobMs: JOB_MS, progressHz: PROGRESS_HZ, idempotent: true });

    expect(await sim('/_sim/config', { progressHz: 5 })).toEqual({
      jobMs: JOB_MS,
      progressHz: 5,
      idempotent: true,
    });
    expect(await sim('/_sim/config?provider=replicate')).toEqual({
      jobMs: 5000,
      progressHz: 5,
      outputTtlMs: 10,
    });

    await sim('/_sim/reset', {});
    expect(await sim('/_sim/config?provider=replicate')).toEqual({
      jobMs: JOB_MS,
      progressHz: PROGRESS_HZ,
      outputTtlMs: 3_600_000,
    });
  });
});

describe('npm run sim with dialect settings', () => {
  const secret = `whsec_${Buffer.from('another 32-byte key for the test').toString('base64')}`;

  it('signs Replicate webhooks with SIM_REPLICATE_WEBHOOK_SECRET and takes the other dialect settings from the environment', async () => {
    const cli = runSimCli({
      SIM_PORT: '0',
      SIM_JOB_MS: '200',
      SIM_OUTPUT_TTL_MS: '1234',
      SIM_REPLICATE_WEBHOOK_SECRET: secret,
      SIM_DEEPGRAM_API_KEY_ID: 'key-id-from-env',
      SIM_DEEPGRAM_PROJECT_ID: 'project-from-env',
      SIM_DEEPGRAM_REAL_TIME_FACTOR: '0.5',
    });
    try {
      const line = await waitFor(
        'the ready line',
        () => cli.output.stdout.includes('\n') && cli.output.stdout,
        10_000,
      );
      const url = /ready at (http:\/\/127\.0\.0\.1:\d+)/.exec(line)?.[1] ?? '';
      expect(await simulatorCall(url)('/_sim/config?provider=replicate')).toEqual({
        jobMs: 200,
        progressHz: 10,
        outputTtlMs: 1234,
      });
      expect(await simulatorCall(url)('/_sim/config?provider=deepgram')).toEqual({
        jobMs: 200,
        progressHz: 10,
        realTimeFactor: 0.5,
      });

      const client = new Replicate({ auth: 'unused', baseUrl: `${url}/replicate/v1` });
      const prediction = await client.predictions.create({
        model: 'acme/painter',
        input: { prompt: 'x' },
        webhook: `${inbox.origin}/cli`,
        webhook_events_filter: ['completed'],
      });
      const [completed] = await waitFor(
        'the completed webhook',
        () => inbox.at('/cli').length > 0 && inbox.at('/cli'),
      );
      expect(completed?.json.id).toBe(prediction.id);
      expect(
        new Webhook(secret).verify(completed?.raw ?? '', webhookHeaders(completed as InboxRequest)),
      ).toEqual(completed?.json);
      expect(() =>
        new Webhook(DEFAULT_REPLICATE_WEBHOOK_SECRET).verify(
          completed?.raw ?? '',
          webhookHeaders(completed as InboxRequest),
        ),
      ).toThrow('No matching signature found');

      const listener = new DeepgramClient({ apiKey: 'unused', baseUrl: `${url}/deepgram` });
      const { request_id } = (await listener.listen.v1.media.transcribeUrl({
        url: 'https://example.com/a.wav',
        callback: `${inbox.origin}/cli-dg`,
      })) as { request_id: string };
      const [callback] = await waitFor(
        'the callback',
        () => inbox.at('/cli-dg').length > 0 && inbox.at('/cli-dg'),
      );
      expect(callback?.headers['dg-token']).toBe('key-id-from-env');
      const { request } = await listener.manage.v1.projects.requests.get('project-from-env', request_id);
      expect(request).toMatchObject({
        request_id,
        project_uuid: 'project-from-env',
        api_key_id: 'key-id-from-env',
      });

      cli.child.kill('SIGTERM');
      expect(await cli.exited).toBe(0);
    } finally {
      if (cli.child.exitCode === null) cli.child.kill('SIGKILL');
    }
  });

  it('exits 1 on a Replicate secret that is not whsec_ base64, without repeating it', async () => {
    const cli = runSimCli({
      SIM_PORT: '0',
      SIM_REPLICATE_WEBHOOK_SECRET: 'not-a-secret',
      SIM_OUTPUT_TTL_MS: 'soon',
    });

    expect(await cli.exited).toBe(1);
    expect(cli.output.stdout).toBe('');
    expect(cli.output.stderr).toContain('SIM_REPLICATE_WEBHOOK_SECRET: must be whsec_ followed by base64\n');
    expect(cli.output.stderr).not.toContain('not-a-secret');
    expect(cli.output.stderr).toContain('SIM_OUTPUT_TTL_MS: must be a whole number (got "soon")');
  });
});

function webhookHeaders(request: InboxRequest): {
  'webhook-id': string;
  'webhook-timestamp': string;
  'webhook-signature': string;
} {
  const header = (name: string) => String(request.headers[name] ?? '');
  return {
    'webhook-id': header('webhook-id'),
    'webhook-timestamp': header('webhook-timestamp'),
    'webhook-signature': header('webhook-signature'),
  };
}
