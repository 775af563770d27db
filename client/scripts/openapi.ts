import { join, resolve } from 'node:path';
import { stringify } from 'yaml';
import { openApiDocument } from '../../lambdas/api/openapi';
import { formatWithBiome, writeOrCheck } from './generated';

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
  return formatWithBiome(
    HEADER + stringify(document, { lineWidth: 0, aliasDuplicateObjects: false }),
    OPENAPI_YAML_PATH,
  );
}

if (require.main === module) writeOrCheck(OPENAPI_YAML_PATH, renderOpenApiYaml(), 'npm run openapi');
