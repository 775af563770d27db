import { spawn } from 'node:child_process';
import { mkdir, readFile, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import * as z from 'zod';
import { CHUNK_TAGS, planChunks } from '../domain/chunks';
import {
  AAC_LC_CODECS,
  averageBitRate,
  masterPlaylist,
  parseMediaPlaylist,
  renditionBandwidth,
  type Variant,
} from '../domain/hls';
import {
  type AudioChunk,
  type AudioProbe,
  type HlsOptions,
  type HlsOutput,
  type MediaTools,
  UndecodableAudioError,
} from '../domain/media';

/** The media tools port over the ffmpeg and ffprobe command-line programs, each run in a child process. */

export interface MediaBinaries {
  readonly ffmpeg: string;
  readonly ffprobe: string;
}

/**
 * Where the programs are: `FFMPEG_PATH` and `FFPROBE_PATH` when set (the
 * compute function's and the Fargate task's images bring their own builds,
 * for arm64), else the binary the npm packages installed for this machine.
 */
export function mediaBinaries(env: NodeJS.ProcessEnv = process.env): MediaBinaries {
  return {
    ffmpeg: env.FFMPEG_PATH || installedBinary('@ffmpeg-installer/ffmpeg', 'FFMPEG_PATH'),
    ffprobe: env.FFPROBE_PATH || installedBinary('@ffprobe-installer/ffprobe', 'FFPROBE_PATH'),
  };
}

function installedBinary(packageName: string, envName: string): string {
  try {
    // Required by a name held in a variable, so a bundler leaves it out: a function bundle must not
    // carry a binary built for the machine that bundled it. There the environment names the binary.
    const load: (name: string) => unknown = require;
    return (load(packageName) as { path: string }).path;
  } catch (error) {
    throw new Error(`No ${envName} is set and ${packageName} is not installed for this platform.`, {
      cause: error,
    });
  }
}

/** The tool failed for a reason of its own (could not start, ran too long, crashed), not because of the input. */
export class MediaToolError extends Error {
  override readonly name = 'MediaToolError';
}

export interface ToolRun {
  readonly exitCode: number | null;
  readonly signal: NodeJS.Signals | null;
  readonly stdout: string;
  /** The end of what the tool wrote to stderr: where its reason for failing is. */
  readonly stderr: string;
}

export interface RunOptions {
  readonly timeoutMs: number;
  /** More output than this is not what the caller asked for: the tool is stopped. @default 4 MiB */
  readonly maxStdoutBytes?: number;
}

/** Enough of stderr for the last few messages, however much a long run logs. */
const STDERR_TAIL_BYTES = 16 * 1024;
const MAX_STDOUT_BYTES = 4 * 1024 * 1024;

/**
 * Runs a program with an argument list (no shell, so no file name is ever
 * interpreted), stopping it with SIGKILL when it outlives `timeoutMs` or
 * floods stdout. Resolves with how it ended, whatever its exit code; rejects
 * with a MediaToolError only when it could not start or was stopped.
 */
export function runTool(binary: string, args: readonly string[], options: RunOptions): Promise<ToolRun> {
  const program = path.basename(binary);
  const maxStdoutBytes = options.maxStdoutBytes ?? MAX_STDOUT_BYTES;
  return new Promise((resolve, reject) => {
    const child = spawn(binary, args, { stdio: ['ignore', 'pipe', 'pipe'], windowsHide: true });
    const stdout: Buffer[] = [];
    let stdoutBytes = 0;
    let stderr = Buffer.alloc(0);
    let stopped: MediaToolError | undefined;
    const stop = (reason: string) => {
      stopped ??= new MediaToolError(`${program} ${reason}; stopped.`);
      child.kill('SIGKILL');
    };
    const timer = setTimeout(() => stop(`ran longer than ${options.timeoutMs} ms`), options.timeoutMs);
    child.stdout.on('data', (chunk: Buffer) => {
      stdoutBytes += chunk.length;
      if (stdoutBytes > maxStdoutBytes) stop(`wrote more than ${maxStdoutBytes} bytes`);
      else stdout.push(chunk);
    });
    child.stderr.on('data', (chunk: Buffer) => {
      stderr = Buffer.concat([stderr, chunk]);
      if (stderr.length > STDERR_TAIL_BYTES) stderr = stderr.subarray(stderr.length - STDERR_TAIL_BYTES);
    });
    child.on('error', (error) => {
      clearTimeout(timer);
      reject(new MediaToolError(`${program} could not start: ${error.message}`, { cause: error }));
    });
    child.on('close', (exitCode, signal) => {
      clearTimeout(timer);
      if (stopped) reject(stopped);
      else
        resolve({
          exitCode,
          signal,
          stdout: Buffer.concat(stdout).toString('utf8'),
          stderr: stderr.toString('utf8'),
        });
    });
  });
}

/**
 * A tool's messages about a file, fit for a job's error: the file's local
 * path and the demuxers' `[name @ 0x…]` prefixes removed, repeats dropped.
 */
export function toolMessages(stderr: string, file: string): string {
  const lines = stderr
    .split(/\r?\n/)
    .map((line) =>
      line
        .split(`${file}: `)
        .join('')
        .split(file)
        .join('input')
        .replace(/^\[[^\]]* @ 0x[0-9a-f]+\]\s*/, '')
        .trim(),
    )
    .filter((line) => line !== '' && !line.startsWith('Cannot use rename on non file protocol'));
  const text = [...new Set(lines)].join('; ');
  return text.length > 300 ? `${text.slice(0, 297)}...` : text || 'no message';
}

