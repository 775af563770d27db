import { join, resolve } from 'node:path';
import { type OpenApiDocument, openApiDocument, type Schema } from '../../lambdas/api/openapi';
import type { JobTypeInput } from '../job-type-input';
import { formatWithBiome, writeOrCheck } from './generated';

/**
 * Writes client/job-types.ts, the SDK's types of each job type's input and
 * result, and a table of each job type's input fields (the CLI's flags) and
 * of the field a file fills, from the OpenAPI document (whose inputs come
 * from the zod schemas the server validates with); and client/jobs-by-type.ts,
 * a name for each job type's job (`ImageGenerateJob`). The two are apart
 * because the names are built on client/types.ts, which itself builds on
 * job-types.ts: one file holding both would import types.ts as types.ts
 * imports it:
 * `npx tsx client/scripts/job-types.ts`
 * (`--check` only reports whether it is stale; a unit test fails when it is).
 * The SDK never imports server code; it gets these facts through this file.
 */

const ROOT = resolve(__dirname, '../..');
export const JOB_TYPES_PATH = join(ROOT, 'client', 'job-types.ts');
export const JOBS_BY_TYPE_PATH = join(ROOT, 'client', 'jobs-by-type.ts');

const HEADER = `/**
 * Generated from the OpenAPI document (lambdas/api/openapi.ts, \`x-job-types\`)
 * by \`npx tsx client/scripts/job-types.ts\`. Do not edit by hand. The SDK
 * ships alone, so it carries this copy of the server's facts;
 * test/unit/client-contract.test.ts fails when it is stale.
 */
`;

function pascal(name: string): string {
  return name.replace(/(^|[^A-Za-z0-9])([a-z])/g, (_, _sep: string, letter: string) => letter.toUpperCase());
}

export function docComment(schema: Schema, indent: string): string {
  const description = schema.description;
  if (typeof description !== 'string' || description === '') return '';
  return `${indent}/** ${description.replaceAll('*/', '*\\/')} */\n`;
}

