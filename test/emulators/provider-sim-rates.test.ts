import {
  BedrockRuntimeClient,
  InvokeModelCommand,
  ThrottlingException,
} from '@aws-sdk/client-bedrock-runtime';
import { DeepgramClient, DeepgramError } from '@deepgram/sdk';
import Replicate from 'replicate';
import { RateLimiter, REPLICATE_LOW_CREDIT_LIMITS } from '../../local/provider-sim/rates';
import {
  type Ledger,
  type ProviderName,
  type RunningSimulator,
  startSimulator,
} from '../../local/provider-sim/simulator';
import { simulatorCall } from '../e2e/support/simulator';
import { thrown } from './support/thrown';
import { waitFor } from './support/webhook-inbox';

/**
 * The simulated providers' rate limits over real HTTP, through each
 * provider's official SDK where it has one: a token bucket per dialect (per
 * model for Bedrock) that refuses a submission past it with the provider's
 * own 429, charges nothing for it, and counts it in the ledger. Buckets here
 * refill within a second or two; every wait polls with a deadline.
 */

jest.setTimeout(20_000);

const API_KEY = 'sim-api-key';
const TITAN = 'amazon.titan-embed-text-v2:0';
const COHERE = 'cohere.embed-multilingual-v3';

let simulator: RunningSimulator;
let sim: (path: string, body?: unknown) => Promise<any>;

beforeEach(async () => {
  simulator = await startSimulator({
    jobMs: 200,
    progressHz: 10,
    idempotent: true,
    webhookSecret: 'generic-secret',
    apiKey: API_KEY,
    bedrockJobMs: 20,
  });
  sim = simulatorCall(simulator.url);
});

afterEach(() => simulator.close());

const ledger = (): Promise<Ledger> => sim('/_sim/ledger');
const charged = async (provider: ProviderName) =>
  ((await ledger()).byProvider?.[provider]?.submissions ?? []).length;

