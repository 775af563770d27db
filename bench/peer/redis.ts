import { spawn, spawnSync } from 'node:child_process';
import { accessSync, constants, existsSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { Redis } from 'ioredis';
import { type WatchedChild, watchChild } from '../../local/harness/child-process';
import { pollUntil } from '../../local/harness/local-stack';

/**
 * A throwaway Redis for the BullMQ peer: Debian's `redis-server` on a free
 * loopback port, in a fresh directory, configured the way BullMQ's "Going to
 * production" guide asks for durable queues (AOF fsynced every second, no
 * RDB snapshots, `noeviction`), plus a probe that reads what Redis executed.
 */

const HOST = '127.0.0.1';
const OUTPUT_LIMIT = 64 * 1024;

export interface RunningRedis {
  readonly pid: number;
  readonly host: string;
  readonly port: number;
  /** SIGTERM, then SIGKILL after `deadlineMs`; removes the data directory either way. */
  stop(deadlineMs?: number): Promise<void>;
}

/** The `redis-server` on PATH, installed from Debian's packages first when this is a root Debian machine. */
export function ensureRedisServer(print: (line: string) => void): string {
  const found = findOnPath('redis-server');
  if (found) return found;
  if (!canInstallWithApt()) {
    throw new Error(
      "redis-server is not on PATH. Install Debian's redis-server (`apt-get install redis-server`) and run the bench again.",
    );
  }
  print("installing Debian's redis-server with apt-get (it is not on PATH)");
  runApt(['update']);
  runApt(['install', '-y', '--no-install-recommends', 'redis-server']);
  const installed = findOnPath('redis-server');
  if (!installed) throw new Error('apt-get installed redis-server, but it is still not on PATH.');
  return installed;
}

export async function startRedis(print: (line: string) => void): Promise<RunningRedis> {
  const executable = ensureRedisServer(print);
  const port = await freePort();
  const dir = mkdtempSync(join(tmpdir(), 'longhaul-peer-redis-'));
  const child = spawn(executable, serverArguments(port, dir), { stdio: ['ignore', 'pipe', 'pipe'] });
  const watched = watchChild(child, { outputLimit: OUTPUT_LIMIT, detached: false });
  const stop = stopper(watched, dir);

  try {
    await Promise.race([
      pollUntil(() => answersPing(port), {
        timeoutMs: 10_000,
        intervalMs: 50,
        description: `redis-server to answer PING on port ${port}`,
      }),
      watched.exited.then(() => {
        throw new Error(`redis-server exited during start-up:\n${watched.output().slice(-4000)}`);
      }),
    ]);
  } catch (error) {
    await stop();
    throw error;
  }
  return { pid: child.pid as number, host: HOST, port, stop };
}

/** What BullMQ's production guide asks of Redis, on a port only this machine can reach. */
function serverArguments(port: number, dir: string): string[] {
  return [
    '--port',
    String(port),
    '--bind',
    HOST,
    '--protected-mode',
    'yes',
    '--daemonize',
    'no',
    '--dir',
    dir,
    '--appendonly',
    'yes',
    '--appendfsync',
    'everysec',
    '--save',
    '',
    '--maxmemory-policy',
    'noeviction',
    '--loglevel',
    'warning',
  ];
}

function stopper(watched: WatchedChild, dir: string) {
  let stopping: Promise<void> | undefined;
  return (deadlineMs = 10_000): Promise<void> => {
    stopping ??= watched.stop(deadlineMs).then(() => rmSync(dir, { recursive: true, force: true }));
    return stopping;
  };
}

async function answersPing(port: number): Promise<boolean> {
  const client = new Redis({
    host: HOST,
    port,
    lazyConnect: true,
    enableOfflineQueue: false,
    maxRetriesPerRequest: 0,
    retryStrategy: () => null,
  });
  client.on('error', () => {});
  try {
    await client.connect();
    return (await client.ping()) === 'PONG';
  } finally {
    client.disconnect();
  }
}

/** A port that was free a moment ago: the kernel's pick for a listener on port 0. */
export function freePort(): Promise<number> {
  return new Promise((resolvePort, rejectPort) => {
    const server = createServer();
    server.once('error', rejectPort);
    server.listen(0, HOST, () => {
      const address = server.address();
      server.close(() => {
        if (address && typeof address === 'object') resolvePort(address.port);
        else rejectPort(new Error('listening on port 0 gave no port'));
      });
    });
  });
}

function findOnPath(name: string): string | undefined {
  for (const dir of (process.env.PATH ?? '').split(delimiter)) {
    if (!dir) continue;
    const candidate = join(dir, name);
    try {
      accessSync(candidate, constants.X_OK);
      return candidate;
    } catch {
      // Not in this directory.
    }
  }
  return undefined;
}

function canInstallWithApt(): boolean {
  return process.getuid?.() === 0 && existsSync('/etc/debian_version') && findOnPath('apt-get') !== undefined;
}

function runApt(args: string[]): void {
  const result = spawnSync('apt-get', args, {
    encoding: 'utf8',
    env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' },
    maxBuffer: 64 * 1024 * 1024,
  });
  if (result.status !== 0) {
    const output = `${result.stdout ?? ''}${result.stderr ?? ''}`.slice(-8000);
    throw new Error(
      `apt-get ${args.join(' ')} failed (${result.error?.message ?? `exit ${result.status}`}):\n${output}`,
    );
  }
}

/**
 * Reads what a Redis server has executed so far. Commands that scripts run
 * count in `INFO commandstats` like any other, so BullMQ's Lua scripts show up
 * both as EVALSHA calls and as the commands inside them.
 */
export class RedisProbe {
  private readonly writeFlags = new Map<string, boolean>();

  private constructor(private readonly client: Redis) {}

  static async connect(port: number): Promise<RedisProbe> {
    const client = new Redis({ host: HOST, port, lazyConnect: true, maxRetriesPerRequest: 1 });
    await client.connect();
    return new RedisProbe(client);
  }

  /** `redis_version` from `INFO server`. */
  async version(): Promise<string> {
    const version = parseInfo(await this.client.info('server')).get('redis_version');
    if (!version) throw new Error('INFO server has no redis_version');
    return version;
  }

  /** Calls per command from `INFO commandstats`, keyed like `hset` or `client|setname`. */
  async commandCalls(): Promise<Record<string, number>> {
    const calls: Record<string, number> = {};
    for (const [key, value] of parseInfo(await this.client.info('commandstats'))) {
      const count = /(?:^|,)calls=(\d+)/.exec(value)?.[1];
      if (key.startsWith('cmdstat_') && count) calls[key.slice('cmdstat_'.length)] = Number(count);
    }
    return calls;
  }

  /** Whether COMMAND INFO flags `command` as `write`: it may modify the keyspace. */
  async isWriteCommand(command: string): Promise<boolean> {
    let isWrite = this.writeFlags.get(command);
    if (isWrite === undefined) {
      const [info] = (await this.client.call('COMMAND', 'INFO', command)) as unknown[];
      const flags = Array.isArray(info) ? info[2] : undefined;
      isWrite = Array.isArray(flags) && flags.includes('write');
      this.writeFlags.set(command, isWrite);
    }
    return isWrite;
  }

  async close(): Promise<void> {
    await this.client.quit();
  }
}

function parseInfo(text: string): Map<string, string> {
  const fields = new Map<string, string>();
  for (const line of text.split(/\r?\n/)) {
    const separator = line.indexOf(':');
    if (separator > 0 && !line.startsWith('#'))
      fields.set(line.slice(0, separator), line.slice(separator + 1));
  }
  return fields;
}
