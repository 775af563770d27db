import {
  chunkWordsFromDeepgram,
  deepgramChunkRequest,
  publishInput,
  publishResult,
} from '../../config/job-types/audio-publish';
import { OutputInvalidError } from '../../config/job-types/job-type';

const RESULT = {
  durationSeconds: 1800.5,
  playlistUrl: 'https://outputs.example/served/master.m3u8?X-Amz-Signature=a',
  transcriptUrl: 'https://outputs.example/transcript.json?X-Amz-Signature=b',
  renditions: [
    { bitrateKbps: 64, playlistUrl: 'https://outputs.example/served/64k/playlist.m3u8?X-Amz-Signature=c' },
    { bitrateKbps: 128, playlistUrl: 'https://outputs.example/served/128k/playlist.m3u8?X-Amz-Signature=d' },
  ],
};

describe('audio.publish input', () => {
  it.each([
    [{ audioUrl: 'https://media.example/sermon.mp3', language: 'pt-BR' }, true],
    [{ audioRef: 'upl_0123456789012345678901' }, true],
    [{}, false],
    [{ audioUrl: 'https://media.example/a.mp3', audioRef: 'upl_0123456789012345678901' }, false],
    [{ audioUrl: 'http://media.example/a.mp3' }, false],
    [{ audioUrl: 'https://media.example/a.mp3', speakers: 2 }, false],
  ])('%j is accepted: %s', (input, accepted) => {
    expect(publishInput.safeParse(input).success).toBe(accepted);
  });
});

describe('audio.publish result', () => {
  it('carries passages on the job or behind a URL, never both nor neither', () => {
    expect(
      publishResult.safeParse({ ...RESULT, passages: [{ start: 0, end: 42.5, text: 'Grace.' }] }).success,
    ).toBe(true);
    expect(
      publishResult.safeParse({ ...RESULT, passagesUrl: 'https://outputs.example/passages.json' }).success,
    ).toBe(true);
    expect(publishResult.safeParse(RESULT).error?.issues.map((i) => i.message)).toEqual([
      'exactly one of passages or passagesUrl is present',
    ]);
    expect(
      publishResult.safeParse({
        ...RESULT,
        passages: [],
        passagesUrl: 'https://outputs.example/passages.json',
      }).success,
    ).toBe(false);
  });

  it('refuses a result without renditions', () => {
    expect(publishResult.safeParse({ ...RESULT, renditions: [], passages: [] }).success).toBe(false);
  });
});

describe('the Deepgram mapping of a chunk', () => {
  it('asks for punctuated words in the job’s language, or detects it', () => {
    expect(deepgramChunkRequest('https://outputs.example/chunk-0.flac', 'en')).toEqual({
      url: 'https://outputs.example/chunk-0.flac',
      options: { model: 'nova-3', smart_format: true, punctuate: true, language: 'en' },
    });
    expect(deepgramChunkRequest('https://outputs.example/chunk-0.flac', undefined).options).toEqual({
      model: 'nova-3',
      smart_format: true,
      punctuate: true,
      detect_language: true,
    });
  });

  it("reads the chunk's words with their times and extra members, and the language heard", () => {
    const word = { word: 'grace', punctuated_word: 'Grace.', start: 1.2, end: 1.6, confidence: 0.98 };
    expect(
      chunkWordsFromDeepgram({
        results: {
          channels: [{ detected_language: 'en', alternatives: [{ transcript: 'Grace.', words: [word] }] }],
        },
      }),
    ).toEqual({ words: [word], language: 'en' });
  });

  it.each([{}, { results: { channels: [] } }, { results: { channels: [{ alternatives: [{}] }] } }])(
    'finds no words in %j: the output is invalid',
    (raw) => {
      expect(() => chunkWordsFromDeepgram(raw)).toThrow(OutputInvalidError);
    },
  );
});
