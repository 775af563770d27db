import { loadSettings, type Settings, SettingsError } from '../config/settings';
import { type LocalConfig, LocalConfigError, localSettingsEnvironment, parseLocalConfig } from './config';
import { stopOnSignals } from './shutdown';
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

async function main(): Promise<void> {
  const { config, settings } = readConfiguration();
  const stackReady = startLocalStack(config, settings, log);
  stopOnSignals(stackReady, { stop: (stack) => stack.stop(), deadlineMs: SHUTDOWN_DEADLINE_MS, log });
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
