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
  const signal = AbortSignal.timeout(timeoutMs);
  let target = url;
  let response: Response;
  for (let hop = 0; ; hop++) {
    try {
      response = await fetch(target, { redirect: 'manual', signal });
    } catch (error) {
      throw new AssetUnavailableError(`The input could not be fetched: ${(error as Error).message}`);
    }
    const location = response.headers.get('location');
    if (response.status < 300 || response.status >= 400 || location === null) break;
    await response.body?.cancel();
    const next = new URL(location, target);
    // Followed by hand: an https input must not be redirected to plain http, where a compute
    // task's own metadata endpoints answer (ECS serves the task role's credentials over http).
    if (next.protocol !== 'https:' || hop >= MAX_REDIRECTS) {
      throw new InvalidJobInputError(
        `[input_not_found] The input redirects to ${next.protocol === 'https:' ? 'too many places' : `a ${next.protocol.slice(0, -1)} URL`}; only https is followed, at most ${MAX_REDIRECTS} times.`,
        'input_not_found',
      );
    }
    target = next.href;
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

/** Redirects followed for one input: fetch's default of 20 is more than any media host needs. */
const MAX_REDIRECTS = 5;
