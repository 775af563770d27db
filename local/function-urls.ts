import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { APIGatewayProxyEventV2, Context } from 'aws-lambda';
import { discardRest, isHttpStatus, readBody, TOO_LARGE } from './gateway/body';
import { InvocationTimeoutError, invoke, type LocalFunction, localFunctionName } from './lambda';
import { isLambdaServiceError, SYNC_REQUEST_PAYLOAD_BYTES } from './lambda-service';
import type { FunctionUrlFacts } from './template';

/**
 * Lambda function URLs as the template declares them (`AWS::Lambda::Url`),
 * each served on the gateway's port under a path prefix of its own
 * (`/lambda-url/<function>/`), where AWS gives it a host of its own. What
 * follows the prefix is the request's path, as the function sees it.
 *
 * As Lambda does: the event is payload format 2.0 (`rawPath`,
 * `rawQueryString`, headers in lower case with repeated values joined by
 * commas, cookies apart, a body that is not text base64-encoded); an event
 * over the synchronous 6 MB limit is refused before the function runs (413);
 * the answer is the function's `{statusCode, headers, body, isBase64Encoded,
 * cookies}`, or any other value as a 200 JSON body; a failed, timed-out or
 * throttled invocation is Lambda's own answer, never the function's. Auth
 * type `AWS_IAM` (SigV4) and response streaming are not emulated: such a
 * URL refuses every request. Requests here are not the REST API's: they are
 * neither counted as its requests nor throttled by its stage.
 */

export const FUNCTION_URL_PREFIX = '/lambda-url';

export interface FunctionUrlEndpoint {
  /** `/lambda-url/<function>`: requests under it are this URL's. */
  readonly prefix: string;
  readonly facts: FunctionUrlFacts;
  /** Answers a request whose path starts with `prefix`. */
  serve(req: IncomingMessage, res: ServerResponse): Promise<void>;
}

export interface FunctionUrlOptions {
  readonly facts: FunctionUrlFacts;
  /** The function, as the template deploys it (a getter: it is read once the stack has its template). */
  readonly fn: () => LocalFunction;
  /** The function's handler; requests wait until it has loaded. */
  readonly handler: Promise<(event: APIGatewayProxyEventV2, context: Context) => Promise<unknown>>;
  readonly log: (line: string) => void;
}

/** The local base URL of a function URL, as Lambda gives one: ending with a slash. */
export const functionUrlOf = (gatewayUrl: string, endpoint: Pick<FunctionUrlEndpoint, 'prefix'>): string =>
  `${gatewayUrl}${endpoint.prefix}/`;

/** Lambda's answers of its own, in the shape a function URL gives them. */
function lambdaError(res: ServerResponse, status: number, errorType: string, message: string): void {
  const body = JSON.stringify({ Message: message });
  res.writeHead(status, {
    'content-type': 'application/json',
    'content-length': Buffer.byteLength(body),
    'x-amzn-ErrorType': errorType,
    'x-amzn-RequestId': randomUUID(),
  });
  res.end(body);
}

/** Media types a function URL passes as text; any other body (or one without a type) is base64-encoded. */
function isText(contentType: string | undefined): boolean {
  const type = contentType?.split(';', 1)[0]?.trim().toLowerCase();
  if (!type) return false;
  return (
    type.startsWith('text/') ||
    ['application/json', 'application/javascript', 'application/xml'].includes(type) ||
    type.endsWith('+json') ||
    type.endsWith('+xml')
  );
}

/** `dd/Mon/yyyy:HH:mm:ss +0000`, as `requestContext.time` has it. */
function requestTime(epoch: number): string {
  const at = new Date(epoch);
  const month = at.toLocaleString('en-US', { month: 'short', timeZone: 'UTC' });
  const pad = (n: number) => String(n).padStart(2, '0');
  return `${pad(at.getUTCDate())}/${month}/${at.getUTCFullYear()}:${pad(at.getUTCHours())}:${pad(at.getUTCMinutes())}:${pad(at.getUTCSeconds())} +0000`;
}

