import { createHash, randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { crc32 } from 'node:zlib';
import { S3_VECTORS_LIMITS } from '../../config/s3-vectors';
import { LOCAL_REGION } from '../handler-env';
import { LOCAL_ACCOUNT_ID } from '../lambda';
import { listenOn } from './listen';
import {
  compileFilter,
  FilterError,
  type Metadata,
  type MetadataPredicate,
  type MetadataPrimitive,
} from './s3-vectors-filter';
import {
  type BucketConfig,
  type DistanceMetric,
  type EncryptionConfig,
  type Hit,
  type IndexConfig,
  IndexVectors,
  type LogRecord,
  VectorLog,
} from './s3-vectors-store';

/**
 * Amazon S3 Vectors, for the calls Longhaul makes (PutVectors, DeleteVectors,
 * GetVectors, ListVectors, QueryVectors) and those that set it up
 * (CreateVectorBucket, GetVectorBucket, CreateIndex, GetIndex), on the wire
 * protocol of `@aws-sdk/client-s3vectors` (REST-JSON: `POST /<Operation>` with a
 * JSON body; an error's name in `x-amzn-errortype`, its status as the model
 * gives it). Reached with `AWS_ENDPOINT_URL_S3VECTORS`.
 *
 * It holds requests to S3 Vectors' documented limits and refuses as the
 * service does (config/s3-vectors.ts), checks every vector against its
 * index's dimension, implements the metadata filter language
 * (./s3-vectors-filter.ts) and searches exactly with the index's metric
 * (./s3-vectors-store.ts), where the service's index is approximate. Vectors
 * survive a restart: every change is in `<dataDir>/vectors.log` before it is
 * answered.
 *
 * Requests are not authenticated: the local stack checks the handlers' calls
 * against their roles before they leave the process (local/iam.ts), so it
 * listens on loopback only.
 */

/** How long a QueryVectors pagination token lives ("several minutes", https://docs.aws.amazon.com/AmazonS3/latest/userguide/s3-vectors-query.html). */
const QUERY_SESSION_MS = 5 * 60_000;
/** Query sessions kept at once; the oldest goes first. */
const MAX_QUERY_SESSIONS = 1000;

export interface S3VectorsEmulatorOptions {
  /** Where the vectors are kept across restarts. */
  readonly dataDir: string;
  /** @default '127.0.0.1' */
  readonly host?: string;
  /** @default 0 (any free port) */
  readonly port?: number;
  /** The region in ARNs. @default the local stack's (LOCAL_REGION) */
  readonly region?: string;
  /** The account in ARNs. @default the local stack's (LOCAL_ACCOUNT_ID) */
  readonly accountId?: string;
  /**
   * Whether PutVectors and DeleteVectors are held to an index's write rates
   * (`writeRequestsPerSecond` and `writtenVectorsPerSecond` of
   * config/s3-vectors.ts), refused beyond them with TooManyRequestsException as
   * the service does. A bench that loads a large
   * index faster than a deployment could may turn them off.
   * @default true
   */
  readonly writeRateLimits?: boolean;
  /**
   * Milliseconds since the epoch: what the write rates count seconds of and
   * query pagination tokens expire by.
   * @default Date.now
   */
  readonly clock?: () => number;
  readonly log?: (line: string) => void;
}

export interface S3VectorsEmulator {
  /** For `AWS_ENDPOINT_URL_S3VECTORS` or an S3VectorsClient's `endpoint`. */
  readonly url: string;
  close(): Promise<void>;
}

interface FieldProblem {
  readonly path: string;
  readonly message: string;
}

/** A refusal, in the service's own terms: its error name, HTTP status and message. */
class ServiceError extends Error {
  constructor(
    readonly status: number,
    readonly type: string,
    message: string,
    readonly fieldList?: readonly FieldProblem[],
  ) {
    super(message);
  }
}

/** ValidationException carries no status in the model; the service answers it with 400. */
const invalid = (path: string, message: string) =>
  new ServiceError(400, 'ValidationException', `${path}: ${message}`, [{ path, message }]);
const notFound = (message: string) => new ServiceError(404, 'NotFoundException', message);

type Json = Readonly<Record<string, unknown>>;

/** Names of vector buckets (lowercase letters, numbers, hyphens) and of indexes (dots too), 3 to 63 long. */
const BUCKET_NAME = /^[a-z0-9][a-z0-9-]{1,61}[a-z0-9]$/;
const INDEX_NAME = /^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/;
const BUCKET_ARN =
  /^arn:aws[-a-z0-9]*:s3vectors:([a-z0-9-]+):(\d{12}):bucket\/([a-z0-9][a-z0-9.-]{1,61}[a-z0-9])$/;
const INDEX_ARN =
  /^arn:aws[-a-z0-9]*:s3vectors:([a-z0-9-]+):(\d{12}):bucket\/([a-z0-9][a-z0-9.-]{1,61}[a-z0-9])\/index\/([a-z0-9][a-z0-9.-]{1,61}[a-z0-9])$/;

interface Index {
  readonly config: IndexConfig;
  readonly vectors: IndexVectors;
  readonly nonFilterable: ReadonlySet<string>;
  /** Writes in the current second, for the write rates. */
  writes: { second: number; requests: number; vectors: number };
}

interface Bucket {
  readonly config: BucketConfig;
  readonly indexes: Map<string, Index>;
}

interface QuerySession {
  readonly fingerprint: string;
  readonly hits: readonly Hit[];
  readonly expiresAt: number;
}

/** The service's state and operations, without the HTTP around them. */
class S3Vectors {
  readonly #buckets = new Map<string, Bucket>();
  readonly #sessions = new Map<string, QuerySession>();
  readonly #log: VectorLog;

  constructor(
    private readonly options: Required<
      Pick<S3VectorsEmulatorOptions, 'region' | 'accountId' | 'writeRateLimits' | 'clock'>
    > & {
      readonly dataDir: string;
      readonly log: (line: string) => void;
    },
  ) {
    let entries = 0;
    this.#log = VectorLog.open(
      options.dataDir,
      (record, data) => {
        this.#apply(record, data);
        if (record.op === 'put' || record.op === 'delete') entries += record.keys.length;
      },
      options.log,
    );
    const live = [...this.#buckets.values()].reduce(
      (sum, bucket) => sum + [...bucket.indexes.values()].reduce((n, index) => n + index.vectors.size, 0),
      0,
    );
    if (entries > 2 * live) this.#log.rewrite(this.#records());
  }

  close(): void {
    this.#log.close();
  }

  readonly operations: Readonly<Record<string, (body: Json) => Json>> = {
    CreateVectorBucket: (body) => this.#createVectorBucket(body),
    GetVectorBucket: (body) => ({ vectorBucket: this.#describeBucket(this.#bucketOf(body).config) }),
    CreateIndex: (body) => this.#createIndex(body),
    GetIndex: (body) => ({ index: this.#describeIndex(this.#indexOf(body).config) }),
    PutVectors: (body) => this.#putVectors(body),
    GetVectors: (body) => this.#getVectors(body),
    DeleteVectors: (body) => this.#deleteVectors(body),
    ListVectors: (body) => this.#listVectors(body),
    QueryVectors: (body) => this.#queryVectors(body),
  };

  #createVectorBucket(body: Json): Json {
    const name = requiredString(body, 'vectorBucketName');
    if (!BUCKET_NAME.test(name)) {
      throw invalid(
        'vectorBucketName',
        'must be 3 to 63 lowercase letters, numbers and hyphens, beginning and ending with a letter or number',
      );
    }
    const encryption = encryptionOf(body.encryptionConfiguration) ?? { sseType: 'AES256' };
    if (this.#buckets.has(name)) {
      throw new ServiceError(409, 'ConflictException', `A vector bucket named ${name} already exists.`);
    }
    if (this.#buckets.size >= S3_VECTORS_LIMITS.vectorBucketsPerRegion) {
      throw new ServiceError(
        402,
        'ServiceQuotaExceededException',
        `An account may have ${S3_VECTORS_LIMITS.vectorBucketsPerRegion} vector buckets in a region.`,
      );
    }
    const bucket: BucketConfig = {
      name,
      arn: `arn:aws:s3vectors:${this.options.region}:${this.options.accountId}:bucket/${name}`,
      creationTime: this.options.clock() / 1000,
      encryption,
    };
    this.#commit({ op: 'bucket', bucket });
    return { vectorBucketArn: bucket.arn };
  }

  #createIndex(body: Json): Json {
    const bucket = this.#bucketOf(body);
    const name = requiredString(body, 'indexName');
    if (!INDEX_NAME.test(name)) {
      throw invalid(
        'indexName',
        'must be 3 to 63 lowercase letters, numbers, hyphens and dots, beginning and ending with a letter or number',
      );
    }
    if (body.dataType !== 'float32') throw invalid('dataType', 'must be float32');
    const dimension = body.dimension;
    if (
      typeof dimension !== 'number' ||
      !Number.isInteger(dimension) ||
      dimension < S3_VECTORS_LIMITS.minDimension ||
      dimension > S3_VECTORS_LIMITS.maxDimension
    ) {
      throw invalid('dimension', `must be an integer from 1 to ${S3_VECTORS_LIMITS.maxDimension}`);
    }
    const metric = body.distanceMetric;
    if (metric !== 'cosine' && metric !== 'euclidean')
      throw invalid('distanceMetric', 'must be cosine or euclidean');
    const nonFilterable = nonFilterableKeysOf(body.metadataConfiguration);
    const encryption = encryptionOf(body.encryptionConfiguration);
    if (bucket.indexes.has(name)) {
      throw new ServiceError(
        409,
        'ConflictException',
        `An index named ${name} already exists in ${bucket.config.name}.`,
      );
    }
    if (bucket.indexes.size >= S3_VECTORS_LIMITS.indexesPerBucket) {
      throw new ServiceError(
        402,
        'ServiceQuotaExceededException',
        `A vector bucket may hold ${S3_VECTORS_LIMITS.indexesPerBucket} indexes.`,
      );
    }
    const index: IndexConfig = {
      bucket: bucket.config.name,
      name,
      arn: `${bucket.config.arn}/index/${name}`,
      creationTime: this.options.clock() / 1000,
      dataType: 'float32',
      dimension,
      distanceMetric: metric,
      ...(nonFilterable ? { nonFilterableMetadataKeys: nonFilterable } : {}),
      ...(encryption ? { encryption } : {}),
    };
    this.#commit({ op: 'index', index });
    return { indexArn: index.arn };
  }

  #putVectors(body: Json): Json {
    const index = this.#indexOf(body);
    const items = list(body, 'vectors', 1, S3_VECTORS_LIMITS.vectorsPerPut);
    const { dimension, distanceMetric } = index.config;
    const data = new Float32Array(items.length * dimension);
    const keys: string[] = [];
    const metadata: Metadata[] = [];
    const seen = new Set<string>();
    items.forEach((item, i) => {
      const path = `vectors[${i}]`;
      if (!isObject(item)) throw invalid(path, 'must be an object');
      const key = vectorKey(item.key, `${path}.key`);
      // Two vectors of one key in one request would leave which one is kept to chance.
      if (seen.has(key)) throw invalid(`${path}.key`, `key ${key} appears more than once in the request`);
      seen.add(key);
      keys.push(key);
      data.set(vectorData(item.data, dimension, distanceMetric, `${path}.data`), i * dimension);
      metadata.push(metadataOf(item.metadata, index.nonFilterable, `${path}.metadata`));
    });
    this.#admitWrite(index, keys.length);
    this.#commit({ op: 'put', bucket: index.config.bucket, index: index.config.name, keys, metadata }, data);
    return {};
  }

  #deleteVectors(body: Json): Json {
    const index = this.#indexOf(body);
    const keys = list(body, 'keys', 1, S3_VECTORS_LIMITS.keysPerDelete).map((key, i) =>
      vectorKey(key, `keys[${i}]`),
    );
    this.#admitWrite(index, keys.length);
    this.#commit({ op: 'delete', bucket: index.config.bucket, index: index.config.name, keys });
    return {};
  }

  #getVectors(body: Json): Json {
    const index = this.#indexOf(body);
    const keys = list(body, 'keys', 1, S3_VECTORS_LIMITS.keysPerGet).map((key, i) =>
      vectorKey(key, `keys[${i}]`),
    );
    const returnData = optionalBoolean(body, 'returnData');
    const returnMetadata = optionalBoolean(body, 'returnMetadata');
    const vectors = keys.flatMap((key) => {
      const found = index.vectors.get(key);
      return found ? [describeVector(key, found, returnData, returnMetadata)] : [];
    });
    return { vectors };
  }

  #listVectors(body: Json): Json {
    const index = this.#indexOf(body);
    const maxResults =
      optionalInteger(body, 'maxResults', 1, S3_VECTORS_LIMITS.listResultsPerPage) ??
      S3_VECTORS_LIMITS.listResultsDefault;
    const segmentCount = optionalInteger(body, 'segmentCount', 1, S3_VECTORS_LIMITS.listSegments);
    const segmentIndex = optionalInteger(body, 'segmentIndex', 0, S3_VECTORS_LIMITS.listSegments - 1);
    if ((segmentCount === undefined) !== (segmentIndex === undefined)) {
      throw invalid('segmentCount', 'segmentCount and segmentIndex must be given together');
    }
    const segments = segmentCount ?? 1;
    const segment = segmentIndex ?? 0;
    if (segment >= segments) throw invalid('segmentIndex', 'must be less than segmentCount');
    const returnData = optionalBoolean(body, 'returnData');
    const returnMetadata = optionalBoolean(body, 'returnMetadata');
    const token = optionalString(body, 'nextToken');
    let after: string | undefined;
    if (token !== undefined) {
      const decoded = decodeToken(token) as
        | { after?: unknown; segments?: unknown; segment?: unknown }
        | undefined;
      if (
        typeof decoded?.after !== 'string' ||
        decoded.segments !== segments ||
        decoded.segment !== segment
      ) {
        throw invalid('nextToken', 'is not a token of this listing');
      }
      after = decoded.after;
    }
    const keys = index.vectors.sortedKeys();
    let position = after === undefined ? 0 : firstAfter(keys, after);
    const vectors: Json[] = [];
    let bytes = 0;
    const vectorBytes = index.config.dimension * 4;
    for (
      ;
      position < keys.length && vectors.length < maxResults && bytes < S3_VECTORS_LIMITS.listPageBytes;
      position++
    ) {
      const key = keys[position] as string;
      if (segments > 1 && crc32(key) % segments !== segment) continue;
      const found = index.vectors.get(key);
      if (!found) continue;
      bytes += Buffer.byteLength(key) + vectorBytes + Buffer.byteLength(JSON.stringify(found.metadata));
      vectors.push(describeVector(key, found, returnData, returnMetadata));
    }
    const more =
      segments === 1
        ? position < keys.length
        : keys.slice(position).some((key) => crc32(key) % segments === segment);
    const last = vectors.at(-1)?.key as string | undefined;
    return {
      vectors,
      ...(more && last !== undefined ? { nextToken: encodeToken({ after: last, segments, segment }) } : {}),
    };
  }

  #queryVectors(body: Json): Json {
    const index = this.#indexOf(body);
    const topK = body.topK;
    if (typeof topK !== 'number' || !Number.isInteger(topK) || topK < 1 || topK > S3_VECTORS_LIMITS.topK) {
      throw invalid('topK', `must be an integer from 1 to ${S3_VECTORS_LIMITS.topK}`);
    }
    const query = vectorData(
      body.queryVector,
      index.config.dimension,
      index.config.distanceMetric,
      'queryVector',
    );
    let filter: MetadataPredicate | undefined;
    if (body.filter !== undefined) {
      try {
        filter = compileFilter(body.filter, index.nonFilterable);
      } catch (error) {
        if (error instanceof FilterError) throw invalid('filter', error.message);
        throw error;
      }
    }
    const returnMetadata = optionalBoolean(body, 'returnMetadata');
    const returnDistance = optionalBoolean(body, 'returnDistance');
    const token = optionalString(body, 'nextToken');
    const fingerprint = createHash('sha256')
      .update(JSON.stringify([index.config.arn, topK, body.filter ?? null]))
      .update(Buffer.from(query.buffer, query.byteOffset, query.byteLength))
      .digest('base64url');
    const now = this.options.clock();
    for (const [id, session] of this.#sessions) if (session.expiresAt <= now) this.#sessions.delete(id);
    let hits: readonly Hit[];
    let offset = 0;
    let sessionId: string;
    if (token !== undefined) {
      const decoded = decodeToken(token) as { session?: unknown; offset?: unknown } | undefined;
      const session = typeof decoded?.session === 'string' ? this.#sessions.get(decoded.session) : undefined;
      if (!session || typeof decoded?.offset !== 'number') {
        throw invalid(
          'nextToken',
          'is not a token of a query in progress, or it expired: issue the query again',
        );
      }
      if (session.fingerprint !== fingerprint) {
        throw invalid('nextToken', 'belongs to a query with another queryVector, topK or filter');
      }
      ({ hits } = session);
      offset = decoded.offset;
      sessionId = decoded.session as string;
    } else {
      // Later pages are read from this ranking, kept under the token: a query's pages never
      // overlap or skip a vector, whatever is written between them.
      hits = index.vectors.search(query, topK, filter);
      sessionId = randomUUID();
      if (hits.length > S3_VECTORS_LIMITS.queryResultsPerPage) {
        if (this.#sessions.size >= MAX_QUERY_SESSIONS) {
          this.#sessions.delete(this.#sessions.keys().next().value as string);
        }
        this.#sessions.set(sessionId, { fingerprint, hits, expiresAt: now + QUERY_SESSION_MS });
      }
    }
    const end = offset + S3_VECTORS_LIMITS.queryResultsPerPage;
    return {
      vectors: hits.slice(offset, end).map((hit) => ({
        key: hit.key,
        // The model's distance is a 32-bit float.
        ...(returnDistance ? { distance: Math.fround(hit.distance) } : {}),
        ...(returnMetadata ? { metadata: hit.metadata } : {}),
      })),
      distanceMetric: index.config.distanceMetric,
      ...(end < hits.length ? { nextToken: encodeToken({ session: sessionId, offset: end }) } : {}),
    };
  }

  /** Refuses a write beyond the index's rates for the current second, else counts it. */
  #admitWrite(index: Index, vectors: number): void {
    if (!this.options.writeRateLimits) return;
    const second = Math.floor(this.options.clock() / 1000);
    if (index.writes.second !== second) index.writes = { second, requests: 0, vectors: 0 };
    if (
      index.writes.requests + 1 > S3_VECTORS_LIMITS.writeRequestsPerSecond ||
      index.writes.vectors + vectors > S3_VECTORS_LIMITS.writtenVectorsPerSecond
    ) {
      throw new ServiceError(
        429,
        'TooManyRequestsException',
        `An index takes ${S3_VECTORS_LIMITS.writeRequestsPerSecond} PutVectors and DeleteVectors requests and ${S3_VECTORS_LIMITS.writtenVectorsPerSecond} vectors a second.`,
      );
    }
    index.writes.requests += 1;
    index.writes.vectors += vectors;
  }

  /** Writes `record` to the log, then applies it: what is answered is on disk. */
  #commit(record: LogRecord, data?: Float32Array): void {
    this.#log.append(record, data);
    this.#apply(record, data);
  }

  #apply(record: LogRecord, data: Float32Array | undefined): void {
    switch (record.op) {
      case 'bucket':
        this.#buckets.set(record.bucket.name, { config: record.bucket, indexes: new Map() });
        return;
      case 'index': {
        const { index } = record;
        this.#requireBucket(index.bucket).indexes.set(index.name, {
          config: index,
          vectors: new IndexVectors(index.dimension, index.distanceMetric),
          nonFilterable: new Set(index.nonFilterableMetadataKeys ?? []),
          writes: { second: 0, requests: 0, vectors: 0 },
        });
        return;
      }
      case 'put': {
        const index = this.#requireIndex(record.bucket, record.index);
        const { dimension } = index.config;
        if (!data || data.length !== record.keys.length * dimension) {
          throw new Error(
            `a put of ${record.keys.length} vectors to ${record.index} carries the wrong amount of data`,
          );
        }
        record.keys.forEach((key, i) => {
          index.vectors.put(key, data.subarray(i * dimension, (i + 1) * dimension), record.metadata[i] ?? {});
        });
        return;
      }
      case 'delete': {
        const index = this.#requireIndex(record.bucket, record.index);
        for (const key of record.keys) index.vectors.delete(key);
        return;
      }
    }
  }

  /** What the log must hold to rebuild the current state. */
  *#records(): Generator<{ record: LogRecord; data?: Float32Array }> {
    for (const bucket of this.#buckets.values()) {
      yield { record: { op: 'bucket', bucket: bucket.config } };
      for (const index of bucket.indexes.values()) {
        yield { record: { op: 'index', index: index.config } };
        const { dimension } = index.config;
        let keys: string[] = [];
        let metadata: Metadata[] = [];
        let data = new Float32Array(S3_VECTORS_LIMITS.vectorsPerPut * dimension);
        const batch = () => {
          const record: LogRecord = {
            op: 'put',
            bucket: bucket.config.name,
            index: index.config.name,
            keys,
            metadata,
          };
          return { record, data: data.subarray(0, keys.length * dimension) };
        };
        for (const entry of index.vectors.entries()) {
          data.set(entry.data, keys.length * dimension);
          keys.push(entry.key);
          metadata.push(entry.metadata);
          if (keys.length === S3_VECTORS_LIMITS.vectorsPerPut) {
            yield batch();
            keys = [];
            metadata = [];
            data = new Float32Array(S3_VECTORS_LIMITS.vectorsPerPut * dimension);
          }
        }
        if (keys.length > 0) yield batch();
      }
    }
  }

  #requireBucket(name: string): Bucket {
    const bucket = this.#buckets.get(name);
    if (!bucket) throw new Error(`the log names vector bucket ${name} before it is made`);
    return bucket;
  }

  #requireIndex(bucket: string, name: string): Index {
    const index = this.#requireBucket(bucket).indexes.get(name);
    if (!index) throw new Error(`the log names index ${bucket}/${name} before it is made`);
    return index;
  }

  /** The bucket a request names, by `vectorBucketArn` or `vectorBucketName` (exactly one). */
  #bucketOf(body: Json): Bucket {
    const arn = optionalString(body, 'vectorBucketArn');
    const name = optionalString(body, 'vectorBucketName');
    let bucketName: string;
    if (arn !== undefined) {
      if (name !== undefined)
        throw invalid('vectorBucketArn', 'give vectorBucketArn or vectorBucketName, not both');
      const match = BUCKET_ARN.exec(arn);
      if (!match) throw invalid('vectorBucketArn', 'is not the ARN of a vector bucket');
      this.#inThisAccount(match[1] as string, match[2] as string);
      bucketName = match[3] as string;
    } else if (name !== undefined) {
      bucketName = name;
    } else {
      throw invalid('vectorBucketName', 'give vectorBucketName or vectorBucketArn');
    }
    const bucket = this.#buckets.get(bucketName);
    if (!bucket) throw notFound(`The vector bucket ${bucketName} does not exist.`);
    return bucket;
  }

  /** The index a request names, by `indexArn` or by `vectorBucketName` and `indexName`. */
  #indexOf(body: Json): Index {
    const arn = optionalString(body, 'indexArn');
    const bucketName = optionalString(body, 'vectorBucketName');
    const indexName = optionalString(body, 'indexName');
    let names: [string, string];
    if (arn !== undefined) {
      if (bucketName !== undefined || indexName !== undefined) {
        throw invalid('indexArn', 'give indexArn, or vectorBucketName and indexName, not both');
      }
      const match = INDEX_ARN.exec(arn);
      if (!match) throw invalid('indexArn', 'is not the ARN of a vector index');
      this.#inThisAccount(match[1] as string, match[2] as string);
      names = [match[3] as string, match[4] as string];
    } else if (bucketName !== undefined && indexName !== undefined) {
      names = [bucketName, indexName];
    } else {
      throw invalid('indexName', 'give indexArn, or vectorBucketName and indexName');
    }
    const bucket = this.#buckets.get(names[0]);
    if (!bucket) throw notFound(`The vector bucket ${names[0]} does not exist.`);
    const index = bucket.indexes.get(names[1]);
    if (!index) throw notFound(`The index ${names[1]} does not exist in ${names[0]}.`);
    return index;
  }

  #inThisAccount(region: string, accountId: string): void {
    if (region !== this.options.region || accountId !== this.options.accountId) {
      throw notFound(`No vector bucket of account ${accountId} in ${region} is served here.`);
    }
  }

  #describeBucket(bucket: BucketConfig): Json {
    return {
      vectorBucketName: bucket.name,
      vectorBucketArn: bucket.arn,
      creationTime: bucket.creationTime,
      encryptionConfiguration: bucket.encryption,
    };
  }

  #describeIndex(index: IndexConfig): Json {
    return {
      vectorBucketName: index.bucket,
      indexName: index.name,
      indexArn: index.arn,
      creationTime: index.creationTime,
      dataType: index.dataType,
      dimension: index.dimension,
      distanceMetric: index.distanceMetric,
      ...(index.nonFilterableMetadataKeys
        ? { metadataConfiguration: { nonFilterableMetadataKeys: index.nonFilterableMetadataKeys } }
        : {}),
      ...(index.encryption ? { encryptionConfiguration: index.encryption } : {}),
      // Every index of a bucket made since 30 September 2026 filters before it searches, as this one does.
      indexMode: 'ENHANCED',
    };
  }
}

