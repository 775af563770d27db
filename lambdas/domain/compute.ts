import { chunkWordsFromDeepgram } from '../../config/job-types/audio-publish';
import { OutputInvalidError } from '../../config/job-types/job-type';
import { StepError } from '../../config/workflow-errors';
import { CHUNK_ATTEMPTS, chunkAttemptKey } from './chunk-jobs';
import { InvalidJobInputError } from './errors';
import { deriveJobId } from './idempotency';
import { isCanceling, isTerminal, type Job, providerKeyOf } from './job';
import type { JobStore, OutputStore, Timeline } from './ports';
import {
  discardOutputs,
  indexStep,
  jobOutputPrefix,
  type PublishDeps,
  type PublishJob,
  probeStep,
  type StoredChunk,
  splitStep,
  transcodeStep,
} from './publish';
import type { ChunkTranscript } from './transcript';

/**
 * One entrypoint for the compute steps, whichever compute runs them: the
 * compute Lambda calls it with the state's payload and answers the result;
 * the Fargate task (an `ecs:runTask.sync` state, whose output is the ECS
 * task's description, not the container's answer) calls it with the same
 * event from its environment. Both record the outcome under the job
 * (`compute/<step>.json`), so the state after a Fargate task reads it back
 * with `collectComputeOutcome`, and so the steps pass keys to each other,
 * never payloads that could outgrow Step Functions' 256 KiB.
 */

export const COMPUTE_STEPS = ['probe', 'transcode', 'split', 'index'] as const;
export type ComputeStep = (typeof COMPUTE_STEPS)[number];

export interface ComputeEvent {
  readonly step: ComputeStep;
  readonly jobId: string;
}

export interface ComputeDeps extends PublishDeps {
  readonly store: Pick<JobStore, 'get'>;
  /** The job's timeline: each compute step is named there as the steps function's are. */
  readonly timeline: Pick<Timeline, 'record'>;
  readonly now: () => Date;
}

/** A step's outcome as recorded: its result, or the error it ended with. */
export type ComputeOutcome =
  | { readonly ok: true; readonly result: unknown }
  | {
      readonly ok: false;
      readonly error: { readonly name: string; readonly message: string; readonly code?: string };
    };

/** Where a step's outcome is kept. */
export const computeOutcomeKey = (job: Pick<Job, 'id' | 'tenantId'>, step: ComputeStep): string =>
  `${jobOutputPrefix(job)}compute/${step}.json`;

/**
 * Where the transcript of a chunk is kept: by the try of its chunk job that
 * succeeded (the first, as the transcribe state takes the first try that did
 * not end without a result), which named it in its result. One read per try
 * looked at (GetItem, all the compute steps may do on the job table); most
 * chunks succeed at their first.
 */
async function chunkTranscriptKey(deps: Pick<ComputeDeps, 'store'>, job: Job, chunk: StoredChunk) {
  const attempts = CHUNK_ATTEMPTS * ((job.resumes ?? 0) + 1);
  for (let attempt = 0; attempt < attempts; attempt++) {
    const child = await deps.store.get(deriveJobId(job.tenantId, chunkAttemptKey(chunk, attempt)));
    if (!child) return undefined;
    const key = child.result?.transcriptKey;
    if (child.status === 'succeeded' && child.parent?.jobId === job.id && typeof key === 'string') return key;
  }
  return undefined;
}

/** The job went away (expired, deleted): a compute step has nothing to do. */
export class ComputeJobMissingError extends Error {
  override readonly name = StepError.jobSettled;
}

/** A job whose compute steps have nothing more to do: finished, or being canceled. */
const stopped = (job: Job): boolean => isTerminal(job.status) || isCanceling(job);

/** Runs one compute step of a job and records its outcome; throws what the step threw, after recording it. */
export async function runComputeStep(deps: ComputeDeps, event: ComputeEvent): Promise<unknown> {
  const job = await deps.store.get(event.jobId);
  if (!job) throw new ComputeJobMissingError(`Job ${event.jobId} no longer exists.`);
  const key = computeOutcomeKey(job, event.step);
  if (event.step === 'transcode') {
    // The stream is a function of the recording alone, and the longest step: a resumed job, or a
    // restarted run, that meets it recorded as done does not transcode again.
    const kept = await deps.outputs.getOutput(key);
    const outcome = kept ? (JSON.parse(new TextDecoder().decode(kept)) as ComputeOutcome) : undefined;
    if (outcome?.ok) return outcome.result;
  }
  const record = (type: string, detail?: string) =>
    deps.timeline.record(job.id, {
      at: deps.now().toISOString(),
      type,
      step: event.step,
      ...(detail ? { detail } : {}),
    });
  await record('step.started');
  let outcome: ComputeOutcome;
  try {
    if (stopped(job)) throw new ComputeJobMissingError(`Job ${job.id} is ${job.status}, or being canceled.`);
    outcome = { ok: true, result: await STEPS[event.step](deps, job) };
    // Canceled while the step ran (its state abandoned, the step not): what it wrote goes with the job's.
    const after = await deps.store.get(job.id);
    if (!after || stopped(after)) {
      await discardOutputs(deps.outputs, job);
      throw new ComputeJobMissingError(`Job ${job.id} was canceled or settled while ${event.step} ran.`);
    }
    await record('step.succeeded');
  } catch (error) {
    const failure = error as Error & { code?: unknown };
    await record('step.failed', `${failure.name}: ${failure.message}`).catch(() => {});
    outcome = {
      ok: false,
      error: {
        name: failure.name,
        message: failure.message,
        ...(typeof failure.code === 'string' ? { code: failure.code } : {}),
      },
    };
    // A finished job's outputs are gone and stay gone; one still settling takes this record with the rest.
    const now = error instanceof ComputeJobMissingError ? await deps.store.get(job.id) : job;
    if (now && !isTerminal(now.status)) {
      await deps.outputs.putOutput(key, JSON.stringify(outcome), 'application/json');
    }
    throw error;
  }
  await deps.outputs.putOutput(key, JSON.stringify(outcome), 'application/json');
  return outcome.result;
}

