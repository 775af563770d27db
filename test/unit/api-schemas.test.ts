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
  TenantSettings as ClientTenantSettings,
  TenantUsage as ClientTenantUsage,
  TimelineEvent as ClientTimelineEvent,
  UploadTicket as ClientUploadTicket,
  JobStatus,
  JobType,
  ProblemCode,
} from '../../client';
import type { Problem as ServerProblem } from '../../config/problems';
import type * as api from '../../lambdas/api/schemas';
import type {
  providerStatus,
  resolution,
  ProviderStatus as ServerProviderStatus,
} from '../../lambdas/domain/operator';
import type { IssuedStreamTicket, issuedStreamTicket } from '../../lambdas/domain/stream-tickets';
import type { tenantChanges, tenantUsage } from '../../lambdas/domain/tenant-settings';
import type { TenantUsage as ServerTenantUsage } from '../../lambdas/domain/tenants';
import type { DeepReadonly, Equals, Extends } from './support/type-assertions';

/**
 * The API's resources are written once, as the zod schemas the OpenAPI
 * document is generated from (lambdas/domain/resources.ts, and a few beside
 * their sibling schemas in lambdas/domain/), and the server's types of them
 * are mostly their z.output types. The SDK's public types, which must not
 * import the server's code, restate them: they, and the server's types not
 * written as their schema's type, are held to the schemas' types here, by the
 * compiler: a field added, dropped, renamed or retyped without the schema
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

it('types a job as its schema does in the SDK (which also types input and result by the type)', () => {
  const same: [
    Equals<ClientJobError, Answer<typeof api.jobError>>,
    Equals<Untyped<ClientJob>, Untyped<Answer<typeof api.job>>>,
    Equals<ClientJob['provider'], z.output<typeof api.job>['provider']>,
    Equals<keyof ClientJob, keyof z.output<typeof api.job>>,
    Extends<ClientJob, Answer<typeof api.job>>,
    Equals<keyof AdminJob, keyof z.output<typeof api.adminJob>>,
    Equals<JobType, z.output<typeof api.jobType>>,
    Equals<JobStatus, z.output<typeof api.jobStatus>>,
    Equals<ClientJob['priority'], z.output<typeof api.jobPriority>>,
  ] = [true, true, true, true, true, true, true, true, true];
  expect(same.every((assertion) => assertion)).toBe(true);
});

it("types the API's other answers as their schemas do, in the SDK and in the server's types written otherwise", () => {
  const same: [
    Equals<ClientTimelineEvent, Answer<typeof api.timelineEvent>>,
    Equals<ClientLiveMessage, Answer<typeof api.liveMessage>>,
    Equals<ClientTenant, Answer<typeof api.tenant>>,
    Equals<ServerTenantUsage, Answer<typeof tenantUsage>>,
    Equals<ClientTenantUsage, Answer<typeof tenantUsage>>,
    Equals<ServerProviderStatus, Answer<typeof providerStatus>>,
    Equals<ClientProviderStatus, Answer<typeof providerStatus>>,
    Equals<ClientUploadTicket, Answer<typeof api.uploadTicket>>,
    Equals<ClientMultipartUploadTicket, Answer<typeof api.multipartUploadTicket>>,
    Equals<IssuedStreamTicket, Answer<typeof issuedStreamTicket>>,
    Equals<ClientStreamTicket, Answer<typeof issuedStreamTicket>>,
    Equals<CancelJobsResult, Answer<typeof api.cancelJobsResult>>,
    Equals<ClientReplayResult, Answer<typeof api.replayJobsResult>>,
    Equals<keyof ClientBatchItemResult, keyof z.output<typeof api.createJobBatchItemResult>>,
    // A batch item's answer, its job narrowed by type as the SDK's job is.
    Extends<ClientBatchItemResult, Answer<typeof api.createJobBatchItemResult>>,
    Equals<ClientResolution, DeepReadonly<z.input<typeof resolution>>>,
    // What PUT /v1/admin/tenants/{tenant} takes, as the handler parses it.
    Equals<ClientTenantSettings, Readonly<z.output<typeof tenantChanges>>>,
  ] = [true, true, true, true, true, true, true, true, true, true, true, true, true, true, true, true, true];
  expect(same.every((assertion) => assertion)).toBe(true);
});
