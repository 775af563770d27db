import { existsSync } from 'node:fs';
import { copyFile, mkdtemp, readdir, readFile, rm, stat, truncate, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import {
  FfmpegMedia,
  lastProgressSeconds,
  MediaToolError,
  mediaBinaries,
  runTool,
  toolMessages,
} from '../../lambdas/adapters/ffmpeg-media';
import { CHUNK_TAGS } from '../../lambdas/domain/chunks';
import { parseMediaPlaylist, peakBitRate } from '../../lambdas/domain/hls';
import { INPUT_INVALID, UndecodableAudioError } from '../../lambdas/domain/media';
import { generateTestAudio } from '../../local/harness/test-audio';

/** The real ffmpeg and ffprobe on a few seconds of generated audio. */

const SECONDS = 12;
const media = new FfmpegMedia();
const binaries = mediaBinaries();
let dir: string;
const file = (name: string) => path.join(dir, name);

beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'longhaul-media-'));
  await Promise.all([
    generateTestAudio(file('tone.mp3'), { seconds: SECONDS, kind: 'tone' }),
    generateTestAudio(file('speech.m4a'), { seconds: SECONDS, kind: 'speechlike' }),
  ]);
});

afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

/** ffprobe's reading of a file's duration and audio streams. */
async function ffprobe(target: string) {
  const run = await runTool(
    binaries.ffprobe,
    ['-v', 'error', '-print_format', 'json', '-show_entries', 'format=duration:stream=codec_name', target],
    { timeoutMs: 10_000 },
  );
  expect({ exitCode: run.exitCode, stderr: run.stderr }).toEqual({ exitCode: 0, stderr: '' });
  const parsed = JSON.parse(run.stdout) as {
    format: { duration: string };
    streams: { codec_name: string }[];
  };
  return { durationSeconds: Number(parsed.format.duration), codecs: parsed.streams.map((s) => s.codec_name) };
}

/** The container's tags, as ffprobe names them. */
async function formatTags(target: string): Promise<Record<string, string>> {
  const run = await runTool(
    binaries.ffprobe,
    ['-v', 'error', '-of', 'json', '-show_entries', 'format_tags', target],
    {
      timeoutMs: 10_000,
    },
  );
  expect(run.exitCode).toBe(0);
  return (JSON.parse(run.stdout) as { format: { tags: Record<string, string> } }).format.tags;
}

async function filesUnder(root: string): Promise<string[]> {
  const entries = await readdir(root, { recursive: true, withFileTypes: true });
  return entries
    .filter((entry) => entry.isFile())
    .map((entry) => path.relative(root, path.join(entry.parentPath, entry.name)).split(path.sep).join('/'))
    .sort();
}

describe('probe', () => {
  it('reads an MP3 tone', async () => {
    const probe = await media.probe(file('tone.mp3'));
    expect(probe).toEqual({
      durationSeconds: expect.any(Number),
      codec: 'mp3',
      channels: 1,
      sampleRate: 44_100,
      bitRate: 64_000,
    });
    expect(Math.abs(probe.durationSeconds - SECONDS)).toBeLessThanOrEqual(0.1);
  });

  it('reads an AAC recording in an M4A', async () => {
    const probe = await media.probe(file('speech.m4a'));
    expect(probe).toMatchObject({ codec: 'aac', channels: 1, sampleRate: 44_100 });
    expect(Math.abs(probe.durationSeconds - SECONDS)).toBeLessThanOrEqual(0.1);
  });

  describe('refuses what is not decodable audio as input_invalid', () => {
    async function refusal(name: string): Promise<UndecodableAudioError> {
      const error = await media.probe(file(name)).then(
        () => undefined,
        (caught: unknown) => caught,
      );
      expect(error).toBeInstanceOf(UndecodableAudioError);
      expect(error).toMatchObject({ code: INPUT_INVALID, name: 'InvalidJobInput' });
      return error as UndecodableAudioError;
    }

    it('garbage bytes', async () => {
      await writeFile(
        file('garbage.mp3'),
        Buffer.from(Array.from({ length: 8_192 }, (_, i) => (i * 7_919) % 256)),
      );
      const error = await refusal('garbage.mp3');
      expect(error.message).toMatch(/^\[input_invalid\] The input is not a media file: /);
      expect(error.message).not.toContain(dir);
    });

    it('a zero-length file', async () => {
      await writeFile(file('empty.m4a'), '');
      expect((await refusal('empty.m4a')).message).toBe('[input_invalid] The input is empty (0 bytes).');
    });

    it('a truncated MP3 whose header still declares the whole length', async () => {
      await copyFile(file('tone.mp3'), file('cut.mp3'));
      await truncate(file('cut.mp3'), 48_000); // 6 s of 64 kbit/s
      expect((await refusal('cut.mp3')).message).toMatch(
        /^\[input_invalid\] The input's audio stops decoding at 6\.\d s of the 12\.\d s it declares: the file is truncated or damaged\.$/,
      );
    });

    it('a truncated M4A whose index is in front', async () => {
      await copyFile(file('speech.m4a'), file('cut.m4a'));
      await truncate(file('cut.m4a'), 40_000);
      expect((await refusal('cut.m4a')).message).toMatch(
        /stops decoding at \d\.\d s of the 12\.0 s it declares/,
      );
    });

    it('a file with a picture and no sound', async () => {
      const run = await runTool(
        binaries.ffmpeg,
        [
          '-nostdin',
          '-v',
          'error',
          '-y',
          '-f',
          'lavfi',
          '-i',
          'color=c=red:s=8x8',
          '-frames:v',
          '1',
          file('red.png'),
        ],
        { timeoutMs: 10_000 },
      );
      expect(run.exitCode).toBe(0);
      expect((await refusal('red.png')).message).toBe('[input_invalid] The input has no audio stream.');
    });
  });
});

