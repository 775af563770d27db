import { join, resolve } from 'node:path';
import { type OpenApiDocument, openApiDocument } from '../../lambdas/api/openapi';
import { formatWithBiome, writeOrCheck } from './generated';
import { docComment, typeOf } from './job-types';

/**
 * Writes client/api-types.ts, the SDK's types of the document's schemas that
 * the server converts from its zod schemas (the search and media requests and
 * answers, and the resources whose type is not narrowed by a job's type), so
 * the SDK says each shape once, as the server does:
 * `npx tsx client/scripts/api-types.ts`
 * (`--check` only reports whether it is stale; a unit test fails when it is).
 */

const ROOT = resolve(__dirname, '../..');
export const API_TYPES_PATH = join(ROOT, 'client', 'api-types.ts');

/** The schemas typed here, by their names in components.schemas; a schema they refer to must be one of them. */
export const API_TYPE_NAMES = [
  'SearchRequest',
  'SearchFilter',
  'SearchHit',
  'SearchResult',
  'CreateMediaRequest',
  'UpdateMediaRequest',
  'CreateVersionRequest',
  'ListMediaQuery',
  'MediaItem',
  'MediaVersion',
  'MediaPage',
  'JobError',
  'JobWaiting',
  'ProviderStatus',
  'TenantUsage',
  'Tenant',
  'TimelineEvent',
  'UploadTicket',
  'MultipartUploadTicket',
  'StreamTicket',
  'CancelJobsResult',
  'ReplayJobsResult',
  'ResumeJobsResult',
] as const;

const HEADER = `/**
 * Generated from the OpenAPI document (lambdas/api/openapi.ts, components.schemas)
 * by \`npx tsx client/scripts/api-types.ts\`. Do not edit by hand. The SDK
 * ships alone, so it carries this copy of the server's types;
 * test/unit/client-contract.test.ts fails when it is stale.
 */
`;

/** Every \`$ref\` inside a schema, by the name it refers to. */
function referencedNames(schema: unknown): string[] {
  if (!schema || typeof schema !== 'object') return [];
  const own = (schema as { $ref?: unknown }).$ref;
  return [
    ...(typeof own === 'string' ? [own.split('/').pop() as string] : []),
    ...Object.values(schema).flatMap(referencedNames),
  ];
}

export function renderApiTypes(document: OpenApiDocument = openApiDocument): string {
  const { schemas } = document.components;
  const parts = [HEADER];
  for (const name of API_TYPE_NAMES) {
    const schema = schemas[name];
    if (!schema) throw new Error(`components.schemas lacks ${name}`);
    const missing = referencedNames(schema).filter(
      (ref) => !(API_TYPE_NAMES as readonly string[]).includes(ref),
    );
    if (missing.length > 0)
      throw new Error(`${name} refers to ${missing.join(', ')}, which is not typed here`);
    parts.push(`\n${docComment(schema, '')}export type ${name} = ${typeOf(schema, '')};\n`);
  }
  return formatWithBiome(parts.join(''), API_TYPES_PATH, ['check', '--write']);
}

if (require.main === module) {
  writeOrCheck(API_TYPES_PATH, renderApiTypes(), 'npx tsx client/scripts/api-types.ts');
}
