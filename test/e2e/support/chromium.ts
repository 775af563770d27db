import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { type BrowserContext, type BrowserContextOptions, chromium } from 'playwright-core';

const ROOT = resolve(__dirname, '../../..');

/** How a browser test starts Chromium: playwright-core's `executablePath`, `args` and `env`. */
export interface ChromiumLaunch {
  readonly executablePath: string;
  readonly args: string[];
  readonly env: Record<string, string | undefined>;
}

/** Flags for a Chromium installed on the machine (CHROMIUM_PATH), running headless as root in CI. */
const SYSTEM_CHROMIUM_ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

// @sparticuz/chromium is an ES module and jest runs CommonJS, so a child Node unpacks it.
// Besides the browser it unpacks the NSS and expat libraries the package ships for
// Amazon Linux: Chromium links against them, and a fresh Debian has none of them.
const UNPACK = `
const { default: chromium, inflate } = await import('@sparticuz/chromium');
const executablePath = await chromium.executablePath();
const libraries = await inflate(new URL('../bin/al2023.tar.br', import.meta.resolve('@sparticuz/chromium')).pathname);
process.stdout.write(JSON.stringify({ executablePath, args: chromium.args, libraries: libraries + '/lib' }));
`;

/**
 * The Chromium browser tests drive: the one CHROMIUM_PATH names when it is set,
 * else the one shipped in the @sparticuz/chromium npm package, unpacked into
 * `dir` (a directory of the test's own, so runs at once never share a
 * half-written binary). `npm ci` is then all a machine needs.
 */
export async function chromiumForTests(dir: string): Promise<ChromiumLaunch> {
  const installed = process.env.CHROMIUM_PATH;
  if (installed) return { executablePath: installed, args: SYSTEM_CHROMIUM_ARGS, env: process.env };
  const { stdout } = await promisify(execFile)(
    process.execPath,
    ['--input-type=module', '--eval', UNPACK],
    // The package unpacks into the OS temporary directory, read from TMPDIR.
    { cwd: ROOT, env: { ...process.env, TMPDIR: dir }, timeout: 60_000 },
  );
  const unpacked = JSON.parse(stdout) as { executablePath: string; args: string[]; libraries: string };
  const libraryPath = [unpacked.libraries, process.env.LD_LIBRARY_PATH].filter(Boolean).join(':');
  return {
    executablePath: unpacked.executablePath,
    args: unpacked.args,
    env: { ...process.env, LD_LIBRARY_PATH: libraryPath },
  };
}

/**
 * A headless Chromium for the tests of the enclosing block, with a fresh
 * profile: unpacked and started before the first test, closed and removed
 * (browser and profile) after the last. Call the returned function in a test
 * for the browser.
 */
export function useBrowser(options: Pick<BrowserContextOptions, 'viewport'> = {}): () => BrowserContext {
  let dir: string | undefined;
  let browser: BrowserContext | undefined;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'longhaul-chromium-'));
    const { executablePath, args, env } = await chromiumForTests(dir);
    // launchPersistentContext is launch() with the user data directory of our choosing: a fresh one.
    browser = await chromium.launchPersistentContext(join(dir, 'profile'), {
      executablePath,
      args,
      env,
      headless: true,
      ...options,
    });
  });

  afterAll(async () => {
    await browser?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  return () => {
    if (!browser) throw new Error('the browser has not started');
    return browser;
  };
}
