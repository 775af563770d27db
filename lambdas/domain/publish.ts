import { mkdir, mkdtemp, readFile, rm } from 'node:fs/promises';
import path from 'node:path';
import { chunkIdempotencyKey } from './chunks';
import { InvalidJobInputError } from './errors';
import { parseMediaPlaylist, rewritePlaylistUris } from './hls';
import type { MediaTools } from './media';
import { jobOutputPrefix, type OutputOwner } from './output-keys';
import { indexPassages, type Passage } from './passages';
import type { InputStore, OutputStore } from './ports';
import { type ChunkTranscript, mergeChunkTranscripts } from './transcript';

// Where a publish step keeps its outputs, for the steps' callers.
export {
  chunkOutputPrefix,
  embeddingOutputPrefix,
  jobOutputPrefix,
  type OutputOwner,
  rootOutputPrefix,
} from './output-keys';

/**
 * The compute steps of `audio.publish`: probe, transcode, split and index.
 * Each one fetches what it needs into a scratch directory of its own, runs
 * the media tools, keeps what it made under the job in the output bucket and
 * answers keys, never bytes (a step's answer travels through Step Functions,
 * whose payloads stop at 256 KiB). Every step is safe to run twice: it writes
 * the same keys again. None of them holds a provider slot; the chunks they
 * cut are submitted by the workflow, one slot each.
 */

/** How `audio.publish` cuts, encodes and bounds a recording (from the settings). */
export interface PublishPlan {
  /** AAC renditions, kbit/s, lowest first. */
  readonly renditionsKbps: readonly number[];
  readonly segmentSeconds: number;
  readonly chunkSeconds: number;
  /** A longer recording fails as `input_too_long` before anything is charged. */
  readonly maxDurationSeconds: number;
  /** A longer recording's compute steps run on Fargate instead of Lambda. */
  readonly lambdaMaxAudioSeconds: number;
}

export interface PublishDeps {
  readonly media: MediaTools;
  readonly outputs: OutputStore;
  readonly inputs: Pick<InputStore, 'downloadUrl'>;
  /** Writes what `url` answers to `file`; throws when it cannot be fetched. */
  readonly download: (url: string, file: string) => Promise<void>;
  /** A directory each step makes its own scratch directory in (Lambda: `/tmp`), and removes after. */
  readonly scratchRoot: string;
  readonly plan: PublishPlan;
  /** Lifetime of the input URL a step fetches an upload through. */
  readonly inputUrlTtlSeconds: number;
}

/** What a compute step needs to know of its job. */
export interface PublishJob {
  readonly id: string;
  readonly tenantId: string;
  readonly input: { readonly audioUrl?: string; readonly audioRef?: string };
}

export type ComputeTarget = 'lambda' | 'fargate';

export interface ProbeResult {
  readonly durationSeconds: number;
  readonly codec: string;
  readonly channels: number;
  /** Where the heavy steps (transcode, split) of this recording run. */
  readonly compute: ComputeTarget;
}

export interface TranscodeResult {
  /** The master playlist's key; the stream is served through `servePlaylists`. */
  readonly playlistKey: string;
  readonly renditions: readonly { readonly bitrateKbps: number; readonly playlistKey: string }[];
}

/** One chunk as the transcription fan-out takes it: where it is, where it sits, and its provider key. */
export interface StoredChunk {
  readonly index: number;
  readonly key: string;
  readonly offsetSeconds: number;
  readonly durationSeconds: number;
  readonly idempotencyKey: string;
}

export interface IndexResult {
  readonly transcriptKey: string;
  /** Inline when they are small, else behind `passagesKey`. */
  readonly passages?: readonly Passage[];
  readonly passagesKey?: string;
}

/** The job error code of a recording longer than `PUBLISH_MAX_DURATION_SECONDS`. */
export const INPUT_TOO_LONG = 'input_too_long';

/**
 * Passages kept on the job itself up to this size of JSON; larger ones go to
 * `passages.json`. The job is one DynamoDB item (400 KB at most) and passes
 * through Step Functions (256 KiB): an hour of speech in 30 to 60 s passages
 * is about 40 KB, so only recordings of several hours leave the job.
 */
export const INLINE_PASSAGES_MAX_BYTES = 64 * 1024;

/** Lambda up to the threshold (inclusive), Fargate above it. */
export const computeTargetOf = (durationSeconds: number, lambdaMaxAudioSeconds: number): ComputeTarget =>
  durationSeconds <= lambdaMaxAudioSeconds ? 'lambda' : 'fargate';

/**
 * Reads the recording's duration, codec and channels, after a decode to its
 * end (see the media adapter): a file that is not decodable audio fails here
 * as `input_invalid`, and one longer than the plan allows as
 * `input_too_long`, before any provider is asked for anything.
 */
