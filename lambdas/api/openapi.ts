import * as z from 'zod';
import { JOB_TYPE_MODULES, type JobTypeModule } from '../../config/job-types';
import {
  API_KEY_HEADER,
  type ProviderWebhookRouteKey,
  providerWebhookRoutes,
  type RouteAuth,
  type RouteKey,
  routes,
  STREAM_PATH,
} from '../../config/layout';
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
  PROBLEM_CODES,
  PROBLEM_CONTENT_TYPE,
  type ProblemCode,
  problems,
  RATE_LIMIT_RETRY_AFTER_SECONDS,
} from '../../config/problems';
import { PROVIDER_NAMES, type ProviderName } from '../../config/providers';
import {
  SEARCH_LIMIT_MAX,
  SEARCH_QUERY_MAX_CHARS,
  searchFilter,
  searchHit,
  searchRequest,
  searchResult,
} from '../../config/search';
import { bodyLimits, defaultSettings } from '../../config/settings';
import { cancelJobsRequest, replayJobsRequest, resumeJobsRequest } from '../domain/bulk';
import { JOB_ID_PATTERN, KEY_PATTERN } from '../domain/idempotency';
import { type JobType, SUBMISSION_TAG_PATTERN } from '../domain/job';
import { completeMultipartRequest, renewPartsRequest } from '../domain/multipart-uploads';
import { providerStatus, resolution } from '../domain/operator';
import { providerPauseRequest } from '../domain/provider-admin';
import { providerEvent } from '../domain/provider-events';
import { MAX_BATCH_ITEMS, PAGE_QUERY_FIELDS, UPLOAD_MEDIA_TYPES } from '../domain/requests';
import { updateScheduleBody } from '../domain/schedules';
import { issuedStreamTicket } from '../domain/stream-tickets';
import { tenantChanges, tenantUsage } from '../domain/tenant-settings';
import { TENANT_ID_PATTERN } from '../domain/tenants';
import { QUEUE_FULL_RETRY_AFTER_SECONDS } from './problems';
import * as api from './schemas';

export { PROBLEM_CODES };

/**
 * The OpenAPI 3.1 document of the HTTP API, served at GET /openapi.json and
 * written to openapi.yaml by `npm run openapi`. It is the single description
 * clients, the SDK's tests and the end-to-end validator read.
 *
 * Every schema in it is generated from a zod schema: the handlers' own where
 * they validate a body (job inputs, search, media, bulk, tenants, uploads,
 * provider events), the API's resources in lambdas/domain/resources.ts and
 * lambdas/api/schemas.ts otherwise.
 * The routes come from config/layout.ts and each problem answer's status
 * from config/problems.ts; what is written here is what only a reader needs:
 * summaries, descriptions, and which answers each operation gives.
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

export type Reference = { readonly $ref: string; readonly description?: string };

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
 * Every named schema of the document but the job types' (named by their
 * modules), by its name in components.schemas. A schema used inside another
 * is a `$ref` to its own entry, not a copy.
 */
const components = {
  JobType: api.jobType,
  JobPriority: api.jobPriority,
  JobStatus: api.jobStatus,
  Job: api.job,
  AdminJob: api.adminJob,
  JobError: api.jobError,
  JobWaiting: api.waiting,
  JobPage: api.jobPage,
  AdminJobPage: api.adminJobPage,
  ProviderStatus: providerStatus,
  ProviderList: api.providerList,
  ProviderPauseRequest: providerPauseRequest,
  Tenant: api.tenant,
  TenantUsage: tenantUsage,
  TenantSettings: tenantChanges.meta({
    description:
      'The settings to set: each one named is set, each one left out keeps its value (the default, for a tenant whose settings were never set), and `maxInFlight: null` removes the cap. Sending the same body again changes nothing.',
  }),
  CreateJobRequest: api.createJobRequest,
  CreateJobBatch: api.createJobBatch,
  CreateJobBatchItem: api.createJobBatchItem,
  CreateJobBatchResult: api.createJobBatchResult,
  CreateJobBatchItemResult: api.createJobBatchItemResult,
  CreateJobMultipart: api.createJobMultipart,
  CancelJobsRequest: cancelJobsRequest.meta({
    description: `Which of the tenant's jobs to cancel: those in one of \`status\` (default: every unfinished status), of \`type\`, created strictly after \`createdAfter\` and strictly before \`createdBefore\` (RFC 3339; createdAfter must be earlier). \`dryRun\` only counts. \`cursor\` is the previous answer's nextCursor, with the same filter.`,
  }),
  CancelJobsResult: api.cancelJobsResult,
  ReplayJobsRequest: replayJobsRequest.meta({
    description:
      "Which jobs to replay: of `tenant` (default: every tenant's), in one of `status`, of `type`, created strictly between `createdAfter` and `createdBefore` (RFC 3339). `note` says why; the same note replays a job once however often the request is retried, another note replays it again. `dryRun` only counts and refuses. `cursor` is the previous answer's nextCursor, with the same filter.",
  }),
  ReplayJobsResult: api.replayJobsResult,
  ResumeJobsRequest: resumeJobsRequest.meta({
    description:
      "Which failed jobs to resume: of `tenant` (default: every tenant's), whose error.code is `errorCode`, at `provider`, of `type`, created strictly between `createdAfter` and `createdBefore` (RFC 3339). `note` says why, on each resumed job's timeline. `dryRun` only counts and refuses. `cursor` is the previous answer's nextCursor, with the same filter.",
  }),
  ResumeJobsResult: api.resumeJobsResult,
  Schedule: api.schedule,
  CreateScheduleRequest: api.createScheduleRequest,
  UpdateScheduleRequest: updateScheduleBody,
  SchedulePage: api.schedulePage,
  TimelineEvent: api.timelineEvent,
  Timeline: api.timeline,
  CreateUploadRequest: api.createUploadRequest,
  UploadTicket: api.uploadTicket,
  MultipartUploadTicket: api.multipartUploadTicket,
  CompleteMultipartUpload: completeMultipartRequest,
  RenewMultipartUploadParts: renewPartsRequest.meta({
    description: `The parts whose URLs to renew, of a file of contentLength bytes (the length the upload was started with, at most MAX_UPLOAD_BYTES, default ${defaultSettings.maxUploadBytes}).`,
  }),
  UploadCompleted: api.uploadCompleted,
  StreamTicket: issuedStreamTicket,
  Resolution: resolution,
  RedriveStarted: api.redriveStarted,
  Health: api.health,
  ProviderEvent: providerEvent,
  SearchRequest: searchRequest,
  SearchFilter: searchFilter,
  SearchResult: searchResult,
  SearchHit: searchHit,
  CreateMediaRequest: createMediaRequest,
  UpdateMediaRequest: updateMediaRequest,
  CreateVersionRequest: createVersionRequest,
  ListMediaQuery: listMediaQuery,
  MediaItem: mediaItemView,
  MediaVersion: mediaVersionView,
  MediaPage: mediaPage,
  ProblemCode: api.problemCode,
  Problem: api.problem,
  LiveMessage: api.liveMessage,
  ProgressMessage: api.progressMessage,
  StatusMessage: api.statusMessage,
} satisfies Record<string, z.ZodType>;

