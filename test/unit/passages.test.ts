import fc from 'fast-check';
import { indexPassages, PASSAGE_DEFAULTS, type Passage } from '../../lambdas/domain/passages';
import type { TranscriptWord } from '../../lambdas/domain/transcript';
import { layOut, transcriptWords, type WordShape } from './support/transcripts';

const { minSeconds, maxSeconds, pauseSeconds } = PASSAGE_DEFAULTS;

/** `count` words of `durationMs` each, `gapMs` apart; `marks` puts punctuation after chosen words. */
function speech(count: number, marks: Record<number, WordShape['mark']> = {}, gapMs = 100, durationMs = 400) {
  return layOut(
    Array.from({ length: count }, (_, index) => ({ gapMs, durationMs, mark: marks[index] ?? '' })),
  );
}

/** Which words (by index) each passage holds: the test words are `w<index>`. */
function wordIndexes(passage: Passage): number[] {
  return passage.text.split(' ').map((token) => Number(/^w(\d+)/.exec(token)?.[1]));
}

const span = (words: readonly TranscriptWord[], first: number, last: number) =>
  words[last]!.end - words[first]!.start;

describe('indexPassages', () => {
  it('ends a passage at the first sentence end after 30 s', () => {
    // Word i lasts from 0.5 i + 0.1 s to 0.5 (i + 1) s: word 59 ends 29.9 s after the first word starts.
    const words = speech(150, { 59: '.', 61: '.', 99: '?' });
    const passages = indexPassages(words);
    expect(passages.map(wordIndexes).map((indexes) => [indexes[0], indexes[indexes.length - 1]])).toEqual([
      [0, 61],
      [62, 149],
    ]);
    expect(passages[0]).toEqual({ start: 0.1, end: 31, text: expect.stringMatching(/^w0 w1 .* w61\.$/) });
  });

  it('ends a passage at a pause when the words carry no punctuation', () => {
    const words = layOut([
      ...Array.from({ length: 70 }, () => ({ gapMs: 100, durationMs: 400, mark: '' as const })),
      { gapMs: pauseSeconds * 1000, durationMs: 400, mark: '' },
      ...Array.from({ length: 70 }, () => ({ gapMs: 100, durationMs: 400, mark: '' as const })),
    ]);
    const passages = indexPassages(words);
    expect(passages.map(wordIndexes).map((indexes) => indexes.length)).toEqual([70, 71]);
    expect(passages[0]!.end).toBe(words[69]!.end);
    expect(passages[1]!.start).toBe(words[70]!.start);
  });

  it('cuts a sentence that runs past 60 s after its last comma past 30 s, else before the word that would pass 60 s', () => {
    const withComma = indexPassages(speech(300, { 70: ',', 90: ',', 110: ',', 200: '.' }));
    expect(wordIndexes(withComma[0]!).at(-1)).toBe(110);
    const withoutComma = indexPassages(speech(300, { 200: '.' }));
    // Word 119 ends at 59.9 s from the first word's start at 0.1 s; word 120 would end at 60.4 s.
    expect(wordIndexes(withoutComma[0]!).at(-1)).toBe(119);
    expect(withoutComma[0]!.end - withoutComma[0]!.start).toBeLessThanOrEqual(maxSeconds);
  });

  it('joins a short last passage to the one before when that stays within 60 s', () => {
    // 28 words (14 s) after a 31 s passage: joined, 45 s.
    expect(indexPassages(speech(90, { 61: '.' })).map((passage) => wordIndexes(passage).length)).toEqual([
      90,
    ]);
    // 55 words (27.5 s) after a 34 s passage: 61.9 s together, so the tail stands alone.
    const kept = indexPassages(speech(185, { 61: '.', 129: '.' }));
    expect(kept.map((passage) => wordIndexes(passage).length)).toEqual([62, 68, 55]);
  });

  it('lets one word with the silence before it carry a passage past 60 s', () => {
    const words = layOut([
      ...Array.from({ length: 20 }, () => ({ gapMs: 100, durationMs: 400, mark: '' as const })),
      { gapMs: 50_000, durationMs: 400, mark: '.' },
      ...Array.from({ length: 10 }, () => ({ gapMs: 100, durationMs: 400, mark: '' as const })),
    ]);
    const passages = indexPassages(words);
    expect(passages.map((passage) => wordIndexes(passage).length)).toEqual([21, 10]);
    expect(passages[0]!.end - passages[0]!.start).toBeGreaterThan(maxSeconds);
  });

  it('clamps an end to the next passage start when the provider times overlap', () => {
    const words = speech(185, { 61: '.', 129: '.' });
    const overlapping = words.map((word, index) => (index === 61 ? { ...word, end: word.end + 0.3 } : word));
    const passages = indexPassages(overlapping);
    expect(passages[0]!.end).toBe(overlapping[62]!.start);
  });

  it('gives no passage for no words, and refuses bounds that contradict each other', () => {
    expect(indexPassages([])).toEqual([]);
    expect(() => indexPassages(speech(3), { minSeconds: 61, maxSeconds: 60 })).toThrow(RangeError);
  });

  describe('for any transcript', () => {
    const arbitrary = fc.oneof(transcriptWords(), transcriptWords({ extreme: true }));

    it('covers every word once, in order, without overlap', () => {
      fc.assert(
        fc.property(arbitrary, (words) => {
          const passages = indexPassages(words);
          expect(passages.flatMap(wordIndexes)).toEqual(words.map((_, index) => index));
          expect(passages.map((passage) => passage.text).join(' ')).toBe(
            words.map((word) => word.punctuated_word ?? word.word).join(' '),
          );
          passages.forEach((passage, n) => {
            expect(passage.end).toBeGreaterThanOrEqual(passage.start);
            if (n > 0) expect(passage.start).toBeGreaterThanOrEqual(passages[n - 1]!.end);
          });
        }),
      );
    });

    it('keeps passages within 30..60 s as the rule allows, cut where a reader pauses unless forced', () => {
      fc.assert(
        fc.property(arbitrary, (words) => {
          const passages = indexPassages(words);
          const ranges = passages.map(wordIndexes).map((indexes) => [indexes[0]!, indexes.at(-1)!] as const);
          ranges.forEach(([first, last], n) => {
            const isLast = n === ranges.length - 1;
            const length = span(words, first, last);
            if (!isLast) expect(length).toBeGreaterThanOrEqual(minSeconds);
            // Past the maximum only as one word, or when the passage without its last word is under the minimum.
            if (length > maxSeconds && last > first) {
              expect(span(words, first, last - 1)).toBeLessThan(minSeconds);
            }
            if (isLast) {
              // A short last passage stands alone only when joining it would pass the maximum.
              if (length < minSeconds && n > 0) {
                expect(span(words, ranges[n - 1]![0], last)).toBeGreaterThan(maxSeconds);
              }
              return;
            }
            const text = words[last]!.punctuated_word ?? '';
            const sentenceEnd = /[.!?…]["'”’)\]]*$/u.test(text);
            const pause = words[last + 1]!.start - words[last]!.end >= pauseSeconds;
            if (!sentenceEnd && !pause) {
              // Forced: running on to the next sentence end or pause would have passed the maximum.
              let next = last + 1;
              while (
                next < words.length - 1 &&
                !/[.!?…]["'”’)\]]*$/u.test(words[next]!.punctuated_word ?? '') &&
                words[next + 1]!.start - words[next]!.end < pauseSeconds
              ) {
                next++;
              }
              expect(span(words, first, next)).toBeGreaterThan(maxSeconds);
            }
          });
        }),
      );
    });
  });
});
