/**
 * Where a job keeps its outputs in the output bucket. This module imports
 * nothing, so the job record (its provider output's key) and the publish
 * steps both build on it without importing each other.
 */

/** A job as its outputs' place needs it: a chunk job also names its parent. */
export interface OutputOwner {
  readonly id: string;
  readonly tenantId: string;
  readonly parent?:
    | { readonly jobId: string; readonly index: number; readonly stage?: 'embed' | undefined }
    | undefined;
}

/**
 * Everything a job keeps in the output bucket is under this prefix, so a
 * failed job's outputs are deleted together and no key of one tenant's job
 * can name another's. A chunk job keeps its outputs under its parent's
 * (`chunks/<index>/`), where the parent's index step reads them and the
 * parent's failure deletes them with the rest.
 */
export const jobOutputPrefix = (job: OutputOwner): string => {
  if (!job.parent) return rootOutputPrefix(job);
  const parent = { id: job.parent.jobId, tenantId: job.tenantId };
  return job.parent.stage === 'embed'
    ? embeddingOutputPrefix(parent, job.parent.index)
    : chunkOutputPrefix(parent, job.parent.index);
};

/** Where the embedding job of a run of passages keeps its outputs: under its parent's. */
export const embeddingOutputPrefix = (parent: Pick<OutputOwner, 'id' | 'tenantId'>, index: number): string =>
  `${rootOutputPrefix(parent)}embeddings/${index}/`;

/** Where the chunk job of a chunk keeps its outputs: under its parent's. */
export const chunkOutputPrefix = (parent: Pick<OutputOwner, 'id' | 'tenantId'>, index: number): string =>
  `${rootOutputPrefix(parent)}chunks/${index}/`;

/** The prefix of the job a job belongs to: its own, or its parent's for a chunk job. */
export const rootOutputPrefix = (job: OutputOwner): string =>
  `outputs/${encodeURIComponent(job.tenantId)}/${job.parent?.jobId ?? job.id}/`;
