import {
  IdempotencyKeyReusedError,
  JobAlreadyFinishedError,
  JobNotFoundError,
  TenantQueueFullError,
  ValidationError,
} from '../../lambdas/domain/errors';
import { deriveJobId, fingerprint } from '../../lambdas/domain/idempotency';
import { cancelJob, getJob, type IntakeDeps, submitJob } from '../../lambdas/domain/intake';
import type { TenantRecord } from '../../lambdas/domain/tenants';
import {
  type MemoryEvents,
  type MemoryInputs,
  type MemoryQueue,
  type MemoryStore,
  type MemoryWaitingLines,
  MemoryWorkflow,
  memoryIntake,
} from './support/memory-ports';

let clock = new Date('2026-03-01T12:00:00.000Z');
/** Tenants' records, for their `maxQueued`. */
let caps: Map<string, TenantRecord>;
let deps: IntakeDeps & {
  events: MemoryEvents;
  store: MemoryStore;
  waiting: MemoryWaitingLines;
  queue: MemoryQueue;
  inputs: MemoryInputs;
  workflow: MemoryWorkflow;
};
beforeEach(() => {
  clock = new Date('2026-03-01T12:00:00.000Z');
  const intake = memoryIntake(() => clock, {
    'image.generate': 'longhaul-http',
    'audio.transcribe': 'longhaul-http',
  });
  caps = intake.caps;
  deps = { ...intake.deps, workflow: new MemoryWorkflow() };
});

const request = { type: 'image.generate' as const, input: { prompt: 'a cat', width: 512 } };
const submit = (overrides: Partial<Parameters<typeof submitJob>[1]> = {}) =>
  submitJob(deps, { tenantId: 'acme', idempotencyKey: 'k1', request, ...overrides });

