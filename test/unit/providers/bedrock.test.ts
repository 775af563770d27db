import {
  AccessDeniedException,
  BedrockRuntimeClient,
  InternalServerException,
  InvokeModelCommand,
  ModelNotReadyException,
  ModelTimeoutException,
  ResourceNotFoundException,
  ServiceQuotaExceededException,
  ServiceUnavailableException,
  ThrottlingException,
} from '@aws-sdk/client-bedrock-runtime';
import { type AwsClientStub, mockClient } from 'aws-sdk-client-mock';
import type { ProviderRequests } from '../../../config/providers';
import type { AnsweredPart } from '../../../lambdas/domain/provider';
import { bedrock } from '../../../lambdas/providers/bedrock';
import type { ProviderConfig } from '../../../lambdas/providers/common';
import { embedText, tokenCountOf } from '../../../local/provider-sim/embedder';
import {
  type FaultMode,
  type Ledger,
  type RunningSimulator,
  startSimulator,
} from '../../../local/provider-sim/simulator';

/**
 * The Bedrock adapter through the AWS SDK's own client, over HTTP/2 as in
 * AWS, against the simulated Bedrock (local/provider-sim/bedrock.ts): the
 * calls it makes are read from the simulator's ledger, the vectors it
 * returns checked against the simulator's embedder, and every failure the
 * simulator can stage checked to land in its class. The exact InvokeModel
 * inputs, and the exceptions only AWS raises, come from a mocked client.
 */

const CALL_MS = 20;
/** The handlers' AWS settings in AWS and locally (local/handler-env.ts); the SDK will not sign without them. */
const AWS_ENV = { AWS_REGION: 'us-east-1', AWS_ACCESS_KEY_ID: 'local', AWS_SECRET_ACCESS_KEY: 'local' };
const saved = Object.fromEntries(Object.keys(AWS_ENV).map((name) => [name, process.env[name]]));

let simulator: RunningSimulator;

beforeAll(async () => {
  Object.assign(process.env, AWS_ENV);
  simulator = await startSimulator({
    jobMs: 1000,
    progressHz: 10,
    idempotent: true,
    webhookSecret: 'generic-secret',
    bedrockJobMs: CALL_MS,
  });
});

afterAll(async () => {
  await simulator.close();
  for (const [name, value] of Object.entries(saved)) {
    if (value === undefined) delete process.env[name];
    else process.env[name] = value;
  }
});

beforeEach(() => control('/_sim/reset', {}));

