import { readFileSync } from 'node:fs';
import type { JobPriority } from '../../lambdas/domain/job';
import { pollUntil } from '../../local/harness/local-stack';
import type { Ledger, SimulatorConfig } from '../../local/provider-sim/simulator';
import { BURST, type BurstFigures } from '../sections/backpressure';
import { submitBurst, submitOneByOne, untilProviderRanAll } from '../support/burst';
import { fmt, quantile, round, tally } from '../support/common';
import { cpuSince } from '../support/cpu';
import { ledgerTimes, slotGapFigures, slotGapsText } from '../support/hand-off';
import { PEER_LEAVES_OUT } from './leaves-out';
import { type RunningPeer, startPeerProcess } from './peer-process';
import { RedisProbe, startRedis } from './redis';
import type { PeerJob, PeerStats } from './server';

/**
 * The peer side of the bench: the workloads of sections 1 and 3 and the
 * accept-then-drop fault, run against what a user would pick instead of
 * Longhaul, a BullMQ service on a local Redis (bench/peer/server.ts) calling
 * the same simulated provider. This process only plays the clients, over HTTP.
 */

export interface PeerFigures {
  readonly redisVersion: string;
  readonly bullmqVersion: string;
  readonly progress: {
    readonly jobs: number;
    readonly ticksPerJob: number;
    readonly progressWritesPerJob: number;
    readonly writesPerTick: number;
    readonly redisWriteCommandsPerJob: number;
    readonly outcome: Record<string, number>;
  };
  /** Section 3's figures; BullMQ has no dead-letter queue, so its failed jobs stand in for it. */
  readonly burst: Omit<BurstFigures, 'deadLetters' | 'dispatchesPerJob'> & { readonly failedJobs: number };
  readonly acceptThenDrop: ReadonlyArray<{
    readonly providerIdempotent: boolean;
    readonly jobs: number;
    readonly charges: number;
    readonly jobsChargedTwiceOrMore: number;
    readonly outcome: Record<string, number>;
  }>;
  readonly durationS: number;
}

type Print = (line: string) => void;

const LIMIT = BURST.limit;
const PROGRESS_JOB_MS = 20_000;
const PROGRESS_HZ = 10;
/** Five times the longest job, plus room for webhook delivery: only a lost outcome should hit it. */
const ATTEMPT_TIMEOUT_MS = PROGRESS_JOB_MS * 5 + 10_000;
const TERMINAL_STATES = new Set(['completed', 'failed']);

export async function runPeer(print: Print): Promise<PeerFigures> {
  const started = performance.now();
  const redis = await startRedis(print);
  try {
    const probe = await RedisProbe.connect(redis.port);
    try {
      const redisVersion = await probe.version();
      const bullmqVersion = installedBullmqVersion();
      print(`\n## 7. Peer: BullMQ ${bullmqVersion} on Redis ${redisVersion}`);
      print(
        `setup: one Worker, concurrency ${LIMIT}; jobId = Idempotency-Key, attempts 3, exponential backoff from 1 s; ` +
          'Redis appendonly yes, appendfsync everysec, no RDB, maxmemory-policy noeviction',
      );
      print(`what the peer does not do: ${PEER_LEAVES_OUT.join('; ')}`);
      const peer = await startPeerProcess({
        redisPort: redis.port,
        limit: LIMIT,
        attemptTimeoutMs: ATTEMPT_TIMEOUT_MS,
      });
      try {
        const client = new PeerClient(peer);
        const progress = await progressWorkload(client, probe, print);
        const burst = await burstWorkload(client, [peer.pid, redis.pid], print);
        const acceptThenDrop = [
          await acceptThenDropWorkload(client, true, print),
          await acceptThenDropWorkload(client, false, print),
        ];
        const durationS = (performance.now() - started) / 1000;
        print(`measured: peer section wall time = ${fmt(durationS, 0)} s`);
        return {
          redisVersion,
          bullmqVersion,
          progress,
          burst,
          acceptThenDrop,
          durationS: round(durationS, 0),
        };
      } finally {
        await peer.stop();
      }
    } finally {
      await probe.close();
    }
  } finally {
    await redis.stop();
  }
}

// ---------------------------------------------------------------------------
// Workloads