describe('submitJob', () => {
  it('creates one queued job under the derived id, enqueues it once and records the enqueue', async () => {
    const { job, replayed } = await submit();

    expect(replayed).toBe(false);
    expect(job).toMatchObject({ id: deriveJobId('acme', 'k1'), status: 'queued', progress: 0, attempts: 0 });
    expect(deps.queue.messages).toEqual([
      { jobId: job.id, provider: 'longhaul-http', options: { inLine: true } },
    ]);
    expect(deps.waiting.entries().map((entry) => entry.jobId)).toEqual([job.id]);
    expect(deps.store.jobs.get(job.id)?.enqueuedAt).toBe(clock.toISOString());
  });

  it('replays the same job for the same key and body, without a second message', async () => {
    const first = await submit();
    const second = await submit({
      request: { type: 'image.generate', input: { width: 512, prompt: 'a cat' } },
    });

    expect(second.replayed).toBe(true);
    expect(second.job.id).toBe(first.job.id);
    expect(deps.store.jobs.size).toBe(1);
    expect(deps.queue.messages).toHaveLength(1);
  });

  it('refuses the same key with another body', async () => {
    await submit();
    await expect(submit({ request: { type: 'image.generate', input: { prompt: 'a dog' } } })).rejects.toThrow(
      IdempotencyKeyReusedError,
    );
  });

  it('stores the priority asked for, and standard when none was', async () => {
    const { job: batch } = await submit({ request: { ...request, priority: 'batch' } });
    const { job: unasked } = await submit({ idempotencyKey: 'k2' });

    expect(deps.store.jobs.get(batch.id)?.priority).toBe('batch');
    expect(deps.store.jobs.get(unasked.id)?.priority).toBe('standard');
  });

  it('treats asking for standard as not asking, and refuses the key with any other priority', async () => {
    const first = await submit();

    await expect(submit({ request: { ...request, priority: 'standard' } })).resolves.toMatchObject({
      replayed: true,
      job: { id: first.job.id },
    });
    for (const priority of ['interactive', 'batch'] as const) {
      await expect(submit({ request: { ...request, priority } })).rejects.toThrow(IdempotencyKeyReusedError);
    }
    expect(deps.store.jobs.size).toBe(1);
  });

  it('replays a job stored before jobs had a priority, under the fingerprint it was stored with', async () => {
    const { job } = await submit();
    const { priority: _priority, ...legacy } = deps.store.jobs.get(job.id)!;
    deps.store.jobs.set(job.id, { ...legacy, fingerprint: fingerprint({ ...request, webhookUrl: null }) });

    await expect(submit()).resolves.toMatchObject({ replayed: true, job: { id: job.id } });
    await expect(submit({ request: { ...request, priority: 'batch' } })).rejects.toThrow(
      IdempotencyKeyReusedError,
    );
  });

  it('sends the message at once when the first look cannot read the provider', async () => {
    deps = {
      ...deps,
      firstLook: async () => {
        throw new Error('table unavailable');
      },
    };
    const { job, enqueueError } = await submit();
    expect(enqueueError).toBeUndefined();
    expect(deps.queue.messages).toEqual([
      { jobId: job.id, provider: 'longhaul-http', options: { inLine: true } },
    ]);
  });

  it('keeps a job whose enqueue failed, reports it, and answers in-use then replays it', async () => {
    deps.queue.failing = true;
    const { job, enqueueError } = await submit();

    expect(enqueueError).toEqual(new Error('queue unavailable'));
    expect(deps.store.jobs.get(job.id)).toMatchObject({ status: 'queued' });
    expect(deps.store.jobs.get(job.id)?.enqueuedAt).toBeUndefined();

    await expect(submit()).rejects.toThrow('still being processed');
    clock = new Date(clock.getTime() + 30_000);
    await expect(submit()).resolves.toMatchObject({ replayed: true });
  });

  it('stores a file part under a content-derived ref and puts the ref into the input', async () => {
    const bytes = new TextEncoder().encode('png bytes');
    const { job } = await submit({ file: { bytes, contentType: 'image/png' } });

    const ref = job.input.sourceImageRef as string;
    expect(ref).toMatch(/^upl_[A-Za-z0-9_-]{32}$/);
    expect(deps.inputs.objects.get(`acme/${ref}`)).toEqual({ bytes, contentType: 'image/png' });
  });

  it('stores nothing for a file whose key was already used with another body', async () => {
    await submit();
    const file = { bytes: new Uint8Array([1, 2, 3]), contentType: 'image/png' };
    await expect(submit({ file })).rejects.toThrow(IdempotencyKeyReusedError);
    expect(deps.inputs.objects.size).toBe(0);
  });

  it('refuses a file whose media type does not fit the job type, or a second source', async () => {
    const file = { bytes: new Uint8Array([1]), contentType: 'text/plain' };
    await expect(submit({ file })).rejects.toThrow(ValidationError);
    await expect(
      submit({
        request: { type: 'audio.transcribe', input: { audioUrl: 'https://example.com/a.mp3' } },
        file: { bytes: new Uint8Array([1]), contentType: 'audio/mpeg' },
      }),
    ).rejects.toThrow(ValidationError);
    expect(deps.store.jobs.size).toBe(0);
    expect(deps.inputs.objects.size).toBe(0);
  });
});

describe("submitJob against the tenant's maxQueued", () => {
  const capAt = (maxQueued: number) => caps.set('acme', { tenant: 'acme', weight: 1, maxQueued });
  const backlog = () => deps.store.backlogs.get('acme');

  it('refuses a new job once the backlog holds maxQueued, storing, uploading and enqueuing nothing', async () => {
    capAt(2);
    await submit({ idempotencyKey: 'a' });
    await submit({ idempotencyKey: 'b' });

    const file = { bytes: new Uint8Array([1, 2]), contentType: 'image/png' };
    await expect(submit({ idempotencyKey: 'c', file })).rejects.toThrow(TenantQueueFullError);
    await expect(submit({ idempotencyKey: 'd' })).rejects.toThrow(TenantQueueFullError);

    expect([...deps.store.jobs.values()].map((job) => job.idempotencyKey)).toEqual(['a', 'b']);
    expect(deps.queue.messages).toHaveLength(2);
    expect(deps.inputs.objects.size).toBe(0);
    expect(backlog()).toBe(2);
  });

  it('still replays an accepted key at the cap, and a reused key is still refused as reused', async () => {
    capAt(1);
    const first = await submit();

    await expect(submit()).resolves.toMatchObject({ job: { id: first.job.id }, replayed: true });
    await expect(submit({ request: { ...request, input: { prompt: 'a dog' } } })).rejects.toThrow(
      IdempotencyKeyReusedError,
    );
    expect(backlog()).toBe(1);
  });

  it('takes back the admission of a replay below the cap, and of a write that failed', async () => {
    await submit();
    await submit();
    expect(backlog()).toBe(1);

    deps.store.create = async () => {
      throw new Error('table unavailable');
    };
    await expect(submit({ idempotencyKey: 'k2' })).rejects.toThrow('table unavailable');
    expect(backlog()).toBe(1);
  });

  it('admits again once a job leaves the backlog', async () => {
    capAt(1);
    const { job } = await submit();
    await expect(submit({ idempotencyKey: 'k2' })).rejects.toThrow(TenantQueueFullError);

    await cancelJob(deps, 'acme', job.id);

    await expect(submit({ idempotencyKey: 'k2' })).resolves.toMatchObject({ replayed: false });
  });
});

