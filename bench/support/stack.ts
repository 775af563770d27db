import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { GetExecutionHistoryCommand } from '@aws-sdk/client-sfn';
import { GetCommand, QueryCommand } from '@aws-sdk/lib-dynamodb';
import { Longhaul } from '../../client/longhaul';
import { JOB_ITEM_SORT_KEY, jobTable } from '../../config/layout';
import { loadSettings } from '../../config/settings';
import { executionArn } from '../../lambdas/adapters/sfn-workflow';
import type { Job, JobPriority, JobResource } from '../../lambdas/domain/job';
import type { TimelineEvent } from '../../lambdas/domain/ports';
import {
  documentClient,
  GENERIC_PROVIDER_FOR_EVERY_JOB_TYPE,
  pollUntil,
  queueDepth,
  type RunningLocalStack,
  sfnClient,
  sqsClient,
  startLocalStack,
} from '../../local/harness/local-stack';
import type { Ledger } from '../../local/provider-sim/simulator';
import { loadTemplate } from '../../local/template';
import type { Usage } from '../../local/usage';

/**
 * The local stack as the bench runs it: the same process `npm start` runs,
 * with a request counter preloaded (./request-counter.cjs) so every request
 * the handlers send to an emulated service is counted, and the stack's own
 * usage meter (Lambda invocations and GB-seconds, REST API requests) read
 * from `/v1/admin/metrics`. The bench's own reads (job items, execution
 * histories, queue depths, the provider's ledger) go straight to the
 * emulators, so they are in neither count.
 */

export const TENANT_KEY = 'bench-key-4d2a';
/** The tenant of `TENANT_KEY`: whose a submission is unless it names another. */
const BENCH_TENANT = 'bench';
const ADMIN_KEY = 'bench-admin-key-71c9';
const COUNTER = join(__dirname, 'request-counter.cjs');
/** The job table's per-tenant index, which the API's own listing reads. */
const [byTenant] = jobTable.indexes;

/** The API key of one of a section's own tenants. */
export const tenantKey = (tenant: string) => (tenant === BENCH_TENANT ? TENANT_KEY : `bench-key-${tenant}`);

const BASE_ENV = {
  LONGHAUL_ADMIN_KEY: ADMIN_KEY,
  API_RATE_LIMIT: '5000',
  API_BURST_LIMIT: '5000',
  SIM_PROGRESS_HZ: '10',
  // No reconciler passes during a measurement: they would add requests that no job made.
  RECONCILE_INTERVAL_MS: '3600000',
  POWERTOOLS_LOG_LEVEL: 'WARN',
};

/**
 * DynamoDB as AWS bills it, counted by ./request-counter.cjs with the rules
 * of ./dynamodb-units.cjs: `reads` and `writes` (each item of a batch or a
 * transaction one), `read-units` and `write-units` (the table's, as the
 * emulator reports them), `index-write-units` (and per index,
 * `index-write-units:<table>/<index>`), `estimated-requests` (requests whose
 * units the emulator did not report, counted at the least AWS bills).
 */
export type DynamoDbUse = Record<string, number>;

/** One entry of the counter's log (BENCH_REQUEST_LOG=1): a request or an invocation, times in epoch ms. */
export interface LoggedCall {
  readonly kind: 'request' | 'invocation';
  /** `service:Operation` of a request; the function of an invocation (`api`, `workflow`, …). */
  readonly name: string;
  readonly start: number;
  readonly end?: number;
  /** An invocation's number, and the number of the invocation a request was made in. */
  readonly id?: number;
  readonly invocation?: number;
  /** What an invocation was for: a workflow step and its job, a route, a batch of messages and their jobs. */
  readonly detail?: string;
  /** A DynamoDB request's items read and written (a batch's or transaction's each one) and its units. */
  readonly reads?: number;
  readonly writes?: number;
  readonly readUnits?: number;
  readonly writeUnits?: number;
}

/** One event of an execution's history: its type (`TaskStateEntered`, …), the state it entered, and when (epoch ms). */
export interface ExecutionEvent {
  readonly type: string;
  readonly at: number;
  readonly state?: string;
}

/** Everything billed that the stack did up to a moment. */
export interface Snapshot {
  /** Requests to the emulated services, by `service:Operation` (a progress UpdateItem also as `dynamodb:UpdateItem(progress)`). */
  readonly requests: Record<string, number>;
  readonly dynamodb: DynamoDbUse;
  readonly usage: Usage;
}

