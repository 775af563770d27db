import path from 'node:path';
import { mediaBinaries, runTool, toolMessages } from '../../lambdas/adapters/ffmpeg-media';

/**
 * Audio made on the spot by ffmpeg's lavfi sources, for tests and the bench:
 * no recording is stored in the repository, and any length can be had.
 */

export type TestAudioKind = 'tone' | 'speechlike';

export interface TestAudioOptions {
  readonly seconds: number;
  readonly kind: TestAudioKind;
  /** @default 44100 */
  readonly sampleRate?: number;
  /**
   * Written as ffmpeg writes `-metadata comment=…`: a WAV's `INFO/ICMT`, an
   * MP3's ID3v2 frame, a FLAC's Vorbis comment. The simulated Deepgram hears
   * a recording with one as saying exactly its words. @default none
   */
  readonly comment?: string;
}

/**
 * `tone`: a 440 Hz sine. `speechlike`: a 140 Hz voice with two overtones and
 * a little breath noise, opened and closed four times a second like
 * syllables, silent for 0.6 s every 4 s like the pauses between phrases, so
 * encoders and pause detection meet something closer to a sermon than a sine.
 */
const SOURCES: Record<TestAudioKind, (seconds: number, sampleRate: number) => string> = {
  tone: (seconds, sampleRate) => `sine=frequency=440:sample_rate=${sampleRate}:duration=${seconds}`,
  speechlike: (seconds, sampleRate) =>
    `aevalsrc='(0.5*sin(2*PI*140*t)+0.25*sin(2*PI*280*t)+0.12*sin(2*PI*420*t)+0.05*(random(0)-0.5))` +
    `*(0.5-0.5*cos(2*PI*4*t))*lt(mod(t,4),3.4)':sample_rate=${sampleRate}:duration=${seconds}`,
};

/** The encoding each file extension gets: what uploads commonly are, plus lossless for exact checks. */
const ENCODINGS: Record<string, readonly string[]> = {
  '.mp3': ['-c:a', 'libmp3lame', '-b:a', '64k'],
  // The index in front, as an upload prepared for streaming has it: a truncated copy still probes.
  '.m4a': ['-c:a', 'aac', '-b:a', '96k', '-movflags', '+faststart'],
  '.wav': ['-c:a', 'pcm_s16le'],
  '.flac': ['-c:a', 'flac'],
};

/** Writes `seconds` of audio to `file`, encoded by its extension (.mp3, .m4a, .wav or .flac). */
export async function generateTestAudio(file: string, options: TestAudioOptions): Promise<void> {
  const encoding = ENCODINGS[path.extname(file)];
  if (!encoding) throw new Error(`No test audio encoding for ${file}; use one of ${Object.keys(ENCODINGS)}.`);
  const source = SOURCES[options.kind](options.seconds, options.sampleRate ?? 44_100);
  const run = await runTool(
    mediaBinaries().ffmpeg,
    [
      ...['-nostdin', '-hide_banner', '-v', 'error', '-y', '-f', 'lavfi', '-i', source, ...encoding],
      ...(options.comment === undefined ? [] : ['-metadata', `comment=${options.comment}`]),
      file,
    ],
    // Encoding runs at hundreds of times real time; a generous bound still catches a hang.
    { timeoutMs: 60_000 + options.seconds * 100 },
  );
  if (run.exitCode !== 0) throw new Error(`Could not generate ${file}: ${toolMessages(run.stderr, file)}`);
}

/**
 * The first bytes of a FLAC file of `seconds` of 16 kHz mono audio: `fLaC`
 * and its STREAMINFO block, which states the length, with no frames after
 * it. A reader of lengths (the simulated Deepgram's) hears that many
 * seconds without a test making and sending an hour of audio.
 */
export function flacHeaderOf(seconds: number, sampleRate = 16_000): Buffer {
  const streamInfo = Buffer.alloc(34);
  streamInfo.writeUInt16BE(4096, 0);
  streamInfo.writeUInt16BE(4096, 2);
  // Sample rate (20 bits), channels - 1 (3), bits per sample - 1 (5), total samples (36).
  const packed =
    (BigInt(sampleRate) << 44n) | (0n << 41n) | (15n << 36n) | BigInt(Math.round(seconds * sampleRate));
  streamInfo.writeBigUInt64BE(packed, 10);
  // Last metadata block (0x80), type STREAMINFO (0), 34 bytes long.
  return Buffer.concat([Buffer.from('fLaC', 'latin1'), Buffer.from([0x80, 0, 0, 34]), streamInfo]);
}
