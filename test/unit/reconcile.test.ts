import { type Job, newJob } from '../../lambdas/domain/job';
import { type ReconcileDeps, reconcile } from '../../lambdas/domain/reconcile';
import {
  MemoryQueue,
  MemorySlots,
  MemoryStore,
  MemoryTimeline,
  MemoryWorkflow,
  ScriptedProvider,
} from './support/memory-ports';

const t0 = new Date('2026-05-01T10:00:00.000Z');
const at = (ms: number) => new Date(t0.getTime() + ms).toISOString();

function setup(options: { now?: number; deduplicates?: boolean } = {}) {
  const deps = {
    store: new MemoryStore(),
    slots: new MemorySlots(),
    workflow: new MemoryWorkflow(),
    queue: new MemoryQueue(),
    provider: new ScriptedProvider(options.deduplicates ?? true),
    timeline: new MemoryTimeline(),
    now: () => new Date(t0.getTime() + (options.now ?? 0)),
    maxInFlight: 2,
    queuedGraceMs: 30_000,
    jobTimeoutMs: 600_000,
    slotWaitMaxSeconds: 5,
    pageSize: 2,
  } satisfies ReconcileDeps;
  let n = 0;
  const add = (patch: Partial<Job>) => {
    const job = {
      ...newJob(
        {
          id: `job_${String.fromCharCode(97 + n++).repeat(26)}`,
          tenantId: 'acme',
          type: 'image.generate',
          input: { prompt: 'x' },
          idempotencyKey: `k${n}`,
          fingerprint: 'f',
        },
        t0,
      ),
      ...patch,
    } as Job;
    deps.store.jobs.set(job.id, job);
    return job;
  };
  return { deps, add, get: (id: string) => deps.store.jobs.get(id) as Job };
}

describe('queued jobs', () => {
  it('re-enqueues a job whose message was lost, once the grace has passed', async () => {
    const { deps, add, get } = setup({ now: 40_000 });
    const lost = add({ status: 'queued', enqueuedAt: at(0) });
    const fresh = add({
      status: 'queued',
      createdAt: at(30_000),
      statusAt: at(30_000),
      enqueuedAt: at(30_000),
    });

    const report = await reconcile(deps);

    expect(deps.queue.messages.map((m) => m.jobId)).toEqual([lost.id]);
    expect(get(lost.id).enqueuedAt).toBe(at(40_000));
    expect(report.fixes.requeued).toBe(1);
    expect(deps.timeline.types(lost.id)).toEqual(['reconciler.requeued']);
    expect(get(fresh.id).enqueuedAt).toBe(at(30_000));
  });

  it('leaves a job alone while its deferred message shows signs of life', async () => {
    const { deps, add } = setup({ now: 600_000 });
    add({ status: 'queued', enqueuedAt: at(580_000) });
    await reconcile(deps);
    expect(deps.queue.messages).toEqual([]);
  });

  it('gives a job whose execution ended before starting it a new run and a new message', async () => {
    const { deps, add, get } = setup({ now: 60_000 });
    const job = add({ status: 'queued' });
    deps.workflow.statuses.set(job.id, 'ABORTED');
    await reconcile(deps);
    expect(get(job.id).runs).toBe(1);
    expect(deps.queue.messages.map((m) => m.jobId)).toEqual([job.id]);
  });
});