function describeVector(
  key: string,
  found: { readonly data: Float32Array; readonly metadata: Metadata },
  returnData: boolean,
  returnMetadata: boolean,
): Json {
  return {
    key,
    ...(returnData ? { data: { float32: Array.from(found.data) } } : {}),
    ...(returnMetadata ? { metadata: found.metadata } : {}),
  };
}

const isObject = (value: unknown): value is Json =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

function optionalString(body: Json, name: string): string | undefined {
  const value = body[name];
  if (value === undefined) return undefined;
  if (typeof value !== 'string' || value === '') throw invalid(name, 'must be a non-empty string');
  return value;
}

function requiredString(body: Json, name: string): string {
  const value = optionalString(body, name);
  if (value === undefined) throw invalid(name, 'is required');
  return value;
}

function optionalBoolean(body: Json, name: string): boolean {
  const value = body[name];
  if (value === undefined) return false;
  if (typeof value !== 'boolean') throw invalid(name, 'must be a boolean');
  return value;
}

function optionalInteger(body: Json, name: string, min: number, max: number): number | undefined {
  const value = body[name];
  if (value === undefined) return undefined;
  if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > max) {
    throw invalid(name, `must be an integer from ${min} to ${max}`);
  }
  return value;
}

function list(body: Json, name: string, min: number, max: number): unknown[] {
  const value = body[name];
  if (!Array.isArray(value)) throw invalid(name, 'is required, as a list');
  if (value.length < min || value.length > max) throw invalid(name, `must hold ${min} to ${max} items`);
  return value;
}