type ComponentName = Extract<keyof typeof components, string>;

/** A zod schema as JSON Schema, without the `$schema` member (the document's dialect applies). */
function fromZod(schema: z.ZodType): Schema {
  const { $schema: _dialect, ...json } = z.toJSONSchema(schema, { target: 'draft-2020-12' }) as Schema;
  return json;
}

/** Each component as JSON Schema, with what its zod schema's refinements say that JSON Schema can say too. */
function componentSchemas(): Record<string, Schema> {
  const registry = z.registry<{ id: string }>();
  for (const [id, schema] of Object.entries(components)) registry.add(schema, { id });
  for (const module of JOB_TYPE_MODULES) {
    registry.add(module.result, { id: module.schemaNames.result });
    registry.add(module.input, { id: module.schemaNames.input });
  }
  const { schemas } = z.toJSONSchema(registry, {
    target: 'draft-2020-12',
    uri: (id) => `#/components/schemas/${id}`,
  });
  const json = Object.fromEntries(
    Object.entries(schemas).map(([id, schema]) => {
      // Without `$id`: an `$id` would make the document's own `#/components/…` references resolve against it.
      const { $schema: _dialect, $id: _id, ...rest } = schema as Schema;
      return [id, rest];
    }),
  ) as Record<ComponentName, Schema> & Record<string, Schema>;
  for (const module of JOB_TYPE_MODULES) {
    const name = module.schemaNames.input;
    json[name] = jobTypeInput(module, json[name] as Schema);
  }
  // A job request's input is the input schema of its type.
  const byType = Object.entries(JOB_TYPE_SCHEMAS).map(([type, entry]) => ({
    properties: { type: { const: type }, input: schemaRef(entry.input) },
  }));
  const withLabelsUnique = (schema: Schema): Schema => {
    const properties = schema.properties as Record<string, Schema>;
    return { ...schema, properties: { ...properties, labels: { ...properties.labels, uniqueItems: true } } };
  };
  return {
    ...json,
    CreateJobRequest: { ...json.CreateJobRequest, oneOf: byType },
    CreateJobBatchItem: { ...json.CreateJobBatchItem, oneOf: byType },
    SearchFilter: {
      ...json.SearchFilter,
      description: `${json.SearchFilter.description} \`dateFrom\` must not be after \`dateTo\`.`,
    },
    CreateMediaRequest: withLabelsUnique(json.CreateMediaRequest),
    UpdateMediaRequest: { ...withLabelsUnique(json.UpdateMediaRequest), minProperties: 1 },
    CreateVersionRequest: {
      ...json.CreateVersionRequest,
      oneOf: [{ required: ['audioUrl'] }, { required: ['audioRef'] }],
    },
  };
}

/** A job type's input, with its description and, for a file that may be an upload or a URL, exactly one of them. */
function jobTypeInput(module: JobTypeModule, schema: Schema): Schema {
  const { file } = module;
  if (!file?.urlField) return { description: module.description, ...schema };
  return {
    ...schema,
    description: `${module.description} Exactly one of ${file.urlField} or ${file.refField}.`,
    oneOf: [{ required: [file.urlField] }, { required: [file.refField] }],
  };
}

const ref = (kind: 'schemas' | 'responses' | 'parameters', name: string): Reference => ({
  $ref: `#/components/${kind}/${name}`,
});
const schemaRef = (name: ComponentName | string): Reference => ref('schemas', name);
const jsonContent = (schema: Schema) => ({ 'application/json': { schema } });

const retryAfter = (description: string): HeaderObject => ({
  description,
  required: true,
  schema: { type: 'integer', minimum: 0 },
});

/**
 * Each problem answer: the codes it carries and what it means. Its status is
 * its codes' status in config/problems.ts; codes of different statuses, or
 * of a 5xx, are answered under `5XX`.
 */
