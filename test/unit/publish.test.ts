import { copyFile, mkdir, mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import {
  FfmpegMedia,
  lastProgressSeconds,
  mediaBinaries,
  runTool,
} from '../../lambdas/adapters/ffmpeg-media';
import { InvalidJobInputError } from '../../lambdas/domain/errors';
import { parseMediaPlaylist } from '../../lambdas/domain/hls';
import { INPUT_INVALID, UndecodableAudioError } from '../../lambdas/domain/media';
import {
  computeTargetOf,
  discardOutputs,
  INLINE_PASSAGES_MAX_BYTES,
  INPUT_TOO_LONG,
  indexStep,
  jobOutputPrefix,
  type PublishDeps,
  type PublishPlan,
  probeStep,
  type ServedStream,
  servePlaylists,
  splitStep,
  transcodeStep,
} from '../../lambdas/domain/publish';
import type { TranscriptWord } from '../../lambdas/domain/transcript';
import { generateTestAudio } from '../../local/harness/test-audio';
import { MemoryOutputs } from './support/memory-ports';

/** The compute steps of audio.publish over the real ffmpeg, with outputs in memory. */

const SECONDS = 20;
const PLAN: PublishPlan = {
  renditionsKbps: [64, 128],
  segmentSeconds: 6,
  chunkSeconds: 8,
  maxDurationSeconds: 3600,
  lambdaMaxAudioSeconds: 60,
};
const JOB = { id: 'job_1', tenantId: 'acme', input: { audioRef: 'upl_0123456789012345678901' } };
const OTHER_JOB_KEY = 'outputs/acme/job_2/transcript.json';

let dir: string;
let scratchRoot: string;

beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'longhaul-publish-'));
  scratchRoot = path.join(dir, 'scratch');
  await generateTestAudio(path.join(dir, 'sermon.m4a'), { seconds: SECONDS, kind: 'speechlike' });
  await writeFile(path.join(dir, 'notes.txt'), 'not audio at all\n');
  await writeFile(path.join(dir, 'empty.m4a'), '');
});

afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

function setUp(input: string, plan: PublishPlan = PLAN) {
  const outputs = new MemoryOutputs();
  outputs.objects.set(OTHER_JOB_KEY, { body: '{}', contentType: 'application/json' });
  const downloads: string[] = [];
  const deps: PublishDeps = {
    media: new FfmpegMedia(),
    outputs,
    inputs: { downloadUrl: async (tenant, ref, ttl) => `https://inputs.example/${tenant}/${ref}?ttl=${ttl}` },
    download: async (url, file) => {
      downloads.push(url);
      await copyFile(path.join(dir, input), file);
    },
    scratchRoot,
    plan,
    inputUrlTtlSeconds: 900,
  };
  return { deps, outputs, downloads };
}

const keysOf = (outputs: MemoryOutputs) =>
  [...outputs.objects.keys()].filter((k) => k !== OTHER_JOB_KEY).sort();
const textOf = (outputs: MemoryOutputs, key: string) => {
  const body = outputs.objects.get(key)?.body;
  if (body === undefined) throw new Error(`No output ${key}.`);
  return typeof body === 'string' ? body : new TextDecoder().decode(body);
};

beforeEach(async () => {
  await rm(scratchRoot, { recursive: true, force: true });
  await mkdir(scratchRoot, { recursive: true });
});
afterEach(async () => {
  // Every step removes its scratch directory, whatever happened.
  expect(await readdir(scratchRoot)).toEqual([]);
});

describe('computeTargetOf', () => {
  it.each([
    [0.5, 60, 'lambda'],
    [60, 60, 'lambda'],
    [60.01, 60, 'fargate'],
    [1, 0, 'fargate'],
  ] as const)('a %s s recording with a %s s Lambda budget runs on %s', (duration, budget, target) => {
    expect(computeTargetOf(duration, budget)).toBe(target);
  });
});

