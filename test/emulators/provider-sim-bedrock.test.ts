import { connect } from 'node:http2';
import {
  BedrockRuntimeClient,
  ConverseCommand,
  InvokeModelCommand,
  type InvokeModelCommandOutput,
} from '@aws-sdk/client-bedrock-runtime';
import { inputDigestOf, SIMULATED_MODEL_ERROR } from '../../local/provider-sim/bedrock';
import { embedText, tokenCountOf } from '../../local/provider-sim/embedder';
import {
  DEFAULT_BEDROCK_JOB_MS,
  type FaultMode,
  type Ledger,
  type LedgerEntry,
  type RunningSimulator,
  startSimulator,
} from '../../local/provider-sim/simulator';
import { simulatorCall } from '../e2e/support/simulator';
import { thrown } from './support/thrown';
import { waitFor } from './support/webhook-inbox';

/**
 * The Bedrock dialect of the simulated provider, driven by the AWS SDK's
 * own `BedrockRuntimeClient` with only its endpoint changed (HTTP/2 with
 * prior knowledge, SigV4-signed, as the adapter sends it). The other
 * dialects' jobs take 600 ms; Bedrock's calls take their own default
 * unless a test sets them.
 */

jest.setTimeout(20_000);

const JOB_MS = 600;
const TITAN = 'amazon.titan-embed-text-v2:0';
const COHERE = 'cohere.embed-multilingual-v3';

let simulator: RunningSimulator;
let sim: (path: string, body?: unknown) => Promise<any>;
let client: BedrockRuntimeClient;

/**
 * The SDK's client as the adapter builds it. Given handler options (as the
 * adapter gives its timeouts), the SDK's HTTP/2 handler carries concurrent
 * calls as streams of one connection; without, it opens one per call.
 */
const sdkClient = (requestHandler?: { requestTimeout: number }) =>
  new BedrockRuntimeClient({
    endpoint: `${simulator.url}/bedrock`,
    region: 'us-east-1',
    credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
    // The SDK resends after a 5xx or a lost connection: each resend would be a second call here.
    maxAttempts: 1,
    ...(requestHandler === undefined ? {} : { requestHandler }),
  });

beforeEach(async () => {
  simulator = await startSimulator({
    jobMs: JOB_MS,
    progressHz: 20,
    idempotent: true,
    webhookSecret: 'generic-secret',
    apiKey: 'sim-api-key',
  });
  sim = simulatorCall(simulator.url);
  client = sdkClient();
});

afterEach(async () => {
  client.destroy();
  await simulator.close();
});

const invoke = (modelId: string, body: unknown, using: BedrockRuntimeClient = client) =>
  using.send(
    new InvokeModelCommand({
      modelId,
      contentType: 'application/json',
      accept: 'application/json',
      body: typeof body === 'string' ? body : JSON.stringify(body),
    }),
  );

const json = (output: InvokeModelCommandOutput): any => JSON.parse(new TextDecoder().decode(output.body));

async function bedrockLedger() {
  return ((await sim('/_sim/ledger')) as Ledger).byProvider?.bedrock;
}

async function charges(): Promise<readonly LedgerEntry[]> {
  return (await bedrockLedger())?.submissions ?? [];
}

async function injectFault(mode: FaultMode, count = 1): Promise<void> {
  const response = await fetch(`${simulator.url}/_sim/faults`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ mode, count, provider: 'bedrock' }),
  });
  expect(response.status).toBe(204);
}

const length = (vector: readonly number[]) => Math.hypot(...vector);
const cosine = (a: readonly number[], b: readonly number[]) =>
  a.reduce((sum, value, index) => sum + value * (b[index] as number), 0) / (length(a) * length(b));

