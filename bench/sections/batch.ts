import { Longhaul } from '../../client/longhaul';
import type { BatchItem } from '../../client/types';
import { MAX_BATCH_ITEMS } from '../../lambdas/domain/requests';
import { pollUntil } from '../../local/harness/local-stack';
import { installedBullmqVersion, PeerClient } from '../peer/bullmq';
import { startPeerProcess } from '../peer/peer-process';
import { RedisProbe, startRedis } from '../peer/redis';
import { type Submissions, submitBurst } from '../support/burst';
import { fmt, print, quantile, round, sizeFromEnv, sleep } from '../support/common';
import { cpuMeter } from '../support/cpu';
import {
  type BenchStack,
  type Measured,
  measuredBetween,
  startBenchStack,
  tenantKey,
} from '../support/stack';
import { BURST } from './backpressure';

/**
 * Batch intake: how many jobs per second each side accepts (stored and
 * enqueued, and answered to the client), in batches of a thousand and one
 * request at a time. Longhaul takes the batches through the SDK's
 * `submitBatch` (`POST /v1/jobs/batch`) and the single jobs through
 * `POST /v1/jobs` from as many concurrent clients as section 3; the BullMQ
 * peer takes the same through its HTTP intake, a thousand jobs to one
 * `Queue.addBulk`, or one `Queue.add` each. Only acceptance is timed: on both
 * sides the provider's slots are held by jobs that outlast the section, so
 * the jobs wait, as a flood into a busy provider does, and nothing runs while
 * the clock does. One batch is also counted: the DynamoDB and SQS requests
 * Longhaul's API made for it, and how long it took to answer beside the API
 * function's timeout and API Gateway's 29 s.
 */

export const BATCH = {
  /** Items per batch request: as many as the API takes. */
  size: MAX_BATCH_ITEMS,
  /** Concurrent clients of the one-at-a-time runs, as in section 3. */
  clients: BURST.clients,
  /** Batches go one at a time: each is a thousand jobs already. */
  batchClients: 1,
  limit: BURST.limit,
  /** Longer than the section: the jobs holding the slots never finish while it runs. */
  jobMs: 600_000,
  /** One progress webhook a job every ten seconds: the slot holders' ticks are not what is measured. */
  progressHz: 0.1,
} as const;

/** API Gateway's integration timeout in AWS: the longest any request may take to answer there. */
export const AWS_INTEGRATION_TIMEOUT_S = 29;

/** One way of submitting, on one side. */
export interface AcceptanceRun {
  readonly jobs: number;
  /** HTTP requests sent to accept them. */
  readonly requests: number;
  readonly clients: number;
  readonly seconds: number;
  readonly jobsPerS: number;
  /** How long each request took to be answered. */
  readonly answerP50Ms: number;
  readonly answerMaxMs: number;
  /** Requests answered 5xx (a batch past the API's timeout answers 502), each sent again by the client. */
  readonly serverErrors: number;
}

export interface BatchFigures {
  readonly batchSize: number;
  readonly limit: number;
  readonly longhaul: {
    readonly batch: AcceptanceRun;
    readonly single: AcceptanceRun;
    /** Requests to DynamoDB and SQS for one batch of `batchSize` new jobs, by operation. */
    readonly requestsPerBatch: Record<string, number>;
    /** The API function's timeout in the template, which the local stack enforces. */
    readonly apiTimeoutS: number;
    /**
     * CPU seconds the local stack's processes spent per batch of the timed run:
     * the API function and every emulator it calls share one Node process, so
     * this bounds a batch's answer time from below on any machine with a core to spare.
     */
    readonly stackCpuSPerBatch?: number;
  };
  readonly peer: {
    readonly bullmqVersion: string;
    readonly redisVersion: string;
    readonly addBulk: AcceptanceRun;
    readonly add: AcceptanceRun;
  };
  readonly awsIntegrationTimeoutS: number;
}

