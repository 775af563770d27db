import type * as z from 'zod';
import { PROVIDERS, type ProviderName } from '../../config/providers';
import {
  AmbiguousSubmissionError,
  ProviderDownError,
  ProviderRejectedError,
  ProviderThrottledError,
  ProviderUnavailableError,
  ValidationError,
} from '../domain/errors';
import type { Provider, ProviderWebhooks } from '../domain/provider';

/** What an adapter needs to call its provider: the provider's secret and the deployment's deadlines. */
export interface ProviderConfig {
  readonly baseUrl: string;
  readonly apiKey?: string;
  /** The key the provider signs its webhooks with, or (Deepgram) the key Longhaul signs its callback URLs with. */
  readonly webhookSecret: string;
  /** What `PROVIDER_IDEMPOTENT` says; read only by a provider whose catalog entry leaves it to the setting. */
  readonly deduplicates: boolean;
  /** Whole-exchange deadline of a submission; past it the outcome is unknown. */
  readonly submitTimeoutMs: number;
  /** Deadline of status and cancel calls, which are safe to repeat. */
  readonly readTimeoutMs: number;
  /** Deepgram: the project whose request records `status` reads; without it Deepgram has no status to read. */
  readonly projectId?: string;
}

export type ProviderAdapter<P extends ProviderName> = Provider<P> & ProviderWebhooks;
export type ProviderFactory<P extends ProviderName> = (config: ProviderConfig) => ProviderAdapter<P>;

/** Whether a repeated idempotency key is answered with the first submission: the catalog's word, or the setting's. */
export function deduplicatesOf(name: ProviderName, config: ProviderConfig): boolean {
  const spec = PROVIDERS[name].deduplicates;
  return spec === 'setting' ? config.deduplicates : spec;
}

/** Webhooks older or newer than this are refused, so a captured one cannot be replayed later. */
export const WEBHOOK_TOLERANCE_SECONDS = 300;

/**
 * What became of the one HTTP exchange a call made: answered, never reached
 * the provider (nothing can have happened), or lost after the request may have
 * been written (the provider may have acted on it).
 */
export type Exchange =
  | {
      readonly kind: 'answered';
      readonly status: number;
      /** How long the provider asked to be left alone (`Retry-After`), in seconds, when it said. */
      readonly retryAfterSeconds?: number;
    }
  | { readonly kind: 'unsent'; readonly message: string }
  | { readonly kind: 'lost'; readonly message: string };

/**
 * Error codes of failures that happen before a single byte of the request
 * leaves: the name did not resolve, or no connection could be opened.
 */
const NEVER_SENT = new Set([
  'ECONNREFUSED',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EAI_NONAME',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'UND_ERR_CONNECT_TIMEOUT',
]);

/**
 * Whether a failed `fetch` never reached the provider. undici reports every
 * network failure as `TypeError: fetch failed` with the socket's error as its
 * cause (an AggregateError when several addresses were tried); only a failure
 * to resolve or connect is certain to have sent nothing.
 */
export function neverReached(error: unknown): boolean {
  const cause = (error as { cause?: unknown } | undefined)?.cause;
  const codes = [cause, ...((cause as { errors?: unknown[] } | undefined)?.errors ?? [])].map(
    (item) => (item as { code?: unknown } | undefined)?.code,
  );
  return codes.length > 0 && codes.some((code) => typeof code === 'string' && NEVER_SENT.has(code));
}

interface Buffered {
  readonly status: number;
  readonly statusText: string;
  readonly headers: Headers;
  readonly body: ArrayBuffer;
}

/**
 * A `fetch` for an SDK that makes exactly one HTTP exchange, whatever the SDK
 * does. Official SDKs retry on their own (Replicate's client resends a POST
 * after a thrown network error and after a 429; Deepgram's after 408, 429 and
 * 5xx), and a resent submission to a provider that does not deduplicate is a
 * second charge. So the first exchange is the only one: the answer is read in
 * full within the deadline and every later call by the SDK gets a copy of it
 * (or the same error) without touching the network. `outcome` then says what
 * the provider can have seen. Redirects are not followed, since following one
 * writes the request a second time.
 */
export class OneExchange {
  outcome: Exchange | undefined;
  private first: Promise<Buffered> | undefined;

  constructor(private readonly timeoutMs: number) {}

  readonly fetch: typeof fetch = async (input, init) => {
    this.first ??= this.perform(input, init);
    const answer = await this.first;
    const empty = answer.status === 204 || answer.status === 205 || answer.status === 304;
    return new Response(empty ? null : answer.body.slice(0), {
      status: answer.status,
      statusText: answer.statusText,
      headers: answer.headers,
    });
  };

  private async perform(
    input: Parameters<typeof fetch>[0],
    init: RequestInit | undefined,
  ): Promise<Buffered> {
    const deadline = AbortSignal.timeout(this.timeoutMs);
    const signal = init?.signal ? AbortSignal.any([init.signal, deadline]) : deadline;
    try {
      const response = await fetch(input, { ...init, signal, redirect: 'manual' });
      const body = await response.arrayBuffer();
      this.outcome = answeredExchange(response.status, response.headers.get('retry-after'));
      return { status: response.status, statusText: response.statusText, headers: response.headers, body };
    } catch (error) {
      const message = deadline.aborted ? `no answer within ${this.timeoutMs} ms` : describeFetchError(error);
      this.outcome = neverReached(error) ? { kind: 'unsent', message } : { kind: 'lost', message };
      throw error;
    }
  }
}

