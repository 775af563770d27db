import * as z from 'zod';
import { JOB_TYPE_MODULES, type JobTypeModule } from '../../config/job-types';
import { API_KEY_HEADER, providerWebhookRoutes, STREAM_PATH } from '../../config/layout';
import {
  createMediaRequest,
  createVersionRequest,
  listMediaQuery,
  MEDIA_PAGE_DEFAULT,
  MEDIA_PAGE_MAX,
  mediaItemView,
  mediaPage,
  mediaVersionView,
  updateMediaRequest,
} from '../../config/media';
import {
  PROBLEM_CONTENT_TYPE,
  type ProblemCode,
  RATE_LIMIT_RETRY_AFTER_SECONDS,
} from '../../config/problems';
import { PROVIDER_NAMES, type ProviderName } from '../../config/providers';
import { MAX_EXPRESSION_LENGTH } from '../../config/schedule-expressions';
import {
  SEARCH_LIMIT_MAX,
  SEARCH_QUERY_MAX_CHARS,
  searchFilter,
  searchHit,
  searchRequest,
  searchResult,
} from '../../config/search';
import { bodyLimits, defaultSettings } from '../../config/settings';
import { CANCELABLE_STATUSES, cancelJobsRequest, REPLAY_REFUSALS, replayJobsRequest } from '../domain/bulk';
import { JOB_ID_PATTERN, KEY_PATTERN, SCHEDULE_ID_PATTERN } from '../domain/idempotency';
import {
  DEFAULT_PRIORITY,
  JOB_PRIORITIES,
  JOB_STATUSES,
  JOB_TYPES,
  type JobType,
  SUBMISSION_TAG_PATTERN,
} from '../domain/job';
import {
  completeMultipartRequest,
  MAX_PARTS,
  MIN_PART_BYTES,
  renewPartsRequest,
} from '../domain/multipart-uploads';
import { RESULT_SCHEMAS } from '../domain/present';
import { providerEvent } from '../domain/provider-events';
import {
  MAX_BATCH_ITEMS,
  UPLOAD_MEDIA_TYPE,
  UPLOAD_MEDIA_TYPES,
  UPLOAD_REF_PATTERN,
} from '../domain/requests';
import { DEFAULT_TIMEZONE } from '../domain/schedules';
import { STREAM_TICKET_PATTERN, STREAM_TICKET_TTL_SECONDS } from '../domain/stream-tickets';
import { MAX_WEIGHT, TENANT_DEFAULTS, TENANT_ID_PATTERN, tenantChanges } from '../domain/tenants';
import { QUEUE_FULL_RETRY_AFTER_SECONDS } from './problems';

/**
 * The OpenAPI 3.1 document of the HTTP API, served at GET /openapi.json and
 * written to openapi.yaml by `npm run openapi`. It is the single description
 * clients, the SDK's tests and the end-to-end validator read.
 *
 * Job inputs and provider events are derived from the zod schemas the
 * handlers validate with, so the document cannot drift from what the server
 * accepts; the rest is written here against the handlers and the contract.
 * Response objects are closed (`additionalProperties: false`) so the
 * end-to-end validator notices a field the server sends but this document
 * does not describe.
 */

/** A JSON Schema 2020-12 schema, OpenAPI 3.1's schema dialect. */
export type Schema = { readonly [keyword: string]: unknown };

export interface HeaderObject {
  readonly description: string;
  readonly required?: boolean;
  readonly schema: Schema;
}

export interface MediaTypeObject {
  readonly schema: Schema;
  readonly encoding?: Readonly<Record<string, { readonly contentType: string }>>;
}

export interface ResponseObject {
  readonly description: string;
  readonly headers?: Readonly<Record<string, HeaderObject>>;
  readonly content?: Readonly<Record<string, MediaTypeObject>>;
}

export interface ParameterObject {
  readonly name: string;
  readonly in: 'query' | 'header' | 'path';
  readonly description: string;
  readonly required?: boolean;
  readonly schema: Schema;
}

export type Reference = { readonly $ref: string };

export interface OperationObject {
  readonly operationId: string;
  readonly summary: string;
  readonly description?: string;
  readonly tags: readonly string[];
  /** Empty for routes the gateway does not authenticate. */
  readonly security: readonly Readonly<Record<string, readonly string[]>>[];
  readonly parameters?: readonly (ParameterObject | Reference)[];
  readonly requestBody?: {
    readonly description?: string;
    readonly required: boolean;
    readonly content: Readonly<Record<string, MediaTypeObject>>;
  };
  readonly responses: Readonly<Record<string, ResponseObject | Reference>>;
}

export type PathItem = Partial<Record<'get' | 'post' | 'put' | 'patch' | 'delete', OperationObject>>;

export interface OpenApiDocument {
  readonly openapi: '3.1.0';
  readonly info: {
    readonly title: string;
    readonly version: string;
    readonly summary: string;
    readonly description: string;
    readonly license: { readonly name: string; readonly identifier: string };
  };
  readonly jsonSchemaDialect: string;
  readonly servers: readonly {
    readonly url: string;
    readonly description: string;
    readonly variables?: Readonly<Record<string, { readonly default: string; readonly description: string }>>;
  }[];
  readonly tags: readonly { readonly name: string; readonly description: string }[];
  /** Each job type's input and result schema (names in components.schemas). */
  readonly 'x-job-types': typeof JOB_TYPE_SCHEMAS;
  readonly paths: Readonly<Record<string, PathItem>>;
  readonly webhooks: Readonly<Record<string, PathItem>>;
  readonly components: {
    readonly schemas: Readonly<Record<string, Schema>>;
    readonly responses: Readonly<Record<string, ResponseObject>>;
    readonly parameters: Readonly<Record<string, ParameterObject>>;
    readonly securitySchemes: Readonly<Record<string, unknown>>;
  };
}

const ref = (kind: 'schemas' | 'responses' | 'parameters' | 'headers', name: string): Reference => ({
  $ref: `#/components/${kind}/${name}`,
});
const schemaRef = (name: string): Reference => ref('schemas', name);

/** A zod request schema as JSON Schema, without the `$schema` member (the document's dialect applies). */
function fromZod(schema: z.ZodType): Schema {
  const { $schema: _dialect, ...json } = z.toJSONSchema(schema, { target: 'draft-2020-12' }) as Record<
    string,
    unknown
  >;
  return json;
}

/**
 * Zod schemas that refer to one another, each as JSON Schema under its name:
 * a schema used inside another is a `$ref` to its own entry, not a copy.
 */
function fromZodNamed<const Name extends string>(
  named: Readonly<Record<Name, z.ZodType>>,
): Record<Name, Schema> {
  const registry = z.registry<{ id: string }>();
  for (const [id, schema] of Object.entries(named) as [Name, z.ZodType][]) registry.add(schema, { id });
  const { schemas } = z.toJSONSchema(registry, {
    target: 'draft-2020-12',
    uri: (id) => `#/components/schemas/${id}`,
  });
  return Object.fromEntries(
    Object.entries(schemas).map(([id, schema]) => {
      // Without `$id`: an `$id` would make the document's own `#/components/…` references resolve against it.
      const { $schema: _dialect, $id: _id, ...json } = schema as Record<string, unknown>;
      return [id, json];
    }),
  ) as Record<Name, Schema>;
}

/** POST /v1/search's request and answer, as config/search.ts defines and the handler validates them. */
const searchSchemas = fromZodNamed({
  SearchRequest: searchRequest,
  SearchFilter: searchFilter,
  SearchResult: searchResult,
  SearchHit: searchHit,
});

/** The media routes' requests and answers, as config/media.ts defines and the handler validates them. */
const mediaSchemas = fromZodNamed({
  CreateMediaRequest: createMediaRequest,
  UpdateMediaRequest: updateMediaRequest,
  CreateVersionRequest: createVersionRequest,
  ListMediaQuery: listMediaQuery,
  MediaItem: mediaItemView,
  MediaVersion: mediaVersionView,
  MediaPage: mediaPage,
});

/**
 * A media request's labels with what zod's refinement says and JSON Schema
 * can say too: no label twice.
 */
function withUniqueLabels(schema: Schema): Schema {
  const properties = schema.properties as Record<string, Schema>;
  return { ...schema, properties: { ...properties, labels: { ...properties.labels, uniqueItems: true } } };
}

/** GET /v1/media's query parameters: the properties of ListMediaQuery, one parameter each. */
const listMediaParameters: ParameterObject[] = Object.entries(
  mediaSchemas.ListMediaQuery.properties as Record<string, Schema>,
).map(([name, schema]) => {
  const { description, ...rest } = schema;
  return {
    name,
    in: 'query',
    description:
      typeof description === 'string'
        ? description
        : `Page size (default ${MEDIA_PAGE_DEFAULT}, at most ${MEDIA_PAGE_MAX}).`,
    schema: name === 'limit' ? { ...rest, default: MEDIA_PAGE_DEFAULT } : rest,
  };
});

const timestamp = { type: 'string', format: 'date-time' } as const;
/** When a job is to run, on every request that creates one. */
const runAtField = {
  type: 'string',
  format: 'date-time',
  description:
    'When the job is to run: RFC 3339 with a time zone offset, at most SCHEDULE_MAX_AHEAD_DAYS (365 by default) days ahead. Ahead of now, the job is stored `scheduled` and starts, given a free slot, within one reconciler period of it; absent or past, it runs now. Part of the request the Idempotency-Key stands for.',
} as const;

/** The query parameters every provider's webhook URL carries: the job and its submission. */
const providerWebhookQuery = [
  {
    name: 'jobId',
    in: 'query',
    required: true,
    description: 'The job the event is about (from the webhook URL Longhaul gave the provider).',
    schema: { type: 'string', pattern: JOB_ID_PATTERN.source },
  },
  {
    name: 'submission',
    in: 'query',
    required: false,
    description:
      "Which of the job's submissions the event is about (from the same URL). An event counts only for the job's current submission; URLs without it are the first submission's.",
    schema: { type: 'string', pattern: SUBMISSION_TAG_PATTERN.source },
  },
] as const;

