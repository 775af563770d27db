import { submitBurst, submitOneByOne, untilProviderRanAll } from '../support/burst';
import { fmt, median, print, quantile, round, sleep, tally } from '../support/common';
import { cpuSince } from '../support/cpu';
import { ledgerTimes, type SlotGaps, slotGapFigures, slotGapsText } from '../support/hand-off';
import { measuredBetween, startBenchStack } from '../support/stack';

/**
 * Back-pressure: 250 jobs from 50 concurrent clients against MAX_IN_FLIGHT=5
 * and 1 s provider jobs. The provider's ledger says how many ran at once and
 * how long each freed slot stayed empty while jobs waited; the clients time
 * each submission; the stack's process tree says how much CPU the burst took.
 */

export interface BurstFigures {
  readonly jobs: number;
  readonly clients: number;
  readonly limit: number;
  readonly jobMs: number;
  readonly maxInFlight: number;
  readonly makespanS: number;
  readonly utilizationPct: number;
  readonly submitP50Ms: number;
  readonly submitP99Ms: number;
  readonly idleP50Ms: number;
  readonly idleP99Ms: number;
  readonly deadLetters: number;
  readonly dispatchesPerJob: number;
  /** From a job's end at the provider to the acceptance of the job that took its slot, while jobs waited. */
  readonly slotGap?: SlotGaps;
  /**
   * CPU seconds the side's processes used per job, from the burst's first
   * submission until every job was settled: for Longhaul the local stack
   * (every function, emulator and the simulator), for the peer its service
   * (the simulator in it) and Redis. Absent where /proc cannot be read.
   */
  readonly cpuSecondsPerJob?: number;
  readonly outcome: Record<string, number>;
}

/**
 * 250 jobs keep the provider's five slots waited for over some 50 s of work
 * (a few hundred hand-offs), with the 50 clients' submissions done in the
 * first part of it.
 */
export const BURST = { jobs: 250, clients: 50, limit: 5, jobMs: 1000, idle: 20 } as const;

export async function backPressureSection(): Promise<BurstFigures> {
  const { jobs, clients, limit, jobMs } = BURST;
  print(
    `\n## 3. Back-pressure: ${jobs} jobs from ${clients} clients, MAX_IN_FLIGHT=${limit}, ${jobMs} ms jobs`,
  );
  const s = await startBenchStack({
    MAX_IN_FLIGHT: String(limit),
    SIM_JOB_MS: String(jobMs),
    SIM_IDEMPOTENT: '1',
  });
  try {
    const idle = await submitOneByOne((prompt) => s.submit(prompt), BURST.idle);
    await s.settle(idle.ids, 60_000);
    await s.provider('/_sim/reset', {});

    const before = await s.snapshot('before');
    const cpu = cpuSince([s.stack.pid]);
    const started = performance.now();
    const { ids, latencies, answeredAt } = await submitBurst((prompt) => s.submit(prompt), jobs, clients);
    const submittedS = (performance.now() - started) / 1000;
    await untilProviderRanAll(() => s.ledger(), jobs);
    const makespanMs = performance.now() - started;
    const outcome = tally(await s.settle(ids, 120_000));
    await sleep(1500);
    const cpuSeconds = cpu();
    const measured = measuredBetween(before, await s.snapshot('after'));
    const ledger = await s.ledger();
    const slotGap = slotGapFigures({ ...ledgerTimes(ledger.submissions), queued: answeredAt, limit });
    const deadLetters = await s.queueDepth(s.stack.endpoints.deadLetterQueueUrl);
    const busyMs = ledger.submissions.length * jobMs;
    const figures: BurstFigures = {
      jobs,
      clients,
      limit,
      jobMs,
      maxInFlight: ledger.maxConcurrent,
      makespanS: round(makespanMs / 1000, 1),
      utilizationPct: round((100 * busyMs) / (limit * makespanMs), 1),
      submitP50Ms: Math.round(median(latencies)),
      submitP99Ms: Math.round(quantile(latencies, 0.99)),
      idleP50Ms: Math.round(median(idle.latencies)),
      idleP99Ms: Math.round(quantile(idle.latencies, 0.99)),
      deadLetters,
      dispatchesPerJob: round((measured.requests['sqs:SendMessage'] ?? 0) / jobs, 1),
      ...(slotGap ? { slotGap } : {}),
      ...(cpuSeconds === undefined ? {} : { cpuSecondsPerJob: round(cpuSeconds / jobs, 3) }),
      outcome,
    };
    print(`measured: outcome ${JSON.stringify(outcome)}, provider charges ${ledger.submissions.length}`);
    print(`measured: most in flight at the provider = ${figures.maxInFlight} (limit ${limit})`);
    print(
      `measured: makespan ${fmt(figures.makespanS, 1)} s (all submitted after ${fmt(submittedS, 1)} s; ideal ${(jobs * jobMs) / limit / 1000} s)`,
    );
    print(
      `measured: provider utilization = ${busyMs / 1000} busy slot-s / (${limit} x ${fmt(figures.makespanS, 1)} s) = ${fmt(figures.utilizationPct, 1)} %`,
    );
    print(
      `measured: submit latency during the burst p50 ${figures.submitP50Ms} ms, p99 ${figures.submitP99Ms} ms (n=${latencies.length})`,
    );
    print(
      `measured: submit latency idle p50 ${figures.idleP50Ms} ms, p99 ${figures.idleP99Ms} ms (n=${idle.latencies.length}, one at a time)`,
    );
    print(
      `measured: a freed slot's wait for its next job (provider finish -> next acceptance, while jobs waited): ${slotGapsText(slotGap)}`,
    );
    if (cpuSeconds !== undefined) {
      print(
        `measured: CPU of the local stack (every function, emulator and the simulator) = ${fmt(cpuSeconds, 1)} s, ${fmt(cpuSeconds / jobs, 3)} CPU-s per job`,
      );
    }
    print(`measured: jobs in the dead-letter queue = ${deadLetters}`);
    print(
      `measured: dispatches per job (messages sent to the job queue) = ${fmt(figures.dispatchesPerJob, 1)}`,
    );
    return figures;
  } finally {
    await s.stop();
  }
}