describe('transcodeToHls', () => {
  it('writes two AAC renditions of about 6 s segments and a master playlist that ffprobe plays', async () => {
    const outDir = file('hls');
    const output = await media.transcodeToHls(file('speech.m4a'), outDir, {
      renditionsKbps: [128, 64],
      segmentSeconds: 6,
    });

    expect(output.masterPlaylist).toBe('master.m3u8');
    expect(output.renditions).toEqual([
      { bitrateKbps: 64, playlist: '64k/playlist.m3u8' },
      { bitrateKbps: 128, playlist: '128k/playlist.m3u8' },
    ]);
    expect([...output.files].sort()).toEqual(await filesUnder(outDir));

    const master = await readFile(path.join(outDir, output.masterPlaylist), 'utf8');
    const variants = [
      ...master.matchAll(
        /^#EXT-X-STREAM-INF:BANDWIDTH=(\d+),AVERAGE-BANDWIDTH=(\d+),CODECS="mp4a\.40\.2"\n(.+)$/gm,
      ),
    ];
    expect(variants.map((variant) => variant[3])).toEqual(['64k/playlist.m3u8', '128k/playlist.m3u8']);
    const [low, high] = variants.map((variant) => Number(variant[2]));
    // Average bit rates near the nominal ones (fMP4 adds a little), the higher one higher.
    expect(low).toBeGreaterThan(56_000);
    expect(low).toBeLessThan(80_000);
    expect(high).toBeGreaterThan(low!);

    for (const rendition of output.renditions) {
      const playlist = parseMediaPlaylist(await readFile(path.join(outDir, rendition.playlist), 'utf8'));
      const total = playlist.segments.reduce((sum, segment) => sum + segment.durationSeconds, 0);
      expect(Math.abs(total - SECONDS)).toBeLessThanOrEqual(0.2);
      // Cut at the AAC frame nearest 6 s; the last one holds what is left (here the encoder's few ms).
      const lengths = playlist.segments.map((segment) => segment.durationSeconds);
      expect(lengths.slice(0, -1).map((length) => Math.abs(length - 6) <= 0.05)).toEqual([true, true]);
      expect(lengths.at(-1)).toBeLessThanOrEqual(6.05);
      expect(playlist.initUri).toBe('init.mp4');
    }

    const played = await ffprobe(path.join(outDir, output.masterPlaylist));
    expect(played.codecs).toEqual(['aac', 'aac']);
    expect(Math.abs(played.durationSeconds - SECONDS)).toBeLessThanOrEqual(0.2);
  });

  it('advertises more BANDWIDTH for the higher rendition, each at least its peak, even where the encoder spends less on it', async () => {
    // A pure tone: the AAC encoder spends more bits on it at 64 kbit/s than at 128 kbit/s.
    const outDir = file('hls-tone');
    const output = await media.transcodeToHls(file('tone.mp3'), outDir, {
      renditionsKbps: [64, 128],
      segmentSeconds: 6,
    });
    const master = await readFile(path.join(outDir, output.masterPlaylist), 'utf8');
    const advertised = [...master.matchAll(/^#EXT-X-STREAM-INF:BANDWIDTH=(\d+)\b.*\n(.+)$/gm)].map(
      (variant) => ({ uri: variant[2], bandwidth: Number(variant[1]) }),
    );
    expect(advertised.map((variant) => variant.uri)).toEqual(['64k/playlist.m3u8', '128k/playlist.m3u8']);
    for (const variant of advertised) {
      const directory = path.join(outDir, path.dirname(variant.uri ?? ''));
      const playlist = parseMediaPlaylist(await readFile(path.join(outDir, variant.uri ?? ''), 'utf8'));
      const sizes = await Promise.all(
        playlist.segments.map(async (segment) => ({
          durationSeconds: segment.durationSeconds,
          bytes: (await stat(path.join(directory, segment.uri))).size,
        })),
      );
      expect(variant.bandwidth).toBeGreaterThanOrEqual(peakBitRate(sizes, playlist.targetDurationSeconds));
    }
    expect(advertised[1]!.bandwidth).toBeGreaterThan(advertised[0]!.bandwidth);
  });

  it('refuses renditions it cannot name apart before running anything', async () => {
    await expect(
      media.transcodeToHls(file('tone.mp3'), file('none'), { renditionsKbps: [64, 64], segmentSeconds: 6 }),
    ).rejects.toThrow(RangeError);
    expect(existsSync(file('none'))).toBe(false);
  });
});

describe('splitIntoChunks', () => {
  it('cuts chunks at the planned offsets whose written lengths add up to the recording', async () => {
    const chunks = await media.splitIntoChunks(file('tone.mp3'), file('chunks'), 5);
    expect(
      chunks.map(({ index, offsetSeconds, path: chunkPath }) => ({ index, offsetSeconds, chunkPath })),
    ).toEqual([
      { index: 0, offsetSeconds: 0, chunkPath: file('chunks/chunk-00000.flac') },
      { index: 1, offsetSeconds: 5, chunkPath: file('chunks/chunk-00001.flac') },
      { index: 2, offsetSeconds: 10, chunkPath: file('chunks/chunk-00002.flac') },
    ]);
    const written = await Promise.all(chunks.map((chunk) => ffprobe(chunk.path)));
    chunks.forEach((chunk, index) => {
      expect(written[index]!.codecs).toEqual(['flac']);
      expect(Math.abs(written[index]!.durationSeconds - chunk.durationSeconds)).toBeLessThanOrEqual(0.01);
      if (index > 0)
        expect(chunk.offsetSeconds).toBe(
          chunks[index - 1]!.offsetSeconds + chunks[index - 1]!.durationSeconds,
        );
    });
    const total = written.reduce((sum, chunk) => sum + chunk.durationSeconds, 0);
    expect(Math.abs(total - SECONDS)).toBeLessThanOrEqual(0.1);
  });

  it('keeps the recording’s tags in every chunk and adds where in the recording the chunk lies', async () => {
    const comment = 'In the beginning was the Word.';
    await generateTestAudio(file('commented.wav'), { seconds: 11, kind: 'tone', comment });

    const chunks = await media.splitIntoChunks(file('commented.wav'), file('commented'), 5);

    const tags = await Promise.all(chunks.map((chunk) => formatTags(chunk.path)));
    expect(tags).toEqual(
      chunks.map((chunk) => ({
        comment,
        [CHUNK_TAGS.offsetSeconds]: chunk.offsetSeconds.toFixed(6),
        [CHUNK_TAGS.recordingSeconds]: (11).toFixed(6),
        encoder: expect.any(String),
      })),
    );
  });
});

describe('the tools themselves', () => {
  it('takes the binaries from FFMPEG_PATH and FFPROBE_PATH when set, else from the installed packages', () => {
    expect(mediaBinaries({ FFMPEG_PATH: '/opt/bin/ffmpeg', FFPROBE_PATH: '/opt/bin/ffprobe' })).toEqual({
      ffmpeg: '/opt/bin/ffmpeg',
      ffprobe: '/opt/bin/ffprobe',
    });
    const installed = mediaBinaries({});
    expect(path.basename(installed.ffmpeg)).toBe('ffmpeg');
    expect(existsSync(installed.ffmpeg) && existsSync(installed.ffprobe)).toBe(true);
  });

  it('reports a binary that is not there as a tool failure, not as bad input', async () => {
    const missing = new FfmpegMedia({ binaries: { ffmpeg: file('no-ffmpeg'), ffprobe: file('no-ffprobe') } });
    const error = await missing.probe(file('tone.mp3')).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(MediaToolError);
    expect((error as Error).message).toBe(`no-ffprobe could not start: spawn ${file('no-ffprobe')} ENOENT`);
  });

  it('stops a run that outlives its timeout', async () => {
    const started = Date.now();
    await expect(
      runTool(
        binaries.ffmpeg,
        ['-nostdin', '-v', 'error', '-re', '-f', 'lavfi', '-i', 'sine', '-f', 'null', '-'],
        { timeoutMs: 300 },
      ),
    ).rejects.toThrow('ffmpeg ran longer than 300 ms; stopped.');
    expect(Date.now() - started).toBeLessThan(3_000);
  });

  it('keeps only the end of a long stderr', async () => {
    // -debug_ts writes a line per packet: some 360 KiB for 12 s of MP3.
    const run = await runTool(
      binaries.ffmpeg,
      ['-nostdin', '-debug_ts', '-i', file('tone.mp3'), '-f', 'null', '-'],
      { timeoutMs: 10_000 },
    );
    expect(run.exitCode).toBe(0);
    expect(Buffer.byteLength(run.stderr)).toBe(16 * 1024);
    expect(run.stderr).toMatch(/muxing overhead: unknown\n$/);
  });

  it('reads the last progress time and cleans messages for a job error', () => {
    expect(
      lastProgressSeconds('out_time=N/A\nprogress=continue\nout_time=00:01:02.500000\nprogress=end\n'),
    ).toBe(62.5);
    expect(lastProgressSeconds('')).toBe(0);
    expect(
      toolMessages(
        '[mov,mp4,m4a,3gp,3g2,mj2 @ 0x1d034140] moov atom not found\n/tmp/x/in.m4a: Invalid data found when processing input\nmoov atom not found\n',
        '/tmp/x/in.m4a',
      ),
    ).toBe('moov atom not found; Invalid data found when processing input');
  });
});