describe('bedrock dialect: Titan Text Embeddings V2', () => {
  const text = 'Forgive one another, as you have been forgiven.';

  it('answers a unit vector of 1024 dimensions by default, its token count, and the float embedding by type', async () => {
    const output = await invoke(TITAN, { inputText: text });

    const body = json(output);
    expect(body).toEqual({
      embedding: embedText(text, { dimensions: 1024, normalize: true }),
      inputTextTokenCount: tokenCountOf(text),
      embeddingsByType: { float: body.embedding },
    });
    expect(length(body.embedding)).toBeCloseTo(1, 10);
    expect(output.$metadata).toMatchObject({ httpStatusCode: 200, requestId: expect.any(String) });
    expect(output.contentType).toBe('application/json');
  });

  it.each([256, 512])(
    'answers %i dimensions, unnormalized when asked, with binary beside float',
    async (dimensions) => {
      const body = json(
        await invoke(TITAN, {
          inputText: text,
          dimensions,
          normalize: false,
          embeddingTypes: ['float', 'binary'],
        }),
      );

      const raw = embedText(text, { dimensions, normalize: false });
      expect(body.embedding).toEqual(raw);
      expect(length(body.embedding)).not.toBeCloseTo(1, 3);
      expect(body.embeddingsByType).toEqual({ float: raw, binary: raw.map((value) => (value > 0 ? 1 : 0)) });
    },
  );

  it('gives a text the same vector every time, and one that shares its words a closer one than one that does not', async () => {
    const [first, again, near, far] = await Promise.all(
      [text, text, 'Forgiving one another is hard.', 'The weather in the harbour was calm.'].map(
        async (inputText) => json(await invoke(TITAN, { inputText })).embedding as number[],
      ),
    );

    expect(again).toEqual(first);
    expect(cosine(first as number[], near as number[])).toBeGreaterThan(
      cosine(first as number[], far as number[]) + 0.2,
    );
  });

  it('takes the model by its foundation-model ARN too', async () => {
    const body = json(
      await invoke(`arn:aws:bedrock:us-east-1::foundation-model/${TITAN}`, { inputText: text }),
    );
    expect(body.embedding).toEqual(embedText(text, { dimensions: 1024, normalize: true }));
  });
});

describe('bedrock dialect: Cohere Embed Multilingual v3', () => {
  it('answers one 1024-dimension unit vector per text, in order, with the texts and the call’s id', async () => {
    const texts = ['Blessed are the meek.', 'طوبى للودعاء', 'Heureux les doux.'];

    const output = await invoke(COHERE, { texts, input_type: 'search_document' });

    const body = json(output);
    expect(body).toEqual({
      id: output.$metadata.requestId,
      embeddings: texts.map((text) => embedText(text, { dimensions: 1024, normalize: true })),
      response_type: 'embeddings_floats',
      texts,
    });
    for (const vector of body.embeddings) expect(length(vector)).toBeCloseTo(1, 10);
  });

  it('answers embeddings by type when types are asked for', async () => {
    const vector = embedText('Peace be with you.', { dimensions: 1024, normalize: true });

    const body = json(
      await invoke(COHERE, {
        texts: ['Peace be with you.'],
        input_type: 'search_query',
        embedding_types: ['float', 'int8', 'uint8', 'binary', 'ubinary'],
      }),
    );

    expect(body.response_type).toBe('embeddings_by_type');
    expect(body.embeddings.float).toEqual([vector]);
    expect(body.embeddings.int8).toEqual([vector.map((value) => Math.round(value * 127))]);
    expect(body.embeddings.uint8).toEqual([vector.map((value) => Math.round(value * 127) + 128)]);
    // A bit per dimension, the first dimension the highest bit of the first byte.
    const ubinary = body.embeddings.ubinary[0] as number[];
    expect(ubinary).toHaveLength(128);
    expect(ubinary.flatMap((byte) => [...byte.toString(2).padStart(8, '0')].map(Number))).toEqual(
      vector.map((value) => (value > 0 ? 1 : 0)),
    );
    expect(body.embeddings.binary).toEqual([ubinary.map((byte) => byte - 128)]);
  });

  it('embeds a text longer than 2,048 characters by the end truncate keeps', async () => {
    const long = `zebra ${'grace '.repeat(400)}lion`;
    const embedded = async (truncate: string) =>
      json(await invoke(COHERE, { texts: [long], input_type: 'search_document', truncate })).embeddings[0];

    expect(await embedded('END')).toEqual(
      embedText(long.slice(0, 2048), { dimensions: 1024, normalize: true }),
    );
    expect(await embedded('START')).toEqual(
      embedText(long.slice(-2048), { dimensions: 1024, normalize: true }),
    );
  });

  it('answers no vectors for no texts', async () => {
    const body = json(await invoke(COHERE, { texts: [], input_type: 'clustering' }));
    expect(body).toMatchObject({ embeddings: [], texts: [] });
  });
});

