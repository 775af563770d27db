import { createHash, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { Http2ServerRequest, type Http2ServerResponse, constants as http2Constants } from 'node:http2';
import type * as z from 'zod';

/**
 * HTTP plumbing every dialect shares. Each dialect answers errors in its own
 * provider's format, so an HttpError carries the finished body rather than a
 * code and a message.
 */

const MAX_BODY_BYTES = 1024 * 1024;

/**
 * A request as either protocol the simulator speaks delivers it: HTTP/1.1,
 * or HTTP/2 with prior knowledge for a dialect whose SDK uses it (see
 * ./simulator).
 */
export type SimRequest = IncomingMessage | Http2ServerRequest;
export type SimResponse = ServerResponse | Http2ServerResponse;

export class HttpError extends Error {
  constructor(
    readonly status: number,
    readonly body: unknown,
    readonly headers: Readonly<Record<string, string>> = {},
  ) {
    super(`HTTP ${status}`);
  }
}

/** An error body in the generic (`longhaul-http`) format, also used by the `/_sim/*` controls. */
export function genericError(status: number, code: string, message: string): HttpError {
  return new HttpError(status, { error: { code, message } });
}

export function allow(method: string, ...allowed: string[]): void {
  if (!allowed.includes(method)) {
    throw genericError(405, 'method_not_allowed', `Use ${allowed.join(' or ')}.`);
  }
}

/** The schema's value, or a 400 in the generic format listing every issue. */
export function parse<T>(schema: z.ZodType<T>, value: unknown): T {
  const result = schema.safeParse(value);
  if (result.success) return result.data;
  throw genericError(400, 'invalid_request', describeIssues(result.error));
}

export function describeIssues(error: z.ZodError): string {
  return error.issues.map((issue) => `${issue.path.join('.') || '(body)'}: ${issue.message}`).join('; ');
}

export async function readBody(req: SimRequest): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > MAX_BODY_BYTES) throw genericError(413, 'payload_too_large', 'Bodies are limited to 1 MiB.');
    chunks.push(chunk);
  }
  return Buffer.concat(chunks);
}

/** The parsed JSON body; `invalid` builds the dialect's own error when it is not JSON. */
export async function readJson(
  req: SimRequest,
  invalid: () => HttpError = () => genericError(400, 'invalid_request', 'The body is not valid JSON.'),
): Promise<unknown> {
  const body = await readBody(req);
  try {
    return JSON.parse(body.toString('utf8'));
  } catch {
    throw invalid();
  }
}

export function sendJson(
  res: SimResponse,
  status: number,
  body: unknown,
  headers: Readonly<Record<string, string>> = {},
): void {
  if (res.headersSent || res.destroyed) return;
  const text = JSON.stringify(body);
  // A body may name its own JSON media type (application/problem+json).
  const all = { 'content-type': 'application/json', ...headers, 'content-length': Buffer.byteLength(text) };
  // Set one by one: the two protocols' responses share these calls, not writeHead's overloads.
  res.statusCode = status;
  for (const [name, value] of Object.entries(all)) res.setHeader(name, value);
  res.end(text);
}

export function singleHeader(req: IncomingMessage, name: string): string | undefined {
  const value = req.headers[name];
  return Array.isArray(value) ? value[0] : value;
}

/**
 * Whether `Authorization` is `<scheme> <apiKey>`. Always true when no key is
 * configured; compared in constant time when one is.
 */
export function hasApiKey(req: IncomingMessage, scheme: string, apiKey: string | undefined): boolean {
  if (apiKey === undefined) return true;
  const match = new RegExp(`^${scheme} (.+)$`).exec(req.headers.authorization ?? '');
  return match?.[1] !== undefined && timingSafeEqual(sha256(match[1]), sha256(apiKey));
}

function sha256(value: string): Buffer {
  return createHash('sha256').update(value).digest();
}

/**
 * Ends an exchange without an answer, as a connection lost mid-call: over
 * HTTP/2 only the request's stream is reset (its connection carries other
 * calls), over HTTP/1.1 the connection is.
 */
export function resetExchange(req: SimRequest): void {
  if (req instanceof Http2ServerRequest) req.stream.close(http2Constants.NGHTTP2_INTERNAL_ERROR);
  else req.socket.resetAndDestroy();
}

export function isoNow(): string {
  return new Date().toISOString();
}
