import { createHmac, timingSafeEqual } from 'node:crypto';
import { MediaClient } from '@deepgram/sdk/listen/v1/media';
import { RequestsClient } from '@deepgram/sdk/manage/v1/projects/requests';
import * as z from 'zod';
import { ProviderUnavailableError } from '../domain/errors';
import type {
  ProviderEvent,
  ProviderJobStatus,
  ProviderWebhookRequest,
  WebhookCheck,
} from '../domain/provider';
import {
  deduplicatesOf,
  failureMessage,
  OneExchange,
  type ProviderConfig,
  type ProviderFactory,
  parseWebhookBody,
  readFailure,
  requireApiKey,
  submissionFailure,
} from './common';

const NAME = 'deepgram';

/** The query parameters of Longhaul's webhook route that name the job and submission a callback is for. */
const SIGNED_PARAMETERS = ['jobId', 'submission'] as const;
const SIGNATURE_PARAMETER = 'sig';
const MIN_SECRET_LENGTH = 16;

/**
 * What the callback signature covers: the route parameters that say which job
 * and submission a callback settles, in a fixed order, so the route can
 * rebuild it from what it received. The host and path need no signature: a
 * callback only counts when it reaches this route.
 */
function signedText(get: (name: string) => string | null | undefined): string | undefined {
  const text = new URLSearchParams();
  for (const name of SIGNED_PARAMETERS) {
    const value = get(name);
    if (value !== null && value !== undefined) text.set(name, value);
  }
  return get('jobId') ? text.toString() : undefined;
}

const hmac = (secret: string, text: string) => createHmac('sha256', secret).update(text, 'utf8').digest();

const submitted = z.object({ request_id: z.string().min(1) });

/** The callback body: the whole pre-recorded response, or an error naming the request. */
const transcriptBody = z.looseObject({
  metadata: z.looseObject({ request_id: z.string().min(1) }),
  results: z.looseObject({}),
});
const errorBody = z.union([
  z.looseObject({ request_id: z.string().min(1), err_code: z.string().optional(), err_msg: z.string() }),
  z.looseObject({ request_id: z.string().min(1), message: z.string(), details: z.string().optional() }),
]);
const callbackBody = z.union([transcriptBody, errorBody]);

/** The management API's record of a request: usage, the answer's code and, in some records, the answer. */
const requestRecord = z.object({
  request: z
    .looseObject({
      request_id: z.string().optional(),
      code: z.number().optional(),
      response: z.record(z.string(), z.unknown()).nullish(),
    })
    .optional(),
});

function errorMessage(body: Record<string, unknown>, fallback: string): string {
  const message = typeof body.err_msg === 'string' ? body.err_msg : body.message;
  const details = typeof body.details === 'string' ? `: ${body.details}` : '';
  return failureMessage(typeof message === 'string' ? `${message}${details}` : undefined, fallback);
}

/**
 * Deepgram pre-recorded transcription with a callback, through the official
 * SDK (which takes a base URL, a fetch and a per-request retry count; a
 * OneExchange fetch gives the deadline and says what Deepgram can have seen).
 * Deepgram does not sign its callbacks, so Longhaul signs the callback URL it
 * hands over (`sig`, an HMAC of the job and submission it names) and checks
 * that signature when the callback arrives, however late.
 */
