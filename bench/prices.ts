/**
 * Unit prices the floor-cost figures use: AWS list prices, us-east-1, on-demand,
 * after free tiers, in US dollars. Sources are the AWS pricing pages named
 * below, as of the date recorded here (the Fargate and Lambda ephemeral
 * storage prices on the date in their source); they were not fetched when
 * the bench runs, so check them before quoting a figure as current.
 */
export const PRICES_AS_OF = '2026-11-29';
export const PRICES_REGION = 'us-east-1';

export const prices = {
  stepFunctionsStandardPerTransition: {
    usd: 0.025 / 1000,
    source: 'AWS Step Functions pricing (Standard workflows: $0.025 per 1,000 state transitions)',
  },
  lambdaPerRequest: {
    usd: 0.2 / 1_000_000,
    source: 'AWS Lambda pricing (requests: $0.20 per 1M)',
  },
  lambdaArmPerGbSecond: {
    usd: 0.0000133334,
    source: 'AWS Lambda pricing (duration, Arm: $0.0000133334 per GB-second, first 7.5B GB-seconds a month)',
  },
  // How many units each request takes (item sizes, Query, transactions, index writes): bench/support/dynamodb-units.cjs.
  dynamoDbPerWriteRequestUnit: {
    usd: 0.625 / 1_000_000,
    source:
      'Amazon DynamoDB pricing, on-demand, https://aws.amazon.com/dynamodb/pricing/on-demand/ ($0.625 per 1M write request units: a standard write of up to 1 KB is one, a transactional one two; checked 2026-12-05)',
  },
  dynamoDbPerReadRequestUnit: {
    usd: 0.125 / 1_000_000,
    source:
      'Amazon DynamoDB pricing, on-demand, https://aws.amazon.com/dynamodb/pricing/on-demand/ ($0.125 per 1M read request units: a strongly consistent read of up to 4 KB is one, an eventually consistent one half, a transactional one two; checked 2026-12-05)',
  },
  sqsPerRequest: {
    usd: 0.4 / 1_000_000,
    source: 'Amazon SQS pricing (standard queues: $0.40 per 1M requests, 64 KB chunks)',
  },
  apiGatewayRestPerRequest: {
    usd: 3.5 / 1_000_000,
    source: 'Amazon API Gateway pricing (REST APIs: $3.50 per 1M requests, first 333M)',
  },
  apiGatewayWebSocketPerMessage: {
    usd: 1.0 / 1_000_000,
    source: 'Amazon API Gateway pricing (WebSocket APIs: $1.00 per 1M messages of up to 32 KB, first 1B)',
  },
  schedulerPerInvocation: {
    usd: 1.0 / 1_000_000,
    source: 'Amazon EventBridge pricing (Scheduler: $1.00 per 1M invocations after 14M free a month)',
  },
  s3PutPerRequest: {
    usd: 0.005 / 1000,
    source: 'Amazon S3 pricing (S3 Standard PUT/POST: $0.005 per 1,000 requests)',
  },
  lambdaEphemeralStoragePerGbSecond: {
    usd: 0.0000000309,
    source:
      'AWS Lambda pricing (ephemeral storage: $0.0000000309 per GB-second configured above the 512 MB included; recorded 2026-12-02)',
  },
  fargateArmPerVcpuHour: {
    usd: 0.03238,
    source:
      'AWS Fargate pricing (Linux/ARM: $0.03238 per vCPU-hour, billed per second with a one-minute minimum; recorded 2026-12-02)',
  },
  fargateArmPerGbHour: {
    usd: 0.00356,
    source: 'AWS Fargate pricing (Linux/ARM: $0.00356 per GB-hour of memory; recorded 2026-12-02)',
  },
  fargateEphemeralStoragePerGbHour: {
    usd: 0.000111,
    source:
      'AWS Fargate pricing (ephemeral storage: $0.000111 per GB-hour configured above the 20 GB included; recorded 2026-12-02)',
  },
  s3GetPerRequest: {
    usd: 0.0004 / 1000,
    source: 'Amazon S3 pricing (S3 Standard GET: $0.0004 per 1,000 requests)',
  },
  s3ListPerRequest: {
    usd: 0.005 / 1000,
    source:
      'Amazon S3 pricing, https://aws.amazon.com/s3/pricing/ (S3 Standard PUT, COPY, POST, LIST requests: $0.005 per 1,000; DELETE requests are free, a DeleteObjects counted as one)',
  },
  // Search: the two embedding models config/embedding-models.ts offers, and S3 Vectors (bench/cost.ts, searchCostPerHour).
  bedrockTitanTextEmbeddingsV2PerInputToken: {
    usd: 0.00002 / 1000,
    source:
      'Amazon Bedrock pricing, https://aws.amazon.com/bedrock/pricing/, on-demand, Amazon Titan Text Embeddings V2 ($0.00002 per 1,000 input tokens; batch the same; the stored copy of the page read 2026-12-06 does not render its price tables, so the figure is the one Amazon Bedrock lists through OpenRouter, $0.02 per 1M tokens, https://openrouter.ai/amazon/titan-embed-text-v2/providers, checked 2026-12-06)',
  },
  bedrockCohereEmbedMultilingualV3PerInputToken: {
    usd: 0.0001 / 1000,
    source:
      'Amazon Bedrock pricing, https://aws.amazon.com/bedrock/pricing/, on-demand, Cohere Embed 3 Multilingual ($0.0001 per 1,000 input tokens; the stored copy of the page read 2026-12-06 does not render its price tables, so the figure is $0.10 per 1M input tokens as listed for embed-multilingual-v3.0 at https://www.getmaxim.ai/bifrost/llm-cost-calculator/provider/cohere and in open-source tables of Bedrock prices, checked 2026-12-06)',
  },
  s3VectorsStoragePerGbMonth: {
    usd: 0.06,
    source:
      'Amazon S3 pricing, S3 Vectors, https://aws.amazon.com/s3/pricing/ ($0.06 per GB-month of logical storage: vector data, key and all metadata; checked 2026-12-06)',
  },
  s3VectorsPutPerGb: {
    usd: 0.2,
    source:
      'Amazon S3 pricing, S3 Vectors, https://aws.amazon.com/s3/pricing/ ($0.20 per logical GB uploaded by PutVectors: vector data, key and all metadata; checked 2026-12-06)',
  },
  s3VectorsQueryPerRequest: {
    usd: 2.5 / 1_000_000,
    source:
      'Amazon S3 pricing, S3 Vectors, https://aws.amazon.com/s3/pricing/ ($2.50 per 1M QueryVectors requests; checked 2026-12-06)',
  },
  s3VectorsQueryPerTbFirst100kVectors: {
    usd: 0.004,
    source:
      "Amazon S3 pricing, S3 Vectors, https://aws.amazon.com/s3/pricing/ (query data processed: $0.004 per TB for an index's first 100 thousand vectors, data processed being the average vector's data, key and filterable metadata times the vectors in the index; the page's pricing example 1; checked 2026-12-06)",
  },
  s3VectorsQueryPerTbOver100kVectors: {
    usd: 0.002,
    source:
      "Amazon S3 pricing, S3 Vectors, https://aws.amazon.com/s3/pricing/ (query data processed: $0.002 per TB for an index's vectors past the first 100 thousand, the page's pricing example 1; indexes over 10 million vectors have paid up to 80 % less since 2026-06-16, a tier not recorded here; checked 2026-12-06)",
  },
  s3VectorsOtherPerRequest: {
    usd: 0.055 / 1000,
    source:
      'Amazon S3 pricing, S3 Vectors, https://aws.amazon.com/s3/pricing/ (GetVectors, ListVectors, DeleteVectors and every request but PutVectors and QueryVectors: $0.055 per 1,000 requests as recorded 2026-12-06; the stored copy of the page does not render its request price cells, so check this figure before quoting it)',
  },
  // Media items put their lifecycle events on the deployment's bus (lambdas/adapters/eventbridge-events.ts).
  eventBridgeCustomEventPer64Kb: {
    usd: 1.0 / 1_000_000,
    source:
      'Amazon EventBridge pricing, https://aws.amazon.com/eventbridge/pricing/ (event bus, custom events: $1.00 per 1M events published, each 64 KB of an event one; recorded 2026-12-06)',
  },
} as const;
