import { createServer, request as httpRequest, type Server } from 'node:http';
import { type AddressInfo, connect, type Socket } from 'node:net';

/**
 * A reverse proxy in front of the local stack that records the target of
 * every request and WebSocket handshake passing through it, so a test can
 * check what a client put in its URLs. It forwards the Host header as it
 * came, so URLs the API derives from it (a stream ticket's streamUrl) lead
 * back through the proxy too.
 */
export interface RecordingProxy {
  /** `http://127.0.0.1:<port>`: point the client here. */
  readonly url: string;
  /** Request targets (path and query) in the order they arrived; handshakes prefixed with `upgrade `. */
  readonly targets: string[];
  close(): Promise<void>;
}

export async function startRecordingProxy(upstreamUrl: string): Promise<RecordingProxy> {
  const upstream = new URL(upstreamUrl);
  const targets: string[] = [];
  const sockets = new Set<Socket>();
  const server: Server = createServer((request, response) => {
    targets.push(request.url ?? '/');
    const forward = httpRequest(
      {
        host: upstream.hostname,
        port: upstream.port,
        method: request.method,
        path: request.url,
        headers: request.headers,
      },
      (answer) => {
        response.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(response);
      },
    );
    forward.on('error', () => response.destroy());
    request.pipe(forward);
  });
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
  });
  server.on('upgrade', (request, client: Socket, head: Buffer) => {
    targets.push(`upgrade ${request.url ?? '/'}`);
    const upstreamSocket = connect(Number(upstream.port), upstream.hostname, () => {
      const lines = [`${request.method} ${request.url} HTTP/1.1`];
      for (let i = 0; i < request.rawHeaders.length; i += 2) {
        lines.push(`${request.rawHeaders[i]}: ${request.rawHeaders[i + 1]}`);
      }
      upstreamSocket.write(`${lines.join('\r\n')}\r\n\r\n`);
      if (head.length > 0) upstreamSocket.write(head);
      upstreamSocket.pipe(client);
      client.pipe(upstreamSocket);
    });
    sockets.add(upstreamSocket);
    upstreamSocket.once('close', () => sockets.delete(upstreamSocket));
    const cut = () => {
      client.destroy();
      upstreamSocket.destroy();
    };
    upstreamSocket.on('error', cut);
    client.on('error', cut);
  });
  await new Promise<void>((listening) => server.listen(0, '127.0.0.1', listening));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    targets,
    close: async () => {
      for (const socket of sockets) socket.destroy();
      await new Promise((closed) => server.close(closed));
    },
  };
}