/** A provider's webhook route: verified by that provider's adapter, applied to the job its URL names. */
function providerWebhookPath(operation: {
  operationId: string;
  summary: string;
  description: string;
  parameters: readonly Record<string, unknown>[];
  body: Schema;
}): PathItem {
  return {
    post: {
      operationId: operation.operationId,
      summary: operation.summary,
      description: `${operation.description} Events for unknown or finished jobs are acknowledged and change nothing.`,
      tags: ['provider'],
      security: [],
      parameters: [...providerWebhookQuery, ...operation.parameters],
      requestBody: { required: true, content: { 'application/json': { schema: operation.body } } },
      responses: {
        '204': { description: 'Applied, or ignored.' },
        '400': problemRef('ValidationFailed'),
        '401': problemRef('Unauthorized'),
        '413': problemRef('PayloadTooLarge'),
        '5XX': problemRef('ServerError'),
      },
    },
  } as unknown as PathItem;
}

/** The path parameter of the routes that go on with a multipart upload. */
const multipartUploadRef = {
  name: 'ref',
  in: 'path',
  required: true,
  description: 'The ref of POST /v1/uploads/multipart.',
  schema: { type: 'string' },
} as const;

/** What the document says of one job type (`x-job-types`). */
export interface JobTypeEntry {
  /** Its input schema's name in components.schemas. */
  readonly input: string;
  /** Its result schema's name in components.schemas. */
  readonly result: string;
  /** The input field a multipart `file` part (or an SDK's file) fills with its upload ref; absent when it takes no file. */
  readonly 'x-file-field'?: string;
}

/**
 * The schemas of each job type's input and result, and the field a file
 * fills: the document says which goes with which (`x-job-types`), so clients
 * can type a job by its type and offer its fields (the SDK's
 * client/job-types.ts, and the CLI's flags, are generated from it).
 */
export const JOB_TYPE_SCHEMAS: Readonly<Record<JobType, JobTypeEntry>> = Object.fromEntries(
  JOB_TYPE_MODULES.map((module) => [
    module.name,
    {
      ...module.schemaNames,
      ...(module.file ? { 'x-file-field': module.file.refField } : {}),
    },
  ]),
) as Record<JobType, JobTypeEntry>;

/**
 * A job type's input as JSON Schema: its zod schema, plus what zod's checks
 * cannot say there: a file source that may be an upload or a URL is exactly one of them.
 */
function jobTypeInputSchema(module: JobTypeModule): Schema {
  const schema = fromZod(module.input);
  const { file } = module;
  if (!file?.urlField) return { description: module.description, ...schema };
  return {
    ...schema,
    description: `${module.description} Exactly one of ${file.urlField} or ${file.refField}.`,
    oneOf: [{ required: [file.urlField] }, { required: [file.refField] }],
  };
}

const fileFields = JOB_TYPE_MODULES.flatMap((module) =>
  module.file ? [`${module.file.refField} (${module.name}, ${module.file.mediaTypes})`] : [],
);

const jobStatus = schemaRef('JobStatus');

/** Every problem code, listed through a record so adding a code to config/problems.ts without documenting it fails to compile. */
const problemCodes: Record<ProblemCode, true> = {
  'idempotency-key-missing': true,
  'validation-failed': true,
  unauthorized: true,
  forbidden: true,
  'not-found': true,
  'idempotency-key-in-use': true,
  'job-already-finished': true,
  'job-not-in-review': true,
  'job-not-resumable': true,
  'payload-too-large': true,
  'unsupported-media-type': true,
  'idempotency-key-reused': true,
  'rate-limited': true,
  'tenant-queue-full': true,
  'internal-error': true,
  'service-unavailable': true,
};

export const PROBLEM_CODES = Object.keys(problemCodes) as ProblemCode[];

const jobFields = {
  id: {
    type: 'string',
    pattern: JOB_ID_PATTERN.source,
    description: 'Derived from (tenant, Idempotency-Key).',
  },
  type: schemaRef('JobType'),
  provider: {
    type: 'string',
    enum: [...PROVIDER_NAMES],
    description: "The provider that runs the job (the job type's, or the one the deployment chose for it).",
  },
  priority: schemaRef('JobPriority'),
  status: jobStatus,
  progress: {
    type: 'integer',
    minimum: 0,
    maximum: 100,
    description: 'Persisted at most about once a second while running; 100 once succeeded.',
  },
  input: {
    type: 'object',
    description: `The input as accepted: ${JOB_TYPE_MODULES.map((module) => `a ${module.schemaNames.input}`).join(' or ')}, with a multipart file part turned into an upload ref.`,
  },
  result: {
    description:
      'Set once the job succeeded (null when an operator resolved it as succeeded without an output). Output URLs are presigned and short-lived: fetch the job again for fresh ones.',
    oneOf: [{ type: 'null' }, ...Object.values(JOB_TYPE_SCHEMAS).map((schemas) => schemaRef(schemas.result))],
  },
  error: {
    description: 'Why a `failed` or `needs_review` job is where it is.',
    oneOf: [{ type: 'null' }, schemaRef('JobError')],
  },
  attempts: { type: 'integer', minimum: 0, description: 'Submissions to the provider so far.' },
  idempotencyKey: { type: 'string', description: 'The Idempotency-Key the job was created with.' },
  webhookUrl: { type: 'string', description: 'Where the job is POSTed when it finishes.' },
  runAt: {
    ...timestamp,
    description: 'The runAt the job was submitted with (UTC), or its creation time when it had none.',
  },
  scheduleId: {
    type: 'string',
    pattern: SCHEDULE_ID_PATTERN.source,
    description:
      'The recurring schedule whose firing created the job; its idempotencyKey is then `schedule:<scheduleId>:<fire time, RFC 3339>`.',
  },
  createdAt: timestamp,
  updatedAt: timestamp,
  startedAt: timestamp,
  finishedAt: timestamp,
  replayOf: {
    type: 'string',
    pattern: JOB_ID_PATTERN.source,
    description:
      'The job an operator replayed as this one (POST /v1/admin/jobs/replay); absent on other jobs.',
  },
  cancelRequestedAt: {
    ...timestamp,
    description:
      'When a cancel was asked of a job that is not settled yet: an audio.publish stays `running` until every chunk and embedding job it made is settled (one at a provider that cannot stop runs out there), then becomes `canceled`; a job in review keeps its status for an operator. Absent otherwise, and once the job is finished.',
  },
} as const;
const jobRequired = [
  'id',
  'type',
  'provider',
  'priority',
  'status',
  'progress',
  'input',
  'result',
  'error',
  'attempts',
  'idempotencyKey',
  'runAt',
  'createdAt',
  'updatedAt',
] as const;

const createJobRequest = {
  type: 'object',
  description:
    'The type selects the input schema. A webhookUrl must be https and public in AWS (http and loopback are allowed locally).',
  oneOf: Object.entries(JOB_TYPE_SCHEMAS).map(([type, schemas]) => ({
    properties: { type: { const: type }, input: schemaRef(schemas.input) },
  })),
  properties: {
    type: schemaRef('JobType'),
    input: { type: 'object' },
    webhookUrl: { type: 'string', format: 'uri', maxLength: 2048 },
    priority: schemaRef('JobPriority'),
    runAt: runAtField,
  },
  required: ['type', 'input'],
  additionalProperties: false,
} as const;

