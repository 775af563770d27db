import { TransactionCanceledException, TransactionConflictException } from '@aws-sdk/client-dynamodb';

/**
 * Tries of a write that meets another transaction on its item. DynamoDB runs
 * transactions optimistically: a write to an item inside another
 * transaction's flight fails with TransactionConflictException, and a
 * transaction overlapping another is cancelled with TransactionConflict. The
 * SDK retries neither. A flight lasts milliseconds, so a few tries spread by
 * full jitter get through a hot item's contention: on the pool item the only
 * transactions are grants (a release is one plain update), so six tries
 * waiting up to 1.2 s in all outlast any run of grants in flight, and a
 * caller that still meets one has its own recourse (a grant's chooser reads
 * again, a release step its retries, a dispatch its message).
 */
const CONFLICT_ATTEMPTS = 6;
const BASE_DELAY_MS = 20;
const MAX_DELAY_MS = 640;

/** Whether `error` says the write met another transaction, and so did nothing. */
export function isConflict(error: unknown): boolean {
  if (error instanceof TransactionConflictException) return true;
  return (
    error instanceof TransactionCanceledException &&
    (error.CancellationReasons ?? []).some((reason) => reason.Code === 'TransactionConflict')
  );
}

/**
 * Runs `write` again after each conflict, up to CONFLICT_ATTEMPTS tries in
 * all, waiting a random time up to a doubling cap before each (full jitter, so
 * writers that met together do not meet again). Only for a write whose
 * condition is judged at the time it runs (not one computed from an earlier
 * read, whose caller must read again); the last conflict is thrown.
 */
export async function retryingConflicts<T>(
  write: () => Promise<T>,
  random: () => number = Math.random,
): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await write();
    } catch (error) {
      if (!isConflict(error) || attempt >= CONFLICT_ATTEMPTS) throw error;
      const cap = Math.min(MAX_DELAY_MS, BASE_DELAY_MS * 2 ** attempt);
      await new Promise((resolve) => setTimeout(resolve, random() * cap));
    }
  }
}