/** Section 1's workload: 3 jobs of 20 s at 10 ticks/s, at the same time. */
async function progressWorkload(
  client: PeerClient,
  probe: RedisProbe,
  print: Print,
): Promise<PeerFigures['progress']> {
  const jobs = 3;
  await client.resetProvider({ jobMs: PROGRESS_JOB_MS, progressHz: PROGRESS_HZ, idempotent: true });
  const statsBefore = await client.stats();
  const callsBefore = await probe.commandCalls();
  const ids = (await Promise.all(Array.from({ length: jobs }, (_, i) => client.submit(`progress ${i}`)))).map(
    (submitted) => submitted.id,
  );
  const outcome = await client.settle(ids, 120_000);
  const callsAfter = await probe.commandCalls();
  const statsAfter = await client.stats();

  const ticksPerJob = (statsAfter.progressEvents - statsBefore.progressEvents) / jobs;
  const progressWritesPerJob = (statsAfter.progressWrites - statsBefore.progressWrites) / jobs;
  const writesPerTick = progressWritesPerJob / ticksPerJob;
  const executed = await redisWrites(probe, callsBefore, callsAfter);
  const redisWriteCommandsPerJob = executed.writes / jobs;
  const busiest = executed.byCommand
    .slice(0, 5)
    .map(([command, calls]) => `${command} ${fmt(calls / jobs, 1)}`)
    .join(', ');

  print(
    `measured: progress: ${jobs} jobs x ${PROGRESS_JOB_MS / 1000} s at ${PROGRESS_HZ} ticks/s, outcome ${JSON.stringify(outcome)}`,
  );
  print(`measured: provider progress webhooks received per job = ${fmt(ticksPerJob, 1)}`);
  print(
    `measured: job.updateProgress writes per job = ${fmt(progressWritesPerJob, 1)} -> ${fmt(writesPerTick, 3)} writes per tick`,
  );
  print(
    `measured: Redis write commands per job = ${fmt(redisWriteCommandsPerJob, 1)} ` +
      `(INFO commandstats, write-flagged commands incl. those BullMQ's Lua scripts run; ` +
      `script calls per job = ${fmt(executed.scripts / jobs, 1)}; most: ${busiest})`,
  );
  return {
    jobs,
    ticksPerJob: round(ticksPerJob, 1),
    progressWritesPerJob: round(progressWritesPerJob, 2),
    writesPerTick: round(writesPerTick, 3),
    redisWriteCommandsPerJob: round(redisWriteCommandsPerJob, 1),
    outcome,
  };
}

/**
 * Section 3's workload: idle submit latency, then the burst's jobs of 1 s from 50
 * clients against a limit of 5; `processes` are the peer's (its service and
 * Redis), whose CPU the burst is charged.
 */
async function burstWorkload(
  client: PeerClient,
  processes: readonly number[],
  print: Print,
): Promise<PeerFigures['burst']> {
  // The very burst section 3 sends to Longhaul.
  const { jobs, clients, jobMs } = BURST;
  const config = { jobMs, progressHz: PROGRESS_HZ, idempotent: true };

  await client.resetProvider(config);
  const idle = await submitOneByOne((prompt) => client.submit(prompt), BURST.idle);
  await client.settle(idle.ids, 60_000);

  await client.resetProvider(config);
  const cpu = cpuSince(processes);
  const started = performance.now();
  const { ids, latencies, answeredAt } = await submitBurst((prompt) => client.submit(prompt), jobs, clients);
  const submittedMs = performance.now() - started;
  await untilProviderRanAll(() => client.ledger(), jobs);
  const makespanMs = performance.now() - started;
  const outcome = await client.settle(ids, 120_000);
  const cpuSeconds = cpu();
  const ledger = await client.ledger();
  const slotGap = slotGapFigures({ ...ledgerTimes(ledger.submissions), queued: answeredAt, limit: LIMIT });

  const makespanS = makespanMs / 1000;
  const busyMs = ledger.submissions.length * jobMs;
  const utilizationPct = (100 * busyMs) / (LIMIT * makespanMs);
  const figures = {
    jobs,
    clients,
    limit: LIMIT,
    jobMs,
    maxInFlight: ledger.maxConcurrent,
    makespanS: round(makespanS, 1),
    utilizationPct: round(utilizationPct, 1),
    submitP50Ms: round(quantile(latencies, 0.5), 1),
    submitP99Ms: round(quantile(latencies, 0.99), 1),
    idleP50Ms: round(quantile(idle.latencies, 0.5), 1),
    idleP99Ms: round(quantile(idle.latencies, 0.99), 1),
    failedJobs: outcome.failed ?? 0,
    ...(slotGap ? { slotGap } : {}),
    ...(cpuSeconds === undefined ? {} : { cpuSecondsPerJob: round(cpuSeconds / jobs, 3) }),
    outcome,
  };

  print(
    `measured: burst: ${jobs} jobs, ${clients} clients, limit ${LIMIT}, ${jobMs} ms jobs, outcome ${JSON.stringify(outcome)}, provider submissions ${ledger.submissions.length}`,
  );
  print(
    `measured: max in flight at the provider (ledger maxConcurrent) = ${figures.maxInFlight} (limit ${LIMIT})`,
  );
  print(
    `measured: makespan = ${fmt(makespanS, 1)} s (all ${jobs} submitted after ${fmt(submittedMs / 1000, 1)} s); ideal ${(jobs * jobMs) / LIMIT / 1000} s`,
  );
  print(
    `measured: provider utilization = busy ${busyMs / 1000} slot-s / (${LIMIT} x ${fmt(makespanS, 1)} s) = ${fmt(utilizationPct, 1)} %`,
  );
  print(
    `measured: submit latency during the burst p50 = ${fmt(figures.submitP50Ms, 0)} ms, p99 = ${fmt(figures.submitP99Ms, 0)} ms (n=${latencies.length})`,
  );
  print(
    `measured: submit latency idle p50 = ${fmt(figures.idleP50Ms, 0)} ms, p99 = ${fmt(figures.idleP99Ms, 0)} ms (n=${idle.latencies.length}, one at a time)`,
  );
  print(
    `measured: a freed slot's wait for its next job (provider finish -> next acceptance, while jobs waited): ${slotGapsText(slotGap)}`,
  );
  if (cpuSeconds !== undefined) {
    print(
      `measured: CPU of the peer (its service with the simulator in it, and Redis) = ${fmt(cpuSeconds, 1)} s, ${fmt(cpuSeconds / jobs, 3)} CPU-s per job`,
    );
  }
  print(`measured: jobs BullMQ ended as failed = ${figures.failedJobs}`);
  return figures;
}

