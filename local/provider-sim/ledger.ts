import type { ProviderName } from './faults';
import { PROVIDERS } from './faults';

export interface LedgerEntry {
  readonly id: string;
  readonly idempotencyKey: string | null;
  readonly acceptedAt: string;
  /**
   * When the job ended at the provider (succeeded, failed or canceled);
   * absent while it runs, and for a job that stalled.
   */
  readonly finishedAt?: string;
  /**
   * How the job ended, once it has: a charge stands whatever the outcome.
   * `canceled` is a job stopped by a cancel; as Replicate bills a canceled
   * prediction for the time it ran (public models), its bill is the time from
   * `acceptedAt` to `finishedAt`, and a later cancel ends nothing more.
   */
  readonly outcome?: 'succeeded' | 'failed' | 'canceled';
  /** What the call was billed for, where a provider bills by input tokens (Bedrock); absent elsewhere. */
  readonly inputTokens?: number;
  /**
   * A digest of each text the call was billed for reading (Bedrock), so a
   * test can tell the same passage billed twice; absent elsewhere.
   */
  readonly inputDigests?: readonly string[];
}

export interface ProviderLedger {
  readonly submissions: readonly LedgerEntry[];
  readonly maxConcurrent: number;
  readonly running: number;
  /** Submissions refused with a 429 by a rate limit, none of them charged; absent while there are none. */
  readonly throttled?: number;
}

export interface Ledger extends ProviderLedger {
  /**
   * The same accounting for each dialect on its own. Absent while nothing has
   * been accepted or throttled since start or reset, so an untouched simulator
   * still answers with the three fields it always had.
   */
  readonly byProvider?: Readonly<Record<ProviderName, ProviderLedger>>;
}

/** An entry as the ledger keeps it: the same record in the total and in its provider's account. */
interface Charge {
  readonly id: string;
  readonly idempotencyKey: string | null;
  readonly acceptedAt: string;
  readonly inputTokens?: number;
  readonly inputDigests?: readonly string[];
  finishedAt?: string;
  outcome?: 'succeeded' | 'failed' | 'canceled';
}

interface Account {
  submissions: Charge[];
  running: number;
  maxConcurrent: number;
  throttled: number;
}

const emptyAccount = (): Account => ({ submissions: [], running: 0, maxConcurrent: 0, throttled: 0 });

/**
 * What the provider charged: every accepted submission is a charge, whatever
 * happened to the answer. `maxConcurrent` is the most jobs that were running
 * at one time, over all dialects and for each.
 */
export class ChargeLedger {
  private total = emptyAccount();
  private byProvider = new Map<ProviderName, Account>();

  charge(provider: ProviderName, entry: LedgerEntry): void {
    const charge: Charge = { ...entry };
    for (const account of [this.total, this.account(provider)]) {
      account.submissions.push(charge);
      account.running += 1;
      account.maxConcurrent = Math.max(account.maxConcurrent, account.running);
    }
  }

  /** A submission to `provider` was refused by its rate limit: counted, not charged. */
  throttled(provider: ProviderName): void {
    this.total.throttled += 1;
    this.account(provider).throttled += 1;
  }

  /** The charged job `id` reached a terminal state, `outcome`, at `at`. */
  settled(provider: ProviderName, id: string, at: Date, outcome: 'succeeded' | 'failed' | 'canceled'): void {
    this.total.running -= 1;
    const account = this.account(provider);
    account.running -= 1;
    // The latest charge under that id: the one that ran.
    const charge = account.submissions.findLast((candidate) => candidate.id === id);
    if (charge) {
      charge.finishedAt = at.toISOString();
      charge.outcome = outcome;
    }
  }

  snapshot(): Ledger {
    const view = (account: Account): ProviderLedger => ({
      submissions: account.submissions.map((charge) => ({ ...charge })),
      maxConcurrent: account.maxConcurrent,
      running: account.running,
      ...(account.throttled > 0 ? { throttled: account.throttled } : {}),
    });
    const ledger: Ledger = view(this.total);
    if (this.total.submissions.length === 0 && this.total.throttled === 0) return ledger;
    const byProvider = Object.fromEntries(
      PROVIDERS.map((provider) => [provider, view(this.account(provider))]),
    ) as Record<ProviderName, ProviderLedger>;
    return { ...ledger, byProvider };
  }

  reset(): void {
    this.total = emptyAccount();
    this.byProvider = new Map();
  }

  private account(provider: ProviderName): Account {
    let account = this.byProvider.get(provider);
    if (!account) {
      account = emptyAccount();
      this.byProvider.set(provider, account);
    }
    return account;
  }
}