/**
 * The jobs each side submits: `BENCH_BATCH_JOBS` in batches (else 3,000, in
 * whole batches: three timed batches give the answer time's median) and
 * `BENCH_BATCH_SINGLE_JOBS` one at a time (else 1,000: at Longhaul's local
 * rate for single submissions, 20 s of them).
 */
export function batchSizes(env: Readonly<Record<string, string | undefined>>): {
  batched: number;
  single: number;
} {
  const batched = sizeFromEnv(env, 'BENCH_BATCH_JOBS', 3000);
  if (batched % BATCH.size !== 0) {
    throw new Error(`BENCH_BATCH_JOBS must be a multiple of ${BATCH.size}, got ${batched}`);
  }
  return { batched, single: sizeFromEnv(env, 'BENCH_BATCH_SINGLE_JOBS', 1000) };
}

/** One HTTP request of a run: its status and how long it took to be answered. */
export interface Answer {
  readonly status: number;
  readonly ms: number;
}

/** Jobs per second over a run, with the answer times of its requests. */
export function acceptanceRun(
  jobs: number,
  clients: number,
  elapsedMs: number,
  answers: readonly Answer[],
): AcceptanceRun {
  if (answers.length === 0) throw new Error('a run with no requests accepted nothing');
  const ms = answers.map((answer) => answer.ms);
  return {
    jobs,
    requests: answers.length,
    clients,
    seconds: round(elapsedMs / 1000, 1),
    jobsPerS: Math.round(jobs / (elapsedMs / 1000)),
    answerP50Ms: Math.round(quantile(ms, 0.5)),
    answerMaxMs: Math.round(quantile(ms, 1)),
    serverErrors: answers.filter((answer) => answer.status >= 500).length,
  };
}

/**
 * The billed requests to DynamoDB and SQS among those counted over one batch.
 * The local event source's `ReceiveMessage` polls are left out: they go on
 * whether or not anything is submitted (section 5 prices them as a fixed cost).
 */
export function intakeRequests(measured: Measured): Record<string, number> {
  return Object.fromEntries(
    Object.entries(measured.requests).filter(
      ([operation]) => /^(dynamodb|sqs):/.test(operation) && operation !== 'sqs:ReceiveMessage',
    ),
  );
}

const BATCH_TENANT = 'batcher';

export async function batchSection(): Promise<BatchFigures> {
  const sizes = batchSizes(process.env);
  print(
    `\n## 11. Batch intake: ${sizes.batched} jobs accepted in batches of ${BATCH.size} (one at a time), ` +
      `then ${sizes.single} one at a time from ${BATCH.clients} clients; provider slots (limit ${BATCH.limit}) held throughout`,
  );
  const longhaul = await longhaulSide(sizes);
  const peer = await peerSide(sizes);
  const ratio = (ours: AcceptanceRun, theirs: AcceptanceRun) => fmt(theirs.jobsPerS / ours.jobsPerS, 1);
  print(
    `computed: BullMQ accepts ${ratio(longhaul.batch, peer.addBulk)}x Longhaul's jobs per second in batches, ` +
      `${ratio(longhaul.single, peer.add)}x one at a time; Longhaul's batches accept ` +
      `${fmt(longhaul.batch.jobsPerS / longhaul.single.jobsPerS, 1)}x its single submissions`,
  );
  return {
    batchSize: BATCH.size,
    limit: BATCH.limit,
    longhaul,
    peer,
    awsIntegrationTimeoutS: AWS_INTEGRATION_TIMEOUT_S,
  };
}

