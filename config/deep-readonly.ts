/**
 * T with every member and array, however deep, read-only: how the server and
 * the SDK type the API's answers, whose zod schemas' output types are not.
 */
export type DeepReadonly<T> = T extends readonly (infer I)[]
  ? readonly DeepReadonly<I>[]
  : T extends object
    ? { readonly [K in keyof T]: DeepReadonly<T[K]> }
    : T;
