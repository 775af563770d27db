import type { FillDeps } from '../domain/dispatch';
import type { Timeline } from '../domain/ports';
import { jobQueue } from './ports/job-queue';
import { liveJobStore } from './ports/live-channel';
import { inFlightLimits, slotPools, waitingLines } from './ports/slots';
import { tenantShares } from './ports/tenants';
import { timeline } from './ports/timeline';

/**
 * What handing a freed slot on takes (`handOnFreeSlots`): the pools, the
 * lines and the shares the choice reads, the hand-off lane to the
 * dispatcher, and the timeline the chosen job's grant is recorded in. One
 * list for every function that frees a slot.
 */
export const slotFillingDeps = () =>
  ({
    store: liveJobStore(),
    slots: slotPools(),
    queue: jobQueue(),
    waiting: waitingLines(),
    tenantShares: tenantShares(),
    maxInFlight: inFlightLimits(),
    timeline: timeline(),
    now: () => new Date(),
  }) satisfies FillDeps & { readonly timeline: Timeline };
