import { createHash } from 'node:crypto';
import { KEY_PATTERN } from './idempotency';

/**
 * How a recording is cut for transcription, and how each piece is named to
 * the provider. Pure: the adapter cuts the file where this plan says.
 */

export interface PlannedChunk {
  readonly index: number;
  readonly offsetSeconds: number;
  readonly durationSeconds: number;
}

/**
 * The tags every chunk file carries beside the recording's own (which the
 * split keeps: its title, its comment): where in the recording the chunk
 * starts and how long the whole recording is, in seconds. A chunk met on its
 * own, in the output bucket or by a provider that reads tags, says which
 * part of what it is; the simulated Deepgram reads them to hear a chunk's
 * share of a recording whose comment holds its words.
 */
export const CHUNK_TAGS = {
  offsetSeconds: 'LONGHAUL_CHUNK_OFFSET',
  recordingSeconds: 'LONGHAUL_RECORDING_DURATION',
} as const;

/**
 * A remainder shorter than this share of a chunk is folded into the chunk
 * before it: every chunk is one provider submission (a slot, a round trip, a
 * charge that may have a minimum) and every cut can split a word, so a
 * few-second tail is not worth its own. The longest chunk is then 1.1 chunks.
 */
export const MIN_TAIL_SHARE = 0.1;

/**
 * Chunks of `chunkSeconds` from the start; the last one holds the remainder.
 * Rule: with `n` whole chunks fitting in the duration and `r` seconds left,
 * a remainder of at least `MIN_TAIL_SHARE × chunkSeconds` becomes chunk `n`,
 * and a shorter one (or none) lengthens chunk `n − 1`; a recording no longer
 * than one chunk is one chunk. Offsets are `index × chunkSeconds` exactly (not
 * a running sum, so no rounding drifts), and the durations add up to the
 * recording's duration.
 */
export function planChunks(durationSeconds: number, chunkSeconds: number): PlannedChunk[] {
  if (!(Number.isFinite(durationSeconds) && durationSeconds > 0)) {
    throw new RangeError(`A recording to cut must last a positive, finite time, not ${durationSeconds} s.`);
  }
  if (!(Number.isFinite(chunkSeconds) && chunkSeconds > 0)) {
    throw new RangeError(`Chunks must last a positive, finite time, not ${chunkSeconds} s.`);
  }
  const whole = Math.floor(durationSeconds / chunkSeconds);
  const remainder = durationSeconds - whole * chunkSeconds;
  const count = Math.max(1, remainder >= MIN_TAIL_SHARE * chunkSeconds ? whole + 1 : whole);
  return Array.from({ length: count }, (_, index) => {
    const offsetSeconds = index * chunkSeconds;
    const last = index === count - 1;
    return { index, offsetSeconds, durationSeconds: last ? durationSeconds - offsetSeconds : chunkSeconds };
  });
}

const MAX_KEY_LENGTH = 255;
const CHUNK_MARK = ':chunk-';
/** The mark of a run of passages to embed (`embeddingIdempotencyKey`). */
const EMBED_MARK = ':embed-';
/** Hex characters of the job key's digest kept when the key is too long to keep whole: 104 bits. */
const DIGEST_CHARACTERS = 26;

/**
 * The provider idempotency key of one chunk of a job: the job's key (its
 * current submission key) with `:chunk-<index>` appended. Deterministic, so a
 * retried chunk submission reuses its key; distinct per chunk and per job key,
 * since the key parses back at its last `:chunk-` into the job key and the
 * index. Within the contract's 1..255 visible ASCII: a job key too long to
 * carry the suffix is shortened to a prefix plus a SHA-256 digest of the whole
 * key, which keeps keys distinct barring a hash collision.
 */
export const chunkIdempotencyKey = (jobKey: string, index: number): string =>
  childIdempotencyKey(jobKey, CHUNK_MARK, index);

/** The provider idempotency key of one run of a job's passages to embed, made as a chunk's is. */
export const embeddingIdempotencyKey = (jobKey: string, index: number): string =>
  childIdempotencyKey(jobKey, EMBED_MARK, index);

function childIdempotencyKey(jobKey: string, mark: string, index: number): string {
  if (!KEY_PATTERN.test(jobKey)) {
    throw new RangeError('A job key must be 1 to 255 visible ASCII characters.');
  }
  if (!(Number.isSafeInteger(index) && index >= 0)) {
    throw new RangeError(`A chunk index is a whole number from 0, not ${index}.`);
  }
  const suffix = `${mark}${index}`;
  if (jobKey.length + suffix.length <= MAX_KEY_LENGTH) return `${jobKey}${suffix}`;
  const digest = createHash('sha256').update(jobKey, 'utf8').digest('hex').slice(0, DIGEST_CHARACTERS);
  const prefix = jobKey.slice(0, MAX_KEY_LENGTH - suffix.length - DIGEST_CHARACTERS - 1);
  return `${prefix}~${digest}${suffix}`;
}
