import type { ProviderName } from '../../config/providers';
import { jobIdOf } from '../../lambdas/domain/job';
import { parseLocalConfig } from '../config';
import { DEFAULT_DEEPGRAM_PROJECT_ID } from '../provider-sim/defaults';
import type { LedgerEntry, ProviderLedger } from '../provider-sim/simulator';

/** How a provider job stands at the simulator: still running, over (whatever its outcome), or stopped by a cancel. */
export type ProviderJobState = 'running' | 'ended' | 'canceled';

/** One charge of the simulator's ledger, read back from the provider that made it. */
export interface ChargedJob {
  /** The provider's id of the job it charged for. */
  readonly providerJobId: string;
  /** The Longhaul job it was submitted for; undefined when the provider's record names none. */
  readonly jobId: string | undefined;
  readonly state: ProviderJobState;
}

/** Where each dialect lives on the simulator, as the local stack points each provider's adapter at it. */
const dialects = parseLocalConfig({}).provider.dialects;

/** A GET of the simulator, answering its JSON as the shape the caller names. */
type Get = <T>(path: string) => Promise<T>;

/** The job a webhook URL Longhaul handed over is for (`providerWebhookUrlOf`). */
const jobOfWebhook = (url: unknown): string | undefined =>
  typeof url === 'string' ? (new URL(url).searchParams.get('jobId') ?? undefined) : undefined;

/**
 * Each dialect's own record of a provider job, read as a client of that
 * provider would: the generic API deduplicates by key, so its charges carry
 * the submission's key; Replicate and Deepgram take none, and their record of
 * the job keeps the webhook (callback) URL that names the Longhaul job.
 * Bedrock keeps nothing: its charges are read from the ledger alone.
 */
const readers: {
  readonly [P in ProviderName]: (get: Get, charge: LedgerEntry) => Promise<Omit<ChargedJob, 'providerJobId'>>;
} = {
  'longhaul-http': async (get, charge) => {
    const generation = await get<{ readonly status: string }>(
      `${dialects['longhaul-http'].basePath}/v1/generations/${charge.id}`,
    );
    return {
      jobId: charge.idempotencyKey === null ? undefined : jobIdOf(charge.idempotencyKey),
      state:
        generation.status === 'queued' || generation.status === 'running'
          ? 'running'
          : generation.status === 'canceled'
            ? 'canceled'
            : 'ended',
    };
  },
  replicate: async (get, charge) => {
    const prediction = await get<{ readonly status: string; readonly webhook?: unknown }>(
      `${dialects.replicate.basePath}/predictions/${charge.id}`,
    );
    return {
      jobId: jobOfWebhook(prediction.webhook),
      state:
        prediction.status === 'starting' || prediction.status === 'processing'
          ? 'running'
          : prediction.status === 'canceled'
            ? 'canceled'
            : 'ended',
    };
  },
  deepgram: async (get, charge) => {
    // The management API's record of the request; `response` appears once it is over. Deepgram cannot cancel.
    const { request } = await get<{
      readonly request: { readonly callback?: unknown; readonly response?: unknown };
    }>(`${dialects.deepgram.basePath}/v1/projects/${DEFAULT_DEEPGRAM_PROJECT_ID}/requests/${charge.id}`);
    return { jobId: jobOfWebhook(request.callback), state: request.response ? 'ended' : 'running' };
  },
  bedrock: async (_get, charge) => {
    // A Bedrock call is answered when it ends and leaves no record to read back, nor anything naming
    // the job it was for: the ledger's own entry says whether it is still running.
    return { jobId: undefined, state: charge.finishedAt === undefined ? 'running' : 'ended' };
  },
};

/** Every charge one provider's ledger holds, with the job it was for and how that provider job stands now. */
export async function chargedJobs(
  providerUrl: string,
  provider: ProviderName,
  ledger: ProviderLedger | undefined,
): Promise<ChargedJob[]> {
  const get: Get = async <T>(path: string): Promise<T> => {
    const response = await fetch(`${providerUrl}${path}`);
    const text = await response.text();
    if (!response.ok) throw new Error(`simulator ${path} answered ${response.status}: ${text}`);
    return JSON.parse(text) as T;
  };
  return Promise.all(
    (ledger?.submissions ?? []).map(async (charge) => ({
      providerJobId: charge.id,
      ...(await readers[provider](get, charge)),
    })),
  );
}
