import { type ComputeStep, computeOutcomeKey } from '../../lambdas/domain/compute';
import { dayNumberOf, vectorKeyOf, vectorsManifestKey } from '../../lambdas/domain/embedding';
import {
  IdempotencyKeyReusedError,
  MediaNotFoundError,
  TenantQueueFullError,
} from '../../lambdas/domain/errors';
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
  takeTheLead,
  updateMediaItem,
} from '../../lambdas/domain/media-library';
import { resolveJob } from '../../lambdas/domain/operator';
import type { VectorIndex } from '../../lambdas/domain/ports';
import { rootOutputPrefix } from '../../lambdas/domain/publish';
import { search } from '../../lambdas/domain/search';
import { JobSettledError, runStep } from '../../lambdas/domain/workflow';
import {
  MemoryInputs,
  MemoryMediaStore,
  MemoryOutputs,
  MemoryStore,
  MemoryTimeline,
  MemoryVectorIndex,
  MemoryWorkflow,
  ScriptedProvider,
} from './support/memory-ports';
import { memoryWorkflowDeps } from './support/workflow-deps';

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
  let startDeps: StartVersionDeps = {
    media,
    now,
    jobs,
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
    cancel,
    now,
    get startDeps() {
      return startDeps;
    },
    advance: (ms: number) => {
      clock += ms;
    },
    /** Refuses the next version requests at intake, as a tenant at its `maxQueued` is: nothing stored. */
    refuseSubmissions: (): (() => void) => {
      const admitting = startDeps;
      startDeps = { ...startDeps, submit: async () => Promise.reject(new TenantQueueFullError(TENANT)) };
      return () => {
        startDeps = admitting;
      };
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
/** What a version's `supersede` step takes the lead with: the world's ports and its cancel. */
const leadDeps = (w: World) => ({ media: w.media, now: w.now, jobs: w.jobs, cancel: w.cancel });
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

  it('a newer version supersedes one still publishing once its recording proved good: canceled, and fenced out of the switch if it finishes anyway', async () => {
    const w = world();
    const item = await newItem(w);
    const v1 = await version(w, item, 'v1');
    const v2 = await version(w, item, 'v2');
    expect(w.canceled).toEqual([]);
    expect(await takeTheLead(leadDeps(w), v1.job)).toBe('leading');
    expect(w.canceled).toEqual([]);
    // Version 2's probe passed: now, and only now, version 1 goes.
    expect(await takeTheLead(leadDeps(w), v2.job)).toBe('leading');
    expect(await takeTheLead(leadDeps(w), v2.job)).toBe('leading');
    expect(w.canceled).toEqual([v1.job.id]);
    expect((await w.media.get(TENANT, item.id))?.proven).toEqual({ number: 2, jobId: v2.job.id });
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

  it('a version whose probe passes after a newer one’s is overtaken: it ends, and the newer one goes on', async () => {
    const w = world();
    const item = await newItem(w);
    const v1 = await version(w, item, 'v1');
    const v2 = await version(w, item, 'v2');
    expect(await takeTheLead(leadDeps(w), v2.job)).toBe('leading');
    expect(await takeTheLead(leadDeps(w), v1.job)).toBe('overtaken');
    expect(w.canceled).toEqual([]);
    expect((await w.media.get(TENANT, item.id))?.proven).toEqual({ number: 2, jobId: v2.job.id });
    expect([...w.media.retirements.values()]).toEqual([
      expect.objectContaining({ jobId: v1.job.id, reason: 'superseded' }),
    ]);
  });

  it('the switch loses to a concurrent newer version proven between its read and its write', async () => {
    const w = world();
    const item = await newItem(w);
    const v1 = await version(w, item, 'v1');
    const done = await publishOutputs(w, v1.job, ['words']);
    w.media.beforeReplace = () => {
      const stored = w.media.items.get(`${TENANT}/${item.id}`) as MediaItem;
      w.media.items.set(`${TENANT}/${item.id}`, {
        ...stored,
        proven: { number: 2, jobId: 'job_zzzzzzzzzzzzzzzzzzzzzzzzzz' },
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
    await deleteMediaItem({ ...w, cancel: w.cancel }, TENANT, item.id);
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
    await deleteMediaItem({ ...w, cancel: w.cancel }, TENANT, first.id);
    await retireDue(retireDeps(w), 10);
    expect(w.inputs.objects.size).toBe(1);
    await deleteMediaItem({ ...w, cancel: w.cancel }, TENANT, second.id);
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

  it('a new version refused at intake leaves the version in progress to become current, and takes no number', async () => {
    const w = world();
    const item = await newItem(w);
    const { v1, v2 } = await currentAndNewer(w, item);
    const admitAgain = w.refuseSubmissions();
    await expect(version(w, item, 'v3')).rejects.toBeInstanceOf(TenantQueueFullError);
    admitAgain();
    expect(w.canceled).toEqual([]);
    // Version 2's publish was paid for in full: it becomes current, and version 1 is replaced.
    const done = await publishOutputs(w, v2, ['new words']);
    expect(await switchToVersion(switchDeps(w), done)).toBe('current');
    const stored = (await w.media.get(TENANT, item.id)) as MediaItem;
    expect(stored.current).toMatchObject({ number: 2, jobId: v2.id });
    expect(stored.latest).toEqual({ number: 2, jobId: v2.id });
    expect([...w.media.retirements.values()]).toEqual([
      expect.objectContaining({ jobId: v1.id, reason: 'replaced' }),
    ]);
    // The refused request took no number: the next one is version 3.
    expect((await version(w, item, 'v4')).job.media).toEqual({ id: item.id, version: 3 });
  });

  it('a newer version whose recording turns out bad leaves the one in progress untouched', async () => {
    const w = world();
    const item = await newItem(w);
    const v1 = (await version(w, item, 'v1')).job;
    const v2 = (await version(w, item, 'v2')).job;
    // Admitted, not yet probed: nothing is known of its recording, so the older one goes on.
    expect(w.canceled).toEqual([]);
    expect(w.media.retirements.size).toBe(0);
    // Its upload is not audio: it fails at its probe.
    w.jobs.jobs.set(v2.id, {
      ...v2,
      status: 'failed',
      error: { code: 'input_invalid', message: 'not audio' },
    });
    const done = await publishOutputs(w, v1, ['words']);
    expect(await switchToVersion(switchDeps(w), done)).toBe('current');
    expect((await w.media.get(TENANT, item.id))?.current).toMatchObject({ number: 1, jobId: v1.id });
  });

  it('the first transcribe of a version whose probe passed cancels the one in progress, and ends one a newer good version overtook before its chunk is made', async () => {
    const w = world();
    const item = await newItem(w);
    const v1 = (await version(w, item, 'v1')).job;
    const v2 = (await version(w, item, 'v2')).job;
    const v3 = (await version(w, item, 'v3')).job;
    const deps = publishDeps(w);
    const transcribe = (job: Job, index: number) =>
      runStep(deps, {
        step: 'transcribe',
        jobId: job.id,
        taskToken: `token-${job.id}-${index}`,
        chunk: {
          index,
          key: `${rootOutputPrefix(job)}chunks/${index}.flac`,
          offsetSeconds: index * 60,
          durationSeconds: 60,
          idempotencyKey: `${job.id}/chunk-${index}`,
        },
      });
    const chunksOf = (job: Job) =>
      [...w.jobs.jobs.values()].filter((child) => child.parent?.jobId === job.id);
    await transcribe(v1, 0);
    expect(w.jobs.jobs.get(v1.id)?.cancelRequestedAt).toBeUndefined();
    expect((await w.media.get(TENANT, item.id))?.proven).toEqual({ number: 1, jobId: v1.id });
    expect(chunksOf(v1)).toHaveLength(1);
    await transcribe(v3, 0);
    await transcribe(v3, 1);
    // A publish settles once its children have: its cancel is requested, its chunk canceled, its workflow finishes it.
    expect(w.jobs.jobs.get(v1.id)?.cancelRequestedAt).toBe(w.now().toISOString());
    expect(chunksOf(v1).map((chunk) => chunk.status)).toEqual(['canceled']);
    expect(chunksOf(v3)).toHaveLength(2);
    // Version 2's probe passed after version 3's: it ends before any of its chunks is made, let alone charged.
    await expect(transcribe(v2, 0)).rejects.toBeInstanceOf(JobSettledError);
    expect(w.jobs.jobs.get(v2.id)).toMatchObject({ status: 'canceled', error: { code: 'superseded' } });
    expect(chunksOf(v2)).toEqual([]);
    expect(w.jobs.jobs.get(v3.id)).toMatchObject({ status: 'running' });
    expect((await w.media.get(TENANT, item.id))?.proven).toEqual({ number: 3, jobId: v3.id });
    expect(
      [...w.media.retirements.values()].map((retirement) => [retirement.jobId, retirement.reason]).sort(),
    ).toEqual(
      [
        [v1.id, 'superseded'],
        [v2.id, 'superseded'],
      ].sort(),
    );
  });

  it('a version timed out to review between its switch and its success never becomes current', async () => {
    const w = world();
    const item = await newItem(w);
    const { v1, v2 } = await currentAndNewer(w, item);
    const deps = publishDeps(w);
    await recordComputeOutcomes(w, v2);
    await publishOutputs(w, v2, ['new words']);
    w.jobs.jobs.set(v2.id, { ...(w.jobs.jobs.get(v2.id) as Job), status: 'running', result: null });
    // The reconciler's timeout lands just before the job's success does.
    const transition = w.jobs.transition.bind(w.jobs);
    w.jobs.transition = async (job, from, change, at) => {
      if (job.id === v2.id && change.status === 'succeeded') {
        await transition(job, ['running'], { status: 'needs_review', error: TIMED_OUT }, at);
      }
      return transition(job, from, change, at);
    };
    await runStep(deps, { step: 'finalize', jobId: v2.id });
    expect(w.jobs.jobs.get(v2.id)?.status).toBe('needs_review');
    const stored = (await w.media.get(TENANT, item.id)) as MediaItem;
    expect(stored.current).toMatchObject({ number: 1, jobId: v1.id });
    expect([...w.media.retirements.values()]).toEqual([]);
    w.advance(600_001);
    expect(await retireDue(retireDeps(w), 10)).toBe(0);
    expect(w.vectors.vectors.has(vectorKeyOf(v1, 0))).toBe(true);
  });

  it('a version that succeeded and lost its switch is switched in by its notify step, which every end passes', async () => {
    const w = world();
    const item = await newItem(w);
    const { v1, v2 } = await currentAndNewer(w, item);
    // Its execution stopped between the success and the switch: the item still names version 1.
    const done = await publishOutputs(w, v2, ['new words']);
    expect((await w.media.get(TENANT, item.id))?.current).toMatchObject({ number: 1, jobId: v1.id });
    await runStep(publishDeps(w), { step: 'notify', jobId: done.id });
    expect((await w.media.get(TENANT, item.id))?.current).toMatchObject({ number: 2, jobId: v2.id });
    expect([...w.media.retirements.values()]).toEqual([
      expect.objectContaining({ jobId: v1.id, reason: 'replaced' }),
    ]);
  });

  it.each([
    ['with its result', true, 2],
    ['without its result', false, 1],
  ] as const)(
    'a version an operator resolves as succeeded %s converges: current if it can be served, retired if not',
    async (_, withResult, currentNumber) => {
      const w = world();
      const item = await newItem(w);
      const { v1, v2 } = await currentAndNewer(w, item);
      const published = await publishOutputs(w, v2, ['new words']);
      // The reconciler's timeout sent it to review before its finalize recorded its success.
      w.jobs.jobs.set(v2.id, {
        ...published,
        status: 'needs_review',
        error: TIMED_OUT,
        ...(withResult ? {} : { result: null }),
      });
      const resolved = await resolveJob(publishDeps(w), v2.id, { outcome: 'succeeded', note: 'checked' });
      expect(resolved.status).toBe('succeeded');
      const stored = (await w.media.get(TENANT, item.id)) as MediaItem;
      expect(stored.current).toMatchObject({
        number: currentNumber,
        jobId: currentNumber === 2 ? v2.id : v1.id,
      });
      expect([...w.media.retirements.values()].map((r) => [r.jobId, r.reason])).toEqual([
        withResult ? [v1.id, 'replaced'] : [v2.id, 'superseded'],
      ]);
    },
  );

  it('two concurrent labels changes leave the current version’s vectors at the newer one', async () => {
    const w = world();
    const item = await newItem(w, ['lent']);
    const v1 = await publishOutputs(w, (await version(w, item, 'v1')).job, ['words', 'more words']);
    await switchToVersion(switchDeps(w), v1);
    // The first change's rewrite of the vectors is slow: the second change lands, and rewrites, before it.
    let letFirstWrite = () => {};
    const firstMayWrite = new Promise<void>((resolve) => {
      letFirstWrite = resolve;
    });
    const slowVectors: Pick<VectorIndex, 'get' | 'put'> = {
      get: (keys) => w.vectors.get(keys),
      put: async (vectors) => {
        await firstMayWrite;
        return w.vectors.put(vectors);
      },
    };
    const first = updateMediaItem({ ...w, vectors: slowVectors }, TENANT, item.id, { labels: ['advent'] });
    await updateMediaItem({ ...w }, TENANT, item.id, { labels: ['easter'] });
    letFirstWrite();
    await first;
    expect((await w.media.get(TENANT, item.id))?.labels).toEqual(['easter']);
    expect([...w.vectors.vectors.values()].map((vector) => vector.metadata.labels)).toEqual([
      ['easter'],
      ['easter'],
    ]);
  });
});

const TIMED_OUT = { code: 'job_timeout', message: 'Still running after the job timeout; stopped.' };

/** The workflow's steps over the world's ports, for a version's finalize. */
const publishDeps = (w: World) =>
  memoryWorkflowDeps(
    { store: w.jobs, provider: new ScriptedProvider(false), clock: w.now() },
    { media: w.media, outputs: w.outputs, vectors: w.vectors, mediaGraceSeconds: 600, now: w.now },
  );

/** What a version's compute steps recorded, for its finalize to read. */
async function recordComputeOutcomes(w: World, job: Job): Promise<void> {
  const prefix = rootOutputPrefix(job);
  const results: Record<ComputeStep, unknown> = {
    probe: { durationSeconds: 60, codec: 'mp3', channels: 1, compute: 'lambda' },
    transcode: { playlistKey: `${prefix}hls/master.m3u8`, renditions: [] },
    split: [],
    index: { transcriptKey: `${prefix}transcript.json`, passages: [] },
  };
  for (const [step, result] of Object.entries(results)) {
    await w.outputs.putOutput(
      computeOutcomeKey(job, step as ComputeStep),
      JSON.stringify({ ok: true, result }),
      'application/json',
    );
  }
}
