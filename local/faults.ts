import * as z from 'zod';
import type { ProviderName } from '../config/providers';

/**
 * Faults of AWS that the local stack can switch on, so tests (the chaos
 * suite) meet what a deployed stack meets; all off by default. A bad value
 * stops the stack with a message naming the variable.
 */
export interface LocalFaults {
  /** LONGHAUL_FAULT_THROTTLE: share (0..1) of the dispatch and workflow functions' invocations Lambda throttles. */
  readonly throttleShare: number;
  /** LONGHAUL_FAULT_GSI_LAG_MS: how late DynamoDB global secondary index reads see a write. */
  readonly gsiLagMs: number;
  /** LONGHAUL_FAULT_WS_CONNECT_MS: how long the WebSocket API's `$connect` takes beyond its function's own run. */
  readonly webSocketConnectMs: number;
  /**
   * LONGHAUL_FAULT_UNUSABLE_OUTPUTS: how many jobs, the first to reach
   * finalize, fail there once as finalize does for a provider output it
   * cannot use (InvalidJobInput, `output_invalid`): jobs failed at their last
   * step, after their provider was paid, which a resume takes up from there.
   */
  readonly unusableOutputs: number;
  /**
   * LONGHAUL_FAULT_SLOT_CONFLICTS: share (0..1) of the requests naming the
   * generic provider's slot pool item that conflict, as under a storm of
   * other transactions on it (the DynamoDB emulator's `armConflicts`): each
   * transaction naming it is cancelled with TransactionConflict and each
   * single write of it fails with TransactionConflictException.
   */
  readonly slotConflicts: number;
}

/** The provider whose slot pool item LONGHAUL_FAULT_SLOT_CONFLICTS names: the generic one, which image jobs use by default. */
export const SLOT_CONFLICTS_PROVIDER: ProviderName = 'longhaul-http';

const variables = {
  LONGHAUL_FAULT_THROTTLE: ['throttleShare', z.coerce.number().min(0).max(1)],
  LONGHAUL_FAULT_GSI_LAG_MS: ['gsiLagMs', z.coerce.number().int().min(0).max(60_000)],
  LONGHAUL_FAULT_WS_CONNECT_MS: ['webSocketConnectMs', z.coerce.number().int().min(0).max(60_000)],
  LONGHAUL_FAULT_UNUSABLE_OUTPUTS: ['unusableOutputs', z.coerce.number().int().min(0).max(1_000_000)],
  LONGHAUL_FAULT_SLOT_CONFLICTS: ['slotConflicts', z.coerce.number().min(0).max(1)],
} as const satisfies Record<string, readonly [keyof LocalFaults, z.ZodType<number>]>;

export function loadFaults(env: Readonly<Record<string, string | undefined>>): LocalFaults {
  const faults: Record<string, number> = {};
  const problems: string[] = [];
  for (const [name, [field, schema]] of Object.entries(variables)) {
    const raw = env[name]?.trim();
    const parsed = schema.safeParse(raw || '0');
    if (parsed.success) faults[field] = parsed.data;
    else problems.push(`${name}=${raw}: ${parsed.error.issues.map((issue) => issue.message).join('; ')}`);
  }
  if (problems.length > 0) throw new Error(`Invalid local fault settings:\n  - ${problems.join('\n  - ')}`);
  return faults as unknown as LocalFaults;
}
