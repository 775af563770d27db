import { createHash } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import type {
  APIGatewayEventRequestContextWithAuthorizer,
  APIGatewayProxyEvent,
  APIGatewayRequestAuthorizerEvent,
} from 'aws-lambda';
import { binaryMediaTypes, type RouteLayout } from '../../config/layout';
import { LOCAL_REGION } from '../handler-env';
import { LOCAL_ACCOUNT_ID } from '../lambda';
import type { RouteMatch } from './routing';

/** Events in the shapes a REST API (payload format 1.0) sends its Lambda functions. */

export const LOCAL_API_ID = 'local';
export const LOCAL_STAGE = 'local';

/** What the gateway knows about a request before any function sees it. */
export interface GatewayRequest {
  readonly requestId: string;
  readonly requestTimeEpoch: number;
  readonly method: string;
  /** The path as the client sent it, without the query. */
  readonly path: string;
  readonly headers: Record<string, string>;
  readonly multiValueHeaders: Record<string, string[]>;
  readonly queryStringParameters: Record<string, string> | null;
  readonly multiValueQueryStringParameters: Record<string, string[]> | null;
  readonly sourceIp: string;
  readonly domainName: string;
  readonly protocol: string;
}

/** Adds a value under `name`, matching an existing name case-insensitively. */
function append(values: Record<string, string[]>, name: string, value: string): void {
  const existing = Object.keys(values).find((key) => key.toLowerCase() === name.toLowerCase()) ?? name;
  // Own properties only: a client may send a header or parameter named `__proto__` or `constructor`.
  const previous = Object.hasOwn(values, existing) ? (values[existing] ?? []) : [];
  Object.defineProperty(values, existing, {
    value: [...previous, value],
    enumerable: true,
    writable: true,
    configurable: true,
  });
}

const lastValues = (values: Record<string, string[]>): Record<string, string> => {
  const last: Record<string, string> = {};
  for (const [name, list] of Object.entries(values)) {
    Object.defineProperty(last, name, {
      value: list.at(-1) as string,
      enumerable: true,
      writable: true,
      configurable: true,
    });
  }
  return last;
};

export function gatewayRequest(req: IncomingMessage, requestId: string, now: number): GatewayRequest {
  // Split by hand: URL parsing would read a path starting with // as a host.
  const target = req.url ?? '/';
  const queryStart = target.indexOf('?');
  const path = queryStart === -1 ? target : target.slice(0, queryStart);
  const query = new URLSearchParams(queryStart === -1 ? '' : target.slice(queryStart + 1));

  const multiValueHeaders: Record<string, string[]> = {};
  // rawHeaders keeps the client's header names and every repeated value, as API Gateway passes them.
  for (let index = 0; index + 1 < req.rawHeaders.length; index += 2) {
    append(multiValueHeaders, req.rawHeaders[index] as string, req.rawHeaders[index + 1] as string);
  }
  const sourceIp = (req.socket.remoteAddress ?? '127.0.0.1').replace(/^::ffff:/, '');
  const has = (name: string) => Object.keys(multiValueHeaders).some((key) => key.toLowerCase() === name);
  // Like any proxy, the gateway adds the address it saw to the client's X-Forwarded-For list.
  const forwardedFor = Object.keys(multiValueHeaders).find((key) => key.toLowerCase() === 'x-forwarded-for');
  const chain = forwardedFor ? (multiValueHeaders[forwardedFor] as string[]) : undefined;
  if (forwardedFor && chain) chain[chain.length - 1] = `${chain.at(-1)}, ${sourceIp}`;
  else append(multiValueHeaders, 'X-Forwarded-For', sourceIp);
  if (!has('x-forwarded-proto')) append(multiValueHeaders, 'X-Forwarded-Proto', 'http');
  if (!has('x-forwarded-port')) append(multiValueHeaders, 'X-Forwarded-Port', String(req.socket.localPort));

  const multiValueQuery: Record<string, string[]> = {};
  for (const [name, value] of query) append(multiValueQuery, name, value);
  const hasQuery = Object.keys(multiValueQuery).length > 0;
  return {
    requestId,
    requestTimeEpoch: now,
    method: req.method ?? 'GET',
    path,
    headers: lastValues(multiValueHeaders),
    multiValueHeaders,
    queryStringParameters: hasQuery ? lastValues(multiValueQuery) : null,
    multiValueQueryStringParameters: hasQuery ? multiValueQuery : null,
    sourceIp,
    domainName: req.headers.host ?? '127.0.0.1',
    protocol: `HTTP/${req.httpVersion}`,
  };
}

