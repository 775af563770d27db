import { appendFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PurgeQueueCommand, ReceiveMessageCommand, SendMessageCommand } from '@aws-sdk/client-sqs';
import { GetCommand } from '@aws-sdk/lib-dynamodb';
import { loadSettings, queueVisibilityTimeoutSeconds } from '../../config/settings';
import { jobIdOf } from '../../lambdas/domain/job';
import {
  FAULT_MODES,
  type FaultMode,
  type RunningSimulator,
  startSimulator,
} from '../../local/provider-sim/simulator';
import {
  documentClient,
  pollUntil,
  queueDepth,
  type RunningLocalStack,
  sqsClient,
  startLocalStack,
  temporaryDataDir,
} from './support/local-stack';

/**
 * Chaos on the local stack: jobs arrive while the provider misbehaves in every
 * way the simulator knows, queue messages are delivered twice or lost,
 * clients repeat their requests and cancel some, and the stack is killed
 * (SIGKILL) and restarted on the same data. At the end every accepted job is
 * found in a final state with its reason, nothing was charged twice, the
 * provider never ran more than the in-flight limit, and every slot comes back.
 *
 * The simulator runs in this process, so it outlives the stack as a real
 * provider would, and the stack reaches it through PROVIDER_URL.
 *
 * CHAOS_JOBS sets the size of the main scenario (default 40; `npm run
 * test:chaos` runs 300), CHAOS_SEED the seed (a number, or `random`, the
 * default of `npm run test:chaos`). The seed is printed, with the path of a
 * log holding the stacks' and the provider's output, so a run can be replayed;
 * the chaos is seeded, its timing against the stack is not, so a replay is
 * the same plan, not the same interleaving.
 */

const JOBS = Number(process.env.CHAOS_JOBS ?? 40);
const SEED =
  process.env.CHAOS_SEED === 'random'
    ? Math.floor(Math.random() * 2 ** 31)
    : Number(process.env.CHAOS_SEED ?? 424_242);
const BIG = JOBS > 60;

const MAX_IN_FLIGHT = 3;
// Long enough for a healthy job that draws several submission faults in a row: four timeouts
// with the submit step's retries (2, 4 and 8 s apart) take about 18 s before the provider runs
// it, which a loaded machine reaches; only a stalled job may still be running after this.
const JOB_TIMEOUT_MS = 30_000;
const RECONCILE_INTERVAL_MS = 2000;
// The queue's visibility timeout is six times this: messages a killed stack had received come
// back (and are dropped, their jobs being final) within a minute rather than three.
const DISPATCH_TIMEOUT_SECONDS = 10;
const KEY = 'chaos-key-5b7e21';
const ADMIN = 'chaos-admin-key-90af3c';
const PROVIDER_SECRET = 'chaos-provider-webhook-secret-1c8d';
const FINAL = ['succeeded', 'failed', 'canceled', 'needs_review'];

jest.setTimeout(Math.max(240_000, JOBS * 4000));

/** mulberry32: small, seedable, good enough to pick chaos from. */
function random(seed: number) {
  let state = seed >>> 0;
  const next = () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 2 ** 32;
  };
  return {
    next,
    int: (min: number, max: number) => min + Math.floor(next() * (max - min + 1)),
    pick: <T>(items: readonly T[]): T => items[Math.floor(next() * items.length)] as T,
    chance: (p: number) => next() < p,
    shuffle: <T>(items: T[]): T[] => {
      for (let i = items.length - 1; i > 0; i--) {
        const j = Math.floor(next() * (i + 1));
        [items[i], items[j]] = [items[j] as T, items[i] as T];
      }
      return items;
    },
  };
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

interface Job {
  readonly id: string;
  readonly status: string;
  readonly error: { code: string; message: string } | null;
  readonly idempotencyKey: string;
}

interface Ledger {
  readonly submissions: readonly { id: string; idempotencyKey: string | null; acceptedAt: string }[];
  readonly maxConcurrent: number;
  readonly running: number;
}

interface Aws {
  readonly endpoints: RunningLocalStack['endpoints'];
  readonly dynamodb: ReturnType<typeof documentClient>;
  readonly sqs: ReturnType<typeof sqsClient>;
}

