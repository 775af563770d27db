import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { APIGatewayProxyResult } from 'aws-lambda';
import { API_KEY_HEADER, type RouteLayout } from '../config/layout';
import {
  type GatewayResponseType,
  gatewayProblems,
  PROBLEM_CONTENT_TYPE,
  RATE_LIMIT_RETRY_AFTER_SECONDS,
} from '../config/problems';
import type { Settings } from '../config/settings';
import { listenOn } from './emulators/listen';
import { CachingAuthorizer } from './gateway/authorizer';
import {
  declaredTooLarge,
  discardRest,
  GATEWAY_MAX_BODY_BYTES,
  isHttpStatus,
  readBody,
  TOO_LARGE,
} from './gateway/body';
import {
  authorizerEvent,
  type GatewayRequest,
  gatewayRequest,
  header,
  methodArn,
  type ProxyAuthorizerContext,
  proxyEvent,
} from './gateway/events';
import { evaluatePolicy } from './gateway/policy';
import { compileRoutes, type RouteMatch } from './gateway/routing';
import { TokenBuckets } from './gateway/throttle';
import type { LocalHandlers } from './handlers';
import { invoke, localFunctions } from './lambda';
import { isLambdaServiceError } from './lambda-service';
import type { ThrottleFacts } from './template';
import { usage } from './usage';

/** The functions behind the REST API. */
export type GatewayHandlers = Pick<LocalHandlers, 'api' | 'authorizer'>;

/**
 * A local-only route beside the REST API's (the ops view, local/ops): the
 * gateway admits it as it would an API route (the authorizer, then the admin
 * role for `admin` routes) and the route answers on its own.
 */
export interface LocalRoute extends RouteLayout {
  readonly method: 'GET';
  readonly auth: 'none' | 'admin';
  answer(request: {
    readonly pathParameters: Readonly<Record<string, string>> | null;
  }): Promise<{ status: number; headers: Record<string, string>; body: string | Buffer }>;
}

/**
 * The REST API as the CDK stack deploys it, on node:http: the routes of
 * config/layout.ts, the 10 MiB payload limit, the Lambda REQUEST authorizer
 * with its result cache, usage-plan throttling per tenant, and the api
 * function behind a Lambda proxy integration. Everything the gateway answers
 * on its own is a problem from `gatewayProblems`, as the REST API's gateway
 * responses are.
 *
 * `server` is exposed so other endpoints (the WebSocket stream) can attach to
 * the same port through its 'upgrade' event.
 */
export interface Gateway {
  readonly server: Server;
  readonly port: number;
  readonly url: string;
  /** Stops accepting, lets requests in progress finish for up to `graceMs`, then cuts what is left. */
  close(graceMs?: number): Promise<void>;
}

export interface GatewayOptions {
  readonly host: string;
  readonly port: number;
  readonly routes: readonly RouteLayout[];
  readonly settings: Pick<Settings, 'authorizerCacheSeconds'>;
  /** The stage's limit across all clients, and the usage plan's per key, as the template deploys them. */
  readonly throttles: { readonly stage: ThrottleFacts; readonly usagePlan: ThrottleFacts };
  /**
   * The functions behind the API. A promise lets the gateway listen before
   * they load (their environment names the gateway's own URL, which exists
   * only once it listens); requests wait for it.
   */
  readonly handlers: GatewayHandlers | Promise<GatewayHandlers>;
  /** One line per request and per handler failure. Never given headers, query strings or bodies, which may hold keys. */
  readonly log: (line: string) => void;
  /** Matched before the API's routes. */
  readonly localRoutes?: readonly LocalRoute[];
  /**
   * Other endpoints on the same port, each under a path prefix of its own
   * (the function URLs): what is under one never reaches the REST API, its
   * request count or its throttles.
   */
  readonly mounts?: readonly Mount[];
}

/** An endpoint served on the gateway's port under `prefix`. */
export interface Mount {
  readonly prefix: string;
  serve(req: IncomingMessage, res: ServerResponse): Promise<void>;
}

/** Lambda's limit on a synchronous invocation's response; past it API Gateway answers 502. */
const LAMBDA_MAX_RESPONSE_BYTES = 6 * 1024 * 1024;

const retryAfter = { 'retry-after': String(RATE_LIMIT_RETRY_AFTER_SECONDS) };

/** How much of a refused oversized body is read and thrown away before the connection is cut. */
const DISCARD_MAX_BYTES = 2 * GATEWAY_MAX_BODY_BYTES;
const DISCARD_MAX_MS = 30_000;

/**
 * A gateway response, with the status the REST API gives its type: an
 * authorizer failure is AUTHORIZER_FAILURE's 500, and what has no type of its
 * own (a Lambda error or a malformed result) DEFAULT_5XX's 502, as in AWS.
 */
