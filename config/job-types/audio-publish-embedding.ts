import * as z from 'zod';
import { EMBEDDING_MODEL_NAMES } from '../embedding-models';
import { defineJobType, jsonFile, OutputInvalidError, type ProviderBinding } from './job-type';

/**
 * `audio.publish.embedding`: a run of an `audio.publish` job's passages,
 * embedded. Made by the parent's workflow only (its `embed` state, one per
 * run of `EMBEDDING_PASSAGES_PER_JOB` passages), under a key derived from the
 * parent's, so it waits in its tenant's line at the embedding provider, holds
 * one of that provider's slots while its calls run and converges like any
 * job: the provider's limit is the limit of these jobs' slots. The model,
 * dimensions and normalization are on the job, as the parent's workflow chose
 * them from the deployment's settings: a job records what embedded it.
 */

const embeddingInput = z.strictObject({
  /** The parent's passages (a JSON array of `{start, end, text}`), an output key of the parent. */
  passagesKey: z.string().min(1).max(1024),
  from: z.int().min(0),
  count: z.int().min(1).max(500),
  model: z.enum(EMBEDDING_MODEL_NAMES),
  dimensions: z.int().min(1).max(4096),
  normalize: z.boolean(),
});

/** Where a run's embeddings are kept: read by the parent's `store-vectors` step. */
export const EMBEDDINGS_FILE = 'embeddings.json';

/** What Bedrock's adapter answers (lambdas/providers/bedrock.ts), checked before it is kept. */
const embeddingsAnswer = z.object({
  model: z.string(),
  dimensions: z.int().positive(),
  embeddings: z.array(z.array(z.number())),
  inputTokens: z.int().min(0),
  calls: z.int().min(0),
});

/** A kept run: its embeddings, in passage order from `from`. */
export const storedEmbeddings = z.object({
  from: z.int().min(0),
  model: z.string(),
  dimensions: z.int().positive(),
  embeddings: z.array(z.array(z.number())),
});
export type StoredEmbeddings = z.infer<typeof storedEmbeddings>;

const passageTexts = z.array(z.object({ text: z.string() }));

const providers: { readonly bedrock: ProviderBinding<'bedrock'> } = {
  bedrock: {
    async request(raw, context) {
      const input = embeddingInput.parse(raw);
      const passages = passageTexts.parse(JSON.parse(await context.readOutput(input.passagesKey)));
      const texts = passages.slice(input.from, input.from + input.count).map((passage) => passage.text);
      if (texts.length !== input.count) {
        throw new OutputInvalidError(
          `The passages hold ${passages.length}; the run asks for ${input.from}..${input.from + input.count - 1}.`,
        );
      }
      return {
        model: input.model,
        texts,
        purpose: 'document',
        dimensions: input.dimensions,
        normalize: input.normalize,
      };
    },
    output(raw, rawInput) {
      const input = embeddingInput.parse(rawInput);
      const answer = embeddingsAnswer.safeParse(raw);
      if (!answer.success || answer.data.embeddings.length !== input.count) {
        throw new OutputInvalidError(
          `Bedrock did not answer one embedding for each of ${input.count} passages.`,
        );
      }
      const kept: StoredEmbeddings = {
        from: input.from,
        model: answer.data.model,
        dimensions: answer.data.dimensions,
        embeddings: answer.data.embeddings,
      };
      return {
        files: [jsonFile('embeddings', EMBEDDINGS_FILE, kept)],
        result: { count: input.count, inputTokens: answer.data.inputTokens, calls: answer.data.calls },
      };
    },
  },
};

export const audioPublishEmbedding = defineJobType({
  name: 'audio.publish.embedding',
  description: 'A run of an audio.publish recording’s passages, embedded for search (made by its workflow).',
  input: embeddingInput,
  result: z.strictObject({
    embeddingsUrl: z.url(),
    count: z.int().min(1),
    inputTokens: z
      .int()
      .min(0)
      .describe('Input tokens the model counted: what the embedding was billed for.'),
    calls: z.int().min(1).describe('InvokeModel calls the run made.'),
  }),
  schemaNames: { input: 'AudioPublishEmbeddingInput', result: 'AudioPublishEmbeddingResult' },
  provider: 'bedrock',
  providers,
  internal: true,
});