/**
 * A stack that can be killed and restarted on the same data directory and
 * port (as a restarted service keeps its address, so the provider's webhook
 * retries reach it). While it is down, `up()` waits for the next one.
 */
class Restartable {
  private ready: Promise<RunningLocalStack>;
  private readonly clients = new WeakMap<RunningLocalStack, Aws>();
  restarts = 0;

  private constructor(
    private readonly env: Record<string, string>,
    readonly dataDir: string,
    readonly logFile: string,
  ) {
    this.ready = this.start();
  }

  static async start(env: Record<string, string>, logFile: string): Promise<Restartable> {
    const port = await freePort();
    const stack = new Restartable({ ...env, PORT: String(port) }, temporaryDataDir(), logFile);
    await stack.up();
    return stack;
  }

  private async start(): Promise<RunningLocalStack> {
    return startLocalStack({ env: this.env, dataDir: this.dataDir, readyTimeoutMs: 60_000 });
  }

  up(): Promise<RunningLocalStack> {
    return this.ready;
  }

  /** The running stack's endpoints with SDK clients for them, made once per stack. */
  async aws(): Promise<Aws> {
    const stack = await this.ready;
    let aws = this.clients.get(stack);
    if (!aws) {
      aws = {
        endpoints: stack.endpoints,
        dynamodb: documentClient(stack.endpoints),
        sqs: sqsClient(stack.endpoints),
      };
      this.clients.set(stack, aws);
    }
    return aws;
  }

  /** SIGKILL to the whole process group, then a new stack on the same data. */
  async killAndRestart(): Promise<void> {
    const victim = await this.ready;
    let dead!: () => void;
    // Callers wait for the new stack from now on; if it cannot start, they all hear why.
    this.ready = new Promise<void>((resolve) => {
      dead = resolve;
    }).then(() => this.start());
    victim.kill();
    await victim.exited;
    this.keepOutput(victim);
    this.restarts++;
    dead();
    await this.ready;
  }

  private keepOutput(stack: RunningLocalStack): void {
    appendFileSync(this.logFile, `\n===== stack pid ${stack.pid} =====\n${stack.output()}`);
  }

  async stop(): Promise<void> {
    const stack = await this.ready.catch(() => undefined);
    if (stack) {
      this.keepOutput(stack);
      await stack.stop();
    }
    rmSync(this.dataDir, { recursive: true, force: true });
  }
}

