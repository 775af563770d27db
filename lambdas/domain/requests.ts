import { isIP } from 'node:net';
import * as z from 'zod';
import {
  type FileSource,
  JOB_TYPE_MODULES,
  JOB_TYPES,
  type JobType,
  jobTypeModule,
} from '../../config/job-types';
import { UPLOAD_REF_PATTERN } from '../../config/job-types/common';
import { type SearchRequest, searchRequest } from '../../config/search';
import { type FieldError, ValidationError } from './errors';
import { requireIdempotencyKey } from './idempotency';
import { JOB_PRIORITIES, JOB_STATUSES, type JobPriority } from './job';

/**
 * Request schemas of the public API. Objects are strict: an unknown field is
 * an error, not silently ignored, so a typo never changes what a job does.
 */

export { UPLOAD_REF_PATTERN };

/** Each job type's input schema, from its module. */
export const inputSchemas: Readonly<Record<JobType, z.ZodType<Record<string, unknown>>>> = Object.fromEntries(
  JOB_TYPE_MODULES.map((module) => [module.name, module.input]),
) as Record<JobType, z.ZodType<Record<string, unknown>>>;

/** What a multipart `file` part may be for a job type, from its module; undefined when it takes none. */
export const fileSourceOf = (type: JobType): FileSource | undefined => jobTypeModule(type).file;

const RUN_AT_FORMAT = 'must be an RFC 3339 date-time with a time zone offset, e.g. 2030-01-31T09:00:00Z';

/** An instant as requests give one: RFC 3339 with a time zone offset. */
export const RFC3339_INSTANT = z
  .string({ error: RUN_AT_FORMAT })
  .max(64, RUN_AT_FORMAT)
  .pipe(z.iso.datetime({ offset: true, error: RUN_AT_FORMAT }));

const createJobEnvelope = z.strictObject({
  type: z.enum(JOB_TYPES, { error: `must be one of ${JOB_TYPES.join(', ')}` }),
  input: z.record(z.string(), z.unknown(), { error: 'must be an object' }),
  webhookUrl: z.string().max(2048).optional(),
  priority: z.enum(JOB_PRIORITIES, { error: `must be one of ${JOB_PRIORITIES.join(', ')}` }).optional(),
  runAt: RFC3339_INSTANT.optional(),
  startBy: RFC3339_INSTANT.optional(),
});

export interface CreateJobRequest {
  readonly type: JobType;
  readonly input: Record<string, unknown>;
  readonly webhookUrl?: string;
  /** Absent: the default (`standard`). */
  readonly priority?: JobPriority;
  /** When the job is to run, as the instant in UTC (`toISOString`); absent: now. */
  readonly runAt?: string;
  /** The latest instant the job may reach its provider, in UTC (`toISOString`); absent: no deadline. */
  readonly startBy?: string;
}

export interface RequestPolicy {
  /** Whether webhook targets may be plain http, loopback or private addresses. */
  readonly allowPrivateWebhooks: boolean;
  /** How many days ahead a runAt may be (SCHEDULE_MAX_AHEAD_DAYS). */
  readonly scheduleMaxAheadDays: number;
  readonly now: () => Date;
}

/** Validates a job creation request and returns it normalized (input parsed by its type's schema). */
export function parseCreateJob(body: unknown, policy: RequestPolicy): CreateJobRequest {
  const envelope = createJobEnvelope.safeParse(body);
  if (!envelope.success) throw toValidationError(envelope.error);
  const { type, input, webhookUrl, priority } = envelope.data;
  const parsedInput = inputSchemas[type].safeParse(input);
  if (!parsedInput.success) throw toValidationError(parsedInput.error, ['input']);
  if (webhookUrl !== undefined) {
    const problem = webhookUrlProblem(webhookUrl, policy);
    if (problem)
      throw new ValidationError('The request is invalid.', [{ pointer: '/webhookUrl', detail: problem }]);
  }
  const runAt = envelope.data.runAt === undefined ? undefined : parseRunAt(envelope.data.runAt, policy);
  const startBy =
    envelope.data.startBy === undefined ? undefined : parseStartBy(envelope.data.startBy, runAt, policy);
  return {
    type,
    input: parsedInput.data as Record<string, unknown>,
    ...(webhookUrl !== undefined ? { webhookUrl } : {}),
    ...(priority !== undefined ? { priority } : {}),
    ...(runAt !== undefined ? { runAt } : {}),
    ...(startBy !== undefined ? { startBy } : {}),
  };
}

/**
 * A startBy as the instant it names, in UTC. Refused when it has passed
 * already (the job could only end unstarted) or is not after the job's runAt
 * (it would end before it is due).
 */