async function configure(body: Record<string, unknown>): Promise<Response> {
  return fetch(`${simulator.url}/_sim/config`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
}

const generate = () =>
  fetch(`${simulator.url}/v1/generations`, {
    method: 'POST',
    headers: { authorization: `Bearer ${API_KEY}`, 'content-type': 'application/json' },
    body: JSON.stringify({
      type: 'image.generate',
      input: { prompt: 'a lighthouse' },
      webhookUrl: 'http://127.0.0.1:9/hooks',
    }),
  });

describe('the token buckets, on a clock the test moves', () => {
  let now = 0;
  const limiter = new RateLimiter(() => now);
  beforeEach(() => {
    now = 1_000_000;
    limiter.clear();
  });

  it('lets a burst through, then one token each 60/N s, and takes nothing from a refused submission', () => {
    const limits = [{ requestsPerMinute: 6, burst: 2 }];
    expect([limiter.admit('p', limits), limiter.admit('p', limits)]).toEqual([0, 0]);
    expect(limiter.admit('p', limits)).toBe(10_000);
    now += 4_000;
    // Refused again: the refusal took nothing, so the wait is what is left of the same ten seconds.
    expect(limiter.admit('p', limits)).toBe(6_000);
    now += 6_000;
    expect(limiter.admit('p', limits)).toBe(0);
    expect(limiter.admit('p', limits)).toBe(10_000);
    // A long pause refills no more than the burst.
    now += 600_000;
    expect([0, 1, 2].map(() => limiter.admit('p', limits))).toEqual([0, 0, 10_000]);
  });

  it('keeps scopes apart, starts a changed limit full, and waits for the slowest of several buckets', () => {
    const one = [{ requestsPerMinute: 60, burst: 1 }];
    expect([limiter.admit('a', one), limiter.admit('b', one), limiter.admit('a', one)]).toEqual([
      0, 0, 1_000,
    ]);
    expect(limiter.admit('a', [{ requestsPerMinute: 60, burst: 2 }])).toBe(0);

    const low = REPLICATE_LOW_CREDIT_LIMITS;
    const admitted: number[] = [];
    for (let second = 0; second < 60; second += 1) {
      if (limiter.admit('replicate', low) === 0) admitted.push(second);
      now += 1_000;
    }
    // One a second for six seconds, then one each ten seconds as the six-a-minute bucket refills.
    expect(admitted).toEqual([0, 1, 2, 3, 4, 5, 10, 20, 30, 40, 50]);
  });
});

describe('the generic API', () => {
  it('accepts a burst, then answers 429 with Retry-After and a problem, charges nothing, counts it, and refills', async () => {
    // 120 a minute is one token every 500 ms; a burst of 3 lets three through at once.
    const configuredAt = Date.now();
    const configured = await configure({ provider: 'longhaul-http', requestsPerMinute: 120, burst: 3 });
    expect(configured.status).toBe(200);
    expect(await configured.json()).toEqual({
      jobMs: 200,
      progressHz: 10,
      idempotent: true,
      requestsPerMinute: 120,
      burst: 3,
    });

    const burst = await Promise.all([generate(), generate(), generate()]);
    expect(burst.map((response) => response.status)).toEqual([201, 201, 201]);

    const refused = await generate();
    expect(refused.status).toBe(429);
    expect(refused.headers.get('retry-after')).toBe('1');
    expect(refused.headers.get('content-type')).toBe('application/problem+json');
    expect(await refused.json()).toEqual({
      type: 'about:blank',
      title: 'Too Many Requests',
      status: 429,
      detail: 'Rate limit of 120 submissions a minute (burst 3) exceeded; try again in 1 s.',
      error: {
        code: 'rate_limited',
        message: 'Rate limit of 120 submissions a minute (burst 3) exceeded; try again in 1 s.',
      },
    });
    const after = await ledger();
    expect(after.submissions).toHaveLength(3);
    expect(after.throttled).toBe(1);
    expect(after.byProvider?.['longhaul-http']).toMatchObject({ throttled: 1 });
    expect(after.byProvider?.['longhaul-http'].submissions).toHaveLength(3);
    expect(after.byProvider?.replicate.throttled).toBeUndefined();

    const refill = await waitFor('a token to come back', async () => {
      const response = await generate();
      return response.status === 201 ? Date.now() : undefined;
    });
    // The bucket was full at configuration; its fourth token cannot come sooner than 500 ms after.
    expect(refill - configuredAt).toBeGreaterThanOrEqual(500);
    expect(await charged('longhaul-http')).toBe(4);
  });

  it('takes the limit off with requestsPerMinute null, and reset forgets limits and counts', async () => {
    await configure({ requestsPerMinute: 60, burst: 1 });
    expect((await generate()).status).toBe(201);
    expect((await generate()).status).toBe(429);

    const lifted = await configure({ requestsPerMinute: null });
    expect(await lifted.json()).toEqual({ jobMs: 200, progressHz: 10, idempotent: true });
    const statuses = await Promise.all(Array.from({ length: 5 }, () => generate()));
    expect(statuses.map((response) => response.status)).toEqual([201, 201, 201, 201, 201]);
    expect((await ledger()).throttled).toBe(1);

    await configure({ requestsPerMinute: 60, burst: 1 });
    await fetch(`${simulator.url}/_sim/reset`, { method: 'POST' });
    expect(await ledger()).toEqual({ submissions: [], maxConcurrent: 0, running: 0 });
    expect(await sim('/_sim/config')).toEqual({ jobMs: 200, progressHz: 10, idempotent: true });
    expect((await generate()).status).toBe(201);
    expect((await generate()).status).toBe(201);
  });

  it('refuses a limit it cannot keep: zero, a burst without a rate, lowCredit outside Replicate', async () => {
    const refusal = async (body: Record<string, unknown>) => {
      const response = await configure(body);
      return [response.status, ((await response.json()) as { error: { message: string } }).error.message];
    };
    expect(await refusal({ requestsPerMinute: 0 })).toEqual([
      400,
      'requestsPerMinute: Too small: expected number to be >0',
    ]);
    expect(await refusal({ requestsPerMinute: 60, burst: 0 })).toEqual([
      400,
      'burst: Too small: expected number to be >=1',
    ]);
    expect(await refusal({ provider: 'deepgram', burst: 5 })).toEqual([
      400,
      'burst: burst needs requestsPerMinute in the same request',
    ]);
    expect(await refusal({ provider: 'deepgram', lowCredit: true })).toEqual([
      400,
      "lowCredit: lowCredit is Replicate's own tightening; name provider replicate",
    ]);
    expect(await sim('/_sim/config?provider=deepgram')).not.toHaveProperty('requestsPerMinute');
  });

  it('leaves armed faults to the submissions it admits, and answers an outage with 503 rather than 429', async () => {
    await configure({ requestsPerMinute: 60, burst: 1 });
    expect((await generate()).status).toBe(201);
    await sim('/_sim/faults', { mode: 'reject', count: 1 });
    expect((await generate()).status).toBe(429);
    await configure({ requestsPerMinute: null });
    // The fault waited for an admitted submission.
    expect((await generate()).status).toBe(400);

    await configure({ requestsPerMinute: 60, burst: 1 });
    await sim('/_sim/faults', { mode: 'outage', seconds: 30 });
    const down = await generate();
    expect(down.status).toBe(503);
    expect((await ledger()).throttled).toBe(1);
  });
});

describe('replicate', () => {
  /** The SDK with a fetch that counts what it sends: it resends a 429ed create by itself. */
  function counted() {
    const sent = { creates: 0 };
    const client = new Replicate({
      auth: API_KEY,
      baseUrl: `${simulator.url}/replicate/v1`,
      fetch: (input, init) => {
        if (init?.method === 'POST') sent.creates += 1;
        return fetch(input, init);
      },
    });
    return { client, sent };
  }
  const create = (client: Replicate) =>
    client.predictions.create({ model: 'black-forest-labs/flux-schnell', input: { prompt: 'dusk' } });
  /** A create as plain HTTP, for the exact answer the SDK folds into its error. */
  const createOverHttp = () =>
    fetch(`${simulator.url}/replicate/v1/models/acme/painter/predictions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${API_KEY}`, 'content-type': 'application/json' },
      body: JSON.stringify({ input: { prompt: 'p' } }),
    });

  it("answers Replicate's throttled problem with Retry-After, which the SDK meets with its own retries, charging none", async () => {
    await configure({ provider: 'replicate', requestsPerMinute: 2, burst: 2 });
    const { client, sent } = counted();
    await create(client);
    await create(client);
    expect(sent.creates).toBe(2);

    const error = await thrown(create(client));
    expect(error.name).toBe('ApiError');
    expect(error.response.status).toBe(429);
    // 2 a minute: the next token is 30 s away.
    expect(error.response.headers.get('retry-after')).toBe('30');
    expect(error.message).toContain(
      '{"title":"Request was throttled.","detail":"Request was throttled. Expected available in 30 seconds.","status":429}',
    );
    const after = await ledger();
    expect(after.byProvider?.replicate.submissions).toHaveLength(2);
    expect(sent.creates).toBeGreaterThan(2);
    expect(after.byProvider?.replicate.throttled).toBe(sent.creates - 2);
    expect(after.throttled).toBe(sent.creates - 2);
    // Reads are not creates: a throttled account still reads its predictions.
    const [first] = after.byProvider?.replicate.submissions ?? [];
    expect((await client.predictions.get(first?.id ?? '')).id).toBe(first?.id);
  });

  it('tightens creates while credit is low (the buckets above), and loosens them again', async () => {
    const low = await configure({ provider: 'replicate', lowCredit: true });
    expect(await low.json()).toEqual({ jobMs: 200, progressHz: 10, outputTtlMs: 3_600_000, lowCredit: true });
    const { client } = counted();

    await create(client);
    const second = await createOverHttp();
    expect(second.status).toBe(429);
    expect(second.headers.get('retry-after')).toBe('1');
    expect(await second.json()).toEqual({
      title: 'Request was throttled.',
      detail: 'Request was throttled. Expected available in 1 second.',
      status: 429,
    });

    expect((await ledger()).byProvider?.replicate.throttled).toBe(1);

    await configure({ provider: 'replicate', lowCredit: false });
    expect((await createOverHttp()).status).toBe(201);
    expect(await charged('replicate')).toBe(2);
  });
});

