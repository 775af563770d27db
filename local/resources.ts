import {
  type AttributeDefinition,
  CreateTableCommand,
  type CreateTableCommandInput,
  DescribeTableCommand,
  type DynamoDBClient,
  type KeySchemaElement,
  ResourceNotFoundException,
  type TableDescription,
} from '@aws-sdk/client-dynamodb';
import { CreateBucketCommand, HeadBucketCommand, NotFound, type S3Client } from '@aws-sdk/client-s3';
import {
  CreateIndexCommand,
  CreateVectorBucketCommand,
  GetIndexCommand,
  GetVectorBucketCommand,
  type Index,
  NotFoundException,
  type S3VectorsClient,
} from '@aws-sdk/client-s3vectors';
import {
  CreateQueueCommand,
  GetQueueAttributesCommand,
  GetQueueUrlCommand,
  type QueueAttributeName,
  QueueDoesNotExist,
  SetQueueAttributesCommand,
  type SQSClient,
} from '@aws-sdk/client-sqs';
import { jobQueueEnv, resourceEnv } from '../config/layout';
import { LEGACY_PROVIDER, PROVIDER_NAMES, type ProviderName } from '../config/providers';
import type { LocalTemplate, QueueFacts, TableFacts, VectorIndexFacts } from './template';

/**
 * The local stack's resources, created as the synthesized template declares
 * them (keys, indexes, queue attributes), idempotently: what exists is kept (queue attributes are
 * brought back to the configuration, as a deployment would), what is missing
 * is created.
 */

export const localResourceNames = {
  jobTable: 'longhaul-jobs',
  apiKeyTable: 'longhaul-api-keys',
  connectionTable: 'longhaul-connections',
  /** The first provider's jobs queue; each other provider's adds its name (`jobQueueName`). */
  jobQueue: 'longhaul-jobs-queue',
  handOffQueue: 'longhaul-hand-off-queue',
  deadLetterQueue: 'longhaul-jobs-dlq',
  inputBucket: 'longhaul-inputs',
  outputBucket: 'longhaul-outputs',
  vectorBucket: 'longhaul-vectors',
  vectorIndex: 'longhaul-passages',
} as const;

export interface LocalResources {
  readonly jobTableName: string;
  readonly apiKeyTableName: string;
  /** Live-progress subscriptions, one item per WebSocket connection. */
  readonly connectionTableName: string;
  /** Each provider's jobs queue, and what its event source mapping names as each record's `eventSourceARN`. */
  readonly jobQueues: { readonly [P in ProviderName]: LocalQueue };
  /** The first provider's jobs queue, where a redrive moves dead letters. */
  readonly jobQueueUrl: string;
  readonly jobQueueArn: string;
  /** The hand-off lane: jobs handed a freed slot. */
  readonly handOffQueueUrl: string;
  readonly handOffQueueArn: string;
  readonly deadLetterQueueUrl: string;
  readonly deadLetterQueueArn: string;
  readonly inputBucketName: string;
  readonly outputBucketName: string;
  /** The S3 Vectors bucket of the passage index. */
  readonly vectorBucketName: string;
  /** The passage index. */
  readonly vectorIndexName: string;
}

/** A local queue: its URL, and its ARN (an event source mapping's `eventSourceARN`). */
export interface LocalQueue {
  readonly url: string;
  readonly arn: string;
}

export interface ResourceClients {
  readonly dynamodb: DynamoDBClient;
  readonly sqs: SQSClient;
  readonly s3: S3Client;
  readonly s3vectors: S3VectorsClient;
  /** Endpoint the SQS client calls; queue URLs are rebased onto it. */
  readonly sqsEndpoint: string;
}

/**
 * The one translation from a template table to a CreateTable request. Only
 * what the emulator implements is carried over (keys, indexes); see
 * {@link ensureTable} for TTL.
 */
export function createTableInput(tableName: string, table: TableFacts): CreateTableCommandInput {
  const keySchema = (keys: { partitionKey: string; sortKey?: string }): KeySchemaElement[] => [
    { AttributeName: keys.partitionKey, KeyType: 'HASH' },
    ...(keys.sortKey ? [{ AttributeName: keys.sortKey, KeyType: 'RANGE' as const }] : []),
  ];
  const attributeDefinitions = Object.entries(table.attributeTypes).map(
    ([name, type]) => ({ AttributeName: name, AttributeType: type }) as AttributeDefinition,
  );
  return {
    TableName: tableName,
    BillingMode: 'PAY_PER_REQUEST',
    AttributeDefinitions: attributeDefinitions,
    KeySchema: keySchema(table),
    ...(table.indexes.length > 0
      ? {
          GlobalSecondaryIndexes: table.indexes.map((index) => ({
            IndexName: index.name,
            KeySchema: keySchema(index),
            Projection: { ProjectionType: index.projection as 'ALL' | 'KEYS_ONLY' | 'INCLUDE' },
          })),
        }
      : {}),
  };
}

