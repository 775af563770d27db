import type * as NodeCrypto from 'node:crypto';
import { LonghaulUsageError, LonghaulWebhookError } from './errors';
import type { Job, JobStatus } from './types';

/**
 * Webhooks for their receivers: verify one (`verify` on Node, `verifyAsync`
 * anywhere Web Crypto is: browsers, Deno, Bun, Cloudflare Workers, Vercel
 * Edge) and sign test ones. Nothing here imports node:crypto: the Node
 * version takes it from `process.getBuiltinModule` when it is called, so the
 * SDK loads in runtimes that have no node:crypto.
 */

/** The header with the signature: `t=<unix>,v1=<hex HMAC-SHA256(secret, t + "." + body)>`. */
export const SIGNATURE_HEADER = 'longhaul-signature';
/** The header with the event id, the same on every delivery of one event: deduplicate on it. */
export const EVENT_ID_HEADER = 'longhaul-event-id';

/** The event a verified webhook announces: the job reached a terminal status. */
export interface WebhookEvent {
  /**
   * The event's id (Longhaul-Event-Id), the same on every delivery of it:
   * deduplicate on it. Undefined when only the signature header was passed.
   */
  readonly id: string | undefined;
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

/**
 * The request's headers: a fetch `Headers`, a Node `request.headers`, or a
 * plain record. Or just the Longhaul-Signature header's value (the event
 * then has no id).
 */
export type WebhookHeaders =
  | string
  | null
  | undefined
  | Headers
  | Readonly<Record<string, string | readonly string[] | undefined>>;

/** Largest header read: a few `v1` values during a secret rotation, no more. */
const MAX_HEADER_LENGTH = 1024;
const DEFAULT_TOLERANCE_SECONDS = 300;

/** A signature header read and checked for freshness: what is left is the HMAC comparison. */
interface SignedParts {
  readonly t: string;
  readonly candidates: readonly Uint8Array<ArrayBuffer>[];
  readonly signed: Uint8Array<ArrayBuffer>;
  readonly secrets: readonly string[];
  readonly id: string | undefined;
}

/**
 * Checks a webhook's Longhaul-Signature against the raw request body, exactly
 * as received (parse it only afterwards), and returns the event. Throws a
 * LonghaulWebhookError for a missing, malformed, stale or wrong signature.
 * Comparisons are timing-safe. Node only (20.16 or later); `verifyAsync`
 * runs anywhere.
 *
 * `headers` is the request's headers (the event then carries its id) or the
 * signature header alone. `secret` may be a list: during a rotation, accept
 * the old and the new one.
 */
export function verify(
  rawBody: string | Uint8Array,
  headers: WebhookHeaders,
  secret: string | readonly string[],
  options: VerifyOptions = {},
): WebhookEvent {
  const parts = signedParts(rawBody, headers, secret, options);
  const { createHmac, timingSafeEqual } = nodeCrypto();
  // Every comparison runs, so the time taken tells nothing about which one matched.
  let matched = false;
  for (const key of parts.secrets) {
    const expected = createHmac('sha256', key).update(parts.signed).digest();
    for (const candidate of parts.candidates) {
      if (timingSafeEqual(candidate, expected)) matched = true;
    }
  }
  return eventOf(matched, rawBody, parts);
}

/**
 * `verify` with Web Crypto (`crypto.subtle`), for edge runtimes, browsers,
 * Deno and Bun as well as Node: the same checks, the same errors.
 */
export async function verifyAsync(
  rawBody: string | Uint8Array,
  headers: WebhookHeaders,
  secret: string | readonly string[],
  options: VerifyOptions = {},
): Promise<WebhookEvent> {
  const parts = signedParts(rawBody, headers, secret, options);
  let matched = false;
  for (const key of parts.secrets) {
    const hmacKey = await importKey(key, 'verify');
    for (const candidate of parts.candidates) {
      // subtle.verify compares in constant time.
      if (await crypto.subtle.verify('HMAC', hmacKey, candidate, parts.signed)) {
        matched = true;
      }
    }
  }
  return eventOf(matched, rawBody, parts);
}

export interface TestWebhookOptions {
  /** The body to sign: a job (sent as JSON) or the exact text. */
  readonly payload: string | Job;
  readonly secret: string;
  /** When it was signed, in Unix seconds. @default now */
  readonly timestamp?: number;
}

/**
 * A Longhaul-Signature header for `payload`, as the server would sign it: for
 * testing a receiver without a deployment (as stripe-node's
 * `generateTestHeaderString`). Web Crypto, so it runs anywhere.
 */
export async function generateTestHeaderString(options: TestWebhookOptions): Promise<string> {
  const t = options.timestamp ?? Math.floor(Date.now() / 1000);
  const key = await importKey(options.secret, 'sign');
  const signed = concat(utf8(`${t}.`), utf8(bodyOf(options.payload)));
  const digest = new Uint8Array(await crypto.subtle.sign('HMAC', key, signed));
  return `t=${t},v1=${toHex(digest)}`;
}

/**
 * A whole test webhook: the body and the headers the server would send with
 * it (signature, event id, content type), ready to POST to a receiver or to
 * pass to `verify`. The event id defaults to one derived from the job and
 * its status, so signing the same job twice gives the same id, as a retried
 * delivery does.
 */
export async function signTestWebhook(
  options: TestWebhookOptions & { readonly eventId?: string },
): Promise<{ readonly body: string; readonly headers: Readonly<Record<string, string>> }> {
  const body = bodyOf(options.payload);
  const signature = await generateTestHeaderString({ ...options, payload: body });
  const eventId = options.eventId ?? (await testEventId(body));
  return {
    body,
    headers: {
      'content-type': 'application/json',
      [SIGNATURE_HEADER]: signature,
      [EVENT_ID_HEADER]: eventId,
    },
  };
}

/** `Longhaul.webhooks`: helpers for receivers of Longhaul's webhooks. */
export const webhooks = { verify, verifyAsync, generateTestHeaderString, signTestWebhook } as const;

function signedParts(
  rawBody: string | Uint8Array,
  headers: WebhookHeaders,
  secret: string | readonly string[],
  options: VerifyOptions,
): SignedParts {
  const tolerance = options.toleranceSeconds ?? DEFAULT_TOLERANCE_SECONDS;
  const now = options.nowSeconds ?? Math.floor(Date.now() / 1000);
  const header = typeof headers === 'string' || !headers ? headers : headerValue(headers, SIGNATURE_HEADER);
  const id = typeof headers === 'string' || !headers ? undefined : headerValue(headers, EVENT_ID_HEADER);
  if (!header || header.length > MAX_HEADER_LENGTH) {
    throw new LonghaulWebhookError('malformed', 'The Longhaul-Signature header is missing or too long.');
  }
  let t: string | undefined;
  const candidates: Uint8Array<ArrayBuffer>[] = [];
  for (const item of header.split(',')) {
    const at = item.indexOf('=');
    if (at <= 0) throw new LonghaulWebhookError('malformed', 'The Longhaul-Signature header is malformed.');
    const key = item.slice(0, at).trim();
    const value = item.slice(at + 1).trim();
    if (key === 't') t ??= value;
    // Unknown schemes (a future v2) are skipped; only v1 values count.
    else if (key === 'v1' && /^[0-9a-f]{64}$/.test(value)) candidates.push(fromHex(value));
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
  const secrets = typeof secret === 'string' ? [secret] : secret;
  if (secrets.length === 0 || secrets.some((s) => !s)) {
    throw new LonghaulWebhookError('malformed', 'No webhook secret to verify with.');
  }
  const body = typeof rawBody === 'string' ? utf8(rawBody) : rawBody;
  return { t, candidates, signed: concat(utf8(`${t}.`), body), secrets, id: id || undefined };
}

function eventOf(matched: boolean, rawBody: string | Uint8Array, parts: SignedParts): WebhookEvent {
  if (!matched) throw new LonghaulWebhookError('mismatch', 'The signature does not match the body.');
  let job: Job;
  try {
    job = JSON.parse(typeof rawBody === 'string' ? rawBody : new TextDecoder().decode(rawBody)) as Job;
  } catch {
    throw new LonghaulWebhookError('malformed', 'The signed body is not JSON.');
  }
  if (!job || typeof job !== 'object' || typeof job.status !== 'string') {
    throw new LonghaulWebhookError('malformed', 'The signed body is not a job.');
  }
  return { id: parts.id, type: `job.${job.status}`, job, signedAt: Number(parts.t) };
}

/** One header of a request, whatever shape its headers come in; the first value of a repeated one. */
function headerValue(
  headers: Exclude<WebhookHeaders, string | null | undefined>,
  name: string,
): string | undefined {
  if (typeof (headers as Headers).get === 'function') return (headers as Headers).get(name) ?? undefined;
  const record = headers as Readonly<Record<string, string | readonly string[] | undefined>>;
  const key = Object.keys(record).find((candidate) => candidate.toLowerCase() === name);
  const value = key === undefined ? undefined : record[key];
  return typeof value === 'string' ? value : value?.[0];
}

/** node:crypto, taken when the Node version is called, so that loading the SDK never needs it. */
function nodeCrypto(): typeof NodeCrypto {
  const getBuiltinModule = globalThis.process?.getBuiltinModule;
  if (typeof getBuiltinModule !== 'function') {
    throw new LonghaulUsageError(
      'webhooks.verify needs Node 20.16 or later; in other runtimes use webhooks.verifyAsync (Web Crypto).',
    );
  }
  return getBuiltinModule('node:crypto') as typeof NodeCrypto;
}

function importKey(secret: string, usage: 'sign' | 'verify') {
  return crypto.subtle.importKey('raw', utf8(secret), { name: 'HMAC', hash: 'SHA-256' }, false, [usage]);
}

/** A stable test event id: `evt_` and 22 characters of the body's SHA-256, as the server's ids look. */
async function testEventId(body: string): Promise<string> {
  const digest = new Uint8Array(await crypto.subtle.digest('SHA-256', utf8(body)));
  const base64url = btoa(String.fromCharCode(...digest))
    .replaceAll('+', '-')
    .replaceAll('/', '_');
  return `evt_${base64url.slice(0, 22)}`;
}

function bodyOf(payload: string | Job): string {
  return typeof payload === 'string' ? payload : JSON.stringify(payload);
}

function utf8(text: string): Uint8Array<ArrayBuffer> {
  return new TextEncoder().encode(text);
}

function concat(a: Uint8Array, b: Uint8Array): Uint8Array<ArrayBuffer> {
  const joined = new Uint8Array(a.length + b.length);
  joined.set(a, 0);
  joined.set(b, a.length);
  return joined;
}

function fromHex(hex: string): Uint8Array<ArrayBuffer> {
  const bytes = new Uint8Array(hex.length / 2);
  for (let i = 0; i < bytes.length; i++) bytes[i] = Number.parseInt(hex.slice(i * 2, i * 2 + 2), 16);
  return bytes;
}

function toHex(bytes: Uint8Array): string {
  return Array.from(bytes, (byte) => byte.toString(16).padStart(2, '0')).join('');
}
