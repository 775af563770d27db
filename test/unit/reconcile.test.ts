import { vectorKeyOf, vectorsManifestKey } from '../../lambdas/domain/embedding';
import { ProviderUnavailableError } from '../../lambdas/domain/errors';
import { waitingEntryOf } from '../../lambdas/domain/fair-share';
import { executionNameOf, type Job, newJob, providerOf, slotHolderOf } from '../../lambdas/domain/job';
import { RESOLVED_FAILED_CODE } from '../../lambdas/domain/operator';
import type { EnqueueOptions } from '../../lambdas/domain/ports';
import { jobOutputPrefix } from '../../lambdas/domain/publish';
import { BACKLOG_RECOUNTS_PER_PASS, type ReconcileDeps, reconcile } from '../../lambdas/domain/reconcile';
import { readFailure } from '../../lambdas/providers/common';
import {
  granting,
  limits,
  MemoryBacklogs,
  MemoryEvents,
  MemoryOutputs,
  MemoryQueue,
  MemoryReconcilerProgress,
  MemoryStore,
  MemoryTimeline,
  MemoryVectorIndex,
  MemoryWaitingLines,
  MemoryWorkflow,
  memorySlots,
  memoryTenantShares,
  ScriptedProvider,
} from './support/memory-ports';

const t0 = new Date('2026-05-01T10:00:00.000Z');
const at = (ms: number) => new Date(t0.getTime() + ms).toISOString();

function setup(options: { now?: number; deduplicates?: boolean } = {}) {
  const provider = new ScriptedProvider(options.deduplicates ?? true);
  const store = new MemoryStore();
  const deps = granting({
    store,
    slots: memorySlots(),
    workflow: new MemoryWorkflow(),
    queue: new MemoryQueue(),
    waiting: new MemoryWaitingLines(),
    tenantShares: memoryTenantShares(),
    provider,
    providers: async () => provider,
    timeline: new MemoryTimeline(),
    events: new MemoryEvents(),
    outputs: new MemoryOutputs(),
    vectors: new MemoryVectorIndex(),
    now: () => new Date(t0.getTime() + (options.now ?? 0)),
    maxInFlight: limits(2),
    queuedGraceMs: 30_000,
    jobTimeoutMs: 600_000,
    slotWaitMaxSeconds: 5,
    pageSize: 2,
    budgetMs: 60_000,
    progress: new MemoryReconcilerProgress(),
    backlogs: new MemoryBacklogs(store),
    firstLook: async (): Promise<EnqueueOptions> => ({ inLine: true }),
    promotionsPerPass: 10,
  });
  deps satisfies ReconcileDeps;
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
  /** A running job whose provider job is gen_1, its waiting step's token t1, in the started execution e1. */
  const atProvider = (patch: Partial<Job> = {}) => {
    const job = add({
      status: 'running',
      startedAt: at(0),
      providerJobId: 'gen_1',
      taskToken: 't1',
      executionName: 'e1',
      ...patch,
    });
    deps.workflow.started.push('e1');
    return job;
  };
  return { deps, add, atProvider, get: (id: string) => deps.store.jobs.get(id) as Job };
}

describe("providers' pauses", () => {
  it('reports the providers paused when the pass reads their pools, a pause run out as open', async () => {
    const { deps } = setup({ now: 10_000 });
    await deps
      .slots('replicate')
      .pause({ until: new Date(t0.getTime() + 20_000), seconds: 20, reason: 'HTTP 429' });
    await deps
      .slots('deepgram')
      .pause({ until: new Date(t0.getTime() + 10_000), seconds: 10, reason: 'HTTP 503' });
    const report = await reconcile(deps);
    expect(report.pausedProviders).toEqual(['replicate']);
  });
});

describe("tenants' backlogs", () => {
  it('recounts a counter a crash left off, and reports each tenant it recounted with the slots it holds', async () => {
    const { deps, add } = setup({ now: 10_000 });
    add({ status: 'queued', enqueuedAt: at(9_000) });
    add({ status: 'queued', enqueuedAt: at(9_000) });
    const running = add({ status: 'running', startedAt: at(0) });
    await deps.slots('longhaul-http').acquire(slotHolderOf(running), 2, { tenant: 'acme' });
    // Five were admitted; the writes that took three out of the backlog were lost.
    deps.store.backlogs.set('acme', 5);
    deps.store.backlogs.set('globex', 0);

    const report = await reconcile(deps);

    expect(deps.store.backlogs.get('acme')).toBe(2);
    expect(report.fixes.backlog_recounted).toBe(1);
    expect(report.tenants).toEqual([
      { tenant: 'acme', queued: 2, scheduled: 0, inFlight: 1 },
      { tenant: 'globex', queued: 0, scheduled: 0, inFlight: 0 },
    ]);
  });

  it('lists again the tenant of a queued job whose listing a stop lost after its raise, and recounts it from then on', async () => {
    const { deps, add } = setup({ now: 10_000 });
    add({ status: 'queued', enqueuedAt: at(9_000) });
    deps.store.backlogs.set('acme', 1);
    const backlogs = deps.backlogs as MemoryBacklogs;
    backlogs.unlisted.add('acme');
    expect(await backlogs.tenants()).toEqual([]);

    await reconcile(deps);

    expect(await backlogs.tenants()).toEqual(['acme']);
    const next = await reconcile(deps);
    expect(next.tenants).toEqual([{ tenant: 'acme', queued: 1, scheduled: 0, inFlight: 0 }]);
  });

  it('recounts at most BACKLOG_RECOUNTS_PER_PASS tenants a pass, and every tenant in turn', async () => {
    const { deps } = setup();
    const names = Array.from(
      { length: BACKLOG_RECOUNTS_PER_PASS * 2 + 5 },
      (_, i) => `t${String(i).padStart(3, '0')}`,
    );
    for (const name of names) deps.store.backlogs.set(name, 1);
    const seen = new Set<string>();
    let minute = 0;
    const passes = [];
    while (seen.size < names.length && minute < 10) {
      const passAt = new Date(t0.getTime() + minute++ * 60_000);
      const report = await reconcile({ ...deps, now: () => passAt });
      passes.push(report.tenants.length);
      for (const line of report.tenants) seen.add(line.tenant);
    }
    expect(passes.every((count) => count === BACKLOG_RECOUNTS_PER_PASS)).toBe(true);
    expect(seen.size).toBe(names.length);
    expect(minute).toBeLessThanOrEqual(3);
  });
});

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

    // Not a hand-off: the job holds no slot and looks for one like any other.
    expect(deps.queue.messages).toEqual([{ jobId: lost.id, provider: 'longhaul-http', options: {} }]);
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

  it('hands the slot of a job whose message was lost to the job whose turn it is, as it requeues the job', async () => {
    const { deps, add, atProvider, get } = setup({ now: 40_000 });
    const lost = add({ status: 'queued', enqueuedAt: at(0) });
    const busy = atProvider();
    const next = add({
      status: 'queued',
      createdAt: at(39_000),
      statusAt: at(39_000),
      enqueuedAt: at(39_000),
    });
    await deps.waiting.add(waitingEntryOf(next));
    for (const holder of [lost, busy]) await deps.slots.acquire(slotHolderOf(holder), 2, { tenant: 'acme' });
    deps.provider.statuses.set('gen_1', { id: 'gen_1', status: 'running', progress: 30 });

    await reconcile(deps);

    expect(new Set(await deps.slots.holders())).toEqual(new Set([slotHolderOf(busy), slotHolderOf(next)]));
    expect(get(next.id).status).toBe('running');
    expect(deps.queue.messages).toEqual([
      { jobId: lost.id, provider: 'longhaul-http', options: {} },
      { jobId: next.id, provider: 'longhaul-http', options: { handOff: true } },
    ]);
    expect(deps.timeline.events.get(next.id)).toEqual([
      { at: at(40_000), type: 'slot.received', detail: 'a slot the reconciler freed' },
    ]);
  });

  it('gives a job whose execution ended before starting it a new run and a new message', async () => {
    const { deps, add, get } = setup({ now: 60_000 });
    const job = add({ status: 'queued' });
    deps.workflow.statuses.set(executionNameOf(job), 'ABORTED');
    await reconcile(deps);
    expect(get(job.id).runs).toBe(1);
    expect(deps.queue.messages.map((m) => m.jobId)).toEqual([job.id]);
  });
});

