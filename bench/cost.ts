import { PRICES_AS_OF, PRICES_REGION, prices } from './prices';
import type { Measured } from './support/stack';

/**
 * The floor cost of a job: what AWS would bill for the calls the local stack
 * counted while running it, at the list prices of ./prices.ts. Storage,
 * CloudWatch Logs and metrics, X-Ray and data transfer are not in it.
 */

export interface CostLine {
  readonly service: string;
  /** Billed units per job. */
  readonly perJob: number;
  readonly usdPerThousandJobs: number;
  readonly basis: string;
}

export interface JobCost {
  readonly lines: readonly CostLine[];
  readonly usdPerThousandJobs: number;
  readonly prices: { readonly region: string; readonly asOf: string; readonly file: string };
}

const sumOf = (requests: Record<string, number>, keys: readonly string[]) =>
  keys.reduce((sum, key) => sum + (requests[key] ?? 0), 0);

const RECONCILER_FUNCTION = 'longhaul-reconcile';
const INDEX_UNITS = 'index-write-units:';
const SQS_REQUESTS = [
  'sqs:SendMessage',
  'sqs:SendMessageBatch',
  'sqs:DeleteMessage',
  'sqs:DeleteMessageBatch',
  'sqs:ChangeMessageVisibility',
  'sqs:ChangeMessageVisibilityBatch',
] as const;

/** DynamoDB per job as the counter measured it: each item of a batch or a transaction is one read or write. */
export interface DynamoDbPerJob {
  readonly reads: number;
  readonly writes: number;
  readonly readUnits: number;
  /** The table's write units, by item size. */
  readonly tableWriteUnits: number;
  /** The global secondary indexes' write units, in all and by `<table>/<index>`. */
  readonly indexWriteUnits: number;
  readonly indexWriteUnitsByIndex: Readonly<Record<string, number>>;
  /** Requests whose units the emulator did not report, counted at the least AWS bills. */
  readonly estimatedRequests: number;
}

export function dynamoDbPerJob(measured: Measured): DynamoDbPerJob {
  const d = measured.dynamodb;
  return {
    reads: d.reads ?? 0,
    writes: d.writes ?? 0,
    readUnits: d['read-units'] ?? 0,
    tableWriteUnits: d['write-units'] ?? 0,
    indexWriteUnits: d['index-write-units'] ?? 0,
    indexWriteUnitsByIndex: Object.fromEntries(
      Object.entries(d)
        .filter(([key]) => key.startsWith(INDEX_UNITS))
        .map(([key, n]) => [key.slice(INDEX_UNITS.length), n]),
    ),
    estimatedRequests: d['estimated-requests'] ?? 0,
  };
}

/**
 * @param measured what the stack did, per job
 * @param transitions state transitions per job, from the executions' histories
 */