const problemResponses = {
  ValidationFailed: {
    codes: ['validation-failed'],
    description: 'The request is invalid; `errors` says where (`validation-failed`).',
  },
  CreateJobRefused: {
    codes: ['idempotency-key-missing', 'validation-failed'],
    description:
      'The Idempotency-Key header is missing or malformed (`idempotency-key-missing`: 1 to 255 visible ASCII characters), or the body is invalid (`validation-failed`).',
  },
  Unauthorized: {
    codes: ['unauthorized'],
    description: 'No X-API-Key, or an unknown or revoked one (`unauthorized`).',
  },
  Forbidden: {
    codes: ['forbidden'],
    description:
      'The key may not call this route: a tenant key on an admin route or the reverse (`forbidden`).',
  },
  NotFound: { codes: ['not-found'], description: "No such job, or another tenant's (`not-found`)." },
  ScheduleNotFound: {
    codes: ['not-found'],
    description: "No such schedule, or another tenant's (`not-found`).",
  },
  CreateScheduleRefused: {
    codes: ['idempotency-key-missing', 'validation-failed'],
    description:
      'The Idempotency-Key header is missing or malformed (`idempotency-key-missing`), or the body is invalid (`validation-failed`: a bad or too frequent expression, an unknown time zone, an invalid job); nothing was stored.',
  },
  MediaNotFound: {
    codes: ['not-found'],
    description: "No such media item, another tenant's, or a deleted one (`not-found`).",
  },
  CreateMediaRefused: {
    codes: ['idempotency-key-missing', 'validation-failed'],
    description:
      'The Idempotency-Key header is missing or malformed (`idempotency-key-missing`), or the body is invalid (`validation-failed`, a JSON Pointer per error: a title that is empty or only white space, a label given twice, a date that is not YYYY-MM-DD, not exactly one of audioUrl or audioRef); nothing was stored.',
  },
  ProviderNotFound: {
    codes: ['not-found'],
    description: 'No provider of this name (`not-found`).',
  },
  TenantNotFound: {
    codes: ['not-found'],
    description: 'Neither an API key nor a record carries this tenant name (`not-found`).',
  },
  IdempotencyKeyInUse: {
    codes: ['idempotency-key-in-use'],
    description:
      'The first request with this Idempotency-Key is still being accepted (`idempotency-key-in-use`): retry with the same key after Retry-After; no second job is created.',
    retryAfter: 'Seconds to wait before retrying.',
  },
  JobAlreadyFinished: {
    codes: ['job-already-finished'],
    description: 'The job already succeeded or failed (`job-already-finished`).',
  },
  NotResumable: {
    codes: ['job-not-resumable'],
    description:
      "The job cannot be resumed (`job-not-resumable`): it is not failed (running, succeeded, canceled), it needs review (resolve the review first: a submission whose outcome is unknown is never resumed), or its failure was the provider's own outcome, known or unknown. Nothing was changed.",
  },
  NotResolvable: {
    codes: ['job-already-finished', 'job-not-in-review'],
    description:
      'The job is already finished (`job-already-finished`) or not in review (`job-not-in-review`).',
  },
  PayloadTooLarge: {
    codes: ['payload-too-large'],
    description: `The body is too large, refused before it is parsed (\`payload-too-large\`): JSON bodies up to ${bodyLimits.jsonBytes} bytes, multipart bodies up to ${bodyLimits.multipartBytes} with a file part up to ${bodyLimits.fileBytes}; larger inputs go through POST /v1/uploads.`,
  },
  UnsupportedMediaType: {
    codes: ['unsupported-media-type'],
    description: 'The body is not of an accepted media type (`unsupported-media-type`).',
  },
  IdempotencyKeyReused: {
    codes: ['idempotency-key-reused'],
    description:
      'This Idempotency-Key was used with a different body (`idempotency-key-reused`): a new request needs a new key.',
  },
  RateLimited: {
    codes: ['rate-limited'],
    description: 'The tenant sends too many requests (`rate-limited`).',
    retryAfter: `Seconds to wait before retrying (${RATE_LIMIT_RETRY_AFTER_SECONDS} locally and from the gateway).`,
  },
  CreateJobThrottled: {
    codes: ['rate-limited', 'tenant-queue-full'],
    description:
      'The tenant sends too many requests (`rate-limited`), or its queued and scheduled jobs already reach its `maxQueued` (`tenant-queue-full`: nothing was stored; a retry with the same Idempotency-Key after Retry-After is safe).',
    retryAfter: `Seconds to wait before retrying: ${RATE_LIMIT_RETRY_AFTER_SECONDS} when rate-limited, ${QUEUE_FULL_RETRY_AFTER_SECONDS} when the tenant's queue is full.`,
  },
  SearchRefused: {
    codes: ['validation-failed'],
    description: `The body is not a search (\`validation-failed\`, with a JSON Pointer per error): a query that is empty (or only white space) or over ${SEARCH_QUERY_MAX_CHARS} characters, a field or filter key the request does not define, a limit that is not a whole number from 1 to ${SEARCH_LIMIT_MAX}, a date that is not YYYY-MM-DD, an item id that is neither a media item's nor an audio.publish job's, or dateFrom after dateTo.`,
  },
  SearchThrottled: {
    codes: ['rate-limited'],
    description:
      'The tenant sends too many requests, or the embedding model that reads the query has no capacity right now (`rate-limited`); nothing was changed, so retrying after Retry-After is safe.',
    retryAfter: 'Seconds to wait before retrying.',
  },
  ServerError: {
    codes: ['internal-error', 'service-unavailable'],
    description:
      'The service failed (`internal-error`, 500 or 502) or took too long (`service-unavailable`, 504); retry later. Retrying POST /v1/jobs with the same Idempotency-Key is always safe.',
  },
} as const satisfies Record<
  string,
  { readonly codes: readonly ProblemCode[]; readonly description: string; readonly retryAfter?: string }
>;

type ProblemName = keyof typeof problemResponses;

/** The response key a problem answer goes under: its codes' one status, or `5XX` for server errors. */
function problemStatus(name: ProblemName): string {
  const statuses = [...new Set(problemResponses[name].codes.map((code) => problems[code].status))];
  if (statuses.every((status) => status >= 500)) return '5XX';
  if (statuses.length > 1) throw new Error(`${name} carries codes of statuses ${statuses.join(', ')}`);
  return String(statuses[0]);
}

function problemResponse(name: ProblemName): ResponseObject {
  const { codes, description, ...rest } = problemResponses[name];
  const status = problemStatus(name);
  return {
    description,
    ...('retryAfter' in rest ? { headers: { 'Retry-After': retryAfter(rest.retryAfter) } } : {}),
    content: {
      [PROBLEM_CONTENT_TYPE]: {
        schema: {
          allOf: [schemaRef('Problem')],
          properties: {
            status: status === '5XX' ? { minimum: 500, maximum: 599 } : { const: Number(status) },
            code: { enum: [...codes] },
          },
        },
      },
    },
  };
}

