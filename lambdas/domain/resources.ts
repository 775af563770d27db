import * as z from 'zod';
import type { DeepReadonly } from '../../config/deep-readonly';
import { JOB_TYPE_MODULES, JOB_TYPES } from '../../config/job-types';
import { UPLOAD_REF_PATTERN } from '../../config/job-types/common';
import { STREAM_PATH } from '../../config/layout';
import { PROBLEM_CODES } from '../../config/problems';
import { PROVIDER_NAMES } from '../../config/providers';
import { defaultSettings } from '../../config/settings';
import { JOB_ID_PATTERN, SCHEDULE_ID_PATTERN } from './ids';
import {
  CANCELABLE_STATUSES,
  DEFAULT_PRIORITY,
  JOB_PRIORITIES,
  JOB_STATUSES,
  START_DEADLINE_PASSED,
} from './job-statuses';
import { MAX_PARTS, MIN_PART_BYTES } from './part-limits';
import { MAX_WEIGHT, TENANT_DEFAULTS, TENANT_ID_PATTERN, tenantUsage } from './tenant-settings';

/**
 * The HTTP API's resources, written once in zod: the domain's types of them
 * are their `Resource` types (imported with `import type`, so no handler
 * bundles this file but the api's), and the OpenAPI document's
 * components are generated from them (lambdas/api/schemas.ts,
 * lambdas/api/openapi.ts). This module imports only modules below the domain
 * (config/, and the domain's plain constants), so every domain module may
 * take its types from here.
 *
 * Answers are plain objects, closed in the document (`additionalProperties:
 * false`), so the end-to-end validator notices a field the server sends but
 * this file does not describe.
 */

/** A resource as the server builds it: what its schema outputs, read-only. */
export type Resource<S extends z.ZodType> = DeepReadonly<z.output<S>>;

/** An instant as the API answers one: `toISOString`, always UTC. */
export const timestamp = z.string().meta({ format: 'date-time' });
const count = z.int().min(0);
const jobId = z.string().regex(JOB_ID_PATTERN);
export const nextCursor = z.string().nullable();

/** The fields a multipart `file` part or an upload ref fills, by job type. */
export const fileFields = JOB_TYPE_MODULES.flatMap((module) =>
  module.file ? [`${module.file.refField} (${module.name}, ${module.file.mediaTypes})`] : [],
).join(' or ');

export const jobType = z.enum(JOB_TYPES);

export const jobPriority = z.enum(JOB_PRIORITIES).meta({
  default: DEFAULT_PRIORITY,
  description: `Which of the tenant's waiting jobs goes first when a provider slot frees: ${JOB_PRIORITIES.join(' before ')}; a waiting job ages, so none starves. Jobs submitted without one are ${DEFAULT_PRIORITY}.`,
});

export const jobStatus = z.enum(JOB_STATUSES).meta({
  description:
    '`scheduled`: waiting for its runAt. Terminal: succeeded, failed, canceled. `needs_review` is left only by an operator or by the reconciler proving the outcome. A status never moves backwards.',
});

export const jobError = z.object({ code: z.string(), message: z.string() });

/** Why a queued job is not at its provider yet, as far as it is known without reading more than its provider's pool. */
export const WAITING_REASONS = ['provider_paused', 'provider_full', 'tenant_cap', 'rate_limited'] as const;

export const waiting = z
  .object({
    reason: z
      .enum(WAITING_REASONS)
      .describe(
        "`provider_paused`: its provider throttled or went down (or an operator paused it), and no job goes there until `until`. `provider_full`: every slot of its provider is taken; it waits in its tenant's line. `tenant_cap`: its tenant holds as many of the provider's slots as its maxInFlight allows. `rate_limited`: its provider's request rate is used up for now.",
      ),
    until: timestamp
      .optional()
      .describe('When the reason ends, where it is known (a pause, the next token of the rate).'),
    position: z
      .int()
      .min(1)
      .optional()
      .describe("Its place in its tenant's line (1: next), when it is near the head; absent further back."),
    estimatedStartAt: timestamp
      .optional()
      .describe(
        "When it is expected to start, where known: behind a pause or the rate, `until` and then a token each for the jobs ahead of it in its tenant's line (other tenants' turns can come between).",
      ),
  })
  .meta({
    description:
      'Why a queued job waits; present only while it is queued and the reason is known. Read when the job is read: it says how things stood then.',
  });

