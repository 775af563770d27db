import { z } from 'zod';
import { type Job, type JobResource, type JobType, toResource } from './job';
import type { OutputStore } from './ports';
import { TRANSCRIPT_PREVIEW_CHARS } from './workflow';

/**
 * Each job type's result as clients see it: the one home of its shape, from
 * which the API document (and so the SDK's job types) is derived.
 */
export const RESULT_SCHEMAS = {
  'image.generate': z
    .strictObject({
      outputUrl: z.url().describe('Presigned GET URL of the image.'),
      contentType: z.string().regex(/^image\//),
    })
    .describe('Result of an image.generate job.'),
  'audio.transcribe': z
    .strictObject({
      transcriptUrl: z.url().describe('Presigned GET URL of the whole transcript (JSON, with segments).'),
      language: z.string(),
      text: z.string().describe(`The first ${TRANSCRIPT_PREVIEW_CHARS} characters of the transcript.`),
      segments: z.int().min(0).describe('Number of segments in the whole transcript.'),
    })
    .describe('Result of an audio.transcribe job.'),
} as const satisfies Record<JobType, z.ZodType>;

/**
 * The job as clients see it: stored output keys become fresh presigned URLs
 * (`outputUrl`, `transcriptUrl`), so a URL never outlives its signature in storage.
 */
export async function presentJob(job: Job, outputs: Pick<OutputStore, 'outputUrl'>): Promise<JobResource> {
  const resource = toResource(job);
  if (!job.result) return resource;
  const { outputKey, transcriptKey, ...rest } = job.result;
  const result: Record<string, unknown> = { ...rest };
  if (typeof outputKey === 'string') result.outputUrl = await outputs.outputUrl(outputKey);
  if (typeof transcriptKey === 'string') result.transcriptUrl = await outputs.outputUrl(transcriptKey);
  return { ...resource, result };
}
