import { S3_VECTORS_LIMITS } from '../../config/s3-vectors';

/**
 * S3 Vectors' metadata filter language, as the Metadata filtering page
 * documents it (https://docs.aws.amazon.com/AmazonS3/latest/userguide/s3-vectors-metadata-filtering.html)
 * for an index in ENHANCED mode, which every index of a vector bucket made on
 * or after 30 September 2026 is: the filter is applied before the search, so
 * a filtered query finds the top K among the vectors that match.
 *
 * - A condition on a key is a primitive (`$eq` implied) or an object of one or
 *   more operators, all of which must hold (`{"price": {"$gte": 10, "$lte": 50}}`).
 * - `$eq`, `$ne`: a string, number or boolean. `$gt`, `$gte`, `$lt`, `$lte`: a
 *   number. `$startsWith`: a string. `$in`, `$nin`: a non-empty array of
 *   primitives. `$exists`: a boolean. `$and`, `$or`: a non-empty array of filters.
 * - A condition meets an array value when any element meets it (documented for
 *   `$eq`: `{"category": {"$eq": "documentary"}}` matches `["documentary", "romance"]`).
 * - A filter on a non-filterable key is refused with 400
 *   (https://docs.aws.amazon.com/AmazonS3/latest/userguide/s3-vectors-query.html).
 * - At most 100 filter constraints, each value the filter evaluates counting
 *   one: a `$in` of three values is three, `$and`/`$or` themselves none.
 *
 * Where the page is silent this emulator takes the stricter or the usual
 * reading, and says which:
 * - Each filter object names exactly one condition, a key or `$and`/`$or`:
 *   the documented examples combine conditions only with `$and`/`$or`, so a
 *   filter that would rely on several keys meaning AND is refused here rather
 *   than accepted and possibly read otherwise by AWS.
 * - `$ne` and `$nin` are the negations of `$eq` and `$in` (MongoDB's reading,
 *   whose operator names these are): a vector without the key matches them,
 *   and an array matches only when no element equals.
 * - Comparisons never convert types: `"3"` does not equal `3`, and a range
 *   operator never matches a string.
 */

export type MetadataPrimitive = string | number | boolean;
export type MetadataValue = MetadataPrimitive | readonly MetadataPrimitive[];
export type Metadata = Readonly<Record<string, MetadataValue>>;
export type MetadataPredicate = (metadata: Metadata) => boolean;

/** Most filter constraints one query may use on an ENHANCED index. */
export const MAX_FILTER_CONSTRAINTS = S3_VECTORS_LIMITS.filterConstraintsPerQuery;

/** A filter S3 Vectors would refuse, with why; the emulator answers it as a ValidationException. */
export class FilterError extends Error {}

interface Compiled {
  readonly predicate: MetadataPredicate;
  readonly constraints: number;
}

/**
 * The predicate of `filter`, or a FilterError naming the first thing wrong
 * with it. `nonFilterable` are the index's non-filterable metadata keys.
 */
export function compileFilter(filter: unknown, nonFilterable: ReadonlySet<string>): MetadataPredicate {
  const compiled = compileNode(filter, 'filter', nonFilterable);
  if (compiled.constraints > MAX_FILTER_CONSTRAINTS) {
    throw new FilterError(
      `The filter uses ${compiled.constraints} constraints; a filter may use at most ${MAX_FILTER_CONSTRAINTS}.`,
    );
  }
  return compiled.predicate;
}

const isPlainObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

const isPrimitive = (value: unknown): value is MetadataPrimitive =>
  typeof value === 'string' ||
  typeof value === 'boolean' ||
  (typeof value === 'number' && Number.isFinite(value));

