import type * as z from 'zod';
import { JOB_TYPE_MODULES } from '../../config/job-types';
import { type Job, type JobResource, type JobType, toResource } from './job';
import type { OutputStore } from './ports';
import { servePlaylists, type TranscodeResult } from './publish';

/**
 * Each job type's result as clients see it, from its module: the one home of
 * its shape, from which the API document (and so the SDK's job types) is derived.
 */
export const RESULT_SCHEMAS: Readonly<Record<JobType, z.ZodType>> = Object.fromEntries(
  JOB_TYPE_MODULES.map((module) => [module.name, module.result]),
) as Record<JobType, z.ZodType>;

/** A stored output's key on the result: `<field>Key`, shown as `<field>Url`. */
const OUTPUT_KEY = /^([a-z][A-Za-z0-9]*)Key$/;

/**
 * The job as clients see it: stored output keys (`<field>Key`) become fresh
 * presigned URLs (`<field>Url`), so a URL never outlives its signature in
 * storage. A job whose stream was removed (its media item deleted, its
 * version retired) shows no result, and says why.
 */
export async function presentJob(
  job: Job,
  outputs: Pick<OutputStore, 'outputUrl' | 'getOutput' | 'putOutput'>,
): Promise<JobResource> {
  const resource = toResource(job);
  if (!job.result) return resource;
  const result: Record<string, unknown> = {};
  for (const [name, value] of Object.entries(job.result)) {
    const file = OUTPUT_KEY.exec(name)?.[1];
    if (file && typeof value === 'string') result[`${file}Url`] = await outputs.outputUrl(value);
    else if (name === STREAM_FIELD) {
      const served = await servePlaylists(outputs, job, value as TranscodeResult);
      if (!served) return { ...resource, result: null, outputsRemoved: true };
      Object.assign(result, served);
    } else result[name] = value;
  }
  return { ...resource, result };
}

/**
 * A stored HLS stream on a result (`audio.publish`): its keys, served as
 * `playlistUrl` and `renditions` with fresh presigned URLs each time the job
 * is shown, since URLs written into playlists cannot be refreshed later.
 */
const STREAM_FIELD = 'stream';