const jobFields = {
  id: jobId.describe('Derived from (tenant, Idempotency-Key).'),
  type: jobType,
  provider: z
    .enum(PROVIDER_NAMES)
    .describe("The provider that runs the job (the job type's, or the one the deployment chose for it)."),
  priority: jobPriority,
  status: jobStatus,
  progress: z
    .int()
    .min(0)
    .max(100)
    .describe('Persisted at most about once a second while running; 100 once succeeded.'),
  input: z
    .record(z.string(), z.unknown())
    .describe(
      `The input as accepted: ${JOB_TYPE_MODULES.map((module) => `a ${module.schemaNames.input}`).join(' or ')}, with a multipart file part turned into an upload ref.`,
    ),
  result: z
    .xor([z.null(), ...JOB_TYPE_MODULES.map((module) => module.result)])
    .describe(
      'Set once the job succeeded (null when an operator resolved it as succeeded without an output). Output URLs are presigned and short-lived: fetch the job again for fresh ones.',
    ),
  error: z.xor([z.null(), jobError]).describe('Why a `failed` or `needs_review` job is where it is.'),
  attempts: count.describe(
    'Submissions to the provider so far; for an audio.publish, whose own jobs make its submissions, the runs of its workflow (its start, each restart and each resume).',
  ),
  idempotencyKey: z.string().describe('The Idempotency-Key the job was created with.'),
  webhookUrl: z.string().optional().describe('Where the job is POSTed when it finishes.'),
  runAt: timestamp.describe(
    'The runAt the job was submitted with (UTC), or its creation time when it had none.',
  ),
  startBy: timestamp
    .optional()
    .describe(
      `The latest instant the job may reach its provider (UTC): one still waiting then ends \`failed\` with error.code \`${START_DEADLINE_PASSED}\` and nothing charged; one already sent to its provider is never ended by it. Absent: the job waits however long its provider is paused or down.`,
    ),
  waiting: waiting.optional(),
  scheduleId: z
    .string()
    .regex(SCHEDULE_ID_PATTERN)
    .optional()
    .describe(
      'The recurring schedule whose firing created the job; its idempotencyKey is then `schedule:<scheduleId>:<fire time, RFC 3339>`.',
    ),
  createdAt: timestamp,
  updatedAt: timestamp,
  startedAt: timestamp.optional(),
  finishedAt: timestamp.optional(),
  replayOf: jobId
    .optional()
    .describe('The job an operator replayed as this one (POST /v1/admin/jobs/replay); absent on other jobs.'),
  replacedBy: jobId
    .optional()
    .describe(
      'The job an operator replayed this one as (POST /v1/admin/jobs/replay): follow it for the outcome. A replaced job is never resumed (409 job-not-resumable), and a job its client resumed is not replayed while it runs. Absent on other jobs.',
    ),
  cancelRequestedAt: timestamp
    .optional()
    .describe(
      'When a cancel was asked of a job that is not settled yet: an audio.publish stays `running` until every chunk and embedding job it made is settled (one at a provider that cannot stop runs out there), then becomes `canceled`; a job in review keeps its status for an operator. Absent otherwise, and once the job is finished.',
    ),
  outputsRemoved: z
    .literal(true)
    .optional()
    .describe(
      'The job succeeded, but its outputs were removed since (its media item was deleted, or a newer version replaced it and its grace period ended): its result is then null. Absent otherwise.',
    ),
};

export const job = z
  .object(jobFields)
  .meta({ description: 'A job: one user action, however often it was submitted.' });

export const adminJob = z
  .object({ ...jobFields, tenantId: z.string() })
  .meta({ description: 'A job as operators see it: with the tenant it belongs to.' });

export const jobPage = z.object({
  items: z.array(job),
  nextCursor: nextCursor.describe('Pass as `cursor` for the next page; null on the last page.'),
});

export const adminJobPage = z.object({ items: z.array(adminJob), nextCursor });

export const tenant = z
  .object({
    tenant: z.string().regex(TENANT_ID_PATTERN),
    weight: z.int().min(1).max(MAX_WEIGHT).meta({
      default: TENANT_DEFAULTS.weight,
      description: "Its share of a freed provider slot, in proportion to the other waiting tenants' weights.",
    }),
    maxInFlight: z
      .int()
      .min(1)
      .optional()
      .describe(
        "Its jobs running at one provider at most, inside that provider's own limit. Absent: no cap of its own.",
      ),
    maxQueued: z
      .int()
      .min(1)
      .meta({ default: TENANT_DEFAULTS.maxQueued, description: 'Its queued and scheduled jobs at most.' }),
    usage: tenantUsage,
  })
  .meta({
    description:
      "A tenant's settings, with which the scheduler shares each provider's slots among tenants with waiting jobs, and what the tenant has in the system now. A tenant whose settings were never set has the defaults.",
  });