describe('bedrock dialect: refusals, as the SDK raises them', () => {
  const refusals: readonly [string, string, unknown, string][] = [
    ['an empty text', TITAN, { inputText: '' }, '#/inputText'],
    ['no text', TITAN, { dimensions: 256 }, '#/inputText'],
    ['a text over 50,000 characters', TITAN, { inputText: 'a'.repeat(50_001) }, '#/inputText'],
    ['dimensions Titan has not', TITAN, { inputText: 'x', dimensions: 768 }, '#/dimensions'],
    ['a normalize that is not a boolean', TITAN, { inputText: 'x', normalize: 'yes' }, '#/normalize'],
    [
      'an embedding type Titan has not',
      TITAN,
      { inputText: 'x', embeddingTypes: ['int8'] },
      '#/embeddingTypes/0',
    ],
    [
      'a field Titan does not know',
      TITAN,
      { inputText: 'x', input_type: 'search_query' },
      'extraneous key [input_type]',
    ],
    [
      'more than 96 texts',
      COHERE,
      { texts: Array.from({ length: 97 }, () => 'x'), input_type: 'search_document' },
      '#/texts',
    ],
    [
      'a text over 2,048 characters without truncate',
      COHERE,
      { texts: ['ok', 'a'.repeat(2049)], input_type: 'search_document' },
      '#/texts/1',
    ],
    [
      'a text over 2,048 characters with truncate NONE',
      COHERE,
      { texts: ['a'.repeat(2049)], input_type: 'search_document', truncate: 'NONE' },
      '#/texts/0',
    ],
    ['no input_type', COHERE, { texts: ['x'] }, '#/input_type'],
    ['an input_type Cohere has not', COHERE, { texts: ['x'], input_type: 'summary' }, '#/input_type'],
    [
      'a truncate Cohere has not',
      COHERE,
      { texts: ['x'], input_type: 'clustering', truncate: 'MIDDLE' },
      '#/truncate',
    ],
    ['no texts', COHERE, { input_type: 'search_query' }, 'required key [texts] not found'],
    [
      'images, which the simulator cannot embed',
      COHERE,
      { images: ['data:image/png;base64,AA=='], input_type: 'image' },
      '#/images',
    ],
    [
      'a field Cohere does not know',
      COHERE,
      { texts: ['x'], input_type: 'clustering', dimensions: 1024 },
      'extraneous key [dimensions]',
    ],
    ['a body that is not JSON', TITAN, 'inputText=x', 'not valid JSON'],
  ];

  it.each(refusals)(
    '%s: ValidationException 400, nothing charged, no fault taken',
    async (_, model, body, where) => {
      // Armed first: a refusal must leave it for the next valid call.
      await injectFault('unavailable');

      const error = await thrown(invoke(model, body));

      expect(error).toMatchObject({
        name: 'ValidationException',
        $fault: 'client',
        $metadata: { httpStatusCode: 400 },
        message: expect.stringMatching(
          /^Malformed input request: .*, please reformat your input and try again\.$/,
        ),
      });
      expect(error.message).toContain(where);
      expect(await charges()).toEqual([]);
      expect(await thrown(invoke(TITAN, { inputText: 'x' }))).toMatchObject({ name: 'ThrottlingException' });
    },
  );

  it('an unknown model: ResourceNotFoundException 404; another operation: UnknownOperationException', async () => {
    expect(await thrown(invoke('amazon.titan-embed-text-v9:0', { inputText: 'x' }))).toMatchObject({
      name: 'ResourceNotFoundException',
      $metadata: { httpStatusCode: 404 },
    });
    expect(
      await thrown(
        client.send(
          new ConverseCommand({ modelId: TITAN, messages: [{ role: 'user', content: [{ text: 'hi' }] }] }),
        ),
      ),
    ).toMatchObject({ name: 'UnknownOperationException', $metadata: { httpStatusCode: 404 } });
    expect(await charges()).toEqual([]);
  });
});

