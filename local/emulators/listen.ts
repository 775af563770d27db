import type { Server } from 'node:http';
import type { AddressInfo, Server as NetServer } from 'node:net';

/** A server listening on a port of its own. */
export interface Listening {
  /** `http://<host>:<port>`. */
  readonly endpoint: string;
  /** Closes the server and every connection it holds; once, however often it is called. */
  stop(): Promise<void>;
}

/** Starts `server` on `port` of `host` (0: a free one) and answers the port it got; a failure to listen rejects. */
export async function listenOn(server: NetServer, port: number, host: string): Promise<number> {
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  return (server.address() as AddressInfo).port;
}

/**
 * How long an emulator keeps an idle connection open. A server that closes an
 * idle connection just as its client sends on it again fails that request
 * with a reset the client cannot tell from a network fault; Node's default of
 * 5 s put that race inside a busy test's pauses, a minute puts it outside.
 */
const IDLE_CONNECTION_MS = 60_000;

/** Starts `server` on a free port of `host`; a failure to listen rejects. */
export async function listen(server: Server, host: string): Promise<Listening> {
  server.keepAliveTimeout = IDLE_CONNECTION_MS;
  const port = await listenOn(server, 0, host);
  let stopped: Promise<void> | undefined;
  return {
    endpoint: `http://${host}:${port}`,
    stop() {
      stopped ??= new Promise<void>((resolve, reject) => {
        server.close((error) => (error ? reject(error) : resolve()));
        server.closeAllConnections();
      });
      return stopped;
    },
  };
}