/** A problem answer of an operation, with a description of its own where the operation says more. */
type ProblemAnswer = ProblemName | readonly [ProblemName, string];

/** Answers any authenticated route can give before or around its handler. */
const AUTHENTICATED: readonly ProblemName[] = ['Unauthorized', 'Forbidden', 'RateLimited', 'ServerError'];
/** Answers any authenticated route that reads a body gives before its handler parses it. */
const BODY: readonly ProblemName[] = ['PayloadTooLarge', 'UnsupportedMediaType'];

interface Success {
  readonly status: number;
  readonly description: string;
  readonly schema?: ComponentName | Schema;
  readonly headers?: Readonly<Record<string, HeaderObject>>;
}

/** One operation, as the table below gives it. */
interface Operation {
  readonly operationId: string;
  readonly summary: string;
  readonly description?: string;
  readonly parameters?: readonly (ParameterObject | Reference)[];
  /** The JSON body's schema, or the body's content by media type. */
  readonly body?: ComponentName | Readonly<Record<string, MediaTypeObject>>;
  readonly success: Success;
  /** Its problem answers besides those of every authenticated route (which one of its own replaces). */
  readonly problems?: readonly ProblemAnswer[];
}

const idempotentReplayed: HeaderObject = {
  description: 'Present (`true`) when this answer repeats the first answer for this key.',
  schema: { const: 'true' },
};
const location = (description: string): Record<string, HeaderObject> => ({
  Location: { description, required: true, schema: { type: 'string' } },
  'Idempotent-Replayed': idempotentReplayed,
});

const jobIdParameter = ref('parameters', 'JobId');
const scheduleIdParameter = ref('parameters', 'ScheduleId');
const mediaIdParameter = ref('parameters', 'MediaId');
const tenantParameter = ref('parameters', 'Tenant');
const providerParameter = ref('parameters', 'Provider');
const idempotencyKeyParameter = ref('parameters', 'IdempotencyKey');
const pageParameters = [ref('parameters', 'Limit'), ref('parameters', 'Cursor')];

/** The path parameter of the routes that go on with a multipart upload. */
const multipartUploadRef: ParameterObject = {
  name: 'ref',
  in: 'path',
  required: true,
  description: 'The ref of POST /v1/uploads/multipart.',
  schema: { type: 'string' },
};

/** GET /v1/media's query parameters: the properties of ListMediaQuery, one parameter each. */
function listMediaParameters(schemas: Record<string, Schema>): ParameterObject[] {
  return Object.entries(schemas.ListMediaQuery?.properties as Record<string, Schema>).map(
    ([name, schema]) => {
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
    },
  );
}

/** `METHOD /path` of the API's own routes. */
type ApiRouteKey = Exclude<RouteKey, ProviderWebhookRouteKey>;

