import type { JobPriority } from '../../lambdas/domain/job';
import type { ProviderLedger } from '../../local/provider-sim/simulator';
import { installedBullmqVersion, PeerClient } from '../peer/bullmq';
import { startPeerProcess } from '../peer/peer-process';
import { PEER_PRIORITIES } from '../peer/priorities';
import { startRedis } from '../peer/redis';
import { submitBurst, utilizationPct } from '../support/burst';
import { fmt, print, round, sizeFromEnv, sleep } from '../support/common';
import {
  type Bound,
  boundText,
  busySlotMsWithin,
  finishedPerSecond,
  type Overtaking,
  overtaking,
  ratioText,
  type SharedStarts,
  startsWhileBothWait,
  startWaitsUntil,
  type TimedJob,
  type WaitsUntil,
  waitsText,
  withinRatio,
} from '../support/fairness';
import { type BenchStack, startBenchStack } from '../support/stack';

/**
 * Fair share between tenants on one provider (the generic one, limit 5, 1 s
 * jobs), beside the BullMQ peer, which has one queue and no tenants:
 * 1. Flood and trickle: tenant A submits a flood at once, and once it is
 *    accepted tenant B submits one job every 2 s. B's start waits (createdAt to startedAt), each
 *    tenant's throughput and the provider's utilization (the simulator's
 *    ledger), over a window that ends once B's last job has finished (or at a
 *    cap): A's flood would take 450 x 1 s / 5 = 90 s at best to run out, and the
 *    figures are about B. The peer runs the same workload, its window ending
 *    the same way or at the latest once it is as long as Longhaul's. Where B's
 *    jobs had not all started by the end, their waits are lower bounds.
 * 2. Weights 3:1, both flooding: the tenants' starts while both had jobs
 *    waiting. The weights are set with `PUT /v1/admin/tenants/{tenant}`; where
 *    the stack has no such route, the run says so and the ratio is that of
 *    equal weights. The peer has no weights to set and does not run it.
 * 3. Priority: one `interactive` job of A submitted behind a backlog of A's
 *    `standard` jobs, and how many of them went before it. The peer runs it
 *    with BullMQ's own job priority.
 * Every figure comes from the timestamps each side recorded for its jobs and
 * from the provider's ledger.
 */

const PROVIDER = 'longhaul-http';
const LIMIT = 5;
const JOB_MS = 1000;
const TENANT_A = 'tenant-a';
const TENANT_B = 'tenant-b';
const FLOOD_CLIENTS = 50;
const TRICKLE_EVERY_MS = 2000;
/** Goals the product set itself: B's p95 start wait within one job and 5 s, the provider at least 90 % busy. */
const TRICKLE_P95_GOAL_MS = JOB_MS + 5000;
const UTILIZATION_GOAL_PCT = 90;
const WEIGHTS = { [TENANT_A]: 3, [TENANT_B]: 1 } as const;
const RATIO_TOLERANCE = 0.1;
/** How long past the trickle's last submission the flood run may go on before it is stopped. */
const FLOOD_GRACE_MS = 15_000;
/** How long the weighted run may go on once both floods are accepted before it is stopped. */
const WEIGHTED_CAP_MS = 90_000;
/** How long the interactive job may wait before the run is stopped. */
const INTERACTIVE_CAP_MS = 90_000;
const POLL_MS = 500;

/** One side's flood-and-trickle run. */
export interface FloodRun {
  /** From the first submission to the end of the run: B's last job finished, or the cap. */
  readonly windowS: number;
  /** Whether the window ended because B's jobs had all finished (else it was stopped at its cap). */
  readonly trickleDone: boolean;
  /** A's jobs accepted: all of the flood, unless the window ended before they were. */
  readonly floodAccepted: number;
  /** From the first submission until the last of A's was answered. */
  readonly floodSubmittedS: number;
  readonly trickleStartWait: WaitsUntil;
  readonly floodFinished: number;
  readonly trickleFinished: number;
  readonly floodPerS: number;
  readonly tricklePerS: number;
  readonly utilizationPct: number;
  readonly maxInFlight: number;
}

