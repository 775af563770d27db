import * as z from 'zod';
import { S3_VECTORS_LIMITS } from './s3-vectors';

/**
 * `POST /v1/search` (CONTRACT section 1): a listener's words find the passage
 * of a published recording that says them, and a URL that plays it from its
 * first word. The schemas here are the one home of the request and the
 * answer: the API validates with them, and the API document, the SDK's types
 * and the CLI are derived from them.
 */

/** The longest query, in characters: a question, not a document. */
export const SEARCH_QUERY_MAX_CHARS = 1000;
/** Hits one search answers at most: within one page of S3 Vectors' QueryVectors (100). */
export const SEARCH_LIMIT_MAX = 50;
export const SEARCH_LIMIT_DEFAULT = 10;

/** What publishing may say of a recording, beside its audio: what search shows and filters by. */
export const LABEL_MAX_CHARS = 64;
export const LABELS_MAX = 10;
export const TITLE_MAX_CHARS = 200;

export const label = z
  .string()
  .min(1)
  .max(LABEL_MAX_CHARS)
  .regex(/^[^\s].*[^\s]$|^[^\s]$/, 'must not start or end with white space');

/**
 * The bytes a vector's filterable metadata holds besides its labels, at
 * their most: the tenant (a tenant id takes at most 64 characters), the
 * item's id, and four numbers (date, passage, start and end), each as long
 * as a number's JSON can be.
 */
const FILTERABLE_BYTES_BESIDE_LABELS =
  utf8Bytes(
    JSON.stringify({
      tenant: 't'.repeat(64),
      item: `med_${'a'.repeat(26)}`,
      date: -Number.MAX_VALUE,
      passage: -Number.MAX_VALUE,
      start: -Number.MAX_VALUE,
      end: -Number.MAX_VALUE,
      labels: [],
    }),
  ) - utf8Bytes('[]');

/**
 * The most a recording's labels may take together, in bytes of their JSON
 * (UTF-8): each vector of its passages keeps them in its filterable metadata,
 * which S3 Vectors measures in bytes, so 64 characters of Chinese take three
 * times what 64 letters do.
 */
export const LABELS_MAX_BYTES = S3_VECTORS_LIMITS.filterableMetadataBytes - FILTERABLE_BYTES_BESIDE_LABELS;

function utf8Bytes(text: string): number {
  return new TextEncoder().encode(text).length;
}

/** A recording's labels: distinct, and within what its vectors can keep. */
export const labelList = z
  .array(label)
  .max(LABELS_MAX)
  .refine((labels) => new Set(labels).size === labels.length, 'must not repeat a label')
  .refine(
    (labels) => utf8Bytes(JSON.stringify(labels)) <= LABELS_MAX_BYTES,
    `must take at most ${LABELS_MAX_BYTES} bytes together (UTF-8, as JSON): each vector of the recording keeps them in its ${S3_VECTORS_LIMITS.filterableMetadataBytes} bytes of filterable metadata`,
  );

export const calendarDate = z.iso.date().describe('A calendar date, YYYY-MM-DD.');

/** A published recording, as search names it: its media item, or the `audio.publish` job that published it. */
const itemId = z
  .string()
  .regex(/^(med|job)_[a-z2-7]{26}$/, 'must be the id of a media item or of an audio.publish job');

export const searchFilter = z
  .strictObject({
    itemIds: z
      .array(itemId)
      .min(1)
      .max(100)
      .optional()
      .describe('Only passages of these recordings (media item ids, or audio.publish job ids).'),
    dateFrom: calendarDate.optional().describe('Only recordings whose date is this day or later.'),
    dateTo: calendarDate.optional().describe('Only recordings whose date is this day or earlier.'),
    labels: z
      .array(label)
      .min(1)
      .max(LABELS_MAX)
      .optional()
      .describe('Only recordings that carry at least one of these labels.'),
  })
  .refine((filter) => !filter.dateFrom || !filter.dateTo || filter.dateFrom <= filter.dateTo, {
    message: 'dateFrom must not be after dateTo',
    path: ['dateTo'],
  })
  .describe("Narrows the search to the tenant's recordings that match every field given.");

export const searchRequest = z
  .strictObject({
    query: z
      .string()
      .trim()
      .min(1, 'must not be empty')
      .max(SEARCH_QUERY_MAX_CHARS)
      .describe('What the listener remembers, in their own words.'),
    limit: z
      .int()
      .min(1)
      .max(SEARCH_LIMIT_MAX)
      .optional()
      .describe(`Hits to answer at most (default ${SEARCH_LIMIT_DEFAULT}).`),
    filter: searchFilter.optional(),
  })
  .describe('A search over the passages of every recording the tenant published.');
export type SearchRequest = z.infer<typeof searchRequest>;

export const searchHit = z
  .strictObject({
    score: z
      .number()
      .describe(
        'How close the passage is to the query, higher is closer: 1 − the cosine distance with a cosine index, 1 / (1 + distance) with a Euclidean one.',
      ),
    item: z.strictObject({
      id: itemId.describe('The recording: its media item, or its audio.publish job.'),
      title: z.string().max(TITLE_MAX_CHARS).optional(),
      speaker: z.string().optional().describe("The media item's speaker."),
      version: z
        .int()
        .min(1)
        .optional()
        .describe("The media item's version the passage is from: its current one."),
      date: calendarDate.describe(
        "The recording's date: the one given when it was published, else the day it was.",
      ),
      labels: z.array(label),
    }),
    passage: z.strictObject({
      index: z.int().min(0).describe("The passage's place in the recording's passages, from 0."),
      start: z.number().min(0).describe('Seconds from the start of the recording.'),
      end: z.number().min(0),
      text: z.string(),
    }),
    playback: z
      .strictObject({
        playlistUrl: z
          .url()
          .describe(
            'The presigned HLS master playlist; a player starts it at `startSeconds` (hls.js: `startPosition`).',
          ),
        startSeconds: z.number().min(0).describe("Where the passage's first word is, in seconds."),
        url: z
          .string()
          .describe('The playlist with a media fragment, `#t=<start>`, the form a browser player takes.'),
      })
      .describe('How to play the passage from its first word.'),
  })
  .describe('One passage a search found.');
export type SearchHit = z.infer<typeof searchHit>;

export const searchResult = z
  .strictObject({
    items: z.array(searchHit).describe('Hits, closest first.'),
  })
  .describe('What a search found.');
export type SearchResult = z.infer<typeof searchResult>;
