import { createHash, randomUUID } from 'node:crypto';
import * as z from 'zod';
import { EMBEDDING_MODELS, type EmbeddingModelName } from '../../config/embedding-models';
import type { Dialect, SimulatorContext } from './dialect';
import { embedText, tokenCountOf } from './embedder';
import { answerAccepted, jobFault } from './faults';
import { HttpError, readBody, resetExchange, type SimRequest, type SimResponse, sendJson } from './http';
import type { JobOutcome } from './jobs';

/**
 * Amazon Bedrock's runtime API (provider `bedrock`) under `/bedrock`, as the
 * AWS SDK's `BedrockRuntimeClient` sends `InvokeModel` with its `endpoint`
 * set to `<simulator>/bedrock`: `POST /model/{modelId}/invoke`, the model id
 * URL-encoded, the request body the model's own JSON. The SDK speaks HTTP/2
 * to it, with prior knowledge on a plain connection (./simulator serves
 * both protocols on one port); SigV4 headers are taken as they come,
 * since the simulator has no account to check them against.
 *
 * Bedrock answers each call at once, so a call is a job that runs for the
 * dialect's `jobMs` (100 ms unless configured) with its caller waiting: the
 * ledger counts it as a charge from acceptance and as running until it is
 * answered. No deduplication (InvokeModel takes no idempotency token), no
 * webhooks, no cancel.
 *
 * The embedding models of config/embedding-models.ts, with their request
 * validation and answers as the Bedrock user guide gives them; the vectors
 * are ./embedder's, so a text always gets the same one. Errors come in
 * Bedrock's wire form: the status, `x-amzn-ErrorType` naming the exception
 * (the header the SDK's REST-JSON deserializer reads the error's name from
 * first) and a JSON `{message}`, with the call's `x-amzn-RequestId`.
 */

const PREFIX = '/bedrock';

/** The exceptions InvokeModel raises here and their statuses (the InvokeModel API reference). */
const BEDROCK_ERRORS = {
  ValidationException: 400,
  ResourceNotFoundException: 404,
  ModelErrorException: 424,
  ThrottlingException: 429,
  UnknownOperationException: 404,
} as const;
type BedrockErrorName = keyof typeof BEDROCK_ERRORS;

/** What Bedrock says with a ThrottlingException of its request quota (the AWS knowledge center's wording). */
const THROTTLED_MESSAGE = 'Too many requests, please wait before trying again.';

/** The message of a call the `fail-job` fault fails while the model runs. */
export const SIMULATED_MODEL_ERROR = 'The simulated model failed while processing this request.';

function bedrockError(
  name: BedrockErrorName,
  message: string,
  requestId: string = randomUUID(),
  fields: Readonly<Record<string, unknown>> = {},
): HttpError {
  return new HttpError(
    BEDROCK_ERRORS[name],
    { message, ...fields },
    { 'x-amzn-ErrorType': name, 'x-amzn-RequestId': requestId },
  );
}

/** Bedrock's wording of a body the model's schema refuses. */
function malformed(details: readonly string[]): HttpError {
  return bedrockError(
    'ValidationException',
    `Malformed input request: ${details.join('; ')}, please reformat your input and try again.`,
  );
}

/** Each issue as a JSON pointer into the body and what is wrong there. */
function issueDetails(error: z.ZodError): string[] {
  return error.issues.flatMap((issue) => {
    const pointer = `#${issue.path.map((key) => `/${String(key)}`).join('')}`;
    if (issue.code === 'unrecognized_keys') {
      return issue.keys.map((key) => `${pointer}: extraneous key [${key}] is not permitted`);
    }
    return [`${pointer}: ${issue.message}`];
  });
}

/** What a model's answer is: its body, the input tokens it was billed for, and the texts it read. */
interface Invocation {
  readonly answer: Readonly<Record<string, unknown>>;
  readonly inputTokens: number;
  readonly texts: readonly string[];
}

/** One simulated model: its request's schema and the answer to a request that passed it. */
interface SimulatedModel {
  invoke(body: unknown, requestId: string): Invocation;
}

function validated<T>(schema: z.ZodType<T>, body: unknown): T {
  const parsed = schema.safeParse(body);
  if (!parsed.success) throw malformed(issueDetails(parsed.error));
  return parsed.data;
}

