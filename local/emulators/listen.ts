import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';

/** A server listening on a port of its own. */
export interface Listening {
  /** `http://<host>:<port>`. */
  readonly endpoint: string;
  /** Closes the server and every connection it holds; once, however often it is called. */
  stop(): Promise<void>;
}

/** Starts `server` on a free port of `host`; a failure to listen rejects. */
export async function listen(server: Server, host: string): Promise<Listening> {
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const { port } = server.address() as AddressInfo;
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