export function jobCost(measured: Measured, transitions: number): JobCost {
  const r = measured.requests;
  const dynamodb = dynamoDbPerJob(measured);
  // The reconciler runs on its schedule whether or not there are jobs: a fixed cost, see fixedMonthlyCost.
  const perJobFunctions = Object.entries(measured.lambda).filter(([name]) => name !== RECONCILER_FUNCTION);
  const lambdaFns = perJobFunctions.map(([, fn]) => fn);
  const invocations = lambdaFns.reduce((sum, fn) => sum + fn.invocations, 0);
  const gbSeconds = lambdaFns.reduce((sum, fn) => sum + fn.gbSeconds, 0);
  const byFunction = perJobFunctions
    .map(([name, fn]) => `${name.replace(/^longhaul-/, '')} ${fn.invocations.toFixed(1)}`)
    .join(', ');
  const byIndex = Object.entries(dynamodb.indexWriteUnitsByIndex)
    .map(([index, n]) => `${index.replace(/^.*\//, '')} ${n.toFixed(1)}`)
    .join(', ');
  const estimated =
    dynamodb.estimatedRequests > 0
      ? `; ${dynamodb.estimatedRequests.toFixed(1)} requests not reported by the emulator, counted at the least AWS bills`
      : '';
  const line = (service: string, perJob: number, unitUsd: number, basis: string): CostLine => ({
    service,
    perJob,
    usdPerThousandJobs: perJob * unitUsd * 1000,
    basis,
  });
  const lines = [
    line(
      'Step Functions state transitions',
      transitions,
      prices.stepFunctionsStandardPerTransition.usd,
      'counted: StateEntered events in each execution history',
    ),
    line('Lambda requests', invocations, prices.lambdaPerRequest.usd, `counted: ${byFunction}`),
    line(
      'Lambda duration (GB-s)',
      gbSeconds,
      prices.lambdaArmPerGbSecond.usd,
      'counted: billed ms x configured memory, on this machine',
    ),
    line(
      'API Gateway REST requests',
      measured.restApiRequests,
      prices.apiGatewayRestPerRequest.usd,
      'counted: submit (providers post to the provider events function URL, a Lambda invocation each; the bench polls the table, not the API)',
    ),
    line(
      'API Gateway WebSocket messages',
      r['execute-api:POST'] ?? 0,
      prices.apiGatewayWebSocketPerMessage.usd,
      'counted: messages posted to connections (none connected here)',
    ),
    line(
      'DynamoDB write units',
      dynamodb.tableWriteUnits + dynamodb.indexWriteUnits,
      prices.dynamoDbPerWriteRequestUnit.usd,
      `counted: ${dynamodb.writes.toFixed(1)} writes (a batch's or transaction's items each one): ` +
        `table ${dynamodb.tableWriteUnits.toFixed(1)} (1 KB each, the larger of before and after, a transaction's twice, a failed condition too) ` +
        `+ indexes ${dynamodb.indexWriteUnits.toFixed(1)} (${byIndex || 'none'})${estimated}`,
    ),
    line(
      'DynamoDB read units',
      dynamodb.readUnits,
      prices.dynamoDbPerReadRequestUnit.usd,
      `counted: ${dynamodb.reads.toFixed(1)} reads, by size (4 KB each; a Query by all the items it read; eventually consistent half, a transaction's twice)`,
    ),
    line(
      'SQS requests',
      sumOf(r, SQS_REQUESTS),
      prices.sqsPerRequest.usd,
      'counted: send and delete; the poller’s ReceiveMessage calls are a fixed cost, below',
    ),
    line('S3 PUT', r['s3:PUT'] ?? 0, prices.s3PutPerRequest.usd, 'counted'),
    line('S3 GET', (r['s3:GET'] ?? 0) + (r['s3:HEAD'] ?? 0), prices.s3GetPerRequest.usd, 'counted'),
  ];
  return {
    lines,
    usdPerThousandJobs: lines.reduce((sum, l) => sum + l.usdPerThousandJobs, 0),
    prices: { region: PRICES_REGION, asOf: PRICES_AS_OF, file: 'bench/prices.ts' },
  };
}

/**
 * What runs whether or not there are jobs: the reconciler's schedule, one
 * invocation per period.
 */
export function fixedMonthlyCost(scheduleSeconds: number, passMs: number, memoryMb: number) {
  const passes = (30 * 24 * 3600) / scheduleSeconds;
  const gbSeconds = passes * (memoryMb / 1024) * (Math.ceil(passMs) / 1000);
  const reconcilerUsd =
    passes * (prices.schedulerPerInvocation.usd + prices.lambdaPerRequest.usd) +
    gbSeconds * prices.lambdaArmPerGbSecond.usd;
  // An idle SQS event source long-polls (20 s) with about five pollers: 15 ReceiveMessage calls a minute.
  const idlePolls = 30 * 24 * 60 * 15;
  return {
    reconcilerPassesPerMonth: passes,
    reconcilerGbSeconds: gbSeconds,
    reconcilerUsdPerMonth: reconcilerUsd,
    idleQueuePollsPerMonth: idlePolls,
    idleQueuePollsUsdPerMonth: idlePolls * prices.sqsPerRequest.usd,
  };
}

/** Approximate DynamoDB item size: each attribute's name and value, as the developer guide counts them. */
export function itemBytes(item: Record<string, unknown>): number {
  return Object.entries(item).reduce(
    (sum, [name, value]) => sum + Buffer.byteLength(name) + valueBytes(value),
    0,
  );
}