export const problemCode = z.enum(PROBLEM_CODES);

/**
 * The body of every error answer. config/problems.ts types it by hand
 * (`Problem`), held to this schema by test/unit/api-schemas.test.ts: config/
 * cannot import the domain, and the schema written there would run in every
 * handler that makes a problem, the authorizer's included.
 */
export const problem = z
  .object({
    type: z.string().regex(/^urn:longhaul:problem:[a-z-]+$/),
    title: z.string(),
    status: z.int().min(400).max(599),
    detail: z.string(),
    code: problemCode,
    instance: z
      .string()
      .optional()
      .describe('This occurrence (the request id), to quote when asking for support.'),
    errors: z
      .array(
        z.object({ pointer: z.string().optional(), parameter: z.string().optional(), detail: z.string() }),
      )
      .optional()
      .describe('What was invalid: a JSON Pointer into the body, or a query parameter or header by name.'),
  })
  .meta({
    description: 'RFC 9457 problem details. Switch on `code` (or on `type`, `urn:longhaul:problem:<code>`).',
  });
export const createJobBatchItemResult = z
  .object({
    idempotencyKey: z
      .string()
      .nullable()
      .describe('The key the item gave; null when it gave none that is a string.'),
    status: z
      .int()
      .describe(
        'The status POST /v1/jobs would have answered: 202 accepted (new or replayed), 400 invalid, 409 key in use, 422 key reused, 429 tenant queue full, 5xx failed (retry the item with its key).',
      ),
    job: job.optional().meta({ description: 'With status 202.' }),
    problem: problem.optional().meta({ description: 'With any other status.' }),
    replayed: z.boolean().describe("The key's job existed already: the first answer repeated."),
  })
  .meta({
    description:
      "One item's answer, in the order of the items: what POST /v1/jobs with its key and body would have answered.",
  });

/**
 * Why a matching job was not replayed: in review (its provider submission may
 * have been charged, outcome unknown; an operator resolves it first); not
 * finished (it may still run and be charged); finished with a submission whose
 * outcome was never known (it may still run there); its tenant at its
 * `maxQueued`; the same replay being accepted by another request right now;
 * the replay's key naming a job with another body.
 */
export const REPLAY_REFUSALS = [
  'needs-review',
  'not-finished',
  'provider-outcome-unknown',
  'tenant-queue-full',
  'replay-in-progress',
  'key-taken',
  'child-outcome-unknown',
] as const;
export const cancelJobsResult = z.object({
  matched: count.describe(
    `The tenant's unfinished jobs (${CANCELABLE_STATUSES.join(', ')}) this request found matching the filter: at most BULK_MAX_PER_REQUEST (${defaultSettings.bulkMaxPerRequest} by default). Finished jobs are never matched.`,
  ),
  canceled: count.describe('Of those, the jobs now canceled; 0 on a dry run.'),
  cancelRequested: count.describe(
    'Of those, jobs that carry the cancel request (`cancelRequestedAt`) instead: jobs in review keep their status and only an operator settles them; an audio.publish stays `running` until every job it made is settled, then becomes `canceled`.',
  ),
  nextCursor: nextCursor.describe(
    'More jobs may match: send the same filter again with this as `cursor`. Null when every matching job was looked at.',
  ),
});
export const replayJobsResult = z.object({
  matched: count.describe(
    `Jobs this request found matching the filter, replayed or refused: at most REPLAY_MAX_PER_REQUEST (${defaultSettings.replayMaxPerRequest} by default).`,
  ),
  replayed: count.describe('New jobs this request created; 0 on a dry run.'),
  alreadyReplayed: count.describe(
    'Jobs replayed with this note before (a retried request): their replay is in `jobs`, not made again.',
  ),
  refused: z.array(
    z.object({
      id: jobId,
      reason: z
        .enum(REPLAY_REFUSALS)
        .describe(
          "`needs-review`: its provider submission may have been charged with no known outcome; resolve it first. `not-finished`: it may still run. `provider-outcome-unknown`: finished, but a submission of it may still run at the provider. `tenant-queue-full`: the tenant is at its maxQueued; replay later. `replay-in-progress`: the same replay is being accepted right now; retry the request. `key-taken`: the replay's key names another job. `child-outcome-unknown`: a job it made (an audio.publish's chunk or embedding job) is in review, or was sent to its provider with no known outcome: it may have been charged; resolve that job first.",
        ),
    }),
  ),
  jobs: z
    .array(z.object({ id: jobId, replayOf: jobId, tenantId: z.string() }))
    .describe('Each replay made or found by this request.'),
  nextCursor: nextCursor.describe(
    'More jobs may match: send the same filter and note again with this as `cursor`. Null when every matching job was looked at.',
  ),
});