function sendProblem(
  res: ServerResponse,
  type: GatewayResponseType,
  requestId: string,
  headers: Record<string, string> = {},
): void {
  const problem = gatewayProblems[type];
  const body = JSON.stringify(problem);
  res.writeHead(problem.status, {
    'content-type': PROBLEM_CONTENT_TYPE,
    'content-length': Buffer.byteLength(body),
    'x-amzn-RequestId': requestId,
    ...headers,
  });
  res.end(body);
}

const HOP_BY_HOP = new Set(['connection', 'content-length', 'transfer-encoding', 'keep-alive']);

type Primitive = string | number | boolean;
const isPrimitive = (value: unknown): value is Primitive =>
  typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean';

/**
 * Writes a Lambda proxy result the way API Gateway does (multiValueHeaders win
 * over headers of the same name, application/json by default), or returns
 * false for a result API Gateway would reject as malformed.
 */
function writeProxyResult(res: ServerResponse, result: unknown, requestId: string): boolean {
  if (!result || typeof result !== 'object') return false;
  const { statusCode, headers, multiValueHeaders, body, isBase64Encoded } =
    result as Partial<APIGatewayProxyResult>;
  if (!isHttpStatus(statusCode)) return false;
  if (body !== undefined && body !== null && typeof body !== 'string') return false;
  if (isBase64Encoded !== undefined && typeof isBase64Encoded !== 'boolean') return false;
  const merged = new Map<string, { name: string; values: string[] }>();
  if (headers !== undefined && headers !== null) {
    if (typeof headers !== 'object') return false;
    for (const [name, value] of Object.entries(headers)) {
      if (!isPrimitive(value)) return false;
      merged.set(name.toLowerCase(), { name, values: [String(value)] });
    }
  }
  if (multiValueHeaders !== undefined && multiValueHeaders !== null) {
    if (typeof multiValueHeaders !== 'object') return false;
    for (const [name, values] of Object.entries(multiValueHeaders)) {
      if (!Array.isArray(values) || !values.every(isPrimitive)) return false;
      merged.set(name.toLowerCase(), { name, values: values.map(String) });
    }
  }
  const payload = Buffer.from(body ?? '', isBase64Encoded ? 'base64' : 'utf8');
  for (const [lower, { name, values }] of merged) {
    if (!HOP_BY_HOP.has(lower)) res.setHeader(name, values);
  }
  if (!merged.has('content-type')) res.setHeader('content-type', 'application/json');
  res.setHeader('content-length', payload.length);
  res.setHeader('x-amzn-RequestId', requestId);
  res.writeHead(statusCode);
  res.end(payload);
  return true;
}