/** The event Lambda hands the function for a request to its URL. */
export function functionUrlEvent(
  req: IncomingMessage,
  request: { readonly rawPath: string; readonly rawQueryString: string; readonly body: Buffer },
  urlId: string,
  requestId: string,
  now: number,
): APIGatewayProxyEventV2 {
  const headers: Record<string, string> = {};
  let cookies: string[] = [];
  for (let index = 0; index + 1 < req.rawHeaders.length; index += 2) {
    const name = (req.rawHeaders[index] as string).toLowerCase();
    const value = req.rawHeaders[index + 1] as string;
    if (name === 'cookie') {
      cookies = [...cookies, ...value.split(';').map((cookie) => cookie.trim())].filter(Boolean);
      continue;
    }
    // Own properties only: a client may send a header named `__proto__`.
    const previous = Object.hasOwn(headers, name) ? headers[name] : undefined;
    Object.defineProperty(headers, name, {
      value: previous === undefined ? value : `${previous},${value}`,
      enumerable: true,
      writable: true,
      configurable: true,
    });
  }
  const sourceIp = (req.socket.remoteAddress ?? '127.0.0.1').replace(/^::ffff:/, '');
  headers['x-forwarded-for'] = headers['x-forwarded-for']
    ? `${headers['x-forwarded-for']}, ${sourceIp}`
    : sourceIp;
  headers['x-forwarded-proto'] ??= 'http';
  headers['x-forwarded-port'] ??= String(req.socket.localPort);
  const query: Record<string, string> = {};
  for (const [name, value] of new URLSearchParams(request.rawQueryString)) {
    const previous = Object.hasOwn(query, name) ? query[name] : undefined;
    Object.defineProperty(query, name, {
      value: previous === undefined ? value : `${previous},${value}`,
      enumerable: true,
      writable: true,
      configurable: true,
    });
  }
  const text = isText(headers['content-type']);
  const domainName = headers.host ?? `${urlId}.lambda-url.local`;
  return {
    version: '2.0',
    routeKey: '$default',
    rawPath: request.rawPath,
    rawQueryString: request.rawQueryString,
    ...(cookies.length > 0 ? { cookies } : {}),
    headers,
    ...(Object.keys(query).length > 0 ? { queryStringParameters: query } : {}),
    requestContext: {
      accountId: 'anonymous',
      apiId: urlId,
      domainName,
      domainPrefix: urlId,
      http: {
        method: req.method ?? 'GET',
        path: request.rawPath,
        protocol: `HTTP/${req.httpVersion}`,
        sourceIp,
        userAgent: headers['user-agent'] ?? '',
      },
      requestId,
      routeKey: '$default',
      stage: '$default',
      time: requestTime(now),
      timeEpoch: now,
    },
    ...(request.body.length > 0
      ? { body: request.body.toString(text ? 'utf8' : 'base64'), isBase64Encoded: !text }
      : { isBase64Encoded: false }),
  };
}

/**
 * Writes what the function answered as a function URL does: a result with a
 * `statusCode` is a response; anything else is the body of a 200 (JSON, or
 * the string itself). False for a result Lambda would refuse.
 */
function writeResult(res: ServerResponse, result: unknown, requestId: string): boolean {
  let status = 200;
  let headers: Record<string, string> = { 'content-type': 'application/json' };
  let body: Buffer;
  let cookies: string[] = [];
  const structured = result as {
    statusCode?: unknown;
    headers?: unknown;
    body?: unknown;
    isBase64Encoded?: unknown;
    cookies?: unknown;
  } | null;
  if (structured && typeof structured === 'object' && 'statusCode' in structured) {
    const { statusCode } = structured;
    if (!isHttpStatus(statusCode)) return false;
    if (structured.body !== undefined && structured.body !== null && typeof structured.body !== 'string')
      return false;
    status = statusCode;
    headers = {};
    for (const [name, value] of Object.entries((structured.headers ?? {}) as Record<string, unknown>)) {
      if (typeof value !== 'string' && typeof value !== 'number' && typeof value !== 'boolean') return false;
      headers[name.toLowerCase()] = String(value);
    }
    if (structured.cookies !== undefined) {
      if (!Array.isArray(structured.cookies) || !structured.cookies.every((c) => typeof c === 'string'))
        return false;
      cookies = structured.cookies;
    }
    body = Buffer.from(
      (structured.body as string | undefined) ?? '',
      structured.isBase64Encoded === true ? 'base64' : 'utf8',
    );
  } else {
    body = Buffer.from(typeof result === 'string' ? result : (JSON.stringify(result) ?? ''), 'utf8');
  }
  for (const [name, value] of Object.entries(headers)) {
    if (!['connection', 'content-length', 'transfer-encoding', 'keep-alive'].includes(name))
      res.setHeader(name, value);
  }
  if (cookies.length > 0) res.setHeader('set-cookie', cookies);
  res.setHeader('content-length', body.length);
  res.setHeader('x-amzn-RequestId', requestId);
  res.writeHead(status);
  res.end(body);
  return true;
}