/** The TypeScript type of a (small) JSON Schema: what the job-type schemas use, nothing more. */
export function typeOf(schema: Schema, indent: string): string {
  if (typeof schema.$ref === 'string') return schema.$ref.split('/').pop() as string;
  if ('const' in schema) return JSON.stringify(schema.const);
  if (Array.isArray(schema.enum)) return schema.enum.map((value) => JSON.stringify(value)).join(' | ');
  // A union zod states as `anyOf` (a nullable field); `anyOf` beside a `type` only narrows that type.
  if (Array.isArray(schema.anyOf) && schema.type === undefined) {
    return (schema.anyOf as Schema[]).map((member) => typeOf(member, indent)).join(' | ');
  }
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

/** The JSON types a command line flag can carry as such; `json` is any other, given as JSON text. */
type FieldType = 'string' | 'integer' | 'number' | 'boolean' | 'json';

const SCALAR_TYPES: readonly string[] = ['string', 'integer', 'number', 'boolean'];

function resolved(schema: Schema, schemas: Readonly<Record<string, Schema>>): Schema {
  if (typeof schema.$ref !== 'string') return schema;
  const name = schema.$ref.split('/').pop() as string;
  const target = schemas[name];
  if (!target) throw new Error(`${schema.$ref} is not in components.schemas`);
  return resolved(target, schemas);
}

/** A property's JSON type, when it is one scalar type (`null` aside); `json` otherwise. */
function fieldType(schema: Schema): FieldType {
  const values = 'const' in schema ? [schema.const] : Array.isArray(schema.enum) ? schema.enum : undefined;
  if (values) {
    const types = new Set(values.map((value) => (Number.isInteger(value) ? 'integer' : typeof value)));
    const [only] = types;
    return types.size === 1 && only !== undefined && SCALAR_TYPES.includes(only)
      ? (only as FieldType)
      : 'json';
  }
  const types = (Array.isArray(schema.type) ? schema.type : [schema.type]).filter((type) => type !== 'null');
  const [only] = types;
  return types.length === 1 && typeof only === 'string' && SCALAR_TYPES.includes(only)
    ? (only as FieldType)
    : 'json';
}

/** A list of one scalar type: given as one flag per item, not as JSON text. */
function listItemType(schema: Schema, schemas: Readonly<Record<string, Schema>>): FieldType | undefined {
  const types = (Array.isArray(schema.type) ? schema.type : [schema.type]).filter((type) => type !== 'null');
  if (types.length !== 1 || types[0] !== 'array' || !schema.items || typeof schema.items !== 'object') {
    return undefined;
  }
  const item = fieldType(resolved(schema.items as Schema, schemas));
  return item === 'json' ? undefined : item;
}

/**
 * The name of one item of a list field, which its flag takes (`--label a
 * --label b` fills `labels`): a final plural s dropped (`labels` → `label`,
 * `itemIds` → `itemId`), `-ies` made `-y`; any other name stays as it is, and
 * a flag that comes out as another field's fails the generation.
 */
export function itemNameOf(field: string): string {
  if (/[^aeiou]ies$/.test(field)) return `${field.slice(0, -3)}y`;
  if (/[^su]s$/.test(field)) return field.slice(0, -1);
  return field;
}

/** A field's flag, without its dashes: `audioUrl` → `audio-url`, `sourceImageRef` → `source-image-ref`. */
export function flagOf(field: string): string {
  return field
    .replace(/([a-z0-9])([A-Z])/g, '$1-$2')
    .replace(/([A-Z])([A-Z][a-z])/g, '$1-$2')
    .replace(/[^A-Za-z0-9]+/g, '-')
    .toLowerCase();
}

/** Each job type's input fields and file field, as plain data (the CLI builds its flags from it). */
export function inputTable(document: OpenApiDocument): Record<string, JobTypeInput> {
  const { schemas } = document.components;
  return Object.fromEntries(
    Object.entries(document['x-job-types']).map(([type, entry]) => {
      const input = resolved(schemas[entry.input] ?? {}, schemas);
      const required = new Set((input.required ?? []) as string[]);
      const flags = new Map<string, string>();
      const fields = Object.entries((input.properties ?? {}) as Record<string, Schema>).map(([name, raw]) => {
        const property = resolved(raw, schemas);
        const itemType = listItemType(property, schemas);
        const flag = flagOf(itemType === undefined ? name : itemNameOf(name));
        const clash = flags.get(flag);
        if (clash !== undefined) throw new Error(`${type}: ${clash} and ${name} would both be --${flag}`);
        flags.set(flag, name);
        const description = raw.description ?? property.description;
        return {
          name,
          flag,
          type: itemType ?? fieldType(property),
          ...(itemType !== undefined ? { repeated: true as const } : {}),
          required: required.has(name),
          ...(typeof description === 'string' && description !== '' ? { description } : {}),
        };
      });
      const fileField = entry['x-file-field'];
      if (fileField !== undefined && ![...flags.values()].includes(fileField)) {
        throw new Error(`${type}: x-file-field ${fileField} is not a field of ${entry.input}`);
      }
      const description = input.description;
      return [
        type,
        {
          ...(typeof description === 'string' && description !== '' ? { description } : {}),
          fields,
          ...(fileField !== undefined ? { fileField } : {}),
        },
      ];
    }),
  );
}

/** The input table's types are written by hand (client/job-type-input.ts); the generated file passes them on. */
const INPUT_TABLE_TYPES = "\nexport type { InputField, JobTypeInput } from './job-type-input';\n";

export function renderJobTypes(document: OpenApiDocument = openApiDocument): string {
  const { schemas } = document.components;
  const jobTypes = document['x-job-types'];
  const jobType = schemas.JobType as { enum: string[] };
  const jobStatus = schemas.JobStatus as { enum: string[] };
  const jobPriority = schemas.JobPriority as { enum: string[]; default: string };
  const named = new Set<string>();
  for (const { input, result } of Object.values(jobTypes)) {
    named.add(input);
    named.add(result);
  }
  const parts = [HEADER, "import type { JobTypeInput } from './job-type-input';\n\n"];
  parts.push(`export const JOB_TYPES = ${JSON.stringify(jobType.enum)} as const;\n`);
  parts.push('export type JobType = (typeof JOB_TYPES)[number];\n\n');
  parts.push(`export const JOB_STATUSES = ${JSON.stringify(jobStatus.enum)} as const;\n`);
  parts.push('export type JobStatus = (typeof JOB_STATUSES)[number];\n');
  parts.push(`\nexport const JOB_PRIORITIES = ${JSON.stringify(jobPriority.enum)} as const;\n`);
  parts.push('export type JobPriority = (typeof JOB_PRIORITIES)[number];\n');
  parts.push(
    `/** The priority of a job submitted without one. */\nexport const DEFAULT_PRIORITY: JobPriority = ${JSON.stringify(jobPriority.default)};\n`,
  );
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
  parts.push(INPUT_TABLE_TYPES);
  const table = inputTable(document);
  parts.push(
    `\n/** Each job type's input fields, and the field a file fills: the CLI's flags and help come from here. */\nexport const JOB_TYPE_INPUTS = ${JSON.stringify(table)} as const satisfies Readonly<Record<JobType, JobTypeInput>>;\n`,
  );
  const fileFields = Object.entries(jobTypes).flatMap(([type, entry]) =>
    entry['x-file-field'] === undefined ? [] : [[type, entry['x-file-field']]],
  );
  parts.push(
    `\n/** The input field a file fills, per job type that takes one. */\nexport const FILE_INPUT_FIELD = ${JSON.stringify(Object.fromEntries(fileFields))} as const satisfies Partial<Record<JobType, string>>;\n`,
  );
  return formatWithBiome(parts.join(''), JOB_TYPES_PATH, ['check', '--write']);
}

/** Names by type, so a caller can refer to one without knowing the schema's name. */
export function renderJobsByType(document: OpenApiDocument = openApiDocument): string {
  const parts = [HEADER, "import type { JobOf } from './types';\n"];
  for (const type of Object.keys(document['x-job-types'])) {
    parts.push(`\nexport type ${pascal(type)}Job = JobOf<${JSON.stringify(type)}>;\n`);
  }
  return formatWithBiome(parts.join(''), JOBS_BY_TYPE_PATH, ['check', '--write']);
}

if (require.main === module) {
  writeOrCheck(JOB_TYPES_PATH, renderJobTypes(), 'npx tsx client/scripts/job-types.ts');
  writeOrCheck(JOBS_BY_TYPE_PATH, renderJobsByType(), 'npx tsx client/scripts/job-types.ts');
}