const schemas: Record<string, Schema> = {
  JobType: { type: 'string', enum: [...JOB_TYPES] },
  JobPriority: {
    type: 'string',
    enum: [...JOB_PRIORITIES],
    default: DEFAULT_PRIORITY,
    description: `Which of the tenant's waiting jobs goes first when a provider slot frees: ${JOB_PRIORITIES.join(' before ')}; a waiting job ages, so none starves. Jobs submitted without one are ${DEFAULT_PRIORITY}.`,
  },
  JobStatus: {
    type: 'string',
    enum: [...JOB_STATUSES],
    description:
      '`scheduled`: waiting for its runAt. Terminal: succeeded, failed, canceled. `needs_review` is left only by an operator or by the reconciler proving the outcome. A status never moves backwards.',
  },
  Job: {
    type: 'object',
    description: 'A job: one user action, however often it was submitted.',
    properties: jobFields,
    required: jobRequired,
    additionalProperties: false,
  },
  AdminJob: {
    type: 'object',
    description: 'A job as operators see it: with the tenant it belongs to.',
    properties: { ...jobFields, tenantId: { type: 'string' } },
    required: [...jobRequired, 'tenantId'],
    additionalProperties: false,
  },
  ProviderStatus: {
    type: 'object',
    description: 'A provider as operators see it.',
    properties: {
      name: { type: 'string', enum: [...PROVIDER_NAMES] },
      maxInFlight: {
        type: 'integer',
        minimum: 1,
        description: 'Its in-flight limit (MAX_IN_FLIGHT_<PROVIDER>).',
      },
      inFlight: { type: 'integer', minimum: 0, description: 'Slots held now.' },
      queued: { type: 'integer', minimum: 0, description: 'Jobs waiting for one of its slots.' },
    },
    required: ['name', 'maxInFlight', 'inFlight', 'queued'],
    additionalProperties: false,
  },
  ProviderList: {
    type: 'object',
    properties: { items: { type: 'array', items: schemaRef('ProviderStatus') } },
    required: ['items'],
    additionalProperties: false,
  },
  Tenant: {
    type: 'object',
    description:
      "A tenant's settings, with which the scheduler shares each provider's slots among tenants with waiting jobs, and what the tenant has in the system now. A tenant whose settings were never set has the defaults.",
    properties: {
      tenant: { type: 'string', pattern: TENANT_ID_PATTERN.source },
      weight: {
        type: 'integer',
        minimum: 1,
        maximum: MAX_WEIGHT,
        default: TENANT_DEFAULTS.weight,
        description:
          "Its share of a freed provider slot, in proportion to the other waiting tenants' weights.",
      },
      maxInFlight: {
        type: 'integer',
        minimum: 1,
        description:
          "Its jobs running at one provider at most, inside that provider's own limit. Absent: no cap of its own.",
      },
      maxQueued: {
        type: 'integer',
        minimum: 1,
        default: TENANT_DEFAULTS.maxQueued,
        description: 'Its queued and scheduled jobs at most.',
      },
      usage: schemaRef('TenantUsage'),
    },
    required: ['tenant', 'weight', 'maxQueued', 'usage'],
    additionalProperties: false,
  },
  TenantUsage: {
    type: 'object',
    description: 'Counted from the job indexes, which lag the jobs by a moment.',
    properties: {
      queued: { type: 'integer', minimum: 0, description: 'Jobs waiting for a provider slot.' },
      scheduled: { type: 'integer', minimum: 0, description: 'Jobs waiting for their runAt.' },
      inFlight: { type: 'integer', minimum: 0, description: 'Jobs running at any provider.' },
    },
    required: ['queued', 'scheduled', 'inFlight'],
    additionalProperties: false,
  },
  TenantSettings: {
    ...fromZod(tenantChanges),
    description:
      'The settings to set: each one named is set, each one left out keeps its value (the default, for a tenant whose settings were never set), and `maxInFlight: null` removes the cap. Sending the same body again changes nothing.',
  },
  JobError: {
    type: 'object',
    properties: { code: { type: 'string' }, message: { type: 'string' } },
    required: ['code', 'message'],
    additionalProperties: false,
  },
  ...Object.fromEntries(
    JOB_TYPE_MODULES.flatMap((module) => [
      [module.schemaNames.result, fromZod(RESULT_SCHEMAS[module.name])],
      [module.schemaNames.input, jobTypeInputSchema(module)],
    ]),
  ),
  CreateJobRequest: createJobRequest,
  CreateJobBatch: {
    type: 'object',
    description: `Job requests submitted together, each under its own idempotency key; at most ${bodyLimits.jsonBytes} bytes in all.`,
    properties: {
      items: {
        type: 'array',
        minItems: 1,
        maxItems: MAX_BATCH_ITEMS,
        items: schemaRef('CreateJobBatchItem'),
      },
    },
    required: ['items'],
    additionalProperties: false,
  },
  CreateJobBatchItem: {
    ...createJobRequest,
    description:
      'A CreateJobRequest with the Idempotency-Key a single POST /v1/jobs would send: the same key space, so a single submission with the key lands on the same job.',
    properties: {
      idempotencyKey: { type: 'string', pattern: KEY_PATTERN.source },
      ...createJobRequest.properties,
    },
    required: ['idempotencyKey', ...createJobRequest.required],
  },
  CreateJobBatchResult: {
    type: 'object',
    properties: { items: { type: 'array', items: schemaRef('CreateJobBatchItemResult') } },
    required: ['items'],
    additionalProperties: false,
  },
  CreateJobBatchItemResult: {
    type: 'object',
    description:
      "One item's answer, in the order of the items: what POST /v1/jobs with its key and body would have answered.",
    properties: {
      idempotencyKey: {
        type: ['string', 'null'],
        description: 'The key the item gave; null when it gave none that is a string.',
      },
      status: {
        type: 'integer',
        description:
          'The status POST /v1/jobs would have answered: 202 accepted (new or replayed), 400 invalid, 409 key in use, 422 key reused, 429 tenant queue full, 5xx failed (retry the item with its key).',
      },
      job: { ...schemaRef('Job'), description: 'With status 202.' },
      problem: { ...schemaRef('Problem'), description: 'With any other status.' },
      replayed: { type: 'boolean', description: "The key's job existed already: the first answer repeated." },
    },
    required: ['idempotencyKey', 'status', 'replayed'],
    additionalProperties: false,
  },
  CreateJobMultipart: {
    type: 'object',
    description: `As CreateJobRequest, with an optional file part of at most ${bodyLimits.fileBytes} bytes (the whole body at most ${bodyLimits.multipartBytes}). The file becomes the job's ${fileFields.join(' or ')}; leave that field, and a URL naming the same source, out of input.`,
    properties: {
      type: schemaRef('JobType'),
      input: { type: 'object', description: 'The input, as JSON text.' },
      webhookUrl: { type: 'string', format: 'uri', maxLength: 2048 },
      priority: schemaRef('JobPriority'),
      runAt: runAtField,
      file: { type: 'string', contentMediaType: 'application/octet-stream' },
    },
    required: ['type', 'input'],
    additionalProperties: false,
  },
  JobPage: {
    type: 'object',
    properties: {
      items: { type: 'array', items: schemaRef('Job') },
      nextCursor: {
        type: ['string', 'null'],
        description: 'Pass as `cursor` for the next page; null on the last page.',
      },
    },
    required: ['items', 'nextCursor'],
    additionalProperties: false,
  },
  CancelJobsRequest: {
    ...fromZod(cancelJobsRequest),
    description: `Which of the tenant's jobs to cancel: those in one of \`status\` (default: every unfinished status), of \`type\`, created strictly after \`createdAfter\` and strictly before \`createdBefore\` (RFC 3339; createdAfter must be earlier). \`dryRun\` only counts. \`cursor\` is the previous answer's nextCursor, with the same filter.`,
  },
  CancelJobsResult: {
    type: 'object',
    properties: {
      matched: {
        type: 'integer',
        minimum: 0,
        description: `The tenant's unfinished jobs (${CANCELABLE_STATUSES.join(', ')}) this request found matching the filter: at most BULK_MAX_PER_REQUEST (${defaultSettings.bulkMaxPerRequest} by default). Finished jobs are never matched.`,
      },
      canceled: {
        type: 'integer',
        minimum: 0,
        description: 'Of those, the jobs now canceled; 0 on a dry run.',
      },
      cancelRequested: {
        type: 'integer',
        minimum: 0,
        description:
          'Of those, jobs that carry the cancel request (`cancelRequestedAt`) instead: jobs in review keep their status and only an operator settles them; an audio.publish stays `running` until every job it made is settled, then becomes `canceled`.',
      },
      nextCursor: {
        type: ['string', 'null'],
        description:
          'More jobs may match: send the same filter again with this as `cursor`. Null when every matching job was looked at.',
      },
    },
    required: ['matched', 'canceled', 'cancelRequested', 'nextCursor'],
    additionalProperties: false,
  },
  ReplayJobsRequest: {
    ...fromZod(replayJobsRequest),
    description:
      "Which jobs to replay: of `tenant` (default: every tenant's), in one of `status`, of `type`, created strictly between `createdAfter` and `createdBefore` (RFC 3339). `note` says why; the same note replays a job once however often the request is retried, another note replays it again. `dryRun` only counts and refuses. `cursor` is the previous answer's nextCursor, with the same filter.",
  },
  ReplayJobsResult: {
    type: 'object',
    properties: {
      matched: {
        type: 'integer',
        minimum: 0,
        description: `Jobs this request found matching the filter, replayed or refused: at most REPLAY_MAX_PER_REQUEST (${defaultSettings.replayMaxPerRequest} by default).`,
      },
      replayed: {
        type: 'integer',
        minimum: 0,
        description: 'New jobs this request created; 0 on a dry run.',
      },
      alreadyReplayed: {
        type: 'integer',
        minimum: 0,
        description:
          'Jobs replayed with this note before (a retried request): their replay is in `jobs`, not made again.',
      },
      refused: {
        type: 'array',
        items: {
          type: 'object',
          properties: {
            id: { type: 'string', pattern: JOB_ID_PATTERN.source },
            reason: {
              type: 'string',
              enum: [...REPLAY_REFUSALS],
              description:
                "`needs-review`: its provider submission may have been charged with no known outcome; resolve it first. `not-finished`: it may still run. `provider-outcome-unknown`: finished, but a submission of it may still run at the provider. `tenant-queue-full`: the tenant is at its maxQueued; replay later. `replay-in-progress`: the same replay is being accepted right now; retry the request. `key-taken`: the replay's key names another job.",
            },
          },
          required: ['id', 'reason'],
          additionalProperties: false,
        },
      },
      jobs: {
        type: 'array',
        description: 'Each replay made or found by this request.',
        items: {
          type: 'object',
          properties: {
            id: { type: 'string', pattern: JOB_ID_PATTERN.source },
            replayOf: { type: 'string', pattern: JOB_ID_PATTERN.source },
            tenantId: { type: 'string' },
          },
          required: ['id', 'replayOf', 'tenantId'],
          additionalProperties: false,
        },
      },
      nextCursor: {
        type: ['string', 'null'],
        description:
          'More jobs may match: send the same filter and note again with this as `cursor`. Null when every matching job was looked at.',
      },
    },
    required: ['matched', 'replayed', 'alreadyReplayed', 'refused', 'jobs', 'nextCursor'],
    additionalProperties: false,
  },
  Schedule: {
    type: 'object',
    description:
      'A recurring schedule: each firing creates one job from `job` under the key `schedule:<id>:<fire time>`.',
    properties: {
      id: {
        type: 'string',
        pattern: SCHEDULE_ID_PATTERN.source,
        description: 'Derived from (tenant, Idempotency-Key).',
      },
      expression: { type: 'string', description: 'EventBridge Scheduler `rate(…)` or `cron(…)` expression.' },
      timezone: { type: 'string', description: 'IANA time zone the expression is evaluated in.' },
      job: schemaRef('CreateJobRequest'),
      enabled: { type: 'boolean' },
      nextRunAt: {
        type: ['string', 'null'],
        format: 'date-time',
        description: 'The next firing; null while disabled or when the expression never fires again.',
      },
      createdAt: timestamp,
    },
    required: ['id', 'expression', 'timezone', 'job', 'enabled', 'nextRunAt', 'createdAt'],
    additionalProperties: false,
  },
  CreateScheduleRequest: {
    type: 'object',
    description:
      "At most one firing a minute. `job` is validated exactly as POST /v1/jobs validates a job, except that it takes no `runAt` (each firing's job runs at the firing); any invalid member is a 400 naming it, and nothing is stored.",
    properties: {
      expression: {
        type: 'string',
        maxLength: MAX_EXPRESSION_LENGTH,
        description:
          '`rate(<n> minute|minutes|hour|hours|day|days)` (singular for 1), or `cron(<minutes> <hours> <day-of-month> <month> <day-of-week> <year>)` with `?` in exactly one of the day fields; `L`, `W`, `#`, ranges, lists, steps and the names JAN-DEC and SUN-SAT as EventBridge Scheduler takes them.',
        examples: ['rate(15 minutes)', 'cron(0 9 ? * MON-FRI *)'],
      },
      timezone: {
        type: 'string',
        default: DEFAULT_TIMEZONE,
        description:
          'IANA time zone name; daylight saving time is followed (a skipped time does not fire, a repeated one fires once).',
      },
      job: schemaRef('CreateJobRequest'),
      enabled: { type: 'boolean', default: true },
    },
    required: ['expression', 'job'],
    additionalProperties: false,
  },
  UpdateScheduleRequest: {
    type: 'object',
    properties: { enabled: { type: 'boolean' } },
    required: ['enabled'],
    additionalProperties: false,
  },
  SchedulePage: {
    type: 'object',
    properties: {
      items: { type: 'array', items: schemaRef('Schedule') },
      nextCursor: {
        type: ['string', 'null'],
        description: 'Pass as `cursor` for the next page; null on the last page.',
      },
    },
    required: ['items', 'nextCursor'],
    additionalProperties: false,
  },
  AdminJobPage: {
    type: 'object',
    properties: {
      items: { type: 'array', items: schemaRef('AdminJob') },
      nextCursor: { type: ['string', 'null'] },
    },
    required: ['items', 'nextCursor'],
    additionalProperties: false,
  },
  TimelineEvent: {
    type: 'object',
    description:
      "One entry of a job's history, e.g. `job.accepted`, `job.enqueued`, `step.succeeded` (with `step` one of prepare, submit, await, release, finalize, notify), `step.retry`, `provider.accepted`, `job.needs_review`, `operator.resolved`.",
    properties: {
      at: timestamp,
      type: { type: 'string' },
      step: { type: 'string' },
      attempt: { type: 'integer', minimum: 0 },
      detail: { type: 'string' },
    },
    required: ['at', 'type'],
    additionalProperties: false,
  },
  Timeline: {
    type: 'object',
    properties: { items: { type: 'array', items: schemaRef('TimelineEvent') } },
    required: ['items'],
    additionalProperties: false,
  },
  CreateUploadRequest: {
    type: 'object',
    description:
      'The PUT to the returned URL must send exactly this Content-Type and Content-Length (signed into the URL).',
    properties: {
      contentType: { type: 'string', pattern: UPLOAD_MEDIA_TYPE.source },
      contentLength: {
        type: 'integer',
        minimum: 1,
        maximum: defaultSettings.maxUploadBytes,
        description: `At most MAX_UPLOAD_BYTES (default ${defaultSettings.maxUploadBytes}).`,
      },
    },
    required: ['contentType', 'contentLength'],
    additionalProperties: false,
  },
  UploadTicket: {
    type: 'object',
    properties: {
      ref: {
        type: 'string',
        pattern: UPLOAD_REF_PATTERN.source,
        description: `Use as ${fileFields.join(' or ')} once the PUT succeeded.`,
      },
      uploadUrl: { type: 'string', format: 'uri', description: 'Presigned PUT URL.' },
      expiresAt: timestamp,
    },
    required: ['ref', 'uploadUrl', 'expiresAt'],
    additionalProperties: false,
  },
  MultipartUploadTicket: {
    type: 'object',
    description:
      "PUT each part (bytes [(partNumber - 1) × partSizeBytes, partNumber × partSizeBytes) of the file) to its uploadUrl with exactly that Content-Length, keep each answer's ETag, then complete the upload. A failed part is sent again alone, to the same URL, until expiresAt; after that, POST /v1/uploads/{ref}/parts renews the URLs of the parts still missing.",
    properties: {
      ref: {
        type: 'string',
        pattern: UPLOAD_REF_PATTERN.source,
        description: `Use as ${fileFields.join(' or ')} once the upload is completed.`,
      },
      uploadId: { type: 'string' },
      partSizeBytes: { type: 'integer', minimum: MIN_PART_BYTES },
      parts: {
        type: 'array',
        minItems: 1,
        maxItems: MAX_PARTS,
        items: {
          type: 'object',
          properties: {
            partNumber: { type: 'integer', minimum: 1, maximum: MAX_PARTS },
            uploadUrl: { type: 'string', format: 'uri', description: 'Presigned PUT URL of this part.' },
          },
          required: ['partNumber', 'uploadUrl'],
          additionalProperties: false,
        },
      },
      expiresAt: timestamp,
    },
    required: ['ref', 'uploadId', 'partSizeBytes', 'parts', 'expiresAt'],
    additionalProperties: false,
  },
  CompleteMultipartUpload: fromZod(completeMultipartRequest),
  RenewMultipartUploadParts: {
    ...fromZod(renewPartsRequest),
    description: `The parts whose URLs to renew, of a file of contentLength bytes (the length the upload was started with, at most MAX_UPLOAD_BYTES, default ${defaultSettings.maxUploadBytes}).`,
  },
  UploadCompleted: {
    type: 'object',
    properties: { ref: { type: 'string', pattern: UPLOAD_REF_PATTERN.source } },
    required: ['ref'],
    additionalProperties: false,
  },
  StreamTicket: {
    type: 'object',
    description: `Opens the live-progress WebSocket for one job: connect to \`streamUrl?ticket=<ticket>\` before expiresAt (${STREAM_TICKET_TTL_SECONDS} s). Ask for a new ticket for each (re)connection.`,
    properties: {
      ticket: { type: 'string', pattern: STREAM_TICKET_PATTERN.source },
      expiresAt: timestamp,
      streamUrl: {
        type: 'string',
        format: 'uri',
        description: 'The WebSocket URL (AWS: the stack output StreamUrl).',
      },
    },
    required: ['ticket', 'expiresAt', 'streamUrl'],
    additionalProperties: false,
  },
  Resolution: {
    type: 'object',
    properties: {
      outcome: {
        type: 'string',
        enum: ['succeeded', 'failed', 'requeue'],
        description:
          '`succeeded` or `failed` as the operator found the job at the provider; `requeue` submits it again under a new provider key.',
      },
      note: { type: 'string', minLength: 1, maxLength: 1000, description: 'Why; recorded in the timeline.' },
    },
    required: ['outcome', 'note'],
    additionalProperties: false,
  },
  RedriveStarted: {
    type: 'object',
    properties: { taskHandle: { type: 'string', description: 'The SQS message move task.' } },
    required: ['taskHandle'],
    additionalProperties: false,
  },
  Health: {
    type: 'object',
    properties: { status: { const: 'ok' } },
    required: ['status'],
    additionalProperties: false,
  },
  ProviderEvent: fromZod(providerEvent),
  ...searchSchemas,
  SearchFilter: {
    ...searchSchemas.SearchFilter,
    // What JSON Schema cannot say: the filter's refinement, which the handler checks.
    description: `${searchSchemas.SearchFilter.description} \`dateFrom\` must not be after \`dateTo\`.`,
  },
  ...mediaSchemas,
  CreateMediaRequest: withUniqueLabels(mediaSchemas.CreateMediaRequest),
  UpdateMediaRequest: {
    ...withUniqueLabels(mediaSchemas.UpdateMediaRequest),
    // What JSON Schema can say of the refinement: at least one field.
    minProperties: 1,
  },
  CreateVersionRequest: {
    ...mediaSchemas.CreateVersionRequest,
    // What JSON Schema can say of the refinement: exactly one source.
    oneOf: [{ required: ['audioUrl'] }, { required: ['audioRef'] }],
  },
  ProblemCode: { type: 'string', enum: PROBLEM_CODES },
  Problem: {
    type: 'object',
    description: 'RFC 9457 problem details. Switch on `code` (or on `type`, `urn:longhaul:problem:<code>`).',
    properties: {
      type: { type: 'string', pattern: '^urn:longhaul:problem:[a-z-]+$' },
      title: { type: 'string' },
      status: { type: 'integer', minimum: 400, maximum: 599 },
      detail: { type: 'string' },
      code: schemaRef('ProblemCode'),
      instance: {
        type: 'string',
        description: 'This occurrence (the request id), to quote when asking for support.',
      },
      errors: {
        type: 'array',
        description:
          'What was invalid: a JSON Pointer into the body, or a query parameter or header by name.',
        items: {
          type: 'object',
          properties: {
            pointer: { type: 'string' },
            parameter: { type: 'string' },
            detail: { type: 'string' },
          },
          required: ['detail'],
          additionalProperties: false,
        },
      },
    },
    required: ['type', 'title', 'status', 'detail', 'code'],
    additionalProperties: false,
  },
  LiveMessage: {
    description: `A message of the live-progress WebSocket (locally ws://127.0.0.1:$PORT${STREAM_PATH}, in AWS the stack output StreamUrl), connected with the query \`?ticket=<ticket>\` (see StreamTicket; preferred: no API key in a URL) or, kept for compatibility, \`?jobId=<id>&apiKey=<key>\` with a tenant key. A handshake with a missing, unknown or expired ticket or key is refused with 401, the admin key with 403, another tenant's or an unknown job with 404. The server sends a \`progress\` message for every provider tick (not throttled) and a \`status\` message on each status change. Clients may send any small text message (such as \`ping\`) to keep an idle connection open; the server reads nothing in it and answers nothing. Messages are best effort: the job resource is the truth.`,
    oneOf: [schemaRef('ProgressMessage'), schemaRef('StatusMessage')],
  },
  ProgressMessage: {
    type: 'object',
    properties: {
      type: { const: 'progress' },
      jobId: { type: 'string' },
      status: jobStatus,
      progress: { type: 'integer', minimum: 0, maximum: 100 },
      at: timestamp,
    },
    required: ['type', 'jobId', 'status', 'progress', 'at'],
    additionalProperties: false,
  },
  StatusMessage: {
    type: 'object',
    properties: {
      type: { const: 'status' },
      jobId: { type: 'string' },
      status: jobStatus,
      progress: { type: 'integer', minimum: 0, maximum: 100 },
      at: timestamp,
      error: { oneOf: [{ type: 'null' }, schemaRef('JobError')] },
    },
    required: ['type', 'jobId', 'status', 'progress', 'at', 'error'],
    additionalProperties: false,
  },
};