/** Every job's first provider submission is accepted and charged, and its answer lost to a connection reset. */
async function acceptThenDropWorkload(
  client: PeerClient,
  providerIdempotent: boolean,
  print: Print,
): Promise<PeerFigures['acceptThenDrop'][number]> {
  const jobs = 20;
  await client.resetProvider({ jobMs: 1000, progressHz: PROGRESS_HZ, idempotent: providerIdempotent });
  await client.simulator('/_sim/faults', { mode: 'accept-then-drop', count: jobs });
  const statsBefore = await client.stats();
  const ids = (
    await Promise.all(Array.from({ length: jobs }, (_, i) => client.submit(`accept-then-drop ${i}`)))
  ).map((submitted) => submitted.id);
  const outcome = await client.settle(ids, 120_000);
  const ledger = await client.ledger();
  const statsAfter = await client.stats();

  const chargesPerKey = tally(ledger.submissions.map((entry) => entry.idempotencyKey ?? '(none)'));
  const jobsChargedTwiceOrMore = Object.values(chargesPerKey).filter((charges) => charges > 1).length;
  const charges = ledger.submissions.length;
  print(
    `measured: accept-then-drop, ${providerIdempotent ? 'idempotent' : 'non-idempotent'} provider: ${jobs} jobs, ` +
      `${charges} charges, ${jobsChargedTwiceOrMore} jobs charged twice or more, outcome ${JSON.stringify(outcome)}, ` +
      `${statsAfter.failedAttempts - statsBefore.failedAttempts} attempts failed and were retried or ended`,
  );
  return { providerIdempotent, jobs, charges, jobsChargedTwiceOrMore, outcome };
}

// ---------------------------------------------------------------------------
// The clients' side of the peer's HTTP API and the simulator's test routes

export class PeerClient {
  private submitted = 0;
  private readonly keyPrefix = `peer-${process.pid}-${Date.now()}`;

  constructor(private readonly peer: RunningPeer) {}

