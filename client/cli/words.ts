import { UsageError } from './usage-error';

/** What the CLI says where `node:util` parseArgs would speak for it, and its guesses at a misspelling. */

/** Levenshtein distance: the edits that turn `a` into `b`. */
export function editDistance(a: string, b: string): number {
  let previous = Array.from({ length: b.length + 1 }, (_, index) => index);
  for (let i = 1; i <= a.length; i++) {
    const current = [i];
    for (let j = 1; j <= b.length; j++) {
      const substitution = (previous[j - 1] ?? 0) + (a[i - 1] === b[j - 1] ? 0 : 1);
      current.push(Math.min((previous[j] ?? 0) + 1, (current[j - 1] ?? 0) + 1, substitution));
    }
    previous = current;
  }
  return previous[b.length] ?? 0;
}

/** The closest of `known` to `word`, if it is a likely typo of it (at most 2 edits, fewer than its length). */
export function closest(word: string, known: Iterable<string>): string | undefined {
  let best: { name: string; distance: number } | undefined;
  for (const name of known) {
    const distance = editDistance(word, name);
    if (distance <= Math.min(2, name.length - 1) && (!best || distance < best.distance))
      best = { name, distance };
  }
  return best?.name;
}

/** The flag a parseArgs message is about (`--width`, or `-x` for a short one). */
function flagIn(message: string): string {
  return /'(--?[^' ]+)/.exec(message)?.[1] ?? 'a flag';
}

/**
 * A parseArgs error in the CLI's words, or `undefined` when `error` is no
 * parseArgs error. `flags` are the command's long flag names, for a guess.
 */
export function parseArgsUsageError(error: unknown, flags: readonly string[]): UsageError | undefined {
  const code = String((error as { code?: unknown })?.code ?? '');
  if (!code.startsWith('ERR_PARSE_ARGS')) return undefined;
  const message = (error as Error).message;
  const flag = flagIn(message);
  switch (code) {
    case 'ERR_PARSE_ARGS_UNKNOWN_OPTION': {
      const guess = flag.startsWith('--') ? closest(flag.slice(2), flags) : undefined;
      return new UsageError(`unknown flag ${flag}.${guess ? ` Did you mean --${guess}?` : ''}`);
    }
    case 'ERR_PARSE_ARGS_INVALID_OPTION_VALUE':
      if (/argument missing/.test(message)) return new UsageError(`${flag} needs a value.`);
      if (/ambiguous/.test(message)) {
        return new UsageError(
          `${flag} needs a value; for a value that starts with a dash, write ${flag}=<value>.`,
        );
      }
      if (/does not take an argument/.test(message)) return new UsageError(`${flag} takes no value.`);
      return new UsageError(`${flag} has a value it does not take.`);
    default:
      return new UsageError(`the command line is not understood (${flag}).`);
  }
}
