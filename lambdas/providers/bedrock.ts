import { randomUUID } from 'node:crypto';
import { BedrockRuntimeClient, InvokeModelCommand } from '@aws-sdk/client-bedrock-runtime';
import * as z from 'zod';
import { EMBEDDING_MODELS, type EmbeddingPurpose } from '../../config/embedding-models';
import type { ProviderRequests } from '../../config/providers';
import {
  AmbiguousSubmissionError,
  ProviderRejectedError,
  ProviderThrottledError,
  ProviderUnavailableError,
} from '../domain/errors';
import type { AnsweredPart, ProviderJobStatus } from '../domain/provider';
import { type Exchange, neverReached, type ProviderAdapter, type ProviderConfig } from './common';

const NAME = 'bedrock';

/**
 * Amazon Bedrock's text embedding models through `InvokeModel` of the AWS
 * SDK's Bedrock runtime client, authorized by the calling function's IAM role.
 * Unlike the media providers, a call is answered at once with its outcome:
 * there is no job to ask about, cancel or hear from later, so `submit`
 * answers with the output and the workflow's wait ends as soon as it starts.
 *
 * Request and response bodies (the Bedrock user guide's model parameters):
 * - Titan Text Embeddings V2
 *   (https://docs.aws.amazon.com/bedrock/latest/userguide/model-parameters-titan-embed-text.html):
 *   `{inputText, dimensions (1024 | 512 | 256), normalize, embeddingTypes?}` →
 *   `{embedding: number[], inputTextTokenCount, embeddingsByType?}`; one text a call.
 * - Cohere Embed v3
 *   (https://docs.aws.amazon.com/bedrock/latest/userguide/model-parameters-embed-v3.html):
 *   `{texts (0..96, each ≤ 2,048 characters), input_type (search_document |
 *   search_query | …), truncate?, embedding_types?}` → `{id, embeddings:
 *   number[][], response_type: "embeddings_floats", texts}`; no token count.
 *
 * Errors (the InvokeModel API reference,
 * https://docs.aws.amazon.com/bedrock/latest/APIReference/API_runtime_InvokeModel.html):
 * ThrottlingException (429), ServiceUnavailableException (503),
 * ModelNotReadyException (429) and ServiceQuotaExceededException are refusals
 * before any work: unavailable, retried later. ValidationException,
 * AccessDeniedException and ResourceNotFoundException (4xx) are definite
 * refusals. A 5xx (InternalServerException), the model's own failures
 * (ModelErrorException, answered with 424; ModelTimeoutException, 408) or a
 * lost connection may have been billed: InvokeModel takes no idempotency
 * token, so that call's outcome is unknown.
 *
 * A submission of many texts is many calls, each billed on its own. A call
 * refused before any work after others were answered leaves those paid for
 * and known: the refusal carries them (`answered`), and the next attempt,
 * handed them back, makes only the calls that are left.
 *
 * The client speaks HTTP/2, Bedrock's runtime protocol: a connection that
 * cannot be opened shows as a canceled stream whose cause is the socket's
 * error, and is still a call never sent.
 *
 * The SDK's own retries are off (`maxAttempts: 1`): they resend after 5xx
 * and timeouts, and a resent call is a second charge.
 */

/** The answer of one embedding submission: one vector per text, in order, and what it cost. */
export interface BedrockEmbeddings {
  readonly model: string;
  readonly dimensions: number;
  readonly embeddings: readonly (readonly number[])[];
  /** Input tokens Bedrock counted (Titan reports them; for Cohere, characters / 4, as its guide estimates). */
  readonly inputTokens: number;
  readonly calls: number;
}

const titanAnswer = z.object({
  embedding: z.array(z.number()).min(1),
  inputTextTokenCount: z.number().int().min(0),
});
const cohereAnswer = z.object({ embeddings: z.array(z.array(z.number()).min(1)) });

const COHERE_INPUT_TYPE: Readonly<Record<EmbeddingPurpose, string>> = {
  document: 'search_document',
  query: 'search_query',
};

/** The exception names that mean Bedrock did no work: try again later. */
const UNAVAILABLE = new Set([
  'ThrottlingException',
  'ServiceUnavailableException',
  'ModelNotReadyException',
  'ServiceQuotaExceededException',
]);

