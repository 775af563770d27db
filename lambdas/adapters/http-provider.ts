import http from 'node:http';
import https from 'node:https';
import { z } from 'zod';
import { AmbiguousSubmissionError, ProviderRejectedError, ProviderUnavailableError } from '../domain/errors';
import type { Provider, ProviderJobStatus, ProviderSubmission } from '../domain/provider';

export interface HttpProviderOptions {
  readonly baseUrl: string;
  readonly apiKey?: string;
  readonly deduplicates: boolean;
  /** Whole-request deadline of a submission; past it the outcome is unknown. */
  readonly submitTimeoutMs: number;
  /** Deadline of status and cancel calls, which are safe to repeat. */
  readonly readTimeoutMs: number;
}

interface RawResponse {
  readonly status: number;
  readonly body: string;
}

/** Where a failed call got to: only a call whose request reached the provider can have had an effect. */
class CallFailed extends Error {
  constructor(
    message: string,
    readonly requestWritten: boolean,
  ) {
    super(message);
  }
}

const submitted = z.object({ id: z.string().min(1) });
const statusSchema = z.object({
  id: z.string(),
  status: z.enum(['queued', 'running', 'succeeded', 'failed', 'canceled']),
  progress: z.number().min(0).max(100),
  output: z.unknown().optional(),
  error: z.object({ code: z.string(), message: z.string() }).optional(),
});

const agents = { http: new http.Agent({ keepAlive: true }), https: new https.Agent({ keepAlive: true }) };

/**
 * The provider API of CONTRACT section 3 over HTTP. Submissions are classified
 * by what the provider can have seen: refused before the request was written
 * (connection refused, DNS failure, 503, 429) is definite and safe to retry;
 * 4xx is a definite refusal; a timeout, reset or 5xx after the request was
 * written is ambiguous, since the provider may have accepted and charged.
 */
export class HttpProvider implements Provider {
  readonly deduplicates: boolean;

  constructor(private readonly options: HttpProviderOptions) {
    this.deduplicates = options.deduplicates;
  }

  async submit(submission: ProviderSubmission): Promise<{ providerJobId: string }> {
    let response: RawResponse;
    try {
      response = await this.call(
        'POST',
        '/v1/generations',
        { type: submission.type, input: submission.input, webhookUrl: submission.webhookUrl },
        { 'idempotency-key': submission.idempotencyKey },
        this.options.submitTimeoutMs,
      );
    } catch (error) {
      const failure = error as CallFailed;
      if (failure.requestWritten)
        throw new AmbiguousSubmissionError(`Submission outcome unknown: ${failure.message}`);
      throw new ProviderUnavailableError(`Provider unreachable: ${failure.message}`);
    }
    const { status } = response;
    if (status === 429 || status === 503) throw new ProviderUnavailableError(`Provider answered ${status}.`);
    if (status >= 400 && status < 500 && status !== 408) {
      throw new ProviderRejectedError(
        `Provider refused the submission (${status}).`,
        `provider_rejected_${status}`,
      );
    }
    if (status >= 200 && status < 300) {
      const body = submitted.safeParse(safeJson(response.body));
      if (body.success) return { providerJobId: body.data.id };
    }
    throw new AmbiguousSubmissionError(`Provider answered ${status} without a job id.`);
  }

  async status(providerJobId: string): Promise<ProviderJobStatus> {
    const response = await this.read('GET', `/v1/generations/${encodeURIComponent(providerJobId)}`);
    const body = statusSchema.safeParse(safeJson(response.body));
    if (!body.success) throw new ProviderUnavailableError('Provider answered a malformed status.');
    return body.data;
  }

  async cancel(providerJobId: string): Promise<void> {
    await this.read('POST', `/v1/generations/${encodeURIComponent(providerJobId)}/cancel`);
  }

  /** A call that is safe to repeat: every failure is "unavailable". */
  private async read(method: string, path: string): Promise<RawResponse> {
    let response: RawResponse;
    try {
      response = await this.call(method, path, undefined, {}, this.options.readTimeoutMs);
    } catch (error) {
      throw new ProviderUnavailableError(`Provider unreachable: ${(error as Error).message}`);
    }
    if (response.status >= 400) throw new ProviderUnavailableError(`Provider answered ${response.status}.`);
    return response;
  }

  private call(
    method: string,
    path: string,
    body: unknown,
    headers: Record<string, string>,
    timeoutMs: number,
  ): Promise<RawResponse> {
    const url = new URL(path, this.options.baseUrl);
    const payload = body === undefined ? undefined : Buffer.from(JSON.stringify(body), 'utf8');
    const transport = url.protocol === 'https:' ? https : http;
    return new Promise((resolve, reject) => {
      let connected = false;
      let finished = false;
      const fail = (message: string) => reject(new CallFailed(message, connected && finished));
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
            ...(this.options.apiKey ? { authorization: `Bearer ${this.options.apiKey}` } : {}),
            ...headers,
          },
        },
        (response) => {
          const chunks: Buffer[] = [];
          response.on('data', (chunk: Buffer) => chunks.push(chunk));
          response.on('end', () => {
            clearTimeout(timer);
            resolve({ status: response.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8') });
          });
          response.on('error', (error) => fail(error.message));
        },
      );
      const timer = setTimeout(
        () => request.destroy(new Error(`timed out after ${timeoutMs} ms`)),
        timeoutMs,
      );
      request.on('socket', (socket) => {
        if (!socket.connecting) connected = true;
        else socket.once('connect', () => (connected = true));
      });
      request.on('finish', () => (finished = true));
      request.on('error', (error) => {
        clearTimeout(timer);
        fail(error.message);
      });
      request.end(payload);
    });
  }
}

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}
