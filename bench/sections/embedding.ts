import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { EMBEDDING_MODELS } from '../../config/embedding-models';
import { providerSettingEnv } from '../../config/settings';
import { mediaBinaries, runTool, toolMessages } from '../../lambdas/adapters/ffmpeg-media';
import { passageRuns } from '../../lambdas/domain/embedding';
import type { JobResource } from '../../lambdas/domain/job';
import { OWN_PROVIDER_FOR_EVERY_JOB_TYPE } from '../../local/harness/local-stack';
import { generateTestAudio } from '../../local/harness/test-audio';
import { inputDigestOf } from '../../local/provider-sim/bedrock';
import { installedBullmqVersion } from '../peer/bullmq';
import { startEmbeddingPeer } from '../peer/embedding-worker';
import { RedisProbe, startRedis } from '../peer/redis';
import { PRICES_AS_OF, PRICES_REGION, prices } from '../prices';
import { loadRetrievalSet, WORDS_PER_SECOND } from '../retrieval/set';
import { fmt, print, round, tally } from '../support/common';
import {
  type CallInterval,
  type ChargedCalls,
  chargedCalls,
  embeddingShare,
  ledgerIntervals,
  limitUse,
  PARENT_EMBEDDING_STEPS,
  type RunCalls,
  runGaps,
} from '../support/embedding';
import { gapFigures, type SlotGaps } from '../support/hand-off';
import { type BenchStack, type Ledger, startBenchStack } from '../support/stack';

/**
 * Embedding at the provider's limit. Longhaul publishes a burst of
 * recordings at once (`audio.publish`, each heard by the simulated Deepgram
 * as saying a stretch of the labelled set's English sermons, so its passages
 * are real sentences), and embeds their passages in runs of
 * `EMBEDDING_PASSAGES_PER_JOB`, each run a job holding one of Bedrock's
 * `MAX_IN_FLIGHT_BEDROCK` slots while its Titan calls run one after another.
 * The peer, a BullMQ Worker with the same concurrency, embeds the same
 * passages in runs of the same size through the same simulated Bedrock with
 * the same SDK call. Both are read from the simulator's ledger: passages
 * embedded per second, and the utilization of the limit (the time-integral of
 * calls in flight over limit × the window from the first call's acceptance to
 * the last call's answer). Then what a run costs Longhaul: its own
 * execution's state transitions and its parent's embedding states, and the
 * invocations and requests the request counter's log charges to the runs.
 */

const RECORDINGS = 8;
/** Whole minutes: each recording is one minute of audio copied end to end. */
const RECORDING_SECONDS = 300;
const LIMIT = 3;
const PASSAGES_PER_RUN = 2;
/** One Titan call at the simulated Bedrock. */
const CALL_MS = 200;
/** Titan's smallest: the simulator's embedder works less, and the call's time is CALL_MS whatever the size. */
const DIMENSIONS = 256;
const MODEL = 'titan-text-v2';
const TIMEOUT_MS = 120_000;
/** The simulated Deepgram's fixed part of a submission; its real-time factor adds 0.01 s a second of audio. */
const TRANSCRIBE_MS = 300;

export interface EmbeddingBurst {
  readonly passages: number;
  readonly runs: number;
  /** Calls billed: one a passage for Titan, unless one was billed twice. */
  readonly calls: number;
  readonly passagesBilledTwice: number;
  readonly windowS: number;
  readonly passagesPerS: number;
  readonly busySlotS: number;
  readonly maxInFlight: number;
  readonly utilizationPct: number;
  /** Within a run, one call's answer to the run's next call. */
  readonly betweenCalls?: SlotGaps;
  /** A run's last answer to the first call of the run that took its slot, while runs waited. */
  readonly betweenRuns?: SlotGaps;
}

export interface RunCostLine {
  readonly item: string;
  readonly perRun: number;
  readonly usdPerThousandRuns: number;
  readonly basis: string;
}

