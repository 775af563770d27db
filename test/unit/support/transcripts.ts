import fc from 'fast-check';
import type { TranscriptWord } from '../../../lambdas/domain/transcript';

/** Transcripts as a provider returns them: words in time order, some punctuated, with gaps and pauses. */

const MARKS = ['', '', '', '', ',', ';', '.', '?', '!', '."'] as const;

/** Times in milliseconds turned to seconds, so sums stay exact enough to compare with ±1e-9. */
const seconds = (ms: number) => ms / 1000;

export interface WordShape {
  /** Silence before the word; negative when the word starts before the previous one ends. */
  readonly gapMs: number;
  readonly durationMs: number;
  readonly mark: (typeof MARKS)[number];
}

const wordShape = (maxGapMs: number, maxDurationMs: number): fc.Arbitrary<WordShape> =>
  fc.record({
    // Mostly speech-like gaps, now and then a pause or a long silence. Providers' word times may
    // overlap by a few milliseconds, never by a whole word: each word starts after the one before.
    gapMs: fc.oneof(
      { weight: 8, arbitrary: fc.integer({ min: -50, max: 300 }) },
      { weight: 2, arbitrary: fc.integer({ min: 300, max: 2_500 }) },
      { weight: 1, arbitrary: fc.integer({ min: 0, max: maxGapMs }) },
    ),
    durationMs: fc.oneof(
      { weight: 20, arbitrary: fc.integer({ min: 80, max: 900 }) },
      { weight: 1, arbitrary: fc.integer({ min: 80, max: maxDurationMs }) },
    ),
    mark: fc.constantFrom(...MARKS),
  });

/** Lays words out one after another from `startMs`; each is `w<n>` so a passage's text names its words. */
export function layOut(shapes: readonly WordShape[], startMs = 0): TranscriptWord[] {
  let at = startMs;
  let previousStart = startMs;
  return shapes.map((shape, index) => {
    const start = Math.max(at + shape.gapMs, previousStart);
    previousStart = start;
    at = start + shape.durationMs;
    const word = `w${index}`;
    return {
      word,
      start: seconds(start),
      end: seconds(at),
      ...(shape.mark === '' ? {} : { punctuated_word: `${word}${shape.mark}` }),
      confidence: 0.9,
    };
  });
}

/**
 * Up to about 10 minutes of words. `extreme` lets a silence or a word run past
 * a minute, the inputs that force a passage over its maximum.
 */
export const transcriptWords = (options: { readonly extreme?: boolean } = {}) =>
  fc
    // size 'max': fast-check otherwise keeps arrays to a handful of words, far from one passage.
    .array(wordShape(options.extreme ? 90_000 : 2_500, options.extreme ? 70_000 : 900), {
      maxLength: 900,
      size: 'max',
    })
    .map((shapes) => layOut(shapes));

/** A chunk's words, all within the chunk, times relative to its start. */
export const chunkWords = (chunkMs: number) =>
  fc
    .array(wordShape(2_000, 900), { maxLength: 60, size: 'max' })
    .map((shapes) => layOut(shapes, 100).filter((word) => word.end * 1000 <= chunkMs));
