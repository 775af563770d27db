import * as z from 'zod';
import { MAX_EXPRESSION_LENGTH } from '../../config/schedule-expressions';
import { bodyLimits, defaultSettings } from '../../config/settings';
import { KEY_PATTERN, SCHEDULE_ID_PATTERN } from '../domain/idempotency';
import { START_DEADLINE_PASSED } from '../domain/job-statuses';
import { providerStatus } from '../domain/operator';
import { createUpload, MAX_BATCH_ITEMS } from '../domain/requests';
import {
  createJobBatchItemResult,
  fileFields,
  jobPriority,
  jobType,
  nextCursor,
  timestamp,
} from '../domain/resources';
import { DEFAULT_TIMEZONE, MAX_START_WITHIN_SECONDS } from '../domain/schedules';

export {
  adminJob,
  adminJobPage,
  cancelJobsResult,
  createJobBatchItemResult,
  job,
  jobError,
  jobPage,
  jobPriority,
  jobStatus,
  jobType,
  liveMessage,
  multipartUploadTicket,
  problem,
  problemCode,
  progressMessage,
  replayJobsResult,
  resumeJobsResult,
  statusMessage,
  tenant,
  timeline,
  timelineEvent,
  uploadCompleted,
  uploadTicket,
  waiting,
} from '../domain/resources';

/**
 * The HTTP API's resources and the request bodies the document describes
 * beyond the handlers' own schemas, written once in zod: the OpenAPI
 * document's components are generated from them (lambdas/api/openapi.ts).
 * The resources the server builds are written in lambdas/domain/resources.ts
 * (the domain's types are theirs) and passed on from here; the SDK's types
 * are checked against them (test/unit/api-schemas.test.ts).
 */

export const providerList = z.object({ items: z.array(providerStatus) });

/** When a job is to run, on every request that creates one. */
const runAt = z
  .string()
  .meta({
    format: 'date-time',
    description: `When the job is to run: RFC 3339 with a time zone offset, at most SCHEDULE_MAX_AHEAD_DAYS (${defaultSettings.scheduleMaxAheadDays} by default) days ahead. Ahead of now, the job is stored \`scheduled\` and starts, given a free slot, within one reconciler period of it; absent or past, it runs now. Part of the request the Idempotency-Key stands for.`,
  })
  .optional();

/** The latest the job may reach its provider, on every request that creates one. */
const startBy = z
  .string()
  .meta({
    format: 'date-time',
    description: `The latest instant the job may reach its provider: RFC 3339 with a time zone offset, in the future and after runAt. A job still waiting then (its provider paused or down, or busy) ends \`failed\` with error.code \`${START_DEADLINE_PASSED}\` and nothing charged; a job already sent to its provider is never ended by it. Absent: the job waits however long its provider is paused or down. Part of the request the Idempotency-Key stands for.`,
  })
  .optional();

const createJobFields = {
  type: jobType,
  input: z.looseObject({}),
  webhookUrl: z.url().max(2048).optional(),
  priority: jobPriority.optional(),
  runAt,
  startBy,
};

/**
 * A job request as the document describes it; the handler checks the same
 * fields (lambdas/domain/requests.ts, held to this by the document's tests)
 * and then the input by the type's schema, which the document adds as `oneOf`.
 */
export const createJobRequest = z.strictObject(createJobFields).meta({
  description:
    'The type selects the input schema. A webhookUrl must be https and public in AWS (http and loopback are allowed locally).',
});

export const createJobBatchItem = z
  .strictObject({ idempotencyKey: z.string().regex(KEY_PATTERN), ...createJobFields })
  .meta({
    description:
      'A CreateJobRequest with the Idempotency-Key a single POST /v1/jobs would send: the same key space, so a single submission with the key lands on the same job.',
  });

export const createJobBatch = z
  .strictObject({ items: z.array(createJobBatchItem).min(1).max(MAX_BATCH_ITEMS) })
  .meta({
    description: `Job requests submitted together, each under its own idempotency key; at most ${bodyLimits.jsonBytes} bytes in all.`,
  });