export function functionUrlEndpoint(options: FunctionUrlOptions): FunctionUrlEndpoint {
  const { facts, log } = options;
  const handler = options.handler;
  // Requests await it; a rejection is theirs to report, never an unhandled one.
  handler.catch(() => undefined);
  const name = () => options.fn().name;
  const prefix = `${FUNCTION_URL_PREFIX}/${localFunctionName(facts.service)}`;
  // Stands in for the URL id of `<url-id>.lambda-url.<region>.on.aws`.
  const urlId = facts.logicalId.toLowerCase();

  async function serve(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const target = (req.url ?? '/').slice(prefix.length);
    const queryStart = target.indexOf('?');
    const rawPath = (queryStart === -1 ? target : target.slice(0, queryStart)) || '/';
    const rawQueryString = queryStart === -1 ? '' : target.slice(queryStart + 1);
    if (facts.authType !== 'NONE' || facts.invokeMode !== 'BUFFERED') {
      discardRest(req, SYNC_REQUEST_PAYLOAD_BYTES, 30_000);
      return lambdaError(res, 403, 'AccessDeniedException', 'Forbidden');
    }
    const body = await readBody(req, SYNC_REQUEST_PAYLOAD_BYTES);
    if (body === TOO_LARGE) {
      discardRest(req, 2 * SYNC_REQUEST_PAYLOAD_BYTES, 30_000);
      return lambdaError(
        res,
        413,
        'RequestEntityTooLargeException',
        `Request must be smaller than ${SYNC_REQUEST_PAYLOAD_BYTES} bytes for the InvokeFunction operation`,
      );
    }
    const requestId = randomUUID();
    const event = functionUrlEvent(req, { rawPath, rawQueryString, body }, urlId, requestId, Date.now());
    let result: unknown;
    try {
      result = await invoke(options.fn(), await handler, event);
    } catch (error) {
      if (isLambdaServiceError(error) && error.name === 'RequestEntityTooLargeException') {
        return lambdaError(
          res,
          413,
          'RequestEntityTooLargeException',
          `Request must be smaller than ${SYNC_REQUEST_PAYLOAD_BYTES} bytes for the InvokeFunction operation`,
        );
      }
      if (isLambdaServiceError(error) && error.name === 'TooManyRequestsException') {
        return lambdaError(res, 429, 'TooManyRequestsException', 'Rate Exceeded.');
      }
      const why = error instanceof InvocationTimeoutError ? 'timed out' : describe(error);
      log(`${name()} failed for ${req.method} ${rawPath} (${requestId}): ${why}`);
      return lambdaError(res, 502, 'ServiceException', 'Internal Server Error');
    }
    if ((JSON.stringify(result ?? null) ?? '').length > SYNC_REQUEST_PAYLOAD_BYTES) {
      log(`${name()} answered ${req.method} ${rawPath} with more than Lambda's 6 MB response limit`);
      return lambdaError(res, 502, 'ServiceException', 'Internal Server Error');
    }
    if (!writeResult(res, result, requestId)) {
      log(`${name()} answered ${req.method} ${rawPath} with a malformed response`);
      lambdaError(res, 502, 'ServiceException', 'Internal Server Error');
    }
  }

  return { prefix, facts, serve };
}

function describe(error: unknown): string {
  if (error instanceof Error) return error.stack ?? `${error.name}: ${error.message}`;
  return String(error);
}
