import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ListObjectsV2Command } from '@aws-sdk/client-s3';
import { GetCommand } from '@aws-sdk/lib-dynamodb';
import { type Job, Longhaul } from '../../client';
import {
  documentClient,
  OWN_PROVIDER_FOR_EVERY_JOB_TYPE,
  pollUntil,
  type RunningLocalStack,
  s3Client,
  startLocalStack,
} from '../../local/harness/local-stack';
import { generateTestAudio } from '../../local/harness/test-audio';
import type { Ledger } from '../../local/provider-sim/simulator';
import { simulatorCall } from './support/simulator';
import { itemOfVectorKey, storedVectorKeys } from './support/vectors';

/**
 * The sermon library end to end on the local stack: media items over HTTP,
 * versions published by the real pipeline (transcode, the simulated Deepgram
 * hearing each recording's `comment` tag, the simulated Bedrock, the local S3
 * Vectors), the switch to a new version, metadata changes, and deletes, with
 * the provider simulator's ledger as the witness of what was charged.
 */

jest.setTimeout(300_000);

const KEY = 'media-acme-key-41c7';
const ADMIN = 'media-admin-key-93b2';
const CHUNK_SECONDS = 40;
const SECONDS = 100;
const GRACE_SECONDS = 3;

const WORDS = {
  first:
    'The harvest is plentiful but the workers are few, so we pray to the lord of the harvest to send out workers into his fields, ' +
    'and we remember that the farmer who sows sparingly will also reap sparingly.',
  second:
    'Do not forget to show hospitality to strangers, for by doing so some people have welcomed angels without knowing it, ' +
    'and the table we set for the traveller becomes the place where grace is shared.',
  third:
    'Therefore do not worry about tomorrow, for tomorrow will worry about itself, and each day has enough trouble of its own, ' +
    'so look at the birds of the air that neither sow nor reap nor store away in barns.',
} as const;

let stack: RunningLocalStack;
let client: Longhaul;
let dir: string;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'longhaul-media-'));
  await Promise.all(
    (Object.keys(WORDS) as (keyof typeof WORDS)[]).map((name) =>
      generateTestAudio(join(dir, `${name}.mp3`), {
        seconds: SECONDS,
        kind: 'speechlike',
        comment: WORDS[name],
      }),
    ),
  );
  stack = await startLocalStack({
    env: {
      ...OWN_PROVIDER_FOR_EVERY_JOB_TYPE,
      LONGHAUL_API_KEYS: `${KEY}:acme`,
      LONGHAUL_ADMIN_KEY: ADMIN,
      SIM_JOB_MS: '300',
      // One chunk at Deepgram at a time: a version's later chunks wait in line behind its first.
      MAX_IN_FLIGHT_DEEPGRAM: '1',
      MAX_IN_FLIGHT_BEDROCK: '2',
      EMBEDDING_DIMENSIONS: '256',
      TRANSCRIBE_CHUNK_SECONDS: String(CHUNK_SECONDS),
      PUBLISH_MAX_DURATION_SECONDS: '300',
      COMPUTE_LAMBDA_MAX_AUDIO_SECONDS: '300',
      MEDIA_GRACE_SECONDS: String(GRACE_SECONDS),
      RECONCILE_INTERVAL_MS: '1000',
    },
  });
  client = new Longhaul({ baseUrl: stack.baseUrl, apiKey: KEY });
}, 120_000);

afterAll(async () => {
  await stack?.stop();
  rmSync(dir, { recursive: true, force: true });
});

interface Version {
  readonly number: number;
  readonly jobId: string;
  readonly status: string;
  readonly playlistUrl?: string;
  readonly searchable?: boolean;
}
interface Item {
  readonly id: string;
  readonly title: string;
  readonly labels: string[];
  readonly current?: Version;
  readonly inProgress?: Version;
}