describe('getJob', () => {
  it("hides another tenant's job as not found", async () => {
    const { job } = await submit();
    await expect(getJob(deps.store, 'globex', job.id)).rejects.toThrow(JobNotFoundError);
    await expect(getJob(deps.store, 'acme', job.id)).resolves.toMatchObject({ id: job.id });
  });
});

describe('cancelJob', () => {
  it('cancels a queued job and is idempotent', async () => {
    const { job } = await submit();
    const canceled = await cancelJob(deps, 'acme', job.id);
    expect(canceled).toMatchObject({ status: 'canceled', finishedAt: clock.toISOString() });
    await expect(cancelJob(deps, 'acme', job.id)).resolves.toMatchObject({ status: 'canceled' });
  });

  it('refuses to cancel a finished job', async () => {
    const { job } = await submit();
    deps.store.jobs.set(job.id, { ...job, status: 'succeeded' });
    await expect(cancelJob(deps, 'acme', job.id)).rejects.toThrow(JobAlreadyFinishedError);
  });

  it('cancels a running job and fails its waiting step so the workflow settles it', async () => {
    const { job } = await submit();
    deps.store.jobs.set(job.id, { ...job, status: 'running', taskToken: 'token-1' });

    await expect(cancelJob(deps, 'acme', job.id)).resolves.toMatchObject({ status: 'canceled' });

    expect(deps.workflow.failed).toEqual([
      { taskToken: 'token-1', error: 'JobCanceled', cause: '[canceled] Canceled by the client.' },
    ]);
  });

  it('tells the waiting step again when the cancel is repeated, since the first word may have been lost', async () => {
    const { job } = await submit();
    deps.store.jobs.set(job.id, { ...job, status: 'running', taskToken: 'token-1' });
    deps.workflow.failTask = async () => {
      throw new Error('connection reset');
    };
    await expect(cancelJob(deps, 'acme', job.id)).rejects.toThrow('connection reset');
    deps.workflow.failTask = async (taskToken, error, cause) => {
      deps.workflow.failed.push({ taskToken, error, cause });
      return true;
    };

    await expect(cancelJob(deps, 'acme', job.id)).resolves.toMatchObject({ status: 'canceled' });

    expect(deps.workflow.failed).toEqual([
      { taskToken: 'token-1', error: 'JobCanceled', cause: '[canceled] Canceled by the client.' },
    ]);
  });

  it('cancels a running job that is not waiting yet without touching the workflow', async () => {
    const { job } = await submit();
    deps.store.jobs.set(job.id, { ...job, status: 'running' });
    await expect(cancelJob(deps, 'acme', job.id)).resolves.toMatchObject({ status: 'canceled' });
    expect(deps.workflow.failed).toEqual([]);
  });

  it('leaves a job in review to an operator, keeping the request', async () => {
    const { job } = await submit();
    deps.store.jobs.set(job.id, { ...job, status: 'needs_review' });
    await expect(cancelJob(deps, 'acme', job.id)).resolves.toMatchObject({
      status: 'needs_review',
      cancelRequestedAt: clock.toISOString(),
    });
  });

  it("does not touch another tenant's job", async () => {
    const { job } = await submit();
    await expect(cancelJob(deps, 'globex', job.id)).rejects.toThrow(JobNotFoundError);
    expect(deps.store.jobs.get(job.id)?.status).toBe('queued');
  });
});