/** What the stack did between two snapshots. */
export interface Measured {
  readonly requests: Record<string, number>;
  readonly dynamodb: DynamoDbUse;
  readonly lambda: Record<string, { invocations: number; gbSeconds: number }>;
  readonly restApiRequests: number;
}

/** The simulator's `GET /_sim/ledger`: its charges over every provider, and `byProvider` for each. */
export type { Ledger, ProviderLedger } from '../../local/provider-sim/simulator';

export const TERMINAL = ['succeeded', 'failed', 'canceled', 'needs_review'] as const;

/** What a submission may say besides its prompt: whose it is (the bench tenant by default), its priority and runAt. */
export interface SubmitOptions {
  readonly tenant?: string;
  readonly priority?: JobPriority;
  /** When the job is to run (RFC 3339); absent: now. */
  readonly runAt?: string;
}

/** A job's timestamps as the job table holds them. */
export type JobTimes = Pick<Job, 'id' | 'status' | 'createdAt' | 'startedAt' | 'finishedAt'>;

/** The options of a bench stack besides its environment. */
export interface BenchStackOptions {
  /** Tenants besides the bench's own, each given an API key of its own (`LONGHAUL_API_KEYS`). */
  readonly tenants?: readonly string[];
  /** Whether the counter logs every request and invocation with its times (see `BenchStack.calls`). */
  readonly logCalls?: boolean;
}

export interface BenchStack {
  readonly stack: RunningLocalStack;
  /** What the stack has done so far, taken before or after the work it is compared over. */
  snapshot(moment: 'before' | 'after'): Promise<Snapshot>;
  /** Every request and invocation the stack made so far, by start time; empty unless `logCalls` was asked. */
  calls(): Promise<LoggedCall[]>;
  /** Submits one job through the REST API; returns its id and how long the API took to answer. */
  submit(prompt: string, options?: SubmitOptions): Promise<{ id: string; ms: number }>;
  /** Submits one `audio.transcribe` job as multipart, with a few bytes of `audio/wav` as its file. */
  submitTranscription(name: string): Promise<{ id: string; ms: number }>;
  /** Submits one job of any type through `POST /v1/jobs` as the bench tenant. */
  submitJob(type: string, input: Record<string, unknown>): Promise<{ id: string; ms: number }>;
  /** Uploads a file through `POST /v1/uploads` and its presigned PUT; answers the `ref` a job input names. */
  upload(bytes: Uint8Array, contentType: string): Promise<string>;
  /** The job's timeline as its client reads it: `GET /v1/jobs/{id}/events`. */
  events(id: string): Promise<TimelineEvent[]>;
  /** A job as its client sees it: `GET /v1/jobs/{id}`. */
  job(id: string): Promise<JobResource>;
  /** Every job of a tenant with its timestamps, read from the job table's per-tenant index. */
  tenantJobs(tenant: string): Promise<JobTimes[]>;
  /** The jobs' timestamps, each read from its item: cheaper than `tenantJobs` for a few jobs of a large tenant. */
  jobTimes(ids: readonly string[]): Promise<JobTimes[]>;
  /** A request with the admin key: the status and the body (parsed when it is JSON). */
  admin(method: string, path: string, body?: unknown): Promise<{ status: number; body: unknown }>;
  /** Waits until every job is terminal, reading the job items; returns each final status. */
  settle(ids: readonly string[], timeoutMs: number): Promise<string[]>;
  /** State transitions of each job's execution: the `...StateEntered` events of its history. */
  transitions(ids: readonly string[]): Promise<number[]>;
  /** The events of the job's execution, in order. */
  history(id: string): Promise<ExecutionEvent[]>;
  /** Messages in a queue: visible, in flight and delayed. */
  queueDepth(queueUrl: string): Promise<number>;
  /** The timeout of one of the stack's functions (`api`, `dispatch`, …), as its template sets it. */
  functionTimeoutSeconds(service: string): number;
  /** The memory of one of the stack's functions, as its template sets it: what its duration is billed by. */
  functionMemoryMb(service: string): number;
  provider(path: string, body?: unknown): Promise<unknown>;
  ledger(): Promise<Ledger>;
  stop(): Promise<void>;
}

