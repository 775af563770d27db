import type { WorkflowDeps } from '../../../lambdas/domain/workflow';
import {
  granting,
  limits,
  MemoryEvents,
  MemoryInputs,
  MemoryOutputs,
  MemoryQueue,
  type MemoryStore,
  MemoryTimeline,
  MemoryVectorIndex,
  MemoryWaitingLines,
  MemoryWorkflow,
  memoryIntake,
  memorySlots,
  memoryTenantShares,
  type ScriptedProvider,
} from './memory-ports';

interface World {
  readonly store: MemoryStore;
  readonly provider: ScriptedProvider;
  readonly clock: Date;
}

function defaults({ store, provider, clock }: World) {
  return {
    store,
    slots: memorySlots(),
    queue: new MemoryQueue(),
    waiting: new MemoryWaitingLines(),
    tenantShares: memoryTenantShares(),
    maxInFlight: limits(2),
    backlogs: { admitPastCap: async () => {} },
    firstLook: async () => ({ inLine: true }),
    provider,
    providers: async () => provider,
    timeline: new MemoryTimeline(),
    inputs: new MemoryInputs(),
    outputs: new MemoryOutputs(),
    workflow: new MemoryWorkflow(),
    now: () => clock,
    maxUploadBytes: 1000,
    providerWebhookUrl: () => 'https://longhaul.example/v1/provider/events',
    fetchOutput: async () => ({ bytes: new Uint8Array() }),
    inputUrlTtlSeconds: 900,
    deliverWebhook: async () => 'skipped' as const,
    probeUrl: async () => ({ size: 10, contentType: 'audio/mpeg' }),
    vectors: new MemoryVectorIndex(),
    embedding: { model: 'titan-text-v2', dimensions: 256, normalize: true, passagesPerJob: 4 } as const,
    events: new MemoryEvents(),
    intake: {
      ...memoryIntake(() => clock, { 'image.generate': 'longhaul-http', 'audio.transcribe': 'longhaul-http' })
        .deps,
      store,
    },
  };
}

/**
 * What the workflow's steps (`runStep`) run on in a unit test: the in-memory
 * ports over the test's store and provider, at a clock that stands still, with
 * room for two jobs at each provider and every outside call answered at once.
 * `overrides` replaces any of them but the store, slots and waiting lines, and
 * is how a test keeps hold of a port it looks into.
 */
export function memoryWorkflowDeps<O extends Partial<Omit<WorkflowDeps, 'store' | 'slots' | 'waiting'>>>(
  world: World,
  overrides: O,
): Omit<ReturnType<typeof defaults>, keyof O> & O {
  const deps = granting(defaults(world));
  return { ...deps, ...overrides };
}
