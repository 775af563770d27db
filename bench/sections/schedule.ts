import { mapWithConcurrency } from '../../lambdas/domain/concurrency';
import { fmt, print, quantile, tally } from '../support/common';
import { startBenchStack, TENANT_KEY } from '../support/stack';

/**
 * Scheduled jobs' lateness: jobs submitted with runAt spread over the next
 * seconds, against a provider with a free slot for each, so the only wait is
 * the scheduling's own. Lateness = startedAt - runAt; the promise is one
 * reconciler period at most (the pass that finds a job due sends it as intake
 * sends a new one), measured at two periods. The lateness is split at the
 * promotion (the timeline's `reconciler.promoted`): up to it is the
 * scheduling's part, which the period bounds; after it, the same path to the
 * provider a job submitted now takes (queue, dispatcher, workflow, prepare).
 */

export interface ScheduleRun {
  readonly reconcileIntervalMs: number;
  readonly latenessP50Ms: number;
  readonly latenessP99Ms: number;
  readonly latenessMaxMs: number;
  /** From runAt to the pass that moved the job to queued: the part the reconciler period bounds. */
  readonly promotedP50Ms: number;
  readonly promotedP99Ms: number;
  readonly promotedMaxMs: number;
  /** From the promotion to startedAt: the path every job takes from the queue. */
  readonly startAfterPromotionP50Ms: number;
  /** Jobs that were stored scheduled (the others were submitted after their runAt and ran at once). */
  readonly scheduled: number;
  /** Jobs that started before their runAt: must be 0. */
  readonly earlyStarts: number;
  readonly outcome: Record<string, number>;
}

export interface ScheduleFigures {
  readonly jobs: number;
  /** runAt values spread evenly over this many seconds, starting a few seconds after submission. */
  readonly spreadS: number;
  readonly runs: ScheduleRun[];
}

export const SCHEDULE = { jobs: 50, spreadS: 10, leadMs: 8000, intervalsMs: [1000, 5000] } as const;

export async function scheduleSection(): Promise<ScheduleFigures> {
  const { jobs, spreadS, leadMs } = SCHEDULE;
  print(
    `\n## Scheduled jobs: ${jobs} jobs with runAt over ${spreadS} s, reconciler every ${SCHEDULE.intervalsMs.map((ms) => `${ms / 1000} s`).join(' / ')}`,
  );
  const runs: ScheduleRun[] = [];
  for (const intervalMs of SCHEDULE.intervalsMs) runs.push(await measure(intervalMs));
  return { jobs, spreadS, runs };

  async function measure(intervalMs: number): Promise<ScheduleRun> {
    const s = await startBenchStack({
      // A free slot for every job: the lateness measured is the scheduling's, never a wait for capacity.
      MAX_IN_FLIGHT: String(jobs),
      SIM_JOB_MS: '500',
      SIM_PROGRESS_HZ: '1',
      RECONCILE_INTERVAL_MS: String(intervalMs),
    });
    try {
      const first = Date.now() + leadMs;
      const runAts = Array.from({ length: jobs }, (_, i) =>
        new Date(first + Math.round((i * spreadS * 1000) / (jobs - 1))).toISOString(),
      );
      const ids = new Array<string>(jobs);
      await mapWithConcurrency(
        runAts.map((runAt, i) => ({ runAt, i })),
        10,
        async ({ runAt, i }) => {
          ids[i] = (await s.submit(`scheduled ${i}`, { runAt })).id;
        },
      );
      const outcome = tally(await s.settle(ids, spreadS * 1000 + 60_000));
      const times = new Map((await s.jobTimes(ids)).map((job) => [job.id, job]));
      const promotedAt = await Promise.all(ids.map((id) => promotionOf(s.stack.baseUrl, id)));
      // Only jobs that were scheduled: one whose submission came after its runAt (a busy machine) ran at once.
      const lateness: number[] = [];
      const promoted: number[] = [];
      const afterPromotion: number[] = [];
      ids.forEach((id, i) => {
        const startedAt = times.get(id)?.startedAt;
        const at = promotedAt[i];
        if (startedAt === undefined || at === undefined) return;
        const runAt = Date.parse(runAts[i] as string);
        lateness.push(Date.parse(startedAt) - runAt);
        promoted.push(at - runAt);
        afterPromotion.push(Date.parse(startedAt) - at);
      });
      const run: ScheduleRun = {
        reconcileIntervalMs: intervalMs,
        promotedP50Ms: Math.round(quantile(promoted, 0.5)),
        promotedP99Ms: Math.round(quantile(promoted, 0.99)),
        promotedMaxMs: Math.round(Math.max(...promoted)),
        startAfterPromotionP50Ms: Math.round(quantile(afterPromotion, 0.5)),
        latenessP50Ms: Math.round(quantile(lateness, 0.5)),
        latenessP99Ms: Math.round(quantile(lateness, 0.99)),
        latenessMaxMs: Math.round(Math.max(...lateness)),
        earlyStarts: lateness.filter((ms) => ms < 0).length,
        scheduled: lateness.length,
        outcome,
      };
      print(
        `measured: reconciler every ${fmt(intervalMs / 1000, 0)} s -> lateness (startedAt - runAt) p50 ${run.latenessP50Ms} ms, ` +
          `p99 ${run.latenessP99Ms} ms, max ${run.latenessMaxMs} ms (n=${lateness.length}); ` +
          `started early ${run.earlyStarts}; outcome ${JSON.stringify(outcome)}`,
      );
      print(
        `measured:   of which runAt -> promoted p50 ${run.promotedP50Ms} ms, p99 ${run.promotedP99Ms} ms, max ${run.promotedMaxMs} ms (n=${promoted.length}); ` +
          `promoted -> started p50 ${run.startAfterPromotionP50Ms} ms`,
      );
      return run;
    } finally {
      await s.stop();
    }
  }
}

/** When the reconciler moved the job to queued, from its timeline (epoch ms). */
async function promotionOf(baseUrl: string, id: string): Promise<number | undefined> {
  const response = await fetch(`${baseUrl}/v1/jobs/${encodeURIComponent(id)}/events`, {
    headers: { 'x-api-key': TENANT_KEY },
  });
  const { items } = (await response.json()) as { items: { at: string; type: string }[] };
  const promoted = items.find((event) => event.type === 'reconciler.promoted');
  return promoted ? Date.parse(promoted.at) : undefined;
}
