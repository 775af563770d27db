import { spawnSync } from 'node:child_process';
import { chmodSync, copyFileSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { build } from 'esbuild';
import { SDK_VERSION } from '../version';

/**
 * Builds the SDK and CLI as a package a user installs outside this
 * repository: `npx tsx client/scripts/build-package.ts <dir>`, then
 * `npm pack` in `<dir>`. Each entry point is one bundled CommonJS file that
 * runs on plain Node (no tsx, no dependencies to fetch), with type
 * declarations beside it. The version is the SDK's own (client/version.ts).
 */

const CLIENT = resolve(__dirname, '..');
const ROOT = resolve(CLIENT, '..');

/** The oldest Node the package runs on: global fetch, AbortSignal.any, openAsBlob. */
const MIN_NODE = '20.16';

export const PACKAGE_NAME = 'longhaul-client';

export async function buildPackage(outDir: string): Promise<void> {
  rmSync(outDir, { recursive: true, force: true });
  mkdirSync(join(outDir, 'dist'), { recursive: true });
  await build({
    entryPoints: { index: join(CLIENT, 'index.ts'), cli: join(CLIENT, 'cli.ts') },
    outdir: join(outDir, 'dist'),
    bundle: true,
    platform: 'node',
    format: 'cjs',
    target: `node${MIN_NODE}`,
    sourcemap: true,
    logLevel: 'warning',
  });
  // The source runs under tsx in this repository; the bundle needs nothing but Node.
  const cli = join(outDir, 'dist', 'cli.js');
  writeFileSync(cli, readFileSync(cli, 'utf8').replace(/^#!.*\n/, '#!/usr/bin/env node\n'));
  chmodSync(cli, 0o755);

  // Declarations of the public API only: the CLI is a program, not a library.
  const tsc = spawnSync(
    join(ROOT, 'node_modules', '.bin', 'tsc'),
    [
      join(CLIENT, 'index.ts'),
      '--declaration',
      '--emitDeclarationOnly',
      '--outDir',
      join(outDir, 'dist'),
      '--rootDir',
      CLIENT,
      '--module',
      'nodenext',
      '--moduleResolution',
      'nodenext',
      '--target',
      'es2024',
      '--strict',
      '--skipLibCheck',
      '--types',
      'node',
    ],
    { cwd: ROOT, encoding: 'utf8' },
  );
  if (tsc.status !== 0) throw new Error(`tsc could not write the declarations:\n${tsc.stdout}${tsc.stderr}`);

  const license = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')).license as string;
  const manifest = {
    name: PACKAGE_NAME,
    version: SDK_VERSION,
    description: 'SDK and command line for the Longhaul job API: submit, follow, upload, verify webhooks.',
    license,
    main: 'dist/index.js',
    types: 'dist/index.d.ts',
    bin: { longhaul: 'dist/cli.js' },
    files: ['dist', 'README.md'],
    engines: { node: `>=${MIN_NODE}` },
    // Everything it needs is bundled: installing it fetches nothing.
    dependencies: {},
  };
  writeFileSync(join(outDir, 'package.json'), `${JSON.stringify(manifest, null, 2)}\n`);
  copyFileSync(join(CLIENT, 'README.md'), join(outDir, 'README.md'));
}

if (require.main === module) {
  const outDir = process.argv[2];
  if (!outDir) {
    process.stderr.write('usage: npx tsx client/scripts/build-package.ts <out dir>\n');
    process.exitCode = 3;
  } else {
    buildPackage(resolve(outDir)).then(
      () => process.stdout.write(`built ${PACKAGE_NAME}@${SDK_VERSION} in ${resolve(outDir)}\n`),
      (error: unknown) => {
        process.stderr.write(`${String(error)}\n`);
        process.exitCode = 1;
      },
    );
  }
}