describe('start deadlines', () => {
  it('ends a job still waiting at a paused provider once its startBy has passed, charging nothing', async () => {
    const { deps, add, get } = setup({ now: 3_600_000 });
    await deps.slots.pool('longhaul-http').pause({
      until: new Date(t0.getTime() + 7_200_000),
      seconds: 300,
      reason: 'longhaul-http answered 503.',
    });
    const late = add({ status: 'queued', enqueuedAt: at(3_590_000), startBy: at(3_000_000) });
    const patient = add({ status: 'queued', enqueuedAt: at(3_590_000) });
    await deps.waiting.add(waitingEntryOf(late));
    await deps.waiting.add(waitingEntryOf(patient));

    const report = await reconcile(deps);

    expect(get(late.id).status).toBe('failed');
    expect(get(late.id).error?.code).toBe('start_deadline_passed');
    expect(get(late.id).finishedAt).toBe(at(3_600_000));
    expect(report.fixes.start_deadline_passed).toBe(1);
    expect(deps.timeline.types(late.id)).toEqual(['reconciler.start_deadline_passed']);
    expect(deps.events.published).toEqual([
      expect.objectContaining({
        detailType: 'job.failed',
        detail: expect.objectContaining({ jobId: late.id, error: get(late.id).error }),
      }),
    ]);
    expect(deps.waiting.entries()).toEqual([waitingEntryOf(patient)]);
    // Without a startBy a job waits however long its provider is down.
    expect(get(patient.id).status).toBe('queued');
    expect(deps.provider.submissions).toEqual([]);
    expect(deps.workflow.started).toEqual([]);
  });

  it('never ends a job that reached its provider, nor one whose submission may have been sent', async () => {
    const { deps, add, atProvider, get } = setup({ now: 3_600_000 });
    const submitted = atProvider({ startBy: at(1_000), startedAt: at(3_500_000) });
    deps.provider.statuses.set('gen_1', { id: 'gen_1', status: 'running', progress: 10 });
    const unknown = add({
      status: 'queued',
      enqueuedAt: at(3_590_000),
      startBy: at(1_000),
      submitIntent: { attemptId: 'a1', at: at(500) },
    });

    const report = await reconcile(deps);

    expect(get(submitted.id).status).toBe('running');
    expect(get(unknown.id).status).toBe('queued');
    expect(report.fixes.start_deadline_passed).toBe(0);
  });
});

