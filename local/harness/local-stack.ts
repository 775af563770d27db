import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, join, resolve } from 'node:path';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { S3Client } from '@aws-sdk/client-s3';
import { S3VectorsClient } from '@aws-sdk/client-s3vectors';
import { SFNClient } from '@aws-sdk/client-sfn';
import { SQSClient } from '@aws-sdk/client-sqs';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { JOB_TYPE_MODULES } from '../../config/job-types';
import { jobTypeProviderEnv } from '../../config/settings';
import { queueCounts } from '../ops/report';
import type { LocalStackInfo } from '../stack';
import { type Exit, watchChild } from './child-process';

/**
 * Runs the local stack (`npm start`) as a child process for end-to-end tests
 * and the bench, exactly as an operator would, and reaches it only through
 * HTTP and the real SDK pointed at the endpoints it publishes in
 * `<dataDir>/local.json`.
 */

const ROOT = resolve(__dirname, '../..');
const BIN = join(ROOT, 'node_modules', '.bin');
const READY_LINE = /^longhaul local: ready at (http:\/\/127\.0\.0\.1:\d+)$/m;
const OUTPUT_LIMIT = 256 * 1024;

/**
 * What the stack publishes in local.json: the API, the emulators' endpoints
 * (DynamoDB, SQS, S3, S3 Vectors, Step Functions, Secrets Manager), the resource names,
 * the state machine ARN and `providerUrl`, the provider the handlers call
 * (its `/_sim/*` routes when it is the simulator).
 */
export type LocalEndpoints = LocalStackInfo;

export interface RunningLocalStack {
  readonly baseUrl: string;
  readonly dataDir: string;
  readonly endpoints: LocalEndpoints;
  readonly pid: number;
  /** Settles when the process has exited, however that happened. */
  readonly exited: Promise<Exit>;
  /** SIGTERM, then waits for the exit; SIGKILL if it has not exited within `deadlineMs`. */
  stop(deadlineMs?: number): Promise<void>;
  /** SIGKILL to the stack and what it started: a crash, with no chance to clean up. */
  kill(): void;
  /** Everything the process printed so far (stdout and stderr interleaved; the last 256 KiB). */
  output(): string;
}

export interface StartOptions {
  /**
   * Extra or overriding environment for the stack. The helper sets PORT and
   * SIM_PORT to 0 (any free port), so stacks can run side by side.
   */
  readonly env?: Record<string, string>;
  /** Reuse a data directory (e.g. to test a restart); by default a fresh temporary one, removed by `stop()`. */
  readonly dataDir?: string;
  readonly readyTimeoutMs?: number;
  /** Where the project to run lives: a changed copy of this one, say. @default this project */
  readonly root?: string;
}

/** Start-up did not reach the ready line: the process exited, or the deadline passed. */
export class LocalStackStartError extends Error {
  constructor(
    message: string,
    readonly exit: Exit | undefined,
    readonly output: string,
  ) {
    super(`${message}\n--- local stack output (tail) ---\n${output.slice(-4000)}`);
    this.name = 'LocalStackStartError';
  }
}

/** `PROVIDER_<JOB_TYPE>=longhaul-http` for every job type that can run there (audio.publish's chunks need Deepgram). */
export const GENERIC_PROVIDER_FOR_EVERY_JOB_TYPE: Readonly<Record<string, string>> = Object.fromEntries(
  JOB_TYPE_MODULES.filter((module) => 'longhaul-http' in module.providers).map((module) => [
    jobTypeProviderEnv(module.name),
    'longhaul-http',
  ]),
);

/** Each job type on its own provider, as `npm start` runs them: unsets the suites' default. */
export const OWN_PROVIDER_FOR_EVERY_JOB_TYPE: Readonly<Record<string, string>> = Object.fromEntries(
  JOB_TYPE_MODULES.map((module) => [jobTypeProviderEnv(module.name), module.provider]),
);

export function temporaryDataDir(): string {
  return mkdtempSync(join(tmpdir(), 'longhaul-e2e-'));
}

