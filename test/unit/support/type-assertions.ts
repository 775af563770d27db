/** `true` only if X and Y are the same type, optional and readonly members included. */
export type Equals<X, Y> = (<T>() => T extends X ? 1 : 2) extends <T>() => T extends Y ? 1 : 2 ? true : false;
/** `true` only if every X is a Y. */
export type Extends<X, Y> = [X] extends [Y] ? true : false;

export type { DeepReadonly } from '../../../config/deep-readonly';
