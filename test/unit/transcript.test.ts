import fc from 'fast-check';
import { type ChunkTranscript, mergeChunkTranscripts } from '../../lambdas/domain/transcript';
import { chunkWords } from './support/transcripts';

describe('mergeChunkTranscripts', () => {
  // As Deepgram answers with punctuate=true; confidence passes through.
  const first: ChunkTranscript = {
    offsetSeconds: 0,
    words: [
      { word: 'in', start: 0.08, end: 0.24, confidence: 0.99, punctuated_word: 'In' },
      { word: 'the', start: 0.24, end: 0.4, confidence: 0.98, punctuated_word: 'the' },
      { word: 'beginning', start: 0.4, end: 1.12, confidence: 0.97, punctuated_word: 'beginning.' },
    ],
  };
  const second: ChunkTranscript = {
    offsetSeconds: 600,
    words: [
      { word: 'amen', start: 0.5, end: 1, confidence: 0.9 },
      { word: 'go', start: 1.25, end: 1.5, confidence: 0.9, punctuated_word: 'Go!' },
    ],
  };

  it("moves each chunk's words by its offset and joins the punctuated words, whatever order the chunks came in", () => {
    const merged = mergeChunkTranscripts([second, first]);
    expect(merged.text).toBe('In the beginning. amen Go!');
    expect(merged.words).toEqual([
      ...first.words,
      { word: 'amen', start: 600.5, end: 601, confidence: 0.9 },
      { word: 'go', start: 601.25, end: 601.5, confidence: 0.9, punctuated_word: 'Go!' },
    ]);
  });

  it('gives an empty transcript for no words', () => {
    expect(mergeChunkTranscripts([])).toEqual({ words: [], text: '' });
    expect(mergeChunkTranscripts([{ offsetSeconds: 600, words: [] }])).toEqual({ words: [], text: '' });
  });

  it('keeps every word once, in time order, at its offset plus its chunk time', () => {
    const chunkMs = 20_000;
    fc.assert(
      fc.property(
        fc.array(chunkWords(chunkMs), { maxLength: 8 }).chain((perChunk) =>
          fc.shuffledSubarray(
            perChunk.map((words, index) => ({ offsetSeconds: (index * chunkMs) / 1000, words })),
            { minLength: perChunk.length },
          ),
        ),
        (chunks) => {
          const merged = mergeChunkTranscripts(chunks);
          const expected = [...chunks]
            .sort((a, b) => a.offsetSeconds - b.offsetSeconds)
            .flatMap((chunk) =>
              chunk.words.map((word) => ({
                ...word,
                start: word.start + chunk.offsetSeconds,
                end: word.end + chunk.offsetSeconds,
              })),
            );
          expect(merged.words).toEqual(expected);
          for (let i = 1; i < merged.words.length; i++) {
            expect(merged.words[i]!.start).toBeGreaterThanOrEqual(merged.words[i - 1]!.start);
          }
          expect(merged.text).toBe(expected.map((word) => word.punctuated_word ?? word.word).join(' '));
        },
      ),
    );
  });
});
