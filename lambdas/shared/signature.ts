import { createHmac, timingSafeEqual } from 'node:crypto';

/**
 * The webhook signature scheme used both ways (Longhaul → clients as
 * `Longhaul-Signature`, provider → Longhaul as `Provider-Signature`):
 * `t=<unix seconds>,v1=<hex HMAC-SHA256(secret, t + "." + body)>`.
 * The timestamp inside the signed text stops replays beyond the tolerance.
 */
export function signPayload(secret: string, body: string, unixSeconds: number): string {
  const digest = createHmac('sha256', secret).update(`${unixSeconds}.${body}`, 'utf8').digest('hex');
  return `t=${unixSeconds},v1=${digest}`;
}

export type SignatureCheck = 'valid' | 'malformed' | 'stale' | 'mismatch';

export function checkSignature(
  secret: string,
  header: string | undefined,
  body: string,
  nowSeconds: number,
  toleranceSeconds: number,
): SignatureCheck {
  if (!header || header.length > 512) return 'malformed';
  const parts = new Map<string, string[]>();
  for (const item of header.split(',')) {
    const at = item.indexOf('=');
    if (at <= 0) return 'malformed';
    const key = item.slice(0, at).trim();
    parts.set(key, [...(parts.get(key) ?? []), item.slice(at + 1).trim()]);
  }
  const t = parts.get('t')?.[0];
  const candidates = parts.get('v1') ?? [];
  if (!t || !/^\d{1,12}$/.test(t) || candidates.length === 0) return 'malformed';
  if (Math.abs(nowSeconds - Number(t)) > toleranceSeconds) return 'stale';
  const expected = Buffer.from(signPayload(secret, body, Number(t)).split('v1=')[1] ?? '', 'hex');
  // Several v1 values are allowed so a secret can be rotated without downtime.
  const matches = candidates.some((candidate) => {
    if (!/^[0-9a-f]{64}$/.test(candidate)) return false;
    return timingSafeEqual(Buffer.from(candidate, 'hex'), expected);
  });
  return matches ? 'valid' : 'mismatch';
}
