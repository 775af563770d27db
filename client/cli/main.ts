import { openAsBlob, readFileSync, statSync } from 'node:fs';
import { basename, extname } from 'node:path';
import { type ParseArgsConfig, parseArgs } from 'node:util';
import { LonghaulConnectionError, LonghaulError, LonghaulUsageError } from '../errors';
import { Longhaul, type UserAction } from '../longhaul';
import {
  type AdminJob,
  type CreateJobRequest,
  type FileInput,
  JOB_STATUSES,
  JOB_TYPES,
  type Job,
  type JobStatus,
  type JobType,
  type Page,
} from '../types';
import type { WebSocketConstructor } from '../wait';
import { formatJob, formatJobTable, formatTimeline, ProgressBar, type Stream } from './output';

/**
 * The `longhaul` command line. Exit codes: 0 done (with --wait: the job
 * succeeded); 1 an API, connection or usage error; 2 the awaited job failed,
 * was canceled or needs review; 130 interrupted while waiting.
 */

export const EXIT = { ok: 0, error: 1, jobUnsuccessful: 2, interrupted: 130 } as const;

export interface CliIo {
  readonly stdout: Stream;
  readonly stderr: Stream;
  readonly env: Readonly<Record<string, string | undefined>>;
  /** Aborted on Ctrl-C: a wait stops, the job goes on. */
  readonly signal?: AbortSignal;
  /** Seams for tests. */
  readonly fetch?: typeof fetch;
  readonly webSocket?: WebSocketConstructor | null;
  readonly sleep?: (ms: number, signal?: AbortSignal) => Promise<void>;
}

/** Someone is waiting at a terminal: give up on an unreachable API within seconds, not a minute. */
const CLI_RETRY = { maxAttempts: 5, maxDelayMs: 4000 } as const;

class UsageError extends Error {}

const USAGE = `Usage: longhaul <command> [options]

Commands:
  submit --type <type> [input] [--file <path>] [--webhook <url>] [--wait] [--idempotency-key <key>]
      input: --input '<json>' | --input @file.json, and/or
             image.generate:   --prompt <text> [--width <px>] [--height <px>]
             audio.transcribe: --audio-url <https url> | --file <audio file>, [--language <tag>]
      --file          up to 4 MiB sent with the job, larger through a presigned upload
      --content-type  of --file (default: from its extension)
      --wait          follow progress on stderr and print the finished job
      --idempotency-key  resume an earlier submission (its key is printed when it starts)
  jobs list [--status <status>] [--limit <n>] [--cursor <cursor>] [--all]
  jobs get <id>
  jobs cancel <id>
  jobs events <id>
  jobs wait <id>
  review list [--status needs_review|queued|running] [--limit <n>] [--cursor <cursor>] [--all]
  review resolve <id> --outcome succeeded|failed|requeue --note <why>
  dlq redrive

Every command takes --json (machine-readable output on stdout) and --url.
Environment: LONGHAUL_URL (default http://127.0.0.1:3000), LONGHAUL_API_KEY,
LONGHAUL_ADMIN_KEY (review, dlq), LONGHAUL_STREAM_URL (live progress; AWS: StreamUrl).
Exit codes: 0 ok, 1 API or usage error, 2 awaited job failed/canceled/needs review, 130 interrupted.
`;

type Options = NonNullable<ParseArgsConfig['options']>;

const common = {
  json: { type: 'boolean' },
  url: { type: 'string' },
  help: { type: 'boolean', short: 'h' },
} as const satisfies Options;

interface Command {
  readonly options: Options;
  /** Names of the positional arguments, all required. */
  readonly positionals: readonly string[];
  readonly run: (context: Context) => Promise<number>;
}

interface Context {
  readonly io: CliIo;
  readonly values: Record<string, string | boolean | undefined>;
  readonly positionals: readonly string[];
  readonly json: boolean;
  readonly client: () => Longhaul;
}