function compileNode(node: unknown, path: string, nonFilterable: ReadonlySet<string>): Compiled {
  if (!isPlainObject(node)) throw new FilterError(`${path} must be an object.`);
  const keys = Object.keys(node);
  if (keys.length !== 1) {
    throw new FilterError(
      `${path} must name exactly one condition, a metadata key or $and/$or; combine conditions with $and or $or.`,
    );
  }
  const key = keys[0] as string;
  const value = node[key];
  if (key === '$and' || key === '$or') {
    if (!Array.isArray(value) || value.length === 0) {
      throw new FilterError(`${path}.${key} must be a non-empty array of filters.`);
    }
    const parts = value.map((part, index) => compileNode(part, `${path}.${key}[${index}]`, nonFilterable));
    const predicates = parts.map((part) => part.predicate);
    return {
      predicate:
        key === '$and'
          ? (metadata) => predicates.every((predicate) => predicate(metadata))
          : (metadata) => predicates.some((predicate) => predicate(metadata)),
      constraints: parts.reduce((sum, part) => sum + part.constraints, 0),
    };
  }
  if (key.startsWith('$')) throw new FilterError(`${path}: ${key} is not a logical operator ($and, $or).`);
  if (nonFilterable.has(key)) {
    throw new FilterError(`${path}: metadata key ${key} is non-filterable and cannot be used in a filter.`);
  }
  return compileCondition(key, value, `${path}.${key}`);
}

function compileCondition(key: string, condition: unknown, path: string): Compiled {
  if (isPrimitive(condition)) return { predicate: operator(key, '$eq', condition, path), constraints: 1 };
  if (!isPlainObject(condition) || Object.keys(condition).length === 0) {
    throw new FilterError(`${path} must be a string, number or boolean, or an object of operators.`);
  }
  const checks: MetadataPredicate[] = [];
  let constraints = 0;
  for (const [name, operand] of Object.entries(condition)) {
    checks.push(operator(key, name, operand, `${path}.${name}`));
    constraints += Array.isArray(operand) ? operand.length : 1;
  }
  return { predicate: (metadata) => checks.every((check) => check(metadata)), constraints };
}

/** The stored value's elements: none when absent, the array's when an array, else the value alone. */
const elementsOf = (value: MetadataValue | undefined): readonly MetadataPrimitive[] =>
  value === undefined ? [] : Array.isArray(value) ? value : [value as MetadataPrimitive];

function operator(key: string, name: string, operand: unknown, path: string): MetadataPredicate {
  const any = (test: (element: MetadataPrimitive) => boolean): MetadataPredicate => {
    return (metadata) => elementsOf(metadata[key]).some(test);
  };
  switch (name) {
    case '$eq':
    case '$ne': {
      if (!isPrimitive(operand)) throw new FilterError(`${path} must be a string, number or boolean.`);
      const equals = any((element) => element === operand);
      return name === '$eq' ? equals : (metadata) => !equals(metadata);
    }
    case '$gt':
    case '$gte':
    case '$lt':
    case '$lte': {
      if (typeof operand !== 'number' || !Number.isFinite(operand)) {
        throw new FilterError(`${path} must be a number.`);
      }
      const compare = {
        $gt: (n: number) => n > operand,
        $gte: (n: number) => n >= operand,
        $lt: (n: number) => n < operand,
        $lte: (n: number) => n <= operand,
      }[name];
      return any((element) => typeof element === 'number' && compare(element));
    }
    case '$startsWith': {
      if (typeof operand !== 'string') throw new FilterError(`${path} must be a string.`);
      return any((element) => typeof element === 'string' && element.startsWith(operand));
    }
    case '$in':
    case '$nin': {
      if (!Array.isArray(operand) || operand.length === 0 || !operand.every(isPrimitive)) {
        throw new FilterError(`${path} must be a non-empty array of strings, numbers or booleans.`);
      }
      const wanted = new Set<MetadataPrimitive>(operand);
      const within = any((element) => wanted.has(element));
      return name === '$in' ? within : (metadata) => !within(metadata);
    }
    case '$exists': {
      if (typeof operand !== 'boolean') throw new FilterError(`${path} must be a boolean.`);
      return (metadata) => (metadata[key] !== undefined) === operand;
    }
    default:
      throw new FilterError(`${path}: ${name} is not a filter operator.`);
  }
}
