import * as z from 'zod';
import { audioSourceFields, languageTag, oneAudioSource } from './job-types/common';
import { calendarDate, label, labelList, TITLE_MAX_CHARS } from './search';

/**
 * Media items (CONTRACT section 1, the sermon library): the thing a tenant
 * publishes, which outlives any one recording of it. Each recording is a
 * version, published by an `audio.publish` job; the item's current version
 * switches only when a newer one has fully succeeded. The schemas here are
 * the one home of the requests and answers: the API validates with them, and
 * the API document, the SDK's types and the CLI are derived from them.
 */

export const MEDIA_ID_PATTERN = /^med_[a-z2-7]{26}$/;
export const mediaId = z.string().regex(MEDIA_ID_PATTERN, 'must be a media item id');

export const SPEAKER_MAX_CHARS = 200;
/** Items one page of `GET /v1/media` answers at most. */
export const MEDIA_PAGE_MAX = 100;
export const MEDIA_PAGE_DEFAULT = 20;

const metadataFields = {
  title: z.string().trim().min(1).max(TITLE_MAX_CHARS).describe('What listeners and search see of it.'),
  speaker: z.string().trim().min(1).max(SPEAKER_MAX_CHARS).optional().describe('Who preached or spoke.'),
  date: calendarDate.optional().describe('When it was preached or recorded; search filters by it.'),
  labels: labelList.optional().describe('A series, a place, a topic; search filters by them.'),
};

export const createMediaRequest = z
  .strictObject(metadataFields)
  .describe('A new media item: its metadata. Its audio comes as versions (`POST /v1/media/{id}/versions`).');
export type CreateMediaRequest = z.infer<typeof createMediaRequest>;

export const updateMediaRequest = z
  .strictObject({
    title: metadataFields.title.optional(),
    speaker: metadataFields.speaker.unwrap().nullable().optional().describe('`null` removes it.'),
    date: metadataFields.date.unwrap().nullable().optional().describe('`null` removes it.'),
    labels: labelList.optional().describe('Replaces the labels.'),
  })
  .refine((patch) => Object.keys(patch).length > 0, 'name at least one field to change')
  .describe(
    'A metadata change: what search shows and filters by changes without transcoding, transcribing or embedding again.',
  );
export type UpdateMediaRequest = z.infer<typeof updateMediaRequest>;

export const createVersionRequest = z
  .strictObject({ ...audioSourceFields, language: languageTag.optional() })
  .refine(...oneAudioSource)
  .describe('A new recording of the item: an upload (`audioRef`) or an https URL.');
export type CreateVersionRequest = z.infer<typeof createVersionRequest>;

export const listMediaQuery = z.strictObject({
  label: label.optional().describe('Only items that carry this label.'),
  dateFrom: calendarDate.optional().describe('Only items dated this day or later.'),
  dateTo: calendarDate.optional().describe('Only items dated this day or earlier.'),
  limit: z.coerce.number().int().min(1).max(MEDIA_PAGE_MAX).optional(),
  cursor: z.string().min(1).max(2048).optional().describe('`nextCursor` of the previous page.'),
});
export type ListMediaQuery = z.infer<typeof listMediaQuery>;

export const MEDIA_VERSION_STATUSES = [
  'publishing',
  'published',
  'failed',
  'superseded',
  'canceled',
] as const;

export const mediaVersionView = z
  .strictObject({
    number: z.int().min(1).describe('1 for the first recording, then one more for each.'),
    jobId: z.string().describe('The audio.publish job that publishes it.'),
    status: z.enum(MEDIA_VERSION_STATUSES),
    createdAt: z.iso.datetime(),
    publishedAt: z.iso.datetime().optional(),
    durationSeconds: z.number().positive().optional(),
    playlistUrl: z.url().optional().describe('The presigned HLS master playlist of this version.'),
    transcriptUrl: z.url().optional(),
    passages: z.int().min(0).optional().describe('How many passages its transcript has.'),
    searchable: z.boolean().optional().describe('Whether search finds its passages.'),
  })
  .describe('One recording of a media item.');
export type MediaVersionView = z.infer<typeof mediaVersionView>;

export const mediaItemView = z
  .strictObject({
    id: mediaId,
    title: z.string(),
    speaker: z.string().optional(),
    date: calendarDate.optional(),
    labels: z.array(label),
    createdAt: z.iso.datetime(),
    updatedAt: z.iso.datetime(),
    current: mediaVersionView
      .optional()
      .describe('What listeners and search get now; absent until one is published.'),
    inProgress: mediaVersionView.optional().describe('The newest version, while it is being published.'),
  })
  .describe('A media item: its metadata, its current version and the one being published.');
export type MediaItemView = z.infer<typeof mediaItemView>;

export const mediaPage = z.strictObject({
  items: z.array(mediaItemView),
  nextCursor: z.string().nullable(),
});