describe('deepgram', () => {
  const deepgram = () => new DeepgramClient({ apiKey: API_KEY, baseUrl: `${simulator.url}/deepgram` });
  const transcribe = (client: DeepgramClient, requestOptions: Record<string, unknown> = {}) =>
    client.listen.v1.media.transcribeUrl(
      { url: 'https://example.com/haul.wav', callback: 'http://127.0.0.1:9/dg' } as never,
      requestOptions,
    );

  it("answers Deepgram's TOO_MANY_REQUESTS, which the SDK waits out by Retry-After and then gets through", async () => {
    // One token a second, none saved: the second request in a row is refused.
    await configure({ provider: 'deepgram', requestsPerMinute: 60, burst: 1 });
    const client = deepgram();
    await transcribe(client);

    const error = await thrown(transcribe(client, { maxRetries: 0 }));
    expect(error).toBeInstanceOf(DeepgramError);
    expect(error.statusCode).toBe(429);
    expect(error.body).toEqual({
      err_code: 'TOO_MANY_REQUESTS',
      err_msg: 'Too many requests. Please try again later',
      request_id: expect.stringMatching(/^[0-9a-f-]{36}$/),
    });
    expect(error.rawResponse.headers.get('retry-after')).toBe('1');
    expect(await charged('deepgram')).toBe(1);
    expect((await ledger()).byProvider?.deepgram.throttled).toBe(1);

    // Refused again at once, the SDK waits the second Retry-After asks for, and its retry gets the new token.
    await transcribe(client, { maxRetries: 1 });
    expect(await charged('deepgram')).toBe(2);
    expect((await ledger()).byProvider?.deepgram.throttled).toBe(2);
  });
});

