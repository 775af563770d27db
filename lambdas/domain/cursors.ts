import type * as z from 'zod';
import { ValidationError } from './errors';

/** A listing's opaque cursor: where the next page starts, as JSON in base64url. */
export const encodeCursor = (position: unknown): string =>
  Buffer.from(JSON.stringify(position), 'utf8').toString('base64url');

/**
 * Where a cursor says the next page starts; a cursor that is not one of
 * `schema`'s, however it was made, is the `cursor` query parameter's
 * ValidationError with `detail`.
 */
export function decodeCursor<T>(schema: z.ZodType<T>, cursor: string, detail: string): T {
  try {
    return schema.parse(JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')));
  } catch {
    throw new ValidationError('The request query is invalid.', [{ parameter: 'cursor', detail }]);
  }
}
