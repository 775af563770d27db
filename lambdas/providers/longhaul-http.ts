import http from 'node:http';
import https from 'node:https';
import * as z from 'zod';
import type { ProviderEvent, ProviderJobStatus } from '../domain/provider';
import { providerEvent } from '../domain/provider-events';
import { checkSignature } from '../shared/signature';
import {
  answeredExchange,
  deduplicatesOf,
  type Exchange,
  type ProviderFactory,
  parseWebhookBody,
  readFailure,
  submissionFailure,
  WEBHOOK_TOLERANCE_SECONDS,
} from './common';

const NAME = 'longhaul-http';

/** One header's value as node gives it (a list for a repeated header: the first counts). */
const headerOf = (value: string | string[] | undefined): string | undefined =>
  Array.isArray(value) ? value[0] : value;

const submitted = z.object({ id: z.string().min(1) });
const statusSchema = z.object({
  id: z.string(),
  status: z.enum(['queued', 'running', 'succeeded', 'failed', 'canceled']),
  progress: z.number().min(0).max(100),
  output: z.unknown().optional(),
  error: z.object({ code: z.string(), message: z.string() }).optional(),
});

const agents = { http: new http.Agent({ keepAlive: true }), https: new https.Agent({ keepAlive: true }) };

interface Answered {
  readonly exchange: Exchange;
  readonly body: string;
}

/**
 * The generic provider API of CONTRACT section 3 (`/v1/generations`), over
 * node:http rather than fetch because node:http tells exactly whether the
 * request was written: refused before that (connection refused, DNS failure),
 * or answered 429 or 503, nothing was accepted; a 4xx is a definite refusal; a
 * timeout, reset or 5xx after the request was written is ambiguous, since the
 * provider may have accepted and charged. Webhooks carry `Provider-Signature`
 * (shared/signature.ts) and the generic event body of provider-events.ts.
 */
export const longhaulHttp: ProviderFactory<'longhaul-http'> = (config) => {
  const call = (
    method: string,
    path: string,
    body: unknown,
    headers: Record<string, string>,
    timeoutMs: number,
  ): Promise<Answered> => {
    const url = new URL(path, config.baseUrl);
    const payload = body === undefined ? undefined : Buffer.from(JSON.stringify(body), 'utf8');
    const transport = url.protocol === 'https:' ? https : http;
    return new Promise((resolve) => {
      let connected = false;
      let finished = false;
      let settled = false;
      const settle = (answer: Answered) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        resolve(answer);
      };
      const fail = (message: string) =>
        settle({ exchange: { kind: connected && finished ? 'lost' : 'unsent', message }, body: '' });
      const request = transport.request(
        url,
        {
          method,
          agent: url.protocol === 'https:' ? agents.https : agents.http,
          headers: {
            accept: 'application/json',
            ...(payload
              ? { 'content-type': 'application/json', 'content-length': String(payload.length) }
              : {}),
            ...(config.apiKey ? { authorization: `Bearer ${config.apiKey}` } : {}),
            ...headers,
          },
        },
        (response) => {
          const chunks: Buffer[] = [];
          response.on('data', (chunk: Buffer) => chunks.push(chunk));
          response.on('end', () =>
            settle({
              exchange: answeredExchange(response.statusCode ?? 0, headerOf(response.headers['retry-after'])),
              body: Buffer.concat(chunks).toString('utf8'),
            }),
          );
          response.on('error', (error) => fail(error.message));
        },
      );
      const timer = setTimeout(
        () => request.destroy(new Error(`no answer within ${timeoutMs} ms`)),
        timeoutMs,
      );
      request.on('socket', (socket) => {
        if (!socket.connecting) connected = true;
        else socket.once('connect', () => (connected = true));
      });
      request.on('finish', () => (finished = true));
      request.on('error', (error) => fail(error.message));
      request.end(payload);
    });
  };

  /** A call that is safe to repeat: every failure is "unavailable". */
  const read = async (method: string, path: string): Promise<string> => {
    const { exchange, body } = await call(method, path, undefined, {}, config.readTimeoutMs);
    if (exchange.kind !== 'answered' || exchange.status >= 400) throw readFailure(NAME, exchange, undefined);
    return body;
  };

  return {
    name: NAME,
    deduplicates: deduplicatesOf(NAME, config),

    async submit(submission) {
      const { exchange, body } = await call(
        'POST',
        '/v1/generations',
        { type: submission.request.type, input: submission.request.input, webhookUrl: submission.webhookUrl },
        { 'idempotency-key': submission.idempotencyKey },
        config.submitTimeoutMs,
      );
      if (exchange.kind === 'answered' && exchange.status >= 200 && exchange.status < 300) {
        const answer = submitted.safeParse(safeJson(body));
        if (answer.success) return { providerJobId: answer.data.id };
      }
      throw submissionFailure(NAME, exchange);
    },

    async status(providerJobId): Promise<ProviderJobStatus> {
      const body = statusSchema.safeParse(
        safeJson(await read('GET', `/v1/generations/${encodeURIComponent(providerJobId)}`)),
      );
      if (!body.success) throw readFailure(NAME, undefined, new Error('answered a malformed status'));
      return body.data;
    },

    async cancel(providerJobId) {
      await read('POST', `/v1/generations/${encodeURIComponent(providerJobId)}/cancel`);
    },

    verify(request, nowSeconds) {
      return checkSignature(
        config.webhookSecret,
        request.headers['provider-signature'],
        request.body,
        nowSeconds,
        WEBHOOK_TOLERANCE_SECONDS,
      );
    },

    parse(request): readonly ProviderEvent[] {
      const event = parseWebhookBody(NAME, providerEvent, request.body);
      switch (event.type) {
        case 'progress':
          return [{ type: 'progress', id: event.id, progress: event.progress }];
        case 'succeeded':
          return [{ type: 'succeeded', id: event.id, output: event.output }];
        case 'failed':
          return [{ type: 'failed', id: event.id, error: event.error }];
        case 'canceled':
          return [{ type: 'canceled', id: event.id }];
      }
    },
  };
};

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}