/** One side's interactive job behind a backlog. */
export interface PriorityRun {
  readonly backlogSubmittedS: number;
  readonly startWait: Bound;
  readonly started: boolean;
  readonly overtaking: Overtaking;
}

export interface FairnessFigures {
  readonly provider: string;
  readonly limit: number;
  readonly jobMs: number;
  readonly flood: {
    readonly floodJobs: number;
    readonly trickleJobs: number;
    readonly trickleEveryS: number;
    readonly longhaul: FloodRun;
    readonly peer: FloodRun;
  };
  readonly weights: {
    readonly each: number;
    readonly asked: Readonly<Record<string, number>>;
    /** Whether the stack took the weights; when not, both tenants ran at weight 1. */
    readonly set: boolean;
    /** The answer that refused them. */
    readonly refusal?: string;
    /** Whether the run was stopped at its cap with both tenants still waiting. */
    readonly stopped: boolean;
    readonly starts: SharedStarts;
    readonly windowS: number;
  };
  readonly priority: {
    readonly backlog: number;
    readonly longhaul: PriorityRun;
    readonly peer: PriorityRun;
  };
}

/**
 * The section's sizes: `BENCH_FAIRNESS_FLOOD`, `_TRICKLE_S`, `_EACH`, `_BACKLOG`,
 * else 450, 30, 80 and 200: A's flood still outlasts B's trickle at the
 * provider's best rate, and the weighted floods and the backlog still each
 * hold many times the provider's five slots.
 */
export function fairnessSizes(env: Readonly<Record<string, string | undefined>>): {
  flood: number;
  trickleS: number;
  each: number;
  backlog: number;
} {
  return {
    flood: sizeFromEnv(env, 'BENCH_FAIRNESS_FLOOD', 450),
    trickleS: sizeFromEnv(env, 'BENCH_FAIRNESS_TRICKLE_S', 30),
    each: sizeFromEnv(env, 'BENCH_FAIRNESS_EACH', 80),
    backlog: sizeFromEnv(env, 'BENCH_FAIRNESS_BACKLOG', 200),
  };
}

/** What a workload needs of a side: submit as a tenant, read the jobs' timestamps, read and reset the provider. */
interface Side {
  readonly name: string;
  submit(tenant: string, prompt: string, priority?: JobPriority): Promise<{ id: string; ms: number }>;
  jobs(tenant: string, ids: readonly string[]): Promise<TimedJob[]>;
  ledger(): Promise<ProviderLedger>;
  resetProvider(): Promise<void>;
}

