import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { type Listening, listen } from './listen';

/**
 * The AWS JSON 1.1 wire protocol that the SDK speaks to EventBridge and
 * Secrets Manager: POST / with `X-Amz-Target: <prefix><Action>` and a JSON
 * object as the body; a service error is answered 400 with `{__type,
 * message}`, and every answer carries an `x-amzn-requestid`. Each emulator
 * brings its operations; this is the protocol they share. Requests are not
 * authenticated (the handlers' calls are checked against their role by the
 * local IAM), so a server listens on loopback only.
 */

const CONTENT_TYPE = 'application/x-amz-json-1.1';

/** A service's own error: its `__type` and message. */
export class ServiceError extends Error {
  constructor(
    readonly type: string,
    message: string,
  ) {
    super(message);
  }
}

export interface AwsJsonService {
  /** What `X-Amz-Target` starts with, the action after it: `AWSEvents.`, `secretsmanager.`. */
  readonly targetPrefix: string;
  /** A larger body is refused before it is parsed. */
  readonly maxBodyBytes: number;
  /** The operations answered, by action; any other is an UnknownOperationException. */
  readonly operations: Readonly<Record<string, (body: Record<string, unknown>) => unknown>>;
  /** The `__type` and message of a failure of the emulator itself (each service names its own). */
  readonly internalError: { readonly type: string; readonly message: string };
  /** Plain JSON answers to GET beside the protocol, for tests and operators: undefined where none. */
  readonly get?: (path: string) => unknown;
}

export async function startAwsJsonServer(host: string, service: AwsJsonService): Promise<Listening> {
  async function serve(request: IncomingMessage, response: ServerResponse): Promise<void> {
    const send = (status: number, payload: unknown, contentType = CONTENT_TYPE) => {
      const text = JSON.stringify(payload);
      response.writeHead(status, {
        'content-type': contentType,
        'content-length': Buffer.byteLength(text),
        'x-amzn-requestid': randomUUID(),
      });
      response.end(text);
    };
    try {
      if (request.method === 'GET' && service.get) {
        const answer = service.get(new URL(request.url ?? '/', 'http://localhost').pathname);
        if (answer !== undefined) {
          send(200, answer, 'application/json');
          return;
        }
      }
      const target = request.headers['x-amz-target'];
      const prefix = service.targetPrefix;
      if (request.method !== 'POST' || typeof target !== 'string' || !target.startsWith(prefix)) {
        throw new ServiceError(
          'UnknownOperationException',
          `Expected POST with X-Amz-Target: ${prefix}<Action>`,
        );
      }
      const action = target.slice(prefix.length);
      const body = await readJson(request, service.maxBodyBytes);
      const operation = Object.hasOwn(service.operations, action) ? service.operations[action] : undefined;
      if (!operation) {
        throw new ServiceError('UnknownOperationException', `${action} is not implemented locally`);
      }
      send(200, operation(body));
    } catch (error) {
      if (error instanceof ServiceError) send(400, { __type: error.type, message: error.message });
      else send(500, { __type: service.internalError.type, message: service.internalError.message });
    }
  }

  const server = createServer((request, response) => {
    void serve(request, response);
  });
  return listen(server, host);
}

async function readJson(request: IncomingMessage, maxBytes: number): Promise<Record<string, unknown>> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of request as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > maxBytes) throw new ServiceError('ValidationException', 'The request body is too large.');
    chunks.push(chunk);
  }
  let body: unknown;
  try {
    const text = Buffer.concat(chunks).toString('utf8');
    body = text.trim() === '' ? {} : JSON.parse(text);
  } catch {
    throw new ServiceError('SerializationException', 'The request body is not valid JSON.');
  }
  if (body === null || typeof body !== 'object' || Array.isArray(body)) {
    throw new ServiceError('SerializationException', 'The request body must be a JSON object.');
  }
  return body as Record<string, unknown>;
}