/** Amazon Titan Text Embeddings V2: one text a call; `embeddingsByType` always has `float`. */
function titanModel(model: (typeof EMBEDDING_MODELS)['titan-text-v2']): SimulatedModel {
  const schema = z.strictObject({
    inputText: z.string().min(1).max(model.maxTextChars),
    dimensions: z.literal(model.dimensions).default(model.dimensions[0]),
    normalize: z.boolean().default(true),
    embeddingTypes: z
      .array(z.enum(['float', 'binary']))
      .min(1)
      .default(['float']),
  });
  return {
    invoke(body) {
      const request = validated(schema, body);
      const embedding = embedText(request.inputText, {
        dimensions: request.dimensions,
        normalize: request.normalize,
      });
      const inputTextTokenCount = tokenCountOf(request.inputText);
      const types = new Set(request.embeddingTypes);
      return {
        answer: {
          embedding,
          inputTextTokenCount,
          embeddingsByType: {
            ...(types.has('binary') ? { binary: embedding.map((value) => (value > 0 ? 1 : 0)) } : {}),
            ...(types.has('float') ? { float: embedding } : {}),
          },
        },
        inputTokens: inputTextTokenCount,
        texts: [request.inputText],
      };
    },
  };
}

const COHERE_EMBEDDING_TYPES = ['float', 'int8', 'uint8', 'binary', 'ubinary'] as const;
type CohereEmbeddingType = (typeof COHERE_EMBEDDING_TYPES)[number];

/** Cohere's compressed embeddings of a unit vector: bytes per dimension, or a bit each packed into bytes. */
const COHERE_ENCODINGS: Readonly<Record<CohereEmbeddingType, (vector: readonly number[]) => number[]>> = {
  float: (vector) => [...vector],
  int8: (vector) => vector.map((value) => Math.max(-128, Math.min(127, Math.round(value * 127)))),
  uint8: (vector) => vector.map((value) => Math.max(0, Math.min(255, Math.round(value * 127) + 128))),
  ubinary: packBits,
  binary: (vector) => packBits(vector).map((byte) => byte - 128),
};

function packBits(vector: readonly number[]): number[] {
  const bytes = new Array<number>(Math.ceil(vector.length / 8)).fill(0);
  vector.forEach((value, index) => {
    if (value > 0) bytes[index >> 3] = (bytes[index >> 3] as number) | (0x80 >> (index & 7));
  });
  return bytes;
}

/**
 * Cohere Embed v3: up to 96 texts a call, each up to 2,048 characters unless
 * `truncate` says which end to drop (the simulator cuts at that length);
 * always unit vectors; no token count in the answer. Images are a documented
 * input the simulator cannot embed, so it refuses them.
 */
function cohereModel(model: (typeof EMBEDDING_MODELS)['cohere-multilingual-v3']): SimulatedModel {
  const [dimensions] = model.dimensions;
  const schema = z
    .strictObject({
      texts: z.array(z.string()).max(model.textsPerCall).optional(),
      images: z.array(z.string()).max(1).optional(),
      input_type: z.enum(['search_document', 'search_query', 'classification', 'clustering', 'image']),
      truncate: z.enum(['NONE', 'START', 'END']).default('NONE'),
      embedding_types: z.array(z.enum(COHERE_EMBEDDING_TYPES)).min(1).optional(),
    })
    .superRefine((request, context) => {
      if (request.images !== undefined) {
        context.addIssue({
          code: 'custom',
          path: ['images'],
          message: 'the simulated model embeds texts only',
        });
      } else if (request.texts === undefined) {
        context.addIssue({ code: 'custom', path: [], message: 'required key [texts] not found' });
      } else if (request.input_type === 'image') {
        context.addIssue({ code: 'custom', path: ['input_type'], message: 'image takes images, not texts' });
      }
      if (request.truncate !== 'NONE') return;
      request.texts?.forEach((text, index) => {
        if (text.length > model.maxTextChars) {
          context.addIssue({
            code: 'custom',
            path: ['texts', index],
            message: `expected maxLength: ${model.maxTextChars}, actual: ${text.length}`,
          });
        }
      });
    });
  return {
    invoke(body, requestId) {
      const request = validated(schema, body);
      const texts = request.texts ?? [];
      const cut = (text: string) =>
        text.length <= model.maxTextChars
          ? text
          : request.truncate === 'START'
            ? text.slice(text.length - model.maxTextChars)
            : text.slice(0, model.maxTextChars);
      const vectors = texts.map((text) => embedText(cut(text), { dimensions, normalize: true }));
      const inputTokens = texts.reduce((sum, text) => sum + tokenCountOf(cut(text)), 0);
      const embeddings =
        request.embedding_types === undefined
          ? vectors
          : Object.fromEntries(
              request.embedding_types.map((type) => [type, vectors.map(COHERE_ENCODINGS[type])]),
            );
      const responseType = request.embedding_types === undefined ? 'embeddings_floats' : 'embeddings_by_type';
      return {
        answer: { id: requestId, embeddings, response_type: responseType, texts },
        inputTokens,
        texts,
      };
    },
  };
}