describe('probeStep', () => {
  it("reads the recording through the upload's input URL and chooses Lambda within the budget", async () => {
    const { deps, outputs, downloads } = setUp('sermon.m4a');
    const probe = await probeStep(deps, JOB);
    expect(probe).toMatchObject({ codec: 'aac', channels: 1, compute: 'lambda' });
    expect(probe.durationSeconds).toBeCloseTo(SECONDS, 0);
    expect(downloads).toEqual(['https://inputs.example/acme/upl_0123456789012345678901?ttl=900']);
    expect(keysOf(outputs)).toEqual([]);
  });

  it('chooses Fargate for a recording longer than the Lambda budget, and fetches an audioUrl as it is', async () => {
    const { deps, downloads } = setUp('sermon.m4a', { ...PLAN, lambdaMaxAudioSeconds: 10 });
    const probe = await probeStep(deps, { ...JOB, input: { audioUrl: 'https://media.example/s.m4a' } });
    expect(probe.compute).toBe('fargate');
    expect(downloads).toEqual(['https://media.example/s.m4a']);
  });

  it.each(['notes.txt', 'empty.m4a'])('fails %s as input_invalid, writing nothing', async (input) => {
    const { deps, outputs } = setUp(input);
    const failure = probeStep(deps, JOB);
    await expect(failure).rejects.toBeInstanceOf(UndecodableAudioError);
    await expect(failure).rejects.toMatchObject({ code: INPUT_INVALID });
    expect(keysOf(outputs)).toEqual([]);
  });

  it('fails a recording longer than the most accepted as input_too_long', async () => {
    const { deps } = setUp('sermon.m4a', { ...PLAN, maxDurationSeconds: 15, lambdaMaxAudioSeconds: 15 });
    const failure = probeStep(deps, JOB);
    await expect(failure).rejects.toBeInstanceOf(InvalidJobInputError);
    await expect(failure).rejects.toMatchObject({
      code: INPUT_TOO_LONG,
      message: `[${INPUT_TOO_LONG}] The recording lasts 20 s; the most accepted is 15 s.`,
    });
  });
});

