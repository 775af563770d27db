import type { APIGatewayProxyEvent, APIGatewayProxyResult, Context } from 'aws-lambda';
import * as z from 'zod';
import {
  type AuthorizerContext,
  providerWebhookRoutes,
  type RouteKey,
  resourceEnv,
  allRoutes as routeLayout,
  STREAM_PATH,
} from '../../config/layout';
import {
  createMediaRequest,
  createVersionRequest,
  listMediaQuery,
  MEDIA_ID_PATTERN,
  MEDIA_PAGE_DEFAULT,
  updateMediaRequest,
} from '../../config/media';
import { bodyLimits, embeddingSettingsOf } from '../../config/settings';
import {
  cancelJobs,
  parseCancelJobs,
  parseReplayJobs,
  parseResumeJobs,
  replayJobs,
  resumeJobs,
} from '../domain/bulk';
import { handOnFreeSlots } from '../domain/dispatch';
import {
  ForbiddenError,
  JobNotFoundError,
  MediaNotFoundError,
  ScheduleNotFoundError,
  UnsupportedMediaTypeError,
  ValidationError,
} from '../domain/errors';
import {
  deriveJobId,
  JOB_ID_PATTERN,
  requireIdempotencyKey,
  SCHEDULE_ID_PATTERN,
} from '../domain/idempotency';
import {
  type BatchItemOutcome,
  type BatchItemResult,
  type CancelDeps,
  cancelJob,
  createUpload,
  getJob,
  jobTimeline,
  listJobs,
  submitBatch,
  submitJob,
} from '../domain/intake';
import type { Job } from '../domain/job';
import {
  createMediaItem,
  deleteMediaItem,
  getMediaItem,
  listMediaItems,
  presentMediaItem,
  startVersion,
  updateMediaItem,
} from '../domain/media-library';
import {
  createMultipartUpload,
  parseCompleteMultipart,
  parseRenewParts,
  renewPartUrls,
} from '../domain/multipart-uploads';
import { listActiveJobs, parseResolution, providerStatuses, resolveJob } from '../domain/operator';
import { presentJob } from '../domain/present';
import {
  parseProviderName,
  parseProviderPause,
  pauseProviderByHand,
  resumeProviderByHand,
} from '../domain/provider-admin';
import {
  parseBatch,
  parseCreateJob,
  parseCreateUpload,
  parseListJobs,
  parseMediaRequest,
  parseSearch,
  UPLOAD_REF_PATTERN,
} from '../domain/requests';
import { resumeJob } from '../domain/resume';
import {
  createSchedule,
  deleteSchedule,
  getSchedule,
  listSchedules,
  parseCreateSchedule,
  parseListSchedules,
  parseUpdateSchedule,
  presentSchedule,
  setScheduleEnabled,
} from '../domain/schedules';
import { search, withQuerySlot } from '../domain/search';
import { issueStreamTicket, STREAM_TICKET_TTL_SECONDS } from '../domain/stream-tickets';
import { getTenant, parseTenantChanges, parseTenantName, putTenant } from '../domain/tenants';
import { waitingOf } from '../domain/waiting-reasons';
import { runtimeSettings } from '../shared/env';
import { intakeDeps, recordSubmission } from '../shared/intake';
import { emit, instrument, logger } from '../shared/observability';
import { apiKeyStore } from '../shared/ports/api-key-store';
import { deadLetters } from '../shared/ports/dead-letters';
import { eventPublisher } from '../shared/ports/events';
import { inputStore, multipartInputs } from '../shared/ports/inputs';
import { jobStore } from '../shared/ports/job-store';
import { liveJobStore } from '../shared/ports/live-channel';
import { mediaStore } from '../shared/ports/media-store';
import { outputStore } from '../shared/ports/output-store';
import { embeddingProvider } from '../shared/ports/providers';
import { scheduleStore } from '../shared/ports/schedule-store';
import { scheduleTriggers } from '../shared/ports/schedule-triggers';
import { inFlightLimits, slotPools, waitingLines } from '../shared/ports/slots';
import { streamTickets } from '../shared/ports/stream-tickets';
import { tenantBacklogs, tenantShares, tenantStore } from '../shared/ports/tenants';
import { timeline } from '../shared/ports/timeline';
import { vectorIndex } from '../shared/ports/vector-index';
import { workflow } from '../shared/ports/workflow';
import { answerProviderWebhook } from '../shared/provider-webhooks';
import { slotFillingDeps } from '../shared/slot-filling';
import { basePath, bodyBytes, header, json, jsonBody, mediaType, problemResult } from './http';
import { parseMultipartJob } from './multipart';
import { toProblem } from './problems';

