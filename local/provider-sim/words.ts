import { SENTENCE_END } from '../../lambdas/domain/passages';
import { SAMPLE_TRANSCRIPT_SEGMENTS } from './outputs';

/**
 * What the simulated Deepgram hears said in the audio it is sent, as timed
 * words in sentences: the sample transcript stretched over the audio, or,
 * for a recording whose comment tag holds what is said, exactly those words.
 */

/** A word as Deepgram's pre-recorded response gives it (a type, so it is a `TranscriptWord` as it stands). */
export type Word = {
  readonly word: string;
  readonly start: number;
  readonly end: number;
  readonly confidence: number;
  readonly punctuated_word: string;
};

/** A sentence where it falls in the audio, its words, and which paragraph it belongs to. */
export interface HeardSentence {
  /** As said: punctuated, in its case. */
  readonly text: string;
  readonly start: number;
  readonly end: number;
  readonly paragraph: number;
  readonly words: readonly Word[];
}

export const WORD_CONFIDENCE = 0.99;

/** How long the sample transcript lasts: the length assumed for audio whose own cannot be read. */
export const SAMPLE_SECONDS = SAMPLE_TRANSCRIPT_SEGMENTS.at(-1)?.end ?? 0;

/** Times as Deepgram gives them: to the millisecond. */
export const roundSeconds = (seconds: number) => Math.round(seconds * 1000) / 1000;

/** A token as recognised, without case or punctuation; empty for a token with neither letter nor digit. */
const plain = (token: string) => token.toLowerCase().replace(/[^\p{L}\p{N}']/gu, '');

/** The sentence's words, spread evenly over its time. */
function wordsOf(segment: { readonly text: string; readonly start: number; readonly end: number }): Word[] {
  const tokens = segment.text.split(' ');
  const step = (segment.end - segment.start) / tokens.length;
  return tokens.map((token, index) => ({
    word: plain(token),
    start: roundSeconds(segment.start + index * step),
    end: roundSeconds(segment.start + (index + 1) * step),
    confidence: WORD_CONFIDENCE,
    punctuated_word: token,
  }));
}

/**
 * How fast a preacher speaks: about 150 words a minute, so an hour's
 * transcript holds about 9,000 words, and Deepgram's answer for it, which
 * lists each word twice when utterances are asked for, about 2 MB.
 */
export const SPOKEN_WORDS_PER_MINUTE = 150;

const SAMPLE_WORDS = SAMPLE_TRANSCRIPT_SEGMENTS.reduce(
  (sum, segment) => sum + segment.text.split(' ').length,
  0,
);

/**
 * The sample transcript over `durationSeconds` of audio, said at about
 * SPOKEN_WORDS_PER_MINUTE: repeated as many times as comes closest to that
 * pace (at least once), each repetition a paragraph, every time stretched by
 * one factor so the last sentence ends where the audio does. Over the
 * sample's own 8 s it is the sample, times unchanged.
 */
export function sentencesOver(durationSeconds: number): HeardSentence[] {
  const words = (durationSeconds / 60) * SPOKEN_WORDS_PER_MINUTE;
  const repetitions = Math.max(1, Math.round(words / SAMPLE_WORDS));
  const stretch = durationSeconds / (repetitions * SAMPLE_SECONDS);
  return Array.from({ length: repetitions }, (_, paragraph) => {
    const offset = paragraph * SAMPLE_SECONDS;
    return SAMPLE_TRANSCRIPT_SEGMENTS.map((segment) => {
      const timed = {
        text: segment.text,
        start: roundSeconds((offset + segment.start) * stretch),
        end: roundSeconds((offset + segment.end) * stretch),
      };
      return { ...timed, paragraph, words: wordsOf(timed) };
    });
  }).flat();
}

/** Where the audio sent lies in the recording a comment speaks for, when it is a piece of one. */
export interface PlaceInRecording {
  readonly offsetSeconds: number;
  readonly recordingSeconds: number;
}

/**
 * An encoder's padding, which a recording's declared length counts and its
 * last chunk's samples do not: a chunk ending this close to the recording's
 * end is its last, and hears every word left.
 */
export const LAST_CHUNK_SLACK_SECONDS = 0.5;

/**
 * The words of `comment` as said in `durationSeconds` of audio: spread
 * evenly over the whole recording (the audio itself, or the recording
 * `place` puts it in), each word heard by the piece its start falls in, at
 * times from that piece's start and never past its end. Sentences end where
 * a word ends one, as Longhaul's passages read them; tokens without a letter or a
 * digit (a lone dash) are not words. All in one paragraph.
 */
export function commentSentences(
  comment: string,
  durationSeconds: number,
  place?: PlaceInRecording,
): HeardSentence[] {
  const tokens = comment.split(/\s+/u).filter((token) => plain(token) !== '');
  const offset = place?.offsetSeconds ?? 0;
  const recording = place?.recordingSeconds ?? durationSeconds;
  const step = recording / tokens.length;
  const last = offset + durationSeconds >= recording - LAST_CHUNK_SLACK_SECONDS;
  const inside = (seconds: number) => roundSeconds(Math.min(Math.max(seconds - offset, 0), durationSeconds));
  const words = tokens.flatMap((token, index): Word[] => {
    const start = index * step;
    if (start < offset || (!last && start >= offset + durationSeconds)) return [];
    return [
      {
        word: plain(token),
        start: inside(start),
        end: inside(start + step),
        confidence: WORD_CONFIDENCE,
        punctuated_word: token,
      },
    ];
  });
  const sentences: HeardSentence[] = [];
  let open: Word[] = [];
  const close = () => {
    const [first] = open;
    const final = open.at(-1);
    if (!first || !final) return;
    const text = open.map((word) => word.punctuated_word).join(' ');
    sentences.push({ text, start: first.start, end: final.end, paragraph: 0, words: open });
    open = [];
  };
  for (const word of words) {
    open.push(word);
    if (SENTENCE_END.test(word.punctuated_word)) close();
  }
  close();
  return sentences;
}
