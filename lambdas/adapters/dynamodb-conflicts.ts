import { TransactionCanceledException, TransactionConflictException } from '@aws-sdk/client-dynamodb';

/**
 * How long a write that meets other transactions on its item keeps trying.
 * DynamoDB runs transactions optimistically: a write to an item inside another
 * transaction's flight fails with TransactionConflictException, and a
 * transaction overlapping another is cancelled with TransactionConflict. The
 * SDK retries neither. A flight lasts milliseconds, and on the hot items the
 * only transactions are grants (a release is one plain update), so what a
 * write needs is time, not a number of tries: short waits, spread by full
 * jitter so writers that met do not meet again, adding up to about a second
 * and a half, what six doubling tries up to 640 ms used to wait at most. Only
 * the waits count: a slow answer (a busy table, a cold connection) is no
 * sign of contention and spends none of it. A caller
 * that still meets one has its own recourse (a grant's chooser reads again, a
 * release step its retries, a dispatch its message).
 */
const CONFLICT_BUDGET_MS = 1_500;
const BASE_DELAY_MS = 10;
const MAX_DELAY_MS = 160;

/** Whether `error` says the write met another transaction, and so did nothing. */
export function isConflict(error: unknown): boolean {
  if (error instanceof TransactionConflictException) return true;
  return (
    error instanceof TransactionCanceledException &&
    (error.CancellationReasons ?? []).some((reason) => reason.Code === 'TransactionConflict')
  );
}

/**
 * Runs `write` again after each conflict while its waits add up to no more
 * than CONFLICT_BUDGET_MS, waiting a random time up to a doubling cap before
 * each (full jitter). Only for a write whose condition is judged at the time
 * it runs (not one computed from an earlier read, whose caller must read
 * again); the last conflict is thrown.
 */
export async function retryingConflicts<T>(
  write: () => Promise<T>,
  random: () => number = Math.random,
): Promise<T> {
  let waited = 0;
  for (let attempt = 1; ; attempt++) {
    try {
      return await write();
    } catch (error) {
      const wait = random() * Math.min(MAX_DELAY_MS, BASE_DELAY_MS * 2 ** attempt);
      if (!isConflict(error) || waited + wait > CONFLICT_BUDGET_MS) throw error;
      waited += wait;
      await new Promise((resolve) => setTimeout(resolve, wait));
    }
  }
}