const timesOf = ({ id, status, createdAt, startedAt, finishedAt }: Job): JobTimes => ({
  id,
  status,
  createdAt,
  ...(startedAt === undefined ? {} : { startedAt }),
  ...(finishedAt === undefined ? {} : { finishedAt }),
});

/** Each count's growth from `before` to `after`, the ones that grew, by key. */
const grown = (before: Record<string, number>, after: Record<string, number>): Record<string, number> =>
  Object.fromEntries(
    Object.entries(after)
      .map(([key, n]) => [key, n - (before[key] ?? 0)] as const)
      .filter(([, n]) => n > 0)
      .sort(([a], [b]) => a.localeCompare(b)),
  );

const divided = (counts: Record<string, number>, by: number) =>
  Object.fromEntries(Object.entries(counts).map(([k, n]) => [k, n / by]));

export function measuredBetween(before: Snapshot, after: Snapshot): Measured {
  const requests = grown(before.requests, after.requests);
  const lambda = Object.fromEntries(
    Object.entries(after.usage.lambda)
      .map(([name, fn]) => {
        const earlier = before.usage.lambda[name];
        return [
          name,
          {
            invocations: fn.invocations - (earlier?.invocations ?? 0),
            gbSeconds: fn.gbSeconds - (earlier?.gbSeconds ?? 0),
          },
        ] as const;
      })
      .filter(([, fn]) => fn.invocations > 0),
  );
  return {
    requests,
    dynamodb: grown(before.dynamodb, after.dynamodb),
    lambda,
    restApiRequests: after.usage.restApiRequests - before.usage.restApiRequests,
  };
}

/** A measurement divided by the number of jobs it covers. */
export function perJob(measured: Measured, jobs: number): Measured {
  return {
    requests: divided(measured.requests, jobs),
    dynamodb: divided(measured.dynamodb, jobs),
    lambda: Object.fromEntries(
      Object.entries(measured.lambda).map(([name, fn]) => [
        name,
        { invocations: fn.invocations / jobs, gbSeconds: fn.gbSeconds / jobs },
      ]),
    ),
    restApiRequests: measured.restApiRequests / jobs,
  };
}

