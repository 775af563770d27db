import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { S3VectorsClient, S3VectorsServiceException } from '@aws-sdk/client-s3vectors';
import {
  type S3VectorsEmulator,
  type S3VectorsEmulatorOptions,
  startS3VectorsEmulator,
} from '../../../local/emulators/s3-vectors';

/** The local S3 Vectors in a data directory of its own, with a real SDK client pointed at it. */
export interface EmulatedS3Vectors {
  readonly dir: string;
  readonly emulator: S3VectorsEmulator;
  /** No retries: a throttled request is seen as it is answered. */
  readonly client: S3VectorsClient;
  /** Stops it and starts it again on the same data directory. */
  restart(): Promise<EmulatedS3Vectors>;
  /** Stops it; the data directory stays. */
  stop(): Promise<void>;
}

export async function startEmulatedS3Vectors(
  options: Omit<S3VectorsEmulatorOptions, 'dataDir'> & { readonly dir?: string } = {},
): Promise<EmulatedS3Vectors> {
  const dir = options.dir ?? mkdtempSync(join(tmpdir(), 'longhaul-s3vectors-'));
  const emulator = await startS3VectorsEmulator({ ...options, dataDir: dir });
  const client = new S3VectorsClient({
    endpoint: emulator.url,
    region: 'us-east-1',
    credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
    maxAttempts: 1,
  });
  const stop = async () => {
    client.destroy();
    await emulator.close();
  };
  return {
    dir,
    emulator,
    client,
    stop,
    async restart() {
      await stop();
      return startEmulatedS3Vectors({ ...options, dir });
    },
  };
}

export const removeDataDir = (dir: string): void => rmSync(dir, { recursive: true, force: true });

/** The error `act` failed with, as the SDK raised it; fails the test when it succeeded. */
export async function refusalOf(act: Promise<unknown>): Promise<S3VectorsServiceException> {
  try {
    await act;
  } catch (error) {
    expect(error).toBeInstanceOf(S3VectorsServiceException);
    return error as S3VectorsServiceException;
  }
  throw new Error('expected a refusal, got a success');
}

/** `error`'s name and HTTP status, as one comparable value. */
export const refusal = (error: S3VectorsServiceException) => ({
  name: error.name,
  status: error.$metadata.httpStatusCode,
});
