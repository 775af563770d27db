import { loadSettings, type Settings, SettingsError } from '../config/settings';
import { type LocalConfig, LocalConfigError, localSettingsEnvironment, parseLocalConfig } from './config';
import { type LocalStack, startLocalStack } from './stack';

/**
 * `npm start`: the local stack (contract section 2). Prints the ready line on
 * stdout once it accepts requests; everything else goes to stderr, apart from
 * what the handlers log.
 */

/** How long SIGINT/SIGTERM may take before the process exits regardless. */
const SHUTDOWN_DEADLINE_MS = 8000;

const log = (line: string) => process.stderr.write(`longhaul local: ${line}\n`);

function fail(message: string): never {
  process.stderr.write(`longhaul local: ${message}\n`);
  process.exit(1);
}

function readConfiguration(): { config: LocalConfig; settings: Settings } {
  const problems: string[] = [];
  let config: LocalConfig | undefined;
  let settings: Settings | undefined;
  try {
    config = parseLocalConfig(process.env);
  } catch (error) {
    if (!(error instanceof LocalConfigError)) throw error;
    problems.push(error.message);
  }
  try {
    settings = loadSettings(localSettingsEnvironment(process.env));
  } catch (error) {
    if (!(error instanceof SettingsError)) throw error;
    problems.push(error.message);
  }
  if (!config || !settings) fail(problems.join('\n'));
  return { config, settings };
}

/**
 * SIGINT/SIGTERM stop the stack and exit 0; a signal during start-up stops it
 * as soon as start-up is over. A second signal, or a stop that overruns its
 * deadline, exits at once with 1.
 */
function handleSignals(stackReady: Promise<LocalStack>): void {
  let stopping = false;
  const shutdown = (signal: NodeJS.Signals) => {
    if (stopping) {
      log(`${signal} again: exiting without waiting`);
      process.exit(1);
    }
    stopping = true;
    log(`${signal}: stopping`);
    setTimeout(() => {
      log(`still stopping after ${SHUTDOWN_DEADLINE_MS} ms: exiting anyway`);
      process.exit(1);
    }, SHUTDOWN_DEADLINE_MS).unref();
    stackReady
      .then((stack) => stack.stop())
      .then(
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

async function main(): Promise<void> {
  const { config, settings } = readConfiguration();
  const stackReady = startLocalStack(config, settings, log);
  handleSignals(stackReady);
  let stack: LocalStack;
  try {
    stack = await stackReady;
  } catch (error) {
    fail(`could not start: ${error instanceof Error ? error.message : String(error)}`);
  }
  process.stdout.write(`longhaul local: ready at ${stack.info.apiUrl}\n`);
}

process.on('uncaughtException', (error) => fail(`fatal: ${error.stack ?? error.message}`));
process.on('unhandledRejection', (reason) => fail(`fatal: unhandled rejection: ${String(reason)}`));
void main();
