import { type Job, providerOf, takesSlot } from './job';
import type { InFlightLimits, SlotPools, TenantShares } from './ports';
import { isPaused } from './provider-pauses';
import type { Resource, waiting } from './resources';

/** Why a queued job waits, as its resource says (`waiting`). */
export type Waiting = Resource<typeof waiting>;

export interface WaitingDeps {
  readonly slots: SlotPools;
  readonly maxInFlight: InFlightLimits;
  readonly tenantShares: TenantShares;
  readonly now: () => Date;
}

/**
 * Why a queued job is not at its provider yet, from one read of its
 * provider's pool (and, at a provider with slots free, its tenant's share):
 * the provider paused (until when), every slot taken, or its tenant at its
 * own cap. Undefined for a job that is not queued, holds no slot of its own
 * (a publish), or whose grant is only a moment away: a free slot, its turn.
 */
export async function waitingOf(deps: WaitingDeps, job: Job): Promise<Waiting | undefined> {
  if (job.status !== 'queued' || !takesSlot(job)) return undefined;
  const provider = providerOf(job);
  const state = await deps.slots(provider).state();
  if (state.pausedUntil !== undefined && isPaused(state, deps.now())) {
    return { reason: 'provider_paused', until: new Date(state.pausedUntil).toISOString() };
  }
  if (state.holders.length >= deps.maxInFlight[provider]) return { reason: 'provider_full' };
  const cap = (await deps.tenantShares([job.tenantId])).get(job.tenantId)?.maxInFlight;
  if (cap !== undefined && (state.tenantInFlight[job.tenantId] ?? 0) >= cap) return { reason: 'tenant_cap' };
  return undefined;
}
