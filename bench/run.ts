import { execFileSync, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { GetQueueAttributesCommand } from '@aws-sdk/client-sqs';
import { BatchWriteCommand, GetCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import { build } from 'esbuild';
import { JOB_ITEM_SORT_KEY, resourceEnv } from '../config/layout';
import { loadSettings } from '../config/settings';
import { DynamoDbJobStore, toItem } from '../lambdas/adapters/dynamodb-job-store';
import { DynamoDbSlotPool } from '../lambdas/adapters/dynamodb-slot-pool';
import { DynamoDbTimeline } from '../lambdas/adapters/dynamodb-timeline';
import { HttpProvider } from '../lambdas/adapters/http-provider';
import { SfnWorkflow } from '../lambdas/adapters/sfn-workflow';
import { SqsJobQueue } from '../lambdas/adapters/sqs-job-queue';
import type { Job, JobStatus } from '../lambdas/domain/job';
import { applyProgress, ProgressThrottle } from '../lambdas/domain/progress';
import { reconcile } from '../lambdas/domain/reconcile';
import { synthesizeWorkflowDefinition } from '../lib/workflow-definition';
import {
  documentClient,
  pollUntil,
  type RunningLocalStack,
  sfnClient,
  sqsClient,
  startLocalStack,
} from '../test/e2e/support/local-stack';
import { PRICES_AS_OF, PRICES_REGION, prices } from './prices';

/**
 * `npm run bench`: the figures behind Longhaul's cost and back-pressure claims,
 * measured on the local stack (the same handlers against emulators). Every line
 * it prints is measured here, or says `computed` and from what.
 */

const ROOT = resolve(__dirname, '..');
const KEY = 'bench-key-4d2a';
const COUNTER = join(__dirname, 'support', 'request-counter.cjs');
const print = (line: string) => process.stdout.write(`${line}\n`);
const median = (xs: number[]) => quantile(xs, 0.5);
function quantile(xs: number[], q: number): number {
  const sorted = [...xs].sort((a, b) => a - b);
  if (sorted.length === 0) return Number.NaN;
  const rank = Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1));
  return sorted[rank] as number;
}
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const fmt = (n: number, digits = 2) => n.toFixed(digits);

const baseEnv = {
  LONGHAUL_API_KEYS: `${KEY}:bench`,
  API_RATE_LIMIT: '5000',
  API_BURST_LIMIT: '5000',
  SLOT_WAIT_MAX_SECONDS: '1',
  SIM_PROGRESS_HZ: '10',
  // No reconciler passes during a measurement: they would add requests that no job made.
  RECONCILE_INTERVAL_MS: '3600000',
  POWERTOOLS_LOG_LEVEL: 'WARN',
};

interface CountedStack {
  readonly stack: RunningLocalStack;
  /** Requests the stack process has made so far, by service and operation. */
  counts(): Promise<Record<string, number>>;
  stop(): Promise<void>;
}

async function startCounted(env: Record<string, string>): Promise<CountedStack> {
  const countDir = mkdtempSync(join(tmpdir(), 'longhaul-bench-counts-'));
  const stack = await startLocalStack({
    env: {
      ...baseEnv,
      ...env,
      BENCH_COUNT_DIR: countDir,
      NODE_OPTIONS: `${process.env.NODE_OPTIONS ?? ''} --require ${COUNTER}`.trim(),
    },
    readyTimeoutMs: 60_000,
  });
  const counts = async () => {
    await sleep(450); // two flushes of the counter
    let best: Record<string, number> = {};
    let bestTotal = -1;
    for (const file of readdirSync(countDir)) {
      const counted = JSON.parse(readFileSync(join(countDir, file), 'utf8')) as Record<string, number>;
      const total = Object.values(counted).reduce((s, n) => s + n, 0);
      if (total > bestTotal) [best, bestTotal] = [counted, total];
    }
    return best;
  };
  return {
    stack,
    counts,
    stop: async () => {
      await stack.stop();
      rmSync(countDir, { recursive: true, force: true });
    },
  };
}