const settings = runtimeSettings();
const now = () => new Date();
const policy = {
  allowPrivateWebhooks: settings.allowPrivateWebhooks,
  scheduleMaxAheadDays: settings.scheduleMaxAheadDays,
  now,
};

/**
 * Output URLs are signed only for jobs that have outputs, so intake never
 * needs the output bucket; a stream's playlists are written signed then too.
 */
const outputUrls = {
  outputUrl: (key: string) => outputStore().outputUrl(key),
  getOutput: (key: string) => outputStore().getOutput(key),
  putOutput: (key: string, body: Uint8Array | string, contentType: string) =>
    outputStore().putOutput(key, body, contentType),
};

const intake = () => intakeDeps(inputStore);

type Route = (event: APIGatewayProxyEvent, tenantId: string) => Promise<APIGatewayProxyResult>;

const tenantRoutes: Partial<Record<RouteKey, Route>> = {
  'POST /v1/jobs': async (event, tenantId) => {
    const type = mediaType(event);
    const idempotencyKey = requireIdempotencyKey(header(event, 'idempotency-key'));
    let command: Parameters<typeof submitJob>[1];
    if (type === 'multipart/form-data') {
      command = { tenantId, idempotencyKey, ...(await parseMultipartJob(event, policy)) };
    } else if (type === 'application/json') {
      command = {
        tenantId,
        idempotencyKey,
        request: parseCreateJob(jsonBody(event, bodyLimits.jsonBytes), policy),
      };
    } else {
      throw new UnsupportedMediaTypeError(
        `Send application/json or multipart/form-data${type ? `, not ${type}` : ''}.`,
      );
    }
    const submitted = await submitJob(intake(), command);
    recordSubmission(submitted);
    const { job, replayed, markEnqueuedError } = submitted;
    if (markEnqueuedError) logger.warn('job enqueued but not marked as such', markEnqueuedError as Error);
    return json(202, await presentJob(job, outputUrls), {
      location: `${basePath(event)}/v1/jobs/${job.id}`,
      ...(replayed ? { 'idempotent-replayed': 'true' } : {}),
    });
  },
  'POST /v1/search': async (event, tenantId) => {
    const request = parseSearch(jsonBody(event, bodyLimits.jsonBytes));
    const started = Date.now();
    const embedding = embeddingSettingsOf(settings);
    const result = await search(
      {
        store: jobStore(),
        outputs: outputUrls,
        vectors: vectorIndex(),
        media: mediaStore(),
        embedQuery: async (text) => {
          const provider = await embeddingProvider();
          // The same model, dimensions and normalization as the passages, under one of the provider's slots.
          const { embeddings } = await withQuerySlot(
            slotPools()(provider.name),
            inFlightLimits()[provider.name],
            Date.now,
            () => provider.embed({ ...embedding, texts: [text], purpose: 'query' }),
            () => handOnFreeSlots(slotFillingDeps(), provider.name, 'a slot a search released'),
          );
          return embeddings[0] ?? [];
        },
      },
      tenantId,
      request,
    );
    emit('Searches', 1);
    emit('SearchLatency', Date.now() - started);
    return json(200, result);
  },
  'POST /v1/media': async (event, tenantId) => {
    const idempotencyKey = requireIdempotencyKey(header(event, 'idempotency-key'));
    const request = parseMediaRequest(createMediaRequest, jsonBody(event, bodyLimits.jsonBytes));
    const { item, replayed } = await createMediaItem(
      { media: mediaStore(), now },
      { tenantId, idempotencyKey, request },
    );
    logger.info(replayed ? 'media item replayed' : 'media item created', { mediaId: item.id });
    return json(201, await presentMediaItem(item, mediaViews()), {
      location: `${basePath(event)}/v1/media/${item.id}`,
      ...(replayed ? { 'idempotent-replayed': 'true' } : {}),
    });
  },
  'GET /v1/media': async (event, tenantId) => {
    const query = parseMediaRequest(listMediaQuery, event.queryStringParameters ?? {}, 'query');
    const page = await listMediaItems(mediaStore(), tenantId, query, MEDIA_PAGE_DEFAULT);
    return json(200, {
      items: await Promise.all(page.items.map((item) => presentMediaItem(item, mediaViews()))),
      nextCursor: page.nextCursor,
    });
  },
  'GET /v1/media/{id}': async (event, tenantId) => {
    const item = await getMediaItem(mediaStore(), tenantId, mediaIdOf(event));
    return json(200, await presentMediaItem(item, mediaViews()));
  },
  'PATCH /v1/media/{id}': async (event, tenantId) => {
    const id = mediaIdOf(event);
    const patch = parseMediaRequest(updateMediaRequest, jsonBody(event, bodyLimits.jsonBytes));
    const item = await updateMediaItem(
      {
        media: mediaStore(),
        now,
        jobs: jobStore(),
        outputs: outputUrls,
        vectors: vectorIndex(),
        events: eventPublisher(),
      },
      tenantId,
      id,
      patch,
    );
    logger.info('media item updated', { mediaId: id, fields: Object.keys(patch) });
    return json(200, await presentMediaItem(item, mediaViews()));
  },
  'DELETE /v1/media/{id}': async (event, tenantId) => {
    const id = mediaIdOf(event);
    await deleteMediaItem(
      { media: mediaStore(), now, jobs: jobStore(), cancel: cancelOf(tenantId), events: eventPublisher() },
      tenantId,
      id,
    );
    logger.info('media item deleted', { mediaId: id });
    return { statusCode: 204, headers: { 'cache-control': 'no-store' }, body: '' };
  },
  'POST /v1/media/{id}/versions': async (event, tenantId) => {
    const mediaId = mediaIdOf(event);
    const idempotencyKey = requireIdempotencyKey(header(event, 'idempotency-key'));
    const request = parseMediaRequest(createVersionRequest, jsonBody(event, bodyLimits.jsonBytes));
    const { item, job, replayed } = await startVersion(
      {
        media: mediaStore(),
        now,
        jobs: jobStore(),
        events: eventPublisher(),
        submit: async ({ idempotencyKey: key, input, media }) => {
          const submitted = await submitJob(intake(), {
            tenantId,
            idempotencyKey: key,
            request: parseCreateJob({ type: 'audio.publish', input }, policy),
            media,
          });
          recordSubmission(submitted);
          return submitted;
        },
      },
      { tenantId, mediaId, idempotencyKey, request, jobIdOf: (key) => deriveJobId(tenantId, key) },
    );
    logger.info(replayed ? 'media version replayed' : 'media version started', {
      mediaId,
      jobId: job.id,
      version: job.media?.version,
    });
    return json(202, await presentMediaItem(item, mediaViews()), {
      location: `${basePath(event)}/v1/jobs/${job.id}`,
      ...(replayed ? { 'idempotent-replayed': 'true' } : {}),
    });
  },
  'POST /v1/jobs/batch': async (event, tenantId) => {
    const items = parseBatch(jsonBody(event, bodyLimits.jsonBytes), policy);
    const outcomes = await submitBatch(intake(), { tenantId, entries: items.map((item) => item.entry) });
    const results = await Promise.all(
      outcomes.map((outcome, index) => batchItemResult(items[index]?.idempotencyKey ?? null, outcome)),
    );
    const count = (test: (result: BatchItemResult) => boolean) => results.filter(test).length;
    const accepted = results.filter((result) => result.job && !result.replayed);
    for (const [jobType, jobs] of Object.entries(
      Object.groupBy(accepted, (result) => result.job?.type ?? ''),
    )) {
      emit('JobsSubmitted', jobs?.length ?? 0, { jobType });
    }
    const replayed = count((result) => result.replayed);
    if (replayed > 0) emit('IdempotentReplays', replayed);
    const notEnqueued = outcomes.filter((outcome) => 'result' in outcome && outcome.result.enqueueError);
    if (notEnqueued.length > 0) {
      emit('EnqueueFailures', notEnqueued.length);
      logger.error('jobs stored but not enqueued; the reconciler will enqueue them', {
        jobs: notEnqueued.length,
      });
    }
    logger.info('batch accepted', {
      items: results.length,
      accepted: accepted.length,
      replayed,
      refused: count((result) => result.problem !== undefined),
    });
    return json(200, { items: results });
  },
  'GET /v1/jobs': async (event, tenantId) => {
    const page = await listJobs(jobStore(), tenantId, parseListJobs(event.queryStringParameters ?? {}));
    return json(200, {
      items: await Promise.all(page.items.map((job) => presentJob(job, outputUrls))),
      nextCursor: page.nextCursor,
    });
  },
  'GET /v1/jobs/{id}': async (event, tenantId) => {
    const job = await getJob(jobStore(), tenantId, pathId(event));
    // Why a queued job waits costs a read of its provider's pool and one of its line's head: said here,
    // where one job is asked for, and left out of listings.
    const waiting = await waitingOf(
      {
        slots: slotPools(),
        maxInFlight: inFlightLimits(),
        tenantShares: tenantShares(),
        waiting: waitingLines(),
        now,
      },
      job,
    );
    const resource = await presentJob(job, outputUrls);
    return json(200, waiting ? { ...resource, waiting } : resource);
  },
  'GET /v1/jobs/{id}/events': async (event, tenantId) => {
    const job = await getJob(jobStore(), tenantId, pathId(event));
    return json(200, { items: await jobTimeline(timeline(), workflow(), job, now()) });
  },
  'POST /v1/jobs/{id}/cancel': async (event, tenantId) => {
    const job = await canceling((deps) => cancelJob(deps, tenantId, pathId(event)));
    logger.info('cancel requested', { jobId: job.id, status: job.status });
    return json(202, await presentJob(job, outputUrls));
  },
  'POST /v1/jobs/{id}/resume': async (event, tenantId) => {
    const job = await resumeJob(
      { store: liveJobStore(), workflow: workflow(), timeline: timeline(), now },
      tenantId,
      pathId(event),
    );
    logger.info('resumed', { jobId: job.id, resumes: job.resumes });
    return json(202, await presentJob(job, outputUrls));
  },
  'POST /v1/jobs/cancel': async (event, tenantId) => {
    const request = parseCancelJobs(jsonBody(event, bodyLimits.jsonBytes));
    const { canceledJobs: _counted, ...result } = await canceling((deps) =>
      cancelJobs(deps, tenantId, request, settings.bulkMaxPerRequest),
    );
    logger.info('bulk cancel', { filter: request.filter, dryRun: request.dryRun ?? false, ...result });
    return json(200, result);
  },
  'POST /v1/jobs/{id}/stream-ticket': async (event, tenantId) => {
    const job = await getJob(jobStore(), tenantId, pathId(event));
    const ticket = await issueStreamTicket(
      { tickets: streamTickets(), now },
      { tenantId, jobId: job.id, streamUrl: streamUrlFor(event) },
      STREAM_TICKET_TTL_SECONDS,
    );
    return json(201, ticket, { 'cache-control': 'no-store' });
  },
  'POST /v1/uploads/multipart': async (event, tenantId) => {
    const upload = parseCreateUpload(jsonBody(event, bodyLimits.jsonBytes), settings.maxUploadBytes);
    const ticket = await createMultipartUpload(
      { inputs: multipartInputs(), now },
      tenantId,
      upload,
      settings.uploadUrlTtlSeconds,
    );
    return json(201, ticket);
  },
  'POST /v1/uploads/{ref}/parts': async (event, tenantId) => {
    const ref = pathRef(event);
    const request = parseRenewParts(jsonBody(event, bodyLimits.jsonBytes), settings.maxUploadBytes);
    const ticket = await renewPartUrls(
      { inputs: multipartInputs(), now },
      tenantId,
      ref,
      request,
      settings.uploadUrlTtlSeconds,
    );
    return json(200, ticket);
  },
  'POST /v1/uploads/{ref}/complete': async (event, tenantId) => {
    const ref = pathRef(event);
    const request = parseCompleteMultipart(jsonBody(event, bodyLimits.jsonBytes));
    await multipartInputs().completeMultipart(tenantId, ref, request.uploadId, request.parts);
    return json(200, { ref });
  },
  'POST /v1/uploads': async (event, tenantId) => {
    const upload = parseCreateUpload(jsonBody(event, bodyLimits.jsonBytes), settings.maxUploadBytes);
    const ticket = await createUpload(
      { inputs: inputStore(), now },
      tenantId,
      upload,
      settings.uploadUrlTtlSeconds,
    );
    return json(201, ticket);
  },
  'POST /v1/schedules': async (event, tenantId) => {
    const idempotencyKey = requireIdempotencyKey(header(event, 'idempotency-key'));
    const request = parseCreateSchedule(jsonBody(event, bodyLimits.jsonBytes), policy, now());
    const { schedule, replayed } = await createSchedule(schedules(), { tenantId, idempotencyKey, request });
    logger.info(replayed ? 'schedule replayed' : 'schedule created', { scheduleId: schedule.id });
    return json(201, presentSchedule(schedule, now()), {
      location: `${basePath(event)}/v1/schedules/${schedule.id}`,
      ...(replayed ? { 'idempotent-replayed': 'true' } : {}),
    });
  },
  'GET /v1/schedules': async (event, tenantId) => {
    const page = await listSchedules(
      scheduleStore(),
      tenantId,
      parseListSchedules(event.queryStringParameters ?? {}),
    );
    const at = now();
    return json(200, {
      items: page.items.map((schedule) => presentSchedule(schedule, at)),
      nextCursor: page.nextCursor,
    });
  },
  'GET /v1/schedules/{id}': async (event, tenantId) =>
    json(200, presentSchedule(await getSchedule(scheduleStore(), tenantId, scheduleIdOf(event)), now())),
  'PATCH /v1/schedules/{id}': async (event, tenantId) => {
    const id = scheduleIdOf(event);
    const { enabled } = parseUpdateSchedule(jsonBody(event, bodyLimits.jsonBytes));
    const schedule = await setScheduleEnabled(schedules(), tenantId, id, enabled);
    logger.info(enabled ? 'schedule enabled' : 'schedule disabled', { scheduleId: id });
    return json(200, presentSchedule(schedule, now()));
  },
  'DELETE /v1/schedules/{id}': async (event, tenantId) => {
    const id = scheduleIdOf(event);
    await deleteSchedule(schedules(), tenantId, id);
    logger.info('schedule deleted', { scheduleId: id });
    return { statusCode: 204, headers: { 'cache-control': 'no-store' }, body: '' };
  },
};

