import * as z from 'zod';
import type { EmbeddingModelName } from '../../config/embedding-models';
import { storedEmbeddings } from '../../config/job-types/audio-publish-embedding';
import { awaitChild, type ChunkDeps } from './chunk-jobs';
import { embeddingIdempotencyKey } from './chunks';
import { collectComputeOutcome } from './compute';
import { type Job, providerKeyOf } from './job';
import type { Passage } from './passages';
import type { JobStore, OutputStore, PassageMetadata, PassageVector, VectorIndex } from './ports';
import { type IndexResult, rootOutputPrefix } from './publish';

/**
 * The embedding half of `audio.publish`: once the index step has cut the
 * transcript into passages, the passages are embedded in runs, each a job of
 * its own on the embedding provider (`audio.publish.embedding`, one slot
 * each, so the provider's limit holds however many recordings publish at
 * once), and the vectors go to the search index in one step at the end. A
 * failed run is made again under a new key by its state's retry; the
 * transcode and the transcription before it are kept, never done again.
 */

/** How the deployment embeds (its settings). */
export interface EmbeddingSettings {
  readonly model: EmbeddingModelName;
  readonly dimensions: number;
  readonly normalize: boolean;
  readonly passagesPerJob: number;
}

/** One run of passages, as the `embed` state waits for its job. */
export interface EmbeddingRun {
  readonly index: number;
  readonly from: number;
  readonly count: number;
  readonly idempotencyKey: string;
}

/** What `plan-embedding` answers: where the passages are, and the runs to embed (none for a silent recording). */
export interface EmbeddingPlan {
  readonly passagesKey: string;
  readonly runs: readonly EmbeddingRun[];
}

/** A run's job as the `embed` state's resume names it (`resumeParent`). */
export interface EmbeddedRun {
  readonly index: number;
  readonly jobId: string;
}

const passagesSchema = z.array(z.object({ start: z.number(), end: z.number(), text: z.string() }));

/** The record that vectors of the job are in the index: how many, keyed `vectorKeyOf(job, 0..count-1)`. */
const vectorsManifest = z.object({ count: z.int().min(0) });
export const vectorsManifestKey = (job: Pick<Job, 'id' | 'tenantId'>): string =>
  `${rootOutputPrefix(job)}vectors.json`;

/** A passage's vector key: tenant, recording and passage, so one tenant's key can never name another's vector. */
export const vectorKeyOf = (job: Pick<Job, 'id' | 'tenantId'>, passage: number): string =>
  `${encodeURIComponent(job.tenantId)}/${job.id}/${passage}`;

/** Days since 1970-01-01 of a calendar date: how the index keeps a date, a number a range filter compares. */
export const dayNumberOf = (date: string): number =>
  Math.floor(Date.parse(`${date.slice(0, 10)}T00:00:00Z`) / 86_400_000);

/**
 * The runs a recording's passages are embedded in, `passagesPerJob` each, and
 * the passages where a run's job can read them (the index step keeps large
 * ones in a file already; small ones, kept on the job, are written once here).
 */
export async function planEmbedding(
  deps: {
    readonly store: Pick<JobStore, 'get'>;
    readonly outputs: Pick<OutputStore, 'getOutput' | 'putOutput'>;
  },
  job: Job,
  settings: Pick<EmbeddingSettings, 'passagesPerJob'>,
): Promise<EmbeddingPlan> {
  const index = (await collectComputeOutcome(deps, { step: 'index', jobId: job.id })) as IndexResult;
  let passagesKey = index.passagesKey;
  let count: number;
  if (passagesKey) {
    count = (await readPassages(deps.outputs, passagesKey)).length;
  } else {
    passagesKey = `${rootOutputPrefix(job)}embeddings/passages.json`;
    const passages = index.passages ?? [];
    await deps.outputs.putOutput(passagesKey, JSON.stringify(passages), 'application/json');
    count = passages.length;
  }
  const jobKey = providerKeyOf(job);
  const runs = passageRuns(count, settings.passagesPerJob).map(
    (run, index): EmbeddingRun => ({ index, ...run, idempotencyKey: embeddingIdempotencyKey(jobKey, index) }),
  );
  return { passagesKey, runs };
}

/** The runs `count` passages are cut into: `perRun` each from the first, the last what is left. */
export function passageRuns(count: number, perRun: number): { from: number; count: number }[] {
  if (!Number.isInteger(perRun) || perRun < 1)
    throw new RangeError(`perRun must be a whole number above 0, got ${perRun}`);
  const runs: { from: number; count: number }[] = [];
  for (let from = 0; from < count; from += perRun) runs.push({ from, count: Math.min(perRun, count - from) });
  return runs;
}

/** The `embed` state of one run: its embedding job, made or found, waited for with the state's token. */
export const awaitEmbedding = (
  deps: ChunkDeps,
  parent: Job,
  plan: Pick<EmbeddingPlan, 'passagesKey'>,
  run: EmbeddingRun,
  settings: EmbeddingSettings,
  taskToken: string,
): Promise<Job> =>
  awaitChild(
    deps,
    parent,
    {
      type: 'audio.publish.embedding',
      index: run.index,
      stage: 'embed',
      idempotencyKey: run.idempotencyKey,
      input: {
        passagesKey: plan.passagesKey,
        from: run.from,
        count: run.count,
        model: settings.model,
        dimensions: settings.dimensions,
        normalize: settings.normalize,
      },
      label: `passages ${run.from}–${run.from + run.count - 1}`,
    },
    taskToken,
  );