const retryAfter: HeaderObject = {
  description: 'Seconds to wait before retrying.',
  required: true,
  schema: { type: 'integer', minimum: 0 },
};

/** A problem answer of one status (or any 5xx) with the codes it can carry. */
function problemResponse(
  status: number | '5XX',
  description: string,
  codes: readonly ProblemCode[],
  headers?: Record<string, HeaderObject>,
): ResponseObject {
  return {
    description,
    ...(headers ? { headers } : {}),
    content: {
      [PROBLEM_CONTENT_TYPE]: {
        schema: {
          allOf: [schemaRef('Problem')],
          properties: {
            status: status === '5XX' ? { minimum: 500, maximum: 599 } : { const: status },
            code: { enum: [...codes] },
          },
        },
      },
    },
  };
}

const responses: Record<string, ResponseObject> = {
  ValidationFailed: problemResponse(
    400,
    'The request is invalid; `errors` says where (`validation-failed`).',
    ['validation-failed'],
  ),
  CreateJobRefused: problemResponse(
    400,
    'The Idempotency-Key header is missing or malformed (`idempotency-key-missing`: 1 to 255 visible ASCII characters), or the body is invalid (`validation-failed`).',
    ['idempotency-key-missing', 'validation-failed'],
  ),
  Unauthorized: problemResponse(401, 'No X-API-Key, or an unknown or revoked one (`unauthorized`).', [
    'unauthorized',
  ]),
  Forbidden: problemResponse(
    403,
    'The key may not call this route: a tenant key on an admin route or the reverse (`forbidden`).',
    ['forbidden'],
  ),
  NotFound: problemResponse(404, "No such job, or another tenant's (`not-found`).", ['not-found']),
  ScheduleNotFound: problemResponse(404, "No such schedule, or another tenant's (`not-found`).", [
    'not-found',
  ]),
  CreateScheduleRefused: problemResponse(
    400,
    'The Idempotency-Key header is missing or malformed (`idempotency-key-missing`), or the body is invalid (`validation-failed`: a bad or too frequent expression, an unknown time zone, an invalid job); nothing was stored.',
    ['idempotency-key-missing', 'validation-failed'],
  ),
  MediaNotFound: problemResponse(
    404,
    "No such media item, another tenant's, or a deleted one (`not-found`).",
    ['not-found'],
  ),
  CreateMediaRefused: problemResponse(
    400,
    'The Idempotency-Key header is missing or malformed (`idempotency-key-missing`), or the body is invalid (`validation-failed`, a JSON Pointer per error: a title that is empty or only white space, a label given twice, a date that is not YYYY-MM-DD, not exactly one of audioUrl or audioRef); nothing was stored.',
    ['idempotency-key-missing', 'validation-failed'],
  ),
  TenantNotFound: problemResponse(
    404,
    'Neither an API key nor a record carries this tenant name (`not-found`).',
    ['not-found'],
  ),
  IdempotencyKeyInUse: problemResponse(
    409,
    'The first request with this Idempotency-Key is still being accepted (`idempotency-key-in-use`): retry with the same key after Retry-After; no second job is created.',
    ['idempotency-key-in-use'],
    { 'Retry-After': retryAfter },
  ),
  JobAlreadyFinished: problemResponse(409, 'The job already succeeded or failed (`job-already-finished`).', [
    'job-already-finished',
  ]),
  NotResumable: problemResponse(
    409,
    "The job cannot be resumed (`job-not-resumable`): it is not failed (running, succeeded, canceled), it needs review (resolve the review first: a submission whose outcome is unknown is never resumed), or its failure was the provider's own outcome, known or unknown. Nothing was changed.",
    ['job-not-resumable'],
  ),
  NotResolvable: problemResponse(
    409,
    'The job is already finished (`job-already-finished`) or not in review (`job-not-in-review`).',
    ['job-already-finished', 'job-not-in-review'],
  ),
  PayloadTooLarge: problemResponse(
    413,
    `The body is too large, refused before it is parsed (\`payload-too-large\`): JSON bodies up to ${bodyLimits.jsonBytes} bytes, multipart bodies up to ${bodyLimits.multipartBytes} with a file part up to ${bodyLimits.fileBytes}; larger inputs go through POST /v1/uploads.`,
    ['payload-too-large'],
  ),
  UnsupportedMediaType: problemResponse(
    415,
    'The body is not of an accepted media type (`unsupported-media-type`).',
    ['unsupported-media-type'],
  ),
  IdempotencyKeyReused: problemResponse(
    422,
    'This Idempotency-Key was used with a different body (`idempotency-key-reused`): a new request needs a new key.',
    ['idempotency-key-reused'],
  ),
  RateLimited: problemResponse(
    429,
    'The tenant sends too many requests (`rate-limited`).',
    ['rate-limited'],
    {
      'Retry-After': {
        ...retryAfter,
        description: `Seconds to wait before retrying (${RATE_LIMIT_RETRY_AFTER_SECONDS} locally and from the gateway).`,
      },
    },
  ),
  CreateJobThrottled: problemResponse(
    429,
    'The tenant sends too many requests (`rate-limited`), or its queued and scheduled jobs already reach its `maxQueued` (`tenant-queue-full`: nothing was stored; a retry with the same Idempotency-Key after Retry-After is safe).',
    ['rate-limited', 'tenant-queue-full'],
    {
      'Retry-After': {
        ...retryAfter,
        description: `Seconds to wait before retrying: ${RATE_LIMIT_RETRY_AFTER_SECONDS} when rate-limited, ${QUEUE_FULL_RETRY_AFTER_SECONDS} when the tenant's queue is full.`,
      },
    },
  ),
  SearchRefused: problemResponse(
    400,
    `The body is not a search (\`validation-failed\`, with a JSON Pointer per error): a query that is empty (or only white space) or over ${SEARCH_QUERY_MAX_CHARS} characters, a field or filter key the request does not define, a limit that is not a whole number from 1 to ${SEARCH_LIMIT_MAX}, a date that is not YYYY-MM-DD, an item id that is neither a media item's nor an audio.publish job's, or dateFrom after dateTo.`,
    ['validation-failed'],
  ),
  SearchThrottled: problemResponse(
    429,
    'The tenant sends too many requests, or the embedding model that reads the query has no capacity right now (`rate-limited`); nothing was changed, so retrying after Retry-After is safe.',
    ['rate-limited'],
    { 'Retry-After': retryAfter },
  ),
  ServerError: problemResponse(
    '5XX',
    'The service failed (`internal-error`, 500 or 502) or took too long (`service-unavailable`, 504); retry later. Retrying POST /v1/jobs with the same Idempotency-Key is always safe.',
    ['internal-error', 'service-unavailable'],
  ),
};

