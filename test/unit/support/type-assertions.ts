/** `true` only if X and Y are the same type, optional and readonly members included. */
export type Equals<X, Y> = (<T>() => T extends X ? 1 : 2) extends <T>() => T extends Y ? 1 : 2 ? true : false;
/** `true` only if every X is a Y. */
export type Extends<X, Y> = [X] extends [Y] ? true : false;

/** T with every member and array, however deep, read-only: the SDK's and the server's types are, zod's are not. */
export type DeepReadonly<T> = T extends readonly (infer I)[]
  ? readonly DeepReadonly<I>[]
  : T extends object
    ? { readonly [K in keyof T]: DeepReadonly<T[K]> }
    : T;
