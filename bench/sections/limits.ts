import { loadSettings, providerSettingEnv } from '../../config/settings';
import { GENERIC_PROVIDER_FOR_EVERY_JOB_TYPE, pollUntil } from '../../local/harness/local-stack';
import type { RateLimit } from '../../local/provider-sim/rates';
import { installedBullmqVersion, PeerClient } from '../peer/bullmq';
import { startPeerProcess } from '../peer/peer-process';
import { type RunningRedis, startRedis } from '../peer/redis';
import { submitBurst } from '../support/burst';
import { fmt, print, round, sizeFromEnv, sleep, tally } from '../support/common';
import { type RateAfterBurst, rateAfterBurst, slotsFullAfter, throttledSharePct } from '../support/limits';
import { type BenchStack, type Ledger, startBenchStack, TERMINAL } from '../support/stack';

/**
 * Limits that are rates, and outages that end: 1 s jobs at an in-flight
 * limit of 5 against a provider that (a) admits 120 submissions a minute and
 * Longhaul is told so, (b) the same, and Longhaul is not told, so it must
 * learn the rate from the provider's 429s, (c) goes down for five minutes
 * in the middle of 300 jobs. Each case runs Longhaul's local stack and the
 * BullMQ peer at the same time, each with a simulator of its own, so neither
 * spends the other's rate; (a) and then (b) run during (c)'s outage. Every figure
 * is read from the provider's ledger: what it accepted and when, and the
 * 429s it answered.
 */

/** The provider both sides submit to: the bench's provider for every job type, and the peer's. */
const PROVIDER = 'longhaul-http';
const JOB_MS = 1000;
const LIMIT = 5;
/** The provider's rate: a bucket of 10 refilled at 120 a minute, so the burst is spent within seconds. */
const RATE: RateLimit = { requestsPerMinute: 120, burst: 10 };
const CLIENTS = 20;
/** One progress tick a job: the section measures rates, not progress, and ten a second would load the machine. */
const PROGRESS_HZ = 1;
const ATTEMPT_TIMEOUT_MS = JOB_MS * 5 + 10_000;
/**
 * How long a rate case waits for its jobs: half as long again as they take
 * at the provider's rate, and half a minute, so a side that keeps under two
 * thirds of the rate is cut off with jobs unfinished (its rate is measured
 * up to then).
 */
const rateCaseMs = (jobs: number) => (jobs / RATE.requestsPerMinute) * 60_000 * 1.5 + 30_000;
/** How long the outage case waits after recovery: the jobs left take half a minute at the limit. */
const RECOVERY_WAIT_S = 120;

/** One side's run of a rate case. */
export interface RateRun {
  readonly jobs: number;
  /** Submissions the provider accepted (each one a charge). */
  readonly charges: number;
  /** Submissions the provider refused with a 429. */
  readonly throttled: number;
  /** 429s as a share of every submission the provider answered. */
  readonly throttledPct: number;
  /** Submissions a minute once the provider's burst was spent. */
  readonly rate?: RateAfterBurst;
  readonly maxInFlight: number;
  /** Jobs that ended failed or in review. */
  readonly failedOrReview: number;
  readonly outcome: Record<string, number>;
}

/** One side's run of the outage case. */
export interface OutageRun {
  readonly jobs: number;
  readonly charges: number;
  readonly jobsChargedTwiceOrMore: number;
  readonly failedOrReview: number;
  /** Seconds from the provider's recovery until every slot was in use; absent if they never all were. */
  readonly slotsFullS?: number;
  readonly maxInFlight: number;
  readonly outcome: Record<string, number>;
}

export interface LimitsFigures {
  readonly jobMs: number;
  readonly limit: number;
  readonly rate: RateLimit;
  /** Whether the stack of case (a) read a declared rate from its settings. */
  readonly declaredRateRead: boolean;
  readonly bullmqVersion: string;
  readonly declared: { readonly longhaul: RateRun; readonly peer: RateRun };
  readonly undeclared: { readonly longhaul: RateRun; readonly peer: RateRun };
  readonly outage: {
    readonly seconds: number;
    /** How long the case waited for every job after recovery; a job not ended by then is `unfinished`. */
    readonly waitedS: number;
    readonly longhaul: OutageRun;
    readonly peer: OutageRun;
  };
}