export interface EmbeddingFigures {
  readonly setup: {
    readonly recordings: number;
    readonly recordingSeconds: number;
    readonly limit: number;
    readonly passagesPerRun: number;
    readonly callMs: number;
    readonly model: string;
    readonly dimensions: number;
  };
  readonly longhaul: EmbeddingBurst & {
    readonly outcome: Record<string, number>;
    readonly perRun: {
      readonly runTransitions: number;
      readonly parentTransitions: number;
      readonly charged: ChargedCalls;
      readonly inputTokens: number;
    };
    readonly cost: { readonly lines: readonly RunCostLine[]; readonly usdPerThousandRuns: number };
  };
  readonly peer: EmbeddingBurst & {
    readonly bullmqVersion: string;
    readonly redisVersion: string;
    readonly outcome: { readonly completed: number; readonly failed: number };
  };
  readonly notMeasured: readonly string[];
}

/** What the figures leave out, said once wherever they are printed. */
export const EMBEDDING_NOT_MEASURED = [
  'DynamoDB index write units of the runs (the counter works them out inside the emulator, apart from the request)',
  'the event sources’ ReceiveMessage polling (a fixed cost, not a run’s)',
  'S3 Vectors PutVectors and storage (priced per published hour in the search section)',
  'S3 storage of the runs’ embeddings, CloudWatch logs and metrics, X-Ray, data transfer',
  'Lambda duration in AWS: the billed time is each invocation’s time on this machine, through tsx, by the function’s configured memory',
] as const;

const pct = (share: number) => round(share * 100, 1);

/** A run as both sides embed it: its passages' texts, and when its job was in the service's hands (epoch ms). */
interface QueuedRun {
  readonly texts: readonly string[];
  readonly queuedAt: number;
}

/** Each run's calls, found by the digests of the passages the ledger billed them for. */
function callsByRun(runs: readonly QueuedRun[], submissions: Ledger['submissions']): RunCalls[] {
  const runOf = new Map<string, number>();
  runs.forEach((run, i) => {
    for (const text of run.texts) runOf.set(inputDigestOf(text), i);
  });
  const calls = runs.map((): CallInterval[] => []);
  const intervals = ledgerIntervals(submissions);
  submissions.forEach((entry, i) => {
    const run = runOf.get(entry.inputDigests?.[0] ?? '');
    if (run === undefined) throw new Error(`Bedrock call ${entry.id} read no passage of the runs`);
    calls[run]?.push(intervals[i] as CallInterval);
  });
  return runs.map((run, i) => ({ queuedAt: run.queuedAt, calls: calls[i] as CallInterval[] }));
}

function burstFigures(runs: readonly QueuedRun[], submissions: Ledger['submissions']): EmbeddingBurst {
  const use = limitUse(ledgerIntervals(submissions), LIMIT);
  const passages = runs.reduce((sum, run) => sum + run.texts.length, 0);
  const digests = tally(submissions.flatMap((entry) => entry.inputDigests ?? []));
  const gaps = runGaps(callsByRun(runs, submissions), LIMIT);
  const betweenCalls = gapFigures(gaps.withinRuns);
  const betweenRuns = gapFigures(gaps.betweenRuns);
  return {
    passages,
    runs: runs.length,
    calls: use.calls,
    passagesBilledTwice: Object.values(digests).filter((n) => n > 1).length,
    windowS: round(use.windowMs / 1000, 2),
    passagesPerS: round(passages / (use.windowMs / 1000), 2),
    busySlotS: round(use.busySlotMs / 1000, 2),
    maxInFlight: use.maxInFlight,
    utilizationPct: pct(use.utilization),
    ...(betweenCalls ? { betweenCalls } : {}),
    ...(betweenRuns ? { betweenRuns } : {}),
  };
}

const bedrockCalls = (ledger: Ledger) => ledger.byProvider?.bedrock?.submissions ?? [];