export async function fairnessSection(): Promise<FairnessFigures> {
  const sizes = fairnessSizes(process.env);
  const trickleJobs = Math.floor((sizes.trickleS * 1000) / TRICKLE_EVERY_MS);
  print(
    `\n## 9. Fair share between tenants: one provider (${PROVIDER}, limit ${LIMIT}), ${JOB_MS} ms jobs; ` +
      `peer: BullMQ ${installedBullmqVersion()}, one queue, one Worker with concurrency ${LIMIT}, no tenants`,
  );

  print(
    `### 9.1 Flood and trickle: ${TENANT_A} submits ${sizes.flood} jobs at once from ${FLOOD_CLIENTS} clients; ` +
      `${TENANT_B} one job every ${TRICKLE_EVERY_MS / 1000} s for ${sizes.trickleS} s (${trickleJobs} jobs)`,
  );
  print(
    `${TENANT_B} starts once ${TENANT_A}'s flood is accepted. The run stops once ${TENANT_B}'s jobs have all finished (at most ${FLOOD_GRACE_MS / 1000} s after its last ` +
      `submission), not when ${TENANT_A}'s flood has run out (${sizes.flood} x ${JOB_MS / 1000} s / ${LIMIT} = ` +
      `${(sizes.flood * JOB_MS) / LIMIT / 1000} s at best); the peer's run ends the same way, or at the latest ` +
      "once it has run as long as Longhaul's. " +
      'Throughput and utilization are over the window.',
  );
  const longhaulFlood = await withStack((s) =>
    floodAndTrickle(
      longhaulSide(s),
      sizes.flood,
      trickleJobs,
      (t0) => t0 + sizes.trickleS * 1000 + FLOOD_GRACE_MS,
    ),
  );
  const peerFlood = await withPeer((peer) =>
    floodAndTrickle(peer, sizes.flood, trickleJobs, (t0) => t0 + longhaulFlood.windowS * 1000),
  );

  print(
    `### 9.2 Weights ${WEIGHTS[TENANT_A]}:${WEIGHTS[TENANT_B]}: ${TENANT_A} and ${TENANT_B} each submit ` +
      `${sizes.each} jobs at once; starts counted while both have jobs waiting, until one has none ` +
      `(or ${WEIGHTED_CAP_MS / 1000} s after all were accepted)`,
  );
  const weights = await withStack((s) => weightedFloods(s, sizes.each));
  print(
    "peer: not run; BullMQ's open-source edition has no tenants or weights to set: " +
      'its one queue takes jobs in the order they were added, as 9.1 shows',
  );

  print(
    `### 9.3 Priority: one interactive job of ${TENANT_A} submitted once ${sizes.backlog} of its standard jobs ` +
      `are accepted; the peer gives every job its BullMQ priority (interactive ${PEER_PRIORITIES.interactive}, ` +
      `standard ${PEER_PRIORITIES.standard}; 1 goes first)`,
  );
  const longhaulPriority = await withStack((s) => interactiveBehindBacklog(longhaulSide(s), sizes.backlog));
  const peerPriority = await withPeer((peer) => interactiveBehindBacklog(peer, sizes.backlog));

  return {
    provider: PROVIDER,
    limit: LIMIT,
    jobMs: JOB_MS,
    flood: {
      floodJobs: sizes.flood,
      trickleJobs,
      trickleEveryS: TRICKLE_EVERY_MS / 1000,
      longhaul: longhaulFlood,
      peer: peerFlood,
    },
    weights,
    priority: { backlog: sizes.backlog, longhaul: longhaulPriority, peer: peerPriority },
  };
}

// ---------------------------------------------------------------------------
// Workloads, the same on both sides

