/**
 * A transcript as the transcription provider returns it per chunk, and the
 * merge of the chunks into one transcript of the whole recording. Words use
 * Deepgram's pre-recorded format (`results.channels[0].alternatives[0].words`):
 * times in seconds from the start of the audio that was sent, `word` as
 * recognised, `punctuated_word` with case and punctuation when `punctuate` or
 * `smart_format` was asked for. Other members (confidence, speaker) pass
 * through unchanged.
 */

export interface TranscriptWord {
  readonly word: string;
  readonly start: number;
  readonly end: number;
  readonly punctuated_word?: string;
  readonly [member: string]: unknown;
}

export interface ChunkTranscript {
  /** Where the chunk starts in the recording (`AudioChunk.offsetSeconds`). */
  readonly offsetSeconds: number;
  /** Times relative to the chunk's start. */
  readonly words: readonly TranscriptWord[];
}

export interface Transcript {
  /** Times relative to the recording's start, in time order. */
  readonly words: readonly TranscriptWord[];
  /** The words as read: punctuated where the provider punctuated, joined by single spaces. */
  readonly text: string;
}

/** How a word reads in running text. */
export const wordText = (word: TranscriptWord): string => word.punctuated_word ?? word.word;

/**
 * One transcript from the chunks' transcripts, whatever order they finished
 * in: chunks are taken by offset, each word moved by its chunk's offset, and
 * the words put in start order (stable, so two words with one start keep the
 * provider's order). Times are not rounded: a chunk at offset 0 comes out
 * exactly as the provider sent it.
 */
export function mergeChunkTranscripts(chunks: readonly ChunkTranscript[]): Transcript {
  const words = [...chunks]
    .sort((a, b) => a.offsetSeconds - b.offsetSeconds)
    .flatMap(({ offsetSeconds, words: chunkWords }) =>
      chunkWords.map((word) => ({
        ...word,
        start: word.start + offsetSeconds,
        end: word.end + offsetSeconds,
      })),
    )
    .sort((a, b) => a.start - b.start);
  return { words, text: words.map(wordText).join(' ') };
}
