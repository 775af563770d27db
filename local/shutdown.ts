/**
 * How a process of the local stack ends on a signal: SIGINT or SIGTERM stops
 * what `ready` starts and exits 0; a signal during start-up stops it as soon
 * as start-up is over. A second signal, a stop that fails, or one that
 * overruns `deadlineMs` exits with 1.
 */
export function stopOnSignals<T>(
  ready: Promise<T>,
  options: {
    readonly stop: (running: T) => Promise<void>;
    readonly deadlineMs: number;
    readonly log: (line: string) => void;
  },
): void {
  const { stop, deadlineMs, log } = options;
  let stopping = false;
  const shutdown = (signal: NodeJS.Signals) => {
    if (stopping) {
      log(`${signal} again: exiting without waiting`);
      process.exit(1);
    }
    stopping = true;
    log(`${signal}: stopping`);
    setTimeout(() => {
      log(`still stopping after ${deadlineMs} ms: exiting anyway`);
      process.exit(1);
    }, deadlineMs).unref();
    ready.then(stop).then(
      () => process.exit(0),
      (error: unknown) => {
        const reasons = error instanceof AggregateError ? error.errors : [error];
        log(`stopped with errors: ${reasons.map(String).join('; ')}`);
        process.exit(1);
      },
    );
  };
  process.on('SIGINT', shutdown);
  process.on('SIGTERM', shutdown);
}
