import { GetCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import { JOB_ITEM_SORT_KEY } from '../../config/layout';
import { DynamoDbJobStore, toItem } from '../../lambdas/adapters/dynamodb-job-store';
import { submissionTagOf } from '../../lambdas/domain/job';
import type { ProgressTick } from '../../lambdas/domain/ports';
import { applyProgress, ProgressMemory } from '../../lambdas/domain/progress';
import { documentClient } from '../../local/harness/local-stack';
import { fmt, median, print, round, sleep, tally } from '../support/common';
import { benchJob } from '../support/jobs';
import { measuredBetween, startBenchStack } from '../support/stack';

/**
 * Progress write amplification: a 20 s provider job at 10 ticks a second,
 * end to end, counting the progress writes the stack sends to DynamoDB; then
 * the domain alone (applyProgress and the real job store) on simulated time.
 */

export interface ProgressFigures {
  readonly jobs: number;
  readonly ticksPerJob: number;
  readonly progressWritesPerJob: number;
  readonly writesPerTick: number;
  readonly distinctStoredValues: number;
  readonly domainWritesPerTick: number;
  readonly outcome: Record<string, number>;
  /** Every request the stack sent to an emulated service, per job. */
  readonly requestsPerJob: Record<string, number>;
}

const JOBS = 3;
const JOB_MS = 20_000;
const HZ = 10;

export async function progressSection(): Promise<ProgressFigures> {
  print(`\n## 1. Progress write amplification: ${JOBS} jobs x ${JOB_MS / 1000} s at ${HZ} ticks/s`);
  const s = await startBenchStack({ MAX_IN_FLIGHT: '5', SIM_JOB_MS: String(JOB_MS), SIM_IDEMPOTENT: '1' });
  try {
    const e = s.stack.endpoints;
    const documents = documentClient(e);
    const before = await s.snapshot('before');
    const ids = (await Promise.all(Array.from({ length: JOBS }, (_, i) => s.submit(`progress ${i}`)))).map(
      (job) => job.id,
    );
    // Watch one job's stored item: how many progress values ever reach storage.
    const stored = new Set<number>();
    let watching = true;
    const watcher = (async () => {
      while (watching) {
        const { Item } = await documents.send(
          new GetCommand({
            TableName: e.jobTableName,
            Key: { pk: ids[0], sk: JOB_ITEM_SORT_KEY },
            ConsistentRead: true,
          }),
        );
        if (Item?.status === 'running') stored.add(Item.progress as number);
        await sleep(25);
      }
    })();
    const statuses = await s.settle(ids, 120_000);
    watching = false;
    await watcher;
    await sleep(1500); // the last webhooks and the notify step
    const measured = measuredBetween(before, await s.snapshot('after'));
    const ticks = (JOB_MS / 1000) * HZ;
    const writes = (measured.requests['dynamodb:UpdateItem(progress)'] ?? 0) / JOBS;
    const outcome = tally(statuses);
    print(`measured: outcome ${JSON.stringify(outcome)}`);
    print(
      `measured: progress writes per job = ${fmt(writes, 1)} for ${ticks} provider ticks -> ${fmt(writes / ticks, 3)} writes per tick`,
    );
    print(`measured: distinct stored progress values of one job (item read every 25 ms) = ${stored.size}`);
    const domain = await progressDomain(documents, e.jobTableName);
    return {
      jobs: JOBS,
      ticksPerJob: ticks,
      progressWritesPerJob: round(writes, 2),
      writesPerTick: round(writes / ticks, 3),
      distinctStoredValues: stored.size,
      domainWritesPerTick: domain,
      outcome,
      requestsPerJob: Object.fromEntries(
        Object.entries(measured.requests).map(([key, n]) => [key, round(n / JOBS, 2)]),
      ),
    };
  } finally {
    await s.stop();
  }
}

/** 200 ticks through applyProgress with a simulated clock, three times; the median write count per tick. */
async function progressDomain(
  documents: ReturnType<typeof documentClient>,
  tableName: string,
): Promise<number> {
  const store = new DynamoDbJobStore(documents, { tableName, retentionDays: 30 });
  const ticks = 200;
  const runs: number[] = [];
  for (let run = 0; run < 3; run++) {
    const start = new Date();
    const job = {
      ...benchJob(`bench-progress-${run}-${Date.now()}`, 'running', start),
      providerJobId: 'bench',
    };
    await documents.send(new PutCommand({ TableName: tableName, Item: toItem(job, 30) }));
    let wrote = 0;
    let clock = start.getTime();
    const deps = {
      store: {
        get: (jobId: string) => store.get(jobId),
        recordProgressTick: async (jobId: string, tick: ProgressTick) => {
          const changed = await store.recordProgressTick(jobId, tick);
          if (changed) wrote++;
          return changed;
        },
      },
      live: { publish: async () => {} },
      memory: new ProgressMemory(1000), // as the provider webhooks configure it
      now: () => new Date(clock),
    };
    for (let tick = 1; tick <= ticks; tick++) {
      clock = start.getTime() + tick * 100;
      await applyProgress(deps, job.id, (100 * tick) / ticks, {
        providerJobId: 'bench',
        submission: submissionTagOf(job),
      });
    }
    runs.push(wrote);
  }
  const perTick = median(runs) / ticks;
  print(
    `measured: domain, ${ticks} ticks at 10/s of simulated time -> ${median(runs)} stored writes (${fmt(perTick, 3)} per tick; median of ${runs.length})`,
  );
  return round(perTick, 3);
}
