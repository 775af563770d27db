import { JobNotInReviewError } from '../../lambdas/domain/errors';
import { waitingEntryOf } from '../../lambdas/domain/fair-share';
import { type Job, slotHolderOf, submissionTagOf } from '../../lambdas/domain/job';
import { parseResolution, resolveJob } from '../../lambdas/domain/operator';
import {
  applyProgress,
  type ProgressDeps,
  ProgressMemory,
  ProgressThrottle,
  publishingStatusChanges,
} from '../../lambdas/domain/progress';
import { sampleJob } from './support/jobs';
import {
  granting,
  limits,
  MemoryEvents,
  MemoryLive,
  MemoryQueue,
  MemoryStore,
  MemoryTimeline,
  MemoryWaitingLines,
  MemoryWorkflow,
  memorySlots,
  memoryTenantShares,
} from './support/memory-ports';

const t0 = new Date('2026-05-01T10:00:00.000Z');

function store(patch: Partial<Job>) {
  const memory = new MemoryStore();
  const job = sampleJob(t0, patch);
  memory.jobs.set(job.id, job);
  return { memory, job };
}

/** A tick of the job's first submission and its provider job. */
const tick1 = { providerJobId: 'gen_1', submission: submissionTagOf({ createdAt: t0.toISOString() }) };

/** The store as one environment's ticks reach it, counting the requests they make. */
function counted(memory: MemoryStore) {
  const requests = { writes: 0, reads: 0 };
  const store: ProgressDeps['store'] = {
    get: (jobId) => {
      requests.reads++;
      return memory.get(jobId);
    },
    recordProgressTick: (jobId, tick) => {
      requests.writes++;
      return memory.recordProgressTick(jobId, tick);
    },
  };
  return { store, requests };
}

