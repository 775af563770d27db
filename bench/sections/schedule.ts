import { mapWithConcurrency } from '../../lambdas/domain/concurrency';
import { fmt, print, quantile, tally } from '../support/common';
import { startBenchStack } from '../support/stack';

/**
 * Scheduled jobs' lateness: jobs submitted with runAt spread over the next
 * seconds, against a provider with a free slot for each, so the only wait is
 * the scheduling's own. Lateness = startedAt - runAt; the promise is one
 * reconciler period at most (the pass that finds a job due sends it as intake
 * sends a new one), measured at two periods.
 */

export interface ScheduleRun {
  readonly reconcileIntervalMs: number;
  readonly latenessP50Ms: number;
  readonly latenessP99Ms: number;
  readonly latenessMaxMs: number;
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

export const SCHEDULE = { jobs: 50, spreadS: 20, leadMs: 3000, intervalsMs: [1000, 5000] } as const;

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
      if (Date.now() > first) throw new Error('submitting took longer than the lead before the first runAt');
      const outcome = tally(await s.settle(ids, spreadS * 1000 + 60_000));
      const times = new Map((await s.jobTimes(ids)).map((job) => [job.id, job]));
      const lateness = ids.flatMap((id, i) => {
        const startedAt = times.get(id)?.startedAt;
        return startedAt === undefined ? [] : [Date.parse(startedAt) - Date.parse(runAts[i] as string)];
      });
      const run: ScheduleRun = {
        reconcileIntervalMs: intervalMs,
        latenessP50Ms: Math.round(quantile(lateness, 0.5)),
        latenessP99Ms: Math.round(quantile(lateness, 0.99)),
        latenessMaxMs: Math.round(Math.max(...lateness)),
        earlyStarts: lateness.filter((ms) => ms < 0).length,
        outcome,
      };
      print(
        `measured: reconciler every ${fmt(intervalMs / 1000, 0)} s -> lateness (startedAt - runAt) p50 ${run.latenessP50Ms} ms, ` +
          `p99 ${run.latenessP99Ms} ms, max ${run.latenessMaxMs} ms (n=${lateness.length}); ` +
          `started early ${run.earlyStarts}; outcome ${JSON.stringify(outcome)}`,
      );
      return run;
    } finally {
      await s.stop();
    }
  }
}
