import { openAsBlob, readFileSync, statSync } from 'node:fs';
import { basename, extname } from 'node:path';
import { type ParseArgsConfig, parseArgs } from 'node:util';
import {
  LonghaulConnectionError,
  LonghaulError,
  type LonghaulOptionName,
  LonghaulUsageError,
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

/**
 * The `longhaul` command line. Exit codes (documented in client/README.md and
 * `longhaul --help`) are distinct per kind of failure, so scripts can tell a
 * wrong key from a missing job from a network that is down.
 */
export const EXIT = {
  ok: 0,
  /** The API refused the request (validation, conflict, …) or failed. */
  error: 1,
  /** The awaited job failed, was canceled or needs review. */
  jobUnsuccessful: 2,
  /** The command line is wrong: unknown command or flag, missing argument, unreadable file. */
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
  /** The job types `submit` takes, with their input fields (default: the table generated from the API document). */
  readonly jobTypes?: InputTable;
}

/** Someone is waiting at a terminal: give up on an unreachable API within seconds, not a minute. */
const CLI_RETRY = { maxAttempts: 5, maxDelayMs: 4000 } as const;

const EXIT_CODES_HELP = `Exit codes:
  0    ok
  1    the API refused or failed the request
  2    the awaited job failed, was canceled or needs review
  3    usage: unknown command or flag, missing argument, unreadable file
  4    authentication: no key, a wrong key, or the wrong kind of key
  5    not found: no such job or media item
  6    network: the API could not be reached
  7    stopped waiting (--timeout); the job goes on: longhaul jobs wait <id>
  130  interrupted (Ctrl-C); a job being waited for goes on`;

const ENVIRONMENT_HELP = `Environment:
  LONGHAUL_URL          the API (default http://127.0.0.1:3000; AWS: the ApiUrl output)
  LONGHAUL_API_KEY      a tenant's API key (jobs, submit, search, media)
  LONGHAUL_ADMIN_KEY    the operator key (review, dlq)
  LONGHAUL_STREAM_URL   live progress WebSocket (default: the one the API names)
  LONGHAUL_ALLOW_INSECURE_HTTP=1  allow plain http to a host other than this machine`;

type Options = NonNullable<ParseArgsConfig['options']>;

const common = {
  json: { type: 'boolean' },
  url: { type: 'string' },
  help: { type: 'boolean', short: 'h' },
} as const satisfies Options;

interface Command {
  /** The command's synopsis and flags, for `longhaul <command> --help`. */
  readonly usage: string;
  readonly summary: string;
  readonly options: Options;
  /** Names of the positional arguments; required unless the name ends in `?` (only trailing ones may). */
  readonly positionals: readonly string[];
  readonly run: (context: Context) => Promise<number>;
}

interface Context {
  readonly io: CliIo;
  /** Flag values; a flag that may be repeated (`multiple`) has its values in an array, read through `repeated`. */
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

const waitOptions = { timeout: { type: 'string' } } as const satisfies Options;

const bulkCancelOptions = {
  filter: { type: 'string', multiple: true },
  'created-after': { type: 'string' },
  'created-before': { type: 'string' },
  all: { type: 'boolean' },
  'dry-run': { type: 'boolean' },
} as const satisfies Options;

/** Jobs listed when neither --limit nor --all is given. */
const DEFAULT_LIST_LIMIT = 20;

/** The flags of `submit` itself; an input field of the same flag is set through --input only. */
const submitOptions = {
  type: { type: 'string' },
  input: { type: 'string' },
  file: { type: 'string' },
  'content-type': { type: 'string' },
  webhook: { type: 'string' },
  priority: { type: 'string' },
  at: { type: 'string' },
  wait: { type: 'boolean' },
  'idempotency-key': { type: 'string' },
  ...waitOptions,
} as const satisfies Options;

const SUBMIT_FLAGS: ReadonlySet<string> = new Set([...Object.keys(common), ...Object.keys(submitOptions)]);

/** `submit`, with a flag for each input field of each job type in `table`. */
function submitCommand(table: InputTable): Command {
  return {
    summary: 'submit a job',
    usage: `longhaul submit --type <type> [input] [--file <path>] [--webhook <url>] [--priority <priority>] [--at <time>] [--wait [--timeout <s>]] [--idempotency-key <key>]
  input: --input '<json>' | --input @file.json, and/or the flags of its type
         (a flag overrides the same field of --input):
${inputFlagsHelp(table, SUBMIT_FLAGS, '    ')}
  --file             up to 4 MiB sent with the job, up to 32 MiB in one upload, larger in resumable parts
  --content-type     of --file (default: from its extension)
  --priority         ${JOB_PRIORITIES.join(', ')} (default ${DEFAULT_PRIORITY}): which of your waiting jobs goes first
  --at <time>        run the job then, not now: RFC 3339 with an offset (2030-01-31T09:00:00Z), at most 365 days ahead;
                     until then it is scheduled (a past time runs it now)
  --wait             follow progress on stderr and print the finished job
  --timeout <s>      with --wait: stop waiting after this many seconds (exit 7; the job goes on)
  --idempotency-key  resume an earlier submission (its key is printed when it starts)`,
    options: { ...submitOptions, ...inputFlagOptions(table, SUBMIT_FLAGS) },
    positionals: [],
    run: (c) => submit(c, table),
  };
}

const commands: Record<string, Command> = {
  'jobs list': {
    summary: "list the tenant's jobs, newest first",
    usage: `longhaul jobs list [--status <status>] [--limit <n>] [--cursor <cursor>] [--all]
  --limit <n>   at most n jobs in all, across pages (default ${DEFAULT_LIST_LIMIT})
  --all         every job
  --cursor <c>  go on from where an earlier listing stopped`,
    options: pageOptions,
    positionals: [],
    run: listJobs,
  },
  'jobs get': {
    summary: 'show a job',
    usage: 'longhaul jobs get <id>',
    options: {},
    positionals: ['id'],
    run: async (c) => printJob(c, await c.client().getJob(id(c), { signal: c.io.signal })),
  },
  'jobs cancel': {
    summary: 'cancel a job, or every job a filter matches',
    usage: `longhaul jobs cancel <id>
       longhaul jobs cancel --filter <filter> [--created-after <time>] [--created-before <time>] [--dry-run]
       longhaul jobs cancel --all [--dry-run]
  --filter <f>          status=<status>[,<status>…] and/or type=<type>, comma-separated,
                        e.g. status=queued,running,type=image.generate (may be repeated)
  --created-after <t>   only jobs created after this RFC 3339 time (e.g. 2026-03-01T12:00:00Z)
  --created-before <t>  only jobs created before this RFC 3339 time
  --all                 every unfinished job (a bulk cancel names a filter or --all)
  --dry-run             count the jobs it would cancel, cancel none
  Finished jobs are never matched. Requests follow one another until every matching job was seen.`,
    options: bulkCancelOptions,
    positionals: ['id?'],
    run: cancelCommand,
  },
  'jobs resume': {
    summary: 'resume a failed job from the step that failed',
    usage: `longhaul jobs resume <id>
  The steps before the failed one are not run (or charged) again. A job in review is not resumed.`,
    options: {},
    positionals: ['id'],
    run: async (c) => printJob(c, await c.client().resumeJob(id(c), { signal: c.io.signal })),
  },
  'jobs events': {
    summary: "show a job's timeline",
    usage: 'longhaul jobs events <id>',
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
    usage: `longhaul jobs wait <id> [--timeout <s>]
  --timeout <s>  stop waiting after this many seconds (exit 7; the job goes on)`,
    options: waitOptions,
    positionals: ['id'],
    run: (c) => waitAndPrint(c, id(c)),
  },
  'review list': {
    summary: 'list jobs in review (admin key)',
    usage: `longhaul review list [--status needs_review|queued|running] [--limit <n>] [--cursor <cursor>] [--all]
  --limit <n>   at most n jobs in all, across pages (default ${DEFAULT_LIST_LIMIT})`,
    options: pageOptions,
    positionals: [],
    run: reviewList,
  },
  'review resolve': {
    summary: 'settle a job in review (admin key)',
    usage: 'longhaul review resolve <id> --outcome succeeded|failed|requeue --note <why>',
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
  --status <s>          the statuses to replay, e.g. failed or failed,canceled (required)
  --note <why>          why; the same note replays a job once however often the command is run,
                        another note replays it again
  --tenant <t>          only this tenant's jobs (default: every tenant's)
  --dry-run             count and list refusals, replay nothing
  Jobs in review, unfinished jobs and jobs whose provider outcome is unknown are refused, with the reason.
  Requests follow one another until every matching job was seen. Exits 1 if any job was refused.`,
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
    usage: 'longhaul dlq redrive',
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

/** `batch`: a JSON Lines file of batch items, sent MAX_BATCH_ITEMS to a request. */
const batchCommand: Command = {
  summary: 'submit the jobs of a JSON Lines file, one item per line',
  usage: `longhaul batch <file.jsonl> [--key-prefix <prefix>]
  each line: {"idempotencyKey": "…", "type": "…", "input": {…}, "webhookUrl"?: "…", "priority"?: "…", "runAt"?: "…"}
  (blank lines are skipped; more than ${MAX_BATCH_ITEMS} lines go in several requests)
  --key-prefix <p>  a line without an idempotencyKey gets <p>:<line number>, so running
                    the same file again with the same prefix submits nothing twice
  Prints one line per item: its status, its key, and its job or why it was refused.
  Exits 1 if any item was refused.`,
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

/** `schedules …`: a tenant's recurring schedules. */
const scheduleCommands: Record<string, Command> = {
  'schedules create': {
    summary: 'create a recurring schedule that submits a job at each firing',
    usage: `longhaul schedules create --expression <expr> --type <type> --input '<json>' [--timezone <tz>] [--webhook <url>] [--priority <priority>] [--disabled] [--idempotency-key <key>]
  --expression       rate(<n> minutes|hours|days) or cron(<min> <hour> <day-of-month> <month> <day-of-week> <year>)
  --timezone         IANA time zone the expression is evaluated in (default UTC)
  --input            the job's input: '<json>' or @file.json
  --disabled         create it disabled (enable it later)
  --idempotency-key  resume an earlier creation (its key is printed when it starts)`,
    options: {
      expression: { type: 'string' },
      timezone: { type: 'string' },
      type: { type: 'string' },
      input: { type: 'string' },
      webhook: { type: 'string' },
      priority: { type: 'string' },
      disabled: { type: 'boolean' },
      'idempotency-key': { type: 'string' },
    },
    positionals: [],
    run: createScheduleCommand,
  },
  'schedules list': {
    summary: "list the tenant's schedules",
    usage: `longhaul schedules list [--limit <n>] [--cursor <cursor>] [--all]`,
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
    options: {},
    positionals: ['id'],
    run: async (c) => printSchedule(c, await c.client().getSchedule(id(c), { signal: c.io.signal })),
  },
  'schedules enable': setScheduleEnabled(true, 'enable a schedule'),
  'schedules disable': setScheduleEnabled(false, 'disable a schedule: it creates no job until enabled again'),
  'schedules delete': {
    summary: 'delete a schedule (the jobs it created stay)',
    usage: 'longhaul schedules delete <id>',
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
  --idempotency-key  resume an earlier creation (its key is printed when it starts)`,
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
    options: { ...mediaMetadataOptions, clear: { type: 'string', multiple: true } },
    positionals: ['id'],
    run: updateMediaCommand,
  },
  'media delete': {
    summary: 'delete a media item (what its versions made is deleted too)',
    usage: `longhaul media delete <id>
  The version being published is canceled; the server then deletes every version's
  stream, transcripts, passages, vectors and uploads.`,
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
    usage: `longhaul media publish <id> (--file <path> [--content-type <type>] | --audio-url <https url>) [--language <tag>] [--wait [--timeout <s>]]
  --file <path>      the recording, uploaded first (in resumable parts when large)
  --content-type     of --file (default: from its extension)
  --audio-url <url>  an https URL of the recording (--url is the API's, as for every command)
  --language <tag>   the recording's language, a BCP 47 tag such as en or pt-BR
  --wait             follow the version's job on stderr and print it once finished
  --timeout <s>      with --wait: stop waiting after this many seconds (exit 7; the job goes on)
  The item's current version switches to this one only once it has fully published;
  a version published after it, before it is done, supersedes it.`,
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

const GROUPS = new Set(['jobs', 'review', 'dlq', 'schedules', 'media']);

const COMMANDS: Readonly<Record<string, Command>> = {
  submit: submitCommand(JOB_TYPE_INPUTS),
  batch: batchCommand,
  search: searchCommand,
  ...commands,
  ...scheduleCommands,
  ...mediaCommands,
};

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

async function createScheduleCommand(c: Context): Promise<number> {
  const { values, io } = c;
  if (typeof values.expression !== 'string') throw new UsageError('--expression is required.');
  const type = jobTypeOf(values, JOB_TYPE_INPUTS);
  if (typeof values.input !== 'string') throw new UsageError("--input is required: '<json>' or @file.json.");
  const priority =
    values.priority === undefined ? undefined : oneOf('--priority', values.priority, JOB_PRIORITIES);
  const job = {
    type,
    input: readInputFlag(values.input),
    ...(typeof values.webhook === 'string' ? { webhookUrl: values.webhook } : {}),
    ...(priority !== undefined ? { priority } : {}),
  } as ScheduledJob;
  const client = c.client();
  const { action, resumeKey } = userActionOf(client, values);
  if (!resumeKey) io.stderr.write(`idempotency key: ${action.idempotencyKey}\n`);
  const { schedule, replayed } = await client.createSchedule(
    action,
    {
      expression: values.expression,
      ...(typeof values.timezone === 'string' ? { timezone: values.timezone } : {}),
      job,
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
  const source =
    path !== undefined
      ? { file: await readFileInput(path, contentType), ...(language ? { language } : {}) }
      : { audioUrl: audioUrl as string, ...(language ? { language } : {}) };
  const published = await c.client().publishVersion(item, source, { signal: c.io.signal });
  if (c.values.wait) {
    c.io.stderr.write(`${item}: publishing as job ${published.jobId}\n`);
    return waitAndPrint(c, published.jobId);
  }
  printMediaItem(c, published.item);
  if (!c.json) c.io.stderr.write(`follow it: longhaul jobs wait ${published.jobId}\n`);
  return EXIT.ok;
}

const USAGE = `Usage: longhaul <command> [options]

Commands:
${Object.entries(COMMANDS)
  .map(([name, command]) => `  ${name.padEnd(16)}${command.summary}`)
  .join('\n')}

Run longhaul <command> --help for a command's options. Every command takes
--json (machine-readable output on stdout, failures included) and --url.
longhaul --version prints the version.

${ENVIRONMENT_HELP}

${EXIT_CODES_HELP}
`;

function commandHelp(command: Command): string {
  const summary = `${command.summary[0]?.toUpperCase() ?? ''}${command.summary.slice(1)}.`;
  return `Usage: ${command.usage}\n\n${summary}\nCommon options: --json, --url <api>, --help.\n\n${ENVIRONMENT_HELP}\n\n${EXIT_CODES_HELP}\n`;
}

/** Runs one command line; resolves to the exit code. */
export async function runCli(argv: readonly string[], io: CliIo): Promise<number> {
  const [first, second] = argv;
  const json = argv.includes('--json');
  if (first === '--version' || first === '-V' || first === 'version') {
    io.stdout.write(json ? `${JSON.stringify({ version: SDK_VERSION })}\n` : `longhaul ${SDK_VERSION}\n`);
    return EXIT.ok;
  }
  if (first === undefined || first === 'help' || first === '--help' || first === '-h') {
    (first === undefined ? io.stderr : io.stdout).write(USAGE);
    return first === undefined ? EXIT.usage : EXIT.ok;
  }
  const name = GROUPS.has(first) ? `${first} ${second ?? ''}`.trim() : first;
  const command = name === 'submit' && io.jobTypes ? submitCommand(io.jobTypes) : COMMANDS[name];
  if (!command) {
    if (GROUPS.has(first) && (second === undefined || second === '--help' || second === '-h')) {
      const group = Object.entries(COMMANDS).filter(([n]) => n.startsWith(`${first} `));
      const text = `Usage: longhaul ${first} <command>\n\n${group.map(([n, c]) => `  ${n.padEnd(16)}${c.summary}`).join('\n')}\n`;
      (second === undefined ? io.stderr : io.stdout).write(text);
      return second === undefined ? EXIT.usage : EXIT.ok;
    }
    return reportError(new UsageError(`unknown command "${name}".`), io, json);
  }
  try {
    const parsed = parseArgs({
      args: argv.slice(name.split(' ').length),
      options: { ...common, ...command.options },
      allowPositionals: true,
      strict: true,
    });
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
    return reportError(error, io, json, name);
  }
}

function createClient(io: CliIo, url: string | undefined): Longhaul {
  const { env } = io;
  return new Longhaul({
    baseUrl: url ?? env.LONGHAUL_URL ?? 'http://127.0.0.1:3000',
    ...(env.LONGHAUL_API_KEY ? { apiKey: env.LONGHAUL_API_KEY } : {}),
    ...(env.LONGHAUL_ADMIN_KEY ? { adminKey: env.LONGHAUL_ADMIN_KEY } : {}),
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

function describeFailure(error: unknown, io: CliIo, command: string | undefined): Failure {
  if (io.signal?.aborted && (error === io.signal.reason || (error as Error)?.name === 'AbortError')) {
    return { exitCode: EXIT.interrupted, kind: 'interrupted', lines: ['longhaul: interrupted'] };
  }
  const adminCommand = command?.startsWith('review') || command?.startsWith('dlq');
  const keyVariable = adminCommand ? 'LONGHAUL_ADMIN_KEY' : 'LONGHAUL_API_KEY';
  if (error instanceof LonghaulError) {
    const { problem } = error;
    const lines = [`longhaul: ${problem.title} (${problem.status} ${problem.code}): ${problem.detail}`];
    for (const item of problem.errors ?? []) {
      lines.push(`  ${item.pointer ?? item.parameter ?? ''}: ${item.detail}`.replace(/^ {2}: /, '  '));
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
      lines: [`longhaul: no key: set ${SETTING_OF_OPTION[option]}.`],
    };
  }
  if (error instanceof LonghaulUsageError && option !== undefined) {
    return {
      exitCode: EXIT.usage,
      kind: 'usage',
      lines: [`longhaul: ${inCliTerms(error)}`, `  Check ${SETTING_OF_OPTION[option]}.`],
    };
  }
  const parseError = String((error as { code?: unknown })?.code ?? '').startsWith('ERR_PARSE_ARGS');
  if (error instanceof UsageError || error instanceof LonghaulUsageError || parseError) {
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

function reportError(error: unknown, io: CliIo, json: boolean, command?: string): number {
  const failure = describeFailure(error, io, command);
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
    c.values.status === undefined
      ? undefined
      : oneOf('--status', c.values.status, ['needs_review', 'queued', 'running'] as const);
  const query = {
    ...(status ? { status } : {}),
    ...(typeof c.values.cursor === 'string' ? { cursor: c.values.cursor } : {}),
  };
  const limit = listLimit(c);
  return printList(c, await c.client().reviewList(query, { signal: c.io.signal }).take(limit), 'review list');
}

function printList(
  c: Context,
  list: { readonly items: readonly (Job | AdminJob)[]; readonly nextCursor: string | null },
  command: string,
): number {
  if (c.json) {
    c.io.stdout.write(`${JSON.stringify(list, null, 2)}\n`);
  } else {
    c.io.stdout.write(formatJobTable(list));
    if (list.nextCursor) c.io.stderr.write(`more: longhaul ${command} --cursor ${list.nextCursor}\n`);
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

function jobTypeOf(values: Context['values'], table: InputTable): string {
  const types = Object.keys(table);
  if (values.type === undefined) throw new UsageError(`--type is required: ${types.join(' or ')}.`);
  return oneOf('--type', values.type, types);
}

function submissionOf(
  type: string,
  values: Context['values'],
  file: FileInput | undefined,
  table: InputTable,
): CreateJobRequest {
  const input = {
    ...(typeof values.input === 'string' ? readInputFlag(values.input) : {}),
    // Flags override the same fields of --input.
    ...inputFromFlags(type, values, table, SUBMIT_FLAGS),
  };
  const webhookUrl = typeof values.webhook === 'string' ? values.webhook : undefined;
  const priority =
    values.priority === undefined ? undefined : oneOf('--priority', values.priority, JOB_PRIORITIES);
  // Sent as written: the API refuses a time that is not RFC 3339 or too far ahead, naming why.
  const runAt = typeof values.at === 'string' ? values.at : undefined;
  return {
    type,
    input,
    ...(webhookUrl !== undefined ? { webhookUrl } : {}),
    ...(priority !== undefined ? { priority } : {}),
    ...(runAt !== undefined ? { runAt } : {}),
    ...(file ? { file } : {}),
  } as CreateJobRequest;
}

async function submit(c: Context, table: InputTable): Promise<number> {
  const { values, io } = c;
  const type = jobTypeOf(values, table);
  if (typeof values.file === 'string' && table[type]?.fileField === undefined) {
    throw new UsageError(`--file is not a flag of ${type} jobs: they take no file.`);
  }
  const contentType = typeof values['content-type'] === 'string' ? values['content-type'] : undefined;
  const file = typeof values.file === 'string' ? await readFileInput(values.file, contentType) : undefined;
  const request = submissionOf(type, values, file, table);
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
  if (values.wait) return waitAndPrint(c, created.job.id);
  if (c.json) {
    io.stdout.write(`${JSON.stringify(created.job, null, 2)}\n`);
  } else {
    io.stdout.write(`${created.job.id} ${created.job.status}\n`);
    io.stderr.write(`follow it: longhaul jobs wait ${created.job.id}\n`);
  }
  return EXIT.ok;
}

/** The items of a JSON Lines file, each line checked to be an object; a line without a key gets one from `keyPrefix`. */
function readBatchFile(path: string, keyPrefix: string | undefined): BatchItem[] {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch {
    throw new UsageError(`Cannot read ${path}.`);
  }
  const items: BatchItem[] = [];
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
  }
  if (items.length === 0) throw new UsageError(`${path} holds no items.`);
  return items;
}

async function submitBatchFile(c: Context): Promise<number> {
  const path = c.positionals[0] as string;
  const keyPrefix = typeof c.values['key-prefix'] === 'string' ? c.values['key-prefix'] : undefined;
  const items = readBatchFile(path, keyPrefix);
  const results: BatchItemResult[] = [];
  for (let at = 0; at < items.length; at += MAX_BATCH_ITEMS) {
    const answered = await c
      .client()
      .submitBatch(items.slice(at, at + MAX_BATCH_ITEMS), { signal: c.io.signal });
    results.push(...answered);
    if (!c.json) c.io.stdout.write(formatBatchResults(answered));
  }
  const refused = results.filter((result) => result.status !== 202).length;
  const replayed = results.filter((result) => result.replayed).length;
  if (c.json) c.io.stdout.write(`${JSON.stringify({ items: results }, null, 2)}\n`);
  c.io.stderr.write(
    `${results.length - refused} accepted (${replayed} already submitted), ${refused} refused\n`,
  );
  return refused === 0 ? EXIT.ok : EXIT.error;
}

async function waitAndPrint(c: Context, jobId: string): Promise<number> {
  const timeout = integer('--timeout', c.values.timeout);
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
      : `${job.id} ${job.status}${job.error ? `: ${job.error.code}: ${job.error.message}` : ''}\n`,
  );
  return EXIT.jobUnsuccessful;
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