export const createJobMultipart = z
  .strictObject({
    ...createJobFields,
    input: z.looseObject({}).describe('The input, as JSON text.'),
    file: z.string().meta({ contentMediaType: 'application/octet-stream' }).optional(),
  })
  .meta({
    description: `As CreateJobRequest, with an optional file part of at most ${bodyLimits.fileBytes} bytes (the whole body at most ${bodyLimits.multipartBytes}). The file becomes the job's ${fileFields}; leave that field, and a URL naming the same source, out of input.`,
  });

export const createJobBatchResult = z.object({ items: z.array(createJobBatchItemResult) });

const startWithinSeconds = z
  .int()
  .min(1)
  .max(MAX_START_WITHIN_SECONDS)
  .optional()
  .describe(
    "Each firing's job gets a startBy this many seconds after the firing's time (a schedule repeats, so its deadline is relative): a job still waiting then ends `failed` with error.code `start_deadline_passed`, uncharged. Absent: the firings' jobs wait however long their provider is down.",
  );

export const schedule = z
  .object({
    id: z.string().regex(SCHEDULE_ID_PATTERN).describe('Derived from (tenant, Idempotency-Key).'),
    expression: z.string().describe('EventBridge Scheduler `rate(…)` or `cron(…)` expression.'),
    timezone: z.string().describe('IANA time zone the expression is evaluated in.'),
    job: createJobRequest,
    startWithinSeconds,
    enabled: z.boolean(),
    nextRunAt: z
      .string()
      .meta({ format: 'date-time' })
      .nullable()
      .describe('The next firing; null while disabled or when the expression never fires again.'),
    createdAt: timestamp,
  })
  .meta({
    description:
      'A recurring schedule: each firing creates one job from `job` under the key `schedule:<id>:<fire time>`.',
  });

export const schedulePage = z.object({
  items: z.array(schedule),
  nextCursor: nextCursor.describe('Pass as `cursor` for the next page; null on the last page.'),
});

export const createScheduleRequest = z
  .strictObject({
    expression: z
      .string()
      .max(MAX_EXPRESSION_LENGTH)
      .meta({
        description:
          '`rate(<n> minute|minutes|hour|hours|day|days)` (singular for 1), or `cron(<minutes> <hours> <day-of-month> <month> <day-of-week> <year>)` with `?` in exactly one of the day fields; `L`, `W`, `#`, ranges, lists, steps and the names JAN-DEC and SUN-SAT as EventBridge Scheduler takes them.',
        examples: ['rate(15 minutes)', 'cron(0 9 ? * MON-FRI *)'],
      }),
    timezone: z.string().optional().meta({
      default: DEFAULT_TIMEZONE,
      description:
        'IANA time zone name; daylight saving time is followed (a skipped time does not fire, a repeated one fires once).',
    }),
    job: createJobRequest,
    startWithinSeconds,
    enabled: z.boolean().optional().meta({ default: true }),
  })
  .meta({
    description:
      "At most one firing a minute. `job` is validated exactly as POST /v1/jobs validates a job, except that it takes no `runAt` (each firing's job runs at the firing) and no `startBy` (give `startWithinSeconds`); any invalid member is a 400 naming it, and nothing is stored.",
  });

/** The handler's upload request, with the limit it reads from the settings at its default. */
export const createUploadRequest = createUpload
  .extend({
    contentLength: createUpload.shape.contentLength
      .max(defaultSettings.maxUploadBytes)
      .describe(`At most MAX_UPLOAD_BYTES (default ${defaultSettings.maxUploadBytes}).`),
  })
  .meta({
    description:
      'The PUT to the returned URL must send exactly this Content-Type and Content-Length (signed into the URL).',
  });

export const redriveStarted = z.object({ taskHandle: z.string().describe('The SQS message move task.') });

export const health = z.object({ status: z.literal('ok') });
