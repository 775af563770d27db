/** The Longhaul SDK: `new Longhaul({ baseUrl, apiKey })`. */
export {
  AuthenticationError,
  type ClientProblem,
  ConflictError,
  InternalServerError,
  LonghaulAPIError,
  LonghaulConnectionError,
  LonghaulError,
  type LonghaulErrorCode,
  type LonghaulOptionName,
  type LonghaulProblem,
  LonghaulTimeoutError,
  LonghaulUsageError,
  LonghaulUserAbortError,
  LonghaulWebhookError,
  NotFoundError,
  PermissionDeniedError,
  RateLimitError,
  type UnexpectedResponse,
  ValidationError,
} from './errors';
export * from './jobs-by-type';
export {
  type CreatedJob,
  type CreatedMedia,
  type IdempotentOptions,
  type ListQuery,
  Longhaul,
  type LonghaulLogger,
  type LonghaulOptions,
  MULTIPART_FILE_LIMIT_BYTES,
  MULTIPART_UPLOAD_THRESHOLD_BYTES,
  type PublishedVersion,
  type RequestOptions,
  type ReviewQuery,
  type UploadOptions,
  UserAction,
  type VersionSource,
} from './longhaul';
export { PagedList } from './pagination';
export {
  backoffCeilingMs,
  backoffDelayMs,
  defaultRetryOptions,
  parseRetryAfter,
  type RetryOptions,
  retryDelayMs,
} from './retry';
export { type Operation, type OperationId, operations } from './routes';
export * from './types';
export { SDK_VERSION } from './version';
export type {
  OutageUpdate,
  ProgressUpdate,
  RestoredUpdate,
  SettledUpdate,
  StreamUpdate,
  WaitOptions,
  WaitUpdate,
  WatchUpdate,
  WebSocketConstructor,
  WebSocketLike,
} from './wait';
export {
  EVENT_ID_HEADER,
  generateTestHeaderString,
  SIGNATURE_HEADER,
  signTestWebhook,
  type TestWebhookOptions,
  type VerifyOptions,
  verify as verifyWebhook,
  verifyAsync as verifyWebhookAsync,
  type WebhookEvent,
  type WebhookHeaders,
  webhooks,
} from './webhooks';
