import { type Job, jobIdOf, slotHolderOf } from '../../../../lambdas/domain/job';
import type { TenantShare } from '../../../../lambdas/domain/ports';
import type { Breach, WorldView } from './invariants';
import type { ProviderRun } from './provider';
import type { PortCall } from './scheduled';

/** A tenant of a world with several: its share of the provider's slots, and its own cap when it has one. */
export interface TenantSetup extends TenantShare {
  readonly tenant: string;
}

/** What the cap invariants read of the world besides the rest: whose job each is, and each tenant's cap. */
export interface CapsView extends WorldView {
  readonly tenants: readonly TenantSetup[];
  /** The tenant of a job id of the world (its jobs' ids are derived from their tenants' keys). */
  tenantOfJob(jobId: string): string | undefined;
}

/**
 * Each tenant's use of the provider, counted as the limit is (`stepInvariants`):
 * a submission of its jobs uses one unit while it holds a slot, and one per
 * provider job of it still running. A tenant with a cap never uses more than
 * its cap; checked after every port call, so a cap passed for a moment is caught.
 */
export function* capInvariants(world: CapsView, call: PortCall): Generator<Breach> {
  const { provider, slots } = world;
  const holders = new Set([...slots.held, ...[...provider.runs.values()].map((run) => run.holder)]);
  const inUse = new Map<string, number>();
  for (const holder of holders) {
    const tenant = world.tenantOfJob(jobIdOf(holder));
    if (tenant === undefined) continue;
    const units = Math.max(slots.held.has(holder) ? 1 : 0, provider.runningFor(holder).length);
    inUse.set(tenant, (inUse.get(tenant) ?? 0) + units);
  }
  for (const { tenant, maxInFlight } of world.tenants) {
    const used = inUse.get(tenant) ?? 0;
    if (maxInFlight !== undefined && used > maxInFlight) {
      yield {
        invariant: 'tenantCap',
        jobId: tenant,
        detail: `tenant ${tenant} uses ${used} provider slots or runs; its cap is ${maxInFlight} (held: ${[...slots.held].filter((h) => world.tenantOfJob(jobIdOf(h)) === tenant).join(', ')})`,
      };
    }
  }
  yield* submittedWithSlot(world, call);
}

/**
 * A submission reaches the provider only while it holds its slot: the step
 * that sends it (a first run, a resumed one, or a new run the reconciler
 * started) runs under the slot its job took, never beside it.
 */
function* submittedWithSlot(world: CapsView, call: PortCall): Generator<Breach> {
  if (call.port !== 'provider' || call.method !== 'submit' || call.fault === 'before') return;
  const sent = world.provider.sent.at(-1);
  if (!sent?.accepted) return;
  if (world.slots.held.has(sent.holder)) return;
  const job: Job | undefined = world.job(jobIdOf(sent.holder));
  const run: ProviderRun | undefined = [...world.provider.runs.values()].find(
    (r) => r.holder === sent.holder,
  );
  yield {
    invariant: 'submitHoldsSlot',
    jobId: jobIdOf(sent.holder),
    detail: `submission ${sent.holder} was sent (${run?.id ?? 'no run'}) holding no slot; the job is ${job?.status ?? 'gone'}${job?.resumes ? ` after ${job.resumes} resumes` : ''}, its current submission ${job ? slotHolderOf(job) : 'none'}`,
  };
}