/** How an existing table differs from the template, in words; empty when it matches. */
export function tableDifferences(existing: TableDescription, wanted: CreateTableCommandInput): string[] {
  const keys = (schema: readonly KeySchemaElement[] | undefined) =>
    (schema ?? []).map((element) => `${element.AttributeName}:${element.KeyType}`).join(',');
  const differences: string[] = [];
  if (keys(existing.KeySchema) !== keys(wanted.KeySchema)) {
    differences.push(`key schema is ${keys(existing.KeySchema)}, expected ${keys(wanted.KeySchema)}`);
  }
  const describe = (
    indexes: readonly {
      IndexName?: string;
      KeySchema?: KeySchemaElement[];
      Projection?: { ProjectionType?: string };
    }[],
  ) =>
    new Map(
      indexes.map((index) => [
        index.IndexName ?? '',
        `${keys(index.KeySchema)} ${index.Projection?.ProjectionType}`,
      ]),
    );
  const have = describe(existing.GlobalSecondaryIndexes ?? []);
  const want = describe(wanted.GlobalSecondaryIndexes ?? []);
  for (const [name, shape] of want) {
    const found = have.get(name);
    if (found === undefined) differences.push(`index ${name} is missing`);
    else if (found !== shape) differences.push(`index ${name} is ${found}, expected ${shape}`);
  }
  for (const name of have.keys()) {
    if (!want.has(name)) differences.push(`index ${name} is not in the template`);
  }
  return differences;
}

const TABLE_ACTIVE_TIMEOUT_MS = 10_000;

async function describeTable(
  client: DynamoDBClient,
  tableName: string,
): Promise<TableDescription | undefined> {
  try {
    return (await client.send(new DescribeTableCommand({ TableName: tableName }))).Table;
  } catch (error) {
    if (error instanceof ResourceNotFoundException) return undefined;
    throw error;
  }
}

const isActive = (table: TableDescription | undefined): boolean =>
  table?.TableStatus === 'ACTIVE' &&
  (table.GlobalSecondaryIndexes ?? []).every((index) => index.IndexStatus === 'ACTIVE');