/** Sentences of the labelled set's English sermons, `seconds` of speech for each recording, none shared. */
function recordingTexts(recordings: number, seconds: number): string[] {
  const words = loadRetrievalSet()
    .passages.filter((passage) => passage.language === 'en')
    .flatMap((passage) => passage.text.trim().split(/\s+/u));
  const perRecording = Math.round(seconds * WORDS_PER_SECOND);
  if (words.length < recordings * perRecording) {
    throw new Error(
      `the labelled set has ${words.length} English words; ${recordings * perRecording} are needed`,
    );
  }
  return Array.from({ length: recordings }, (_, i) =>
    words.slice(i * perRecording, (i + 1) * perRecording).join(' '),
  );
}

/**
 * One speech-like minute encoded once, its MP3 frames copied end to end into
 * each recording with the recording's words as its comment: generating every
 * recording sample by sample takes most of a minute on a busy machine.
 */
async function makeRecordings(dir: string, texts: readonly string[]): Promise<void> {
  const minute = join(dir, 'minute.mp3');
  await generateTestAudio(minute, { seconds: 60, kind: 'speechlike' });
  const quiet = ['-nostdin', '-hide_banner', '-v', 'error', '-y'];
  await Promise.all(
    texts.map(async (comment, i) => {
      const file = join(dir, `${i}.mp3`);
      const loops = String(RECORDING_SECONDS / 60 - 1);
      const args = [
        ...quiet,
        '-stream_loop',
        loops,
        '-i',
        minute,
        '-c',
        'copy',
        '-metadata',
        `comment=${comment}`,
        file,
      ];
      const run = await runTool(mediaBinaries().ffmpeg, args, { timeoutMs: 60_000 });
      if (run.exitCode !== 0)
        throw new Error(`could not make a recording: ${toolMessages(run.stderr, file)}`);
    }),
  );
}

async function passagesOf(job: JobResource): Promise<string[]> {
  const result = (job.result ?? {}) as { passages?: { text: string }[]; passagesUrl?: string };
  if (result.passages) return result.passages.map((passage) => passage.text);
  if (!result.passagesUrl) throw new Error(`${job.id} has no passages`);
  const response = await fetch(result.passagesUrl);
  if (!response.ok) throw new Error(`the passages of ${job.id} answered ${response.status}`);
  return ((await response.json()) as { text: string }[]).map((passage) => passage.text);
}