/** Every operation of the API's own routes, by route: a route added to config/layout.ts without its entry fails to compile. */
function apiOperations(
  schemas: Record<string, Schema>,
): Record<Exclude<RouteKey, ProviderWebhookRouteKey>, Operation> {
  return {
    'GET /healthz': {
      operationId: 'getHealth',
      summary: 'Health check',
      success: { status: 200, description: 'Up.', schema: 'Health' },
    },
    'GET /openapi.json': {
      operationId: 'getOpenApiDocument',
      summary: 'This document',
      success: {
        status: 200,
        description: 'The OpenAPI 3.1 document of this API.',
        schema: { type: 'object', required: ['openapi', 'info', 'paths'] },
      },
    },
    'POST /v1/jobs': {
      operationId: 'createJob',
      summary: 'Submit a job',
      description:
        'Accepts one user action. Retry it with the same Idempotency-Key on a network error, a 5xx, 429 or 409 `idempotency-key-in-use`: every retry lands on the same job.',
      parameters: [idempotencyKeyParameter],
      body: {
        'application/json': { schema: schemaRef('CreateJobRequest') },
        'multipart/form-data': {
          schema: schemaRef('CreateJobMultipart'),
          encoding: {
            input: { contentType: 'application/json' },
            file: { contentType: UPLOAD_MEDIA_TYPES.join(', ') },
          },
        },
      },
      success: {
        status: 202,
        description:
          'Accepted: the job (new, or the first answer replayed). The job runs later; follow it with GET, the WebSocket or a webhook.',
        schema: 'Job',
        headers: location('The job (path of GET /v1/jobs/{id}, with the stage prefix).'),
      },
      problems: ['CreateJobRefused', 'IdempotencyKeyInUse', 'IdempotencyKeyReused', 'CreateJobThrottled'],
    },
    'GET /v1/jobs': {
      operationId: 'listJobs',
      summary: "List the tenant's jobs, newest first",
      parameters: [
        {
          name: 'status',
          in: 'query',
          description: 'Only jobs in this status.',
          schema: schemaRef('JobStatus'),
        },
        ...pageParameters,
      ],
      success: { status: 200, description: 'A page of jobs.', schema: 'JobPage' },
      problems: ['ValidationFailed'],
    },
    'POST /v1/jobs/batch': {
      operationId: 'createJobBatch',
      summary: 'Submit many jobs at once',
      description: `Up to ${MAX_BATCH_ITEMS} user actions in one request, each with its own idempotency key, answered item by item in item order. An invalid item is refused alone; the others are accepted. A key given twice is one job: the first item with it decides, a later one with the same body is answered as a replay and one with another body as a reused key (422). Retrying the whole batch is safe: every accepted item is replayed, nothing is created twice.`,
      body: 'CreateJobBatch',
      success: {
        status: 200,
        description: "Each item's answer, in item order.",
        schema: 'CreateJobBatchResult',
      },
      problems: [
        [
          'ValidationFailed',
          `The body is not \`{items}\` with 1 to ${MAX_BATCH_ITEMS} items (\`validation-failed\`); nothing was stored.`,
        ],
      ],
    },
    'POST /v1/jobs/cancel': {
      operationId: 'cancelJobs',
      summary: "Cancel the tenant's jobs that match a filter",
      description: `Each matching unfinished job is canceled as POST /v1/jobs/{id}/cancel would cancel it: queued jobs at once, running ones stopped at the provider, jobs in review keep their status and carry the request. At most BULK_MAX_PER_REQUEST (${defaultSettings.bulkMaxPerRequest} by default) jobs per request; follow \`nextCursor\` for the rest. Safe to retry: a canceled job is not matched again.`,
      body: 'CancelJobsRequest',
      success: {
        status: 200,
        description: 'What the request matched and canceled.',
        schema: 'CancelJobsResult',
      },
      problems: [
        [
          'ValidationFailed',
          'The filter is invalid: an unknown status, type or field, a time that is not RFC 3339, createdAfter not before createdBefore, or a cursor of another filter (`validation-failed`, with pointers); nothing was changed.',
        ],
      ],
    },
    'GET /v1/jobs/{id}': {
      operationId: 'getJob',
      summary: 'Get a job',
      parameters: [jobIdParameter],
      success: { status: 200, description: 'The job.', schema: 'Job' },
      problems: ['NotFound'],
    },
    'POST /v1/jobs/{id}/cancel': {
      operationId: 'cancelJob',
      summary: 'Cancel a job',
      description:
        'Idempotent: a canceled job is returned as it is. A queued or running job is canceled (and stopped at the provider); a job in review keeps its status and carries the request.',
      parameters: [jobIdParameter],
      success: { status: 202, description: 'The job after the cancel request.', schema: 'Job' },
      problems: ['NotFound', 'JobAlreadyFinished'],
    },
    'POST /v1/jobs/{id}/resume': {
      operationId: 'resumeJob',
      summary: 'Resume a failed job from the step that failed',
      description:
        'Runs a failed job again from the step that failed, keeping what the steps before it produced: its workflow execution is redriven, nothing done before is done or charged again. The job is `running` again at once. A job whose provider submission may have been charged with no known outcome is never resumed. Of two resumes at once, one resumes the job and the other gets 409.',
      parameters: [jobIdParameter],
      success: { status: 202, description: 'The job, running again.', schema: 'Job' },
      problems: ['NotFound', 'NotResumable'],
    },
    'GET /v1/jobs/{id}/events': {
      operationId: 'getJobEvents',
      summary: "A job's timeline, oldest first",
      parameters: [jobIdParameter],
      success: { status: 200, description: 'The timeline.', schema: 'Timeline' },
      problems: ['NotFound'],
    },
    'POST /v1/jobs/{id}/stream-ticket': {
      operationId: 'createStreamTicket',
      summary: "A short-lived ticket for the job's live-progress WebSocket",
      description:
        'Scoped to this job and tenant, valid for a minute, stored only as a hash: connect with `?ticket=` instead of putting an API key in the WebSocket URL.',
      parameters: [jobIdParameter],
      success: { status: 201, description: 'The ticket.', schema: 'StreamTicket' },
      problems: ['NotFound'],
    },
    'POST /v1/search': {
      operationId: 'search',
      summary: 'Find the passages of published recordings closest to a query',
      description:
        "Searches the passages of every recording the tenant published (and only the tenant's: another tenant's passages are never searched), closest first, each with a URL that plays it from its first word. Of a media item, only its current version is heard, with the item's title, speaker, date and labels as they are now; a recording published with audio.publish outside the library is heard as its job. Search changes nothing, so it is safe to retry.",
      body: 'SearchRequest',
      success: {
        status: 200,
        description: 'The hits, closest first; none when nothing published matches the filter.',
        schema: 'SearchResult',
      },
      problems: ['SearchRefused', 'SearchThrottled'],
    },
    'POST /v1/media': {
      operationId: 'createMedia',
      summary: 'Create a media item',
      description:
        'An item of the media library: its metadata now, its recordings later as versions (POST /v1/media/{id}/versions). Idempotent under the Idempotency-Key, as POST /v1/jobs is: the same key and body answer the same item with `Idempotent-Replayed: true`; another body under the key is a 422.',
      parameters: [idempotencyKeyParameter],
      body: 'CreateMediaRequest',
      success: {
        status: 201,
        description: 'The item (new, or the first answer replayed).',
        schema: 'MediaItem',
        headers: location('The item (path of GET /v1/media/{id}, with the stage prefix).'),
      },
      problems: ['CreateMediaRefused', 'IdempotencyKeyReused'],
    },
    'GET /v1/media': {
      operationId: 'listMedia',
      summary: "List the tenant's media items",
      parameters: listMediaParameters(schemas),
      success: { status: 200, description: 'A page of items.', schema: 'MediaPage' },
      problems: ['ValidationFailed'],
    },
    'GET /v1/media/{id}': {
      operationId: 'getMedia',
      summary: 'Get a media item',
      description:
        'With its current version (what listeners and search get) and the version being published, if any. Their URLs are presigned and short-lived: get the item again for fresh ones.',
      parameters: [mediaIdParameter],
      success: { status: 200, description: 'The item.', schema: 'MediaItem' },
      problems: ['MediaNotFound'],
    },
    'PATCH /v1/media/{id}': {
      operationId: 'updateMedia',
      summary: "Change a media item's metadata",
      description:
        "Calls no provider: search reads the title and speaker from the item, and a change of labels or date rewrites the metadata of the current version's passages in the vector index. Sending the same change again leaves the same item.",
      parameters: [mediaIdParameter],
      body: 'UpdateMediaRequest',
      success: { status: 200, description: 'The item as it now is.', schema: 'MediaItem' },
      problems: ['ValidationFailed', 'MediaNotFound'],
    },
    'DELETE /v1/media/{id}': {
      operationId: 'deleteMedia',
      summary: 'Delete a media item',
      description:
        "The item is gone at once: not found afterwards, and search no longer hears it. The version being published is canceled; the reconciler then deletes every version's stream, transcripts, passages, vectors and uploads.",
      parameters: [mediaIdParameter],
      success: { status: 204, description: 'Deleted.' },
      problems: ['MediaNotFound'],
    },
    'POST /v1/media/{id}/versions': {
      operationId: 'publishMediaVersion',
      summary: 'Publish a new recording of a media item',
      description: `Starts an audio.publish job for the recording. The item's current version switches to it only once it has fully published (stream, passages, vectors); a newer version started meanwhile supersedes it (it is canceled and never becomes current). The replaced version's stream, transcript and vectors are deleted MEDIA_GRACE_SECONDS (${defaultSettings.mediaGraceSeconds} by default) later, so a listener mid-stream finishes. Idempotent under the Idempotency-Key: a retry answers the same version with \`Idempotent-Replayed: true\`.`,
      parameters: [mediaIdParameter, idempotencyKeyParameter],
      body: 'CreateVersionRequest',
      success: {
        status: 202,
        description: 'Accepted: the item, with the new version as `inProgress` while it publishes.',
        schema: 'MediaItem',
        headers: location(
          "The version's job (path of GET /v1/jobs/{id}, with the stage prefix): follow it as any job.",
        ),
      },
      problems: [
        'CreateMediaRefused',
        'MediaNotFound',
        'IdempotencyKeyInUse',
        'IdempotencyKeyReused',
        'CreateJobThrottled',
      ],
    },
    'POST /v1/uploads': {
      operationId: 'createUpload',
      summary: 'Get a presigned upload for a large input',
      description: `For inputs larger than a multipart file part (${bodyLimits.fileBytes} bytes): PUT the bytes to uploadUrl with exactly the declared Content-Type and Content-Length, then use ref in the job's input.`,
      body: 'CreateUploadRequest',
      success: { status: 201, description: 'The upload ticket.', schema: 'UploadTicket' },
      problems: ['ValidationFailed'],
    },
    'POST /v1/uploads/multipart': {
      operationId: 'createMultipartUpload',
      summary: 'Start a multipart upload of a large input',
      description:
        'For large inputs on unreliable networks: the file goes in parts, each with its own presigned URL, so a failure costs one part, not the whole file. Complete it with POST /v1/uploads/{ref}/complete.',
      body: 'CreateUploadRequest',
      success: { status: 201, description: 'The upload and its parts.', schema: 'MultipartUploadTicket' },
      problems: ['ValidationFailed'],
    },
    'POST /v1/uploads/{ref}/parts': {
      operationId: 'renewMultipartUploadParts',
      summary: 'Renew the part URLs of a multipart upload',
      description:
        "Part URLs expire (expiresAt); the upload lives on until it is completed or the input bucket's lifecycle rule aborts it. A slow upload asks for fresh URLs of the parts it still has to send and goes on, keeping the parts already stored. The answer lists only the parts asked for; URLs for an uploadId that is not this ref's upload are refused by S3.",
      parameters: [multipartUploadRef],
      body: 'RenewMultipartUploadParts',
      success: {
        status: 200,
        description: 'Fresh URLs of the parts asked for.',
        schema: 'MultipartUploadTicket',
      },
      problems: ['ValidationFailed'],
    },
    'POST /v1/uploads/{ref}/complete': {
      operationId: 'completeMultipartUpload',
      summary: 'Assemble the parts of a multipart upload',
      parameters: [multipartUploadRef],
      body: 'CompleteMultipartUpload',
      success: { status: 200, description: 'The input is stored.', schema: 'UploadCompleted' },
      problems: ['ValidationFailed'],
    },
    'POST /v1/schedules': {
      operationId: 'createSchedule',
      summary: 'Create a recurring schedule',
      description:
        'Idempotent under the Idempotency-Key, as POST /v1/jobs is: the same key and body answer the same schedule with `Idempotent-Replayed: true`; another body under the key is a 422. In AWS each schedule is an EventBridge Scheduler schedule that invokes Longhaul at each firing.',
      parameters: [idempotencyKeyParameter],
      body: 'CreateScheduleRequest',
      success: {
        status: 201,
        description: 'The schedule (new, or the first answer replayed).',
        schema: 'Schedule',
        headers: location('The schedule (path of GET /v1/schedules/{id}, with the stage prefix).'),
      },
      problems: ['CreateScheduleRefused', 'IdempotencyKeyReused'],
    },
    'GET /v1/schedules': {
      operationId: 'listSchedules',
      summary: "List the tenant's schedules, in id order",
      parameters: pageParameters,
      success: { status: 200, description: 'A page of schedules.', schema: 'SchedulePage' },
      problems: ['ValidationFailed'],
    },
    'GET /v1/schedules/{id}': {
      operationId: 'getSchedule',
      summary: 'Get a schedule',
      parameters: [scheduleIdParameter],
      success: { status: 200, description: 'The schedule.', schema: 'Schedule' },
      problems: ['ScheduleNotFound'],
    },
    'PATCH /v1/schedules/{id}': {
      operationId: 'updateSchedule',
      summary: 'Enable or disable a schedule',
      description:
        'Idempotent. A disabled schedule creates no job from that moment, whatever firing is already on its way.',
      parameters: [scheduleIdParameter],
      body: 'UpdateScheduleRequest',
      success: { status: 200, description: 'The schedule as it now is.', schema: 'Schedule' },
      problems: ['ValidationFailed', 'ScheduleNotFound'],
    },
    'DELETE /v1/schedules/{id}': {
      operationId: 'deleteSchedule',
      summary: 'Delete a schedule',
      description: 'Jobs it created stay. A deleted schedule is not found afterwards.',
      parameters: [scheduleIdParameter],
      success: { status: 204, description: 'Deleted.' },
      problems: ['ScheduleNotFound'],
    },
    'GET /v1/admin/jobs': {
      operationId: 'adminListJobs',
      summary: 'List active jobs of every tenant, oldest first (by default those in review)',
      parameters: [
        {
          name: 'status',
          in: 'query',
          description: 'Which active jobs.',
          schema: { type: 'string', enum: ['queued', 'running', 'needs_review'], default: 'needs_review' },
        },
        {
          name: 'limit',
          in: 'query',
          description: 'Page size.',
          schema: { type: 'integer', minimum: 1, maximum: 100, default: 50 },
        },
        ref('parameters', 'Cursor'),
      ],
      success: { status: 200, description: 'A page of jobs.', schema: 'AdminJobPage' },
      problems: ['ValidationFailed'],
    },
    'GET /v1/admin/providers': {
      operationId: 'adminListProviders',
      summary:
        "Each provider's state (open, paused until when and why), in-flight limit, slots held and queued jobs",
      success: { status: 200, description: 'Every provider.', schema: 'ProviderList' },
    },
    'POST /v1/admin/providers/{provider}/pause': {
      operationId: 'adminPauseProvider',
      summary: 'Pause a provider by hand',
      description:
        'No job is granted a slot at the provider until the pause ends: its jobs wait `queued` in their lines, none fails, and jobs running there run on. A pause in force that lasts longer is kept (the answer shows it). The first pause of an open provider puts `provider.paused` on the bus. Invalid input is refused with nothing changed.',
      parameters: [providerParameter],
      body: 'ProviderPauseRequest',
      success: { status: 200, description: 'The provider as it now is.', schema: 'ProviderStatus' },
      problems: ['ValidationFailed', 'ProviderNotFound'],
    },
    'POST /v1/admin/providers/{provider}/resume': {
      operationId: 'adminResumeProvider',
      summary: "End a provider's pause now",
      description:
        "Ends the pause, whoever set it, and hands the provider's free slots to the jobs waiting in their lines at once; puts `provider.resumed` on the bus. A provider that is not paused is left as it is.",
      parameters: [providerParameter],
      success: { status: 200, description: 'The provider as it now is.', schema: 'ProviderStatus' },
      problems: ['ProviderNotFound'],
    },
    'GET /v1/admin/tenants/{tenant}': {
      operationId: 'adminGetTenant',
      summary: "A tenant's settings and usage",
      parameters: [tenantParameter],
      success: { status: 200, description: 'The tenant.', schema: 'Tenant' },
      problems: ['ValidationFailed', 'TenantNotFound'],
    },
    'PUT /v1/admin/tenants/{tenant}': {
      operationId: 'adminPutTenant',
      summary: "Set a tenant's settings",
      description:
        'Idempotent. Only a tenant (a name an API key carries) has settings: any other name is refused with 400 naming `tenant`, and so is invalid input, with nothing changed.',
      parameters: [tenantParameter],
      body: 'TenantSettings',
      success: { status: 200, description: 'The tenant as it now is.', schema: 'Tenant' },
      problems: ['ValidationFailed'],
    },
    'POST /v1/admin/jobs/{id}/resolve': {
      operationId: 'adminResolveJob',
      summary: 'Settle a job in review',
      description: "Releases the job's slot in every case; `requeue` sends the job to the queue again.",
      parameters: [jobIdParameter],
      body: 'Resolution',
      success: { status: 200, description: 'The resolved job.', schema: 'Job' },
      problems: ['ValidationFailed', 'NotFound', 'NotResolvable'],
    },
    'POST /v1/admin/jobs/replay': {
      operationId: 'adminReplayJobs',
      summary: 'Replay finished jobs as new ones',
      description: `Each matching finished job becomes a new job (same tenant, type, input, webhookUrl, priority) with \`replayOf\`; the original is never touched. Replays go through intake like any submission: they queue, count toward the tenant's maxQueued and take provider slots only through dispatch. A job in review, an unfinished job, or one whose provider submission may still run is refused with the reason. At most REPLAY_MAX_PER_REQUEST (${defaultSettings.replayMaxPerRequest} by default) jobs per request; follow \`nextCursor\` for the rest. Retrying with the same note replays nothing twice.`,
      body: 'ReplayJobsRequest',
      success: {
        status: 200,
        description: 'What the request matched, replayed and refused.',
        schema: 'ReplayJobsResult',
      },
      problems: ['ValidationFailed'],
    },
    'POST /v1/admin/jobs/resume': {
      operationId: 'adminResumeJobs',
      summary: 'Resume failed jobs by filter',
      description: `Each matching failed job is resumed as its client's POST /v1/jobs/{id}/resume would: from the step that failed, nothing before it run or charged again, and a job that needs its provider slot back waits for it in its tenant's line, so resuming what an outage failed lengthens the queue and never passes a limit. A job that may not be resumed is refused with why. At most REPLAY_MAX_PER_REQUEST (${defaultSettings.replayMaxPerRequest} by default) failed jobs read per request; follow \`nextCursor\` for the rest.`,
      body: 'ResumeJobsRequest',
      success: {
        status: 200,
        description: 'What the request matched, resumed and refused.',
        schema: 'ResumeJobsResult',
      },
      problems: ['ValidationFailed'],
    },
    'POST /v1/admin/dlq/redrive': {
      operationId: 'adminRedriveDeadLetters',
      summary: 'Move the dead-letter queue back to the jobs queue',
      success: { status: 202, description: 'The move started.', schema: 'RedriveStarted' },
    },
  };
}