function vectorKey(value: unknown, path: string): string {
  if (typeof value !== 'string' || value.length < 1 || value.length > S3_VECTORS_LIMITS.vectorKeyLength) {
    throw invalid(path, `must be a string of 1 to ${S3_VECTORS_LIMITS.vectorKeyLength} characters`);
  }
  return value;
}

/**
 * A vector as float32, as S3 Vectors stores it: exactly the index's dimension,
 * only finite values (after the conversion to float32, which turns what is
 * too large into Infinity), and not all zeros under the cosine metric
 * (https://docs.aws.amazon.com/AmazonS3/latest/API/API_S3VectorBuckets_PutVectors.html).
 */
function vectorData(value: unknown, dimension: number, metric: DistanceMetric, path: string): Float32Array {
  if (!isObject(value) || Object.keys(value).length !== 1 || !Array.isArray(value.float32)) {
    throw invalid(path, 'must be {"float32": [...]}');
  }
  const numbers = value.float32 as unknown[];
  if (numbers.length !== dimension) {
    throw invalid(`${path}.float32`, `has ${numbers.length} values; the index's dimension is ${dimension}`);
  }
  const data = new Float32Array(dimension);
  let zero = true;
  for (let i = 0; i < dimension; i++) {
    const n = numbers[i];
    // The SDK sends NaN and the infinities as strings; neither is a valid value.
    if (typeof n !== 'number' || !Number.isFinite(n))
      throw invalid(`${path}.float32[${i}]`, 'must be a finite number');
    data[i] = n;
    if (!Number.isFinite(data[i] as number))
      throw invalid(`${path}.float32[${i}]`, 'is beyond the range of float32');
    if (data[i] !== 0) zero = false;
  }
  if (zero && metric === 'cosine') throw invalid(`${path}.float32`, 'a zero vector has no cosine distance');
  return data;
}

