import type { IncomingMessage, Server } from 'node:http';
import type { Duplex } from 'node:stream';
import type { APIGatewayProxyResult } from 'aws-lambda';
import { type RawData, type WebSocket, WebSocketServer } from 'ws';
import { type GatewayRequest, gatewayRequest } from '../gateway/events';
import type { StreamHandler } from '../handlers';
import { invoke, localFunctions } from '../lambda';
import {
  type ConnectionIdentity,
  connectEvent,
  connectionIdentity,
  disconnectEvent,
  gatewayId,
  messageEvent,
  type WebSocketEvent,
} from './events';
import {
  type Connection,
  type ConnectionRegistry,
  MAX_MESSAGE_BYTES,
  type ManagementApi,
  startManagementApi,
} from './management-api';

/**
 * The live-progress WebSocket API as lib/constructs/live-progress.ts deploys
 * it, on the gateway's port: every route (`$connect`, `$default`,
 * `$disconnect`) goes to the stream function. `$connect` runs before the
 * handshake completes, and a non-2xx answer (or a failure) refuses it with
 * that status, as API Gateway does; client messages go to `$default`, and
 * every end of a connection, whoever closed it, to `$disconnect`.
 *
 * The functions push to connections through the management API (the stage's
 * `@connections` endpoint, STREAM_CALLBACK_URL). It listens on a loopback
 * port of its own, not the API's: API Gateway serves it only to IAM-signed
 * callers, and this one checks no signature, so what clients are given (the
 * API's port) does not lead to it.
 *
 * Log lines name the route, the connection and the status, never the query
 * string: it carries the client's API key.
 */
export interface WebSocketApi {
  /** `ws://` URL clients connect to. */
  readonly url: string;
  /** Management API base URL, stage included (STREAM_CALLBACK_URL). */
  readonly callbackUrl: string;
  /**
   * Refuses new connections, closes open ones ("going away"), waits up to
   * `graceMs` for their `$disconnect` invocations, then cuts what is left.
   */
  close(graceMs?: number): Promise<void>;
}

export interface WebSocketApiOptions {
  /** The gateway's server: its port also serves the WebSocket API. */
  readonly server: Server;
  /** The URL the gateway serves, from which the `ws://` URL follows. */
  readonly gatewayUrl: string;
  /** Path of the WebSocket endpoint (config/layout.ts STREAM_PATH). */
  readonly path: string;
  /** Where the management API listens; loopback only. */
  readonly host: string;
  /** A promise lets the endpoint exist before the function loads; handshakes wait for it. */
  readonly handler: StreamHandler | Promise<StreamHandler>;
  /**
   * Added to every `$connect` after its function has answered (a cold start or
   * slow storage in AWS), during which the connection, not yet open, answers
   * PostToConnection with 410 Gone, as in AWS until `$connect` has returned.
   * @default 0
   */
  readonly connectLatencyMs?: number;
  readonly log: (line: string) => void;
}

/** What the function's answer to `$connect` means for the handshake: its status, or 500 for no usable answer. */
function connectStatus(result: unknown): number {
  const statusCode = (result as Partial<APIGatewayProxyResult> | null | undefined)?.statusCode;
  return typeof statusCode === 'number' &&
    Number.isInteger(statusCode) &&
    statusCode >= 100 &&
    statusCode <= 599
    ? statusCode
    : 500;
}

