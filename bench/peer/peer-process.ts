import { type ChildProcess, spawn } from 'node:child_process';
import { delimiter, join, resolve } from 'node:path';
import { watchChild } from '../../local/harness/child-process';

/**
 * Runs the BullMQ peer (bench/peer/server.ts) as its own process, the way the
 * bench runs Longhaul's local stack, so the bench process only plays the
 * clients.
 */

const ROOT = resolve(__dirname, '../..');
const BIN = join(ROOT, 'node_modules', '.bin');
const READY_LINE =
  /^bullmq peer: ready at (http:\/\/127\.0\.0\.1:\d+) provider (http:\/\/127\.0\.0\.1:\d+)$/m;
const OUTPUT_LIMIT = 256 * 1024;

export interface PeerProcessOptions {
  readonly redisPort: number;
  /** Worker concurrency: the most jobs at the provider at once. */
  readonly limit: number;
  /** How long one attempt waits for the provider's outcome before it fails and is retried. */
  readonly attemptTimeoutMs: number;
  /** Its queue's name, for peers that share one Redis. @default 'generations' */
  readonly queue?: string;
  /** A rate declared to the Worker's `limiter`, the same rate in windows of `burst` jobs. @default none */
  readonly rate?: { readonly requestsPerMinute: number; readonly burst: number };
  readonly readyTimeoutMs?: number;
}

export interface RunningPeer {
  /** The process the peer runs under (tsx, with the service as its child). */
  readonly pid: number;
  readonly url: string;
  readonly providerUrl: string;
  /** SIGTERM, then SIGKILL to the whole process group after `deadlineMs`. */
  stop(deadlineMs?: number): Promise<void>;
  /** Everything the process printed so far (the last 256 KiB). */
  output(): string;
}

/**
 * Runs a script of the peer under tsx with the Redis at `redisPort` and its
 * concurrency `limit` in its environment, plus `env`, as a process group of
 * its own: tsx runs the script in a child process that a SIGKILL of tsx alone
 * would leave.
 */
export function spawnPeerScript(
  script: string,
  options: { readonly redisPort: number; readonly limit: number },
  env: Readonly<Record<string, string>>,
): ChildProcess {
  return spawn(join(BIN, 'tsx'), [script], {
    cwd: ROOT,
    env: {
      ...process.env,
      PATH: `${BIN}${delimiter}${process.env.PATH ?? ''}`,
      REDIS_PORT: String(options.redisPort),
      PEER_LIMIT: String(options.limit),
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  });
}

export async function startPeerProcess(options: PeerProcessOptions): Promise<RunningPeer> {
  const child = spawnPeerScript('bench/peer/server.ts', options, {
    PEER_ATTEMPT_TIMEOUT_MS: String(options.attemptTimeoutMs),
    ...(options.queue ? { PEER_QUEUE: options.queue } : {}),
    ...(options.rate
      ? {
          PEER_RATE_PER_MINUTE: String(options.rate.requestsPerMinute),
          PEER_RATE_BURST: String(options.rate.burst),
        }
      : {}),
  });
  const watched = watchChild(child, { outputLimit: OUTPUT_LIMIT, detached: true });
  const { exited, output } = watched;
  // tsx passes SIGTERM on to the server, which closes the worker, the queue and the simulator.
  const stop = (deadlineMs = 10_000): Promise<void> => watched.stop(deadlineMs);

  const readyTimeoutMs = options.readyTimeoutMs ?? 60_000;
  try {
    const [, url, providerUrl] = await new Promise<RegExpExecArray>((resolveReady, rejectReady) => {
      const timer = setTimeout(
        () => rejectReady(new Error(`no ready line within ${readyTimeoutMs} ms`)),
        readyTimeoutMs,
      );
      const onData = () => {
        const ready = READY_LINE.exec(output());
        if (!ready) return;
        clearTimeout(timer);
        child.stdout?.off('data', onData);
        resolveReady(ready);
      };
      child.stdout?.on('data', onData);
      void exited.then(() => {
        clearTimeout(timer);
        rejectReady(
          new Error(`exited before it was ready (code ${child.exitCode}, signal ${child.signalCode})`),
        );
      });
    });
    return {
      pid: child.pid as number,
      url: url as string,
      providerUrl: providerUrl as string,
      stop,
      output,
    };
  } catch (error) {
    await stop();
    const reason = error instanceof Error ? error.message : String(error);
    throw new Error(
      `the BullMQ peer did not start: ${reason}\n--- its output (tail) ---\n${output().slice(-4000)}`,
    );
  }
}
