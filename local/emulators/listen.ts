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

/** Starts `server` on a free port of `host`; a failure to listen rejects. */
export async function listen(server: Server, host: string): Promise<Listening> {
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
