import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, join, resolve } from 'node:path';
import { type RunningLocalStack, startLocalStack } from '../../local/harness/local-stack';
import { type RecordingProxy, startRecordingProxy } from './support/recording-proxy';

/**
 * The `longhaul` command line end to end: the CLI runs as a user runs it
 * (tsx client/cli.ts under the package's Node), against the local stack,
 * through a proxy that records every URL it asks for: none carries a key.
 */

jest.setTimeout(120_000);

const ROOT = resolve(__dirname, '../..');
const BIN = join(ROOT, 'node_modules', '.bin');
const KEY = 'cli-key-a41f';
const ADMIN_KEY = 'cli-admin-key-7e03';

let stack: RunningLocalStack;
let proxy: RecordingProxy;
let files: string;

beforeAll(async () => {
  files = mkdtempSync(join(tmpdir(), 'longhaul-cli-'));
  stack = await startLocalStack({
    env: {
      LONGHAUL_API_KEYS: `${KEY}:acme`,
      LONGHAUL_ADMIN_KEY: ADMIN_KEY,
      SIM_JOB_MS: '300',
      SLOT_WAIT_MAX_SECONDS: '1',
    },
  });
  proxy = await startRecordingProxy(stack.baseUrl);
});

afterAll(async () => {
  await proxy?.close();
  await stack?.stop();
  rmSync(files, { recursive: true, force: true });
  // Over every command of every test above: requests and the live-progress handshakes.
  expect(proxy.targets.some((target) => target.startsWith('upgrade /v1/stream?ticket=lhst_'))).toBe(true);
  expect(proxy.targets.length).toBeGreaterThan(15);
  for (const target of proxy.targets) {
    expect(target).not.toContain(KEY);
    expect(target).not.toContain(ADMIN_KEY);
    expect(target).not.toMatch(/apiKey=/i);
  }
});

