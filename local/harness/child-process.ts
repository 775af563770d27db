import type { ChildProcess } from 'node:child_process';

export interface Exit {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
}

/** A child process as the harness and the bench hold one. */
export interface WatchedChild {
  /** Settles when the process has exited, however that happened. */
  readonly exited: Promise<Exit>;
  /** The last of what it printed, stdout and stderr interleaved. */
  output(): string;
  /** SIGKILL: to its whole process group when it was spawned detached, so what it started goes too. */
  kill(): void;
  /** SIGTERM, then `kill()` if it has not exited within `deadlineMs`; settles once it has exited. The first call's deadline holds. */
  stop(deadlineMs: number): Promise<void>;
}

/**
 * Starts keeping the last `outputLimit` characters `child` prints and gives
 * the one way it is ended. Call it as soon as the child is spawned, before
 * anything else listens to its output. `detached` says it was spawned as the
 * leader of a process group of its own.
 */
export function watchChild(
  child: ChildProcess,
  options: { readonly outputLimit: number; readonly detached: boolean },
): WatchedChild {
  let output = '';
  const append = (chunk: Buffer) => {
    output = (output + chunk.toString('utf8')).slice(-options.outputLimit);
  };
  child.stdout?.on('data', append);
  child.stderr?.on('data', append);
  const exited = new Promise<Exit>((resolveExit) => {
    child.once('exit', (code, signal) => resolveExit({ code, signal }));
  });
  const kill = options.detached
    ? () => {
        try {
          process.kill(-(child.pid as number), 'SIGKILL');
        } catch {
          // Already gone.
        }
      }
    : () => {
        child.kill('SIGKILL');
      };
  let stopping: Promise<void> | undefined;
  return {
    exited,
    output: () => output,
    kill,
    stop(deadlineMs) {
      stopping ??= (async () => {
        if (child.exitCode !== null || child.signalCode !== null) return;
        child.kill('SIGTERM');
        const timer = setTimeout(kill, deadlineMs);
        await exited;
        clearTimeout(timer);
      })();
      return stopping;
    },
  };
}