function parseStartBy(value: string, runAt: string | undefined, policy: RequestPolicy): string {
  const at = new Date(value);
  const refuse = (detail: string) =>
    new ValidationError('The request body is invalid.', [{ pointer: '/startBy', detail }]);
  if (Number.isNaN(at.getTime())) throw refuse(RUN_AT_FORMAT);
  const now = policy.now();
  if (at.getTime() <= now.getTime()) throw refuse(`must be in the future (after ${now.toISOString()})`);
  if (runAt !== undefined && at.toISOString() <= runAt) throw refuse(`must be after runAt (${runAt})`);
  return at.toISOString();
}

/**
 * A runAt as the instant it names, in UTC, so two spellings of one instant
 * are one request; refused beyond `scheduleMaxAheadDays` from now. A past
 * runAt is kept as given: the job runs now, and a retry of the request later
 * is still the same request.
 */
function parseRunAt(value: string, policy: RequestPolicy): string {
  const at = new Date(value);
  if (Number.isNaN(at.getTime())) {
    throw new ValidationError('The request body is invalid.', [{ pointer: '/runAt', detail: RUN_AT_FORMAT }]);
  }
  const latest = policy.now().getTime() + policy.scheduleMaxAheadDays * 86_400_000;
  if (at.getTime() > latest) {
    throw new ValidationError('The request body is invalid.', [
      {
        pointer: '/runAt',
        detail: `must be at most ${policy.scheduleMaxAheadDays} days ahead (no later than ${new Date(latest).toISOString()})`,
      },
    ]);
  }
  return at.toISOString();
}

/** The most items one batch of submissions takes. */
export const MAX_BATCH_ITEMS = 1000;

const batchEnvelope = z.strictObject({
  items: z
    .array(z.unknown(), { error: `must be an array of 1 to ${MAX_BATCH_ITEMS} job requests` })
    .min(1, `must be an array of 1 to ${MAX_BATCH_ITEMS} job requests`)
    .max(MAX_BATCH_ITEMS, `must be an array of 1 to ${MAX_BATCH_ITEMS} job requests`),
});

/** One item of a batch as parsed: a job request under its key, or why the item is refused. */
export type BatchEntry =
  | { readonly idempotencyKey: string; readonly request: CreateJobRequest }
  | { readonly error: unknown };

export interface ParsedBatchItem {
  /** The item's key as given, echoed in its answer; null when it gave none that is a string. */
  readonly idempotencyKey: string | null;
  readonly entry: BatchEntry;
}

/**
 * Validates a batch of submissions. An envelope that is not `{items}` with 1
 * to MAX_BATCH_ITEMS items refuses the whole batch; otherwise each item is
 * checked as a single POST /v1/jobs is (its key as the Idempotency-Key
 * header, the rest by `parseCreateJob`) and an invalid item is refused alone,
 * with pointers into the batch's body.
 */
export function parseBatch(body: unknown, policy: RequestPolicy): ParsedBatchItem[] {
  const envelope = batchEnvelope.safeParse(body);
  if (!envelope.success) throw toValidationError(envelope.error);
  return envelope.data.items.map((item, index) => parseBatchItem(item, `/items/${index}`, policy));
}

function parseBatchItem(item: unknown, at: string, policy: RequestPolicy): ParsedBatchItem {
  if (typeof item !== 'object' || item === null || Array.isArray(item)) {
    return {
      idempotencyKey: null,
      entry: {
        error: new ValidationError(`The batch item ${at} is invalid.`, [
          { pointer: at, detail: 'must be an object' },
        ]),
      },
    };
  }
  const { idempotencyKey, ...request } = item as Record<string, unknown>;
  const key = typeof idempotencyKey === 'string' ? idempotencyKey : null;
  try {
    requireIdempotencyKey(key ?? undefined, `The idempotencyKey of ${at}`);
  } catch (error) {
    return { idempotencyKey: key, entry: { error } };
  }
  const errors: FieldError[] = [];
  let parsed: CreateJobRequest | undefined;
  try {
    parsed = parseCreateJob(request, policy);
  } catch (error) {
    if (!(error instanceof ValidationError)) throw error;
    errors.push(...error.errors.map((field) => ({ ...field, pointer: `${at}${field.pointer ?? ''}` })));
  }
  if (errors.length > 0 || parsed === undefined) {
    return {
      idempotencyKey: key,
      entry: { error: new ValidationError(`The batch item ${at} is invalid.`, errors) },
    };
  }
  return { idempotencyKey: key, entry: { idempotencyKey: key as string, request: parsed } };
}

/**
 * Refuses webhook targets that would let a tenant make Longhaul call into its
 * own network (SSRF) when the deployment does not allow them. Hostnames that
 * resolve to private addresses are refused again when the webhook is sent.
 */
export function webhookUrlProblem(
  value: string,
  policy: Pick<RequestPolicy, 'allowPrivateWebhooks'>,
): string | undefined {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return 'must be an absolute URL';
  }
  if (url.username || url.password) return 'must not carry credentials';
  if (policy.allowPrivateWebhooks) {
    return url.protocol === 'https:' || url.protocol === 'http:' ? undefined : 'must be an http or https URL';
  }
  if (url.protocol !== 'https:') return 'must be an https URL';
  if (isPrivateHost(url.hostname)) return 'must not target a loopback, link-local or private address';
  return undefined;
}