interface Run {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

/**
 * Runs `longhaul …` to its end (killed after 60 s) with the stack's URL and keys in the environment,
 * and `input` piped to its stdin (none: stdin ends at once).
 */
function longhaul(args: string[], env: Record<string, string> = {}, input?: string): Promise<Run> {
  return new Promise((done, fail) => {
    const child = spawn(join(BIN, 'tsx'), ['client/cli.ts', ...args], {
      cwd: ROOT,
      env: {
        ...process.env,
        PATH: `${BIN}${delimiter}${process.env.PATH ?? ''}`,
        LONGHAUL_URL: proxy.url,
        LONGHAUL_API_KEY: KEY,
        LONGHAUL_ADMIN_KEY: ADMIN_KEY,
        // No test reads or writes the keys of whoever runs it.
        LONGHAUL_CONFIG_DIR: join(files, 'config'),
        ...env,
      },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    child.stdin.end(input ?? '');
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => {
      stdout += chunk.toString();
    });
    child.stderr.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    const timer = setTimeout(() => child.kill('SIGKILL'), 60_000);
    child.once('error', fail);
    child.once('close', (code) => {
      clearTimeout(timer);
      done({ code, stdout, stderr });
    });
  });
}

describe('longhaul submit --wait --json', () => {
  it('runs an image job to the end: progress on stderr, the finished job on stdout', async () => {
    const run = await longhaul([
      'submit',
      '--type',
      'image.generate',
      '--prompt',
      'a lighthouse',
      '--wait',
      '--json',
    ]);

    expect({ code: run.code, stderr: run.stderr }).toEqual({ code: 0, stderr: expect.any(String) });
    const job = JSON.parse(run.stdout);
    expect(job).toMatchObject({ type: 'image.generate', status: 'succeeded', progress: 100 });
    expect(job.result.outputUrl).toMatch(/^http/);
    const key = /idempotency key: (\S+)/.exec(run.stderr)?.[1];
    expect(key).toBe(job.idempotencyKey);
    expect(run.stderr).toContain(`${job.id} succeeded 100%`);
  });

  it('waits with a --timeout written as a duration and reports the job it finished, not a usage error', async () => {
    const run = await longhaul([
      'submit',
      '--type',
      'image.generate',
      '--prompt',
      'x',
      '--wait',
      '--timeout',
      '2m',
      '--json',
    ]);

    expect({ code: run.code, stderr: run.stderr }).toEqual({ code: 0, stderr: expect.any(String) });
    expect(JSON.parse(run.stdout)).toMatchObject({ type: 'image.generate', status: 'succeeded' });
  });

  it('transcribes an audio file given with --file', async () => {
    const audio = join(files, 'speech.mp3');
    writeFileSync(audio, Buffer.concat([Buffer.from('ID3'), Buffer.alloc(2048, 7)]));

    const run = await longhaul([
      'submit',
      '--type',
      'audio.transcribe',
      '--file',
      audio,
      '--language',
      'en',
      '--wait',
      '--json',
    ]);

    expect({ code: run.code, stderr: run.stderr }).toEqual({ code: 0, stderr: expect.any(String) });
    const job = JSON.parse(run.stdout);
    expect(job).toMatchObject({ type: 'audio.transcribe', status: 'succeeded', input: { language: 'en' } });
    expect(job.input.audioRef).toMatch(/^upl_/);
    expect(job.result).toMatchObject({ language: 'en', transcriptUrl: expect.stringMatching(/^http/) });
  });

  it('sends an image file with the job', async () => {
    const image = join(files, 'source.png');
    writeFileSync(image, Buffer.from([137, 80, 78, 71, 13, 10, 26, 10, 0, 0, 0, 13]));
    const run = await longhaul([
      'submit',
      '--type',
      'image.generate',
      '--prompt',
      'like this',
      '--file',
      image,
      '--wait',
      '--json',
    ]);
    expect(run.code).toBe(0);
    expect(JSON.parse(run.stdout)).toMatchObject({
      status: 'succeeded',
      input: { sourceImageRef: expect.stringMatching(/^upl_/) },
    });
  });
});

describe('longhaul', () => {
  it('resumes a submission with --idempotency-key: the same job, not a second one', async () => {
    const args = [
      'submit',
      '--type',
      'image.generate',
      '--prompt',
      'once',
      '--json',
      '--idempotency-key',
      `cli-resume-${Date.now()}`,
    ];
    const first = await longhaul(args);
    const again = await longhaul(args);
    expect([first.code, again.code]).toEqual([0, 0]);
    expect(JSON.parse(again.stdout).id).toBe(JSON.parse(first.stdout).id);
    expect(again.stderr).toContain('already submitted with this key');
  });

  it('lists jobs as JSON, reads a timeline, and refuses to cancel a finished job', async () => {
    const submitted = JSON.parse(
      (await longhaul(['submit', '--type', 'image.generate', '--prompt', 'listed', '--wait', '--json']))
        .stdout,
    );

    const list = await longhaul(['jobs', 'list', '--json', '--limit', '100']);
    expect(list.code).toBe(0);
    const page = JSON.parse(list.stdout);
    expect(page).toEqual({ items: expect.any(Array), nextCursor: null });
    expect(page.items.map((job: { id: string }) => job.id)).toContain(submitted.id);

    const events = await longhaul(['jobs', 'events', submitted.id, '--json']);
    expect(JSON.parse(events.stdout).items.map((e: { type: string }) => e.type)).toContain('job.accepted');

    const cancel = await longhaul(['jobs', 'cancel', submitted.id]);
    expect(cancel.code).toBe(1);
    expect(page.items.length).toBeLessThanOrEqual(100);
    expect(cancel.stderr).toContain(
      `Job Already Finished (409 job-already-finished): Job ${submitted.id} is already succeeded.`,
    );
  });

  it('says clearly that a key is wrong, with exit code 4', async () => {
    const run = await longhaul(['jobs', 'list'], { LONGHAUL_API_KEY: 'not-a-key' });
    expect(run.code).toBe(4);
    expect(run.stdout).toBe('');
    expect(run.stderr).toBe(
      'longhaul: Unauthorized (401 unauthorized): A valid X-API-Key header is required.\n' +
        '  Check LONGHAUL_API_KEY.\n',
    );
  });

  it('exits 5 for a missing job and 3 for a usage error, saying so as JSON with --json', async () => {
    const missing = await longhaul(['jobs', 'get', 'job_aaaaaaaaaaaaaaaaaaaaaaaaaa', '--json']);
    expect(missing.code).toBe(5);
    expect(JSON.parse(missing.stdout)).toMatchObject({
      error: { kind: 'not-found', exitCode: 5, problem: { code: 'not-found', status: 404 } },
    });
    const usage = await longhaul(['jobs', 'wait', '--json']);
    expect(usage.code).toBe(3);
    expect(JSON.parse(usage.stdout)).toMatchObject({ error: { kind: 'usage', exitCode: 3 } });
  });

  it('exits 6 when the API cannot be reached', async () => {
    const run = await longhaul(['jobs', 'list'], { LONGHAUL_URL: 'http://127.0.0.1:1' });
    expect(run.code).toBe(6);
    expect(run.stderr).toContain('cannot reach the API');
  });

  it('lists jobs with a key stored by longhaul login from stdin, with no key in the environment', async () => {
    const config = join(files, 'login');
    const login = await longhaul(['login'], { LONGHAUL_CONFIG_DIR: config }, `${KEY}\n`);
    expect({ code: login.code, stderr: login.stderr }).toEqual({
      code: 0,
      stderr: expect.stringContaining('stored'),
    });
    const list = await longhaul(['jobs', 'list', '--json', '--limit', '1'], {
      LONGHAUL_CONFIG_DIR: config,
      LONGHAUL_API_KEY: '',
    });
    expect(list.code).toBe(0);
    expect(JSON.parse(list.stdout).items).toHaveLength(1);
  });

  it('runs the operator commands with the admin key', async () => {
    const review = await longhaul(['review', 'list', '--json']);
    expect(review.code).toBe(0);
    expect(JSON.parse(review.stdout)).toEqual({ items: [], nextCursor: null });
    const redrive = await longhaul(['dlq', 'redrive', '--yes', '--json']);
    expect(redrive.code).toBe(0);
    expect(JSON.parse(redrive.stdout)).toEqual({ taskHandle: expect.any(String) });
  });
});