describe('bedrock', () => {
  let client: BedrockRuntimeClient;
  beforeEach(() => {
    // As lambdas/providers/bedrock.ts builds it: the SDK's retries off.
    client = new BedrockRuntimeClient({
      endpoint: `${simulator.url}/bedrock`,
      region: 'us-east-1',
      credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
      maxAttempts: 1,
    });
  });
  afterEach(() => client.destroy());

  const invoke = (modelId: string) =>
    client.send(
      new InvokeModelCommand({
        modelId,
        contentType: 'application/json',
        accept: 'application/json',
        body: JSON.stringify(
          modelId === TITAN
            ? { inputText: 'slow jobs finish exactly once' }
            : { texts: ['slow jobs finish exactly once'], input_type: 'search_document' },
        ),
      }),
    );

  it('keeps a bucket per model, and the SDK reads a refusal as its ThrottlingException, uncharged', async () => {
    await configure({ provider: 'bedrock', requestsPerMinute: 60, burst: 2 });
    await invoke(TITAN);
    await invoke(TITAN);

    const error = await thrown(invoke(TITAN));
    expect(error).toBeInstanceOf(ThrottlingException);
    expect(error.name).toBe('ThrottlingException');
    expect(error.message).toBe('Too many requests, please wait before trying again.');
    expect(error.$metadata.httpStatusCode).toBe(429);
    expect(error.$response.headers['x-amzn-errortype']).toBe('ThrottlingException');
    expect(error.$response.headers['retry-after']).toBeUndefined();

    // Another model's quota is its own.
    await invoke(COHERE);
    await invoke(`arn:aws:bedrock:us-east-1::foundation-model/${COHERE}`);
    expect((await thrown(invoke(COHERE))).name).toBe('ThrottlingException');

    const after = await ledger();
    expect(after.byProvider?.bedrock.submissions).toHaveLength(4);
    expect(after.byProvider?.bedrock.throttled).toBe(2);
    await waitFor('the titan bucket to refill', () =>
      invoke(TITAN).then(
        () => true,
        () => undefined,
      ),
    );
    expect(await charged('bedrock')).toBe(5);
  });
});