async function floodAndTrickle(
  side: Side,
  floodJobs: number,
  trickleJobs: number,
  deadlineOf: (t0: number) => number,
): Promise<FloodRun> {
  await side.resetProvider();
  // The flood is in the queue before the trickle starts, as if all of it came at one instant. Longhaul's
  // intake scales out in AWS (a function environment per request); here every request shares the one
  // process with the jobs it would compete with, so a flood still being accepted would measure that.
  const floodStarted = Date.now();
  const submitted = {
    ...(await submitBurst((prompt) => side.submit(TENANT_A, prompt), floodJobs, FLOOD_CLIENTS)),
    ms: Date.now() - floodStarted,
  };
  const t0 = Date.now();
  const deadline = deadlineOf(t0);
  // On a fixed schedule: a slow answer delays no later submission.
  const trickleIds = await Promise.all(
    Array.from({ length: trickleJobs }, async (_, i) => {
      await sleep(Math.max(0, t0 + i * TRICKLE_EVERY_MS - Date.now()));
      return (await side.submit(TENANT_B, `trickle ${i}`)).id;
    }),
  );
  let trickle = await side.jobs(TENANT_B, trickleIds);
  while (!trickle.every((job) => job.finishedAt !== undefined) && Date.now() < deadline) {
    await sleep(POLL_MS);
    trickle = await side.jobs(TENANT_B, trickleIds);
  }
  const trickleDone = trickle.every((job) => job.finishedAt !== undefined);
  const end = trickleDone
    ? Math.max(...trickle.map((job) => Date.parse(job.finishedAt as string)))
    : deadline;
  const ledger = await side.ledger();
  const floodRun = await side.jobs(TENANT_A, submitted.ids);

  const windowMs = end - t0;
  const busyMs = busySlotMsWithin(
    ledger.submissions.map((entry) => entry.acceptedAt),
    JOB_MS,
    t0,
    end,
  );
  const finishedBy = (jobs: readonly TimedJob[]) =>
    jobs.filter((job) => job.finishedAt !== undefined && Date.parse(job.finishedAt) <= end).length;
  const run: FloodRun = {
    windowS: round(windowMs / 1000, 1),
    trickleDone,
    floodAccepted: submitted.ids.length,
    floodSubmittedS: round(submitted.ms / 1000, 1),
    trickleStartWait: startWaitsUntil(trickle, end),
    floodFinished: finishedBy(floodRun),
    trickleFinished: finishedBy(trickle),
    floodPerS: round(finishedPerSecond(floodRun, t0, end), 2),
    tricklePerS: round(finishedPerSecond(trickle, t0, end), 2),
    utilizationPct: utilizationPct(busyMs, LIMIT, windowMs),
    maxInFlight: ledger.maxConcurrent,
  };
  const w = run.trickleStartWait;
  const m = `measured: ${side.name}:`;
  print(
    `${m} ${
      run.floodAccepted === floodJobs
        ? `all ${floodJobs} of ${TENANT_A}'s jobs accepted after ${fmt(run.floodSubmittedS, 1)} s`
        : `only ${run.floodAccepted} of ${TENANT_A}'s ${floodJobs} jobs accepted when the window ended (no more were sent)`
    }; ` +
      `window ${fmt(run.windowS, 1)} s, ${
        trickleDone
          ? `ended when ${TENANT_B}'s last job finished`
          : `stopped at its cap with ${trickleJobs - run.trickleFinished} of ${TENANT_B}'s jobs unfinished`
      }; ${run.floodAccepted - run.floodFinished} of ${TENANT_A}'s accepted jobs had not finished and were not waited for`,
  );
  print(
    `${m} ${TENANT_B}'s start wait p50 / p95 / max = ${waitsText(w)} ` +
      `(goal p95 <= ${TRICKLE_P95_GOAL_MS} ms: ${w.p95.atLeast || w.p95.ms > TRICKLE_P95_GOAL_MS ? 'not met' : 'met'})`,
  );
  print(
    `${m} throughput over the window: ${TENANT_A} ${fmt(run.floodPerS, 2)} jobs/s (${run.floodFinished} finished), ` +
      `${TENANT_B} ${fmt(run.tricklePerS, 2)} jobs/s (${run.trickleFinished} finished)`,
  );
  print(
    `${m} provider utilization = ${fmt(busyMs / 1000, 1)} busy slot-s / (${LIMIT} x ${fmt(run.windowS, 1)} s) = ` +
      `${fmt(run.utilizationPct, 1)} % (goal >= ${UTILIZATION_GOAL_PCT} %: ${run.utilizationPct >= UTILIZATION_GOAL_PCT ? 'met' : 'not met'}); ` +
      `most in flight ${run.maxInFlight} (limit ${LIMIT})`,
  );
  return run;
}

