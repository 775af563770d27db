import * as z from 'zod';
import type { ProviderRequests } from '../providers';
import { calendarDate, labelList, TITLE_MAX_CHARS } from '../search';
import { audioSourceFields, deepgramChannels, languageTag, oneAudioSource } from './common';
import { defineJobType, jsonFile, OutputInvalidError, type ProviderBinding } from './job-type';

/**
 * `audio.publish` (CONTRACT section 1): a recording becomes an HLS stream and
 * a transcript in timed passages. Unlike the other types it is not one
 * provider submission: compute steps probe, transcode and cut the recording,
 * and each chunk is transcribed by a job of its own, `audio.publish.chunk`,
 * made by the workflow under the chunk's idempotency key
 * (`chunkIdempotencyKey`), so it waits in its tenant's line, holds a provider
 * slot and converges like any other job.
 */

export const publishInput = z
  .strictObject({
    ...audioSourceFields,
    title: z.string().min(1).max(TITLE_MAX_CHARS).optional().describe('What search shows of the recording.'),
    date: calendarDate
      .optional()
      .describe('When it was preached or recorded; search filters by it. Default: the day it is published.'),
    labels: labelList
      .optional()
      .describe("The recording's own labels (a series, a speaker, a place); search filters by them."),
  })
  .refine(...oneAudioSource);

const passage = z.object({
  start: z.number().min(0).describe('Seconds from the start of the recording.'),
  end: z.number().min(0),
  text: z.string(),
});

export const publishResult = z
  .strictObject({
    durationSeconds: z.number().positive().describe('Length of the recording, as probed.'),
    playlistUrl: z
      .url()
      .describe(
        'Presigned URL of the HLS master playlist; every playlist and segment it leads to is presigned too, so it plays without extra headers until the URLs expire.',
      ),
    transcriptUrl: z.url().describe('Presigned GET URL of the whole transcript (JSON, with word times).'),
    passages: z
      .array(passage)
      .optional()
      .describe(
        'The transcript in passages of about 30 to 60 s, when they are small enough to keep on the job.',
      ),
    passagesUrl: z
      .url()
      .optional()
      .describe('Presigned GET URL of the passages when they are not on the job.'),
    searchable: z
      .boolean()
      .optional()
      .describe('Whether its passages are in the search index (POST /v1/search finds them).'),
    renditions: z
      .array(
        z.strictObject({
          bitrateKbps: z.int().positive(),
          playlistUrl: z.url().describe("Presigned URL of the rendition's media playlist."),
        }),
      )
      .min(1)
      .describe('The AAC renditions, lowest bit rate first.'),
  })
  .refine((result) => (result.passages === undefined) !== (result.passagesUrl === undefined), {
    message: 'exactly one of passages or passagesUrl is present',
  })
  .describe('Result of an audio.publish job.');

/**
 * The Deepgram request of one chunk: the chunk's presigned URL, word times
 * (the merge moves them by the chunk's offset) and punctuation (passages end
 * on sentences). The language is the job's, or detected per chunk.
 */
export function deepgramChunkRequest(
  chunkUrl: string,
  language: string | undefined,
): ProviderRequests['deepgram'] {
  return {
    url: chunkUrl,
    options: {
      model: 'nova-3',
      smart_format: true,
      punctuate: true,
      ...(language ? { language } : { detect_language: true }),
    },
  };
}

const deepgramWords = z.object({
  results: z.object({
    channels: deepgramChannels(
      z.object({
        words: z.array(
          z.looseObject({
            word: z.string(),
            start: z.number().min(0),
            end: z.number().min(0),
            punctuated_word: z.string().optional(),
          }),
        ),
      }),
    ),
  }),
});

/** A chunk's words, times from the chunk's start, and the language Deepgram heard. */
export function chunkWordsFromDeepgram(raw: unknown): {
  readonly words: z.infer<
    typeof deepgramWords
  >['results']['channels'][number]['alternatives'][number]['words'];
  readonly language?: string;
} {
  const parsed = deepgramWords.safeParse(raw);
  const channel = parsed.data?.results.channels[0];
  const best = channel?.alternatives[0];
  if (!channel || !best) throw new OutputInvalidError('Deepgram returned no words for a chunk.');
  return { words: best.words, ...(channel.detected_language ? { language: channel.detected_language } : {}) };
}

/** A chunk job's input: the chunk the parent job cut (an output key of the parent) and the language asked for. */
const chunkInput = z.strictObject({
  chunkKey: z.string().min(1).max(1024),
  language: languageTag.optional(),
});

/** Where a chunk's transcript is kept: the provider's answer as it came, read by the parent's index step. */
export const CHUNK_TRANSCRIPT_FILE = 'transcript.json';

/** How a chunk runs on each provider: the chunk's URL out, its words (checked) kept as they came. */
const chunkProviders: { readonly deepgram: ProviderBinding<'deepgram'> } = {
  deepgram: {
    async request(raw, context) {
      const { chunkKey, language } = chunkInput.parse(raw);
      return deepgramChunkRequest(await context.outputUrl(chunkKey), language);
    },
    output(raw) {
      // A chunk without words fails here, as output_invalid, rather than in the parent's index step.
      chunkWordsFromDeepgram(raw);
      return {
        files: [jsonFile('transcript', CHUNK_TRANSCRIPT_FILE, raw)],
        result: {},
      };
    },
  },
};

/** One chunk of an `audio.publish` job, transcribed; made by the parent's workflow only. */
export const audioPublishChunk = defineJobType({
  name: 'audio.publish.chunk',
  description: 'One chunk of an audio.publish recording, transcribed (made by its workflow).',
  input: chunkInput,
  result: z.strictObject({ transcriptUrl: z.url() }),
  schemaNames: { input: 'AudioPublishChunkInput', result: 'AudioPublishChunkResult' },
  provider: 'deepgram',
  providers: chunkProviders,
  internal: true,
});

/** The longest an audio.publish job may run: its compute steps, then every chunk's wait for a slot and its provider. */
export const PUBLISH_TIMEOUT_MS = 24 * 60 * 60 * 1000;

export default defineJobType({
  name: 'audio.publish',
  description: 'A recording published as an HLS stream, with a timed transcript in passages.',
  input: publishInput,
  result: publishResult,
  schemaNames: { input: 'AudioPublishInput', result: 'AudioPublishResult' },
  file: { refField: 'audioRef', urlField: 'audioUrl', mediaTypes: 'audio/*' },
  provider: 'deepgram',
  // The providers its chunks can run on: the job itself sends nothing to a provider.
  providers: chunkProviders,
  flow: 'publish',
  timeoutMs: PUBLISH_TIMEOUT_MS,
});
