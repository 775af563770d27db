import { JobNotInReviewError } from '../../lambdas/domain/errors';
import { type Job, newJob, slotHolderOf, submissionTagOf } from '../../lambdas/domain/job';
import { parseResolution, resolveJob } from '../../lambdas/domain/operator';
import { applyProgress, ProgressThrottle, publishingStatusChanges } from '../../lambdas/domain/progress';
import {
  MemoryLive,
  MemoryQueue,
  MemoryStore,
  MemoryTimeline,
  MemoryWorkflow,
  memorySlots,
} from './support/memory-ports';

const t0 = new Date('2026-05-01T10:00:00.000Z');

function store(patch: Partial<Job>) {
  const memory = new MemoryStore();
  const job = {
    ...newJob(
      {
        id: 'job_aaaaaaaaaaaaaaaaaaaaaaaaaa',
        tenantId: 'acme',
        type: 'image.generate',
        input: {},
        idempotencyKey: 'k',
        fingerprint: 'f',
      },
      t0,
    ),
    ...patch,
  } as Job;
  memory.jobs.set(job.id, job);
  return { memory, job };
}

/** A tick of the job's first submission and its provider job. */
const tick1 = { providerJobId: 'gen_1', submission: submissionTagOf({ createdAt: t0.toISOString() }) };

describe('progress', () => {
  it('streams every tick and persists at most one per second', async () => {
    const { memory, job } = store({ status: 'running', providerJobId: 'gen_1' });
    const live = new MemoryLive();
    let clock = t0.getTime();
    const deps = { store: memory, live, throttle: new ProgressThrottle(1000), now: () => new Date(clock) };

    // 5 seconds at 10 ticks a second.
    for (let tick = 1; tick <= 50; tick++) {
      clock = t0.getTime() + tick * 100;
      await applyProgress(deps, job.id, tick * 2, tick1);
    }

    expect(live.messages).toHaveLength(50);
    expect(live.messages.map((m) => m.progress)).toEqual(Array.from({ length: 50 }, (_, i) => (i + 1) * 2));
    expect(memory.progressWrites).toBeLessThanOrEqual(6);
    expect(memory.progressWrites).toBeGreaterThanOrEqual(4);
  });

  it('persists about once a second however many warm environments share the ticks', async () => {
    const { memory, job } = store({ status: 'running', providerJobId: 'gen_1' });
    let clock = t0.getTime();
    // Four api environments, each with its own in-memory throttle, over one store.
    const environments = Array.from({ length: 4 }, () => ({
      store: memory,
      live: new MemoryLive(),
      throttle: new ProgressThrottle(1000),
      now: () => new Date(clock),
    }));

    // 5 seconds at 10 ticks a second, spread over the environments as a load balancer would.
    for (let tick = 1; tick <= 50; tick++) {
      clock = t0.getTime() + tick * 100;
      await applyProgress(
        environments[tick % environments.length] as (typeof environments)[number],
        job.id,
        tick * 2,
        tick1,
      );
    }

    expect(memory.progressWrites).toBeLessThanOrEqual(6);
    expect(memory.progressWrites).toBeGreaterThanOrEqual(4);
  });

  it('never lowers progress or touches a finished job', async () => {
    const running = store({ status: 'running', progress: 60 });
    expect(await running.memory.recordProgress(running.job.id, 40, t0, t0)).toBe(false);
    const done = store({ status: 'succeeded', progress: 100, providerJobId: 'gen_1' });
    const live = new MemoryLive();
    const deps = { store: done.memory, live, throttle: new ProgressThrottle(1000), now: () => t0 };
    await expect(applyProgress(deps, done.job.id, 100, tick1)).resolves.toEqual({
      streamed: false,
      persisted: false,
    });
    // Nobody is told a finished job is running.
    expect(live.messages).toEqual([]);
  });

  it('neither raises progress nor heartbeats for a tick of a replaced submission', async () => {
    const { memory, job } = store({
      status: 'running',
      resubmissions: 1,
      providerJobId: 'gen_new',
      taskToken: 't1',
    });
    const live = new MemoryLive();
    const workflow = new MemoryWorkflow();
    const deps = {
      store: memory,
      live,
      throttle: new ProgressThrottle(1000),
      now: () => t0,
      heartbeat: { throttle: new ProgressThrottle(1000), workflow },
    };
    await applyProgress(deps, job.id, 90, {
      providerJobId: 'gen_old',
      submission: submissionTagOf({ createdAt: t0.toISOString() }),
    });
    expect(memory.jobs.get(job.id)?.progress).toBe(0);
    expect(workflow.heartbeats).toEqual([]);
    expect(live.messages).toEqual([]);

    await applyProgress(deps, job.id, 30, {
      providerJobId: 'gen_new',
      submission: submissionTagOf({ createdAt: t0.toISOString(), resubmissions: 1 }),
    });
    expect(memory.jobs.get(job.id)?.progress).toBe(30);
    expect(workflow.heartbeats).toEqual(['t1']);
  });

  it('tells live clients of every status change the store makes', async () => {
    const { memory, job } = store({ status: 'running' });
    const live = new MemoryLive();
    const publishing = publishingStatusChanges(memory, live);
    await publishing.transition(job, ['running'], { status: 'succeeded', progress: 100 }, t0);
    await publishing.transition(job, ['running'], { status: 'failed' }, t0); // refused: already finished
    expect(live.messages).toEqual([
      expect.objectContaining({ type: 'status', jobId: job.id, status: 'succeeded', progress: 100 }),
    ]);
  });
});