describe('bedrock dialect: faults, as the SDK sees them', () => {
  const call = (using?: BedrockRuntimeClient) => invoke(TITAN, { inputText: 'Peace be with you.' }, using);

  it('reject: ValidationException 400, nothing charged', async () => {
    await injectFault('reject');
    expect(await thrown(call())).toMatchObject({
      name: 'ValidationException',
      $metadata: { httpStatusCode: 400 },
    });
    expect(await charges()).toEqual([]);
  });

  it('unavailable: ThrottlingException 429, not retried, nothing charged', async () => {
    await injectFault('unavailable');
    expect(await thrown(call())).toMatchObject({
      name: 'ThrottlingException',
      $metadata: { httpStatusCode: 429, attempts: 1 },
    });
    expect(await charges()).toEqual([]);
  });

  it('accept-then-drop: the call’s stream is reset before any answer, yet it was charged and ran', async () => {
    await injectFault('accept-then-drop');
    const shared = sdkClient({ requestTimeout: 5000 });

    const dropped = thrown(call(shared));
    // Charged from acceptance: a mark that stays, where `running` lasts only the call's 100 ms.
    await waitFor('the first call to be accepted', async () => (await charges()).length === 1);
    const beside = call(shared);
    const error = await dropped;

    expect(error.$metadata.httpStatusCode).toBeUndefined();
    expect(String(error.message)).toContain('NGHTTP2_INTERNAL_ERROR');
    // Only that stream: the call beside it on the same connection is answered.
    expect(json(await beside).embedding).toHaveLength(1024);
    shared.destroy();
    expect(await charges()).toEqual([
      expect.objectContaining({ finishedAt: expect.any(String) }),
      expect.objectContaining({ finishedAt: expect.any(String) }),
    ]);
  });

  it('timeout: charged, the model finishes, but no answer comes before the caller gives up', async () => {
    await injectFault('timeout');
    const impatient = sdkClient({ requestTimeout: DEFAULT_BEDROCK_JOB_MS + 400 });

    const error = await thrown(call(impatient));
    impatient.destroy();

    expect(error).toMatchObject({ name: 'TimeoutError' });
    expect(await charges()).toEqual([expect.objectContaining({ finishedAt: expect.any(String) })]);
    expect((await bedrockLedger())?.running).toBe(0);
  });

  it('fail-job: ModelErrorException 424 naming the model’s own status, charged', async () => {
    await injectFault('fail-job');
    expect(await thrown(call())).toMatchObject({
      name: 'ModelErrorException',
      message: SIMULATED_MODEL_ERROR,
      originalStatusCode: 500,
      resourceName: TITAN,
      $metadata: { httpStatusCode: 424 },
    });
    expect(await charges()).toEqual([expect.objectContaining({ finishedAt: expect.any(String) })]);
  });

  it('stall: charged, still running, never answered', async () => {
    await injectFault('stall');
    const impatient = sdkClient({ requestTimeout: DEFAULT_BEDROCK_JOB_MS + 400 });

    expect(await thrown(call(impatient))).toMatchObject({ name: 'TimeoutError' });
    impatient.destroy();

    const ledger = await bedrockLedger();
    expect(ledger?.running).toBe(1);
    expect(ledger?.submissions).toEqual([expect.not.objectContaining({ finishedAt: expect.anything() })]);
  });

  it('lose-webhooks: means nothing to a call answered at once', async () => {
    await injectFault('lose-webhooks');
    expect(json(await call()).embedding).toHaveLength(1024);
    expect(await charges()).toHaveLength(1);
  });
});