export interface FfmpegMediaOptions {
  readonly binaries?: MediaBinaries;
  /** One ffprobe run. @default 30 s */
  readonly probeTimeoutMs?: number;
  /** One decode, transcode or split of a whole recording. @default 15 min */
  readonly processTimeoutMs?: number;
}

/** The rendition directory and file names the playlists refer to each other by. */
const MASTER_PLAYLIST = 'master.m3u8';
const MEDIA_PLAYLIST = 'playlist.m3u8';
const INIT_SECTION = 'init.mp4';
const renditionDirectory = (kbps: number) => `${kbps}k`;

/**
 * Chunks for transcription are 16 kHz mono FLAC: speech models listen at 16
 * kHz, lossless means the provider hears what was uploaded, and FLAC has no
 * encoder delay to shift a chunk's times (MP3 and AAC add priming samples).
 */
const CHUNK_ENCODING = ['-ac', '1', '-ar', '16000', '-c:a', 'flac'];

/**
 * How far the decoded audio may fall short of the duration the container
 * declares before the file counts as truncated. Exact headers (MP4, WAV,
 * FLAC, MP3 with a Xing header) agree within a few AAC or MP3 frames, but an
 * MP3 without a Xing header only has a duration estimated from its first
 * frames' bit rate, which a variable bit rate can put off by a percent or so.
 */
const truncationToleranceSeconds = (declaredSeconds: number) => Math.max(1, declaredSeconds * 0.01);

/** ffprobe writes numbers as strings, and may write `N/A`: anything not a finite number counts as absent. */
const number = z.preprocess((value) => {
  const parsed = typeof value === 'string' || typeof value === 'number' ? Number(value) : Number.NaN;
  return Number.isFinite(parsed) ? parsed : undefined;
}, z.number().optional());
const ffprobeOutput = z.object({
  streams: z
    .array(
      z.looseObject({
        index: z.number().int().nonnegative(),
        codec_type: z.string().optional(),
        codec_name: z.string().optional(),
        channels: z.number().int().optional(),
        sample_rate: number,
        duration: number,
        bit_rate: number,
      }),
    )
    .default([]),
  format: z.looseObject({ duration: number, bit_rate: number }).optional(),
});

/** What ffprobe alone says about the first audio stream, before anything is decoded. */
interface DescribedAudio {
  readonly streamIndex: number;
  readonly codec: string;
  readonly channels: number;
  readonly sampleRate: number;
  readonly declaredSeconds?: number;
  readonly bitRate?: number;
}

export class FfmpegMedia implements MediaTools {
  private readonly binaries: MediaBinaries;
  private readonly probeTimeoutMs: number;
  private readonly processTimeoutMs: number;