export async function embeddingSection(): Promise<EmbeddingFigures> {
  const model = EMBEDDING_MODELS[MODEL];
  print(
    `\n## Embedding at the provider's limit: ${RECORDINGS} recordings of ${RECORDING_SECONDS / 60} min published at once; ` +
      `Bedrock limit ${LIMIT}, ${PASSAGES_PER_RUN} passages a run, ${model.title} (${DIMENSIONS} dimensions) at ${CALL_MS} ms a call`,
  );
  const dir = mkdtempSync(join(tmpdir(), 'longhaul-bench-embedding-'));
  try {
    const texts = recordingTexts(RECORDINGS, RECORDING_SECONDS);
    const started = performance.now();
    const since = () => fmt((performance.now() - started) / 1000, 1);
    await makeRecordings(dir, texts);
    print(`made the recordings in ${since()} s`);
    const s = await startBenchStack(
      {
        ...OWN_PROVIDER_FOR_EVERY_JOB_TYPE,
        [providerSettingEnv('bedrock').maxInFlight]: String(LIMIT),
        // Transcription is not what is measured: every recording is one chunk, all at Deepgram at once.
        [providerSettingEnv('deepgram').maxInFlight]: String(RECORDINGS),
        TRANSCRIBE_CHUNK_SECONDS: String(RECORDING_SECONDS),
        EMBEDDING_MODEL: MODEL,
        EMBEDDING_DIMENSIONS: String(DIMENSIONS),
        EMBEDDING_PASSAGES_PER_JOB: String(PASSAGES_PER_RUN),
        SIM_JOB_MS: String(TRANSCRIBE_MS),
      },
      { logCalls: true },
    );
    try {
      print(`the local stack was up at ${since()} s`);
      await s.provider('/_sim/config', { provider: 'bedrock', jobMs: CALL_MS });
      const longhaul = await longhaulBurst(s, dir);
      print(`Longhaul's burst was measured at ${since()} s`);
      const peer = await peerBurst(s, longhaul.passagesByRecording);
      print(`the peer's at ${since()} s`);
      print(`not measured: ${EMBEDDING_NOT_MEASURED.join('; ')}`);
      return {
        setup: {
          recordings: RECORDINGS,
          recordingSeconds: RECORDING_SECONDS,
          limit: LIMIT,
          passagesPerRun: PASSAGES_PER_RUN,
          callMs: CALL_MS,
          model: model.modelId,
          dimensions: DIMENSIONS,
        },
        longhaul: longhaul.figures,
        peer,
        notMeasured: EMBEDDING_NOT_MEASURED,
      };
    } finally {
      await s.stop();
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

function printBurst(who: string, b: EmbeddingBurst) {
  const ideal = (LIMIT * 1000) / CALL_MS;
  print(
    `measured: ${who}: ${b.passages} passages in ${b.runs} runs, ${b.calls} Bedrock calls (${b.passagesBilledTwice} passages billed twice), ` +
      `most in flight ${b.maxInFlight} (limit ${LIMIT}${b.maxInFlight > LIMIT ? ', EXCEEDED' : ''}); ` +
      `window ${fmt(b.windowS, 2)} s (first call accepted to last answered): ${fmt(b.passagesPerS, 2)} passages/s (at most ${fmt(ideal, 1)}), ` +
      `utilization ${fmt(b.busySlotS, 2)} busy slot-s / (${LIMIT} x ${fmt(b.windowS, 2)} s) = ${fmt(b.utilizationPct, 1)} %`,
  );
  print(
    `measured: ${who}: within a run, an answer to the run's next call: ${gapsText(b.betweenCalls)}; ` +
      `a run's last answer to the first call of the run that took its slot, while runs waited: ${gapsText(b.betweenRuns)}`,
  );
}

const gapsText = (g: SlotGaps | undefined) =>
  g === undefined ? 'none' : `p50 ${g.p50Ms} ms, p99 ${g.p99Ms} ms, max ${g.maxMs} ms (n=${g.gaps})`;

async function longhaulBurst(s: BenchStack, dir: string) {
  const before = bedrockCalls(await s.ledger()).length;
  const ids: string[] = [];
  for (let i = 0; i < RECORDINGS; i++) {
    const ref = await s.upload(readFileSync(join(dir, `${i}.mp3`)), 'audio/mpeg');
    ids.push((await s.submitJob('audio.publish', { audioRef: ref, language: 'en' })).id);
  }
  const submitted = performance.now();
  const outcome = tally(await s.settle(ids, TIMEOUT_MS));
  print(
    `uploaded and submitted; all ${RECORDINGS} finished ${fmt((performance.now() - submitted) / 1000, 1)} s after the last submission`,
  );
  const parents = await Promise.all(ids.map((id) => s.job(id)));
  const failed = parents.find((job) => job.status !== 'succeeded');
  if (failed) {
    throw new Error(
      `${failed.id} ended ${failed.status}: ${failed.error?.code} ${failed.error?.message ?? ''}`,
    );
  }
  const passagesByRecording = await Promise.all(parents.map(passagesOf));
  // Each run's job, named in its recording's timeline with the passages it embeds.
  const runJobs = (await Promise.all(ids.map((id) => s.events(id)))).map((events) =>
    events.flatMap((event) => {
      const run =
        event.type === 'embedding.submitted'
          ? /^passages (\d+)–\d+.* as (job_[a-z0-9]+)$/.exec(event.detail ?? '')
          : null;
      return run ? [{ from: Number(run[1]), id: run[2] as string }] : [];
    }),
  );
  const runIds = runJobs.flat().map((run) => run.id);
  const createdAt = new Map((await s.jobTimes(runIds)).map((job) => [job.id, Date.parse(job.createdAt)]));
  const runs = passagesByRecording.flatMap((texts, recording) =>
    passageRuns(texts.length, PASSAGES_PER_RUN).map(({ from, count }): QueuedRun => {
      const queued = (runJobs[recording] ?? [])
        .filter((job) => job.from === from)
        .map((job) => createdAt.get(job.id) as number);
      if (queued.length === 0) throw new Error(`no job embedded passages ${from}.. of ${ids[recording]}`);
      return { texts: texts.slice(from, from + count), queuedAt: Math.min(...queued) };
    }),
  );
  const submissions = bedrockCalls(await s.ledger()).slice(before);
  const figures = burstFigures(runs, submissions);
  print(`\n### Longhaul: ${RECORDINGS} audio.publish jobs, outcome ${JSON.stringify(outcome)}`);
  printBurst('Longhaul', figures);

  // What a run costs: its own execution, its share of its parent's, the calls charged to it.
  const runTransitions = (await s.transitions(runIds)).reduce((sum, n) => sum + n, 0);
  const parentTransitions = (await Promise.all(ids.map((id) => s.history(id))))
    .flat()
    .filter(
      (event) =>
        event.type.endsWith('StateEntered') &&
        (event.state === 'embed-passages' ||
          (PARENT_EMBEDDING_STEPS as readonly string[]).includes(event.state ?? '')),
    ).length;
  const runCount = runIds.length;
  const charged = chargedCalls(await s.calls(), embeddingShare(new Set(runIds), new Set(ids)), (fn) =>
    s.functionMemoryMb(fn),
  );
  const inputTokens = submissions.reduce((sum, entry) => sum + (entry.inputTokens ?? 0), 0);
  const perRun = {
    runTransitions: round(runTransitions / runCount, 2),
    parentTransitions: round(parentTransitions / runCount, 2),
    charged: perRunCalls(charged, runCount),
    inputTokens: round(inputTokens / runCount, 1),
  };
  const cost = runCost(perRun);
  print(
    `measured: per run (${runCount} runs of ${PASSAGES_PER_RUN} passages): ${perRun.runTransitions} state transitions in its own execution ` +
      `(StateEntered events) + ${perRun.parentTransitions} of its parent's embedding states (${['embed-passages', ...PARENT_EMBEDDING_STEPS].join(', ')}); ` +
      `invocations ${Object.entries(perRun.charged.invocations)
        .map(([fn, n]) => `${fn} ${fmt(n, 2)}`)
        .join(', ')}; requests ${Object.entries(perRun.charged.requests)
        .sort(([, a], [, b]) => b - a)
        .map(([name, n]) => `${name} ${fmt(n, 2)}`)
        .join(', ')}`,
  );
  print(
    `measured: charged to the runs: the invocations of their jobs' steps, their parents' ${PARENT_EMBEDDING_STEPS.join(', ')} steps, ` +
      'and the dispatch invocations by the share of their messages that were the runs’; each request with the invocation it was made in (request counter log)',
  );
  print('| item | per run | USD per 1,000 runs | basis |');
  print('|---|---:|---:|---|');
  for (const line of cost.lines) {
    print(`| ${line.item} | ${fmt(line.perRun, 2)} | ${fmt(line.usdPerThousandRuns, 4)} | ${line.basis} |`);
  }
  print(
    `| total | | ${fmt(cost.usdPerThousandRuns, 4)} | ${PRICES_REGION} list prices as of ${PRICES_AS_OF} (bench/prices.ts) |`,
  );
  return { figures: { ...figures, outcome, perRun, cost }, passagesByRecording };
}

function perRunCalls(charged: ChargedCalls, runs: number): ChargedCalls {
  const each = (counts: Readonly<Record<string, number>>) =>
    Object.fromEntries(Object.entries(counts).map(([key, n]) => [key, round(n / runs, 3)]));
  return {
    invocations: each(charged.invocations),
    gbSeconds: round(charged.gbSeconds / runs, 4),
    requests: each(charged.requests),
    dynamodb: each(charged.dynamodb) as ChargedCalls['dynamodb'],
  };
}

const SQS_BILLED = /^sqs:(?!ReceiveMessage)/;

function runCost(perRun: EmbeddingFigures['longhaul']['perRun']) {
  const { charged } = perRun;
  const sum = (pattern: RegExp) =>
    Object.entries(charged.requests)
      .filter(([name]) => pattern.test(name))
      .reduce((total, [, n]) => total + n, 0);
  const invocations = Object.values(charged.invocations).reduce((total, n) => total + n, 0);
  const line = (item: string, quantity: number, unitUsd: number, basis: string): RunCostLine => ({
    item,
    perRun: quantity,
    usdPerThousandRuns: quantity * unitUsd * 1000,
    basis,
  });
  const lines = [
    line(
      'Step Functions state transitions',
      perRun.runTransitions + perRun.parentTransitions,
      prices.stepFunctionsStandardPerTransition.usd,
      "counted: the run's execution and its share of its parent's embedding states",
    ),
    line('Lambda requests', invocations, prices.lambdaPerRequest.usd, 'counted'),
    line(
      'Lambda duration (GB-s)',
      charged.gbSeconds,
      prices.lambdaArmPerGbSecond.usd,
      "counted on this machine: each invocation's ms x its function's memory; the submit step waits on its Bedrock calls",
    ),
    line(
      'DynamoDB write units (table)',
      charged.dynamodb.writeUnits,
      prices.dynamoDbPerWriteRequestUnit.usd,
      `counted: ${fmt(charged.dynamodb.writes, 1)} writes; index writes not attributed`,
    ),
    line(
      'DynamoDB read units',
      charged.dynamodb.readUnits,
      prices.dynamoDbPerReadRequestUnit.usd,
      `counted: ${fmt(charged.dynamodb.reads, 1)} reads`,
    ),
    line('SQS requests', sum(SQS_BILLED), prices.sqsPerRequest.usd, 'counted: all but ReceiveMessage'),
    line('S3 PUT', sum(/^s3:PUT$/), prices.s3PutPerRequest.usd, 'counted'),
    line('S3 GET', sum(/^s3:(GET|HEAD)$/), prices.s3GetPerRequest.usd, 'counted'),
    line(
      'Bedrock input tokens (Titan)',
      perRun.inputTokens,
      prices.bedrockTitanTextEmbeddingsV2PerInputToken.usd,
      "counted by the simulator's tokenizer",
    ),
  ];
  return { lines, usdPerThousandRuns: lines.reduce((total, l) => total + l.usdPerThousandRuns, 0) };
}

async function peerBurst(
  s: BenchStack,
  passagesByRecording: readonly string[][],
): Promise<EmbeddingFigures['peer']> {
  const texts = passagesByRecording.flatMap((recording) =>
    passageRuns(recording.length, PASSAGES_PER_RUN).map(({ from, count }) =>
      recording.slice(from, from + count),
    ),
  );
  const redis = await startRedis(print);
  try {
    const probe = await RedisProbe.connect(redis.port);
    const redisVersion = await probe.version();
    await probe.close();
    const bullmqVersion = installedBullmqVersion();
    print(
      `\n### Peer: BullMQ ${bullmqVersion} on Redis ${redisVersion}, one Worker of concurrency ${LIMIT}, one job per run of the same passages, ` +
        'each passage one InvokeModel call of @aws-sdk/client-bedrock-runtime to the same simulated Bedrock, one after another',
    );
    const peer = await startEmbeddingPeer({
      redisPort: redis.port,
      limit: LIMIT,
      bedrockUrl: `${s.stack.endpoints.providerUrl}/bedrock`,
      dimensions: DIMENSIONS,
    });
    try {
      const before = bedrockCalls(await s.ledger()).length;
      const queuedAt = Date.now();
      const outcome = await peer.embed(texts, TIMEOUT_MS);
      const submissions = bedrockCalls(await s.ledger()).slice(before);
      const figures = burstFigures(
        texts.map((run) => ({ texts: run, queuedAt })),
        submissions,
      );
      print(`measured: peer: ${outcome.completed} jobs completed, ${outcome.failed} failed`);
      printBurst('peer', figures);
      return { ...figures, bullmqVersion, redisVersion, outcome };
    } finally {
      await peer.stop();
    }
  } finally {
    await redis.stop();
  }
}
