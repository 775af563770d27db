import { spawnSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { stringify } from 'yaml';
import { openApiDocument } from '../../lambdas/api/openapi';

/**
 * Writes openapi.yaml from the document in lambdas/api/openapi.ts, the single
 * source (`npm run openapi`; `--check` only reports whether it is stale). The
 * YAML is committed so readers and tools see the API without running
 * anything; a unit test fails when it is stale.
 */

const ROOT = resolve(__dirname, '../..');
export const OPENAPI_YAML_PATH = join(ROOT, 'openapi.yaml');

const HEADER = '# Generated from lambdas/api/openapi.ts by `npm run openapi`. Do not edit by hand.\n';

/** The document as YAML, in the repository's formatting (Biome formats YAML too, and `npm test` checks it). */
export function renderOpenApiYaml(document: unknown = openApiDocument): string {
  const yaml = HEADER + stringify(document, { lineWidth: 0, aliasDuplicateObjects: false });
  const biome = spawnSync(
    join(ROOT, 'node_modules', '.bin', 'biome'),
    ['format', '--stdin-file-path=openapi.yaml'],
    {
      cwd: ROOT,
      input: yaml,
      encoding: 'utf8',
    },
  );
  if (biome.status !== 0)
    throw new Error(`biome could not format openapi.yaml: ${biome.stderr || biome.error}`);
  return biome.stdout;
}

if (require.main === module) {
  const rendered = renderOpenApiYaml();
  let current: string | undefined;
  try {
    current = readFileSync(OPENAPI_YAML_PATH, 'utf8');
  } catch {
    current = undefined;
  }
  if (current === rendered) {
    process.stdout.write('openapi.yaml is up to date\n');
  } else if (process.argv.includes('--check')) {
    process.stderr.write('openapi.yaml is stale: run `npm run openapi`.\n');
    process.exitCode = 1;
  } else {
    writeFileSync(OPENAPI_YAML_PATH, rendered);
    process.stdout.write(`wrote ${OPENAPI_YAML_PATH}\n`);
  }
}
