import { jobTypeProviderEnv, providerSettingEnv } from '../../config/settings';
import type { JobResource } from '../../lambdas/domain/job';
import {
  type StartWaits,
  type Submissions,
  startWaits,
  submitBurst,
  untilProviderRanAll,
  utilizationPct,
} from '../support/burst';
import { fmt, print, round, sizeFromEnv, tally } from '../support/common';
import { cpuMeter } from '../support/cpu';
import { type BenchStack, type ProviderLedger, startBenchStack } from '../support/stack';

/**
 * Two providers in one stack: image.generate on Replicate and audio.transcribe
 * on Deepgram, each under its own limit, 1 s jobs. First transcriptions alone,
 * then a burst of images and the same number of transcriptions submitted
 * together. The simulator's ledger says how busy each provider was and how
 * many ran there at once; each job's `createdAt` → `startedAt` says how long
 * the transcriptions waited for a Deepgram slot, which the image burst must
 * not lengthen. The BullMQ peer has one queue and one concurrency for every
 * job type, so it has no per-provider figure to set beside these.
 */

const IMAGE = { jobType: 'image.generate', provider: 'replicate', limit: 5, clients: 30 } as const;
const AUDIO = { jobType: 'audio.transcribe', provider: 'deepgram', limit: 3, clients: 10 } as const;
type Kind = typeof IMAGE | typeof AUDIO;
const JOB_MS = 1000;

/** One provider over one run. */
export interface ProviderUse {
  readonly provider: string;
  readonly jobs: number;
  readonly limit: number;
  readonly maxInFlight: number;
  /** From the first submission until the provider had run every job sent to it. */
  readonly makespanS: number;
  readonly utilizationPct: number;
}

export interface ProvidersRun {
  readonly images: number;
  readonly transcriptions: number;
  /** Each provider that was sent jobs, images' first. */
  readonly providers: readonly ProviderUse[];
  readonly transcriptionStartWait: StartWaits;
  readonly imageStartWait?: StartWaits;
  readonly outcome: Record<string, number>;
  /**
   * Cores the local stack's processes kept busy on average over the run (1 =
   * one core all the time): every function, emulator and the simulator share
   * one Node process, whose JavaScript runs on one core.
   */
  readonly stackCores?: number;
}

export interface ProvidersFigures {
  readonly jobMs: number;
  readonly alone: ProvidersRun;
  readonly together: ProvidersRun;
  readonly deadLetters: number;
}

/**
 * The section's sizes: `BENCH_PROVIDERS_IMAGES` and `BENCH_PROVIDERS_AUDIO`,
 * else 160 and 100: 160 images keep Replicate's five slots busy for about as
 * long as the 100 transcriptions take on Deepgram's three.
 */
export function providersSizes(env: Readonly<Record<string, string | undefined>>): {
  images: number;
  transcriptions: number;
} {
  return {
    images: sizeFromEnv(env, 'BENCH_PROVIDERS_IMAGES', 160),
    transcriptions: sizeFromEnv(env, 'BENCH_PROVIDERS_AUDIO', 100),
  };
}

export async function providersSection(): Promise<ProvidersFigures> {
  const { images, transcriptions } = providersSizes(process.env);
  print(
    `\n## 8. Two providers: ${IMAGE.jobType} on ${IMAGE.provider} (limit ${IMAGE.limit}), ` +
      `${AUDIO.jobType} on ${AUDIO.provider} (limit ${AUDIO.limit}), ${JOB_MS} ms jobs`,
  );
  const s = await startBenchStack({
    [jobTypeProviderEnv(IMAGE.jobType)]: IMAGE.provider,
    [jobTypeProviderEnv(AUDIO.jobType)]: AUDIO.provider,
    [providerSettingEnv(IMAGE.provider).maxInFlight]: String(IMAGE.limit),
    [providerSettingEnv(AUDIO.provider).maxInFlight]: String(AUDIO.limit),
    SIM_JOB_MS: String(JOB_MS),
  });
  try {
    // The handlers compile on their first invocation: one job of each kind first, so neither run pays for it.
    await s.settle([(await s.submit('warm-up')).id, (await s.submitTranscription('warm-up')).id], 60_000);
    print(`### ${transcriptions} transcriptions alone`);
    const alone = await run(s, 0, transcriptions);
    print(`### ${images} images and ${transcriptions} transcriptions submitted together`);
    const together = await run(s, images, transcriptions);
    const deadLetters = await s.queueDepth(s.stack.endpoints.deadLetterQueueUrl);
    const before = alone.transcriptionStartWait;
    const beside = together.transcriptionStartWait;
    print(
      `measured: transcription start wait p50 / p95 / max: alone ${waits(before)}, beside the images ${waits(beside)}`,
    );
    print(`measured: jobs in the dead-letter queue = ${deadLetters}`);
    print(
      'peer: not run; BullMQ has one queue and one concurrency for every job type, no per-provider limit',
    );
    return { jobMs: JOB_MS, alone, together, deadLetters };
  } finally {
    await s.stop();
  }
}