/** The query parameters every provider's webhook URL carries: the job and its submission. */
const providerWebhookQuery: readonly ParameterObject[] = [
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
];

/** A provider's webhook is verified by its adapter, not the gateway: these are all it answers besides success. */
const PROVIDER_WEBHOOK_PROBLEMS: readonly ProblemName[] = [
  'ValidationFailed',
  'Unauthorized',
  'PayloadTooLarge',
  'ServerError',
];

const signatureHeader = (name: string): ParameterObject => ({
  name,
  in: 'header',
  required: true,
  description: 'The HMAC signature of the body.',
  schema: { type: 'string' },
});

/**
 * Each provider's webhook operation, by provider: a provider added to
 * config/providers.ts without its entry here fails to compile. The routes'
 * paths come from config/layout.ts, as the gateway's do.
 */
const providerWebhooks: Partial<Record<ProviderName, Operation>> = {
  'longhaul-http': {
    operationId: 'receiveProviderEvent',
    summary: "The media provider's webhook",
    description:
      'Not for clients. Authenticated by `Provider-Signature: t=<unix>,v1=<hex HMAC-SHA256(secret, t + "." + body)>` with the provider webhook secret, at most 300 s old. Events for unknown jobs are acknowledged and ignored.',
    parameters: [...providerWebhookQuery, signatureHeader('Provider-Signature')],
    body: 'ProviderEvent',
    success: { status: 204, description: 'Applied, or ignored.' },
    problems: PROVIDER_WEBHOOK_PROBLEMS,
  },
  replicate: {
    operationId: 'receiveReplicateWebhook',
    summary: "Replicate's prediction webhooks",
    description:
      'Not for clients. Signed per Standard Webhooks (`webhook-id`, `webhook-timestamp`, `webhook-signature`) with the whsec_ key in the replicate secret, at most 300 s old. The body is a Replicate prediction. Events for unknown or finished jobs are acknowledged and change nothing.',
    parameters: [
      ...providerWebhookQuery,
      ...['webhook-id', 'webhook-timestamp', 'webhook-signature'].map(
        (name): ParameterObject => ({
          name,
          in: 'header',
          required: true,
          description: 'Standard Webhooks.',
          schema: { type: 'string' },
        }),
      ),
    ],
    body: {
      'application/json': {
        schema: {
          type: 'object',
          description: 'A Replicate prediction (id, status, logs, output, error, …).',
        },
      },
    },
    success: { status: 204, description: 'Applied, or ignored.' },
    problems: PROVIDER_WEBHOOK_PROBLEMS,
  },
  deepgram: {
    operationId: 'receiveDeepgramCallback',
    summary: "Deepgram's transcription callbacks",
    description:
      'Not for clients. Deepgram signs nothing, so Longhaul signs the callback URL it gives: `sig` is the hex HMAC-SHA256 of `jobId=…&submission=…` with the webhookSecret of the deepgram secret. The body is a pre-recorded response, or an error. Events for unknown or finished jobs are acknowledged and change nothing.',
    parameters: [
      ...providerWebhookQuery,
      {
        name: 'sig',
        in: 'query',
        required: true,
        description: "Longhaul's signature of the callback URL.",
        schema: { type: 'string', pattern: '^[0-9a-f]{64}$' },
      },
    ],
    body: {
      'application/json': {
        schema: {
          type: 'object',
          description: 'A Deepgram pre-recorded response (metadata, results) or error.',
        },
      },
    },
    success: { status: 204, description: 'Applied, or ignored.' },
    problems: PROVIDER_WEBHOOK_PROBLEMS,
  },
};

