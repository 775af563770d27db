import type { ParseArgsConfig } from 'node:util';
import type { InputField, JobTypeInput } from '../job-type-input';
import { UsageError } from './usage-error';

/**
 * A job's input as `longhaul submit` flags: one flag per input field of each
 * job type, from the table generated out of the API document
 * (client/job-types.ts, `JOB_TYPE_INPUTS`). A job type added to the server
 * gets its flags, its help and its checks here without a CLI edit.
 */

/** Job types by name, with their input fields. */
export type InputTable = Readonly<Record<string, JobTypeInput>>;

type Options = NonNullable<ParseArgsConfig['options']>;
type Values = Readonly<Record<string, string | boolean | readonly string[] | undefined>>;

/**
 * The fields of a job type that get a flag: all but those whose flag the
 * command already has for itself (`reserved`), which only `--input` sets.
 */
function flagged(input: JobTypeInput, reserved: ReadonlySet<string>): readonly InputField[] {
  return input.fields.filter((field) => !reserved.has(field.flag));
}

/**
 * The parseArgs options of every job type's fields. A flag is boolean (takes
 * no value) only where every job type that has it says boolean, and may be
 * repeated where any job type's field of it is a list.
 */
export function inputFlagOptions(table: InputTable, reserved: ReadonlySet<string>): Options {
  const kinds = new Map<string, { boolean: boolean; multiple: boolean }>();
  for (const input of Object.values(table)) {
    for (const field of flagged(input, reserved)) {
      const kind = kinds.get(field.flag) ?? { boolean: true, multiple: false };
      kinds.set(field.flag, {
        boolean: kind.boolean && field.type === 'boolean' && !field.repeated,
        multiple: kind.multiple || field.repeated === true,
      });
    }
  }
  return Object.fromEntries(
    [...kinds].map(([flag, kind]) => [
      flag,
      { type: kind.boolean ? 'boolean' : 'string', ...(kind.multiple ? { multiple: true } : {}) },
    ]),
  );
}

const PLACEHOLDER: Readonly<Record<InputField['type'], string>> = {
  string: ' <string>',
  integer: ' <integer>',
  number: ' <number>',
  boolean: '',
  json: ' <json>',
};

/** The flags of each job type, for `longhaul submit --help`: one block per type, one line per flag. */
export function inputFlagsHelp(table: InputTable, reserved: ReadonlySet<string>, indent: string): string {
  const synopsis = (field: InputField) =>
    `--${field.flag}${field.repeated && field.type === 'boolean' ? ' <boolean>' : PLACEHOLDER[field.type]}${field.repeated ? '…' : ''}`;
  const all = Object.values(table).flatMap((input) => flagged(input, reserved));
  const typeWidth = Math.max(0, ...Object.keys(table).map((type) => type.length)) + 2;
  const flagWidth = Math.max(0, ...all.map((field) => synopsis(field).length)) + 2;
  const lines: string[] = [];
  for (const [type, input] of Object.entries(table)) {
    lines.push(`${indent}${input.description ? `${type.padEnd(typeWidth)}${input.description}` : type}`);
    for (const field of input.fields) {
      const notes = [
        field.required ? 'required' : '',
        field.repeated ? `once per item of ${field.name}` : '',
        field.description ?? '',
        field.name === input.fileField ? '--file fills it' : '',
      ].filter((note) => note !== '');
      const flag = reserved.has(field.flag) ? `(${field.name}: --input only)` : synopsis(field);
      lines.push(`${indent}  ${notes.length > 0 ? flag.padEnd(flagWidth) : flag}${notes.join('; ')}`);
    }
    if (input.fileField === undefined) lines.push(`${indent}  (takes no --file)`);
  }
  return lines.join('\n');
}

function parsedValue(field: InputField, value: string | boolean): unknown {
  const flag = `--${field.flag}`;
  if (typeof value === 'boolean') return value;
  switch (field.type) {
    case 'string':
      return value;
    case 'integer':
      if (!/^-?\d+$/.test(value) || !Number.isSafeInteger(Number(value))) {
        throw new UsageError(`${flag} must be a whole number.`);
      }
      return Number(value);
    case 'number':
      if (value.trim() === '' || !Number.isFinite(Number(value)))
        throw new UsageError(`${flag} must be a number.`);
      return Number(value);
    case 'boolean':
      // A string flag here: another job type's field of the same flag takes a value.
      if (value !== 'true' && value !== 'false') throw new UsageError(`${flag} must be true or false.`);
      return value === 'true';
    case 'json':
      try {
        return JSON.parse(value);
      } catch (error) {
        throw new UsageError(`${flag} is not JSON: ${(error as Error).message}`);
      }
  }
}

/**
 * The input fields the flags of a `type` job set, each parsed as its JSON
 * type. A flag of another job type's field is a usage error that says which
 * job types take it.
 */
export function inputFromFlags(
  type: string,
  values: Values,
  table: InputTable,
  reserved: ReadonlySet<string>,
): Record<string, unknown> {
  const own = table[type];
  if (!own) throw new UsageError(`--type must be one of ${Object.keys(table).join(', ')}.`);
  const fields = new Map(flagged(own, reserved).map((field) => [field.flag, field]));
  const input: Record<string, unknown> = {};
  for (const flag of Object.keys(inputFlagOptions(table, reserved))) {
    const value = values[flag];
    if (value === undefined) continue;
    const field = fields.get(flag);
    if (!field) {
      const takers = Object.entries(table)
        .filter(([, input]) => flagged(input, reserved).some((f) => f.flag === flag))
        .map(([name]) => name);
      throw new UsageError(`--${flag} is not a flag of ${type} jobs; ${takers.join(', ')} jobs take it.`);
    }
    // A flag another job type repeats comes as a list even where this type takes one value.
    const given = typeof value === 'object' ? value : [value];
    if (field.repeated) {
      input[field.name] = given.map((item) => parsedValue(field, item));
    } else if (given.length > 1) {
      throw new UsageError(`--${flag} is given once for ${type} jobs.`);
    } else {
      input[field.name] = parsedValue(field, given[0] as string | boolean);
    }
  }
  return input;
}
