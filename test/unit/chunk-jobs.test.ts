import { tellCancelingParent } from '../../lambdas/domain/children';
import { awaitChunk, CHUNK_ATTEMPTS, chunkAttemptKey, resumeParent } from '../../lambdas/domain/chunk-jobs';
import { deriveJobId } from '../../lambdas/domain/idempotency';
import { cancelJob } from '../../lambdas/domain/intake';
import { type Job, newJob, toResource } from '../../lambdas/domain/job';
import { chunkOutputPrefix, jobOutputPrefix, type StoredChunk } from '../../lambdas/domain/publish';
import {
  MemoryBacklogs,
  MemoryEvents,
  MemoryQueue,
  MemoryStore,
  MemoryTimeline,
  MemoryWaitingLines,
  MemoryWorkflow,
} from './support/memory-ports';

const clock = new Date('2026-12-02T10:00:00.000Z');

function world() {
  const store = new MemoryStore();
  const deps = {
    store,
    queue: new MemoryQueue(),
    waiting: new MemoryWaitingLines(),
    backlogs: new MemoryBacklogs(store),
    workflow: new MemoryWorkflow(),
    timeline: new MemoryTimeline(),
    events: new MemoryEvents(),
    now: () => clock,
    firstLook: async () => ({ inLine: true }),
  };
  return deps;
}

async function runningParent(store: MemoryStore): Promise<Job> {
  const parent = {
    ...newJob(
      {
        id: 'job_parentaaaaaaaaaaaaaaaaaaaa',
        tenantId: 'acme',
        type: 'audio.publish',
        provider: 'deepgram',
        priority: 'batch',
        input: { audioRef: 'upl_x', language: 'en' },
        idempotencyKey: 'publish-1',
        fingerprint: 'f',
      },
      clock,
    ),
    status: 'running' as const,
  };
  await store.create(parent);
  return parent;
}

const chunk: StoredChunk = {
  index: 2,
  key: 'outputs/acme/job_parentaaaaaaaaaaaaaaaaaaaa/chunks/chunk-002.flac',
  offsetSeconds: 1200,
  durationSeconds: 600,
  idempotencyKey: 'publish-key:chunk-2',
};

describe('awaitChunk', () => {
  it('counts the chunk job it makes as submitted, once, as the start its grant counts', async () => {
    const observed: unknown[] = [];
    const deps = { ...world(), observe: (observation: unknown) => observed.push(observation) };
    const parent = await runningParent(deps.store);
    await awaitChunk(deps, parent, chunk, 'token-1');
    // A retried state finds the job it made: nothing more is submitted.
    await awaitChunk(deps, parent, chunk, 'token-2');
    expect(observed).toEqual([{ kind: 'submitted', jobType: 'audio.publish.chunk' }]);
  });

  it("makes the chunk's job under the chunk's key, in its tenant's line at the parent's provider, carrying the token", async () => {
    const deps = world();
    const parent = await runningParent(deps.store);
    const child = await awaitChunk(deps, parent, chunk, 'token-1');

    expect(child).toMatchObject({
      id: deriveJobId('acme', 'publish-key:chunk-2'),
      tenantId: 'acme',
      type: 'audio.publish.chunk',
      provider: 'deepgram',
      priority: 'batch',
      status: 'queued',
      input: { chunkKey: chunk.key, language: 'en' },
      idempotencyKey: 'publish-key:chunk-2',
      parent: { jobId: parent.id, index: 2, taskToken: 'token-1' },
    });
    expect([...(deps.waiting.lines.get('deepgram#acme')?.values() ?? [])].map((e) => e.jobId)).toEqual([
      child.id,
    ]);
    expect(deps.queue.messages).toEqual([
      { jobId: child.id, provider: 'deepgram', options: { inLine: true } },
    ]);
    expect(deps.store.backlogs.get('acme')).toBe(1);
    // Not settled: nothing resumes the parent yet.
    expect(deps.workflow.completed).toEqual([]);
    expect(deps.workflow.failed).toEqual([]);
  });

  it('makes nothing twice: a retried state finds the job and hands it its own token', async () => {
    const deps = world();
    const parent = await runningParent(deps.store);
    const first = await awaitChunk(deps, parent, chunk, 'token-1');
    const again = await awaitChunk(deps, parent, chunk, 'token-2');

    expect(again.id).toBe(first.id);
    expect(deps.store.jobs.size).toBe(2);
    expect((await deps.store.get(first.id))?.parent?.taskToken).toBe('token-2');
    expect(deps.queue.messages).toHaveLength(1);
  });

  it('resumes the state at once when the chunk job settled before the token reached it', async () => {
    const deps = world();
    const parent = await runningParent(deps.store);
    const child = await awaitChunk(deps, parent, chunk, 'token-1');
    await deps.store.transition(child, ['queued'], { status: 'succeeded', result: {} }, clock);

    await awaitChunk(deps, parent, chunk, 'token-2');
    expect(deps.workflow.completed).toEqual([
      { taskToken: 'token-2', output: { index: 2, jobId: child.id } },
    ]);
  });

  it('makes a failed chunk again under a new key, and after the last try fails the state, naming the chunk', async () => {
    const deps = world();
    const parent = await runningParent(deps.store);
    const first = await awaitChunk(deps, parent, chunk, 'token-1');
    const failure = { code: 'provider_failed', message: 'the model crashed' };
    await deps.store.transition(first, ['queued'], { status: 'failed', error: failure }, clock);

    const second = await awaitChunk(deps, parent, chunk, 'token-2');
    expect(CHUNK_ATTEMPTS).toBe(2);
    expect(second.idempotencyKey).toBe(chunkAttemptKey(chunk, 1));
    expect(second.idempotencyKey).toBe('publish-key:chunk-2.retry-1');
    expect(deps.workflow.failed).toEqual([]);

    await deps.store.transition(second, ['queued'], { status: 'failed', error: failure }, clock);
    const last = await awaitChunk(deps, parent, chunk, 'token-3');
    expect(last.id).toBe(second.id);
    expect(deps.workflow.failed).toEqual([
      {
        taskToken: 'token-3',
        error: 'ChunkFailed',
        cause: '[provider_failed] Chunk 2 failed: the model crashed',
      },
    ]);
  });
});