const isMetadataPrimitive = (value: unknown): value is MetadataPrimitive =>
  typeof value === 'string' ||
  typeof value === 'boolean' ||
  (typeof value === 'number' && Number.isFinite(value));

/**
 * A vector's metadata: strings, numbers, booleans and lists of them, at most
 * 50 keys, 40 KB in all and 2 KB of it filterable
 * (https://docs.aws.amazon.com/AmazonS3/latest/userguide/s3-vectors-limitations.html).
 * The docs do not say how the bytes are counted; here they are the UTF-8
 * bytes of the JSON of the keys and values.
 */
function metadataOf(value: unknown, nonFilterable: ReadonlySet<string>, path: string): Metadata {
  if (value === undefined) return {};
  if (!isObject(value)) throw invalid(path, 'must be an object');
  const entries = Object.entries(value);
  if (entries.length > S3_VECTORS_LIMITS.metadataKeysPerVector) {
    throw invalid(
      path,
      `has ${entries.length} keys; a vector may have ${S3_VECTORS_LIMITS.metadataKeysPerVector}`,
    );
  }
  for (const [key, item] of entries) {
    const valid = isMetadataPrimitive(item) || (Array.isArray(item) && item.every(isMetadataPrimitive));
    if (!valid) throw invalid(`${path}.${key}`, 'must be a string, number, boolean or a list of them');
  }
  const total = Buffer.byteLength(JSON.stringify(value));
  if (total > S3_VECTORS_LIMITS.metadataBytes) {
    throw invalid(
      path,
      `takes ${total} bytes; a vector's metadata may take ${S3_VECTORS_LIMITS.metadataBytes}`,
    );
  }
  const filterable = Buffer.byteLength(
    JSON.stringify(Object.fromEntries(entries.filter(([key]) => !nonFilterable.has(key)))),
  );
  if (filterable > S3_VECTORS_LIMITS.filterableMetadataBytes) {
    throw invalid(
      path,
      `its filterable keys take ${filterable} bytes; a vector's filterable metadata may take ${S3_VECTORS_LIMITS.filterableMetadataBytes}`,
    );
  }
  return value as Metadata;
}