/**
 * The exceptions of a model that ran and failed: billed or not, nobody can
 * tell. ModelErrorException comes with 424, which the 4xx rule would take
 * for a refusal before any work.
 */
const MODEL_FAILED = new Set(['ModelErrorException', 'ModelTimeoutException']);

/** What became of one call that threw: answered with a status, never sent, or lost on the way. */
function exchangeOf(error: unknown): Exchange {
  const status = (error as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode;
  const message = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
  if (typeof status === 'number') return { kind: 'answered', status };
  // The socket's error is the thrown one's own code, or (HTTP/2's canceled stream) its cause's.
  if (neverReached({ cause: error }) || neverReached(error)) return { kind: 'unsent', message };
  return { kind: 'lost', message };
}

/**
 * The error of call number `answered + 1` of a submission. A call refused
 * before any work (a throttle, Bedrock down, never sent) leaves the calls
 * answered before it as they were: paid, and kept on the error for the next
 * attempt to go on from. A call that may have run (lost, the model failed, a
 * 5xx) after answered ones leaves the submission half charged, unknown how far.
 */
function callFailure(error: unknown, kept: BedrockEmbeddings): Error {
  const exchange = exchangeOf(error);
  const name = error instanceof Error ? error.name : 'Error';
  const what = exchange.kind === 'answered' ? `${name} (${exchange.status})` : exchange.message;
  const answered = kept.calls;
  const refusal = classify(exchange, name, what);
  if (refusal instanceof ProviderUnavailableError) {
    if (answered === 0) return refusal;
    const call = exchange.kind === 'answered' ? `answered ${what} to` : `was unreachable (${what}) at`;
    return new ProviderUnavailableError(
      `bedrock ${call} call ${answered + 1}; the ${answered} answered before it are kept.`,
      undefined,
      { calls: answered, output: kept },
    );
  }
  if (refusal instanceof AmbiguousSubmissionError && answered > 0) {
    return new AmbiguousSubmissionError(
      `bedrock answered ${answered} call(s) of the submission, then call ${answered + 1} failed: ${what}`,
    );
  }
  return refusal;
}

/** What one call's failure says of that call alone. */
function classify(exchange: Exchange, name: string, what: string): Error {
  if (exchange.kind === 'unsent')
    return new ProviderUnavailableError(`bedrock unreachable: ${exchange.message}`);
  if (exchange.kind === 'lost') {
    return new AmbiguousSubmissionError(`bedrock call outcome unknown: ${exchange.message}`);
  }
  if (MODEL_FAILED.has(name)) {
    return new AmbiguousSubmissionError(`bedrock answered ${what}; the model ran and may have been billed.`);
  }
  if (name === 'ThrottlingException') {
    return new ProviderThrottledError(`bedrock answered ${what}.`);
  }
  if (UNAVAILABLE.has(name) || exchange.status === 503) {
    return new ProviderUnavailableError(`bedrock answered ${what}.`);
  }
  if (exchange.status >= 400 && exchange.status < 500 && exchange.status !== 408) {
    return new ProviderRejectedError(
      `bedrock refused the call: ${what}.`,
      `provider_rejected_${exchange.status}`,
    );
  }
  return new AmbiguousSubmissionError(`bedrock answered ${what}; the call may have been billed.`);
}

/** A kept part as `callFailure` put it on its error: the answers of the submission's first calls. */
const keptPart = z.object({
  model: z.string(),
  dimensions: z.int().positive(),
  embeddings: z.array(z.array(z.number())),
  inputTokens: z.int().min(0),
  calls: z.int().min(0),
});

/** Texts cut to what the model takes: a passage longer than that is embedded by its beginning. */
const within = (text: string, maxChars: number): string =>
  text.length > maxChars ? text.slice(0, maxChars) : text;

/**
 * The adapter, and `embed` for a caller that needs vectors now rather than a
 * job's output (a listener's query): the same calls, classified the same way.
 */
export interface BedrockAdapter extends ProviderAdapter<'bedrock'> {
  /** Embeds the request's texts; with `answered`, only those after the ones its calls embedded. */
  embed(request: ProviderRequests['bedrock'], answered?: AnsweredPart): Promise<BedrockEmbeddings>;
}

export const bedrock = (config: ProviderConfig): BedrockAdapter => {
  const client = new BedrockRuntimeClient({
    ...(config.baseUrl ? { endpoint: config.baseUrl } : {}),
    maxAttempts: 1,
    requestHandler: { requestTimeout: config.submitTimeoutMs, connectionTimeout: config.submitTimeoutMs },
  });

  async function invoke(modelId: string, body: unknown): Promise<unknown> {
    const answer = await client.send(
      new InvokeModelCommand({
        modelId,
        contentType: 'application/json',
        accept: 'application/json',
        body: JSON.stringify(body),
      }),
    );
    return JSON.parse(new TextDecoder().decode(answer.body));
  }

  async function embed(
    request: ProviderRequests['bedrock'],
    answered?: AnsweredPart,
  ): Promise<BedrockEmbeddings> {
    const model = EMBEDDING_MODELS[request.model];
    const texts = request.texts.map((text) => within(text, model.maxTextChars));
    const kept = answered ? keptPart.parse(answered.output) : undefined;
    if (
      kept &&
      (kept.model !== model.modelId ||
        kept.dimensions !== request.dimensions ||
        kept.embeddings.length > texts.length)
    ) {
      throw new Error('The kept answers of the submission are not of its model and dimensions, or too many.');
    }
    const embeddings: number[][] = [...(kept?.embeddings ?? [])];
    let inputTokens = kept?.inputTokens ?? 0;
    let calls = kept?.calls ?? 0;
    for (let from = embeddings.length; from < texts.length; from += model.textsPerCall) {
      const batch = texts.slice(from, from + model.textsPerCall);
      let raw: unknown;
      try {
        raw = await invoke(
          model.modelId,
          model.normalizeParameter
            ? { inputText: batch[0], dimensions: request.dimensions, normalize: request.normalize }
            : { texts: batch, input_type: COHERE_INPUT_TYPE[request.purpose], truncate: 'END' },
        );
      } catch (error) {
        throw callFailure(error, {
          model: model.modelId,
          dimensions: request.dimensions,
          embeddings: [...embeddings],
          inputTokens,
          calls,
        });
      }
      calls++;
      let vectors: number[][];
      if (model.normalizeParameter) {
        const parsed = titanAnswer.safeParse(raw);
        if (!parsed.success) throw new AmbiguousSubmissionError('bedrock answered without an embedding.');
        vectors = [parsed.data.embedding];
        inputTokens += parsed.data.inputTextTokenCount;
      } else {
        const parsed = cohereAnswer.safeParse(raw);
        if (!parsed.success || parsed.data.embeddings.length !== batch.length) {
          throw new AmbiguousSubmissionError('bedrock answered without one embedding per text.');
        }
        vectors = parsed.data.embeddings;
        inputTokens += Math.ceil(batch.reduce((sum, text) => sum + text.length, 0) / 4);
      }
      // At the first wrong answer: every further call would be billed for vectors the index cannot take.
      const wrong = vectors.find((vector) => vector.length !== request.dimensions);
      if (wrong) {
        throw new ProviderRejectedError(
          `bedrock answered ${wrong.length} dimensions; the index has ${request.dimensions}.`,
          'embedding_dimensions_mismatch',
        );
      }
      embeddings.push(...vectors);
    }
    return { model: model.modelId, dimensions: request.dimensions, embeddings, inputTokens, calls };
  }

  return {
    name: NAME,
    deduplicates: false,
    async submit(submission) {
      const output = await embed(submission.request, submission.answered);
      return { providerJobId: `bedrock_${randomUUID()}`, answer: { output } };
    },
    embed,
    async status(providerJobId): Promise<ProviderJobStatus> {
      // Nothing to ask: a call's answer came with it, and the workflow kept it.
      throw new ProviderUnavailableError(`bedrock keeps no record of ${providerJobId}.`);
    },
    async cancel() {
      // A call is over before a cancel could be asked; nothing runs at Bedrock after it.
    },
    verify: () => 'mismatch',
    parse: () => [],
  };
};
