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
 * can name another's. A child job (a chunk's transcription, a run of
 * passages' embedding) keeps its outputs under its parent's, so the parent's
 * failure deletes them with the rest, and under its own id there
 * (`chunks/<index>/<job>/`): each try of one chunk is a job of its own, and a
 * try canceled while the parent goes on discards only what it wrote, never
 * the transcript a later try of the same chunk was paid for.
 */
export const jobOutputPrefix = (job: OutputOwner): string => {
  if (!job.parent) return rootOutputPrefix(job);
  const parent = { id: job.parent.jobId, tenantId: job.tenantId };
  const place =
    job.parent.stage === 'embed'
      ? embeddingOutputPrefix(parent, job.parent.index)
      : chunkOutputPrefix(parent, job.parent.index);
  return `${place}${job.id}/`;
};

/**
 * Where a job keeps what its provider answered of a submission before a later
 * call of it was refused (`AnsweredPart`): paid work its next attempt goes on from.
 */
export const answeredPartKeyOf = (job: OutputOwner): string => `${jobOutputPrefix(job)}answered-part.json`;

/** Where the embedding jobs of a run of passages keep their outputs, each under its own id: under their parent's. */
export const embeddingOutputPrefix = (parent: Pick<OutputOwner, 'id' | 'tenantId'>, index: number): string =>
  `${rootOutputPrefix(parent)}embeddings/${index}/`;

/** Where the jobs of a chunk (one a try) keep their outputs, each under its own id: under their parent's. */
export const chunkOutputPrefix = (parent: Pick<OutputOwner, 'id' | 'tenantId'>, index: number): string =>
  `${rootOutputPrefix(parent)}chunks/${index}/`;

/** The prefix of the job a job belongs to: its own, or its parent's for a chunk job. */
export const rootOutputPrefix = (job: OutputOwner): string =>
  `outputs/${encodeURIComponent(job.tenantId)}/${job.parent?.jobId ?? job.id}/`;
