import { join, resolve } from 'node:path';
import { type OpenApiDocument, openApiDocument, type Schema } from '../../lambdas/api/openapi';
import { formatWithBiome, writeOrCheck } from './generated';

/**
 * Writes client/job-types.ts, the SDK's types of each job type's input and
 * result, from the OpenAPI document (whose inputs come from the zod schemas
 * the server validates with): `npx tsx client/scripts/job-types.ts`
 * (`--check` only reports whether it is stale; a unit test fails when it is).
 * The SDK never imports server code; it gets these facts through this file.
 */

const ROOT = resolve(__dirname, '../..');
export const JOB_TYPES_PATH = join(ROOT, 'client', 'job-types.ts');

const HEADER = `/**
 * Generated from the OpenAPI document (lambdas/api/openapi.ts, \`x-job-types\`)
 * by \`npx tsx client/scripts/job-types.ts\`. Do not edit by hand.
 */
`;

function pascal(name: string): string {
  return name.replace(/(^|[^A-Za-z0-9])([a-z])/g, (_, _sep: string, letter: string) => letter.toUpperCase());
}

function docComment(schema: Schema, indent: string): string {
  const description = schema.description;
  if (typeof description !== 'string' || description === '') return '';
  return `${indent}/** ${description.replaceAll('*/', '*\\/')} */\n`;
}

/** The TypeScript type of a (small) JSON Schema: what the job-type schemas use, nothing more. */
function typeOf(schema: Schema, indent: string): string {
  if (typeof schema.$ref === 'string') return schema.$ref.split('/').pop() as string;
  if ('const' in schema) return JSON.stringify(schema.const);
  if (Array.isArray(schema.enum)) return schema.enum.map((value) => JSON.stringify(value)).join(' | ');
  if (Array.isArray(schema.type)) {
    return schema.type.map((type) => typeOf({ ...schema, type }, indent)).join(' | ');
  }
  switch (schema.type) {
    case 'string':
      return 'string';
    case 'integer':
    case 'number':
      return 'number';
    case 'boolean':
      return 'boolean';
    case 'null':
      return 'null';
    case 'array':
      return `readonly (${typeOf((schema.items as Schema | undefined) ?? {}, indent)})[]`;
    case 'object': {
      const properties = (schema.properties ?? {}) as Record<string, Schema>;
      const required = new Set((schema.required ?? []) as string[]);
      const inner = `${indent}  `;
      const lines = Object.entries(properties).map(
        ([name, property]) =>
          `${docComment(property, inner)}${inner}readonly ${name}${required.has(name) ? '' : '?'}: ${typeOf(property, inner)};\n`,
      );
      return `{\n${lines.join('')}${indent}}`;
    }
    default:
      return 'unknown';
  }
}

export function renderJobTypes(document: OpenApiDocument = openApiDocument): string {
  const { schemas } = document.components;
  const jobTypes = document['x-job-types'];
  const jobType = schemas.JobType as { enum: string[] };
  const jobStatus = schemas.JobStatus as { enum: string[] };
  const named = new Set<string>();
  for (const { input, result } of Object.values(jobTypes)) {
    named.add(input);
    named.add(result);
  }
  const parts = [HEADER, "import type { JobOf } from './types';\n\n"];
  parts.push(`export const JOB_TYPES = ${JSON.stringify(jobType.enum)} as const;\n`);
  parts.push('export type JobType = (typeof JOB_TYPES)[number];\n\n');
  parts.push(`export const JOB_STATUSES = ${JSON.stringify(jobStatus.enum)} as const;\n`);
  parts.push('export type JobStatus = (typeof JOB_STATUSES)[number];\n');
  for (const name of named) {
    const schema = schemas[name];
    if (!schema) throw new Error(`x-job-types names ${name}, which components.schemas lacks`);
    parts.push(`\n${docComment(schema, '')}export type ${name} = ${typeOf(schema, '')};\n`);
  }
  parts.push("\n/** Each job type's input and result. */\nexport interface JobTypeSchemas {\n");
  for (const [type, { input, result }] of Object.entries(jobTypes)) {
    parts.push(
      `  readonly ${JSON.stringify(type)}: { readonly input: ${input}; readonly result: ${result} };\n`,
    );
  }
  parts.push('}\n');
  // Names by type, so a caller can refer to one without knowing the schema's name.
  for (const type of Object.keys(jobTypes)) {
    parts.push(`\nexport type ${pascal(type)}Job = JobOf<${JSON.stringify(type)}>;\n`);
  }
  return formatWithBiome(parts.join(''), JOB_TYPES_PATH, ['check', '--write']);
}

if (require.main === module) {
  writeOrCheck(JOB_TYPES_PATH, renderJobTypes(), 'npx tsx client/scripts/job-types.ts');
}
