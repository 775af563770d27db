import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * A loopback HTTP server that plays a provider and misbehaves on purpose, so
 * each adapter's real requests (through the real SDK) can be asserted and each
 * failure checked to land in the right class: that class decides between
 * retrying, failing the job and asking a person.
 */

export type Behaviour = (request: IncomingMessage, response: ServerResponse) => void;

export interface SeenRequest {
  readonly method: string | undefined;
  readonly url: string | undefined;
  readonly headers: IncomingMessage['headers'];
  readonly body: string;
}

export class FakeProvider {
  readonly seen: SeenRequest[] = [];
  behaviour: Behaviour = answer(500, {});
  private server: Server | undefined;
  private port = 0;

  get url(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  async start(): Promise<void> {
    this.server = createServer((request, response) => {
      const chunks: Buffer[] = [];
      request.on('data', (chunk: Buffer) => chunks.push(chunk));
      request.on('end', () => {
        this.seen.push({
          method: request.method,
          url: request.url,
          headers: request.headers,
          body: Buffer.concat(chunks).toString(),
        });
        this.behaviour(request, response);
      });
    });
    const server = this.server;
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    this.port = (server.address() as AddressInfo).port;
  }

  reset(): void {
    this.seen.length = 0;
    this.behaviour = answer(500, {});
  }

  async stop(): Promise<void> {
    const server = this.server;
    if (!server) return;
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }
}

export const answer =
  (status: number, body: unknown, headers: Record<string, string> = {}): Behaviour =>
  (_, response) => {
    response
      .writeHead(status, { 'content-type': 'application/json', ...headers })
      .end(typeof body === 'string' ? body : JSON.stringify(body));
  };

/** Drops the connection once the whole request has arrived: the provider may have acted on it. */
export const reset: Behaviour = (request) => request.socket.destroy();

/** Takes the request and never answers. */
export const silence: Behaviour = () => {};

/** A loopback URL nothing listens on: the connection is refused before a byte is sent. */
export async function closedUrl(): Promise<string> {
  const closed = createServer();
  await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
  const port = (closed.address() as AddressInfo).port;
  await new Promise((resolve) => closed.close(resolve));
  return `http://127.0.0.1:${port}`;
}

/** The submission deadline of the fault cases: long enough for a loopback answer, short enough to wait out. */
export const FAULT_TIMEOUT_MS = 500;

/** The faults every submission must classify, with the error name each leads to and how many requests arrive. */
export const SUBMISSION_FAULTS: readonly {
  readonly fault: string;
  readonly behaviour: Behaviour;
  readonly error: Record<string, unknown>;
}[] = [
  {
    fault: '400',
    behaviour: answer(400, { detail: 'bad input' }),
    error: { name: 'ProviderRejected', code: 'provider_rejected_400' },
  },
  {
    fault: '422',
    behaviour: answer(422, { detail: 'invalid' }),
    error: { name: 'ProviderRejected', code: 'provider_rejected_422' },
  },
  {
    fault: '429',
    behaviour: answer(429, {}, { 'retry-after': '1' }),
    error: { name: 'ProviderUnavailable' },
  },
  { fault: '503', behaviour: answer(503, {}), error: { name: 'ProviderUnavailable' } },
  {
    fault: '500 after the request was written',
    behaviour: answer(500, {}),
    error: { name: 'ProviderAmbiguous' },
  },
  { fault: 'a reset after the request was written', behaviour: reset, error: { name: 'ProviderAmbiguous' } },
  { fault: 'a timeout', behaviour: silence, error: { name: 'ProviderAmbiguous' } },
  {
    fault: 'a 201 whose body does not parse',
    behaviour: answer(201, '{"id": '),
    error: { name: 'ProviderAmbiguous' },
  },
];
