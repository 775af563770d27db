import type { APIGatewayProxyEvent, APIGatewayProxyResult, Context } from 'aws-lambda';
import type { AuthorizerContext, RouteKey } from '../../config/layout';
import { bodyLimits } from '../../config/settings';
import { ForbiddenError, JobNotFoundError, UnsupportedMediaTypeError } from '../domain/errors';
import { requireIdempotencyKey } from '../domain/idempotency';
import { cancelJob, createUpload, getJob, listJobs, submitJob } from '../domain/intake';
import { toResource } from '../domain/job';
import { parseCreateJob, parseCreateUpload, parseListJobs } from '../domain/requests';
import { inputStore, jobQueue, jobStore } from '../shared/aws';
import { runtimeSettings } from '../shared/env';
import { instrument, logger, metrics } from '../shared/observability';
import { basePath, header, json, jsonBody, mediaType, problemResult } from './http';
import { parseMultipartJob } from './multipart';
import { toProblem } from './problems';

const settings = runtimeSettings();
const policy = { allowPrivateWebhooks: settings.allowPrivateWebhooks };
const now = () => new Date();
const intake = () => ({
  store: jobStore(),
  queue: jobQueue(),
  inputs: inputStore(),
  now,
  idempotencyInProgressMs: settings.idempotencyInProgressMs,
});

type Route = (event: APIGatewayProxyEvent, tenantId: string) => Promise<APIGatewayProxyResult>;

const routes: Record<RouteKey, Route | null> = {
  'GET /healthz': null,
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
    const { job, replayed, enqueueError, markEnqueuedError } = await submitJob(intake(), command);
    logger.appendKeys({ jobId: job.id });
    if (replayed) {
      metrics.addMetric('IdempotentReplays', 'Count', 1);
      logger.info('idempotent replay');
    } else {
      metrics.addDimension('jobType', job.type);
      metrics.addMetric('JobsSubmitted', 'Count', 1);
      logger.info('job accepted', { jobType: job.type });
    }
    if (enqueueError) {
      metrics.addMetric('EnqueueFailures', 'Count', 1);
      logger.error('job stored but not enqueued; the reconciler will enqueue it', enqueueError as Error);
    }
    if (markEnqueuedError) logger.warn('job enqueued but not marked as such', markEnqueuedError as Error);
    return json(202, toResource(job), {
      location: `${basePath(event)}/v1/jobs/${job.id}`,
      ...(replayed ? { 'idempotent-replayed': 'true' } : {}),
    });
  },
  'GET /v1/jobs': async (event, tenantId) => {
    const page = await listJobs(jobStore(), tenantId, parseListJobs(event.queryStringParameters ?? {}));
    return json(200, { items: page.items.map(toResource), nextCursor: page.nextCursor });
  },
  'GET /v1/jobs/{id}': async (event, tenantId) => {
    const job = await getJob(jobStore(), tenantId, pathId(event));
    return json(200, toResource(job));
  },
  'POST /v1/jobs/{id}/cancel': async (event, tenantId) => {
    const job = await cancelJob({ store: jobStore(), now }, tenantId, pathId(event));
    logger.info('cancel requested', { jobId: job.id, status: job.status });
    return json(202, toResource(job));
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
};

function pathId(event: APIGatewayProxyEvent): string {
  const id = event.pathParameters?.id;
  if (!id) throw new JobNotFoundError('');
  return id;
}

function tenantOf(event: APIGatewayProxyEvent): string {
  const authorizer = event.requestContext.authorizer as Partial<AuthorizerContext> | null | undefined;
  if (!authorizer?.tenantId) throw new Error('Route reached without an authorizer context');
  if (authorizer.role !== 'tenant') throw new ForbiddenError('This route needs a tenant API key.');
  return authorizer.tenantId;
}

export const handler = instrument(
  'api',
  async (event: APIGatewayProxyEvent, _context: Context): Promise<APIGatewayProxyResult> => {
    const key = `${event.httpMethod} ${event.resource}` as RouteKey;
    if (key === 'GET /healthz') return json(200, { status: 'ok' });
    const route = routes[key];
    try {
      if (!route) throw new JobNotFoundError(event.path);
      const tenantId = tenantOf(event);
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
