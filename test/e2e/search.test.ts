import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type Job, Longhaul } from '../../client';
import {
  OWN_PROVIDER_FOR_EVERY_JOB_TYPE,
  pollUntil,
  type RunningLocalStack,
  startLocalStack,
} from '../../local/harness/local-stack';
import { generateTestAudio } from '../../local/harness/test-audio';
import type { Ledger } from '../../local/provider-sim/simulator';
import { playedSeconds, statesEntered } from './support/media';
import { storedVectorKeys } from './support/vectors';

/**
 * Search over published sermons, end to end on the local stack: three
 * recordings that say different things (the simulated Deepgram hears a
 * recording's `comment` tag as its words), published by two tenants, each
 * embedded by the simulated Bedrock in runs that hold its slots, stored in the
 * local S3 Vectors, and found by `POST /v1/search` through the SDK. A query
 * made of one passage's words finds that passage first, with its start time,
 * and its playback URL plays from there in ffmpeg; another tenant's sermons
 * never appear; a run that failed at the provider is made again without a
 * second transcode or transcription; the provider's limit holds; and a
 * publish canceled while embedding leaves no vectors behind.
 */

jest.setTimeout(300_000);

const ACME = 'search-acme-key-5e1f';
const GLOBEX = 'search-globex-key-88a0';
const CHUNK_SECONDS = 40;
const BEDROCK_LIMIT = 2;

/** Topics of 60 words each, spoken over 36 s: one passage each (passages are 30 to 60 s and end on a sentence). */
const TOPIC = {
  forgiveness:
    'Then Peter came and asked the teacher how often he should forgive his brother who sinned against him, ' +
    'as many as seven times, and the answer came back that he should forgive not seven times but seventy times seven, ' +
    'because forgiveness that keeps counting has not yet begun, and mercy received must become mercy given to every brother and sister we meet today.',
  harvest:
    'The harvest is plentiful but the workers are few, so we pray to the lord of the harvest to send out workers into his fields, ' +
    'and we remember that the farmer who sows sparingly will also reap sparingly, while the one who sows generously in every season will reap generously ' +
    'when the grain is gathered into the barns at the end of the long summer.',
  hospitality:
    'Do not forget to show hospitality to strangers, for by doing so some people have welcomed angels without knowing it, ' +
    'and the table we set for the traveller, the refugee and the lonely neighbour becomes the place where grace is shared, ' +
    'bread is broken, stories are told, and the stranger at the door is welcomed as family and friend tonight.',
  patience:
    'Be patient then, brothers and sisters, until the coming of the day, and see how the farmer waits for the land to yield its valuable crop, ' +
    'waiting patiently for the autumn and spring rains, so that you too can stand firm and keep your hearts steady when the waiting is long ' +
    'and the answers come slowly and the night feels endless and cold.',
  anxiety:
    'Therefore do not worry about tomorrow, for tomorrow will worry about itself, and each day has enough trouble of its own, ' +
    'so look at the birds of the air that neither sow nor reap nor store away in barns, and consider the lilies of the field, ' +
    'how they grow without labour, and let the anxious heart find its rest in trust today.',
} as const;

const SECONDS = 108;
const say = (...topics: (keyof typeof TOPIC)[]) => topics.map((topic) => TOPIC[topic]).join(' ');

let stack: RunningLocalStack;
let acme: Longhaul;
let globex: Longhaul;
let dir: string;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'longhaul-search-'));
  await Promise.all([
    generateTestAudio(join(dir, 'a.mp3'), {
      seconds: SECONDS,
      kind: 'speechlike',
      comment: say('harvest', 'forgiveness', 'hospitality'),
    }),
    generateTestAudio(join(dir, 'b.wav'), {
      seconds: SECONDS,
      kind: 'speechlike',
      comment: say('patience', 'anxiety', 'harvest'),
    }),
    generateTestAudio(join(dir, 'c.flac'), {
      seconds: SECONDS,
      kind: 'speechlike',
      comment: say('anxiety', 'hospitality', 'forgiveness'),
    }),
    generateTestAudio(join(dir, 'd.mp3'), {
      seconds: SECONDS,
      kind: 'speechlike',
      comment: say('forgiveness', 'patience', 'anxiety'),
    }),
  ]);
  stack = await startLocalStack({
    env: {
      ...OWN_PROVIDER_FOR_EVERY_JOB_TYPE,
      LONGHAUL_API_KEYS: `${ACME}:acme,${GLOBEX}:globex`,
      SIM_JOB_MS: '300',
      MAX_IN_FLIGHT_DEEPGRAM: '3',
      MAX_IN_FLIGHT_BEDROCK: String(BEDROCK_LIMIT),
      // One passage a run: a recording's three passages are three runs, so the limit of two is met.
      EMBEDDING_PASSAGES_PER_JOB: '1',
      EMBEDDING_DIMENSIONS: '256',
      TRANSCRIBE_CHUNK_SECONDS: String(CHUNK_SECONDS),
      PUBLISH_MAX_DURATION_SECONDS: '300',
      COMPUTE_LAMBDA_MAX_AUDIO_SECONDS: '300',
    },
  });
  acme = new Longhaul({ baseUrl: stack.baseUrl, apiKey: ACME });
  globex = new Longhaul({ baseUrl: stack.baseUrl, apiKey: GLOBEX });
}, 120_000);