describe('progress', () => {
  it('streams every tick and writes at most one a second, reading nothing while its writes land', async () => {
    const { memory, job } = store({ status: 'running', providerJobId: 'gen_1' });
    const { store: counting, requests } = counted(memory);
    const live = new MemoryLive();
    let clock = t0.getTime();
    const deps = { store: counting, live, memory: new ProgressMemory(1000), now: () => new Date(clock) };

    // One second at 10 ticks a second: the first tick writes, the other nine ask nothing of storage.
    for (let tick = 1; tick <= 10; tick++) {
      clock = t0.getTime() + tick * 100;
      await applyProgress(deps, job.id, tick * 2, tick1);
    }
    expect(requests).toEqual({ writes: 1, reads: 0 });

    // Four more seconds: one write each, when the interval since the last one has passed.
    for (let tick = 11; tick <= 50; tick++) {
      clock = t0.getTime() + tick * 100;
      await applyProgress(deps, job.id, tick * 2, tick1);
    }

    expect(live.messages).toHaveLength(50);
    expect(live.messages.map((m) => m.progress)).toEqual(Array.from({ length: 50 }, (_, i) => (i + 1) * 2));
    expect(live.messages.every((m) => m.status === 'running')).toBe(true);
    expect(requests).toEqual({ writes: 5, reads: 0 });
    expect(memory.progressWrites).toBe(5);
    // The ticks of 0.1, 1.1, 2.1, 3.1 and 4.1 s were stored.
    expect(memory.jobs.get(job.id)).toMatchObject({ progress: 82, updatedAt: '2026-05-01T10:00:04.100Z' });
  });

  it('writes about once a second however many warm environments share the ticks', async () => {
    const { memory, job } = store({ status: 'running', providerJobId: 'gen_1' });
    const { store: counting, requests } = counted(memory);
    let clock = t0.getTime();
    // Four environments, each with its own memory, over one store.
    const environments = Array.from({ length: 4 }, () => ({
      store: counting,
      live: new MemoryLive(),
      memory: new ProgressMemory(1000),
      now: () => new Date(clock),
    }));

    // 5 seconds at 10 ticks a second, spread over the environments as the function URL's would be.
    for (let tick = 1; tick <= 50; tick++) {
      clock = t0.getTime() + tick * 100;
      await applyProgress(
        environments[tick % environments.length] as (typeof environments)[number],
        job.id,
        tick * 2,
        tick1,
      );
    }

    // The write's own condition keeps stored writes 1.2 s apart here (each environment asks every
    // 1.2 s, the fourth tick it gets); the others' writes are refused, and each is followed by a
    // read, where every tick used to read.
    expect(memory.progressWrites).toBe(5);
    expect(requests).toEqual({ writes: 18, reads: 13 });
    expect(environments.flatMap((e) => e.live.messages)).toHaveLength(50);
  });

  it('never lowers progress or touches a finished job, and tells nobody it runs', async () => {
    const running = store({ status: 'running', progress: 60, providerJobId: 'gen_1' });
    await expect(
      running.memory.recordProgressTick(running.job.id, {
        progress: 40,
        at: t0,
        notSince: t0,
        providerJobId: 'gen_1',
      }),
    ).resolves.toBeUndefined();

    const done = store({ status: 'succeeded', progress: 100, providerJobId: 'gen_1' });
    const { store: counting, requests } = counted(done.memory);
    const live = new MemoryLive();
    const deps = { store: counting, live, memory: new ProgressMemory(1000), now: () => t0 };
    await expect(applyProgress(deps, done.job.id, 100, tick1)).resolves.toEqual({
      streamed: false,
      persisted: false,
    });
    // The refused write, then the read that tells why; a tick after that asks nothing.
    expect(requests).toEqual({ writes: 1, reads: 1 });
    await applyProgress(deps, done.job.id, 100, tick1);
    expect(requests).toEqual({ writes: 1, reads: 1 });
    expect(live.messages).toEqual([]);
  });

  it('streams a job that finished as running for at most one interval', async () => {
    const { memory, job } = store({ status: 'running', providerJobId: 'gen_1' });
    const { store: counting, requests } = counted(memory);
    const live = new MemoryLive();
    let clock = t0.getTime();
    const deps = { store: counting, live, memory: new ProgressMemory(1000), now: () => new Date(clock) };

    await applyProgress(deps, job.id, 10, tick1);
    // The job finishes; whatever finished it told its clients so.
    await memory.transition(job, ['running'], { status: 'succeeded', progress: 100 }, new Date(clock + 200));
    clock += 500;
    await applyProgress(deps, job.id, 20, tick1);
    expect(requests).toEqual({ writes: 1, reads: 0 });
    clock += 500;
    await applyProgress(deps, job.id, 30, tick1);

    expect(live.messages.map((m) => [m.progress, m.status])).toEqual([
      [10, 'running'],
      [20, 'running'],
    ]);
    expect(requests).toEqual({ writes: 2, reads: 1 });
    expect(memory.jobs.get(job.id)?.progress).toBe(100);
  });

  it('streams a job in review with its status and reads it once an interval, writing nothing after the first', async () => {
    const { memory, job } = store({ status: 'needs_review', providerJobId: 'gen_1' });
    const { store: counting, requests } = counted(memory);
    const live = new MemoryLive();
    let clock = t0.getTime();
    const deps = { store: counting, live, memory: new ProgressMemory(1000), now: () => new Date(clock) };

    for (let tick = 0; tick < 20; tick++) {
      clock = t0.getTime() + tick * 100;
      await applyProgress(deps, job.id, tick, tick1);
    }

    expect(live.messages).toHaveLength(20);
    expect(new Set(live.messages.map((m) => m.status))).toEqual(new Set(['needs_review']));
    expect(requests).toEqual({ writes: 1, reads: 2 });
    expect(memory.jobs.get(job.id)?.progress).toBe(0);
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
    let clock = t0.getTime();
    const deps = {
      store: memory,
      live,
      memory: new ProgressMemory(1000),
      now: () => new Date(clock),
      heartbeat: { throttle: new ProgressThrottle(1000), workflow },
    };
    await applyProgress(deps, job.id, 90, {
      providerJobId: 'gen_old',
      submission: submissionTagOf({ createdAt: t0.toISOString() }),
    });
    expect(memory.jobs.get(job.id)?.progress).toBe(0);
    expect(workflow.heartbeats).toEqual([]);
    expect(live.messages).toEqual([]);

    const current = {
      providerJobId: 'gen_new',
      submission: submissionTagOf({ createdAt: t0.toISOString(), resubmissions: 1 }),
    };
    // Inside the interval the current submission's tick streams on what the last read said.
    await applyProgress(deps, job.id, 20, current);
    expect(memory.jobs.get(job.id)?.progress).toBe(0);
    expect(workflow.heartbeats).toEqual([]);

    clock += 1000;
    await applyProgress(deps, job.id, 30, current);
    expect(memory.jobs.get(job.id)?.progress).toBe(30);
    expect(workflow.heartbeats).toEqual(['t1']);
    expect(live.messages.map((m) => m.progress)).toEqual([20, 30]);
  });

  it("reads, and tries no write, once an interval for the ticks of a submission that is not the job's", async () => {
    const { memory, job } = store({ status: 'running', resubmissions: 1, providerJobId: 'gen_new' });
    const { store: counting, requests } = counted(memory);
    const live = new MemoryLive();
    let clock = t0.getTime();
    const deps = { store: counting, live, memory: new ProgressMemory(1000), now: () => new Date(clock) };

    // The replaced submission's provider job keeps ticking for 3 s.
    for (let tick = 0; tick < 30; tick++) {
      clock = t0.getTime() + tick * 100;
      await applyProgress(deps, job.id, tick + 1, tick1);
    }

    // The first tick knew nothing and tried its write; after that, one read a second.
    expect(requests).toEqual({ writes: 1, reads: 3 });
    expect(live.messages).toEqual([]);
    expect(memory.jobs.get(job.id)?.progress).toBe(0);
  });

  it('writes nothing for a tick whose tag names no submission', async () => {
    const { memory, job } = store({ status: 'running', providerJobId: 'gen_1' });
    const { store: counting, requests } = counted(memory);
    const live = new MemoryLive();
    const deps = { store: counting, live, memory: new ProgressMemory(1000), now: () => t0 };
    // The pattern of a tag, but a creation time no date has.
    await expect(
      applyProgress(deps, job.id, 50, { providerJobId: 'gen_1', submission: 'zzzzzzzzzzzz.0' }),
    ).resolves.toEqual({ streamed: false, persisted: false });
    expect(requests).toEqual({ writes: 0, reads: 1 });
    expect(memory.jobs.get(job.id)?.progress).toBe(0);
  });

  it('keeps a waiting step alive at most once a minute, on what storage has just said', async () => {
    const { memory, job } = store({ status: 'running', providerJobId: 'gen_1', taskToken: 't1' });
    const workflow = new MemoryWorkflow();
    let clock = t0.getTime();
    const deps = {
      store: memory,
      live: new MemoryLive(),
      memory: new ProgressMemory(1000),
      now: () => new Date(clock),
      heartbeat: { throttle: new ProgressThrottle(60_000), workflow },
    };
    // 130 s at 10 ticks a second, progress creeping up.
    for (let tick = 0; tick < 1300; tick++) {
      clock = t0.getTime() + tick * 100;
      await applyProgress(deps, job.id, tick / 13, tick1);
    }
    // At 0, 60 and 120 s.
    expect(workflow.heartbeats).toEqual(['t1', 't1', 't1']);
  });

  it('remembers a bounded number of jobs, forgetting the oldest first', () => {
    const memory = new ProgressMemory(1000, 2);
    const running = store({ status: 'running' }).job;
    memory.learn('job_a', running, 0);
    memory.learn('job_b', running, 0);
    memory.learn('job_a', running, 10);
    memory.learn('job_c', undefined, 20);
    expect(memory.recall('job_b', 30)).toBeUndefined();
    expect(memory.recall('job_a', 30)?.job).toMatchObject({ status: 'running' });
    // Known to be absent is known too.
    expect(memory.recall('job_c', 30)).toEqual({ job: undefined, atMs: 20 });
    expect(memory.recall('job_a', 1010)).toBeUndefined();
    expect(memory.last('job_a')).toBeDefined();
  });

  it('tells live clients nothing of a write that keeps the status: a resumed job given its slot back is running already', async () => {
    const { memory, job } = store({ status: 'running' });
    const live = new MemoryLive();
    const publishing = publishingStatusChanges(memory, live);

    const granted = await publishing.transition(job, ['running'], { status: 'running' }, t0);

    expect(granted).toMatchObject({ status: 'running', statusAt: t0.toISOString() });
    expect(live.messages).toEqual([]);
  });

  it('tells live clients of a job its provider refused and sent back to its line: queued, not running at 0 %', async () => {
    const { memory, job } = store({ status: 'running' });
    const live = new MemoryLive();
    const publishing = publishingStatusChanges(memory, live);
    await publishing.returnToQueue(job, t0);
    expect(live.messages).toEqual([
      expect.objectContaining({ type: 'status', jobId: job.id, status: 'queued' }),
    ]);
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
  const deps = (memory: MemoryStore) =>
    granting({
      store: memory,
      slots: memorySlots(),
      queue: new MemoryQueue(),
      waiting: new MemoryWaitingLines(),
      tenantShares: memoryTenantShares(),
      maxInFlight: limits(1),
      timeline: new MemoryTimeline(),
      events: new MemoryEvents(),
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

  it('hands the slot it frees to the job whose turn it is', async () => {
    const { memory, job } = store({ status: 'needs_review' });
    const d = deps(memory);
    const next = sampleJob(t0, { id: 'job_nnnnnnnnnnnnnnnnnnnnnnnnnn', status: 'queued' });
    memory.jobs.set(next.id, next);
    await d.waiting.add(waitingEntryOf(next));
    await d.slots.acquire(slotHolderOf(job), 1);

    await resolveJob(d, job.id, { outcome: 'failed', note: 'checked with the provider' });

    expect(await d.slots.holders()).toEqual([slotHolderOf(next)]);
    expect(memory.jobs.get(next.id)?.status).toBe('running');
    expect(d.queue.messages).toEqual([
      { jobId: next.id, provider: 'longhaul-http', options: { handOff: true } },
    ]);
    expect(d.timeline.types(next.id)).toEqual(['slot.received']);
  });

  it.each([
    ['an accepted job with no end heard of', { providerJobId: 'gen_1' }],
    [
      'a provider job resent after an unknown outcome',
      { providerJobId: 'gen_1', submitIntent: { attemptId: 'a', at: '' } },
    ],
  ] as const)(
    'keeps the slot of %s while the provider may still run it, whatever the outcome',
    async (_, sent) => {
      for (const outcome of ['succeeded', 'failed'] as const) {
        const { memory, job } = store({ status: 'needs_review', ...sent });
        const d = deps(memory);
        const next = sampleJob(t0, { id: 'job_nnnnnnnnnnnnnnnnnnnnnnnnnn', status: 'queued' });
        memory.jobs.set(next.id, next);
        await d.waiting.add(waitingEntryOf(next));
        await d.slots.acquire(slotHolderOf(job), 1);

        await resolveJob(d, job.id, { outcome, note: 'checked with the provider' });

        // The reconciler frees it once the provider cannot be running the job (stopped, ended, or timed out).
        expect(await d.slots.holders()).toEqual([slotHolderOf(job)]);
        expect(memory.jobs.get(next.id)?.status).toBe('queued');
      }
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
