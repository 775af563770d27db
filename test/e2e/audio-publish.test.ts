import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ListObjectsV2Command } from '@aws-sdk/client-s3';
import { type Job, Longhaul } from '../../client';
import {
  OWN_PROVIDER_FOR_EVERY_JOB_TYPE,
  pollUntil,
  type RunningLocalStack,
  s3Client,
  startLocalStack,
} from '../../local/harness/local-stack';
import { chargedJobs } from '../../local/harness/provider-jobs';
import { generateTestAudio } from '../../local/harness/test-audio';
import type { Ledger } from '../../local/provider-sim/simulator';
import { playedSeconds, statesEntered } from './support/media';
import { itemOfVectorKey, storedVectorKeys } from './support/vectors';

/**
 * `audio.publish` end to end on the local stack, with the Deepgram dialect of
 * the simulator: a recording becomes a stream that a real player (ffmpeg,
 * from the npm package) plays over HTTP from its presigned playlist, for as
 * long as the recording lasts, and a transcript in passages, with one
 * provider charge per chunk. A short recording runs its compute steps on the
 * compute function, a longer one on the Fargate task (the local stack runs
 * both through the same entrypoint). Bad input fails before any charge and
 * leaves no outputs behind.
 */

jest.setTimeout(240_000);

const KEY = 'publish-key-71c3';
const OTHER_KEY = 'publish-other-key-0d84';
const CHUNK_SECONDS = 20;

let stack: RunningLocalStack;
let client: Longhaul;
let other: Longhaul;
let dir: string;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'longhaul-publish-'));
  await Promise.all([
    generateTestAudio(join(dir, 'short.m4a'), { seconds: 30, kind: 'speechlike' }),
    generateTestAudio(join(dir, 'long.mp3'), { seconds: 50, kind: 'speechlike' }),
    generateTestAudio(join(dir, 'too-long.mp3'), { seconds: 130, kind: 'tone' }),
  ]);
  const whole = readFileSync(join(dir, 'short.m4a'));
  writeFileSync(join(dir, 'truncated.m4a'), whole.subarray(0, Math.floor(whole.length / 2)));
  stack = await startLocalStack({
    env: {
      ...OWN_PROVIDER_FOR_EVERY_JOB_TYPE,
      LONGHAUL_API_KEYS: `${KEY}:acme,${OTHER_KEY}:globex`,
      SIM_JOB_MS: '300',
      SLOT_WAIT_MAX_SECONDS: '1',
      MAX_IN_FLIGHT_DEEPGRAM: '2',
      TRANSCRIBE_CHUNK_SECONDS: String(CHUNK_SECONDS),
      PUBLISH_MAX_DURATION_SECONDS: '120',
      // The 50 s recording is "too long for Lambda" here, so it takes the Fargate path.
      COMPUTE_LAMBDA_MAX_AUDIO_SECONDS: '40',
    },
  });
  client = new Longhaul({ baseUrl: stack.baseUrl, apiKey: KEY });
  other = new Longhaul({ baseUrl: stack.baseUrl, apiKey: OTHER_KEY });
}, 120_000);

afterAll(async () => {
  await stack?.stop();
  rmSync(dir, { recursive: true, force: true });
});

const deadline = () => AbortSignal.timeout(150_000);

async function publish(file: string, contentType: string, as = client): Promise<Job> {
  const uploaded = await as.uploadFile({ data: readFileSync(join(dir, file)), contentType });
  const { job } = await as.createJob(as.userAction(), {
    type: 'audio.publish',
    input: { audioRef: uploaded.ref, language: 'en' },
  });
  return job;
}

const simLedger = async (): Promise<Ledger> =>
  (await (await fetch(`${stack.endpoints.providerUrl}/_sim/ledger`)).json()) as Ledger;

/** The provider jobs charged for chunks of `job`, by the chunk jobs its timeline names. */
async function chunkCharges(job: Job): Promise<{ chunkJobs: string[]; charged: string[] }> {
  const events = await client.jobEvents(job.id);
  const chunkJobs = events
    .filter((event) => event.type === 'chunk.submitted')
    .map((event) => /as (job_[a-z0-9]+)/.exec(event.detail ?? '')?.[1] as string);
  const ledger = await simLedger();
  const charges = await chargedJobs(stack.endpoints.providerUrl, 'deepgram', ledger.byProvider?.deepgram);
  return {
    chunkJobs,
    charged: charges.flatMap((charge) =>
      charge.jobId && chunkJobs.includes(charge.jobId) ? [charge.jobId] : [],
    ),
  };
}

