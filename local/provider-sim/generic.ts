import { randomBytes } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import * as z from 'zod';
import type { Dialect, SimulatorContext } from './dialect';
import { answerAccepted, type FaultMode, jobFault } from './faults';
import {
  allow,
  genericError,
  HttpError,
  hasApiKey,
  isoNow,
  parse,
  readJson,
  sendJson,
  singleHeader,
} from './http';
import type { Job, JobOutcome } from './jobs';
import { type GenerationOutput, type GenerationType, generationOutput } from './outputs';
import { PROVIDER_SIGNATURE_HEADER, signProviderPayload } from './signature';
import type { ProviderError, ProviderEvent } from './webhooks';

/**
 * The generic provider API (contract section 3, provider `longhaul-http`):
 * `/v1/generations`, optional idempotency by `Idempotency-Key`, webhooks signed
 * with `Provider-Signature`.
 */

export type GenerationStatus = 'queued' | 'running' | 'succeeded' | 'failed' | 'canceled';

/** The failure a generation itself carries when the `fail-job` fault hits it. */
export const SIMULATED_GENERATION_FAILURE: ProviderError = {
  code: 'generation_failed',
  message: 'The simulated provider failed this generation while it was running.',
};

const submissionSchema = z.discriminatedUnion('type', [
  z.object({
    type: z.literal('image.generate'),
    input: z.looseObject({ prompt: z.string().min(1).max(4000) }),
    webhookUrl: z.url({ protocol: /^https?$/ }),
  }),
  z.object({
    type: z.literal('audio.transcribe'),
    input: z.looseObject({ language: z.string().min(1).optional() }),
    webhookUrl: z.url({ protocol: /^https?$/ }),
  }),
]);

/** Per the IETF Idempotency-Key draft as Longhaul applies it: 1..255 visible ASCII characters. */
const IDEMPOTENCY_KEY = /^[\x21-\x7e]{1,255}$/;

interface Generation {
  readonly id: string;
  readonly type: GenerationType;
  readonly input: Readonly<Record<string, unknown>>;
  readonly webhookUrl: string;
  readonly job: Job;
  output?: GenerationOutput;
  error?: ProviderError;
}

export class GenericDialect implements Dialect {
  readonly provider = 'longhaul-http';
  private readonly generations = new Map<string, Generation>();
  private readonly firstIdByKey = new Map<string, string>();

  constructor(
    private readonly context: SimulatorContext,
    private readonly webhookSecret: string,
  ) {}

  async handle(req: IncomingMessage, res: ServerResponse, path: string, method: string): Promise<boolean> {
    if (!path.startsWith('/v1/')) return false;
    if (!hasApiKey(req, 'Bearer', this.context.apiKey)) {
      throw genericError(401, 'unauthorized', 'Missing or invalid API key.');
    }
    if (path === '/v1/generations') {
      allow(method, 'POST');
      await this.submit(req, res);
      return true;
    }
    const route = /^\/v1\/generations\/([^/]+)(\/cancel)?$/.exec(path);
    if (!route) throw genericError(404, 'not_found', `No route for ${path}.`);
    if (this.context.faults.down(this.provider)) {
      res.setHeader('Retry-After', '1');
      throw genericError(
        503,
        'service_unavailable',
        'The provider is temporarily unavailable (simulated outage).',
      );
    }
    const generation = this.find(decodeURIComponent(route[1] ?? ''));
    if (route[2]) {
      allow(method, 'POST');
      this.context.runner.cancel(generation.job);
      sendJson(res, 200, { id: generation.id, status: statusOf(generation.job) });
      return true;
    }
    allow(method, 'GET');
    sendJson(res, 200, this.describe(generation));
    return true;
  }

  reset(): void {
    this.generations.clear();
    this.firstIdByKey.clear();
  }