async function longhaulSide({
  batched: jobs,
  single: singles,
}: ReturnType<typeof batchSizes>): Promise<BatchFigures['longhaul']> {
  const s = await startBenchStack(
    {
      MAX_IN_FLIGHT: String(BATCH.limit),
      SIM_JOB_MS: String(BATCH.jobMs),
      SIM_IDEMPOTENT: '1',
      SIM_PROGRESS_HZ: String(BATCH.progressHz),
      // A job that finds its provider full looks again in 7.5 to 15 minutes: after the section.
      SLOT_WAIT_MAX_SECONDS: '900',
    },
    // Each run's jobs under a tenant of their own: together they would pass one tenant's maxQueued.
    { tenants: [BATCH_TENANT] },
  );
  try {
    // The SDK as a client runs it, retries included; every attempt is timed.
    let attempts: Answer[] = [];
    const timed: typeof fetch = async (input, init) => {
      const started = performance.now();
      const response = await fetch(input, init);
      await response.clone().arrayBuffer();
      attempts.push({ status: response.status, ms: performance.now() - started });
      return response;
    };
    const sdk = new Longhaul({ baseUrl: s.stack.baseUrl, apiKey: tenantKey(BATCH_TENANT), fetch: timed });
    const run = `bench-${process.pid}-${Date.now()}`;
    let next = 0;
    const submitBatch = async () => {
      const items: BatchItem[] = Array.from({ length: BATCH.size }, () => {
        next++;
        return {
          idempotencyKey: `${run}-${next}`,
          type: 'image.generate',
          input: { prompt: `batch ${next}` },
        };
      });
      // As a client does: the same batch again while items are in use (a cut-off attempt may
      // still be storing them), until every item is accepted, new or replayed.
      const deadline = Date.now() + 120_000;
      for (;;) {
        const answers = await sdk.submitBatch(items);
        const inUse = answers.filter((answer) => answer.problem?.code === 'idempotency-key-in-use');
        const refused = answers.filter((answer) => answer.status !== 202 && !inUse.includes(answer));
        if (refused.length > 0) {
          throw new Error(`${refused.length} items not accepted: ${JSON.stringify(refused[0])}`);
        }
        if (inUse.length === 0) return;
        if (Date.now() > deadline) throw new Error(`${inUse.length} items still in use after 120 s`);
        await sleep(1000); // the problem's Retry-After
      }
    };

    await holdSlots(s);
    // The batch route's first run compiles and warms its code: it is not timed.
    await submitBatch();
    const apiTimeoutS = s.functionTimeoutSeconds('api');
    print(
      `measured: a first batch of ${BATCH.size} (not timed): ${attempts.map((a) => `${a.status} in ${fmt(a.ms / 1000, 1)} s`).join(', then ')} ` +
        `(the API function's timeout: ${apiTimeoutS} s; API Gateway's in AWS: ${AWS_INTEGRATION_TIMEOUT_S} s)`,
    );

    // Thousands of new jobs into a full provider, nothing else running: every request counted is intake's.
    attempts = [];
    const before = await s.snapshot('before');
    const cores = cpuMeter(s.stack.pid);
    const batchStarted = performance.now();
    for (let i = 0; i < jobs / BATCH.size; i++) await submitBatch();
    const batchMs = performance.now() - batchStarted;
    const busy = cores();
    const batches = jobs / BATCH.size;
    const requestsPerBatch = Object.fromEntries(
      Object.entries(intakeRequests(measuredBetween(before, await s.snapshot('after')))).map(
        ([operation, n]) => [operation, round(n / batches, 1)],
      ),
    );
    const batch = acceptanceRun(jobs, BATCH.batchClients, batchMs, attempts);
    printRun('Longhaul', `batches of ${BATCH.size} (SDK submitBatch)`, batch);
    print(
      `measured: requests per batch${batch.serverErrors > 0 ? ' (the attempts sent again included)' : ''}: ` +
        Object.entries(requestsPerBatch)
          .map(([operation, n]) => `${operation} ${n}`)
          .join(', '),
    );
    const stackCpuSPerBatch = busy === undefined ? undefined : round((busy * batchMs) / 1000 / batches, 1);
    if (stackCpuSPerBatch !== undefined) {
      print(
        `measured: the local stack spent ${fmt(stackCpuSPerBatch, 1)} CPU-s per batch (${fmt(busy ?? 0, 2)} cores busy on average)`,
      );
    }

    const singleStarted = performance.now();
    const single = await submitBurst((prompt) => s.submit(prompt), singles, BATCH.clients);
    const singleRun = acceptanceRun(
      singles,
      BATCH.clients,
      performance.now() - singleStarted,
      accepted(single),
    );
    printRun('Longhaul', 'one at a time (POST /v1/jobs)', singleRun);
    return {
      batch,
      single: singleRun,
      requestsPerBatch,
      apiTimeoutS,
      ...(stackCpuSPerBatch === undefined ? {} : { stackCpuSPerBatch }),
    };
  } finally {
    const started = performance.now();
    await s.stop();
    print(
      `measured: the stack stopped in ${fmt((performance.now() - started) / 1000, 1)} s, its waiting jobs with it`,
    );
  }
}