/** What a media item's view reads: its versions' jobs, their streams served. */
const mediaViews = () => ({ jobs: jobStore(), outputs: outputUrls });

/**
 * Runs a cancel with what it needs, then counts JobsCanceled: one per job it
 * moved to `canceled`, children included, by job type. A repeated cancel
 * moves none, so it counts none.
 */
async function canceling<T>(cancel: (deps: CancelDeps) => Promise<T>): Promise<T> {
  const canceled: Job[] = [];
  try {
    return await cancel({
      store: liveJobStore(),
      workflow: workflow(),
      timeline: timeline(),
      events: eventPublisher(),
      now,
      canceled: (job) => canceled.push(job),
    });
  } finally {
    for (const [jobType, jobs] of Object.entries(Object.groupBy(canceled, (job) => job.type))) {
      emit('JobsCanceled', jobs?.length ?? 0, { jobType });
    }
  }
}

/** Cancels a job of the tenant and what it made, as `POST /v1/jobs/{id}/cancel` does. */
const cancelOf = (tenantId: string) => async (jobId: string) => {
  await canceling((deps) => cancelJob(deps, tenantId, jobId));
};

/** The `{id}` of a media item's path; anything that cannot be one is a missing item. */
function mediaIdOf(event: APIGatewayProxyEvent): string {
  const id = event.pathParameters?.id;
  if (!id || !MEDIA_ID_PATTERN.test(id)) throw new MediaNotFoundError(id && id.length <= 64 ? id : '');
  return id;
}

