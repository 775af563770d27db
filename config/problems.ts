/**
 * RFC 9457 problem details shared by the handlers, the API Gateway gateway
 * responses (which never reach a handler) and the local gateway.
 */

/**
 * Every problem the API answers, by code, with the status it is answered with
 * and its title. The title names the kind of problem, not the occurrence (RFC
 * 9457, section 3.1.3), so it is the same wherever the problem is made: in a
 * handler, in a gateway response, in the local gateway; `detail` says what
 * happened this time.
 */
export const problems = {
  'idempotency-key-missing': { status: 400, title: 'Idempotency-Key Missing' },
  'validation-failed': { status: 400, title: 'Validation Failed' },
  unauthorized: { status: 401, title: 'Unauthorized' },
  forbidden: { status: 403, title: 'Forbidden' },
  'not-found': { status: 404, title: 'Not Found' },
  'idempotency-key-in-use': { status: 409, title: 'Idempotency-Key In Use' },
  'job-already-finished': { status: 409, title: 'Job Already Finished' },
  'job-not-in-review': { status: 409, title: 'Job Not In Review' },
  'job-not-resumable': { status: 409, title: 'Job Not Resumable' },
  'payload-too-large': { status: 413, title: 'Payload Too Large' },
  'unsupported-media-type': { status: 415, title: 'Unsupported Media Type' },
  'idempotency-key-reused': { status: 422, title: 'Idempotency-Key Reused' },
  'rate-limited': { status: 429, title: 'Too Many Requests' },
  'tenant-queue-full': { status: 429, title: 'Tenant Queue Full' },
  'internal-error': { status: 500, title: 'Internal Server Error' },
  'service-unavailable': { status: 504, title: 'Gateway Timeout' },
} as const satisfies Record<string, { readonly status: number; readonly title: string }>;

export type ProblemCode = keyof typeof problems;

/** Every problem code, in the table's order. */
export const PROBLEM_CODES = Object.keys(problems) as ProblemCode[];

export const PROBLEM_CONTENT_TYPE = 'application/problem+json';

/** The problem's `type` URI: stable per code, so clients can switch on either. */
export const problemType = (code: ProblemCode): string => `urn:longhaul:problem:${code}`;

/**
 * The body of every error answer. Written here by hand, not as the type of
 * its schema (\`problem\` in lambdas/domain/resources.ts), which config/ cannot
 * import; test/unit/api-schemas.test.ts holds the two equal.
 */
export interface Problem {
  readonly type: string;
  readonly title: string;
  readonly status: number;
  readonly detail: string;
  readonly code: ProblemCode;
  /** URI of this occurrence: the request id, to quote when asking for support. */
  readonly instance?: string;
  readonly errors?: readonly {
    readonly pointer?: string;
    readonly parameter?: string;
    readonly detail: string;
  }[];
}

/** The problem `code` names, with its status and title from the table and this occurrence's `detail`. */
export function problem(code: ProblemCode, detail: string, errors?: Problem['errors']): Problem {
  const { status, title } = problems[code];
  return { type: problemType(code), title, status, detail, code, ...(errors ? { errors } : {}) };
}

/** How long a throttled client should wait before retrying, in seconds. */
export const RATE_LIMIT_RETRY_AFTER_SECONDS = 1;

/**
 * Answers the gateway gives on its own, keyed by API Gateway response type,
 * each the problem of its code (MISSING_AUTHENTICATION_TOKEN, API Gateway's
 * answer to an unknown route, is a 404 here). Every type has its own entry, so
 * the DEFAULT_4XX and DEFAULT_5XX bodies only stand for what has no type: in
 * AWS, a function error, which API Gateway answers with 502 whatever the
 * body says, so DEFAULT_5XX's body says 502 too. The REST API installs them as
 * gateway responses; the local gateway sends the same bodies with their status.
 */
export const gatewayProblems = {
  UNAUTHORIZED: problem('unauthorized', 'A valid X-API-Key header is required.'),
  ACCESS_DENIED: problem('forbidden', 'This API key may not call this route.'),
  INVALID_API_KEY: problem('forbidden', 'This API key is not enabled for this API.'),
  BAD_REQUEST_BODY: problem('validation-failed', 'The request body is invalid.'),
  BAD_REQUEST_PARAMETERS: problem('validation-failed', 'The request parameters are invalid.'),
  INTEGRATION_TIMEOUT: problem('service-unavailable', 'The service took too long; retry later.'),
  MISSING_AUTHENTICATION_TOKEN: problem('not-found', 'No such route.'),
  REQUEST_TOO_LARGE: problem('payload-too-large', 'The request body is too large.'),
  UNSUPPORTED_MEDIA_TYPE: problem('unsupported-media-type', 'Send application/json or multipart/form-data.'),
  THROTTLED: problem('rate-limited', 'Request rate limit exceeded; retry later.'),
  QUOTA_EXCEEDED: problem('rate-limited', 'Request quota exceeded; retry later.'),
  RESOURCE_NOT_FOUND: problem('not-found', 'No such resource.'),
  WAF_FILTERED: problem('forbidden', 'The request was refused by a firewall rule.'),
  EXPIRED_TOKEN: problem('forbidden', 'The request signature has expired.'),
  INVALID_SIGNATURE: problem('forbidden', 'The request signature is invalid.'),
  AUTHORIZER_FAILURE: problem('internal-error', 'The API key could not be checked; retry later.'),
  AUTHORIZER_CONFIGURATION_ERROR: problem('internal-error', 'The API key could not be checked; retry later.'),
  API_CONFIGURATION_ERROR: problem('internal-error', 'The service is misconfigured; retry later.'),
  INTEGRATION_FAILURE: problem('service-unavailable', 'The service could not be reached; retry later.'),
  DEFAULT_4XX: problem('validation-failed', 'The request could not be accepted.'),
  DEFAULT_5XX: { ...problem('internal-error', 'The service failed to answer; retry later.'), status: 502 },
} as const satisfies Record<string, Problem>;

export type GatewayResponseType = keyof typeof gatewayProblems;
