import { mkdirSync, mkdtempSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as z from 'zod';
import { JOB_TYPE_INPUTS, type JobTypeInput, SDK_VERSION } from '../../client';
import { EXIT, runCli } from '../../client/cli/main';
import { JOB_STATUSES } from '../../client/job-types';
import { sleep } from '../../client/retry';
import { inputTable } from '../../client/scripts/job-types';
import { mediaItemView } from '../../config/media';
import { calendarDate, LABELS_MAX, label, searchResult, TITLE_MAX_CHARS } from '../../config/search';
import { loadSettings } from '../../config/settings';
import { openApiDocument } from '../../lambdas/api/openapi';
import { parseCreateJob } from '../../lambdas/domain/requests';
import { jobBody, scriptedFetch } from './support/scripted-fetch';
import { shellWords } from './support/shell-words';

/**
 * The CLI in-process over a scripted transport: what it sends for each
 * command line, what it prints where, and its exit codes.
 */

const URL_BASE = 'https://api.test';
/** A config directory with nothing in it: no test reads the keys of whoever runs it. */
const NO_CONFIG = mkdtempSync(join(tmpdir(), 'longhaul-cli-config-'));

const job = (status = 'queued', extra: Record<string, unknown> = {}) => ({
  ...jobBody('job_cliclicliclicliclicliclicl', status, status === 'succeeded' ? 100 : 0),
  updatedAt: '2026-01-01T00:00:00.000Z',
  ...extra,
});

const json = (status: number, body: unknown, type = 'application/json') =>
  new Response(JSON.stringify(body), { status, headers: { 'content-type': type } });

async function run(
  argv: string[],
  answers: (() => Response | Error)[] = [],
  env: Record<string, string> = { LONGHAUL_API_KEY: 'tenant-key', LONGHAUL_ADMIN_KEY: 'admin-key' },
  terminal: {
    readonly isTTY?: boolean;
    readonly sleep?: (ms: number, signal?: AbortSignal) => Promise<void>;
    /** Ctrl-C: aborted by the test. */
    readonly signal?: AbortSignal;
    /** Job types other than the generated ones. */
    readonly jobTypes?: Readonly<Record<string, JobTypeInput>>;
    /** The width of stdout, as a terminal reports it; unset: stdout is no terminal. */
    readonly columns?: number;
    /** What stdin brings: piped text, or (isTTY) the lines a person types, one per question. */
    readonly stdin?: { readonly isTTY?: boolean; readonly text?: string; readonly answers?: string[] };
    readonly now?: Date;
  } = {},
) {
  const { fetch, sent } = scriptedFetch(answers);
  const questions: string[] = [];
  let stdout = '';
  let stderr = '';
  const code = await runCli(argv, {
    stdout: {
      write: (text: string) => (stdout += text),
      ...(terminal.columns !== undefined ? { isTTY: true, columns: terminal.columns } : {}),
    },
    stderr: { write: (text: string) => (stderr += text), isTTY: terminal.isTTY ?? false },
    env: { LONGHAUL_URL: URL_BASE, LONGHAUL_CONFIG_DIR: NO_CONFIG, ...env },
    ...(terminal.stdin
      ? {
          stdin: {
            isTTY: terminal.stdin.isTTY ?? false,
            readAll: async () => terminal.stdin?.text ?? '',
            question: async (question: string) => {
              stderr += question;
              questions.push(question);
              return terminal.stdin?.answers?.shift() ?? '';
            },
          },
        }
      : {}),
    ...(terminal.now ? { now: () => terminal.now as Date } : {}),
    ...(terminal.signal ? { signal: terminal.signal } : {}),
    ...(terminal.jobTypes ? { jobTypes: terminal.jobTypes } : {}),
    webSocket: null,
    sleep: terminal.sleep ?? (async () => undefined),
    fetch,
  });
  return { code, stdout, stderr, sent, questions };
}

describe('usage', () => {
  it('prints usage to stderr and fails without a command, to stdout with --help', async () => {
    const bare = await run([]);
    expect({ code: bare.code, usage: bare.stderr.includes('\nUsage: longhaul <command>') }).toEqual({
      code: EXIT.usage,
      usage: true,
    });
    const help = await run(['--help']);
    expect({ code: help.code, usage: help.stdout.includes('\nUsage: longhaul <command>') }).toEqual({
      code: 0,
      usage: true,
    });
    expect(help.stdout).toContain('4    authentication');
    const commandHelp = await run(['jobs', 'list', '--help']);
    expect(commandHelp.code).toBe(0);
    expect(commandHelp.stdout).toMatch(/\nUsage: longhaul jobs list \[--status <status>\] \[--limit <n>\]/);
    expect(commandHelp.stdout).toContain('at most n jobs in all, across pages');
    expect(commandHelp.stdout).not.toContain('--prompt');
    const waitHelp = await run(['jobs', 'wait', '--help']);
    expect(waitHelp.stdout).toMatch(/\nUsage: longhaul jobs wait <id> \[--timeout <d>\]/);
    const group = await run(['jobs', '--help']);
    expect(group.code).toBe(0);
    expect(group.stdout).toContain('jobs wait');
    expect(commandHelp.sent).toEqual([]);
  });

  it('prints its version, as text and as JSON', async () => {
    expect(await run(['--version'])).toMatchObject({ code: 0, stdout: `longhaul ${SDK_VERSION}\n` });
    expect(JSON.parse((await run(['--version', '--json'])).stdout)).toEqual({ version: SDK_VERSION });
  });

  it.each([
    [['launch'], 'unknown command "launch"'],
    [['jobs'], 'Usage: longhaul jobs <command>'],
    [['submit', '--prompt', 'x'], '--type is required'],
    [['submit', '--type', 'video.render'], '--type must be one of image.generate, audio.transcribe'],
    [
      ['submit', '--type', 'audio.transcribe', '--prompt', 'x'],
      '--prompt is not a flag of audio.transcribe jobs; image.generate jobs take it.',
    ],
    [
      ['submit', '--type', 'image.generate', '--audio-url', 'https://a.example.test/a.mp3'],
      '--audio-url is not a flag of image.generate jobs; audio.transcribe, audio.publish jobs take it.',
    ],
    [['submit', '--type', 'image.generate', '--width', 'wide'], '--width must be a whole number'],
    [['submit', '--type', 'image.generate', '--input', '[1]'], '--input must be a JSON object'],
    [['submit', '--type', 'image.generate', '--input', '{'], '--input is not JSON'],
    [
      ['submit', '--type', 'image.generate', '--file', '/nonexistent/a.png'],
      '--file /nonexistent/a.png: no such file.',
    ],
    [['submit', '--type', 'image.generate', '--colour', 'red'], 'unknown flag --colour.'],
    [['submit', '--type', 'image.generate', '--idempotency-key', 'has space'], '--idempotency-key'],
    [
      ['submit', '--type', 'image.generate', '--prompt', 'x', '--priority', 'urgent'],
      '--priority must be one of interactive, standard, batch',
    ],
    [['jobs', 'get'], 'jobs get takes <id>'],
    [['jobs', 'list', '--status', 'done'], '--status must be one of'],
    [['review', 'resolve', 'job_x', '--outcome', 'succeeded'], '--note is required'],
  ])('refuses %j with a usage error and exit code 3, sending nothing', async (argv, message) => {
    const result = await run(argv);
    expect(result.code).toBe(EXIT.usage);
    expect(result.stderr).toContain(message);
    expect(result.sent).toEqual([]);
  });

  it('says a usage error as JSON with --json', async () => {
    const result = await run(['jobs', 'list', '--status', 'done', '--json']);
    expect(result.code).toBe(EXIT.usage);
    expect(JSON.parse(result.stdout)).toEqual({
      error: {
        kind: 'usage',
        exitCode: EXIT.usage,
        message: expect.stringContaining('--status must be one of'),
      },
    });
  });

  it('names the environment variable of a missing key, exit code 4, sending nothing', async () => {
    const admin = await run(['dlq', 'redrive', '--yes'], [], { LONGHAUL_API_KEY: 'tenant-key' });
    expect(admin.code).toBe(EXIT.auth);
    expect(admin.stderr).toContain('set LONGHAUL_ADMIN_KEY');
    expect(admin.sent).toEqual([]);
    const tenant = await run(['jobs', 'list', '--json'], [], {});
    expect(tenant.code).toBe(EXIT.auth);
    expect(tenant.stderr).toContain('set LONGHAUL_API_KEY');
    expect(tenant.stderr).not.toMatch(/apiKey/);
    expect(JSON.parse(tenant.stdout)).toMatchObject({ error: { kind: 'auth', exitCode: EXIT.auth } });
  });

  it('refuses plain http to another machine unless told otherwise', async () => {
    const result = await run(['jobs', 'list'], [], {
      LONGHAUL_API_KEY: 'k',
      LONGHAUL_URL: 'http://api.test',
    });
    expect(result.code).toBe(EXIT.usage);
    expect(result.stderr).toBe(
      'longhaul: The base URL http://api.test is plain http to another machine: keys and data would cross the network unencrypted. Use https, or set LONGHAUL_ALLOW_INSECURE_HTTP=1 if you really mean it.\n  Check LONGHAUL_URL (or --url).\n',
    );
    expect(result.sent).toEqual([]);
    const insisted = await run(['jobs', 'list'], [() => json(200, { items: [], nextCursor: null })], {
      LONGHAUL_API_KEY: 'k',
      LONGHAUL_URL: 'http://api.test',
      LONGHAUL_ALLOW_INSECURE_HTTP: '1',
    });
    expect(insisted.code).toBe(0);
  });

  it.each([
    [{ LONGHAUL_URL: 'ftp://api.test' }, 'The base URL must be http or https', 'LONGHAUL_URL (or --url)'],
    [{ LONGHAUL_URL: 'api.test' }, 'is not an absolute URL', 'LONGHAUL_URL (or --url)'],
    [
      { LONGHAUL_STREAM_URL: 'https://stream.test' },
      'The stream URL must be ws or wss',
      'LONGHAUL_STREAM_URL',
    ],
    [
      { LONGHAUL_STREAM_URL: 'ws://stream.test' },
      'Use wss, or set LONGHAUL_ALLOW_INSECURE_HTTP=1 if you really mean it',
      'LONGHAUL_STREAM_URL',
    ],
  ])(
    'names the environment variable of a wrong URL (%j), not the SDK option',
    async (urls, message, variable) => {
      const result = await run(['jobs', 'list', '--json'], [], { LONGHAUL_API_KEY: 'k', ...urls });
      expect(result.code).toBe(EXIT.usage);
      expect(result.stderr).toContain(message);
      expect(result.stderr).toContain(`\n  Check ${variable}.\n`);
      expect(result.stderr).not.toMatch(/baseUrl|streamUrl|allowInsecureHttp|Use https/);
      expect(JSON.parse(result.stdout)).toEqual({
        error: { kind: 'usage', exitCode: EXIT.usage, message: expect.stringContaining(message) },
      });
      expect(result.sent).toEqual([]);
    },
  );
});

describe('submit', () => {
  it('sends the input from --input and flags, mints a key and prints it to stderr', async () => {
    const result = await run(
      [
        'submit',
        '--type',
        'image.generate',
        '--input',
        '{"prompt":"from input","width":64}',
        '--prompt',
        'a lighthouse',
        '--height',
        '128',
        '--webhook',
        'https://hooks.example.test/done',
        '--priority',
        'batch',
      ],
      [() => json(202, job())],
    );
    expect(result.code).toBe(0);
    const [request] = result.sent;
    expect(`${request?.method} ${request?.url}`).toBe(`POST ${URL_BASE}/v1/jobs`);
    expect(JSON.parse(request?.body as string)).toEqual({
      type: 'image.generate',
      input: { prompt: 'a lighthouse', width: 64, height: 128 },
      webhookUrl: 'https://hooks.example.test/done',
      priority: 'batch',
    });
    const key = request?.headers.get('idempotency-key');
    expect(key).toMatch(/^[0-9a-f-]{36}$/);
    expect(result.stderr).toContain(`--idempotency-key ${key}`);
    expect(result.stdout).toBe(`${job().id} queued\n`);
  });

  it('schedules the job with --at, sending the time as written', async () => {
    const runAt = '2030-01-31T09:00:00+01:00';
    const result = await run(
      ['submit', '--type', 'image.generate', '--prompt', 'later', '--at', runAt],
      [() => json(202, job('scheduled', { runAt: '2030-01-31T08:00:00.000Z' }))],
    );
    expect(result.code).toBe(0);
    expect(JSON.parse(result.sent[0]?.body as string)).toEqual({
      type: 'image.generate',
      input: { prompt: 'later' },
      runAt,
    });
    expect(result.stdout).toBe(`${job().id} scheduled\n`);
  });

  it('resumes with --idempotency-key and prints the job as JSON with --json', async () => {
    const result = await run(
      [
        'submit',
        '--type',
        'audio.transcribe',
        '--audio-url',
        'https://a.example.test/a.mp3',
        '--json',
        '--idempotency-key',
        'earlier-key',
      ],
      [
        () =>
          new Response(JSON.stringify(job()), {
            status: 202,
            headers: { 'content-type': 'application/json', 'idempotent-replayed': 'true' },
          }),
      ],
    );
    expect(result.code).toBe(0);
    expect(result.sent[0]?.headers.get('idempotency-key')).toBe('earlier-key');
    expect(JSON.parse(result.stdout)).toEqual(job());
    expect(result.stderr).toContain('already submitted with this key');
  });

  it('waits through an outage, saying that the job goes on, and finishes', async () => {
    const refused = () =>
      new TypeError('fetch failed', {
        cause: Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' }),
      });
    const unavailable = () => json(503, { message: 'Service Unavailable' });
    const result = await run(
      ['jobs', 'wait', 'job_cliclicliclicliclicliclicl'],
      [() => json(200, job('running')), refused, refused, unavailable, () => json(200, job('succeeded'))],
    );
    expect(result.code).toBe(EXIT.ok);
    expect(result.sent).toHaveLength(5);
    expect(result.stderr).toContain('the API cannot be reached');
    expect(result.stderr).toContain('The job goes on');
    expect(result.stderr).toContain('longhaul jobs wait job_cliclicliclicliclicliclicl');
    expect(result.stderr).toMatch(/the API answers again/);
  });

  it('stops waiting at --timeout with exit code 7 and says how to resume', async () => {
    const unavailable = () => json(503, { message: 'Service Unavailable' });
    const result = await run(
      ['jobs', 'wait', 'job_cliclicliclicliclicliclicl', '--timeout', '1', '--json'],
      Array(2000).fill(unavailable),
      undefined,
      { sleep: (ms, signal) => sleep(Math.min(ms, 20), signal) },
    );
    expect(result.code).toBe(EXIT.stoppedWaiting);
    expect(result.stderr).toContain('stopped waiting after 1 s; job_cliclicliclicliclicliclicl goes on');
    expect(result.stderr).toContain('Follow it again: longhaul jobs wait job_cliclicliclicliclicliclicl');
    expect(JSON.parse(result.stdout)).toMatchObject({
      error: { kind: 'stopped-waiting', exitCode: EXIT.stoppedWaiting },
    });
  });

  it.each([false, true])(
    'exits 130 on Ctrl-C during a wait and says how to resume (--json: %s)',
    async (asJson) => {
      const ctrlC = new AbortController();
      const result = await run(
        ['jobs', 'wait', 'job_cliclicliclicliclicliclicl', ...(asJson ? ['--json'] : [])],
        [
          () => json(200, job('running')),
          () => {
            ctrlC.abort();
            return json(200, job('running'));
          },
        ],
        undefined,
        { signal: ctrlC.signal, sleep: (ms, signal) => sleep(Math.min(ms, 20), signal) },
      );
      expect(result.code).toBe(EXIT.interrupted);
      expect(result.sent).toHaveLength(2);
      expect(result.stderr).toContain(
        'interrupted: stopped waiting; job_cliclicliclicliclicliclicl goes on. Follow it again: longhaul jobs wait job_cliclicliclicliclicliclicl\n',
      );
      if (asJson) {
        expect(JSON.parse(result.stdout)).toEqual({
          error: {
            kind: 'interrupted',
            exitCode: 130,
            message: 'interrupted: stopped waiting',
            jobId: 'job_cliclicliclicliclicliclicl',
          },
        });
      } else {
        expect(result.stdout).toBe('');
      }
    },
  );

  it('draws no bar on a terminal that cannot redraw (TERM=dumb) nor when not a terminal', async () => {
    const answers = () => [() => json(200, job('running')), () => json(200, job('succeeded'))];
    const env = { LONGHAUL_API_KEY: 'k' };
    const tty = await run(['jobs', 'wait', 'job_x'], answers(), env, { isTTY: true });
    expect(tty.stderr).toContain('\r');
    for (const [terminalEnv, isTTY] of [
      [{ ...env, TERM: 'dumb' }, true],
      [env, false],
    ] as const) {
      const plain = await run(['jobs', 'wait', 'job_x'], answers(), terminalEnv, { isTTY });
      expect(plain.code).toBe(0);
      expect(plain.stderr).not.toContain('\r');
      expect(plain.stderr).not.toContain('\u001b[');
      expect(plain.stderr).toContain('job_x running 0%\njob_x succeeded 100%\n');
    }
  });

  it('says why a queued job waits while it follows it, instead of a bare queued', async () => {
    const paused = job('queued', {
      waiting: { reason: 'provider_paused', until: '2026-01-01T00:05:00.000Z' },
    });
    const full = job('queued', { waiting: { reason: 'provider_full' } });
    const result = await run(
      ['jobs', 'wait', 'job_cliclicliclicliclicliclicl'],
      [() => json(200, paused), () => json(200, full), () => json(200, job('succeeded'))],
      undefined,
      { sleep: (ms, signal) => sleep(Math.min(ms, 5), signal) },
    );
    expect(result.code).toBe(EXIT.ok);
    expect(result.stderr).toBe(
      [
        'job_cliclicliclicliclicliclicl queued: its provider is paused until 2026-01-01T00:05:00.000Z',
        'job_cliclicliclicliclicliclicl queued: every slot of its provider is taken; it waits in line',
        'job_cliclicliclicliclicliclicl succeeded 100%',
        '',
      ].join('\n'),
    );
  });

  it('names the command that recovers a failed job, and the way on for one that missed its startBy', async () => {
    const failed = job('failed', { error: { code: 'provider_rejected', message: 'refused' } });
    const resumable = await run(['jobs', 'wait', failed.id], [() => json(200, failed)]);
    expect(resumable.code).toBe(EXIT.jobUnsuccessful);
    expect(resumable.stderr).toContain(
      `${failed.id} failed: provider_rejected: refused\nRecover it: longhaul jobs resume ${failed.id}\n`,
    );
    const late = job('failed', { error: { code: 'start_deadline_passed', message: 'late' } });
    const missed = await run(['jobs', 'wait', late.id], [() => json(200, late)]);
    expect(missed.stderr).toContain(
      `${late.id} failed: start_deadline_passed: late\nNothing was charged. Submit it again under a new key, with a later --start-by or none.\n`,
    );
  });

  it('waits for the job and exits 2 when it fails', async () => {
    const failed = job('failed', { error: { code: 'generation_failed', message: 'the model gave up' } });
    const result = await run(
      ['submit', '--type', 'image.generate', '--prompt', 'x', '--wait', '--json'],
      [() => json(202, job()), () => json(200, failed)],
    );
    expect(result.code).toBe(EXIT.jobUnsuccessful);
    expect(JSON.parse(result.stdout)).toEqual(failed);
    expect(result.stderr).toContain('failed: generation_failed: the model gave up');
  });
});

describe('API errors', () => {
  const unauthorized = () =>
    json(
      401,
      {
        type: 'urn:longhaul:problem:unauthorized',
        title: 'Unauthorized',
        status: 401,
        detail: 'A valid X-API-Key header is required.',
        code: 'unauthorized',
      },
      'application/problem+json',
    );

  it('prints the problem title and detail with a hint, exit code 4, and the problem as JSON with --json', async () => {
    const human = await run(['jobs', 'list'], [unauthorized]);
    expect(human.code).toBe(EXIT.auth);
    expect(human.stderr).toContain('Unauthorized (401 unauthorized): A valid X-API-Key header is required.');
    expect(human.stderr).toContain('LONGHAUL_API_KEY');
    expect(human.stdout).toBe('');

    const machine = await run(['jobs', 'get', 'job_x', '--json'], [unauthorized]);
    expect(machine.code).toBe(EXIT.auth);
    expect(JSON.parse(machine.stdout)).toMatchObject({
      error: { kind: 'auth', exitCode: EXIT.auth, problem: { code: 'unauthorized', status: 401 } },
    });
  });

  it('exits 5 for a job that is not there', async () => {
    const notFound = () =>
      json(
        404,
        {
          type: 'urn:longhaul:problem:not-found',
          title: 'Not Found',
          status: 404,
          detail: 'There is no job job_x.',
          code: 'not-found',
        },
        'application/problem+json',
      );
    const result = await run(['jobs', 'get', 'job_x', '--json'], [notFound]);
    expect(result.code).toBe(EXIT.notFound);
    expect(JSON.parse(result.stdout)).toMatchObject({ error: { kind: 'not-found', exitCode: 5 } });
  });

  it('lists field errors of a validation problem', async () => {
    const result = await run(
      ['submit', '--type', 'image.generate', '--prompt', 'x', '--width', '9999'],
      [
        () =>
          json(
            400,
            {
              type: 'urn:longhaul:problem:validation-failed',
              title: 'Validation Failed',
              status: 400,
              detail: 'The request body is invalid.',
              code: 'validation-failed',
              errors: [{ pointer: '/input/width', detail: 'Too big' }],
            },
            'application/problem+json',
          ),
      ],
    );
    expect(result.code).toBe(1);
    expect(result.stderr).toContain('  /input/width: Too big');
  });

  it('says when the API cannot be reached', async () => {
    const refused = () =>
      new TypeError('fetch failed', {
        cause: Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' }),
      });
    const result = await run(['jobs', 'get', 'job_x'], Array(5).fill(refused));
    expect(result.code).toBe(EXIT.network);
    expect(result.sent).toHaveLength(5);
    expect(result.stderr).toContain('cannot reach the API');
    expect(result.stderr).toContain('LONGHAUL_URL');
  });
});

describe('listing and admin commands', () => {
  it('prints at most --limit jobs in all, across pages, or all of them with --all', async () => {
    const page = (ids: string[], nextCursor: string | null) => () =>
      json(200, { items: ids.map((id) => job('succeeded', { id })), nextCursor });
    const many = Array.from({ length: 150 }, (_, i) => `job_${String(i).padStart(3, '0')}`);
    const total = await run(
      ['jobs', 'list', '--limit', '150', '--json'],
      [page(many.slice(0, 100), 'c1'), page(many.slice(100), 'c2')],
    );
    expect(total.sent.map((s) => s.url)).toEqual([
      `${URL_BASE}/v1/jobs?limit=100`,
      `${URL_BASE}/v1/jobs?cursor=c1&limit=50`,
    ]);
    expect(JSON.parse(total.stdout).items).toHaveLength(150);
    expect(JSON.parse(total.stdout).nextCursor).toBe('c2');

    const one = await run(['jobs', 'list', '--limit', '2'], [page(['job_a', 'job_b'], 'next-1')]);
    expect(one.sent.map((s) => s.url)).toEqual([`${URL_BASE}/v1/jobs?limit=2`]);
    expect(one.stdout.split('\n')[0]).toMatch(/^ID\s+TYPE\s+STATUS\s+PROGRESS\s+CREATED$/);
    expect(one.stdout).toContain('job_b');
    expect(one.stderr).toContain('--cursor next-1');

    const all = await run(
      ['jobs', 'list', '--all', '--json'],
      [page(['job_a'], 'c1'), page(['job_b'], null)],
    );
    expect(JSON.parse(all.stdout)).toEqual({
      items: [job('succeeded', { id: 'job_a' }), job('succeeded', { id: 'job_b' })],
      nextCursor: null,
    });
    expect(all.sent.map((s) => s.url)).toEqual([`${URL_BASE}/v1/jobs`, `${URL_BASE}/v1/jobs?cursor=c1`]);
  });

  it('resolves a job in review and redrives the dead-letter queue with the admin key', async () => {
    const resolved = await run(
      ['review', 'resolve', 'job_x', '--outcome', 'requeue', '--note', 'provider lost it', '--json'],
      [() => json(200, job('queued'))],
    );
    expect(resolved.code).toBe(0);
    expect(resolved.sent[0]?.headers.get('x-api-key')).toBe('admin-key');
    expect(JSON.parse(resolved.sent[0]?.body as string)).toEqual({
      outcome: 'requeue',
      note: 'provider lost it',
    });

    const redrive = await run(['dlq', 'redrive', '--yes'], [() => json(202, { taskHandle: 'task-1' })]);
    expect(redrive.stdout).toBe('dead-letter redrive started (task task-1)\n');
  });
});

describe('batch', () => {
  const directory = mkdtempSync(join(tmpdir(), 'longhaul-cli-batch-'));
  let files = 0;
  const file = (text: string) => {
    const path = join(directory, `items-${++files}.jsonl`);
    writeFileSync(path, text);
    return path;
  };
  const line = (item: Record<string, unknown>) => JSON.stringify(item);
  const cat = { type: 'image.generate', input: { prompt: 'a cat' } };
  const accepted = (key: string, replayed = false) => ({
    idempotencyKey: key,
    status: 202,
    job: job('queued', { idempotencyKey: key }),
    replayed,
  });
  const refused = {
    idempotencyKey: 'b',
    status: 400,
    problem: {
      type: 'urn:longhaul:problem:validation-failed',
      title: 'Validation Failed',
      status: 400,
      detail: 'The batch item /items/1 is invalid.',
      code: 'validation-failed',
      errors: [{ pointer: '/items/1/input/prompt', detail: 'Too small' }],
    },
    replayed: false,
  };

  it('sends the lines of the file as one batch and prints each item, exiting 1 if any was refused', async () => {
    const path = file(
      `${line({ idempotencyKey: 'a', ...cat })}\n\n${line({ idempotencyKey: 'b', ...cat, input: { prompt: '' } })}\n`,
    );

    const result = await run(['batch', path], [() => json(200, { items: [accepted('a', true), refused] })]);

    expect(result.sent.map((sent) => `${sent.method} ${sent.url}`)).toEqual([
      `POST ${URL_BASE}/v1/jobs/batch`,
    ]);
    expect(result.sent[0]?.headers.get('content-type')).toBe('application/json');
    expect(JSON.parse(result.sent[0]?.body as string)).toEqual({
      items: [
        { idempotencyKey: 'a', ...cat },
        { idempotencyKey: 'b', ...cat, input: { prompt: '' } },
      ],
    });
    expect(result.stdout).toBe(
      `line 1  202  a  ${job().id}  queued  (already submitted)\nline 3  400  b  validation-failed: The batch item on line 3 is invalid.\n    /input/prompt: Too small\n`,
    );
    expect(result.stderr).toBe('1 accepted (1 already submitted), 1 refused\n');
    expect(result.code).toBe(EXIT.error);
  });

  it('names lines without a key after --key-prefix and their line number, and prints JSON with --json', async () => {
    const path = file(`${line(cat)}\n${line({ idempotencyKey: 'own', ...cat })}\n${line(cat)}`);

    const result = await run(
      ['batch', path, '--key-prefix', 'prompts-v1', '--json'],
      [() => json(200, { items: [accepted('prompts-v1:1'), accepted('own'), accepted('prompts-v1:3')] })],
    );

    expect(
      JSON.parse(result.sent[0]?.body as string).items.map(
        (item: { idempotencyKey: string }) => item.idempotencyKey,
      ),
    ).toEqual(['prompts-v1:1', 'own', 'prompts-v1:3']);
    expect(JSON.parse(result.stdout).items).toHaveLength(3);
    expect(result.code).toBe(EXIT.ok);
  });

  it('sends a file of more than 1000 lines in requests of 1000', async () => {
    const path = file(
      Array.from({ length: 1001 }, (_, n) => line({ idempotencyKey: `k${n}`, ...cat })).join('\n'),
    );
    const answer = (count: number, from: number) => () =>
      json(200, { items: Array.from({ length: count }, (_, n) => accepted(`k${from + n}`)) });

    const result = await run(['batch', path], [answer(1000, 0), answer(1, 1000)]);

    expect(result.sent.map((sent) => JSON.parse(sent.body as string).items.length)).toEqual([1000, 1]);
    expect(result.stderr).toBe('1001 accepted (0 already submitted), 0 refused\n');
    expect(result.code).toBe(EXIT.ok);
  });

  it('refuses a file it cannot use, naming the line, sending nothing', async () => {
    const cases: [string, string][] = [
      [file(`${line({ idempotencyKey: 'a', ...cat })}\n{not json`), 'line 2 is not JSON'],
      [file('[1]'), 'line 1 must be a JSON object'],
      [file(line(cat)), 'line 1 has no idempotencyKey: give each line one, or pass --key-prefix'],
      [file('\n\n'), 'holds no items'],
      [join(directory, 'missing.jsonl'), 'missing.jsonl: no such file.'],
    ];
    for (const [path, message] of cases) {
      const result = await run(['batch', path]);
      expect(result.code).toBe(EXIT.usage);
      expect(result.stderr).toContain(message);
      expect(result.sent).toEqual([]);
    }
    expect((await run(['batch'])).stderr).toContain('batch takes <file>');
  });
});

describe('submit flags, derived from the job types (client/job-types.ts)', () => {
  /** The lines of `submit --help` that describe one job type: its own line and one per field. */
  function helpBlock(help: string, type: string, fields: number): string[] {
    const lines = help.split('\n');
    const start = lines.findIndex((line) => line === `    ${type}` || line.startsWith(`    ${type} `));
    expect(start).toBeGreaterThan(0);
    return lines.slice(start + 1, start + 1 + fields);
  }

  it('lists every generated job type in submit --help with each field as a flag, in order', async () => {
    const help = await run(['submit', '--help']);
    expect(help.code).toBe(0);
    expect(Object.keys(JOB_TYPE_INPUTS).length).toBeGreaterThan(1);
    for (const [type, input] of Object.entries(JOB_TYPE_INPUTS) as [string, JobTypeInput][]) {
      const block = helpBlock(help.stdout, type, input.fields.length);
      expect(block.map((line) => line.trim().split(' ')[0])).toEqual(input.fields.map((f) => `--${f.flag}`));
      input.fields.forEach((field, i) => {
        expect(block[i]?.includes('required')).toBe(field.required);
        expect(block[i]?.includes('--file fills it')).toBe(field.name === input.fileField);
      });
    }
    expect(help.stdout).toContain(
      '      --audio-url <string>         An https URL the provider can fetch.\n',
    );
    expect(help.stdout).toContain('      --width <integer>\n');
  });

  it.each(Object.entries(JOB_TYPE_INPUTS) as [string, JobTypeInput][])(
    'sends each field of %s from its flag, parsed as its JSON type',
    async (type, input) => {
      const sample = {
        string: [['text'], 'text'],
        integer: [['512'], 512],
        number: [['1.5'], 1.5],
        boolean: [[], true],
        json: [['{"a":[1]}'], { a: [1] }],
      } as const;
      const argv = ['submit', '--type', type];
      const expected: Record<string, unknown> = {};
      for (const field of input.fields) {
        const [text, value] = sample[field.type];
        if (field.repeated) {
          // A list: the flag once per item, each item parsed as the list's item type.
          const item = field.type === 'boolean' ? ['true'] : text;
          argv.push(`--${field.flag}`, ...item, `--${field.flag}`, ...item);
          expected[field.name] = [value, value];
        } else {
          argv.push(`--${field.flag}`, ...text);
          expected[field.name] = value;
        }
      }
      const result = await run(argv, [() => json(202, job())]);
      expect(result.code).toBe(0);
      expect(JSON.parse(result.sent[0]?.body as string)).toEqual({ type, input: expected });
    },
  );

  it("gives a list field a flag per item, named for one item: audio.publish's title, date and labels from its schema alone", () => {
    // audio.publish's input as the job type defines it with what search shows and filters by.
    const name = openApiDocument['x-job-types']['audio.publish'].input;
    const published = openApiDocument.components.schemas[name] as { properties: Record<string, unknown> };
    const { properties } = z.toJSONSchema(
      z.object({
        title: z.string().max(TITLE_MAX_CHARS).optional(),
        date: calendarDate.optional(),
        labels: z.array(label).max(LABELS_MAX).optional(),
        takes: z.array(z.object({ at: z.number() })).optional(),
      }),
    ) as { properties: Record<string, unknown> };
    const document = {
      ...openApiDocument,
      components: {
        ...openApiDocument.components,
        schemas: {
          ...openApiDocument.components.schemas,
          [name]: { ...published, properties: { ...published.properties, ...properties } },
        },
      },
    };
    const table = inputTable(document) as unknown as Readonly<Record<string, JobTypeInput>>;
    const fields = table['audio.publish']?.fields ?? [];
    expect(fields.filter((field) => ['title', 'date', 'labels', 'takes'].includes(field.name))).toEqual([
      { name: 'title', flag: 'title', type: 'string', required: false },
      {
        name: 'date',
        flag: 'date',
        type: 'string',
        required: false,
        description: 'A calendar date, YYYY-MM-DD.',
      },
      { name: 'labels', flag: 'label', type: 'string', repeated: true, required: false },
      // A list of objects has no item a flag could give: JSON text, as any other field of no scalar type.
      { name: 'takes', flag: 'takes', type: 'json', required: false },
    ]);
  });

  it('sends --title, --date and each --label of audio.publish into its input, once its schema has them', async () => {
    const publish = JOB_TYPE_INPUTS['audio.publish'];
    const withSearchFields: Readonly<Record<string, JobTypeInput>> = {
      ...JOB_TYPE_INPUTS,
      'audio.publish': {
        ...publish,
        fields: [
          ...publish.fields,
          { name: 'title', flag: 'title', type: 'string', required: false },
          { name: 'date', flag: 'date', type: 'string', required: false },
          { name: 'labels', flag: 'label', type: 'string', repeated: true, required: false },
        ],
      },
    };
    const argv = ['submit', '--type', 'audio.publish', '--audio-url', 'https://a.example.test/advent-1.mp3'];
    const result = await run(
      [
        ...argv,
        '--title',
        'Advent 1: Waiting',
        '--date',
        '2025-11-30',
        '--label',
        'advent',
        '--label',
        'guest speaker',
      ],
      [() => json(202, job())],
      undefined,
      { jobTypes: withSearchFields },
    );
    expect(result.code).toBe(0);
    expect(JSON.parse(result.sent[0]?.body as string)).toEqual({
      type: 'audio.publish',
      input: {
        audioUrl: 'https://a.example.test/advent-1.mp3',
        title: 'Advent 1: Waiting',
        date: '2025-11-30',
        labels: ['advent', 'guest speaker'],
      },
    });
    const help = await run(['submit', '--help'], [], undefined, { jobTypes: withSearchFields });
    expect(help.stdout).toMatch(/\n {6}--label <string>… +once per item of labels\n/);
    const refused = await run(
      ['submit', '--type', 'image.generate', '--prompt', 'x', '--label', 'advent'],
      [],
      undefined,
      {
        jobTypes: withSearchFields,
      },
    );
    expect({ code: refused.code, sent: refused.sent }).toEqual({ code: EXIT.usage, sent: [] });
    expect(refused.stderr).toContain(
      '--label is not a flag of image.generate jobs; audio.publish jobs take it.',
    );
    // Where another job type's --label names one value, it is given once there.
    const withOneLabel = {
      ...withSearchFields,
      'video.render': { fields: [{ name: 'label', flag: 'label', type: 'string', required: false }] },
    } as const satisfies Readonly<Record<string, JobTypeInput>>;
    const one = await run(
      ['submit', '--type', 'video.render', '--label', 'a'],
      [() => json(202, job())],
      undefined,
      {
        jobTypes: withOneLabel,
      },
    );
    expect(JSON.parse(one.sent[0]?.body as string)).toEqual({ type: 'video.render', input: { label: 'a' } });
    const twice = await run(
      ['submit', '--type', 'video.render', '--label', 'a', '--label', 'b'],
      [],
      undefined,
      {
        jobTypes: withOneLabel,
      },
    );
    expect({ code: twice.code, sent: twice.sent }).toEqual({ code: EXIT.usage, sent: [] });
    expect(twice.stderr).toContain('--label is given once for video.render jobs.');
  });

  /** A job type the CLI has never seen: only the table knows it. */
  const withVideo: Readonly<Record<string, JobTypeInput>> = {
    ...JOB_TYPE_INPUTS,
    'video.render': {
      description: 'A video rendered from a storyboard.',
      fields: [
        {
          name: 'durationSeconds',
          flag: 'duration-seconds',
          type: 'integer',
          required: true,
          description: 'How long the video runs.',
        },
        { name: 'fps', flag: 'fps', type: 'number', required: false },
        { name: 'loop', flag: 'loop', type: 'boolean', required: false },
        { name: 'storyboard', flag: 'storyboard', type: 'json', required: false },
        { name: 'prompt', flag: 'prompt', type: 'string', required: true },
        // The same flag as submit's own --timeout: reachable through --input only.
        { name: 'timeout', flag: 'timeout', type: 'integer', required: false },
      ],
    },
  };

  it('gives a job type added to the table its flags, parsed into its input, with no CLI edit', async () => {
    const result = await run(
      [
        'submit',
        '--type',
        'video.render',
        '--input',
        '{"timeout":5,"fps":24}',
        '--duration-seconds',
        '30',
        '--fps',
        '23.976',
        '--loop',
        '--storyboard',
        '[{"shot":1}]',
        '--prompt',
        'a lighthouse',
        '--json',
      ],
      [() => json(202, job())],
      undefined,
      { jobTypes: withVideo },
    );
    expect(result.code).toBe(0);
    expect(result.sent).toHaveLength(1);
    expect(JSON.parse(result.sent[0]?.body as string)).toEqual({
      type: 'video.render',
      input: {
        timeout: 5,
        durationSeconds: 30,
        fps: 23.976,
        loop: true,
        storyboard: [{ shot: 1 }],
        prompt: 'a lighthouse',
      },
    });
  });

  it('lists a job type added to the table in submit --help, with the fields only --input sets', async () => {
    const help = await run(['submit', '--help'], [], undefined, { jobTypes: withVideo });
    expect(helpBlock(help.stdout, 'video.render', 7)).toEqual([
      '      --duration-seconds <integer>  required; How long the video runs.',
      '      --fps <number>',
      '      --loop',
      '      --storyboard <json>',
      '      --prompt <string>             required',
      '      (timeout: --input only)',
      '      (takes no --file)',
    ]);
    expect(help.stdout).toContain('    video.render      A video rendered from a storyboard.\n');
    expect(help.stdout).toContain('      --width <integer>\n');
  });

  it.each([
    [
      ['--type', 'image.generate', '--prompt', 'x', '--duration-seconds', '30'],
      '--duration-seconds is not a flag of image.generate jobs; video.render jobs take it.',
    ],
    [
      ['--type', 'audio.transcribe', '--audio-url', 'https://a.test/a.mp3', '--prompt', 'x'],
      '--prompt is not a flag of audio.transcribe jobs; image.generate, video.render jobs take it.',
    ],
    [['--type', 'video.render', '--duration-seconds', '1.5'], '--duration-seconds must be a whole number.'],
    [['--type', 'video.render', '--fps', 'fast'], '--fps must be a number.'],
    [['--type', 'video.render', '--storyboard', '[{'], '--storyboard is not JSON'],
    [['--type', 'video.render', '--file', '/nonexistent/a.mp4'], '--file is not a flag of video.render jobs'],
    [['--type', 'image.generate', '--loop'], '--loop is not a flag of image.generate jobs'],
  ])('checks the flags of a job type added to the table (%j), sending nothing', async (argv, message) => {
    const result = await run(['submit', ...argv], [], undefined, { jobTypes: withVideo });
    expect(result.code).toBe(EXIT.usage);
    expect(result.stderr).toContain(message);
    expect(result.sent).toEqual([]);
  });
});

describe('search', () => {
  const hit = (
    score: number,
    extra: { title?: string; start: number; end: number; text: string; index: number },
  ) => ({
    score,
    item: {
      id: 'job_abcdefghijklmnopqrstuvwxyz',
      ...(extra.title !== undefined ? { title: extra.title } : {}),
      date: '2025-11-30',
      labels: ['advent'],
    },
    passage: { index: extra.index, start: extra.start, end: extra.end, text: extra.text },
    playback: {
      playlistUrl: 'https://media.example.test/p/master.m3u8?X-Amz-Signature=abc',
      startSeconds: extra.start,
      url: `https://media.example.test/p/master.m3u8?X-Amz-Signature=abc#t=${extra.start}`,
    },
  });
  /** An answer of the API's shape, checked with its own schema so the fixture cannot drift from it. */
  const answer = searchResult.parse({
    items: [
      hit(0.83127, {
        title: 'Advent 1: Waiting',
        index: 3,
        start: 95.5,
        end: 131.25,
        text: 'Grace is not earned;\n  it is given. And the one who gives it asks nothing back.',
      }),
      hit(0.4, { index: 61, start: 3725.9, end: 3790, text: 'Wait for it.' }),
    ],
  });

  it('prints a hit per block: rank, score, m:ss times, title or id, the text cut to the terminal, the URL whole', async () => {
    const result = await run(['search', 'grace is a gift'], [() => json(200, answer)], undefined, {
      columns: 70,
    });
    expect(result.code).toBe(0);
    expect(result.stdout).toBe(
      [
        '#  SCORE  PASSAGE          RECORDING                       DATE',
        '1  0.831  1:35–2:11        Advent 1: Waiting               2025-11-30',
        '   Grace is not earned; it is given. And the one who gives it asks no…',
        '   https://media.example.test/p/master.m3u8?X-Amz-Signature=abc#t=95.5',
        '2  0.400  1:02:05–1:03:10  job_abcdefghijklmnopqrstuvwxyz  2025-11-30',
        '   Wait for it.',
        '   https://media.example.test/p/master.m3u8?X-Amz-Signature=abc#t=3725.9',
        '',
      ].join('\n'),
    );
    expect(result.stderr).toBe('');
  });

  it('prints the whole text when stdout is no terminal, and says when nothing was found', async () => {
    const piped = await run(['search', 'grace'], [() => json(200, answer)]);
    expect(piped.stdout.split('\n')[2]).toBe(
      '   Grace is not earned; it is given. And the one who gives it asks nothing back.',
    );
    const none = await run(['search', 'grace'], [() => json(200, { items: [] })]);
    expect({ code: none.code, stdout: none.stdout }).toEqual({ code: 0, stdout: 'no passages found\n' });
  });

  it("prints the API's answer as it is with --json", async () => {
    const result = await run(['search', 'grace', '--json'], [() => json(200, answer)]);
    expect(result.code).toBe(0);
    expect(result.stdout).toBe(`${JSON.stringify(answer, null, 2)}\n`);
  });

  it('sends each flag as its field of the request, repeated flags as lists, with the tenant key', async () => {
    const result = await run(
      [
        'search',
        'grace is a gift',
        '--limit',
        '5',
        '--item',
        'job_abcdefghijklmnopqrstuvwxyz',
        '--item',
        'job_zyxwvutsrqponmlkjihgfedcba',
        '--from',
        '2025-09-01',
        '--to',
        '2025-12-31',
        '--label',
        'advent',
        '--label',
        'guest speaker',
      ],
      [() => json(200, answer)],
    );
    expect(result.code).toBe(0);
    expect(result.sent.map((s) => `${s.method} ${s.url}`)).toEqual([`POST ${URL_BASE}/v1/search`]);
    expect(result.sent[0]?.headers.get('x-api-key')).toBe('tenant-key');
    expect(JSON.parse(result.sent[0]?.body as string)).toEqual({
      query: 'grace is a gift',
      limit: 5,
      filter: {
        itemIds: ['job_abcdefghijklmnopqrstuvwxyz', 'job_zyxwvutsrqponmlkjihgfedcba'],
        dateFrom: '2025-09-01',
        dateTo: '2025-12-31',
        labels: ['advent', 'guest speaker'],
      },
    });
    const bare = await run(['search', 'grace'], [() => json(200, answer)]);
    expect(JSON.parse(bare.sent[0]?.body as string)).toEqual({ query: 'grace' });
  });

  it.each([
    [['search'], 'search takes <query>'],
    [['search', 'grace', 'gift'], 'search takes <query>'],
    [['search', 'grace', '--limit', 'five'], '--limit must be a whole number'],
    [['search', 'grace', '--speaker', 'x'], 'unknown flag --speaker.'],
    [['search', 'grace', '--from'], '--from needs a value.'],
  ])('refuses %j with a usage error and exit code 3, sending nothing', async (argv, message) => {
    const result = await run(argv);
    expect(result.code).toBe(EXIT.usage);
    expect(result.stderr).toContain(message);
    expect(result.stderr).toContain('Run longhaul search --help for usage.');
    expect(result.sent).toEqual([]);
  });

  it("prints the API's refusal with its field errors, exit code 1, and the problem with --json", async () => {
    const refusal = () =>
      json(
        400,
        {
          type: 'urn:longhaul:problem:validation-failed',
          title: 'Validation Failed',
          status: 400,
          detail: 'The request body is invalid.',
          code: 'validation-failed',
          errors: [{ pointer: '/filter/dateTo', detail: 'dateFrom must not be after dateTo' }],
        },
        'application/problem+json',
      );
    const argv = ['search', 'grace', '--from', '2026-03-02', '--to', '2026-03-01'];
    const human = await run(argv, [refusal]);
    expect(human.code).toBe(EXIT.error);
    expect(human.stderr).toBe(
      'longhaul: Validation Failed (400 validation-failed): The request body is invalid.\n  /filter/dateTo: dateFrom must not be after dateTo\n',
    );
    expect(human.stdout).toBe('');
    const machine = await run([...argv, '--json'], [refusal]);
    expect(JSON.parse(machine.stdout)).toMatchObject({
      error: { kind: 'api', exitCode: EXIT.error, problem: { code: 'validation-failed', status: 400 } },
    });
  });

  it('is in the help, with its flags', async () => {
    const help = await run(['--help']);
    expect(help.stdout).toMatch(/\n {2}search +find the passages of published recordings/);
    const own = await run(['search', '--help']);
    expect(own.code).toBe(0);
    expect(own.stdout).toMatch(/\nUsage: longhaul search "<query>" \[--limit <n>\] \[--item <id>\]…/);
    for (const flag of ['--limit', '--item', '--from', '--to', '--label', '--json'])
      expect(own.stdout).toContain(flag);
  });
});

describe('bulk cancel and replay', () => {
  const cancelAnswer =
    (matched: number, canceled: number, nextCursor: string | null = null) =>
    () =>
      json(200, { matched, canceled, cancelRequested: 0, nextCursor });

  it('cancels by filter and window, following the cursor until every matching job was seen', async () => {
    const result = await run(
      [
        'jobs',
        'cancel',
        '--filter',
        'status=queued,running,type=image.generate',
        '--created-after',
        '2026-03-01T00:00:00Z',
        '--yes',
      ],
      [cancelAnswer(100, 100, 'c1'), cancelAnswer(7, 6)],
    );

    expect(result).toMatchObject({ code: EXIT.ok, stdout: '107 job(s) matched, 106 canceled\n' });
    const filter = {
      status: ['queued', 'running'],
      type: 'image.generate',
      createdAfter: '2026-03-01T00:00:00Z',
    };
    expect(result.sent.map((sent) => [sent.method, sent.url, JSON.parse(String(sent.body))])).toEqual([
      ['POST', `${URL_BASE}/v1/jobs/cancel`, { filter, dryRun: false }],
      ['POST', `${URL_BASE}/v1/jobs/cancel`, { filter, dryRun: false, cursor: 'c1' }],
    ]);
    expect(result.sent[0]?.headers.get('x-api-key')).toBe('tenant-key');
  });

  it('counts only on --dry-run, and takes --all for every unfinished job', async () => {
    const result = await run(['jobs', 'cancel', '--all', '--dry-run'], [cancelAnswer(3, 0)]);
    expect(result).toMatchObject({ code: EXIT.ok, stdout: '3 job(s) match; none canceled (dry run)\n' });
    expect(JSON.parse(String(result.sent[0]?.body))).toEqual({ filter: {}, dryRun: true });
  });

  it('still cancels one job by its id', async () => {
    const result = await run(
      ['jobs', 'cancel', 'job_cliclicliclicliclicliclicl'],
      [() => json(202, job('canceled'))],
    );
    expect(result.code).toBe(EXIT.ok);
    expect(result.sent.map((sent) => sent.url)).toEqual([
      `${URL_BASE}/v1/jobs/job_cliclicliclicliclicliclicl/cancel`,
    ]);
  });

  it.each([
    [['jobs', 'cancel'], 'Name a job id, a --filter, or --all'],
    [['jobs', 'cancel', 'job_x', '--all'], 'not both'],
    [['jobs', 'cancel', '--filter', 'status=paused'], '--filter status must be one of'],
    [['jobs', 'cancel', '--filter', 'colour=red'], '--filter takes status=<status>'],
    [['jobs', 'cancel', '--all', '--filter', 'status=queued'], '--all and --filter do not go together'],
    [['review', 'replay', '--status', 'failed'], '--note is required'],
    [['review', 'replay', '--note', 'x'], '--status is required'],
  ])('refuses %j with a usage error, sending nothing', async (argv, message) => {
    const result = await run(argv);
    expect({ code: result.code, sent: result.sent.length }).toEqual({ code: EXIT.usage, sent: 0 });
    expect(result.stderr).toContain(message);
  });

  it('replays with the admin key, lists each replay and refusal, and exits 1 when any was refused', async () => {
    const result = await run(
      ['review', 'replay', '--status', 'failed,needs_review', '--tenant', 'acme', '--note', 'provider fixed'],
      [
        () =>
          json(200, {
            matched: 2,
            replayed: 1,
            alreadyReplayed: 0,
            refused: [{ id: 'job_b', reason: 'needs-review' }],
            jobs: [{ id: 'job_new', replayOf: 'job_a', tenantId: 'acme' }],
            nextCursor: null,
          }),
      ],
    );

    expect(result.code).toBe(EXIT.error);
    expect(result.stdout).toBe(
      '2 job(s) matched, 1 replayed\n  job_a -> job_new  acme\n  job_b refused: needs-review\n',
    );
    expect(result.sent[0]?.url).toBe(`${URL_BASE}/v1/admin/jobs/replay`);
    expect(result.sent[0]?.headers.get('x-api-key')).toBe('admin-key');
    expect(JSON.parse(String(result.sent[0]?.body))).toEqual({
      filter: { status: ['failed', 'needs_review'], tenant: 'acme' },
      note: 'provider fixed',
      dryRun: false,
    });
  });
});

describe('longhaul schedules', () => {
  const schedule = (enabled = true) => ({
    id: 'sch_cliclicliclicliclicliclicl',
    expression: 'rate(1 hour)',
    timezone: 'Europe/Berlin',
    job: { type: 'image.generate', input: { prompt: 'x' } },
    enabled,
    nextRunAt: enabled ? '2026-01-01T01:00:00.000Z' : null,
    createdAt: '2026-01-01T00:00:00.000Z',
  });

  it('creates a schedule under a fresh idempotency key with the job template, and prints it', async () => {
    const { code, stdout, stderr, sent } = await run(
      [
        'schedules',
        'create',
        '--expression',
        'rate(1 hour)',
        '--timezone',
        'Europe/Berlin',
        '--type',
        'image.generate',
        '--input',
        '{"prompt":"x"}',
      ],
      [() => json(201, schedule())],
    );
    expect(code).toBe(EXIT.ok);
    expect(sent.map((s) => [s.method, s.url])).toEqual([['POST', `${URL_BASE}/v1/schedules`]]);
    expect(JSON.parse(String(sent[0]?.body))).toEqual({
      expression: 'rate(1 hour)',
      timezone: 'Europe/Berlin',
      job: { type: 'image.generate', input: { prompt: 'x' } },
    });
    expect(sent[0]?.headers.get('idempotency-key')).toMatch(/\S+/);
    expect(stderr).toContain(`idempotency key: ${sent[0]?.headers.get('idempotency-key')}`);
    expect(stdout).toBe(
      'sch_cliclicliclicliclicliclicl  rate(1 hour) Europe/Berlin  image.generate  next 2026-01-01T01:00:00.000Z\n',
    );
  });

  it("gives each firing's job a deadline to start with --start-within, in seconds of the duration", async () => {
    const { code, sent } = await run(
      [
        'schedules',
        'create',
        '--expression',
        'rate(1 hour)',
        '--type',
        'image.generate',
        '--prompt',
        'x',
      ].concat(['--start-within', '15m']),
      [() => json(201, schedule())],
    );
    expect(code).toBe(EXIT.ok);
    expect(JSON.parse(String(sent[0]?.body))).toEqual({
      expression: 'rate(1 hour)',
      job: { type: 'image.generate', input: { prompt: 'x' } },
      startWithinSeconds: 900,
    });
  });

  it('disables, enables and deletes by id, with the method and body each needs', async () => {
    const id = 'sch_cliclicliclicliclicliclicl';
    const disabled = await run(['schedules', 'disable', id], [() => json(200, schedule(false))]);
    expect([disabled.sent[0]?.method, disabled.sent[0]?.url, String(disabled.sent[0]?.body)]).toEqual([
      'PATCH',
      `${URL_BASE}/v1/schedules/${id}`,
      '{"enabled":false}',
    ]);
    expect(disabled.stdout).toContain('disabled');
    const enabled = await run(['schedules', 'enable', id], [() => json(200, schedule())]);
    expect(String(enabled.sent[0]?.body)).toBe('{"enabled":true}');
    const deleted = await run(['schedules', 'delete', id], [() => new Response(null, { status: 204 })]);
    expect([deleted.code, deleted.sent[0]?.method, deleted.stdout]).toEqual([
      EXIT.ok,
      'DELETE',
      `${id} deleted\n`,
    ]);
  });

  it('refuses a create without an expression, before sending anything', async () => {
    const { code, sent, stderr } = await run([
      'schedules',
      'create',
      '--type',
      'image.generate',
      '--input',
      '{}',
    ]);
    expect([code, sent.length]).toEqual([EXIT.usage, 0]);
    expect(stderr).toContain('--expression is required.');
  });
});

describe('longhaul media', () => {
  const MEDIA = 'med_cliclicliclicliclicliclicl';
  const VERSION_JOB = 'job_cliclicliclicliclicliclicl';
  /** An item as the handler answers it: parsed with its own schema. */
  const item = (extra: Record<string, unknown> = {}) =>
    mediaItemView.parse({
      id: MEDIA,
      title: 'Advent 1',
      speaker: 'R. Hale',
      date: '2025-11-30',
      labels: ['advent'],
      createdAt: '2026-01-01T00:00:00.000Z',
      updatedAt: '2026-01-01T00:00:00.000Z',
      ...extra,
    });
  const withHeaders = (status: number, body: unknown, headers: Record<string, string>) =>
    new Response(JSON.stringify(body), {
      status,
      headers: { 'content-type': 'application/json', ...headers },
    });
  const publishing = item({
    inProgress: {
      number: 2,
      jobId: VERSION_JOB,
      status: 'publishing',
      createdAt: '2026-01-01T00:01:00.000Z',
    },
  });

  it('creates an item from its flags under a printed key, and prints it', async () => {
    const { code, stdout, stderr, sent } = await run(
      [
        'media',
        'create',
        '--title',
        'Advent 1',
        '--speaker',
        'R. Hale',
        '--date',
        '2025-11-30',
        '--label',
        'advent',
        '--label',
        'st-marks',
      ],
      [() => json(201, item())],
    );
    expect(code).toBe(EXIT.ok);
    expect(sent.map((s) => [s.method, s.url])).toEqual([['POST', `${URL_BASE}/v1/media`]]);
    expect(JSON.parse(String(sent[0]?.body))).toEqual({
      title: 'Advent 1',
      speaker: 'R. Hale',
      date: '2025-11-30',
      labels: ['advent', 'st-marks'],
    });
    const key = sent[0]?.headers.get('idempotency-key');
    expect(key).toMatch(/^[0-9a-f-]{36}$/);
    expect(stderr).toContain(`idempotency key: ${key}`);
    expect(stdout.split('\n')[0]).toBe(`${MEDIA}  Advent 1`);
    expect(stdout).toContain('  current  none published yet\n');
  });

  it('resumes a create with --idempotency-key, printing no new key', async () => {
    const { code, stderr, sent } = await run(
      ['media', 'create', '--title', 'Advent 1', '--idempotency-key', 'advent-1', '--json'],
      [() => withHeaders(201, item(), { 'idempotent-replayed': 'true' })],
    );
    expect(code).toBe(EXIT.ok);
    expect(sent[0]?.headers.get('idempotency-key')).toBe('advent-1');
    expect(stderr).not.toContain('idempotency key:');
  });

  it('lists items with the filter as its query, at most --limit across pages, and says how to go on', async () => {
    const { code, stdout, stderr, sent } = await run(
      ['media', 'list', '--label', 'advent', '--from', '2025-11-01', '--to', '2025-12-31', '--limit', '2'],
      [
        () => json(200, { items: [item()], nextCursor: 'c2' }),
        () => json(200, { items: [item({ title: 'Advent 2', speaker: undefined })], nextCursor: 'c3' }),
      ],
    );
    expect(code).toBe(EXIT.ok);
    expect(sent.map((s) => s.url)).toEqual([
      `${URL_BASE}/v1/media?label=advent&dateFrom=2025-11-01&dateTo=2025-12-31&limit=2`,
      `${URL_BASE}/v1/media?label=advent&dateFrom=2025-11-01&dateTo=2025-12-31&cursor=c2&limit=1`,
    ]);
    expect(stdout.split('\n').slice(1, 3)).toEqual([
      `${MEDIA}  2025-11-30                       Advent 1 (R. Hale)`,
      `${MEDIA}  2025-11-30                       Advent 2`,
    ]);
    expect(stderr).toBe(
      'more: longhaul media list --label advent --from 2025-11-01 --to 2025-12-31 --cursor c3\n',
    );
  });

  it('gets an item as the API answers it with --json, and exits 5 for one that is not there', async () => {
    const got = await run(['media', 'get', MEDIA, '--json'], [() => json(200, publishing)]);
    expect([got.code, got.sent[0]?.url, JSON.parse(got.stdout)]).toEqual([
      EXIT.ok,
      `${URL_BASE}/v1/media/${MEDIA}`,
      publishing,
    ]);
    const missing = await run(
      ['media', 'get', MEDIA],
      [
        () =>
          json(
            404,
            {
              type: 'urn:longhaul:problem:not-found',
              title: 'Not Found',
              status: 404,
              detail: 'No media item.',
              code: 'not-found',
            },
            'application/problem+json',
          ),
      ],
    );
    expect(missing.code).toBe(EXIT.notFound);
  });

  it('updates the fields named, --clear sending null or no labels', async () => {
    const { code, sent } = await run(
      ['media', 'update', MEDIA, '--title', 'Advent 2', '--clear', 'speaker', '--clear', 'labels'],
      [() => json(200, item({ title: 'Advent 2' }))],
    );
    expect(code).toBe(EXIT.ok);
    expect([sent[0]?.method, sent[0]?.url, JSON.parse(String(sent[0]?.body))]).toEqual([
      'PATCH',
      `${URL_BASE}/v1/media/${MEDIA}`,
      { title: 'Advent 2', speaker: null, labels: [] },
    ]);
  });

  it.each([
    [['media', 'update', MEDIA], 'Name a change'],
    [['media', 'update', MEDIA, '--clear', 'title'], '--clear must be one of speaker, date, labels.'],
    [['media', 'update', MEDIA, '--date', '2025-12-01', '--clear', 'date'], 'do not go together'],
    [['media', 'create', '--speaker', 'R. Hale'], '--title is required.'],
    [['media', 'publish', MEDIA], 'Name the recording: --file <path> or --audio-url <https url>.'],
    [
      ['media', 'publish', MEDIA, '--file', 'a.mp3', '--audio-url', 'https://media.example.test/a.mp3'],
      '--file and --audio-url do not go together',
    ],
    [
      ['media', 'publish', MEDIA, '--audio-url', 'https://x.test/a.mp3', '--content-type', 'audio/mpeg'],
      'goes with --file',
    ],
    [['media', 'publish', '--audio-url', 'https://media.example.test/a.mp3'], 'media publish takes <id>.'],
  ])('refuses %j with a usage error before any request', async (argv, message) => {
    const { code, sent, stderr } = await run(argv);
    expect({ code, requests: sent.length }).toEqual({ code: EXIT.usage, requests: 0 });
    expect(stderr).toContain(message);
  });

  it('deletes an item: one DELETE, a 204 answered with its id', async () => {
    const { code, sent, stdout } = await run(
      ['media', 'delete', MEDIA],
      [() => new Response(null, { status: 204 })],
    );
    expect([code, sent.map((s) => `${s.method} ${s.url}`), stdout]).toEqual([
      EXIT.ok,
      [`DELETE ${URL_BASE}/v1/media/${MEDIA}`],
      `${MEDIA} deleted\n`,
    ]);
  });

  it('publishes an https URL as the next version and says how to follow its job', async () => {
    const { code, sent, stdout, stderr } = await run(
      ['media', 'publish', MEDIA, '--audio-url', 'https://media.example.test/a.mp3', '--language', 'en'],
      [() => withHeaders(202, publishing, { location: `/v1/jobs/${VERSION_JOB}` })],
    );
    expect(code).toBe(EXIT.ok);
    expect([sent[0]?.method, sent[0]?.url, JSON.parse(String(sent[0]?.body))]).toEqual([
      'POST',
      `${URL_BASE}/v1/media/${MEDIA}/versions`,
      { audioUrl: 'https://media.example.test/a.mp3', language: 'en' },
    ]);
    expect(sent[0]?.headers.get('idempotency-key')).toMatch(/^[0-9a-f-]{36}$/);
    expect(stdout).toContain(`publishing  v2 publishing  ${VERSION_JOB}`);
    expect(stderr).toBe(`follow it: longhaul jobs wait ${VERSION_JOB}\n`);
  });

  it("uploads --file first, publishes its ref, and with --wait waits for the version's job", async () => {
    const dir = mkdtempSync(join(tmpdir(), 'longhaul-media-'));
    const path = join(dir, 'advent-1.mp3');
    writeFileSync(path, Buffer.from([1, 2, 3]));
    const uploadUrl = 'https://uploads.example.test/put?X-Amz-Signature=abc';
    const ref = 'upl_0123456789abcdefghijklmn';
    const finished = job('succeeded', { id: VERSION_JOB, type: 'audio.publish' });
    const { code, sent, stdout } = await run(
      ['media', 'publish', MEDIA, '--file', path, '--wait', '--json'],
      [
        () => json(201, { ref, uploadUrl, expiresAt: '2026-01-01T01:00:00.000Z' }),
        () => new Response(null, { status: 200 }),
        () => withHeaders(202, publishing, { location: `/v1/jobs/${VERSION_JOB}` }),
        () => json(200, finished),
      ],
    );
    expect(code).toBe(EXIT.ok);
    expect(sent.map((s) => `${s.method} ${s.url}`)).toEqual([
      `POST ${URL_BASE}/v1/uploads`,
      `PUT ${uploadUrl}`,
      `POST ${URL_BASE}/v1/media/${MEDIA}/versions`,
      `GET ${URL_BASE}/v1/jobs/${VERSION_JOB}`,
    ]);
    expect(JSON.parse(String(sent[0]?.body))).toEqual({ contentType: 'audio/mpeg', contentLength: 3 });
    expect(JSON.parse(String(sent[2]?.body))).toEqual({ audioRef: ref });
    expect(JSON.parse(stdout)).toEqual(finished);
  });

  it('is in the help, each command with its flags', async () => {
    const help = await run(['--help']);
    expect(help.stdout).toContain('media publish');
    const group = await run(['media', '--help']);
    expect(group.stdout.match(/^ {2}media \w+/gm)).toEqual([
      '  media create',
      '  media list',
      '  media get',
      '  media update',
      '  media delete',
      '  media publish',
    ]);
    const publish = await run(['media', 'publish', '--help']);
    expect(publish.stdout).toMatch(/\nUsage: longhaul media publish <id> \(--file <path>/);
  });
});

describe('jobs resume', () => {
  it('posts the resume of the job and prints it running again', async () => {
    const result = await run(
      ['jobs', 'resume', 'job_cliclicliclicliclicliclicl', '--json'],
      [() => json(202, job('running', { resumes: 1 }))],
    );
    expect(result.code).toBe(EXIT.ok);
    expect(result.sent.map((s) => `${s.method} ${s.url}`)).toEqual([
      `POST ${URL_BASE}/v1/jobs/job_cliclicliclicliclicliclicl/resume`,
    ]);
    expect(JSON.parse(result.stdout)).toMatchObject({ status: 'running' });
  });

  it('exits 1 with the problem for a job that cannot be resumed, and does not send it again', async () => {
    const refused = () =>
      json(
        409,
        {
          type: 'urn:longhaul:problem:job-not-resumable',
          title: 'Job Not Resumable',
          status: 409,
          detail: 'Job job_x needs review.',
          code: 'job-not-resumable',
        },
        'application/problem+json',
      );
    const result = await run(['jobs', 'resume', 'job_x'], [refused]);
    expect(result.code).toBe(EXIT.error);
    expect(result.stderr).toContain('Job Not Resumable (409 job-not-resumable): Job job_x needs review.');
    expect(result.sent).toHaveLength(1);
  });

  it('takes exactly one job id', async () => {
    expect((await run(['jobs', 'resume'])).code).toBe(EXIT.usage);
  });
});

describe('checks every argument before the first request', () => {
  it('waits with --timeout 10s after submitting, and refuses a bad --timeout before submitting anything', async () => {
    const done = job('succeeded');
    const waited = await run(
      ['submit', '--type', 'image.generate', '--prompt', 'x', '--wait', '--timeout', '10s', '--json'],
      [() => json(202, job()), () => json(200, done)],
    );
    expect(waited.code).toBe(EXIT.ok);
    expect(JSON.parse(waited.stdout)).toEqual(done);

    for (const [argv, message] of [
      [
        ['--wait', '--timeout', 'soon'],
        '--timeout takes a duration: 90s, 2m, 1h or 1d; a bare number is seconds; not "soon".',
      ],
      [['--wait', '--timeout', '0'], '--timeout takes a duration'],
      [['--timeout', '10s'], '--timeout goes with --wait'],
      [['--at', 'tomorrow'], '--at takes an RFC 3339 time with an offset'],
    ] as const) {
      const refused = await run(['submit', '--type', 'image.generate', '--prompt', 'x', ...argv]);
      expect({ code: refused.code, sent: refused.sent }).toEqual({ code: EXIT.usage, sent: [] });
      expect(refused.stderr).toContain(message);
      // The key is printed when a request is about to go, so a refused command line prints none.
      expect(refused.stderr).not.toContain('idempotency key');
    }
  });

  it('refuses --timeout without --wait in media publish too, before uploading anything', async () => {
    const result = await run([
      'media',
      'publish',
      'med_x',
      '--audio-url',
      'https://a.example.test/a.mp3',
      '--timeout',
      '5m',
    ]);
    expect({ code: result.code, sent: result.sent }).toEqual({ code: EXIT.usage, sent: [] });
    expect(result.stderr).toContain('--timeout goes with --wait');
  });

  it('takes --timeout as seconds, or with s, m, h or d, in jobs wait too', async () => {
    const stop = new AbortController();
    const result = await run(
      ['jobs', 'wait', job().id, '--timeout', '2m', '--json'],
      [() => json(200, job('succeeded'))],
      undefined,
      { signal: stop.signal },
    );
    expect(result.code).toBe(EXIT.ok);
    expect((await run(['jobs', 'wait', job().id, '--timeout', '2x'])).code).toBe(EXIT.usage);
  });

  it('runs a job a duration from now with --at 2h, sending the time it names', async () => {
    const { sent, code } = await run(
      ['submit', '--type', 'image.generate', '--prompt', 'x', '--at', '2h'],
      [() => json(202, job('scheduled'))],
      undefined,
      { now: new Date('2026-03-01T09:00:00.000Z') },
    );
    expect(code).toBe(EXIT.ok);
    expect(JSON.parse(String(sent[0]?.body))).toMatchObject({ runAt: '2026-03-01T11:00:00.000Z' });
  });

  it('gives a job a deadline to start with --start-by 30m, sending the time it names', async () => {
    const { sent, code } = await run(
      ['submit', '--type', 'image.generate', '--prompt', 'x', '--start-by', '30m'],
      [() => json(202, job())],
      undefined,
      { now: new Date('2026-03-01T09:00:00.000Z') },
    );
    expect(code).toBe(EXIT.ok);
    expect(JSON.parse(String(sent[0]?.body))).toMatchObject({ startBy: '2026-03-01T09:30:00.000Z' });
  });

  it('names a directory given as --file, --input @ or a batch file as such, sending nothing', async () => {
    const directory = mkdtempSync(join(tmpdir(), 'longhaul-cli-dir-'));
    for (const [argv, message] of [
      [['submit', '--type', 'audio.transcribe', '--file', directory], `--file ${directory} is a directory`],
      [
        ['submit', '--type', 'image.generate', '--input', `@${directory}`],
        `--input ${directory} is a directory`,
      ],
      [['batch', directory], `batch ${directory} is a directory`],
    ] as const) {
      const result = await run([...argv]);
      expect({ code: result.code, sent: result.sent }).toEqual({ code: EXIT.usage, sent: [] });
      expect(result.stderr).toContain(message);
    }
  });

  it('says an upload refused for its size is about --file, not /contentLength', async () => {
    const path = join(mkdtempSync(join(tmpdir(), 'longhaul-cli-big-')), 'talk.mp3');
    writeFileSync(path, 'x'.repeat(64));
    const tooBig = () =>
      json(
        400,
        {
          type: 'urn:longhaul:problem:validation-failed',
          title: 'Validation Failed',
          status: 400,
          detail: 'The request body is invalid.',
          code: 'validation-failed',
          errors: [{ pointer: '/contentLength', detail: 'must be at most 32 bytes' }],
        },
        'application/problem+json',
      );
    const result = await run(['submit', '--type', 'audio.transcribe', '--file', path], [tooBig, tooBig]);
    expect(result.code).toBe(EXIT.error);
    expect(result.stderr).toContain(`  --file ${path} (its size): must be at most 32 bytes\n`);
    expect(result.stderr).not.toContain('/contentLength');
  });
});

describe('help', () => {
  /** Every command the top-level help lists. */
  async function commandNames(): Promise<string[]> {
    const { stdout } = await run(['--help']);
    const table = stdout.split('\nCommands:\n')[1]?.split('\n\n')[0] ?? '';
    return table.split('\n').map((line) => /^ {2}(\S+(?: [a-z]+)?) {2,}/.exec(line)?.[1] ?? line);
  }

  it('lists the commands in two aligned columns, each name apart from its summary', async () => {
    const { stdout } = await run(['--help']);
    const table = stdout.split('\nCommands:\n')[1]?.split('\n\n')[0]?.split('\n') ?? [];
    expect(table.length).toBeGreaterThan(20);
    const columns = table.map((line) => /^ {2}\S+(?: [a-z]+)? {2,}/.exec(line)?.[0].length);
    expect(new Set(columns)).toEqual(new Set([columns[0]]));
    expect(table).toContainEqual(
      expect.stringMatching(/^ {2}schedules create {2,}create a recurring schedule/),
    );
  });

  it('gives each command its description first, its examples, and a pointer to the shared text', async () => {
    for (const name of await commandNames()) {
      const { stdout, code } = await run([...name.split(' '), '--help']);
      expect({ name, code }).toEqual({ name, code: 0 });
      const [description, usage] = stdout.split('\n\n');
      expect({ name, description: /^[A-Z].*\.$/.test(description ?? '') }).toEqual({
        name,
        description: true,
      });
      expect(usage).toMatch(new RegExp(`^Usage: longhaul ${name}`));
      expect(stdout).toMatch(/\nExamples:\n {2}(# .*\n {2})?longhaul /);
      expect(stdout).toContain('\nKeys, environment and exit codes: longhaul --help.\n');
      expect(stdout).not.toContain('Exit codes:');
      expect(stdout).not.toContain('LONGHAUL_URL');
      // `longhaul help <command>` is the same help.
      expect((await run(['help', ...name.split(' ')])).stdout).toBe(stdout);
    }
  });

  it('runs every EXAMPLES line through the CLI and none is refused as a usage error', async () => {
    const workspace = mkdtempSync(join(tmpdir(), 'longhaul-cli-examples-'));
    writeFileSync(join(workspace, 'sermon.mp3'), 'ID3');
    writeFileSync(join(workspace, 'admin.key'), 'lh_admin\n');
    writeFileSync(
      join(workspace, 'prompts.jsonl'),
      `${JSON.stringify({ type: 'image.generate', input: { prompt: 'x' } })}\n`,
    );
    const notFound = () =>
      json(
        404,
        {
          type: 'urn:longhaul:problem:not-found',
          title: 'Not Found',
          status: 404,
          detail: 'No such thing.',
          code: 'not-found',
        },
        'application/problem+json',
      );
    const examples: string[] = [];
    for (const name of await commandNames()) {
      const { stdout } = await run([...name.split(' '), '--help']);
      const section = stdout.split('\nExamples:\n')[1]?.split('\n\n')[0] ?? '';
      examples.push(
        ...section
          .split('\n')
          .map((line) => line.trim())
          .filter((line) => line.startsWith('longhaul ')),
      );
    }
    expect(examples.length).toBeGreaterThanOrEqual((await commandNames()).length);
    const home = process.cwd();
    process.chdir(workspace);
    const refused: { example: string; stderr: string }[] = [];
    try {
      for (const example of examples) {
        const result = await run(
          shellWords(example).slice(1),
          Array.from({ length: 20 }, () => notFound),
          { LONGHAUL_API_KEY: 'tenant-key', LONGHAUL_ADMIN_KEY: 'admin-key', LONGHAUL_CONFIG_DIR: workspace },
          { stdin: { text: 'lh_tenant\n' } },
        );
        if (result.code === EXIT.usage) refused.push({ example, stderr: result.stderr });
        // What the API would refuse of a job it is sent, as its own parser of the request says.
        for (const sent of result.sent.filter(
          (s) => s.method === 'POST' && s.url === `${URL_BASE}/v1/jobs` && typeof s.body === 'string',
        )) {
          try {
            parseCreateJob(JSON.parse(String(sent.body)), {
              allowPrivateWebhooks: false,
              scheduleMaxAheadDays: loadSettings({}).scheduleMaxAheadDays,
              now: () => new Date(),
            });
          } catch (error) {
            refused.push({ example, stderr: `${(error as Error).message} ${JSON.stringify(error)}` });
          }
        }
      }
    } finally {
      process.chdir(home);
    }
    expect(refused).toEqual([]);
  });

  it('describes --type, --webhook and every job status where a flag takes one', async () => {
    const submit = (await run(['help', 'submit'])).stdout;
    expect(submit).toMatch(
      /\n {2}--type <type> +the job type, one of: image\.generate, audio\.transcribe, audio\.publish\n/,
    );
    expect(submit).toMatch(/\n {2}--webhook <url> +an https URL the finished job is POSTed to, signed/);
    const list = (await run(['help', 'jobs', 'list'])).stdout;
    for (const status of JOB_STATUSES) expect(list).toMatch(new RegExp(`\\n {18}${status} +\\S`));
    const replay = (await run(['help', 'review', 'replay'])).stdout;
    expect(replay).toContain(JOB_STATUSES.join(', '));
  });

  it('gives schedules create the job flags of submit, from one definition', async () => {
    const jobFlags = (help: string) =>
      help.slice(help.indexOf('  --type <type>'), help.indexOf('  --priority <p>'));
    const submit = (await run(['help', 'submit'])).stdout;
    const create = (await run(['help', 'schedules', 'create'])).stdout;
    expect(jobFlags(submit).length).toBeGreaterThan(200);
    expect(jobFlags(create)).toBe(jobFlags(submit));
    const schedule = {
      id: 'sch_1',
      expression: 'rate(1 day)',
      timezone: 'UTC',
      enabled: true,
      job: { type: 'image.generate', input: {} },
    };
    const { sent, code } = await run(
      [
        'schedules',
        'create',
        '--expression',
        'rate(1 day)',
        '--type',
        'image.generate',
        '--prompt',
        'a fox',
        '--width',
        '512',
      ],
      [() => json(201, schedule)],
    );
    expect(code).toBe(EXIT.ok);
    expect(JSON.parse(String(sent[0]?.body)).job).toEqual({
      type: 'image.generate',
      input: { prompt: 'a fox', width: 512 },
    });
  });
});

describe('errors in the CLI’s own words', () => {
  it.each([
    [['sumbit', '--type', 'image.generate'], 'longhaul: unknown command "sumbit". Did you mean submit?\n'],
    [['jobs', 'lsit'], 'longhaul: unknown command "jobs lsit". Did you mean jobs list?\n'],
    [['submit', '--type', 'image.generate', '--bogus'], 'longhaul: unknown flag --bogus.\n'],
    [
      ['submit', '--type', 'image.generate', '--promt', 'x'],
      'longhaul: unknown flag --promt. Did you mean --prompt?\n',
    ],
    [
      ['submit', '--type', 'image.generate', '--prompt', 'x', '--width', '-5'],
      'longhaul: --width needs a value; for a value that starts with a dash, write --width=<value>.\n',
    ],
    [['submit', '--type', 'image.generate', '--wait=yes'], 'longhaul: --wait takes no value.\n'],
  ])('says %j as %j, exit 3, sending nothing', async (argv, message) => {
    const result = await run(argv);
    expect({ code: result.code, sent: result.sent }).toEqual({ code: EXIT.usage, sent: [] });
    expect(result.stderr.startsWith(message)).toBe(true);
    expect(result.stderr).not.toMatch(/Option '|Unknown option|ambiguous/);
  });
});

describe('continuation hint', () => {
  it('keeps the filters and page size of the listing it continues', async () => {
    const result = await run(
      ['jobs', 'list', '--status', 'succeeded', '--limit', '1'],
      [() => json(200, { items: [job('succeeded')], nextCursor: 'c 2' })],
    );
    expect(result.code).toBe(EXIT.ok);
    expect(result.stderr).toBe("more: longhaul jobs list --status succeeded --limit 1 --cursor 'c 2'\n");
  });
});

describe('commands that change many things at once', () => {
  const cancelled = () => json(200, { matched: 2, canceled: 2, cancelRequested: 0, nextCursor: null });

  it.each([
    [['jobs', 'cancel', '--all']],
    [['jobs', 'cancel', '--filter', 'status=queued']],
    [['dlq', 'redrive']],
  ])('refuses %j with no terminal to ask on unless --yes, sending nothing', async (argv) => {
    const result = await run(argv);
    expect({ code: result.code, sent: result.sent }).toEqual({ code: EXIT.usage, sent: [] });
    expect(result.stderr).toContain('There is no terminal to confirm it on: pass --yes to go on.');
  });

  it('asks on a terminal, and does nothing unless the answer is yes', async () => {
    const declined = await run(['jobs', 'cancel', '--all'], [], undefined, {
      stdin: { isTTY: true, answers: ['n'] },
    });
    expect(declined.questions).toEqual([
      'jobs cancel --all cancels every unfinished job. Cancel them? [y/N] ',
    ]);
    expect({ code: declined.code, sent: declined.sent }).toEqual({ code: EXIT.error, sent: [] });
    const agreed = await run(['jobs', 'cancel', '--all'], [cancelled], undefined, {
      stdin: { isTTY: true, answers: ['y'] },
    });
    expect(agreed.code).toBe(EXIT.ok);
    expect(agreed.sent.map((sent) => `${sent.method} ${sent.url}`)).toEqual([
      `POST ${URL_BASE}/v1/jobs/cancel`,
    ]);
    // A dry run changes nothing: nothing to confirm.
    const dry = await run(['jobs', 'cancel', '--all', '--dry-run'], [cancelled]);
    expect(dry.code).toBe(EXIT.ok);
  });
});

describe('keys from a file, stdin or longhaul login', () => {
  const list = () => json(200, { items: [], nextCursor: null });

  it('reads the key from --api-key-file, or stdin with -, before the environment', async () => {
    const path = join(mkdtempSync(join(tmpdir(), 'longhaul-cli-key-')), 'tenant.key');
    writeFileSync(path, 'from-file\n');
    const fromFile = await run(['jobs', 'list', '--api-key-file', path], [list], {
      LONGHAUL_API_KEY: 'from-env',
    });
    expect(fromFile.sent[0]?.headers.get('x-api-key')).toBe('from-file');
    const fromStdin = await run(
      ['jobs', 'list', '--api-key-file', '-'],
      [list],
      {},
      { stdin: { text: 'piped\n' } },
    );
    expect(fromStdin.sent[0]?.headers.get('x-api-key')).toBe('piped');
    const admin = await run(['review', 'list', '--api-key-file', path], [list], {});
    expect(admin.sent[0]?.headers.get('x-api-key')).toBe('from-file');
    const missing = await run(['jobs', 'list', '--api-key-file', join(path, 'nope')], [], {});
    expect({ code: missing.code, sent: missing.sent }).toEqual({ code: EXIT.usage, sent: [] });
  });

  it('stores a key with login in a file only the user may read, uses it, and forgets it with logout', async () => {
    const config = join(mkdtempSync(join(tmpdir(), 'longhaul-cli-login-')), 'nested');
    const env = { LONGHAUL_CONFIG_DIR: config };
    const login = await run(['login'], [], env, { stdin: { text: 'lh_stored\n' } });
    expect(login.code).toBe(EXIT.ok);
    const file = join(config, 'credentials.json');
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(JSON.parse(readFileSync(file, 'utf8'))).toEqual({ apiKey: 'lh_stored' });
    await run(['login', '--admin'], [], env, { stdin: { isTTY: true, answers: ['lh_admin'] } });
    expect(JSON.parse(readFileSync(file, 'utf8'))).toEqual({ apiKey: 'lh_stored', adminKey: 'lh_admin' });

    const used = await run(['jobs', 'list'], [list], env);
    expect(used.sent[0]?.headers.get('x-api-key')).toBe('lh_stored');
    const overridden = await run(['jobs', 'list'], [list], { ...env, LONGHAUL_API_KEY: 'from-env' });
    expect(overridden.sent[0]?.headers.get('x-api-key')).toBe('from-env');

    expect((await run(['logout'], [], env)).code).toBe(EXIT.ok);
    const gone = await run(['jobs', 'list'], [], env);
    expect(gone.code).toBe(EXIT.auth);
    expect(gone.stderr).toContain('pass --api-key-file <path>, or run longhaul login.');
  });

  it('makes an older credentials file private again when it stores a key', async () => {
    const config = mkdtempSync(join(tmpdir(), 'longhaul-cli-login-'));
    mkdirSync(config, { recursive: true });
    writeFileSync(join(config, 'credentials.json'), '{}', { mode: 0o644 });
    await run(['login'], [], { LONGHAUL_CONFIG_DIR: config }, { stdin: { text: 'lh_new' } });
    expect(statSync(join(config, 'credentials.json')).mode & 0o777).toBe(0o600);
  });
});
