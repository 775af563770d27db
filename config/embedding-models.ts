/**
 * The embedding models a deployment can choose (`EMBEDDING_MODEL`), as the
 * Amazon Bedrock user guide describes them; the request and response shapes
 * are in the provider module (`lambdas/providers/bedrock.ts`). Plain data,
 * read by the settings (which dimensions a model allows), the CDK stack (the
 * model whose invocation is granted, the index's dimension) and the handlers.
 *
 * - Amazon Titan Text Embeddings V2, `amazon.titan-embed-text-v2:0`
 *   (https://docs.aws.amazon.com/bedrock/latest/userguide/titan-embedding-models.html):
 *   one text per call, up to 8,192 tokens or 50,000 characters; 1,024
 *   (default), 512 or 256 dimensions; optimized for English, with 100+ other
 *   languages, Arabic among them, in preview.
 * - Cohere Embed Multilingual v3, `cohere.embed-multilingual-v3`
 *   (https://docs.aws.amazon.com/bedrock/latest/userguide/model-parameters-embed-v3.html):
 *   up to 96 texts per call, each up to 2,048 characters (Cohere recommends
 *   under 512 tokens); 1,024 dimensions; 100+ languages; documents and
 *   queries are embedded differently (`input_type`).
 *
 * Both are throttled by requests per minute (the "Quotas for Amazon Bedrock"
 * page, https://docs.aws.amazon.com/bedrock/latest/userguide/quotas.html):
 * `MAX_IN_FLIGHT_BEDROCK` keeps the calls in flight at once under it.
 */

export interface EmbeddingModel {
  /** The Bedrock model id `InvokeModel` is called with, and the foundation-model ARN granted. */
  readonly modelId: string;
  readonly title: string;
  /** The dimensions the model can answer with; the first is its default. */
  readonly dimensions: readonly [number, ...number[]];
  /** Whether `normalize` is a request parameter (Titan); otherwise the model's own vectors are used. */
  readonly normalizeParameter: boolean;
  /** Texts one `InvokeModel` call embeds. */
  readonly textsPerCall: number;
  /** The longest text the model takes, in characters; longer passages are cut there. */
  readonly maxTextChars: number;
}

export const EMBEDDING_MODELS = {
  'titan-text-v2': {
    modelId: 'amazon.titan-embed-text-v2:0',
    title: 'Amazon Titan Text Embeddings V2',
    dimensions: [1024, 512, 256],
    normalizeParameter: true,
    textsPerCall: 1,
    maxTextChars: 50_000,
  },
  'cohere-multilingual-v3': {
    modelId: 'cohere.embed-multilingual-v3',
    title: 'Cohere Embed Multilingual v3',
    dimensions: [1024],
    normalizeParameter: false,
    textsPerCall: 96,
    maxTextChars: 2048,
  },
} as const satisfies Record<string, EmbeddingModel>;

export type EmbeddingModelName = keyof typeof EMBEDDING_MODELS;
export const EMBEDDING_MODEL_NAMES = Object.keys(EMBEDDING_MODELS) as [
  EmbeddingModelName,
  ...EmbeddingModelName[],
];

/** Whom an embedding is for: a passage stored in the index, or a listener's query (Cohere embeds them differently). */
export type EmbeddingPurpose = 'document' | 'query';
