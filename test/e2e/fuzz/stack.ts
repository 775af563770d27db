import { createHash } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { pollUntil, type RunningLocalStack, startLocalStack } from '../../../local/harness/local-stack';
import { checkAnswer, footprint, footprintChanges } from './invariants';
import {
  API_GATEWAY_HEAD_LIMIT,
  agent,
  clip,
  describeRequest,
  headSize,
  type RawRequest,
  type RawResponse,
  send,
} from './raw-http';

/**
 * The local stack each fuzz test file runs its properties against, and the
 * runner that holds every property to the invariants (./invariants.ts).
 *
 * Each property runs with its own fixed seed (printed; FUZZ_SEED moves the
 * base, FUZZ_RUNS_SCALE multiplies every run count), and a failure names the
 * seed and the path of the shrunk counterexample. The stack's output goes to
 * a log file in the temporary directory, whose name is printed.
 */

export const KEY = 'fuzz-key-3f9a1c';
export const OTHER_KEY = 'fuzz-other-key-77b2e0';
export const ADMIN_KEY = 'fuzz-admin-key-c41d08';
export const PROVIDER_SECRET = 'fuzz-provider-webhook-secret-9d2e';
const BASE_SEED = Number(process.env.FUZZ_SEED ?? 20_260_401);
const RUN_SCALE = Number(process.env.FUZZ_RUNS_SCALE ?? 1);

/** Each property's seed follows from the base seed and its name, so running one property alone (-t) replays it. */
const seedOf = (name: string): number =>
  (BASE_SEED + Number.parseInt(createHash('sha256').update(name).digest('hex').slice(0, 6), 16)) % 2 ** 31;

/** A property's seed and run count, printed so a failure can be replayed. */
export function runOf(name: string, numRuns: number): { seed: number; numRuns: number } {
  const seed = seedOf(name);
  const runs = Math.max(1, Math.round(numRuns * RUN_SCALE));
  process.stdout.write(`fuzz ${name}: seed ${seed}, ${runs} runs\n`);
  return { seed, numRuns: runs };
}

/**
 * fc.assert, with a report that stays readable when the counterexample holds
 * a 8000-character header: the seed and path to replay, the shrunk value
 * clipped, and the failure (which names the request and the answer).
 */
export async function check<T>(property: fc.IAsyncProperty<T>, params: { seed: number; numRuns: number }) {
  const details = await fc.check(property, params);
  if (!details.failed) return;
  const error =
    details.errorInstance instanceof Error ? details.errorInstance.message : String(details.errorInstance);
  // Once the stack has died every run fails alike, so what fast-check shrank to means nothing.
  const counterexample = error.startsWith('the local stack exited')
    ? '(meaningless: the stack had died)'
    : details.counterexample
      ? clip(fc.stringify(details.counterexample), 1200)
      : '(none: the run was interrupted)';
  throw new Error(
    `property failed after ${details.numRuns} run(s); replay with seed ${details.seed}, path "${details.counterexamplePath}"\n` +
      `counterexample (shrunk ${details.numShrinks} times): ${counterexample}\n${clip(error, 4000)}`,
  );
}

/** The finished jobs the properties aim at: one of each final status, and another tenant's. */
export const FIXTURE_REQUESTS = {
  failed: { apiKey: KEY, idem: 'fuzz-fixture-failed', prompt: 'rejected by the provider' },
  succeeded: { apiKey: KEY, idem: 'fuzz-fixture-succeeded', prompt: 'a lighthouse' },
  others: { apiKey: OTHER_KEY, idem: 'fuzz-fixture-others', prompt: 'another tenant' },
  canceled: { apiKey: KEY, idem: 'fuzz-fixture-canceled', prompt: 'to be canceled' },
} as const;

export type Fixture = Record<keyof typeof FIXTURE_REQUESTS, string>;

export const auth = (key = KEY): [string, string] => ['X-API-Key', key];

export interface FuzzOptions<T> {
  readonly numRuns: number;
  /** Check the footprint after every request too, so fast-check can shrink a state-changing request. */
  readonly perRun?: boolean;
  /** What this property expects of an answer, beyond the invariants every answer holds to. */
  readonly expect?: (value: T, res: RawResponse, code?: string) => void;
}

