import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { prices } from '../../bench/prices';
import { computeCost, type MediaFigures } from '../../bench/sections/media';
import { mediaRows } from '../../bench/summary';
import { runStepProcess } from '../../bench/support/compute-run';
import { loadSettings } from '../../config/settings';
import { generateTestAudio } from '../../local/harness/test-audio';

/** The media section's parts: one compute step in a watched process, and the cost arithmetic. */

jest.setTimeout(60_000);

const notMeasured: MediaFigures['transcription'] = { measured: false, reason: 'no audio.publish here' };

describe('runStepProcess', () => {
  let dir: string;
  beforeAll(async () => {
    dir = mkdtempSync(path.join(tmpdir(), 'longhaul-bench-media-'));
    await generateTestAudio(path.join(dir, 'a.mp3'), { seconds: 4, kind: 'tone' });
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('runs the compute step in its own process and measures its time and memory', async () => {
    const run = await runStepProcess('probe', path.join(dir, 'a.mp3'), path.join(dir, 'work'), {});

    expect(run.result).toEqual({
      durationSeconds: expect.closeTo(4, 1),
      codec: 'mp3',
      channels: 1,
      compute: 'lambda',
    });
    expect(run.stepS).toBeGreaterThan(0);
    expect(run.wallS).toBeGreaterThan(run.stepS);
    // The step's own Node process is always seen; tsx's compiler is not the step's.
    expect(run.peakByProgramMiB.node).toBeGreaterThan(20);
    expect(run.peakByProgramMiB).not.toHaveProperty('esbuild');
    expect(run.peakTreeRssMiB).toBeGreaterThanOrEqual(run.peakByProgramMiB.node ?? 0);
  });

  it('fails with the step’s error when the step fails', async () => {
    await expect(
      runStepProcess('probe', path.join(dir, 'missing.mp3'), path.join(dir, 'work'), {}),
    ).rejects.toThrow(/the probe step exited 1: .*ENOENT/s);
  });
});

describe('computeCost', () => {
  const settings = loadSettings({});
  const steps = [
    { step: 'probe', stepS: 4, wallS: 8 },
    { step: 'transcode', stepS: 50, wallS: 70.2 },
    { step: 'split', stepS: 20, wallS: 25, chunkSeconds: settings.transcribeChunkSeconds },
    { step: 'split', stepS: 10, wallS: 15, chunkSeconds: 3600 },
  ];

  it('bills each step a job runs once: Lambda by the millisecond, Fargate per task of at least a minute', () => {
    const cost = computeCost(steps, notMeasured, settings);
    const [lambda, fargate] = cost.compute;

    // 3008 MB, 4096 MB of /tmp (3,584 MB above the 512 included), three invocations.
    const lambdaUsd =
      74 * (3008 / 1024) * prices.lambdaArmPerGbSecond.usd +
      74 * (3584 / 1024) * prices.lambdaEphemeralStoragePerGbSecond.usd +
      3 * prices.lambdaPerRequest.usd;
    expect(lambda).toMatchObject({ place: 'lambda', billedSeconds: 74 });
    expect(lambda?.usdPerAudioHour).toBeCloseTo(lambdaUsd, 5);
    // 60 + 71 + 60 s at 2 vCPU, 8 GB and 30 GB of storage above the 20 included.
    const fargateUsd =
      (191 / 3600) *
      (2 * prices.fargateArmPerVcpuHour.usd +
        8 * prices.fargateArmPerGbHour.usd +
        30 * prices.fargateEphemeralStoragePerGbHour.usd);
    expect(fargate).toMatchObject({ place: 'fargate', billedSeconds: 191 });
    expect(fargate?.usdPerAudioHour).toBeCloseTo(fargateUsd, 5);
    expect(cost.stateTransitionsPerJob).toEqual([]);
  });

  it('prices the state transitions of each whole job that succeeded', () => {
    const cost = computeCost(
      steps,
      {
        measured: true,
        runs: [
          {
            audioSeconds: 300,
            chunkSeconds: 300,
            status: 'succeeded',
            chunks: 1,
            charges: 1,
            chunksCharged: 1,
            stateTransitions: 20,
            parentStateTransitions: 12,
          },
          {
            audioSeconds: 300,
            chunkSeconds: 60,
            status: 'failed',
            chunks: 6,
            charges: 6,
            chunksCharged: 6,
            stateTransitions: 40,
            parentStateTransitions: 16,
          },
        ],
      },
      settings,
    );
    expect(cost.stateTransitionsPerJob).toEqual([
      { audioSeconds: 300, chunks: 1, transitions: 20, usdPerJob: 0.0005 },
    ]);
  });
});

describe('mediaRows', () => {
  it('says what was not measured instead of a figure', () => {
    const rows = mediaRows({
      audio: { seconds: 3600, format: 'MP3', bytes: 1 },
      steps: [],
      transcription: notMeasured,
      cost: {
        compute: [],
        stateTransitionsPerJob: [],
        prices: { region: 'us-east-1', asOf: '2026-12-02', file: 'bench/prices.ts' },
      },
    });
    expect(rows).toContainEqual([
      'audio.publish transcription, charges, state transitions, 60-min MP3',
      'not measured: no audio.publish here',
      '',
    ]);
    expect(rows[0]?.[1]).toBe('not measured');
  });
});
