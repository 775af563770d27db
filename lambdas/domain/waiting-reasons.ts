import { waitingEntryOf } from './fair-share';
import { type Job, providerOf, takesSlot } from './job';
import type { InFlightLimits, SlotPools, TenantShares, WaitingLines } from './ports';
import { isPaused } from './provider-pauses';
import { effectiveRate, rateTokenOf } from './rates';
import type { Resource, waiting } from './resources';

/** Why a queued job waits, as its resource says (`waiting`). */
export type Waiting = Resource<typeof waiting>;

export interface WaitingDeps {
  readonly slots: SlotPools;
  readonly maxInFlight: InFlightLimits;
  readonly tenantShares: TenantShares;
  /** The lines, for the job's place in its tenant's line. */
  readonly waiting: Pick<WaitingLines, 'head'>;
  readonly now: () => Date;
}

/** How far into its tenant's line a job's place is looked for: one small query, never the whole line. */
export const POSITION_READ = 25;

/**
 * Why a queued job is not at its provider yet, from one read of its
 * provider's pool (and, at a provider with slots free, its tenant's share):
 * the provider paused (until when), every slot taken, its tenant at its own
 * cap, or the provider's rate used up (until its next token). Where its rate
 * is known, a job behind a pause or the rate says when it should start: the
 * wait, then a token each for the jobs ahead of it in its tenant's line (the
 * other tenants' turns come between: an estimate). Undefined for a job that
 * is not queued, holds no slot of its own (a publish), or whose grant is only
 * a moment away: a free slot, a token, its turn.
 */
export async function waitingOf(deps: WaitingDeps, job: Job): Promise<Waiting | undefined> {
  if (job.status !== 'queued' || !takesSlot(job)) return undefined;
  const provider = providerOf(job);
  const state = await deps.slots(provider).state();
  const now = deps.now();
  let reason: Pick<Waiting, 'reason' | 'until'> | undefined;
  /** When the wait ends for the first job in line (epoch ms), where that is the pool's to say. */
  let firstAt: number | undefined;
  if (state.pausedUntil !== undefined && isPaused(state, now)) {
    reason = { reason: 'provider_paused', until: new Date(state.pausedUntil).toISOString() };
    firstAt = state.pausedUntil;
  } else if (state.holders.length >= deps.maxInFlight[provider]) {
    reason = { reason: 'provider_full' };
  } else {
    const cap = (await deps.tenantShares([job.tenantId])).get(job.tenantId)?.maxInFlight;
    const token = rateTokenOf(state, now);
    if (cap !== undefined && (state.tenantInFlight[job.tenantId] ?? 0) >= cap) {
      reason = { reason: 'tenant_cap' };
    } else if ('waitMs' in token) {
      firstAt = now.getTime() + token.waitMs;
      reason = { reason: 'rate_limited', until: new Date(firstAt).toISOString() };
    }
  }
  if (!reason) return undefined;
  const { position } = await positionOf(deps, job);
  const rate = effectiveRate(state.rate, firstAt ?? now.getTime());
  const estimatedStartAt =
    firstAt !== undefined && position !== undefined && (rate || position === 1)
      ? new Date(firstAt + (position - 1) * (rate ? 60_000 / rate.perMinute : 0)).toISOString()
      : undefined;
  return {
    ...reason,
    ...(position === undefined ? {} : { position }),
    ...(estimatedStartAt === undefined ? {} : { estimatedStartAt }),
  };
}

/**
 * The job's place in its tenant's line, read from the line's head (a job
 * canceled while waiting may still be counted ahead of it until a choice
 * removes its entry); nothing when it is further back than that read.
 */
async function positionOf(deps: Pick<WaitingDeps, 'waiting'>, job: Job): Promise<{ position?: number }> {
  const entry = waitingEntryOf(job);
  const head = await deps.waiting.head(entry.provider, entry.tenant, POSITION_READ);
  const index = head.findIndex((waiting) => waiting.jobId === job.id);
  return index < 0 ? {} : { position: index + 1 };
}
