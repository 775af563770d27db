import { checkSignature, signPayload } from '../../lambdas/shared/signature';

/**
 * The provider's webhook signature: the scheme Longhaul verifies
 * (lambdas/shared/signature.ts), `Provider-Signature: t=<unix seconds>,v1=<hex
 * HMAC-SHA256(secret, t + "." + rawBody)>`, so the simulator signs exactly
 * what a real provider would and the verifier is tested against it.
 */

export const PROVIDER_SIGNATURE_HEADER = 'Provider-Signature';

const text = (body: string | Uint8Array) =>
  typeof body === 'string' ? body : Buffer.from(body).toString('utf8');

/** The `Provider-Signature` header value for `body` sent at unix time `t` (seconds). */
export function signProviderPayload(secret: string, body: string | Uint8Array, t: number): string {
  return signPayload(secret, text(body), t);
}

/** Whether `header` signs exactly `body` with `secret`, within `toleranceSeconds` of `nowSeconds`. */
export function verifyProviderSignature(
  secret: string,
  header: string | undefined | null,
  body: string | Uint8Array,
  nowSeconds: number,
  toleranceSeconds: number,
): boolean {
  return checkSignature(secret, header ?? undefined, text(body), nowSeconds, toleranceSeconds) === 'valid';
}
