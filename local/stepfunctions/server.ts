import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { ApiError } from './errors';

/**
 * The Step Functions wire protocol as the AWS SDK speaks it (AWS JSON 1.0):
 * POST / with `X-Amz-Target: AWSStepFunctions.<Action>` and a JSON body;
 * errors are HTTP 400 with `{"__type": "<ErrorName>", "message": ...}`.
 * Requests are not authenticated: the emulator listens on loopback only.
 */

const TARGET_PREFIX = 'AWSStepFunctions.';
const CONTENT_TYPE = 'application/x-amz-json-1.0';
/** Comfortably above the largest request Step Functions accepts (256 KiB of input plus the envelope). */
const MAX_BODY_BYTES = 1024 * 1024;

export type Dispatch = (action: string, body: Record<string, unknown>) => unknown;

export function createApiServer(dispatch: Dispatch): Server {
  return createServer((request, response) => {
    void serve(request, response, dispatch);
  });
}

async function serve(request: IncomingMessage, response: ServerResponse, dispatch: Dispatch): Promise<void> {
  const requestId = randomUUID();
  const send = (status: number, payload: unknown) => {
    const body = JSON.stringify(payload);
    response.writeHead(status, {
      'content-type': CONTENT_TYPE,
      'content-length': Buffer.byteLength(body),
      'x-amzn-requestid': requestId,
    });
    response.end(body);
  };
  try {
    const target = request.headers['x-amz-target'];
    if (request.method !== 'POST' || typeof target !== 'string' || !target.startsWith(TARGET_PREFIX)) {
      throw new ApiError(
        'UnknownOperationException',
        `Expected POST with X-Amz-Target: ${TARGET_PREFIX}<Action>`,
      );
    }
    const body = parseBody(await readBody(request));
    send(200, await dispatch(target.slice(TARGET_PREFIX.length), body));
  } catch (error) {
    if (error instanceof ApiError) {
      send(400, { __type: error.type, message: error.message, ...error.fields });
    } else {
      send(500, { __type: 'InternalFailure', message: (error as Error)?.message ?? String(error) });
    }
  }
}

async function readBody(request: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of request) {
    size += (chunk as Buffer).length;
    if (size > MAX_BODY_BYTES) throw new ApiError('ValidationException', 'The request body is too large');
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks).toString('utf8');
}

function parseBody(text: string): Record<string, unknown> {
  let body: unknown;
  try {
    body = text.trim() === '' ? {} : JSON.parse(text);
  } catch {
    throw new ApiError('SerializationException', 'The request body is not valid JSON');
  }
  if (body === null || typeof body !== 'object' || Array.isArray(body)) {
    throw new ApiError('SerializationException', 'The request body must be a JSON object');
  }
  return body as Record<string, unknown>;
}
