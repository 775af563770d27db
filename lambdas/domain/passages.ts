import { type TranscriptWord, wordText } from './transcript';

/** A timed stretch of the transcript: what a listener jumps to from a search hit. */
export interface Passage {
  readonly start: number;
  readonly end: number;
  readonly text: string;
}

export interface PassageOptions {
  /** @default 30 */
  readonly minSeconds?: number;
  /** @default 60 */
  readonly maxSeconds?: number;
  /** A silence at least this long between two words is a pause. @default 1 */
  readonly pauseSeconds?: number;
}

export const PASSAGE_DEFAULTS = { minSeconds: 30, maxSeconds: 60, pauseSeconds: 1 } as const;

/** Closing quotes and brackets may follow the mark that ends a sentence or clause. */
export const SENTENCE_END = /[.!?…]["'”’)\]]*$/u;
const CLAUSE_END = /[,;:—–]["'”’)\]]*$/u;

/**
 * Splits a transcript (words in start order, as `mergeChunkTranscripts`
 * gives them) into passages of about 30 to 60 seconds that end where a reader
 * would pause. A passage's length is from its first word's start to its last
 * word's end. The rule, word by word:
 *
 * 1. A passage that is at least `minSeconds` long ends after a word that ends
 *    a sentence (its punctuated form ends in `.`, `!`, `?` or `…`, closing
 *    quotes or brackets allowed) or that is followed by a pause (the next
 *    word starts `pauseSeconds` or more after it ends).
 * 2. Otherwise, when the next word would take a passage that is already at
 *    least `minSeconds` long past `maxSeconds`, the passage ends without a
 *    sentence end: after its last clause mark (`,` `;` `:` `—` `–`) that
 *    leaves it at least `minSeconds` long, or else after its current word.
 * 3. Otherwise the next word joins the passage. So a passage passes
 *    `maxSeconds` only when its last word, with the silence before it, spans
 *    more than the room left after `minSeconds`: what is left without that
 *    word is shorter than `minSeconds`.
 * 4. The last passage may be shorter than `minSeconds`; if it is, and joining
 *    it to the one before keeps that within `maxSeconds`, it is joined.
 *
 * Passages cover every word once, in order. Where a provider's word times
 * overlap across a cut, a passage's end is clamped to the next one's start,
 * so no moment belongs to two passages.
 */
export function indexPassages(words: readonly TranscriptWord[], options: PassageOptions = {}): Passage[] {
  const { minSeconds, maxSeconds, pauseSeconds } = { ...PASSAGE_DEFAULTS, ...options };
  if (!(minSeconds > 0 && maxSeconds >= minSeconds && pauseSeconds > 0)) {
    throw new RangeError(
      `Passages need 0 < minSeconds <= maxSeconds and pauseSeconds > 0 (got ${minSeconds}, ${maxSeconds}, ${pauseSeconds}).`,
    );
  }
  const word = (index: number) => words[index] as TranscriptWord;
  const span = (first: number, last: number) => word(last).end - word(first).start;
  const endsAfter = (index: number) =>
    SENTENCE_END.test(wordText(word(index))) ||
    (index + 1 < words.length && word(index + 1).start - word(index).end >= pauseSeconds);

  /** Index of each passage's last word. */
  const lasts: number[] = [];
  let first = 0;
  let last = 0;
  while (last < words.length - 1) {
    const long = span(first, last) >= minSeconds;
    if (long && endsAfter(last)) {
      lasts.push(last);
      first = last + 1;
      last = first;
    } else if (long && span(first, last + 1) > maxSeconds) {
      let cut = last;
      for (let k = last; k > first && span(first, k) >= minSeconds; k--) {
        if (CLAUSE_END.test(wordText(word(k)))) {
          cut = k;
          break;
        }
      }
      lasts.push(cut);
      first = cut + 1;
      last = first;
    } else {
      last++;
    }
  }
  if (words.length > 0) lasts.push(words.length - 1);

  const previous = lasts.length - 2;
  if (previous >= 0) {
    const firstOfPrevious = previous === 0 ? 0 : (lasts[previous - 1] as number) + 1;
    const tailFirst = (lasts[previous] as number) + 1;
    if (
      span(tailFirst, words.length - 1) < minSeconds &&
      span(firstOfPrevious, words.length - 1) <= maxSeconds
    ) {
      lasts.splice(previous, 1);
    }
  }

  return lasts.map((lastIndex, n) => {
    const firstIndex = n === 0 ? 0 : (lasts[n - 1] as number) + 1;
    const next = words[lastIndex + 1];
    const end = next === undefined ? word(lastIndex).end : Math.min(word(lastIndex).end, next.start);
    return {
      start: word(firstIndex).start,
      end: Math.max(end, word(firstIndex).start),
      text: words
        .slice(firstIndex, lastIndex + 1)
        .map(wordText)
        .join(' '),
    };
  });
}
