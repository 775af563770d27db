/**
 * A command line split as a POSIX shell splits it, for the quoting help
 * examples use: words apart by spaces, '…' and "…" kept whole. No
 * expansion, escapes or operators: an example that needs them is refused.
 */
export function shellWords(line: string): string[] {
  const words: string[] = [];
  let word: string | undefined;
  for (let at = 0; at < line.length; at++) {
    const char = line[at] as string;
    if (char === "'" || char === '"') {
      const end = line.indexOf(char, at + 1);
      if (end < 0) throw new Error(`unclosed ${char} in: ${line}`);
      word = (word ?? '') + line.slice(at + 1, end);
      at = end;
    } else if (char === ' ') {
      if (word !== undefined) words.push(word);
      word = undefined;
    } else if ('\\$`|&;<>*?'.includes(char)) {
      throw new Error(`${char} needs a shell in: ${line}`);
    } else {
      word = (word ?? '') + char;
    }
  }
  if (word !== undefined) words.push(word);
  return words;
}