function nonFilterableKeysOf(value: unknown): string[] | undefined {
  if (value === undefined) return undefined;
  const path = 'metadataConfiguration.nonFilterableMetadataKeys';
  const keys = isObject(value) ? value.nonFilterableMetadataKeys : undefined;
  if (!Array.isArray(keys) || keys.length < 1 || keys.length > S3_VECTORS_LIMITS.nonFilterableKeysPerIndex) {
    throw invalid(path, `must hold 1 to ${S3_VECTORS_LIMITS.nonFilterableKeysPerIndex} keys`);
  }
  for (const key of keys) {
    if (typeof key !== 'string' || key.length < 1 || key.length > S3_VECTORS_LIMITS.metadataKeyLength) {
      throw invalid(
        path,
        `each key must be a string of 1 to ${S3_VECTORS_LIMITS.metadataKeyLength} characters`,
      );
    }
  }
  if (new Set(keys).size !== keys.length) throw invalid(path, 'must not name a key twice');
  return keys as string[];
}

function encryptionOf(value: unknown): EncryptionConfig | undefined {
  if (value === undefined) return undefined;
  if (!isObject(value)) throw invalid('encryptionConfiguration', 'must be an object');
  const sseType = value.sseType ?? 'AES256';
  if (sseType === 'AES256') {
    if (value.kmsKeyArn !== undefined) {
      throw invalid('encryptionConfiguration.kmsKeyArn', 'is allowed only with sseType aws:kms');
    }
    return { sseType };
  }
  if (sseType === 'aws:kms') {
    const key = value.kmsKeyArn;
    if (typeof key !== 'string' || !/^arn:aws[-a-z0-9]*:kms:[-a-z0-9]*:[0-9]{12}:key\/.+$/.test(key)) {
      throw invalid('encryptionConfiguration.kmsKeyArn', 'must be the ARN of a KMS key with sseType aws:kms');
    }
    return { sseType, kmsKeyArn: key };
  }
  throw invalid('encryptionConfiguration.sseType', 'must be AES256 or aws:kms');
}