/**
 * Puts every passage's vector in the search index, with what search filters
 * by and shows. The manifest is written first, so whatever is put can be
 * found and deleted by a later failure or cancel. Writing the same vectors
 * again overwrites them: safe to run twice.
 */
export async function storeVectors(
  deps: {
    readonly store: Pick<JobStore, 'get'>;
    readonly outputs: Pick<OutputStore, 'getOutput' | 'putOutput'>;
    readonly vectors: Pick<VectorIndex, 'put'>;
  },
  job: Job,
  plan: Pick<EmbeddingPlan, 'passagesKey'>,
  embedded: readonly EmbeddedRun[],
  /** What the vectors say of their recording, when a media item says it rather than the job's input. */
  describedAs?: ItemMetadata,
): Promise<number> {
  const passages = await readPassages(deps.outputs, plan.passagesKey);
  const data: (readonly number[] | undefined)[] = Array.from({ length: passages.length }, () => undefined);
  for (const run of embedded) {
    const child = await deps.store.get(run.jobId);
    const key = child?.result?.embeddingsKey;
    if (child?.status !== 'succeeded' || typeof key !== 'string' || child.parent?.jobId !== job.id) {
      throw new Error(`Embedding run ${run.index} (${run.jobId}) has no embeddings to store.`);
    }
    const bytes = await deps.outputs.getOutput(key);
    if (!bytes) throw new Error(`The embeddings of run ${run.index} are missing (${key}).`);
    const stored = storedEmbeddings.parse(JSON.parse(new TextDecoder().decode(bytes)));
    stored.embeddings.forEach((vector, offset) => {
      data[stored.from + offset] = vector;
    });
  }
  const missing = data.indexOf(undefined);
  if (passages.length > 0 && (missing >= 0 || data.length !== passages.length)) {
    throw new Error(`Passage ${missing} of ${job.id} has no embedding.`);
  }
  const shared = describedAs
    ? { tenant: job.tenantId, ...describedAs, date: dayNumberOf(describedAs.date) }
    : itemMetadataOf(job);
  const vectors: PassageVector[] = passages.map((passage, index) => ({
    key: vectorKeyOf(job, index),
    data: data[index] as readonly number[],
    metadata: { ...shared, passage: index, start: passage.start, end: passage.end, text: passage.text },
  }));
  await deps.outputs.putOutput(
    vectorsManifestKey(job),
    JSON.stringify({ count: vectors.length }),
    'application/json',
  );
  await deps.vectors.put(vectors);
  return vectors.length;
}

/** Whether the job's passages were put in the search index (its manifest is there). */
export async function isSearchable(
  outputs: Pick<OutputStore, 'getOutput'>,
  job: Pick<Job, 'id' | 'tenantId'>,
) {
  return (await outputs.getOutput(vectorsManifestKey(job))) !== undefined;
}

/**
 * Deletes the job's vectors from the search index: a failed or canceled
 * publish leaves none behind. Call before its outputs go (the manifest is one
 * of them). Answers how many were deleted.
 */
export async function discardVectors(
  deps: { readonly outputs: Pick<OutputStore, 'getOutput'>; readonly vectors: Pick<VectorIndex, 'delete'> },
  job: Pick<Job, 'id' | 'tenantId'>,
): Promise<number> {
  const keys = await storedVectorKeysOf(deps.outputs, job);
  if (keys.length > 0) await deps.vectors.delete(keys);
  return keys.length;
}

/** The keys of the job's vectors in the index, as its manifest counts them; none without a manifest. */
export async function storedVectorKeysOf(
  outputs: Pick<OutputStore, 'getOutput'>,
  job: Pick<Job, 'id' | 'tenantId'>,
): Promise<string[]> {
  const bytes = await outputs.getOutput(vectorsManifestKey(job));
  if (!bytes) return [];
  const { count } = vectorsManifest.parse(JSON.parse(new TextDecoder().decode(bytes)));
  return Array.from({ length: count }, (_, passage) => vectorKeyOf(job, passage));
}

/** What a media item says of a recording, for its vectors (`mediaVectorMetadata`). */
export interface ItemMetadata {
  readonly item: string;
  readonly title?: string;
  /** A calendar date, YYYY-MM-DD. */
  readonly date: string;
  readonly labels: readonly string[];
}

/** What every vector of a recording carries about the recording. */
function itemMetadataOf(job: Job): Omit<PassageMetadata, 'passage' | 'start' | 'end' | 'text'> {
  const { title, date, labels } = job.input as { title?: string; date?: string; labels?: string[] };
  return {
    tenant: job.tenantId,
    item: job.id,
    date: dayNumberOf(date ?? job.createdAt),
    labels: labels ?? [],
    ...(title ? { title } : {}),
  };
}

async function readPassages(outputs: Pick<OutputStore, 'getOutput'>, key: string): Promise<Passage[]> {
  const bytes = await outputs.getOutput(key);
  if (!bytes) throw new Error(`The passages ${key} are missing.`);
  return passagesSchema.parse(JSON.parse(new TextDecoder().decode(bytes)));
}