export async function startWebSocketApi(options: WebSocketApiOptions): Promise<WebSocketApi> {
  const { server, path, log } = options;
  const handler = Promise.resolve(options.handler);
  handler.catch(() => undefined);
  const connections: ConnectionRegistry = new Map<string, Connection>();
  /** Invocations in progress, so a stop can wait for the `$disconnect`s it causes. */
  const invocations = new Set<Promise<unknown>>();
  /** Handshakes waiting on `$connect`, cut on stop. */
  const handshakes = new Set<Duplex>();
  /** The connection each handshake would open, from the upgrade to the function's verdict. */
  const handshakeOf = new WeakMap<
    IncomingMessage,
    { request: GatewayRequest; identity: ConnectionIdentity }
  >();
  let closing = false;

  const route = (event: WebSocketEvent): Promise<APIGatewayProxyResult> => {
    const invocation = (async () => invoke(localFunctions.stream, await handler, event))();
    invocations.add(invocation);
    const forget = () => invocations.delete(invocation);
    invocation.then(forget, forget);
    return invocation;
  };

  /** `$default` and `$disconnect`: their results are ignored; failures are only logged. */
  const notify = (event: WebSocketEvent): void => {
    const started = performance.now();
    const { routeKey, connectionId } = event.requestContext;
    route(event).then(
      () => undefined,
      (error: unknown) =>
        log(
          `WebSocket ${routeKey} ${connectionId} failed after ${Math.round(performance.now() - started)}ms: ${describe(error)}`,
        ),
    );
  };

  const webSockets = new WebSocketServer({
    noServer: true,
    clientTracking: false,
    maxPayload: MAX_MESSAGE_BYTES,
    // API Gateway negotiates no extensions.
    perMessageDeflate: false,
    // Runs once ws has found the handshake well-formed (a malformed one is refused with 400
    // before any function runs), and decides it as the $connect route's answer does.
    verifyClient: (info, decide) => {
      const handshake = handshakeOf.get(info.req);
      if (!handshake) return decide(false, 500);
      const { request, identity } = handshake;
      const started = performance.now();
      const socket = info.req.socket;
      handshakes.add(socket);
      route(connectEvent(request, identity))
        .then(connectStatus, (error: unknown) => {
          log(`WebSocket $connect ${identity.connectionId} failed: ${describe(error)}`);
          return 500;
        })
        .then(async (status) => {
          if (options.connectLatencyMs)
            await new Promise((resolve) => setTimeout(resolve, options.connectLatencyMs));
          return status;
        })
        .then((status) => {
          handshakes.delete(socket);
          log(
            `WebSocket $connect ${identity.connectionId} ${status} ${Math.round(performance.now() - started)}ms`,
          );
          if (status < 200 || status > 299) return decide(false, status);
          if (closing) decide(false, 503);
          else decide(true);
          // The client left while $connect ran, or the API is stopping: the function admitted a
          // connection that never opened, and hears of its end like of any other.
          if (!connections.has(identity.connectionId)) {
            notify(disconnectEvent(identity, 1006, '', Date.now()));
          }
        });
    },
  });

  function open(socket: WebSocket, identity: ConnectionIdentity): void {
    const connection: Connection = { ...identity, socket, lastActiveAt: Date.now() };
    connections.set(identity.connectionId, connection);
    socket.on('message', (data: RawData, isBinary: boolean) => {
      connection.lastActiveAt = Date.now();
      notify(messageEvent(identity, toBuffer(data), isBinary, connection.lastActiveAt));
    });
    // A protocol error (an oversized message, say) is followed by 'close', which reports it.
    socket.on('error', () => undefined);
    socket.once('close', (code: number, reason: Buffer) => {
      connections.delete(identity.connectionId);
      log(`WebSocket $disconnect ${identity.connectionId} ${code}`);
      notify(disconnectEvent(identity, code, reason.toString('utf8'), Date.now()));
    });
  }

  const onUpgrade = (req: IncomingMessage, socket: Duplex, head: Buffer) => {
    // Node leaves an upgraded socket without an error listener; a reset would otherwise crash the stack.
    socket.on('error', () => undefined);
    const target = req.url ?? '/';
    const requestPath = target.includes('?') ? target.slice(0, target.indexOf('?')) : target;
    if (closing || requestPath !== path) {
      refuse(socket, closing ? 503 : 404);
      return;
    }
    try {
      const request = gatewayRequest(req, gatewayId(), Date.now());
      const identity = connectionIdentity(request, gatewayId());
      handshakeOf.set(req, { request, identity });
      webSockets.handleUpgrade(req, socket, head, (webSocket) => open(webSocket, identity));
    } catch {
      // A handshake the gateway cannot even read is refused like any bad request, never fatal.
      refuse(socket, 400);
    }
  };
  server.on('upgrade', onUpgrade);

  let management: ManagementApi;
  try {
    management = await startManagementApi({ host: options.host, connections });
  } catch (error) {
    server.off('upgrade', onUpgrade);
    throw error;
  }

  let closed: Promise<void> | undefined;
  return {
    url: `${options.gatewayUrl.replace(/^http/, 'ws')}${path}`,
    callbackUrl: management.callbackUrl,
    close(graceMs = 3000) {
      closed ??= (async () => {
        // The upgrade listener stays until the gateway closes, refusing late handshakes with 503.
        closing = true;
        for (const socket of handshakes) socket.destroy();
        for (const { socket } of connections.values()) socket.close(1001, 'Going away');
        const deadline = Date.now() + graceMs;
        while ((connections.size > 0 || invocations.size > 0) && Date.now() < deadline) {
          await new Promise((resolve) => setTimeout(resolve, 20));
        }
        for (const { socket } of connections.values()) socket.terminate();
        webSockets.close();
        await management.close();
      })();
      return closed;
    },
  };
}

/** An upgrade the API does not take, answered as a plain HTTP response. */
function refuse(socket: Duplex, status: number): void {
  const body = status === 404 ? 'Not Found' : 'Service Unavailable';
  socket.once('finish', () => socket.destroy());
  socket.end(
    `HTTP/1.1 ${status} ${body}\r\nConnection: close\r\nContent-Type: text/plain\r\nContent-Length: ${body.length}\r\n\r\n${body}`,
  );
}

function toBuffer(data: RawData): Buffer {
  if (Buffer.isBuffer(data)) return data;
  if (Array.isArray(data)) return Buffer.concat(data);
  return Buffer.from(data);
}

function describe(error: unknown): string {
  if (error instanceof Error) return error.stack ?? `${error.name}: ${error.message}`;
  return String(error);
}