export const deepgram: ProviderFactory<'deepgram'> = (config) => {
  const apiKey = requireApiKey(NAME, config);
  if (config.webhookSecret.length < MIN_SECRET_LENGTH) {
    throw new Error(
      `The deepgram provider needs a webhookSecret of ${MIN_SECRET_LENGTH} or more characters.`,
    );
  }
  // The SDK's clients of the two endpoints used, not the whole DeepgramClient, whose
  // every API (and WebSocket library) would be about 200 KiB of each bundle that has
  // the providers. They send the same requests: the same generated clients, the same
  // `Token` authorization, without the session id header of streaming connections.
  const options = (exchange: OneExchange, timeoutMs: number) => ({
    apiKey,
    baseUrl: config.baseUrl,
    fetch: exchange.fetch,
    maxRetries: 0,
    timeoutInSeconds: Math.ceil(timeoutMs / 1000),
  });

  return {
    name: NAME,
    deduplicates: deduplicatesOf(NAME, config),

    async submit({ request, webhookUrl }) {
      const callback = signedCallbackUrl(config, webhookUrl);
      if (callback === undefined) throw submissionFailure(NAME, undefined);
      const exchange = new OneExchange(config.submitTimeoutMs);
      let answer: unknown;
      try {
        answer = await new MediaClient(options(exchange, config.submitTimeoutMs)).transcribeUrl(
          { url: request.url, callback },
          // As query parameters, as the API documents them: the SDK puts options it does not know into the body.
          { queryParams: { ...request.options }, maxRetries: 0 },
        );
      } catch {
        throw submissionFailure(NAME, exchange.outcome);
      }
      const created = submitted.safeParse(answer);
      if (!created.success) throw submissionFailure(NAME, exchange.outcome);
      return { providerJobId: created.data.request_id };
    },

    /**
     * The listen API has no status endpoint. The management API's request
     * record (`GET /v1/projects/{project}/requests/{request}`) tells a failed
     * request by its code, but documents no processing state and no
     * transcript: a request it does not show as failed is reported running,
     * so a lost callback ends in review when the job times out rather than in
     * a success without its transcript.
     */
    async status(providerJobId): Promise<ProviderJobStatus> {
      if (!config.projectId) {
        throw new ProviderUnavailableError('Deepgram has no status to read without a projectId.');
      }
      const exchange = new OneExchange(config.readTimeoutMs);
      let answer: unknown;
      try {
        answer = await new RequestsClient(options(exchange, config.readTimeoutMs)).get(
          config.projectId,
          providerJobId,
          { maxRetries: 0 },
        );
      } catch (error) {
        throw readFailure(NAME, exchange.outcome, error);
      }
      const parsed = requestRecord.safeParse(answer);
      const record = parsed.success ? parsed.data.request : undefined;
      if (!record)
        throw readFailure(NAME, undefined, new Error(`has no record of request ${providerJobId} yet`));
      const response = record.response ?? {};
      if (typeof response.results === 'object' && response.results !== null) {
        return { id: providerJobId, status: 'succeeded', progress: 100, output: response };
      }
      const code = record.code ?? (typeof response.code === 'number' ? response.code : undefined);
      if (code !== undefined && code >= 400) {
        return {
          id: providerJobId,
          status: 'failed',
          progress: 0,
          error: { code: 'provider_failed', message: errorMessage(response, `Deepgram answered ${code}.`) },
        };
      }
      return { id: providerJobId, status: 'running', progress: 0 };
    },

    async cancel() {
      // The job keeps its slot until the callback comes.
      throw new ProviderUnavailableError('Deepgram cannot cancel a request');
    },

    verify(request: ProviderWebhookRequest): WebhookCheck {
      const signature = request.query[SIGNATURE_PARAMETER];
      const text = signedText((name) => request.query[name]);
      if (!signature || text === undefined) return 'malformed';
      if (!/^[0-9a-f]{64}$/.test(signature)) return 'mismatch';
      // No staleness: Deepgram may call back hours later, and retries a failed callback.
      return timingSafeEqual(Buffer.from(signature, 'hex'), hmac(config.webhookSecret, text))
        ? 'valid'
        : 'mismatch';
    },

    parse(request): readonly ProviderEvent[] {
      const body = parseWebhookBody(NAME, callbackBody, request.body);
      const transcript = transcriptBody.safeParse(body);
      if (transcript.success) {
        return [{ type: 'succeeded', id: transcript.data.metadata.request_id, output: body }];
      }
      const failure = errorBody.parse(body);
      return [
        {
          type: 'failed',
          id: failure.request_id,
          error: {
            code: 'provider_failed',
            message: errorMessage(failure, 'Deepgram could not transcribe the audio.'),
          },
        },
      ];
    },
  };
};

/** The webhook URL with `sig` set to Longhaul's signature of it; undefined when it names no job. */
export function signedCallbackUrl(
  config: Pick<ProviderConfig, 'webhookSecret'>,
  webhookUrl: string,
): string | undefined {
  const url = new URL(webhookUrl);
  url.searchParams.delete(SIGNATURE_PARAMETER);
  const text = signedText((name) => url.searchParams.get(name));
  if (text === undefined) return undefined;
  url.searchParams.set(SIGNATURE_PARAMETER, hmac(config.webhookSecret, text).toString('hex'));
  return url.toString();
}
