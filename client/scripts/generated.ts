import { spawnSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';

/** What the scripts that write committed, generated files share: formatting, and writing or checking. */

const ROOT = resolve(__dirname, '../..');

/** `source` in the repository's formatting (`biome`, run with `args` on stdin as `path`). */
export function formatWithBiome(source: string, path: string, args: readonly string[] = ['format']): string {
  const biome = spawnSync(
    join(ROOT, 'node_modules', '.bin', 'biome'),
    [...args, `--stdin-file-path=${relative(ROOT, path)}`],
    { cwd: ROOT, input: source, encoding: 'utf8' },
  );
  if (biome.status !== 0) throw new Error(`biome could not format ${path}: ${biome.stderr || biome.error}`);
  return biome.stdout;
}

/**
 * Writes `rendered` to `path` unless it is there already; with `--check` on
 * the command line, only reports (exit code 1) that it is stale.
 */
export function writeOrCheck(path: string, rendered: string, regenerate: string): void {
  const name = relative(ROOT, path);
  let current: string | undefined;
  try {
    current = readFileSync(path, 'utf8');
  } catch {
    current = undefined;
  }
  if (current === rendered) {
    process.stdout.write(`${name} is up to date\n`);
  } else if (process.argv.includes('--check')) {
    process.stderr.write(`${name} is stale: run \`${regenerate}\`.\n`);
    process.exitCode = 1;
  } else {
    writeFileSync(path, rendered);
    process.stdout.write(`wrote ${path}\n`);
  }
}
