import { closeSync, openAsBlob, openSync, readFileSync, statSync } from 'node:fs';
import { basename, extname } from 'node:path';
import { type ParseArgsConfig, parseArgs } from 'node:util';
import {
  LonghaulAPIError,
  LonghaulConnectionError,
  type LonghaulOptionName,
  LonghaulUsageError,
  LonghaulUserAbortError,
} from '../errors';
import { Longhaul, type UserAction } from '../longhaul';
import {
  type AdminJob,
  type BatchItem,
  type BatchItemResult,
  type CreateJobRequest,
  DEFAULT_PRIORITY,
  type FileInput,
  JOB_PRIORITIES,
  JOB_STATUSES,
  JOB_TYPE_INPUTS,
  type Job,
  type JobFilter,
  type JobStatus,
  type ListMediaQuery,
  MAX_BATCH_ITEMS,
  type MediaItem,
  type ReplayFilter,
  type ReplayResult,
  type Schedule,
  type ScheduledJob,
  type SearchFilter,
  type SearchRequest,
  type UpdateMediaRequest,
} from '../types';
import { SDK_VERSION } from '../version';
import type { WebSocketConstructor } from '../wait';
import { type KeyKind, keyFromText, readKeyFile, readStoredKeys, storeKey } from './credentials';
import { DURATION_HELP, durationSeconds, runAtOf } from './durations';
import { type InputTable, inputFlagOptions, inputFlagsHelp, inputFromFlags } from './input-flags';
import {
  formatBatchResults,
  formatJob,
  formatJobTable,
  formatMediaItem,
  formatMediaTable,
  formatSearchHits,
  formatTimeline,
  ProgressBar,
  type Stream,
} from './output';
import { UsageError } from './usage-error';
import { closest, parseArgsUsageError } from './words';

/**
 * The `longhaul` command line. Exit codes (documented in client/README.md and
 * `longhaul --help`) are distinct per kind of failure, so scripts can tell a
 * wrong key from a missing job from a network that is down.
 */
export const EXIT = {
  ok: 0,
  /** The API refused the request (validation, conflict, …) or failed; or a confirmation was answered no. */
  error: 1,
  /** The awaited job failed, was canceled or needs review. */
  jobUnsuccessful: 2,
  /** The command line is wrong: unknown command or flag, missing argument, unreadable file, --yes needed. */
  usage: 3,
  /** No key, or the API refused it (401), or it is the wrong kind of key (403). */
  auth: 4,
  /** No such job or media item (or another tenant's). */
  notFound: 5,
  /** The API could not be reached, even after retries. */
  network: 6,
  /** Stopped waiting (--timeout passed); the job goes on: `longhaul jobs wait <id>`. */
  stoppedWaiting: 7,
  /** Ctrl-C; a job being waited for goes on. */
  interrupted: 130,
} as const;

/** Where the CLI reads what a person types or a pipe brings: a key for login, a confirmation. */
export interface Input {
  readonly isTTY?: boolean;
  /** Everything piped in, to its end. */
  readAll(): Promise<string>;
  /** Asks `question` on the terminal; resolves to the line typed, not shown as typed when `secret`. */
  question(question: string, options?: { readonly secret?: boolean }): Promise<string>;
}

export interface CliIo {
  readonly stdout: Stream;
  readonly stderr: Stream;
  /** Absent: nothing to read, as with stdin closed. */
  readonly stdin?: Input;
  /** The time now, for `--at <duration>` (default: the clock). */
  readonly now?: () => Date;
  readonly env: Readonly<Record<string, string | undefined>>;
  /** Aborted on Ctrl-C: a wait stops, the job goes on. */
  readonly signal?: AbortSignal;
  /** Seams for tests. */
  readonly fetch?: typeof fetch;
  readonly webSocket?: WebSocketConstructor | null;
  readonly sleep?: (ms: number, signal?: AbortSignal) => Promise<void>;
  /** The job types `submit` takes, with their input fields (default: the table generated from the API document). */
  readonly jobTypes?: InputTable;
}

/** Someone is waiting at a terminal: give up on an unreachable API within seconds, not a minute. */
const CLI_RETRY = { maxAttempts: 5, maxDelayMs: 4000 } as const;

const EXIT_CODES_HELP = `Exit codes:
  0    ok
  1    the API refused or failed the request, or a confirmation was answered no
  2    the awaited job failed, was canceled or needs review
  3    usage: unknown command or flag, missing argument, unreadable file, or a
       bulk change with no terminal to confirm it on and no --yes
  4    authentication: no key, a wrong key, or the wrong kind of key
  5    not found: no such job or media item
  6    network: the API could not be reached
  7    stopped waiting (--timeout); the job goes on: longhaul jobs wait <id>
  130  interrupted (Ctrl-C); a job being waited for goes on`;

const ENVIRONMENT_HELP = `Keys: a command takes its key from --api-key-file <path> (- reads stdin), else
the environment, else the key longhaul login stored. Never pass a key as an argument.

Environment:
  LONGHAUL_URL          the API (default http://127.0.0.1:3000; AWS: the ApiUrl output)
  LONGHAUL_API_KEY      a tenant's API key (jobs, submit, batch, search, schedules, media)
  LONGHAUL_ADMIN_KEY    the operator key (review, dlq)
  LONGHAUL_CONFIG_DIR   where longhaul login keeps keys (default ~/.config/longhaul)
  LONGHAUL_STREAM_URL   live progress WebSocket (default: the one the API names)
  LONGHAUL_ALLOW_INSECURE_HTTP=1  allow plain http to a host other than this machine`;

type Options = NonNullable<ParseArgsConfig['options']>;

const common = {
  json: { type: 'boolean' },
  url: { type: 'string' },
  'api-key-file': { type: 'string' },
  help: { type: 'boolean', short: 'h' },
} as const satisfies Options;

interface Command {
  /** The command's synopsis and flags, for `longhaul <command> --help`. */
  readonly usage: string;
  readonly summary: string;
  /**
   * Command lines that run as written (a test parses each), shown under
   * EXAMPLES; a `#` line says what the next one does.
   */
  readonly examples: readonly string[];
  readonly options: Options;
  /** Names of the positional arguments; required unless the name ends in `?` (only trailing ones may). */
  readonly positionals: readonly string[];
  readonly run: (context: Context) => Promise<number>;
}

interface Context {
  readonly io: CliIo;
  /** What an API refusal's pointers (`/contentLength`) are on this command line (`--file`). */
  readonly pointerNames: Record<string, string>;
  /** Flag values; a flag that may be repeated (`multiple`) has its values in an array, read through `repeated`. */
  readonly values: Record<string, string | boolean | undefined>;
  readonly positionals: readonly string[];
  readonly json: boolean;
  readonly client: () => Longhaul;
}

/** What each job status means, for the help of every flag that takes one. */
const STATUS_MEANINGS: Readonly<Record<JobStatus, string>> = {
  scheduled: 'waiting for its --at time',
  queued: 'waiting for a slot',
  running: 'being worked on',
  succeeded: 'finished with a result',
  failed: 'finished without one',
  canceled: 'stopped on request',
  needs_review: 'an operator must settle it',
};

/** The statuses and their meanings, one per line, indented under a flag's help. */
const statusHelp = (indent: string) =>
  JOB_STATUSES.map((status) => `${indent}${status.padEnd(14)}${STATUS_MEANINGS[status]}`).join('\n');

const pageOptions = {
  limit: { type: 'string' },
  cursor: { type: 'string' },
  all: { type: 'boolean' },
  status: { type: 'string' },
} as const satisfies Options;

const waitOptions = { timeout: { type: 'string' } } as const satisfies Options;

const TIMEOUT_HELP = `  --timeout <d>      with --wait: stop waiting after this long (${DURATION_HELP});
                     exit 7, the job goes on`;

/** Asks before a command that changes many things at once; `--yes` answers for scripts. */
const confirmOptions = { yes: { type: 'boolean' } } as const satisfies Options;

const bulkCancelOptions = {
  filter: { type: 'string', multiple: true },
  'created-after': { type: 'string' },
  'created-before': { type: 'string' },
  all: { type: 'boolean' },
  'dry-run': { type: 'boolean' },
  ...confirmOptions,
} as const satisfies Options;

/** The statuses `review list` filters by. */
const REVIEW_STATUSES = ['needs_review', 'queued', 'running'] as const satisfies readonly JobStatus[];

/** Jobs listed when neither --limit nor --all is given. */
const DEFAULT_LIST_LIMIT = 20;

/** The flags that make a job, which `submit` and `schedules create` both take. */
const jobOptions = {
  type: { type: 'string' },
  input: { type: 'string' },
  webhook: { type: 'string' },
  priority: { type: 'string' },
} as const satisfies Options;

/** The flags of `submit` itself; an input field of the same flag is set through --input only. */
const submitOptions = {
  ...jobOptions,
  file: { type: 'string' },
  'content-type': { type: 'string' },
  at: { type: 'string' },
  'start-by': { type: 'string' },
  wait: { type: 'boolean' },
  'idempotency-key': { type: 'string' },
  ...waitOptions,
} as const satisfies Options;

const scheduleOptions = {
  ...jobOptions,
  expression: { type: 'string' },
  timezone: { type: 'string' },
  'start-within': { type: 'string' },
  disabled: { type: 'boolean' },
  'idempotency-key': { type: 'string' },
} as const satisfies Options;