describe('a resumed parent', () => {
  it('gets its chunk attempts again: a chunk whose every try failed before the resume is made anew, once', async () => {
    const deps = world();
    const parent = await runningParent(deps.store);
    const failure = { code: 'output_invalid', message: 'unusable' };
    for (const token of ['token-1', 'token-2']) {
      const made = await awaitChunk(deps, parent, chunk, token);
      await deps.store.transition(made, ['queued'], { status: 'failed', error: failure }, clock);
    }
    const resumed = { ...parent, resumes: 1 };
    const third = await awaitChunk(deps, resumed, chunk, 'token-3');
    expect(third.idempotencyKey).toBe(chunkAttemptKey(chunk, 2));
    expect(third.status).toBe('queued');
    // The state that retries finds the same third try: made once.
    expect((await awaitChunk(deps, resumed, chunk, 'token-4')).id).toBe(third.id);
  });
});

describe('a chunk whose job was canceled while its parent goes on', () => {
  // The orphan sweep cancels a failed parent's chunk jobs not yet sent; the parent's client then resumes it.
  const canceledFirstTry = async (patch: Partial<Job> = {}) => {
    const deps = world();
    const parent = await runningParent(deps.store);
    const first = await awaitChunk(deps, parent, chunk, 'token-1');
    deps.store.jobs.set(first.id, { ...first, status: 'canceled', ...patch });
    return { deps, resumed: { ...parent, resumes: 1 }, first };
  };

  it('is made again under the next key of the resume, once, and the state waits for that job', async () => {
    const { deps, resumed, first } = await canceledFirstTry();

    const again = await awaitChunk(deps, resumed, chunk, 'token-2');

    expect(again.idempotencyKey).toBe(chunkAttemptKey(chunk, 1));
    expect(again).toMatchObject({ status: 'queued', parent: { taskToken: 'token-2' } });
    expect(again.id).not.toBe(first.id);
    expect(deps.workflow.failed).toEqual([]);
    // A retried state finds the same try.
    expect((await awaitChunk(deps, resumed, chunk, 'token-3')).id).toBe(again.id);
    expect(deps.queue.messages.map((m) => m.jobId)).toEqual([first.id, again.id]);
  });

  it('is never sent again when its submission outcome is unknown: the state goes to review', async () => {
    const { deps, resumed } = await canceledFirstTry({
      submitIntent: { attemptId: 'a1', at: clock.toISOString(), providerKey: 'k' },
    });

    await awaitChunk(deps, resumed, chunk, 'token-2');

    expect(deps.store.jobs.size).toBe(2);
    expect(deps.workflow.failed).toEqual([
      {
        taskToken: 'token-2',
        error: 'NeedsReview',
        cause: '[ambiguous_submission] Chunk 2 was canceled after a submission whose outcome is unknown.',
      },
    ]);
  });

  it("fails its parent's waiting state as a failed try, not a cancel, so the state's retry makes it again", async () => {
    const { deps, first } = await canceledFirstTry({
      parent: { jobId: 'job_parentaaaaaaaaaaaaaaaaaaaa', index: 2, taskToken: 'token-1' },
    });

    expect(await resumeParent(deps, deps.store.jobs.get(first.id) as Job)).toBe(true);

    expect(deps.workflow.failed).toEqual([
      {
        taskToken: 'token-1',
        error: 'ChunkFailed',
        cause: '[chunk_canceled] Chunk 2 was canceled while its job goes on; it is made again.',
      },
    ]);
  });
});

