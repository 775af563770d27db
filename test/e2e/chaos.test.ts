import { appendFileSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { GetObjectCommand, ListObjectsV2Command, NoSuchKey } from '@aws-sdk/client-s3';
import { PurgeQueueCommand, ReceiveMessageCommand, SendMessageCommand } from '@aws-sdk/client-sqs';
import { DynamoDBDocumentClient, GetCommand } from '@aws-sdk/lib-dynamodb';
import { JOB_TYPE_MODULES, type JobType } from '../../config/job-types';
import { JOB_ITEM_SORT_KEY } from '../../config/layout';
import { PROVIDERS, type ProviderName } from '../../config/providers';
import {
  loadSettings,
  providerSettingEnv,
  queueVisibilityTimeoutSeconds,
  type Settings,
} from '../../config/settings';
import { slotPoolKey } from '../../lambdas/adapters/dynamodb-slot-pool';
import { deriveJobId } from '../../lambdas/domain/idempotency';
import { jobIdOf } from '../../lambdas/domain/job';
import { dynamoDbDir } from '../../local/data-dir';
import { startDynamoDbEmulator } from '../../local/emulators/dynamodb';
import {
  documentClient,
  GENERIC_PROVIDER_FOR_EVERY_JOB_TYPE,
  type LocalEndpoints,
  LocalStackStartError,
  OWN_PROVIDER_FOR_EVERY_JOB_TYPE,
  pollUntil,
  queueDepth,
  type RunningLocalStack,
  s3Client,
  sqsClient,
  startLocalStack,
  temporaryDataDir,
} from '../../local/harness/local-stack';
import { type ChargedJob, chargedJobs } from '../../local/harness/provider-jobs';
import { generateTestAudio } from '../../local/harness/test-audio';
import { inputDigestOf } from '../../local/provider-sim/bedrock';
import {
  FAULT_MODES,
  type FaultMode,
  type Ledger,
  type ProviderLedger,
  type RunningSimulator,
  startSimulator,
} from '../../local/provider-sim/simulator';
import { itemOfVectorKey, storedVectorKeys } from './support/vectors';

/**
 * Chaos on the local stack: jobs arrive while their providers misbehave in
 * every way the simulator knows, queue messages are delivered twice or lost,
 * clients repeat their requests and cancel some, and the stack is killed
 * (SIGKILL) and restarted on the same data. At the end every accepted job is
 * found in a final state with its reason, no job was charged twice, no
 * provider ever ran more than its own in-flight limit, no provider job is
 * left running, and every slot comes back.
 *
 * The main scenario runs every job type on its own provider, as `npm start`
 * does: image.generate on Replicate and audio.transcribe on Deepgram, through
 * the simulator's dialects of their APIs, each fault aimed at one dialect.
 * Neither deduplicates, so an ambiguous submission goes to review and is never
 * sent again, charged at most once. Deepgram can neither cancel nor give back
 * a finished request's transcript on request, so a lost callback ends in
 * review at a timeout, and a job canceled while Deepgram runs it keeps its
 * slot until Deepgram is done, or, its callback lost, until the job timeout
 * has passed: jobs canceled while their provider runs them show what a cancel
 * does at each provider, before the chaos begins. A batch of jobs
 * (`POST /v1/jobs/batch`) is sent just before the first kill, which strikes
 * once the stack has begun to store it, mostly before it answers; its client
 * then sends the very same batch (same keys, same bodies) until every item
 * is accepted, and each key must have one job, final, charged at most once
 * by providers that cannot deduplicate. The second scenario runs the
 * generic provider (`longhaul-http`), whose deduplication can be switched on:
 * with it on, an ambiguous submission is resent under the same key through
 * brownouts and a kill, and still charged once. The two run at once, each on
 * its own stack and simulator.
 *
 * The simulator runs in this process, so it outlives the stack as a real
 * provider would, and the stack reaches it through PROVIDER_URL.
 *
 * CHAOS_JOBS sets the size of the main scenario (default 40; `npm run
 * test:chaos` runs 300; the generic one runs 16 jobs, or as many once
 * CHAOS_JOBS is above 60), CHAOS_SEED the seed (a number, or `random`, the
 * default of `npm run test:chaos`). The seed is printed, with the paths of
 * the logs holding the stacks' and the providers' output, so a run can be
 * replayed; the chaos is seeded, its timing against the stack is not, so a
 * replay is the same plan, not the same interleaving.
 */

const JOBS = Number(process.env.CHAOS_JOBS ?? 40);
const SEED =
  process.env.CHAOS_SEED === 'random'
    ? Math.floor(Math.random() * 2 ** 31)
    : Number(process.env.CHAOS_SEED ?? 424_242);
const BIG = JOBS > 60;
/** Items of the batch sent across the main scenario's first kill. */
const BATCH_ITEMS = Math.max(8, Math.round(JOBS / 10));

const MAX_IN_FLIGHT = 3;
// Long enough for a healthy job that draws several submission faults in a row: four timeouts
// with the submit step's retries (2, 4 and 8 s apart) take about 18 s before the provider runs
// it, which a loaded machine reaches; only a stalled job may still be running after this.
const JOB_TIMEOUT_MS = 30_000;
const RECONCILE_INTERVAL_MS = 2000;
// The queue's visibility timeout is six times this: messages a killed stack had received come
// back (and are dropped, their jobs being final) within a minute rather than three.
const DISPATCH_TIMEOUT_SECONDS = 10;
const SIM_JOB_MS = 400;
const KEY = 'chaos-key-5b7e21';
/** The tenant of KEY (LONGHAUL_API_KEYS in chaosEnv). */
const TENANT = 'acme';
/** A second tenant sharing the providers: every other job that needs no upload is its. */
const OTHER_KEY = 'chaos-other-key-8d31c4';
const ADMIN = 'chaos-admin-key-90af3c';
const PROVIDER_SECRET = 'chaos-provider-webhook-secret-1c8d';
const FINAL = ['succeeded', 'failed', 'canceled', 'needs_review'];
const AMBIGUOUS_MODES: readonly FaultMode[] = ['accept-then-drop', 'timeout'];

jest.setTimeout(Math.max(240_000, JOBS * 4000));

/**
 * What the catalog does not say about a provider and the chaos must know:
 * whether asking it about a job gives back the outcome a lost webhook carried.
 * Deepgram's request record holds no transcript (lambdas/providers/deepgram.ts),
 * so a Deepgram job whose callback is lost ends in review at a timeout.
 */
const RECOVERS_LOST_WEBHOOKS: { readonly [P in ProviderName]: boolean } = {
  'longhaul-http': true,
  replicate: true,
  deepgram: false,
  // Nothing to lose: a call's answer is its outcome.
  bedrock: false,
};

/** Each job type's input in the chaos, from a prompt number and an uploaded recording. */
const INPUTS: { readonly [T in JobType]: (n: number, audioRef: string) => Record<string, unknown> } = {
  'image.generate': (n) => ({ prompt: `chaos ${n}` }),
  'audio.transcribe': (_n, audioRef) => ({ audioRef, language: 'en' }),
  // Given a real recording (its ref): see publishUnderChaos.
  'audio.publish': (_n, audioRef) => ({ audioRef, language: 'en' }),
};

/** The types the chaos draws its jobs from: audio.publish has a phase of its own (publishUnderChaos). */
const DRAWN_TYPES = JOB_TYPE_MODULES.filter((module) => module.flow !== 'publish');

/** The length of audio.publish's recording in the chaos, and of its chunks: three chunk jobs each. */
const RECORDING_SECONDS = 24;
const CHUNK_SECONDS = 10;

/**
 * Faults that keep the job's slot until the job timeout has passed: an
 * ambiguous submission to a provider that cannot deduplicate, a stall, and a
 * lost webhook the provider cannot make up for.
 */
const holdsSlot = (provider: ProviderName, mode: FaultMode, settings: Settings): boolean =>
  mode === 'stall' ||
  (AMBIGUOUS_MODES.includes(mode) && !settings.providers[provider].deduplicates) ||
  (mode === 'lose-webhooks' && !RECOVERS_LOST_WEBHOOKS[provider]);

/**
 * The faults a provider can be given, one submission each. A stall only where the provider can be
 * told to stop: the job timeout bounds how long a job may run at its
 * provider, and one that cannot be stopped (Deepgram) is trusted to end on its
 * own, so its slot is given back by the clock; a job it never ended would use
 * capacity Longhaul has handed on.
 */
const faultModesOf = (provider: ProviderName): readonly FaultMode[] =>
  // An outage is a span of time, not one submission's fault: test/e2e/outage.test.ts has its own.
  FAULT_MODES.filter((mode) => mode !== 'outage' && (mode !== 'stall' || PROVIDERS[provider].cancels));

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

/** Ports a stack's first start tries before its failure is the test's. */
const PORT_ATTEMPTS = 3;

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

interface Job {
  readonly id: string;
  readonly type: JobType;
  readonly provider: ProviderName;
  readonly status: string;
  readonly error: { code: string; message: string } | null;
  readonly idempotencyKey: string;
  readonly runAt: string;
  readonly startedAt?: string;
}

interface JobBody {
  readonly type: JobType;
  readonly input: Record<string, unknown>;
  readonly runAt?: string;
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

  /**
   * A stack on a port of its own, which its restarts keep. A free port is
   * free only until someone takes it (the other run's stack, an emulator's
   * own listener): a start that finds it taken tries another.
   */
  static async start(env: Record<string, string>, logFile: string): Promise<Restartable> {
    for (let attempt = 1; ; attempt++) {
      const port = await freePort();
      const stack = new Restartable({ ...env, PORT: String(port) }, temporaryDataDir(), logFile);
      try {
        await stack.up();
        return stack;
      } catch (error) {
        const taken =
          error instanceof LocalStackStartError && error.output.includes(`port ${port} is already in use`);
        if (!taken || attempt === PORT_ATTEMPTS) throw error;
      }
    }
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

  /**
   * SIGKILL to the whole process group, then `whileDown` on the data the
   * dead stack left (its state at the moment of death), then a new stack on
   * the same data.
   */
  async killAndRestart(whileDown?: (dataDir: string) => Promise<void>): Promise<void> {
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
    try {
      await whileDown?.(this.dataDir);
    } finally {
      dead();
    }
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
  const keyOfJob = new Map<string, string>();
  /** The key of the tenant a job belongs to: another tenant's key finds nothing. */
  const keyOf = (id: string): string => keyOfJob.get(id) ?? KEY;
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
    /** One provider's part of the ledger; none while that provider has accepted nothing. */
    providerLedger: async (provider: ProviderName): Promise<ProviderLedger | undefined> =>
      ((await sim('/_sim/ledger')) as Ledger).byProvider?.[provider],
    /** Every charge of one provider, with the job it was for and how that provider job stands. */
    charges: async (provider: ProviderName): Promise<ChargedJob[]> =>
      chargedJobs(providerUrl, provider, ((await sim('/_sim/ledger')) as Ledger).byProvider?.[provider]),
    fault: (mode: FaultMode, provider: ProviderName) => sim('/_sim/faults', { mode, count: 1, provider }),
    configure: (provider: ProviderName, patch: { jobMs: number }) =>
      sim('/_sim/config', { ...patch, provider }),
    /** Submits until accepted; returns the job and whether this answer was a replay. */
    submit: async (idem: string, body: JobBody, key = KEY) => {
      const answer = await request('POST', '/v1/jobs', { idem, body, key });
      if (answer.status !== 202) {
        throw new Error(`submission ${idem} answered ${answer.status}: ${JSON.stringify(answer.body)}`);
      }
      keyOfJob.set((answer.body as Job).id, key);
      return { job: answer.body as Job, replayed: answer.headers.get('idempotent-replayed') === 'true' };
    },
    keyOf,
    job: async (id: string): Promise<Job | undefined> => {
      const answer = await request('GET', `/v1/jobs/${id}`, { key: keyOf(id) });
      return answer.status === 200 ? (answer.body as Job) : undefined;
    },
    /** The job's timeline, as its events are. */
    steps: async (id: string): Promise<{ type: string; step?: string; detail?: string }[]> =>
      (await request('GET', `/v1/jobs/${id}/events`, { key: keyOf(id) })).body?.items ?? [],
    events: async (id: string): Promise<string[]> =>
      ((await request('GET', `/v1/jobs/${id}/events`, { key: keyOf(id) })).body?.items ?? []).map(
        (event: { type: string }) => event.type,
      ),
    /** One provider's slot item: who holds a slot, and the counter beside it. */
    slots: async (provider: ProviderName): Promise<{ holders: string[]; inFlight: number }> => {
      const { endpoints, dynamodb } = await stacks.aws();
      const { Item } = await dynamodb.send(
        new GetCommand({
          TableName: endpoints.jobTableName,
          Key: slotPoolKey(provider),
          ConsistentRead: true,
        }),
      );
      return {
        holders: Item?.holders ? [...(Item.holders as Set<string>)].sort() : [],
        inFlight: Number(Item?.inFlight ?? 0),
      };
    },
    /** A recording for the jobs that transcribe one, uploaded once: its ref. */
    uploadAudio: async (
      bytes: Uint8Array = new TextEncoder().encode('RIFF chaos recording'),
      contentType = 'audio/wav',
    ): Promise<string> => {
      const ticket = await request('POST', '/v1/uploads', {
        body: { contentType, contentLength: bytes.length },
      });
      if (ticket.status !== 201)
        throw new Error(`upload answered ${ticket.status}: ${JSON.stringify(ticket.body)}`);
      const put = await fetch(ticket.body.uploadUrl, {
        method: 'PUT',
        headers: { 'content-type': contentType },
        body: bytes,
      });
      if (!put.ok) throw new Error(`upload PUT answered ${put.status}`);
      return ticket.body.ref as string;
    },
  };
}

type Client = ReturnType<typeof clientOf>;

/**
 * The jobs queues empty: once every job is final, a message left is one a
 * killed stack had received, which comes back after the visibility timeout
 * and is dropped. Returns what was left if it does not.
 */
async function queueViolations(stacks: Restartable, settings: Settings): Promise<string[]> {
  const visibilityMs = queueVisibilityTimeoutSeconds(settings) * 1000;
  let depth = -1;
  const empty = await pollUntil(
    async () => {
      const { endpoints, sqs } = await stacks.aws();
      const depths = await Promise.all(
        Object.values(endpoints.jobQueues).map((queue) => queueDepth(sqs, queue.url)),
      );
      depth = depths.reduce((sum, each) => sum + each, 0);
      return depth === 0;
    },
    { timeoutMs: visibilityMs + 10_000, intervalMs: 1000 },
  ).then(
    () => true,
    () => false,
  );
  return empty ? [] : [`${depth} messages left in the jobs queues`];
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

/** Faults armed together at one provider, back to back. */
interface FaultGroup {
  readonly provider: ProviderName;
  readonly modes: readonly FaultMode[];
}

/** A batch sent across a kill: what its item `n` asks for. */
interface ChaosBatch {
  readonly items: number;
  readonly bodyOf: (n: number) => JobBody;
}

interface ChaosPlan {
  /** The providers the jobs run on. */
  readonly providers: readonly ProviderName[];
  readonly jobs: number;
  /** What job `n` asks for. */
  readonly bodyOf: (n: number) => JobBody;
  /** Faults armed at the simulator: each group at one random moment. */
  readonly faults: readonly FaultGroup[];
  /** Milliseconds over which submissions (and the chaos around them) are spread. */
  readonly windowMs: number;
  readonly kills: number;
  readonly purges: number;
  readonly duplicateDeliveries: number;
  readonly duplicateSubmissionRate: number;
  readonly cancelRate: number;
  /** Share of jobs submitted with a runAt a few seconds ahead: stored scheduled, promoted by the reconciler. */
  readonly scheduledRate: number;
  /** Sent just before the first kill, then again until all of it is accepted. */
  readonly batch?: ChaosBatch;
}

interface ChaosOutcome {
  /** Accepted job ids, by idempotency key. */
  readonly accepted: Map<string, string>;
  /** Ids whose cancel was answered 202. */
  readonly canceled: Set<string>;
  /** Accepted job ids submitted with a runAt ahead. */
  readonly scheduled: Set<string>;
  /** Jobs that held a provider slot when a kill struck: under way, at their provider or on their way there. */
  readonly underWayAtKill: Set<string>;
  readonly replays: number;
  /** The batch's accepted job ids, by idempotency key. */
  readonly batch: Map<string, string>;
}

/** Every fault of the groups, by the provider it was aimed at. */
function faultsByProvider(groups: readonly FaultGroup[]): Map<ProviderName, FaultMode[]> {
  const faults = new Map<ProviderName, FaultMode[]>();
  for (const { provider, modes } of groups) faults.set(provider, [...(faults.get(provider) ?? []), ...modes]);
  return faults;
}

/**
 * Runs the plan: submissions spread over the window, each fault group armed
 * at a random moment in it, duplicate deliveries and purges at random moments,
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
  const scheduled = new Set<string>();
  const underWayAtKill = new Set<string>();
  let batch = new Map<string, string>();
  let replays = 0;
  const started = Date.now();
  const at = (ms: number) => sleep(Math.max(0, started + ms - Date.now()));
  const tasks: Promise<unknown>[] = [];

  for (let i = 0; i < plan.jobs; i++) {
    const idem = `chaos-${SEED}-${i}`;
    const planned = plan.bodyOf(i);
    // Two tenants share the providers; an upload is the first tenant's, so its jobs stay there.
    const key = i % 2 === 1 && !('audioRef' in planned.input) ? OTHER_KEY : KEY;
    const when = rng.int(0, plan.windowMs);
    const repeat = rng.chance(plan.duplicateSubmissionRate) ? rng.int(0, 3000) : undefined;
    const cancelAfter = rng.chance(plan.cancelRate) ? rng.int(0, 4000) : undefined;
    // Due a few seconds after it is sent (a repeat sends the same runAt): a kill may fall between the two.
    const runIn = rng.chance(plan.scheduledRate) ? rng.int(500, 5000) : undefined;
    const body =
      runIn === undefined ? planned : { ...planned, runAt: new Date(started + when + runIn).toISOString() };
    tasks.push(
      (async () => {
        await at(when);
        const first = client.submit(idem, body, key);
        // The same request again: at once (racing the first) or a little later, as a client retrying on a timeout.
        const second =
          repeat === undefined ? undefined : sleep(repeat).then(() => client.submit(idem, body, key));
        const { job } = await first;
        accepted.set(idem, job.id);
        if (runIn !== undefined) scheduled.add(job.id);
        if (second) {
          const again = await second;
          if (again.job.id !== job.id)
            throw new Error(`key ${idem} answered ${job.id}, then ${again.job.id}`);
          if (again.replayed) replays++;
        }
        if (cancelAfter !== undefined) {
          await sleep(cancelAfter);
          const answer = await client.request('POST', `/v1/jobs/${job.id}/cancel`, {
            key: client.keyOf(job.id),
          });
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
        for (const mode of group.modes) await client.fault(mode, group.provider);
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
                // Any provider's queue: the dispatcher takes any job from any of them.
                QueueUrl: rng.pick(Object.values(endpoints.jobQueues)).url,
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
        const [provider, queue] = rng.pick(Object.entries(endpoints.jobQueues));
        await sqs
          .send(new PurgeQueueCommand({ QueueUrl: queue.url }))
          .then(() => log(`purged the jobs queue of ${provider} at ${Date.now() - started} ms`))
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
      for (const [index, when] of killTimes.entries()) {
        await at(when);
        await pollUntil(async () => (await client.ledger()).submissions.length >= 1, {
          timeoutMs: 60_000,
          description: 'work at the provider before the kill',
        });
        const across = index === 0 && plan.batch ? await batchUnderWay(plan.batch, stacks, log) : undefined;
        const { endpoints } = await stacks.aws();
        const killedAt = Date.now() - started;
        // Who held a slot is read from what the dead stack left: a job that took one a moment before
        // the kill may have been cut off on its way to the provider too.
        await stacks.killAndRestart(async (dataDir) => {
          const underWay = await slotHoldersAtRest(dataDir, endpoints, plan.providers);
          for (const holder of underWay) underWayAtKill.add(jobIdOf(holder));
          log(`SIGKILL at ${killedAt} ms, ${underWay.length} job(s) under way`);
        });
        log(`restarted at ${Date.now() - started} ms`);
        if (across) batch = await retryBatch(across, client, log);
      }
    })(),
  );

  await Promise.all(tasks);
  return { accepted, canceled, scheduled, underWayAtKill, replays, batch };
}

/** The holders of the providers' slots in a stopped stack's data: the slot items as its last write left them. */
async function slotHoldersAtRest(
  dataDir: string,
  endpoints: LocalEndpoints,
  providers: readonly ProviderName[],
): Promise<string[]> {
  const store = await startDynamoDbEmulator({ host: '127.0.0.1', path: dynamoDbDir(dataDir) });
  const dynamodb = DynamoDBDocumentClient.from(
    new DynamoDBClient({
      region: endpoints.region,
      endpoint: store.endpoint,
      credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
    }),
  );
  try {
    const items = await Promise.all(
      providers.map((provider) =>
        dynamodb.send(
          new GetCommand({
            TableName: endpoints.jobTableName,
            Key: slotPoolKey(provider),
            ConsistentRead: true,
          }),
        ),
      ),
    );
    return items.flatMap(({ Item }) => (Item?.holders ? [...(Item.holders as Set<string>)] : []));
  } finally {
    dynamodb.destroy();
    await store.stop();
  }
}

/** A batch's items, and the answer to its first sending if one came before the kill. */
interface BatchAcrossKill {
  readonly items: readonly ({ readonly idempotencyKey: string } & JobBody)[];
  readonly firstAnswer: Promise<string>;
}

/**
 * Sends a batch once and returns when the stack has begun to store it (one
 * of its jobs is in the table) or has answered, whichever comes first: the
 * kill that follows strikes in the middle of the request or just after it.
 */
async function batchUnderWay(
  batch: ChaosBatch,
  stacks: Restartable,
  log: (line: string) => void,
): Promise<BatchAcrossKill> {
  const items = Array.from({ length: batch.items }, (_, n) => ({
    idempotencyKey: `chaos-${SEED}-batch-${n}`,
    ...batch.bodyOf(n),
  }));
  const stack = await stacks.up();
  const { dynamodb, endpoints } = await stacks.aws();
  let answered = false;
  const firstAnswer = fetch(`${stack.baseUrl}/v1/jobs/batch`, {
    method: 'POST',
    headers: { 'x-api-key': KEY, 'content-type': 'application/json' },
    body: JSON.stringify({ items }),
  }).then(
    (response) => `answered ${response.status}`,
    (error: Error) => `cut off (${error.message})`,
  );
  void firstAnswer.then(() => {
    answered = true;
  });
  // Items are created in order, 25 at a time: the first is among the first stored.
  const first = { pk: deriveJobId(TENANT, items[0]?.idempotencyKey ?? ''), sk: JOB_ITEM_SORT_KEY };
  await pollUntil(
    async () =>
      answered ||
      (await dynamodb
        .send(new GetCommand({ TableName: endpoints.jobTableName, Key: first, ConsistentRead: true }))
        .then(
          ({ Item }) => Item !== undefined,
          () => false,
        )),
    { timeoutMs: 30_000, intervalMs: 5, description: 'the batch to reach the stack' },
  );
  log(`batch of ${items.length} ${answered ? 'answered' : 'being stored'} at the kill`);
  return { items, firstAnswer };
}

/**
 * The client's side of a batch cut off by a kill: the same batch again until
 * every item is accepted. An item whose job was stored but not yet enqueued
 * answers 409 (key in use) until the reconciler has sent it. Returns each
 * key's job id; an item refused for good is an error.
 */
async function retryBatch(
  { items, firstAnswer }: BatchAcrossKill,
  client: Client,
  log: (line: string) => void,
): Promise<Map<string, string>> {
  log(`the batch's first sending: ${await firstAnswer}`);
  let sendings = 1;
  const outcome = await pollUntil(
    async () => {
      sendings++;
      const { status, body } = await client.request('POST', '/v1/jobs/batch', { body: { items } });
      if (status !== 200) return { refused: `the batch answered ${status}: ${JSON.stringify(body)}` };
      const answer: { status: number; idempotencyKey: string; job?: Job; problem?: { code: string } }[] =
        body.items;
      const waiting = answer.filter(
        (item) =>
          (item.status === 409 && item.problem?.code === 'idempotency-key-in-use') || item.status === 429,
      );
      const refused = answer.filter((item) => item.status !== 202 && !waiting.includes(item));
      if (refused.length > 0) return { refused: `batch items refused: ${JSON.stringify(refused)}` };
      // Items stored but not yet sent wait for the reconciler: send the batch again.
      if (waiting.length > 0) return undefined;
      return { accepted: new Map(answer.map((item) => [item.idempotencyKey, item.job?.id ?? ''])) };
    },
    { timeoutMs: 120_000, intervalMs: 250, description: 'every item of the batch to be accepted' },
  );
  if ('refused' in outcome) throw new Error(outcome.refused);
  log(`batch of ${items.length} accepted at its sending ${sendings}`);
  return outcome.accepted;
}
/** How long the simulator runs the jobs canceled at their provider: long enough for the cancel to land first. */
const CANCELED_JOB_MS = 4000;

/** A job canceled while its provider ran it. */
interface CanceledAtProvider {
  readonly id: string;
  readonly provider: ProviderName;
  /** Whether the provider's completion webhook for it was lost (a fault). */
  readonly webhookLost: boolean;
  /** The cancel's answer. */
  readonly answer: { readonly status: number; readonly jobStatus: string | undefined };
  /** How the provider job stood just after the cancel, and whether the job held its slot just before that. */
  readonly providerState: ChargedJob['state'] | undefined;
  readonly slotHeld: boolean;
  /** Milliseconds from the cancel until its slot was given back; undefined if it was not. */
  readonly released: Promise<number | undefined>;
}

/**
 * Before the chaos, at each provider, two jobs canceled once the provider has
 * accepted them, with the provider's jobs made longer so that it still runs
 * them then: one whose completion webhook arrives, one whose webhook is lost.
 * Nothing else runs at the provider meanwhile, so the lost webhook is that job's.
 */
async function cancelAtProviders(
  client: Client,
  providers: readonly ProviderName[],
  bodyOf: (provider: ProviderName) => JobBody,
): Promise<CanceledAtProvider[]> {
  const perProvider = await Promise.all(
    providers.map(async (provider) => {
      await client.configure(provider, { jobMs: CANCELED_JOB_MS });
      const canceled: CanceledAtProvider[] = [];
      for (const webhookLost of [false, true]) {
        if (webhookLost) await client.fault('lose-webhooks', provider);
        const idem = `chaos-${SEED}-cancel-${provider}-${webhookLost ? 'webhook-lost' : 'webhook-kept'}`;
        const { job } = await client.submit(idem, bodyOf(provider));
        await pollUntil(async () => (await client.events(job.id)).includes('provider.accepted'), {
          timeoutMs: 60_000,
          intervalMs: 100,
          description: `${job.id} to be accepted by ${provider}`,
        });
        const answer = await client.request('POST', `/v1/jobs/${job.id}/cancel`);
        const canceledAt = Date.now();
        // The slot first, then the provider: a provider job still running after the read ran during it.
        const holds = async () => (await client.slots(provider)).holders.some((h) => jobIdOf(h) === job.id);
        const slotHeld = await holds();
        const providerState = (await client.charges(provider)).find((c) => c.jobId === job.id)?.state;
        canceled.push({
          id: job.id,
          provider,
          webhookLost,
          answer: { status: answer.status, jobStatus: answer.body?.status },
          providerState,
          slotHeld,
          // Long enough for the clock to give it back through kills and restarts.
          released: pollUntil(async () => !(await holds()), {
            timeoutMs: 4 * JOB_TIMEOUT_MS,
            intervalMs: 250,
          }).then(
            () => Date.now() - canceledAt,
            () => undefined,
          ),
        });
      }
      await client.configure(provider, { jobMs: SIM_JOB_MS });
      return canceled;
    }),
  );
  return perProvider.flat();
}

/**
 * What a cancel did at the provider. Each job was canceled (202) while its
 * provider ran it and kept its slot while the provider did. A provider that
 * can stop jobs stopped it; one that cannot (Deepgram) ran it to its end, and
 * the slot came back once it was over: as soon as its completion webhook
 * said so, well before the job timeout, or, that webhook lost, by the clock.
 */
async function cancelViolations(
  canceled: readonly CanceledAtProvider[],
  charges: ReadonlyMap<ProviderName, readonly ChargedJob[]>,
): Promise<string[]> {
  const violations: string[] = [];
  for (const job of canceled) {
    const what = `${job.id} canceled at ${job.provider}${job.webhookLost ? ' (webhook lost)' : ''}`;
    const stops = PROVIDERS[job.provider].cancels;
    if (job.answer.status !== 202 || job.answer.jobStatus !== 'canceled')
      violations.push(`${what}: the cancel answered ${job.answer.status} ${job.answer.jobStatus}`);
    if (job.providerState === undefined) violations.push(`${what}: never charged by the provider`);
    if (job.providerState === 'running' && !job.slotHeld)
      violations.push(`${what}: its slot was free while the provider still ran it`);
    if (!stops && job.providerState !== 'running')
      violations.push(`${what}: the provider was ${job.providerState} just after the cancel, not running`);
    const end = charges.get(job.provider)?.find((c) => c.jobId === job.id)?.state;
    if (end !== (stops ? 'canceled' : 'ended'))
      violations.push(`${what}: the provider job is ${end}, not ${stops ? 'canceled' : 'ended'}`);
    const released = await job.released;
    if (released === undefined) violations.push(`${what}: its slot never came back`);
    else if (!stops && !job.webhookLost && released >= JOB_TIMEOUT_MS)
      violations.push(
        `${what}: its slot came back ${released} ms after the cancel, not when the provider ended`,
      );
  }
  return violations;
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

function chaosEnv(idempotent: boolean): Record<string, string> {
  return {
    PROVIDER_WEBHOOK_SECRET: PROVIDER_SECRET,
    SIM_IDEMPOTENT: idempotent ? '1' : '0',
    PROVIDER_IDEMPOTENT: idempotent ? '1' : '0',
    LONGHAUL_API_KEYS: `${KEY}:acme,${OTHER_KEY}:globex`,
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
    TRANSCRIBE_CHUNK_SECONDS: String(CHUNK_SECONDS),
  };
}

/** What one provider went through, to explain how its jobs ended. */
interface ProviderChaos {
  readonly provider: ProviderName;
  /** The faults aimed at it. */
  readonly faults: readonly FaultMode[];
  readonly limit: number;
  readonly deduplicates: boolean;
  /** Jobs that held a slot when a kill struck. */
  readonly underWayAtKill: ReadonlySet<string>;
}

/**
 * Every job of one provider that did not succeed is explained by what was
 * done to it: a failure or a review carries a code that an injected fault
 * causes, no more often than that fault was injected. A kill explains a
 * review of a job under way when it struck: with a provider that cannot
 * deduplicate, its submission may have been cut short; with one that cannot
 * make up for a lost webhook, its completion may have been lost; and the
 * restart may have pushed its resends or its run past the job timeout. A
 * definite refusal (4xx) means nothing was charged; only a job that failed at
 * the provider may have failed after a charge, so a job the provider accepted
 * is never `failed` by a guess. Returns the violations.
 */
function unexplained(finals: readonly Job[], chaos: ProviderChaos, charged: ReadonlySet<string>): string[] {
  const count = (...modes: FaultMode[]) => chaos.faults.filter((mode) => modes.includes(mode)).length;
  const failedAtProvider = /^(generation|provider)_failed$/;
  const causes = [
    { code: /^provider_rejected_4\d\d$/, status: 'failed', limit: count('reject') },
    { code: failedAtProvider, status: 'failed', limit: count('fail-job') },
    // Six tries at a provider that answers 503 before the step gives up (lib/constructs/job-workflow.ts).
    { code: /^provider_unavailable$/, status: 'failed', limit: Math.floor(count('unavailable') / 6) },
    {
      code: /^(provider|job)_timeout$/,
      status: 'needs_review',
      limit: count('stall') + (RECOVERS_LOST_WEBHOOKS[chaos.provider] ? 0 : count('lose-webhooks')),
    },
    { code: /^ambiguous_submission$/, status: 'needs_review', limit: count(...AMBIGUOUS_MODES) },
  ];
  const problems: string[] = [];
  const byCause = new Map<(typeof causes)[number], Job[]>();
  for (const job of finals) {
    if (job.status === 'succeeded' || job.status === 'canceled') continue;
    const code = job.error?.code ?? '(none)';
    const cause = causes.find((c) => c.code.test(code));
    if (!cause || cause.status !== job.status) problems.push(`${job.id} is ${job.status} with ${code}`);
    else if (job.status !== 'needs_review' || !chaos.underWayAtKill.has(job.id))
      byCause.set(cause, [...(byCause.get(cause) ?? []), job]);
    if (job.status === 'failed' && !failedAtProvider.test(code) && charged.has(job.id))
      problems.push(`${job.id} failed (${code}) although ${chaos.provider} accepted and charged it`);
  }
  for (const [cause, jobs] of byCause) {
    if (jobs.length > cause.limit)
      problems.push(
        `${jobs.length} jobs at ${chaos.provider} with ${cause.code.source}, more than the ${cause.limit} its faults explain`,
      );
  }
  return problems;
}

/**
 * Slots, at every provider: once every job is final, only a job whose
 * provider may still be running it may hold one: one in review (after an
 * ambiguous submission, or at a provider that cannot stop it), or one
 * canceled at a provider that cannot stop it. The reconciler frees those
 * within the job timeout and a few periods. Throughout, the counter equals the
 * number of holders. Returns what did not hold.
 */
async function slotViolations(
  client: Client,
  providers: readonly ProviderName[],
  jobs: ReadonlyMap<string, Job>,
  log: (line: string) => void,
  chunkJobs: ReadonlyMap<string, Job> = new Map(),
): Promise<string[]> {
  const violations: string[] = [];
  await Promise.all(
    providers.map(async (provider) => {
      const stops = PROVIDERS[provider].cancels;
      const mayHold = new Set(
        [...jobs.values()]
          .filter(
            (job) =>
              job.provider === provider &&
              ((job.status === 'needs_review' && (!stops || job.error?.code === 'ambiguous_submission')) ||
                (job.status === 'canceled' && !stops)),
          )
          .map((job) => job.id),
      );
      // A chunk job holds its slot as its parent would: one in review may, while its provider may run it.
      for (const [chunk, parent] of chunkJobs) if (mayHold.has(parent.id)) mayHold.add(chunk);
      let seen = await client.slots(provider);
      const within = async (timeoutMs: number, done: (slots: typeof seen) => boolean) =>
        pollUntil(
          async () => {
            seen = await client.slots(provider);
            return done(seen);
          },
          { timeoutMs, intervalMs: 250 },
        ).then(
          () => true,
          () => false,
        );
      if (!(await within(20_000, (slots) => slots.holders.every((holder) => mayHold.has(jobIdOf(holder))))))
        violations.push(
          `${provider} slots still held by jobs its provider cannot be running: ${JSON.stringify(seen)}`,
        );
      if (seen.inFlight !== seen.holders.length)
        violations.push(`${provider} slot counter disagrees with holders: ${JSON.stringify(seen)}`);
      log(
        `${provider} slots held once final: ${seen.holders.length} (jobs that may hold one: ${mayHold.size})`,
      );
      if (
        !(await within(
          JOB_TIMEOUT_MS + 4 * RECONCILE_INTERVAL_MS + 10_000,
          (slots) => slots.holders.length === 0,
        ))
      )
        violations.push(`${provider} slots never freed: ${JSON.stringify(seen)}`);
      else if (seen.inFlight !== 0)
        violations.push(`no ${provider} holder left but the counter says ${seen.inFlight}`);
    }),
  );
  return violations;
}

/**
 * Whether a job's provider charges the job itself. audio.publish sends
 * nothing to its provider: its chunk jobs are charged there in its stead,
 * and its passages at Bedrock, so a review of its own (a kill mid-embedding)
 * is an unknown outcome at Bedrock, checked with the embeddings.
 */
const chargedInItsOwnName = (job: Job): boolean => job.type !== 'audio.publish';

/**
 * Whether one provider's charges match the jobs: none for a job that was not
 * accepted, at most one per job (a job charged twice was sent twice), one for
 * every job that succeeded there; the provider never ran more than its limit
 * at once, and no provider job is left running: whatever Longhaul gave up on
 * was stopped or has ended.
 */
function chargeViolations(
  chaos: ProviderChaos,
  charges: readonly ChargedJob[],
  ledger: ProviderLedger | undefined,
  ids: readonly string[],
  finals: readonly Job[],
): string[] {
  const { provider } = chaos;
  const violations: string[] = [];
  const perJob = countBy(charges, (charge) => charge.jobId ?? '(none)');
  for (const [jobId, times] of Object.entries(perJob)) {
    if (!ids.includes(jobId))
      violations.push(`${provider} charged ${times} time(s) for ${jobId}, which is no accepted job`);
    else if (times > 1) violations.push(`${jobId} charged ${times} times at ${provider}`);
  }
  for (const job of finals)
    if (
      job.provider === provider &&
      chargedInItsOwnName(job) &&
      job.status === 'succeeded' &&
      !perJob[job.id]
    )
      violations.push(`${job.id} succeeded without a charge at ${provider}`);
  const maxConcurrent = ledger?.maxConcurrent ?? 0;
  if (maxConcurrent > chaos.limit)
    violations.push(`${maxConcurrent} jobs ran at ${provider} at once; its limit is ${chaos.limit}`);
  const running = charges.filter((charge) => charge.state === 'running');
  if (running.length > 0)
    violations.push(
      `${provider} still runs ${running.map((c) => `${c.providerJobId} (${c.jobId})`).join(', ')}`,
    );
  return violations;
}

/**
 * What one provider charged and how its jobs ended, checked against what it
 * went through; with a provider that cannot deduplicate, an ambiguous
 * submission was accepted, and charged, once, unless a kill cut it short
 * before it was sent. Returns the violations, and the charges for further checks.
 */
async function providerViolations(
  client: Client,
  chaos: ProviderChaos,
  ids: readonly string[],
  finals: readonly Job[],
  log: (line: string) => void,
): Promise<{ violations: string[]; charges: ChargedJob[] }> {
  const ledger = await client.providerLedger(chaos.provider);
  const charges = await client.charges(chaos.provider);
  log(`ledger at ${chaos.provider}: ${charges.length} charges, maxConcurrent ${ledger?.maxConcurrent ?? 0}`);
  const charged = new Set(charges.flatMap((charge) => (charge.jobId ? [charge.jobId] : [])));
  const here = finals.filter((job) => job.provider === chaos.provider);
  const violations = [
    ...chargeViolations(chaos, charges, ledger, ids, finals),
    ...unexplained(here, chaos, charged),
  ];
  if (!chaos.deduplicates) {
    const uncharged = here.filter(
      (job) => chargedInItsOwnName(job) && job.error?.code === 'ambiguous_submission' && !charged.has(job.id),
    );
    for (const job of uncharged)
      if (!chaos.underWayAtKill.has(job.id))
        violations.push(`${job.id} is an ambiguous review at ${chaos.provider}, but was never charged`);
  }
  return { violations, charges };
}

/**
 * No key of the batch made a second job: the tenant's jobs under the batch's
 * keys are exactly the ones its answers named.
 */
async function batchDuplicates(client: Client, batch: ReadonlyMap<string, string>): Promise<string[]> {
  const found: Job[] = [];
  let cursor: string | undefined;
  do {
    const page = await client.request('GET', `/v1/jobs?limit=100${cursor ? `&cursor=${cursor}` : ''}`);
    found.push(...(page.body.items as Job[]).filter((job) => batch.has(job.idempotencyKey)));
    cursor = page.body.nextCursor ?? undefined;
  } while (cursor);
  const extra = found.filter((job) => batch.get(job.idempotencyKey) !== job.id);
  const missing = [...batch.values()].filter((id) => !found.some((job) => job.id === id));
  return [
    ...extra.map((job) => `${job.id} is a second job for the batch key ${job.idempotencyKey}`),
    ...missing.map((id) => `${id}, a job of the batch, is not in its tenant's list`),
  ];
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

/** A job submitted with a runAt ahead never starts before it, kills and restarts or not. */
function earlyStarts(finals: readonly Job[], scheduled: ReadonlySet<string>): string[] {
  return finals
    .filter((job) => scheduled.has(job.id) && job.startedAt !== undefined && job.startedAt < job.runAt)
    .map((job) => `${job.id} started at ${job.startedAt}, before its runAt ${job.runAt}`);
}

/** One scenario's provider and stack, and its log. */
/** What the audio.publish phase left for the checks: its jobs, the faults it dealt Deepgram, and what each must end as. */
interface Published {
  readonly jobs: readonly string[];
  /** Jobs the chaos's own requests canceled: a superseded version, a deleted item's version. */
  readonly canceled: readonly string[];
  /** The media items' invariants, checked once everything has settled. */
  readonly media: MediaChaos;
  readonly faults: readonly FaultMode[];
  /** What each may end as: one of `statuses`, with an error code `code` matches if given. */
  readonly expected: ReadonlyMap<string, { readonly statuses: readonly string[]; readonly code?: RegExp }>;
}

/**
 * audio.publish through the chaos's worst, before the rest of it: a job whose
 * stack is killed (SIGKILL) in the middle of its transcode, then one of whose
 * chunks fails at Deepgram (its chunk job is made again under a new key), so
 * it still succeeds; and a job one of whose chunk's completion webhook is
 * lost, which Deepgram cannot give back: that chunk ends in review at the
 * timeout, and its parent with it. The rest of the chaos runs on top of the
 * second.
 */
async function publishUnderChaos(
  client: Client,
  stacks: Restartable,
  log: (line: string) => void,
  canceled: readonly CanceledAtProvider[],
): Promise<Published> {
  // The jobs canceled at their providers first give their slots back as their providers end them:
  // the kill below must not cut off the webhook that tells.
  await pollUntil(
    async () => {
      for (const { id, provider } of canceled.filter((c) => !c.webhookLost))
        if ((await client.slots(provider)).holders.some((holder) => jobIdOf(holder) === id)) return false;
      return true;
    },
    { timeoutMs: 60_000, intervalMs: 250, description: 'the jobs canceled at their providers to end there' },
  );
  const file = join(tmpdir(), `chaos-recording-${SEED}-${process.pid}.m4a`);
  await generateTestAudio(file, { seconds: RECORDING_SECONDS, kind: 'speechlike' });
  const audioRef = await client.uploadAudio(readFileSync(file), 'audio/mp4');
  rmSync(file, { force: true });
  const body: JobBody = { type: 'audio.publish', input: INPUTS['audio.publish'](0, audioRef) };
  const deepgramCharges = async () => (await client.providerLedger('deepgram'))?.submissions.length ?? 0;

  const { job: killed } = await client.submit(`chaos-${SEED}-publish-killed`, body);
  await pollUntil(
    async () =>
      (await client.steps(killed.id)).some((e) => e.type === 'step.started' && e.step === 'transcode'),
    { timeoutMs: 60_000, intervalMs: 20, description: 'the transcode under way' },
  );
  await stacks.killAndRestart();
  log(`killed in the middle of ${killed.id}'s transcode`);
  await client.fault('fail-job', 'deepgram');
  await pollUntil(async () => FINAL.includes((await client.job(killed.id))?.status ?? ''), {
    timeoutMs: 120_000,
    intervalMs: 250,
    description: `${killed.id} to be final`,
  });

  // A recording that says words of its own, killed while its passages are being embedded.
  const spoken = join(tmpdir(), `chaos-spoken-${SEED}-${process.pid}.wav`);
  await generateTestAudio(spoken, {
    seconds: RECORDING_SECONDS,
    kind: 'speechlike',
    comment: `Chaos ${SEED} begins with a lamp on a stand and a city on a hill. ${'The light is not hidden. '.repeat(6)}The salt keeps its taste, ${SEED} times over. The seed falls on good soil and grows.`,
  });
  const spokenRef = await client.uploadAudio(readFileSync(spoken), 'audio/wav');
  rmSync(spoken, { force: true });
  const { job: embedding } = await client.submit(`chaos-${SEED}-publish-embedding-killed`, {
    type: 'audio.publish',
    input: INPUTS['audio.publish'](0, spokenRef),
  });
  await pollUntil(
    async () => (await client.steps(embedding.id)).some((e) => e.type === 'embedding.submitted'),
    { timeoutMs: 90_000, intervalMs: 20, description: 'the passages being embedded' },
  );
  await stacks.killAndRestart();
  log(`killed in the middle of ${embedding.id}'s embedding`);
  await pollUntil(async () => FINAL.includes((await client.job(embedding.id))?.status ?? ''), {
    timeoutMs: 120_000,
    intervalMs: 250,
    description: `${embedding.id} to be final`,
  });

  const media = await mediaUnderChaos(client, stacks, log);

  const { job: lost } = await client.submit(`chaos-${SEED}-publish-lost`, body);
  const before = await deepgramCharges();
  await client.fault('lose-webhooks', 'deepgram');
  // The fault is dealt to the next submission at Deepgram: one of this job's chunks. The chaos's own
  // faults are armed once every chunk is at Deepgram, so none of them meets a chunk.
  await pollUntil(async () => (await deepgramCharges()) >= before + RECORDING_SECONDS / CHUNK_SECONDS, {
    timeoutMs: 60_000,
    intervalMs: 100,
    description: `every chunk of ${lost.id} at Deepgram`,
  });
  log(
    `audio.publish: ${killed.id} killed mid-transcode with a failing chunk, ${lost.id} with a lost chunk webhook`,
  );
  return {
    jobs: [killed.id, embedding.id, lost.id, media.superseded, media.current, media.deletedVersion],
    canceled: [media.superseded, media.deletedVersion],
    media,
    faults: ['fail-job', 'lose-webhooks'],
    expected: new Map([
      [media.superseded, { statuses: ['canceled'] }],
      [media.current, { statuses: ['succeeded'] }],
      [media.deletedVersion, { statuses: ['canceled'] }],
      [killed.id, { statuses: ['succeeded'] }],
      // Killed with a call at Bedrock: that call's outcome is unknown, and Bedrock cannot deduplicate.
      [embedding.id, { statuses: ['succeeded', 'needs_review'], code: /^ambiguous_submission$/ }],
      [lost.id, { statuses: ['needs_review'], code: /^(provider|job)_timeout$/ }],
    ]),
  };
}

interface MediaChaos {
  readonly itemId: string;
  readonly deletedItemId: string;
  readonly superseded: string;
  readonly current: string;
  readonly deletedVersion: string;
}

/**
 * A media item through the chaos: its second version is started while its
 * first transcodes (the first is superseded), the stack is killed while the
 * second transcodes, and another item is deleted while its version publishes.
 */
async function mediaUnderChaos(
  client: Client,
  stacks: Restartable,
  log: (line: string) => void,
): Promise<MediaChaos> {
  // Words of its own, so its passages are told apart from the other recordings' at Bedrock.
  const file = join(tmpdir(), `chaos-media-${SEED}-${process.pid}.wav`);
  await generateTestAudio(file, {
    seconds: RECORDING_SECONDS,
    kind: 'speechlike',
    comment: `Media ${SEED}: the sower went out to sow. ${'Some seed fell on the path. '.repeat(6)}The mustard seed grows into a tree, ${SEED} branches wide.`,
  });
  const audioRef = await client.uploadAudio(readFileSync(file), 'audio/wav');
  rmSync(file, { force: true });
  const create = async (name: string, title: string): Promise<string> => {
    const answer = await client.request('POST', '/v1/media', {
      idem: `chaos-${SEED}-${name}`,
      body: { title },
    });
    if (answer.status !== 201) throw new Error(`media ${name} answered ${answer.status}`);
    return answer.body.id as string;
  };
  const publish = async (itemId: string, name: string): Promise<string> => {
    const answer = await client.request('POST', `/v1/media/${itemId}/versions`, {
      idem: `chaos-${SEED}-${name}`,
      body: { audioRef },
    });
    if (answer.status !== 202) throw new Error(`version ${name} answered ${answer.status}`);
    return new URL(answer.headers.get('location') ?? '', 'http://x').pathname.split('/').at(-1) as string;
  };
  const transcoding = (jobId: string) =>
    pollUntil(
      async () =>
        (await client.steps(jobId)).some((e) => e.type === 'step.started' && e.step === 'transcode'),
      { timeoutMs: 60_000, intervalMs: 20, description: `${jobId}'s transcode under way` },
    );
  const itemId = await create('media', 'Chaos sermon');
  const superseded = await publish(itemId, 'media-v1');
  await transcoding(superseded);
  const current = await publish(itemId, 'media-v2');
  await transcoding(current);
  await stacks.killAndRestart();
  log(`killed in the middle of ${current}'s transcode, the version that superseded ${superseded}`);
  const deletedItemId = await create('media-gone', 'Taken down');
  const deletedVersion = await publish(deletedItemId, 'media-gone-v1');
  await transcoding(deletedVersion);
  const deleted = await client.request('DELETE', `/v1/media/${deletedItemId}`);
  if (deleted.status !== 204) throw new Error(`delete answered ${deleted.status}`);
  log(`media: ${itemId} v1 ${superseded} superseded by v2 ${current}; ${deletedItemId} deleted mid-publish`);
  // Done before the next publish, whose chunk the next Deepgram fault is aimed at.
  for (const id of [superseded, current, deletedVersion]) {
    await pollUntil(async () => FINAL.includes((await client.job(id))?.status ?? ''), {
      timeoutMs: 120_000,
      intervalMs: 250,
      description: `${id} to be final`,
    });
  }
  return { itemId, deletedItemId, superseded, current, deletedVersion };
}

/**
 * What the media items ended as: the newest version current, the deleted
 * item gone, and nothing left of a superseded or deleted version in the
 * output bucket (its vectors are `embeddingViolations`'s to find).
 */
async function mediaViolations(client: Client, stacks: Restartable, media: MediaChaos): Promise<string[]> {
  const violations: string[] = [];
  const item = await client.request('GET', `/v1/media/${media.itemId}`);
  if (item.body?.current?.jobId !== media.current)
    violations.push(
      `media ${media.itemId} serves ${item.body?.current?.jobId}, not its newest version ${media.current}`,
    );
  if ((await client.request('GET', `/v1/media/${media.deletedItemId}`)).status !== 404)
    violations.push(`media ${media.deletedItemId} was deleted but is still there`);
  const { endpoints } = await stacks.aws();
  const left = async () => {
    const found: string[] = [];
    for (const jobId of [media.superseded, media.deletedVersion]) {
      const page = await s3Client(endpoints).send(
        new ListObjectsV2Command({
          Bucket: endpoints.outputBucketName,
          Prefix: `outputs/${encodeURIComponent(TENANT)}/${jobId}/`,
        }),
      );
      if ((page.KeyCount ?? 0) > 0)
        found.push(`${page.KeyCount} outputs of ${jobId}, superseded or deleted, are left`);
    }
    return found;
  };
  // The reconciler retires them on its next passes once their work has stopped.
  const orphans = await pollUntil(async () => ((await left()).length === 0 ? [] : undefined), {
    timeoutMs: 60_000,
    intervalMs: 500,
    description: 'the outputs of superseded and deleted versions to go',
  }).catch(async () => left());
  return [...violations, ...orphans];
}

/**
 * Resumes every job that failed at its last step (the injected fault of an
 * unusable output, after the provider was paid) and waits for each to settle
 * again, in `jobs`. Answers the ids resumed.
 */
async function resumeFailedAtLastStep(
  client: Client,
  jobs: Map<string, Job>,
  log: (line: string) => void,
): Promise<{ readonly ids: string[]; readonly refused: string[] }> {
  const resumed = new Set<string>();
  const refused: string[] = [];
  // The fault meets the first jobs to reach finalize in each life of the stack, a resumed one too:
  // a job it meets again is resumed again.
  for (let round = 0; round < 3; round++) {
    const failed = [...jobs.values()].filter(
      (job) => job.status === 'failed' && job.error?.code === 'output_invalid',
    );
    if (failed.length === 0) break;
    const ids: string[] = [];
    for (const job of failed) {
      const answer = await client.request('POST', `/v1/jobs/${job.id}/resume`, { key: client.keyOf(job.id) });
      if (answer.status !== 202) {
        refused.push(`resume of ${job.id} answered ${answer.status}: ${JSON.stringify(answer.body)}`);
        continue;
      }
      resumed.add(job.id);
      ids.push(job.id);
    }
    for (const [id, job] of await settleAll(client, ids, 150_000)) jobs.set(id, job);
    log(`resumed ${ids.length} jobs failed at their last step: ${ids.join(', ')}`);
    if (ids.length === 0) break;
  }
  return { ids: [...resumed], refused };
}

/** Each job resumed from its last step succeeded (its charges are `providerViolations`'s to count). */
function resumeViolations(
  resumed: { readonly ids: readonly string[]; readonly refused: readonly string[] },
  jobs: ReadonlyMap<string, Job>,
): string[] {
  if (resumed.ids.length === 0)
    return ['no job failed at its last step, so none was resumed', ...resumed.refused];
  return [
    ...resumed.refused,
    ...resumed.ids
      .map((id) => jobs.get(id))
      .filter((job) => job?.status !== 'succeeded')
      .map((job) => `${job?.id} was resumed from its last step but is ${job?.status} (${job?.error?.code})`),
  ];
}

/** The audio.publish jobs ended as their faults say: the one killed mid-transcode succeeded, the other is in review. */
function publishViolations(finals: readonly Job[], published: Published): string[] {
  return [...published.expected].flatMap(([id, expected]) => {
    const job = finals.find((final) => final.id === id);
    const matches =
      expected.statuses.includes(job?.status ?? '') &&
      (!expected.code || job?.status === 'succeeded' || expected.code.test(job?.error?.code ?? ''));
    return matches
      ? []
      : [
          `audio.publish ${id} is ${job?.status} (${job?.error?.code}), not ${expected.statuses.join(' or ')}`,
        ];
  });
}

/**
 * What publishing left in the search index and at Bedrock, whatever the kill
 * cut short: every vector belongs to a publish job that succeeded (none of a
 * failed, canceled or reviewed one, none left over), each such job has one
 * per passage, and no passage was billed by Bedrock more often than it occurs
 * (the ledger keeps a digest of each text a call read).
 */
async function embeddingViolations(
  client: Client,
  stacks: Restartable,
  finals: readonly Job[],
  log: (line: string) => void,
): Promise<string[]> {
  const { endpoints } = await stacks.aws();
  const s3 = s3Client(endpoints);
  const publishes = finals.filter((job) => job.type === 'audio.publish');
  const occurs = new Map<string, number>();
  const passagesOf = new Map<string, number>();
  for (const job of publishes) {
    const prefix = `outputs/${encodeURIComponent(TENANT)}/${job.id}/`;
    let texts: string[] = [];
    for (const key of [`${prefix}embeddings/passages.json`, `${prefix}passages.json`]) {
      try {
        const object = await s3.send(new GetObjectCommand({ Bucket: endpoints.outputBucketName, Key: key }));
        texts = (JSON.parse(await (object.Body?.transformToString() ?? '[]')) as { text: string }[]).map(
          (p) => p.text,
        );
        break;
      } catch (error) {
        if (!(error instanceof NoSuchKey)) throw error;
      }
    }
    passagesOf.set(job.id, texts.length);
    for (const text of texts) occurs.set(inputDigestOf(text), (occurs.get(inputDigestOf(text)) ?? 0) + 1);
  }
  const billed = new Map<string, number>();
  for (const charge of (await client.providerLedger('bedrock'))?.submissions ?? []) {
    for (const digest of charge.inputDigests ?? []) billed.set(digest, (billed.get(digest) ?? 0) + 1);
  }
  const violations = [...billed]
    .filter(([digest, times]) => times > (occurs.get(digest) ?? 0))
    .map(
      ([digest, times]) =>
        `a passage (${digest}) was billed ${times} times by Bedrock; it occurs ${occurs.get(digest) ?? 0}`,
    );
  const succeeded = new Set(publishes.filter((job) => job.status === 'succeeded').map((job) => job.id));
  const vectorsOf = new Map<string, number>();
  for (const key of await storedVectorKeys(endpoints)) {
    const item = itemOfVectorKey(key) ?? key;
    vectorsOf.set(item, (vectorsOf.get(item) ?? 0) + 1);
  }
  for (const [item, count] of vectorsOf) {
    if (!succeeded.has(item))
      violations.push(`${count} vectors of ${item}, which did not succeed, are in the index`);
  }
  log(
    `embedding: ${[...billed.values()].reduce((sum, times) => sum + times, 0)} passages billed at Bedrock, ` +
      `${[...vectorsOf.values()].reduce((sum, count) => sum + count, 0)} vectors in the index, of ${[...vectorsOf.keys()].join(', ')}`,
  );
  for (const id of succeeded) {
    if (vectorsOf.get(id) !== passagesOf.get(id))
      violations.push(
        `${id} succeeded with ${passagesOf.get(id)} passages but has ${vectorsOf.get(id) ?? 0} vectors`,
      );
  }
  return violations;
}

/**
 * Every chunk job of the audio.publish jobs among `finals`, with its parent:
 * from the parents' timelines (`chunk.submitted`), since chunk jobs are not
 * the tenant's to list or read.
 */
async function chunkJobsOf(client: Client, finals: readonly Job[]): Promise<Map<string, Job>> {
  const chunks = new Map<string, Job>();
  for (const parent of finals.filter((job) => job.type === 'audio.publish')) {
    for (const event of await client.steps(parent.id)) {
      const chunk =
        event.type === 'chunk.submitted' ? /as (job_[a-z0-9]+)/.exec(event.detail ?? '')?.[1] : undefined;
      if (chunk) chunks.set(chunk, parent);
    }
  }
  return chunks;
}

interface Scenario {
  readonly simulator: RunningSimulator;
  readonly stacks: Restartable;
  /** The settings the stack runs with, read as the stack reads them: each job type's provider, each provider's limit. */
  readonly settings: Settings;
  /** The providers its job types run on. */
  readonly providers: readonly ProviderName[];
  readonly logFile: string;
  /** The chaos' own lines, also on stdout, with the time the stack's log lines carry too. */
  readonly log: (line: string) => void;
}

async function startScenario(
  name: string,
  idempotent: boolean,
  env: Record<string, string>,
): Promise<Scenario> {
  const logFile = join(tmpdir(), `longhaul-chaos-${SEED}-${name}.log`);
  writeFileSync(logFile, '');
  const log = (line: string) => {
    const stamped = `${new Date().toISOString().slice(11, 23)} ${line}`;
    process.stdout.write(`chaos (${name}): ${stamped}\n`);
    appendFileSync(logFile, `chaos: ${stamped}\n`);
  };
  const simulator = await startSimulator({
    port: 0,
    jobMs: SIM_JOB_MS,
    progressHz: 5,
    idempotent,
    webhookSecret: PROVIDER_SECRET,
    log: (line) => appendFileSync(logFile, `provider: ${line}\n`),
  });
  const settings = loadSettings({ ...chaosEnv(idempotent), ...env });
  // The providers the drawn jobs run on (audio.publish, on Deepgram, has its own phase in the first scenario).
  const providers = [...new Set(DRAWN_TYPES.map((module) => settings.jobTypeProviders[module.name]))];
  try {
    const stacks = await Restartable.start(
      { PROVIDER_URL: simulator.url, ...chaosEnv(idempotent), ...env },
      logFile,
    );
    return { simulator, stacks, settings, providers, logFile, log };
  } catch (error) {
    await simulator.close();
    throw error;
  }
}

async function stopScenario(scenario: Scenario | undefined): Promise<void> {
  await scenario?.stacks.stop();
  await scenario?.simulator.close();
}

/** The job types that run on `provider`; an error if none does. */
function jobTypesOn(provider: ProviderName, settings: Settings): JobType[] {
  const types = JOB_TYPE_MODULES.map((module) => module.name).filter(
    (type) => settings.jobTypeProviders[type] === provider,
  );
  if (types.length === 0) throw new Error(`no job type runs on ${provider}`);
  return types;
}

/**
 * Each job type on its own provider, as `npm start` runs them, each provider
 * under its own limit, no two alike, so a limit shared by mistake shows.
 */
const OWN_PROVIDERS_ENV: Record<string, string> = {
  ...OWN_PROVIDER_FOR_EVERY_JOB_TYPE,
  ...Object.fromEntries(
    [...new Set(Object.values(OWN_PROVIDER_FOR_EVERY_JOB_TYPE))].map((provider, index) => [
      providerSettingEnv(provider).maxInFlight,
      String(MAX_IN_FLIGHT + index),
    ]),
  ),
};

// The two scenarios run at once, each on its own stack and simulator: most of their time is spent
// waiting for job timeouts to pass, not computing. At full size each alone loads the machine, so
// they run one after the other.
const scenario = BIG ? it : it.concurrent;
let own: Scenario | undefined;
let generic: Scenario | undefined;

beforeAll(async () => {
  const started = await Promise.allSettled([
    startScenario('own-providers', false, OWN_PROVIDERS_ENV),
    // The first jobs to reach finalize in each life of the stack fail there, after their provider was
    // paid: the chaos resumes them, and they go on from there with no second charge. (Here, where no
    // job makes child jobs: a child failed so is made again, and charged again, as a failed chunk is.)
    startScenario('generic-dedup', true, {
      ...GENERIC_PROVIDER_FOR_EVERY_JOB_TYPE,
      LONGHAUL_FAULT_UNUSABLE_OUTPUTS: '2',
    }),
  ]);
  [own, generic] = started.map((result) => (result.status === 'fulfilled' ? result.value : undefined));
  const failed = started.find((result) => result.status === 'rejected');
  if (failed) throw failed.reason;
});

afterAll(async () => {
  await Promise.all([stopScenario(own), stopScenario(generic)]);
});

const running = (scenario: Scenario | undefined): Scenario => {
  if (!scenario) throw new Error('the scenario did not start');
  return scenario;
};

describe('chaos', () => {
  scenario(
    `on each job type's own provider: keeps every accepted job, charges none twice and holds each provider's limit through ${JOBS} jobs`,
    async () => {
      const { simulator, stacks, settings, providers, logFile, log } = running(own);
      const limitOf = (provider: ProviderName) => settings.providers[provider].maxInFlight;
      const rng = random(SEED);
      const client = clientOf(stacks, simulator.url);
      const audioRef = await client.uploadAudio();
      const bodyOf = (type: JobType, n: number): JobBody => ({ type, input: INPUTS[type](n, audioRef) });
      const bodies = Array.from({ length: JOBS }, (_, n) => bodyOf(rng.pick(DRAWN_TYPES).name, n));
      const batchBodies = Array.from({ length: BATCH_ITEMS }, (_, n) =>
        bodyOf(rng.pick(DRAWN_TYPES).name, JOBS + n),
      );

      // The ambiguous faults of a provider that cannot deduplicate are armed before the first
      // submission, so each meets a job's one submission: that job is reviewed, not resent.
      const prearmed: FaultGroup[] = providers
        .filter((provider) => !settings.providers[provider].deduplicates)
        .map((provider) => ({ provider, modes: AMBIGUOUS_MODES }));
      const prearmedModes = (provider: ProviderName) =>
        prearmed.find((g) => g.provider === provider)?.modes ?? [];
      // Every other mode once at each provider, then a random mix of those that hold no slot for long.
      const singles = providers.flatMap((provider) =>
        faultModesOf(provider)
          .filter((mode) => !prearmedModes(provider).includes(mode))
          .map((mode): FaultGroup => ({ provider, modes: [mode] })),
      );
      const pickFault = (held: boolean): FaultGroup => {
        const provider = rng.pick(providers);
        const modes = faultModesOf(provider).filter((mode) => holdsSlot(provider, mode, settings) === held);
        return { provider, modes: [rng.pick(modes)] };
      };
      const guaranteed = [...prearmed, ...singles].flatMap((group) => group.modes).length;
      const extras = Array.from({ length: Math.max(0, Math.round(JOBS / 4) - guaranteed) }, () =>
        pickFault(false),
      );
      // Faults that hold a slot for the job timeout are rationed: each takes capacity for that long.
      const held = Array.from({ length: Math.floor(JOBS / 60) * providers.length }, () => pickFault(true));
      const groups = rng.shuffle([...singles, ...extras, ...held]);
      const faults = faultsByProvider([...prearmed, ...groups]);
      const plan: ChaosPlan = {
        providers,
        jobs: JOBS,
        bodyOf: (n) => bodies[n] as JobBody,
        faults: groups,
        windowMs: BIG ? JOBS * 400 : 12_000,
        kills: BIG ? 2 : 1,
        purges: BIG ? 3 : 1,
        duplicateDeliveries: Math.round(JOBS / 5),
        duplicateSubmissionRate: 0.15,
        cancelRate: 0.08,
        scheduledRate: 0.2,
        batch: { items: BATCH_ITEMS, bodyOf: (n) => batchBodies[n] as JobBody },
      };
      log(
        `seed ${SEED}, ${JOBS} jobs ${JSON.stringify(countBy(bodies, (body) => body.type))}, limits ${JSON.stringify(Object.fromEntries(providers.map((p) => [p, limitOf(p)])))}, ` +
          `faults ${JSON.stringify(Object.fromEntries([...faults].map(([p, modes]) => [p, countBy(modes, (m) => m)])))}, ` +
          `${plan.kills} kill(s), ${plan.purges} purge(s), ${plan.duplicateDeliveries} duplicate deliveries; log ${logFile}`,
      );

      const canceledAtProvider = await cancelAtProviders(client, providers, (provider) =>
        bodyOf(jobTypesOn(provider, settings)[0] as JobType, -1),
      );
      log(
        `canceled at the providers: ${canceledAtProvider.map((c) => `${c.id} at ${c.provider}`).join(', ')}`,
      );
      // audio.publish first, alone at the providers, so each fault it is dealt meets one of its chunks.
      const published = await publishUnderChaos(client, stacks, log, canceledAtProvider);
      faults.set('deepgram', [...(faults.get('deepgram') ?? []), ...published.faults]);

      for (const group of prearmed) for (const mode of group.modes) await client.fault(mode, group.provider);

      const chaos = await runChaos(plan, stacks, client, rng, log);
      const chaosIds = [...chaos.accepted.values()];
      const chaosAt = (provider: ProviderName): ProviderChaos => ({
        provider,
        faults: faults.get(provider) ?? [],
        limit: limitOf(provider),
        deduplicates: settings.providers[provider].deduplicates,
        underWayAtKill: chaos.underWayAtKill,
      });
      log(
        `accepted ${chaosIds.length} jobs (${chaos.replays} replays, ${chaos.canceled.size} cancels accepted, ${chaos.scheduled.size} scheduled)`,
      );
      // One job per key, every key accepted.
      expect(chaos.accepted.size).toBe(JOBS);
      expect(new Set(chaosIds).size).toBe(JOBS);
      // The batch too: each of its keys answered with the one job that key names, across the kill.
      const batchIds = [...chaos.batch.values()];
      expect(chaos.batch.size).toBe(BATCH_ITEMS);
      expect([...chaos.batch]).toEqual([...chaos.batch.keys()].map((key) => [key, deriveJobId(TENANT, key)]));

      const ids = [...chaosIds, ...batchIds, ...canceledAtProvider.map((c) => c.id), ...published.jobs];
      const jobs = await settleAll(client, ids, BIG ? JOBS * 2000 : 150_000);
      const finals = [...jobs.values()];
      // audio.publish's chunk jobs, read once from their parents' timelines.
      const chunkJobs = await chunkJobsOf(client, finals);
      for (const provider of providers)
        log(
          `final at ${provider}: ${JSON.stringify(summarize(finals.filter((job) => job.provider === provider)))}`,
        );

      // Every invariant is checked, so one run reports everything it broke.
      const canceledByClient = new Set([
        ...chaos.canceled,
        ...canceledAtProvider.map((c) => c.id),
        ...published.canceled,
      ]);
      const violations = [
        ...(await lossViolations(client, ids)),
        ...finals
          .filter((job) => job.status === 'canceled' && !canceledByClient.has(job.id))
          .map((job) => `${job.id} is canceled, but nobody canceled it`),
        ...finals
          .filter((job) => job.provider !== settings.jobTypeProviders[job.type])
          .map((job) => `${job.id} ran on ${job.provider}, not on its job type's own provider`),
        ...(await slotViolations(client, providers, jobs, log, chunkJobs)),
        ...earlyStarts(finals, chaos.scheduled),
        ...(await batchDuplicates(client, chaos.batch)),
      ];
      const charges = new Map<ProviderName, ChargedJob[]>();
      for (const provider of providers) {
        // A chunk job of audio.publish is charged in its parent's stead.
        const atProvider = await providerViolations(
          client,
          chaosAt(provider),
          [...ids, ...chunkJobs.keys()],
          finals,
          log,
        );
        charges.set(provider, atProvider.charges);
        violations.push(...atProvider.violations);
        // Each ambiguous fault armed before the chaos met a job's one submission: that job is in
        // review, never sent again, unless its client canceled it first.
        const here = finals.filter((job) => job.provider === provider);
        const reviewed = here.filter(
          (job) => chargedInItsOwnName(job) && job.error?.code === 'ambiguous_submission',
        ).length;
        const canceled = here.filter((job) => chaos.canceled.has(job.id)).length;
        if (reviewed < prearmedModes(provider).length - canceled)
          violations.push(
            `${reviewed} ambiguous submissions in review at ${provider}, fewer than the ${prearmedModes(provider).length} armed first`,
          );
      }
      violations.push(...(await cancelViolations(canceledAtProvider, charges)));
      violations.push(...(await queueViolations(stacks, settings)));
      violations.push(...(await deadLetterViolations(stacks, finals)));
      violations.push(...client.serverErrors.map((error) => `server error: ${error}`));
      violations.push(...publishViolations(finals, published));
      violations.push(...(await mediaViolations(client, stacks, published.media)));
      violations.push(...(await embeddingViolations(client, stacks, finals, log)));
      expect(violations).toEqual([]);
      // The chaos's kills, and the ones in the middle of a transcode, of an embedding and of a version.
      expect(stacks.restarts).toBe(plan.kills + 3);
    },
  );

  // At full size as many jobs as the main scenario; in `npm test` a few, enough for every fault.
  const jobCount = BIG ? JOBS : 16;
  scenario(
    `on the generic provider, which deduplicates: resends ambiguous submissions under their key and charges each once through ${jobCount} jobs`,
    async () => {
      const { simulator, stacks, settings, providers, logFile, log } = running(generic);
      const rng = random(SEED + 1);
      const client = clientOf(stacks, simulator.url);
      const audioRef = await client.uploadAudio();
      const bodies = Array.from({ length: jobCount }, (_, n): JobBody => {
        const type = rng.pick(DRAWN_TYPES).name;
        return { type, input: INPUTS[type](n, audioRef) };
      });
      // Every mode at least once, then a random mix. Stalls are rationed: each holds a slot for the job timeout.
      const groups = providers.flatMap((provider) => {
        const common = faultModesOf(provider).filter((mode) => mode !== 'stall');
        const singles = faultModesOf(provider).map((mode): FaultGroup => ({ provider, modes: [mode] }));
        const extras = Array.from(
          { length: Math.max(0, Math.round(jobCount / 4) - singles.length) },
          (): FaultGroup => ({ provider, modes: [rng.pick(common)] }),
        );
        const stalls = Array.from(
          { length: Math.floor(jobCount / 60) },
          (): FaultGroup => ({ provider, modes: ['stall'] }),
        );
        // Brownouts: every submission times out for a while (enough for the jobs holding the slots to
        // use up their resends), and a resend refused after a dropped answer. Each holds every slot
        // for about the job timeout, so there is one per hundred jobs.
        const brownouts = Array.from(
          { length: Math.max(1, Math.floor(jobCount / 100)) },
          (): FaultGroup[] => [
            {
              provider,
              modes: Array.from(
                { length: 4 * settings.providers[provider].maxInFlight },
                () => 'timeout' as const,
              ),
            },
            { provider, modes: ['accept-then-drop', 'reject'] },
          ],
        ).flat();
        return [...singles, ...extras, ...stalls, ...brownouts];
      });
      const plan: ChaosPlan = {
        providers,
        jobs: jobCount,
        bodyOf: (n) => bodies[n] as JobBody,
        faults: rng.shuffle(groups),
        windowMs: BIG ? jobCount * 400 : 6000,
        kills: BIG ? 2 : 1,
        purges: BIG ? 3 : 1,
        duplicateDeliveries: Math.round(jobCount / 4),
        duplicateSubmissionRate: 0.2,
        cancelRate: 0.08,
        scheduledRate: 0.2,
      };
      const faults = faultsByProvider(plan.faults);
      log(
        `seed ${SEED + 1}, ${jobCount} jobs, faults ${JSON.stringify(Object.fromEntries([...faults].map(([p, modes]) => [p, countBy(modes, (m) => m)])))}, ` +
          `${plan.kills} kill(s), ${plan.purges} purge(s), ${plan.duplicateDeliveries} duplicate deliveries; log ${logFile}`,
      );

      const chaos = await runChaos(plan, stacks, client, rng, log);
      const ids = [...chaos.accepted.values()];
      log(
        `accepted ${ids.length} jobs (${chaos.replays} replays, ${chaos.canceled.size} cancels accepted, ${chaos.scheduled.size} scheduled)`,
      );
      expect(chaos.accepted.size).toBe(jobCount);
      expect(new Set(ids).size).toBe(jobCount);

      const jobs = await settleAll(client, ids, BIG ? jobCount * 2000 : 150_000);
      const resumed = await resumeFailedAtLastStep(client, jobs, log);
      const finals = [...jobs.values()];
      log(`final: ${JSON.stringify(summarize(finals))}`);

      const violations = [
        ...(await lossViolations(client, ids)),
        ...finals
          .filter((job) => job.status === 'canceled' && !chaos.canceled.has(job.id))
          .map((job) => `${job.id} is canceled, but nobody canceled it`),
        ...(await slotViolations(client, providers, jobs, log)),
        ...earlyStarts(finals, chaos.scheduled),
        ...resumeViolations(resumed, jobs),
      ];
      for (const provider of providers) {
        const chaosAt: ProviderChaos = {
          provider,
          faults: faults.get(provider) ?? [],
          limit: settings.providers[provider].maxInFlight,
          deduplicates: settings.providers[provider].deduplicates,
          underWayAtKill: chaos.underWayAtKill,
        };
        violations.push(...(await providerViolations(client, chaosAt, ids, finals, log)).violations);
      }
      violations.push(...(await queueViolations(stacks, settings)));
      violations.push(...(await deadLetterViolations(stacks, finals)));
      violations.push(...client.serverErrors.map((error) => `server error: ${error}`));
      expect(violations).toEqual([]);
      expect(stacks.restarts).toBe(plan.kills);
    },
  );
});