function valueBytes(value: unknown): number {
  if (value === null || value === undefined || typeof value === 'boolean') return 1;
  if (typeof value === 'string') return Buffer.byteLength(value);
  if (typeof value === 'number')
    return Math.ceil(String(Math.abs(value)).replace(/[.e+-]/g, '').length / 2) + 1;
  if (value instanceof Uint8Array) return value.byteLength;
  if (value instanceof Set) return [...value].reduce((sum: number, v) => sum + valueBytes(v), 0);
  if (Array.isArray(value)) return 3 + value.reduce((sum: number, v) => sum + 1 + valueBytes(v), 0);
  return (
    3 +
    Object.entries(value as Record<string, unknown>).reduce(
      (sum, [name, v]) => sum + 1 + Buffer.byteLength(name) + valueBytes(v),
      0,
    )
  );
}

/*
 * Search: what publishing an hour of speech and searching it costs in AWS.
 * The embedding model's tokens (once per published hour), S3 Vectors' PUT
 * (once) and storage (every month), and a thousand searches over an index of
 * many hours (each query embedded, then one QueryVectors). Sizes are counted
 * as the S3 pricing page's S3 Vectors examples count them, in binary units:
 * 1 KB = 1,024 bytes, 1 GB = 1,024³, 1 TB = 1,024⁴.
 */

const GB = 1024 ** 3;
const TB = 1024 ** 4;
/** One vector dimension as S3 Vectors stores it: a float32. */
const BYTES_PER_DIMENSION = 4;
/** The first tier of query data processed: an index's first 100 thousand vectors. */
const FIRST_TIER_VECTORS = 100_000;
/** Past this many vectors in an index a cheaper tier applies (since 2026-06-16) whose price is not recorded here. */
const LAST_PRICED_TIER_VECTORS = 10_000_000;

/** One vector's parts, as S3 Vectors sizes it. */
export interface VectorSize {
  readonly dimensions: number;
  /** The key: one byte a character. */
  readonly keyBytes: number;
  /** Metadata a query can filter on: stored, uploaded and processed by every query. */
  readonly filterableMetadataBytes: number;
  /** Metadata only returned with a hit (the passage's text and times): stored and uploaded, not processed. */
  readonly nonFilterableMetadataBytes: number;
}

/** A vector's logical size: what storage and PUT are billed on. */
export const storedBytes = (v: VectorSize) =>
  v.dimensions * BYTES_PER_DIMENSION + v.keyBytes + v.filterableMetadataBytes + v.nonFilterableMetadataBytes;

/** What a query processes of each vector in the index: its data, key and filterable metadata. */
export const queriedBytes = (v: VectorSize) =>
  v.dimensions * BYTES_PER_DIMENSION + v.keyBytes + v.filterableMetadataBytes;

export interface VectorQueriesCost {
  readonly requestsUsd: number;
  /** Data processed over all the queries, in TB. */
  readonly processedTb: number;
  readonly processedUsd: number;
  readonly usd: number;
}

/**
 * `queries` QueryVectors on one index of `vectors` vectors: the request
 * charge, and the data processed (every vector of the index, whatever the
 * filter keeps) at the first tier's price for the first 100 thousand
 * vectors and the second's for the rest.
 */
export function s3VectorsQueryCost(
  vectors: number,
  bytesPerVector: number,
  queries: number,
): VectorQueriesCost {
  if (vectors > LAST_PRICED_TIER_VECTORS) {
    throw new RangeError(
      `an index of ${vectors} vectors is past ${LAST_PRICED_TIER_VECTORS}, whose query price bench/prices.ts does not record`,
    );
  }
  const firstTb = (Math.min(vectors, FIRST_TIER_VECTORS) * bytesPerVector * queries) / TB;
  const restTb = (Math.max(0, vectors - FIRST_TIER_VECTORS) * bytesPerVector * queries) / TB;
  const requestsUsd = queries * prices.s3VectorsQueryPerRequest.usd;
  const processedUsd =
    firstTb * prices.s3VectorsQueryPerTbFirst100kVectors.usd +
    restTb * prices.s3VectorsQueryPerTbOver100kVectors.usd;
  return { requestsUsd, processedTb: firstTb + restTb, processedUsd, usd: requestsUsd + processedUsd };
}

/** What the search cost of an hour rests on; each figure's source is where the section sets it. */
export interface SearchCostAssumptions {
  readonly wordsPerHour: number;
  readonly passageSeconds: number;
  /** Characters a word takes in a transcript, its space and punctuation included. */
  readonly charsPerWord: number;
  /** Characters a token takes, by model: what its input tokens are counted from. */
  readonly charsPerToken: { readonly titan: number; readonly cohere: number };
  readonly vector: VectorSize;
  /** The index the queries search, in published hours. */
  readonly indexHours: number;
  readonly queries: number;
  /** Characters a query takes. */
  readonly queryChars: number;
}

