import { createHash } from 'node:crypto';
import { CHUNK_TAGS } from '../../lambdas/domain/chunks';
import { readAudioTags } from './audio-tags';
import type { PlaceInRecording } from './words';

/**
 * What the simulated Deepgram learns of the audio it is given, as Deepgram
 * does: its length, read from the header of a FLAC (STREAMINFO) or WAV
 * (`fmt ` and `data` chunks) file, and the SHA-256 of its bytes. Unlike
 * Deepgram, it also reads the recording's tags (./audio-tags): a comment
 * there is what the recording says, and a chunk cut by Longhaul's split step
 * names its place in its recording (CHUNK_TAGS). Audio with neither a
 * length nor a comment it can read (another format, a URL that does not
 * answer) reads as unknown, and the dialect then answers as it always did.
 */

/** Audio whose length or comment could be read. */
export interface HeardAudio {
  /** Undefined for a format whose length is not read here (an MP3, say). */
  readonly durationSeconds: number | undefined;
  /** Of the audio's bytes, as Deepgram's `metadata.sha256`. */
  readonly sha256: string;
  /** The recording's comment tag, when it holds a word. */
  readonly comment: string | undefined;
  /** Where a chunk cut by the split step lies in its recording, when its tags say. */
  readonly place: PlaceInRecording | undefined;
}

/** Deepgram's own limit on a pre-recorded file: anything longer is not read. */
export const MAX_AUDIO_BYTES = 2 * 1024 ** 3;

/**
 * How much of the start of a file the header readers get: a WAV's chunks
 * before `data` fit in it, and a comment as long as an hour's sermon.
 */
const HEAD_BYTES = 1024 * 1024;

/** A fetch that has not finished by then reads as unknown, so no submission waits on it for long. */
export const AUDIO_FETCH_TIMEOUT_MS = 30_000;

/** The length of the audio whose first bytes are `head`, of `totalBytes` in all; undefined when unknown. */
export function audioDurationSeconds(head: Buffer, totalBytes: number): number | undefined {
  const seconds = flacSeconds(head) ?? wavSeconds(head, totalBytes);
  return seconds !== undefined && Number.isFinite(seconds) && seconds > 0 ? seconds : undefined;
}

/** What the first bytes of a file of `totalBytes` tell, given its hash; undefined when nothing. */
function heard(head: Buffer, totalBytes: number, sha256: string): HeardAudio | undefined {
  const durationSeconds = audioDurationSeconds(head, totalBytes);
  const tags = readAudioTags(head);
  const comment = tags.comment !== undefined && /[\p{L}\p{N}]/u.test(tags.comment) ? tags.comment : undefined;
  if (durationSeconds === undefined && comment === undefined) return undefined;
  const offsetSeconds = Number(tags.all.get(CHUNK_TAGS.offsetSeconds.toLowerCase()));
  const recordingSeconds = Number(tags.all.get(CHUNK_TAGS.recordingSeconds.toLowerCase()));
  const placed = Number.isFinite(offsetSeconds) && offsetSeconds >= 0 && recordingSeconds > 0;
  return {
    durationSeconds,
    sha256,
    comment,
    place: placed ? { offsetSeconds, recordingSeconds } : undefined,
  };
}

/** Audio sent as the request's body. */
export function hearBytes(body: Buffer): HeardAudio | undefined {
  return heard(body, body.length, createHash('sha256').update(body).digest('hex'));
}

/**
 * Audio at an http(s) URL, streamed once: hashed whole, only its head kept.
 * Undefined when it cannot be fetched within `timeoutMs`, is larger than
 * Deepgram takes, or neither its length nor a comment can be read.
 */
export async function hearUrl(
  url: string,
  timeoutMs: number = AUDIO_FETCH_TIMEOUT_MS,
): Promise<HeardAudio | undefined> {
  if (!/^https?:$/.test(new URL(url).protocol)) return undefined;
  const signal = AbortSignal.timeout(timeoutMs);
  try {
    const response = await fetch(url, { signal });
    if (!response.ok || !response.body) {
      await response.body?.cancel();
      return undefined;
    }
    const hash = createHash('sha256');
    const head: Buffer[] = [];
    let headBytes = 0;
    let totalBytes = 0;
    for await (const chunk of response.body as AsyncIterable<Uint8Array>) {
      totalBytes += chunk.length;
      if (totalBytes > MAX_AUDIO_BYTES) {
        await response.body.cancel().catch(() => {});
        return undefined;
      }
      hash.update(chunk);
      if (headBytes < HEAD_BYTES) {
        head.push(Buffer.from(chunk.subarray(0, HEAD_BYTES - headBytes)));
        headBytes += Math.min(chunk.length, HEAD_BYTES - headBytes);
      }
    }
    return heard(Buffer.concat(head), totalBytes, hash.digest('hex'));
  } catch {
    // Unreachable, refused, reset or too slow: Deepgram would not have heard it either.
    return undefined;
  }
}

/** FLAC: `fLaC`, then STREAMINFO, whose 36-bit sample count is 0 when the encoder did not know it. */
function flacSeconds(head: Buffer): number | undefined {
  if (head.length < 42 || head.toString('latin1', 0, 4) !== 'fLaC' || (head[4] ?? 0x7f) & 0x7f) {
    return undefined;
  }
  // Sample rate (20 bits), channels - 1 (3), bits per sample - 1 (5), total samples (36).
  const packed = head.readBigUInt64BE(18);
  const sampleRate = Number(packed >> 44n);
  const samples = Number(packed & 0xfffffffffn);
  return sampleRate > 0 && samples > 0 ? samples / sampleRate : undefined;
}

/**
 * WAV: the `data` chunk's size over the `fmt ` chunk's byte rate. A streamed
 * WAV's `data` size is a placeholder (0 or 0xFFFFFFFF): then whatever
 * follows the chunk's header is the audio.
 */
function wavSeconds(head: Buffer, totalBytes: number): number | undefined {
  if (
    head.length < 12 ||
    head.toString('latin1', 0, 4) !== 'RIFF' ||
    head.toString('latin1', 8, 12) !== 'WAVE'
  ) {
    return undefined;
  }
  let byteRate: number | undefined;
  let offset = 12;
  while (offset + 8 <= head.length) {
    const id = head.toString('latin1', offset, offset + 4);
    const size = head.readUInt32LE(offset + 4);
    if (id === 'fmt ' && offset + 20 <= head.length) byteRate = head.readUInt32LE(offset + 16);
    if (id === 'data') {
      if (!byteRate) return undefined;
      const available = totalBytes - (offset + 8);
      const dataBytes = size === 0 || size === 0xffffffff || size > available ? available : size;
      return dataBytes / byteRate;
    }
    offset += 8 + size + (size % 2);
  }
  return undefined;
}