/** Flags the commands that make jobs have for themselves: an input field of one of these names is set through --input only. */
const SUBMIT_FLAGS: ReadonlySet<string> = new Set([
  ...Object.keys(common),
  ...Object.keys(submitOptions),
  ...Object.keys(scheduleOptions),
]);

/** The help of the job flags (jobOptions and each type's input flags), the same for submit and schedules create. */
function jobFlagsHelp(table: InputTable): string {
  return `  --type <type>      the job type, one of: ${Object.keys(table).join(', ')}
  input: --input '<json>' | --input @file.json, and/or the flags of its type
         (a flag overrides the same field of --input):
${inputFlagsHelp(table, SUBMIT_FLAGS, '    ')}
  --webhook <url>    an https URL the finished job is POSTed to, signed in its
                     Longhaul-Signature header (the SDK's webhooks.verify checks it)
  --priority <p>     ${JOB_PRIORITIES.join(', ')} (default ${DEFAULT_PRIORITY}): which of your waiting jobs goes first`;
}

/** `submit`, with a flag for each input field of each job type in `table`. */
function submitCommand(table: InputTable): Command {
  return {
    summary: 'submit a job',
    usage: `longhaul submit --type <type> [input] [--file <path>] [--webhook <url>] [--priority <p>] [--at <time>] [--start-by <time>] [--wait [--timeout <d>]] [--idempotency-key <key>]
${jobFlagsHelp(table)}
  --file <path>      up to 4 MiB sent with the job, up to 32 MiB in one upload, larger in resumable parts
  --content-type     of --file (default: from its extension)
  --at <time>        run the job then, not now: a duration from now (${DURATION_HELP})
                     or an RFC 3339 time with an offset, at most 365 days ahead (the
                     deployment may allow fewer); until then it is scheduled (a past time runs it now)
  --start-by <time>  the latest it may reach its provider, as --at takes a time: still waiting
                     then (its provider down, say), it ends failed, uncharged (start_deadline_passed)
  --wait             follow progress on stderr and print the finished job
${TIMEOUT_HELP}
  --idempotency-key  resume an earlier submission (its key is printed when it is sent)`,
    examples: [
      '# Generate an image and wait for it, at most ten minutes',
      'longhaul submit --type image.generate --prompt "a lighthouse at dusk" --wait --timeout 10m',
      '# Transcribe a recording on this machine',
      'longhaul submit --type audio.transcribe --file sermon.mp3 --language en',
      '# Run a job two hours from now, telling a webhook when it is done',
      'longhaul submit --type image.generate --prompt "a red fox" --at 2h --webhook https://example.com/hooks/longhaul',
      '# The input as JSON',
      'longhaul submit --type image.generate --input \'{"prompt": "a red fox", "width": 512}\'',
    ],
    options: { ...submitOptions, ...inputFlagOptions(table, SUBMIT_FLAGS) },
    positionals: [],
    run: (c) => submit(c, table),
  };
}

