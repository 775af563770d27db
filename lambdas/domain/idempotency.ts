import { createHash } from 'node:crypto';
import canonicalize from 'canonicalize';
import {
  IdempotencyKeyInUseError,
  IdempotencyKeyMissingError,
  IdempotencyKeyReusedError,
  ValidationError,
} from './errors';
import type { Job } from './job';

export { JOB_ID_PATTERN, SCHEDULE_ID_PATTERN } from './ids';

/** 1..255 visible ASCII characters, as the contract allows. */
export const KEY_PATTERN = /^[\x21-\x7e]{1,255}$/;

/** The key, or IdempotencyKeyMissingError naming where it was looked for (`where`, the header by default). */
export function requireIdempotencyKey(
  value: string | undefined,
  where = 'The Idempotency-Key header',
): string {
  if (value === undefined || !KEY_PATTERN.test(value)) {
    throw new IdempotencyKeyMissingError(
      value === undefined ? `${where} is required.` : `${where} must be 1 to 255 visible ASCII characters.`,
    );
  }
  return value;
}

/**
 * SHA-256 of the request in RFC 8785 canonical JSON, so two bodies that differ
 * only in key order or whitespace are the same request.
 */
export function fingerprint(request: unknown): string {
  let canonical: string | undefined;
  try {
    canonical = canonicalize(request);
  } catch {
    // Unpaired surrogates and non-finite numbers have no canonical form.
    throw new ValidationError('The request body is not representable as canonical JSON.', [
      { pointer: '', detail: 'must not contain unpaired surrogates' },
    ]);
  }
  return createHash('sha256')
    .update(canonical ?? '', 'utf8')
    .digest('hex');
}

/** RFC 4648 base32 alphabet, lower-cased: safe in URLs and case-insensitive stores. */
const BASE32 = 'abcdefghijklmnopqrstuvwxyz234567';

function base32(bytes: Uint8Array): string {
  let out = '';
  let buffer = 0;
  let bits = 0;
  for (const byte of bytes) {
    buffer = (buffer << 8) | byte;
    bits += 8;
    while (bits >= 5) {
      bits -= 5;
      out += BASE32[(buffer >> bits) & 31];
    }
  }
  if (bits > 0) out += BASE32[(buffer << (5 - bits)) & 31];
  return out;
}

/**
 * The job id is derived from (tenant, key): every retry of one user action
 * lands on the same item, so a single conditional write both creates the job
 * and claims the key. 130 bits of the hash keep ids collision-free in practice.
 */
export function deriveJobId(tenantId: string, idempotencyKey: string): string {
  const digest = createHash('sha256').update(`${tenantId}\n${idempotencyKey}`, 'utf8').digest();
  return `job_${base32(digest.subarray(0, 17)).slice(0, 26)}`;
}

/**
 * A schedule's id, derived from (tenant, key) as a job's is, in a key space of
 * its own: a schedule and a job may be created under the same key.
 */
export function deriveScheduleId(tenantId: string, idempotencyKey: string): string {
  const digest = createHash('sha256').update(`schedule\n${tenantId}\n${idempotencyKey}`, 'utf8').digest();
  return `sch_${base32(digest.subarray(0, 17)).slice(0, 26)}`;
}

/** A media item's id, derived from (tenant, key) in a key space of its own, as a schedule's is. */
export function deriveMediaId(tenantId: string, idempotencyKey: string): string {
  const digest = createHash('sha256').update(`media\n${tenantId}\n${idempotencyKey}`, 'utf8').digest();
  return `med_${base32(digest.subarray(0, 17)).slice(0, 26)}`;
}

/**
 * What to answer when the key's job already exists: the original job (a
 * replay), or an error when the body differs or the first request is still
 * being processed (written but not yet handed to the queue, within the window).
 */
export function decideOnExisting(
  existing: Job,
  requestFingerprint: string,
  now: Date,
  inProgressMs: number,
): Job {
  if (existing.fingerprint !== requestFingerprint) {
    throw new IdempotencyKeyReusedError(
      'This Idempotency-Key was already used with a different request body; use a new key for a new request.',
    );
  }
  const stillInIntake =
    existing.status === 'queued' &&
    existing.enqueuedAt === undefined &&
    now.getTime() - Date.parse(existing.createdAt) < inProgressMs;
  if (stillInIntake) {
    throw new IdempotencyKeyInUseError(
      'A request with this Idempotency-Key is still being processed; retry later.',
    );
  }
  return existing;
}