const problemRef = (name: keyof typeof responses): Reference => ref('responses', name);

/** Answers any authenticated route can give before or around its handler. */
const authenticated = {
  '401': problemRef('Unauthorized'),
  '403': problemRef('Forbidden'),
  '429': problemRef('RateLimited'),
  '5XX': problemRef('ServerError'),
} as const;

const jsonContent = (schema: Schema) => ({ 'application/json': { schema } });
const tenantSecurity = [{ apiKey: [] }] as const;
const adminSecurity = [{ adminKey: [] }] as const;

const jobIdParameter = ref('parameters', 'JobId');
const scheduleIdParameter = ref('parameters', 'ScheduleId');
const mediaIdParameter = ref('parameters', 'MediaId');

const idempotentReplayed: HeaderObject = {
  description: 'Present (`true`) when this answer repeats the first answer for this key.',
  schema: { const: 'true' },
};
const tenantParameter = ref('parameters', 'Tenant');

/**
 * Each provider's webhook route, by provider: a provider added to
 * config/providers.ts without its entry here fails to compile. The routes'
 * paths come from config/layout.ts, as the gateway's do.
 */
const providerWebhooks: Partial<Record<ProviderName, PathItem>> = {
  'longhaul-http': {
    post: {
      operationId: 'receiveProviderEvent',
      summary: "The media provider's webhook",
      description:
        'Not for clients. Authenticated by `Provider-Signature: t=<unix>,v1=<hex HMAC-SHA256(secret, t + "." + body)>` with the provider webhook secret, at most 300 s old. Events for unknown jobs are acknowledged and ignored.',
      tags: ['provider'],
      security: [],
      parameters: [
        ...providerWebhookQuery,
        {
          name: 'Provider-Signature',
          in: 'header',
          required: true,
          description: 'The HMAC signature of the body.',
          schema: { type: 'string' },
        },
      ],
      requestBody: { required: true, content: jsonContent(schemaRef('ProviderEvent')) },
      responses: {
        '204': { description: 'Applied, or ignored.' },
        '400': problemRef('ValidationFailed'),
        '401': problemRef('Unauthorized'),
        '413': problemRef('PayloadTooLarge'),
        '5XX': problemRef('ServerError'),
      },
    },
  },
  replicate: providerWebhookPath({
    operationId: 'receiveReplicateWebhook',
    summary: "Replicate's prediction webhooks",
    description:
      'Not for clients. Signed per Standard Webhooks (`webhook-id`, `webhook-timestamp`, `webhook-signature`) with the whsec_ key in the replicate secret, at most 300 s old. The body is a Replicate prediction.',
    parameters: ['webhook-id', 'webhook-timestamp', 'webhook-signature'].map((name) => ({
      name,
      in: 'header',
      required: true,
      description: 'Standard Webhooks.',
      schema: { type: 'string' },
    })),
    body: { type: 'object', description: 'A Replicate prediction (id, status, logs, output, error, …).' },
  }),
  deepgram: providerWebhookPath({
    operationId: 'receiveDeepgramCallback',
    summary: "Deepgram's transcription callbacks",
    description:
      'Not for clients. Deepgram signs nothing, so Longhaul signs the callback URL it gives: `sig` is the hex HMAC-SHA256 of `jobId=…&submission=…` with the webhookSecret of the deepgram secret. The body is a pre-recorded response, or an error.',
    parameters: [
      {
        name: 'sig',
        in: 'query',
        required: true,
        description: "Longhaul's signature of the callback URL.",
        schema: { type: 'string', pattern: '^[0-9a-f]{64}$' },
      },
    ],
    body: {
      type: 'object',
      description: 'A Deepgram pre-recorded response (metadata, results) or error.',
    },
  }),
};