/** Case-insensitive header lookup; API Gateway keeps the client's spelling. */
export function header(request: GatewayRequest, name: string): string | undefined {
  const key = Object.keys(request.headers).find(
    (candidate) => candidate.toLowerCase() === name.toLowerCase(),
  );
  return key === undefined ? undefined : request.headers[key];
}

export function methodArn(request: GatewayRequest): string {
  return `arn:aws:execute-api:${LOCAL_REGION}:${LOCAL_ACCOUNT_ID}:${LOCAL_API_ID}/${LOCAL_STAGE}/${request.method}${request.path}`;
}

const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];
const pad = (n: number) => String(n).padStart(2, '0');

/** API Gateway's CLF-style `requestTime`, e.g. 09/Apr/2015:12:34:56 +0000. */
export function requestTime(epoch: number): string {
  const d = new Date(epoch);
  return `${pad(d.getUTCDate())}/${MONTHS[d.getUTCMonth()]}/${d.getUTCFullYear()}:${pad(d.getUTCHours())}:${pad(
    d.getUTCMinutes(),
  )}:${pad(d.getUTCSeconds())} +0000`;
}

function requestContext<A>(
  request: GatewayRequest,
  route: RouteLayout,
  authorizer: A,
): APIGatewayEventRequestContextWithAuthorizer<A> {
  return {
    accountId: LOCAL_ACCOUNT_ID,
    apiId: LOCAL_API_ID,
    authorizer,
    domainName: request.domainName,
    extendedRequestId: request.requestId,
    httpMethod: request.method,
    identity: {
      accessKey: null,
      accountId: null,
      apiKey: null,
      apiKeyId: null,
      caller: null,
      clientCert: null,
      cognitoAuthenticationProvider: null,
      cognitoAuthenticationType: null,
      cognitoIdentityId: null,
      cognitoIdentityPoolId: null,
      principalOrgId: null,
      sourceIp: request.sourceIp,
      user: null,
      userAgent: header(request, 'user-agent') ?? null,
      userArn: null,
    },
    path: request.path,
    protocol: request.protocol,
    requestId: request.requestId,
    requestTime: requestTime(request.requestTimeEpoch),
    requestTimeEpoch: request.requestTimeEpoch,
    resourceId: createHash('sha256').update(route.path).digest('hex').slice(0, 6),
    resourcePath: route.path,
    stage: LOCAL_STAGE,
  };
}

/** The request as a REQUEST authorizer and the integration both see it. */
function requestFields(request: GatewayRequest, match: RouteMatch) {
  return {
    resource: match.route.path,
    path: request.path,
    httpMethod: request.method,
    headers: request.headers,
    multiValueHeaders: request.multiValueHeaders,
    queryStringParameters: request.queryStringParameters,
    multiValueQueryStringParameters: request.multiValueQueryStringParameters,
    pathParameters: match.pathParameters ? { ...match.pathParameters } : null,
    stageVariables: null,
  };
}

export function authorizerEvent(
  request: GatewayRequest,
  match: RouteMatch,
): APIGatewayRequestAuthorizerEvent {
  return {
    type: 'REQUEST',
    methodArn: methodArn(request),
    ...requestFields(request, match),
    requestContext: requestContext(request, match.route, undefined),
  };
}

/** True when API Gateway would hand this body over base64-encoded (binaryMediaTypes, with `*` wildcards). */
export function isBinary(contentType: string | undefined): boolean {
  const mediaType = contentType?.split(';')[0]?.trim().toLowerCase();
  if (!mediaType) return false;
  const [type, subtype] = mediaType.split('/');
  return binaryMediaTypes.some((pattern: string) => {
    const [patternType, patternSubtype] = pattern.toLowerCase().split('/');
    return (
      (patternType === '*' || patternType === type) && (patternSubtype === '*' || patternSubtype === subtype)
    );
  });
}

/** Authorizer output as the integration sees it: principalId plus every context value, as strings. */
export type ProxyAuthorizerContext = Record<string, string | number>;

export function proxyEvent(
  request: GatewayRequest,
  match: RouteMatch,
  body: Buffer,
  authorizer: ProxyAuthorizerContext | null,
): APIGatewayProxyEvent {
  const binary = isBinary(header(request, 'content-type'));
  return {
    ...requestFields(request, match),
    requestContext: requestContext(request, match.route, authorizer),
    body: body.length === 0 ? null : body.toString(binary ? 'base64' : 'utf8'),
    isBase64Encoded: body.length > 0 && binary,
  };
}
