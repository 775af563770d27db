import { print, tally } from '../support/common';
import { type Ledger, startBenchStack } from '../support/stack';

/**
 * Charges under `accept-then-drop`: the provider accepts and charges every
 * first submission, then resets the connection before answering. With a
 * provider that deduplicates on the Idempotency-Key, the resend is free and
 * the job completes; with one that does not, the job goes to review rather
 * than being charged again.
 *
 * The in-flight limit is the number of jobs, so every first submission is
 * among the dropped ones (a resend is a request too, and takes a fault if
 * one is left), and so the jobs in review, which keep their slots until the
 * job timeout, hold up no others.
 */

export interface DropFigures {
  readonly providerIdempotent: boolean;
  readonly jobs: number;
  readonly charges: number;
  readonly jobsChargedTwiceOrMore: number;
  readonly outcome: Record<string, number>;
}

const JOBS = 20;

/** Idempotency keys the provider charged more than once. */
export function keysChargedTwice(ledger: Ledger): number {
  const charges = tally(ledger.submissions.map((s) => s.idempotencyKey ?? s.id));
  return Object.values(charges).filter((n) => n > 1).length;
}

export async function acceptThenDropSection(): Promise<DropFigures[]> {
  print(
    `\n## 6. Charges under accept-then-drop: ${JOBS} jobs, each first submission dropped after the charge`,
  );
  const results: DropFigures[] = [];
  for (const idempotent of [true, false]) {
    const flag = idempotent ? '1' : '0';
    const s = await startBenchStack({
      MAX_IN_FLIGHT: String(JOBS),
      SIM_JOB_MS: '1000',
      SIM_IDEMPOTENT: flag,
      PROVIDER_IDEMPOTENT: flag,
    });
    try {
      await s.provider('/_sim/faults', { mode: 'accept-then-drop', count: JOBS });
      const ids = (await Promise.all(Array.from({ length: JOBS }, (_, i) => s.submit(`drop ${i}`)))).map(
        (job) => job.id,
      );
      const outcome = tally(await s.settle(ids, 120_000));
      const ledger = await s.ledger();
      const figures = {
        providerIdempotent: idempotent,
        jobs: JOBS,
        charges: ledger.submissions.length,
        jobsChargedTwiceOrMore: keysChargedTwice(ledger),
        outcome,
      };
      results.push(figures);
      print(
        `measured: provider ${idempotent ? 'deduplicates' : 'does not deduplicate'}: ${figures.charges} charges for ${JOBS} jobs, ` +
          `${figures.jobsChargedTwiceOrMore} charged twice or more, outcome ${JSON.stringify(outcome)}`,
      );
    } finally {
      await s.stop();
    }
  }
  return results;
}