/** The schedules' ports: their items and the triggers that fire them. */
const schedules = () => ({ schedules: scheduleStore(), triggers: scheduleTriggers(), now });

/** The `{id}` of a schedule's path; anything that cannot be a schedule id is a missing schedule. */
function scheduleIdOf(event: APIGatewayProxyEvent): string {
  const id = event.pathParameters?.id;
  if (!id || !SCHEDULE_ID_PATTERN.test(id)) throw new ScheduleNotFoundError(id && id.length <= 64 ? id : '');
  return id;
}

/** An item's outcome as a single POST /v1/jobs would have answered it: the job with 202, or its problem. */
async function batchItemResult(
  idempotencyKey: string | null,
  outcome: BatchItemOutcome,
): Promise<BatchItemResult> {
  if ('result' in outcome) {
    const { job, replayed } = outcome.result;
    return { idempotencyKey, status: 202, job: await presentJob(job, outputUrls), replayed };
  }
  const mapped = toProblem(outcome.error);
  if (!mapped.clientError) logger.error('batch item failed', outcome.error as Error);
  return { idempotencyKey, status: mapped.problem.status, problem: mapped.problem, replayed: false };
}

/** What a provider's status is read from, and where its pauses by hand are told. */
const providerAdmin = () => ({
  store: jobStore(),
  slots: slotPools(),
  maxInFlight: inFlightLimits(),
  events: eventPublisher(),
  providerPause: { baseSeconds: settings.providerPauseSeconds, maxSeconds: settings.providerPauseMaxSeconds },
  now,
});

