import type * as z from 'zod';
import type {
  AdminJob,
  CancelJobsResult,
  BatchItemResult as ClientBatchItemResult,
  Job as ClientJob,
  JobError as ClientJobError,
  LiveMessage as ClientLiveMessage,
  MultipartUploadTicket as ClientMultipartUploadTicket,
  Problem as ClientProblem,
  ProviderStatus as ClientProviderStatus,
  ReplayResult as ClientReplayResult,
  Resolution as ClientResolution,
  StreamTicket as ClientStreamTicket,
  Tenant as ClientTenant,
  TenantUsage as ClientTenantUsage,
  TimelineEvent as ClientTimelineEvent,
  UploadTicket as ClientUploadTicket,
  JobStatus,
  JobType,
  ProblemCode,
} from '../../client';
import type { Problem as ServerProblem } from '../../config/problems';
import type * as api from '../../lambdas/api/schemas';
import type { BulkCancelResult, ReplayResult as ServerReplayResult } from '../../lambdas/domain/bulk';
import type {
  BatchItemResult as ServerBatchItemResult,
  UploadTicket as ServerUploadTicket,
} from '../../lambdas/domain/intake';
import type { JobResource, JobError as ServerJobError } from '../../lambdas/domain/job';
import type { MultipartUploadTicket as ServerMultipartUploadTicket } from '../../lambdas/domain/multipart-uploads';
import type {
  providerStatus,
  resolution,
  ProviderStatus as ServerProviderStatus,
} from '../../lambdas/domain/operator';
import type {
  LiveMessage as ServerLiveMessage,
  TimelineEvent as ServerTimelineEvent,
} from '../../lambdas/domain/ports';
import type { IssuedStreamTicket, issuedStreamTicket } from '../../lambdas/domain/stream-tickets';
import type { tenantUsage } from '../../lambdas/domain/tenant-settings';
import type { TenantUsage as ServerTenantUsage, TenantResource } from '../../lambdas/domain/tenants';
import type { DeepReadonly, Equals, Extends } from './support/type-assertions';

/**
 * The API's resources are written once, as the zod schemas the OpenAPI
 * document is generated from (lambdas/api/schemas.ts, and a few beside their
 * sibling schemas in lambdas/domain/, whose types are their z.infer). The
 * server's types and the SDK's public types (which must not import the
 * server's code) are held to those schemas' types here, by the compiler: a
 * field added, dropped, renamed or retyped on either side without the schema
 * fails `tsc --noEmit`.
 */

/** What the API answers with, as its schema types it. */
type Answer<S extends z.ZodType> = DeepReadonly<z.output<S>>;

/** A job's fields but the two typed by the job's type. */
type Untyped<T> = Omit<T, 'input' | 'result'>;

it('types a problem as its schema does, in the server and in the SDK', () => {
  const same: [
    Equals<ServerProblem, Answer<typeof api.problem>>,
    Equals<ClientProblem, Answer<typeof api.problem>>,
    Equals<ProblemCode, z.output<typeof api.problemCode>>,
  ] = [true, true, true];
  expect(same).toEqual([true, true, true]);
});

it('types a job as its schema does, in the server and in the SDK (which also types input and result by the type)', () => {
  const same: [
    Equals<ServerJobError, Answer<typeof api.jobError>>,
    Equals<ClientJobError, Answer<typeof api.jobError>>,
    Equals<Untyped<JobResource>, Untyped<Answer<typeof api.job>>>,
    Equals<JobResource['input'], z.output<typeof api.job>['input']>,
    Equals<JobResource['result'], z.output<typeof api.job>['result']>,
    Equals<Untyped<ClientJob>, Untyped<Answer<typeof api.job>>>,
    Equals<ClientJob['provider'], z.output<typeof api.job>['provider']>,
    Equals<keyof ClientJob, keyof z.output<typeof api.job>>,
    Extends<ClientJob, Answer<typeof api.job>>,
    Equals<keyof AdminJob, keyof z.output<typeof api.adminJob>>,
    Equals<JobType, z.output<typeof api.jobType>>,
    Equals<JobStatus, z.output<typeof api.jobStatus>>,
    Equals<ClientJob['priority'], z.output<typeof api.jobPriority>>,
  ] = [true, true, true, true, true, true, true, true, true, true, true, true, true];
  expect(same.every((assertion) => assertion)).toBe(true);
});

it("types the API's other answers as their schemas do, in the server and in the SDK", () => {
  const same: [
    Equals<ServerTimelineEvent, Answer<typeof api.timelineEvent>>,
    Equals<ClientTimelineEvent, Answer<typeof api.timelineEvent>>,
    Equals<ServerLiveMessage, Answer<typeof api.liveMessage>>,
    Equals<ClientLiveMessage, Answer<typeof api.liveMessage>>,
    Equals<TenantResource, Answer<typeof api.tenant>>,
    Equals<ClientTenant, Answer<typeof api.tenant>>,
    Equals<ServerTenantUsage, Answer<typeof tenantUsage>>,
    Equals<ClientTenantUsage, Answer<typeof tenantUsage>>,
    Equals<ServerProviderStatus, Answer<typeof providerStatus>>,
    Equals<ClientProviderStatus, Answer<typeof providerStatus>>,
    Equals<ServerUploadTicket, Answer<typeof api.uploadTicket>>,
    Equals<ClientUploadTicket, Answer<typeof api.uploadTicket>>,
    Equals<ServerMultipartUploadTicket, Answer<typeof api.multipartUploadTicket>>,
    Equals<ClientMultipartUploadTicket, Answer<typeof api.multipartUploadTicket>>,
    Equals<IssuedStreamTicket, Answer<typeof issuedStreamTicket>>,
    Equals<ClientStreamTicket, Answer<typeof issuedStreamTicket>>,
    Equals<Omit<BulkCancelResult, 'canceledJobs'>, Answer<typeof api.cancelJobsResult>>,
    Equals<CancelJobsResult, Answer<typeof api.cancelJobsResult>>,
    Equals<ServerReplayResult, Answer<typeof api.replayJobsResult>>,
    Equals<ClientReplayResult, Answer<typeof api.replayJobsResult>>,
    Equals<keyof ServerBatchItemResult, keyof z.output<typeof api.createJobBatchItemResult>>,
    Equals<keyof ClientBatchItemResult, keyof z.output<typeof api.createJobBatchItemResult>>,
    Equals<ClientResolution, DeepReadonly<z.input<typeof resolution>>>,
  ] = [
    true,
    true,
    true,
    true,
    true,
    true,
    true,
    true,
    true,
    true,
    true,
    true,
    true,
    true,
    true,
    true,
    true,
    true,
    true,
    true,
    true,
    true,
    true,
  ];
  expect(same.every((assertion) => assertion)).toBe(true);
});