async function run(s: BenchStack, images: number, transcriptions: number): Promise<ProvidersRun> {
  await s.provider('/_sim/reset', {});
  const cores = cpuMeter(s.stack.pid);
  const started = performance.now();
  const none: Submissions = { ids: [], latencies: [], answeredAt: [] };
  const [drawn, heard] = await Promise.all([
    images > 0 ? submitBurst((prompt) => s.submit(prompt), images, IMAGE.clients) : none,
    submitBurst((name) => s.submitTranscription(name.replace(/\W+/g, '-')), transcriptions, AUDIO.clients),
  ]);
  print(
    `measured: all ${images + transcriptions} submitted after ${fmt((performance.now() - started) / 1000, 1)} s`,
  );
  const finished = async (kind: Kind, jobs: number) => {
    await untilProviderRanAll(async () => providerLedger(await s.ledger(), kind.provider), jobs);
    return performance.now() - started;
  };
  const [imagesMs, transcriptionsMs] = await Promise.all([
    images > 0 ? finished(IMAGE, images) : undefined,
    finished(AUDIO, transcriptions),
  ]);
  const outcome = tally(await s.settle([...drawn.ids, ...heard.ids], 120_000));
  const ledger = await s.ledger();
  const use = (kind: Kind, jobs: number, makespanMs: number): ProviderUse => {
    const account = providerLedger(ledger, kind.provider);
    const busySlotMs = account.submissions.length * JOB_MS;
    const figures: ProviderUse = {
      provider: kind.provider,
      jobs,
      limit: kind.limit,
      maxInFlight: account.maxConcurrent,
      makespanS: round(makespanMs / 1000, 1),
      utilizationPct: utilizationPct(busySlotMs, kind.limit, makespanMs),
    };
    print(
      `measured: ${kind.provider}: ${account.submissions.length} charges for ${jobs} jobs, ` +
        `most in flight ${figures.maxInFlight} (limit ${kind.limit}${figures.maxInFlight > kind.limit ? ', EXCEEDED' : ''}), ` +
        `makespan ${fmt(figures.makespanS, 1)} s (ideal ${fmt((jobs * JOB_MS) / kind.limit / 1000, 1)} s), ` +
        `utilization ${busySlotMs / 1000} busy slot-s / (${kind.limit} x ${fmt(figures.makespanS, 1)} s) = ${fmt(figures.utilizationPct, 1)} %`,
    );
    return figures;
  };
  const providers = [
    ...(imagesMs === undefined ? [] : [use(IMAGE, images, imagesMs)]),
    use(AUDIO, transcriptions, transcriptionsMs),
  ];
  const stackCores = cores();
  const transcriptionStartWait = startWaits(await jobsRanOn(s, heard.ids, AUDIO));
  const imageStartWait = images > 0 ? startWaits(await jobsRanOn(s, drawn.ids, IMAGE)) : undefined;
  print(`measured: outcome ${JSON.stringify(outcome)}`);
  print(`measured: transcription start wait p50 / p95 / max = ${waits(transcriptionStartWait)}`);
  if (imageStartWait) print(`measured: image start wait p50 / p95 / max = ${waits(imageStartWait)}`);
  if (stackCores !== undefined) {
    print(`measured: the local stack kept ${fmt(stackCores, 2)} cores busy on average over the run`);
  }
  return {
    ...(stackCores === undefined ? {} : { stackCores: round(stackCores, 2) }),
    images,
    transcriptions,
    providers,
    transcriptionStartWait,
    ...(imageStartWait ? { imageStartWait } : {}),
    outcome,
  };
}

/** One provider's part of the ledger; the simulator leaves `byProvider` out until something was charged. */
function providerLedger(ledger: { byProvider?: Readonly<Record<string, ProviderLedger>> }, provider: string) {
  return ledger.byProvider?.[provider] ?? { submissions: [], maxConcurrent: 0, running: 0 };
}

/** The jobs as the API shows them, each checked to have run on the provider this section put it on. */
async function jobsRanOn(s: BenchStack, ids: readonly string[], kind: Kind): Promise<JobResource[]> {
  const jobs: JobResource[] = [];
  for (let i = 0; i < ids.length; i += 20) jobs.push(...(await Promise.all(ids.slice(i, i + 20).map(s.job))));
  const elsewhere = jobs.filter((job) => job.provider !== kind.provider);
  if (elsewhere.length > 0) {
    throw new Error(
      `${elsewhere.length} ${kind.jobType} jobs ran on ${elsewhere[0]?.provider}, not ${kind.provider}`,
    );
  }
  return jobs;
}

const waits = (w: StartWaits) => `${w.p50Ms} / ${w.p95Ms} / ${w.maxMs} ms (n=${w.jobs})`;
