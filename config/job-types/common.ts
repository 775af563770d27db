import * as z from 'zod';
import { jsonFile } from './job-type';

/** Field schemas job types share. */

export const UPLOAD_REF_PATTERN = /^upl_[A-Za-z0-9_-]{22,43}$/;

export const uploadRef = z.string().regex(UPLOAD_REF_PATTERN, 'must be a ref returned by POST /v1/uploads');

export const httpsUrl = z
  .url({ protocol: /^https$/, error: 'must be an https URL' })
  // The protocol check has no JSON Schema form of its own; the pattern says it in the API document.
  .regex(/^https:\/\//, 'must be an https URL')
  .max(2048)
  .describe('An https URL the provider can fetch.');

export const languageTag = z
  .string()
  .regex(/^[A-Za-z]{2,3}(-[A-Za-z0-9]{2,8})*$/, 'must be a BCP 47 language tag such as en or pt-BR');

/** The fields naming a recording: an upload or an https URL; and its language, if known. */
export const audioSourceFields = {
  audioUrl: httpsUrl.optional(),
  audioRef: uploadRef.optional(),
  language: languageTag.optional(),
};

/** Exactly one source: refined on every input built from {@link audioSourceFields}. */
export const oneAudioSource = [
  (value: { readonly audioUrl?: string; readonly audioRef?: string }) =>
    (value.audioUrl === undefined) !== (value.audioRef === undefined),
  { message: 'exactly one of audioUrl or audioRef is required' },
] as const;

/** A recording to work on: an upload or an https URL, exactly one; and its language, if known. */
export const audioSourceInput = z.strictObject(audioSourceFields).refine(...oneAudioSource);

/** Characters of a transcript kept on the job itself; the whole transcript is behind `transcriptUrl`. */
export const TRANSCRIPT_PREVIEW_CHARS = 500;

/** A timed transcript as Longhaul stores it (`transcript.json`), whichever provider made it. */
export const transcriptSchema = z.object({
  language: z.string().min(1).max(35),
  text: z.string(),
  segments: z.array(z.object({ start: z.number().min(0), end: z.number().min(0), text: z.string() })),
});
export type Transcript = z.infer<typeof transcriptSchema>;

/** The result of a job that produced a transcript: a preview, a count and the whole behind a URL. */
export const transcriptResult = (jobType: string) =>
  z
    .strictObject({
      transcriptUrl: z.url().describe('Presigned GET URL of the whole transcript (JSON, with segments).'),
      language: z.string(),
      text: z.string().describe(`The first ${TRANSCRIPT_PREVIEW_CHARS} characters of the transcript.`),
      segments: z.int().min(0).describe('Number of segments in the whole transcript.'),
    })
    .describe(`Result of an ${jobType} job.`);

/** The job output of a transcript: the whole as a file, a preview on the job. */
export const transcriptOutput = (transcript: Transcript) => ({
  files: [jsonFile('transcript', 'transcript.json', transcript)],
  result: {
    language: transcript.language,
    text: transcript.text.slice(0, TRANSCRIPT_PREVIEW_CHARS),
    segments: transcript.segments.length,
  },
});

/** The file name extension of an image media type: `image/png` → `png`. */
export const imageExtension = (contentType: string): string =>
  (contentType.split('/')[1] ?? 'bin').replace(/[^a-z0-9]/gi, '') || 'bin';

/** The media type an output URL's file name says it has. */
export const imageTypeOfUrl = (url: string): string => {
  const extension = /\.([a-z0-9]+)(?:[?#]|$)/i.exec(url)?.[1]?.toLowerCase();
  const known: Record<string, string> = {
    png: 'image/png',
    jpg: 'image/jpeg',
    jpeg: 'image/jpeg',
    webp: 'image/webp',
    gif: 'image/gif',
  };
  return (extension && known[extension]) || 'application/octet-stream';
};

/**
 * Deepgram's pre-recorded `results.channels`: each with the language it heard
 * and its alternatives, best first, read as far as `alternative` says.
 */
export const deepgramChannels = <Alternative extends z.ZodType>(alternative: Alternative) =>
  z
    .array(z.object({ detected_language: z.string().optional(), alternatives: z.array(alternative).min(1) }))
    .min(1);