afterAll(async () => {
  await stack?.stop();
  rmSync(dir, { recursive: true, force: true });
});

const deadline = () => AbortSignal.timeout(200_000);

const sim = async (path: string, body?: unknown) => {
  const response = await fetch(`${stack.endpoints.providerUrl}${path}`, {
    method: body === undefined ? 'GET' : 'POST',
    headers: { 'content-type': 'application/json' },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  if (!response.ok) throw new Error(`${path} answered ${response.status}`);
  return response.status === 204 ? undefined : response.json();
};
const ledger = async () => (await sim('/_sim/ledger')) as Ledger;

type Published = Extract<Job, { type: 'audio.publish' }>;

async function publish(
  as: Longhaul,
  file: string,
  contentType: string,
  input: { title?: string; date?: string; labels?: string[] } = {},
): Promise<Published> {
  const uploaded = await as.uploadFile({ data: readFileSync(join(dir, file)), contentType });
  const { job } = await as.createJob(as.userAction(), {
    type: 'audio.publish',
    input: { audioRef: uploaded.ref, language: 'en', ...input },
  });
  return job as Published;
}

const finished = (as: Longhaul, job: Job) =>
  as.waitForJob(job.id, { pollIntervalMs: 250, signal: deadline() }) as Promise<Published>;

/** The Longhaul jobs of a parent's embedding runs, from its timeline. */
async function embeddingRuns(as: Longhaul, job: Job): Promise<string[]> {
  return (await as.jobEvents(job.id))
    .filter((event) => event.type === 'embedding.submitted')
    .map((event) => /as (job_[a-z0-9]+)/.exec(event.detail ?? '')?.[1] as string);
}

describe('search over published sermons', () => {
  let a: Published;
  let c: Published;

  beforeAll(async () => {
    [a, c] = await Promise.all([
      publish(acme, 'a.mp3', 'audio/mpeg', {
        title: 'The lord of the harvest',
        date: '2026-03-01',
        labels: ['lent'],
      }),
      publish(globex, 'c.flac', 'audio/flac', { title: 'Theirs', date: '2026-03-01', labels: ['lent'] }),
    ]);
    [a, c] = await Promise.all([finished(acme, a), finished(globex, c)]);
  });

  it('finds the passage a query is made of first, with its start time, and plays it from there', async () => {
    expect(a).toMatchObject({ status: 'succeeded', result: { searchable: true } });
    const passages = a.result?.passages ?? [];
    expect(passages.map((passage) => passage.text.split(' ')[0])).toEqual(['The', 'Then', 'Do']);
    const { items } = await acme.search('how often should I forgive my brother, seventy times seven');
    const [first] = items;
    expect(first).toMatchObject({
      item: { id: a.id, title: 'The lord of the harvest', date: '2026-03-01', labels: ['lent'] },
      passage: { index: 1, start: passages[1]?.start, end: passages[1]?.end },
    });
    expect(first?.passage.text).toContain('seventy times seven');
    expect(first?.passage.start).toBeGreaterThan(30);
    expect(first?.playback.startSeconds).toBe(first?.passage.start);
    expect(first?.playback.url).toBe(`${first?.playback.playlistUrl}#t=${first?.passage.start}`);
    // A player started at the passage plays from its first word to the end of the recording.
    const start = first?.playback.startSeconds as number;
    expect(await playedSeconds(first?.playback.playlistUrl as string, start)).toBeCloseTo(
      SECONDS - start,
      -1,
    );
    // The other passages of the recording rank below it.
    expect(items.slice(1).every((hit) => hit.score < (first?.score as number))).toBe(true);
  });

  it("never shows another tenant's sermons, whatever the filter names", async () => {
    for (const filter of [undefined, { itemIds: [c.id] }, { itemIds: [c.id, a.id] }, { labels: ['lent'] }]) {
      const { items } = await acme.search({
        query: 'forgive my brother seventy times seven',
        ...(filter ? { filter } : {}),
      });
      expect(items.map((hit) => hit.item.id).filter((id) => id !== a.id)).toEqual([]);
    }
    const theirs = await globex.search('forgive my brother seventy times seven');
    expect(theirs.items[0]?.item.id).toBe(c.id);
    expect(theirs.items.every((hit) => hit.item.id === c.id)).toBe(true);
    // A filter names what is not the tenant's to find: nothing, not an error.
    expect((await acme.search({ query: 'strangers', filter: { itemIds: [c.id] } })).items).toEqual([]);
    expect((await acme.search({ query: 'strangers', filter: { dateFrom: '2026-03-02' } })).items).toEqual([]);
  });

  it('refuses bad input with a precise problem', async () => {
    await expect(acme.search('   ')).rejects.toMatchObject({
      status: 400,
      problem: { code: 'validation-failed' },
    });
    await expect(acme.search({ query: 'x', limit: 51 })).rejects.toMatchObject({ status: 400 });
    await expect(acme.search({ query: 'x', filter: { speaker: 'me' } as never })).rejects.toMatchObject({
      status: 400,
    });
  });

  it('makes a run that failed at the provider again, without a second transcode or transcription', async () => {
    const before = await ledger();
    const deepgramBefore = before.byProvider?.deepgram?.submissions.length ?? 0;
    // The next call to Bedrock is refused: the first run's job fails and its state makes it again.
    await sim('/_sim/faults', { mode: 'reject', count: 1, provider: 'bedrock' });
    const b = await finished(acme, await publish(acme, 'b.wav', 'audio/wav', { labels: ['advent'] }));
    expect(b).toMatchObject({ status: 'succeeded', result: { searchable: true } });
    const entered = await statesEntered(stack.endpoints, b);
    expect(entered.filter((state) => state === 'transcode')).toHaveLength(1);
    expect(entered.filter((state) => state === 'transcribe')).toHaveLength(
      Math.ceil(SECONDS / CHUNK_SECONDS),
    );
    const after = await ledger();
    expect((after.byProvider?.deepgram?.submissions.length ?? 0) - deepgramBefore).toBe(
      Math.ceil(SECONDS / CHUNK_SECONDS),
    );
    const runs = await embeddingRuns(acme, b);
    expect(runs).toHaveLength(4); // three runs, one made twice
    const { items } = await acme.search({
      query: 'do not worry about tomorrow',
      filter: { labels: ['advent'] },
    });
    expect(items[0]).toMatchObject({ item: { id: b.id }, passage: { index: 1 } });
  });

  it('never had more calls at the embedding provider than its limit', async () => {
    const bedrock = (await ledger()).byProvider?.bedrock;
    expect(bedrock?.submissions.length).toBeGreaterThan(0);
    expect(bedrock?.maxConcurrent).toBeLessThanOrEqual(BEDROCK_LIMIT);
    expect(bedrock?.maxConcurrent).toBeGreaterThan(0);
  });

  it('leaves no vectors behind a publish canceled while it embeds', async () => {
    await sim('/_sim/config', { provider: 'bedrock', jobMs: 1500 });
    try {
      const d = await publish(acme, 'd.mp3', 'audio/mpeg');
      await pollUntil(async () => ((await embeddingRuns(acme, d)).length > 0 ? true : undefined), {
        timeoutMs: 120_000,
        intervalMs: 100,
        description: `${d.id} to embed`,
      });
      await acme.cancelJob(d.id);
      await pollUntil(
        async () => {
          const entered = await statesEntered(stack.endpoints, d);
          return entered.includes('settled') ? entered : undefined;
        },
        { timeoutMs: 120_000, intervalMs: 250, description: `${d.id}'s workflow to settle` },
      );
      expect((await acme.getJob(d.id)).status).toBe('canceled');
      expect((await storedVectorKeys(stack.endpoints)).filter((key) => key.includes(d.id))).toEqual([]);
      // What the others published is still there.
      expect((await storedVectorKeys(stack.endpoints)).filter((key) => key.includes(a.id))).toHaveLength(3);
    } finally {
      await sim('/_sim/config', { provider: 'bedrock', jobMs: 100 });
    }
  });
});
