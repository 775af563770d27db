import { spawnSync } from 'node:child_process';
import { chmodSync, copyFileSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { build } from 'esbuild';
import { SDK_VERSION } from '../version';

/**
 * Builds the SDK and CLI as the package users install, the one artifact of
 * this repository (the root package is private and refuses `npm pack`):
 * `npm run package -- <dir>`, then `npm pack` in `<dir>`. The SDK is bundled
 * twice, as ESM (`import`) and CommonJS (`require`), behind an `exports` map,
 * with type declarations; the CLI is one CommonJS file. All run on plain Node
 * with no tsx and no dependencies to fetch, and the SDK in any runtime with
 * fetch and Web Crypto. The version is the root package.json's (SDK_VERSION).
 */

const CLIENT = resolve(__dirname, '..');
const ROOT = resolve(CLIENT, '..');

/** The oldest Node the package runs on: global fetch, AbortSignal.any, openAsBlob. */
const MIN_NODE = '20.16';

export const PACKAGE_NAME = 'longhaul-client';

export async function buildPackage(outDir: string): Promise<void> {
  rmSync(outDir, { recursive: true, force: true });
  mkdirSync(join(outDir, 'dist'), { recursive: true });
  const common = { bundle: true, target: `node${MIN_NODE}`, sourcemap: true, logLevel: 'warning' } as const;
  // The SDK needs nothing of Node's (it runs on edge runtimes too): built for no platform in particular.
  await build({
    ...common,
    entryPoints: [join(CLIENT, 'index.ts')],
    outfile: join(outDir, 'dist', 'index.js'),
    platform: 'neutral',
    format: 'cjs',
  });
  await build({
    ...common,
    entryPoints: [join(CLIENT, 'index.ts')],
    outfile: join(outDir, 'dist', 'index.mjs'),
    platform: 'neutral',
    format: 'esm',
  });
  await build({
    ...common,
    entryPoints: [join(CLIENT, 'cli.ts')],
    outfile: join(outDir, 'dist', 'cli.js'),
    platform: 'node',
    format: 'cjs',
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
  // The ESM entry's declarations: the same API, declared as an ES module so `import` resolves it as one.
  writeFileSync(join(outDir, 'dist', 'index.d.mts'), "export * from './index.js';\n");

  const license = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')).license as string;
  const manifest = {
    name: PACKAGE_NAME,
    version: SDK_VERSION,
    description: 'SDK and command line for the Longhaul job API: submit, follow, upload, verify webhooks.',
    license,
    main: 'dist/index.js',
    module: 'dist/index.mjs',
    types: 'dist/index.d.ts',
    exports: {
      '.': {
        import: { types: './dist/index.d.mts', default: './dist/index.mjs' },
        require: { types: './dist/index.d.ts', default: './dist/index.js' },
      },
      './package.json': './package.json',
    },
    sideEffects: false,
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
    process.stderr.write('usage: npm run package -- <out dir>\n');
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
