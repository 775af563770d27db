/**
 * The reconciler's schedule, as EventBridge Scheduler runs it in AWS
 * (lib/constructs/reconciler.ts): one pass every `intervalMs`, and one right
 * away, so a stack restarted after a crash converges at once instead of a
 * period later. Passes are safe to overlap, but locally one process runs
 * them all, so a tick that finds the previous pass still running is skipped
 * rather than piling passes up behind a slow one. A failed pass is only
 * logged: the next tick comes soon, as the deployed schedule never retries.
 */
export interface ReconcilerSchedule {
  /** Stops ticking, then waits up to `graceMs` for a pass in progress. */
  stop(graceMs?: number): Promise<void>;
}

export function startReconcilerSchedule(options: {
  readonly intervalMs: number;
  /** One pass; Lambda-like, with the function's deadline. */
  readonly runPass: () => Promise<unknown>;
  /** Failures and skipped ticks only. */
  readonly log: (line: string) => void;
}): ReconcilerSchedule {
  const { log } = options;
  let running: Promise<void> | undefined;
  let stopping = false;

  const tick = () => {
    if (stopping) return;
    if (running) {
      log('reconciler: skipped a tick, the previous pass is still running');
      return;
    }
    running = options
      .runPass()
      .then(
        () => undefined,
        (error: unknown) =>
          log(
            `reconciler: the pass failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`,
          ),
      )
      .finally(() => {
        running = undefined;
      });
  };

  const timer = setInterval(tick, options.intervalMs);
  tick();
  let stopped: Promise<void> | undefined;
  return {
    stop(graceMs = 3000) {
      stopped ??= (async () => {
        stopping = true;
        clearInterval(timer);
        if (!running) return;
        let deadline: NodeJS.Timeout | undefined;
        const gaveUp = new Promise<'gave up'>((resolve) => {
          deadline = setTimeout(() => resolve('gave up'), graceMs);
        });
        const outcome = await Promise.race([running, gaveUp]);
        clearTimeout(deadline);
        if (outcome === 'gave up') log(`reconciler: stopped with a pass still running after ${graceMs} ms`);
      })();
      return stopped;
    },
  };
}