/** The section's sizes. */
export interface LimitsSizes {
  /** Jobs of each rate case, all waiting from the start. */
  readonly rateJobs: number;
  readonly outageJobs: number;
  readonly outageSeconds: number;
}

/**
 * `BENCH_LIMITS_RATE_JOBS`, `BENCH_LIMITS_OUTAGE_JOBS` and
 * `BENCH_LIMITS_OUTAGE_SECONDS`, else 180 (a minute and a half of
 * submissions at the rate, so both rate cases fit in the outage), 300 and
 * 300: the five minutes the section's goals are about.
 */
export function limitsSizes(env: Readonly<Record<string, string | undefined>>): LimitsSizes {
  return {
    rateJobs: sizeFromEnv(env, 'BENCH_LIMITS_RATE_JOBS', 180),
    outageJobs: sizeFromEnv(env, 'BENCH_LIMITS_OUTAGE_JOBS', 300),
    outageSeconds: sizeFromEnv(env, 'BENCH_LIMITS_OUTAGE_SECONDS', 300),
  };
}

/** The outage starts once the provider has accepted half the jobs. */
const outageAfter = (sizes: LimitsSizes) => Math.floor(sizes.outageJobs / 2);

/** What a case needs of either side: submissions, outcomes and the side's own simulator. */
interface Side {
  submit(prompt: string): Promise<{ readonly id: string; readonly ms: number }>;
  /** How many of the jobs ended in each state so far, and how many are `unfinished`. */
  outcome(ids: readonly string[]): Promise<Record<string, number>>;
  ledger(): Promise<Ledger>;
  simulator(path: string, body: unknown): Promise<void>;
}

/** A job that had not ended when its case stopped waiting for it. */
const UNFINISHED = 'unfinished';

/**
 * The jobs' outcome once every one ended, or at `deadline` (epoch ms) with
 * the rest `unfinished`: a side too slow for its case is cut off there, so
 * the section keeps its length whatever either side does.
 */
async function outcomeBy(side: Side, ids: readonly string[], deadline: number) {
  for (;;) {
    const outcome = await side.outcome(ids);
    if (!outcome[UNFINISHED] || Date.now() >= deadline) return outcome;
    await sleep(Math.min(2000, Math.max(0, deadline - Date.now())));
  }
}

/** Where a job went that a rate or an outage must not send it. */
const FAILED_OR_REVIEW = ['failed', 'needs_review'];
const failedOrReview = (outcome: Record<string, number>) =>
  FAILED_OR_REVIEW.reduce((sum, status) => sum + (outcome[status] ?? 0), 0);

/**
 * A rate declared to Longhaul's settings (`RATE_PER_MINUTE_<PROVIDER>`,
 * `RATE_BURST_<PROVIDER>`, 0 for none). The burst is one under the
 * provider's, as the operations guide advises: a submission reaches the
 * provider some milliseconds after its grant, and the token left over there
 * absorbs that.
 */
function rateEnv(rate: RateLimit | undefined): Record<string, string> {
  const names = providerSettingEnv(PROVIDER);
  return rate
    ? {
        [names.ratePerMinute]: String(rate.requestsPerMinute),
        [names.rateBurst]: String(Math.max(1, rate.burst - 1)),
      }
    : { [names.ratePerMinute]: '0' };
}

/** The stack's settings: one provider at the limit, 1 s jobs, and the reconciler at its own period. */
function stackEnv(rate: RateLimit | undefined): Record<string, string> {
  return {
    [providerSettingEnv(PROVIDER).maxInFlight]: String(LIMIT),
    SIM_JOB_MS: String(JOB_MS),
    SIM_PROGRESS_HZ: String(PROGRESS_HZ),
    // An outage is what the reconciler converges: it runs as deployed, not held off as in the request counts.
    RECONCILE_INTERVAL_MS: String(loadSettings({}).reconcileIntervalMs),
    ...rateEnv(rate),
  };
}

/** Whether Longhaul, started with `env`, holds its grants to a declared rate. */
function readsDeclaredRate(env: Record<string, string>): boolean {
  const provider = loadSettings({ ...GENERIC_PROVIDER_FOR_EVERY_JOB_TYPE, ...env }).providers[PROVIDER];
  return 'rate' in provider && provider.rate !== undefined;
}