/** Tenants' settings, and which names are tenants': those that API keys carry. */
const tenants = () => ({ tenants: tenantStore(), keys: apiKeyStore(), now });

const adminListQuery = z.strictObject({
  status: z.enum(['queued', 'running', 'needs_review']).default('needs_review'),
  limit: z.coerce.number().int().min(1).max(100).default(50),
  cursor: z.string().min(1).max(2048).optional(),
});

/** Routes for the operator's admin key. */
const adminRoutes: Partial<
  Record<RouteKey, (event: APIGatewayProxyEvent) => Promise<APIGatewayProxyResult>>
> = {
  'GET /v1/admin/jobs': async (event) => {
    const query = adminListQuery.safeParse(event.queryStringParameters ?? {});
    if (!query.success) {
      throw new ValidationError(
        'The request query is invalid.',
        query.error.issues.map((issue) => ({
          parameter: issue.path.join('.') || '(query)',
          detail: issue.message,
        })),
      );
    }
    const page = await listActiveJobs(jobStore(), query.data.status, {
      limit: query.data.limit,
      ...(query.data.cursor ? { cursor: query.data.cursor } : {}),
    });
    return json(200, {
      items: await Promise.all(
        page.items.map(async (job) => ({ ...(await presentJob(job, outputUrls)), tenantId: job.tenantId })),
      ),
      nextCursor: page.nextCursor,
    });
  },
  'GET /v1/admin/providers': async () => json(200, { items: await providerStatuses(providerAdmin()) }),
  'POST /v1/admin/providers/{provider}/pause': async (event) => {
    const provider = parseProviderName(event.pathParameters?.provider);
    const request = parseProviderPause(jsonBody(event, bodyLimits.jsonBytes));
    const status = await pauseProviderByHand(providerAdmin(), provider, request);
    logger.info('provider paused by an operator', {
      provider,
      seconds: request.seconds,
      reason: request.reason,
      pausedUntil: status.pausedUntil,
    });
    return json(200, status);
  },
  'POST /v1/admin/providers/{provider}/resume': async (event) => {
    const provider = parseProviderName(event.pathParameters?.provider);
    const status = await resumeProviderByHand({ ...providerAdmin(), ...slotFillingDeps() }, provider);
    logger.info('provider resumed by an operator', { provider });
    return json(200, status);
  },
  'GET /v1/admin/tenants/{tenant}': async (event) =>
    json(200, await getTenant(tenants(), event.pathParameters?.tenant)),
  'PUT /v1/admin/tenants/{tenant}': async (event) => {
    const name = parseTenantName(event.pathParameters?.tenant);
    const changes = parseTenantChanges(jsonBody(event, bodyLimits.jsonBytes));
    const tenant = await putTenant(tenants(), name, changes);
    logger.info('tenant settings set by an operator', { tenant: tenant.tenant, changes });
    return json(200, tenant);
  },
  'POST /v1/admin/jobs/{id}/resolve': async (event) => {
    const resolution = parseResolution(jsonBody(event, bodyLimits.jsonBytes));
    const job = await resolveJob(
      {
        ...slotFillingDeps(),
        events: eventPublisher(),
        media: mediaStore(),
        outputs: outputStore(),
        vectors: vectorIndex(),
        mediaGraceSeconds: settings.mediaGraceSeconds,
      },
      pathId(event),
      resolution,
    );
    logger.info('job resolved by an operator', { jobId: job.id, outcome: resolution.outcome });
    emit('JobsResolved', 1, { outcome: resolution.outcome });
    return json(200, await presentJob(job, outputUrls));
  },
  'POST /v1/admin/jobs/replay': async (event) => {
    const request = parseReplayJobs(jsonBody(event, bodyLimits.jsonBytes));
    const result = await replayJobs(
      { ...intake(), timeline: timeline() },
      request,
      settings.replayMaxPerRequest,
    );
    logger.info('jobs replayed by an operator', {
      filter: request.filter,
      dryRun: request.dryRun ?? false,
      note: request.note,
      matched: result.matched,
      replayed: result.replayed,
      alreadyReplayed: result.alreadyReplayed,
      refused: result.refused.length,
    });
    return json(200, result);
  },
  'POST /v1/admin/jobs/resume': async (event) => {
    const request = parseResumeJobs(jsonBody(event, bodyLimits.jsonBytes));
    const result = await resumeJobs(
      { store: liveJobStore(), workflow: workflow(), timeline: timeline(), backlogs: tenantBacklogs(), now },
      request,
      settings.replayMaxPerRequest,
    );
    logger.info('jobs resumed by an operator', {
      filter: request.filter,
      dryRun: request.dryRun ?? false,
      note: request.note,
      matched: result.matched,
      resumed: result.resumed,
      refused: result.refused.length,
    });
    return json(200, result);
  },
  'POST /v1/admin/dlq/redrive': async () => {
    const { taskHandle } = await deadLetters().redrive();
    logger.info('dead-letter redrive started');
    return json(202, { taskHandle });
  },
};

