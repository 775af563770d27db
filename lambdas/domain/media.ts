import { InvalidJobInputError } from './errors';

/**
 * The media tools port: what the `audio.publish` compute steps need from an
 * audio toolkit. One adapter, `lambdas/adapters/ffmpeg-media.ts`, runs ffmpeg
 * and ffprobe; the same module serves Lambda and the Fargate task, which only
 * differ in where the binaries come from. Paths are local files: the steps
 * fetch inputs and upload outputs around these calls.
 */

/** What probing a file tells about its first audio stream. */
export interface AudioProbe {
  /** The length a player shows; checked against what actually decodes (see the adapter's `probe`). */
  readonly durationSeconds: number;
  /** The decoder's name, e.g. `mp3`, `aac`, `flac`. */
  readonly codec: string;
  readonly channels: number;
  readonly sampleRate: number;
  /** Bits per second, when the container or stream says. */
  readonly bitRate?: number;
}

export interface HlsOptions {
  /** One AAC rendition per entry, in kbit/s. Distinct positive integers. */
  readonly renditionsKbps: readonly number[];
  /** Target segment length; audio segments end within one AAC frame (about 23 ms) of it. */
  readonly segmentSeconds: number;
}

export interface HlsRendition {
  readonly bitrateKbps: number;
  /** The rendition's media playlist, relative to the output directory. */
  readonly playlist: string;
}

export interface HlsOutput {
  /** The master playlist, relative to the output directory. */
  readonly masterPlaylist: string;
  /** In the master playlist's order: lowest bit rate first. */
  readonly renditions: readonly HlsRendition[];
  /**
   * Every file written, relative to the output directory, with `/` as the
   * separator: each one becomes an object under the job's output prefix.
   */
  readonly files: readonly string[];
}

/** One piece of a recording cut for transcription. */
export interface AudioChunk {
  /** 0-based, in time order. */
  readonly index: number;
  readonly path: string;
  /** Where the chunk starts in the original recording: added to every word time of its transcript. */
  readonly offsetSeconds: number;
  readonly durationSeconds: number;
}

export interface MediaTools {
  /** Throws UndecodableAudioError when the file is not audio that decodes to its end. */
  probe(file: string): Promise<AudioProbe>;
  /** AAC renditions in fMP4 segments, one media playlist each, and one master playlist, all in `outDir`. */
  transcodeToHls(file: string, outDir: string, options: HlsOptions): Promise<HlsOutput>;
  /** The recording cut at the offsets `planChunks` gives, one file per chunk in `outDir`. */
  splitIntoChunks(file: string, outDir: string, chunkSeconds: number): Promise<readonly AudioChunk[]>;
}

/** The job error code of an input that is not decodable audio. */
export const INPUT_INVALID = 'input_invalid';

/**
 * The input is not audio that decodes: garbage, empty, truncated, or no audio
 * stream at all. Retrying cannot help, so it is an InvalidJobInputError (the
 * workflow fails the job at once, before anything is charged); the message
 * carries the code the way the workflow reads a step's error.
 */
export class UndecodableAudioError extends InvalidJobInputError {
  constructor(readonly detail: string) {
    super(`[${INPUT_INVALID}] ${detail}`, INPUT_INVALID);
  }
}
