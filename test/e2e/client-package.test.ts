import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SDK_VERSION } from '../../client';
import { buildPackage, PACKAGE_NAME } from '../../client/scripts/build-package';
import { type RunningLocalStack, startLocalStack } from '../../local/harness/local-stack';

/**
 * The SDK and CLI as a user outside this repository gets them: the package
 * is built, packed with `npm pack`, installed from the tarball into a scratch
 * project without touching a registry, and runs on plain Node 24 (this one)
 * and Node 20 (the devDependency node20), with no tsx and nothing of this
 * repository: `require` and `import` of the SDK, and the `longhaul` bin.
 */

jest.setTimeout(180_000);

const KEY = 'package-key-3b9d';
const work = mkdtempSync(join(tmpdir(), 'longhaul-package-'));
const ROOT = join(__dirname, '..', '..');
/** The system tools; no Node of this repository's node_modules. */
const SYSTEM_PATH = '/usr/local/bin:/usr/bin:/bin';
/** Node 24, the one running this test, first on the PATH. */
const NODE_24 = process.execPath;
const pathWith = (node: string) => `${join(node, '..')}:${SYSTEM_PATH}`;
const PLAIN_PATH = pathWith(NODE_24);
const ROOT_VERSION = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')).version as string;

let stack: RunningLocalStack;
let longhaulBin: string;