export interface FuzzStack {
  readonly stack: RunningLocalStack;
  /** The finished jobs, made before the first test (`fixtures: true`). */
  readonly fixture: Fixture;
  api(req: RawRequest): Promise<RawResponse>;
  /**
   * Runs one request of a property. If the stack dies on it, the failure says
   * so and names that request: every later run (fast-check's shrinking
   * included) only finds the port closed, which says nothing.
   */
  attempt(what: () => string, run: () => Promise<void>): Promise<void>;
  /**
   * Runs one property with its own printed seed, checks every answer against
   * the invariants, and checks that the whole run left no trace.
   */
  fuzz<T>(
    name: string,
    arbitrary: fc.Arbitrary<T>,
    toRequest: (value: T) => RawRequest,
    options: FuzzOptions<T>,
  ): Promise<void>;
}

/**
 * Starts a local stack for the test file before its first test and stops it
 * after its last; with `fixtures`, first makes the finished jobs of
 * FIXTURE_REQUESTS (one of each final status, and another tenant's). Either
 * way its first test starts on a quiet stack: nothing queued, nothing at the
 * provider, and a footprint that holds still.
 */
export function useFuzzStack(name: string, options: { readonly fixtures: boolean }): FuzzStack {
  jest.setTimeout(240_000);
  let stack: RunningLocalStack | undefined;
  let fixture: Fixture | undefined;
  /** Set once the stack's process has exited: whatever was asked last killed it. */
  let exited = false;
  let killedBy: string | undefined;

  const running = (): RunningLocalStack => {
    if (!stack) throw new Error('the local stack has not started');
    return stack;
  };
  const api = (req: RawRequest) => send(running().baseUrl, req);

  async function attempt(what: () => string, run: () => Promise<void>): Promise<void> {
    if (killedBy !== undefined) throw new Error(`the local stack exited while answering:\n${killedBy}`);
    try {
      await run();
    } catch (error) {
      await new Promise((resolve) => setTimeout(resolve, 200));
      if (exited) {
        killedBy = what();
        const fatal = running()
          .output()
          .split('\n')
          .filter((line) => /fatal|^\s+at /.test(line))
          .slice(0, 8);
        throw new Error(
          `the local stack exited while answering:\n${killedBy}\n--- its last words ---\n${fatal.join('\n')}`,
        );
      }
      throw error;
    }
  }

  async function makeFixture(): Promise<Fixture> {
    const sim = (path: string, body: unknown) =>
      fetch(`${running().endpoints.providerUrl}${path}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
    const submit = async (name: keyof typeof FIXTURE_REQUESTS) => {
      const { apiKey, idem, prompt } = FIXTURE_REQUESTS[name];
      const res = await api({
        method: 'POST',
        path: '/v1/jobs',
        headers: [
          ['X-API-Key', apiKey],
          ['Idempotency-Key', idem],
          ['Content-Type', 'application/json'],
        ],
        body: Buffer.from(JSON.stringify({ type: 'image.generate', input: { prompt } })),
      });
      expect({ status: res.status, body: res.body.toString() }).toEqual({
        status: 202,
        body: expect.any(String),
      });
      return JSON.parse(res.body.toString()).id as string;
    };
    const settled = (key: string, id: string) =>
      pollUntil(
        async () => {
          const res = await api({ method: 'GET', path: `/v1/jobs/${id}`, headers: [['X-API-Key', key]] });
          const job = JSON.parse(res.body.toString());
          return ['succeeded', 'failed', 'canceled'].includes(job.status) ? job : undefined;
        },
        { timeoutMs: 30_000, intervalMs: 100, description: `job ${id} to finish` },
      );

    await sim('/_sim/faults', { mode: 'reject', count: 1 });
    const failed = await submit('failed');
    expect((await settled(KEY, failed)).status).toBe('failed');
    const succeeded = await submit('succeeded');
    const others = await submit('others');
    expect((await settled(KEY, succeeded)).status).toBe('succeeded');
    expect((await settled(OTHER_KEY, others)).status).toBe('succeeded');
    // Long enough to be canceled while it runs; every job before it has finished at the provider.
    await sim('/_sim/config', { jobMs: 60_000 });
    const canceled = await submit('canceled');
    await pollUntil(
      async () =>
        JSON.parse(
          (
            await api({ method: 'GET', path: `/v1/jobs/${canceled}`, headers: [['X-API-Key', KEY]] })
          ).body.toString(),
        ).status === 'running',
      { timeoutMs: 30_000, description: 'the job to cancel to run' },
    );
    const cancel = await api({
      method: 'POST',
      path: `/v1/jobs/${canceled}/cancel`,
      headers: [['X-API-Key', KEY]],
    });
    expect(cancel.status).toBe(202);
    expect((await settled(KEY, canceled)).status).toBe('canceled');
    return { succeeded, failed, canceled, others };
  }

  beforeAll(async () => {
    stack = await startLocalStack({
      env: {
        LONGHAUL_API_KEYS: `${KEY}:acme,${OTHER_KEY}:globex`,
        LONGHAUL_ADMIN_KEY: ADMIN_KEY,
        PROVIDER_WEBHOOK_SECRET: PROVIDER_SECRET,
        API_RATE_LIMIT: '5000',
        API_BURST_LIMIT: '5000',
        SIM_JOB_MS: '200',
        PROVIDER_TIMEOUT_MS: '1000',
        SLOT_WAIT_MAX_SECONDS: '1',
      },
    });
    void stack.exited.then(() => {
      exited = true;
    });
    if (options.fixtures) fixture = await makeFixture();

    // Quiet: nothing queued, nothing at the provider, no slot held, and the footprint holds still.
    await pollUntil(
      async () => {
        const first = await footprint(running());
        await new Promise((resolve) => setTimeout(resolve, 300));
        const second = await footprint(running());
        const ledger = (await (await fetch(`${running().endpoints.providerUrl}/_sim/ledger`)).json()) as {
          running: number;
        };
        return first.queued === 0 && ledger.running === 0 && footprintChanges(first, second).length === 0;
      },
      { timeoutMs: 30_000, intervalMs: 200, description: 'the stack to be quiet' },
    );
  });

  afterAll(async () => {
    agent.destroy();
    if (stack) {
      // Where a 5xx's stack trace is, for whoever has to fix it.
      const logFile = join(tmpdir(), `longhaul-fuzz-${name}-${BASE_SEED}.log`);
      writeFileSync(logFile, stack.output());
      process.stdout.write(`fuzz: stack output in ${logFile}\n`);
    }
    await stack?.stop();
  });

  async function fuzz<T>(
    property: string,
    arbitrary: fc.Arbitrary<T>,
    toRequest: (value: T) => RawRequest,
    options: FuzzOptions<T>,
  ): Promise<void> {
    const run = runOf(property, options.numRuns);
    const before = await footprint(running());
    await check(
      fc.asyncProperty(arbitrary, async (value) => {
        const req = toRequest(value);
        // API Gateway's own cap on the request line and headers (10240 bytes); past it no route is reached.
        fc.pre(headSize(req) <= API_GATEWAY_HEAD_LIMIT);
        await attempt(
          () => describeRequest(req),
          async () => {
            // Measured around each request, so a shrunk counterexample is judged by its own effect.
            const runBefore = options.perRun ? await footprint(running()) : undefined;
            const res = await api(req);
            const { code } = checkAnswer(req, res);
            options.expect?.(value, res, code);
            if (runBefore) {
              const changes = footprintChanges(runBefore, await footprint(running()));
              if (changes.length > 0)
                throw new Error(
                  `state changed: ${changes.join('; ')}\n--- request ---\n${describeRequest(req)}`,
                );
            }
          },
        );
      }),
      run,
    );
    const changes = footprintChanges(before, await footprint(running()));
    expect(changes).toEqual([]);
  }

  return {
    get stack() {
      return running();
    },
    get fixture() {
      if (!fixture) throw new Error('this file made no fixture jobs: useFuzzStack(…, { fixtures: true })');
      return fixture;
    },
    api,
    attempt,
    fuzz,
  };
}