async function api<T>(
  method: string,
  path: string,
  body?: unknown,
  key?: string,
): Promise<{ status: number; body: T }> {
  const response = await fetch(`${stack.baseUrl}${path}`, {
    method,
    headers: {
      'x-api-key': KEY,
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      ...(key ? { 'idempotency-key': key } : {}),
    },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await response.text();
  return { status: response.status, body: (text ? JSON.parse(text) : undefined) as T };
}

const ledger = async () => (await simulatorCall(stack.endpoints.providerUrl)('/_sim/ledger')) as Ledger;
const charges = async () => (await ledger()).submissions.length;

let keys = 0;
const newKey = () => `media-e2e-${process.pid}-${++keys}`;

async function createItem(title: string, labels: string[] = ['lent']): Promise<Item> {
  const created = await api<Item>('POST', '/v1/media', { title, labels, date: '2026-03-01' }, newKey());
  expect(created.status).toBe(201);
  return created.body;
}

async function publishVersion(item: Item, file: keyof typeof WORDS): Promise<string> {
  const uploaded = await client.uploadFile({
    data: readFileSync(join(dir, `${file}.mp3`)),
    contentType: 'audio/mpeg',
  });
  const started = await api<Item>(
    'POST',
    `/v1/media/${item.id}/versions`,
    { audioRef: uploaded.ref, language: 'en' },
    newKey(),
  );
  expect(started.status).toBe(202);
  return started.body.inProgress?.jobId as string;
}

const getItem = async (id: string) => (await api<Item>('GET', `/v1/media/${id}`)).body;

const untilCurrent = (id: string, jobId: string) =>
  pollUntil(
    async () => {
      const item = await getItem(id);
      return item.current?.jobId === jobId ? item : undefined;
    },
    { timeoutMs: 150_000, intervalMs: 250, description: `version ${jobId} current` },
  );

const untilChunkAtProvider = (jobId: string) =>
  pollUntil(
    async () => {
      const events = await client.jobEvents(jobId);
      return events.some((event) => event.type === 'chunk.submitted') ? events : undefined;
    },
    { timeoutMs: 120_000, intervalMs: 100, description: `a chunk of ${jobId} submitted` },
  );

/** The child jobs a publish made, from its timeline (`… as job_…`). */
const childrenOf = async (jobId: string) =>
  (await client.jobEvents(jobId))
    .map((event) => /as (job_[a-z2-7]{26})/.exec(event.detail ?? '')?.[1])
    .filter((id): id is string => id !== undefined);

/** A job as the table keeps it: a publish's children are the workflow's, not the tenant's to read over the API. */
async function storedJob(id: string): Promise<{ id: string; status: string; cancelRequestedAt?: string }> {
  const { Item } = await documentClient(stack.endpoints).send(
    new GetCommand({ TableName: stack.endpoints.jobTableName, Key: { pk: id, sk: 'JOB' } }),
  );
  if (!Item) throw new Error(`no job ${id} in the table`);
  return Item as { id: string; status: string; cancelRequestedAt?: string };
}

/** Sets the tenant's `maxQueued` as an operator does. */
async function capQueued(maxQueued: number): Promise<void> {
  const response = await fetch(`${stack.baseUrl}/v1/admin/tenants/acme`, {
    method: 'PUT',
    headers: { 'x-api-key': ADMIN, 'content-type': 'application/json' },
    body: JSON.stringify({ maxQueued }),
  });
  expect(response.status).toBe(200);
}

async function objectsUnder(prefix: string): Promise<string[]> {
  const page = await s3Client(stack.endpoints).send(
    new ListObjectsV2Command({ Bucket: stack.endpoints.outputBucketName, Prefix: prefix }),
  );
  return (page.Contents ?? []).map((object) => object.Key as string);
}
const outputPrefixOf = (jobId: string) => `outputs/acme/${jobId}/`;

/** The `media.*` events of an item on the local bus, in the order they were put. */
async function mediaEvents(
  mediaId: string,
): Promise<{ type: string; version?: number; supersededBy?: number }[]> {
  const { eventBridgeEndpoint, eventBusName } = stack.endpoints;
  const { events } = (await (await fetch(`${eventBridgeEndpoint}/_events/${eventBusName}`)).json()) as {
    events: {
      'detail-type': string;
      detail: { mediaId?: string; version?: number; supersededBy?: number };
    }[];
  };
  return events
    .filter((event) => event.detail.mediaId === mediaId)
    .map((event) => ({
      type: event['detail-type'],
      ...(event.detail.version !== undefined ? { version: event.detail.version } : {}),
      ...(event.detail.supersededBy !== undefined ? { supersededBy: event.detail.supersededBy } : {}),
    }));
}

const search = (query: string, filter?: Record<string, unknown>) =>
  client.search({ query, ...(filter ? { filter } : {}) } as Parameters<Longhaul['search']>[0]);

describe('the media library', () => {
  it('a second version started while the first transcribes becomes current; the first is canceled once the second is probed, charged no further, and leaves nothing', async () => {
    const item = await createItem('The workers are few');
    const first = await publishVersion(item, 'first');
    await untilChunkAtProvider(first);
    const second = await publishVersion(item, 'second');
    const afterSwitch = await untilCurrent(item.id, second);
    expect(afterSwitch.current).toMatchObject({ number: 2, status: 'published', searchable: true });
    expect(afterSwitch.inProgress).toBeUndefined();
    // Canceled once the chunk Deepgram could not stop has run out.
    await pollUntil(async () => (await client.getJob(first)).status === 'canceled', {
      timeoutMs: 60_000,
      intervalMs: 100,
      description: 'the first version canceled',
    });
    // The first version's chunks: charged until the second one's recording proved good, and its cancel
    // was requested; after that, at most the one whose submission was under way, the rest never sent.
    const firstChunks = await childrenOf(first);
    const { cancelRequestedAt } = await storedJob(first);
    const lateCharges = (await ledger()).submissions.filter(
      (entry) =>
        firstChunks.includes(entry.idempotencyKey ?? '') &&
        Date.parse(entry.acceptedAt) > Date.parse(cancelRequestedAt ?? ''),
    );
    expect(firstChunks.length).toBeGreaterThanOrEqual(1);
    expect(cancelRequestedAt).toEqual(expect.any(String));
    expect(lateCharges.length).toBeLessThanOrEqual(1);
    // Nothing of the first version is left: no vector, no output.
    await pollUntil(
      async () => {
        const vectors = (await storedVectorKeys(stack.endpoints)).filter(
          (key) => itemOfVectorKey(key) === first,
        );
        const objects = await objectsUnder(outputPrefixOf(first));
        return vectors.length === 0 && objects.length === 0;
      },
      { timeoutMs: 60_000, intervalMs: 250, description: 'the first version retired' },
    );
    const { items } = await search('show hospitality to strangers');
    expect(items[0]).toMatchObject({ item: { id: item.id, version: 2, title: 'The workers are few' } });
    expect(await mediaEvents(item.id)).toEqual([
      { type: 'media.version.superseded', version: 1, supersededBy: 2 },
      { type: 'media.version.published', version: 2 },
    ]);

    // Taken down once published: its versions' jobs stay, shown without the outputs that were removed.
    expect((await api('DELETE', `/v1/media/${item.id}`)).status).toBe(204);
    await pollUntil(async () => (await objectsUnder(outputPrefixOf(second))).length === 0, {
      timeoutMs: 60_000,
      intervalMs: 250,
      description: 'the published version retired',
    });
    const shown = await api<Job>('GET', `/v1/jobs/${second}`);
    expect(shown).toMatchObject({
      status: 200,
      body: { status: 'succeeded', result: null, outputsRemoved: true },
    });
    const listed = await api<{ items: Job[] }>('GET', '/v1/jobs?limit=100');
    expect(listed.status).toBe(200);
    expect(listed.body.items.find((job) => job.id === second)).toMatchObject({ outputsRemoved: true });
    expect(await objectsUnder(outputPrefixOf(second))).toEqual([]);
  });

  it('a new version refused at intake (429) leaves the version in progress to publish, become current, and stay so', async () => {
    const item = await createItem('Refused mid-publish');
    const first = await publishVersion(item, 'second');
    await untilChunkAtProvider(first);
    // The tenant's backlog is full: a job scheduled for tomorrow takes its one place.
    const scheduled = await api<Job>(
      'POST',
      '/v1/jobs',
      {
        type: 'image.generate',
        input: { prompt: 'a lighthouse' },
        runAt: new Date(Date.now() + 86_400_000).toISOString(),
      },
      newKey(),
    );
    expect(scheduled).toMatchObject({ status: 202, body: { status: 'scheduled' } });
    await capQueued(1);
    try {
      const uploaded = await client.uploadFile({
        data: readFileSync(join(dir, 'third.mp3')),
        contentType: 'audio/mpeg',
      });
      const refused = await api<{ code: string }>(
        'POST',
        `/v1/media/${item.id}/versions`,
        { audioRef: uploaded.ref, language: 'en' },
        newKey(),
      );
      expect(refused).toMatchObject({ status: 429, body: { code: 'tenant-queue-full' } });
    } finally {
      await capQueued(10_000);
      await api('POST', `/v1/jobs/${scheduled.body.id}/cancel`);
    }
    expect((await getItem(item.id)).inProgress).toMatchObject({ number: 1, jobId: first });
    const published = await untilCurrent(item.id, first);
    expect(published.current).toMatchObject({ number: 1, status: 'published', searchable: true });
    expect(published.inProgress).toBeUndefined();
    expect(await client.getJob(first)).toMatchObject({ status: 'succeeded' });
    expect(await mediaEvents(item.id)).toEqual([{ type: 'media.version.published', version: 1 }]);
    // Nothing retires it: it stays current, with its stream and vectors.
    const { Item: retirement } = await documentClient(stack.endpoints).send(
      new GetCommand({
        TableName: stack.endpoints.jobTableName,
        Key: { pk: 'MEDIA#acme', sk: `RETIRE#${first}` },
      }),
    );
    expect(retirement).toBeUndefined();
    expect((await objectsUnder(outputPrefixOf(first))).length).toBeGreaterThan(0);
    expect((await storedVectorKeys(stack.endpoints)).some((key) => itemOfVectorKey(key) === first)).toBe(
      true,
    );
  });

  it('across a switch, polling every 100 ms never finds a hit whose stream fails or belongs to another version', async () => {
    const item = await createItem('Do not worry');
    const v1 = await publishVersion(item, 'first');
    await untilCurrent(item.id, v1);
    const v2 = await publishVersion(item, 'third');
    const seen = new Set<string>();
    const problems: string[] = [];
    let switched = false;
    const stop = Date.now() + 150_000;
    while (Date.now() < stop) {
      const [{ items }, current] = await Promise.all([
        search('workers harvest tomorrow worry birds'),
        getItem(item.id),
      ]);
      for (const hit of items.filter((h) => h.item.id === item.id)) {
        const jobId = /outputs\/acme\/(job_[a-z2-7]{26})\//.exec(
          decodeURIComponent(hit.playback.playlistUrl),
        )?.[1];
        const expected = hit.item.version === 1 ? v1 : v2;
        if (jobId !== expected) problems.push(`version ${hit.item.version} played ${jobId}`);
        const played = await fetch(hit.playback.playlistUrl);
        if (!played.ok) problems.push(`playlist of version ${hit.item.version} answered ${played.status}`);
        seen.add(`${hit.item.version}`);
      }
      if (current.current?.jobId === v2) {
        if (switched && seen.has('2')) break;
        switched = true;
      }
      await new Promise((resolveWait) => setTimeout(resolveWait, 100));
    }
    expect(problems).toEqual([]);
    expect([...seen].sort()).toEqual(['1', '2']);
    // After the grace period the replaced version's outputs and vectors are gone; the current one's stay.
    await pollUntil(async () => (await objectsUnder(outputPrefixOf(v1))).length === 0, {
      timeoutMs: 60_000,
      intervalMs: 250,
      description: 'version 1 retired',
    });
    expect((await storedVectorKeys(stack.endpoints)).some((key) => itemOfVectorKey(key) === v2)).toBe(true);
    expect((await objectsUnder(outputPrefixOf(v2))).length).toBeGreaterThan(0);
  });

  it('a metadata change shows in search and its filters at once, and calls no provider', async () => {
    const item = await createItem('Hospitality', ['lent']);
    const v1 = await publishVersion(item, 'second');
    await untilCurrent(item.id, v1);
    const before = await charges();
    const patched = await api<Item>('PATCH', `/v1/media/${item.id}`, {
      title: 'Welcoming angels',
      labels: ['easter'],
    });
    expect(patched.status).toBe(200);
    expect(patched.body).toMatchObject({ title: 'Welcoming angels', labels: ['easter'] });
    const found = await search('welcomed angels without knowing it', { labels: ['easter'] });
    expect(found.items[0]).toMatchObject({
      item: { id: item.id, title: 'Welcoming angels', labels: ['easter'] },
    });
    const old = await search('welcomed angels without knowing it', { labels: ['lent'] });
    expect(old.items.filter((hit) => hit.item.id === item.id)).toEqual([]);
    // The query's own embedding is the only call: one per search, none for the change.
    expect((await charges()) - before).toBe(2);
    expect((await api('PATCH', `/v1/media/${item.id}`, { speaker: 'Ana', date: '2026-04-05' })).status).toBe(
      200,
    );
    expect((await charges()) - before).toBe(2);
  });

  it('deleting an item mid-publish leaves no object, vector or running job behind', async () => {
    const item = await createItem('Taken down');
    const v1 = await publishVersion(item, 'third');
    await untilChunkAtProvider(v1);
    const deleted = await api('DELETE', `/v1/media/${item.id}`);
    expect(deleted.status).toBe(204);
    expect((await api('GET', `/v1/media/${item.id}`)).status).toBe(404);
    expect(
      (
        await api(
          'POST',
          `/v1/media/${item.id}/versions`,
          { audioUrl: 'https://example.com/a.mp3' },
          newKey(),
        )
      ).status,
    ).toBe(404);
    await pollUntil(
      async () => {
        const job = await client.getJob(v1);
        const children = await Promise.all((await childrenOf(v1)).map(storedJob));
        const running = [job, ...children].filter(
          (j) => !['succeeded', 'failed', 'canceled'].includes(j.status),
        );
        const objects = await objectsUnder(outputPrefixOf(v1));
        const vectors = (await storedVectorKeys(stack.endpoints)).filter(
          (key) => itemOfVectorKey(key) === v1,
        );
        return running.length === 0 && objects.length === 0 && vectors.length === 0;
      },
      { timeoutMs: 90_000, intervalMs: 250, description: 'nothing of the deleted item left' },
    );
    expect((await mediaEvents(item.id)).map((event) => event.type)).toEqual(['media.deleted']);
    const listed = await api<{ items: Item[] }>('GET', '/v1/media?limit=100');
    expect(listed.body.items.map((listedItem) => listedItem.id)).not.toContain(item.id);
  });

  it('refuses bad input with a precise problem and changes nothing', async () => {
    expect((await api('POST', '/v1/media', { title: '' }, newKey())).status).toBe(400);
    expect((await api('POST', '/v1/media', { title: 'x' })).status).toBe(400);
    expect((await api('PATCH', '/v1/media/med_aaaaaaaaaaaaaaaaaaaaaaaaaa', { title: 'x' })).status).toBe(404);
    expect((await api('GET', '/v1/media/not-an-id')).status).toBe(404);
    const item = await createItem('Valid');
    const patch = await api<{ code: string }>('PATCH', `/v1/media/${item.id}`, {});
    expect(patch).toMatchObject({ status: 400, body: { code: 'validation-failed' } });
    const version = await api(
      'POST',
      `/v1/media/${item.id}/versions`,
      { audioRef: 'upl_x', audioUrl: 'https://a.example/x.mp3' },
      newKey(),
    );
    expect(version.status).toBe(400);
    expect((await getItem(item.id)).inProgress).toBeUndefined();
  });
});