const commands: Record<string, Command> = {
  'jobs list': {
    summary: "list the tenant's jobs, newest first",
    usage: `longhaul jobs list [--status <status>] [--limit <n>] [--cursor <cursor>] [--all]
  --status <s>  only jobs in this status:
${statusHelp('                  ')}
  --limit <n>   at most n jobs in all, across pages (default ${DEFAULT_LIST_LIMIT})
  --all         every job
  --cursor <c>  go on from where an earlier listing with the same --status stopped`,
    examples: [
      'longhaul jobs list',
      'longhaul jobs list --status failed --limit 5',
      'longhaul jobs list --all --json',
    ],
    options: pageOptions,
    positionals: [],
    run: listJobs,
  },
  'jobs get': {
    summary: 'show a job',
    usage: 'longhaul jobs get <id>',
    examples: ['longhaul jobs get job_01jh8x2cvbq4n6m3yz9w7t5rk0'],
    options: {},
    positionals: ['id'],
    run: async (c) => printJob(c, await c.client().getJob(id(c), { signal: c.io.signal })),
  },
  'jobs cancel': {
    summary: 'cancel a job, or every job a filter matches',
    usage: `longhaul jobs cancel <id>
       longhaul jobs cancel --filter <filter> [--created-after <time>] [--created-before <time>] [--dry-run] [--yes]
       longhaul jobs cancel --all [--dry-run] [--yes]
  --filter <f>          status=<status>[,<status>…] and/or type=<type>, comma-separated,
                        e.g. status=queued,running,type=image.generate (may be repeated)
  --created-after <t>   only jobs created after this RFC 3339 time (e.g. 2026-03-01T12:00:00Z)
  --created-before <t>  only jobs created before this RFC 3339 time
  --all                 every unfinished job (a bulk cancel names a filter or --all)
  --dry-run             count the jobs it would cancel, cancel none
  --yes                 cancel without asking; a bulk cancel asks on a terminal and, with no
                        terminal to ask on, is refused without --yes
  Finished jobs are never matched. Requests follow one another until every matching job was seen.`,
    examples: [
      'longhaul jobs cancel job_01jh8x2cvbq4n6m3yz9w7t5rk0',
      '# How many queued image jobs a cancel would stop, stopping none',
      'longhaul jobs cancel --filter status=queued,type=image.generate --dry-run',
      'longhaul jobs cancel --all --yes',
    ],
    options: bulkCancelOptions,
    positionals: ['id?'],
    run: cancelCommand,
  },
  'jobs resume': {
    summary: 'resume a failed job from the step that failed',
    usage: `longhaul jobs resume <id>
  The steps before the failed one are not run (or charged) again. A job in review is not resumed.`,
    examples: ['longhaul jobs resume job_01jh8x2cvbq4n6m3yz9w7t5rk0'],
    options: {},
    positionals: ['id'],
    run: async (c) => printJob(c, await c.client().resumeJob(id(c), { signal: c.io.signal })),
  },
  'jobs events': {
    summary: "show a job's timeline",
    usage: 'longhaul jobs events <id>',
    examples: ['longhaul jobs events job_01jh8x2cvbq4n6m3yz9w7t5rk0'],
    options: {},
    positionals: ['id'],
    run: async (c) => {
      const items = await c.client().jobEvents(id(c), { signal: c.io.signal });
      c.io.stdout.write(c.json ? `${JSON.stringify({ items }, null, 2)}\n` : formatTimeline(items));
      return EXIT.ok;
    },
  },
  'jobs wait': {
    summary: 'follow a job until it settles, through network outages',
    usage: `longhaul jobs wait <id> [--timeout <d>]
  --timeout <d>  stop waiting after this long (${DURATION_HELP}); exit 7, the job goes on`,
    examples: ['longhaul jobs wait job_01jh8x2cvbq4n6m3yz9w7t5rk0 --timeout 5m'],
    options: waitOptions,
    positionals: ['id'],
    run: (c) => {
      const timeout = stringFlag(c, 'timeout');
      return waitAndPrint(
        c,
        id(c),
        timeout === undefined ? undefined : durationSeconds('--timeout', timeout),
      );
    },
  },
  'review list': {
    summary: 'list jobs in review (admin key)',
    usage: `longhaul review list [--status <status>] [--limit <n>] [--cursor <cursor>] [--all]
  --status <s>  only jobs in this status: ${REVIEW_STATUSES.join(', ')}
  --limit <n>   at most n jobs in all, across pages (default ${DEFAULT_LIST_LIMIT})
  --all         every job
  --cursor <c>  go on from where an earlier listing with the same --status stopped`,
    examples: ['longhaul review list', 'longhaul review list --status needs_review --limit 5'],
    options: pageOptions,
    positionals: [],
    run: reviewList,
  },
  'review resolve': {
    summary: 'settle a job in review (admin key)',
    usage: 'longhaul review resolve <id> --outcome succeeded|failed|requeue --note <why>',
    examples: [
      'longhaul review resolve job_01jh8x2cvbq4n6m3yz9w7t5rk0 --outcome requeue --note "provider outage is over"',
    ],
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
  'review replay': {
    summary: 'replay finished jobs as new ones (admin key)',
    usage: `longhaul review replay --status <status>[,<status>…] --note <why> [--tenant <tenant>] [--type <type>]
                      [--created-after <time>] [--created-before <time>] [--dry-run]
  --status <s>          the statuses to replay, e.g. failed or failed,canceled (required); of
                        ${JOB_STATUSES.join(', ')}
  --note <why>          why; the same note replays a job once however often the command is run,
                        another note replays it again
  --tenant <t>          only this tenant's jobs (default: every tenant's)
  --dry-run             count and list refusals, replay nothing
  Jobs in review, unfinished jobs and jobs whose provider outcome is unknown are refused, with the reason.
  Requests follow one another until every matching job was seen. Exits 1 if any job was refused.`,
    examples: [
      'longhaul review replay --status failed --type image.generate --note "new provider key" --dry-run',
      'longhaul review replay --status failed,canceled --tenant acme --note "ticket 4711"',
    ],
    options: {
      status: { type: 'string' },
      note: { type: 'string' },
      tenant: { type: 'string' },
      type: { type: 'string' },
      'created-after': { type: 'string' },
      'created-before': { type: 'string' },
      'dry-run': { type: 'boolean' },
    },
    positionals: [],
    run: replayCommand,
  },
  'dlq redrive': {
    summary: 'move dead letters back to the jobs queue (admin key)',
    usage: `longhaul dlq redrive [--yes]
  --yes  redrive without asking; it asks on a terminal and, with no terminal to ask on,
         is refused without --yes`,
    examples: ['longhaul dlq redrive --yes'],
    options: confirmOptions,
    positionals: [],
    run: async (c) => {
      if (
        !(await confirmed(c, 'dlq redrive sends every dead letter back to the jobs queue.', 'Redrive them?'))
      )
        return EXIT.error;
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

/** `batch`: a JSON Lines file of batch items, sent MAX_BATCH_ITEMS to a request. */
const batchCommand: Command = {
  summary: 'submit the jobs of a JSON Lines file, one item per line',
  usage: `longhaul batch <file.jsonl> [--key-prefix <prefix>]
  each line: {"idempotencyKey": "…", "type": "…", "input": {…}, "webhookUrl"?: "…", "priority"?: "…", "runAt"?: "…"}
  (blank lines are skipped; more than ${MAX_BATCH_ITEMS} lines go in several requests)
  --key-prefix <p>  a line without an idempotencyKey gets <p>:<line number>, so running
                    the same file again with the same prefix submits nothing twice
  Prints one line per item, numbered by its line in the file: its status, its key, and its job
  or why it was refused. Exits 1 if any item was refused.`,
  examples: ['longhaul batch prompts.jsonl --key-prefix prompts-v1'],
  options: { 'key-prefix': { type: 'string' } },
  positionals: ['file'],
  run: submitBatchFile,
};

/** `search`: the passages of the tenant's published recordings closest to a query. */
const searchCommand: Command = {
  summary: 'find the passages of published recordings that say something',
  usage: `longhaul search "<query>" [--limit <n>] [--item <id>]… [--from <date>] [--to <date>] [--label <label>]…
  <query>           what the listener remembers, in their own words (quote it)
  --limit <n>       at most n hits (the API's default when absent)
  --item <id>       only this recording: its media item id, or its audio.publish job id (may be repeated)
  --from <date>     only recordings dated this day (YYYY-MM-DD) or later
  --to <date>       only recordings dated this day (YYYY-MM-DD) or earlier
  --label <label>   only recordings with this label (may be repeated: any of them)
  Prints each hit, closest first: its rank, score, where the passage is in the recording,
  the recording's title (or id) and date, the passage's text (cut to the terminal's width)
  and the URL that plays it from its first word. --json prints the API's answer as it is.`,
  examples: [
    'longhaul search "the widow who gave two coins"',
    'longhaul search "forgiveness" --from 2025-01-01 --label advent --limit 5',
  ],
  options: {
    limit: { type: 'string' },
    item: { type: 'string', multiple: true },
    from: { type: 'string' },
    to: { type: 'string' },
    label: { type: 'string', multiple: true },
  },
  positionals: ['query'],
  run: searchPassages,
};

/** `schedules create`: the job it submits takes the flags `submit` takes (jobFlagsHelp). */
function scheduleCreateCommand(table: InputTable): Command {
  return {
    summary: 'create a recurring schedule that submits a job at each firing',
    usage: `longhaul schedules create --expression <expr> --type <type> [input] [--timezone <tz>] [--webhook <url>] [--priority <p>] [--start-within <d>] [--disabled] [--idempotency-key <key>]
  --expression       rate(<n> minutes|hours|days) or cron(<min> <hour> <day-of-month> <month> <day-of-week> <year>)
  --timezone         IANA time zone the expression is evaluated in (default UTC)
${jobFlagsHelp(table)}
  --start-within <d> each firing's job must reach its provider within this long of the firing
                     (${DURATION_HELP}), or it ends failed, uncharged (start_deadline_passed)
  --disabled         create it disabled (enable it later)
  --idempotency-key  resume an earlier creation (its key is printed when it is sent)`,
    examples: [
      '# Every Sunday at 18:00 in Lisbon',
      'longhaul schedules create --expression "cron(0 18 ? * SUN *)" --timezone Europe/Lisbon --type image.generate --prompt "the week in one picture"',
      'longhaul schedules create --expression "rate(1 day)" --type audio.transcribe --audio-url https://example.com/daily.mp3',
    ],
    options: { ...scheduleOptions, ...inputFlagOptions(table, SUBMIT_FLAGS) },
    positionals: [],
    run: (c) => createScheduleCommand(c, table),
  };
}

/** `schedules …`: a tenant's recurring schedules. */
const scheduleCommands: Record<string, Command> = {
  'schedules list': {
    summary: "list the tenant's schedules",
    usage: `longhaul schedules list [--limit <n>] [--cursor <cursor>] [--all]`,
    examples: ['longhaul schedules list --all'],
    options: { limit: { type: 'string' }, cursor: { type: 'string' }, all: { type: 'boolean' } },
    positionals: [],
    run: async (c) => {
      const limit = c.values.all ? undefined : (integer('--limit', c.values.limit) ?? DEFAULT_LIST_LIMIT);
      const cursor = typeof c.values.cursor === 'string' ? c.values.cursor : undefined;
      const items = await c
        .client()
        .listSchedules(cursor ? { cursor } : {}, { signal: c.io.signal })
        .toArray(limit === undefined ? {} : { limit });
      c.io.stdout.write(
        c.json ? `${JSON.stringify({ items }, null, 2)}\n` : items.map(formatScheduleLine).join(''),
      );
      return EXIT.ok;
    },
  },
  'schedules get': {
    summary: 'show a schedule',
    usage: 'longhaul schedules get <id>',
    examples: ['longhaul schedules get sch_01jh8x2cvbq4n6m3yz9w7t5rk0'],
    options: {},
    positionals: ['id'],
    run: async (c) => printSchedule(c, await c.client().getSchedule(id(c), { signal: c.io.signal })),
  },
  'schedules enable': setScheduleEnabled(true, 'enable a schedule'),
  'schedules disable': setScheduleEnabled(false, 'disable a schedule: it creates no job until enabled again'),
  'schedules delete': {
    summary: 'delete a schedule (the jobs it created stay)',
    usage: 'longhaul schedules delete <id>',
    examples: ['longhaul schedules delete sch_01jh8x2cvbq4n6m3yz9w7t5rk0'],
    options: {},
    positionals: ['id'],
    run: async (c) => {
      const scheduleId = id(c);
      await c.client().deleteSchedule(scheduleId, { signal: c.io.signal });
      c.io.stdout.write(
        c.json ? `${JSON.stringify({ id: scheduleId, deleted: true })}\n` : `${scheduleId} deleted\n`,
      );
      return EXIT.ok;
    },
  },
};

/** The metadata flags of `media create` and `media update`: one field each. */
const mediaMetadataOptions = {
  title: { type: 'string' },
  speaker: { type: 'string' },
  date: { type: 'string' },
  label: { type: 'string', multiple: true },
} as const satisfies Options;

/** What `media update --clear` may remove. */
const CLEARABLE = ['speaker', 'date', 'labels'] as const;

/** `media …`: the tenant's media library, its items and the recordings published as their versions. */
const mediaCommands: Record<string, Command> = {
  'media create': {
    summary: 'create a media item of the library (its recordings come as versions: media publish)',
    usage: `longhaul media create --title <title> [--speaker <name>] [--date <YYYY-MM-DD>] [--label <label>]… [--idempotency-key <key>]
  --title <title>    what listeners and search see of it
  --speaker <name>   who preached or spoke
  --date <date>      when it was preached or recorded (YYYY-MM-DD); search and media list filter by it
  --label <label>    a series, a place, a topic (may be repeated); search and media list filter by them
  --idempotency-key  resume an earlier creation (its key is printed when it is sent)`,
    examples: [
      'longhaul media create --title "The widow\'s offering" --speaker "Ana Reis" --date 2025-11-30 --label advent',
    ],
    options: { ...mediaMetadataOptions, 'idempotency-key': { type: 'string' } },
    positionals: [],
    run: createMediaCommand,
  },
  'media list': {
    summary: "list the tenant's media items",
    usage: `longhaul media list [--label <label>] [--from <date>] [--to <date>] [--limit <n>] [--cursor <cursor>] [--all]
  --label <label>  only items with this label
  --from <date>    only items dated this day (YYYY-MM-DD) or later
  --to <date>      only items dated this day (YYYY-MM-DD) or earlier
  --limit <n>      at most n items in all, across pages (default ${DEFAULT_LIST_LIMIT})
  --all            every item
  --cursor <c>     go on from where an earlier listing with the same filter stopped`,
    examples: ['longhaul media list --label advent --from 2025-11-01'],
    options: {
      label: { type: 'string' },
      from: { type: 'string' },
      to: { type: 'string' },
      limit: { type: 'string' },
      cursor: { type: 'string' },
      all: { type: 'boolean' },
    },
    positionals: [],
    run: listMediaCommand,
  },
  'media get': {
    summary: 'show a media item, its current version and the one being published',
    usage: 'longhaul media get <id>',
    examples: ['longhaul media get med_01jh8x2cvbq4n6m3yz9w7t5rk0'],
    options: {},
    positionals: ['id'],
    run: async (c) => printMediaItem(c, await c.client().getMedia(mediaId(c), { signal: c.io.signal })),
  },
  'media update': {
    summary: "change a media item's metadata (no provider is called)",
    usage: `longhaul media update <id> [--title <title>] [--speaker <name>] [--date <YYYY-MM-DD>] [--label <label>]… [--clear speaker|date|labels]…
  --label <label>  the item's labels, replacing those it has (may be repeated)
  --clear <field>  remove the speaker or the date, or every label (may be repeated)
  Name at least one change. Search shows it at once: it reads the title and speaker from the
  item, and a change of labels or date rewrites the current version's passages in the index.`,
    examples: [
      'longhaul media update med_01jh8x2cvbq4n6m3yz9w7t5rk0 --title "The widow\'s two coins" --clear speaker',
    ],
    options: { ...mediaMetadataOptions, clear: { type: 'string', multiple: true } },
    positionals: ['id'],
    run: updateMediaCommand,
  },
  'media delete': {
    summary: 'delete a media item (what its versions made is deleted too)',
    usage: `longhaul media delete <id>
  The version being published is canceled; the server then deletes every version's
  stream, transcripts, passages, vectors and uploads.`,
    examples: ['longhaul media delete med_01jh8x2cvbq4n6m3yz9w7t5rk0'],
    options: {},
    positionals: ['id'],
    run: async (c) => {
      const item = mediaId(c);
      await c.client().deleteMedia(item, { signal: c.io.signal });
      c.io.stdout.write(c.json ? `${JSON.stringify({ id: item, deleted: true })}\n` : `${item} deleted\n`);
      return EXIT.ok;
    },
  },
  'media publish': {
    summary: 'publish a recording as the next version of a media item',
    usage: `longhaul media publish <id> (--file <path> [--content-type <type>] | --audio-url <https url>) [--language <tag>] [--wait [--timeout <d>]]
  --file <path>      the recording, uploaded first (in resumable parts when large)
  --content-type     of --file (default: from its extension)
  --audio-url <url>  an https URL of the recording (--url is the API's, as for every command)
  --language <tag>   the recording's language, a BCP 47 tag such as en or pt-BR
  --wait             follow the version's job on stderr and print it once finished
${TIMEOUT_HELP}
  The item's current version switches to this one only once it has fully published;
  a version published after it, before it is done, supersedes it.`,
    examples: [
      'longhaul media publish med_01jh8x2cvbq4n6m3yz9w7t5rk0 --file sermon.mp3 --language en --wait',
      'longhaul media publish med_01jh8x2cvbq4n6m3yz9w7t5rk0 --audio-url https://example.com/sermon.m4a',
    ],
    options: {
      file: { type: 'string' },
      'content-type': { type: 'string' },
      'audio-url': { type: 'string' },
      language: { type: 'string' },
      wait: { type: 'boolean' },
      ...waitOptions,
    },
    positionals: ['id'],
    run: publishVersionCommand,
  },
};

/** `login` and `logout`: a key kept for later commands, in a file only the user may read. */
const keyCommands: Record<string, Command> = {
  login: {
    summary: 'store a key for later commands, readable by you alone',
    usage: `longhaul login [--admin]
  Reads the key from stdin (asked for on a terminal) and stores it in
  $LONGHAUL_CONFIG_DIR/credentials.json (default ~/.config/longhaul), mode 0600.
  A key in the environment or from --api-key-file is used before the stored one.
  --admin  store the operator key (review, dlq), not a tenant's`,
    examples: ['longhaul login', 'longhaul login --admin --api-key-file admin.key'],
    options: { admin: { type: 'boolean' } },
    positionals: [],
    run: loginCommand,
  },
  logout: {
    summary: 'forget the key login stored',
    usage: `longhaul logout [--admin]
  --admin  forget the operator key, not the tenant's`,
    examples: ['longhaul logout'],
    options: { admin: { type: 'boolean' } },
    positionals: [],
    run: async (c) => {
      const kind: KeyKind = c.values.admin ? 'adminKey' : 'apiKey';
      const path = storeKey(c.io.env, kind, undefined);
      c.io.stderr.write(`${c.values.admin ? 'admin' : 'tenant'} key forgotten (${path})\n`);
      return EXIT.ok;
    },
  },
};

async function loginCommand(c: Context): Promise<number> {
  const kind: KeyKind = c.values.admin ? 'adminKey' : 'apiKey';
  const file = stringFlag(c, 'api-key-file');
  const stdin = c.io.stdin;
  let key: string;
  if (file !== undefined && file !== '-') {
    key = readKeyFile(file);
  } else if (stdin?.isTTY) {
    key = keyFromText(
      await stdin.question(`Paste the ${c.values.admin ? 'admin' : 'API'} key: `, { secret: true }),
      'The line typed',
    );
  } else if (stdin) {
    key = keyFromText(await stdin.readAll(), 'stdin');
  } else {
    throw new UsageError('login reads the key from stdin: pipe it in, or pass --api-key-file <path>.');
  }
  const path = storeKey(c.io.env, kind, key);
  c.io.stderr.write(`${c.values.admin ? 'admin' : 'tenant'} key stored in ${path} (readable by you alone)\n`);
  return EXIT.ok;
}

const GROUPS = new Set(['jobs', 'review', 'dlq', 'schedules', 'media']);

/** Every command, those that make jobs with the flags of `table`'s job types. */
function commandsFor(table: InputTable): Readonly<Record<string, Command>> {
  return {
    submit: submitCommand(table),
    batch: batchCommand,
    search: searchCommand,
    ...commands,
    'schedules create': scheduleCreateCommand(table),
    ...scheduleCommands,
    ...mediaCommands,
    ...keyCommands,
  };
}

const COMMANDS = commandsFor(JOB_TYPE_INPUTS);

function formatScheduleLine(schedule: Schedule): string {
  const state = schedule.enabled ? `next ${schedule.nextRunAt ?? 'never'}` : 'disabled';
  return `${schedule.id}  ${schedule.expression} ${schedule.timezone}  ${schedule.job.type}  ${state}\n`;
}

/** The user action a submission is one of: a fresh key, or the one `--idempotency-key` resumes. */
function userActionOf(
  client: ReturnType<Context['client']>,
  values: Context['values'],
): { readonly action: UserAction; readonly resumeKey: string | undefined } {
  const resumeKey = typeof values['idempotency-key'] === 'string' ? values['idempotency-key'] : undefined;
  try {
    return { action: client.userAction(resumeKey), resumeKey };
  } catch (error) {
    throw new UsageError(`--idempotency-key: ${(error as Error).message}`);
  }
}

/** `schedules enable` and `schedules disable`: one PATCH of `enabled`. */
function setScheduleEnabled(enabled: boolean, summary: string): Command {
  const verb = enabled ? 'enable' : 'disable';
  return {
    summary,
    usage: `longhaul schedules ${verb} <id>`,
    examples: [`longhaul schedules ${verb} sch_01jh8x2cvbq4n6m3yz9w7t5rk0`],
    options: {},
    positionals: ['id'],
    run: async (c) =>
      printSchedule(c, await c.client().updateSchedule(id(c), { enabled }, { signal: c.io.signal })),
  };
}

function printSchedule(c: Context, schedule: Schedule): number {
  c.io.stdout.write(c.json ? `${JSON.stringify(schedule, null, 2)}\n` : formatScheduleLine(schedule));
  return EXIT.ok;
}

async function createScheduleCommand(c: Context, table: InputTable): Promise<number> {
  const { values, io } = c;
  if (typeof values.expression !== 'string') throw new UsageError('--expression is required.');
  const job = jobOf(jobTypeOf(values, table), values, table) as ScheduledJob;
  const startWithinSeconds =
    typeof values['start-within'] === 'string'
      ? durationSeconds('--start-within', values['start-within'])
      : undefined;
  const client = c.client();
  const { action, resumeKey } = userActionOf(client, values);
  if (!resumeKey) io.stderr.write(`idempotency key: ${action.idempotencyKey}\n`);
  const { schedule, replayed } = await client.createSchedule(
    action,
    {
      expression: values.expression,
      ...(typeof values.timezone === 'string' ? { timezone: values.timezone } : {}),
      job,
      ...(startWithinSeconds !== undefined ? { startWithinSeconds } : {}),
      ...(values.disabled ? { enabled: false } : {}),
    },
    { signal: io.signal },
  );
  if (replayed) io.stderr.write(`${schedule.id}: already created with this key; this is that schedule\n`);
  return printSchedule(c, schedule);
}

function mediaId(c: Context): string {
  const value = c.positionals[0];
  if (!value) throw new UsageError('A media item id is required.');
  return value;
}

function printMediaItem(c: Context, item: MediaItem): number {
  c.io.stdout.write(c.json ? `${JSON.stringify(item, null, 2)}\n` : formatMediaItem(item));
  return EXIT.ok;
}

/** A string flag's value, if it was given. */
const stringFlag = (c: Context, flag: string): string | undefined => {
  const value = c.values[flag];
  return typeof value === 'string' ? value : undefined;
};

/** The metadata the flags name, each sent as written: the API refuses what is malformed, naming the field. */
function mediaMetadataOf(c: Context) {
  const labels = repeated(c, 'label');
  const title = stringFlag(c, 'title');
  const speaker = stringFlag(c, 'speaker');
  const date = stringFlag(c, 'date');
  return {
    ...(title !== undefined ? { title } : {}),
    ...(speaker !== undefined ? { speaker } : {}),
    ...(date !== undefined ? { date } : {}),
    ...(labels.length > 0 ? { labels } : {}),
  };
}

async function createMediaCommand(c: Context): Promise<number> {
  const { title, ...metadata } = mediaMetadataOf(c);
  if (title === undefined) throw new UsageError('--title is required.');
  const client = c.client();
  const { action, resumeKey } = userActionOf(client, c.values);
  const { idempotencyKey } = action;
  if (!resumeKey) c.io.stderr.write(`idempotency key: ${idempotencyKey}\n`);
  const { item, replayed } = await client.createMedia(
    { title, ...metadata },
    { idempotencyKey, signal: c.io.signal },
  );
  if (replayed) c.io.stderr.write(`${item.id}: already created with this key; this is that item\n`);
  return printMediaItem(c, item);
}

async function listMediaCommand(c: Context): Promise<number> {
  const label = stringFlag(c, 'label');
  const dateFrom = stringFlag(c, 'from');
  const dateTo = stringFlag(c, 'to');
  const filter: ListMediaQuery = {
    ...(label !== undefined ? { label } : {}),
    ...(dateFrom !== undefined ? { dateFrom } : {}),
    ...(dateTo !== undefined ? { dateTo } : {}),
  };
  const limit = listLimit(c);
  const cursor = stringFlag(c, 'cursor');
  const list = await c
    .client()
    .listMedia({ ...filter, ...(cursor ? { cursor } : {}) }, { signal: c.io.signal })
    .take(limit);
  if (c.json) {
    c.io.stdout.write(`${JSON.stringify(list, null, 2)}\n`);
  } else {
    c.io.stdout.write(formatMediaTable(list));
    if (list.nextCursor) {
      // The cursor is only a place in the list: going on with the same items needs the same filter.
      const again = [
        ...(label !== undefined ? ['--label', label] : []),
        ...(dateFrom !== undefined ? ['--from', dateFrom] : []),
        ...(dateTo !== undefined ? ['--to', dateTo] : []),
      ];
      c.io.stderr.write(`more: longhaul media list ${[...again, '--cursor', list.nextCursor].join(' ')}\n`);
    }
  }
  return EXIT.ok;
}

async function updateMediaCommand(c: Context): Promise<number> {
  const item = mediaId(c);
  const metadata = mediaMetadataOf(c);
  const cleared = repeated(c, 'clear').map((field) => oneOf('--clear', field, CLEARABLE));
  for (const field of cleared) {
    if (field in metadata) throw new UsageError(`--clear ${field} and a new ${field} do not go together.`);
  }
  if (cleared.includes('labels') && repeated(c, 'label').length > 0) {
    throw new UsageError('--clear labels and --label do not go together.');
  }
  const patch: UpdateMediaRequest = {
    ...metadata,
    ...(cleared.includes('speaker') ? { speaker: null } : {}),
    ...(cleared.includes('date') ? { date: null } : {}),
    ...(cleared.includes('labels') ? { labels: [] } : {}),
  };
  if (Object.keys(patch).length === 0) {
    throw new UsageError('Name a change: --title, --speaker, --date, --label or --clear.');
  }
  return printMediaItem(c, await c.client().updateMedia(item, patch, { signal: c.io.signal }));
}

async function publishVersionCommand(c: Context): Promise<number> {
  const item = mediaId(c);
  const path = stringFlag(c, 'file');
  const audioUrl = stringFlag(c, 'audio-url');
  if (path !== undefined && audioUrl !== undefined) {
    throw new UsageError('--file and --audio-url do not go together: a version is one recording.');
  }
  if (path === undefined && audioUrl === undefined) {
    throw new UsageError('Name the recording: --file <path> or --audio-url <https url>.');
  }
  const contentType = stringFlag(c, 'content-type');
  if (contentType !== undefined && path === undefined)
    throw new UsageError('--content-type goes with --file.');
  const language = stringFlag(c, 'language');
  const timeout = waitTimeoutOf(c);
  if (path !== undefined) nameFilePointers(c, path);
  const source =
    path !== undefined
      ? { file: await readFileInput(path, contentType), ...(language ? { language } : {}) }
      : { audioUrl: audioUrl as string, ...(language ? { language } : {}) };
  const published = await c.client().publishVersion(item, source, { signal: c.io.signal });
  if (c.values.wait) {
    c.io.stderr.write(`${item}: publishing as job ${published.jobId}\n`);
    return waitAndPrint(c, published.jobId, timeout);
  }
  printMediaItem(c, published.item);
  if (!c.json) c.io.stderr.write(`follow it: longhaul jobs wait ${published.jobId}\n`);
  return EXIT.ok;
}

/** Command names and summaries in two columns, the names as wide as the widest. */
function commandTable(entries: readonly (readonly [string, Command])[]): string {
  const width = Math.max(...entries.map(([name]) => name.length)) + 2;
  return entries.map(([name, command]) => `  ${name.padEnd(width)}${command.summary}`).join('\n');
}

const USAGE = `Longhaul runs long AI jobs (images, transcripts, published recordings) for you.

Usage: longhaul <command> [options]

Commands:
${commandTable(Object.entries(COMMANDS))}

Run longhaul help <command> (or longhaul <command> --help) for a command's options and examples.
Every command takes --json (machine-readable output on stdout, failures included), --url <api>
and --api-key-file <path>. longhaul --version prints the version.

${ENVIRONMENT_HELP}

${EXIT_CODES_HELP}
`;

/** A command's help: what it does, how to call it, examples; what every command shares is in `longhaul --help`. */
function commandHelp(command: Command): string {
  const summary = `${command.summary[0]?.toUpperCase() ?? ''}${command.summary.slice(1)}.`;
  const examples = command.examples.map((line) => `  ${line}`).join('\n');
  return `${summary}

Usage: ${command.usage}

Examples:
${examples}

Common options: --json, --url <api>, --api-key-file <path>, --help.
Keys, environment and exit codes: longhaul --help.
`;
}

/** The command `argv` names: its name (one word, or a group and a word) and how many words that took. */
function commandName(argv: readonly string[]): string {
  const [first = '', second] = argv;
  return GROUPS.has(first) && second !== undefined && !second.startsWith('-') ? `${first} ${second}` : first;
}

/** A guess at the command a misspelt name meant: `sumbit` is `submit`, `jobs lsit` is `jobs list`. */
function didYouMean(name: string): string {
  const guess = closest(name, Object.keys(COMMANDS)) ?? closest(name, GROUPS);
  return guess ? ` Did you mean ${guess}?` : '';
}

/** The command a command line runs, with what it shows: `undefined` when it is no known command. */
function commandFor(name: string, io: CliIo): Command | undefined {
  if (!io.jobTypes) return COMMANDS[name];
  return commandsFor(io.jobTypes)[name];
}

/** Runs one command line; resolves to the exit code. */
export async function runCli(argv: readonly string[], io: CliIo): Promise<number> {
  const [first, second] = argv;
  const json = argv.includes('--json');
  if (first === '--version' || first === '-V' || first === 'version') {
    io.stdout.write(json ? `${JSON.stringify({ version: SDK_VERSION })}\n` : `longhaul ${SDK_VERSION}\n`);
    return EXIT.ok;
  }
  if (first === 'help' && second !== undefined) {
    // `longhaul help submit` is `longhaul submit --help`.
    return runCli([...argv.slice(1).filter((word) => word !== '--help' && word !== '-h'), '--help'], io);
  }
  if (first === undefined || first === 'help' || first === '--help' || first === '-h') {
    (first === undefined ? io.stderr : io.stdout).write(USAGE);
    return first === undefined ? EXIT.usage : EXIT.ok;
  }
  const name = commandName(argv);
  const command = commandFor(name, io);
  if (!command) {
    if (GROUPS.has(first) && (second === undefined || second === '--help' || second === '-h')) {
      const group = Object.entries(COMMANDS).filter(([n]) => n.startsWith(`${first} `));
      const text = `Usage: longhaul ${first} <command>\n\n${commandTable(group)}\n`;
      (second === undefined ? io.stderr : io.stdout).write(text);
      return second === undefined ? EXIT.usage : EXIT.ok;
    }
    return reportError(new UsageError(`unknown command "${name}".${didYouMean(name)}`), io, json);
  }
  const options = { ...common, ...command.options };
  const pointerNames: Record<string, string> = {};
  try {
    let parsed: ReturnType<typeof parseArgs>;
    try {
      parsed = parseArgs({
        args: argv.slice(name.split(' ').length),
        options,
        allowPositionals: true,
        strict: true,
      });
    } catch (error) {
      throw parseArgsUsageError(error, Object.keys(options)) ?? error;
    }
    if (parsed.values.help) {
      io.stdout.write(commandHelp(command));
      return EXIT.ok;
    }
    const required = command.positionals.filter((p) => !p.endsWith('?')).length;
    if (parsed.positionals.length < required || parsed.positionals.length > command.positionals.length) {
      const expected = command.positionals
        .map((p) => (p.endsWith('?') ? `[<${p.slice(0, -1)}>]` : `<${p}>`))
        .join(' ');
      throw new UsageError(`${name} takes ${expected || 'no arguments'}.`);
    }
    const values = parsed.values as Context['values'];
    const keyFromFile =
      name === 'login' || typeof values['api-key-file'] !== 'string'
        ? undefined
        : await keyOfFlag(values['api-key-file'], io);
    let client: Longhaul | undefined;
    return await command.run({
      io,
      values,
      positionals: parsed.positionals,
      json,
      pointerNames,
      client: () => {
        client ??= createClient(
          io,
          typeof values.url === 'string' ? values.url : undefined,
          keyFromFile === undefined ? {} : { [isAdminCommand(name) ? 'adminKey' : 'apiKey']: keyFromFile },
        );
        return client;
      },
    });
  } catch (error) {
    return reportError(error, io, json, name, pointerNames);
  }
}

/** `--api-key-file <path>`, or `-`: the key piped to stdin. */
async function keyOfFlag(path: string, io: CliIo): Promise<string> {
  if (path !== '-') return readKeyFile(path);
  if (!io.stdin || io.stdin.isTTY) {
    throw new UsageError('--api-key-file - reads the key from stdin: pipe it in.');
  }
  return keyFromText(await io.stdin.readAll(), 'stdin');
}

const isAdminCommand = (command: string | undefined) =>
  Boolean(command?.startsWith('review') || command?.startsWith('dlq'));

/** A client whose keys come from --api-key-file (`given`), else the environment, else longhaul login. */
function createClient(
  io: CliIo,
  url: string | undefined,
  given: { readonly apiKey?: string; readonly adminKey?: string },
): Longhaul {
  const { env } = io;
  const stored = readStoredKeys(env);
  const apiKey = given.apiKey ?? (env.LONGHAUL_API_KEY || stored.apiKey);
  const adminKey = given.adminKey ?? (env.LONGHAUL_ADMIN_KEY || stored.adminKey);
  return new Longhaul({
    baseUrl: url ?? env.LONGHAUL_URL ?? 'http://127.0.0.1:3000',
    ...(apiKey ? { apiKey } : {}),
    ...(adminKey ? { adminKey } : {}),
    ...(env.LONGHAUL_STREAM_URL ? { streamUrl: env.LONGHAUL_STREAM_URL } : {}),
    ...(env.LONGHAUL_ALLOW_INSECURE_HTTP === '1' ? { allowInsecureHttp: true } : {}),
    ...(io.fetch ? { fetch: io.fetch } : {}),
    ...(io.webSocket !== undefined ? { webSocket: io.webSocket } : {}),
    ...(io.sleep ? { sleep: io.sleep } : {}),
    retry: CLI_RETRY,
  });
}

/** Where the CLI takes each client option from (createClient), for messages about them. */
const SETTING_OF_OPTION: Readonly<Record<LonghaulOptionName, string>> = {
  baseUrl: 'LONGHAUL_URL (or --url)',
  streamUrl: 'LONGHAUL_STREAM_URL',
  apiKey: 'LONGHAUL_API_KEY',
  adminKey: 'LONGHAUL_ADMIN_KEY',
  allowInsecureHttp: 'LONGHAUL_ALLOW_INSECURE_HTTP=1',
};

/** The SDK's message with each client option it names replaced by the CLI's setting for it. */
function inCliTerms(error: LonghaulUsageError): string {
  return error.options.reduce(
    (message, option) => message.replace(new RegExp(`\\b${option}\\b`, 'g'), SETTING_OF_OPTION[option]),
    error.message,
  );
}

/** A failure as the CLI reports it: what went wrong, in words and for machines, and the exit code. */
interface Failure {
  readonly exitCode: number;
  /** `usage`, `auth`, `not-found`, `network`, `api`, `interrupted`, `internal`. */
  readonly kind: string;
  readonly lines: readonly string[];
  readonly problem?: unknown;
}

function describeFailure(
  error: unknown,
  io: CliIo,
  command: string | undefined,
  pointerNames: Readonly<Record<string, string>>,
): Failure {
  if (io.signal?.aborted && (error === io.signal.reason || error instanceof LonghaulUserAbortError)) {
    return { exitCode: EXIT.interrupted, kind: 'interrupted', lines: ['longhaul: interrupted'] };
  }
  const adminCommand = isAdminCommand(command);
  const keyVariable = adminCommand ? 'LONGHAUL_ADMIN_KEY' : 'LONGHAUL_API_KEY';
  if (error instanceof LonghaulAPIError) {
    const { problem } = error;
    const lines = [`longhaul: ${problem.title} (${problem.status} ${problem.code}): ${problem.detail}`];
    for (const item of problem.errors ?? []) {
      const where =
        item.pointer === undefined ? item.parameter : (pointerNames[item.pointer] ?? item.pointer);
      lines.push(`  ${where ?? ''}: ${item.detail}`.replace(/^ {2}: /, '  '));
    }
    if (problem.status === 401) lines.push(`  Check ${keyVariable}.`);
    if (problem.status === 403) {
      lines.push(
        `  This command needs ${adminCommand ? 'the admin key in LONGHAUL_ADMIN_KEY' : 'a tenant key in LONGHAUL_API_KEY'}.`,
      );
    }
    if (problem.instance) lines.push(`  request: ${problem.instance}`);
    const exitCode =
      problem.status === 401 || problem.status === 403
        ? EXIT.auth
        : problem.status === 404
          ? EXIT.notFound
          : EXIT.error;
    const kind = exitCode === EXIT.auth ? 'auth' : exitCode === EXIT.notFound ? 'not-found' : 'api';
    return { exitCode, kind, lines, problem };
  }
  if (error instanceof LonghaulConnectionError) {
    return {
      exitCode: EXIT.network,
      kind: 'network',
      lines: [`longhaul: cannot reach the API: ${error.message}`, '  Check LONGHAUL_URL (or --url).'],
    };
  }
  const [option] = error instanceof LonghaulUsageError ? error.options : [];
  if (option === 'apiKey' || option === 'adminKey') {
    return {
      exitCode: EXIT.auth,
      kind: 'auth',
      lines: [
        `longhaul: no key: set ${SETTING_OF_OPTION[option]}, pass --api-key-file <path>, or run longhaul login${option === 'adminKey' ? ' --admin' : ''}.`,
      ],
    };
  }
  if (error instanceof LonghaulUsageError && option !== undefined) {
    return {
      exitCode: EXIT.usage,
      kind: 'usage',
      lines: [`longhaul: ${inCliTerms(error)}`, `  Check ${SETTING_OF_OPTION[option]}.`],
    };
  }
  if (error instanceof UsageError || error instanceof LonghaulUsageError) {
    const help = command ? `longhaul ${command} --help` : 'longhaul --help';
    return {
      exitCode: EXIT.usage,
      kind: 'usage',
      lines: [`longhaul: ${(error as Error).message}`, `  Run ${help} for usage.`],
    };
  }
  return {
    exitCode: EXIT.error,
    kind: 'internal',
    lines: [
      `longhaul: unexpected error: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`,
    ],
  };
}

function reportError(
  error: unknown,
  io: CliIo,
  json: boolean,
  command?: string,
  pointerNames: Readonly<Record<string, string>> = {},
): number {
  const failure = describeFailure(error, io, command, pointerNames);
  io.stderr.write(`${failure.kind === 'interrupted' ? '\n' : ''}${failure.lines.join('\n')}\n`);
  if (json) {
    const message = failure.lines[0]?.replace(/^longhaul: /, '') ?? '';
    io.stdout.write(
      `${JSON.stringify(
        {
          error: {
            kind: failure.kind,
            exitCode: failure.exitCode,
            message,
            ...(failure.problem ? { problem: failure.problem } : {}),
          },
        },
        null,
        2,
      )}\n`,
    );
  }
  return failure.exitCode;
}

/**
 * `--filter status=queued,running,type=image.generate`: comma-separated
 * `key=value` pairs; a value without a key is one more status. Repeated
 * flags add up.
 */
export function parseFilterFlags(values: readonly string[]): { status?: JobStatus[]; type?: string } {
  const statuses: JobStatus[] = [];
  let type: string | undefined;
  for (const value of values) {
    let key: string | undefined;
    for (const token of value.split(',').map((part) => part.trim())) {
      if (token === '') continue;
      const at = token.indexOf('=');
      const name = at < 0 ? key : token.slice(0, at).trim();
      const item = at < 0 ? token : token.slice(at + 1).trim();
      if (name === 'status') {
        statuses.push(oneOf('--filter status', item, JOB_STATUSES));
      } else if (name === 'type' && at >= 0) {
        if (type !== undefined && type !== item) throw new UsageError('--filter names one type.');
        type = item;
      } else {
        throw new UsageError(`--filter takes status=<status>[,<status>…] and type=<type>, not "${token}".`);
      }
      key = name;
    }
  }
  return { ...(statuses.length > 0 ? { status: statuses } : {}), ...(type !== undefined ? { type } : {}) };
}

/** The values of a flag that may be given more than once. */
const repeated = (c: Context, flag: string): string[] =>
  ((c.values as Record<string, unknown>)[flag] as string[] | undefined) ?? [];

/** The filter's creation window from `--created-after` and `--created-before`. */
function createdWindow(c: Context): { createdAfter?: string; createdBefore?: string } {
  const after = c.values['created-after'];
  const before = c.values['created-before'];
  return {
    ...(typeof after === 'string' ? { createdAfter: after } : {}),
    ...(typeof before === 'string' ? { createdBefore: before } : {}),
  };
}

async function cancelCommand(c: Context): Promise<number> {
  const filterFlags = repeated(c, 'filter');
  const window = createdWindow(c);
  const bulk = filterFlags.length > 0 || Object.keys(window).length > 0 || c.values.all === true;
  if (c.positionals[0] !== undefined) {
    if (bulk || c.values['dry-run']) {
      throw new UsageError('Cancel one job by its id, or jobs by --filter or --all, not both.');
    }
    return printJob(c, await c.client().cancelJob(id(c), { signal: c.io.signal }));
  }
  if (!bulk) throw new UsageError('Name a job id, a --filter, or --all for every unfinished job.');
  if (c.values.all && filterFlags.length > 0) throw new UsageError('--all and --filter do not go together.');
  const filter = { ...parseFilterFlags(filterFlags), ...window } as JobFilter;
  const dryRun = c.values['dry-run'] === true;
  const what = c.values.all
    ? 'jobs cancel --all cancels every unfinished job.'
    : 'jobs cancel --filter cancels every unfinished job the filter matches.';
  if (!dryRun && !(await confirmed(c, what, 'Cancel them?'))) return EXIT.error;
  const total = await c.client().cancelAllJobs(filter, { dryRun }, { signal: c.io.signal });
  c.io.stdout.write(
    c.json
      ? `${JSON.stringify({ ...total, dryRun }, null, 2)}\n`
      : dryRun
        ? `${total.matched} job(s) match; none canceled (dry run)\n`
        : `${total.matched} job(s) matched, ${total.canceled} canceled` +
          (total.cancelRequested > 0 ? `, ${total.cancelRequested} in review carry the request` : '') +
          '\n',
  );
  return EXIT.ok;
}

/**
 * Each flag is one field of the request, sent as written: the API refuses
 * what is out of range or malformed, naming the field.
 */
async function searchPassages(c: Context): Promise<number> {
  const limit = integer('--limit', c.values.limit);
  const itemIds = repeated(c, 'item');
  const labels = repeated(c, 'label');
  const filter: SearchFilter = {
    ...(itemIds.length > 0 ? { itemIds } : {}),
    ...(typeof c.values.from === 'string' ? { dateFrom: c.values.from } : {}),
    ...(typeof c.values.to === 'string' ? { dateTo: c.values.to } : {}),
    ...(labels.length > 0 ? { labels } : {}),
  };
  const request: SearchRequest = {
    query: c.positionals[0] as string,
    ...(limit !== undefined ? { limit } : {}),
    ...(Object.keys(filter).length > 0 ? { filter } : {}),
  };
  const result = await c.client().search(request, { signal: c.io.signal });
  c.io.stdout.write(
    c.json ? `${JSON.stringify(result, null, 2)}\n` : formatSearchHits(result, c.io.stdout.columns),
  );
  return EXIT.ok;
}

async function replayCommand(c: Context): Promise<number> {
  const note = c.values.note;
  if (typeof note !== 'string' || note.trim() === '') throw new UsageError('--note is required: say why.');
  if (typeof c.values.status !== 'string')
    throw new UsageError('--status is required, e.g. --status failed.');
  const status = parseFilterFlags([`status=${c.values.status}`]).status ?? [];
  const filter = {
    status,
    ...(typeof c.values.tenant === 'string' ? { tenant: c.values.tenant } : {}),
    ...(typeof c.values.type === 'string' ? { type: c.values.type } : {}),
    ...createdWindow(c),
  } as ReplayFilter;
  const dryRun = c.values['dry-run'] === true;
  const total = { matched: 0, replayed: 0, alreadyReplayed: 0 };
  const refused: ReplayResult['refused'][number][] = [];
  const jobs: ReplayResult['jobs'][number][] = [];
  let cursor: string | undefined;
  do {
    const page = await c
      .client()
      .replayJobs(filter, note, { dryRun, ...(cursor ? { cursor } : {}) }, { signal: c.io.signal });
    total.matched += page.matched;
    total.replayed += page.replayed;
    total.alreadyReplayed += page.alreadyReplayed;
    refused.push(...page.refused);
    jobs.push(...page.jobs);
    cursor = page.nextCursor ?? undefined;
  } while (cursor);
  if (c.json) {
    c.io.stdout.write(`${JSON.stringify({ ...total, refused, jobs, dryRun }, null, 2)}\n`);
  } else {
    const lines = [
      `${total.matched} job(s) matched, ${total.replayed} replayed` +
        (total.alreadyReplayed > 0 ? `, ${total.alreadyReplayed} replayed before with this note` : '') +
        (dryRun ? ' (dry run)' : ''),
      ...jobs.map((job) => `  ${job.replayOf} -> ${job.id}  ${job.tenantId}`),
      ...refused.map((item) => `  ${item.id} refused: ${item.reason}`),
    ];
    c.io.stdout.write(`${lines.join('\n')}\n`);
  }
  return refused.length > 0 ? EXIT.error : EXIT.ok;
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

/** `--limit` is a total across pages; `--all` lifts it. */
function listLimit(c: Context): number | undefined {
  if (c.values.all) {
    if (c.values.limit !== undefined) throw new UsageError('--all and --limit do not go together.');
    return undefined;
  }
  const limit = integer('--limit', c.values.limit) ?? DEFAULT_LIST_LIMIT;
  if (limit < 1) throw new UsageError('--limit must be at least 1.');
  return limit;
}

async function listJobs(c: Context): Promise<number> {
  const status =
    c.values.status === undefined ? undefined : oneOf<JobStatus>('--status', c.values.status, JOB_STATUSES);
  const query = {
    ...(status ? { status } : {}),
    ...(typeof c.values.cursor === 'string' ? { cursor: c.values.cursor } : {}),
  };
  const limit = listLimit(c);
  return printList(c, await c.client().listJobs(query, { signal: c.io.signal }).take(limit), 'jobs list');
}

async function reviewList(c: Context): Promise<number> {
  const status =
    c.values.status === undefined ? undefined : oneOf('--status', c.values.status, REVIEW_STATUSES);
  const query = {
    ...(status ? { status } : {}),
    ...(typeof c.values.cursor === 'string' ? { cursor: c.values.cursor } : {}),
  };
  const limit = listLimit(c);
  return printList(c, await c.client().reviewList(query, { signal: c.io.signal }).take(limit), 'review list');
}

/**
 * Whether to go on with a command that changes many things at once: `--yes`
 * says so; on a terminal the person is asked; elsewhere (a script, a pipe)
 * nobody can answer, so it is a usage error that names --yes.
 */
async function confirmed(c: Context, what: string, question: string): Promise<boolean> {
  if (c.values.yes === true) return true;
  const stdin = c.io.stdin;
  if (!stdin?.isTTY) {
    throw new UsageError(`${what} There is no terminal to confirm it on: pass --yes to go on.`);
  }
  const answer = (await stdin.question(`${what} ${question} [y/N] `)).trim().toLowerCase();
  if (answer === 'y' || answer === 'yes') return true;
  c.io.stderr.write('Nothing was done.\n');
  return false;
}

/** A shell word: as it is when it needs no quotes, else in single quotes. */
const shellWord = (word: string) =>
  /^[\w@%+=:,./-]+$/.test(word) ? word : `'${word.replace(/'/g, `'\\''`)}'`;

function printList(
  c: Context,
  list: { readonly items: readonly (Job | AdminJob)[]; readonly nextCursor: string | null },
  command: string,
): number {
  if (c.json) {
    c.io.stdout.write(`${JSON.stringify(list, null, 2)}\n`);
  } else {
    c.io.stdout.write(formatJobTable(list));
    if (list.nextCursor) {
      // The cursor is a place in the list these filters make: going on needs the same filters (and page size).
      const again = [
        ...(typeof c.values.status === 'string' ? ['--status', c.values.status] : []),
        ...(typeof c.values.limit === 'string' ? ['--limit', c.values.limit] : []),
        '--cursor',
        list.nextCursor,
      ];
      c.io.stderr.write(`more: longhaul ${command} ${again.map(shellWord).join(' ')}\n`);
    }
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

/**
 * The size of the file a flag names, once it is known to be a file this
 * process can read: a directory, a missing file or one without read
 * permission is a usage error that says which, before any request.
 */
function readableFileSize(flag: string, path: string): number {
  let size: number;
  try {
    const stats = statSync(path);
    if (stats.isDirectory()) throw new UsageError(`${flag} ${path} is a directory, not a file.`);
    size = stats.size;
    closeSync(openSync(path, 'r'));
  } catch (error) {
    if (error instanceof UsageError) throw error;
    const code = (error as NodeJS.ErrnoException).code;
    throw new UsageError(
      code === 'ENOENT'
        ? `${flag} ${path}: no such file.`
        : code === 'EACCES' || code === 'EPERM'
          ? `${flag} ${path} cannot be read: permission denied.`
          : `${flag} ${path} cannot be read: ${(error as Error).message}`,
    );
  }
  return size;
}

async function readFileInput(path: string, contentType: string | undefined): Promise<FileInput> {
  const size = readableFileSize('--file', path);
  if (size === 0) throw new UsageError(`--file ${path} is empty.`);
  const type = contentType ?? MEDIA_TYPES[extname(path).toLowerCase()];
  if (!type) throw new UsageError(`Cannot tell the media type of ${path}: pass --content-type.`);
  // A Blob backed by the file: large inputs are streamed, never read into memory whole.
  return { data: await openAsBlob(path, { type }), contentType: type, filename: basename(path) };
}

function readInputFlag(value: string): Record<string, unknown> {
  let text = value;
  if (value.startsWith('@')) {
    readableFileSize('--input', value.slice(1));
    text = readFileSync(value.slice(1), 'utf8');
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

function jobTypeOf(values: Context['values'], table: InputTable): string {
  const types = Object.keys(table);
  if (values.type === undefined) throw new UsageError(`--type is required: ${types.join(' or ')}.`);
  return oneOf('--type', values.type, types);
}

/** The job the job flags (jobOptions and the input flags of its type) describe. */
function jobOf(type: string, values: Context['values'], table: InputTable) {
  const input = {
    ...(typeof values.input === 'string' ? readInputFlag(values.input) : {}),
    // Flags override the same fields of --input.
    ...inputFromFlags(type, values, table, SUBMIT_FLAGS),
  };
  const webhookUrl = typeof values.webhook === 'string' ? values.webhook : undefined;
  const priority =
    values.priority === undefined ? undefined : oneOf('--priority', values.priority, JOB_PRIORITIES);
  return {
    type,
    input,
    ...(webhookUrl !== undefined ? { webhookUrl } : {}),
    ...(priority !== undefined ? { priority } : {}),
  };
}

/**
 * `--timeout` of a command that waits with `--wait`: in seconds, or
 * undefined to wait as long as it takes. Without --wait there is nothing
 * it could stop, so it is refused rather than ignored.
 */
function waitTimeoutOf(c: Context): number | undefined {
  const value = stringFlag(c, 'timeout');
  if (value === undefined) return undefined;
  if (!c.values.wait) throw new UsageError('--timeout goes with --wait: it says how long to wait.');
  return durationSeconds('--timeout', value);
}

async function submit(c: Context, table: InputTable): Promise<number> {
  const { values, io } = c;
  // Every flag is checked before the first request: a job is never created by a command line that then fails.
  const type = jobTypeOf(values, table);
  if (typeof values.file === 'string' && table[type]?.fileField === undefined) {
    throw new UsageError(`--file is not a flag of ${type} jobs: they take no file.`);
  }
  const timeout = waitTimeoutOf(c);
  // Sent as written when a time: the API refuses one too far ahead for the deployment, naming why.
  const runAt = typeof values.at === 'string' ? runAtOf(values.at, io.now?.() ?? new Date()) : undefined;
  const startBy =
    typeof values['start-by'] === 'string'
      ? runAtOf(values['start-by'], io.now?.() ?? new Date(), '--start-by')
      : undefined;
  const contentType = typeof values['content-type'] === 'string' ? values['content-type'] : undefined;
  const file = typeof values.file === 'string' ? await readFileInput(values.file, contentType) : undefined;
  if (typeof values.file === 'string') nameFilePointers(c, values.file);
  const request = {
    ...jobOf(type, values, table),
    ...(runAt !== undefined ? { runAt } : {}),
    ...(startBy !== undefined ? { startBy } : {}),
    ...(file ? { file } : {}),
  } as CreateJobRequest;
  const client = c.client();
  const { action, resumeKey } = userActionOf(client, values);
  if (!resumeKey) {
    io.stderr.write(
      `idempotency key: ${action.idempotencyKey}\n  (if this is interrupted, resume it with --idempotency-key ${action.idempotencyKey})\n`,
    );
  }
  const created = await client.createJob(action, request, { signal: io.signal });
  if (created.replayed)
    io.stderr.write(`${created.job.id}: already submitted with this key; this is that job\n`);
  if (values.wait) return waitAndPrint(c, created.job.id, timeout);
  if (c.json) {
    io.stdout.write(`${JSON.stringify(created.job, null, 2)}\n`);
  } else {
    io.stdout.write(`${created.job.id} ${created.job.status}\n`);
    io.stderr.write(`follow it: longhaul jobs wait ${created.job.id}\n`);
  }
  return EXIT.ok;
}

/** An API refusal of the upload names the upload's fields; on this command line they are the file's flags. */
function nameFilePointers(c: Context, path: string): void {
  c.pointerNames['/contentLength'] = `--file ${path} (its size)`;
  c.pointerNames['/contentType'] = '--content-type';
}

/** The items of a JSON Lines file, each line checked to be an object; a line without a key gets one from `keyPrefix`. */
function readBatchFile(
  path: string,
  keyPrefix: string | undefined,
): { readonly items: BatchItem[]; readonly lines: number[] } {
  readableFileSize('batch', path);
  const text = readFileSync(path, 'utf8');
  const items: BatchItem[] = [];
  /** The line of the file each item is on, 1-based. */
  const lines: number[] = [];
  for (const [index, line] of text.split('\n').entries()) {
    if (line.trim() === '') continue;
    let item: unknown;
    try {
      item = JSON.parse(line);
    } catch (error) {
      throw new UsageError(`${path} line ${index + 1} is not JSON: ${(error as Error).message}`);
    }
    if (!item || typeof item !== 'object' || Array.isArray(item)) {
      throw new UsageError(`${path} line ${index + 1} must be a JSON object.`);
    }
    const record = item as Record<string, unknown>;
    if (record.idempotencyKey === undefined) {
      if (keyPrefix === undefined) {
        throw new UsageError(
          `${path} line ${index + 1} has no idempotencyKey: give each line one, or pass --key-prefix.`,
        );
      }
      record.idempotencyKey = `${keyPrefix}:${index + 1}`;
    }
    items.push(record as BatchItem);
    lines.push(index + 1);
  }
  if (items.length === 0) throw new UsageError(`${path} holds no items.`);
  return { items, lines };
}

async function submitBatchFile(c: Context): Promise<number> {
  const path = c.positionals[0] as string;
  const keyPrefix = typeof c.values['key-prefix'] === 'string' ? c.values['key-prefix'] : undefined;
  const { items, lines } = readBatchFile(path, keyPrefix);
  const results: (BatchItemResult & { readonly line: number })[] = [];
  for (let at = 0; at < items.length; at += MAX_BATCH_ITEMS) {
    const answered = await c
      .client()
      .submitBatch(items.slice(at, at + MAX_BATCH_ITEMS), { signal: c.io.signal });
    const chunkLines = lines.slice(at, at + MAX_BATCH_ITEMS);
    results.push(
      ...answered.map((result, index) => ({ line: chunkLines[index] ?? at + index + 1, ...result })),
    );
    if (!c.json) c.io.stdout.write(formatBatchResults(answered, chunkLines));
  }
  const refused = results.filter((result) => result.status !== 202).length;
  const replayed = results.filter((result) => result.replayed).length;
  if (c.json) c.io.stdout.write(`${JSON.stringify({ items: results }, null, 2)}\n`);
  c.io.stderr.write(
    `${results.length - refused} accepted (${replayed} already submitted), ${refused} refused\n`,
  );
  return refused === 0 ? EXIT.ok : EXIT.error;
}

async function waitAndPrint(c: Context, jobId: string, timeout: number | undefined): Promise<number> {
  const bar = new ProgressBar(c.io.stderr, jobId, c.io.env);
  const deadline = timeout === undefined ? undefined : AbortSignal.timeout(timeout * 1000);
  const signal = AbortSignal.any([c.io.signal, deadline].filter((s): s is AbortSignal => s !== undefined));
  let job: Job;
  try {
    job = await c.client().waitForJob(jobId, { onProgress: (update) => bar.update(update), signal });
  } catch (error) {
    bar.finish();
    if (c.io.signal?.aborted) return stoppedWaiting(c, jobId, 'interrupted', 'interrupted: stopped waiting');
    if (deadline?.aborted) {
      return stoppedWaiting(c, jobId, 'stopped-waiting', `stopped waiting after ${timeout} s`);
    }
    throw error;
  }
  bar.finish();
  c.io.stdout.write(c.json ? `${JSON.stringify(job, null, 2)}\n` : formatJob(job));
  if (job.status === 'succeeded') return EXIT.ok;
  c.io.stderr.write(
    job.status === 'needs_review'
      ? `${job.id} needs review by an operator${job.error ? `: ${job.error.message}` : ''}\n`
      : `${job.id} ${job.status}${job.error ? `: ${job.error.code}: ${job.error.message}` : ''}\n${recoveryOf(job)}`,
  );
  return EXIT.jobUnsuccessful;
}

/** What brings a failed job back, as a line to print: a job that missed its startBy is submitted again instead. */
function recoveryOf(job: Job): string {
  if (job.status !== 'failed') return '';
  if (job.error?.code === 'start_deadline_passed') {
    return 'Nothing was charged. Submit it again under a new key, with a later --start-by or none.\n';
  }
  return `Recover it: longhaul jobs resume ${job.id}\n`;
}

/**
 * The wait ended but the job did not: says how to follow it again on stderr
 * and, with --json, the failure on stdout as every other failure is.
 */
function stoppedWaiting(
  c: Context,
  jobId: string,
  kind: 'interrupted' | 'stopped-waiting',
  message: string,
): number {
  const exitCode = kind === 'interrupted' ? EXIT.interrupted : EXIT.stoppedWaiting;
  c.io.stderr.write(
    `${kind === 'interrupted' ? '\n' : ''}${message}; ${jobId} goes on. Follow it again: longhaul jobs wait ${jobId}\n`,
  );
  if (c.json)
    c.io.stdout.write(`${JSON.stringify({ error: { kind, exitCode, message, jobId } }, null, 2)}\n`);
  return exitCode;
}
