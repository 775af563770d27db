import { EXIT, runCli } from '../../client/cli/main';

/**
 * The CLI in-process over a scripted transport: what it sends for each
 * command line, what it prints where, and its exit codes.
 */

const URL_BASE = 'http://api.test';

const job = (status = 'queued', extra: Record<string, unknown> = {}) => ({
  id: 'job_cliclicliclicliclicliclicl',
  type: 'image.generate',
  status,
  progress: status === 'succeeded' ? 100 : 0,
  input: { prompt: 'x' },
  result: null,
  error: null,
  attempts: 0,
  idempotencyKey: 'k',
  createdAt: '2026-01-01T00:00:00.000Z',
  updatedAt: '2026-01-01T00:00:00.000Z',
  ...extra,
});

const json = (status: number, body: unknown, type = 'application/json') =>
  new Response(JSON.stringify(body), { status, headers: { 'content-type': type } });

interface Sent {
  readonly method: string;
  readonly url: string;
  readonly headers: Headers;
  readonly body: unknown;
}

async function run(
  argv: string[],
  answers: (() => Response | Error)[] = [],
  env: Record<string, string> = { LONGHAUL_API_KEY: 'tenant-key', LONGHAUL_ADMIN_KEY: 'admin-key' },
) {
  const sent: Sent[] = [];
  let stdout = '';
  let stderr = '';
  const code = await runCli(argv, {
    stdout: { write: (text: string) => (stdout += text) },
    stderr: { write: (text: string) => (stderr += text) },
    env: { LONGHAUL_URL: URL_BASE, ...env },
    webSocket: null,
    sleep: async () => undefined,
    fetch: (async (input: string | URL | Request, init?: RequestInit) => {
      sent.push({
        method: init?.method ?? 'GET',
        url: String(input),
        headers: new Headers(init?.headers),
        body: init?.body,
      });
      const answer = answers.shift();
      if (!answer) throw new Error(`unexpected request ${init?.method} ${String(input)}`);
      const outcome = answer();
      if (outcome instanceof Error) throw outcome;
      return outcome;
    }) as typeof fetch,
  });
  return { code, stdout, stderr, sent };
}

describe('usage', () => {
  it('prints usage to stderr and fails without a command, to stdout with --help', async () => {
    const bare = await run([]);
    expect({ code: bare.code, usage: bare.stderr.startsWith('Usage: longhaul') }).toEqual({
      code: 1,
      usage: true,
    });
    const help = await run(['--help']);
    expect({ code: help.code, usage: help.stdout.startsWith('Usage: longhaul') }).toEqual({
      code: 0,
      usage: true,
    });
    const commandHelp = await run(['jobs', 'list', '--help']);
    expect(commandHelp.code).toBe(0);
  });

  it.each([
    [['launch'], 'unknown command "launch"'],
    [['jobs'], 'unknown command "jobs"'],
    [['submit', '--prompt', 'x'], '--type is required'],
    [['submit', '--type', 'video.render'], '--type must be one of image.generate, audio.transcribe'],
    [['submit', '--type', 'audio.transcribe', '--prompt', 'x'], '--prompt is for image.generate jobs'],
    [['submit', '--type', 'image.generate', '--width', 'wide'], '--width must be a whole number'],
    [['submit', '--type', 'image.generate', '--input', '[1]'], '--input must be a JSON object'],
    [['submit', '--type', 'image.generate', '--input', '{'], '--input is not JSON'],
    [['submit', '--type', 'image.generate', '--file', '/nonexistent/a.png'], 'Cannot read --file'],
    [['submit', '--type', 'image.generate', '--colour', 'red'], "Unknown option '--colour'"],
    [['submit', '--type', 'image.generate', '--idempotency-key', 'has space'], '--idempotency-key'],
    [['jobs', 'get'], 'jobs get takes <id>'],
    [['jobs', 'list', '--status', 'done'], '--status must be one of'],
    [['review', 'resolve', 'job_x', '--outcome', 'succeeded'], '--note is required'],
  ])('refuses %j with a usage error and exit code 1, sending nothing', async (argv, message) => {
    const result = await run(argv);
    expect(result.code).toBe(EXIT.error);
    expect(result.stderr).toContain(message);
    expect(result.sent).toEqual([]);
  });

  it('needs the admin key for review and dlq commands', async () => {
    const result = await run(['dlq', 'redrive'], [], { LONGHAUL_API_KEY: 'tenant-key' });
    expect(result.code).toBe(1);
    expect(result.stderr).toContain('admin key');
    expect(result.sent).toEqual([]);
  });
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
    });
    const key = request?.headers.get('idempotency-key');
    expect(key).toMatch(/^[0-9a-f-]{36}$/);
    expect(result.stderr).toContain(`--idempotency-key ${key}`);
    expect(result.stdout).toBe(`${job().id} queued\n`);
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

  it('prints the problem title and detail with a hint, exit code 1, and the problem as JSON with --json', async () => {
    const human = await run(['jobs', 'list'], [unauthorized]);
    expect(human.code).toBe(1);
    expect(human.stderr).toContain('Unauthorized (401 unauthorized): A valid X-API-Key header is required.');
    expect(human.stderr).toContain('LONGHAUL_API_KEY');
    expect(human.stdout).toBe('');

    const machine = await run(['jobs', 'get', 'job_x', '--json'], [unauthorized]);
    expect(machine.code).toBe(1);
    expect(JSON.parse(machine.stdout)).toMatchObject({ error: { code: 'unauthorized', status: 401 } });
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
    expect(result.code).toBe(1);
    expect(result.sent).toHaveLength(5);
    expect(result.stderr).toContain('cannot reach the API');
    expect(result.stderr).toContain('LONGHAUL_URL');
  });
});

describe('listing and admin commands', () => {
  it('prints one page, or all pages with --all', async () => {
    const page = (ids: string[], nextCursor: string | null) => () =>
      json(200, { items: ids.map((id) => job('succeeded', { id })), nextCursor });
    const one = await run(['jobs', 'list', '--limit', '2'], [page(['job_a', 'job_b'], 'next-1')]);
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

    const redrive = await run(['dlq', 'redrive'], [() => json(202, { taskHandle: 'task-1' })]);
    expect(redrive.stdout).toBe('dead-letter redrive started (task task-1)\n');
  });
});
