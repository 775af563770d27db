import { pollUntil } from '../../local/harness/local-stack';
import { quantile, round, sleep } from './common';

/**
 * The client side of the back-pressure workload, the same for Longhaul and
 * the peer: submissions one at a time with nothing else running, then a burst
 * from many concurrent clients, then a wait until the provider has run every
 * job. Each side passes its own submit call and provider ledger.
 */

type Submit = (prompt: string) => Promise<{ readonly id: string; readonly ms: number }>;

export interface Submissions {
  readonly ids: string[];
  /** How long each submission took to be answered. */
  readonly latencies: number[];
  /** When each answer came (epoch ms): from then on the job is the service's to run. */
  readonly answeredAt: number[];
}

/** `count` submissions, each after the one before was answered and a short pause. */
export async function submitOneByOne(submit: Submit, count: number): Promise<Submissions> {
  const ids: string[] = [];
  const latencies: number[] = [];
  const answeredAt: number[] = [];
  for (let i = 0; i < count; i++) {
    const { id, ms } = await submit(`idle ${i}`);
    ids.push(id);
    latencies.push(ms);
    answeredAt.push(Date.now());
    await sleep(50);
  }
  return { ids, latencies, answeredAt };
}

/**
 * `jobs` submissions from `clients` concurrent clients, each sending its next
 * as soon as it has an answer; none sends another once `stop` says so.
 */
export async function submitBurst(
  submit: Submit,
  jobs: number,
  clients: number,
  stop: () => boolean = () => false,
): Promise<Submissions> {
  const ids: string[] = [];
  const latencies: number[] = [];
  const answeredAt: number[] = [];
  let next = 0;
  await Promise.all(
    Array.from({ length: clients }, async () => {
      while (next < jobs && !stop()) {
        next++;
        const { id, ms } = await submit(`burst ${next}`);
        ids.push(id);
        latencies.push(ms);
        answeredAt.push(Date.now());
      }
    }),
  );
  return { ids, latencies, answeredAt };
}

/** Until the provider has accepted `jobs` submissions and runs none: the end of the makespan. */
export async function untilProviderRanAll(
  ledger: () => Promise<{ readonly submissions: readonly unknown[]; readonly running: number }>,
  jobs: number,
): Promise<void> {
  await pollUntil(
    async () => {
      const current = await ledger();
      return current.submissions.length >= jobs && current.running === 0;
    },
    { timeoutMs: 480_000, intervalMs: 100, description: `the provider to run all ${jobs} jobs` },
  );
}

/** How busy the provider's slots were over the makespan: busy slot time / (limit x makespan), in percent. */
export function utilizationPct(busySlotMs: number, limit: number, makespanMs: number): number {
  return round((100 * busySlotMs) / (limit * makespanMs), 1);
}

/** How long jobs waited from being accepted to being started, over a batch. */
export interface StartWaits {
  readonly jobs: number;
  readonly p50Ms: number;
  readonly p95Ms: number;
  readonly maxMs: number;
}

/** `createdAt` to `startedAt` of each job, as the API shows them; every job must have started. */
export function startWaits(
  jobs: readonly { id: string; createdAt: string; startedAt?: string }[],
): StartWaits {
  const waits = jobs.map((job) => {
    if (job.startedAt === undefined) throw new Error(`job ${job.id} never started`);
    return Date.parse(job.startedAt) - Date.parse(job.createdAt);
  });
  return {
    jobs: waits.length,
    p50Ms: Math.round(quantile(waits, 0.5)),
    p95Ms: Math.round(quantile(waits, 0.95)),
    maxMs: Math.round(quantile(waits, 1)),
  };
}