const pageOptions = {
  limit: { type: 'string' },
  cursor: { type: 'string' },
  all: { type: 'boolean' },
  status: { type: 'string' },
} as const satisfies Options;

const commands: Record<string, Command> = {
  submit: {
    options: {
      type: { type: 'string' },
      input: { type: 'string' },
      prompt: { type: 'string' },
      width: { type: 'string' },
      height: { type: 'string' },
      'audio-url': { type: 'string' },
      language: { type: 'string' },
      file: { type: 'string' },
      'content-type': { type: 'string' },
      webhook: { type: 'string' },
      wait: { type: 'boolean' },
      'idempotency-key': { type: 'string' },
    },
    positionals: [],
    run: submit,
  },
  'jobs list': { options: pageOptions, positionals: [], run: listJobs },
  'jobs get': {
    options: {},
    positionals: ['id'],
    run: async (c) => printJob(c, await c.client().getJob(id(c), { signal: c.io.signal })),
  },
  'jobs cancel': {
    options: {},
    positionals: ['id'],
    run: async (c) => printJob(c, await c.client().cancelJob(id(c), { signal: c.io.signal })),
  },
  'jobs events': {
    options: {},
    positionals: ['id'],
    run: async (c) => {
      const items = await c.client().jobEvents(id(c), { signal: c.io.signal });
      c.io.stdout.write(c.json ? `${JSON.stringify({ items }, null, 2)}\n` : formatTimeline(items));
      return EXIT.ok;
    },
  },
  'jobs wait': { options: {}, positionals: ['id'], run: (c) => waitAndPrint(c, id(c)) },
  'review list': { options: pageOptions, positionals: [], run: reviewList },
  'review resolve': {
    options: { outcome: { type: 'string' }, note: { type: 'string' } },
    positionals: ['id'],
    run: async (c) => {
      const outcome = oneOf('--outcome', c.values.outcome, ['succeeded', 'failed', 'requeue'] as const);
      const note = c.values.note;
      if (typeof note !== 'string' || note.trim() === '')
        throw new UsageError('--note is required: say why.');
      return printJob(c, await c.client().resolve(id(c), { outcome, note }, { signal: c.io.signal }));
    },
  },
  'dlq redrive': {
    options: {},
    positionals: [],
    run: async (c) => {
      const started = await c.client().redriveDeadLetters({ signal: c.io.signal });
      c.io.stdout.write(
        c.json
          ? `${JSON.stringify(started, null, 2)}\n`
          : `dead-letter redrive started (task ${started.taskHandle})\n`,
      );
      return EXIT.ok;
    },
  },
};

const GROUPS = new Set(['jobs', 'review', 'dlq']);

/** Runs one command line; resolves to the exit code. */
export async function runCli(argv: readonly string[], io: CliIo): Promise<number> {
  const [first, second] = argv;
  if (first === undefined || first === 'help' || first === '--help' || first === '-h') {
    (first === undefined ? io.stderr : io.stdout).write(USAGE);
    return first === undefined ? EXIT.error : EXIT.ok;
  }
  const name = GROUPS.has(first) ? `${first} ${second ?? ''}`.trim() : first;
  const command = commands[name];
  const json = argv.includes('--json');
  if (!command) {
    io.stderr.write(`longhaul: unknown command "${name}". Run longhaul --help.\n`);
    return EXIT.error;
  }
  try {
    const parsed = parseArgs({
      args: argv.slice(name.split(' ').length),
      options: { ...common, ...command.options },
      allowPositionals: true,
      strict: true,
    });
    if (parsed.values.help) {
      io.stdout.write(USAGE);
      return EXIT.ok;
    }
    if (parsed.positionals.length !== command.positionals.length) {
      const expected = command.positionals.map((p) => `<${p}>`).join(' ');
      throw new UsageError(`${name} takes ${expected || 'no arguments'}.`);
    }
    const values = parsed.values as Record<string, string | boolean | undefined>;
    let client: Longhaul | undefined;
    return await command.run({
      io,
      values,
      positionals: parsed.positionals,
      json,
      client: () => {
        client ??= createClient(io, typeof values.url === 'string' ? values.url : undefined);
        return client;
      },
    });
  } catch (error) {
    return reportError(error, io, json);
  }
}