describe('resumeParent', () => {
  const child = (status: Job['status'], error: Job['error'] = null): Job => ({
    ...newJob(
      {
        id: 'job_child',
        tenantId: 'acme',
        type: 'audio.publish.chunk',
        input: { chunkKey: 'k' },
        idempotencyKey: 'k',
        fingerprint: 'f',
        parent: { jobId: 'job_parent', index: 4, taskToken: 't' },
      },
      clock,
    ),
    status,
    error,
  });

  it('sends a chunk in review to review, and one canceled with its parent to the failure path', async () => {
    const workflow = new MemoryWorkflow();
    const store = new MemoryStore();
    await store.create({
      ...newJob(
        {
          id: 'job_parent',
          tenantId: 'acme',
          type: 'audio.publish',
          input: {},
          idempotencyKey: 'p',
          fingerprint: 'f',
        },
        clock,
      ),
      status: 'canceled',
    });
    await resumeParent(
      { workflow, store },
      child('needs_review', { code: 'ambiguous_submission', message: 'sent, outcome unknown' }),
    );
    await resumeParent({ workflow, store }, child('canceled'));
    expect(workflow.failed).toEqual([
      {
        taskToken: 't',
        error: 'NeedsReview',
        cause: '[ambiguous_submission] Chunk 4 needs review: sent, outcome unknown',
      },
      { taskToken: 't', error: 'ChunkCanceled', cause: '[chunk_canceled] Chunk 4 was canceled.' },
    ]);
  });

  it('says nothing for a chunk still on its way, or a job that is no chunk', async () => {
    const deps = { workflow: new MemoryWorkflow(), store: new MemoryStore() };
    const { workflow } = deps;
    expect(await resumeParent(deps, child('running'))).toBe(false);
    expect(await resumeParent(deps, { ...child('succeeded'), parent: undefined })).toBe(false);
    expect(workflow.completed).toEqual([]);
  });
});

describe('outputs of a chunk job', () => {
  it("are kept under its parent's, so its failure deletes them, and under the try's own id, so no other try's discard does", () => {
    const parent = { id: 'job_parent', tenantId: 'acme' };
    const tryOf = (id: string) =>
      jobOutputPrefix({ id, tenantId: 'acme', parent: { jobId: 'job_parent', index: 3 } });
    expect(tryOf('job_child')).toBe('outputs/acme/job_parent/chunks/3/job_child/');
    expect(tryOf('job_child').startsWith(chunkOutputPrefix(parent, 3))).toBe(true);
    expect(tryOf('job_child').startsWith(jobOutputPrefix(parent))).toBe(true);
    expect(tryOf('job_retry').startsWith(tryOf('job_child'))).toBe(false);
  });
});