/** An answered exchange, with the wait its `Retry-After` (seconds, or an HTTP date) asks for. */
export function answeredExchange(status: number, retryAfter: string | null | undefined): Exchange {
  const seconds = retryAfterSecondsOf(retryAfter);
  return { kind: 'answered', status, ...(seconds === undefined ? {} : { retryAfterSeconds: seconds }) };
}

function retryAfterSecondsOf(value: string | null | undefined, now = Date.now()): number | undefined {
  if (!value) return undefined;
  const trimmed = value.trim();
  if (/^\d+(\.\d+)?$/.test(trimmed)) return Math.ceil(Number(trimmed));
  const at = Date.parse(trimmed);
  return Number.isNaN(at) ? undefined : Math.max(0, Math.ceil((at - now) / 1000));
}

function describeFetchError(error: unknown): string {
  const cause = (error as { cause?: { message?: unknown } } | undefined)?.cause?.message;
  const message = error instanceof Error ? error.message : String(error);
  return typeof cause === 'string' ? `${message}: ${cause}` : message;
}

/**
 * The error a submission that did not yield a job id leads to, by what the
 * provider can have seen: nothing (unavailable, retry), a definite refusal
 * (4xx: fail the job), or a request it may have accepted and charged (a
 * timeout, a reset, a 5xx, an answer without an id: ambiguous).
 */
export function submissionFailure(provider: ProviderName, exchange: Exchange | undefined): Error {
  if (exchange === undefined) {
    // The SDK refused the request before sending it (a malformed webhook URL, say): no retry can help.
    return new ProviderRejectedError(
      `The ${provider} submission could not be sent.`,
      'provider_request_invalid',
    );
  }
  if (exchange.kind === 'unsent') {
    return new ProviderDownError(`${provider} unreachable: ${exchange.message}`);
  }
  if (exchange.kind === 'lost') {
    return new AmbiguousSubmissionError(`${provider} submission outcome unknown: ${exchange.message}`);
  }
  const { status } = exchange;
  if (status === 429)
    return new ProviderThrottledError(`${provider} answered 429.`, exchange.retryAfterSeconds);
  if (status === 503)
    return new ProviderDownError(`${provider} answered ${status}.`, exchange.retryAfterSeconds);
  if (status >= 400 && status < 500 && status !== 408) {
    return new ProviderRejectedError(
      `${provider} refused the submission (${status}).`,
      `provider_rejected_${status}`,
    );
  }
  return new AmbiguousSubmissionError(`${provider} answered ${status} without a job id.`);
}

/** The error of a failed status or cancel call: these are safe to repeat, so every failure is "unavailable". */
export function readFailure(provider: ProviderName, exchange: Exchange | undefined, error: unknown): Error {
  if (error instanceof ProviderUnavailableError) return error;
  // A throttle or an outage refuses reads as it refuses submissions: the provider is down, not the job.
  if (exchange?.kind === 'unsent')
    return new ProviderDownError(`${provider} unreachable: ${exchange.message}`);
  if (exchange?.kind === 'answered' && (exchange.status === 429 || exchange.status === 503)) {
    return new ProviderDownError(`${provider} answered ${exchange.status}.`, exchange.retryAfterSeconds);
  }
  const what =
    exchange?.kind === 'answered'
      ? `answered ${exchange.status}`
      : (exchange?.message ?? (error instanceof Error ? error.message : String(error)));
  return new ProviderUnavailableError(`${provider} ${what}.`);
}

/** A webhook body read with a schema: anything else is a ValidationError, as for every other request. */
export function parseWebhookBody<T>(provider: ProviderName, schema: z.ZodType<T>, body: string): T {
  let json: unknown;
  try {
    json = JSON.parse(body);
  } catch {
    throw new ValidationError(`The ${provider} webhook is not JSON.`, [
      { pointer: '', detail: 'Expected a JSON body.' },
    ]);
  }
  const parsed = schema.safeParse(json);
  if (!parsed.success) {
    throw new ValidationError(
      `The ${provider} webhook is invalid.`,
      parsed.error.issues.map((issue) => ({ pointer: `/${issue.path.join('/')}`, detail: issue.message })),
    );
  }
  return parsed.data;
}

/** A provider's failure message as a job error carries it: text, at most 2000 characters. */
export function failureMessage(error: unknown, fallback: string): string {
  const text = error == null ? fallback : typeof error === 'string' ? error : JSON.stringify(error);
  return (text || fallback).slice(0, 2000);
}

export function requireApiKey(provider: ProviderName, config: ProviderConfig): string {
  if (!config.apiKey) throw new Error(`The ${provider} provider needs an apiKey in its secret.`);
  return config.apiKey;
}
