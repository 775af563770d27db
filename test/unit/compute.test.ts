import { writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { CHUNK_TRANSCRIPT_FILE } from '../../config/job-types/audio-publish';
import { chunkAttemptKey } from '../../lambdas/domain/chunk-jobs';
import {
  type ComputeDeps,
  ComputeOutcomeMissingError,
  collectComputeOutcome,
  computeOutcomeKey,
  runComputeStep,
} from '../../lambdas/domain/compute';
import { InvalidJobInputError } from '../../lambdas/domain/errors';
import { deriveJobId } from '../../lambdas/domain/idempotency';
import { executionNameOf, type Job, type JobStatus, newJob, providerKeyOf } from '../../lambdas/domain/job';
import { type AudioChunk, type MediaTools, UndecodableAudioError } from '../../lambdas/domain/media';
import { jobOutputPrefix, type StoredChunk } from '../../lambdas/domain/publish';
import { stepEvent } from '../../lambdas/domain/step-event';
import { runStep } from '../../lambdas/domain/workflow';
import { MemoryOutputs, MemoryStore, MemoryTimeline, ScriptedProvider } from './support/memory-ports';
import { memoryWorkflowDeps } from './support/workflow-deps';

/** The one entrypoint of the compute steps, over fake media tools: what it records and what it answers. */

const clock = new Date('2026-05-01T10:00:00.000Z');

function setUp(
  media: Partial<MediaTools> = {},
  input: Record<string, unknown> = { audioUrl: 'https://media.example/s.mp3' },
) {
  const store = new MemoryStore();
  const job = newJob(
    {
      id: 'job_bbbbbbbbbbbbbbbbbbbbbbbbbb',
      tenantId: 'acme',
      type: 'audio.transcribe',
      input,
      idempotencyKey: 'k1',
      fingerprint: 'f1',
    },
    clock,
  ) as Job;
  store.jobs.set(job.id, job);
  const outputs = new MemoryOutputs();
  const deps: ComputeDeps = {
    store,
    outputs,
    timeline: new MemoryTimeline(),
    now: () => clock,
    media: {
      probe: async () => ({ durationSeconds: 125, codec: 'mp3', channels: 2, sampleRate: 44_100 }),
      transcodeToHls: async () => {
        throw new Error('not used');
      },
      splitIntoChunks: async (_file, outDir, chunkSeconds) => {
        const chunks: AudioChunk[] = [0, 1].map((index) => ({
          index,
          path: `${outDir}/chunk-${index}.flac`,
          offsetSeconds: index * chunkSeconds,
          durationSeconds: chunkSeconds,
        }));
        for (const chunk of chunks) await writeFile(chunk.path, `flac ${chunk.index}`);
        return chunks;
      },
      ...media,
    },
    inputs: { downloadUrl: async () => 'https://inputs.example/x' },
    download: async (_url, file) => writeFile(file, 'audio'),
    scratchRoot: tmpdir(),
    plan: {
      renditionsKbps: [64, 128],
      segmentSeconds: 6,
      chunkSeconds: 60,
      maxDurationSeconds: 3600,
      lambdaMaxAudioSeconds: 100,
    },
    inputUrlTtlSeconds: 900,
  };
  return { deps, job, outputs, store };
}

const outcomeOf = (outputs: MemoryOutputs, key: string) => JSON.parse(String(outputs.objects.get(key)?.body));

const deepgramWords = (words: { word: string; start: number; end: number }[], language?: string) =>
  JSON.stringify({
    results: {
      channels: [
        { ...(language ? { detected_language: language } : {}), alternatives: [{ transcript: '', words }] },
      ],
    },
  });

/**
 * One try of a chunk's job, as its parent's transcribe state made it: a
 * succeeded one keeps the provider's transcript where its finalize stores
 * it, under its own outputs, and names it in its result.
 */
async function chunkTry(
  { store, outputs }: { store: MemoryStore; outputs: MemoryOutputs },
  parent: Job,
  split: StoredChunk | undefined,
  attempt: number,
  status: JobStatus,
  transcript?: string,
): Promise<Job> {
  const chunk = split ?? fail('no such chunk');
  const key = chunkAttemptKey(chunk, attempt);
  const draft = newJob(
    {
      id: deriveJobId(parent.tenantId, key),
      tenantId: parent.tenantId,
      type: 'audio.publish.chunk',
      provider: 'deepgram',
      input: { chunkKey: chunk.key },
      idempotencyKey: key,
      fingerprint: `f-${key}`,
      parent: { jobId: parent.id, index: chunk.index },
    },
    clock,
  );
  const transcriptKey = `${jobOutputPrefix(draft)}${CHUNK_TRANSCRIPT_FILE}`;
  const job: Job = {
    ...draft,
    status,
    providerJobId: `dg-${chunk.index}-${attempt}`,
    executionName: executionNameOf(draft),
    ...(status === 'succeeded' ? { result: { transcriptKey } } : {}),
  };
  store.jobs.set(job.id, job);
  if (transcript !== undefined) await outputs.putOutput(transcriptKey, transcript, 'application/json');
  return job;
}

const fail = (message: string): never => {
  throw new Error(message);
};

describe('runComputeStep', () => {
  it('answers the step’s result and records it under the job for a Fargate task’s next state', async () => {
    const { deps, job, outputs } = setUp();
    const result = await runComputeStep(deps, { step: 'probe', jobId: job.id });
    expect(result).toEqual({ durationSeconds: 125, codec: 'mp3', channels: 2, compute: 'fargate' });
    expect(outcomeOf(outputs, computeOutcomeKey(job, 'probe'))).toEqual({ ok: true, result });
    await expect(collectComputeOutcome(deps, { step: 'probe', jobId: job.id })).resolves.toEqual(result);
  });

  it('does not transcode again a recording whose stream is recorded as done (a resume, a restarted run)', async () => {
    let transcodes = 0;
    const { deps, job, outputs } = setUp({
      transcodeToHls: async () => {
        transcodes++;
        throw new Error('transcoded again');
      },
    });
    const stream = { playlistKey: `outputs/acme/${job.id}/hls/master.m3u8`, renditions: [] };
    await outputs.putOutput(
      computeOutcomeKey(job, 'transcode'),
      JSON.stringify({ ok: true, result: stream }),
      'application/json',
    );

    await expect(runComputeStep(deps, { step: 'transcode', jobId: job.id })).resolves.toEqual(stream);
    expect(transcodes).toBe(0);

    // One that failed is run again.
    await outputs.putOutput(
      computeOutcomeKey(job, 'transcode'),
      JSON.stringify({ ok: false, error: { name: 'Error', message: 'ffmpeg died' } }),
      'application/json',
    );
    await expect(runComputeStep(deps, { step: 'transcode', jobId: job.id })).rejects.toThrow(
      'transcoded again',
    );
    expect(transcodes).toBe(1);
  });

  it('records the error a step ended with, and raises it again by name when collected', async () => {
    const { deps, job, outputs } = setUp({
      probe: async () => {
        throw new UndecodableAudioError('The input is not audio.');
      },
    });
    await expect(runComputeStep(deps, { step: 'probe', jobId: job.id })).rejects.toBeInstanceOf(
      UndecodableAudioError,
    );
    expect(outcomeOf(outputs, computeOutcomeKey(job, 'probe'))).toEqual({
      ok: false,
      error: {
        name: 'InvalidJobInput',
        message: '[input_invalid] The input is not audio.',
        code: 'input_invalid',
      },
    });
    const collected = collectComputeOutcome(deps, { step: 'probe', jobId: job.id });
    await expect(collected).rejects.toBeInstanceOf(InvalidJobInputError);
    await expect(collected).rejects.toMatchObject({
      code: 'input_invalid',
      message: '[input_invalid] The input is not audio.',
    });
  });

  it('collects nothing from a task that stopped before recording: the state retries it', async () => {
    const { deps, job } = setUp();
    await expect(collectComputeOutcome(deps, { step: 'transcode', jobId: job.id })).rejects.toBeInstanceOf(
      ComputeOutcomeMissingError,
    );
  });

  it('finds nothing to do for a job that no longer exists', async () => {
    const { deps } = setUp();
    await expect(runComputeStep(deps, { step: 'probe', jobId: 'job_gone' })).rejects.toMatchObject({
      name: 'JobSettled',
    });
  });

  it('keys the chunks from the job’s provider key, then indexes their transcripts at their offsets', async () => {
    const { deps, job, outputs } = setUp({}, { audioUrl: 'https://media.example/s.mp3' });
    const chunks = (await runComputeStep(deps, { step: 'split', jobId: job.id })) as {
      idempotencyKey: string;
    }[];
    expect(chunks.map((c) => c.idempotencyKey)).toEqual(
      [0, 1].map((i) => `${providerKeyOf(job)}:chunk-${i}`),
    );
    // Each chunk goes whole, as the state machine hands it on, into a transcribe step's strict payload.
    for (const chunk of chunks) {
      const payload = { step: 'transcribe', jobId: job.id, taskToken: 't', chunk };
      expect(stepEvent.parse(payload)).toEqual(payload);
    }
    const split = chunks as unknown as StoredChunk[];
    const ports = { store: deps.store as MemoryStore, outputs };
    await chunkTry(
      ports,
      job,
      split[1],
      0,
      'succeeded',
      deepgramWords([{ word: 'amen.', start: 1, end: 1.5 }], 'es'),
    );
    await chunkTry(
      ports,
      job,
      split[0],
      0,
      'succeeded',
      deepgramWords([{ word: 'grace', start: 2, end: 2.5 }], 'es'),
    );
    const index = (await runComputeStep(deps, { step: 'index', jobId: job.id })) as { transcriptKey: string };
    const transcript = JSON.parse(String(outputs.objects.get(index.transcriptKey)?.body));
    expect(transcript).toMatchObject({
      language: 'es',
      text: 'grace amen.',
      passages: [{ start: 2, end: 61.5, text: 'grace amen.' }],
    });
  });

  it('fails the index as output_invalid when a chunk’s transcript has no words, naming the chunk', async () => {
    const { deps, job, outputs, store } = setUp();
    const split = (await runComputeStep(deps, { step: 'split', jobId: job.id })) as StoredChunk[];
    await chunkTry({ store, outputs }, job, split[0], 0, 'succeeded', deepgramWords([]));
    await chunkTry({ store, outputs }, job, split[1], 0, 'succeeded', '{"results":{}}');
    await expect(runComputeStep(deps, { step: 'index', jobId: job.id })).rejects.toMatchObject({
      code: 'output_invalid',
      message: expect.stringContaining('chunk 1'),
    });
  });

  it("indexes the transcript of the chunk's try that succeeded, whatever a canceled try's late settle discards", async () => {
    const { deps, job, outputs, store } = setUp();
    const split = (await runComputeStep(deps, { step: 'split', jobId: job.id })) as StoredChunk[];
    // Chunk 0's first try was canceled while the publish went on (the orphan sweep, before a resume);
    // its next try was sent and paid for, and its transcript kept.
    const canceled = await chunkTry({ store, outputs }, job, split[0], 0, 'canceled');
    await chunkTry(
      { store, outputs },
      job,
      split[0],
      1,
      'succeeded',
      deepgramWords([{ word: 'grace', start: 2, end: 2.5 }]),
    );
    await chunkTry(
      { store, outputs },
      job,
      split[1],
      0,
      'succeeded',
      deepgramWords([{ word: 'amen.', start: 1, end: 1.5 }]),
    );
    // Only then does the canceled try's execution reach its settle state, which discards what it kept.
    const workflowDeps = memoryWorkflowDeps(
      { store, provider: new ScriptedProvider(true), clock },
      { outputs },
    );
    await runStep(workflowDeps, {
      step: 'settle',
      jobId: canceled.id,
      executionName: executionNameOf(canceled),
    });

    const index = (await runComputeStep(deps, { step: 'index', jobId: job.id })) as { transcriptKey: string };
    expect(JSON.parse(String(outputs.objects.get(index.transcriptKey)?.body))).toMatchObject({
      text: 'grace amen.',
    });
  });
});