beforeAll(async () => {
  const packageDir = join(work, 'package');
  await buildPackage(packageDir);
  execFileSync('npm', ['pack', '--pack-destination', work], { cwd: packageDir, stdio: 'pipe' });
  const tarball = readdirSync(work).find((name) => name.endsWith('.tgz'));
  expect(tarball).toBe(`${PACKAGE_NAME}-${ROOT_VERSION}.tgz`);

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
  expect(SDK_VERSION).toBe(ROOT_VERSION);
  expect(manifest).toMatchObject({
    version: ROOT_VERSION,
    bin: { longhaul: 'dist/cli.js' },
    dependencies: {},
    exports: {
      '.': {
        import: { types: './dist/index.d.mts', default: './dist/index.mjs' },
        require: { types: './dist/index.d.ts', default: './dist/index.js' },
      },
    },
  });
  for (const file of ['index.js', 'index.mjs', 'index.d.ts', 'index.d.mts', 'cli.js']) {
    expect(existsSync(join(installed, 'dist', file))).toBe(true);
  }
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

/** A script that loads the SDK as `require` or `import` does and prints what it got. */
const LOADERS = {
  'load.cjs': `
    const sdk = require('${PACKAGE_NAME}');
    const error = new sdk.NotFoundError({ type: 'about:blank', title: 'Not Found', status: 404, detail: 'x', code: 'not-found' });
    console.log(JSON.stringify({ exports: Object.keys(sdk).sort(), version: sdk.SDK_VERSION, base: error instanceof sdk.LonghaulError }));
  `,
  'load.mjs': `
    const sdk = await import('${PACKAGE_NAME}');
    const error = new sdk.NotFoundError({ type: 'about:blank', title: 'Not Found', status: 404, detail: 'x', code: 'not-found' });
    console.log(JSON.stringify({ exports: Object.keys(sdk).filter((name) => name !== 'default').sort(), version: sdk.SDK_VERSION, base: error instanceof sdk.LonghaulError }));
  `,
};

describe.each([['Node 24', NODE_24]])('on %s', (_name, node) => {
  beforeAll(() => {
    for (const [file, code] of Object.entries(LOADERS)) writeFileSync(join(work, 'scratch', file), code);
  });

  it('loads the SDK with require and with import, the same exports from each', () => {
    const loaded = Object.keys(LOADERS).map((file) => {
      const run = spawnSync(node, [file], {
        env: { PATH: pathWith(node) },
        cwd: join(work, 'scratch'),
        encoding: 'utf8',
      });
      expect({ status: run.status, stderr: run.stderr }).toEqual({ status: 0, stderr: '' });
      return JSON.parse(run.stdout) as { exports: string[]; version: string; base: boolean };
    });
    const [required, imported] = loaded;
    expect(required).toEqual(imported);
    expect(required?.version).toBe(ROOT_VERSION);
    expect(required?.base).toBe(true);
    expect(required?.exports).toEqual(
      expect.arrayContaining(['Longhaul', 'LonghaulError', 'verifyWebhookAsync']),
    );
  });

  it('runs its longhaul bin: --help', () => {
    const run = spawnSync(longhaulBin, ['--help'], {
      env: { PATH: pathWith(node), HOME: work },
      cwd: work,
      encoding: 'utf8',
    });
    expect({ status: run.status, stderr: run.stderr }).toEqual({ status: 0, stderr: '' });
    // The description first, then the usage line (the CLI's help, as gh's).
    expect(run.stdout).toMatch(/^Usage: longhaul <command>/m);
    const version = spawnSync(node, [longhaulBin, '--version'], {
      env: { PATH: SYSTEM_PATH },
      encoding: 'utf8',
    });
    expect(version.stdout).toBe(`longhaul ${ROOT_VERSION}\n`);
  });
});

it('types both module systems: import and require resolve their declarations, strict, with no @types/node', () => {
  const scratch = join(work, 'scratch');
  writeFileSync(
    join(scratch, 'typed.mts'),
    `import { Longhaul, type Job, NotFoundError } from '${PACKAGE_NAME}';
const client = new Longhaul({ baseUrl: 'https://api.test', apiKey: 'k' });
const created = await client.createJob(client.userAction(), { type: 'audio.transcribe', input: { audioUrl: 'https://a.test/a.mp3' } });
const segments: number | undefined = created.job.result?.segments;
const image: Job<'image.generate'> | undefined = undefined;
console.log(segments, image, NotFoundError);
`,
  );
  writeFileSync(
    join(scratch, 'typed.cts'),
    `import sdk = require('${PACKAGE_NAME}');
const error: sdk.LonghaulError = new sdk.NotFoundError({ type: 'about:blank', title: 'Not Found', status: 404, detail: 'x', code: 'not-found' });
console.log(new sdk.Longhaul({ baseUrl: 'https://api.test' }), error);
`,
  );
  const compilerOptions = {
    strict: true,
    module: 'nodenext',
    moduleResolution: 'nodenext',
    target: 'es2024',
    lib: ['es2024', 'dom'],
    types: [],
    noEmit: true,
  };
  writeFileSync(
    join(scratch, 'tsconfig.json'),
    JSON.stringify({ compilerOptions, files: ['typed.mts', 'typed.cts'] }),
  );
  const run = spawnSync(join(ROOT, 'node_modules', '.bin', 'tsc'), ['-p', scratch], { encoding: 'utf8' });
  expect({ status: run.status, stdout: run.stdout }).toEqual({ status: 0, stdout: '' });
});

it('ships a README that reads outside this repository: no links or paths into it', () => {
  const readme = readFileSync(join(work, 'scratch', 'node_modules', PACKAGE_NAME, 'README.md'), 'utf8');
  expect(readme).toMatch(/^# /);
  const links = [...readme.matchAll(/\]\(([^)]+)\)/g)].map((match) => match[1]);
  expect(links.filter((link) => !/^(https?:|#)/.test(link ?? ''))).toEqual([]);
  const repositoryPaths = readme.match(
    /(?<![\w./-])(?:\.\.?\/|(?:client|lambdas|lib|local|config|test|docs|bench|bin)\/)[\w./-]+/g,
  );
  expect(repositoryPaths).toBeNull();
  expect(readme).not.toMatch(/npx tsx|npm run /);
});

it('is the one artifact: npm pack of the repository root refuses and says what to pack', () => {
  const run = spawnSync('npm', ['pack', '--dry-run'], { cwd: ROOT, encoding: 'utf8' });
  expect(run.status).not.toBe(0);
  expect(run.stderr).toContain(
    'This repository is not a package: npm run package -- <dir> builds longhaul-client',
  );
  expect(JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')).private).toBe(true);
});
