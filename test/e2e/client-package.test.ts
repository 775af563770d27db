import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SDK_VERSION } from '../../client';
import { buildPackage, PACKAGE_NAME } from '../../client/scripts/build-package';
import { type RunningLocalStack, startLocalStack } from './support/local-stack';

/**
 * The SDK and CLI as a user outside this repository gets them: the package
 * is built, packed with `npm pack`, installed from the tarball into a scratch
 * project without touching a registry, and its `longhaul` runs on plain Node
 * (the machine's, without tsx or this repository's node_modules).
 */

jest.setTimeout(180_000);

const KEY = 'package-key-3b9d';
const work = mkdtempSync(join(tmpdir(), 'longhaul-package-'));
/** The machine's own Node and the system tools; nothing of this repository. */
const PLAIN_PATH = '/usr/local/bin:/usr/bin:/bin';

let stack: RunningLocalStack;
let longhaulBin: string;

beforeAll(async () => {
  const packageDir = join(work, 'package');
  await buildPackage(packageDir);
  execFileSync('npm', ['pack', '--pack-destination', work], { cwd: packageDir, stdio: 'pipe' });
  const tarball = readdirSync(work).find((name) => name.endsWith('.tgz'));
  expect(tarball).toBe(`${PACKAGE_NAME}-${SDK_VERSION}.tgz`);

  const scratch = join(work, 'scratch');
  execFileSync('mkdir', ['-p', scratch]);
  execFileSync(
    'npm',
    ['install', '--offline', '--no-audit', '--no-fund', '--ignore-scripts', join(work, tarball as string)],
    { cwd: scratch, stdio: 'pipe' },
  );
  longhaulBin = join(scratch, 'node_modules', '.bin', 'longhaul');
  stack = await startLocalStack({
    env: { LONGHAUL_API_KEYS: `${KEY}:acme`, SIM_JOB_MS: '300', SLOT_WAIT_MAX_SECONDS: '1' },
  });
});

afterAll(async () => {
  await stack?.stop();
  rmSync(work, { recursive: true, force: true });
});

function longhaul(args: string[]) {
  return spawnSync(longhaulBin, args, {
    env: { PATH: PLAIN_PATH, HOME: work, LONGHAUL_URL: stack.baseUrl, LONGHAUL_API_KEY: KEY },
    cwd: work,
    encoding: 'utf8',
    timeout: 60_000,
  });
}

it('installs with its own bin, bundled: no tsx, no dependencies', () => {
  const installed = join(work, 'scratch', 'node_modules', PACKAGE_NAME);
  const manifest = JSON.parse(readFileSync(join(installed, 'package.json'), 'utf8'));
  expect(manifest).toMatchObject({
    version: SDK_VERSION,
    bin: { longhaul: 'dist/cli.js' },
    dependencies: {},
  });
  expect(existsSync(join(installed, 'dist', 'index.d.ts'))).toBe(true);
  expect(readdirSync(join(work, 'scratch', 'node_modules')).filter((name) => !name.startsWith('.'))).toEqual([
    PACKAGE_NAME,
  ]);
  expect(readFileSync(join(installed, 'dist', 'cli.js'), 'utf8')).not.toMatch(/require\("tsx/);
});

it('runs longhaul --version on plain Node', () => {
  const run = longhaul(['--version']);
  expect({ status: run.status, stdout: run.stdout, stderr: run.stderr }).toEqual({
    status: 0,
    stdout: `longhaul ${SDK_VERSION}\n`,
    stderr: '',
  });
});

it('submits a job to the local stack and waits for it', () => {
  const run = longhaul(['submit', '--type', 'image.generate', '--prompt', 'installed', '--wait', '--json']);
  expect({ status: run.status, stderr: run.stderr }).toEqual({ status: 0, stderr: expect.any(String) });
  expect(JSON.parse(run.stdout)).toMatchObject({
    type: 'image.generate',
    status: 'succeeded',
    progress: 100,
  });
});

it('works as a library from plain Node', () => {
  const script = `
    const { Longhaul } = require('${PACKAGE_NAME}');
    const client = new Longhaul({ baseUrl: process.env.LONGHAUL_URL, apiKey: process.env.LONGHAUL_API_KEY });
    client.listJobs().toArray({ limit: 1 }).then((jobs) => console.log(jobs.length, client.userAgent));
  `;
  const run = spawnSync('node', ['-e', script], {
    env: { PATH: PLAIN_PATH, LONGHAUL_URL: stack.baseUrl, LONGHAUL_API_KEY: KEY },
    cwd: join(work, 'scratch'),
    encoding: 'utf8',
  });
  expect(run.stderr).toBe('');
  expect(run.stdout).toMatch(new RegExp(`^1 longhaul-node/${SDK_VERSION.replaceAll('.', '\\.')} node/`));
});