function createClient(io: CliIo, url: string | undefined): Longhaul {
  const { env } = io;
  return new Longhaul({
    baseUrl: url ?? env.LONGHAUL_URL ?? 'http://127.0.0.1:3000',
    ...(env.LONGHAUL_API_KEY ? { apiKey: env.LONGHAUL_API_KEY } : {}),
    ...(env.LONGHAUL_ADMIN_KEY ? { adminKey: env.LONGHAUL_ADMIN_KEY } : {}),
    ...(env.LONGHAUL_STREAM_URL ? { streamUrl: env.LONGHAUL_STREAM_URL } : {}),
    ...(io.fetch ? { fetch: io.fetch } : {}),
    ...(io.webSocket !== undefined ? { webSocket: io.webSocket } : {}),
    ...(io.sleep ? { sleep: io.sleep } : {}),
    retry: CLI_RETRY,
  });
}

function reportError(error: unknown, io: CliIo, json: boolean): number {
  if (io.signal?.aborted && (error === io.signal.reason || (error as Error)?.name === 'AbortError')) {
    io.stderr.write('\nlonghaul: interrupted\n');
    return EXIT.interrupted;
  }
  if (error instanceof LonghaulError) {
    const { problem } = error;
    const lines = [`longhaul: ${problem.title} (${problem.status} ${problem.code}): ${problem.detail}`];
    for (const item of problem.errors ?? []) {
      lines.push(`  ${item.pointer ?? item.parameter ?? ''}: ${item.detail}`.replace(/^ {2}: /, '  '));
    }
    if (problem.status === 401)
      lines.push('  Check LONGHAUL_API_KEY (LONGHAUL_ADMIN_KEY for review and dlq).');
    if (problem.status === 403) lines.push('  This command needs the other kind of key (tenant or admin).');
    if (problem.instance) lines.push(`  request: ${problem.instance}`);
    io.stderr.write(`${lines.join('\n')}\n`);
    if (json) io.stdout.write(`${JSON.stringify({ error: problem }, null, 2)}\n`);
    return EXIT.error;
  }
  if (error instanceof LonghaulConnectionError) {
    io.stderr.write(`longhaul: cannot reach the API: ${error.message}\n  Check LONGHAUL_URL (or --url).\n`);
    return EXIT.error;
  }
  const parseError = String((error as { code?: unknown })?.code ?? '').startsWith('ERR_PARSE_ARGS');
  if (error instanceof UsageError || error instanceof LonghaulUsageError || parseError) {
    io.stderr.write(`longhaul: ${(error as Error).message}\n  Run longhaul --help for usage.\n`);
    return EXIT.error;
  }
  io.stderr.write(
    `longhaul: unexpected error: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`,
  );
  return EXIT.error;
}

function id(c: Context): string {
  const value = c.positionals[0];
  if (!value) throw new UsageError('A job id is required.');
  return value;
}

function oneOf<const T extends string>(flag: string, value: unknown, allowed: readonly T[]): T {
  if (typeof value !== 'string' || !allowed.includes(value as T)) {
    throw new UsageError(`${flag} must be one of ${allowed.join(', ')}.`);
  }
  return value as T;
}

function integer(flag: string, value: unknown): number | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'string' || !/^\d+$/.test(value))
    throw new UsageError(`${flag} must be a whole number.`);
  return Number(value);
}

function printJob(c: Context, job: Job): number {
  c.io.stdout.write(c.json ? `${JSON.stringify(job, null, 2)}\n` : formatJob(job));
  return EXIT.ok;
}