function buildDocument(): OpenApiDocument {
  return {
    openapi: '3.1.0',
    info: {
      title: 'Longhaul',
      version: '1.0.0',
      summary: 'Slow, expensive media jobs: durable intake, one in-flight limit, idempotent retries.',
      description: [
        'Every `/v1/*` route needs `X-API-Key`. A key belongs to one tenant; a tenant never sees another',
        "tenant's jobs (404, not 403). Errors are RFC 9457 `application/problem+json` with a stable `code`.",
        '',
        'Creating a job needs an `Idempotency-Key` (1..255 visible ASCII characters, kept at least 24 h):',
        'the same key and an equivalent body (RFC 8785 canonical JSON) replay the first answer with',
        '`Idempotent-Replayed: true` and never create a second job or a second provider charge.',
        '',
        `Live progress: the WebSocket at \`${STREAM_PATH}\` (AWS: stack output StreamUrl), see the LiveMessage schema.`,
      ].join('\n'),
      license: { name: 'Apache 2.0', identifier: 'Apache-2.0' },
    },
    jsonSchemaDialect: 'https://spec.openapis.org/oas/3.1/dialect/base',
    servers: [
      { url: 'http://127.0.0.1:3000', description: 'The local stack (`npm start`).' },
      {
        url: 'https://{restApiId}.execute-api.{region}.amazonaws.com/{stage}',
        description: 'A deployed stack: its ApiUrl output.',
        variables: {
          restApiId: { default: 'example', description: 'The REST API id.' },
          region: { default: 'us-east-1', description: 'The stack region.' },
          stage: { default: 'prod', description: 'The stage.' },
        },
      },
    ],
    tags: [
      { name: 'jobs', description: 'Submit, follow and cancel jobs.' },
      { name: 'uploads', description: 'Inputs larger than a multipart body allows.' },
      { name: 'schedules', description: 'Recurring schedules that submit jobs.' },
      { name: 'search', description: 'Find the passages of published recordings that say something.' },
      {
        name: 'media',
        description: 'The media library: items, and the recordings published as their versions.',
      },
      { name: 'admin', description: 'Operator routes; the admin key only.' },
      { name: 'provider', description: 'Called by the media provider, not by clients.' },
      { name: 'meta', description: 'Health and this document.' },
    ],
    'x-job-types': JOB_TYPE_SCHEMAS,
    paths: {
      '/healthz': {
        get: {
          operationId: 'getHealth',
          summary: 'Health check',
          tags: ['meta'],
          security: [],
          responses: { '200': { description: 'Up.', content: jsonContent(schemaRef('Health')) } },
        },
      },
      '/openapi.json': {
        get: {
          operationId: 'getOpenApiDocument',
          summary: 'This document',
          tags: ['meta'],
          security: [],
          responses: {
            '200': {
              description: 'The OpenAPI 3.1 document of this API.',
              content: jsonContent({ type: 'object', required: ['openapi', 'info', 'paths'] }),
            },
          },
        },
      },
      '/v1/jobs': {
        post: {
          operationId: 'createJob',
          summary: 'Submit a job',
          description:
            'Accepts one user action. Retry it with the same Idempotency-Key on a network error, a 5xx, 429 or 409 `idempotency-key-in-use`: every retry lands on the same job.',
          tags: ['jobs'],
          security: tenantSecurity,
          parameters: [ref('parameters', 'IdempotencyKey')],
          requestBody: {
            required: true,
            content: {
              'application/json': { schema: schemaRef('CreateJobRequest') },
              'multipart/form-data': {
                schema: schemaRef('CreateJobMultipart'),
                encoding: {
                  input: { contentType: 'application/json' },
                  file: { contentType: UPLOAD_MEDIA_TYPES.join(', ') },
                },
              },
            },
          },
          responses: {
            '202': {
              description:
                'Accepted: the job (new, or the first answer replayed). The job runs later; follow it with GET, the WebSocket or a webhook.',
              headers: {
                Location: {
                  description: 'The job (path of GET /v1/jobs/{id}, with the stage prefix).',
                  required: true,
                  schema: { type: 'string' },
                },
                'Idempotent-Replayed': idempotentReplayed,
              },
              content: jsonContent(schemaRef('Job')),
            },
            '400': problemRef('CreateJobRefused'),
            ...authenticated,
            '409': problemRef('IdempotencyKeyInUse'),
            '413': problemRef('PayloadTooLarge'),
            '415': problemRef('UnsupportedMediaType'),
            '422': problemRef('IdempotencyKeyReused'),
            '429': problemRef('CreateJobThrottled'),
          },
        },
        get: {
          operationId: 'listJobs',
          summary: "List the tenant's jobs, newest first",
          tags: ['jobs'],
          security: tenantSecurity,
          parameters: [
            {
              name: 'status',
              in: 'query',
              description: 'Only jobs in this status.',
              schema: jobStatus,
            },
            ref('parameters', 'Limit'),
            ref('parameters', 'Cursor'),
          ],
          responses: {
            '200': { description: 'A page of jobs.', content: jsonContent(schemaRef('JobPage')) },
            '400': problemRef('ValidationFailed'),
            ...authenticated,
          },
        },
      },
      '/v1/jobs/batch': {
        post: {
          operationId: 'createJobBatch',
          summary: 'Submit many jobs at once',
          description: `Up to ${MAX_BATCH_ITEMS} user actions in one request, each with its own idempotency key, answered item by item in item order. An invalid item is refused alone; the others are accepted. A key given twice is one job: the first item with it decides, a later one with the same body is answered as a replay and one with another body as a reused key (422). Retrying the whole batch is safe: every accepted item is replayed, nothing is created twice.`,
          tags: ['jobs'],
          security: tenantSecurity,
          requestBody: { required: true, content: jsonContent(schemaRef('CreateJobBatch')) },
          responses: {
            '200': {
              description: "Each item's answer, in item order.",
              content: jsonContent(schemaRef('CreateJobBatchResult')),
            },
            '400': {
              ...problemRef('ValidationFailed'),
              description: `The body is not \`{items}\` with 1 to ${MAX_BATCH_ITEMS} items (\`validation-failed\`); nothing was stored.`,
            },
            ...authenticated,
            '413': problemRef('PayloadTooLarge'),
            '415': problemRef('UnsupportedMediaType'),
          },
        },
      },
      '/v1/jobs/cancel': {
        post: {
          operationId: 'cancelJobs',
          summary: "Cancel the tenant's jobs that match a filter",
          description: `Each matching unfinished job is canceled as POST /v1/jobs/{id}/cancel would cancel it: queued jobs at once, running ones stopped at the provider, jobs in review keep their status and carry the request. At most BULK_MAX_PER_REQUEST (${defaultSettings.bulkMaxPerRequest} by default) jobs per request; follow \`nextCursor\` for the rest. Safe to retry: a canceled job is not matched again.`,
          tags: ['jobs'],
          security: tenantSecurity,
          requestBody: { required: true, content: jsonContent(schemaRef('CancelJobsRequest')) },
          responses: {
            '200': {
              description: 'What the request matched and canceled.',
              content: jsonContent(schemaRef('CancelJobsResult')),
            },
            '400': {
              ...problemRef('ValidationFailed'),
              description:
                'The filter is invalid: an unknown status, type or field, a time that is not RFC 3339, createdAfter not before createdBefore, or a cursor of another filter (`validation-failed`, with pointers); nothing was changed.',
            },
            ...authenticated,
            '413': problemRef('PayloadTooLarge'),
            '415': problemRef('UnsupportedMediaType'),
          },
        },
      },
      '/v1/jobs/{id}': {
        get: {
          operationId: 'getJob',
          summary: 'Get a job',
          tags: ['jobs'],
          security: tenantSecurity,
          parameters: [jobIdParameter],
          responses: {
            '200': { description: 'The job.', content: jsonContent(schemaRef('Job')) },
            ...authenticated,
            '404': problemRef('NotFound'),
          },
        },
      },
      '/v1/jobs/{id}/cancel': {
        post: {
          operationId: 'cancelJob',
          summary: 'Cancel a job',
          description:
            'Idempotent: a canceled job is returned as it is. A queued or running job is canceled (and stopped at the provider); a job in review keeps its status and carries the request.',
          tags: ['jobs'],
          security: tenantSecurity,
          parameters: [jobIdParameter],
          responses: {
            '202': {
              description: 'The job after the cancel request.',
              content: jsonContent(schemaRef('Job')),
            },
            ...authenticated,
            '404': problemRef('NotFound'),
            '409': problemRef('JobAlreadyFinished'),
          },
        },
      },
      '/v1/jobs/{id}/resume': {
        post: {
          operationId: 'resumeJob',
          summary: 'Resume a failed job from the step that failed',
          description:
            'Runs a failed job again from the step that failed, keeping what the steps before it produced: its workflow execution is redriven, nothing done before is done or charged again. The job is `running` again at once. A job whose provider submission may have been charged with no known outcome is never resumed. Of two resumes at once, one resumes the job and the other gets 409.',
          tags: ['jobs'],
          security: tenantSecurity,
          parameters: [jobIdParameter],
          responses: {
            '202': {
              description: 'The job, running again.',
              content: jsonContent(schemaRef('Job')),
            },
            ...authenticated,
            '404': problemRef('NotFound'),
            '409': problemRef('NotResumable'),
          },
        },
      },
      '/v1/jobs/{id}/events': {
        get: {
          operationId: 'getJobEvents',
          summary: "A job's timeline, oldest first",
          tags: ['jobs'],
          security: tenantSecurity,
          parameters: [jobIdParameter],
          responses: {
            '200': { description: 'The timeline.', content: jsonContent(schemaRef('Timeline')) },
            ...authenticated,
            '404': problemRef('NotFound'),
          },
        },
      },
      '/v1/jobs/{id}/stream-ticket': {
        post: {
          operationId: 'createStreamTicket',
          summary: "A short-lived ticket for the job's live-progress WebSocket",
          description:
            'Scoped to this job and tenant, valid for a minute, stored only as a hash: connect with `?ticket=` instead of putting an API key in the WebSocket URL.',
          tags: ['jobs'],
          security: tenantSecurity,
          parameters: [jobIdParameter],
          responses: {
            '201': { description: 'The ticket.', content: jsonContent(schemaRef('StreamTicket')) },
            ...authenticated,
            '404': problemRef('NotFound'),
          },
        },
      },
      '/v1/search': {
        post: {
          operationId: 'search',
          summary: 'Find the passages of published recordings closest to a query',
          description:
            "Searches the passages of every recording the tenant published (and only the tenant's: another tenant's passages are never searched), closest first, each with a URL that plays it from its first word. Of a media item, only its current version is heard, with the item's title, speaker, date and labels as they are now; a recording published with audio.publish outside the library is heard as its job. Search changes nothing, so it is safe to retry.",
          tags: ['search'],
          security: tenantSecurity,
          requestBody: { required: true, content: jsonContent(schemaRef('SearchRequest')) },
          responses: {
            '200': {
              description: 'The hits, closest first; none when nothing published matches the filter.',
              content: jsonContent(schemaRef('SearchResult')),
            },
            '400': problemRef('SearchRefused'),
            ...authenticated,
            '413': problemRef('PayloadTooLarge'),
            '415': problemRef('UnsupportedMediaType'),
            '429': problemRef('SearchThrottled'),
          },
        },
      },
      '/v1/media': {
        post: {
          operationId: 'createMedia',
          summary: 'Create a media item',
          description:
            'An item of the media library: its metadata now, its recordings later as versions (POST /v1/media/{id}/versions). Idempotent under the Idempotency-Key, as POST /v1/jobs is: the same key and body answer the same item with `Idempotent-Replayed: true`; another body under the key is a 422.',
          tags: ['media'],
          security: tenantSecurity,
          parameters: [ref('parameters', 'IdempotencyKey')],
          requestBody: { required: true, content: jsonContent(schemaRef('CreateMediaRequest')) },
          responses: {
            '201': {
              description: 'The item (new, or the first answer replayed).',
              headers: {
                Location: {
                  description: 'The item (path of GET /v1/media/{id}, with the stage prefix).',
                  required: true,
                  schema: { type: 'string' },
                },
                'Idempotent-Replayed': idempotentReplayed,
              },
              content: jsonContent(schemaRef('MediaItem')),
            },
            '400': problemRef('CreateMediaRefused'),
            ...authenticated,
            '413': problemRef('PayloadTooLarge'),
            '415': problemRef('UnsupportedMediaType'),
            '422': problemRef('IdempotencyKeyReused'),
          },
        },
        get: {
          operationId: 'listMedia',
          summary: "List the tenant's media items",
          tags: ['media'],
          security: tenantSecurity,
          parameters: listMediaParameters,
          responses: {
            '200': { description: 'A page of items.', content: jsonContent(schemaRef('MediaPage')) },
            '400': problemRef('ValidationFailed'),
            ...authenticated,
          },
        },
      },
      '/v1/media/{id}': {
        get: {
          operationId: 'getMedia',
          summary: 'Get a media item',
          description:
            'With its current version (what listeners and search get) and the version being published, if any. Their URLs are presigned and short-lived: get the item again for fresh ones.',
          tags: ['media'],
          security: tenantSecurity,
          parameters: [mediaIdParameter],
          responses: {
            '200': { description: 'The item.', content: jsonContent(schemaRef('MediaItem')) },
            ...authenticated,
            '404': problemRef('MediaNotFound'),
          },
        },
        patch: {
          operationId: 'updateMedia',
          summary: "Change a media item's metadata",
          description:
            "Calls no provider: search reads the title and speaker from the item, and a change of labels or date rewrites the metadata of the current version's passages in the vector index. Sending the same change again leaves the same item.",
          tags: ['media'],
          security: tenantSecurity,
          parameters: [mediaIdParameter],
          requestBody: { required: true, content: jsonContent(schemaRef('UpdateMediaRequest')) },
          responses: {
            '200': { description: 'The item as it now is.', content: jsonContent(schemaRef('MediaItem')) },
            '400': problemRef('ValidationFailed'),
            ...authenticated,
            '404': problemRef('MediaNotFound'),
            '413': problemRef('PayloadTooLarge'),
            '415': problemRef('UnsupportedMediaType'),
          },
        },
        delete: {
          operationId: 'deleteMedia',
          summary: 'Delete a media item',
          description:
            "The item is gone at once: not found afterwards, and search no longer hears it. The version being published is canceled; the reconciler then deletes every version's stream, transcripts, passages, vectors and uploads.",
          tags: ['media'],
          security: tenantSecurity,
          parameters: [mediaIdParameter],
          responses: {
            '204': { description: 'Deleted.' },
            ...authenticated,
            '404': problemRef('MediaNotFound'),
          },
        },
      },
      '/v1/media/{id}/versions': {
        post: {
          operationId: 'publishMediaVersion',
          summary: 'Publish a new recording of a media item',
          description: `Starts an audio.publish job for the recording. The item's current version switches to it only once it has fully published (stream, passages, vectors); a newer version started meanwhile supersedes it (it is canceled and never becomes current). The replaced version's stream, transcript and vectors are deleted MEDIA_GRACE_SECONDS (${defaultSettings.mediaGraceSeconds} by default) later, so a listener mid-stream finishes. Idempotent under the Idempotency-Key: a retry answers the same version with \`Idempotent-Replayed: true\`.`,
          tags: ['media'],
          security: tenantSecurity,
          parameters: [mediaIdParameter, ref('parameters', 'IdempotencyKey')],
          requestBody: { required: true, content: jsonContent(schemaRef('CreateVersionRequest')) },
          responses: {
            '202': {
              description: 'Accepted: the item, with the new version as `inProgress` while it publishes.',
              headers: {
                Location: {
                  description:
                    "The version's job (path of GET /v1/jobs/{id}, with the stage prefix): follow it as any job.",
                  required: true,
                  schema: { type: 'string' },
                },
                'Idempotent-Replayed': idempotentReplayed,
              },
              content: jsonContent(schemaRef('MediaItem')),
            },
            '400': problemRef('CreateMediaRefused'),
            ...authenticated,
            '404': problemRef('MediaNotFound'),
            '409': problemRef('IdempotencyKeyInUse'),
            '413': problemRef('PayloadTooLarge'),
            '415': problemRef('UnsupportedMediaType'),
            '422': problemRef('IdempotencyKeyReused'),
            '429': problemRef('CreateJobThrottled'),
          },
        },
      },
      '/v1/uploads/multipart': {
        post: {
          operationId: 'createMultipartUpload',
          summary: 'Start a multipart upload of a large input',
          description:
            'For large inputs on unreliable networks: the file goes in parts, each with its own presigned URL, so a failure costs one part, not the whole file. Complete it with POST /v1/uploads/{ref}/complete.',
          tags: ['uploads'],
          security: tenantSecurity,
          requestBody: { required: true, content: jsonContent(schemaRef('CreateUploadRequest')) },
          responses: {
            '201': {
              description: 'The upload and its parts.',
              content: jsonContent(schemaRef('MultipartUploadTicket')),
            },
            '400': problemRef('ValidationFailed'),
            ...authenticated,
            '413': problemRef('PayloadTooLarge'),
            '415': problemRef('UnsupportedMediaType'),
          },
        },
      },
      '/v1/uploads/{ref}/parts': {
        post: {
          operationId: 'renewMultipartUploadParts',
          summary: 'Renew the part URLs of a multipart upload',
          description:
            "Part URLs expire (expiresAt); the upload lives on until it is completed or the input bucket's lifecycle rule aborts it. A slow upload asks for fresh URLs of the parts it still has to send and goes on, keeping the parts already stored. The answer lists only the parts asked for; URLs for an uploadId that is not this ref's upload are refused by S3.",
          tags: ['uploads'],
          security: tenantSecurity,
          parameters: [multipartUploadRef],
          requestBody: { required: true, content: jsonContent(schemaRef('RenewMultipartUploadParts')) },
          responses: {
            '200': {
              description: 'Fresh URLs of the parts asked for.',
              content: jsonContent(schemaRef('MultipartUploadTicket')),
            },
            '400': problemRef('ValidationFailed'),
            ...authenticated,
            '413': problemRef('PayloadTooLarge'),
            '415': problemRef('UnsupportedMediaType'),
          },
        },
      },
      '/v1/uploads/{ref}/complete': {
        post: {
          operationId: 'completeMultipartUpload',
          summary: 'Assemble the parts of a multipart upload',
          tags: ['uploads'],
          security: tenantSecurity,
          parameters: [multipartUploadRef],
          requestBody: { required: true, content: jsonContent(schemaRef('CompleteMultipartUpload')) },
          responses: {
            '200': {
              description: 'The input is stored.',
              content: jsonContent(schemaRef('UploadCompleted')),
            },
            '400': problemRef('ValidationFailed'),
            ...authenticated,
            '413': problemRef('PayloadTooLarge'),
            '415': problemRef('UnsupportedMediaType'),
          },
        },
      },
      '/v1/uploads': {
        post: {
          operationId: 'createUpload',
          summary: 'Get a presigned upload for a large input',
          description: `For inputs larger than a multipart file part (${bodyLimits.fileBytes} bytes): PUT the bytes to uploadUrl with exactly the declared Content-Type and Content-Length, then use ref in the job's input.`,
          tags: ['uploads'],
          security: tenantSecurity,
          requestBody: { required: true, content: jsonContent(schemaRef('CreateUploadRequest')) },
          responses: {
            '201': { description: 'The upload ticket.', content: jsonContent(schemaRef('UploadTicket')) },
            '400': problemRef('ValidationFailed'),
            ...authenticated,
            '413': problemRef('PayloadTooLarge'),
            '415': problemRef('UnsupportedMediaType'),
          },
        },
      },
      '/v1/schedules': {
        post: {
          operationId: 'createSchedule',
          summary: 'Create a recurring schedule',
          description:
            'Idempotent under the Idempotency-Key, as POST /v1/jobs is: the same key and body answer the same schedule with `Idempotent-Replayed: true`; another body under the key is a 422. In AWS each schedule is an EventBridge Scheduler schedule that invokes Longhaul at each firing.',
          tags: ['schedules'],
          security: tenantSecurity,
          parameters: [ref('parameters', 'IdempotencyKey')],
          requestBody: { required: true, content: jsonContent(schemaRef('CreateScheduleRequest')) },
          responses: {
            '201': {
              description: 'The schedule (new, or the first answer replayed).',
              headers: {
                Location: {
                  description: 'The schedule (path of GET /v1/schedules/{id}, with the stage prefix).',
                  required: true,
                  schema: { type: 'string' },
                },
                'Idempotent-Replayed': idempotentReplayed,
              },
              content: jsonContent(schemaRef('Schedule')),
            },
            '400': problemRef('CreateScheduleRefused'),
            ...authenticated,
            '413': problemRef('PayloadTooLarge'),
            '415': problemRef('UnsupportedMediaType'),
            '422': problemRef('IdempotencyKeyReused'),
          },
        },
        get: {
          operationId: 'listSchedules',
          summary: "List the tenant's schedules, in id order",
          tags: ['schedules'],
          security: tenantSecurity,
          parameters: [ref('parameters', 'Limit'), ref('parameters', 'Cursor')],
          responses: {
            '200': { description: 'A page of schedules.', content: jsonContent(schemaRef('SchedulePage')) },
            '400': problemRef('ValidationFailed'),
            ...authenticated,
          },
        },
      },
      '/v1/schedules/{id}': {
        get: {
          operationId: 'getSchedule',
          summary: 'Get a schedule',
          tags: ['schedules'],
          security: tenantSecurity,
          parameters: [scheduleIdParameter],
          responses: {
            '200': { description: 'The schedule.', content: jsonContent(schemaRef('Schedule')) },
            ...authenticated,
            '404': problemRef('ScheduleNotFound'),
          },
        },
        patch: {
          operationId: 'updateSchedule',
          summary: 'Enable or disable a schedule',
          description:
            'Idempotent. A disabled schedule creates no job from that moment, whatever firing is already on its way.',
          tags: ['schedules'],
          security: tenantSecurity,
          parameters: [scheduleIdParameter],
          requestBody: { required: true, content: jsonContent(schemaRef('UpdateScheduleRequest')) },
          responses: {
            '200': { description: 'The schedule as it now is.', content: jsonContent(schemaRef('Schedule')) },
            '400': problemRef('ValidationFailed'),
            ...authenticated,
            '404': problemRef('ScheduleNotFound'),
            '413': problemRef('PayloadTooLarge'),
            '415': problemRef('UnsupportedMediaType'),
          },
        },
        delete: {
          operationId: 'deleteSchedule',
          summary: 'Delete a schedule',
          description: 'Jobs it created stay. A deleted schedule is not found afterwards.',
          tags: ['schedules'],
          security: tenantSecurity,
          parameters: [scheduleIdParameter],
          responses: {
            '204': { description: 'Deleted.' },
            ...authenticated,
            '404': problemRef('ScheduleNotFound'),
          },
        },
      },
      '/v1/admin/jobs': {
        get: {
          operationId: 'adminListJobs',
          summary: 'List active jobs of every tenant, oldest first (by default those in review)',
          tags: ['admin'],
          security: adminSecurity,
          parameters: [
            {
              name: 'status',
              in: 'query',
              description: 'Which active jobs.',
              schema: {
                type: 'string',
                enum: ['queued', 'running', 'needs_review'],
                default: 'needs_review',
              },
            },
            {
              name: 'limit',
              in: 'query',
              description: 'Page size.',
              schema: { type: 'integer', minimum: 1, maximum: 100, default: 50 },
            },
            ref('parameters', 'Cursor'),
          ],
          responses: {
            '200': { description: 'A page of jobs.', content: jsonContent(schemaRef('AdminJobPage')) },
            '400': problemRef('ValidationFailed'),
            ...authenticated,
          },
        },
      },
      '/v1/admin/providers': {
        get: {
          operationId: 'adminListProviders',
          summary: "Each provider's in-flight limit, slots held and queued jobs",
          tags: ['admin'],
          security: adminSecurity,
          responses: {
            '200': { description: 'Every provider.', content: jsonContent(schemaRef('ProviderList')) },
            ...authenticated,
          },
        },
      },
      '/v1/admin/tenants/{tenant}': {
        get: {
          operationId: 'adminGetTenant',
          summary: "A tenant's settings and usage",
          tags: ['admin'],
          security: adminSecurity,
          parameters: [tenantParameter],
          responses: {
            '200': { description: 'The tenant.', content: jsonContent(schemaRef('Tenant')) },
            '400': problemRef('ValidationFailed'),
            ...authenticated,
            '404': problemRef('TenantNotFound'),
          },
        },
        put: {
          operationId: 'adminPutTenant',
          summary: "Set a tenant's settings",
          description:
            'Idempotent. Only a tenant (a name an API key carries) has settings: any other name is refused with 400 naming `tenant`, and so is invalid input, with nothing changed.',
          tags: ['admin'],
          security: adminSecurity,
          parameters: [tenantParameter],
          requestBody: { required: true, content: jsonContent(schemaRef('TenantSettings')) },
          responses: {
            '200': { description: 'The tenant as it now is.', content: jsonContent(schemaRef('Tenant')) },
            '400': problemRef('ValidationFailed'),
            ...authenticated,
            '413': problemRef('PayloadTooLarge'),
            '415': problemRef('UnsupportedMediaType'),
          },
        },
      },
      '/v1/admin/jobs/{id}/resolve': {
        post: {
          operationId: 'adminResolveJob',
          summary: 'Settle a job in review',
          description: "Releases the job's slot in every case; `requeue` sends the job to the queue again.",
          tags: ['admin'],
          security: adminSecurity,
          parameters: [jobIdParameter],
          requestBody: { required: true, content: jsonContent(schemaRef('Resolution')) },
          responses: {
            '200': { description: 'The resolved job.', content: jsonContent(schemaRef('Job')) },
            '400': problemRef('ValidationFailed'),
            ...authenticated,
            '404': problemRef('NotFound'),
            '409': problemRef('NotResolvable'),
            '413': problemRef('PayloadTooLarge'),
            '415': problemRef('UnsupportedMediaType'),
          },
        },
      },
      '/v1/admin/jobs/replay': {
        post: {
          operationId: 'adminReplayJobs',
          summary: 'Replay finished jobs as new ones',
          description: `Each matching finished job becomes a new job (same tenant, type, input, webhookUrl, priority) with \`replayOf\`; the original is never touched. Replays go through intake like any submission: they queue, count toward the tenant's maxQueued and take provider slots only through dispatch. A job in review, an unfinished job, or one whose provider submission may still run is refused with the reason. At most REPLAY_MAX_PER_REQUEST (${defaultSettings.replayMaxPerRequest} by default) jobs per request; follow \`nextCursor\` for the rest. Retrying with the same note replays nothing twice.`,
          tags: ['admin'],
          security: adminSecurity,
          requestBody: { required: true, content: jsonContent(schemaRef('ReplayJobsRequest')) },
          responses: {
            '200': {
              description: 'What the request matched, replayed and refused.',
              content: jsonContent(schemaRef('ReplayJobsResult')),
            },
            '400': problemRef('ValidationFailed'),
            ...authenticated,
            '413': problemRef('PayloadTooLarge'),
            '415': problemRef('UnsupportedMediaType'),
          },
        },
      },
      '/v1/admin/dlq/redrive': {
        post: {
          operationId: 'adminRedriveDeadLetters',
          summary: 'Move the dead-letter queue back to the jobs queue',
          tags: ['admin'],
          security: adminSecurity,
          responses: {
            '202': { description: 'The move started.', content: jsonContent(schemaRef('RedriveStarted')) },
            ...authenticated,
          },
        },
      },
      ...Object.fromEntries(
        providerWebhookRoutes.map((route) => [route.path, providerWebhooks[route.provider]]),
      ),
    },
    webhooks: {
      jobFinished: {
        post: {
          operationId: 'jobFinished',
          summary: 'A job reached a terminal status',
          description:
            'POSTed to the job\'s webhookUrl, retried with backoff until a 2xx, so a receiver may get one event more than once: deduplicate on `Longhaul-Event-Id`, the same on every delivery of one event (a job reaching a status). Verify `Longhaul-Signature: t=<unix>,v1=<hex HMAC-SHA256(secret, t + "." + body)>` and reject old timestamps.',
          tags: ['jobs'],
          security: [],
          parameters: [
            {
              name: 'Longhaul-Signature',
              in: 'header',
              required: true,
              description: 'The HMAC signature of the body.',
              schema: { type: 'string' },
            },
            {
              name: 'Longhaul-Event-Id',
              in: 'header',
              required: true,
              description:
                "The event's id (`evt_` and 22 characters), the same on every delivery of it and the id of the job's lifecycle event for that status.",
              schema: { type: 'string', pattern: '^evt_[A-Za-z0-9_-]{22}$' },
            },
          ],
          requestBody: { required: true, content: jsonContent(schemaRef('Job')) },
          responses: { '2XX': { description: 'Received; any other answer is retried.' } },
        },
      },
    },
    components: {
      schemas,
      responses,
      parameters: {
        ScheduleId: {
          name: 'id',
          in: 'path',
          required: true,
          description: "The schedule's id; another tenant's is not found.",
          schema: { type: 'string' },
        },
        MediaId: {
          name: 'id',
          in: 'path',
          required: true,
          description: "The media item's id; another tenant's is not found.",
          schema: { type: 'string' },
        },
        JobId: {
          name: 'id',
          in: 'path',
          required: true,
          description: "The job's id; another tenant's is not found.",
          schema: { type: 'string' },
        },
        Tenant: {
          name: 'tenant',
          in: 'path',
          required: true,
          description:
            "The tenant: the name its API keys carry (`admin` is the admin key's, never a tenant's).",
          schema: { type: 'string', pattern: TENANT_ID_PATTERN.source },
        },
        IdempotencyKey: {
          name: 'Idempotency-Key',
          in: 'header',
          required: true,
          description:
            'Names the user action: mint one per action (a UUID) and send it with every retry of that action.',
          schema: { type: 'string', pattern: KEY_PATTERN.source },
        },
        Limit: {
          name: 'limit',
          in: 'query',
          description: 'Page size.',
          schema: { type: 'integer', minimum: 1, maximum: 100, default: 20 },
        },
        Cursor: {
          name: 'cursor',
          in: 'query',
          description: 'nextCursor of the previous page.',
          schema: { type: 'string', minLength: 1, maxLength: 2048 },
        },
      },
      securitySchemes: {
        apiKey: {
          type: 'apiKey',
          in: 'header',
          name: API_KEY_HEADER,
          description: "A tenant's API key.",
        },
        adminKey: {
          type: 'apiKey',
          in: 'header',
          name: API_KEY_HEADER,
          description: 'The operator key.',
        },
      },
    },
  };
}

export const openApiDocument: OpenApiDocument = buildDocument();
