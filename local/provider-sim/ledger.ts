import type { ProviderName } from './faults';
import { PROVIDERS } from './faults';

export interface LedgerEntry {
  readonly id: string;
  readonly idempotencyKey: string | null;
  readonly acceptedAt: string;
}

export interface ProviderLedger {
  readonly submissions: readonly LedgerEntry[];
  readonly maxConcurrent: number;
  readonly running: number;
}

export interface Ledger extends ProviderLedger {
  /**
   * The same accounting for each dialect on its own. Absent while nothing has
   * been accepted since start or reset, so an untouched simulator still answers
   * with the three fields it always had.
   */
  readonly byProvider?: Readonly<Record<ProviderName, ProviderLedger>>;
}

interface Account {
  submissions: LedgerEntry[];
  running: number;
  maxConcurrent: number;
}

const emptyAccount = (): Account => ({ submissions: [], running: 0, maxConcurrent: 0 });

/**
 * What the provider charged: every accepted submission is a charge, whatever
 * happened to the answer. `maxConcurrent` is the most jobs that were running
 * at one time, over all dialects and for each.
 */
export class ChargeLedger {
  private total = emptyAccount();
  private byProvider = new Map<ProviderName, Account>();

  charge(provider: ProviderName, entry: LedgerEntry): void {
    for (const account of [this.total, this.account(provider)]) {
      account.submissions.push(entry);
      account.running += 1;
      account.maxConcurrent = Math.max(account.maxConcurrent, account.running);
    }
  }

  /** A charged job reached a terminal state. */
  settled(provider: ProviderName): void {
    this.total.running -= 1;
    this.account(provider).running -= 1;
  }

  snapshot(): Ledger {
    const view = (account: Account): ProviderLedger => ({
      submissions: [...account.submissions],
      maxConcurrent: account.maxConcurrent,
      running: account.running,
    });
    const ledger: Ledger = view(this.total);
    if (this.total.submissions.length === 0) return ledger;
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
