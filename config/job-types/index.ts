import audioPublish, { audioPublishChunk } from './audio-publish';
import { audioPublishEmbedding } from './audio-publish-embedding';
import audioTranscribe from './audio-transcribe';
import imageGenerate from './image-generate';
import { checkFollowUps, type JobTypeModule } from './job-type';

/**
 * Every job type Longhaul accepts: registering one is one line here, next to
 * its module. Nothing else lists job types.
 */
export const JOB_TYPE_MODULES = [imageGenerate, audioTranscribe, audioPublish] as const;

/** Job types that only workflows make (`internal`): stored and run like any job, never submitted by clients. */
export const INTERNAL_JOB_TYPE_MODULES = [audioPublishChunk, audioPublishEmbedding] as const;

/** A job type clients submit. */
export type JobType = (typeof JOB_TYPE_MODULES)[number]['name'];
/** The type of a stored job: one clients submit, or one a workflow made. */
export type StoredJobType = JobType | (typeof INTERNAL_JOB_TYPE_MODULES)[number]['name'];
export const JOB_TYPES = JOB_TYPE_MODULES.map((module) => module.name) as [JobType, ...JobType[]];
/** Every type a stored job may have, for metric dimensions. */
export const STORED_JOB_TYPES: readonly StoredJobType[] = [
  ...JOB_TYPES,
  ...INTERNAL_JOB_TYPE_MODULES.map((module) => module.name),
];

checkFollowUps([...JOB_TYPE_MODULES, ...INTERNAL_JOB_TYPE_MODULES]);

const byName = new Map<string, JobTypeModule>(
  [...JOB_TYPE_MODULES, ...INTERNAL_JOB_TYPE_MODULES].map((module) => [module.name, module]),
);

/** Whether clients may submit jobs of this type. */
export const isJobType = (name: string): name is JobType => byName.has(name) && !byName.get(name)?.internal;

/** The module of a job type; throws for a name no module has (a stored job of a type since removed). */
export function jobTypeModule(name: string): JobTypeModule {
  const module = byName.get(name);
  if (!module) throw new Error(`No job type ${JSON.stringify(name)} is registered.`);
  return module;
}

/** A job type's name as it appears in environment variables: `PROVIDER_IMAGE_GENERATE`. */
export const jobTypeEnvSuffix = (name: string): string => name.toUpperCase().replace(/[^A-Z0-9]+/g, '_');

export type { FileSource, FollowUp, JobOutput, JobTypeModule, OutputFile, RequestContext } from './job-type';
export { OutputInvalidError } from './job-type';
