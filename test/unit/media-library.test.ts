import { dayNumberOf, vectorKeyOf, vectorsManifestKey } from '../../lambdas/domain/embedding';
import { IdempotencyKeyReusedError, MediaNotFoundError } from '../../lambdas/domain/errors';
import { deriveJobId } from '../../lambdas/domain/idempotency';
import { type Job, newJob } from '../../lambdas/domain/job';
import {
  createMediaItem,
  deleteMediaItem,
  getMediaItem,
  type MediaItem,
  presentMediaItem,
  retireDue,
  type StartVersionDeps,
  startVersion,
  switchToVersion,
  updateMediaItem,
} from '../../lambdas/domain/media-library';
import { rootOutputPrefix } from '../../lambdas/domain/publish';
import { search } from '../../lambdas/domain/search';
import {
  MemoryInputs,
  MemoryMediaStore,
  MemoryOutputs,
  MemoryStore,
  MemoryTimeline,
  MemoryVectorIndex,
  MemoryWorkflow,
} from './support/memory-ports';

const TENANT = 'acme';

function world(start = Date.parse('2026-06-01T10:00:00.000Z')) {
  let clock = start;
  const media = new MemoryMediaStore();
  const jobs = new MemoryStore();
  const outputs = new MemoryOutputs();
  const vectors = new MemoryVectorIndex('cosine');
  const inputs = new MemoryInputs();
  const canceled: string[] = [];
  const now = () => new Date(clock);
  const cancel = async (jobId: string) => {
    canceled.push(jobId);
    const job = jobs.jobs.get(jobId);
    if (job) jobs.jobs.set(jobId, { ...job, status: 'canceled' });
  };
  const startDeps: StartVersionDeps = {
    media,
    now,
    jobs,
    cancel,
    submit: async ({ idempotencyKey, input, media: version }) => {
      const id = deriveJobId(TENANT, idempotencyKey);
      const existing = jobs.jobs.get(id);
      if (existing) return { job: existing, replayed: true };
      const job: Job = {
        ...newJob(
          {
            id,
            tenantId: TENANT,
            type: 'audio.publish',
            input,
            idempotencyKey,
            fingerprint: 'f',
            media: version,
          },
          now(),
        ),
        status: 'running',
      };
      jobs.jobs.set(id, job);
      return { job, replayed: false };
    },
  };
  return {
    media,
    jobs,
    timeline: new MemoryTimeline(),
    workflow: new MemoryWorkflow(),
    quietSeconds: 60,
    outputs,
    vectors,
    inputs,
    canceled,
    now,
    startDeps,
    advance: (ms: number) => {
      clock += ms;
    },
  };
}

type World = ReturnType<typeof world>;

async function newItem(w: World, labels: string[] = ['lent']): Promise<MediaItem> {
  const { item } = await createMediaItem(w, {
    tenantId: TENANT,
    idempotencyKey: 'item-1',
    request: { title: 'The prodigal son', speaker: 'Ana', date: '2026-03-01', labels },
  });
  return item;
}

const version = (w: World, item: MediaItem, key: string) =>
  startVersion(w.startDeps, {
    tenantId: TENANT,
    mediaId: item.id,
    idempotencyKey: key,
    request: { audioRef: 'upl_aaaaaaaaaaaaaaaaaaaaaa' },
    jobIdOf: (k) => deriveJobId(TENANT, k),
  });

/** Finishes a version's job as the publish pipeline would: a stream, one vector per passage, a manifest. */
async function publishOutputs(w: World, job: Job, texts: string[]): Promise<Job> {
  const prefix = `${rootOutputPrefix(job)}hls/`;
  await w.outputs.putOutput(`${prefix}master.m3u8`, '#EXTM3U\n', 'application/vnd.apple.mpegurl');
  const item = job.media ? await w.media.get(TENANT, job.media.id) : undefined;
  await w.vectors.put(
    texts.map((text, passage) => ({
      key: vectorKeyOf(job, passage),
      data: [1, passage, 0],
      metadata: {
        tenant: TENANT,
        item: item?.id ?? job.id,
        date: dayNumberOf(item?.date ?? '2026-03-01'),
        labels: [...(item?.labels ?? [])],
        passage,
        start: passage * 30,
        end: passage * 30 + 30,
        text,
      },
    })),
  );
  await w.outputs.putOutput(
    vectorsManifestKey(job),
    JSON.stringify({ count: texts.length }),
    'application/json',
  );
  const done: Job = {
    ...job,
    status: 'succeeded',
    result: { stream: { playlistKey: `${prefix}master.m3u8`, renditions: [] }, searchable: true },
  };
  w.jobs.jobs.set(job.id, done);
  return done;
}