/** An operation's tag: the first segment of its path under /v1 (`jobs`, `media`, `admin`, `provider`, …), or `meta`. */
const tagOf = (path: string): string => /^\/v1\/([a-z]+)/.exec(path)?.[1] ?? 'meta';

const SECURITY: Record<RouteAuth, OperationObject['security']> = {
  tenant: [{ apiKey: [] }],
  admin: [{ adminKey: [] }],
  none: [],
};

/** An operation of the table as the document gives it. */
function operationObject(path: string, operation: Operation, auth: RouteAuth): OperationObject {
  const { success, body, problems: own = [], ...described } = operation;
  const answers = auth === 'none' ? [] : [...AUTHENTICATED, ...(body ? BODY : [])];
  const responses: Record<string, ResponseObject | Reference> = {
    [String(success.status)]: {
      description: success.description,
      ...(success.headers ? { headers: success.headers } : {}),
      ...(success.schema
        ? {
            content: jsonContent(
              typeof success.schema === 'string' ? schemaRef(success.schema) : success.schema,
            ),
          }
        : {}),
    },
  };
  for (const answer of [...answers, ...own]) {
    const [name, description] = typeof answer === 'string' ? [answer] : answer;
    responses[problemStatus(name)] = { ...ref('responses', name), ...(description ? { description } : {}) };
  }
  return {
    ...described,
    tags: [tagOf(path)],
    security: SECURITY[auth],
    ...(body
      ? {
          requestBody: {
            required: true,
            content: typeof body === 'string' ? jsonContent(schemaRef(body)) : body,
          },
        }
      : {}),
    responses,
  };
}

