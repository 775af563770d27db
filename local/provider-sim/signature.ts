import { createHmac, timingSafeEqual } from 'node:crypto';

/**
 * The provider's webhook signature, in the scheme Stripe uses:
 * `Provider-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256(secret, t + "." + rawBody)>`.
 * Signing the timestamp with the body lets a receiver refuse replays of old
 * deliveries; several `v1` entries may appear while a secret is being rotated.
 */

export const PROVIDER_SIGNATURE_HEADER = 'Provider-Signature';

function digest(secret: string, body: string | Uint8Array, t: number): Buffer {
  return createHmac('sha256', secret).update(`${t}.`).update(body).digest();
}

/** The `Provider-Signature` header value for `body` sent at unix time `t` (seconds). */
export function signProviderPayload(secret: string, body: string | Uint8Array, t: number): string {
  return `t=${t},v1=${digest(secret, body, t).toString('hex')}`;
}

/**
 * Whether `header` signs exactly `body` with `secret`, at a time no more than
 * `toleranceSeconds` away from `nowSeconds`. Malformed headers are simply not
 * valid; the comparison is constant-time.
 */
export function verifyProviderSignature(
  secret: string,
  header: string | undefined | null,
  body: string | Uint8Array,
  nowSeconds: number,
  toleranceSeconds: number,
): boolean {
  if (!header) return false;
  let t: number | undefined;
  const candidates: Buffer[] = [];
  for (const part of header.split(',')) {
    const separator = part.indexOf('=');
    if (separator < 0) continue;
    const name = part.slice(0, separator).trim();
    const value = part.slice(separator + 1).trim();
    if (name === 't' && /^\d{1,12}$/.test(value)) t = Number(value);
    else if (name === 'v1' && /^[0-9a-f]{64}$/i.test(value)) candidates.push(Buffer.from(value, 'hex'));
  }
  if (t === undefined || candidates.length === 0) return false;
  if (Math.abs(nowSeconds - t) > toleranceSeconds) return false;
  const expected = digest(secret, body, t);
  return candidates.some((candidate) => timingSafeEqual(candidate, expected));
}