describe('bedrock dialect: the ledger and the time a call takes', () => {
  it('takes 100 ms a call unless set, whatever the other dialects take, and back after a reset', async () => {
    expect(await sim('/_sim/config?provider=bedrock')).toEqual({ jobMs: DEFAULT_BEDROCK_JOB_MS });
    expect(await sim('/_sim/config?provider=replicate')).toMatchObject({ jobMs: JOB_MS });
    expect(await sim('/_sim/config', { provider: 'bedrock', jobMs: 250 })).toEqual({ jobMs: 250 });

    const started = Date.now();
    await invoke(TITAN, { inputText: 'x' });
    expect(Date.now() - started).toBeGreaterThanOrEqual(250);

    await sim('/_sim/reset', {});
    expect(await sim('/_sim/config?provider=bedrock')).toEqual({ jobMs: DEFAULT_BEDROCK_JOB_MS });
  });

  it('charges each call under the request id it answers with, counting the calls in flight at once', async () => {
    // Long enough for all five to be accepted before the first is answered, even on a busy machine.
    await sim('/_sim/config', { provider: 'bedrock', jobMs: 1000 });
    const texts = ['one', 'two words', 'three short words', 'four words in all', 'five words make a call'];

    const calls = Promise.all(texts.map((inputText) => invoke(TITAN, { inputText })));
    const inFlight = await waitFor('five calls running at once', async () =>
      (await bedrockLedger())?.running === 5 ? true : undefined,
    );
    const outputs = await calls;

    expect(inFlight).toBe(true);
    const ledger = await bedrockLedger();
    expect(ledger).toMatchObject({ maxConcurrent: 5, running: 0 });
    const byId = new Map(ledger?.submissions.map((charge) => [charge.id, charge]));
    outputs.forEach((output, index) => {
      expect(byId.get(output.$metadata.requestId as string)).toEqual({
        id: output.$metadata.requestId,
        idempotencyKey: null,
        acceptedAt: expect.any(String),
        finishedAt: expect.any(String),
        outcome: 'succeeded',
        inputTokens: tokenCountOf(texts[index] as string),
        // What it read, as a digest: the same passage billed twice shows as the same digest twice.
        inputDigests: [inputDigestOf(texts[index] as string)],
      });
    });
    // Every dialect in the total too.
    expect(((await sim('/_sim/ledger')) as Ledger).maxConcurrent).toBe(5);
  });
});

describe('bedrock dialect: protocols', () => {
  it('answers HTTP/1.1 as it answers HTTP/2, in the same wire form', async () => {
    const path = `/bedrock/model/${encodeURIComponent(TITAN)}/invoke`;
    const post = (body: unknown) =>
      fetch(`${simulator.url}${path}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });

    const answered = await post({ inputText: 'x', dimensions: 256 });
    expect(answered.status).toBe(200);
    expect(answered.headers.get('x-amzn-requestid')).toBe((await charges())[0]?.id);
    expect(((await answered.json()) as { embedding: number[] }).embedding).toHaveLength(256);

    const refused = await post({ inputText: '' });
    expect(refused.status).toBe(400);
    expect(refused.headers.get('x-amzn-errortype')).toBe('ValidationException');
    expect(await refused.json()).toEqual({ message: expect.stringContaining('#/inputText') });
  });

  it('answers the other dialects over HTTP/1.1 only, as their SDKs speak it', async () => {
    const session = connect(simulator.url);
    try {
      const status = await new Promise<number | undefined>((resolve, reject) => {
        const stream = session.request({ ':method': 'GET', ':path': '/_sim/ledger' });
        stream.on('response', (headers) => resolve(headers[':status']));
        stream.on('error', reject);
        stream.end();
      });
      expect(status).toBe(505);
    } finally {
      session.close();
    }
  });
});