function buildDocument(): OpenApiDocument {
  const schemas = componentSchemas();
  const operations = apiOperations(schemas);
  const paths: Record<string, Record<string, OperationObject>> = {};
  const add = (method: string, path: string, operation: Operation, auth: RouteAuth) => {
    paths[path] = { ...paths[path], [method.toLowerCase()]: operationObject(path, operation, auth) };
  };
  for (const route of routes)
    add(route.method, route.path, operations[`${route.method} ${route.path}` as ApiRouteKey], route.auth);
  for (const route of providerWebhookRoutes) {
    const operation = providerWebhooks[route.provider];
    if (!operation) throw new Error(`${route.provider} posts webhooks but has no webhook operation`);
    add(route.method, route.path, operation, route.auth);
  }
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
    paths,
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
            signatureHeader('Longhaul-Signature'),
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
      responses: Object.fromEntries(
        (Object.keys(problemResponses) as ProblemName[]).map((name) => [name, problemResponse(name)]),
      ),
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
        Provider: {
          name: 'provider',
          in: 'path',
          required: true,
          description: 'The provider, as GET /v1/admin/providers names it.',
          schema: { type: 'string', enum: [...PROVIDER_NAMES] },
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
          schema: fromZod(PAGE_QUERY_FIELDS.limit),
        },
        Cursor: {
          name: 'cursor',
          in: 'query',
          description: 'nextCursor of the previous page.',
          schema: fromZod(PAGE_QUERY_FIELDS.cursor.unwrap()),
        },
      },
      securitySchemes: {
        apiKey: { type: 'apiKey', in: 'header', name: API_KEY_HEADER, description: "A tenant's API key." },
        adminKey: { type: 'apiKey', in: 'header', name: API_KEY_HEADER, description: 'The operator key.' },
      },
    },
  };
}

export const openApiDocument: OpenApiDocument = buildDocument();
