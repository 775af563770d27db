import { type Job, type JobResource, toResource } from './job';
import type { OutputStore } from './ports';

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
