import type { AddressInfo } from 'node:net';

import dynalite = require('dynalite');

/**
 * DynamoDB, emulated by dynalite on LevelDB. Verified against what Longhaul
 * relies on: conditional PutItem and UpdateItem, GSIs with ALL and KEYS_ONLY
 * projections, sparse indexes and ExclusiveStartKey paging on a GSI query.
 * Not implemented: UpdateTimeToLive (UnknownOperationException) and TTL expiry,
 * TransactWriteItems, ReturnValuesOnConditionCheckFailure.
 */
export interface DynamoDbEmulator {
  readonly endpoint: string;
  stop(): Promise<void>;
}

export async function startDynamoDbEmulator(options: {
  readonly host: string;
  /** LevelDB directory; a restart on the same directory resumes from it. */
  readonly path: string;
}): Promise<DynamoDbEmulator> {
  // Tables still pass through CREATING (callers wait for ACTIVE as in AWS), just without the emulator's 500 ms pause.
  const server = dynalite({ path: options.path, createTableMs: 0, deleteTableMs: 0, updateTableMs: 0 });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, options.host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const { port } = server.address() as AddressInfo;
  let stopped: Promise<void> | undefined;
  return {
    endpoint: `http://${options.host}:${port}`,
    stop() {
      // dynalite's close also closes LevelDB once pending writes are done, so the next start finds every write.
      stopped ??= new Promise<void>((resolve, reject) =>
        server.close((error) => (error ? reject(error) : resolve())),
      );
      return stopped;
    },
  };
}