export const resumeJobsResult = z.object({
  matched: count.describe(
    `Failed jobs this request found matching the filter, resumed or refused: at most REPLAY_MAX_PER_REQUEST (${defaultSettings.replayMaxPerRequest} by default) read.`,
  ),
  resumed: count.describe('Of those, the jobs now running again; 0 on a dry run.'),
  refused: z
    .array(
      z.object({ id: jobId, reason: z.string().describe('Why it is not resumed, as a single resume says.') }),
    )
    .describe(
      'Matching jobs that may not be resumed: replayed already, sent to their provider with no known outcome, failed by their provider or by an operator, or ended by their startBy (submit those again).',
    ),
  nextCursor: nextCursor.describe(
    'More jobs may match: send the same filter and note again with this as `cursor`. Null when every failed job was looked at.',
  ),
});

export const timelineEvent = z
  .object({
    at: timestamp,
    type: z.string(),
    step: z.string().optional(),
    attempt: count.optional(),
    detail: z.string().optional(),
  })
  .meta({
    description:
      "One entry of a job's history, e.g. `job.accepted`, `job.enqueued`, `step.succeeded` (with `step` one of prepare, submit, await, release, finalize, notify), `step.retry`, `provider.accepted`, `job.needs_review`, `operator.resolved`.",
  });

export const timeline = z.object({ items: z.array(timelineEvent) });

const uploadRef = z.string().regex(UPLOAD_REF_PATTERN);
const presignedUrl = z.url();

export const uploadTicket = z.object({
  ref: uploadRef.describe(`Use as ${fileFields} once the PUT succeeded.`),
  uploadUrl: presignedUrl.describe('Presigned PUT URL.'),
  expiresAt: timestamp,
});

export const multipartUploadTicket = z
  .object({
    ref: uploadRef.describe(`Use as ${fileFields} once the upload is completed.`),
    uploadId: z.string(),
    partSizeBytes: z.int().min(MIN_PART_BYTES),
    parts: z
      .array(
        z.object({
          partNumber: z.int().min(1).max(MAX_PARTS),
          uploadUrl: presignedUrl.describe('Presigned PUT URL of this part.'),
        }),
      )
      .min(1)
      .max(MAX_PARTS),
    expiresAt: timestamp,
  })
  .meta({
    description:
      "PUT each part (bytes [(partNumber - 1) × partSizeBytes, partNumber × partSizeBytes) of the file) to its uploadUrl with exactly that Content-Length, keep each answer's ETag, then complete the upload. A failed part is sent again alone, to the same URL, until expiresAt; after that, POST /v1/uploads/{ref}/parts renews the URLs of the parts still missing.",
  });

export const uploadCompleted = z.object({ ref: uploadRef });

const liveFields = {
  jobId: z.string(),
  status: jobStatus,
  progress: z.int().min(0).max(100),
  at: timestamp,
};

export const progressMessage = z.object({ type: z.literal('progress'), ...liveFields });

export const statusMessage = z.object({
  type: z.literal('status'),
  ...liveFields,
  error: z.xor([z.null(), jobError]),
});

export const liveMessage = z.xor([progressMessage, statusMessage]).meta({
  description: `A message of the live-progress WebSocket (locally ws://127.0.0.1:$PORT${STREAM_PATH}, in AWS the stack output StreamUrl), connected with the query \`?ticket=<ticket>\` (see StreamTicket; preferred: no API key in a URL) or, kept for compatibility, \`?jobId=<id>&apiKey=<key>\` with a tenant key. A handshake with a missing, unknown or expired ticket or key is refused with 401, the admin key with 403, another tenant's or an unknown job with 404. The server sends a \`progress\` message for every provider tick (not throttled) and a \`status\` message on each status change. Clients may send any small text message (such as \`ping\`) to keep an idle connection open; the server reads nothing in it and answers nothing. Messages are best effort: the job resource is the truth.`,
});