export async function startLocalStack(options: StartOptions = {}): Promise<RunningLocalStack> {
  const ownsDataDir = options.dataDir === undefined;
  const dataDir = options.dataDir ?? temporaryDataDir();
  // Node itself with tsx as a loader, not the tsx CLI: the CLI relays a signal to the stack only if
  // the stack acknowledges it within 30 ms, else kills it (exit 143), which a busy stack can miss.
  const child: ChildProcess = spawn(join(BIN, 'node'), ['--import', 'tsx', 'local/main.ts'], {
    cwd: options.root ?? ROOT,
    env: {
      ...process.env,
      // The package's own Node (24, as in Lambda) runs the stack, whatever node runs jest.
      PATH: `${BIN}${delimiter}${process.env.PATH ?? ''}`,
      PORT: '0',
      SIM_PORT: '0',
      LONGHAUL_DATA_DIR: dataDir,
      // Suites run every job type on the generic provider, whose faults and SIM_IDEMPOTENT they drive,
      // unless they name another; test/e2e/providers.test.ts runs the job types' own providers.
      ...GENERIC_PROVIDER_FOR_EVERY_JOB_TYPE,
      ...options.env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
    // Its own process group, so a kill takes whatever the stack started with it.
    detached: true,
  });
  const { exited, output, kill, stop } = watchChild(child, { outputLimit: OUTPUT_LIMIT, detached: true });
  const cleanUp = () => {
    if (ownsDataDir) rmSync(dataDir, { recursive: true, force: true });
  };

  const readyTimeoutMs = options.readyTimeoutMs ?? 60_000;
  const baseUrl = await new Promise<string>((resolveReady, rejectReady) => {
    const timer = setTimeout(() => {
      kill();
      rejectReady(new LocalStackStartError(`no ready line within ${readyTimeoutMs} ms`, undefined, output()));
    }, readyTimeoutMs);
    const onData = () => {
      const url = READY_LINE.exec(output())?.[1];
      if (!url) return;
      clearTimeout(timer);
      child.stdout?.off('data', onData);
      resolveReady(url);
    };
    child.stdout?.on('data', onData);
    void exited.then((exit) => {
      clearTimeout(timer);
      rejectReady(
        new LocalStackStartError(
          `exited before it was ready (code ${exit.code}, signal ${exit.signal})`,
          exit,
          output(),
        ),
      );
    });
  }).catch(async (error: unknown) => {
    await exited;
    cleanUp();
    throw error;
  });

  const endpoints = JSON.parse(readFileSync(join(dataDir, 'local.json'), 'utf8')) as LocalEndpoints;
  let stopping: Promise<void> | undefined;
  return {
    baseUrl,
    dataDir,
    endpoints,
    pid: child.pid as number,
    exited,
    stop(deadlineMs = 10_000) {
      // tsx passes SIGTERM on to the stack and exits with its exit code.
      stopping ??= stop(deadlineMs).then(cleanUp);
      return stopping;
    },
    kill,
    output,
  };
}

export interface PollOptions {
  readonly timeoutMs?: number;
  readonly intervalMs?: number;
  /** Names what was awaited in the timeout error. */
  readonly description?: string;
}

/**
 * Calls `probe` until it returns something other than undefined, null or
 * false, and returns that; throws once `timeoutMs` has passed, with the last
 * error the probe threw, if any.
 */
export async function pollUntil<T>(
  probe: () => T | Promise<T>,
  { timeoutMs = 10_000, intervalMs = 50, description = 'condition' }: PollOptions = {},
): Promise<Exclude<T, undefined | null | false>> {
  const deadline = Date.now() + timeoutMs;
  let lastError: unknown;
  for (;;) {
    try {
      const value = await probe();
      if (value !== undefined && value !== null && value !== false) {
        return value as Exclude<T, undefined | null | false>;
      }
    } catch (error) {
      lastError = error;
    }
    if (Date.now() >= deadline) {
      const reason = lastError instanceof Error ? `; last error: ${lastError.message}` : '';
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${description}${reason}`);
    }
    await new Promise((resolveWait) => setTimeout(resolveWait, intervalMs));
  }
}

/** The emulators accept any credentials; these never match a real account. */
const clientConfig = (endpoints: LocalEndpoints) => ({
  region: endpoints.region,
  credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
});

export function dynamoDbClient(endpoints: LocalEndpoints): DynamoDBClient {
  return new DynamoDBClient({ ...clientConfig(endpoints), endpoint: endpoints.dynamodbEndpoint });
}

export function documentClient(endpoints: LocalEndpoints): DynamoDBDocumentClient {
  return DynamoDBDocumentClient.from(dynamoDbClient(endpoints), {
    marshallOptions: { removeUndefinedValues: true },
  });
}

export function sqsClient(endpoints: LocalEndpoints): SQSClient {
  return new SQSClient({ ...clientConfig(endpoints), endpoint: endpoints.sqsEndpoint });
}

export function s3Client(endpoints: LocalEndpoints): S3Client {
  return new S3Client({ ...clientConfig(endpoints), endpoint: endpoints.s3Endpoint, forcePathStyle: true });
}

export function s3VectorsClient(endpoints: LocalEndpoints): S3VectorsClient {
  return new S3VectorsClient({ ...clientConfig(endpoints), endpoint: endpoints.s3vectorsEndpoint });
}

export function sfnClient(endpoints: LocalEndpoints): SFNClient {
  return new SFNClient({ ...clientConfig(endpoints), endpoint: endpoints.sfnEndpoint });
}

/** Messages in a queue, visible, in flight and delayed, counted as the ops report counts them. */
export async function queueDepth(sqs: SQSClient, queueUrl: string): Promise<number> {
  return (await queueCounts(sqs, queueUrl)).depth;
}
