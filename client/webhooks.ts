import { createHmac, timingSafeEqual } from 'node:crypto';
import { LonghaulWebhookError } from './errors';
import type { Job, JobStatus } from './types';

/** The event a verified webhook announces: the job reached a terminal status. */
export interface WebhookEvent {
  /** `job.succeeded`, `job.failed` or `job.canceled`. */
  readonly type: `job.${JobStatus}`;
  /** The job as it was when the webhook was sent. */
  readonly job: Job;
  /** When it was signed (the header's `t`), in Unix seconds. */
  readonly signedAt: number;
}

export interface VerifyOptions {
  /** How far the signature's timestamp may be from now, either way. @default 300 */
  readonly toleranceSeconds?: number;
  /** Now, in Unix seconds (a seam for tests). @default the clock */
  readonly nowSeconds?: number;
}

/** Largest header read: a few `v1` values during a secret rotation, no more. */
const MAX_HEADER_LENGTH = 1024;

/**
 * Checks a `Longhaul-Signature` header (`t=<unix>,v1=<hex HMAC-SHA256(secret,
 * t + "." + body)>`, several `v1` while a secret is rotated) against the raw
 * request body, exactly as received (parse it only afterwards), and returns
 * the event. Throws a LonghaulWebhookError for a missing, malformed, stale or
 * wrong signature. Comparisons are timing-safe.
 *
 * `secret` may be a list: during a rotation, accept the old and the new one.
 */
export function verify(
  rawBody: string | Uint8Array,
  header: string | null | undefined,
  secret: string | readonly string[],
  options: VerifyOptions = {},
): WebhookEvent {
  const tolerance = options.toleranceSeconds ?? 300;
  const now = options.nowSeconds ?? Math.floor(Date.now() / 1000);
  if (!header || header.length > MAX_HEADER_LENGTH) {
    throw new LonghaulWebhookError('malformed', 'The Longhaul-Signature header is missing or too long.');
  }
  let t: string | undefined;
  const candidates: Buffer[] = [];
  for (const item of header.split(',')) {
    const at = item.indexOf('=');
    if (at <= 0) throw new LonghaulWebhookError('malformed', 'The Longhaul-Signature header is malformed.');
    const key = item.slice(0, at).trim();
    const value = item.slice(at + 1).trim();
    if (key === 't') t ??= value;
    // Unknown schemes (a future v2) are skipped; only v1 values count.
    else if (key === 'v1' && /^[0-9a-f]{64}$/.test(value)) candidates.push(Buffer.from(value, 'hex'));
  }
  if (!t || !/^\d{1,12}$/.test(t) || candidates.length === 0) {
    throw new LonghaulWebhookError('malformed', 'The Longhaul-Signature header has no t or no v1 value.');
  }
  const signedAt = Number(t);
  if (Math.abs(now - signedAt) > tolerance) {
    throw new LonghaulWebhookError(
      'stale',
      `The signature is ${Math.abs(now - signedAt)} s away from now (tolerance ${tolerance} s).`,
    );
  }
  const body = typeof rawBody === 'string' ? Buffer.from(rawBody, 'utf8') : Buffer.from(rawBody);
  const secrets = typeof secret === 'string' ? [secret] : secret;
  if (secrets.length === 0 || secrets.some((s) => !s)) {
    throw new LonghaulWebhookError('malformed', 'No webhook secret to verify with.');
  }
  // Every comparison runs, so the time taken tells nothing about which one matched.
  let matched = false;
  for (const key of secrets) {
    const expected = createHmac('sha256', key).update(`${t}.`, 'utf8').update(body).digest();
    for (const candidate of candidates) {
      if (timingSafeEqual(candidate, expected)) matched = true;
    }
  }
  if (!matched) throw new LonghaulWebhookError('mismatch', 'The signature does not match the body.');
  let job: Job;
  try {
    job = JSON.parse(body.toString('utf8')) as Job;
  } catch {
    throw new LonghaulWebhookError('malformed', 'The signed body is not JSON.');
  }
  if (!job || typeof job !== 'object' || typeof job.status !== 'string') {
    throw new LonghaulWebhookError('malformed', 'The signed body is not a job.');
  }
  return { type: `job.${job.status}`, job, signedAt };
}

/** `Longhaul.webhooks`: helpers for receivers of Longhaul's webhooks. */
export const webhooks = { verify } as const;