/** Every model of the catalog, by the id InvokeModel names it with; a model added there must be simulated here. */
const SIMULATED_MODELS: ReadonlyMap<string, SimulatedModel> = new Map(
  Object.entries({
    'titan-text-v2': titanModel(EMBEDDING_MODELS['titan-text-v2']),
    'cohere-multilingual-v3': cohereModel(EMBEDDING_MODELS['cohere-multilingual-v3']),
  } satisfies Record<EmbeddingModelName, SimulatedModel>).map(([name, simulated]) => [
    EMBEDDING_MODELS[name as EmbeddingModelName].modelId,
    simulated,
  ]),
);

/** InvokeModel takes a foundation model's id or its ARN. */
const FOUNDATION_MODEL_ARN = /^arn:aws(?:-[a-z]+)*:bedrock:[a-z0-9-]+::foundation-model\/(.+)$/;

export class BedrockDialect implements Dialect {
  readonly provider = 'bedrock';
  /** Calls whose caller still waits for the answer. */
  private readonly waiting = new Set<SimRequest>();

  constructor(private readonly context: SimulatorContext) {}

  async handle(req: SimRequest, res: SimResponse, path: string, method: string): Promise<boolean> {
    if (path !== PREFIX && !path.startsWith(`${PREFIX}/`)) return false;
    const invoke = /^\/model\/([^/]+)\/invoke$/.exec(path.slice(PREFIX.length));
    if (!invoke || method !== 'POST') {
      throw bedrockError('UnknownOperationException', `No operation ${method} ${path.slice(PREFIX.length)}.`);
    }
    await this.invoke(req, res, decodeURIComponent(invoke[1] ?? ''));
    return true;
  }

  reset(): void {
    for (const req of this.waiting) resetExchange(req);
    this.waiting.clear();
  }

  private async invoke(req: SimRequest, res: SimResponse, modelId: string): Promise<void> {
    const foundationModel = FOUNDATION_MODEL_ARN.exec(modelId)?.[1] ?? modelId;
    const model = SIMULATED_MODELS.get(foundationModel);
    if (!model) {
      throw bedrockError(
        'ResourceNotFoundException',
        `The model ${modelId} does not exist or is not available.`,
      );
    }
    const bytes = await readBody(req).catch((error: unknown) => {
      // The only refusal readBody makes: a body past its limit, which Bedrock would refuse as invalid input.
      if (error instanceof HttpError)
        throw bedrockError('ValidationException', 'The request body is too large.');
      throw error;
    });
    let body: unknown;
    try {
      body = JSON.parse(bytes.toString('utf8'));
    } catch {
      throw malformed(['#: the body is not valid JSON']);
    }
    const requestId = randomUUID();
    const { answer, inputTokens, texts } = model.invoke(body, requestId);

    // Bedrock's quotas are per model (its id or ARN alike), and its throttle names no wait: no Retry-After.
    if (this.context.throttle(this.provider, foundationModel) !== undefined) {
      throw bedrockError('ThrottlingException', THROTTLED_MESSAGE, requestId);
    }
    const fault = this.context.faults.take(this.provider);
    if (fault === 'reject') {
      throw bedrockError('ValidationException', 'The model refused this input (simulated fault).', requestId);
    }
    if (fault === 'unavailable') {
      throw bedrockError('ThrottlingException', THROTTLED_MESSAGE, requestId);
    }
    const { jobMs, progressHz } = this.context.config(this.provider);
    const startedAtMs = Date.now();
    this.waiting.add(req);
    const finished = (outcome: JobOutcome) => {
      this.waiting.delete(req);
      answerAccepted(fault, req, () => {
        if (outcome === 'succeeded') {
          sendJson(res, 200, answer, {
            'x-amzn-RequestId': requestId,
            'x-amzn-bedrock-invocation-latency': String(Date.now() - startedAtMs),
            'x-amzn-bedrock-input-token-count': String(inputTokens),
          });
          return;
        }
        // A model that fails mid-call: Bedrock passes the model's own status along with the exception.
        const failure = bedrockError('ModelErrorException', SIMULATED_MODEL_ERROR, requestId, {
          originalStatusCode: 500,
          resourceName: modelId,
        });
        sendJson(res, failure.status, failure.body, failure.headers);
      });
    };
    this.context.runner.start({
      id: requestId,
      provider: this.provider,
      idempotencyKey: null,
      jobMs,
      progressHz,
      fault: jobFault(fault),
      inputTokens,
      inputDigests: texts.map(inputDigestOf),
      hooks: { progress: () => {}, finished },
    });
  }
}

/** What the ledger keeps of a text a call embedded: enough to tell the same text billed twice, not the text. */
export const inputDigestOf = (text: string): string =>
  createHash('sha256').update(text).digest('hex').slice(0, 16);
