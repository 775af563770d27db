import type { APIGatewayProxyEvent, APIGatewayProxyResult } from 'aws-lambda';
import { PROBLEM_CONTENT_TYPE, type Problem } from '../../config/problems';
import { PayloadTooLargeError, UnsupportedMediaTypeError, ValidationError } from '../domain/errors';

/** Request and response plumbing of the REST API's Lambda proxy integration. */

/** A header by name, case-insensitively, as API Gateway passes headers as the client sent them. */
export function header(event: Pick<APIGatewayProxyEvent, 'headers'>, name: string): string | undefined {
  const wanted = name.toLowerCase();
  for (const [key, value] of Object.entries(event.headers ?? {})) {
    if (key.toLowerCase() === wanted && value !== undefined) return value;
  }
  return undefined;
}

/** The media type's essence (`type/subtype`, lower case), without parameters. */
export function mediaType(event: APIGatewayProxyEvent): string | undefined {
  const value = header(event, 'content-type');
  return value?.split(';', 1)[0]?.trim().toLowerCase() || undefined;
}

export function bodyBytes(event: APIGatewayProxyEvent): Buffer {
  if (event.body === null || event.body === undefined) return Buffer.alloc(0);
  return Buffer.from(event.body, event.isBase64Encoded ? 'base64' : 'utf8');
}

/**
 * Decodes the body as JSON, refusing (before parsing) anything that is not
 * `application/json` or is larger than `limitBytes`.
 */
export function jsonBody(event: APIGatewayProxyEvent, limitBytes: number): unknown {
  const type = mediaType(event);
  if (type !== 'application/json') {
    throw new UnsupportedMediaTypeError(`Send the body as application/json${type ? `, not ${type}` : ''}.`);
  }
  const bytes = bodyBytes(event);
  if (bytes.length > limitBytes)
    throw new PayloadTooLargeError(`JSON bodies are limited to ${limitBytes} bytes.`);
  return parseJson(bytes);
}

export function parseJson(bytes: Uint8Array): unknown {
  if (bytes.length === 0) throw new ValidationError('The request body is empty; send a JSON object.');
  let text: string;
  try {
    text = new TextDecoder('utf-8', { fatal: true }).decode(bytes);
  } catch {
    throw new ValidationError('The request body is not valid UTF-8.');
  }
  try {
    return JSON.parse(text);
  } catch (error) {
    throw new ValidationError(`The request body is not valid JSON: ${(error as Error).message}`);
  }
}

const baseHeaders = { 'cache-control': 'no-store' } as const;

export function json(
  statusCode: number,
  body: unknown,
  headers: Record<string, string> = {},
): APIGatewayProxyResult {
  return {
    statusCode,
    headers: { ...baseHeaders, 'content-type': 'application/json', ...headers },
    body: JSON.stringify(body),
  };
}

export function problemResult(problem: Problem, headers: Record<string, string> = {}): APIGatewayProxyResult {
  return {
    statusCode: problem.status,
    headers: { ...baseHeaders, 'content-type': PROBLEM_CONTENT_TYPE, ...headers },
    body: JSON.stringify(problem),
  };
}

/**
 * The path prefix the client used before the route (the stage, or a custom
 * domain's base path), so Location headers resolve against the same API.
 */
export function basePath(event: APIGatewayProxyEvent): string {
  const full = event.requestContext?.path ?? event.path;
  return full.endsWith(event.path) ? full.slice(0, full.length - event.path.length) : '';
}