  private async submit(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const submission = parse(submissionSchema, await readJson(req));
    const idempotencyKey = singleHeader(req, 'idempotency-key');
    if (idempotencyKey !== undefined && !IDEMPOTENCY_KEY.test(idempotencyKey)) {
      throw genericError(
        400,
        'invalid_request',
        'Idempotency-Key must be 1 to 255 visible ASCII characters.',
      );
    }

    const wait = this.context.throttle(this.provider);
    if (wait !== undefined) throw this.rateLimited(wait);
    const fault = this.context.faults.take(this.provider);
    if (fault === 'reject') {
      throw genericError(400, 'invalid_request', 'The provider rejected this request (simulated fault).');
    }
    if (fault === 'unavailable') {
      res.setHeader('Retry-After', '1');
      throw genericError(
        503,
        'service_unavailable',
        'The provider is temporarily unavailable (simulated fault).',
      );
    }

    const config = this.context.config(this.provider);
    const firstId =
      config.idempotent && idempotencyKey !== undefined ? this.firstIdByKey.get(idempotencyKey) : undefined;
    if (firstId) this.context.log(`repeat of ${idempotencyKey} answered with ${firstId}, not charged`);
    const id = firstId ?? this.accept(submission, idempotencyKey, fault).id;

    answerAccepted(fault, req, () => {
      if (firstId) res.setHeader('Idempotent-Replayed', 'true');
      sendJson(res, 201, { id });
    });
  }

  /**
   * A submission past the rate limit: an RFC 9457 problem, as a team's own
   * HTTP API would answer it, that keeps the generic API's `error` member for
   * clients that read `error.code`.
   */
  private rateLimited(seconds: number): HttpError {
    const limit = this.context.config(this.provider).rateLimit;
    const detail = `Rate limit of ${limit?.requestsPerMinute} submissions a minute (burst ${limit?.burst}) exceeded; try again in ${seconds} s.`;
    return new HttpError(
      429,
      {
        type: 'about:blank',
        title: 'Too Many Requests',
        status: 429,
        detail,
        error: { code: 'rate_limited', message: detail },
      },
      { 'Retry-After': String(seconds), 'content-type': 'application/problem+json' },
    );
  }

  private accept(
    submission: z.infer<typeof submissionSchema>,
    idempotencyKey: string | undefined,
    fault: FaultMode | undefined,
  ): Generation {
    const { jobMs, progressHz } = this.context.config(this.provider);
    const id = `gen_${randomBytes(12).toString('hex')}`;
    const generation: Generation = {
      id,
      type: submission.type,
      input: submission.input,
      webhookUrl: submission.webhookUrl,
      job: this.context.runner.start({
        id,
        provider: this.provider,
        idempotencyKey: idempotencyKey ?? null,
        jobMs,
        progressHz,
        fault: jobFault(fault),
        hooks: {
          progress: (_tick, _ticks, percent) =>
            this.emit(generation, { type: 'progress', id, progress: percent, at: isoNow() }),
          finished: (outcome, at) => this.finish(generation, outcome, at),
        },
      }),
    };
    this.generations.set(id, generation);
    if (idempotencyKey !== undefined && !this.firstIdByKey.has(idempotencyKey)) {
      this.firstIdByKey.set(idempotencyKey, id);
    }
    return generation;
  }

  private finish(generation: Generation, outcome: JobOutcome, finishedAt: Date): void {
    const at = finishedAt.toISOString();
    const { id } = generation;
    if (outcome === 'succeeded') {
      generation.output = generationOutput(generation.type, generation.input);
      this.emit(generation, { type: 'succeeded', id, output: generation.output, at });
    } else if (outcome === 'failed') {
      generation.error = SIMULATED_GENERATION_FAILURE;
      this.emit(generation, { type: 'failed', id, error: generation.error, at });
    } else {
      this.emit(generation, { type: 'canceled', id, at });
    }
  }

  private emit(generation: Generation, event: ProviderEvent): void {
    if (generation.job.fault === 'lose-webhooks') return;
    const body = JSON.stringify(event);
    this.context.webhooks.enqueue({
      jobId: generation.id,
      url: generation.webhookUrl,
      label: event.type,
      final: event.type !== 'progress',
      body,
      headers: () => ({
        [PROVIDER_SIGNATURE_HEADER]: signProviderPayload(
          this.webhookSecret,
          body,
          Math.floor(Date.now() / 1000),
        ),
      }),
    });
  }

  private find(id: string): Generation {
    const generation = this.generations.get(id);
    if (!generation) throw genericError(404, 'not_found', `No generation ${id}.`);
    return generation;
  }

  private describe(generation: Generation) {
    return {
      id: generation.id,
      status: statusOf(generation.job),
      progress: generation.job.percent,
      ...(generation.output ? { output: generation.output } : {}),
      ...(generation.error ? { error: generation.error } : {}),
    };
  }
}

/** The generic API names the job states as they are. */
function statusOf(job: Job): GenerationStatus {
  return job.state;
}