  /**
   * Adds one job under a fresh Idempotency-Key; returns its id and how long
   * the intake took to answer. The peer has no tenants: `tenant` only names
   * the job's key, so a workload can tell whose each job was.
   */
  async submit(
    prompt: string,
    options: { readonly tenant?: string; readonly priority?: JobPriority } = {},
  ): Promise<{ id: string; ms: number }> {
    this.submitted += 1;
    const started = performance.now();
    const response = await fetch(`${this.peer.url}/v1/jobs`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'idempotency-key': `${this.keyPrefix}-${options.tenant ?? 'bench'}-${this.submitted}`,
      },
      body: JSON.stringify({
        type: 'image.generate',
        input: { prompt },
        ...(options.priority ? { priority: options.priority } : {}),
      }),
    });
    const text = await response.text();
    const ms = performance.now() - started;
    if (response.status !== 202) throw new Error(`submit answered ${response.status}: ${text}`);
    return { id: (JSON.parse(text) as { id: string }).id, ms };
  }

  /**
   * Adds jobs in one request, one `Queue.addBulk` at the peer, each under a
   * fresh Idempotency-Key; returns how long the intake took to answer.
   */
  async submitBatch(prompts: readonly string[]): Promise<{ ids: string[]; ms: number }> {
    const items = prompts.map((prompt) => ({
      idempotencyKey: `${this.keyPrefix}-bench-${++this.submitted}`,
      type: 'image.generate',
      input: { prompt },
    }));
    const started = performance.now();
    const response = await fetch(`${this.peer.url}/v1/jobs/batch`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ items }),
    });
    const text = await response.text();
    const ms = performance.now() - started;
    if (response.status !== 200) throw new Error(`batch answered ${response.status}: ${text.slice(0, 300)}`);
    const answered = (JSON.parse(text) as { items: { id: string }[] }).items;
    if (answered.length !== items.length) {
      throw new Error(`batch of ${items.length} answered ${answered.length} items`);
    }
    return { ids: answered.map((item) => item.id), ms };
  }

  async state(id: string): Promise<string> {
    return (await this.job(id)).status;
  }

  /** The job as the peer shows it: BullMQ's state and timestamps. */
  job(id: string): Promise<PeerJob> {
    return this.getJson<PeerJob>(this.peer.url, `/v1/jobs/${encodeURIComponent(id)}`);
  }

  /** Waits until every job is completed or failed in BullMQ; returns how many ended in each. */
  async settle(ids: readonly string[], timeoutMs: number): Promise<Record<string, number>> {
    const pending = [...ids];
    const states: string[] = [];
    const poller = async () => {
      for (let id = pending.pop(); id !== undefined; id = pending.pop()) {
        const jobId = id;
        const state = await pollUntil(
          async () => {
            const current = await this.state(jobId);
            return TERMINAL_STATES.has(current) ? current : undefined;
          },
          { timeoutMs, intervalMs: 250, description: `job ${jobId} to complete or fail` },
        );
        states.push(state);
      }
    };
    await Promise.all(Array.from({ length: 10 }, poller));
    return tally(states);
  }

  stats(): Promise<PeerStats> {
    return this.getJson<PeerStats>(this.peer.url, '/_peer/stats');
  }

  ledger(): Promise<Ledger> {
    return this.getJson<Ledger>(this.peer.providerUrl, '/_sim/ledger');
  }

  /** Clears the provider's charges, faults and generations, then applies `config`. */
  async resetProvider(config: SimulatorConfig): Promise<void> {
    await this.simulator('/_sim/reset', {});
    await this.simulator('/_sim/config', config);
  }

  async simulator(path: string, body: unknown): Promise<void> {
    const response = await fetch(`${this.peer.providerUrl}${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    const text = await response.text();
    if (!response.ok) throw new Error(`POST ${path} answered ${response.status}: ${text}`);
  }

  private async getJson<T>(baseUrl: string, path: string): Promise<T> {
    const response = await fetch(`${baseUrl}${path}`);
    const text = await response.text();
    if (!response.ok) throw new Error(`GET ${path} answered ${response.status}: ${text}`);
    return JSON.parse(text) as T;
  }
}

// ---------------------------------------------------------------------------
// Figures

/**
 * Write commands Redis executed between two `INFO commandstats` readings:
 * every command COMMAND INFO flags `write`, counted once per call, including
 * the ones BullMQ's Lua scripts run (Redis counts those like any other) and
 * the worker's BZPOPMIN waits on its marker key. EVALSHA itself is not
 * write-flagged; `scripts` counts those calls separately.
 */
async function redisWrites(
  probe: RedisProbe,
  before: Record<string, number>,
  after: Record<string, number>,
): Promise<{ writes: number; scripts: number; byCommand: [string, number][] }> {
  const byCommand: [string, number][] = [];
  let writes = 0;
  let scripts = 0;
  for (const [command, calls] of Object.entries(after)) {
    const delta = calls - (before[command] ?? 0);
    if (delta <= 0) continue;
    if (['eval', 'evalsha', 'eval_ro', 'evalsha_ro', 'fcall', 'fcall_ro'].includes(command)) scripts += delta;
    if (!(await probe.isWriteCommand(command))) continue;
    writes += delta;
    byCommand.push([command, delta]);
  }
  byCommand.sort(([, a], [, b]) => b - a);
  return { writes, scripts, byCommand };
}

export function installedBullmqVersion(): string {
  const manifest = JSON.parse(readFileSync(require.resolve('bullmq/package.json'), 'utf8')) as {
    version: string;
  };
  return manifest.version;
}