export async function startBenchStack(
  env: Record<string, string>,
  options: BenchStackOptions = {},
): Promise<BenchStack> {
  const countDir = mkdtempSync(join(tmpdir(), 'longhaul-bench-counts-'));
  const tenants = [BENCH_TENANT, ...(options.tenants ?? [])];
  const stackEnv = {
    ...BASE_ENV,
    LONGHAUL_API_KEYS: tenants.map((tenant) => `${tenantKey(tenant)}:${tenant}`).join(','),
    ...env,
    BENCH_COUNT_DIR: countDir,
    ...(options.logCalls ? { BENCH_REQUEST_LOG: '1' } : {}),
    NODE_OPTIONS: `${process.env.NODE_OPTIONS ?? ''} --require ${COUNTER}`.trim(),
  };
  const stack = await startLocalStack({ env: stackEnv, readyTimeoutMs: 60_000 });
  const e = stack.endpoints;
  const documents = documentClient(e);
  const sfn = sfnClient(e);
  const sqs = sqsClient(e);
  let submitted = 0;

  /**
   * The counts of every process of the stack (tsx and the stack itself),
   * added up. Each process is asked to write its counts now, and the reading
   * waits until it has: a process busy compiling a handler answers late.
   */
  const counted = async () => {
    const files = readdirSync(countDir).filter((name) => /^\d+\.json$/.test(name));
    const read = (file: string) =>
      JSON.parse(readFileSync(join(countDir, file), 'utf8')) as {
        flushes: number;
        counts: Record<string, number>;
        capacity?: Record<string, number>;
        log?: LoggedCall[];
      };
    const total: Record<string, number> = {};
    const dynamodb: Record<string, number> = {};
    const log: LoggedCall[] = [];
    for (const file of files) {
      const asked = read(file).flushes;
      let exited = false;
      try {
        process.kill(Number.parseInt(file, 10), 'SIGUSR2');
      } catch {
        exited = true; // its file holds what it wrote at exit
      }
      const current = exited
        ? read(file)
        : await pollUntil(
            async () => {
              const fresh = read(file);
              return fresh.flushes > asked ? fresh : undefined;
            },
            { timeoutMs: 30_000, intervalMs: 20, description: `request counts of process ${file}` },
          );
      for (const [key, n] of Object.entries(current.counts)) total[key] = (total[key] ?? 0) + n;
      for (const [key, n] of Object.entries(current.capacity ?? {})) dynamodb[key] = (dynamodb[key] ?? 0) + n;
      log.push(...(current.log ?? []));
    }
    return { requests: total, dynamodb, log: log.sort((a, b) => a.start - b.start) };
  };

  const usage = async (): Promise<Usage> => {
    const response = await fetch(`${stack.baseUrl}/v1/admin/metrics`, {
      headers: { 'x-api-key': ADMIN_KEY },
    });
    if (!response.ok) throw new Error(`/v1/admin/metrics answered ${response.status}`);
    return ((await response.json()) as { usage: Usage }).usage;
  };

  const provider = async (path: string, body?: unknown) => {
    const response = await fetch(`${e.providerUrl}${path}`, {
      method: body === undefined ? 'GET' : 'POST',
      headers: { 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    if (!response.ok) throw new Error(`provider ${path} answered ${response.status}`);
    const text = await response.text();
    return text ? JSON.parse(text) : undefined;
  };

  /** POST /v1/jobs under a fresh Idempotency-Key; the id and how long the API took to answer. */
  const createJob = async (
    body: string | FormData,
    headers: Record<string, string>,
    tenant: string = BENCH_TENANT,
  ) => {
    const started = performance.now();
    const response = await fetch(`${stack.baseUrl}/v1/jobs`, {
      method: 'POST',
      headers: {
        'x-api-key': tenantKey(tenant),
        'idempotency-key': `bench-${process.pid}-${Date.now()}-${++submitted}`,
        ...headers,
      },
      body,
    });
    const answer = (await response.json()) as { id: string };
    const ms = performance.now() - started;
    if (response.status !== 202) throw new Error(`submit answered ${response.status}`);
    return { id: answer.id, ms };
  };

  const templateFunction = (service: string) => {
    // The template the stack runs, read with the settings it runs with (a cache hit once it started).
    const settings = loadSettings({ ...process.env, ...GENERIC_PROVIDER_FOR_EVERY_JOB_TYPE, ...stackEnv });
    const fn = loadTemplate(settings)
      .functions()
      .find((candidate) => candidate.service === service);
    if (!fn) throw new Error(`the template has no ${service} function`);
    return fn;
  };

  /** The events of the job's execution, each with its type, state and time. */
  const history = async (id: string): Promise<ExecutionEvent[]> => {
    const name = (await jobItem(id))?.executionName as string | undefined;
    if (!name) throw new Error(`job ${id} has no execution`);
    const events: ExecutionEvent[] = [];
    let nextToken: string | undefined;
    do {
      const page = await sfn.send(
        new GetExecutionHistoryCommand({
          executionArn: executionArn(e.stateMachineArn, name),
          includeExecutionData: false,
          maxResults: 1000,
          nextToken,
        }),
      );
      for (const event of page.events ?? []) {
        events.push({
          type: event.type ?? '',
          at: event.timestamp?.getTime() ?? Number.NaN,
          ...(event.stateEnteredEventDetails?.name ? { state: event.stateEnteredEventDetails.name } : {}),
        });
      }
      nextToken = page.nextToken;
    } while (nextToken);
    return events;
  };

  const jobItem = async (id: string) =>
    (
      await documents.send(
        new GetCommand({
          TableName: e.jobTableName,
          Key: { pk: id, sk: JOB_ITEM_SORT_KEY },
          ConsistentRead: true,
        }),
      )
    ).Item;

  return {
    stack,
    // The ops report behind `usage()` reads the table and the queues itself: its
    // requests fall before the `before` counts and after the `after` counts.
    snapshot: async (moment) => {
      if (moment === 'before') {
        const used = await usage();
        const { requests, dynamodb } = await counted();
        return { usage: used, requests, dynamodb };
      }
      const { requests, dynamodb } = await counted();
      return { requests, dynamodb, usage: await usage() };
    },
    calls: async () => (await counted()).log,
    submit: (prompt, { tenant, priority, runAt } = {}) =>
      createJob(
        JSON.stringify({
          type: 'image.generate',
          input: { prompt },
          ...(priority ? { priority } : {}),
          ...(runAt ? { runAt } : {}),
        }),
        { 'content-type': 'application/json' },
        tenant,
      ),
    submitTranscription: (name) => {
      const form = new FormData();
      form.set('type', 'audio.transcribe');
      form.set('input', JSON.stringify({ language: 'en' }));
      form.set('file', new Blob([Buffer.from(`RIFF${name}`)], { type: 'audio/wav' }), `${name}.wav`);
      return createJob(form, {});
    },
    submitJob: (type, input) =>
      createJob(JSON.stringify({ type, input }), { 'content-type': 'application/json' }),
    // Through the SDK, as a client would: a large file goes in presigned parts.
    upload: async (bytes, contentType) =>
      (
        await new Longhaul({ baseUrl: stack.baseUrl, apiKey: TENANT_KEY }).uploadFile({
          data: bytes,
          contentType,
        })
      ).ref,
    events: async (id) => {
      const response = await fetch(`${stack.baseUrl}/v1/jobs/${encodeURIComponent(id)}/events`, {
        headers: { 'x-api-key': TENANT_KEY },
      });
      if (response.status !== 200) throw new Error(`GET /v1/jobs/${id}/events answered ${response.status}`);
      return ((await response.json()) as { items: TimelineEvent[] }).items;
    },
    job: async (id) => {
      const response = await fetch(`${stack.baseUrl}/v1/jobs/${encodeURIComponent(id)}`, {
        headers: { 'x-api-key': TENANT_KEY },
      });
      if (response.status !== 200) throw new Error(`GET /v1/jobs/${id} answered ${response.status}`);
      return (await response.json()) as JobResource;
    },
    tenantJobs: async (tenant) => {
      const jobs: JobTimes[] = [];
      let startKey: Record<string, unknown> | undefined;
      do {
        const page = await documents.send(
          new QueryCommand({
            TableName: e.jobTableName,
            IndexName: byTenant.name,
            KeyConditionExpression: '#tenant = :tenant',
            ExpressionAttributeNames: { '#tenant': byTenant.partitionKey },
            ExpressionAttributeValues: { ':tenant': tenant },
            ExclusiveStartKey: startKey,
          }),
        );
        jobs.push(...(page.Items ?? []).map((item) => timesOf(item as Job)));
        startKey = page.LastEvaluatedKey;
      } while (startKey);
      return jobs;
    },
    jobTimes: async (ids) => {
      const jobs: JobTimes[] = [];
      for (let i = 0; i < ids.length; i += 20) {
        const items = await Promise.all(ids.slice(i, i + 20).map(jobItem));
        items.forEach((item, j) => {
          if (!item) throw new Error(`no job ${ids[i + j]}`);
          jobs.push(timesOf(item as Job));
        });
      }
      return jobs;
    },
    admin: async (method, path, body) => {
      const response = await fetch(`${stack.baseUrl}${path}`, {
        method,
        headers: {
          'x-api-key': ADMIN_KEY,
          ...(body === undefined ? {} : { 'content-type': 'application/json' }),
        },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      const text = await response.text();
      let parsed: unknown = text;
      try {
        parsed = JSON.parse(text);
      } catch {
        // Not JSON: the text as it came.
      }
      return { status: response.status, body: parsed };
    },
    settle: async (ids, timeoutMs) => {
      const statuses: string[] = [];
      const pending = [...ids];
      await Promise.all(
        Array.from({ length: 10 }, async () => {
          for (let id = pending.pop(); id !== undefined; id = pending.pop()) {
            const jobId = id;
            statuses.push(
              await pollUntil(
                async () => {
                  const status = (await jobItem(jobId))?.status as string | undefined;
                  return status && (TERMINAL as readonly string[]).includes(status) ? status : undefined;
                },
                { timeoutMs, intervalMs: 250, description: `job ${jobId} to finish` },
              ),
            );
          }
        }),
      );
      return statuses;
    },
    transitions: async (ids) =>
      Promise.all(
        ids.map(
          async (id) => (await history(id)).filter((event) => event.type.endsWith('StateEntered')).length,
        ),
      ),
    history,
    queueDepth: (queueUrl) => queueDepth(sqs, queueUrl),
    functionTimeoutSeconds: (service) => templateFunction(service).timeoutSeconds,
    functionMemoryMb: (service) => templateFunction(service).memoryMb,
    provider,
    ledger: async () => (await provider('/_sim/ledger')) as Ledger,
    stop: async () => {
      await stack.stop();
      rmSync(countDir, { recursive: true, force: true });
    },
  };
}