describe('resolveJob', () => {
  const deps = (memory: MemoryStore) => ({
    store: memory,
    slots: memorySlots(),
    queue: new MemoryQueue(),
    timeline: new MemoryTimeline(),
    now: () => t0,
  });

  it.each([
    ['succeeded', { status: 'succeeded', progress: 100, error: null }],
    [
      'failed',
      { status: 'failed', error: { code: 'resolved_failed', message: 'checked with the provider' } },
    ],
  ] as const)(
    'settles a job in review as %s, frees its slot and keeps the note',
    async (outcome, expected) => {
      const { memory, job } = store({ status: 'needs_review' });
      const d = deps(memory);
      await d.slots.acquire(slotHolderOf(job), 1);
      const resolved = await resolveJob(d, job.id, { outcome, note: 'checked with the provider' });
      expect(resolved).toMatchObject(expected);
      expect(await d.slots.holders()).toEqual([]);
      expect(d.timeline.events.get(job.id)).toEqual([
        { at: t0.toISOString(), type: 'operator.resolved', detail: `${outcome}: checked with the provider` },
      ]);
    },
  );

  it('requeues for a fresh submission under a new provider key', async () => {
    const { memory, job } = store({
      status: 'needs_review',
      providerJobId: 'gen_1',
      submitIntent: { attemptId: 'a', at: '' },
    });
    const d = deps(memory);
    const resolved = await resolveJob(d, job.id, { outcome: 'requeue', note: 'provider never got it' });
    expect(resolved).toMatchObject({ status: 'queued', resubmissions: 1, runs: 1 });
    expect(resolved.providerJobId).toBeUndefined();
    expect(resolved.submitIntent).toBeUndefined();
    expect(d.queue.messages.map((m) => m.jobId)).toEqual([job.id]);
  });

  it('refuses jobs that are not in review', async () => {
    const { memory, job } = store({ status: 'running' });
    await expect(resolveJob(deps(memory), job.id, { outcome: 'failed', note: 'x' })).rejects.toThrow(
      JobNotInReviewError,
    );
  });

  it('requires an outcome and a note', () => {
    expect(() => parseResolution({ outcome: 'retry', note: 'x' })).toThrow('The resolution is invalid.');
    expect(() => parseResolution({ outcome: 'failed', note: '  ' })).toThrow('The resolution is invalid.');
    expect(parseResolution({ outcome: 'requeue', note: ' go ' })).toEqual({ outcome: 'requeue', note: 'go' });
  });
});