export async function probeStep(deps: PublishDeps, job: PublishJob): Promise<ProbeResult> {
  return withInput(deps, job, async (file) => {
    const probe = await deps.media.probe(file);
    if (probe.durationSeconds > deps.plan.maxDurationSeconds) {
      throw new InvalidJobInputError(
        `[${INPUT_TOO_LONG}] The recording lasts ${Math.round(probe.durationSeconds)} s; the most accepted is ${deps.plan.maxDurationSeconds} s.`,
        INPUT_TOO_LONG,
      );
    }
    return {
      durationSeconds: probe.durationSeconds,
      codec: probe.codec,
      channels: probe.channels,
      compute: computeTargetOf(probe.durationSeconds, deps.plan.lambdaMaxAudioSeconds),
    };
  });
}

/** The recording as an HLS stream under `<job>/hls/`: every rendition, segment and playlist. */
export async function transcodeStep(deps: PublishDeps, job: PublishJob): Promise<TranscodeResult> {
  return withInput(deps, job, async (file, scratch) => {
    const outDir = path.join(scratch, 'hls');
    await mkdir(outDir);
    const hls = await deps.media.transcodeToHls(file, outDir, {
      renditionsKbps: deps.plan.renditionsKbps,
      segmentSeconds: deps.plan.segmentSeconds,
    });
    const prefix = `${jobOutputPrefix(job)}hls/`;
    // Playlists last: a stream whose master exists has every segment it names.
    const playlists = new Set([hls.masterPlaylist, ...hls.renditions.map((r) => r.playlist)]);
    const ordered = [...hls.files.filter((f) => !playlists.has(f)), ...playlists];
    for (const relative of ordered) {
      await deps.outputs.putOutput(
        `${prefix}${relative}`,
        await readFile(path.join(outDir, ...relative.split('/'))),
        contentTypeOf(relative),
      );
    }
    return {
      playlistKey: `${prefix}${hls.masterPlaylist}`,
      renditions: hls.renditions.map((r) => ({
        bitrateKbps: r.bitrateKbps,
        playlistKey: `${prefix}${r.playlist}`,
      })),
    };
  });
}

/**
 * The recording cut into `chunkSeconds` pieces (see `planChunks`) under
 * `<job>/chunks/`, each with the provider idempotency key derived from the
 * job's, so a retried chunk submission reuses its key.
 */
export async function splitStep(deps: PublishDeps, job: PublishJob, jobKey: string): Promise<StoredChunk[]> {
  return withInput(deps, job, async (file, scratch) => {
    const outDir = path.join(scratch, 'chunks');
    await mkdir(outDir);
    const chunks = await deps.media.splitIntoChunks(file, outDir, deps.plan.chunkSeconds);
    const stored: StoredChunk[] = [];
    for (const chunk of chunks) {
      const key = `${jobOutputPrefix(job)}chunks/${path.basename(chunk.path)}`;
      await deps.outputs.putOutput(key, await readFile(chunk.path), contentTypeOf(chunk.path));
      stored.push({
        index: chunk.index,
        key,
        offsetSeconds: chunk.offsetSeconds,
        durationSeconds: chunk.durationSeconds,
        idempotencyKey: chunkIdempotencyKey(jobKey, chunk.index),
      });
    }
    return stored;
  });
}

/**
 * The chunks' transcripts merged with their offsets into one transcript of
 * the recording (`transcript.json`), and split into timed passages: on the
 * job when small, else in `passages.json`.
 */
export async function indexStep(
  outputs: Pick<OutputStore, 'putOutput'>,
  job: Pick<PublishJob, 'id' | 'tenantId'>,
  chunks: readonly ChunkTranscript[],
  language: string,
): Promise<IndexResult> {
  const transcript = mergeChunkTranscripts(chunks);
  const passages = indexPassages(transcript.words);
  const prefix = jobOutputPrefix(job);
  const transcriptKey = `${prefix}transcript.json`;
  await outputs.putOutput(
    transcriptKey,
    JSON.stringify({ language, text: transcript.text, words: transcript.words, passages }),
    'application/json',
  );
  const passagesJson = JSON.stringify(passages);
  if (Buffer.byteLength(passagesJson) <= INLINE_PASSAGES_MAX_BYTES) return { transcriptKey, passages };
  const passagesKey = `${prefix}passages.json`;
  await outputs.putOutput(passagesKey, passagesJson, 'application/json');
  return { transcriptKey, passagesKey };
}

/** Deletes everything the job kept: a job failed by its input leaves no partial outputs behind. */
export const discardOutputs = (
  outputs: Pick<OutputStore, 'deleteOutputs'>,
  job: OutputOwner,
): Promise<number> => outputs.deleteOutputs(jobOutputPrefix(job));

/** The served stream: what a client plays, each URL presigned and short-lived. */
export interface ServedStream {
  readonly playlistUrl: string;
  readonly renditions: readonly { readonly bitrateKbps: number; readonly playlistUrl: string }[];
}

/**
 * Makes a stored stream playable from a private bucket by a player that
 * sends no headers. A relative URI cannot carry a signature, so each media
 * playlist is rewritten with a presigned URL for its init section and every
 * segment, and the master with presigned URLs of those rewritten playlists;
 * the rewritten copies are kept under `<job>/served/` (written again on each
 * call: a URL handed out earlier keeps working until its own expiry, and
 * reads fresh signatures). URLs expire with the output URL lifetime, and
 * only a request that may read the job gets any. Undefined when a playlist
 * is gone: the stream was removed (its media item deleted, or its version
 * retired), and nothing is served or written for it.
 */
