import { z } from 'zod';
import { type RunningSimulator, type SimulatorOptions, startSimulator } from './simulator';

/**
 * `npm run sim`: the simulated provider on its own (contract sections 2 and 3),
 * so it can outlive a crash of the local stack the way a real provider would.
 * Prints the ready line on stdout; everything else goes to stderr.
 */

/** How long SIGINT/SIGTERM may take before the process exits regardless. */
const SHUTDOWN_DEADLINE_MS = 3000;

const log = (line: string) => process.stderr.write(`longhaul sim: ${line}\n`);

function fail(message: string): never {
  log(message);
  process.exit(1);
}

/** An unset or empty variable takes its default, as in a shell `${VAR:-default}`. */
const unsetIfEmpty = (value: unknown) => (value === '' ? undefined : value);

const wholeNumber = (min: number, max: number) =>
  z
    .string()
    .regex(/^\d+$/, 'must be a whole number')
    .transform(Number)
    .pipe(z.number().min(min, `must be at least ${min}`).max(max, `must be at most ${max}`));

const environmentSchema = z.object({
  SIM_PORT: z.preprocess(unsetIfEmpty, wholeNumber(0, 65535).default(3100)),
  SIM_JOB_MS: z.preprocess(unsetIfEmpty, wholeNumber(1, 86_400_000).default(3000)),
  SIM_PROGRESS_HZ: z.preprocess(
    unsetIfEmpty,
    z
      .string()
      .regex(/^\d+(\.\d+)?$/, 'must be a number')
      .transform(Number)
      .pipe(z.number().positive('must be greater than 0').max(1000, 'must be at most 1000'))
      .default(10),
  ),
  SIM_IDEMPOTENT: z.preprocess(
    unsetIfEmpty,
    z
      .enum(['1', '0', 'true', 'false'], 'must be 1, 0, true or false')
      .transform((value) => value === '1' || value === 'true')
      .default(true),
  ),
  PROVIDER_WEBHOOK_SECRET: z.preprocess(unsetIfEmpty, z.string().default('dev-provider-webhook-secret')),
  PROVIDER_API_KEY: z.preprocess(unsetIfEmpty, z.string().optional()),
});

/** Secrets are never repeated in a message; the other values are, so the mistake is visible. */
const SECRET_VARIABLES = new Set(['PROVIDER_WEBHOOK_SECRET', 'PROVIDER_API_KEY']);

function readOptions(env: NodeJS.ProcessEnv): SimulatorOptions & { port: number } {
  const result = environmentSchema.safeParse(env);
  if (!result.success) {
    const problems = result.error.issues.map((issue) => {
      const name = String(issue.path[0]);
      const shown = SECRET_VARIABLES.has(name) ? '' : ` (got ${JSON.stringify(env[name])})`;
      return `  - ${name}: ${issue.message}${shown}`;
    });
    fail(`invalid environment:\n${problems.join('\n')}`);
  }
  const settings = result.data;
  return {
    port: settings.SIM_PORT,
    jobMs: settings.SIM_JOB_MS,
    progressHz: settings.SIM_PROGRESS_HZ,
    idempotent: settings.SIM_IDEMPOTENT,
    webhookSecret: settings.PROVIDER_WEBHOOK_SECRET,
    apiKey: settings.PROVIDER_API_KEY,
    log,
  };
}

function handleSignals(ready: Promise<RunningSimulator>): void {
  let stopping = false;
  const shutdown = (signal: NodeJS.Signals) => {
    if (stopping) process.exit(1);
    stopping = true;
    log(`${signal}: stopping`);
    setTimeout(() => {
      log(`still stopping after ${SHUTDOWN_DEADLINE_MS} ms: exiting anyway`);
      process.exit(1);
    }, SHUTDOWN_DEADLINE_MS).unref();
    ready
      .then((simulator) => simulator.close())
      .then(
        () => process.exit(0),
        (error: unknown) =>
          fail(`stopped with an error: ${error instanceof Error ? error.message : String(error)}`),
      );
  };
  process.on('SIGINT', shutdown);
  process.on('SIGTERM', shutdown);
}

async function main(): Promise<void> {
  const options = readOptions(process.env);
  const ready = startSimulator(options);
  handleSignals(ready);
  let simulator: RunningSimulator;
  try {
    simulator = await ready;
  } catch (error) {
    fail(
      `could not start on port ${options.port}: ${error instanceof Error ? error.message : String(error)}`,
    );
  }
  log(
    `jobMs=${options.jobMs} progressHz=${options.progressHz} idempotent=${options.idempotent}` +
      ` auth=${options.apiKey ? 'bearer' : 'none'}`,
  );
  process.stdout.write(`longhaul sim: ready at ${simulator.url}\n`);
}

process.on('uncaughtException', (error) => fail(`fatal: ${error.stack ?? error.message}`));
process.on('unhandledRejection', (reason) => fail(`fatal: unhandled rejection: ${String(reason)}`));
void main();