  constructor(options: FfmpegMediaOptions = {}) {
    this.binaries = options.binaries ?? mediaBinaries();
    this.probeTimeoutMs = options.probeTimeoutMs ?? 30_000;
    this.processTimeoutMs = options.processTimeoutMs ?? 15 * 60_000;
  }

  /**
   * ffprobe reads the container; then the audio stream is decoded to its end
   * (`ffmpeg -f null`, nothing written). ffprobe alone accepts a truncated
   * file whose header is intact: an MP3's Xing header or an MP4's front
   * `moov` still declares the full duration, and the missing part only shows
   * when decoding stops early. Decoding costs about 3 s of one core per hour
   * of MP3, and it is the only check that proves the audio plays through.
   * Decoder errors in the middle of a file that still decodes to its end are
   * tolerated: a recording with one damaged frame is still worth publishing.
   */
  async probe(file: string): Promise<AudioProbe> {
    const audio = await this.describe(file);
    const decodedSeconds = await this.decodedSeconds(file, audio.streamIndex);
    const declared = audio.declaredSeconds;
    if (declared !== undefined && declared - decodedSeconds > truncationToleranceSeconds(declared)) {
      throw new UndecodableAudioError(
        `The input's audio stops decoding at ${decodedSeconds.toFixed(1)} s of the ${declared.toFixed(1)} s it declares: the file is truncated or damaged.`,
      );
    }
    return {
      durationSeconds: declared ?? decodedSeconds,
      codec: audio.codec,
      channels: audio.channels,
      sampleRate: audio.sampleRate,
      ...(audio.bitRate === undefined ? {} : { bitRate: audio.bitRate }),
    };
  }

  /**
   * One ffmpeg run, one decode, one AAC encoder and HLS muxer per rendition
   * (the `var_stream_map` way to do the same, which would also write the
   * master playlist, segfaults in the packaged December 2018 ffmpeg on
   * audio-only input). Segments are fragmented MP4 rather than MPEG-TS: the
   * packaged ffprobe crashes on any MPEG-TS file, TS segments came out about
   * 10 % larger for the same audio, and every current HLS player (hls.js,
   * Safari, ffplay) plays fMP4. The master playlist is written here, BANDWIDTH
   * measured from the segments as RFC 8216 defines it (`renditionBandwidth`).
   */
  async transcodeToHls(file: string, outDir: string, options: HlsOptions): Promise<HlsOutput> {
    const renditionsKbps = checkedRenditions(options);
    const audio = await this.describe(file);
    const args = ['-nostdin', '-hide_banner', '-v', 'error', '-y', '-i', file];
    for (const kbps of renditionsKbps) {
      const directory = path.join(outDir, renditionDirectory(kbps));
      await mkdir(directory, { recursive: true });
      args.push(
        ...['-map', `0:${audio.streamIndex}`, '-c:a', 'aac', '-profile:a', 'aac_low', '-b:a', `${kbps}k`],
        // Listeners get stereo at most: a 64 kbit/s budget spread over 5.1 channels sounds worse than stereo.
        ...(audio.channels > 2 ? ['-ac', '2'] : []),
        ...['-f', 'hls', '-hls_time', String(options.segmentSeconds), '-hls_playlist_type', 'vod'],
        ...['-hls_segment_type', 'fmp4', '-hls_fmp4_init_filename', INIT_SECTION],
        ...['-hls_segment_filename', path.join(directory, 'segment-%05d.m4s')],
        path.join(directory, MEDIA_PLAYLIST),
      );
    }
    await this.runToCompletion('ffmpeg', file, args, 'transcode');

    const files: string[] = [MASTER_PLAYLIST];
    const variants: Variant[] = [];
    for (const kbps of renditionsKbps) {
      const directory = renditionDirectory(kbps);
      const uri = `${directory}/${MEDIA_PLAYLIST}`;
      const playlist = parseMediaPlaylist(
        await readFile(path.join(outDir, directory, MEDIA_PLAYLIST), 'utf8'),
      );
      const sizes = await Promise.all(
        playlist.segments.map(async (segment) => ({
          durationSeconds: segment.durationSeconds,
          bytes: (await stat(path.join(outDir, directory, segment.uri))).size,
        })),
      );
      files.push(
        uri,
        ...(playlist.initUri === undefined ? [] : [`${directory}/${playlist.initUri}`]),
        ...playlist.segments.map((segment) => `${directory}/${segment.uri}`),
      );
      variants.push({
        uri,
        bandwidth: renditionBandwidth(sizes, playlist.targetDurationSeconds, kbps),
        averageBandwidth: averageBitRate(sizes),
        codecs: AAC_LC_CODECS,
      });
    }
    await writeFile(path.join(outDir, MASTER_PLAYLIST), masterPlaylist(variants));
    return {
      masterPlaylist: MASTER_PLAYLIST,
      renditions: renditionsKbps.map((kbps) => ({
        bitrateKbps: kbps,
        playlist: `${renditionDirectory(kbps)}/${MEDIA_PLAYLIST}`,
      })),
      files,
    };
  }