/** Routes the gateway does not authenticate: public, or checked here. */
const openRoutes: Partial<Record<RouteKey, (event: APIGatewayProxyEvent) => Promise<APIGatewayProxyResult>>> =
  {
    'GET /healthz': async () => json(200, { status: 'ok' }),
    // Loaded on the first request for it, not at every cold start: building the document converts
    // every request schema to JSON Schema, the largest part of this function's module init.
    'GET /openapi.json': async () =>
      json(200, (await import('./openapi.js')).openApiDocument, { 'cache-control': 'public, max-age=300' }),
    ...Object.fromEntries(
      providerWebhookRoutes.map((route) => [
        `${route.method} ${route.path}`,
        (event: APIGatewayProxyEvent) =>
          answerProviderWebhook(
            route.provider,
            {
              headers: Object.fromEntries(
                Object.entries(event.headers ?? {}).map(([name, value]) => [name.toLowerCase(), value]),
              ),
              query: event.queryStringParameters ?? {},
              body: bodyBytes(event),
            },
            event.requestContext.requestId,
          ),
      ]),
    ),
  };

const authOf = new Map<string, string>(
  routeLayout.map((route) => [`${route.method} ${route.path}`, route.auth]),
);

/**
 * Where clients connect for live progress: the WebSocket API's own URL in AWS;
 * locally, the gateway's host, which serves the WebSocket too.
 */