async function weightedFloods(s: BenchStack, each: number): Promise<FairnessFigures['weights']> {
  const refusals: string[] = [];
  for (const [tenant, weight] of Object.entries(WEIGHTS)) {
    const path = `/v1/admin/tenants/${tenant}`;
    const answer = await s.admin('PUT', path, { weight });
    if (answer.status === 404 || answer.status === 405) {
      refusals.push(`PUT ${path} answered ${answer.status} (${problemDetail(answer.body)})`);
    } else if (answer.status < 200 || answer.status > 299) {
      throw new Error(`PUT ${path} answered ${answer.status}: ${JSON.stringify(answer.body)}`);
    }
  }
  const set = refusals.length === 0;
  print(
    set
      ? `measured: weights set: ${TENANT_A} ${WEIGHTS[TENANT_A]}, ${TENANT_B} ${WEIGHTS[TENANT_B]}`
      : `measured: the weights could not be set: ${refusals.join('; ')}; both tenants run at weight 1, ` +
          'so the ratio below is that of equal weights (about 1:1 expected), not of 3:1',
  );
  await s.provider('/_sim/reset', {});
  const t0 = Date.now();
  const flood = (tenant: string) =>
    submitBurst((prompt) => s.submit(prompt, { tenant }), each, FLOOD_CLIENTS / 2);
  const [a, b] = await Promise.all([flood(TENANT_A), flood(TENANT_B)]);
  const submittedS = (Date.now() - t0) / 1000;
  const side = longhaulSide(s);
  const read = () => Promise.all([side.jobs(TENANT_A, a.ids), side.jobs(TENANT_B, b.ids)]);
  const deadline = Date.now() + WEIGHTED_CAP_MS;
  let [aJobs, bJobs] = await read();
  const allStarted = (jobs: readonly TimedJob[]) => jobs.every((job) => job.startedAt !== undefined);
  while (!allStarted(aJobs) && !allStarted(bJobs) && Date.now() < deadline) {
    // One read of each tenant's index a second: the bench's own load on the stack stays small.
    await sleep(2 * POLL_MS);
    [aJobs, bJobs] = await read();
  }
  const stopped = !allStarted(aJobs) && !allStarted(bJobs);
  const starts = startsWhileBothWait(aJobs, bJobs);
  const windowS = round(((starts.toMs ?? 0) - (starts.fromMs ?? 0)) / 1000, 1);
  const ratio = ratioText(starts.first, starts.second);
  print(
    `measured: all ${2 * each} accepted after ${fmt(submittedS, 1)} s; ` +
      (stopped
        ? `stopped ${WEIGHTED_CAP_MS / 1000} s later with both tenants still waiting (${TENANT_A} ${aJobs.filter((job) => !job.startedAt).length}, ${TENANT_B} ${bJobs.filter((job) => !job.startedAt).length} not started); `
        : '') +
      `starts while both had jobs waiting, from the first to the last counted (${fmt(windowS, 1)} s): ` +
      `${TENANT_A} ${starts.first}, ${TENANT_B} ${starts.second}, ratio ${ratio}` +
      (set
        ? ` (goal within ${RATIO_TOLERANCE * 100} % of ${WEIGHTS[TENANT_A]}:${WEIGHTS[TENANT_B]}: ${
            withinRatio(starts.first, starts.second, WEIGHTS[TENANT_A] / WEIGHTS[TENANT_B], RATIO_TOLERANCE)
              ? 'met'
              : 'not met'
          })`
        : ' (equal weights)'),
  );
  return {
    each,
    asked: WEIGHTS,
    set,
    stopped,
    ...(set ? {} : { refusal: refusals.join('; ') }),
    starts,
    windowS,
  };
}