describe('a canceled parent', () => {
  const second: StoredChunk = {
    ...chunk,
    index: 3,
    key: `${chunk.key}.3`,
    idempotencyKey: 'publish-key:chunk-3',
  };

  it('cancels the children it made and stays running, carrying the request, while one runs out at its provider', async () => {
    const deps = world();
    const parent = await runningParent(deps.store);
    const queued = await awaitChunk(deps, parent, chunk, 'token-2');
    const running = await awaitChunk(deps, parent, second, 'token-3');
    deps.store.jobs.set(running.id, {
      ...running,
      status: 'running',
      taskToken: 'child-own-token',
      providerJobId: 'dg-1',
    });

    const answered = await cancelJob(deps, 'acme', parent.id);

    // Not final while a child may still be at its provider: running, with the request on it.
    expect(answered).toMatchObject({ status: 'running', cancelRequestedAt: clock.toISOString() });
    expect(toResource(answered)).toMatchObject({ status: 'running', cancelRequestedAt: clock.toISOString() });
    expect(deps.store.jobs.get(parent.id)?.status).toBe('running');
    expect(deps.store.jobs.get(queued.id)?.status).toBe('canceled');
    expect(deps.store.jobs.get(running.id)?.status).toBe('canceled');
    // The running child's own workflow hears of it and stops it at its provider where the provider can.
    expect(deps.workflow.failed).toContainEqual(
      expect.objectContaining({ taskToken: 'child-own-token', error: 'JobCanceled' }),
    );
    // Asked again: the same request, nothing canceled twice.
    const again = await cancelJob(deps, 'acme', parent.id);
    expect(again.cancelRequestedAt).toBe(clock.toISOString());
  });

  it('wakes the parent waiting for its children once the last one is settled, and not before', async () => {
    const deps = world();
    const parent = await runningParent(deps.store);
    const child = await awaitChunk(deps, parent, chunk, 'token-2');
    deps.store.jobs.set(child.id, { ...child, status: 'running', providerJobId: 'dg-1' });
    await cancelJob(deps, 'acme', parent.id);
    deps.store.jobs.set(parent.id, {
      ...(deps.store.jobs.get(parent.id) as Job),
      taskToken: 'children-token',
    });
    const canceledChild = deps.store.jobs.get(child.id) as Job;

    // Canceled, but Deepgram runs it out: not settled, nobody is told.
    expect(await tellCancelingParent(deps, canceledChild)).toBe(false);
    const ranOut = {
      ...canceledChild,
      providerOutcome: { status: 'succeeded' as const, at: clock.toISOString(), providerJobId: 'dg-1' },
    };
    deps.store.jobs.set(child.id, ranOut);

    expect(await tellCancelingParent(deps, ranOut)).toBe(true);
    expect(deps.workflow.failed).toContainEqual(
      expect.objectContaining({ taskToken: 'children-token', error: 'ChildSettled' }),
    );
  });

  it('leaves finished children as they are, and never touches a job that is not its child', async () => {
    const deps = world();
    const parent = await runningParent(deps.store);
    const done = await awaitChunk(deps, parent, chunk, 'token-2');
    deps.store.jobs.set(done.id, { ...done, status: 'succeeded' });
    const stranger = {
      ...done,
      id: 'job_strangeraaaaaaaaaaaaaaaaaa',
      parent: undefined,
      status: 'queued' as const,
    };
    deps.store.jobs.set(stranger.id, stranger);
    await deps.timeline.record(parent.id, {
      at: clock.toISOString(),
      type: 'chunk.submitted',
      detail: `chunk 9 as ${stranger.id}`,
    });

    await cancelJob(deps, 'acme', parent.id);

    expect(deps.store.jobs.get(done.id)?.status).toBe('succeeded');
    expect(deps.store.jobs.get(stranger.id)?.status).toBe('queued');
  });

  it('cancels a child its maker made after the cancel had looked, and tells the waiting state at once', async () => {
    const deps = world();
    const parent = await runningParent(deps.store);
    // Its cancel asked between the transcribe state's check and the child's creation.
    deps.store.jobs.set(parent.id, { ...parent, cancelRequestedAt: clock.toISOString() });

    const child = await awaitChunk(deps, parent, chunk, 'token-2');

    expect(child.status).toBe('canceled');
    expect(deps.store.jobs.get(child.id)?.status).toBe('canceled');
    // Named in the parent's timeline for the cancel to find, but never sent to its line.
    expect(deps.queue.messages).toEqual([]);
    expect(deps.waiting.lines.get('deepgram#acme')?.size ?? 0).toBe(0);
    expect(deps.workflow.failed).toContainEqual(
      expect.objectContaining({ taskToken: 'token-2', error: 'ChunkCanceled' }),
    );
  });
});