  /**
   * One decode, one output per chunk cut by output `-ss`/`-t`, which trim
   * the decoded samples: each chunk starts exactly at its planned offset, so
   * the offset added to its word times is the true one. Stream copy cannot
   * promise that: it cuts at packet boundaries (26 ms for MP3, more for
   * others), and seeking a variable-bit-rate MP3 only estimates where a time
   * is. The last chunk has no `-t`: it takes whatever audio is left, even
   * where the declared duration is a little short.
   */
  async splitIntoChunks(file: string, outDir: string, chunkSeconds: number): Promise<readonly AudioChunk[]> {
    const audio = await this.describe(file);
    const durationSeconds = audio.declaredSeconds ?? (await this.decodedSeconds(file, audio.streamIndex));
    const plan = planChunks(durationSeconds, chunkSeconds);
    await mkdir(outDir, { recursive: true });
    const chunks = plan.map((chunk) => ({
      ...chunk,
      path: path.join(outDir, `chunk-${String(chunk.index).padStart(5, '0')}.flac`),
    }));
    const args = ['-nostdin', '-hide_banner', '-v', 'error', '-y', '-i', file];
    for (const chunk of chunks) {
      const last = chunk.index === chunks.length - 1;
      args.push(
        ...['-map', `0:${audio.streamIndex}`, '-ss', seconds(chunk.offsetSeconds)],
        ...(last ? [] : ['-t', seconds(chunk.durationSeconds)]),
        ...CHUNK_ENCODING,
        // The recording's own tags, then the chunk's place in it (see CHUNK_TAGS).
        ...['-map_metadata', '0'],
        ...['-metadata', `${CHUNK_TAGS.offsetSeconds}=${seconds(chunk.offsetSeconds)}`],
        ...['-metadata', `${CHUNK_TAGS.recordingSeconds}=${seconds(durationSeconds)}`],
        chunk.path,
      );
    }
    await this.runToCompletion('ffmpeg', file, args, 'split');
    // The plan's last duration is the declared one, which for MP3 counts the encoder's padding; the
    // FLAC header counts the samples actually written.
    const lastChunk = chunks[chunks.length - 1] as AudioChunk;
    const written = (await this.describe(lastChunk.path)).declaredSeconds;
    return written === undefined
      ? chunks
      : [...chunks.slice(0, -1), { ...lastChunk, durationSeconds: written }];
  }