/** The client side of the chaos: requests that a real client retries until they are answered. */
function clientOf(stacks: Restartable, providerUrl: string) {
  const serverErrors: string[] = [];
  const request = async (
    method: string,
    path: string,
    options: { body?: unknown; idem?: string; key?: string } = {},
  ): Promise<{ status: number; body: any; headers: Headers }> => {
    const deadline = Date.now() + 120_000;
    for (;;) {
      if (Date.now() > deadline) throw new Error(`${method} ${path} got no usable answer within 120 s`);
      const stack = await stacks.up();
      let response: Response;
      try {
        response = await fetch(`${stack.baseUrl}${path}`, {
          method,
          headers: {
            'x-api-key': options.key ?? KEY,
            ...(options.body !== undefined ? { 'content-type': 'application/json' } : {}),
            ...(options.idem ? { 'idempotency-key': options.idem } : {}),
          },
          body: options.body === undefined ? undefined : JSON.stringify(options.body),
          signal: AbortSignal.timeout(30_000),
        });
      } catch {
        // Killed under our feet, or not listening yet: a real client tries again.
        await sleep(200);
        continue;
      }
      const text = await response.text();
      if (response.status >= 500) {
        serverErrors.push(`${method} ${path} -> ${response.status} ${text.slice(0, 300)}`);
        await sleep(200);
        continue;
      }
      if (response.status === 429 || (response.status === 409 && text.includes('idempotency-key-in-use'))) {
        await sleep(Number(response.headers.get('retry-after') ?? 1) * 1000);
        continue;
      }
      return {
        status: response.status,
        body: text ? JSON.parse(text) : undefined,
        headers: response.headers,
      };
    }
  };
  const sim = async (path: string, body?: unknown) => {
    const response = await fetch(`${providerUrl}${path}`, {
      method: body === undefined ? 'GET' : 'POST',
      headers: { 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await response.text();
    if (!response.ok) throw new Error(`simulator ${path} answered ${response.status}: ${text}`);
    return text ? JSON.parse(text) : undefined;
  };
  return {
    request,
    serverErrors,
    ledger: (): Promise<Ledger> => sim('/_sim/ledger'),
    fault: (mode: FaultMode, count = 1) => sim('/_sim/faults', { mode, count }),
    /** Submits until accepted; returns the job and whether this answer was a replay. */
    submit: async (idem: string, prompt: string) => {
      const answer = await request('POST', '/v1/jobs', {
        idem,
        body: { type: 'image.generate', input: { prompt } },
      });
      if (answer.status !== 202) {
        throw new Error(`submission ${idem} answered ${answer.status}: ${JSON.stringify(answer.body)}`);
      }
      return { job: answer.body as Job, replayed: answer.headers.get('idempotent-replayed') === 'true' };
    },
    job: async (id: string): Promise<Job | undefined> => {
      const answer = await request('GET', `/v1/jobs/${id}`);
      return answer.status === 200 ? (answer.body as Job) : undefined;
    },
    /** The slot item: who holds a slot, and the counter beside it. */
    slots: async (): Promise<{ holders: string[]; inFlight: number }> => {
      const { endpoints, dynamodb } = await stacks.aws();
      const { Item } = await dynamodb.send(
        new GetCommand({
          TableName: endpoints.jobTableName,
          Key: { pk: 'SLOTS', sk: 'SLOTS' },
          ConsistentRead: true,
        }),
      );
      return {
        holders: Item?.holders ? [...(Item.holders as Set<string>)].sort() : [],
        inFlight: Number(Item?.inFlight ?? 0),
      };
    },
  };
}

type Client = ReturnType<typeof clientOf>;

/**
 * The jobs queue empties: once every job is final, a message left is one a
 * killed stack had received, which comes back after the visibility timeout
 * and is dropped. Returns what was left if it does not.
 */
async function queueViolations(stacks: Restartable): Promise<string[]> {
  const visibilityMs = queueVisibilityTimeoutSeconds(loadSettings(chaosEnv('http://127.0.0.1', true))) * 1000;
  let depth = -1;
  const empty = await pollUntil(
    async () => {
      const { endpoints, sqs } = await stacks.aws();
      depth = await queueDepth(sqs, endpoints.jobQueueUrl);
      return depth === 0;
    },
    { timeoutMs: visibilityMs + 10_000, intervalMs: 1000 },
  ).then(
    () => true,
    () => false,
  );
  return empty ? [] : [`${depth} messages left in the jobs queue`];
}

/** A job that succeeded was healthy: none of its messages may have been dead-lettered. */
async function deadLetterViolations(stacks: Restartable, finals: readonly Job[]): Promise<string[]> {
  const { endpoints, sqs } = await stacks.aws();
  const { Messages = [] } = await sqs.send(
    new ReceiveMessageCommand({
      QueueUrl: endpoints.deadLetterQueueUrl,
      MaxNumberOfMessages: 10,
      VisibilityTimeout: 0,
    }),
  );
  const succeeded = new Set(finals.filter((job) => job.status === 'succeeded').map((job) => job.id));
  return Messages.map((message) => (JSON.parse(message.Body ?? '{}') as { jobId?: string }).jobId ?? '')
    .filter((jobId) => succeeded.has(jobId))
    .map((jobId) => `${jobId} succeeded, yet a message of it is in the dead-letter queue`);
}

interface ChaosPlan {
  readonly jobs: number;
  /** Faults armed at the simulator: each group at one random moment, its faults back to back. */
  readonly faults: readonly (readonly FaultMode[])[];
  /** Milliseconds over which submissions (and the chaos around them) are spread. */
  readonly windowMs: number;
  readonly kills: number;
  readonly purges: number;
  readonly duplicateDeliveries: number;
  readonly duplicateSubmissionRate: number;
  readonly cancelRate: number;
}

interface ChaosOutcome {
  /** Accepted job ids, by idempotency key. */
  readonly accepted: Map<string, string>;
  /** Ids whose cancel was answered 202. */
  readonly canceled: Set<string>;
  readonly replays: number;
}

/**
 * Runs the plan: submissions spread over the window, each fault armed at a
 * random moment in it, duplicate deliveries and purges at random moments,
 * kills in the middle third, some repeated submissions and some cancels.
 */
async function runChaos(
  plan: ChaosPlan,
  stacks: Restartable,
  client: Client,
  rng: ReturnType<typeof random>,
  log: (line: string) => void,
): Promise<ChaosOutcome> {
  const accepted = new Map<string, string>();
  const canceled = new Set<string>();
  let replays = 0;
  const started = Date.now();
  const at = (ms: number) => sleep(Math.max(0, started + ms - Date.now()));
  const tasks: Promise<unknown>[] = [];

  for (let i = 0; i < plan.jobs; i++) {
    const idem = `chaos-${SEED}-${i}`;
    const when = rng.int(0, plan.windowMs);
    const repeat = rng.chance(plan.duplicateSubmissionRate) ? rng.int(0, 3000) : undefined;
    const cancelAfter = rng.chance(plan.cancelRate) ? rng.int(0, 4000) : undefined;
    tasks.push(
      (async () => {
        await at(when);
        const first = client.submit(idem, `chaos ${i}`);
        // The same request again: at once (racing the first) or a little later, as a client retrying on a timeout.
        const second =
          repeat === undefined ? undefined : sleep(repeat).then(() => client.submit(idem, `chaos ${i}`));
        const { job } = await first;
        accepted.set(idem, job.id);
        if (second) {
          const again = await second;
          if (again.job.id !== job.id)
            throw new Error(`key ${idem} answered ${job.id}, then ${again.job.id}`);
          if (again.replayed) replays++;
        }
        if (cancelAfter !== undefined) {
          await sleep(cancelAfter);
          const answer = await client.request('POST', `/v1/jobs/${job.id}/cancel`);
          if (answer.status === 202) canceled.add(job.id);
          else if (answer.status !== 409)
            throw new Error(`cancel of ${job.id} answered ${answer.status}: ${JSON.stringify(answer.body)}`);
        }
      })(),
    );
  }

  for (const group of plan.faults) {
    const when = rng.int(0, plan.windowMs);
    tasks.push(
      (async () => {
        await at(when);
        for (const mode of group) await client.fault(mode);
      })(),
    );
  }

  for (let i = 0; i < plan.duplicateDeliveries; i++) {
    const when = rng.int(plan.windowMs / 5, plan.windowMs + 5000);
    const copies = rng.int(1, 3);
    const deferrals = rng.chance(0.3) ? rng.int(1, 5) : undefined;
    tasks.push(
      (async () => {
        await at(when);
        const ids = [...accepted.values()];
        if (ids.length === 0) return;
        const jobId = rng.pick(ids);
        const { endpoints, sqs } = await stacks.aws();
        for (let copy = 0; copy < copies; copy++) {
          await sqs
            .send(
              new SendMessageCommand({
                QueueUrl: endpoints.jobQueueUrl,
                MessageBody: JSON.stringify({ jobId, ...(deferrals ? { deferrals } : {}) }),
              }),
            )
            .catch(() => undefined); // the stack may die mid-send; the copy is then simply not delivered
        }
      })(),
    );
  }

  for (let i = 0; i < plan.purges; i++) {
    const when = rng.int(plan.windowMs / 4, plan.windowMs);
    tasks.push(
      (async () => {
        await at(when);
        const { endpoints, sqs } = await stacks.aws();
        await sqs
          .send(new PurgeQueueCommand({ QueueUrl: endpoints.jobQueueUrl }))
          .then(() => log(`purged the jobs queue at ${Date.now() - started} ms`))
          .catch(() => undefined);
      })(),
    );
  }

  // Kills run one after the other, in the middle of the window, once work is under way at the provider.
  const killTimes = Array.from({ length: plan.kills }, () =>
    rng.int(Math.floor(plan.windowMs / 3), Math.floor((2 * plan.windowMs) / 3)),
  ).sort((a, b) => a - b);
  tasks.push(
    (async () => {
      for (const when of killTimes) {
        await at(when);
        await pollUntil(async () => (await client.ledger()).submissions.length >= 1, {
          timeoutMs: 60_000,
          description: 'work at the provider before the kill',
        });
        log(`SIGKILL at ${Date.now() - started} ms`);
        await stacks.killAndRestart();
        log(`restarted at ${Date.now() - started} ms`);
      }
    })(),
  );

  await Promise.all(tasks);
  return { accepted, canceled, replays };
}

/** Polls every accepted job until all are final; returns them. */
async function settleAll(
  client: Client,
  ids: readonly string[],
  timeoutMs: number,
): Promise<Map<string, Job>> {
  const last = new Map<string, Job>();
  await pollUntil(
    async () => {
      for (const id of ids) {
        const known = last.get(id);
        if (known && FINAL.includes(known.status) && known.status !== 'needs_review') continue;
        const job = await client.job(id);
        if (job) last.set(id, job);
      }
      return ids.every((id) => FINAL.includes(last.get(id)?.status ?? ''));
    },
    { timeoutMs, intervalMs: 1000, description: 'every job to be final' },
  ).catch((error: Error) => {
    const open = ids.filter((id) => !FINAL.includes(last.get(id)?.status ?? ''));
    throw new Error(
      `${error.message}; not final: ${open.map((id) => `${id}=${last.get(id)?.status}`).join(', ')}`,
    );
  });
  return last;
}

function countBy<T>(items: Iterable<T>, label: (item: T) => string): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const item of items) counts[label(item)] = (counts[label(item)] ?? 0) + 1;
  return counts;
}

const summarize = (jobs: Iterable<Job>) =>
  countBy(jobs, (job) => (job.error ? `${job.status}:${job.error.code}` : job.status));

function chaosEnv(providerUrl: string, idempotent: boolean): Record<string, string> {
  return {
    PROVIDER_URL: providerUrl,
    PROVIDER_WEBHOOK_SECRET: PROVIDER_SECRET,
    SIM_IDEMPOTENT: idempotent ? '1' : '0',
    PROVIDER_IDEMPOTENT: idempotent ? '1' : '0',
    LONGHAUL_API_KEYS: `${KEY}:acme`,
    LONGHAUL_ADMIN_KEY: ADMIN,
    API_RATE_LIMIT: '5000',
    API_BURST_LIMIT: '5000',
    MAX_IN_FLIGHT: String(MAX_IN_FLIGHT),
    JOB_TIMEOUT_MS: String(JOB_TIMEOUT_MS),
    AWAIT_HEARTBEAT_SECONDS: '10',
    RECONCILE_INTERVAL_MS: String(RECONCILE_INTERVAL_MS),
    QUEUED_GRACE_MS: '2000',
    SLOT_WAIT_MAX_SECONDS: '1',
    DISPATCH_TIMEOUT_SECONDS: String(DISPATCH_TIMEOUT_SECONDS),
    PROVIDER_TIMEOUT_MS: '1000',
    // AWS's own misbehaviour on top of the provider's: throttled invocations and lagging indexes.
    // Lambda's recursion detection is always on in the local stack.
    LONGHAUL_FAULT_THROTTLE: '0.05',
    LONGHAUL_FAULT_GSI_LAG_MS: '400',
  };
}

/**
 * Every job that did not succeed is explained by what was done to it: a failure
 * or a review carries a code that an injected fault causes, no more often than
 * that fault was injected. A definite refusal (4xx) means nothing was charged;
 * only a job that failed at the provider may have failed after a charge, so a
 * job the provider accepted is never `failed` by a guess. Returns the violations.
 */
function unexplained(
  finals: readonly Job[],
  faults: readonly FaultMode[],
  charged: ReadonlySet<string>,
  options: { ambiguousReviews: 'at-most' | 'exactly' },
): string[] {
  const count = (...modes: FaultMode[]) => faults.filter((mode) => modes.includes(mode)).length;
  const allowed: Record<string, { status: string; limit: number }> = {
    provider_rejected_400: { status: 'failed', limit: count('reject') },
    generation_failed: { status: 'failed', limit: count('fail-job') },
    // Six tries at a provider that answers 503 before the step gives up (lib/constructs/job-workflow.ts).
    provider_unavailable: { status: 'failed', limit: Math.floor(count('unavailable') / 6) },
    provider_timeout: { status: 'needs_review', limit: count('stall') },
    job_timeout: { status: 'needs_review', limit: count('stall') },
    ambiguous_submission: { status: 'needs_review', limit: count('accept-then-drop', 'timeout') },
  };
  const problems: string[] = [];
  const byCode = new Map<string, Job[]>();
  for (const job of finals) {
    if (job.status === 'succeeded' || job.status === 'canceled') continue;
    const code = job.error?.code ?? '(none)';
    byCode.set(code, [...(byCode.get(code) ?? []), job]);
    const rule = allowed[code];
    if (!rule || rule.status !== job.status) problems.push(`${job.id} is ${job.status} with ${code}`);
    if (job.status === 'failed' && code !== 'generation_failed' && charged.has(job.id))
      problems.push(`${job.id} failed (${code}) although the provider accepted and charged it`);
  }
  for (const [code, jobs] of byCode) {
    const limit = allowed[code]?.limit ?? 0;
    if (jobs.length > limit)
      problems.push(`${jobs.length} jobs with ${code}, more than the ${limit} faults that cause it`);
  }
  const reviewedAmbiguous = byCode.get('ambiguous_submission')?.length ?? 0;
  if (options.ambiguousReviews === 'exactly' && reviewedAmbiguous !== allowed.ambiguous_submission?.limit)
    problems.push(
      `${reviewedAmbiguous} ambiguous submissions in review, not ${allowed.ambiguous_submission?.limit}`,
    );
  return problems;
}

/**
 * Slots: once every job is final, only a job in review after an ambiguous
 * submission may still hold one (the provider may be running it, so the limit
 * counts it until the job timeout has passed); the reconciler frees those
 * within the job timeout and a few periods. Throughout, the counter equals
 * the number of holders. Returns what did not hold.
 */
async function slotViolations(client: Client, jobs: Map<string, Job>, log: (line: string) => void) {
  const ambiguous = new Set(
    [...jobs.values()]
      .filter((job) => job.status === 'needs_review' && job.error?.code === 'ambiguous_submission')
      .map((job) => job.id),
  );
  const violations: string[] = [];
  let seen = await client.slots();
  const within = async (timeoutMs: number, done: (slots: typeof seen) => boolean) =>
    pollUntil(
      async () => {
        seen = await client.slots();
        return done(seen);
      },
      { timeoutMs, intervalMs: 250 },
    ).then(
      () => true,
      () => false,
    );
  if (!(await within(20_000, (slots) => slots.holders.every((holder) => ambiguous.has(jobIdOf(holder))))))
    violations.push(`slots still held by jobs that are not ambiguous reviews: ${JSON.stringify(seen)}`);
  if (seen.inFlight !== seen.holders.length)
    violations.push(`slot counter disagrees with holders: ${JSON.stringify(seen)}`);
  log(`slots held once final: ${seen.holders.length} (ambiguous reviews: ${ambiguous.size})`);
  if (
    !(await within(
      JOB_TIMEOUT_MS + 4 * RECONCILE_INTERVAL_MS + 10_000,
      (slots) => slots.holders.length === 0,
    ))
  )
    violations.push(`slots never freed: ${JSON.stringify(seen)}`);
  else if (seen.inFlight !== 0) violations.push(`no holder left but the counter says ${seen.inFlight}`);
  return violations;
}

/** Whether charges match jobs: each key charged at most once, and only for accepted jobs. */
function chargeViolations(ledger: Ledger, ids: readonly string[], finals: readonly Job[]): string[] {
  const violations: string[] = [];
  const keys = ledger.submissions.map((submission) => String(submission.idempotencyKey));
  const seen = new Set<string>();
  for (const key of keys) {
    if (seen.has(key)) violations.push(`key ${key} charged more than once`);
    seen.add(key);
    if (!ids.includes(jobIdOf(key))) violations.push(`charge for ${key}, which is no accepted job`);
  }
  const charged = new Set([...seen].map(jobIdOf));
  for (const job of finals)
    if (job.status === 'succeeded' && !charged.has(job.id))
      violations.push(`${job.id} succeeded without a charge`);
  if (ledger.maxConcurrent > MAX_IN_FLIGHT)
    violations.push(
      `${ledger.maxConcurrent} jobs ran at the provider at once; the limit is ${MAX_IN_FLIGHT}`,
    );
  return violations;
}

/** No job lost: every accepted id is found again, final, and a failure or review says why. */
async function lossViolations(client: Client, ids: readonly string[]): Promise<string[]> {
  const violations: string[] = [];
  for (const id of ids) {
    const job = await client.job(id);
    if (!job) violations.push(`${id} is gone`);
    else if (!FINAL.includes(job.status)) violations.push(`${id} is still ${job.status}`);
    else if (
      (job.status === 'failed' || job.status === 'needs_review') &&
      !/^[a-z0-9_]+$/.test(job.error?.code ?? '')
    )
      violations.push(`${id} is ${job.status} without an error code: ${JSON.stringify(job.error)}`);
  }
  return violations;
}

describe('chaos with a provider that deduplicates', () => {
  let simulator: RunningSimulator;
  let stacks: Restartable;
  const logFile = join(tmpdir(), `longhaul-chaos-${SEED}-dedup.log`);
  const log = (line: string) => {
    process.stdout.write(`chaos: ${line}\n`);
    appendFileSync(logFile, `chaos: ${line}\n`);
  };

  beforeAll(async () => {
    writeFileSync(logFile, '');
    simulator = await startSimulator({
      port: 0,
      jobMs: 400,
      progressHz: 5,
      idempotent: true,
      webhookSecret: PROVIDER_SECRET,
      log: (line) => appendFileSync(logFile, `provider: ${line}\n`),
    });
    stacks = await Restartable.start(chaosEnv(simulator.url, true), logFile);
  });

  afterAll(async () => {
    await stacks?.stop();
    await simulator?.close();
  });

  it(`keeps every accepted job, charges each key once and holds the limit through ${JOBS} jobs of chaos`, async () => {
    const rng = random(SEED);
    // Every mode at least once, then a random mix. Stalls are rationed: each holds a slot for the job timeout.
    const common = FAULT_MODES.filter((mode) => mode !== 'stall');
    const extra = Array.from({ length: Math.max(0, Math.round(JOBS / 4) - FAULT_MODES.length) }, () =>
      rng.pick(common),
    );
    const stalls = Array.from({ length: Math.floor(JOBS / 60) }, () => 'stall' as const);
    const singles = rng.shuffle<FaultMode>([...FAULT_MODES, ...extra, ...stalls]).map((mode) => [mode]);
    // Brownouts: every submission times out for a while (enough for the jobs holding the slots to
    // use up their resends), and a resend refused after a dropped answer.
    const brownouts = Array.from({ length: BIG ? 3 : 1 }, () => [
      Array.from({ length: 4 * MAX_IN_FLIGHT }, () => 'timeout' as const),
      ['accept-then-drop', 'reject'] as FaultMode[],
    ]).flat();
    const groups = rng.shuffle([...singles, ...brownouts]);
    const faults = groups.flat();
    const plan: ChaosPlan = {
      jobs: JOBS,
      faults: groups,
      windowMs: BIG ? JOBS * 400 : 12_000,
      kills: BIG ? 2 : 1,
      purges: BIG ? 3 : 1,
      duplicateDeliveries: Math.round(JOBS / 5),
      duplicateSubmissionRate: 0.15,
      cancelRate: 0.08,
    };
    log(
      `seed ${SEED}, ${JOBS} jobs, faults ${JSON.stringify(countBy(faults, (mode) => mode))}, ` +
        `${plan.kills} kill(s), ${plan.purges} purge(s), ${plan.duplicateDeliveries} duplicate deliveries; log ${logFile}`,
    );
    const client = clientOf(stacks, simulator.url);

    const chaos = await runChaos(plan, stacks, client, rng, log);
    const ids = [...chaos.accepted.values()];
    log(`accepted ${ids.length} jobs (${chaos.replays} replays, ${chaos.canceled.size} cancels accepted)`);

    // One job per key, every key accepted.
    expect(chaos.accepted.size).toBe(JOBS);
    expect(new Set(ids).size).toBe(JOBS);

    const jobs = await settleAll(client, ids, BIG ? JOBS * 2000 : 150_000);
    log(`final: ${JSON.stringify(summarize(jobs.values()))}`);

    // Every invariant is checked, so one run reports everything it broke.
    const ledger = await client.ledger();
    log(`ledger: ${ledger.submissions.length} charges, maxConcurrent ${ledger.maxConcurrent}`);
    const finals = [...jobs.values()];
    const charged = new Set(ledger.submissions.map((s) => jobIdOf(String(s.idempotencyKey))));
    const violations = [
      ...(await lossViolations(client, ids)),
      ...chargeViolations(ledger, ids, finals),
      ...unexplained(finals, faults, charged, { ambiguousReviews: 'at-most' }),
      ...finals
        .filter((job) => job.status === 'canceled' && !chaos.canceled.has(job.id))
        .map((job) => `${job.id} is canceled, but nobody canceled it`),
      ...(await slotViolations(client, jobs, log)),
    ];
    violations.push(...(await queueViolations(stacks)));
    violations.push(...(await deadLetterViolations(stacks, finals)));
    violations.push(...client.serverErrors.map((error) => `server error: ${error}`));
    expect(violations).toEqual([]);
    expect(stacks.restarts).toBe(plan.kills);
  });
});

describe('chaos with a provider that cannot deduplicate', () => {
  let simulator: RunningSimulator;
  let stacks: Restartable;
  const logFile = join(tmpdir(), `longhaul-chaos-${SEED}-no-dedup.log`);
  const log = (line: string) => {
    process.stdout.write(`chaos (no dedup): ${line}\n`);
    appendFileSync(logFile, `chaos: ${line}\n`);
  };

  beforeAll(async () => {
    writeFileSync(logFile, '');
    simulator = await startSimulator({
      port: 0,
      jobMs: 400,
      progressHz: 5,
      idempotent: false,
      webhookSecret: PROVIDER_SECRET,
      log: (line) => appendFileSync(logFile, `provider: ${line}\n`),
    });
    stacks = await Restartable.start(chaosEnv(simulator.url, false), logFile);
  });

  afterAll(async () => {
    await stacks?.stop();
    await simulator?.close();
  });

  it('charges no job twice and sends every ambiguous submission to review', async () => {
    const rng = random(SEED + 1);
    const jobs = BIG ? 60 : 12;
    // Armed before the first submission, so each fault meets one request: an ambiguous one cannot be
    // resent (that could be a second charge), so it is exactly one job in review.
    const ambiguousModes: FaultMode[] = ['accept-then-drop', 'timeout'];
    const faults = rng.shuffle<FaultMode>([
      ...ambiguousModes,
      'unavailable',
      'reject',
      'fail-job',
      'lose-webhooks',
      ...(BIG ? (['accept-then-drop', 'timeout', 'stall', 'unavailable'] as FaultMode[]) : []),
    ]);
    const c = clientOf(stacks, simulator.url);
    for (const mode of faults) await c.fault(mode);
    log(`seed ${SEED + 1}, ${jobs} jobs, faults in order ${faults.join(', ')}; log ${logFile}`);

    const chaos = await runChaos(
      {
        jobs,
        faults: [],
        windowMs: BIG ? 20_000 : 4000,
        kills: 0,
        purges: 1,
        duplicateDeliveries: Math.round(jobs / 3),
        duplicateSubmissionRate: 0.25,
        cancelRate: 0,
      },
      stacks,
      c,
      rng,
      log,
    );
    const ids = [...chaos.accepted.values()];
    expect(new Set(ids).size).toBe(jobs);

    const final = await settleAll(c, ids, 120_000);
    log(`final: ${JSON.stringify(summarize(final.values()))}`);
    const finals = [...final.values()];
    const ledger = await c.ledger();
    log(`ledger: ${ledger.submissions.length} charges, maxConcurrent ${ledger.maxConcurrent}`);
    // Every accepted request is a charge here: a key charged twice is a job charged twice, and an
    // ambiguous submission was accepted (and charged) once, and never sent again.
    const charged = new Set(ledger.submissions.map((s) => jobIdOf(String(s.idempotencyKey))));
    const violations = [
      ...(await lossViolations(c, ids)),
      ...chargeViolations(ledger, ids, finals),
      ...unexplained(finals, faults, charged, { ambiguousReviews: 'exactly' }),
      ...finals
        .filter((job) => job.error?.code === 'ambiguous_submission' && !charged.has(job.id))
        .map((job) => `${job.id} is an ambiguous review, but the provider never accepted it`),
      ...(await slotViolations(c, final, log)),
      ...c.serverErrors.map((error) => `server error: ${error}`),
    ];
    expect(violations).toEqual([]);
  });
});