async function control(path: string, body?: unknown): Promise<unknown> {
  const response = await fetch(`${simulator.url}${path}`, {
    method: body === undefined ? 'GET' : 'POST',
    headers: { 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  if (!response.ok) throw new Error(`${path} answered ${response.status}`);
  const text = await response.text();
  return text ? JSON.parse(text) : undefined;
}

const fault = (mode: FaultMode) => control('/_sim/faults', { mode, count: 1, provider: 'bedrock' });

/** What the simulated Bedrock charged, call by call. */
async function charges() {
  return ((await control('/_sim/ledger')) as Ledger).byProvider?.bedrock.submissions ?? [];
}

const config = (overrides: Partial<ProviderConfig> = {}): ProviderConfig => ({
  baseUrl: `${simulator.url}/bedrock`,
  webhookSecret: 'bedrock-sends-no-webhooks',
  deduplicates: true,
  // Generous, so a slow machine never turns a prompt answer into a timeout; the timeout case uses a short one.
  submitTimeoutMs: 5000,
  readTimeoutMs: 5000,
  ...overrides,
});

const titan = (texts: readonly string[], overrides: Partial<ProviderRequests['bedrock']> = {}) =>
  ({
    model: 'titan-text-v2',
    texts,
    purpose: 'document',
    dimensions: 256,
    normalize: true,
    ...overrides,
  }) as const;
const cohere = (texts: readonly string[], overrides: Partial<ProviderRequests['bedrock']> = {}) =>
  ({
    model: 'cohere-multilingual-v3',
    texts,
    purpose: 'document',
    dimensions: 1024,
    normalize: true,
    ...overrides,
  }) as const;

describe('bedrock embed', () => {
  it('embeds each text with Titan in a call of its own, in order, with the dimensions and normalization asked for', async () => {
    const texts = ['Grace abounds.', 'Forgive one another.', 'The prodigal son returns home.'];

    const result = await bedrock(config()).embed(titan(texts, { dimensions: 512, normalize: false }));

    expect(result).toEqual({
      model: 'amazon.titan-embed-text-v2:0',
      dimensions: 512,
      embeddings: texts.map((text) => embedText(text, { dimensions: 512, normalize: false })),
      inputTokens: texts.reduce((sum, text) => sum + tokenCountOf(text), 0),
      calls: 3,
    });
    expect((await charges()).map((charge) => charge.inputTokens)).toEqual(texts.map(tokenCountOf));
  });

  it('embeds up to 96 texts a call with Cohere, keeping their order across calls', async () => {
    // Four characters each: one simulated token, so each charge's tokens count its texts.
    const texts = Array.from({ length: 200 }, (_, index) => `w${String(index).padStart(3, '0')}`);

    const result = await bedrock(config()).embed(cohere(texts));

    expect(result.calls).toBe(3);
    expect((await charges()).map((charge) => charge.inputTokens)).toEqual([96, 96, 8]);
    expect(result.embeddings).toEqual(
      texts.map((text) => embedText(text, { dimensions: 1024, normalize: true })),
    );
    // Cohere reports no tokens: the adapter estimates characters / 4 per call.
    expect(result.inputTokens).toBe(200);
  });

  it('cuts each text to what the model takes, keeping its beginning', async () => {
    const long = `${'grace '.repeat(10_000)}zebra`;
    const adapter = bedrock(config());

    // Titan refuses more than 50,000 characters: the call succeeding is the cut.
    const [titanVector] = (await adapter.embed(titan([long]))).embeddings;
    const [cohereVector] = (await adapter.embed(cohere([long]))).embeddings;

    expect(titanVector).toEqual(embedText(long.slice(0, 50_000), { dimensions: 256, normalize: true }));
    expect(titanVector).not.toEqual(embedText(long, { dimensions: 256, normalize: true }));
    expect(cohereVector).toEqual(embedText(long.slice(0, 2048), { dimensions: 1024, normalize: true }));
  });

  it('makes no call for no texts', async () => {
    await expect(bedrock(config()).embed(cohere([]))).resolves.toMatchObject({ embeddings: [], calls: 0 });
    expect(await charges()).toEqual([]);
  });

  it('refuses vectors of other dimensions than the index has, at the first call that answers them', async () => {
    const texts = Array.from({ length: 100 }, (_, index) => `text ${index}`);

    await expect(bedrock(config()).embed(cohere(texts, { dimensions: 512 }))).rejects.toMatchObject({
      name: 'ProviderRejected',
      code: 'embedding_dimensions_mismatch',
      message: 'bedrock answered 1024 dimensions; the index has 512.',
    });
    expect(await charges()).toHaveLength(1);
  });

  it('submits by embedding at once: the answer is the output, under an id of its own', async () => {
    const request = titan(['Blessed are the peacemakers.']);

    const submitted = await bedrock(config()).submit({
      idempotencyKey: 'job_x:1',
      request,
      webhookUrl: 'https://longhaul.example/v1/provider/bedrock/events?jobId=job_x',
    });

    expect(submitted.providerJobId).toMatch(/^bedrock_[0-9a-f-]{36}$/);
    expect(submitted.answer).toEqual({ output: await bedrock(config()).embed(request) });
  });

  it('never deduplicates and has nothing to read back, cancel or hear from', async () => {
    const adapter = bedrock(config({ deduplicates: true }));
    expect(adapter.deduplicates).toBe(false);
    await expect(adapter.status('bedrock_1')).rejects.toMatchObject({ name: 'ProviderUnavailable' });
    await expect(adapter.cancel('bedrock_1')).resolves.toBeUndefined();
    expect(await charges()).toEqual([]);
  });
});

describe('bedrock failures, by what Bedrock can have billed', () => {
  it.each([
    ['a throttled call', 'unavailable', { name: 'ProviderUnavailable' }, 0],
    ['an input the model refuses', 'reject', { name: 'ProviderRejected', code: 'provider_rejected_400' }, 0],
    ['a model that failed while running', 'fail-job', { name: 'ProviderAmbiguous' }, 1],
    ['a connection lost before the answer', 'accept-then-drop', { name: 'ProviderAmbiguous' }, 1],
  ] as const)('%s', async (_, mode, error, charged) => {
    await fault(mode);

    await expect(bedrock(config()).embed(titan(['Peace be with you.']))).rejects.toMatchObject(error);
    expect(await charges()).toHaveLength(charged);
  });

  it('an answer that does not come within the deadline: charged, outcome unknown', async () => {
    await fault('timeout');

    await expect(
      bedrock(config({ submitTimeoutMs: 300 })).embed(titan(['Peace be with you.'])),
    ).rejects.toMatchObject({ name: 'ProviderAmbiguous', message: expect.stringContaining('TimeoutError') });
    expect(await charges()).toHaveLength(1);
  });

  it('a throttle after an answered call: that call was billed and is kept, the throttled one did no work', async () => {
    // The first call takes a fault that means nothing to Bedrock, the second is throttled.
    await fault('lose-webhooks');
    await fault('unavailable');

    await expect(bedrock(config()).embed(titan(['one', 'two', 'three']))).rejects.toMatchObject({
      name: 'ProviderUnavailable',
      message: 'bedrock answered ThrottlingException (429) to call 2; the 1 answered before it are kept.',
      answered: {
        calls: 1,
        output: {
          model: 'amazon.titan-embed-text-v2:0',
          dimensions: 256,
          embeddings: [embedText('one', { dimensions: 256, normalize: true })],
          inputTokens: tokenCountOf('one'),
          calls: 1,
        },
      },
    });
    expect(await charges()).toHaveLength(1);
  });

  it.each([
    ['a model that failed while running', 'fail-job', 2],
    ['a connection lost before the answer', 'accept-then-drop', 2],
  ] as const)(
    '%s after an answered call: the submission is ambiguous, naming the calls',
    async (_, mode, charged) => {
      await fault('lose-webhooks');
      await fault(mode);

      const failure = bedrock(config()).embed(titan(['one', 'two', 'three']));
      await expect(failure).rejects.toMatchObject({
        name: 'ProviderAmbiguous',
        message: expect.stringMatching(
          /^bedrock answered 1 call\(s\) of the submission, then call 2 failed: /,
        ),
      });
      expect(await charges()).toHaveLength(charged);
    },
  );
});

describe('bedrock requests and the exceptions only AWS raises (mocked client)', () => {
  // Stubbed only while these tests run: the others send through the real client.
  let client: AwsClientStub<BedrockRuntimeClient>;
  beforeAll(() => {
    client = mockClient(BedrockRuntimeClient);
  });
  afterEach(() => client.reset());
  afterAll(() => client.restore());

  const answer = (body: unknown) =>
    ({ body: new TextEncoder().encode(JSON.stringify(body)), contentType: 'application/json' }) as never;

  it('sends Titan one text with the dimensions and normalization, as JSON', async () => {
    client.on(InvokeModelCommand).resolves(answer({ embedding: [0.6, 0.8], inputTextTokenCount: 3 }));

    await bedrock(config()).embed(titan(['Grace.'], { dimensions: 2, normalize: false }));

    expect(client.commandCalls(InvokeModelCommand).map((call) => call.args[0].input)).toEqual([
      {
        modelId: 'amazon.titan-embed-text-v2:0',
        contentType: 'application/json',
        accept: 'application/json',
        body: JSON.stringify({ inputText: 'Grace.', dimensions: 2, normalize: false }),
      },
    ]);
  });

  it.each([
    ['document', 'search_document'],
    ['query', 'search_query'],
  ] as const)('sends Cohere a %s as input_type %s, truncated at its end', async (purpose, inputType) => {
    client.on(InvokeModelCommand).resolves(answer({ embeddings: [[1], [0]] }));

    await bedrock(config()).embed(cohere(['a', 'b'], { purpose, dimensions: 1 }));

    const [call] = client.commandCalls(InvokeModelCommand);
    expect(call?.args[0].input).toMatchObject({ modelId: 'cohere.embed-multilingual-v3' });
    expect(JSON.parse(call?.args[0].input.body as string)).toEqual({
      texts: ['a', 'b'],
      input_type: inputType,
      truncate: 'END',
    });
  });

  it('takes an answer without one vector per text for an unknown outcome: the call was billed', async () => {
    client.on(InvokeModelCommand).resolves(answer({ embeddings: [[1]] }));

    await expect(bedrock(config()).embed(cohere(['a', 'b'], { dimensions: 1 }))).rejects.toMatchObject({
      name: 'ProviderAmbiguous',
    });
  });

  // Node's own socket and HTTP/2 errors as Node raises them. Under jest they come from another realm
  // than the test's, and the SDK wraps such an error in a bare one without its code or cause, so the
  // real client cannot show them here: they are handed to the stubbed client instead.
  const nodeError = (message: string, code: string, cause?: Error) =>
    Object.assign(new Error(message), { code, ...(cause ? { cause } : {}) });
  it.each([
    [
      'a connection refused, which HTTP/2 reports as a canceled stream caused by it',
      nodeError(
        'The pending stream has been canceled (caused by: connect ECONNREFUSED 127.0.0.1:9)',
        'ERR_HTTP2_STREAM_CANCEL',
        nodeError('connect ECONNREFUSED 127.0.0.1:9', 'ECONNREFUSED'),
      ),
      { name: 'ProviderUnavailable', message: expect.stringContaining('ECONNREFUSED') },
    ],
    [
      'a name that does not resolve',
      nodeError('getaddrinfo ENOTFOUND bedrock-runtime.invalid', 'ENOTFOUND'),
      { name: 'ProviderUnavailable' },
    ],
    [
      'a stream reset once the request was written',
      nodeError('Stream closed with error code NGHTTP2_INTERNAL_ERROR', 'ERR_HTTP2_STREAM_ERROR'),
      { name: 'ProviderAmbiguous' },
    ],
  ])('classifies %s', async (_, exception, error) => {
    client.on(InvokeModelCommand).rejects(exception);

    await expect(bedrock(config()).embed(titan(['Grace.']))).rejects.toMatchObject(error);
  });

  const $metadata = (httpStatusCode: number) => ({ $metadata: { httpStatusCode }, message: 'simulated' });

  it('keeps the calls answered before a throttle, and the next attempt makes only the rest', async () => {
    const texts = ['one', 'two', 'three', 'four', 'five'];
    const throttled = new Set([3]);
    let call = 0;
    client.on(InvokeModelCommand).callsFake((input: { body: string }) => {
      call++;
      if (throttled.has(call)) throw new ThrottlingException($metadata(429));
      const { inputText } = JSON.parse(input.body) as { inputText: string };
      return answer({ embedding: [texts.indexOf(inputText), 1], inputTextTokenCount: 2 });
    });
    const adapter = bedrock(config());
    const submission = {
      idempotencyKey: 'job_x.1',
      request: titan(texts, { dimensions: 2 }),
      webhookUrl: 'https://longhaul.example/v1/provider/bedrock/events?jobId=job_x',
    };

    const refusal = await adapter.submit(submission).then(
      () => undefined,
      (error: unknown) => error,
    );
    expect(refusal).toMatchObject({
      name: 'ProviderUnavailable',
      answered: {
        calls: 2,
        output: {
          model: 'amazon.titan-embed-text-v2:0',
          dimensions: 2,
          embeddings: [
            [0, 1],
            [1, 1],
          ],
          inputTokens: 4,
          calls: 2,
        },
      },
    });
    expect(client.commandCalls(InvokeModelCommand)).toHaveLength(3);

    client.resetHistory();
    const { answered } = refusal as { answered: AnsweredPart };
    const submitted = await adapter.submit({ ...submission, answered });

    const sent = client
      .commandCalls(InvokeModelCommand)
      .map((sent) => JSON.parse(sent.args[0].input.body as string));
    expect(sent.map((body) => body.inputText)).toEqual(['three', 'four', 'five']);
    expect(submitted.answer?.output).toEqual({
      model: 'amazon.titan-embed-text-v2:0',
      dimensions: 2,
      embeddings: texts.map((_, index) => [index, 1]),
      inputTokens: 10,
      calls: 5,
    });
  });

  it('goes on from a kept Cohere part at the text after it, in calls of up to 96', async () => {
    const texts = Array.from({ length: 200 }, (_, index) => `w${index}`);
    client.on(InvokeModelCommand).callsFake((input: { body: string }) => {
      const body = JSON.parse(input.body) as { texts: string[] };
      return answer({ embeddings: body.texts.map((text) => [texts.indexOf(text)]) });
    });
    const kept = {
      model: 'cohere.embed-multilingual-v3',
      dimensions: 1,
      embeddings: texts.slice(0, 96).map((_, index) => [index]),
      inputTokens: 96,
      calls: 1,
    };

    const result = await bedrock(config()).embed(cohere(texts, { dimensions: 1 }), {
      calls: 1,
      output: kept,
    });

    const sent = client
      .commandCalls(InvokeModelCommand)
      .map((sent) => JSON.parse(sent.args[0].input.body as string));
    expect(sent.map((body) => [body.texts[0], body.texts.length])).toEqual([
      ['w96', 96],
      ['w192', 8],
    ]);
    expect(result).toMatchObject({ calls: 3, embeddings: texts.map((_, index) => [index]) });
  });

  it('refuses a kept part of another model or dimensions before any call: it cannot be the same work', async () => {
    client.on(InvokeModelCommand).resolves(answer({ embedding: [1, 0], inputTextTokenCount: 1 }));
    const kept = {
      model: 'amazon.titan-embed-text-v2:0',
      dimensions: 3,
      embeddings: [[1, 0, 0]],
      inputTokens: 1,
      calls: 1,
    };

    await expect(
      bedrock(config()).embed(titan(['a', 'b'], { dimensions: 2 }), { calls: 1, output: kept }),
    ).rejects.toThrow('The kept answers of the submission are not of its model and dimensions');
    expect(client.commandCalls(InvokeModelCommand)).toHaveLength(0);
  });
  it.each([
    ['InternalServerException', new InternalServerException($metadata(500)), { name: 'ProviderAmbiguous' }],
    ['ModelTimeoutException', new ModelTimeoutException($metadata(408)), { name: 'ProviderAmbiguous' }],
    [
      'ServiceUnavailableException',
      new ServiceUnavailableException($metadata(503)),
      { name: 'ProviderUnavailable' },
    ],
    ['ModelNotReadyException', new ModelNotReadyException($metadata(429)), { name: 'ProviderUnavailable' }],
    [
      'ServiceQuotaExceededException',
      new ServiceQuotaExceededException($metadata(400)),
      { name: 'ProviderUnavailable' },
    ],
    [
      'AccessDeniedException',
      new AccessDeniedException($metadata(403)),
      { name: 'ProviderRejected', code: 'provider_rejected_403' },
    ],
    [
      'ResourceNotFoundException',
      new ResourceNotFoundException($metadata(404)),
      { name: 'ProviderRejected', code: 'provider_rejected_404' },
    ],
  ])('classifies %s', async (_, exception, error) => {
    client.on(InvokeModelCommand).rejects(exception);

    await expect(bedrock(config()).embed(titan(['Grace.']))).rejects.toMatchObject(error);
  });
});