describe('start deadlines (startBy)', () => {
  const deadline = { ...request, startBy: '2026-03-01T13:00:00.000Z' };

  it('stores the startBy on the job and in its request: another startBy, or none, is another request', async () => {
    const first = await submit({ request: deadline });
    expect(deps.store.jobs.get(first.job.id)).toMatchObject({
      status: 'queued',
      startBy: '2026-03-01T13:00:00.000Z',
    });
    await expect(submit({ request: deadline })).resolves.toMatchObject({
      job: { id: first.job.id },
      replayed: true,
    });
    await expect(submit({ request: { ...request, startBy: '2026-03-01T13:00:01.000Z' } })).rejects.toThrow(
      IdempotencyKeyReusedError,
    );
    await expect(submit({ request })).rejects.toThrow(IdempotencyKeyReusedError);
    expect(deps.store.jobs.size).toBe(1);
  });

  it('leaves the fingerprint of a request without one as it always was', async () => {
    const { job } = await submit({ request });
    expect(deps.store.jobs.get(job.id)?.startBy).toBeUndefined();
    expect(job.fingerprint).toBe(fingerprint({ type: request.type, input: request.input, webhookUrl: null }));
  });
});

describe('scheduled jobs (runAt)', () => {
  const later = '2026-03-01T12:05:00.000Z';
  const scheduled = { ...request, runAt: later };

  it('stores a job with a runAt ahead as scheduled, counted in the backlog, and sends it nowhere', async () => {
    const { job, replayed } = await submit({ request: scheduled });

    expect(replayed).toBe(false);
    expect(deps.store.jobs.get(job.id)).toMatchObject({ status: 'scheduled', runAt: later });
    expect(deps.store.jobs.get(job.id)?.enqueuedAt).toBeUndefined();
    expect(deps.queue.messages).toEqual([]);
    expect(deps.waiting.entries()).toEqual([]);
    expect(deps.store.backlogs.get('acme')).toBe(1);
  });

  it('runs a job whose runAt has passed now, as one without', async () => {
    const { job } = await submit({ request: { ...request, runAt: '2026-03-01T11:00:00.000Z' } });

    expect(job.status).toBe('queued');
    expect(deps.queue.messages.map((message) => message.jobId)).toEqual([job.id]);
    // Its place in line is its submission's, never the earlier runAt's.
    expect(deps.waiting.entries()[0]?.place.slice(0, 16)).toBe(
      String(Date.parse(clock.toISOString()) + 10 * 60_000).padStart(16, '0'),
    );
  });

  it('replays a scheduled job for its key and body at once (no in-use answer), and refuses another runAt', async () => {
    const first = await submit({ request: scheduled });

    await expect(submit({ request: scheduled })).resolves.toMatchObject({
      job: { id: first.job.id, status: 'scheduled' },
      replayed: true,
    });
    await expect(submit({ request: { ...request, runAt: '2026-03-01T12:06:00.000Z' } })).rejects.toThrow(
      IdempotencyKeyReusedError,
    );
    await expect(submit({ request })).rejects.toThrow(IdempotencyKeyReusedError);
    expect(deps.store.jobs.size).toBe(1);
  });

  it('counts scheduled jobs against maxQueued', async () => {
    caps.set('acme', { tenant: 'acme', weight: 1, maxQueued: 1 });
    await submit({ request: scheduled });
    await expect(submit({ idempotencyKey: 'k2' })).rejects.toThrow(TenantQueueFullError);
  });

  it('cancels a scheduled job at once, out of the backlog, with nothing sent', async () => {
    const { job } = await submit({ request: scheduled });

    const canceled = await cancelJob(deps, 'acme', job.id);

    expect(canceled).toMatchObject({ status: 'canceled', finishedAt: clock.toISOString() });
    expect(deps.store.backlogs.get('acme')).toBe(0);
    expect(deps.queue.messages).toEqual([]);
    expect(deps.workflow.failed).toEqual([]);
  });
});
