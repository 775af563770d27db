import { JobNotFoundError, JobNotResumableError } from '../../lambdas/domain/errors';
import { currentExecutionOf, type Job } from '../../lambdas/domain/job';
import { RESOLVED_FAILED_CODE } from '../../lambdas/domain/operator';
import { resumeJob } from '../../lambdas/domain/resume';
import { resumeNeedsSlot } from '../../lambdas/domain/slots';
import { sampleJob } from './support/jobs';
import { MemoryStore, MemoryTimeline, MemoryWorkflow } from './support/memory-ports';

const clock = new Date('2026-03-01T10:00:00.000Z');
const later = new Date('2026-03-01T11:00:00.000Z');

function setup(job: Partial<Job> = {}) {
  const store = new MemoryStore();
  const stored = sampleJob(clock, {
    status: 'failed',
    error: { code: 'output_invalid', message: 'The provider returned an unusable output.' },
    finishedAt: clock.toISOString(),
    providerJobId: 'gen_1',
    providerOutcome: { status: 'succeeded', at: clock.toISOString() },
    ...job,
  });
  store.jobs.set(stored.id, stored);
  const workflow = new MemoryWorkflow();
  const execution = currentExecutionOf(stored);
  workflow.statuses.set(execution, 'FAILED');
  const timeline = new MemoryTimeline();
  const deps = { store, workflow, timeline, now: () => later };
  const current = () => store.jobs.get(stored.id) as Job;
  return { deps, store, workflow, timeline, execution, job: stored, current };
}