const switchDeps = (w: World) => ({ ...w, graceSeconds: 600 });
/** Search over the world's jobs, outputs, passages and items; every query embeds to the same vector. */
const searchDeps = (w: World) => ({
  store: w.jobs,
  outputs: w.outputs,
  vectors: w.vectors,
  media: w.media,
  embedQuery: async () => [1, 0, 0],
});

/** Version 1 published and current, version 2 started and still publishing. */
async function currentAndNewer(w: World, item: MediaItem): Promise<{ v1: Job; v2: Job }> {
  const v1 = await publishOutputs(w, (await version(w, item, 'v1')).job, ['old']);
  await switchToVersion(switchDeps(w), v1);
  return { v1, v2: (await version(w, item, 'v2')).job };
}

/** The reconciler's view: the world's ports, uploads deleted from its inputs, cancels that do nothing. */
const retireDeps = (w: World) => ({
  ...w,
  deleteInput: (tenant: string, ref: string) => w.inputs.deleteInput(tenant, ref),
  cancel: async () => {},
});

describe('media items', () => {
  it('creates an item once per Idempotency-Key, and refuses the key for another item', async () => {
    const w = world();
    const first = await newItem(w);
    const again = await createMediaItem(w, {
      tenantId: TENANT,
      idempotencyKey: 'item-1',
      request: { title: 'The prodigal son', speaker: 'Ana', date: '2026-03-01', labels: ['lent'] },
    });
    expect(again).toEqual({ item: first, replayed: true });
    await expect(
      createMediaItem(w, { tenantId: TENANT, idempotencyKey: 'item-1', request: { title: 'Other' } }),
    ).rejects.toBeInstanceOf(IdempotencyKeyReusedError);
    expect(first.id).toMatch(/^med_[a-z2-7]{26}$/);
    await expect(getMediaItem(w.media, 'globex', first.id)).rejects.toBeInstanceOf(MediaNotFoundError);
  });

  it('numbers versions once per request, however often it is retried', async () => {
    const w = world();
    const item = await newItem(w);
    const v1 = await version(w, item, 'v1');
    const retried = await version(w, item, 'v1');
    expect(v1.job.media).toEqual({ id: item.id, version: 1 });
    expect(retried.job.id).toBe(v1.job.id);
    expect(retried.replayed).toBe(true);
    const v2 = await version(w, item, 'v2');
    expect(v2.job.media).toEqual({ id: item.id, version: 2 });
    expect((await w.media.get(TENANT, item.id))?.latest).toEqual({ number: 2, jobId: v2.job.id });
  });

  it('a newer version supersedes one still publishing: canceled, and fenced out of the switch if it finishes anyway', async () => {
    const w = world();
    const item = await newItem(w);
    const v1 = await version(w, item, 'v1');
    const v2 = await version(w, item, 'v2');
    expect(w.canceled).toEqual([v1.job.id]);
    // The older one's finalize runs after all (its cancel came too late for its last step).
    const late = await publishOutputs(w, { ...v1.job, status: 'running' }, ['old words']);
    expect(await switchToVersion(switchDeps(w), late)).toBe('fenced');
    const v2done = await publishOutputs(w, v2.job, ['new words']);
    expect(await switchToVersion(switchDeps(w), v2done)).toBe('current');
    expect(await switchToVersion(switchDeps(w), v2done)).toBe('current');
    const stored = await w.media.get(TENANT, item.id);
    expect(stored?.current).toMatchObject({ number: 2, jobId: v2.job.id });
    // The superseded version is retired at once.
    expect([...w.media.retirements.values()]).toEqual([
      expect.objectContaining({ jobId: v1.job.id, reason: 'superseded' }),
    ]);
  });

  it('the switch loses to a concurrent newer version started between its read and its write', async () => {
    const w = world();
    const item = await newItem(w);
    const v1 = await version(w, item, 'v1');
    const done = await publishOutputs(w, v1.job, ['words']);
    w.media.beforeReplace = () => {
      const stored = w.media.items.get(`${TENANT}/${item.id}`) as MediaItem;
      w.media.items.set(`${TENANT}/${item.id}`, {
        ...stored,
        latest: { number: 2, jobId: 'job_zzzzzzzzzzzzzzzzzzzzzzzzzz' },
        rev: stored.rev + 1,
      });
    };
    expect(await switchToVersion(switchDeps(w), done)).toBe('fenced');
    expect((await w.media.get(TENANT, item.id))?.current).toBeUndefined();
  });

  it('search hears only the current version, with what the item says of itself now', async () => {
    const w = world();
    const item = await newItem(w);
    const v1 = await publishOutputs(w, (await version(w, item, 'v1')).job, ['first cut']);
    await switchToVersion(switchDeps(w), v1);
    const v2 = await publishOutputs(w, (await version(w, item, 'v2')).job, ['second cut']);
    const deps = searchDeps(w);
    const before = await search(deps, TENANT, { query: 'cut' });
    expect(before.items.map((hit) => [hit.item.id, hit.item.version, hit.passage.text])).toEqual([
      [item.id, 1, 'first cut'],
    ]);
    await switchToVersion(switchDeps(w), v2);
    await updateMediaItem({ ...w }, TENANT, item.id, { title: 'The lost son' });
    const after = await search(deps, TENANT, { query: 'cut' });
    expect(
      after.items.map((hit) => [hit.item.id, hit.item.version, hit.item.title, hit.passage.text]),
    ).toEqual([[item.id, 2, 'The lost son', 'second cut']]);
    expect(after.items[0]?.playback.playlistUrl).toContain(v2.id);
  });

  it('a labels change rewrites the current version’s vector metadata with the same data, and filters follow', async () => {
    const w = world();
    const item = await newItem(w, ['lent']);
    const v1 = await publishOutputs(w, (await version(w, item, 'v1')).job, ['words', 'more words']);
    await switchToVersion(switchDeps(w), v1);
    const dataBefore = [...w.vectors.vectors.values()].map((vector) => vector.data);
    await updateMediaItem({ ...w }, TENANT, item.id, { labels: ['easter'], date: '2026-04-05' });
    const stored = [...w.vectors.vectors.values()];
    expect(stored.map((vector) => vector.data)).toEqual(dataBefore);
    expect(stored.map((vector) => [vector.metadata.labels, vector.metadata.date])).toEqual([
      [['easter'], dayNumberOf('2026-04-05')],
      [['easter'], dayNumberOf('2026-04-05')],
    ]);
    const deps = searchDeps(w);
    expect((await search(deps, TENANT, { query: 'x', filter: { labels: ['lent'] } })).items).toEqual([]);
    expect((await search(deps, TENANT, { query: 'x', filter: { labels: ['easter'] } })).items).toHaveLength(
      2,
    );
  });

  it('a version whose vectors carry an older metadata revision has them rewritten before it becomes current', async () => {
    const w = world();
    const item = await newItem(w, ['lent']);
    const v1 = await publishOutputs(w, (await version(w, item, 'v1')).job, ['words']);
    // Changed after the version's vectors went in, before its switch.
    await updateMediaItem({ ...w }, TENANT, item.id, { labels: ['advent'] });
    await switchToVersion(switchDeps(w), v1);
    expect([...w.vectors.vectors.values()].map((vector) => vector.metadata.labels)).toEqual([['advent']]);
  });

  it('the replaced version goes after the grace period: vectors, outputs and upload, not before', async () => {
    const w = world();
    const item = await newItem(w);
    const { v1, v2: v2job } = await currentAndNewer(w, item);
    const v2 = await publishOutputs(w, v2job, ['new']);
    await switchToVersion(switchDeps(w), v2);
    const retire = retireDeps(w);
    expect(await retireDue(retire, 10)).toBe(0);
    expect(w.vectors.vectors.has(vectorKeyOf(v1, 0))).toBe(true);
    w.advance(600_001);
    expect(await retireDue(retire, 10)).toBe(1);
    expect(w.vectors.vectors.has(vectorKeyOf(v1, 0))).toBe(false);
    expect(w.vectors.vectors.has(vectorKeyOf(v2, 0))).toBe(true);
    expect([...w.outputs.objects.keys()].filter((key) => key.startsWith(rootOutputPrefix(v1)))).toEqual([]);
    // Kept until a pass a step's timeout later finds nothing left: an abandoned step may write late.
    expect(w.media.retirements.size).toBe(1);
    await w.outputs.putOutput(`${rootOutputPrefix(v1)}hls/late.m4s`, 'x', 'video/mp4');
    w.advance(61_000);
    expect(await retireDue(retire, 10)).toBe(1);
    expect(await retireDue(retire, 10)).toBe(0);
    expect([...w.outputs.objects.keys()].filter((key) => key.startsWith(rootOutputPrefix(v1)))).toEqual([]);
    expect(w.media.retirements.size).toBe(0);
  });

  it('deleting an item cancels its version in progress and retires every version, which the reconciler removes once stopped', async () => {
    const w = world();
    const item = await newItem(w);
    const { v2 } = await currentAndNewer(w, item);
    await w.inputs.putInput(TENANT, 'upl_aaaaaaaaaaaaaaaaaaaaaa', new Uint8Array([1]), 'audio/mpeg');
    await deleteMediaItem({ ...w, cancel: w.startDeps.cancel }, TENANT, item.id);
    expect(w.canceled).toEqual([v2.id]);
    await expect(getMediaItem(w.media, TENANT, item.id)).rejects.toBeInstanceOf(MediaNotFoundError);
    await expect(version(w, item, 'v3')).rejects.toBeInstanceOf(MediaNotFoundError);
    const retire = retireDeps(w);
    expect(await retireDue(retire, 10)).toBe(1);
    expect(w.vectors.vectors.size).toBe(0);
    expect(w.outputs.objects.size).toBe(0);
    expect(w.inputs.objects.size).toBe(0);
    const deps = searchDeps(w);
    expect((await search(deps, TENANT, { query: 'old' })).items).toEqual([]);
  });

  it('an upload two items were published from stays until the last of them is deleted', async () => {
    const w = world();
    const first = await newItem(w);
    const { item: second } = await createMediaItem(w, {
      tenantId: TENANT,
      idempotencyKey: 'item-2',
      request: { title: 'Same recording, another series' },
    });
    await publishOutputs(w, (await version(w, first, 'a')).job, ['words']);
    await publishOutputs(w, (await version(w, second, 'b')).job, ['words']);
    await w.inputs.putInput(TENANT, 'upl_aaaaaaaaaaaaaaaaaaaaaa', new Uint8Array([1]), 'audio/mpeg');
    await deleteMediaItem({ ...w, cancel: w.startDeps.cancel }, TENANT, first.id);
    await retireDue(retireDeps(w), 10);
    expect(w.inputs.objects.size).toBe(1);
    await deleteMediaItem({ ...w, cancel: w.startDeps.cancel }, TENANT, second.id);
    await retireDue(retireDeps(w), 10);
    expect(w.inputs.objects.size).toBe(0);
    expect(w.media.uploads.size).toBe(0);
  });

  it('a retirement of a version still running cancels it and waits for a later pass', async () => {
    const w = world();
    const item = await newItem(w);
    const v1 = (await version(w, item, 'v1')).job;
    await w.media.putRetirement({
      tenantId: TENANT,
      mediaId: item.id,
      jobId: v1.id,
      runAt: w.now().toISOString(),
      reason: 'deleted',
    });
    const cancel = jest.fn(async () => {});
    const retire = { ...w, deleteInput: async () => {}, cancel };
    expect(await retireDue(retire, 10)).toBe(0);
    expect(cancel).toHaveBeenCalledWith(expect.objectContaining({ id: v1.id }));
    expect(w.media.retirements.size).toBe(1);
  });

  it('shows the current version and the one in progress', async () => {
    const w = world();
    const item = await newItem(w);
    const { v1, v2 } = await currentAndNewer(w, item);
    const view = await presentMediaItem((await w.media.get(TENANT, item.id)) as MediaItem, w);
    expect(view).toMatchObject({
      id: item.id,
      title: 'The prodigal son',
      speaker: 'Ana',
      labels: ['lent'],
      current: { number: 1, jobId: v1.id, status: 'published', searchable: true },
      inProgress: { number: 2, jobId: v2.id, status: 'publishing' },
    });
    expect(view.current?.playlistUrl).toBeDefined();
  });
});