describe('running jobs', () => {
  it('completes a job whose completion webhook was lost, by asking the provider', async () => {
    const { deps, atProvider } = setup();
    const job = atProvider();
    deps.provider.statuses.set('gen_1', { id: 'gen_1', status: 'succeeded', progress: 100 });

    const report = await reconcile(deps);

    expect(deps.workflow.completed).toEqual([{ taskToken: 't1', output: { providerStatus: 'succeeded' } }]);
    expect(report.fixes.completed_from_provider).toBe(1);
    expect(deps.timeline.types(job.id)).toEqual(['reconciler.completed_from_provider']);
  });

  it('keeps the waiting step alive while the provider is still working', async () => {
    const { deps, atProvider } = setup();
    atProvider();
    deps.provider.statuses.set('gen_1', { id: 'gen_1', status: 'running', progress: 30 });
    const report = await reconcile(deps);
    expect(deps.workflow.heartbeats).toEqual(['t1']);
    expect(Object.values(report.fixes).every((count) => count === 0)).toBe(true);
  });

  it('keeps the waiting step alive while the provider is down and cannot say how the job is', async () => {
    const { deps, atProvider, get } = setup();
    const job = atProvider();
    deps.provider.status = async () => {
      throw readFailure('longhaul-http', { kind: 'answered', status: 503 }, undefined);
    };
    const report = await reconcile(deps);
    expect(deps.workflow.heartbeats).toEqual(['t1']);
    expect(report.errors).toBe(0);
    expect(get(job.id).status).toBe('running');
  });

  it('sends a job running past the job timeout to review, stops it and frees its slot once the provider stopped', async () => {
    const { deps, atProvider, get } = setup({ now: 600_001 });
    const job = atProvider();
    await deps.slots.acquire(slotHolderOf(job), 2);

    await reconcile(deps);

    expect(get(job.id)).toMatchObject({ status: 'needs_review', error: { code: 'job_timeout' } });
    expect(deps.workflow.stopped).toEqual(['e1']);
    expect(deps.provider.canceled).toEqual(['gen_1']);
    expect(await deps.slots.holders()).toEqual([]);
    expect(deps.events.published).toEqual([
      {
        detailType: 'job.needs_review',
        detail: expect.objectContaining({
          jobId: job.id,
          error: expect.objectContaining({ code: 'job_timeout' }),
        }),
      },
    ]);
  });

  it('hands the slot of a job it sent to review past the job timeout to the job whose turn it is', async () => {
    const { deps, add, atProvider, get } = setup({ now: 600_001 });
    const late = atProvider();
    const busy = add({
      status: 'running',
      startedAt: at(590_000),
      providerJobId: 'gen_2',
      taskToken: 't2',
      executionName: 'e2',
    });
    deps.workflow.started.push('e2');
    deps.provider.statuses.set('gen_2', { id: 'gen_2', status: 'running', progress: 30 });
    const next = add({
      status: 'queued',
      createdAt: at(590_000),
      statusAt: at(590_000),
      enqueuedAt: at(590_000),
    });
    await deps.waiting.add(waitingEntryOf(next));
    for (const holder of [late, busy]) await deps.slots.acquire(slotHolderOf(holder), 2, { tenant: 'acme' });

    await reconcile(deps);

    expect(get(late.id)).toMatchObject({ status: 'needs_review', error: { code: 'job_timeout' } });
    expect(new Set(await deps.slots.holders())).toEqual(new Set([slotHolderOf(busy), slotHolderOf(next)]));
    expect(get(next.id).status).toBe('running');
    expect(deps.queue.messages).toEqual([
      { jobId: next.id, provider: 'longhaul-http', options: { handOff: true } },
    ]);
    expect(deps.timeline.events.get(next.id)).toEqual([
      { at: at(600_001), type: 'slot.received', detail: 'a slot the reconciler freed' },
    ]);
  });

  it('restarts the workflow of a running job whose execution died, keeping its slot and provider job', async () => {
    const { deps, add, get } = setup();
    const job = add({ status: 'running', startedAt: at(0), providerJobId: 'gen_1', executionName: 'e1' });
    deps.workflow.statuses.set('e1', 'ABORTED');
    await deps.slots.acquire(slotHolderOf(job), 2);

    const report = await reconcile(deps);

    expect(report.fixes.restarted).toBe(1);
    expect(get(job.id)).toMatchObject({ status: 'running', runs: 1, providerJobId: 'gen_1' });
    expect(deps.workflow.started).toEqual([executionNameOf({ ...job, runs: 1 })]);
    expect(await deps.slots.holders()).toEqual([slotHolderOf(job)]);
  });

  /** A job resumed a minute ago (its `resumes`-th resume), an hour after its start, paid and answered before. */
  const resumedBeforeItsRedrive = (resumes: number) =>
    ({
      status: 'running',
      startedAt: at(-3_600_000),
      providerJobId: 'gen_1',
      providerOutcome: { status: 'succeeded', at: at(-3_500_000) },
      executionName: 'e1',
      resumes,
      resumedAt: at(0),
    }) as const;

  it('redrives a resumed job whose resume stopped before its redrive, under the resume’s token, and starts no new run', async () => {
    const { deps, add, get } = setup({ now: 60_000 });
    const job = add(resumedBeforeItsRedrive(2));
    deps.workflow.statuses.set('e1', 'FAILED');

    const report = await reconcile(deps);
    // A second pass meets the redriven execution running.
    await reconcile(deps);

    expect(report.fixes.redriven).toBe(1);
    expect(report.fixes.restarted).toBe(0);
    // Its resume, an hour after its start, is not past the job timeout: the resume counts.
    expect(report.fixes.timed_out).toBe(0);
    expect(deps.workflow.redriven).toEqual(['e1/resume-2']);
    expect(deps.workflow.started).toEqual([]);
    expect(get(job.id).status).toBe('running');
    expect(get(job.id).runs).toBeUndefined();
  });

  it('starts a new run of a resumed job whose failed execution can never be redriven, from where the job is', async () => {
    const { deps, add, get } = setup({ now: 60_000 });
    const job = add(resumedBeforeItsRedrive(1));
    deps.workflow.statuses.set('e1', 'FAILED');
    deps.workflow.notRedrivable.add('e1');

    const report = await reconcile(deps);

    expect(report.fixes.redriven).toBe(0);
    expect(report.fixes.restarted).toBe(1);
    expect(deps.workflow.redriven).toEqual([]);
    expect(deps.workflow.started).toEqual([executionNameOf({ ...job, runs: 1 })]);
    // Sent and answered before: the new run takes no slot and submits nothing again.
    expect(get(job.id)).toMatchObject({ status: 'running', runs: 1, providerJobId: 'gen_1' });
    expect(await deps.slots.holders()).toEqual([]);
  });

  it('treats a resumed job whose redriven execution failed again long after as any ended execution', async () => {
    const { deps, add } = setup({ now: 16 * 60_000 });
    Object.assign(deps, { jobTimeoutMs: 3_600_000 });
    add({
      status: 'running',
      startedAt: at(0),
      providerJobId: 'gen_1',
      executionName: 'e1',
      resumes: 1,
      resumedAt: at(0),
    });
    deps.workflow.statuses.set('e1', 'FAILED');

    const report = await reconcile(deps);

    expect(report.fixes.redriven).toBe(0);
    expect(report.fixes.restarted).toBe(1);
    expect(deps.workflow.redriven).toEqual([]);
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

  it('starts a job given its slot whose execution never started, under the same name, once its start had time', async () => {
    const { deps, add, get } = setup({ now: 10_000 });
    const job = add({ status: 'running', statusAt: at(5_000), startedAt: at(5_000) });
    const granted = add({ ...job, id: 'job_zzzzzzzzzzzzzzzzzzzzzzzzzz' });
    deps.store.jobs.set(job.id, { ...get(job.id), executionName: executionNameOf(job) });
    deps.store.jobs.set(granted.id, { ...granted, executionName: executionNameOf(granted) });
    await deps.slots.acquire(slotHolderOf(job), 2);
    await deps.slots.acquire(slotHolderOf(granted), 2);

    // Within the grace its granter's start may still be on its way: nothing.
    expect((await reconcile(deps)).fixes.restarted).toBe(0);
    expect(deps.workflow.started).toEqual([]);

    const later = { ...deps, now: () => new Date(t0.getTime() + 40_000) };
    const report = await reconcile(later);

    expect(report.fixes.restarted).toBe(2);
    // The name the grant gave it, no new run: a late start of the granter's is the same execution.
    expect(deps.workflow.started.sort()).toEqual([executionNameOf(job), executionNameOf(granted)].sort());
    expect(get(job.id).runs).toBeUndefined();
    expect(await deps.slots.holders()).toHaveLength(2);
  });

  it('starts no run of a resumed job whose execution is gone while every slot is held: it waits in its line, and its grant goes on', async () => {
    const { deps, add, get } = setup({ now: 120_000 });
    // Resumed after its submit was refused; its execution purged (or its state machine replaced).
    const job = add({
      status: 'running',
      startedAt: at(0),
      resumes: 1,
      resumedAt: at(60_000),
      statusAt: at(60_000),
    });
    deps.store.jobs.set(job.id, { ...get(job.id), executionName: executionNameOf(job) });
    // Both slots held by jobs in review whose submissions' outcomes are unknown.
    const [first, second] = [0, 1].map(() =>
      add({
        status: 'needs_review',
        statusAt: at(100_000),
        submitIntent: { attemptId: 'a', at: at(100_000) },
      }),
    ) as [Job, Job];
    await deps.slots.acquire(slotHolderOf(first), 2);
    await deps.slots.acquire(slotHolderOf(second), 2);

    const report = await reconcile(deps);

    expect(report.fixes.restarted).toBe(0);
    expect(deps.workflow.started).toEqual([]);
    expect(await deps.slots.holders()).toEqual([slotHolderOf(first), slotHolderOf(second)]);
    expect(await deps.waiting.head('longhaul-http', job.tenantId, 10)).toEqual([waitingEntryOf(job)]);

    // A slot frees: the job is granted it by its line, and its grant makes the new run.
    await deps.slots.release(slotHolderOf(first));
    await reconcile(deps);
    expect(await deps.slots.holders()).toEqual([slotHolderOf(second), slotHolderOf(job)]);
    expect(deps.queue.messages).toEqual([
      { jobId: job.id, provider: 'longhaul-http', options: { handOff: true } },
    ]);
    expect(deps.workflow.started).toEqual([]);
  });

  it('is safe when two passes overlap: one restart, one execution', async () => {
    const { deps, add } = setup();
    const job = add({ status: 'running', startedAt: at(0), executionName: 'e1' });
    await deps.slots.acquire(slotHolderOf(job), 2, { tenant: 'acme' });
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
    await deps.slots.acquire(slotHolderOf(done), 2);
    await deps.slots.acquire('job_gone', 2);
    const report = await reconcile(deps);
    expect(await deps.slots.holders()).toEqual([]);
    expect(report.fixes.slot_released).toBe(2);
  });

  it('frees a search’s slot only once its lease has ended: a live query keeps it', async () => {
    const { deps } = setup();
    const now = deps.now().getTime();
    const live = `query_${now + 1_000}_abc123`;
    const dead = `query_${now - 1}_def456`;
    await deps.slots.acquire(live, 3);
    await deps.slots.acquire(dead, 3);
    const report = await reconcile(deps);
    expect(await deps.slots.holders()).toEqual([live]);
    expect(report.fixes.slot_released).toBe(1);
    expect(deps.timeline.types(dead)).toEqual([]);
  });

  it('hands the slots it frees to the jobs whose turn it is by the hand-off lane, no more than it freed', async () => {
    const { deps, add } = setup();
    const done = add({ status: 'succeeded' });
    const oldest = add({ status: 'queued', createdAt: at(0), enqueuedAt: at(0) });
    const newest = add({ status: 'queued', createdAt: at(1), enqueuedAt: at(1) });
    for (const queued of [oldest, newest]) await deps.waiting.add(waitingEntryOf(queued));
    await deps.slots.acquire(slotHolderOf(done), 2);
    const report = await reconcile(deps);
    expect(report.fixes.slot_released).toBe(1);
    expect(await deps.slots.holders()).toEqual([slotHolderOf(oldest)]);
    expect(deps.queue.messages).toEqual([
      { jobId: oldest.id, provider: 'longhaul-http', options: { handOff: true } },
    ]);
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
    await early.deps.slots.acquire(slotHolderOf(job), 2);
    const report = await reconcile(early.deps);
    expect(await early.deps.slots.holders()).toEqual([slotHolderOf(job)]);
    expect({ inFlight: report.inFlight, inReview: report.inReview }).toEqual({ inFlight: 1, inReview: 1 });

    const late = setup({ now: 600_001 });
    const same = late.add({
      status: 'needs_review',
      statusAt: at(0),
      submitIntent: { attemptId: 'a', at: at(0) },
    });
    await late.deps.slots.acquire(slotHolderOf(same), 2);
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

describe('runs, submissions and their slots', () => {
  it('frees no slot of a newer submission from a listing that predates an operator requeue', async () => {
    const { deps, add, get } = setup({ now: 700_000 });
    // Read as in review, its ambiguous submission past the job timeout...
    const listed = add({ status: 'needs_review', submitIntent: { attemptId: 'a1', at: at(0) } });
    // ...but by the time the pass acts, an operator requeued it and a dispatcher gave the new submission a slot.
    const requeued = { ...listed, status: 'running', resubmissions: 1, submitIntent: undefined } as Job;
    deps.store.jobs.set(listed.id, requeued);
    await deps.slots.acquire(slotHolderOf(requeued), 2);
    deps.store.listActive = async (provider, status) => ({
      items: provider === providerOf(listed) && status === 'needs_review' ? [listed] : [],
      itemsRead: 1,
      nextCursor: null,
    });

    await reconcile(deps);

    expect(await deps.slots.holders()).toEqual([slotHolderOf(get(listed.id))]);
  });

  it('resumes a waiting step whose recorded outcome never reached it, and again on the next pass', async () => {
    const { deps, atProvider } = setup({ now: 60_000 });
    atProvider({ providerOutcome: { status: 'succeeded', at: at(1000) } });

    const report = await reconcile(deps);
    await reconcile(deps);

    expect(report.fixes.completed_from_provider).toBe(1);
    expect(deps.workflow.completed).toEqual([
      { taskToken: 't1', output: { providerStatus: 'succeeded' } },
      { taskToken: 't1', output: { providerStatus: 'succeeded' } },
    ]);
  });

  it('restarts a job the provider finished without a free slot, however saturated the pool', async () => {
    const { deps, add, get } = setup({ now: 60_000 });
    const job = add({
      status: 'running',
      startedAt: at(0),
      executionName: 'e1',
      providerJobId: 'gen_1',
      providerOutcome: { status: 'succeeded', at: at(1000) },
    });
    deps.workflow.statuses.set('e1', 'FAILED');
    // Two other jobs at the provider hold every slot.
    for (const name of ['e2', 'e3']) {
      const other = add({
        status: 'running',
        startedAt: at(0),
        executionName: name,
        providerJobId: `gen_${name}`,
      });
      deps.workflow.started.push(name);
      await deps.slots.acquire(slotHolderOf(other), 2);
    }

    const report = await reconcile(deps);

    expect(report.fixes.restarted).toBe(1);
    expect(deps.workflow.started).toContain(executionNameOf(get(job.id)));
  });

  it('applies the job timeout to a running job whose execution has closed', async () => {
    const { deps, add, get } = setup({ now: 700_000 });
    const job = add({ status: 'running', startedAt: at(0), executionName: 'e1', providerJobId: 'gen_1' });
    deps.workflow.statuses.set('e1', 'FAILED');
    await deps.slots.acquire(slotHolderOf(job), 2);

    const report = await reconcile(deps);

    expect(report.fixes.timed_out).toBe(1);
    expect(get(job.id)).toMatchObject({ status: 'needs_review', error: { code: 'job_timeout' } });
    expect(deps.provider.canceled).toEqual(['gen_1']);
    expect(await deps.slots.holders()).toEqual([]);
    expect(deps.workflow.started).toEqual([]);
  });

  it('sends a lost cancel to the waiting step again, and keeps the slot for its settle path', async () => {
    const { deps, add } = setup({ now: 60_000 });
    const job = add({ status: 'canceled', executionName: 'e1', providerJobId: 'gen_1', taskToken: 't1' });
    deps.workflow.started.push('e1');
    await deps.slots.acquire(slotHolderOf(job), 2);

    await reconcile(deps);

    expect(deps.workflow.failed).toEqual([
      { taskToken: 't1', error: 'JobCanceled', cause: '[canceled] Canceled by the client.' },
    ]);
    expect(await deps.slots.holders()).toEqual([slotHolderOf(job)]);
  });

  it('frees a canceled job slot only once the provider confirmed the stop', async () => {
    const { deps, add, get } = setup({ now: 60_000 });
    const job = add({ status: 'canceled', executionName: 'e1', providerJobId: 'gen_1' });
    deps.workflow.statuses.set('e1', 'SUCCEEDED');
    await deps.slots.acquire(slotHolderOf(job), 2);
    deps.provider.cancel = async () => {
      throw new Error('provider unreachable');
    };

    await reconcile(deps);
    expect(await deps.slots.holders()).toEqual([slotHolderOf(job)]);

    deps.provider.cancel = async () => {};
    await reconcile(deps);
    expect(await deps.slots.holders()).toEqual([]);
    expect(get(job.id).providerOutcome).toMatchObject({ status: 'canceled', providerJobId: 'gen_1' });
  });

  it('keeps the slot of a canceled job whose submission outcome is unknown until the job timeout', async () => {
    const { deps, add } = setup({ now: 60_000 });
    const job = add({
      status: 'canceled',
      executionName: 'e1',
      submitIntent: { attemptId: 'a1', at: at(0) },
    });
    deps.workflow.statuses.set('e1', 'SUCCEEDED');
    await deps.slots.acquire(slotHolderOf(job), 2);

    await reconcile(deps);

    expect(await deps.slots.holders()).toEqual([slotHolderOf(job)]);
  });

  it('asks the provider about a job in review it accepted, records the answer and frees the slot', async () => {
    const { deps, add, get } = setup({ now: 60_000 });
    const job = add({ status: 'needs_review', providerJobId: 'gen_1', statusAt: at(1000) });
    await deps.slots.acquire(slotHolderOf(job), 2);
    deps.provider.statuses.set('gen_1', { id: 'gen_1', status: 'running', progress: 50 });

    await reconcile(deps);
    expect(await deps.slots.holders()).toEqual([slotHolderOf(job)]);

    deps.provider.statuses.set('gen_1', { id: 'gen_1', status: 'succeeded', progress: 100 });
    await reconcile(deps);
    expect(get(job.id)).toMatchObject({
      status: 'needs_review',
      providerOutcome: { status: 'succeeded', providerJobId: 'gen_1' },
    });
    expect(await deps.slots.holders()).toEqual([]);
  });

  it('frees the slot of a job canceled at a provider that cannot stop it once the job timeout has passed since it was accepted', async () => {
    // Deepgram cannot cancel, and its callback for this job was lost: nothing but the clock says it is over.
    const canceledAt = (now: number) => {
      const { deps, add } = setup({ now });
      const job = add({
        status: 'canceled',
        provider: 'deepgram',
        type: 'audio.transcribe',
        input: { audioRef: `upl_${'a'.repeat(22)}` },
        executionName: 'e1',
        providerJobId: 'req_1',
        updatedAt: at(0),
      });
      deps.workflow.statuses.set('e1', 'SUCCEEDED');
      return { deps, job };
    };
    const early = canceledAt(600_000);
    await early.deps.slots('deepgram').acquire(slotHolderOf(early.job), 2);
    await reconcile(early.deps);
    expect(await early.deps.slots('deepgram').holders()).toEqual([slotHolderOf(early.job)]);

    const late = canceledAt(600_001);
    await late.deps.slots('deepgram').acquire(slotHolderOf(late.job), 2);
    const report = await reconcile(late.deps);
    expect(await late.deps.slots('deepgram').holders()).toEqual([]);
    expect(report.fixes.slot_released).toBe(1);
    // It was not asked to stop what it cannot stop.
    expect([...early.deps.provider.canceled, ...late.deps.provider.canceled]).toEqual([]);
  });

  it('frees the slot of a job in review at a provider that cannot stop it by the clock, even when the provider cannot say how it stands', async () => {
    const reviewedAt = (now: number) => {
      const { deps, add } = setup({ now });
      const job = add({
        status: 'needs_review',
        provider: 'deepgram',
        type: 'audio.transcribe',
        input: { audioRef: `upl_${'a'.repeat(22)}` },
        startedAt: at(0),
        statusAt: at(10_000),
        updatedAt: at(10_000),
        providerJobId: 'req_1',
      });
      deps.provider.status = async () => {
        throw new ProviderUnavailableError('Deepgram has no status to read without a projectId.');
      };
      return { deps, job };
    };
    const early = reviewedAt(610_000);
    await early.deps.slots('deepgram').acquire(slotHolderOf(early.job), 2);
    const held = await reconcile(early.deps);
    expect(await early.deps.slots('deepgram').holders()).toEqual([slotHolderOf(early.job)]);
    expect(held.errors).toBe(1);

    const late = reviewedAt(610_001);
    await late.deps.slots('deepgram').acquire(slotHolderOf(late.job), 2);
    const freed = await reconcile(late.deps);
    expect(await late.deps.slots('deepgram').holders()).toEqual([]);
    expect({ released: freed.fixes.slot_released, errors: freed.errors }).toEqual({ released: 1, errors: 1 });
  });

  it('keeps the slot of a job in review at a provider that can stop it while the stop is not confirmed, however late', async () => {
    const { deps, add } = setup({ now: 6_000_000 });
    const job = add({ status: 'needs_review', startedAt: at(0), updatedAt: at(0), providerJobId: 'gen_1' });
    await deps.slots.acquire(slotHolderOf(job), 2);
    deps.provider.statuses.set('gen_1', { id: 'gen_1', status: 'running', progress: 50 });
    deps.provider.cancel = async () => {
      throw new Error('provider unreachable');
    };

    await reconcile(deps);

    expect(await deps.slots.holders()).toEqual([slotHolderOf(job)]);
  });

  it('sends no second message for a queued job whose deferral touched it after the pass read it', async () => {
    const { deps, add } = setup({ now: 600_000 });
    const listed = add({ status: 'queued', enqueuedAt: at(0) });
    const listActive = deps.store.listActive.bind(deps.store);
    deps.store.listActive = async (provider, status, page) => {
      const result = await listActive(provider, status, page);
      // The job's deferred message arrives and the dispatcher touches it, between the read and the requeue.
      if (status === 'queued') await deps.store.touchEnqueued(listed.id, new Date(t0.getTime() + 599_000));
      return result;
    };

    await reconcile(deps);

    expect(deps.queue.messages).toEqual([]);
  });
});

describe('a pass under a backlog', () => {
  it('stops when its time is up and the next pass goes on from there, so every job is reached', async () => {
    const { deps, add } = setup();
    let clock = t0.getTime() + 600_000;
    const fixture = { ...deps, now: () => new Date(clock), budgetMs: 1500 };
    const lost = Array.from({ length: 5 }, () => add({ status: 'queued', enqueuedAt: at(0) }));
    const listActive = deps.store.listActive.bind(deps.store);
    // Each page of queued jobs takes a second to read (a backlog's pages are full).
    fixture.store.listActive = async (provider, status, page) => {
      if (provider === providerOf(lost[0] as Job) && status === 'queued') clock += 1000;
      return listActive(provider, status, page);
    };

    const first = await reconcile(fixture);

    expect(first.complete).toBe(false);
    expect(deps.queue.messages).toHaveLength(4);
    expect(deps.progress.position).toEqual({
      provider: 'longhaul-http',
      status: 'queued',
      cursor: expect.any(String),
    });

    const second = await reconcile(fixture);

    expect(second.complete).toBe(true);
    expect(deps.queue.messages.map((m) => m.jobId).sort()).toEqual(lost.map((job) => job.id).sort());
    expect(deps.progress.position).toBeUndefined();
  });
});

describe('slots taken before they were named by submission', () => {
  it('are the job’s own: kept while its provider may run it, freed once it is done', async () => {
    const { deps, atProvider, get } = setup({ now: 60_000 });
    // In flight across the upgrade: its slot is held by the bare job id.
    const job = atProvider();
    deps.provider.statuses.set('gen_1', { id: 'gen_1', status: 'running', progress: 10 });
    await deps.slots.acquire(job.id, 2);

    await reconcile(deps);
    expect(await deps.slots.holders()).toEqual([job.id]);

    deps.store.jobs.set(job.id, {
      ...get(job.id),
      status: 'succeeded',
      providerOutcome: { status: 'succeeded', at: at(1) },
    });
    deps.workflow.statuses.set('e1', 'SUCCEEDED');
    await reconcile(deps);
    expect(await deps.slots.holders()).toEqual([]);
  });
});

describe('scheduled jobs', () => {
  /** A job stored `scheduled` at t0 to run `runInMs` later. */
  const scheduledJob = (add: ReturnType<typeof setup>['add'], runInMs: number) =>
    add({ status: 'scheduled', runAt: at(runInMs) });

  it('moves the jobs now due to queued and sends each as intake sends a new job; the others wait', async () => {
    const { deps, add, get } = setup({ now: 10_000 });
    const due = scheduledJob(add, 5_000);
    const justDue = scheduledJob(add, 10_000);
    const later = scheduledJob(add, 60_000);
    deps.store.backlogs.set('acme', 3);

    const report = await reconcile(deps);

    expect(get(due.id)).toMatchObject({ status: 'queued', statusAt: at(10_000), enqueuedAt: at(10_000) });
    expect(get(justDue.id).status).toBe('queued');
    expect(get(later.id).status).toBe('scheduled');
    expect(deps.queue.batches).toEqual([[due.id, justDue.id]]);
    expect(deps.queue.messages.map((message) => [message.jobId, message.options])).toEqual([
      [due.id, { inLine: true }],
      [justDue.id, { inLine: true }],
    ]);
    // In line from when it was due, not from when it was submitted.
    expect(deps.waiting.entries().find((entry) => entry.jobId === due.id)).toEqual(
      waitingEntryOf(get(due.id)),
    );
    expect(waitingEntryOf(get(due.id)).place.slice(0, 16)).toBe(
      String(t0.getTime() + 5_000 + 10 * 60_000).padStart(16, '0'),
    );
    expect(report.fixes.promoted).toBe(2);
    expect(deps.timeline.types(due.id)).toEqual(['reconciler.promoted']);
    // Still in the backlog, as queued.
    expect(deps.store.backlogs.get('acme')).toBe(3);
  });

  it('starts a due job once when two passes overlap: one status write wins, and only it sends', async () => {
    const { deps, add, get } = setup({ now: 10_000 });
    const jobs = [scheduledJob(add, 1_000), scheduledJob(add, 2_000), scheduledJob(add, 3_000)];

    const reports = await Promise.all([reconcile(deps), reconcile(deps)]);

    expect(deps.queue.messages.map((message) => message.jobId).sort()).toEqual(
      jobs.map((job) => job.id).sort(),
    );
    expect(reports[0]!.fixes.promoted + reports[1]!.fixes.promoted).toBe(3);
    for (const job of jobs) expect(deps.timeline.types(job.id)).toEqual(['reconciler.promoted']);
    for (const job of jobs) expect(get(job.id).status).toBe('queued');
  });

  it('moves at most promotionsPerPass jobs a pass, earliest due first', async () => {
    const { deps, add, get } = setup({ now: 10_000 });
    const jobs = [3_000, 1_000, 2_000].map((ms) => scheduledJob(add, ms));

    await reconcile({ ...deps, promotionsPerPass: 2 });

    expect(jobs.map((job) => get(job.id).status)).toEqual(['scheduled', 'queued', 'queued']);
  });

  it('leaves a promoted job whose message failed to the queued repair, which sends it after its grace', async () => {
    const { deps, add, get } = setup({ now: 10_000 });
    const job = scheduledJob(add, 5_000);
    deps.queue.failing = true;

    const first = await reconcile(deps);

    expect(get(job.id)).toMatchObject({ status: 'queued', statusAt: at(10_000) });
    expect(get(job.id).enqueuedAt).toBeUndefined();
    expect(first.fixes.promoted).toBe(1);
    expect(deps.timeline.events.get(job.id)?.[0]?.detail).toBe(`due at ${at(5_000)}`);

    deps.queue.failing = false;
    // Not before QUEUED_GRACE_MS plus SLOT_WAIT_MAX_SECONDS from the promotion: the message may only be slow.
    await reconcile({ ...deps, now: () => new Date(t0.getTime() + 10_000 + 30_000) });
    expect(deps.queue.messages).toEqual([]);
    const repair = await reconcile({ ...deps, now: () => new Date(t0.getTime() + 10_000 + 36_000) });
    expect(deps.queue.messages.map((message) => message.jobId)).toEqual([job.id]);
    expect(repair.fixes.requeued).toBe(1);
  });

  it('never moves a canceled scheduled job, and the cancel took it out of the backlog', async () => {
    const { deps, add, get } = setup({ now: 10_000 });
    const job = scheduledJob(add, 5_000);
    deps.store.backlogs.set('acme', 1);
    await deps.store.transition(
      job,
      ['scheduled'],
      { status: 'canceled', finishedAt: at(1_000) },
      new Date(at(1_000)),
    );

    const report = await reconcile(deps);

    expect(get(job.id).status).toBe('canceled');
    expect(deps.queue.messages).toEqual([]);
    expect(report.fixes.promoted).toBe(0);
    expect(deps.store.backlogs.get('acme')).toBe(0);
  });

  it('takes a promoted job out of the backlog once it leaves queued, as any queued job', async () => {
    const { deps, add, get } = setup({ now: 10_000 });
    const job = scheduledJob(add, 5_000);
    deps.store.backlogs.set('acme', 1);

    await reconcile(deps);
    expect(deps.store.backlogs.get('acme')).toBe(1);
    await deps.store.transition(
      get(job.id),
      ['queued'],
      { status: 'running', startedAt: at(11_000) },
      new Date(at(11_000)),
    );

    expect(deps.store.backlogs.get('acme')).toBe(0);
  });
});

describe('the orphan sweep', () => {
  const publishOf = (patch: Partial<Job>): Partial<Job> => ({
    type: 'audio.publish',
    provider: 'deepgram',
    input: { audioRef: 'upl_x' },
    ...patch,
  });
  const chunkOf = (parent: Job, index: number, patch: Partial<Job>): Partial<Job> => ({
    type: 'audio.publish.chunk',
    provider: 'deepgram',
    input: { chunkKey: `outputs/acme/${parent.id}/chunks/${index}.flac` },
    parent: { jobId: parent.id, index },
    ...patch,
  });
  const made = (deps: ReturnType<typeof setup>['deps'], parent: Job, child: Job) =>
    deps.timeline.record(parent.id, {
      at: at(0),
      type: 'chunk.submitted',
      detail: `chunk ${child.parent?.index} as ${child.id}`,
    });

  it("cancels a child still running or queued whose parent is finished or gone, reading the page's parents in one batch, and leaves a wanted child alone", async () => {
    const { deps, add, get } = setup({ now: 1_000 });
    const canceled = add(publishOf({ status: 'canceled', finishedAt: at(0) }));
    const wanted = add(publishOf({ status: 'running', startedAt: at(0), executionName: 'wanted-run' }));
    await deps.workflow.start('wanted-run', { jobId: wanted.id });
    const running = add(
      chunkOf(canceled, 0, {
        status: 'running',
        startedAt: at(0),
        taskToken: 'chunk-token',
        providerJobId: 'dg-1',
      }),
    );
    const orphanOfNone = add(
      chunkOf({ id: 'job_gonegonegonegonegonegonego' } as Job, 1, { status: 'queued', enqueuedAt: at(900) }),
    );
    const kept = add(chunkOf(wanted, 0, { status: 'queued', enqueuedAt: at(900) }));

    const report = await reconcile(deps);

    expect(get(running.id).status).toBe('canceled');
    // Its own workflow is told, and stops it at its provider where the provider can.
    expect(deps.workflow.failed).toContainEqual(
      expect.objectContaining({ taskToken: 'chunk-token', error: 'JobCanceled' }),
    );
    expect(get(orphanOfNone.id).status).toBe('canceled');
    expect(get(kept.id).status).toBe('queued');
    expect(report.fixes.orphan_canceled).toBe(2);
    // Parents are read in batches of at most a page, never one read per child.
    const parentReads = deps.store.lookups.filter(
      (ids) => ids.includes(canceled.id) || ids.includes(wanted.id),
    );
    expect(parentReads.length).toBeGreaterThan(0);
    expect(parentReads.every((ids) => ids.length <= deps.pageSize)).toBe(true);
    expect(deps.timeline.events.get(running.id)).toContainEqual(
      expect.objectContaining({
        type: 'reconciler.orphan_canceled',
        detail: `its parent ${canceled.id} is canceled`,
      }),
    );
    // A second pass finds nothing more to do.
    expect((await reconcile(deps)).fixes.orphan_canceled).toBe(0);
  });

  it('removes what a failed publish no resume can bring back derived once more behind an orphan, once a pass, and nothing of a wanted or succeeded one', async () => {
    const { deps, add } = setup({ now: 1_000 });
    // Failed by an operator out of review: never resumed, so nothing of it is wanted again.
    const failed = add(
      publishOf({ status: 'failed', finishedAt: at(0), error: { code: RESOLVED_FAILED_CODE, message: 'x' } }),
    );
    const succeeded = add(publishOf({ status: 'succeeded', finishedAt: at(0) }));
    // Two children of the failed publish still running: its outputs are removed once, not per child.
    add(chunkOf(failed, 0, { status: 'running', startedAt: at(0), providerJobId: 'dg-1' }));
    add(chunkOf(failed, 1, { status: 'running', startedAt: at(0), providerJobId: 'dg-2' }));
    add(chunkOf(succeeded, 0, { status: 'running', startedAt: at(0), providerJobId: 'dg-3' }));
    // Written by a chunk after the failure had removed the rest.
    await deps.outputs.putOutput(
      `${jobOutputPrefix(failed)}chunks/0/transcript.json`,
      '{}',
      'application/json',
    );
    await deps.outputs.putOutput(
      vectorsManifestKey(failed),
      JSON.stringify({ count: 2 }),
      'application/json',
    );
    await deps.vectors.put(
      [0, 1].map((passage) => ({ key: vectorKeyOf(failed, passage), data: [1], metadata: {} as never })),
    );
    await deps.outputs.putOutput(`${jobOutputPrefix(succeeded)}hls/master.m3u8`, '#EXTM3U', 'text/plain');
    await deps.outputs.putOutput(
      vectorsManifestKey(succeeded),
      JSON.stringify({ count: 1 }),
      'application/json',
    );
    await deps.vectors.put([{ key: vectorKeyOf(succeeded, 0), data: [1], metadata: {} as never }]);

    // One page: the in-memory listing pages by offset, which jobs leaving it mid-pass would shift.
    const report = await reconcile({ ...deps, pageSize: 10 });

    expect([...deps.outputs.objects.keys()].sort()).toEqual(
      [`${jobOutputPrefix(succeeded)}hls/master.m3u8`, vectorsManifestKey(succeeded)].sort(),
    );
    expect([...deps.vectors.vectors.keys()]).toEqual([vectorKeyOf(succeeded, 0)]);
    expect(report.fixes.derived_discarded).toBe(1);
    expect(report.fixes.orphan_canceled).toBe(3);
  });

  it("keeps a failed publish's paid work while it can be resumed: a sent chunk runs on, an unsent one is canceled, and nothing it derived goes", async () => {
    const { deps, add, get } = setup({ now: 1_000 });
    const failed = add(
      publishOf({ status: 'failed', finishedAt: at(0), error: { code: 'internal', message: 'x' } }),
    );
    const sent = add(
      chunkOf(failed, 0, {
        status: 'running',
        startedAt: at(0),
        taskToken: 'sent-token',
        providerJobId: 'dg-1',
      }),
    );
    const intended = add(
      chunkOf(failed, 1, {
        status: 'running',
        startedAt: at(0),
        submitIntent: { attemptId: 'a1', at: at(0), providerKey: 'k' },
      }),
    );
    const unsent = add(chunkOf(failed, 2, { status: 'queued', enqueuedAt: at(900) }));
    const transcript = `${jobOutputPrefix(failed)}chunks/3/transcript.json`;
    await deps.outputs.putOutput(transcript, '{}', 'application/json');
    await deps.outputs.putOutput(`${jobOutputPrefix(failed)}hls/master.m3u8`, '#EXTM3U', 'text/plain');

    const report = await reconcile({ ...deps, pageSize: 10 });

    // Sent, so charged or being charged: its transcript is what a resume goes on from.
    expect(get(sent.id).status).toBe('running');
    expect(get(intended.id).status).toBe('running');
    expect(deps.workflow.failed.filter((f) => f.taskToken === 'sent-token')).toEqual([]);
    // Nothing paid yet: it would only hold a slot and charge for a job that may never be resumed.
    expect(get(unsent.id).status).toBe('canceled');
    expect([...deps.outputs.objects.keys()].sort()).toEqual(
      [transcript, `${jobOutputPrefix(failed)}hls/master.m3u8`].sort(),
    );
    expect(report.fixes.orphan_canceled).toBe(1);
    expect(report.fixes.derived_discarded).toBe(0);
  });

  it('finishes a canceling publish whose canceled chunk ended at its provider with its callback lost: it asks the provider, so the publish ends canceled, not in review', async () => {
    const { deps, add, get } = setup({ now: 1_000 });
    const parent = add(
      publishOf({
        status: 'running',
        startedAt: at(0),
        cancelRequestedAt: at(500),
        executionName: 'publish-run',
        taskToken: 'children-token',
      }),
    );
    await deps.workflow.start('publish-run', { jobId: parent.id });
    const ranOn = add(chunkOf(parent, 0, { status: 'canceled', finishedAt: at(500), providerJobId: 'dg-1' }));
    await made(deps, parent, ranOn);
    deps.provider.statuses.set('dg-1', { id: 'dg-1', status: 'succeeded', progress: 100 });

    const report = await reconcile(deps);

    expect(get(ranOn.id)).toMatchObject({
      status: 'canceled',
      providerOutcome: { status: 'succeeded', at: at(1_000), providerJobId: 'dg-1' },
    });
    expect(deps.workflow.failed).toContainEqual(
      expect.objectContaining({ taskToken: 'children-token', error: 'ChildSettled' }),
    );
    expect(report.fixes.parent_resumed).toBe(1);
  });

  it('finishes a canceling publish: cancels a child its cancel missed, and wakes its wait once every child is settled, not before', async () => {
    const { deps, add, get } = setup({ now: 1_000 });
    const parent = add(
      publishOf({
        status: 'running',
        startedAt: at(0),
        cancelRequestedAt: at(500),
        executionName: 'publish-run',
        taskToken: 'children-token',
      }),
    );
    await deps.workflow.start('publish-run', { jobId: parent.id });
    // Canceled, and Deepgram is still running it out: not settled.
    const ranOn = add(chunkOf(parent, 0, { status: 'canceled', finishedAt: at(500), providerJobId: 'dg-1' }));
    // Made while the cancel read the timeline, so the cancel never saw it.
    const missed = add(chunkOf(parent, 1, { status: 'queued', enqueuedAt: at(900) }));
    await made(deps, parent, ranOn);
    await made(deps, parent, missed);

    const first = await reconcile(deps);

    expect(get(missed.id).status).toBe('canceled');
    expect(get(parent.id)).toMatchObject({ status: 'running', cancelRequestedAt: at(500) });
    expect(deps.workflow.failed.filter((f) => f.taskToken === 'children-token')).toEqual([]);
    expect(first.fixes.parent_resumed).toBe(0);

    // Deepgram ends it; the webhook that would have said so was lost.
    deps.store.jobs.set(ranOn.id, {
      ...get(ranOn.id),
      providerOutcome: { status: 'succeeded', at: at(1_000), providerJobId: 'dg-1' },
    });
    const second = await reconcile(deps);

    expect(deps.workflow.failed).toContainEqual(
      expect.objectContaining({ taskToken: 'children-token', error: 'ChildSettled' }),
    );
    expect(second.fixes.parent_resumed).toBe(1);
  });
});
