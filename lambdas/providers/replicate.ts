import Replicate, { parseProgressFromLogs } from 'replicate';
import { Webhook, WebhookVerificationError } from 'standardwebhooks';
import * as z from 'zod';
import type { ProviderEvent, ProviderJobState, ProviderJobStatus, WebhookCheck } from '../domain/provider';
import {
  deduplicatesOf,
  failureMessage,
  OneExchange,
  type ProviderFactory,
  parseWebhookBody,
  readFailure,
  requireApiKey,
  submissionFailure,
  WEBHOOK_TOLERANCE_SECONDS,
} from './common';

const NAME = 'replicate';

/** Every event Replicate can send: progress rides on `logs` and `output`, the outcome on `completed`. */
const WEBHOOK_EVENTS = ['start', 'output', 'logs', 'completed'] as const;

const prediction = z.object({
  id: z.string().min(1),
  status: z.enum(['starting', 'processing', 'succeeded', 'failed', 'canceled', 'aborted']),
  logs: z.string().nullish(),
  output: z.unknown().optional(),
  error: z.unknown().optional(),
});
type Prediction = z.infer<typeof prediction>;

const STATES: Record<Prediction['status'], ProviderJobState> = {
  starting: 'queued',
  processing: 'running',
  succeeded: 'succeeded',
  failed: 'failed',
  canceled: 'canceled',
  aborted: 'canceled',
};

/** 0..100 from the model's progress bar in the logs; 100 once it succeeded, whatever the logs say. */
function progressOf(p: Prediction): number {
  if (p.status === 'succeeded') return 100;
  const parsed = parseProgressFromLogs(p.logs ?? '');
  return parsed ? Math.min(100, Math.max(0, Math.round(parsed.percentage * 100))) : 0;
}

const failureOf = (p: Prediction) => ({
  code: 'provider_failed',
  message: failureMessage(p.error, 'The prediction failed.'),
});

/**
 * Replicate predictions through the official SDK. Replicate does not
 * deduplicate, so a create must never be sent twice: each call gets a client
 * over a OneExchange fetch (the SDK resends a create after a thrown network
 * error or a 429), and the exchange says what Replicate can have seen.
 * Webhooks are Standard Webhooks, verified with the official package.
 */
export const replicate: ProviderFactory<'replicate'> = (config) => {
  const auth = requireApiKey(NAME, config);
  // Constructed once: a malformed whsec_ key fails at start, not on the first webhook.
  const webhooks = new Webhook(config.webhookSecret);
  // A client per call is only a few bound functions (connections are pooled by undici); it carries the call's exchange.
  const client = (exchange: OneExchange) =>
    new Replicate({ auth, baseUrl: config.baseUrl, fetch: exchange.fetch, useFileOutput: false });

  const read = async (call: (client: Replicate) => Promise<unknown>): Promise<Prediction> => {
    const exchange = new OneExchange(config.readTimeoutMs);
    let answer: unknown;
    try {
      answer = await call(client(exchange));
    } catch (error) {
      throw readFailure(NAME, exchange.outcome, error);
    }
    const parsed = prediction.safeParse(answer);
    if (!parsed.success) throw readFailure(NAME, undefined, new Error('answered a malformed prediction'));
    return parsed.data;
  };

  return {
    name: NAME,
    deduplicates: deduplicatesOf(NAME, config),

    async submit({ request, webhookUrl }) {
      const exchange = new OneExchange(config.submitTimeoutMs);
      let answer: unknown;
      try {
        answer = await client(exchange).predictions.create({
          ...(request.version ? { version: request.version } : { model: request.model }),
          input: { ...request.input },
          webhook: webhookUrl,
          webhook_events_filter: [...WEBHOOK_EVENTS],
        });
      } catch {
        throw submissionFailure(NAME, exchange.outcome);
      }
      const created = z.object({ id: z.string().min(1) }).safeParse(answer);
      if (!created.success) throw submissionFailure(NAME, exchange.outcome);
      return { providerJobId: created.data.id };
    },

    async status(providerJobId): Promise<ProviderJobStatus> {
      const p = await read((c) => c.predictions.get(encodeURIComponent(providerJobId)));
      return {
        id: p.id,
        status: STATES[p.status],
        progress: progressOf(p),
        ...(p.output !== undefined && p.output !== null ? { output: p.output } : {}),
        ...(p.status === 'failed' ? { error: failureOf(p) } : {}),
      };
    },

    async cancel(providerJobId) {
      const p = await read((c) => c.predictions.cancel(encodeURIComponent(providerJobId)));
      // Replicate answers a cancel of a running prediction before the model stops; only a final state is a confirmation.
      if (STATES[p.status] === 'queued' || STATES[p.status] === 'running') {
        throw readFailure(NAME, undefined, new Error(`has not stopped prediction ${p.id} yet (${p.status})`));
      }
    },

    verify(request, nowSeconds): WebhookCheck {
      const id = request.headers['webhook-id'];
      const timestamp = request.headers['webhook-timestamp'];
      const signature = request.headers['webhook-signature'];
      if (!id || !timestamp || !signature || !/^\d{1,12}$/.test(timestamp)) return 'malformed';
      // The package checks freshness against the process clock; the caller's clock is checked too.
      if (Math.abs(nowSeconds - Number(timestamp)) > WEBHOOK_TOLERANCE_SECONDS) return 'stale';
      try {
        webhooks.verify(
          request.body,
          { 'webhook-id': id, 'webhook-timestamp': timestamp, 'webhook-signature': signature },
          { jsonParse: false },
        );
        return 'valid';
      } catch (error) {
        return standardWebhooksCheck(error);
      }
    },

    parse(request): readonly ProviderEvent[] {
      const p = parseWebhookBody(NAME, prediction, request.body);
      switch (p.status) {
        case 'starting':
        case 'processing':
          return [{ type: 'progress', id: p.id, progress: progressOf(p) }];
        case 'succeeded':
          return [{ type: 'succeeded', id: p.id, output: p.output }];
        case 'failed':
          return [{ type: 'failed', id: p.id, error: failureOf(p) }];
        case 'canceled':
        case 'aborted':
          return [{ type: 'canceled', id: p.id }];
      }
    },
  };
};

/** The package says what failed only in its messages. */
function standardWebhooksCheck(error: unknown): WebhookCheck {
  if (!(error instanceof WebhookVerificationError)) return 'mismatch';
  if (/timestamp too (old|new)/i.test(error.message)) return 'stale';
  if (/missing required headers|invalid signature headers/i.test(error.message)) return 'malformed';
  return 'mismatch';
}