async function interactiveBehindBacklog(side: Side, backlog: number): Promise<PriorityRun> {
  await side.resetProvider();
  const t0 = Date.now();
  const standard = await submitBurst(
    (prompt) => side.submit(TENANT_A, prompt, 'standard'),
    backlog,
    FLOOD_CLIENTS,
  );
  const backlogSubmittedS = round((Date.now() - t0) / 1000, 1);
  const urgent = await side.submit(TENANT_A, 'interactive', 'interactive');
  let [job] = await side.jobs(TENANT_A, [urgent.id]);
  const deadline = Date.now() + INTERACTIVE_CAP_MS;
  while (job?.startedAt === undefined && Date.now() < deadline) {
    await sleep(POLL_MS);
    [job] = await side.jobs(TENANT_A, [urgent.id]);
  }
  if (!job) throw new Error(`${side.name} does not know job ${urgent.id}`);
  const started = job.startedAt !== undefined;
  const cutoff = started ? Date.parse(job.startedAt as string) : deadline;
  const run: PriorityRun = {
    backlogSubmittedS,
    startWait: startWaitsUntil([job], cutoff).max,
    started,
    overtaking: overtaking(job, await side.jobs(TENANT_A, standard.ids)),
  };
  print(
    `measured: ${side.name}: ${backlog} standard jobs accepted after ${fmt(backlogSubmittedS, 1)} s; ` +
      `the interactive job's start wait = ${boundText(run.startWait)} ms${started ? '' : ' (it had not started)'}; ` +
      `${run.overtaking.waitingAhead} standard jobs were waiting when it was submitted, ` +
      `${run.overtaking.startedFirst} of them started before it`,
  );
  return run;
}

/** One job on the stack, so no measured run pays for the handlers' first compile. */
async function warmUp(s: BenchStack): Promise<void> {
  await s.settle([(await s.submit('warm-up')).id], 60_000);
}

// ---------------------------------------------------------------------------
// The two sides

function longhaulSide(s: BenchStack): Side {
  return {
    name: 'Longhaul',
    submit: (tenant, prompt, priority) => s.submit(prompt, { tenant, ...(priority ? { priority } : {}) }),
    jobs: async (tenant, ids) => {
      // A few jobs item by item; a flood in one read of the tenant's index.
      if (ids.length <= 50) return s.jobTimes(ids);
      const byId = new Map((await s.tenantJobs(tenant)).map((job) => [job.id, job]));
      return ids.map((id) => {
        const job = byId.get(id);
        if (!job) throw new Error(`${tenant} has no job ${id}`);
        return job;
      });
    },
    ledger: () => s.ledger(),
    resetProvider: async () => {
      await s.provider('/_sim/reset', {});
    },
  };
}

function peerSide(client: PeerClient): Side {
  return {
    name: 'BullMQ peer',
    submit: (tenant, prompt, priority) =>
      client.submit(prompt, { tenant, ...(priority ? { priority } : {}) }),
    jobs: async (_tenant, ids) => {
      const jobs: TimedJob[] = [];
      for (let i = 0; i < ids.length; i += 20) {
        jobs.push(...(await Promise.all(ids.slice(i, i + 20).map((id) => client.job(id)))));
      }
      return jobs;
    },
    ledger: () => client.ledger(),
    resetProvider: () => client.resetProvider({ jobMs: JOB_MS, progressHz: 10, idempotent: true }),
  };
}

async function withStack<T>(run: (s: BenchStack) => Promise<T>): Promise<T> {
  const s = await startBenchStack(
    { MAX_IN_FLIGHT: String(LIMIT), SIM_JOB_MS: String(JOB_MS), SIM_IDEMPOTENT: '1' },
    { tenants: [TENANT_A, TENANT_B] },
  );
  try {
    await warmUp(s);
    return await run(s);
  } finally {
    await s.stop();
  }
}

/** A fresh Redis and peer for each run: what one run leaves queued never reaches the next. */
async function withPeer<T>(run: (side: Side) => Promise<T>): Promise<T> {
  const redis = await startRedis(print);
  try {
    const peer = await startPeerProcess({ redisPort: redis.port, limit: LIMIT, attemptTimeoutMs: 30_000 });
    try {
      return await run(peerSide(new PeerClient(peer)));
    } finally {
      await peer.stop();
    }
  } finally {
    await redis.stop();
  }
}

// ---------------------------------------------------------------------------
// Text

function problemDetail(body: unknown): string {
  if (typeof body === 'object' && body !== null && 'detail' in body) return String(body.detail);
  return typeof body === 'string' ? body.slice(0, 200) : JSON.stringify(body);
}