/**
 * A step's recorded outcome as its own answer: the result, or the error it
 * ended with, raised again under its name so the state machine's Retry and
 * Catch treat a step that ran on Fargate as one that ran on Lambda.
 */
export async function collectComputeOutcome(
  deps: { readonly store: Pick<JobStore, 'get'>; readonly outputs: Pick<OutputStore, 'getOutput'> },
  event: ComputeEvent,
): Promise<unknown> {
  const job = await deps.store.get(event.jobId);
  if (!job) throw new ComputeJobMissingError(`Job ${event.jobId} no longer exists.`);
  const bytes = await deps.outputs.getOutput(computeOutcomeKey(job, event.step));
  // A task that stopped before recording anything (killed, out of memory): a retry runs the step again.
  if (!bytes)
    throw new ComputeOutcomeMissingError(`The ${event.step} step of ${job.id} recorded no outcome.`);
  const outcome = JSON.parse(new TextDecoder().decode(bytes)) as ComputeOutcome;
  if (outcome.ok) return outcome.result;
  throw recordedError(outcome.error);
}

/** A compute task ended without recording an outcome. */
export class ComputeOutcomeMissingError extends Error {
  override readonly name = 'ComputeOutcomeMissing';
}

function recordedError(error: { name: string; message: string; code?: string }): Error {
  const raised =
    error.name === StepError.invalidJobInput && error.code
      ? new InvalidJobInputError(error.message, error.code)
      : Object.assign(new Error(error.message), { name: error.name });
  return raised;
}

/** A chunk's words; a transcript without any fails the job as `output_invalid`, as a single submission's would. */
function chunkWords(index: number, raw: unknown): ReturnType<typeof chunkWordsFromDeepgram> {
  try {
    return chunkWordsFromDeepgram(raw);
  } catch (error) {
    if (!(error instanceof OutputInvalidError)) throw error;
    throw new InvalidJobInputError(
      `[output_invalid] The provider returned an unusable transcript of chunk ${index}: ${error.message}`,
      'output_invalid',
    );
  }
}

const publishJobOf = (job: Job): PublishJob => ({
  id: job.id,
  tenantId: job.tenantId,
  input: {
    ...(typeof job.input.audioUrl === 'string' ? { audioUrl: job.input.audioUrl } : {}),
    ...(typeof job.input.audioRef === 'string' ? { audioRef: job.input.audioRef } : {}),
  },
});

const STEPS: Record<ComputeStep, (deps: ComputeDeps, job: Job) => Promise<unknown>> = {
  probe: (deps, job) => probeStep(deps, publishJobOf(job)),
  transcode: (deps, job) => transcodeStep(deps, publishJobOf(job)),
  // Chunk keys derive from the job's provider key, which an operator's requeue renews: a requeued
  // job's chunks are new submissions, as a requeued job's single submission is.
  split: (deps, job) => splitStep(deps, publishJobOf(job), providerKeyOf(job)),
  async index(deps, job) {
    const split = await collectComputeOutcome(deps, { step: 'split', jobId: job.id });
    const chunks: ChunkTranscript[] = [];
    let heard: string | undefined;
    for (const chunk of split as StoredChunk[]) {
      const key = await chunkTranscriptKey(deps, job, chunk);
      const bytes = key === undefined ? undefined : await deps.outputs.getOutput(key);
      if (!bytes) throw new Error(`Chunk ${chunk.index} of ${job.id} has no transcript.`);
      const { words, language } = chunkWords(chunk.index, JSON.parse(new TextDecoder().decode(bytes)));
      heard ??= language;
      chunks.push({ offsetSeconds: chunk.offsetSeconds, words });
    }
    const language = typeof job.input.language === 'string' ? job.input.language : (heard ?? 'und');
    return indexStep(deps.outputs, job, chunks, language);
  },
};
