/** The Longhaul SDK: `new Longhaul({ baseUrl, apiKey })`. */
export {
  LonghaulConnectionError,
  LonghaulError,
  type LonghaulErrorCode,
  LonghaulUsageError,
  type UnexpectedResponse,
} from './errors';
export {
  type CreatedJob,
  type ListQuery,
  Longhaul,
  type LonghaulOptions,
  MULTIPART_FILE_LIMIT_BYTES,
  type RequestOptions,
  type ReviewQuery,
  UserAction,
} from './longhaul';
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
export type { ProgressUpdate, WaitOptions, WebSocketConstructor, WebSocketLike } from './wait';