async function listJobs(c: Context): Promise<number> {
  const status =
    c.values.status === undefined ? undefined : oneOf<JobStatus>('--status', c.values.status, JOB_STATUSES);
  const query = {
    ...(status ? { status } : {}),
    ...(c.values.limit !== undefined ? { limit: integer('--limit', c.values.limit) } : {}),
    ...(typeof c.values.cursor === 'string' ? { cursor: c.values.cursor } : {}),
  };
  const pages = c.client().listJobs(query, { signal: c.io.signal });
  return printPages(c, pages, 'jobs list');
}

async function reviewList(c: Context): Promise<number> {
  const status =
    c.values.status === undefined
      ? undefined
      : oneOf('--status', c.values.status, ['needs_review', 'queued', 'running'] as const);
  const query = {
    ...(status ? { status } : {}),
    ...(c.values.limit !== undefined ? { limit: integer('--limit', c.values.limit) } : {}),
    ...(typeof c.values.cursor === 'string' ? { cursor: c.values.cursor } : {}),
  };
  return printPages(c, c.client().reviewList(query, { signal: c.io.signal }), 'review list');
}

/** One page, or every page with --all. */
async function printPages(
  c: Context,
  pages: AsyncGenerator<Page<Job | AdminJob>>,
  command: string,
): Promise<number> {
  const items: (Job | AdminJob)[] = [];
  let nextCursor: string | null = null;
  for await (const page of pages) {
    items.push(...page.items);
    nextCursor = page.nextCursor;
    if (!c.values.all) break;
  }
  if (c.json) {
    c.io.stdout.write(`${JSON.stringify({ items, nextCursor }, null, 2)}\n`);
  } else {
    c.io.stdout.write(formatJobTable({ items }));
    if (nextCursor) c.io.stderr.write(`more: longhaul ${command} --cursor ${nextCursor}\n`);
  }
  return EXIT.ok;
}

const MEDIA_TYPES: Record<string, string> = {
  '.mp3': 'audio/mpeg',
  '.m4a': 'audio/mp4',
  '.mp4': 'audio/mp4',
  '.wav': 'audio/wav',
  '.ogg': 'audio/ogg',
  '.oga': 'audio/ogg',
  '.opus': 'audio/opus',
  '.flac': 'audio/flac',
  '.webm': 'audio/webm',
  '.aac': 'audio/aac',
  '.png': 'image/png',
  '.jpg': 'image/jpeg',
  '.jpeg': 'image/jpeg',
  '.webp': 'image/webp',
  '.gif': 'image/gif',
};

async function readFileInput(path: string, contentType: string | undefined): Promise<FileInput> {
  let size: number;
  try {
    size = statSync(path).size;
  } catch {
    throw new UsageError(`Cannot read --file ${path}.`);
  }
  if (size === 0) throw new UsageError(`--file ${path} is empty.`);
  const type = contentType ?? MEDIA_TYPES[extname(path).toLowerCase()];
  if (!type) throw new UsageError(`Cannot tell the media type of ${path}: pass --content-type.`);
  // A Blob backed by the file: large inputs are streamed, never read into memory whole.
  return { data: await openAsBlob(path, { type }), contentType: type, filename: basename(path) };
}

function readInputFlag(value: string): Record<string, unknown> {
  let text = value;
  if (value.startsWith('@')) {
    try {
      text = readFileSync(value.slice(1), 'utf8');
    } catch {
      throw new UsageError(`Cannot read --input ${value}.`);
    }
  }
  let input: unknown;
  try {
    input = JSON.parse(text);
  } catch (error) {
    throw new UsageError(`--input is not JSON: ${(error as Error).message}`);
  }
  if (!input || typeof input !== 'object' || Array.isArray(input)) {
    throw new UsageError('--input must be a JSON object.');
  }
  return input as Record<string, unknown>;
}

