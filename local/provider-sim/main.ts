import * as z from 'zod';
import { stopOnSignals } from '../shutdown';
import {
  DEFAULT_DEEPGRAM_API_KEY_ID,
  DEFAULT_DEEPGRAM_PROJECT_ID,
  DEFAULT_REPLICATE_WEBHOOK_SECRET,
} from './defaults';
import { REPLICATE_WEBHOOK_SECRET_FORMAT } from './replicate';
import {
  DEFAULT_BEDROCK_JOB_MS,
  DEFAULT_DEEPGRAM_REAL_TIME_FACTOR,
  DEFAULT_OUTPUT_TTL_MS,
  MAX_OUTPUT_TTL_MS,
  MAX_REAL_TIME_FACTOR,
  type RunningSimulator,
  type SimulatorOptions,
  startSimulator,
} from './simulator';

/**
 * `npm run sim`: the simulated provider on its own (contract sections 2 and 3),
 * so it can outlive a crash of the local stack the way a real provider would.
 * Prints the ready line on stdout; everything else goes to stderr. The default
 * dialect credentials live in ./defaults, which the local stack can import
 * without starting anything.
 *
 * Besides the contract's `SIM_*` settings: `SIM_OUTPUT_TTL_MS` (how long
 * Replicate outputs stay downloadable), `SIM_REPLICATE_WEBHOOK_SECRET`,
 * `SIM_DEEPGRAM_API_KEY_ID`, `SIM_DEEPGRAM_PROJECT_ID`, and
 * `SIM_DEEPGRAM_REAL_TIME_FACTOR` (default 0.01): how long Deepgram takes
 * per second of FLAC or WAV audio whose length it can read, on top of
 * `SIM_JOB_MS`, so an hour takes 36 s more than a minute does. `POST
 * /_sim/config {provider: "deepgram", realTimeFactor}` changes it while
 * running, which is how a local stack's simulator is set.
 * `SIM_BEDROCK_JOB_MS` (default 100) is how long a Bedrock call takes
 * instead of `SIM_JOB_MS`.
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
  SIM_OUTPUT_TTL_MS: z.preprocess(
    unsetIfEmpty,
    wholeNumber(0, MAX_OUTPUT_TTL_MS).default(DEFAULT_OUTPUT_TTL_MS),
  ),
  PROVIDER_WEBHOOK_SECRET: z.preprocess(unsetIfEmpty, z.string().default('dev-provider-webhook-secret')),
  SIM_REPLICATE_WEBHOOK_SECRET: z.preprocess(
    unsetIfEmpty,
    z
      .string()
      .regex(REPLICATE_WEBHOOK_SECRET_FORMAT, 'must be whsec_ followed by base64')
      .default(DEFAULT_REPLICATE_WEBHOOK_SECRET),
  ),
  SIM_DEEPGRAM_API_KEY_ID: z.preprocess(unsetIfEmpty, z.string().default(DEFAULT_DEEPGRAM_API_KEY_ID)),
  SIM_DEEPGRAM_PROJECT_ID: z.preprocess(unsetIfEmpty, z.string().default(DEFAULT_DEEPGRAM_PROJECT_ID)),
  SIM_DEEPGRAM_REAL_TIME_FACTOR: z.preprocess(
    unsetIfEmpty,
    z
      .string()
      .regex(/^\d+(\.\d+)?$/, 'must be a number')
      .transform(Number)
      .pipe(z.number().max(MAX_REAL_TIME_FACTOR, `must be at most ${MAX_REAL_TIME_FACTOR}`))
      .default(DEFAULT_DEEPGRAM_REAL_TIME_FACTOR),
  ),
  SIM_BEDROCK_JOB_MS: z.preprocess(unsetIfEmpty, wholeNumber(1, 86_400_000).default(DEFAULT_BEDROCK_JOB_MS)),
  PROVIDER_API_KEY: z.preprocess(unsetIfEmpty, z.string().optional()),
});

/** Secrets are never repeated in a message; the other values are, so the mistake is visible. */
const SECRET_VARIABLES = new Set([
  'PROVIDER_WEBHOOK_SECRET',
  'PROVIDER_API_KEY',
  'SIM_REPLICATE_WEBHOOK_SECRET',
]);

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
    outputTtlMs: settings.SIM_OUTPUT_TTL_MS,
    webhookSecret: settings.PROVIDER_WEBHOOK_SECRET,
    replicateWebhookSecret: settings.SIM_REPLICATE_WEBHOOK_SECRET,
    deepgramApiKeyId: settings.SIM_DEEPGRAM_API_KEY_ID,
    deepgramProjectId: settings.SIM_DEEPGRAM_PROJECT_ID,
    deepgramRealTimeFactor: settings.SIM_DEEPGRAM_REAL_TIME_FACTOR,
    bedrockJobMs: settings.SIM_BEDROCK_JOB_MS,
    apiKey: settings.PROVIDER_API_KEY,
    log,
  };
}

async function main(): Promise<void> {
  const options = readOptions(process.env);
  const ready = startSimulator(options);
  stopOnSignals(ready, {
    stop: (simulator) => simulator.close(),
    deadlineMs: SHUTDOWN_DEADLINE_MS,
    log,
  });
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
      ` outputTtlMs=${options.outputTtlMs} deepgramRealTimeFactor=${options.deepgramRealTimeFactor}` +
      ` bedrockJobMs=${options.bedrockJobMs}` +
      ` auth=${options.apiKey ? 'bearer' : 'none'}`,
  );
  process.stdout.write(`longhaul sim: ready at ${simulator.url}\n`);
}

process.on('uncaughtException', (error) => fail(`fatal: ${error.stack ?? error.message}`));
process.on('unhandledRejection', (reason) => fail(`fatal: unhandled rejection: ${String(reason)}`));
void main();