export interface SearchCostLine {
  readonly item: string;
  readonly quantity: number;
  readonly unit: string;
  readonly usd: number;
}

export interface SearchCost {
  readonly passagesPerHour: number;
  readonly tokensPerHour: { readonly titan: number; readonly cohere: number };
  readonly storedBytesPerVector: number;
  readonly queriedBytesPerVector: number;
  readonly indexVectors: number;
  /** Once, when an hour is published: embedding (Titan or Cohere) and PutVectors. */
  readonly embedTitanUsd: number;
  readonly embedCohereUsd: number;
  readonly putUsd: number;
  /** Every month the hour stays published. */
  readonly storageUsdPerMonth: number;
  /** `queries` searches over `indexHours`: each query embedded (Titan), then one QueryVectors. */
  readonly queries: VectorQueriesCost & { readonly embedUsd: number; readonly totalUsd: number };
  readonly lines: readonly SearchCostLine[];
  readonly prices: { readonly region: string; readonly file: string };
}

export function searchCostPerHour(a: SearchCostAssumptions): SearchCost {
  const passagesPerHour = 3600 / a.passageSeconds;
  const chars = a.wordsPerHour * a.charsPerWord;
  const tokensPerHour = { titan: chars / a.charsPerToken.titan, cohere: chars / a.charsPerToken.cohere };
  const stored = storedBytes(a.vector);
  const queried = queriedBytes(a.vector);
  const hourGb = (passagesPerHour * stored) / GB;
  const embedTitanUsd = tokensPerHour.titan * prices.bedrockTitanTextEmbeddingsV2PerInputToken.usd;
  const embedCohereUsd = tokensPerHour.cohere * prices.bedrockCohereEmbedMultilingualV3PerInputToken.usd;
  const putUsd = hourGb * prices.s3VectorsPutPerGb.usd;
  const storageUsdPerMonth = hourGb * prices.s3VectorsStoragePerGbMonth.usd;
  const indexVectors = a.indexHours * passagesPerHour;
  const queryTokens = (a.queries * a.queryChars) / a.charsPerToken.titan;
  const vectorQueries = s3VectorsQueryCost(indexVectors, queried, a.queries);
  const embedUsd = queryTokens * prices.bedrockTitanTextEmbeddingsV2PerInputToken.usd;
  const n = (count: number) => count.toLocaleString('en-US');
  return {
    passagesPerHour,
    tokensPerHour,
    storedBytesPerVector: stored,
    queriedBytesPerVector: queried,
    indexVectors,
    embedTitanUsd,
    embedCohereUsd,
    putUsd,
    storageUsdPerMonth,
    queries: { ...vectorQueries, embedUsd, totalUsd: vectorQueries.usd + embedUsd },
    lines: [
      {
        item: 'Titan Text Embeddings V2, one hour',
        quantity: tokensPerHour.titan,
        unit: 'input tokens',
        usd: embedTitanUsd,
      },
      {
        item: 'Cohere Embed Multilingual v3, one hour',
        quantity: tokensPerHour.cohere,
        unit: 'input tokens',
        usd: embedCohereUsd,
      },
      { item: 'S3 Vectors PUT, one hour', quantity: hourGb, unit: 'GB uploaded', usd: putUsd },
      {
        item: 'S3 Vectors storage, one hour, a month',
        quantity: hourGb,
        unit: 'GB-month',
        usd: storageUsdPerMonth,
      },
      {
        item: `${n(a.queries)} queries embedded (Titan)`,
        quantity: queryTokens,
        unit: 'input tokens',
        usd: embedUsd,
      },
      {
        item: `${n(a.queries)} QueryVectors requests`,
        quantity: a.queries,
        unit: 'requests',
        usd: vectorQueries.requestsUsd,
      },
      {
        item: `${n(a.queries)} queries' data processed, index of ${n(a.indexHours)} h (${n(indexVectors)} vectors)`,
        quantity: vectorQueries.processedTb,
        unit: 'TB',
        usd: vectorQueries.processedUsd,
      },
    ],
    prices: { region: PRICES_REGION, file: 'bench/prices.ts' },
  };
}