const diff = (after: Record<string, number>, before: Record<string, number>) =>
  Object.fromEntries(
    Object.entries(after)
      .map(([k, v]) => [k, v - (before[k] ?? 0)] as const)
      .filter(([, v]) => v > 0)
      .sort(([a], [b]) => a.localeCompare(b)),
  );

function api(stack: RunningLocalStack) {
  let counter = 0;
  const call = async (method: string, path: string, body?: unknown, key?: string) => {
    const response = await fetch(`${stack.baseUrl}${path}`, {
      method,
      headers: {
        'x-api-key': KEY,
        ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
        ...(key ? { 'idempotency-key': key } : {}),
      },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await response.text();
    return { status: response.status, body: text ? JSON.parse(text) : undefined };
  };
  const sim = async (path: string, body?: unknown) => {
    const response = await fetch(`${stack.endpoints.providerUrl}${path}`, {
      method: body === undefined ? 'GET' : 'POST',
      headers: { 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await response.text();
    return text ? JSON.parse(text) : undefined;
  };
  return {
    call,
    sim,
    ledger: (): Promise<{ submissions: unknown[]; maxConcurrent: number; running: number }> =>
      sim('/_sim/ledger'),
    /** Submits one job; returns its id and how long the API took to answer. */
    submit: async (prompt: string) => {
      const started = performance.now();
      const created = await call(
        'POST',
        '/v1/jobs',
        { type: 'image.generate', input: { prompt } },
        `bench-${process.pid}-${Date.now()}-${++counter}`,
      );
      const ms = performance.now() - started;
      if (created.status !== 202) throw new Error(`submit answered ${created.status}`);
      return { id: created.body.id as string, ms };
    },
    status: async (id: string) => (await call('GET', `/v1/jobs/${id}`)).body.status as JobStatus,
  };
}

const TERMINAL = ['succeeded', 'failed', 'canceled', 'needs_review'];

async function settleAll(c: ReturnType<typeof api>, ids: string[], timeoutMs: number) {
  const statuses: Record<string, number> = {};
  const pending = [...ids];
  const workers = Array.from({ length: 10 }, async () => {
    for (let id = pending.pop(); id !== undefined; id = pending.pop()) {
      const jobId = id;
      const status = await pollUntil(
        async () => {
          const s = await c.status(jobId);
          return TERMINAL.includes(s) ? s : undefined;
        },
        { timeoutMs, intervalMs: 250, description: `job ${jobId}` },
      );
      statuses[status] = (statuses[status] ?? 0) + 1;
    }
  });
  await Promise.all(workers);
  return statuses;
}

async function queueDepth(stack: RunningLocalStack, queueUrl: string): Promise<number> {
  const { Attributes = {} } = await sqsClient(stack.endpoints).send(
    new GetQueueAttributesCommand({
      QueueUrl: queueUrl,
      AttributeNames: [
        'ApproximateNumberOfMessages',
        'ApproximateNumberOfMessagesNotVisible',
        'ApproximateNumberOfMessagesDelayed',
      ],
    }),
  );
  return Object.values(Attributes).reduce((s, v) => s + Number(v), 0);
}

function makeJob(id: string, status: JobStatus, at: Date, extra: Partial<Job> = {}): Job {
  const stamp = at.toISOString();
  const terminal = ['succeeded', 'failed', 'canceled'].includes(status);
  return {
    id,
    tenantId: 'bench',
    type: 'image.generate',
    status,
    progress: terminal ? 100 : 0,
    input: { prompt: 'bench' },
    result: null,
    error: null,
    attempts: terminal ? 1 : 0,
    idempotencyKey: `key-${id}`,
    fingerprint: 'f'.repeat(64),
    createdAt: stamp,
    updatedAt: stamp,
    statusAt: stamp,
    enqueuedAt: stamp,
    ...(terminal ? { startedAt: stamp, finishedAt: stamp } : {}),
    ...extra,
  };
}

// ---------------------------------------------------------------------------
// 1 and 5 (measured part): a 20 s job at 10 ticks/s, every request counted.

interface PerJobCounts {
  readonly jobs: number;
  readonly ticksPerJob: number;
  readonly perJob: Record<string, number>;
}

async function progressEndToEnd(): Promise<PerJobCounts> {
  print('\n## 1. Progress write amplification (end to end, local stack)');
  const jobs = 3;
  const jobMs = 20_000;
  const hz = 10;
  const s = await startCounted({ MAX_IN_FLIGHT: '5', SIM_JOB_MS: String(jobMs), SIM_IDEMPOTENT: '1' });
  try {
    const c = api(s.stack);
    const ddb = documentClient(s.stack.endpoints);
    const before = await s.counts();
    const ids = await Promise.all(Array.from({ length: jobs }, (_, i) => c.submit(`progress ${i}`)));
    // Watch the stored item of the first job: distinct stored progress values.
    const seen = new Set<string>();
    const watched = ids[0]?.id as string;
    let done = false;
    const watcher = (async () => {
      while (!done) {
        const { Item } = await ddb.send(
          new GetCommand({
            TableName: s.stack.endpoints.jobTableName,
            Key: { pk: watched, sk: JOB_ITEM_SORT_KEY },
            ConsistentRead: true,
          }),
        );
        if (Item?.status === 'running') seen.add(`${Item.progress}@${Item.updatedAt}`);
        await sleep(25);
      }
    })();
    const statuses = await settleAll(
      c,
      ids.map((j) => j.id),
      120_000,
    );
    done = true;
    await watcher;
    await sleep(1500); // let the last webhooks and notify steps finish
    const counted = diff(await s.counts(), before);
    const ticks = Math.round((jobMs / 1000) * hz);
    const progressWrites = (counted['dynamodb:UpdateItem(progress)'] ?? 0) / jobs;
    const distinct = new Set([...seen].map((v) => v.split('@')[0])).size;
    print(
      `jobs: ${jobs} x ${jobMs / 1000} s at ${hz} ticks/s (${ticks} provider ticks each), outcome ${JSON.stringify(statuses)}`,
    );
    print(
      `measured: progress UpdateItem requests per job = ${fmt(progressWrites, 1)} -> ${fmt(progressWrites / ticks, 3)} writes per tick`,
    );
    print(
      `measured: distinct stored progress values seen by polling one job item every 25 ms = ${distinct} (${fmt(distinct / ticks, 3)} per tick)`,
    );
    const perJob = Object.fromEntries(Object.entries(counted).map(([k, v]) => [k, v / jobs]));
    return { jobs, ticksPerJob: ticks, perJob };
  } finally {
    await s.stop();
  }
}

async function progressDomain(): Promise<void> {
  print(
    '\n## 1b. Progress write amplification (domain: applyProgress + real DynamoDbJobStore on the emulator)',
  );
  const s = await startCounted({ SIM_JOB_MS: '1000' });
  try {
    const client = documentClient(s.stack.endpoints);
    const store = new DynamoDbJobStore(client, {
      tableName: s.stack.endpoints.jobTableName,
      retentionDays: 30,
    });
    const ticks = 200;
    const results: { calls: number; wrote: number }[] = [];
    for (let run = 0; run < 3; run++) {
      const start = new Date();
      const job = makeJob(`bench-progress-${run}-${Date.now()}`, 'running', start);
      await client.send(new PutCommand({ TableName: s.stack.endpoints.jobTableName, Item: toItem(job, 30) }));
      let calls = 0;
      let wrote = 0;
      const counting = {
        recordProgress: async (jobId: string, progress: number, at: Date) => {
          calls++;
          const ok = await store.recordProgress(jobId, progress, at);
          if (ok) wrote++;
          return ok;
        },
      };
      let clock = start.getTime();
      const deps = {
        store: counting,
        live: { publish: async () => {} },
        throttle: new ProgressThrottle(1000), // as lambdas/api/handler.ts
        now: () => new Date(clock),
      };
      for (let tick = 1; tick <= ticks; tick++) {
        clock = start.getTime() + tick * 100; // 10 ticks per simulated second
        await applyProgress(deps, job.id, (100 * tick) / ticks);
      }
      results.push({ calls, wrote });
    }
    const calls = median(results.map((r) => r.calls));
    const wrote = median(results.map((r) => r.wrote));
    print(
      `measured: ${ticks} ticks at 10/s simulated time -> recordProgress calls = ${calls}, writes that changed the item = ${wrote} (${fmt(wrote / ticks, 3)} per tick; median of ${results.length})`,
    );
  } finally {
    await s.stop();
  }
}

// ---------------------------------------------------------------------------
// 2. Reconciler cost with many finished jobs.

async function reconcilerCost(): Promise<void> {
  print('\n## 2. Reconciler items read per pass (real adapters on the emulators)');
  const s = await startCounted({ SIM_JOB_MS: '1000' });
  try {
    const e = s.stack.endpoints;
    const client = documentClient(e);
    const table = e.jobTableName;
    const write = async (jobs: Job[]) => {
      for (let i = 0; i < jobs.length; i += 25) {
        let request: Record<string, { PutRequest: { Item: Record<string, unknown> } }[]> | undefined = {
          [table]: jobs.slice(i, i + 25).map((job) => ({ PutRequest: { Item: toItem(job, 30) } })),
        };
        while (request && Object.keys(request).length > 0) {
          const { UnprocessedItems } = await client.send(new BatchWriteCommand({ RequestItems: request }));
          request = UnprocessedItems as typeof request;
        }
      }
    };
    const now = new Date();
    const deps = {
      store: new DynamoDbJobStore(client, { tableName: table, retentionDays: 30 }),
      slots: new DynamoDbSlotPool(client, table),
      workflow: new SfnWorkflow(sfnClient(e), e.stateMachineArn),
      queue: new SqsJobQueue(sqsClient(e), e.jobQueueUrl),
      provider: new HttpProvider({
        baseUrl: e.providerUrl,
        deduplicates: true,
        submitTimeoutMs: 1000,
        readTimeoutMs: 1000,
      }),
      timeline: new DynamoDbTimeline(client, { tableName: table, retentionDays: 30 }),
      now: () => new Date(),
      maxInFlight: 5,
      queuedGraceMs: 30_000,
      jobTimeoutMs: 600_000,
      slotWaitMaxSeconds: 1,
      pageSize: 100, // as lambdas/reconcile/handler.ts
    };
    // 20 active jobs, queued just now: the pass reads them and has nothing to fix.
    await write(Array.from({ length: 20 }, (_, i) => makeJob(`bench-active-${i}`, 'queued', now)));
    const measure = async (finished: number) => {
      const runs = [];
      for (let i = 0; i < 3; i++) {
        const started = performance.now();
        const report = await reconcile(deps);
        runs.push({
          itemsRead: report.itemsRead,
          ms: performance.now() - started,
          checked: report.jobsChecked,
        });
      }
      print(
        `measured: ${finished} finished + 20 active -> itemsRead per pass = ${median(runs.map((r) => r.itemsRead))}, ` +
          `jobsChecked = ${median(runs.map((r) => r.checked))}, pass time median ${fmt(median(runs.map((r) => r.ms)), 0)} ms (3 passes)`,
      );
    };
    await write(Array.from({ length: 100 }, (_, i) => makeJob(`bench-done-${i}`, 'succeeded', now)));
    await measure(100);
    const loadStarted = performance.now();
    await write(Array.from({ length: 9900 }, (_, i) => makeJob(`bench-done-${100 + i}`, 'succeeded', now)));
    print(
      `(wrote 9,900 more finished jobs in ${fmt((performance.now() - loadStarted) / 1000, 1)} s with BatchWriteItem)`,
    );
    await measure(10_000);
  } finally {
    await s.stop();
  }
}

// ---------------------------------------------------------------------------
// 3. Back-pressure: 500 jobs from 50 clients against MAX_IN_FLIGHT=5.

async function backPressure(): Promise<PerJobCounts> {
  print('\n## 3. Back-pressure: 500 jobs, 50 concurrent clients, MAX_IN_FLIGHT=5, SIM_JOB_MS=1000');
  const limit = 5;
  const jobMs = 1000;
  const total = 500;
  const clients = 50;
  const s = await startCounted({
    MAX_IN_FLIGHT: String(limit),
    SIM_JOB_MS: String(jobMs),
    SIM_IDEMPOTENT: '1',
  });
  try {
    const c = api(s.stack);
    // Idle: one submission at a time with nothing else running.
    const idle: number[] = [];
    const idleIds: string[] = [];
    for (let i = 0; i < 20; i++) {
      const { id, ms } = await c.submit(`idle ${i}`);
      idle.push(ms);
      idleIds.push(id);
      await sleep(50);
    }
    await settleAll(c, idleIds, 60_000);
    await c.sim('/_sim/reset', {});
    await sleep(1000);

    const before = await s.counts();
    const burst: number[] = [];
    const ids: string[] = [];
    const started = performance.now();
    let next = 0;
    await Promise.all(
      Array.from({ length: clients }, async () => {
        while (next < total) {
          const n = next++;
          const { id, ms } = await c.submit(`burst ${n}`);
          burst.push(ms);
          ids.push(id);
        }
      }),
    );
    const submittedMs = performance.now() - started;
    await pollUntil(
      async () => {
        const ledger = await c.ledger();
        return ledger.submissions.length >= total && ledger.running === 0;
      },
      { timeoutMs: 480_000, intervalMs: 100, description: 'the provider to run every job' },
    );
    const makespanMs = performance.now() - started;
    const statuses = await settleAll(c, ids, 120_000);
    await sleep(1500);
    const counted = diff(await s.counts(), before);
    const ledger = await c.ledger();
    const dlq = await queueDepth(s.stack, s.stack.endpoints.deadLetterQueueUrl);
    const busy = ledger.submissions.length * jobMs;
    print(`measured: outcome ${JSON.stringify(statuses)}, provider submissions ${ledger.submissions.length}`);
    print(
      `measured: max in flight at the provider (ledger maxConcurrent) = ${ledger.maxConcurrent} (limit ${limit})`,
    );
    print(
      `measured: makespan = ${fmt(makespanMs / 1000, 1)} s (all ${total} submitted after ${fmt(submittedMs / 1000, 1)} s); ideal ${(total * jobMs) / limit / 1000} s`,
    );
    print(
      `measured: provider utilization = busy ${busy / 1000} slot-s / (${limit} x ${fmt(makespanMs / 1000, 1)} s) = ${fmt((100 * busy) / (limit * makespanMs), 1)} %`,
    );
    print(
      `measured: submit latency during the burst p50 = ${fmt(median(burst), 0)} ms, p99 = ${fmt(quantile(burst, 0.99), 0)} ms (n=${burst.length})`,
    );
    print(
      `measured: submit latency idle p50 = ${fmt(median(idle), 0)} ms, p99 = ${fmt(quantile(idle, 0.99), 0)} ms (n=${idle.length}, one at a time)`,
    );
    print(`measured: jobs in the dead-letter queue = ${dlq}`);
    const perJob = Object.fromEntries(Object.entries(counted).map(([k, v]) => [k, v / total]));
    return { jobs: total, ticksPerJob: Math.round((jobMs / 1000) * 10), perJob };
  } finally {
    await s.stop();
  }
}

// ---------------------------------------------------------------------------
// 4. Cold start: bundle size and module init time per handler.

async function coldStart(): Promise<void> {
  print('\n## 4. Cold start: bundle size and module init (esbuild as lib/constructs/project-function.ts)');
  const out = join(ROOT, 'bench', '.build');
  rmSync(out, { recursive: true, force: true });
  mkdirSync(out, { recursive: true });
  const names = readdirSync(join(ROOT, 'lambdas')).filter((name) => {
    try {
      return statSync(join(ROOT, 'lambdas', name, 'handler.ts')).isFile();
    } catch {
      return false;
    }
  });
  const env = {
    // Every resource variable a deployed function may be given, with placeholder values: nothing is called at init.
    ...Object.fromEntries(Object.values(resourceEnv).map((name) => [name, `https://bench.invalid/${name}`])),
    PATH: process.env.PATH ?? '',
    AWS_REGION: 'us-east-1',
    AWS_ACCESS_KEY_ID: 'local',
    AWS_SECRET_ACCESS_KEY: 'local',
    AWS_EC2_METADATA_DISABLED: 'true',
    POWERTOOLS_SERVICE_NAME: 'bench',
    POWERTOOLS_METRICS_NAMESPACE: 'Longhaul',
    POWERTOOLS_LOG_LEVEL: 'WARN',
    POWERTOOLS_TRACE_ENABLED: 'false',
  };
  try {
    for (const name of names) {
      const outfile = join(out, `${name}.js`);
      await build({
        entryPoints: [join(ROOT, 'lambdas', name, 'handler.ts')],
        outfile,
        bundle: true,
        platform: 'node',
        target: 'node24',
        format: 'cjs',
        minify: true,
        sourcemap: false, // the map ships beside the bundle but is not loaded at init
        external: ['@aws-sdk/*'],
        logLevel: 'silent',
      });
      const bytes = statSync(outfile).size;
      const times: number[] = [];
      let failure = '';
      for (let i = 0; i < 5; i++) {
        const script = `const t=process.hrtime.bigint();require(${JSON.stringify(outfile)});process.stdout.write(String(Number(process.hrtime.bigint()-t)/1e6))`;
        const run = spawnSync(process.execPath, ['-e', script], { cwd: ROOT, env, encoding: 'utf8' });
        if (run.status !== 0) {
          failure = /Error: .*/.exec(run.stderr)?.[0] ?? `exit ${run.status}`;
          break;
        }
        times.push(Number(run.stdout));
      }
      print(
        `measured: ${name.padEnd(10)} bundle ${fmt(bytes / 1024, 1).padStart(7)} KiB, init ` +
          (failure
            ? `failed: ${failure}`
            : `median ${fmt(median(times), 0)} ms (5 runs, SDK from node_modules)`),
      );
    }
  } finally {
    rmSync(out, { recursive: true, force: true });
  }
}

// ---------------------------------------------------------------------------
// 5. Floor cost per job.

function happyPathStates(): string[] {
  const definition = synthesizeWorkflowDefinition(
    loadSettings({}),
    'arn:aws:lambda:us-east-1:000000000000:function:longhaul-workflow',
  ) as { StartAt: string; States: Record<string, { Type: string; Next?: string; End?: boolean }> };
  const path: string[] = [];
  for (let name: string | undefined = definition.StartAt; name; ) {
    const state = definition.States[name];
    if (!state || path.includes(name)) break;
    path.push(name);
    if (state.Type === 'Choice') throw new Error('a Choice state on the happy path needs a rule here');
    name = state.End ? undefined : state.Next;
  }
  return path;
}

function floorCost(measured: PerJobCounts, label: string, states: string[]): void {
  const m = measured.perJob;
  const sum = (prefix: string, ops?: string[]) =>
    Object.entries(m)
      .filter(
        ([k]) =>
          k.startsWith(prefix) && !k.endsWith('(progress)') && (!ops || ops.includes(k.slice(prefix.length))),
      )
      .reduce((s, [, v]) => s + v, 0);
  const ddbWrites = sum('dynamodb:', ['PutItem', 'UpdateItem', 'DeleteItem', 'BatchWriteItem']);
  const ddbReads = sum('dynamodb:', ['GetItem', 'Query', 'Scan', 'BatchGetItem']);
  const sqsPerJob = sum('sqs:', [
    'SendMessage',
    'DeleteMessage',
    'ChangeMessageVisibility',
    'SendMessageBatch',
    'DeleteMessageBatch',
  ]);
  const sqsReceive = sum('sqs:', ['ReceiveMessage']);
  const s3Put = sum('s3:', ['PUT']);
  const s3Get = sum('s3:', ['GET', 'HEAD']);
  const transitions = states.length;
  const ticks = measured.ticksPerJob;
  // Computed: api (submit) + api (provider webhooks: each tick + completion) + dispatch + workflow Tasks.
  const tasks = states.length - 1;
  const dispatches = m['sqs:SendMessage'] ?? 1; // every message sent is one dispatch invocation
  const lambda = 1 + (ticks + 1) + dispatches + tasks;
  const apiRequests = 1 + ticks + 1; // submit + provider webhooks through the gateway
  print(`\n### per job: ${label}`);
  print(
    `measured (requests the stack made, per job): ${JSON.stringify(Object.fromEntries(Object.entries(m).map(([k, v]) => [k, Number(v.toFixed(2))])))}`,
  );
  const rows: [string, number, number, string][] = [
    [
      'Step Functions transitions',
      transitions,
      prices.stepFunctionsStandardPerTransition.usd,
      `computed: happy path ${states.join(' > ')}`,
    ],
    [
      'Lambda invocations',
      lambda,
      prices.lambdaPerRequest.usd,
      `computed: 1 submit + ${ticks + 1} webhooks + ${fmt(dispatches, 2)} dispatch (measured SendMessage) + ${tasks} steps`,
    ],
    [
      'API Gateway REST requests',
      apiRequests,
      prices.apiGatewayRestPerRequest.usd,
      'computed: submit + provider webhooks (client GETs excluded)',
    ],
    [
      'DynamoDB write requests',
      ddbWrites,
      prices.dynamoDbPerWriteRequestUnit.usd,
      'measured: PutItem/UpdateItem/DeleteItem, 1 WRU each (≤ 1 KB assumed)',
    ],
    [
      'DynamoDB read requests',
      ddbReads,
      prices.dynamoDbPerReadRequestUnit.usd,
      'measured: GetItem/Query (client polling GETs included), 1 RRU each assumed',
    ],
    [
      'SQS requests',
      sqsPerJob,
      prices.sqsPerRequest.usd,
      `measured: send/delete/visibility; ReceiveMessage polls (${fmt(sqsReceive, 2)}/job here) excluded, they depend on idle time`,
    ],
    ['S3 PUT', s3Put, prices.s3PutPerRequest.usd, 'measured'],
    ['S3 GET/HEAD', s3Get, prices.s3GetPerRequest.usd, 'measured'],
  ];
  print(`| service | per job | USD per 1,000 jobs | basis |`);
  print(`|---|---:|---:|---|`);
  let totalUsd = 0;
  for (const [service, perJob, unit, basis] of rows) {
    const usd = perJob * unit * 1000;
    totalUsd += usd;
    print(`| ${service} | ${fmt(perJob, 2)} | ${fmt(usd, 4)} | ${basis} |`);
  }
  print(
    `| total (no Lambda duration, logs, X-Ray, storage) | | ${fmt(totalUsd, 4)} | prices ${PRICES_REGION} as of ${PRICES_AS_OF} (bench/prices.ts) |`,
  );
}

async function main(): Promise<void> {
  const started = performance.now();
  const nodeVersion = process.version;
  let memory = '';
  try {
    memory = execFileSync('free', ['-g'], { encoding: 'utf8' }).split('\n')[1]?.split(/\s+/)[1] ?? '';
  } catch {}
  print(
    `# Longhaul bench — node ${nodeVersion}, ${execFileSync('nproc', { encoding: 'utf8' }).trim()} cores, ${memory} GiB memory`,
  );
  const only = new Set(process.argv.slice(2));
  const want = (n: string) => only.size === 0 || only.has(n);
  let uncontended: PerJobCounts | undefined;
  let contended: PerJobCounts | undefined;
  if (want('progress')) {
    uncontended = await progressEndToEnd();
    await progressDomain();
  }
  if (want('reconcile')) await reconcilerCost();
  if (want('backpressure')) contended = await backPressure();
  if (want('coldstart')) await coldStart();
  if (want('cost')) {
    print('\n## 5. Floor cost per job');
    const states = happyPathStates();
    print(
      `computed: state transitions of a successful job = ${states.length} (${states.join(', ')}) x $0.025/1000 = $${fmt(states.length * prices.stepFunctionsStandardPerTransition.usd * 1000, 4)} per 1,000 jobs`,
    );
    if (uncontended) floorCost(uncontended, `uncontended 20 s job, 200 ticks (section 1 run)`, states);
    if (contended) floorCost(contended, `1 s job, 10 ticks, under the 500-job burst (section 3 run)`, states);
  }
  print(`\nbench finished in ${fmt((performance.now() - started) / 1000, 0)} s`);
}

main().then(
  () => process.exit(0),
  (error: unknown) => {
    process.stderr.write(`bench failed: ${error instanceof Error ? error.stack : String(error)}\n`);
    process.exit(1);
  },
);