function isPrivateHost(hostname: string): boolean {
  const host = hostname.replace(/^\[|\]$/g, '').toLowerCase();
  if (host === 'localhost' || host.endsWith('.localhost') || host.endsWith('.internal')) return true;
  const family = isIP(host);
  if (family === 4) {
    const [a = 0, b = 0] = host.split('.').map(Number);
    return (
      a === 0 ||
      a === 10 ||
      a === 127 ||
      (a === 100 && b >= 64 && b <= 127) ||
      (a === 169 && b === 254) ||
      (a === 172 && b >= 16 && b <= 31) ||
      (a === 192 && b === 168) ||
      a >= 224
    );
  }
  if (family === 6) {
    return (
      host === '::' ||
      host === '::1' ||
      host.startsWith('fc') ||
      host.startsWith('fd') ||
      host.startsWith('fe80') ||
      host.startsWith('::ffff:')
    );
  }
  return false;
}

/** The query fields of every paged listing: a page of 1 to 100 items (20 by default) after an opaque cursor. */
export const PAGE_QUERY_FIELDS = {
  limit: z.coerce
    .number({ error: 'must be an integer from 1 to 100' })
    .int('must be an integer from 1 to 100')
    .min(1, 'must be an integer from 1 to 100')
    .max(100, 'must be an integer from 1 to 100')
    .default(20),
  cursor: z.string().min(1).max(2048).optional(),
};

const listJobsQuery = z.strictObject({
  status: z.enum(JOB_STATUSES, { error: `must be one of ${JOB_STATUSES.join(', ')}` }).optional(),
  ...PAGE_QUERY_FIELDS,
});
export type ListJobsQuery = z.infer<typeof listJobsQuery>;

export function parseListJobs(query: Record<string, string | undefined>): ListJobsQuery {
  const parsed = listJobsQuery.safeParse(query);
  if (!parsed.success) throw toValidationError(parsed.error, [], 'query');
  return parsed.data;
}

/** The media types any job type takes as a file, for uploads made before the job. */
export const UPLOAD_MEDIA_TYPES = [
  ...new Set(JOB_TYPE_MODULES.flatMap((module) => (module.file ? [module.file.mediaTypes] : []))),
];
export const UPLOAD_MEDIA_TYPE = new RegExp(
  `^(${UPLOAD_MEDIA_TYPES.map((pattern) => pattern.slice(0, -2)).join('|')})\\/[\\w.+-]+$`,
);

export const createUpload = z.strictObject({
  contentType: z
    .string()
    .regex(
      UPLOAD_MEDIA_TYPE,
      `must be a media type a job type takes as a file: ${UPLOAD_MEDIA_TYPES.join(', ')}`,
    ),
  contentLength: z.number().int().min(1),
});
export type CreateUploadRequest = z.infer<typeof createUpload>;

export function parseCreateUpload(body: unknown, maxUploadBytes: number): CreateUploadRequest {
  const parsed = createUpload
    .refine((upload) => upload.contentLength <= maxUploadBytes, {
      path: ['contentLength'],
      message: `must be at most ${maxUploadBytes} bytes`,
    })
    .safeParse(body);
  if (!parsed.success) throw toValidationError(parsed.error);
  return parsed.data;
}

/** JSON Pointer (RFC 6901) of a zod issue path. */
function pointer(path: readonly PropertyKey[]): string {
  return path.map((segment) => `/${String(segment).replaceAll('~', '~0').replaceAll('/', '~1')}`).join('');
}

export function toValidationError(
  error: z.ZodError,
  prefix: readonly string[] = [],
  where = 'body',
): ValidationError {
  const errors: FieldError[] = error.issues.map((issue) => ({
    ...(where === 'query'
      ? { parameter: issue.path.map(String).join('.') || '(query)' }
      : { pointer: pointer([...prefix, ...issue.path]) }),
    detail: issueDetail(issue),
  }));
  return new ValidationError(`The request ${where} is invalid.`, errors);
}

function issueDetail(issue: z.core.$ZodIssue): string {
  if (issue.code === 'unrecognized_keys') return `unknown field(s): ${issue.keys.join(', ')}`;
  return issue.message;
}

/** A `POST /v1/search` body, or a ValidationError naming every field that is wrong. */
export function parseSearch(body: unknown): SearchRequest {
  const parsed = searchRequest.safeParse(body);
  if (!parsed.success) throw toValidationError(parsed.error);
  return parsed.data;
}

/** Parses a body or query with one of the media schemas (config/media.ts), as a precise 400 when it does not fit. */
export function parseMediaRequest<S extends z.ZodType>(
  schema: S,
  value: unknown,
  where: 'body' | 'query' = 'body',
): z.infer<S> {
  const parsed = schema.safeParse(value);
  if (!parsed.success) throw toValidationError(parsed.error, [], where);
  return parsed.data;
}