describe('transcodeStep and servePlaylists', () => {
  it('keeps the stream under the job and serves it with every URI presigned', async () => {
    const { deps, outputs } = setUp('sermon.m4a');
    const stream = await transcodeStep(deps, JOB);
    const hls = `${jobOutputPrefix(JOB)}hls/`;
    expect(stream).toEqual({
      playlistKey: `${hls}master.m3u8`,
      renditions: [
        { bitrateKbps: 64, playlistKey: `${hls}64k/playlist.m3u8` },
        { bitrateKbps: 128, playlistKey: `${hls}128k/playlist.m3u8` },
      ],
    });
    const stored = keysOf(outputs);
    expect(stored.every((key) => key.startsWith(hls))).toBe(true);
    for (const rendition of stream.renditions) {
      const playlist = parseMediaPlaylist(textOf(outputs, rendition.playlistKey));
      const base = path.posix.dirname(rendition.playlistKey);
      const segmentSeconds = playlist.segments.reduce((sum, s) => sum + s.durationSeconds, 0);
      expect(segmentSeconds).toBeCloseTo(SECONDS, 0);
      for (const uri of [playlist.initUri, ...playlist.segments.map((s) => s.uri)]) {
        expect(stored).toContain(`${base}/${uri}`);
      }
    }
    expect(outputs.objects.get(stream.playlistKey)?.contentType).toBe('application/vnd.apple.mpegurl');

    const servedStream = (await servePlaylists(outputs, JOB, stream)) as ServedStream;
    const served = `${jobOutputPrefix(JOB)}served/`;
    expect(servedStream).toEqual({
      playlistUrl: `https://outputs.example/${served}master.m3u8`,
      renditions: [
        { bitrateKbps: 64, playlistUrl: `https://outputs.example/${served}64k/playlist.m3u8` },
        { bitrateKbps: 128, playlistUrl: `https://outputs.example/${served}128k/playlist.m3u8` },
      ],
    });
    const master = textOf(outputs, `${served}master.m3u8`);
    expect(master.split('\n').filter((line) => line !== '' && !line.startsWith('#'))).toEqual(
      servedStream.renditions.map((r) => r.playlistUrl),
    );
    for (const rendition of stream.renditions) {
      const original = parseMediaPlaylist(textOf(outputs, rendition.playlistKey));
      const rewritten = parseMediaPlaylist(
        textOf(outputs, rendition.playlistKey.replace('/hls/', '/served/')),
      );
      const base = path.posix.dirname(rendition.playlistKey);
      expect(rewritten.initUri).toBe(`https://outputs.example/${base}/${original.initUri}`);
      expect(rewritten.segments).toEqual(
        original.segments.map((s) => ({ ...s, uri: `https://outputs.example/${base}/${s.uri}` })),
      );
    }
  });

  it('serves nothing, and writes nothing, once the stream was removed', async () => {
    const { deps, outputs } = setUp('sermon.m4a');
    const stream = await transcodeStep(deps, JOB);
    // Removed as a deleted item's outputs are: a rendition's playlist is gone, the rest still there.
    outputs.objects.delete(stream.renditions[1]?.playlistKey as string);
    const before = [...outputs.objects.keys()].sort();

    expect(await servePlaylists(outputs, JOB, stream)).toBeUndefined();
    expect([...outputs.objects.keys()].sort()).toEqual(before);
  });

  it('plays in ffmpeg from presigned URLs alone, for as long as the recording lasts', async () => {
    const { deps, outputs } = setUp('sermon.m4a');
    const stream = await transcodeStep(deps, JOB);
    // A bucket that answers only signed requests: every URL a player follows must carry its signature.
    const requests: string[] = [];
    const server = createServer((request, response) => {
      const url = new URL(request.url ?? '/', 'http://bucket');
      requests.push(url.pathname);
      const object = outputs.objects.get(decodeURIComponent(url.pathname.slice(1)));
      if (url.searchParams.get('X-Amz-Signature') !== 'signed' || !object || request.headers.authorization) {
        response.statusCode = 403;
        response.end();
        return;
      }
      response.setHeader('content-type', object.contentType);
      response.end(object.body);
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
      const bucket = Object.assign(Object.create(outputs) as MemoryOutputs, {
        outputUrl: async (key: string) => `${origin}/${encodeURIComponent(key)}?X-Amz-Signature=signed`,
      });
      const { playlistUrl } = (await servePlaylists(bucket, JOB, stream)) as ServedStream;
      const run = await runTool(
        mediaBinaries().ffmpeg,
        [
          '-nostdin',
          '-v',
          'error',
          '-i',
          playlistUrl,
          '-map',
          '0:a:0',
          '-f',
          'null',
          '-progress',
          'pipe:1',
          '-',
        ],
        { timeoutMs: 60_000 },
      );
      expect({ exitCode: run.exitCode, stderr: run.stderr }).toEqual({ exitCode: 0, stderr: '' });
      // Within one segment of the recording.
      expect(Math.abs(lastProgressSeconds(run.stdout) - SECONDS)).toBeLessThan(PLAN.segmentSeconds);
      expect(requests.some((path) => path.includes('served'))).toBe(true);
      expect(requests.some((path) => path.endsWith('.m4s'))).toBe(true);
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
  });

  it('signs nothing a playlist names outside the job’s stream', async () => {
    const outputs = new MemoryOutputs();
    const hls = `${jobOutputPrefix(JOB)}hls/`;
    outputs.objects.set(`${hls}64k/playlist.m3u8`, {
      body: '#EXTM3U\n#EXT-X-TARGETDURATION:6\n#EXTINF:6.0,\n../../../job_2/transcript.json\n',
      contentType: 'application/vnd.apple.mpegurl',
    });
    outputs.objects.set(`${hls}master.m3u8`, { body: '#EXTM3U\n64k/playlist.m3u8\n', contentType: 'x' });
    await expect(
      servePlaylists(outputs, JOB, {
        playlistKey: `${hls}master.m3u8`,
        renditions: [{ bitrateKbps: 64, playlistKey: `${hls}64k/playlist.m3u8` }],
      }),
    ).rejects.toThrow("The playlist URI ../../../job_2/transcript.json leaves the job's stream.");
  });
});

describe('splitStep', () => {
  it("cuts the recording into chunks under the job, each keyed from the job's key", async () => {
    const { deps, outputs } = setUp('sermon.m4a');
    const chunks = await splitStep(deps, JOB, 'order-42');
    const prefix = `${jobOutputPrefix(JOB)}chunks/`;
    expect(
      chunks.map(({ index, offsetSeconds, idempotencyKey }) => ({ index, offsetSeconds, idempotencyKey })),
    ).toEqual([
      { index: 0, offsetSeconds: 0, idempotencyKey: 'order-42:chunk-0' },
      { index: 1, offsetSeconds: 8, idempotencyKey: 'order-42:chunk-1' },
      { index: 2, offsetSeconds: 16, idempotencyKey: 'order-42:chunk-2' },
    ]);
    expect(chunks.reduce((sum, c) => sum + c.durationSeconds, 0)).toBeCloseTo(SECONDS, 0);
    expect(keysOf(outputs)).toEqual(chunks.map((c) => c.key));
    expect(chunks.every((c) => c.key.startsWith(prefix))).toBe(true);
    expect(chunks.map((c) => outputs.objects.get(c.key)?.contentType)).toEqual(Array(3).fill('audio/flac'));
  });
});

describe('indexStep', () => {
  /** One sentence every 10 s, of `words` words a second apart. */
  const sentences = (count: number, offset = 0): TranscriptWord[] =>
    Array.from({ length: count }, (_, s) =>
      Array.from({ length: 8 }, (_, w) => ({
        word: 'amen',
        punctuated_word: w === 7 ? 'amen.' : 'amen',
        start: offset + s * 10 + w,
        end: offset + s * 10 + w + 0.5,
      })),
    ).flat();

  it('merges the chunks at their offsets and keeps small passages on the job', async () => {
    const outputs = new MemoryOutputs();
    const result = await indexStep(
      outputs,
      JOB,
      [
        { offsetSeconds: 60, words: sentences(6) },
        { offsetSeconds: 0, words: sentences(6) },
      ],
      'en',
    );
    expect(result).toEqual({
      transcriptKey: `${jobOutputPrefix(JOB)}transcript.json`,
      passages: [
        // A passage ends at the first sentence end once it is 30 s long: four sentences each.
        { start: 0, end: 37.5, text: expect.stringMatching(/^amen/) },
        { start: 40, end: 77.5, text: expect.any(String) },
        { start: 80, end: 117.5, text: expect.any(String) },
      ],
    });
    const transcript = JSON.parse(textOf(outputs, result.transcriptKey));
    expect(transcript.words).toHaveLength(96);
    expect(transcript.words[48].start).toBe(60);
    expect(transcript.passages).toEqual(result.passages);
  });

  it('moves passages past the inline size to passages.json', async () => {
    const outputs = new MemoryOutputs();
    // About 120 bytes of JSON per 30 s passage with short words: enough hours to pass the limit.
    const words = sentences(Math.ceil((INLINE_PASSAGES_MAX_BYTES / 100) * 3));
    const result = await indexStep(outputs, JOB, [{ offsetSeconds: 0, words }], 'en');
    expect(result).toEqual({
      transcriptKey: `${jobOutputPrefix(JOB)}transcript.json`,
      passagesKey: `${jobOutputPrefix(JOB)}passages.json`,
    });
    const passages = JSON.parse(textOf(outputs, `${jobOutputPrefix(JOB)}passages.json`));
    expect(Buffer.byteLength(JSON.stringify(passages))).toBeGreaterThan(INLINE_PASSAGES_MAX_BYTES);
  });
});

describe('discardOutputs', () => {
  it("deletes the job's outputs and no other job's", async () => {
    const { deps, outputs } = setUp('sermon.m4a');
    const chunks = await splitStep(deps, JOB, 'order-42');
    await expect(discardOutputs(outputs, JOB)).resolves.toBe(chunks.length);
    expect([...outputs.objects.keys()]).toEqual([OTHER_JOB_KEY]);
  });
});
