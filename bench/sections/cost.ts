import { GetCommand } from '@aws-sdk/lib-dynamodb';
import { JOB_ITEM_SORT_KEY } from '../../config/layout';
import { loadSettings } from '../../config/settings';
import { documentClient } from '../../local/harness/local-stack';
import {
  type DynamoDbPerJob,
  dynamoDbPerJob,
  fixedMonthlyCost,
  itemBytes,
  type JobCost,
  jobCost,
} from '../cost';
import { fmt, median, print, round, sleep, tally } from '../support/common';
import { measuredBetween, perJob, startBenchStack } from '../support/stack';

/**
 * Cost per job: the same jobs with a 3 s and a 60 s provider run, every
 * billed call counted. State transitions must not grow with the duration:
 * the workflow waits for the provider on a task token, not in a loop.
 */

export interface DurationCost {
  readonly jobMs: number;
  readonly jobs: number;
  readonly transitionsPerJob: number;
  readonly dynamodb: DynamoDbPerJob;
  /** Requests naming the provider's slot pool item, per job, by operation (`GetItem`, `UpdateItem`, `TransactWriteItems`). */
  readonly poolRequests: Record<string, number>;
  readonly cost: JobCost;
  readonly outcome: Record<string, number>;
}

export interface CostFigures {
  readonly runs: readonly DurationCost[];
  readonly jobItemBytes: number;
  readonly fixedPerMonth: ReturnType<typeof fixedMonthlyCost>;
}

const JOBS = 5;
const DURATIONS_MS = [3000, 60_000] as const;
const RECONCILER_MEMORY_MB = 512; // lib/constructs/reconciler.ts

export async function costSection(reconcilePassMs: number): Promise<CostFigures> {
  print(`\n## 5. Cost per job: ${JOBS} jobs of ${DURATIONS_MS.map((ms) => `${ms / 1000} s`).join(' and ')}`);
  const s = await startBenchStack({ MAX_IN_FLIGHT: String(JOBS), SIM_JOB_MS: '3000', SIM_IDEMPOTENT: '1' });
  try {
    const runs: DurationCost[] = [];
    let jobItemBytes = 0;
    for (const jobMs of DURATIONS_MS) {
      await s.provider('/_sim/config', { jobMs });
      const before = await s.snapshot('before');
      const ids = (
        await Promise.all(Array.from({ length: JOBS }, (_, i) => s.submit(`cost ${jobMs} ${i}`)))
      ).map((job) => job.id);
      const outcome = tally(await s.settle(ids, jobMs + 60_000));
      await sleep(1500); // the last webhooks and the notify step
      const measured = perJob(measuredBetween(before, await s.snapshot('after')), JOBS);
      const transitions = await s.transitions(ids);
      for (const id of ids) jobItemBytes = Math.max(jobItemBytes, await storedBytes(s.stack.endpoints, id));
      const cost = jobCost(measured, median(transitions));
      const dynamodb = dynamoDbPerJob(measured);
      const poolRequests = Object.fromEntries(
        Object.entries(measured.requests)
          .filter(([key]) => key.startsWith('pool:'))
          .map(([key, n]) => [key.slice('pool:'.length), round(n, 1)]),
      );
      runs.push({
        jobMs,
        jobs: JOBS,
        transitionsPerJob: median(transitions),
        dynamodb,
        poolRequests,
        cost,
        outcome,
      });
      print(`\n### ${jobMs / 1000} s job: outcome ${JSON.stringify(outcome)}`);
      print(
        `measured: state transitions per job ${transitions.join(', ')} (StateEntered events per execution)`,
      );
      print(
        `measured: DynamoDB per job: ${fmt(dynamodb.writes, 1)} writes and ${fmt(dynamodb.reads, 1)} reads ` +
          '(each item of a batch or a transaction counted as one; a Query as one read), ' +
          `by operation: ${dynamoDbOperations(measured.requests)}; of them naming the provider's slot pool item: ` +
          Object.entries(poolRequests)
            .map(([operation, n]) => `${operation} ${fmt(n, 1)}`)
            .join(', '),
      );
      print('| service | per job | USD per 1,000 jobs | basis |');
      print('|---|---:|---:|---|');
      for (const line of cost.lines) {
        print(
          `| ${line.service} | ${fmt(line.perJob, 2)} | ${fmt(line.usdPerThousandJobs, 4)} | ${line.basis} |`,
        );
      }
      print(
        `| total | | ${fmt(cost.usdPerThousandJobs, 4)} | ${cost.prices.region} list prices as of ${cost.prices.asOf} |`,
      );
    }
    print(`measured: largest job item ${jobItemBytes} bytes (DynamoDB size rules, approximate)`);
    const schedule = loadSettings({}).reconcileSchedule;
    const fixed = fixedMonthlyCost(scheduleSeconds(schedule), reconcilePassMs, RECONCILER_MEMORY_MB);
    print(
      `computed: fixed per month, jobs or not: reconciler ${schedule}, ${fixed.reconcilerPassesPerMonth} passes of ${fmt(reconcilePassMs, 0)} ms = $${fmt(fixed.reconcilerUsdPerMonth, 4)}; ` +
        `idle queue polling ~${fixed.idleQueuePollsPerMonth} ReceiveMessage = $${fmt(fixed.idleQueuePollsUsdPerMonth, 4)}`,
    );
    return { runs, jobItemBytes, fixedPerMonth: roundAll(fixed) };
  } finally {
    await s.stop();
  }
}

/** `Operation n` for each DynamoDB operation counted, per job. */
const dynamoDbOperations = (requests: Record<string, number>) =>
  Object.entries(requests)
    .filter(([key]) => key.startsWith('dynamodb:') && !key.endsWith('(progress)'))
    .map(([key, n]) => `${key.slice('dynamodb:'.length)} ${fmt(n, 1)}`)
    .join(', ');

async function storedBytes(endpoints: Parameters<typeof documentClient>[0], id: string): Promise<number> {
  const { Item } = await documentClient(endpoints).send(
    new GetCommand({ TableName: endpoints.jobTableName, Key: { pk: id, sk: JOB_ITEM_SORT_KEY } }),
  );
  return Item ? itemBytes(Item) : 0;
}

function scheduleSeconds(expression: string): number {
  const match = /^rate\((\d+) (minute|minutes|hour|hours)\)$/.exec(expression);
  if (!match) throw new Error(`unexpected schedule ${expression}`);
  return Number(match[1]) * (match[2]?.startsWith('hour') ? 3600 : 60);
}

const roundAll = <T extends Record<string, number>>(figures: T): T =>
  Object.fromEntries(Object.entries(figures).map(([k, v]) => [k, round(v, 4)])) as T;