async function outputsOf(job: Job): Promise<string[]> {
  const listed = await s3Client(stack.endpoints).send(
    new ListObjectsV2Command({ Bucket: stack.endpoints.outputBucketName, Prefix: `outputs/acme/${job.id}/` }),
  );
  return (listed.Contents ?? []).map((object) => object.Key as string);
}

describe('audio.publish', () => {
  it.each([
    ['short.m4a', 'audio/mp4', 30, 'lambda'],
    ['long.mp3', 'audio/mpeg', 50, 'fargate'],
  ] as const)(
    'publishes %s (%s, %s s, compute on %s) as a stream that plays for its whole length, with passages and one charge per chunk',
    async (file, contentType, seconds, place) => {
      const job = await publish(file, contentType);
      const done = await client.waitForJob(job.id, { pollIntervalMs: 250, signal: deadline() });
      expect(done).toMatchObject({ type: 'audio.publish', status: 'succeeded', error: null });
      const result = done.result as Extract<Job, { type: 'audio.publish' }>['result'] &
        Record<string, unknown>;
      expect(result.durationSeconds).toBeCloseTo(seconds, 0);
      expect(result.renditions.map((r) => r.bitrateKbps)).toEqual([64, 128]);
      expect(result.passages?.length).toBeGreaterThan(0);
      for (const passage of result.passages ?? []) expect(passage.end).toBeLessThanOrEqual(seconds + 1);

      // A standard player, no headers: every playlist and segment reachable, for as long as the input lasts.
      expect(await playedSeconds(result.playlistUrl)).toBeCloseTo(seconds, 0);
      for (const rendition of result.renditions) {
        expect(await playedSeconds(rendition.playlistUrl)).toBeCloseTo(seconds, 0);
      }
      const transcript = (await (await fetch(result.transcriptUrl)).json()) as { words: unknown[] };
      expect(transcript.words.length).toBeGreaterThan(0);
      // The URLs are signed: the same object without its signature is refused.
      expect((await fetch(result.playlistUrl.split('?')[0] as string)).status).toBe(403);
      // Another tenant cannot see the job, so it gets none of its URLs.
      await expect(other.getJob(job.id)).rejects.toMatchObject({ status: 404 });

      const chunks = Math.ceil(seconds / CHUNK_SECONDS);
      const { chunkJobs, charged } = await chunkCharges(job);
      expect(chunkJobs).toHaveLength(chunks);
      expect(charged.sort()).toEqual([...chunkJobs].sort());
      // Chunk jobs are parts of their parent: not in the tenant's listing, not readable by id.
      const listed: string[] = [];
      for await (const item of client.listJobs({ limit: 100 })) listed.push(item.id);
      expect(listed).toContain(job.id);
      for (const chunkJob of chunkJobs) expect(listed).not.toContain(chunkJob);
      await expect(client.getJob(chunkJobs[0] as string)).rejects.toMatchObject({ status: 404 });

      const events = await client.jobEvents(job.id);
      const steps = new Set(events.flatMap((event) => (event.step ? [event.step] : [])));
      for (const step of [
        'prepare',
        'probe',
        'transcode',
        'split',
        'transcribe',
        'index',
        'finalize',
        'notify',
      ]) {
        expect(steps).toContain(step);
      }
      // The heavy steps ran where probe chose: the compute function, or the Fargate task.
      const entered = await statesEntered(stack.endpoints, job);
      const onFargate = ['transcode-on-fargate', 'transcode-collect', 'split-on-fargate', 'split-collect'];
      const onLambda = ['transcode', 'split'];
      for (const state of place === 'fargate' ? onFargate : onLambda) expect(entered).toContain(state);
      for (const state of place === 'fargate' ? onLambda : onFargate) expect(entered).not.toContain(state);
      expect(entered.filter((state) => state === 'transcribe')).toHaveLength(chunks);
    },
  );

  it.each([
    ['not audio', 'noise.mp3', 'audio/mpeg', 'input_invalid'],
    ['truncated', 'truncated.m4a', 'audio/mp4', 'input_invalid'],
    ['longer than the maximum', 'too-long.mp3', 'audio/mpeg', 'input_too_long'],
  ])(
    'fails a recording that is %s as %s before anything is charged, leaving no outputs',
    async (_what, file, contentType, code) => {
      if (file === 'noise.mp3')
        writeFileSync(join(dir, file), 'this is a text file, not a recording\n'.repeat(50));
      const before = await simLedger();
      const job = await publish(file, contentType);
      const done = await client.waitForJob(job.id, { pollIntervalMs: 250, signal: deadline() });
      expect(done).toMatchObject({ status: 'failed', error: { code } });
      const after = await simLedger();
      expect(after.submissions.length).toBe(before.submissions.length);
      await pollUntil(async () => ((await outputsOf(job)).length === 0 ? true : undefined), {
        description: 'the failed job has no outputs',
      });
    },
  );

  it("refuses an upload ref of another tenant's, and an empty upload, charging nothing", async () => {
    const theirs = await other.uploadFile({
      data: readFileSync(join(dir, 'short.m4a')),
      contentType: 'audio/mp4',
    });
    const { job } = await client.createJob(client.userAction(), {
      type: 'audio.publish',
      input: { audioRef: theirs.ref },
    });
    const done = await client.waitForJob(job.id, { pollIntervalMs: 250, signal: deadline() });
    expect(done).toMatchObject({ status: 'failed', error: { code: 'input_not_found' } });

    const empty = await client
      .createJob(client.userAction(), {
        type: 'audio.publish',
        input: {},
        file: { data: new Uint8Array(0), contentType: 'audio/mpeg' },
      })
      .catch((error: unknown) => error);
    expect(empty).toMatchObject({ status: 400 });
  });

  it('cancels its chunk jobs with it: a chunk still waiting for a slot is never charged, and the job is canceled only once the chunk Deepgram runs out has ended, leaving no outputs or vectors', async () => {
    const config = (jobMs: number) =>
      fetch(`${stack.endpoints.providerUrl}/_sim/config`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ provider: 'deepgram', jobMs }),
      });
    // Long enough at Deepgram that another tenant's transcription holds one of its two slots throughout.
    await config(8000);
    try {
      const theirs = await other.uploadFile({
        data: readFileSync(join(dir, 'short.m4a')),
        contentType: 'audio/mp4',
      });
      await other.createJob(other.userAction(), {
        type: 'audio.transcribe',
        input: { audioRef: theirs.ref },
      });
      await pollUntil(
        async () => (((await simLedger()).byProvider?.deepgram?.running ?? 0) > 0 ? true : undefined),
        {
          timeoutMs: 60_000,
          intervalMs: 100,
          description: "the other tenant's transcription at Deepgram",
        },
      );
      const job = await publish('short.m4a', 'audio/mp4');
      // The first chunk takes the other slot; the second is made and waits in its line for one.
      const atCancel = await pollUntil(
        async () => {
          const charges = await chunkCharges(job);
          return charges.charged.length === 1 && charges.chunkJobs.length === 2 ? charges : undefined;
        },
        { timeoutMs: 120_000, intervalMs: 100, description: 'one chunk charged, the other waiting' },
      );
      const answered = await client.cancelJob(job.id);
      // Its first chunk runs at Deepgram, which cannot stop it: the publish is not final yet.
      expect(answered.status).toBe('running');
      expect(answered.finishedAt).toBeUndefined();
      expect(answered.cancelRequestedAt).toEqual(expect.any(String));
      const canceled = await pollUntil(
        async () => {
          const now = await client.getJob(job.id);
          return now.status === 'running' ? undefined : now;
        },
        { timeoutMs: 120_000, intervalMs: 100, description: `${job.id} to settle` },
      );
      expect(canceled).toMatchObject({ status: 'canceled', finishedAt: expect.any(String) });
      expect(canceled.cancelRequestedAt).toBeUndefined();
      // Canceled only after Deepgram ended the chunk it ran.
      const ledger = (await simLedger()).byProvider?.deepgram;
      const [first] = atCancel.charged;
      const charges = await chargedJobs(stack.endpoints.providerUrl, 'deepgram', ledger);
      const ran = charges.find((charge) => charge.jobId === first);
      const entry = ledger?.submissions.find((submission) => submission.id === ran?.providerJobId);
      expect(entry?.finishedAt).toEqual(expect.any(String));
      expect(Date.parse(entry?.finishedAt ?? '')).toBeLessThanOrEqual(Date.parse(canceled.finishedAt ?? ''));
      // The job is canceled by `settle`; the execution enters `settled` a step later, after notify.
      const states = await pollUntil(
        async () => {
          const entered = await statesEntered(stack.endpoints, job);
          return entered.includes('settled') ? entered : undefined;
        },
        { timeoutMs: 30_000, intervalMs: 100, description: 'the execution to end in settled' },
      );
      expect(states.slice(states.indexOf('await-children'))).toEqual(
        expect.arrayContaining(['await-children', 'settle', 'settled']),
      );
      // The chunk that waited was never charged, then or since; nothing derived is left.
      const after = await chunkCharges(job);
      expect(after.chunkJobs).toEqual(atCancel.chunkJobs);
      expect(after.charged).toEqual(atCancel.charged);
      expect(await outputsOf(job)).toEqual([]);
      expect(
        (await storedVectorKeys(stack.endpoints)).filter((key) => itemOfVectorKey(key) === job.id),
      ).toEqual([]);
    } finally {
      await config(300);
    }
  });
});