describe('resumeJob', () => {
  it('moves a failed job back to running and redrives its execution under the resume’s client token', async () => {
    const { deps, workflow, timeline, execution, job, current } = setup();

    const resumed = await resumeJob(deps, 'acme', job.id);

    expect(resumed).toEqual(current());
    expect(current()).toMatchObject({
      status: 'running',
      error: null,
      resumes: 1,
      resumedAt: later.toISOString(),
      providerJobId: 'gen_1',
    });
    expect(current().finishedAt).toBeUndefined();
    expect(workflow.redriven).toEqual([`${execution}/resume-1`]);
    expect(workflow.started).toEqual([]);
    expect(timeline.types(job.id)).toEqual(['job.resumed']);
  });

  it('refuses a job an operator replayed, naming its replay, and leaves it failed: one charge for one action', async () => {
    const { deps, workflow, job, current } = setup({ replacedBy: 'job_replayreplayreplayreplayre' });

    await expect(resumeJob(deps, 'acme', job.id)).rejects.toThrow(
      new JobNotResumableError(
        job.id,
        `Job ${job.id} was replayed as job job_replayreplayreplayreplayre; follow that job instead.`,
      ),
    );
    expect(current().status).toBe('failed');
    expect(workflow.redriven).toEqual([]);
  });

  it('refuses a job replayed between its read and its resume: the write is conditional on no replay', async () => {
    const { deps, store, workflow, job, current } = setup();
    const read = store.get.bind(store);
    let reads = 0;
    store.get = async (id) => {
      const found = await read(id);
      // An operator's replay marks it right after the resume read it.
      if (reads++ === 0 && found)
        store.jobs.set(id, { ...found, replacedBy: 'job_replayreplayreplayreplayre' });
      return found;
    };

    await expect(resumeJob(deps, 'acme', job.id)).rejects.toThrow(JobNotResumableError);
    expect(current()).toMatchObject({ status: 'failed', replacedBy: 'job_replayreplayreplayreplayre' });
    expect(workflow.redriven).toEqual([]);
  });

  it.each([
    ['failed more than 14 days ago', 'FAILED'],
    ['ended otherwise than failed', 'SUCCEEDED'],
  ] as const)(
    'resumes a job whose execution %s all the same: running, for the reconciler to start a new run',
    async (_, status) => {
      const { deps, workflow, timeline, execution, job, current } = setup();
      workflow.statuses.set(execution, status);
      workflow.notRedrivable.add(execution);

      const resumed = await resumeJob(deps, 'acme', job.id);

      expect(resumed).toEqual(current());
      expect(current()).toMatchObject({ status: 'running', error: null, resumes: 1, providerJobId: 'gen_1' });
      expect(workflow.redriven).toEqual([]);
      expect(workflow.started).toEqual([]);
      expect(timeline.events.get(job.id)).toEqual([
        expect.objectContaining({
          type: 'job.resumed',
          detail: 'resume 1; its execution cannot be redriven, so a new run goes on from where the job is',
        }),
      ]);
    },
  );

  it('counts each resume of a job that failed again: a new client token, so a new redrive', async () => {
    const { deps, workflow, execution, job, store } = setup({ resumes: 1 });
    await resumeJob(deps, 'acme', job.id);
    expect(store.jobs.get(job.id)?.resumes).toBe(2);
    expect(workflow.redriven).toEqual([`${execution}/resume-2`]);
  });

  it('answers 404 for another tenant’s job and changes nothing', async () => {
    const { deps, workflow, job, current } = setup();
    await expect(resumeJob(deps, 'globex', job.id)).rejects.toBeInstanceOf(JobNotFoundError);
    expect(current().status).toBe('failed');
    expect(workflow.redriven).toEqual([]);
  });

  it.each(['running', 'succeeded', 'canceled', 'queued'] as const)(
    'refuses a %s job and changes nothing',
    async (status) => {
      const { deps, workflow, job, current } = setup({ status });
      const before = current();
      await expect(resumeJob(deps, 'acme', job.id)).rejects.toThrow(
        new JobNotResumableError(job.id, `Job ${job.id} is ${status}; only a failed job can be resumed.`),
      );
      expect(current()).toBe(before);
      expect(workflow.redriven).toEqual([]);
    },
  );

  it('refuses a job in review, telling that its review is resolved first', async () => {
    const { deps, workflow, job, current } = setup({
      status: 'needs_review',
      providerJobId: undefined,
      providerOutcome: undefined,
      submitIntent: { attemptId: 'a1', at: clock.toISOString() },
    });
    const refusal = resumeJob(deps, 'acme', job.id);
    await expect(refusal).rejects.toBeInstanceOf(JobNotResumableError);
    await expect(refusal).rejects.toThrow(/needs review.*resolves the review first/);
    expect(current().status).toBe('needs_review');
    expect(workflow.redriven).toEqual([]);
  });

  it('never resumes a failed job whose submission’s outcome at the provider is unknown', async () => {
    for (const unknown of [
      { submitIntent: { attemptId: 'a1', at: clock.toISOString() }, providerJobId: undefined },
      { providerOutcome: undefined },
    ] as Partial<Job>[]) {
      const { deps, workflow, job, current } = setup(unknown);
      await expect(resumeJob(deps, 'acme', job.id)).rejects.toThrow(
        /outcome is unknown; it is never resumed/,
      );
      expect(current().status).toBe('failed');
      expect(workflow.redriven).toEqual([]);
    }
  });

  it('refuses a job its provider failed, and one an operator failed out of review', async () => {
    const providerFailed = setup({ providerOutcome: { status: 'failed', at: clock.toISOString() } });
    await expect(resumeJob(providerFailed.deps, 'acme', providerFailed.job.id)).rejects.toThrow(
      /was failed by its provider/,
    );
    const resolved = setup({ error: { code: RESOLVED_FAILED_CODE, message: 'charged twice' } });
    await expect(resumeJob(resolved.deps, 'acme', resolved.job.id)).rejects.toThrow(/failed by an operator/);
    expect(providerFailed.workflow.redriven).toEqual([]);
    expect(resolved.workflow.redriven).toEqual([]);
  });

  it('refuses a job that never reached its provider by its startBy: it is submitted again instead', async () => {
    const late = setup({ error: { code: 'start_deadline_passed', message: 'late' } });
    await expect(resumeJob(late.deps, 'acme', late.job.id)).rejects.toThrow(
      /never reached its provider by its startBy; submit it again/,
    );
    expect(late.current().status).toBe('failed');
    expect(late.workflow.redriven).toEqual([]);
  });

  it('of two resumes at once, one resumes the job and redrives once; the other is refused', async () => {
    const { deps, workflow, execution, job, current } = setup();
    const outcomes = await Promise.allSettled([
      resumeJob(deps, 'acme', job.id),
      resumeJob(deps, 'acme', job.id),
    ]);
    expect(outcomes.map((outcome) => outcome.status).sort()).toEqual(['fulfilled', 'rejected']);
    const refused = outcomes.find((outcome) => outcome.status === 'rejected') as PromiseRejectedResult;
    expect(refused.reason).toBeInstanceOf(JobNotResumableError);
    expect(current().resumes).toBe(1);
    expect(workflow.redriven).toEqual([`${execution}/resume-1`]);
  });

  it('leaves an execution still on its failure path to go on by itself', async () => {
    const { deps, workflow, execution, job, current } = setup();
    workflow.statuses.set(execution, 'RUNNING');
    await resumeJob(deps, 'acme', job.id);
    expect(current().status).toBe('running');
    expect(workflow.redriven).toEqual([]);
  });
});

describe('resumeNeedsSlot', () => {
  it('takes the slot again only for the steps that ran with it, and never for a publish', () => {
    const single = { type: 'image.generate' } as const;
    expect(['prepare', 'submit', 'await'].map((step) => resumeNeedsSlot(single, step))).toEqual([
      true,
      true,
      true,
    ]);
    expect(['finalize', 'release', undefined].map((step) => resumeNeedsSlot(single, step))).toEqual([
      false,
      false,
      false,
    ]);
    expect(resumeNeedsSlot({ type: 'audio.publish' }, 'submit')).toBe(false);
  });
});