function longhaulSide(s: BenchStack): Side {
  return {
    submit: (prompt) => s.submit(prompt),
    // One read of the tenant's jobs, rather than a read a job: an outage is long.
    outcome: async (ids) => {
      const status = new Map((await s.tenantJobs('bench')).map((job) => [job.id, job.status as string]));
      return tally(
        ids.map((id) => {
          const now = status.get(id);
          return now !== undefined && (TERMINAL as readonly string[]).includes(now) ? now : UNFINISHED;
        }),
      );
    },
    ledger: () => s.ledger(),
    simulator: async (path, body) => {
      await s.provider(path, body);
    },
  };
}

/** The peer keeps one queue a case, so its own counts are the run's. */
function peerSide(client: PeerClient): Side {
  return {
    submit: (prompt) => client.submit(prompt),
    outcome: async (ids) => {
      const { jobCounts } = await client.stats();
      const completed = jobCounts.completed ?? 0;
      const failed = jobCounts.failed ?? 0;
      const unfinished = ids.length - completed - failed;
      return Object.fromEntries(
        Object.entries({ completed, failed, [UNFINISHED]: unfinished }).filter(([, n]) => n > 0),
      );
    },
    ledger: () => client.ledger(),
    simulator: (path, body) => client.simulator(path, body),
  };
}

/** A side's simulator back to its start, with 1 s jobs and, when given, the provider's rate. */
async function resetProvider(side: Side, rate?: RateLimit): Promise<void> {
  await side.simulator('/_sim/reset', {});
  await side.simulator('/_sim/config', {
    jobMs: JOB_MS,
    progressHz: PROGRESS_HZ,
    ...(rate ? { requestsPerMinute: rate.requestsPerMinute, burst: rate.burst } : {}),
  });
}

/** Every job waiting from the start against the provider's rate: the side's pace is all that limits it. */
async function rateRun(side: Side, jobs: number): Promise<RateRun> {
  await resetProvider(side, RATE);
  const deadline = Date.now() + rateCaseMs(jobs);
  const { ids } = await submitBurst((prompt) => side.submit(prompt), jobs, CLIENTS);
  const outcome = await outcomeBy(side, ids, deadline);
  const ledger = await side.ledger();
  const throttled = ledger.throttled ?? 0;
  const rate = rateAfterBurst(
    ledger.submissions.map((entry) => Date.parse(entry.acceptedAt)),
    RATE,
  );
  return {
    jobs: ids.length,
    charges: ledger.submissions.length,
    throttled,
    throttledPct: round(throttledSharePct(throttled, ledger.submissions.length), 1),
    ...(rate ? { rate: { ...rate, perMinute: round(rate.perMinute, 1) } } : {}),
    maxInFlight: ledger.maxConcurrent,
    failedOrReview: failedOrReview(outcome),
    outcome,
  };
}

/**
 * Submits the outage's jobs and starts the outage once half were accepted;
 * `ended` resolves with the figures once every job ended.
 */
async function startOutage(side: Side, sizes: LimitsSizes): Promise<{ ended: Promise<OutageRun> }> {
  const { outageJobs, outageSeconds } = sizes;
  await resetProvider(side);
  const { ids } = await submitBurst((prompt) => side.submit(prompt), outageJobs, CLIENTS);
  await pollUntil(async () => (await side.ledger()).submissions.length >= outageAfter(sizes), {
    timeoutMs: 300_000,
    intervalMs: 100,
    description: `the provider to accept ${outageAfter(sizes)} jobs`,
  });
  // The simulator ends the outage `outageSeconds` after it reads this request: no earlier than this.
  const recoveredAt = Date.now() + outageSeconds * 1000;
  await side.simulator('/_sim/faults', { mode: 'outage', seconds: outageSeconds });
  const ended = (async (): Promise<OutageRun> => {
    const outcome = await outcomeBy(side, ids, recoveredAt + RECOVERY_WAIT_S * 1000);
    const ledger = await side.ledger();
    const chargesPerKey = tally(ledger.submissions.map((entry) => entry.idempotencyKey ?? entry.id));
    const fullMs = slotsFullAfter(ledger.submissions, recoveredAt, LIMIT);
    return {
      jobs: ids.length,
      charges: ledger.submissions.length,
      jobsChargedTwiceOrMore: Object.values(chargesPerKey).filter((n) => n > 1).length,
      failedOrReview: failedOrReview(outcome),
      ...(fullMs === undefined ? {} : { slotsFullS: round(fullMs / 1000, 1) }),
      maxInFlight: ledger.maxConcurrent,
      outcome,
    };
  })();
  // Nothing awaits it until the rate cases are done: a failure must not go unhandled meanwhile.
  ended.catch(() => {});
  return { ended };
}