const configuredStreamUrl = process.env[resourceEnv.streamUrl];
function streamUrlFor(event: APIGatewayProxyEvent): string {
  if (configuredStreamUrl) return configuredStreamUrl;
  const host = header(event, 'host') ?? '127.0.0.1';
  const secure = header(event, 'x-forwarded-proto') === 'https';
  return `${secure ? 'wss' : 'ws'}://${host}${basePath(event)}${STREAM_PATH}`;
}

/** The `{id}` of the path; anything that cannot be a job id is a missing job, and never reaches the store. */
function pathId(event: APIGatewayProxyEvent): string {
  const id = event.pathParameters?.id;
  if (!id || !JOB_ID_PATTERN.test(id)) throw new JobNotFoundError(id && id.length <= 64 ? id : '');
  return id;
}

/** The `{ref}` of an upload's path. */
function pathRef(event: APIGatewayProxyEvent): string {
  const ref = event.pathParameters?.ref;
  if (!ref || !UPLOAD_REF_PATTERN.test(ref)) {
    throw new ValidationError('The upload ref is invalid.', [
      { parameter: 'ref', detail: 'must be a ref returned by POST /v1/uploads/multipart' },
    ]);
  }
  return ref;
}

/** The caller as the authorizer established it; the route decides which role it needs. */
function callerOf(event: APIGatewayProxyEvent, role: 'tenant' | 'admin'): string {
  const authorizer = event.requestContext.authorizer as Partial<AuthorizerContext> | null | undefined;
  if (!authorizer?.tenantId) throw new Error('Route reached without an authorizer context');
  if (authorizer.role !== role)
    throw new ForbiddenError(`This route needs ${role === 'admin' ? 'the admin' : 'a tenant'} API key.`);
  return authorizer.tenantId;
}

export const handler = instrument(
  async (event: APIGatewayProxyEvent, _context: Context): Promise<APIGatewayProxyResult> => {
    const key = `${event.httpMethod} ${event.resource}` as RouteKey;
    try {
      const auth = authOf.get(key);
      const open = openRoutes[key];
      if (open && auth === 'none') return await open(event);
      const admin = adminRoutes[key];
      if (admin && auth === 'admin') {
        callerOf(event, 'admin');
        logger.appendKeys({ route: key, role: 'admin' });
        return await admin(event);
      }
      const route = tenantRoutes[key];
      if (!route || auth !== 'tenant') throw new JobNotFoundError(event.path);
      const tenantId = callerOf(event, 'tenant');
      logger.appendKeys({ tenantId, route: key });
      return await route(event, tenantId);
    } catch (error) {
      const mapped = toProblem(error);
      if (mapped.clientError) logger.info('request refused', { code: mapped.problem.code });
      else logger.error('request failed', error as Error);
      return problemResult(
        { ...mapped.problem, instance: `urn:longhaul:request:${event.requestContext.requestId}` },
        mapped.headers,
      );
    }
  },
);