export async function ensureTable(
  client: DynamoDBClient,
  tableName: string,
  table: TableFacts,
): Promise<void> {
  const wanted = createTableInput(tableName, table);
  const existing = await describeTable(client, tableName);
  if (existing) {
    const differences = tableDifferences(existing, wanted);
    if (differences.length > 0) {
      throw new Error(
        `table ${tableName} in the data directory does not match the template (${differences.join('; ')}); ` +
          'remove <LONGHAUL_DATA_DIR>/dynamodb to recreate it',
      );
    }
  } else {
    await client.send(new CreateTableCommand(wanted));
  }
  // TTL (the template's TimeToLiveSpecification) is not enabled locally: dynalite answers
  // UpdateTimeToLive with UnknownOperationException and never expires items.
  const deadline = Date.now() + TABLE_ACTIVE_TIMEOUT_MS;
  for (;;) {
    if (isActive(await describeTable(client, tableName))) return;
    if (Date.now() > deadline) throw new Error(`table ${tableName} did not become ACTIVE`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** The queue URL on the endpoint this run uses (a restored queue remembers the port of the run that created it). */
function rebase(queueUrl: string, endpoint: string): string {
  return new URL(new URL(queueUrl).pathname, endpoint).toString();
}

export async function ensureQueue(
  clients: ResourceClients,
  queueName: string,
  attributes: Partial<Record<QueueAttributeName, string>>,
): Promise<LocalQueue> {
  let url: string | undefined;
  try {
    url = (await clients.sqs.send(new GetQueueUrlCommand({ QueueName: queueName }))).QueueUrl;
  } catch (error) {
    if (!(error instanceof QueueDoesNotExist)) throw error;
  }
  if (url) {
    url = rebase(url, clients.sqsEndpoint);
    await clients.sqs.send(new SetQueueAttributesCommand({ QueueUrl: url, Attributes: attributes }));
  } else {
    const created = await clients.sqs.send(
      new CreateQueueCommand({ QueueName: queueName, Attributes: attributes }),
    );
    if (!created.QueueUrl) throw new Error(`CreateQueue ${queueName} returned no QueueUrl`);
    url = rebase(created.QueueUrl, clients.sqsEndpoint);
  }
  const described = await clients.sqs.send(
    new GetQueueAttributesCommand({ QueueUrl: url, AttributeNames: ['QueueArn'] }),
  );
  const arn = described.Attributes?.QueueArn;
  if (!arn) throw new Error(`queue ${queueName} has no QueueArn`);
  return { url, arn };
}

export async function ensureBucket(client: S3Client, bucketName: string): Promise<void> {
  try {
    await client.send(new HeadBucketCommand({ Bucket: bucketName }));
  } catch (error) {
    if (!(error instanceof NotFound || (error as { name?: string }).name === 'NotFound')) throw error;
    await client.send(new CreateBucketCommand({ Bucket: bucketName }));
  }
}

/** How an existing index differs from the template, in words; empty when it matches. */
export function vectorIndexDifferences(existing: Index, wanted: VectorIndexFacts): string[] {
  const differences: string[] = [];
  const compare = (what: string, have: unknown, want: unknown) => {
    if (JSON.stringify(have) !== JSON.stringify(want)) {
      differences.push(`${what} is ${JSON.stringify(have)}, expected ${JSON.stringify(want)}`);
    }
  };
  compare('dataType', existing.dataType, wanted.dataType);
  compare('dimension', existing.dimension, wanted.dimension);
  compare('distanceMetric', existing.distanceMetric, wanted.distanceMetric);
  compare(
    'nonFilterableMetadataKeys',
    existing.metadataConfiguration?.nonFilterableMetadataKeys ?? [],
    wanted.nonFilterableMetadataKeys,
  );
  return differences;
}

const isNotFound = (error: unknown) => error instanceof NotFoundException;

/**
 * The vector bucket and index as the template declares them. An index's
 * dimension, metric and non-filterable keys are fixed when it is made, so
 * one in the data directory that differs from the template is an error, as a
 * table's keys are (a deployment would have to replace it).
 */
export async function ensureVectorIndex(
  client: S3VectorsClient,
  names: { readonly bucket: string; readonly index: string },
  facts: VectorIndexFacts,
): Promise<void> {
  try {
    await client.send(new GetVectorBucketCommand({ vectorBucketName: names.bucket }));
  } catch (error) {
    if (!isNotFound(error)) throw error;
    await client.send(
      new CreateVectorBucketCommand({
        vectorBucketName: names.bucket,
        ...(facts.bucketEncryption
          ? { encryptionConfiguration: facts.bucketEncryption as { sseType: 'AES256' | 'aws:kms' } }
          : {}),
      }),
    );
  }
  let existing: Index | undefined;
  try {
    existing = (
      await client.send(new GetIndexCommand({ vectorBucketName: names.bucket, indexName: names.index }))
    ).index;
  } catch (error) {
    if (!isNotFound(error)) throw error;
  }
  if (existing) {
    const differences = vectorIndexDifferences(existing, facts);
    if (differences.length > 0) {
      throw new Error(
        `vector index ${names.index} in the data directory does not match the template (${differences.join('; ')}); ` +
          'remove <LONGHAUL_DATA_DIR>/s3vectors to recreate it',
      );
    }
    return;
  }
  await client.send(
    new CreateIndexCommand({
      vectorBucketName: names.bucket,
      indexName: names.index,
      dataType: facts.dataType as 'float32',
      dimension: facts.dimension,
      distanceMetric: facts.distanceMetric as 'cosine' | 'euclidean',
      ...(facts.nonFilterableMetadataKeys.length > 0
        ? { metadataConfiguration: { nonFilterableMetadataKeys: [...facts.nonFilterableMetadataKeys] } }
        : {}),
    }),
  );
}

/** A queue's attributes as the template sets them; the redrive target is the local ARN of its dead-letter queue. */
export function queueAttributes(
  queue: QueueFacts,
  deadLetterQueueArn?: string,
): Partial<Record<QueueAttributeName, string>> {
  if (queue.redrive && deadLetterQueueArn === undefined) {
    throw new Error(
      `queue ${queue.logicalId} redrives to a dead-letter queue the local stack did not create`,
    );
  }
  return {
    VisibilityTimeout: String(queue.visibilityTimeoutSeconds),
    DelaySeconds: String(queue.delaySeconds),
    MessageRetentionPeriod: String(queue.messageRetentionSeconds),
    ReceiveMessageWaitTimeSeconds: String(queue.receiveMessageWaitSeconds),
    ...(queue.redrive
      ? {
          RedrivePolicy: JSON.stringify({
            deadLetterTargetArn: deadLetterQueueArn,
            maxReceiveCount: queue.redrive.maxReceiveCount,
          }),
        }
      : {}),
  };
}

type JobQueues = Pick<
  LocalResources,
  | 'jobQueues'
  | 'jobQueueUrl'
  | 'jobQueueArn'
  | 'handOffQueueUrl'
  | 'handOffQueueArn'
  | 'deadLetterQueueUrl'
  | 'deadLetterQueueArn'
>;

/** The local name of a provider's jobs queue. */
export const jobQueueName = (provider: ProviderName): string =>
  provider === LEGACY_PROVIDER ? localResourceNames.jobQueue : `${localResourceNames.jobQueue}-${provider}`;

/** The queues the dispatcher consumes, by the variable that names each, with their local names. */
const dispatchedQueues = [
  ...PROVIDER_NAMES.map((provider) => ({ variable: jobQueueEnv(provider), name: jobQueueName(provider) })),
  { variable: resourceEnv.handOffQueueUrl, name: localResourceNames.handOffQueue },
];

/** Each provider's jobs queue, the hand-off lane and their one DLQ, as the template declares them. */
export async function ensureJobQueues(clients: ResourceClients, template: LocalTemplate): Promise<JobQueues> {
  const deadLetterId = template.resourceOfVariable(resourceEnv.deadLetterQueueArn);
  const declared = dispatchedQueues.map(({ variable, name }) => {
    const queue = template.queue(template.resourceOfVariable(variable));
    if (queue.redrive?.deadLetterLogicalId !== deadLetterId) {
      throw new Error(
        `${template.source}: the queue of ${variable} does not redrive to the dead-letter queue the functions name`,
      );
    }
    return { name, queue };
  });
  const deadLetter = await ensureQueue(
    clients,
    localResourceNames.deadLetterQueue,
    queueAttributes(template.queue(deadLetterId)),
  );
  const created = await Promise.all(
    declared.map(({ name, queue }) => ensureQueue(clients, name, queueAttributes(queue, deadLetter.arn))),
  );
  const handOff = created.at(-1);
  if (!handOff || created.length !== PROVIDER_NAMES.length + 1)
    throw new Error('a dispatched queue was not created');
  const jobQueues = Object.fromEntries(
    PROVIDER_NAMES.map((provider, index) => [provider, created[index] as LocalQueue]),
  ) as { readonly [P in ProviderName]: LocalQueue };
  return {
    jobQueues,
    jobQueueUrl: jobQueues[LEGACY_PROVIDER].url,
    jobQueueArn: jobQueues[LEGACY_PROVIDER].arn,
    handOffQueueUrl: handOff.url,
    handOffQueueArn: handOff.arn,
    deadLetterQueueUrl: deadLetter.url,
    deadLetterQueueArn: deadLetter.arn,
  };
}

/**
 * The local queue behind a template queue an event source mapping reads; the
 * local stack creates the queues the functions name, so a mapping of any other
 * queue is an error rather than a mapping silently left out.
 */
export function localQueueOf(template: LocalTemplate, resources: JobQueues, logicalId: string): LocalQueue {
  for (const provider of PROVIDER_NAMES) {
    if (logicalId === template.resourceOfVariable(jobQueueEnv(provider)))
      return resources.jobQueues[provider];
  }
  if (logicalId === template.resourceOfVariable(resourceEnv.handOffQueueUrl)) {
    return { url: resources.handOffQueueUrl, arn: resources.handOffQueueArn };
  }
  throw new Error(
    `${template.source}: an event source mapping reads queue ${logicalId}, which the local stack does not create`,
  );
}

export async function ensureResources(
  clients: ResourceClients,
  template: LocalTemplate,
): Promise<LocalResources> {
  const table = (variable: string) => template.table(template.resourceOfVariable(variable));
  const vectorIndex = template.vectorIndex(template.resourceOfVariable(resourceEnv.vectorIndexName));
  if (template.resourceOfVariable(resourceEnv.vectorBucketName) !== vectorIndex.bucketLogicalId) {
    throw new Error(
      `${template.source}: the functions' ${resourceEnv.vectorBucketName} does not name the bucket of their ${resourceEnv.vectorIndexName}`,
    );
  }
  const [, , , queues] = await Promise.all([
    ensureTable(clients.dynamodb, localResourceNames.jobTable, table(resourceEnv.jobTable)),
    ensureTable(clients.dynamodb, localResourceNames.apiKeyTable, table(resourceEnv.apiKeyTable)),
    ensureTable(clients.dynamodb, localResourceNames.connectionTable, table(resourceEnv.connectionTable)),
    ensureJobQueues(clients, template),
    ensureBucket(clients.s3, localResourceNames.inputBucket),
    ensureBucket(clients.s3, localResourceNames.outputBucket),
    ensureVectorIndex(
      clients.s3vectors,
      { bucket: localResourceNames.vectorBucket, index: localResourceNames.vectorIndex },
      vectorIndex,
    ),
  ]);
  return {
    jobTableName: localResourceNames.jobTable,
    apiKeyTableName: localResourceNames.apiKeyTable,
    connectionTableName: localResourceNames.connectionTable,
    ...queues,
    inputBucketName: localResourceNames.inputBucket,
    outputBucketName: localResourceNames.outputBucket,
    vectorBucketName: localResourceNames.vectorBucket,
    vectorIndexName: localResourceNames.vectorIndex,
  };
}