/**
 * A Longhaul stack for one case, its handlers compiled before anything is
 * measured: by as many jobs at once as the limit lets run, so each instance
 * a case will use is warm (a cold one delays a submission by seconds after
 * its grant, and the submissions granted after it then reach the provider
 * together).
 */
async function longhaulStack(rate: RateLimit | undefined): Promise<BenchStack> {
  const s = await startBenchStack(stackEnv(rate));
  try {
    const warmUp = await Promise.all(Array.from({ length: LIMIT }, (_, n) => s.submit(`warm-up ${n}`)));
    await s.settle(
      warmUp.map((job) => job.id),
      120_000,
    );
    return s;
  } catch (error) {
    await s.stop();
    throw error;
  }
}

/** A peer process for one case, its queue its own on the shared Redis. */
async function peer(redis: RunningRedis, queue: string, rate: RateLimit | undefined) {
  const running = await startPeerProcess({
    redisPort: redis.port,
    limit: LIMIT,
    attemptTimeoutMs: ATTEMPT_TIMEOUT_MS,
    queue,
    ...(rate ? { rate } : {}),
  });
  return { running, side: peerSide(new PeerClient(running)) };
}

/** Runs `work` with what `start` started, stopping it however the work ends. */
async function using<T extends { stop(): Promise<void> }, R>(
  started: Promise<T>,
  work: (it: T) => Promise<R>,
): Promise<R> {
  const it = await started;
  try {
    return await work(it);
  } finally {
    await it.stop();
  }
}

export async function limitsSection(): Promise<LimitsFigures> {
  const sizes = limitsSizes(process.env);
  const { outageSeconds } = sizes;
  const bullmqVersion = installedBullmqVersion();
  const limit = `${RATE.requestsPerMinute} a minute, burst ${RATE.burst}`;
  print(
    `\n## Limits: ${JOB_MS / 1000} s jobs at in-flight ${LIMIT}; (a) a provider rate of ${limit}, declared; ` +
      `(b) the same, not declared; (c) a ${outageSeconds} s outage after ${outageAfter(sizes)} of ${sizes.outageJobs} jobs`,
  );
  print(
    `peer: BullMQ ${bullmqVersion}, one Worker of concurrency ${LIMIT} a case; a 429 calls Queue.rateLimit(Retry-After) ` +
      'and throws Worker.RateLimitError (no attempt spent); (a) adds the limiter ' +
      `{max: ${RATE.burst}, duration: ${(RATE.burst * 60_000) / RATE.requestsPerMinute} ms}; a 503 fails the attempt ` +
      '(attempts 3, exponential backoff from 1 s)',
  );
  const declaredEnv = stackEnv(RATE);
  const declaredRateRead = readsDeclaredRate(declaredEnv);
  if (!declaredRateRead) {
    print(
      `note: this build of Longhaul reads no declared rate (${Object.keys(rateEnv(RATE)).join(', ')}): ` +
        'case (a) shows what it does without one',
    );
  }
  const redis = await startRedis(print);
  try {
    return await using(
      Promise.all([longhaulStack(undefined), peer(redis, 'limits-outage', undefined)]).then(
        ([stack, outagePeer]) => ({
          stack,
          outagePeer,
          stop: async () => {
            await Promise.all([stack.stop(), outagePeer.running.stop()]);
          },
        }),
      ),
      async ({ stack, outagePeer }) => {
        const outageStarted = performance.now();
        const [ours, theirs] = await Promise.all([
          startOutage(longhaulSide(stack), sizes),
          startOutage(outagePeer.side, sizes),
        ]);
        print(
          `measured: (c) both providers down for ${outageSeconds} s, ${fmt((performance.now() - outageStarted) / 1000, 0)} s after the first submission; (a) and (b) run meanwhile`,
        );
        // One after the other: two stacks at once on a small machine would measure its cores, not the rates.
        const declared = await rateCase(redis, 'declared', RATE, sizes.rateJobs);
        const undeclared = await rateCase(redis, 'undeclared', undefined, sizes.rateJobs);
        const outage = {
          seconds: outageSeconds,
          waitedS: RECOVERY_WAIT_S,
          longhaul: await ours.ended,
          peer: await theirs.ended,
        };
        printOutage(outage);
        return {
          jobMs: JOB_MS,
          limit: LIMIT,
          rate: RATE,
          declaredRateRead,
          bullmqVersion,
          declared,
          undeclared,
          outage,
        };
      },
    );
  } finally {
    await redis.stop();
  }
}

