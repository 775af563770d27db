import { PROVIDER_OUTPUT_OBJECTS } from '../../config/layout';
import { tellCancelingParent } from '../../lambdas/domain/children';
import { type Job, submissionTagOf } from '../../lambdas/domain/job';
import { applyProviderEvent, parseProviderEvent } from '../../lambdas/domain/provider-events';
import { sampleJob } from './support/jobs';
import { MemoryOutputs, MemoryStore, MemoryTimeline, MemoryWorkflow } from './support/memory-ports';

const clock = new Date('2026-05-01T10:00:00.000Z');

function setup(job: Partial<Job>) {
  const store = new MemoryStore();
  const stored = sampleJob(clock, { status: 'running', ...job });
  store.jobs.set(stored.id, stored);
  const deps = { store, workflow: new MemoryWorkflow(), timeline: new MemoryTimeline(), now: () => clock };
  return { deps, id: stored.id, current: () => store.jobs.get(stored.id) };
}

const at = clock.toISOString();
/** The submission tags of the job's first submission and of the one after an operator's requeue. */
const first = submissionTagOf({ createdAt: at });
const second = submissionTagOf({ createdAt: at, resubmissions: 1 });

describe('applyProviderEvent', () => {
  it('keeps the output a completion carries, where the api may write it, and names it on the outcome', async () => {
    const { deps, id, current } = setup({ taskToken: 't1', providerJobId: 'gen_1' });
    const outputs = new MemoryOutputs();
    const transcript = { metadata: { request_id: 'gen_1' }, results: { channels: [] } };

    await applyProviderEvent(
      { ...deps, outputs },
      id,
      { type: 'succeeded', id: 'gen_1', output: transcript },
      first,
    );

    const key = current()?.providerOutcome?.outputKey as string;
    expect(key).toBe(`outputs/acme/${id}/provider-output-${first}.json`);
    // The api function's grant (config/layout.ts) covers exactly such keys.
    const granted = new RegExp(`^${PROVIDER_OUTPUT_OBJECTS.replaceAll('*', '[^]*')}$`);
    expect(key).toMatch(granted);
    expect(JSON.parse(new TextDecoder().decode(await outputs.getOutput(key)))).toEqual(transcript);
  });

  it('keeps nothing for a completion that carries no output', async () => {
    const { deps, id, current } = setup({ taskToken: 't1', providerJobId: 'gen_1' });
    const outputs = new MemoryOutputs();
    await applyProviderEvent({ ...deps, outputs }, id, { type: 'succeeded', id: 'gen_1' }, first);
    expect(current()?.providerOutcome?.outputKey).toBeUndefined();
    expect(outputs.objects.size).toBe(0);
  });

  it('records a completion and resumes the waiting step', async () => {
    const { deps, id, current } = setup({ providerJobId: 'gen_1', taskToken: 't1' });
    await expect(applyProviderEvent(deps, id, { type: 'succeeded', id: 'gen_1' }, first)).resolves.toBe(
      'resumed',
    );
    expect(current()?.providerOutcome).toEqual({ status: 'succeeded', at, providerJobId: 'gen_1' });
    expect(deps.workflow.completed).toEqual([{ taskToken: 't1', output: { providerStatus: 'succeeded' } }]);
  });

  it('records a completion that arrives before the step waits, for the step to find', async () => {
    const { deps, id, current } = setup({ providerJobId: 'gen_1' });
    await expect(applyProviderEvent(deps, id, { type: 'succeeded', id: 'gen_1' }, first)).resolves.toBe(
      'recorded',
    );
    expect(current()?.providerOutcome?.status).toBe('succeeded');
    expect(deps.workflow.completed).toEqual([]);
  });

  it('fails the waiting step with the provider error', async () => {
    const { deps, id } = setup({ providerJobId: 'gen_1', taskToken: 't1' });
    await applyProviderEvent(
      deps,
      id,
      {
        type: 'failed',
        id: 'gen_1',
        error: { code: 'oom', message: 'ran out' },
      },
      first,
    );
    expect(deps.workflow.failed).toEqual([
      { taskToken: 't1', error: 'ProviderJobFailed', cause: '[oom] ran out' },
    ]);
  });

  it('keeps the first outcome when the provider repeats or contradicts itself', async () => {
    const { deps, id, current } = setup({ providerJobId: 'gen_1' });
    await applyProviderEvent(deps, id, { type: 'succeeded', id: 'gen_1' }, first);
    await applyProviderEvent(
      deps,
      id,
      {
        type: 'failed',
        id: 'gen_1',
        error: { code: 'x', message: 'y' },
      },
      first,
    );
    expect(current()?.providerOutcome?.status).toBe('succeeded');
    expect(deps.timeline.types(id)).toEqual(['provider.succeeded']);
  });

  it('ignores events about another provider job or an unknown job', async () => {
    const { deps, id, current } = setup({ providerJobId: 'gen_1', taskToken: 't1' });
    await expect(applyProviderEvent(deps, id, { type: 'succeeded', id: 'gen_other' }, first)).resolves.toBe(
      'ignored',
    );
    await expect(
      applyProviderEvent(deps, 'job_bbbbbbbbbbbbbbbbbbbbbbbbbb', { type: 'succeeded', id: 'gen_1' }, first),
    ).resolves.toBe('ignored');
    expect(current()?.providerOutcome).toBeUndefined();
    expect(deps.workflow.completed).toEqual([]);
  });

  it('ignores events for a finished job, or for a job with no submission under way', async () => {
    const finished = setup({ status: 'failed', providerJobId: undefined });
    await expect(
      applyProviderEvent(finished.deps, finished.id, { type: 'succeeded', id: 'gen_bogus' }, first),
    ).resolves.toBe('ignored');
    expect(finished.current()?.providerOutcome).toBeUndefined();
    const idle = setup({});
    await expect(
      applyProviderEvent(idle.deps, idle.id, { type: 'succeeded', id: 'gen_bogus' }, first),
    ).resolves.toBe('ignored');
    expect(idle.deps.timeline.types(idle.id)).toEqual([]);
  });

  it('accepts the completion of a submission whose id is not recorded yet', async () => {
    const { deps, id, current } = setup({ submitIntent: { attemptId: 'a1', at } });
    await expect(applyProviderEvent(deps, id, { type: 'succeeded', id: 'gen_fast' }, first)).resolves.toBe(
      'recorded',
    );
    expect(current()?.providerOutcome?.status).toBe('succeeded');
  });

  it('ignores a late event of a submission an operator replaced, even while the new one has no id yet', async () => {
    // Requeued once: the current submission is 1 and is being sent; submission 0's provider job finishes late.
    const { deps, id, current } = setup({ resubmissions: 1, submitIntent: { attemptId: 'a2', at } });
    await expect(applyProviderEvent(deps, id, { type: 'succeeded', id: 'gen_old' }, first)).resolves.toBe(
      'ignored',
    );
    await expect(applyProviderEvent(deps, id, { type: 'succeeded', id: 'gen_old' }, undefined)).resolves.toBe(
      'ignored',
    );
    expect(current()?.providerOutcome).toBeUndefined();
    await expect(applyProviderEvent(deps, id, { type: 'succeeded', id: 'gen_new' }, second)).resolves.toBe(
      'recorded',
    );
  });

  it('records the outcome of a job in review as evidence, without resuming anything', async () => {
    const { deps, id, current } = setup({
      status: 'needs_review',
      submitIntent: { attemptId: 'a1', at },
      taskToken: 't1',
    });
    await expect(applyProviderEvent(deps, id, { type: 'succeeded', id: 'gen_1' }, first)).resolves.toBe(
      'recorded',
    );
    expect(current()?.providerOutcome).toEqual({ status: 'succeeded', at, providerJobId: 'gen_1' });
    expect(deps.workflow.completed).toEqual([]);
    expect(deps.timeline.types(id)).toEqual(['provider.succeeded']);
  });

  it('records the end of a provider job its canceled job could not stop, and nothing more', async () => {
    const { deps, id, current } = setup({ status: 'canceled', providerJobId: 'req_1', taskToken: 't1' });
    const outputs = new MemoryOutputs();
    const transcript = { metadata: { request_id: 'req_1' }, results: { channels: [] } };

    await expect(
      applyProviderEvent(
        { ...deps, outputs },
        id,
        { type: 'succeeded', id: 'req_1', output: transcript },
        first,
      ),
    ).resolves.toBe('recorded');

    // The reconciler frees the slot once the provider is done; the job stays canceled, its output unkept.
    expect(current()).toMatchObject({
      status: 'canceled',
      providerOutcome: { status: 'succeeded', at, providerJobId: 'req_1' },
    });
    expect(current()?.providerOutcome?.outputKey).toBeUndefined();
    expect(outputs.objects.size).toBe(0);
    expect(deps.workflow.completed).toEqual([]);
    expect(deps.timeline.types(id)).toEqual(['provider.succeeded']);
  });

  it('records the answer of a call that was under way when its job was canceled (Bedrock answers at once), keeping none of it, and wakes the canceling parent', async () => {
    const { deps, id, current } = setup({
      status: 'canceled',
      submitIntent: { attemptId: 'a1', at },
      parent: { jobId: 'job_pppppppppppppppppppppppppp', index: 0, stage: 'embed' },
    });
    deps.store.jobs.set('job_pppppppppppppppppppppppppp', {
      ...(current() as Job),
      id: 'job_pppppppppppppppppppppppppp',
      type: 'audio.publish',
      status: 'running',
      submitIntent: undefined,
      parent: undefined,
      cancelRequestedAt: at,
      taskToken: 'children-token',
    });
    const outputs = new MemoryOutputs();

    await expect(
      applyProviderEvent({ ...deps, outputs }, id, { type: 'succeeded', id: 'br_1', output: [[1]] }, first),
    ).resolves.toBe('recorded');

    expect(current()?.providerOutcome).toEqual({ status: 'succeeded', at, providerJobId: 'br_1' });
    expect(outputs.objects.size).toBe(0);
    // Its submission is settled only after this: its own settle step is what tells the parent then.
    expect(deps.workflow.failed).toEqual([]);
    deps.store.jobs.set(id, { ...(current() as Job), submitIntent: undefined, providerJobId: 'br_1' });
    await expect(tellCancelingParent(deps, current() as Job)).resolves.toBe(true);
    expect(deps.workflow.failed).toEqual([
      expect.objectContaining({ taskToken: 'children-token', error: 'ChildSettled' }),
    ]);
  });

  it('ignores, for a canceled job, another provider job, another submission, or a stop already confirmed', async () => {
    const other = setup({ status: 'canceled', providerJobId: 'req_1' });
    await expect(
      applyProviderEvent(other.deps, other.id, { type: 'succeeded', id: 'req_other' }, first),
    ).resolves.toBe('ignored');
    await expect(
      applyProviderEvent(other.deps, other.id, { type: 'succeeded', id: 'req_1' }, second),
    ).resolves.toBe('ignored');
    expect(other.current()?.providerOutcome).toBeUndefined();
    const stopped = { status: 'canceled' as const, at, providerJobId: 'req_1' };
    const confirmed = setup({ status: 'canceled', providerJobId: 'req_1', providerOutcome: stopped });
    await expect(
      applyProviderEvent(confirmed.deps, confirmed.id, { type: 'succeeded', id: 'req_1' }, first),
    ).resolves.toBe('ignored');
    expect(confirmed.current()?.providerOutcome).toEqual(stopped);
  });

  it('touches no storage for a progress tick', async () => {
    const { deps, id, current } = setup({ providerJobId: 'gen_1' });
    const before = current();
    await expect(
      applyProviderEvent(deps, id, { type: 'progress', id: 'gen_1', progress: 40 }, first),
    ).resolves.toBe('progress');
    expect(current()).toBe(before);
  });
});

describe('parseProviderEvent', () => {
  it('refuses unknown types and out-of-range progress', () => {
    expect(() => parseProviderEvent({ type: 'exploded', id: 'g', at })).toThrow(
      'The provider event is invalid.',
    );
    expect(() => parseProviderEvent({ type: 'progress', id: 'g', progress: 101, at })).toThrow('invalid');
  });
});

describe('an outcome racing an operator requeue', () => {
  it('lands on nothing once the job has moved to its next submission', async () => {
    const { deps, id, current } = setup({ submitIntent: { attemptId: 'a1', at } });
    // The event is read against submission 0; the operator requeues before the write lands.
    const get = deps.store.get.bind(deps.store);
    deps.store.get = async (jobId) => {
      const read = await get(jobId);
      const stored = deps.store.jobs.get(jobId) as Job;
      deps.store.jobs.set(jobId, { ...stored, resubmissions: 1, submitIntent: { attemptId: 'a2', at } });
      return read;
    };

    await applyProviderEvent(deps, id, { type: 'canceled', id: 'gen_1' }, first);

    expect(current()?.providerOutcome).toBeUndefined();
  });
});