describe('running jobs', () => {
  it('completes a job whose completion webhook was lost, by asking the provider', async () => {
    const { deps, add } = setup();
    const job = add({
      status: 'running',
      startedAt: at(0),
      providerJobId: 'gen_1',
      taskToken: 't1',
      executionName: 'e1',
    });
    deps.workflow.started.push('e1');
    deps.provider.statuses.set('gen_1', { id: 'gen_1', status: 'succeeded', progress: 100 });

    const report = await reconcile(deps);

    expect(deps.workflow.completed).toEqual([{ taskToken: 't1', output: { providerStatus: 'succeeded' } }]);
    expect(report.fixes.completed_from_provider).toBe(1);
    expect(deps.timeline.types(job.id)).toEqual(['reconciler.completed_from_provider']);
  });

  it('keeps the waiting step alive while the provider is still working', async () => {
    const { deps, add } = setup();
    add({
      status: 'running',
      startedAt: at(0),
      providerJobId: 'gen_1',
      taskToken: 't1',
      executionName: 'e1',
    });
    deps.workflow.started.push('e1');
    deps.provider.statuses.set('gen_1', { id: 'gen_1', status: 'running', progress: 30 });
    const report = await reconcile(deps);
    expect(deps.workflow.heartbeats).toEqual(['t1']);
    expect(Object.values(report.fixes).every((count) => count === 0)).toBe(true);
  });

  it('sends a job running past the job timeout to review, stops it and frees its slot once the provider stopped', async () => {
    const { deps, add, get } = setup({ now: 600_001 });
    const job = add({
      status: 'running',
      startedAt: at(0),
      providerJobId: 'gen_1',
      taskToken: 't1',
      executionName: 'e1',
    });
    deps.workflow.started.push('e1');
    await deps.slots.acquire(job.id, 2);

    await reconcile(deps);

    expect(get(job.id)).toMatchObject({ status: 'needs_review', error: { code: 'job_timeout' } });
    expect(deps.workflow.stopped).toEqual(['e1']);
    expect(deps.provider.canceled).toEqual(['gen_1']);
    expect(await deps.slots.holders()).toEqual([]);
  });

  it('restarts the workflow of a running job whose execution died, keeping its slot and provider job', async () => {
    const { deps, add, get } = setup();
    const job = add({ status: 'running', startedAt: at(0), providerJobId: 'gen_1', executionName: 'e1' });
    deps.workflow.statuses.set('e1', 'ABORTED');
    await deps.slots.acquire(job.id, 2);

    const report = await reconcile(deps);

    expect(report.fixes.restarted).toBe(1);
    expect(get(job.id)).toMatchObject({ status: 'running', runs: 1, providerJobId: 'gen_1' });
    expect(deps.workflow.started).toEqual([`${job.id}-run1`]);
    expect(await deps.slots.holders()).toEqual([job.id]);
  });

  it('sends a dead workflow with an ambiguous submission to review when the provider cannot deduplicate', async () => {
    const { deps, add, get } = setup({ deduplicates: false });
    const job = add({
      status: 'running',
      startedAt: at(0),
      submitIntent: { attemptId: 'a', at: at(0) },
      executionName: 'e1',
    });
    deps.workflow.statuses.set('e1', 'FAILED');
    await reconcile(deps);
    expect(get(job.id)).toMatchObject({ status: 'needs_review', error: { code: 'ambiguous_submission' } });
    expect(deps.workflow.started).toEqual([]);
  });

  it('is safe when two passes overlap: one restart, one execution', async () => {
    const { deps, add } = setup();
    add({ status: 'running', startedAt: at(0), executionName: 'e1' });
    deps.workflow.statuses.set('e1', 'ABORTED');
    const [a, b] = await Promise.all([reconcile(deps), reconcile(deps)]);
    expect(a.fixes.restarted + b.fixes.restarted).toBe(1);
    expect(deps.workflow.started).toHaveLength(1);
  });
});

describe('slots', () => {
  it('releases a slot held by a finished or vanished job', async () => {
    const { deps, add } = setup();
    const done = add({ status: 'succeeded' });
    await deps.slots.acquire(done.id, 2);
    await deps.slots.acquire('job_gone', 2);
    const report = await reconcile(deps);
    expect(await deps.slots.holders()).toEqual([]);
    expect(report.fixes.slot_released).toBe(2);
  });

  it('hands the slots it frees to the jobs that waited longest, no more than it freed', async () => {
    const { deps, add } = setup();
    const done = add({ status: 'succeeded' });
    const oldest = add({ status: 'queued', createdAt: at(0), enqueuedAt: at(0) });
    const newest = add({ status: 'queued', createdAt: at(1), enqueuedAt: at(1) });
    await deps.slots.acquire(done.id, 2);
    const report = await reconcile(deps);
    expect(report.fixes.slot_released).toBe(1);
    expect(await deps.slots.holders()).toEqual([oldest.id]);
    expect(deps.queue.messages.map((m) => m.jobId)).toEqual([oldest.id]);
    expect(deps.timeline.types(oldest.id)).toContain('slot.received');
    expect(deps.timeline.types(newest.id)).not.toContain('slot.received');
  });

  it('keeps the slot of an ambiguous job in review until the job timeout has passed', async () => {
    const early = setup({ now: 60_000 });
    const job = early.add({
      status: 'needs_review',
      statusAt: at(0),
      submitIntent: { attemptId: 'a', at: at(0) },
    });
    await early.deps.slots.acquire(job.id, 2);
    const report = await reconcile(early.deps);
    expect(await early.deps.slots.holders()).toEqual([job.id]);
    expect({ inFlight: report.inFlight, inReview: report.inReview }).toEqual({ inFlight: 1, inReview: 1 });

    const late = setup({ now: 600_001 });
    const same = late.add({
      status: 'needs_review',
      statusAt: at(0),
      submitIntent: { attemptId: 'a', at: at(0) },
    });
    await late.deps.slots.acquire(same.id, 2);
    await reconcile(late.deps);
    expect(await late.deps.slots.holders()).toEqual([]);
  });
});

describe('cost', () => {
  it('reads only active jobs: finished ones cost nothing', async () => {
    const { deps, add } = setup();
    for (let i = 0; i < 20; i++) add({ status: 'succeeded' });
    add({ status: 'queued', createdAt: at(0), statusAt: at(0), enqueuedAt: at(0) });
    const report = await reconcile(deps);
    expect(report.itemsRead).toBe(1);
    expect(report.jobsChecked).toBe(1);
    expect(report.inFlight).toBe(0);
  });
});
