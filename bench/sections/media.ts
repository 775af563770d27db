import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { isJobType } from '../../config/job-types';
import { loadSettings, providerSettingEnv, type Settings } from '../../config/settings';
import { mediaBinaries, runTool, toolMessages } from '../../lambdas/adapters/ffmpeg-media';
import { planChunks } from '../../lambdas/domain/chunks';
import type { TimelineEvent } from '../../lambdas/domain/ports';
import { OWN_PROVIDER_FOR_EVERY_JOB_TYPE } from '../../local/harness/local-stack';
import { chargedJobs } from '../../local/harness/provider-jobs';
import { generateTestAudio } from '../../local/harness/test-audio';
import { PRICES_AS_OF, PRICES_REGION, prices } from '../prices';
import { fmt, print, round, sizeFromEnv } from '../support/common';
import { runStepProcess, type StepRun } from '../support/compute-run';
import { startBenchStack } from '../support/stack';

/**
 * audio.publish on an hour of audio. (1) Its compute steps, each run by the
 * code the compute function runs (`runComputeStep` with the ffmpeg tools and
 * the settings' plan) in a process of its own, timed and watched for memory.
 * (2)-(4) Whole jobs on the local stack, once with the recording cut into
 * 600 s chunks and once into one 3,600 s chunk, transcribed by the simulated
 * Deepgram at a real-time factor: the transcription's makespan, the charges
 * per chunk and the job's state transitions. (5) What the measured compute
 * time costs at list prices on Lambda and on Fargate.
 *
 * The recording is a 60 s speech-like WAV made by ffmpeg, looped 60 times
 * into a 64 kbit/s mono MP3 (a sermon upload's usual shape), in a temp
 * directory removed afterwards; `BENCH_MEDIA_AUDIO` names a file to use
 * instead (of `BENCH_MEDIA_SECONDS`, default 3600, whole minutes).
 */

/** The recording's length, in whole minutes (`BENCH_MEDIA_SECONDS` changes it). */
const AUDIO_SECONDS = sizeFromEnv(process.env, 'BENCH_MEDIA_SECONDS', 3600);
if (AUDIO_SECONDS % 60 !== 0)
  throw new Error(`BENCH_MEDIA_SECONDS must be whole minutes, got ${AUDIO_SECONDS}`);
const CHUNKINGS = [600, 3600] as const;
/**
 * Whole jobs run on the recording's first five minutes, cut into 60 s chunks
 * and into one 300 s chunk, the hour's two chunkings at a twelfth of the
 * scale: the local S3 emulator (fauxqs) refuses request bodies over 11 MiB,
 * which the hour's upload in one presigned PUT exceeds (S3 takes up to 5 GB
 * in one PUT; the compute steps store large outputs in parts).
 */
const JOB_SECONDS = 300;
const JOB_CHUNKINGS = [60, 300] as const;
/** The simulated Deepgram's processing per second of audio (its dialect's real-time factor). */
const REAL_TIME_FACTOR = 0.01;
/** Each chunk's fixed part at the simulated provider, on top of its audio's share. */
const SIM_JOB_MS = 1000;
const DEEPGRAM_LIMIT = 3;
const JOB_TIMEOUT_MS = 20 * 60_000;
const PUBLISH = 'audio.publish';

export interface MeasuredStep extends StepRun {
  readonly chunkSeconds?: number;
  readonly chunks?: number;
}

export interface TranscriptionRun {
  /** The recording the job published. */
  readonly audioSeconds: number;
  readonly chunkSeconds: number;
  readonly status: string;
  /** Why the job did not succeed: its error as its client reads it. */
  readonly error?: string;
  readonly chunks: number;
  /** Deepgram submissions made for the job's chunk jobs (the simulator's ledger, read back per chunk job). */
  readonly charges: number;
  /** Distinct chunks among those charges: equal to `charges` when none was charged twice. */
  readonly chunksCharged: number;
  /**
   * `split` done → the last chunk job finished: every chunk submitted, waited
   * for and back (the timeline's `transcribe` marks each chunk's submission,
   * not its end).
   */
  readonly transcribeS?: number;
  /** The first chunk job started → the last one finished (their items' `startedAt` and `finishedAt`). */
  readonly providerSpanS?: number;
  readonly jobS?: number;
  /** The job's execution and each chunk job's, added up. */
  readonly stateTransitions: number;
  readonly parentStateTransitions: number;
}