/** One rate case on both sides at once, each with its own stack or peer and simulator. */
async function rateCase(
  redis: RunningRedis,
  name: 'declared' | 'undeclared',
  declared: RateLimit | undefined,
  jobs: number,
): Promise<{ longhaul: RateRun; peer: RateRun }> {
  const [longhaul, peerRun] = await Promise.all([
    using(longhaulStack(declared), (s) => rateRun(longhaulSide(s), jobs)),
    using(
      peer(redis, `limits-${name}`, declared).then((p) => ({ ...p, stop: () => p.running.stop() })),
      (p) => rateRun(p.side, jobs),
    ),
  ]);
  const label = name === 'declared' ? '(a) declared rate' : '(b) undeclared rate';
  const least = name === 'declared' ? 0.95 : 0.85;
  print(
    `measured: ${label}: submissions a minute once the burst was spent = ${rateText(longhaul)} ` +
      `(goal ≥ ${fmt(least * RATE.requestsPerMinute, 0)}); peer ${rateText(peerRun)}`,
  );
  print(
    `measured: ${label}: 429s = ${longhaul.throttled}, ${fmt(longhaul.throttledPct, 1)} % of submissions ` +
      `(goal ${name === 'declared' ? '0' : '≤ 3 %'}); peer ${peerRun.throttled}, ${fmt(peerRun.throttledPct, 1)} %`,
  );
  print(
    `measured: ${label}: jobs failed or in review = ${longhaul.failedOrReview} (goal 0), outcome ${JSON.stringify(longhaul.outcome)}, ` +
      `most in flight ${longhaul.maxInFlight}; peer ${peerRun.failedOrReview}, ${JSON.stringify(peerRun.outcome)}, most in flight ${peerRun.maxInFlight}`,
  );
  return { longhaul, peer: peerRun };
}

function rateText(run: RateRun): string {
  if (!run.rate) return 'no window (fewer than two acceptances after the burst)';
  const { perMinute, submissions, windowMs, burstSpent } = run.rate;
  const window = `${submissions} over ${fmt(windowMs / 1000, 1)} s`;
  return `${fmt(perMinute, 1)} (${window}${burstSpent ? '' : ', the burst never spent: from the first acceptance'})`;
}

function printOutage(outage: LimitsFigures['outage']): void {
  const { longhaul: ours, peer: theirs } = outage;
  const full = (run: OutageRun) =>
    run.slotsFullS === undefined ? `not within ${outage.waitedS} s` : `${fmt(run.slotsFullS, 1)} s`;
  print(
    `measured: (c) outage: jobs failed or in review = ${ours.failedOrReview} of ${ours.jobs} (goal 0), ` +
      `outcome ${JSON.stringify(ours.outcome)}; peer ${theirs.failedOrReview}, ${JSON.stringify(theirs.outcome)}`,
  );
  print(
    `measured: (c) outage: charges = ${ours.charges}, jobs charged twice or more = ${ours.jobsChargedTwiceOrMore}; ` +
      `peer ${theirs.charges}, ${theirs.jobsChargedTwiceOrMore}`,
  );
  print(
    `measured: (c) outage: from the provider's recovery to all ${LIMIT} slots in use = ${full(ours)} (goal ≤ 5 s); ` +
      `peer ${full(theirs)}; most in flight ${ours.maxInFlight}, peer ${theirs.maxInFlight}`,
  );
}
