import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { WebSocket } from 'ws';
import { listen } from '../emulators/listen';
import { discardRest, readBody, TOO_LARGE } from '../gateway/body';
import { LOCAL_STAGE } from '../gateway/events';
import type { ConnectionIdentity } from './events';

/**
 * The API Gateway Management API of the local WebSocket API, on the wire
 * `@aws-sdk/client-apigatewaymanagementapi` speaks (REST-JSON), so functions
 * built with `endpoint = STREAM_CALLBACK_URL` work unchanged:
 * - `POST /{stage}/@connections/{id}`, the raw data as body: sent to the
 *   client as one text frame, 200;
 * - `GET /{stage}/@connections/{id}`: `{connectedAt, identity, lastActiveAt}`;
 * - `DELETE /{stage}/@connections/{id}`: closes the connection (the function
 *   then hears `$disconnect`), 204.
 * A connection that is unknown, closing or closed answers 410 with
 * `x-amzn-errortype: GoneException`, which the SDK turns into `GoneException`;
 * data over 128 KiB answers 413 (`PayloadTooLargeException`). A request
 * without a SigV4 `Authorization` header, or to any other path, answers 403
 * (`ForbiddenException`) as API Gateway does; signatures are not checked.
 */

/** An open connection: what its handshake said, and its socket. */
export interface Connection extends ConnectionIdentity {
  readonly socket: WebSocket;
  /** Epoch milliseconds of the last message either way. */
  lastActiveAt: number;
}

export type ConnectionRegistry = Map<string, Connection>;

export interface ManagementApi {
  /** Base URL with the stage, as the CDK's `WebSocketStage.callbackUrl`. */
  readonly callbackUrl: string;
  close(): Promise<void>;
}

/** API Gateway's limit on a WebSocket message, in either direction. */
export const MAX_MESSAGE_BYTES = 128 * 1024;

const CONNECTION_PATH = new RegExp(`^/${LOCAL_STAGE}/@connections/([^/]+)$`);

type ErrorType = 'ForbiddenException' | 'GoneException' | 'PayloadTooLargeException';

const ERRORS: Readonly<Record<ErrorType, { status: number; message: string }>> = {
  ForbiddenException: { status: 403, message: 'Missing Authentication Token' },
  GoneException: { status: 410, message: 'The connection is gone.' },
  PayloadTooLargeException: { status: 413, message: 'Message too long' },
};

function send(
  response: ServerResponse,
  status: number,
  body?: unknown,
  headers: Record<string, string> = {},
) {
  const text = body === undefined ? '' : JSON.stringify(body);
  response.writeHead(status, {
    'content-type': 'application/json',
    'content-length': Buffer.byteLength(text),
    'x-amzn-requestid': randomUUID(),
    ...headers,
  });
  response.end(text);
}

function sendError(response: ServerResponse, type: ErrorType): void {
  const { status, message } = ERRORS[type];
  send(response, status, { message }, { 'x-amzn-errortype': type });
}

/** Writes `data` as one text frame; false when the connection went away first. */
function deliver(socket: WebSocket, data: Buffer): Promise<boolean> {
  if (socket.readyState !== WebSocket.OPEN) return Promise.resolve(false);
  return new Promise((resolve) => socket.send(data, { binary: false }, (error) => resolve(!error)));
}

export async function startManagementApi(options: {
  readonly host: string;
  readonly connections: ReadonlyMap<string, Connection>;
}): Promise<ManagementApi> {
  const { connections } = options;

  async function handle(request: IncomingMessage, response: ServerResponse): Promise<void> {
    const target = request.url ?? '/';
    const path = target.includes('?') ? target.slice(0, target.indexOf('?')) : target;
    const match = CONNECTION_PATH.exec(path);
    const signed = request.headers.authorization?.startsWith('AWS4-HMAC-SHA256 ') ?? false;
    if (!match || !signed || !['POST', 'GET', 'DELETE'].includes(request.method ?? '')) {
      request.resume();
      return sendError(response, 'ForbiddenException');
    }
    let connectionId: string;
    try {
      connectionId = decodeURIComponent(match[1] as string);
    } catch {
      request.resume();
      return sendError(response, 'GoneException');
    }

    if (request.method === 'POST') {
      const data = await readBody(request, MAX_MESSAGE_BYTES);
      if (data === TOO_LARGE) {
        discardRest(request, 2 * MAX_MESSAGE_BYTES, 10_000);
        return sendError(response, 'PayloadTooLargeException');
      }
      const connection = connections.get(connectionId);
      if (!connection || !(await deliver(connection.socket, data)))
        return sendError(response, 'GoneException');
      connection.lastActiveAt = Date.now();
      return send(response, 200);
    }

    request.resume();
    const connection = connections.get(connectionId);
    if (!connection || connection.socket.readyState !== WebSocket.OPEN) {
      return sendError(response, 'GoneException');
    }
    if (request.method === 'DELETE') {
      connection.socket.close(1000);
      return send(response, 204);
    }
    return send(response, 200, {
      connectedAt: new Date(connection.connectedAt).toISOString(),
      identity: {
        sourceIp: connection.sourceIp,
        ...(connection.userAgent === undefined ? {} : { userAgent: connection.userAgent }),
      },
      lastActiveAt: new Date(connection.lastActiveAt).toISOString(),
    });
  }

  const server = createServer((request, response) => {
    handle(request, response).catch(() => {
      // The caller hung up mid-request: nothing can reach it any more.
      if (!response.headersSent) send(response, 500, { message: 'Internal server error' });
      else response.destroy();
    });
  });
  const listening = await listen(server, options.host);
  return { callbackUrl: `${listening.endpoint}/${LOCAL_STAGE}`, close: listening.stop };
}