export interface ComputeCost {
  readonly place: 'lambda' | 'fargate';
  readonly size: string;
  readonly billedSeconds: number;
  readonly usdPerAudioHour: number;
  readonly basis: string;
}

export interface MediaFigures {
  readonly audio: { readonly seconds: number; readonly format: string; readonly bytes: number };
  readonly steps: readonly MeasuredStep[];
  readonly transcription:
    | { readonly measured: true; readonly runs: readonly TranscriptionRun[] }
    | { readonly measured: false; readonly reason: string };
  readonly cost: {
    readonly compute: readonly ComputeCost[];
    /** Step Functions transitions of each whole job that succeeded (its chunk jobs' included), at list price. */
    readonly stateTransitionsPerJob: readonly {
      readonly audioSeconds: number;
      readonly chunks: number;
      readonly transitions: number;
      readonly usdPerJob: number;
    }[];
    readonly prices: { readonly region: string; readonly asOf: string; readonly file: string };
  };
}

export async function mediaSection(): Promise<MediaFigures> {
  print(`\n## audio.publish on ${AUDIO_SECONDS / 60} minutes of audio`);
  const dir = mkdtempSync(join(tmpdir(), 'longhaul-bench-media-'));
  try {
    const audioFile = process.env.BENCH_MEDIA_AUDIO || (await makeRecording(dir));
    const audio = { seconds: AUDIO_SECONDS, format: 'MP3, 64 kbit/s mono', bytes: statSync(audioFile).size };
    print(`recording: ${audioFile} (${fmt(audio.bytes / 1024 ** 2, 1)} MiB)`);

    const steps = await computeSteps(audioFile, dir);
    const transcription = await transcriptionOrReason(readFileSync(await firstMinutes(audioFile, dir)));
    if (!transcription.measured) print(`\n(2)-(4) not measured: ${transcription.reason}`);
    const cost = computeCost(steps, transcription, loadSettings({}), AUDIO_SECONDS);
    printCost(cost);
    return { audio, steps, transcription, cost };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** An hour of speech-like audio: one generated minute, looped and encoded once (generating an hour sample by sample takes minutes). */
/**
 * One minute encoded once, its MP3 frames then copied end to end: the same
 * recording as encoding the looped minute, made in seconds rather than in
 * minutes of the section's time (none of it is measured).
 */
async function makeRecording(dir: string): Promise<string> {
  const started = performance.now();
  const wav = join(dir, 'minute.wav');
  await generateTestAudio(wav, { seconds: 60, kind: 'speechlike' });
  const minute = join(dir, 'minute.mp3');
  const file = join(dir, 'sermon.mp3');
  const quiet = ['-nostdin', '-hide_banner', '-v', 'error', '-y'];
  for (const [args, out] of [
    [[...quiet, '-i', wav, '-c:a', 'libmp3lame', '-b:a', '64k', minute], minute],
    [[...quiet, '-stream_loop', String(AUDIO_SECONDS / 60 - 1), '-i', minute, '-c', 'copy', file], file],
  ] as const) {
    const run = await runTool(mediaBinaries().ffmpeg, [...args], { timeoutMs: 5 * 60_000 });
    if (run.exitCode !== 0) throw new Error(`could not make the recording: ${toolMessages(run.stderr, out)}`);
  }
  print(`made the recording in ${fmt((performance.now() - started) / 1000, 1)} s`);
  return file;
}

/** The recording's first `JOB_SECONDS`, its MP3 frames copied as they are. */
async function firstMinutes(audioFile: string, dir: string): Promise<string> {
  const file = join(dir, `first-${JOB_SECONDS}s.mp3`);
  const run = await runTool(
    mediaBinaries().ffmpeg,
    [
      '-nostdin',
      '-hide_banner',
      '-v',
      'error',
      '-y',
      '-i',
      audioFile,
      '-t',
      String(JOB_SECONDS),
      '-c',
      'copy',
      file,
    ],
    { timeoutMs: 60_000 },
  );
  if (run.exitCode !== 0) throw new Error(`could not cut the recording: ${toolMessages(run.stderr, file)}`);
  return file;
}

/** (1) probe, transcode and split (600 s and 3,600 s chunks), one process each, one after another. */
async function computeSteps(audioFile: string, dir: string): Promise<MeasuredStep[]> {
  print('\n### (1) compute steps, measured: each in its own process, as the compute function runs them');
  print(
    '| step | step time | process wall time | CPU (tree) | peak RSS of the tree | peak RSS per program |',
  );
  print('|---|---:|---:|---:|---:|---|');
  const runs: [string, number | undefined][] = [
    ['probe', undefined],
    ['transcode', undefined],
    ...CHUNKINGS.map((seconds) => ['split', seconds] as [string, number]),
  ];
  const steps: MeasuredStep[] = [];
  for (const [step, chunkSeconds] of runs) {
    const work = mkdtempSync(join(dir, `${step}-`));
    try {
      const run = await runStepProcess(step, audioFile, work, {
        ...(chunkSeconds === undefined ? {} : { TRANSCRIBE_CHUNK_SECONDS: String(chunkSeconds) }),
      });
      const chunks = Array.isArray(run.result) ? run.result.length : undefined;
      const measured: MeasuredStep = {
        ...run,
        wallS: round(run.wallS, 2),
        stepS: round(run.stepS, 2),
        cpuS: round(run.cpuS, 2),
        // A split's answer lists every chunk: its count is what matters here.
        result: chunks === undefined ? run.result : `${chunks} chunks`,
        ...(chunkSeconds === undefined ? {} : { chunkSeconds }),
        ...(chunks === undefined ? {} : { chunks }),
      };
      steps.push(measured);
      const name = chunkSeconds === undefined ? step : `${step}, ${chunkSeconds} s chunks (${chunks})`;
      const programs = Object.entries(run.peakByProgramMiB)
        .map(([program, mib]) => `${program} ${fmt(mib, 0)}`)
        .join(', ');
      print(
        `| ${name} | ${fmt(run.stepS, 1)} s | ${fmt(run.wallS, 1)} s | ${fmt(run.cpuS, 1)} s | ${fmt(run.peakTreeRssMiB, 0)} MiB | ${programs} (MiB) |`,
      );
    } finally {
      rmSync(work, { recursive: true, force: true });
    }
  }
  return steps;
}

/**
 * (2)-(4), or why they were not measured: the type not accepted yet, or the
 * local stack unable to run it. Nothing is estimated in their place.
 */
async function transcriptionOrReason(audio: Buffer): Promise<MediaFigures['transcription']> {
  if (!isJobType(PUBLISH)) {
    return {
      measured: false,
      reason: `${PUBLISH} is not accepted by the API on this branch yet (not in config/job-types)`,
    };
  }
  try {
    return { measured: true, runs: await transcriptionRuns(audio) };
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    const reason = `the local stack could not run ${PUBLISH}: ${message.split('\n')[0]}`;
    const detail = message.split('\n').find((line) => line.includes('could not start'));
    return { measured: false, reason: detail ? `${reason} (${detail.trim()})` : reason };
  }
}

/** (2)-(4) One job per chunking, each on a stack of its own (the chunk length is a stack setting). */
async function transcriptionRuns(audio: Buffer): Promise<TranscriptionRun[]> {
  print(
    `\n### (2)-(4) whole jobs on the local stack, on the recording's first ${JOB_SECONDS / 60} minutes (the local S3 emulator takes request bodies up to 11 MiB, which the hour's upload in one PUT exceeds): Deepgram (limit ${DEEPGRAM_LIMIT}) simulated at ${SIM_JOB_MS} ms + ${REAL_TIME_FACTOR} x each chunk's audio`,
  );
  const runs: TranscriptionRun[] = [];
  for (const chunkSeconds of JOB_CHUNKINGS) {
    const s = await startBenchStack({
      ...OWN_PROVIDER_FOR_EVERY_JOB_TYPE,
      [providerSettingEnv('deepgram').maxInFlight]: String(DEEPGRAM_LIMIT),
      TRANSCRIBE_CHUNK_SECONDS: String(chunkSeconds),
      SIM_JOB_MS: String(SIM_JOB_MS),
    });
    try {
      await s.provider('/_sim/config', { provider: 'deepgram', realTimeFactor: REAL_TIME_FACTOR });
      const chargedBefore = (await s.ledger()).byProvider?.deepgram.submissions.length ?? 0;
      const ref = await s.upload(audio, 'audio/mpeg');
      const { id } = await s.submitJob(PUBLISH, { audioRef: ref, language: 'en' });
      const [status = 'unknown'] = await s.settle([id], JOB_TIMEOUT_MS);
      const [job] = await s.jobTimes([id]);
      const { error } = await s.job(id);
      const events = await s.events(id);
      // Each chunk is a job of its own, named in the parent's timeline; a retried chunk is a new one.
      const chunkJobs = new Map(
        events.flatMap((event) => {
          const named = /^chunk (\d+).* as (job_[a-z0-9]+)$/.exec(event.detail ?? '');
          return event.type === 'chunk.submitted' && named ? [[named[2] as string, Number(named[1])]] : [];
        }),
      );
      const ledger = (await s.ledger()).byProvider?.deepgram;
      const charges = (
        await chargedJobs(s.stack.endpoints.providerUrl, 'deepgram', {
          submissions: (ledger?.submissions ?? []).slice(chargedBefore),
          maxConcurrent: 0,
          running: 0,
        })
      ).flatMap((charge) => {
        const index = charge.jobId === undefined ? undefined : chunkJobs.get(charge.jobId);
        return index === undefined ? [] : [index];
      });
      const chunkTimes = await s.jobTimes([...chunkJobs.keys()]);
      const [parentTransitions = 0] = await s.transitions([id]);
      const chunkTransitions = await s.transitions([...chunkJobs.keys()]);
      const stateTransitions = chunkTransitions.reduce((sum, n) => sum + n, parentTransitions);
      const seconds = (from: number | undefined, to: number | undefined) =>
        from === undefined || to === undefined ? undefined : round((to - from) / 1000, 2);
      const instants = (values: (string | undefined)[]) =>
        values.flatMap((value) => (value === undefined ? [] : [Date.parse(value)]));
      const chunkStarts = instants(chunkTimes.map((chunk) => chunk.startedAt));
      const chunkEnds = instants(chunkTimes.map((chunk) => chunk.finishedAt));
      const lastEnd =
        chunkEnds.length === chunkJobs.size && chunkEnds.length > 0 ? Math.max(...chunkEnds) : undefined;
      const run: TranscriptionRun = {
        chunkSeconds,
        status,
        ...(error ? { error: `${error.code}: ${error.message.split('\n')[0]}` } : {}),
        audioSeconds: JOB_SECONDS,
        chunks: planChunks(JOB_SECONDS, chunkSeconds).length,
        charges: charges.length,
        chunksCharged: new Set(charges).size,
        stateTransitions,
        parentStateTransitions: parentTransitions,
        ...optional('transcribeS', seconds(stepDone(events, 'split'), lastEnd)),
        ...optional(
          'providerSpanS',
          seconds(chunkStarts.length > 0 ? Math.min(...chunkStarts) : undefined, lastEnd),
        ),
        ...optional(
          'jobS',
          seconds(Date.parse(job?.createdAt ?? ''), job?.finishedAt ? Date.parse(job.finishedAt) : undefined),
        ),
      };
      runs.push(run);
      const shown = (value: number | undefined) =>
        value === undefined ? 'not in the timeline' : `${value} s`;
      print(
        `${chunkSeconds} s chunks: ${status}${run.error ? ` (${run.error})` : ''}; ${run.charges} Deepgram charges for ${run.chunks} chunks, ${run.chunksCharged} chunks charged` +
          `${run.charges === run.chunks && run.chunksCharged === run.chunks ? ' (one each, none twice)' : ' (NOT one per chunk)'}; ` +
          `transcription (split done → last chunk job finished) ${shown(run.transcribeS)}, ` +
          `first chunk started → last chunk finished ${shown(run.providerSpanS)}, whole job ${shown(run.jobS)}; ` +
          `state transitions ${stateTransitions} (the job's execution ${parentTransitions}, its ${chunkTransitions.length} chunk jobs' ${chunkTransitions.join(' + ')})`,
      );
      const steps = [...new Set(events.flatMap((event) => (event.step ? [event.step] : [])))];
      print(`  timeline steps: ${steps.join(', ') || 'none'}`);
    } finally {
      await s.stop();
    }
  }
  return runs;
}

/** When the timeline recorded the step's success (the last one, should it have been retried). */
function stepDone(events: readonly TimelineEvent[], step: string): number | undefined {
  const done = events.filter((event) => event.step === step && event.type === 'step.succeeded').at(-1);
  return done ? Date.parse(done.at) : undefined;
}

const optional = <K extends string>(key: K, value: number | undefined) =>
  (value === undefined ? {} : { [key]: value }) as { [P in K]?: number };

/**
 * (5) The compute steps' measured time at list prices, for an hour of audio:
 * on Lambda each step is one invocation billed by the millisecond at the
 * function's memory and /tmp; on Fargate each step is one task billed per
 * second, at least a minute, at the task's vCPU, memory and storage. Index
 * (merging the transcripts) is not in it: it needs the chunks' transcripts,
 * which only a whole job makes.
 */
export function computeCost(
  steps: readonly Pick<MeasuredStep, 'step' | 'stepS' | 'wallS' | 'chunkSeconds'>[],
  transcription: MediaFigures['transcription'],
  settings: Settings,
  audioSeconds = 3600,
): MediaFigures['cost'] {
  const perHour = 3600 / audioSeconds;
  // A job cuts its recording once, at the configured chunk length.
  const billed = steps.filter(
    (step) => step.chunkSeconds === undefined || step.chunkSeconds === settings.transcribeChunkSeconds,
  );
  const names = billed.map((step) => step.step).join(' + ');
  const lambdaGb = settings.computeMemoryMb / 1024;
  const lambdaTmpGb = Math.max(0, settings.computeEphemeralStorageMb - 512) / 1024;
  const lambdaSeconds = billed.reduce((sum, step) => sum + Math.ceil(step.stepS * 1000) / 1000, 0);
  const lambdaUsd =
    lambdaSeconds * lambdaGb * prices.lambdaArmPerGbSecond.usd +
    lambdaSeconds * lambdaTmpGb * prices.lambdaEphemeralStoragePerGbSecond.usd +
    billed.length * prices.lambdaPerRequest.usd;
  const vcpu = settings.computeFargateCpu / 1024;
  const fargateGb = settings.computeFargateMemoryMb / 1024;
  const extraStorageGb = Math.max(0, settings.computeFargateStorageGib - 20);
  // The process's whole run, start included, as a task is billed from start to stop.
  const fargateSeconds = billed.reduce((sum, step) => sum + Math.max(60, Math.ceil(step.wallS)), 0);
  const fargateUsd =
    (fargateSeconds / 3600) *
    (vcpu * prices.fargateArmPerVcpuHour.usd +
      fargateGb * prices.fargateArmPerGbHour.usd +
      extraStorageGb * prices.fargateEphemeralStoragePerGbHour.usd);
  const compute: ComputeCost[] = [
    {
      place: 'lambda',
      size: `${settings.computeMemoryMb} MB, ${settings.computeEphemeralStorageMb} MB /tmp, arm64`,
      billedSeconds: round(lambdaSeconds, 2),
      usdPerAudioHour: round(lambdaUsd * perHour, 5),
      basis: `measured step time of ${names} x GB-s, /tmp GB-s and request list prices`,
    },
    {
      place: 'fargate',
      size: `${vcpu} vCPU, ${fargateGb} GB, ${settings.computeFargateStorageGib} GiB storage, arm64`,
      billedSeconds: fargateSeconds,
      usdPerAudioHour: round(fargateUsd * perHour, 5),
      basis: `measured process time of ${names}, each a task billed for at least 60 s, x vCPU-hour, GB-hour and storage list prices`,
    },
  ];
  const stateTransitionsPerJob = (transcription.measured ? transcription.runs : [])
    .filter((r) => r.status === 'succeeded')
    .map((r) => ({
      audioSeconds: r.audioSeconds,
      chunks: r.chunks,
      transitions: r.stateTransitions,
      usdPerJob: round(r.stateTransitions * prices.stepFunctionsStandardPerTransition.usd, 6),
    }));
  return {
    compute,
    stateTransitionsPerJob,
    prices: { region: PRICES_REGION, asOf: PRICES_AS_OF, file: 'bench/prices.ts' },
  };
}

function printCost(cost: MediaFigures['cost']): void {
  print(
    '\n### (5) AWS cost per hour of audio: computed from measured time x list price (this machine: 2 x86 cores; Graviton at these sizes will differ)',
  );
  print('| place | size | billed | USD per hour of audio | basis |');
  print('|---|---|---:|---:|---|');
  for (const line of cost.compute) {
    print(
      `| ${line.place} | ${line.size} | ${fmt(line.billedSeconds, 1)} s | ${fmt(line.usdPerAudioHour, 5)} | ${line.basis} |`,
    );
  }
  if (cost.stateTransitionsPerJob.length === 0) {
    print('| Step Functions | | | not measured | needs whole jobs that succeeded on the local stack |');
  }
  for (const job of cost.stateTransitionsPerJob) {
    print(
      `| Step Functions | Standard | ${job.transitions} transitions | ${fmt(job.usdPerJob, 6)} per job | a ${job.audioSeconds} s job of ${job.chunks} chunks: counted in its and its chunk jobs' execution histories x list price |`,
    );
  }
}