/** Jobs that take every provider slot for longer than the section, so the measured ones only wait. */
async function holdSlots(s: BenchStack): Promise<void> {
  await Promise.all(Array.from({ length: BATCH.limit }, (_, i) => s.submit(`slot holder ${i}`)));
  await pollUntil(async () => (await s.ledger()).running >= BATCH.limit, {
    timeoutMs: 60_000,
    intervalMs: 100,
    description: `${BATCH.limit} jobs running at the provider`,
  });
}

async function peerSide({
  batched: jobs,
  single: singles,
}: ReturnType<typeof batchSizes>): Promise<BatchFigures['peer']> {
  const redis = await startRedis(print);
  try {
    const probe = await RedisProbe.connect(redis.port);
    const redisVersion = await probe.version();
    await probe.close();
    const peer = await startPeerProcess({
      redisPort: redis.port,
      limit: BATCH.limit,
      attemptTimeoutMs: BATCH.jobMs * 2,
    });
    try {
      const client = new PeerClient(peer);
      await client.resetProvider({ jobMs: BATCH.jobMs, progressHz: BATCH.progressHz, idempotent: true });
      await Promise.all(Array.from({ length: BATCH.limit }, (_, i) => client.submit(`slot holder ${i}`)));
      await pollUntil(async () => (await client.ledger()).running >= BATCH.limit, {
        timeoutMs: 60_000,
        intervalMs: 100,
        description: `${BATCH.limit} peer jobs running at the provider`,
      });
      const prompts = (from: number) => Array.from({ length: BATCH.size }, (_, i) => `batch ${from + i}`);
      const bulkAnswers: Answer[] = [];
      const bulkStarted = performance.now();
      for (let i = 0; i < jobs / BATCH.size; i++) {
        bulkAnswers.push({ status: 200, ms: (await client.submitBatch(prompts(i * BATCH.size))).ms });
      }
      const addBulk = acceptanceRun(jobs, BATCH.batchClients, performance.now() - bulkStarted, bulkAnswers);
      printRun('BullMQ', `batches of ${BATCH.size} (Queue.addBulk)`, addBulk);
      const singleStarted = performance.now();
      const single = await submitBurst((prompt) => client.submit(prompt), singles, BATCH.clients);
      const add = acceptanceRun(singles, BATCH.clients, performance.now() - singleStarted, accepted(single));
      printRun('BullMQ', 'one at a time (Queue.add)', add);
      return { bullmqVersion: installedBullmqVersion(), redisVersion, addBulk, add };
    } finally {
      await peer.stop();
    }
  } finally {
    await redis.stop();
  }
}

/** Submissions answered 202 one by one (any other answer throws in the submit call). */
const accepted = (submissions: Submissions): Answer[] =>
  submissions.latencies.map((ms) => ({ status: 202, ms }));

function printRun(side: string, how: string, run: AcceptanceRun): void {
  print(
    `measured: ${side}, ${how}: ${run.jobs} jobs accepted in ${fmt(run.seconds, 1)} s = ${run.jobsPerS} jobs/s ` +
      `(${run.requests} requests from ${run.clients} client${run.clients === 1 ? '' : 's'}, ` +
      `answer p50 ${run.answerP50Ms} ms, max ${run.answerMaxMs} ms` +
      `${run.serverErrors > 0 ? `; ${run.serverErrors} answered 5xx and were sent again` : ''})`,
  );
}