export async function servePlaylists(
  outputs: Pick<OutputStore, 'getOutput' | 'putOutput' | 'outputUrl'>,
  job: Pick<PublishJob, 'id' | 'tenantId'>,
  stream: TranscodeResult,
): Promise<ServedStream | undefined> {
  const hlsPrefix = `${jobOutputPrefix(job)}hls/`;
  const servedPrefix = `${jobOutputPrefix(job)}served/`;
  const servedKeyOf = (key: string) => `${servedPrefix}${key.slice(hlsPrefix.length)}`;
  if (!stream.playlistKey.startsWith(hlsPrefix)) {
    throw new RangeError(`The playlist ${stream.playlistKey} is not under the job's stream.`);
  }
  // Every playlist is read before any served copy is written, so a removed stream gets no copy back.
  const texts = await Promise.all(
    [stream.playlistKey, ...stream.renditions.map((r) => r.playlistKey)].map((key) => readText(outputs, key)),
  );
  if (texts.some((text) => text === undefined)) return undefined;
  const [masterText, ...renditionTexts] = texts as string[];
  const servedMedia = new Map<string, string>();
  for (const [index, rendition] of stream.renditions.entries()) {
    const text = renditionTexts[index] as string;
    const base = path.posix.dirname(rendition.playlistKey);
    const uris = [parseMediaPlaylist(text).initUri, ...parseMediaPlaylist(text).segments.map((s) => s.uri)];
    const signed = new Map<string, string>();
    for (const uri of uris) {
      if (uri !== undefined) signed.set(uri, await outputs.outputUrl(resolveUnder(base, uri, hlsPrefix)));
    }
    const served = servedKeyOf(rendition.playlistKey);
    await outputs.putOutput(
      served,
      rewritePlaylistUris(text, (uri) => signedOrThrow(signed, uri)),
      HLS_TYPE,
    );
    servedMedia.set(rendition.playlistKey, await outputs.outputUrl(served));
  }
  const masterBase = path.posix.dirname(stream.playlistKey);
  const master = rewritePlaylistUris(masterText as string, (uri) => {
    const url = servedMedia.get(resolveUnder(masterBase, uri, hlsPrefix));
    if (url === undefined) throw new RangeError(`The master playlist names ${uri}, which is no rendition.`);
    return url;
  });
  const servedMaster = servedKeyOf(stream.playlistKey);
  await outputs.putOutput(servedMaster, master, HLS_TYPE);
  return {
    playlistUrl: await outputs.outputUrl(servedMaster),
    renditions: stream.renditions.map((r) => ({
      bitrateKbps: r.bitrateKbps,
      playlistUrl: servedMedia.get(r.playlistKey) as string,
    })),
  };
}

const HLS_TYPE = 'application/vnd.apple.mpegurl';

const CONTENT_TYPES: Readonly<Record<string, string>> = {
  '.m3u8': HLS_TYPE,
  '.mp4': 'audio/mp4',
  '.m4s': 'audio/iso.segment',
  '.flac': 'audio/flac',
};

const contentTypeOf = (file: string): string =>
  CONTENT_TYPES[path.extname(file).toLowerCase()] ?? 'application/octet-stream';

/**
 * A playlist's relative URI as a key under `root`: a URI that is absolute or
 * climbs out of the job's stream is refused, so a playlist can never get
 * another object signed.
 */
function resolveUnder(base: string, uri: string, root: string): string {
  if (/^[a-z][a-z0-9+.-]*:/i.test(uri) || uri.startsWith('/')) {
    throw new RangeError(`The playlist URI ${uri} is not relative.`);
  }
  const key = path.posix.normalize(`${base}/${uri}`);
  if (!key.startsWith(root)) throw new RangeError(`The playlist URI ${uri} leaves the job's stream.`);
  return key;
}

function signedOrThrow(signed: ReadonlyMap<string, string>, uri: string): string {
  const url = signed.get(uri);
  if (url === undefined) throw new RangeError(`The playlist names ${uri}, which was not signed.`);
  return url;
}

async function readText(outputs: Pick<OutputStore, 'getOutput'>, key: string): Promise<string | undefined> {
  const bytes = await outputs.getOutput(key);
  return bytes && new TextDecoder().decode(bytes);
}

/** Runs `work` on the job's input fetched into a scratch directory of its own, removed afterwards. */
async function withInput<T>(
  deps: PublishDeps,
  job: PublishJob,
  work: (file: string, scratch: string) => Promise<T>,
): Promise<T> {
  const { audioUrl, audioRef } = job.input;
  const url =
    audioUrl ??
    (audioRef && (await deps.inputs.downloadUrl(job.tenantId, audioRef, deps.inputUrlTtlSeconds)));
  if (!url) throw new Error(`Job ${job.id} names no audio.`);
  const scratch = await mkdtemp(path.join(deps.scratchRoot, 'publish-'));
  try {
    const file = path.join(scratch, 'input');
    await deps.download(url, file);
    return await work(file, scratch);
  } finally {
    await rm(scratch, { recursive: true, force: true });
  }
}