const encodeToken = (value: unknown): string => Buffer.from(JSON.stringify(value)).toString('base64url');

function decodeToken(token: string): unknown {
  try {
    return JSON.parse(Buffer.from(token, 'base64url').toString('utf8'));
  } catch {
    return undefined;
  }
}

/** The first position in sorted `keys` after `key`. */
function firstAfter(keys: readonly string[], key: string): number {
  let low = 0;
  let high = keys.length;
  while (low < high) {
    const middle = (low + high) >> 1;
    if ((keys[middle] as string) <= key) low = middle + 1;
    else high = middle;
  }
  return low;
}

export async function startS3VectorsEmulator(options: S3VectorsEmulatorOptions): Promise<S3VectorsEmulator> {
  const host = options.host ?? '127.0.0.1';
  const log = options.log ?? (() => undefined);
  const service = new S3Vectors({
    dataDir: options.dataDir,
    region: options.region ?? LOCAL_REGION,
    accountId: options.accountId ?? LOCAL_ACCOUNT_ID,
    writeRateLimits: options.writeRateLimits ?? true,
    clock: options.clock ?? Date.now,
    log,
  });

  async function serve(request: IncomingMessage, response: ServerResponse): Promise<void> {
    try {
      const name = /^\/([A-Za-z]+)$/.exec(new URL(request.url ?? '/', 'http://s3vectors').pathname)?.[1];
      const operation = name === undefined ? undefined : service.operations[name];
      const body = await readBody(request);
      if (!operation || request.method !== 'POST') {
        throw new ServiceError(
          404,
          'UnknownOperationException',
          `${request.method} ${request.url} is not an operation this emulator serves`,
        );
      }
      send(response, 200, operation(body));
    } catch (error) {
      if (error instanceof ServiceError) {
        send(
          response,
          error.status,
          { message: error.message, ...(error.fieldList ? { fieldList: error.fieldList } : {}) },
          error.type,
        );
        return;
      }
      log(`s3vectors: ${request.method} ${request.url} failed: ${(error as Error).stack ?? error}`);
      send(
        response,
        500,
        { message: 'We encountered an internal error. Please try again.' },
        'InternalServerException',
      );
    }
  }

  const server = createServer((request, response) => {
    serve(request, response).catch(() => response.destroy());
  });
  const port = await listenOn(server, options.port ?? 0, host);
  return {
    url: `http://${host}:${port}`,
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      service.close();
    },
  };
}

