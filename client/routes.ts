/**
 * Every operation the SDK calls, by its OpenAPI operationId.
 * test/unit/client-contract.test.ts checks each against openapi.yaml.
 */

export type Auth = 'none' | 'tenant' | 'admin';

export interface Operation {
  readonly method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  /** `{id}` segments are path parameters. */
  readonly path: string;
  readonly auth: Auth;
  /**
   * What may be retried: `idempotent` operations on network errors, 5xx, 429
   * and 409 `idempotency-key-in-use`; `unprocessed` ones only when the server
   * certainly did nothing (429, or a connection that was refused).
   */
  readonly retry: 'idempotent' | 'unprocessed';
}

export const operations = {
  getHealth: { method: 'GET', path: '/healthz', auth: 'none', retry: 'idempotent' },
  createJob: { method: 'POST', path: '/v1/jobs', auth: 'tenant', retry: 'idempotent' },
  // Every item carries its own key: a repeated batch replays what was accepted and creates nothing twice.
  createJobBatch: { method: 'POST', path: '/v1/jobs/batch', auth: 'tenant', retry: 'idempotent' },
  // A canceled job is not matched again, so a repeated bulk cancel cancels nothing twice.
  cancelJobs: { method: 'POST', path: '/v1/jobs/cancel', auth: 'tenant', retry: 'idempotent' },
  listJobs: { method: 'GET', path: '/v1/jobs', auth: 'tenant', retry: 'idempotent' },
  getJob: { method: 'GET', path: '/v1/jobs/{id}', auth: 'tenant', retry: 'idempotent' },
  // Cancel is idempotent by contract: a canceled job is returned as it is.
  cancelJob: { method: 'POST', path: '/v1/jobs/{id}/cancel', auth: 'tenant', retry: 'idempotent' },
  getJobEvents: { method: 'GET', path: '/v1/jobs/{id}/events', auth: 'tenant', retry: 'idempotent' },
  // A second resume of a job the first resumed is refused (it is running), so only a resume certainly not made is retried.
  resumeJob: { method: 'POST', path: '/v1/jobs/{id}/resume', auth: 'tenant', retry: 'unprocessed' },
  // A repeated ticket is one more short-lived credential for the same job, nothing more.
  createStreamTicket: {
    method: 'POST',
    path: '/v1/jobs/{id}/stream-ticket',
    auth: 'tenant',
    retry: 'idempotent',
  },
  // A search reads and changes nothing: a repeated one costs one more query embedding, nothing more.
  search: { method: 'POST', path: '/v1/search', auth: 'tenant', retry: 'idempotent' },
  // A repeated ticket costs an unused presigned URL, nothing more.
  createUpload: { method: 'POST', path: '/v1/uploads', auth: 'tenant', retry: 'idempotent' },
  // A repeated start leaves an unused upload behind, which the bucket's lifecycle rule aborts.
  createMultipartUpload: {
    method: 'POST',
    path: '/v1/uploads/multipart',
    auth: 'tenant',
    retry: 'idempotent',
  },
  // A repeated renewal signs the same parts again, nothing more.
  renewMultipartUploadParts: {
    method: 'POST',
    path: '/v1/uploads/{ref}/parts',
    auth: 'tenant',
    retry: 'idempotent',
  },
  // A completed upload is gone: completing it again is refused, so only a certain no-op is retried.
  completeMultipartUpload: {
    method: 'POST',
    path: '/v1/uploads/{ref}/complete',
    auth: 'tenant',
    retry: 'unprocessed',
  },
  // Every schedule carries its Idempotency-Key: a repeated create replays the first schedule.
  createSchedule: { method: 'POST', path: '/v1/schedules', auth: 'tenant', retry: 'idempotent' },
  listSchedules: { method: 'GET', path: '/v1/schedules', auth: 'tenant', retry: 'idempotent' },
  getSchedule: { method: 'GET', path: '/v1/schedules/{id}', auth: 'tenant', retry: 'idempotent' },
  // Setting `enabled` again leaves the same schedule.
  updateSchedule: { method: 'PATCH', path: '/v1/schedules/{id}', auth: 'tenant', retry: 'idempotent' },
  // A repeated delete of a deleted schedule is a 404, which tells the caller it is gone.
  deleteSchedule: { method: 'DELETE', path: '/v1/schedules/{id}', auth: 'tenant', retry: 'idempotent' },
  // Every item carries its Idempotency-Key: a repeated create replays the first item.
  createMedia: { method: 'POST', path: '/v1/media', auth: 'tenant', retry: 'idempotent' },
  listMedia: { method: 'GET', path: '/v1/media', auth: 'tenant', retry: 'idempotent' },
  getMedia: { method: 'GET', path: '/v1/media/{id}', auth: 'tenant', retry: 'idempotent' },
  // The same change again leaves the same metadata.
  updateMedia: { method: 'PATCH', path: '/v1/media/{id}', auth: 'tenant', retry: 'idempotent' },
  // A repeated delete of a deleted item is a 404, which tells the caller it is gone.
  deleteMedia: { method: 'DELETE', path: '/v1/media/{id}', auth: 'tenant', retry: 'idempotent' },
  // Every version carries its Idempotency-Key: a repeated publish replays the first version.
  publishMediaVersion: {
    method: 'POST',
    path: '/v1/media/{id}/versions',
    auth: 'tenant',
    retry: 'idempotent',
  },
  adminListJobs: { method: 'GET', path: '/v1/admin/jobs', auth: 'admin', retry: 'idempotent' },
  adminListProviders: { method: 'GET', path: '/v1/admin/providers', auth: 'admin', retry: 'idempotent' },
  // A pause sent again ends at most its few seconds later; a resume sent again finds the provider open.
  adminPauseProvider: {
    method: 'POST',
    path: '/v1/admin/providers/{provider}/pause',
    auth: 'admin',
    retry: 'idempotent',
  },
  adminResumeProvider: {
    method: 'POST',
    path: '/v1/admin/providers/{provider}/resume',
    auth: 'admin',
    retry: 'idempotent',
  },
  adminGetTenant: { method: 'GET', path: '/v1/admin/tenants/{tenant}', auth: 'admin', retry: 'idempotent' },
  // Setting the same settings again leaves the same record.
  adminPutTenant: { method: 'PUT', path: '/v1/admin/tenants/{tenant}', auth: 'admin', retry: 'idempotent' },
  adminResolveJob: {
    method: 'POST',
    path: '/v1/admin/jobs/{id}/resolve',
    auth: 'admin',
    retry: 'unprocessed',
  },
  // Each replay's key comes from its original and the note: a repeated request replays nothing twice.
  adminReplayJobs: { method: 'POST', path: '/v1/admin/jobs/replay', auth: 'admin', retry: 'idempotent' },
  // A resumed job has left the failed listings, and a resume of a running job is refused: a repeat resumes nothing twice.
  adminResumeJobs: { method: 'POST', path: '/v1/admin/jobs/resume', auth: 'admin', retry: 'idempotent' },
  adminRedriveDeadLetters: {
    method: 'POST',
    path: '/v1/admin/dlq/redrive',
    auth: 'admin',
    retry: 'unprocessed',
  },
} as const satisfies Record<string, Operation>;

export type OperationId = keyof typeof operations;
