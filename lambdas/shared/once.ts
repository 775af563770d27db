/**
 * A value built on its first use and then kept for the life of the execution
 * environment. Clients and adapters are built this way: once per cold start,
 * and never by a function whose invocations do not need them (nor, so, with
 * an environment variable that function was not given).
 *
 * Each port's adapter has a module of its own under ports/ (the SDK clients
 * several of them share, under clients/), so that each handler, importing
 * the ports it uses, is the composition root of its function: its bundle
 * holds those adapters and their SDK clients, and loads no other client.
 */
export function once<T>(create: () => T): () => T {
  let value: T | undefined;
  return () => {
    value ??= create();
    return value;
  };
}
