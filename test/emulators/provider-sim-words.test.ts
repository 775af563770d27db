import { mergeChunkTranscripts } from '../../lambdas/domain/transcript';
import {
  commentSentences,
  LAST_CHUNK_SLACK_SECONDS,
  SAMPLE_SECONDS,
  sentencesOver,
  WORD_CONFIDENCE,
} from '../../local/provider-sim/words';

/** What the simulated Deepgram hears a recording say: its comment's words spread over it, piece by piece. */

const COMMENT = 'Peace be with you. And also with you! Shall we pray? — “Let us.”';
const TOKENS = [
  'Peace',
  'be',
  'with',
  'you.',
  'And',
  'also',
  'with',
  'you!',
  'Shall',
  'we',
  'pray?',
  '“Let',
  'us.”',
];

describe('commentSentences over a whole recording', () => {
  it('says exactly the comment’s words, evenly spread, each a step of the recording’s length', () => {
    const sentences = commentSentences(COMMENT, 13);
    const words = sentences.flatMap((sentence) => sentence.words);

    expect(words.map((word) => word.punctuated_word)).toEqual(TOKENS);
    expect(words.map((word) => [word.start, word.end])).toEqual(TOKENS.map((_, index) => [index, index + 1]));
    expect(words[11]).toEqual({
      word: 'let',
      start: 11,
      end: 12,
      confidence: WORD_CONFIDENCE,
      punctuated_word: '“Let',
    });
  });

  it('ends a sentence at each word that ends one, quotes and all', () => {
    expect(commentSentences(COMMENT, 26).map(({ text, start, end }) => ({ text, start, end }))).toEqual([
      { text: 'Peace be with you.', start: 0, end: 8 },
      { text: 'And also with you!', start: 8, end: 16 },
      { text: 'Shall we pray?', start: 16, end: 22 },
      { text: '“Let us.”', start: 22, end: 26 },
    ]);
  });

  it('keeps a last sentence without a full stop, and nothing for a comment without words', () => {
    expect(commentSentences('and so it goes', 4).map((sentence) => sentence.text)).toEqual([
      'and so it goes',
    ]);
    expect(commentSentences(' — … ', 4)).toEqual([]);
  });
});

describe('commentSentences over the chunks of a recording', () => {
  const RECORDING = 13;
  const pieces = [
    { offsetSeconds: 0, durationSeconds: 5 },
    { offsetSeconds: 5, durationSeconds: 5 },
    { offsetSeconds: 10, durationSeconds: 3 },
  ];
  const heard = pieces.map(({ offsetSeconds, durationSeconds }) => ({
    offsetSeconds,
    durationSeconds,
    words: commentSentences(COMMENT, durationSeconds, { offsetSeconds, recordingSeconds: RECORDING }).flatMap(
      (sentence) => sentence.words,
    ),
  }));

  it('gives each chunk the words that start in it, timed from its start and never past its end', () => {
    expect(heard.map((piece) => piece.words.map((word) => word.punctuated_word))).toEqual([
      TOKENS.slice(0, 5),
      TOKENS.slice(5, 10),
      TOKENS.slice(10),
    ]);
    for (const { durationSeconds, words } of heard) {
      for (const word of words) {
        expect(word.start).toBeGreaterThanOrEqual(0);
        expect(word.end).toBeLessThanOrEqual(durationSeconds);
      }
    }
  });

  it('merges back into the whole recording’s words and times', () => {
    const merged = mergeChunkTranscripts(heard);
    const whole = commentSentences(COMMENT, RECORDING).flatMap((sentence) => sentence.words);

    expect(merged.words).toEqual(whole);
    expect(merged.text).toBe(TOKENS.join(' '));
  });

  it('cuts a word that outlasts its chunk at the chunk’s end', () => {
    // Three words over 10 s: the second starts at 3.333 in the first 5 s chunk and runs to 6.667.
    const [first] = commentSentences('one two three', 5, { offsetSeconds: 0, recordingSeconds: 10 });
    expect(first?.words.map((word) => [word.start, word.end])).toEqual([
      [0, 3.333],
      [3.333, 5],
    ]);
  });

  it('lets a last chunk shorter than the recording declares hear every word left', () => {
    const short = LAST_CHUNK_SLACK_SECONDS / 2;
    // Four words over 8 s; the last chunk's samples end before the declared 8 s.
    const last = commentSentences('a b c d', 2 - short, { offsetSeconds: 6, recordingSeconds: 8 });
    expect(last.flatMap((sentence) => sentence.words).map((word) => word.word)).toEqual(['d']);
    const notLast = commentSentences('a b c d', 2 - short, { offsetSeconds: 4, recordingSeconds: 8 });
    expect(notLast.flatMap((sentence) => sentence.words).map((word) => word.word)).toEqual(['c']);
  });
});

describe('sentencesOver, the sample transcript', () => {
  it('is the sample over its own length, a paragraph per repetition over more', () => {
    const once = sentencesOver(SAMPLE_SECONDS);
    expect(once.map((sentence) => sentence.text).join(' ')).toBe(
      'Welcome to the long haul. Slow jobs finish exactly once. Thank you for waiting.',
    );
    expect(once.at(-1)?.words.at(-1)).toMatchObject({ end: SAMPLE_SECONDS, punctuated_word: 'waiting.' });
    // Its 14 words three times over are 42: at 150 words a minute, 16.8 s.
    expect(new Set(sentencesOver(16.8).map((sentence) => sentence.paragraph))).toEqual(new Set([0, 1, 2]));
  });

  it('says about 150 words a minute, so an hour holds about 9,000 words, the last ending with the hour', () => {
    const hour = sentencesOver(3600).flatMap((sentence) => sentence.words);

    // 9,000 words are the sample 642.9 times: 643 times, 14 words each.
    expect(hour).toHaveLength(643 * 14);
    expect(hour.at(-1)).toMatchObject({ end: 3600, punctuated_word: 'waiting.' });
  });
});
