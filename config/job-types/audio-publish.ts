import { z } from 'zod';
import type { ProviderRequests } from '../providers';
import { audioSourceInput, deepgramChannels } from './common';
import { OutputInvalidError } from './job-type';

/**
 * `audio.publish` (CONTRACT section 1): a recording becomes an HLS stream and
 * a transcript in timed passages. Unlike the other types it is not one
 * provider submission: compute steps probe, transcode and cut the recording,
 * and each chunk is one Deepgram submission under its own idempotency key
 * (`chunkIdempotencyKey`). These are the type's schemas and its per-chunk
 * provider mapping; the type joins the registry (`./index.ts`) with the
 * workflow branch that runs it.
 */

export const publishInput = audioSourceInput;

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