  /** ffprobe's view of the first audio stream; UndecodableAudioError when there is none to read. */
  private async describe(file: string): Promise<DescribedAudio> {
    // A missing file is the calling step's fault, not the input's: its error goes up as it is.
    const { size } = await stat(file);
    if (size === 0) throw new UndecodableAudioError('The input is empty (0 bytes).');
    const run = await runTool(
      this.binaries.ffprobe,
      ['-v', 'error', '-print_format', 'json', '-show_format', '-show_streams', file],
      { timeoutMs: this.probeTimeoutMs },
    );
    if (run.signal !== null) {
      // The packaged static ffprobe crashes on MPEG-TS input (in its service-name decoding): a
      // fault of the tool, which another build would not have, so not the input's.
      throw new MediaToolError(`ffprobe was stopped by ${run.signal}: ${toolMessages(run.stderr, file)}`);
    }
    if (run.exitCode !== 0) {
      throw new UndecodableAudioError(`The input is not a media file: ${toolMessages(run.stderr, file)}.`);
    }
    const parsed = ffprobeOutput.safeParse(parseJson(run.stdout));
    if (!parsed.success)
      throw new MediaToolError(`ffprobe answered in an unexpected shape: ${parsed.error.message}`);
    const stream = parsed.data.streams.find((candidate) => candidate.codec_type === 'audio');
    if (!stream) throw new UndecodableAudioError('The input has no audio stream.');
    if (!stream.codec_name || !stream.channels || !stream.sample_rate) {
      throw new UndecodableAudioError('The input has an audio stream in a codec that cannot be decoded.');
    }
    const declaredSeconds = stream.duration ?? parsed.data.format?.duration;
    const bitRate = stream.bit_rate ?? parsed.data.format?.bit_rate;
    return {
      streamIndex: stream.index,
      codec: stream.codec_name,
      channels: stream.channels,
      sampleRate: stream.sample_rate,
      ...(declaredSeconds !== undefined && declaredSeconds > 0 ? { declaredSeconds } : {}),
      ...(bitRate === undefined ? {} : { bitRate }),
    };
  }

  /** How much of the stream decodes: the time of the last decoded sample, from ffmpeg's progress report. */
  private async decodedSeconds(file: string, streamIndex: number): Promise<number> {
    const run = await runTool(
      this.binaries.ffmpeg,
      [
        ...['-nostdin', '-hide_banner', '-nostats', '-v', 'error', '-i', file],
        ...['-map', `0:${streamIndex}`, '-f', 'null', '-progress', 'pipe:1', '-'],
      ],
      { timeoutMs: this.processTimeoutMs },
    );
    if (run.signal !== null) {
      throw new MediaToolError(`ffmpeg was stopped by ${run.signal}: ${toolMessages(run.stderr, file)}`);
    }
    const decoded = lastProgressSeconds(run.stdout);
    if (decoded <= 0) {
      throw new UndecodableAudioError(
        `The input's audio does not decode: ${toolMessages(run.stderr, file)}.`,
      );
    }
    return decoded;
  }

  private async runToCompletion(
    program: keyof MediaBinaries,
    file: string,
    args: readonly string[],
    what: string,
  ): Promise<void> {
    const run = await runTool(this.binaries[program], args, { timeoutMs: this.processTimeoutMs });
    if (run.exitCode !== 0) {
      throw new MediaToolError(
        `The ${what} failed (${run.signal ?? `exit ${run.exitCode}`}): ${toolMessages(run.stderr, file)}`,
      );
    }
  }
}

function checkedRenditions(options: HlsOptions): number[] {
  const kbps = [...new Set(options.renditionsKbps)].sort((a, b) => a - b);
  if (
    kbps.length === 0 ||
    kbps.length !== options.renditionsKbps.length ||
    !kbps.every((rate) => Number.isSafeInteger(rate) && rate > 0)
  ) {
    throw new RangeError(
      `Renditions are distinct whole kbit/s rates, at least one: ${options.renditionsKbps.join(', ')}.`,
    );
  }
  if (!(Number.isFinite(options.segmentSeconds) && options.segmentSeconds > 0)) {
    throw new RangeError(`Segments must last a positive time, not ${options.segmentSeconds} s.`);
  }
  return kbps;
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

/** Seconds as ffmpeg reads a duration, never in exponent notation. */
const seconds = (value: number) => value.toFixed(6);

/** The last `out_time=HH:MM:SS.micro` of a `-progress` report; 0 when none was written. */
export function lastProgressSeconds(progress: string): number {
  let last = 0;
  for (const match of progress.matchAll(/^out_time=(\d+):(\d{2}):(\d{2}(?:\.\d+)?)$/gm)) {
    last = Number(match[1]) * 3600 + Number(match[2]) * 60 + Number(match[3]);
  }
  return last;
}
