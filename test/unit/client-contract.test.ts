import { readFileSync } from 'node:fs';
import type * as z from 'zod';
import {
  type AdminJob,
  type BatchItem,
  type BatchItemResult,
  type CreateMediaRequest,
  type CreateVersionRequest,
  DEFAULT_PRIORITY,
  FILE_INPUT_FIELD,
  JOB_PRIORITIES,
  JOB_STATUSES,
  JOB_TYPES,
  type Job,
  type JobOf,
  type JobType,
  type ListMediaQuery,
  MAX_BATCH_ITEMS,
  type MediaItem,
  type MediaPage,
  type MediaVersion,
  operations,
  PROBLEM_CODES,
  type Problem,
  type SearchFilter,
  type SearchHit,
  type SearchRequest,
  type SearchResult,
  type Tenant,
  type TenantSettings,
  type TenantUsage,
  type TimelineEvent,
  type UpdateMediaRequest,
  type UploadTicket,
} from '../../client';
import { API_TYPES_PATH, renderApiTypes } from '../../client/scripts/api-types';
import {
  JOB_TYPES_PATH,
  JOBS_BY_TYPE_PATH,
  renderJobsByType,
  renderJobTypes,
} from '../../client/scripts/job-types';
import { JOB_TYPE_MODULES } from '../../config/job-types';
import type {
  createMediaRequest,
  createVersionRequest,
  MediaItemView,
  MediaVersionView,
  mediaPage,
  ListMediaQuery as ServerListMediaQuery,
  updateMediaRequest,
} from '../../config/media';
import type {
  SearchHit as ServerSearchHit,
  SearchResult as ServerSearchResult,
  searchFilter,
  searchRequest,
} from '../../config/search';
import { JOB_TYPE_SCHEMAS, openApiDocument } from '../../lambdas/api/openapi';
import {
  DEFAULT_PRIORITY as SERVER_DEFAULT_PRIORITY,
  JOB_PRIORITIES as SERVER_JOB_PRIORITIES,
  JOB_STATUSES as SERVER_JOB_STATUSES,
  JOB_TYPES as SERVER_JOB_TYPES,
} from '../../lambdas/domain/job';
import { MAX_BATCH_ITEMS as SERVER_MAX_BATCH_ITEMS } from '../../lambdas/domain/requests';
import type { DeepReadonly, Equals } from './support/type-assertions';

/**
 * The SDK keeps its own copy of the API's shapes (it must not depend on the
 * server's code). These tests hold the copy to the OpenAPI document; the
 * compiler holds its types to the schemas' in api-schemas.test.ts.
 */

describe('the SDK route table', () => {
  const documented = new Map(
    Object.entries(openApiDocument.paths).flatMap(([path, item]) =>
      Object.entries(item).map(([method, operation]) => [
        operation.operationId,
        {
          method: method.toUpperCase(),
          path,
          auth: operation.security.some((r) => 'adminKey' in r)
            ? 'admin'
            : operation.security.some((r) => 'apiKey' in r)
              ? 'tenant'
              : 'none',
        },
      ]),
    ),
  );
  /** Operations providers call, not clients: every one tagged `provider`. */
  const providerOperations = Object.values(openApiDocument.paths).flatMap((item) =>
    Object.values(item).flatMap((operation) =>
      operation.tags.includes('provider') ? [operation.operationId] : [],
    ),
  );

  it.each(Object.entries(operations))('calls %s as the document describes it', (operationId, operation) => {
    expect(documented.get(operationId)).toEqual({
      method: operation.method,
      path: operation.path,
      auth: operation.auth,
    });
  });

  it('covers every documented operation that clients call', () => {
    expect(providerOperations).toEqual(
      expect.arrayContaining(['receiveProviderEvent', 'receiveReplicateWebhook', 'receiveDeepgramCallback']),
    );
    const notForClients = [...providerOperations, 'getOpenApiDocument'];
    expect([...documented.keys()].filter((id) => !notForClients.includes(id)).sort()).toEqual(
      Object.keys(operations).sort(),
    );
  });
});

