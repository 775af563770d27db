/** Types of ./dynamodb-units.cjs, DynamoDB's billing rules as the request counter applies them. */

/** An attribute value in DynamoDB's JSON form: `{S: 'x'}`, `{N: '1'}`, `{M: {...}}`, … */
export type AttributeValue = Readonly<Record<string, unknown>>;
export type Item = Readonly<Record<string, AttributeValue>>;

export interface IndexDescription {
  readonly KeySchema: readonly { readonly AttributeName: string }[];
  readonly Projection?: { readonly ProjectionType: string; readonly NonKeyAttributes?: readonly string[] };
}

export function itemBytes(item: Item): number;
export function indexWriteUnits(
  index: IndexDescription,
  tableKeys: readonly string[],
  before: Item | undefined | null,
  after: Item | undefined | null,
): number;
export function requestItems(
  operation: string,
  body: Record<string, unknown>,
): { reads: number; writes: number };
export function requestUnits(
  operation: string,
  body: Record<string, unknown>,
  status: number,
  answer: unknown,
): { read: number; write: number; estimated: boolean };
export const READS: ReadonlySet<string>;
export const WRITES: ReadonlySet<string>;