function submissionOf(values: Context['values'], file: FileInput | undefined): CreateJobRequest {
  const type = values.type === undefined ? undefined : oneOf<JobType>('--type', values.type, JOB_TYPES);
  if (!type) throw new UsageError(`--type is required: ${JOB_TYPES.join(' or ')}.`);
  const input: Record<string, unknown> = typeof values.input === 'string' ? readInputFlag(values.input) : {};
  // Flags override the same fields of --input.
  const set = (field: string, value: unknown) => {
    if (value !== undefined) input[field] = value;
  };
  const imageFlags = ['prompt', 'width', 'height'].filter((f) => values[f] !== undefined);
  const audioFlags = ['audio-url', 'language'].filter((f) => values[f] !== undefined);
  if (type === 'image.generate' && audioFlags.length > 0) {
    throw new UsageError(`--${audioFlags[0]} is for audio.transcribe jobs.`);
  }
  if (type === 'audio.transcribe' && imageFlags.length > 0) {
    throw new UsageError(`--${imageFlags[0]} is for image.generate jobs.`);
  }
  set('prompt', values.prompt);
  set('width', integer('--width', values.width));
  set('height', integer('--height', values.height));
  set('audioUrl', values['audio-url']);
  set('language', values.language);
  const webhookUrl = typeof values.webhook === 'string' ? values.webhook : undefined;
  return {
    type,
    input,
    ...(webhookUrl !== undefined ? { webhookUrl } : {}),
    ...(file ? { file } : {}),
  } as CreateJobRequest;
}

async function submit(c: Context): Promise<number> {
  const { values, io } = c;
  const contentType = typeof values['content-type'] === 'string' ? values['content-type'] : undefined;
  const file = typeof values.file === 'string' ? await readFileInput(values.file, contentType) : undefined;
  const request = submissionOf(values, file);
  const client = c.client();
  const resumeKey = typeof values['idempotency-key'] === 'string' ? values['idempotency-key'] : undefined;
  let action: UserAction;
  try {
    action = client.userAction(resumeKey);
  } catch (error) {
    throw new UsageError(`--idempotency-key: ${(error as Error).message}`);
  }
  if (!resumeKey) {
    io.stderr.write(
      `idempotency key: ${action.idempotencyKey}\n  (if this is interrupted, resume it with --idempotency-key ${action.idempotencyKey})\n`,
    );
  }
  const created = await client.createJob(action, request, { signal: io.signal });
  if (created.replayed)
    io.stderr.write(`${created.job.id}: already submitted with this key; this is that job\n`);
  if (values.wait) return waitAndPrint(c, created.job.id);
  if (c.json) {
    io.stdout.write(`${JSON.stringify(created.job, null, 2)}\n`);
  } else {
    io.stdout.write(`${created.job.id} ${created.job.status}\n`);
    io.stderr.write(`follow it: longhaul jobs wait ${created.job.id}\n`);
  }
  return EXIT.ok;
}

async function waitAndPrint(c: Context, jobId: string): Promise<number> {
  const bar = new ProgressBar(c.io.stderr, jobId);
  let job: Job;
  try {
    job = await c.client().waitForJob(jobId, {
      onProgress: (update) => bar.update(update),
      ...(c.io.signal ? { signal: c.io.signal } : {}),
    });
  } catch (error) {
    bar.finish();
    if (c.io.signal?.aborted) {
      c.io.stderr.write(`stopped waiting; ${jobId} goes on. Follow it again: longhaul jobs wait ${jobId}\n`);
      return EXIT.interrupted;
    }
    throw error;
  }
  bar.finish();
  c.io.stdout.write(c.json ? `${JSON.stringify(job, null, 2)}\n` : formatJob(job));
  if (job.status === 'succeeded') return EXIT.ok;
  c.io.stderr.write(
    job.status === 'needs_review'
      ? `${job.id} needs review by an operator${job.error ? `: ${job.error.message}` : ''}\n`
      : `${job.id} ${job.status}${job.error ? `: ${job.error.code}: ${job.error.message}` : ''}\n`,
  );
  return EXIT.jobUnsuccessful;
}