describe('the SDK types', () => {
  const schemas = openApiDocument.components.schemas as Record<string, any>;

  it('list the documented problem codes, job statuses, job types and priorities', () => {
    expect([...PROBLEM_CODES]).toEqual(schemas.ProblemCode.enum);
    expect([...JOB_STATUSES]).toEqual(schemas.JobStatus.enum);
    expect([...JOB_STATUSES]).toEqual([...SERVER_JOB_STATUSES]);
    expect([...JOB_TYPES]).toEqual(schemas.JobType.enum);
    expect([...JOB_TYPES]).toEqual([...SERVER_JOB_TYPES]);
    expect([...JOB_PRIORITIES]).toEqual(schemas.JobPriority.enum);
    expect([...JOB_PRIORITIES]).toEqual([...SERVER_JOB_PRIORITIES]);
    expect(DEFAULT_PRIORITY).toBe(SERVER_DEFAULT_PRIORITY);
    expect(FILE_INPUT_FIELD).toEqual(
      Object.fromEntries(JOB_TYPE_MODULES.flatMap((m) => (m.file ? [[m.name, m.file.refField]] : []))),
    );
  });

  it('name exactly the documented fields of a job, an admin job, a timeline event, an upload ticket and a tenant', () => {
    const jobFields: Record<keyof Job, true> = {
      id: true,
      type: true,
      provider: true,
      priority: true,
      status: true,
      progress: true,
      input: true,
      result: true,
      error: true,
      attempts: true,
      idempotencyKey: true,
      webhookUrl: true,
      runAt: true,
      startBy: true,
      waiting: true,
      scheduleId: true,
      createdAt: true,
      updatedAt: true,
      startedAt: true,
      finishedAt: true,
      replayOf: true,
      replacedBy: true,
      cancelRequestedAt: true,
      outputsRemoved: true,
    };
    const adminFields: Record<keyof AdminJob, true> = { ...jobFields, tenantId: true };
    const eventFields: Record<keyof TimelineEvent, true> = {
      at: true,
      type: true,
      step: true,
      attempt: true,
      detail: true,
    };
    const ticketFields: Record<keyof UploadTicket, true> = { ref: true, uploadUrl: true, expiresAt: true };
    const problemFields: Record<keyof Problem, true> = {
      type: true,
      title: true,
      status: true,
      detail: true,
      code: true,
      instance: true,
      errors: true,
    };
    const keys = (name: string) => Object.keys(schemas[name].properties).sort();
    expect(Object.keys(jobFields).sort()).toEqual(keys('Job'));
    expect(Object.keys(adminFields).sort()).toEqual(keys('AdminJob'));
    expect(Object.keys(eventFields).sort()).toEqual(keys('TimelineEvent'));
    expect(Object.keys(ticketFields).sort()).toEqual(keys('UploadTicket'));
    expect(Object.keys(problemFields).sort()).toEqual(keys('Problem'));
    const tenantFields: Record<keyof Tenant, true> = {
      tenant: true,
      weight: true,
      maxInFlight: true,
      maxQueued: true,
      usage: true,
    };
    const usageFields: Record<keyof TenantUsage, true> = { queued: true, scheduled: true, inFlight: true };
    const settingsFields: Record<keyof TenantSettings, true> = {
      weight: true,
      maxInFlight: true,
      maxQueued: true,
    };
    expect(Object.keys(tenantFields).sort()).toEqual(keys('Tenant'));
    expect(Object.keys(usageFields).sort()).toEqual(keys('TenantUsage'));
    expect(Object.keys(settingsFields).sort()).toEqual(keys('TenantSettings'));
  });

  it("name exactly the documented fields of a batch item and its answer, and the server's item limit", () => {
    const itemFields: Record<keyof BatchItem, true> = {
      idempotencyKey: true,
      type: true,
      input: true,
      webhookUrl: true,
      priority: true,
      runAt: true,
      startBy: true,
    };
    const resultFields: Record<keyof BatchItemResult, true> = {
      idempotencyKey: true,
      status: true,
      job: true,
      problem: true,
      replayed: true,
    };
    expect(Object.keys(itemFields).sort()).toEqual(Object.keys(schemas.CreateJobBatchItem.properties).sort());
    expect(Object.keys(resultFields).sort()).toEqual(
      Object.keys(schemas.CreateJobBatchItemResult.properties).sort(),
    );
    expect(MAX_BATCH_ITEMS).toBe(SERVER_MAX_BATCH_ITEMS);
    expect(schemas.CreateJobBatch.properties.items.maxItems).toBe(MAX_BATCH_ITEMS);
  });

  it('type each job by its type, from client/job-types.ts generated from the document (`npx tsx client/scripts/job-types.ts`)', () => {
    expect(readFileSync(JOB_TYPES_PATH, 'utf8')).toBe(renderJobTypes());
    expect(readFileSync(JOBS_BY_TYPE_PATH, 'utf8')).toBe(renderJobsByType());
    expect(Object.keys(JOB_TYPE_SCHEMAS).sort()).toEqual([...JOB_TYPES].sort());
    const image: JobOf<'image.generate'> = {
      id: 'job_x',
      type: 'image.generate',
      provider: 'replicate',
      priority: 'standard',
      status: 'succeeded',
      progress: 100,
      input: { prompt: 'a lighthouse', width: 512 },
      result: { outputUrl: 'https://out.test/x.png', contentType: 'image/png' },
      error: null,
      attempts: 1,
      idempotencyKey: 'k',
      runAt: 'now',
      createdAt: 'now',
      updatedAt: 'now',
    };
    // Narrowing by `type` types the result: this compiles only because it does.
    const outputOf = (job: Job) =>
      job.type === 'image.generate' ? job.result?.outputUrl : job.result?.transcriptUrl;
    expect(outputOf(image)).toBe('https://out.test/x.png');
    const types: Equals<JobOf<JobType>['type'], JobType> = true;
    expect(types).toBe(true);
  });

  it('type a search as config/search.ts does, from client/api-types.ts generated from the document (`npx tsx client/scripts/api-types.ts`)', () => {
    expect(readFileSync(API_TYPES_PATH, 'utf8')).toBe(renderApiTypes());
    // What the SDK sends is what the handler's schema takes in; what it reads, what the handler answers.
    const same: [
      Equals<SearchRequest, DeepReadonly<z.input<typeof searchRequest>>>,
      Equals<SearchFilter, DeepReadonly<z.input<typeof searchFilter>>>,
      Equals<SearchHit, DeepReadonly<ServerSearchHit>>,
      Equals<SearchResult, DeepReadonly<ServerSearchResult>>,
    ] = [true, true, true, true];
    expect(same).toEqual([true, true, true, true]);
  });

  it('type the media library as config/media.ts does, from client/api-types.ts generated from the document', () => {
    // What the SDK sends is what the handler's schemas take in; what it reads, what the handler answers.
    const same: [
      Equals<CreateMediaRequest, DeepReadonly<z.input<typeof createMediaRequest>>>,
      Equals<UpdateMediaRequest, DeepReadonly<z.input<typeof updateMediaRequest>>>,
      Equals<CreateVersionRequest, DeepReadonly<z.input<typeof createVersionRequest>>>,
      // The query's limit is coerced from its text: the SDK sends what the handler reads.
      Equals<ListMediaQuery, DeepReadonly<ServerListMediaQuery>>,
      Equals<MediaItem, DeepReadonly<MediaItemView>>,
      Equals<MediaVersion, DeepReadonly<MediaVersionView>>,
      Equals<MediaPage, DeepReadonly<z.output<typeof mediaPage>>>,
    ] = [true, true, true, true, true, true, true];
    expect(same).toEqual([true, true, true, true, true, true, true]);
  });
});
