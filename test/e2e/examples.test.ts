import { execFile, spawnSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { delimiter, join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import { pollUntil, type RunningLocalStack, startLocalStack } from '../../local/harness/local-stack';
import { docBlocks, useOf } from '../support/doc-blocks';
import { useBrowser } from './support/chromium';

/**
 * The documentation's examples, run as written against one local stack: the
 * README tour's curl commands (read from the README, so a changed README is
 * what runs), the SDK script of examples/, and the browser page of examples/
 * in Chromium, fed the ticket that examples/README.md's commands mint.
 */

jest.setTimeout(90_000);

const ROOT = resolve(__dirname, '../..');
const BIN = join(ROOT, 'node_modules', '.bin');
/** The address the documents use; the test's stack listens elsewhere. */
const DOCUMENTED_BASE_URL = 'http://127.0.0.1:3000';
/**
 * Whether the machine has curl; without it (or with EXAMPLES_WITHOUT_CURL=1) each curl line is
 * sent with fetch, as parsed.
 */
const CURL =
  process.env.EXAMPLES_WITHOUT_CURL !== '1' && spawnSync('sh', ['-c', 'command -v curl']).status === 0;
const TERMINAL = ['succeeded', 'failed', 'canceled'];

let stack: RunningLocalStack;

/** The shell blocks of `page` under `heading` (up to the next heading). */
function shellBlocks(page: string, heading: string): string[] {
  const blocks = docBlocks(page).filter(
    (block) => block.heading === heading && useOf(block).kind === 'shell',
  );
  if (blocks.length === 0) throw new Error(`${page}: no shell blocks under ${heading}`);
  return blocks.map((block) => block.code);
}

/** The words of a shell command as `sh` would split them: quotes, line continuations, and `$(node -e …)` key minting. */
function shellWords(command: string): string[] {
  const source = command.replace(/\\\n/g, ' ');
  const words: string[] = [];
  let word: string | undefined;
  for (let at = 0; at < source.length; at++) {
    const char = source[at] as string;
    if (char === "'") {
      const close = source.indexOf("'", at + 1);
      word = (word ?? '') + source.slice(at + 1, close);
      at = close;
    } else if (char === '"') {
      const close = source.indexOf('"', at + 1);
      const inner = source.slice(at + 1, close);
      if (/\$\((?!node -e 'console\.log\(crypto\.randomUUID\(\)\)'\))/.test(inner)) {
        throw new Error(`cannot run without a shell: ${inner}`);
      }
      word =
        (word ?? '') + inner.replace(/\$\(node -e 'console\.log\(crypto\.randomUUID\(\)\)'\)/g, randomUUID());
      at = close;
    } else if (/\s/.test(char)) {
      if (word !== undefined) words.push(word);
      word = undefined;
    } else word = (word ?? '') + char;
  }
  if (word !== undefined) words.push(word);
  return words;
}

/** What a curl command line asks for, read option by option. */
function parseCurl(command: string): {
  method: string;
  url: string;
  headers: Record<string, string>;
  body?: string;
} {
  const [program, ...args] = shellWords(command);
  if (program !== 'curl') throw new Error(`not a curl command: ${command}`);
  const headers: Record<string, string> = {};
  let method: string | undefined;
  let url: string | undefined;
  let body: string | undefined;
  for (let i = 0; i < args.length; i++) {
    const arg = args[i] as string;
    if (arg === '-s') continue;
    if (arg === '-X') method = args[++i];
    else if (arg === '-H') {
      const header = args[++i] as string;
      const colon = header.indexOf(':');
      headers[header.slice(0, colon).trim()] = header.slice(colon + 1).trim();
    } else if (arg === '-d') body = args[++i];
    else if (arg.startsWith('-')) throw new Error(`curl option ${arg} is not understood here`);
    else url = arg;
  }
  if (!url) throw new Error(`no URL in ${command}`);
  return {
    method: method ?? (body === undefined ? 'GET' : 'POST'),
    url,
    headers,
    ...(body === undefined ? {} : { body }),
  };
}

/** Runs one documented command against the test's stack and returns what it printed. */
async function run(command: string): Promise<string> {
  const local = command.split(DOCUMENTED_BASE_URL).join(stack.baseUrl);
  if (CURL) {
    const { stdout } = await promisify(execFile)('sh', ['-c', local], {
      cwd: ROOT,
      env: { ...process.env, PATH: `${BIN}${delimiter}${process.env.PATH ?? ''}` },
      timeout: 20_000,
    });
    return stdout;
  }
  const request = parseCurl(local);
  const response = await fetch(request.url, {
    method: request.method,
    headers: request.headers,
    ...(request.body === undefined ? {} : { body: request.body }),
  });
  return response.text();
}

async function job(id: string): Promise<{ id: string; status: string; progress: number }> {
  const response = await fetch(`${stack.baseUrl}/v1/jobs/${id}`, { headers: { 'X-API-Key': 'dev-key' } });
  return (await response.json()) as { id: string; status: string; progress: number };
}

beforeAll(async () => {
  // The documents' own keys: the local stack's defaults, as a fresh clone has them.
  stack = await startLocalStack({
    env: { LONGHAUL_API_KEYS: 'dev-key:dev', LONGHAUL_ADMIN_KEY: 'dev-admin-key', SIM_JOB_MS: '2000' },
  });
});

afterAll(async () => {
  await stack?.stop();
});

describe("the README's tour", () => {
  const commands = shellBlocks('README.md', '## A five-minute tour').filter((block) =>
    block.startsWith('curl '),
  );

  it('has the three curl commands it walks through, each with X-API-Key and the methods it describes', () => {
    expect(commands).toHaveLength(3);
    const [first, second, list] = commands.map(parseCurl);
    expect(first).toMatchObject({ method: 'POST', url: `${DOCUMENTED_BASE_URL}/v1/jobs` });
    expect(first?.headers).toMatchObject({ 'X-API-Key': 'dev-key', 'Idempotency-Key': 'tour-lighthouse-1' });
    expect(JSON.parse(first?.body ?? '')).toEqual({
      type: 'image.generate',
      input: { prompt: 'a lighthouse at dusk' },
    });
    expect(second?.headers['Idempotency-Key']).toMatch(/^[0-9a-f-]{36}$/);
    expect(list).toMatchObject({ method: 'GET', headers: { 'X-API-Key': 'dev-key' } });
  });

  it('runs as written: a job, the same job again, a second job under a fresh key, then both listed and finished', async () => {
    const [submit, submitAnother, list] = commands as [string, string, string];
    const first = JSON.parse(await run(submit));
    expect(first).toMatchObject({ type: 'image.generate', idempotencyKey: 'tour-lighthouse-1' });
    expect(['queued', 'running']).toContain(first.status);

    const again = JSON.parse(await run(submit));
    expect(again.id).toBe(first.id);

    const another = JSON.parse(await run(submitAnother));
    expect(another.id).not.toBe(first.id);
    expect(another.idempotencyKey).toMatch(/^[0-9a-f-]{36}$/);

    const listed = JSON.parse(await run(list));
    expect(listed.items.map((item: { id: string }) => item.id)).toEqual(
      expect.arrayContaining([first.id, another.id]),
    );

    for (const id of [first.id, another.id]) {
      const finished = await pollUntil(
        async () => {
          const current = await job(id);
          return TERMINAL.includes(current.status) && current;
        },
        { timeoutMs: 30_000, description: `job ${id} finished` },
      );
      expect(finished.status).toBe('succeeded');
    }
  });
});

describe('examples/sdk-quickstart.mjs', () => {
  it('submits with the SDK, follows the progress live and verifies the webhook', async () => {
    const { stdout } = await promisify(execFile)(
      join(BIN, 'tsx'),
      ['examples/sdk-quickstart.mjs', 'a lighthouse for the examples test'],
      {
        cwd: ROOT,
        env: {
          ...process.env,
          PATH: `${BIN}${delimiter}${process.env.PATH ?? ''}`,
          LONGHAUL_URL: stack.baseUrl,
        },
        timeout: 60_000,
      },
    );
    const submitted = /^submitted (job_\w+) \(queued\) with idempotency key [0-9a-f-]{36}$/m.exec(
      stdout,
    )?.[1];
    expect(submitted).toBeDefined();
    const progress = [...stdout.matchAll(/^progress running (\d+)%$/gm)].map((match) => Number(match[1]));
    expect(progress.some((value) => value > 0 && value < 100)).toBe(true);
    expect(stdout).toMatch(new RegExp(`^finished ${submitted}: succeeded$`, 'm'));
    expect(stdout).toMatch(new RegExp(`^webhook verified: job\\.succeeded for ${submitted}$`, 'm'));
    expect((await job(submitted as string)).status).toBe('succeeded');
  });
});

describe('examples/watch-job.html in a browser', () => {
  const browser = useBrowser();

  /** A job and its stream ticket, minted by examples/README.md's commands (or their fetch equivalent). */
  async function jobWithTicket(): Promise<{ ticket: string; streamUrl: string }> {
    const [block] = shellBlocks('examples/README.md', '## Watch a job in a browser: `watch-job.html`');
    if (!block) throw new Error('examples/README.md: the watch-job commands are gone');
    if (CURL) return JSON.parse(await run(block));
    // Without curl: the block's two curl commands one by one, the job's id passed on by hand.
    const create = block.slice(block.indexOf('curl '), block.indexOf(' \\\n  | node'));
    const mint = block.split('\n').find((line) => line.startsWith('curl ')) ?? '';
    const created = JSON.parse(await run(create));
    return JSON.parse(await run(mint.replace('$JOB', created.id)));
  }

  it('shows the job live over the WebSocket, from its progress to its end', async () => {
    const { ticket, streamUrl } = await jobWithTicket();
    expect(ticket).toMatch(/^lhst_/);
    expect(streamUrl).toBe(`${stack.baseUrl.replace(/^http/, 'ws')}/v1/stream`);

    const page = browser().pages()[0] ?? (await browser().newPage());
    const pageErrors: string[] = [];
    page.on('pageerror', (error) => pageErrors.push(error.message));
    const url = pathToFileURL(join(ROOT, 'examples/watch-job.html'));
    url.hash = new URLSearchParams({ streamUrl, ticket }).toString();
    await page.goto(url.href);

    await page.waitForSelector('body[data-status="succeeded"]', { timeout: 30_000 });
    const messages = (await page.locator('#log').textContent())
      ?.trim()
      .split('\n')
      .map((line) => JSON.parse(line) as { type: string; jobId: string; status: string; progress?: number });
    const jobId = messages?.[0]?.jobId;
    expect(jobId).toMatch(/^job_/);
    expect(messages?.every((message) => message.jobId === jobId)).toBe(true);
    expect(
      messages?.some((m) => m.type === 'progress' && (m.progress ?? 0) > 0 && (m.progress ?? 0) < 100),
    ).toBe(true);
    expect(await page.locator('#status').textContent()).toBe('succeeded');
    expect(await page.locator('#job').textContent()).toBe(jobId);
    expect(await page.locator('#bar').evaluate((bar) => (bar as unknown as { value: number }).value)).toBe(
      100,
    );
    expect(pageErrors).toEqual([]);
    expect((await job(jobId as string)).status).toBe('succeeded');
  });
});