function send(response: ServerResponse, status: number, body: unknown, errorType?: string): void {
  const text = JSON.stringify(body);
  response.writeHead(status, {
    'content-type': 'application/json',
    'content-length': Buffer.byteLength(text),
    'x-amzn-requestid': randomUUID(),
    ...(errorType ? { 'x-amzn-errortype': errorType } : {}),
  });
  response.end(text);
}

/** The request's JSON object; a body over the 20 MiB S3 Vectors takes is refused before it is parsed. */
async function readBody(request: IncomingMessage): Promise<Json> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of request) {
    size += (chunk as Buffer).length;
    // Read on without keeping it, so the client hears the answer rather than a reset.
    if (size <= S3_VECTORS_LIMITS.requestBytes) chunks.push(chunk as Buffer);
  }
  if (size > S3_VECTORS_LIMITS.requestBytes) {
    // The limits page names the limit, not the error; a refusal of the request is a ValidationException.
    throw invalid('body', `takes ${size} bytes; a request may take ${S3_VECTORS_LIMITS.requestBytes}`);
  }
  const text = Buffer.concat(chunks).toString('utf8');
  if (text.trim() === '') return {};
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    throw invalid('body', 'is not JSON');
  }
  if (!isObject(body)) throw invalid('body', 'must be a JSON object');
  return body;
}
