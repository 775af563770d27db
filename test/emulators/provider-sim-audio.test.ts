import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { FfmpegMedia } from '../../lambdas/adapters/ffmpeg-media';
import { generateTestAudio } from '../../local/harness/test-audio';
import { audioDurationSeconds, hearBytes } from '../../local/provider-sim/audio';

/** The simulated Deepgram's reading of an audio file's length from its header, and of its tags. */

let dir: string;
const read = (name: string) => readFileSync(path.join(dir, name));

beforeAll(async () => {
  dir = mkdtempSync(path.join(tmpdir(), 'longhaul-sim-audio-unit-'));
  await Promise.all([
    generateTestAudio(path.join(dir, 'a.flac'), { seconds: 7.5, kind: 'speechlike', sampleRate: 16_000 }),
    generateTestAudio(path.join(dir, 'a.wav'), { seconds: 2.5, kind: 'tone', sampleRate: 22_050 }),
    generateTestAudio(path.join(dir, 'a.mp3'), { seconds: 2, kind: 'tone' }),
    generateTestAudio(path.join(dir, 'said.mp3'), { seconds: 2, kind: 'tone', comment: 'Amen.' }),
    generateTestAudio(path.join(dir, 'sermon.wav'), { seconds: 9, kind: 'speechlike', comment: 'Amen.' }),
  ]);
});

afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('audioDurationSeconds', () => {
  it('reads a FLAC file’s length from STREAMINFO, from its first bytes alone', () => {
    const flac = read('a.flac');
    expect(audioDurationSeconds(flac.subarray(0, 64), flac.length)).toBe(7.5);
  });

  it('reads nothing from a FLAC file whose STREAMINFO does not count its samples', () => {
    const flac = Buffer.from(read('a.flac'));
    // Total samples are the low 36 bits of the 8 bytes at 18.
    flac[21] = (flac[21] ?? 0) & 0xf0;
    flac.fill(0, 22, 26);
    expect(audioDurationSeconds(flac, flac.length)).toBeUndefined();
  });

  it('reads a WAV file’s length from its data chunk and byte rate', () => {
    const wav = read('a.wav');
    expect(audioDurationSeconds(wav, wav.length)).toBe(2.5);
  });

  it('takes the bytes after the data chunk’s header when a streamed WAV left its size unset', () => {
    const wav = Buffer.from(read('a.wav'));
    const data = wav.indexOf('data');
    wav.writeUInt32LE(0xffffffff, data + 4);
    expect(audioDurationSeconds(wav, wav.length)).toBe(2.5);
    // Only half of it arrived.
    const half = data + 8 + (wav.length - data - 8) / 2;
    expect(audioDurationSeconds(wav.subarray(0, half), half)).toBeCloseTo(1.25, 6);
  });

  it('reads nothing from other formats, text or nothing at all', () => {
    const mp3 = read('a.mp3');
    expect(audioDurationSeconds(mp3, mp3.length)).toBeUndefined();
    expect(audioDurationSeconds(Buffer.from('RIFF not really a wav'), 21)).toBeUndefined();
    expect(audioDurationSeconds(Buffer.alloc(0), 0)).toBeUndefined();
    expect(hearBytes(Buffer.from('https://example.com/a.wav'))).toBeUndefined();
  });
});

describe('hearBytes', () => {
  it('hears a chunk cut by the split step: its length, its recording’s comment, and its place in that recording', async () => {
    const chunks = await new FfmpegMedia().splitIntoChunks(
      path.join(dir, 'sermon.wav'),
      path.join(dir, 'chunks'),
      4,
    );
    const second = chunks[1];
    if (!second) throw new Error('expected two chunks');

    expect(hearBytes(readFileSync(second.path))).toEqual({
      durationSeconds: second.durationSeconds,
      sha256: expect.stringMatching(/^[0-9a-f]{64}$/),
      comment: 'Amen.',
      place: { offsetSeconds: 4, recordingSeconds: 9 },
    });
  });

  it('hears the comment of a recording whose length it cannot read, and nothing of one with neither', () => {
    expect(hearBytes(read('said.mp3'))).toMatchObject({ durationSeconds: undefined, comment: 'Amen.' });
    expect(hearBytes(read('a.mp3'))).toBeUndefined();
    expect(hearBytes(read('a.wav'))).toMatchObject({
      durationSeconds: 2.5,
      comment: undefined,
      place: undefined,
    });
  });
});
