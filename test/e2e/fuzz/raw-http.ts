import { Agent, request as httpRequest, type IncomingHttpHeaders } from 'node:http';

/**
 * A raw HTTP client for the fuzz suite: exact bytes, repeated header lines,
 * any method and path, so a request can be anything a client on the network
 * could send, not only what fetch agrees to.
 */

export interface RawRequest {
  readonly method: string;
  /** Sent as is: the generators encode what Node refuses to send. */
  readonly path: string;
  /** Repeated names are sent as repeated header lines. */
  readonly headers: readonly (readonly [string, string])[];
  readonly body?: Buffer;
}

export interface RawResponse {
  readonly status: number;
  readonly headers: IncomingHttpHeaders;
  readonly body: Buffer;
}

export const agent = new Agent({ keepAlive: true, maxSockets: 4 });

export function send(baseUrl: string, req: RawRequest): Promise<RawResponse> {
  const { hostname, port } = new URL(baseUrl);
  const flat: string[] = [];
  const named = (wanted: string) => req.headers.some(([name]) => name.toLowerCase() === wanted);
  // With headers given as a list, Node adds neither: the client sends them as any HTTP/1.1 client would.
  if (!named('host')) flat.push('Host', `${hostname}:${port}`);
  if (!named('content-length') && !named('transfer-encoding'))
    flat.push('Content-Length', String(req.body?.length ?? 0));
  for (const [name, value] of req.headers) flat.push(name, value);
  return new Promise((resolve, reject) => {
    const outgoing = httpRequest(
      { host: hostname, port, method: req.method, path: req.path, headers: flat, agent, timeout: 30_000 },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('end', () =>
          resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) }),
        );
        res.on('error', reject);
      },
    );
    outgoing.on('timeout', () => outgoing.destroy(new Error('no answer within 30 s')));
    outgoing.on('error', reject);
    outgoing.end(req.body);
  });
}

export const describeRequest = (req: RawRequest): string => {
  const body = req.body ?? Buffer.alloc(0);
  const shown =
    body.length > 600 ? `${body.subarray(0, 600).toString('latin1')}… (${body.length} bytes)` : body;
  return `${req.method} ${req.path.length > 300 ? `${req.path.slice(0, 300)}… (${req.path.length} chars)` : req.path}\n${req.headers
    .map(
      ([name, value]) =>
        `${name}: ${value.length > 200 ? `${value.slice(0, 200)}… (${value.length} chars)` : value}`,
    )
    .join('\n')}\n\n${String(shown)}`;
};

/** API Gateway refuses a request line and headers over 10240 bytes before any route; the fuzz stays below. */
export const API_GATEWAY_HEAD_LIMIT = 10_240;

export const headSize = (req: RawRequest): number =>
  req.method.length +
  req.path.length +
  req.headers.reduce((sum, [name, value]) => sum + name.length + value.length + 4, 0);

export const clip = (text: string, max = 400) =>
  text.length > max ? `${text.slice(0, max)}… (${text.length} chars)` : text;