export async function startGateway(options: GatewayOptions): Promise<Gateway> {
  const { settings, log } = options;
  const handlers = Promise.resolve(options.handlers);
  // Requests await it; a rejection is theirs to report, never an unhandled one.
  handlers.catch(() => undefined);
  const match = compileRoutes(options.routes);
  const matchLocal = compileRoutes(options.localRoutes ?? []);
  const authorizer = new CachingAuthorizer(
    async (event) => invoke(localFunctions.authorizer, (await handlers).authorizer, event),
    settings.authorizerCacheSeconds,
  );
  const tenantBuckets = TokenBuckets.of(options.throttles.usagePlan);
  const stageBucket = TokenBuckets.of(options.throttles.stage);

  /** Runs the authorizer and the usage plan; returns the integration's authorizer context, or undefined once answered. */
  async function admit(
    req: GatewayRequest,
    route: RouteMatch,
    res: ServerResponse,
  ): Promise<ProxyAuthorizerContext | null | undefined> {
    if (route.route.auth === 'none') return null;
    const apiKey = header(req, API_KEY_HEADER);
    // An empty identity source is refused before the authorizer runs.
    if (!apiKey) {
      sendProblem(res, 'UNAUTHORIZED', req.requestId);
      return undefined;
    }
    const outcome = await authorizer.authorize(apiKey, authorizerEvent(req, route));
    if (outcome.kind === 'unauthorized') {
      sendProblem(res, 'UNAUTHORIZED', req.requestId);
      return undefined;
    }
    if (outcome.kind === 'failed') {
      log(`authorizer failed for ${req.method} ${req.path} (${req.requestId}): ${describe(outcome.error)}`);
      sendProblem(res, 'AUTHORIZER_FAILURE', req.requestId);
      return undefined;
    }
    const { result } = outcome;
    if (evaluatePolicy(result.statements, methodArn(req)) === 'Deny') {
      sendProblem(res, 'ACCESS_DENIED', req.requestId);
      return undefined;
    }
    // Usage plans meter the API key the authorizer names; without one (the
    // local authorizer has no usage-plan keys) the tenant stands in for it.
    // With neither, API Gateway refuses a method that requires an API key.
    const usageIdentifier = result.usageIdentifierKey ?? result.context.tenantId;
    if (!usageIdentifier) {
      sendProblem(res, 'ACCESS_DENIED', req.requestId);
      return undefined;
    }
    if (!tenantBuckets.take(usageIdentifier)) {
      sendProblem(res, 'THROTTLED', req.requestId, retryAfter);
      return undefined;
    }
    return { ...result.context, principalId: result.principalId, integrationLatency: 0 };
  }

  async function serveLocal(request: GatewayRequest, local: RouteMatch<LocalRoute>, res: ServerResponse) {
    if (!stageBucket.take('stage')) return sendProblem(res, 'THROTTLED', request.requestId, retryAfter);
    if (local.route.auth === 'admin') {
      const context = await admit(request, local, res);
      if (context === undefined) return;
      if (context?.role !== 'admin') return sendProblem(res, 'ACCESS_DENIED', request.requestId);
    }
    const answer = await local.route.answer({ pathParameters: local.pathParameters });
    res.writeHead(answer.status, {
      ...answer.headers,
      'content-length': Buffer.byteLength(answer.body),
      'x-amzn-RequestId': request.requestId,
    });
    res.end(answer.body);
  }

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const target = req.url ?? '/';
    const mount = options.mounts?.find(
      ({ prefix }) => target === prefix || target.startsWith(`${prefix}/`) || target.startsWith(`${prefix}?`),
    );
    if (mount) return mount.serve(req, res);
    const request = gatewayRequest(req, randomUUID(), Date.now());
    const local = matchLocal(request.method, request.path);
    if (local) return serveLocal(request, local, res);
    const route = match(request.method, request.path);
    if (!route) return sendProblem(res, 'MISSING_AUTHENTICATION_TOKEN', request.requestId);
    usage.restApiRequest();
    if (!stageBucket.take('stage')) return sendProblem(res, 'THROTTLED', request.requestId, retryAfter);

    if (req.headers.expect?.toLowerCase() === '100-continue') {
      if (declaredTooLarge(req, GATEWAY_MAX_BODY_BYTES)) {
        // The client has sent no body yet and will not: closing costs it nothing.
        res.setHeader('connection', 'close');
        return sendProblem(res, 'REQUEST_TOO_LARGE', request.requestId);
      }
      res.writeContinue();
    }
    const body = await readBody(req, GATEWAY_MAX_BODY_BYTES);
    if (body === TOO_LARGE) {
      discardRest(req, DISCARD_MAX_BYTES, DISCARD_MAX_MS);
      return sendProblem(res, 'REQUEST_TOO_LARGE', request.requestId);
    }

    const authorizerContext = await admit(request, route, res);
    if (authorizerContext === undefined) return;

    let result: unknown;
    try {
      result = await invoke(
        localFunctions.api,
        (await handlers).api,
        proxyEvent(request, route, body, authorizerContext),
      );
    } catch (error) {
      // Lambda refused the event (over 6 MB once base64-encoded): API Gateway answers 413 then.
      if (isLambdaServiceError(error) && error.name === 'RequestEntityTooLargeException') {
        return sendProblem(res, 'REQUEST_TOO_LARGE', request.requestId);
      }
      log(
        `api handler failed for ${request.method} ${request.path} (${request.requestId}): ${describe(error)}`,
      );
      return sendProblem(res, 'DEFAULT_5XX', request.requestId);
    }
    if (JSON.stringify(result ?? null).length > LAMBDA_MAX_RESPONSE_BYTES) {
      log(
        `api handler answered ${request.method} ${request.path} with more than Lambda's 6 MB response limit`,
      );
      return sendProblem(res, 'DEFAULT_5XX', request.requestId);
    }
    if (!writeProxyResult(res, result, request.requestId)) {
      log(`api handler answered ${request.method} ${request.path} with a malformed proxy result`);
      sendProblem(res, 'DEFAULT_5XX', request.requestId);
    }
  }

  const server = createServer((req, res) => {
    const started = performance.now();
    const path = (req.url ?? '/').split('?')[0];
    res.once('finish', () => {
      log(`${req.method} ${path} ${res.statusCode} ${Math.round(performance.now() - started)}ms`);
    });
    handle(req, res).catch((error: unknown) => {
      // A client that hangs up mid-body, or a bug here: nothing useful can reach the client any more.
      if (!res.headersSent && !res.destroyed) {
        log(`gateway failed on ${req.method} ${path}: ${describe(error)}`);
        sendProblem(res, 'DEFAULT_5XX', randomUUID());
      } else {
        res.destroy();
      }
    });
  });
  // Handled in `handle`, so an oversized body can be refused before the client sends it.
  server.on('checkContinue', (req, res) => server.emit('request', req, res));

  const port = await listenOn(server, options.port, options.host);
  let closed: Promise<void> | undefined;
  return {
    server,
    port,
    url: `http://${options.host}:${port}`,
    close(graceMs = 3000) {
      closed ??= new Promise<void>((resolve) => {
        const force = setTimeout(() => server.closeAllConnections(), graceMs);
        force.unref();
        server.close(() => {
          clearTimeout(force);
          resolve();
        });
        server.closeIdleConnections();
      });
      return closed;
    },
  };
}

function describe(error: unknown): string {
  if (error instanceof Error) return error.stack ?? `${error.name}: ${error.message}`;
  return String(error);
}
