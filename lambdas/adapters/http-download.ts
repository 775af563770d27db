import { createWriteStream } from 'node:fs';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { ReadableStream as WebReadableStream } from 'node:stream/web';
import { AssetUnavailableError, InvalidJobInputError } from '../domain/errors';

/**
 * Streams what `url` answers into `file`: a recording can be gigabytes, more
 * than a compute step should hold in memory. An answer that says the input is
 * gone fails the job (`input_not_found`); anything else that stops the
 * download is worth a retry (`AssetUnavailable`).
 */
export async function downloadToFile(url: string, file: string, timeoutMs: number): Promise<void> {
  let response: Response;
  try {
    response = await fetch(url, { redirect: 'follow', signal: AbortSignal.timeout(timeoutMs) });
  } catch (error) {
    throw new AssetUnavailableError(`The input could not be fetched: ${(error as Error).message}`);
  }
  if (response.status === 403 || response.status === 404 || response.status === 410) {
    await response.body?.cancel();
    throw new InvalidJobInputError(
      `[input_not_found] The input answered ${response.status}.`,
      'input_not_found',
    );
  }
  if (!response.ok || !response.body) {
    await response.body?.cancel();
    throw new AssetUnavailableError(`The input answered ${response.status}.`);
  }
  try {
    await pipeline(Readable.fromWeb(response.body as WebReadableStream<Uint8Array>), createWriteStream(file));
  } catch (error) {
    throw new AssetUnavailableError(`The input's download broke off: ${(error as Error).message}`);
  }
}
