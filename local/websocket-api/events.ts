import { randomBytes } from 'node:crypto';
import { type GatewayRequest, header, LOCAL_API_ID, LOCAL_STAGE, requestTime } from '../gateway/events';

/**
 * Events in the shapes an API Gateway WebSocket API hands a Lambda proxy
 * integration: `$connect` with the handshake's headers and query string,
 * `$default` with a client's message, `$disconnect` with the close code.
 */

export type WebSocketRouteKey = '$connect' | '$default' | '$disconnect';

export interface WebSocketRequestContext {
  readonly routeKey: WebSocketRouteKey;
  readonly eventType: 'CONNECT' | 'MESSAGE' | 'DISCONNECT';
  readonly messageId?: string;
  readonly extendedRequestId: string;
  readonly requestTime: string;
  readonly messageDirection: 'IN';
  readonly stage: string;
  readonly connectedAt: number;
  readonly requestTimeEpoch: number;
  readonly identity: { readonly sourceIp: string; readonly userAgent?: string };
  readonly requestId: string;
  readonly domainName: string;
  readonly connectionId: string;
  readonly apiId: string;
  readonly disconnectStatusCode?: number;
  readonly disconnectReason?: string;
}

export interface WebSocketEvent {
  readonly requestContext: WebSocketRequestContext;
  readonly headers?: Record<string, string>;
  readonly multiValueHeaders?: Record<string, string[]>;
  readonly queryStringParameters?: Record<string, string>;
  readonly multiValueQueryStringParameters?: Record<string, string[]>;
  readonly body?: string;
  readonly isBase64Encoded: boolean;
}

/** What a connection keeps from its handshake for every later event. */
export interface ConnectionIdentity {
  readonly connectionId: string;
  /** Epoch milliseconds. */
  readonly connectedAt: number;
  readonly domainName: string;
  readonly sourceIp: string;
  readonly userAgent: string | undefined;
}

/**
 * API Gateway's identifiers for connections and requests: eleven random bytes
 * in base64, sixteen characters ending in `=`, such as `L0SM9cOFvHcCIhw=`.
 * Like API Gateway's, they may contain `+` and `/`, which callers of the
 * management API must encode in the path.
 */
export function gatewayId(): string {
  return randomBytes(11).toString('base64');
}

function requestContext(
  connection: ConnectionIdentity,
  routeKey: WebSocketRouteKey,
  eventType: WebSocketRequestContext['eventType'],
  now: number,
  requestId: string = gatewayId(),
): WebSocketRequestContext {
  return {
    routeKey,
    eventType,
    extendedRequestId: requestId,
    requestTime: requestTime(now),
    messageDirection: 'IN',
    stage: LOCAL_STAGE,
    connectedAt: connection.connectedAt,
    requestTimeEpoch: now,
    identity: {
      sourceIp: connection.sourceIp,
      ...(connection.userAgent === undefined ? {} : { userAgent: connection.userAgent }),
    },
    requestId,
    domainName: connection.domainName,
    connectionId: connection.connectionId,
    apiId: LOCAL_API_ID,
  };
}

export function connectionIdentity(request: GatewayRequest, connectionId: string): ConnectionIdentity {
  return {
    connectionId,
    connectedAt: request.requestTimeEpoch,
    domainName: request.domainName,
    sourceIp: request.sourceIp,
    userAgent: header(request, 'user-agent'),
  };
}

/** The handshake, which `$connect` may refuse; query parameters only when there are any, as API Gateway sends them. */
export function connectEvent(request: GatewayRequest, connection: ConnectionIdentity): WebSocketEvent {
  return {
    headers: request.headers,
    multiValueHeaders: request.multiValueHeaders,
    ...(request.queryStringParameters
      ? {
          queryStringParameters: request.queryStringParameters,
          multiValueQueryStringParameters: request.multiValueQueryStringParameters ?? {},
        }
      : {}),
    requestContext: requestContext(
      connection,
      '$connect',
      'CONNECT',
      request.requestTimeEpoch,
      request.requestId,
    ),
    isBase64Encoded: false,
  };
}

/** A client's message: text as it came, binary in base64. */
export function messageEvent(
  connection: ConnectionIdentity,
  data: Buffer,
  isBinary: boolean,
  now: number,
): WebSocketEvent {
  return {
    requestContext: { ...requestContext(connection, '$default', 'MESSAGE', now), messageId: gatewayId() },
    body: data.toString(isBinary ? 'base64' : 'utf8'),
    isBase64Encoded: isBinary,
  };
}

/** RFC 6455 names of the close codes a disconnect is most often reported with. */
const CLOSE_REASONS: Readonly<Record<number, string>> = {
  1000: 'Connection closed normally',
  1001: 'Going away',
  1005: 'Client-side close frame status not set',
  1006: 'Connection closed abnormally',
  1009: 'Message too big',
};

/** The end of a connection, whoever closed it; its result is ignored, as API Gateway ignores it. */
export function disconnectEvent(
  connection: ConnectionIdentity,
  code: number,
  reason: string,
  now: number,
): WebSocketEvent {
  // API Gateway sends these headers, empty, on every $disconnect.
  const headers = { Host: connection.domainName, 'x-api-key': '', 'X-Forwarded-For': '', 'x-restapi': '' };
  return {
    headers,
    multiValueHeaders: Object.fromEntries(Object.entries(headers).map(([name, value]) => [name, [value]])),
    requestContext: {
      ...requestContext(connection, '$disconnect', 'DISCONNECT', now),
      disconnectStatusCode: code,
      disconnectReason: reason || CLOSE_REASONS[code] || '',
    },
    isBase64Encoded: false,
  };
}
