import {
  IdempotencyKeyInUseError,
  IdempotencyKeyReusedError,
  TenantQueueFullError,
  ValidationError,
} from '../../lambdas/domain/errors';
import { deriveJobId } from '../../lambdas/domain/idempotency';
import { type BatchItemOutcome, type IntakeDeps, submitBatch, submitJob } from '../../lambdas/domain/intake';
import type { Job } from '../../lambdas/domain/job';
import type { BatchEntry, CreateJobRequest } from '../../lambdas/domain/requests';
import type { TenantRecord } from '../../lambdas/domain/tenants';
import {
  type MemoryQueue,
  type MemoryStore,
  type MemoryWaitingLines,
  memoryIntake,
} from './support/memory-ports';

const clock = new Date('2026-03-01T12:00:00.000Z');
let caps: Map<string, TenantRecord>;
let deps: IntakeDeps & { store: MemoryStore; waiting: MemoryWaitingLines; queue: MemoryQueue };
beforeEach(() => {
  const intake = memoryIntake(() => clock, {
    'image.generate': 'longhaul-http',
    'audio.transcribe': 'deepgram',
  });
  caps = intake.caps;
  deps = intake.deps;
});

const cat = { type: 'image.generate' as const, input: { prompt: 'a cat' } };
const dog = { type: 'image.generate' as const, input: { prompt: 'a dog' } };
const item = (idempotencyKey: string, request: CreateJobRequest = cat): BatchEntry => ({
  idempotencyKey,
  request,
});
const submit = (entries: readonly BatchEntry[]) => submitBatch(deps, { tenantId: 'acme', entries });
const idOf = (key: string) => deriveJobId('acme', key);
const backlog = () => deps.store.backlogs.get('acme') ?? 0;

/** Each outcome as `accepted <job id>`, `replayed <job id>` or the error's name. */
function summary(outcomes: readonly BatchItemOutcome[]): string[] {
  return outcomes.map((outcome) =>
    'result' in outcome
      ? `${outcome.result.replayed ? 'replayed' : 'accepted'} ${outcome.result.job.id}`
      : (outcome.error as Error).name,
  );
}

describe('submitBatch', () => {
  it("sends each provider's jobs in one batch, as that provider's first look says", async () => {
    deps = {
      ...deps,
      firstLook: async (job) =>
        job.provider === 'deepgram' ? { inLine: true, delaySeconds: 200, deferrals: 1 } : { inLine: true },
    };
    const audio = { type: 'audio.transcribe' as const, input: { audioUrl: 'https://example.com/a.mp3' } };

    await submit([item('a'), item('b', audio as never), item('c', dog)]);

    expect(deps.queue.batches).toEqual([[idOf('a'), idOf('c')], [idOf('b')]]);
    expect(deps.queue.messages.map((message) => [message.jobId, message.options])).toEqual([
      [idOf('a'), { inLine: true }],
      [idOf('c'), { inLine: true }],
      [idOf('b'), { inLine: true, delaySeconds: 200, deferrals: 1 }],
    ]);
  });

  it('accepts the valid items and answers each invalid one with its own error, in item order', async () => {
    const invalid = new ValidationError('The request is invalid.', [
      { pointer: '/items/1/input', detail: 'x' },
    ]);

    const outcomes = await submit([item('a'), { error: invalid }, item('b', dog)]);

    expect(summary(outcomes)).toEqual([`accepted ${idOf('a')}`, 'ValidationError', `accepted ${idOf('b')}`]);
    expect((outcomes[1] as { error: unknown }).error).toBe(invalid);
    expect([...deps.store.jobs.keys()].sort()).toEqual([idOf('a'), idOf('b')].sort());
    // One lookup and one send for the whole batch; every job in its line and its enqueue recorded.
    expect(deps.store.lookups).toEqual([[idOf('a'), idOf('b')]]);
    expect(deps.queue.batches).toEqual([[idOf('a'), idOf('b')]]);
    expect(deps.queue.messages.map((message) => message.options)).toEqual([
      { inLine: true },
      { inLine: true },
    ]);
    expect(deps.waiting.entries().map((entry) => entry.jobId)).toEqual([idOf('a'), idOf('b')]);
    expect(deps.store.jobs.get(idOf('a'))?.enqueuedAt).toBe(clock.toISOString());
    expect(backlog()).toBe(2);
  });

  it('shares the key space of single submissions: either way round, the key lands on the same job', async () => {
    const single = await submitJob(deps, { tenantId: 'acme', idempotencyKey: 'a', request: cat });
    const [fromBatch, fresh] = await submit([item('a'), item('b')]);
    const later = await submitJob(deps, { tenantId: 'acme', idempotencyKey: 'b', request: cat });

    expect(fromBatch).toMatchObject({ result: { job: { id: single.job.id }, replayed: true } });
    expect(later).toMatchObject({
      replayed: true,
      job: { id: (fresh as { result: { job: Job } }).result.job.id },
    });
    expect(deps.store.jobs.size).toBe(2);
    expect(deps.queue.messages).toHaveLength(2);
    expect(backlog()).toBe(2);
  });

  it('replays every item of a retried batch: no new job, no message, no admission', async () => {
    const first = await submit([item('a'), item('b', dog)]);
    const again = await submit([item('b', dog), item('a')]);

    expect(summary(again)).toEqual([`replayed ${idOf('b')}`, `replayed ${idOf('a')}`]);
    expect(summary(first)).toEqual([`accepted ${idOf('a')}`, `accepted ${idOf('b')}`]);
    expect(deps.queue.messages).toHaveLength(2);
    expect(deps.queue.batches).toHaveLength(1);
    expect(backlog()).toBe(2);
  });

  it('makes a key given twice one job: the same body again is a replay, another body a reused key', async () => {
    const outcomes = await submit([item('a'), item('a'), item('a', dog), item('b')]);

    expect(summary(outcomes)).toEqual([
      `accepted ${idOf('a')}`,
      `replayed ${idOf('a')}`,
      'IdempotencyKeyReusedError',
      `accepted ${idOf('b')}`,
    ]);
    expect(deps.store.jobs.get(idOf('a'))?.input).toEqual(cat.input);
    expect(deps.store.lookups).toEqual([[idOf('a'), idOf('b')]]);
    expect(deps.queue.messages).toHaveLength(2);
    expect(backlog()).toBe(2);
  });

  it('refuses a reused key against the stored job, and the same body repeated in the batch with it', async () => {
    await submit([item('a')]);
    const outcomes = await submit([item('a', dog), item('a', dog), item('a')]);

    // The first item decides: the third, though it matches the stored job, differs from the first.
    expect(summary(outcomes)).toEqual([
      'IdempotencyKeyReusedError',
      'IdempotencyKeyReusedError',
      'IdempotencyKeyReusedError',
    ]);
    expect((outcomes[0] as { error: unknown }).error).toBeInstanceOf(IdempotencyKeyReusedError);
  });

  it("refuses the new items beyond the tenant's maxQueued in item order, still replaying accepted keys", async () => {
    caps.set('acme', { tenant: 'acme', weight: 1, maxQueued: 3 });
    await submit([item('old')]);

    const outcomes = await submit([item('a'), item('old'), item('b'), item('c'), item('a'), item('d')]);

    expect(summary(outcomes)).toEqual([
      `accepted ${idOf('a')}`,
      `replayed ${idOf('old')}`,
      `accepted ${idOf('b')}`,
      'TenantQueueFullError',
      `replayed ${idOf('a')}`,
      'TenantQueueFullError',
    ]);
    expect((outcomes[3] as { error: unknown }).error).toBeInstanceOf(TenantQueueFullError);
    expect(deps.store.jobs.has(idOf('c'))).toBe(false);
    expect(deps.store.jobs.has(idOf('d'))).toBe(false);
    expect(backlog()).toBe(3);
  });

  it('gives back in one the admissions of items that stored no job: created meanwhile, or a failed write', async () => {
    const create = deps.store.create.bind(deps.store);
    const concurrent = { ...(await draft('b')), fingerprint: 'another request' };
    let giveBacks = 0;
    const giveBack = deps.backlogs.giveBack.bind(deps.backlogs);
    deps.backlogs.giveBack = async (tenant, count) => {
      giveBacks++;
      await giveBack(tenant, count);
    };
    deps.store.create = async (job) => {
      if (job.id === idOf('b')) {
        // A single submission with the key stored its job between the batch's lookup and its write.
        deps.store.jobs.set(job.id, concurrent);
        return { created: false, existing: concurrent };
      }
      if (job.id === idOf('c')) throw new Error('table unavailable');
      return create(job);
    };

    const outcomes = await submit([item('a'), item('b'), item('c')]);

    expect(summary(outcomes)).toEqual([`accepted ${idOf('a')}`, 'IdempotencyKeyReusedError', 'Error']);
    expect(giveBacks).toBe(1);
    // The concurrent request's own admission is not the batch's: only 'a' is counted here.
    expect(backlog()).toBe(1);
    expect(deps.queue.messages.map((message) => message.jobId)).toEqual([idOf('a')]);
  });

  it('accepts a job it could not enqueue, leaving it to the reconciler, and a repeat of its key is in use', async () => {
    deps.queue.refusing.add(idOf('b'));

    const outcomes = await submit([item('a'), item('b'), item('b')]);

    expect(summary(outcomes)).toEqual([
      `accepted ${idOf('a')}`,
      `accepted ${idOf('b')}`,
      'IdempotencyKeyInUseError',
    ]);
    expect((outcomes[1] as { result: { enqueueError?: unknown } }).result.enqueueError).toBeInstanceOf(Error);
    expect((outcomes[2] as { error: unknown }).error).toBeInstanceOf(IdempotencyKeyInUseError);
    expect(deps.store.jobs.get(idOf('b'))).toMatchObject({ status: 'queued' });
    expect(deps.store.jobs.get(idOf('b'))?.enqueuedAt).toBeUndefined();
    expect(deps.store.jobs.get(idOf('a'))?.enqueuedAt).toBe(clock.toISOString());
    expect(backlog()).toBe(2);
  });

  it('puts the new jobs in their lines in one batch, and leaves a job whose entry failed unsent for the reconciler', async () => {
    deps.waiting.refusing.add(idOf('b'));

    const outcomes = await submit([item('a'), item('b'), item('c')]);

    expect(summary(outcomes)).toEqual([
      `accepted ${idOf('a')}`,
      `accepted ${idOf('b')}`,
      `accepted ${idOf('c')}`,
    ]);
    expect(deps.waiting.batches).toEqual([[idOf('a'), idOf('b'), idOf('c')]]);
    expect((outcomes[1] as { result: { enqueueError?: unknown } }).result.enqueueError).toBeInstanceOf(Error);
    expect(deps.queue.batches).toEqual([[idOf('a'), idOf('c')]]);
    expect(deps.store.jobs.get(idOf('b'))?.enqueuedAt).toBeUndefined();
  });

  it('refuses an item whose body has no canonical form, alone', async () => {
    const outcomes = await submit([item('a', { ...cat, input: { prompt: '\ud800' } }), item('b')]);
    expect(summary(outcomes)).toEqual(['ValidationError', `accepted ${idOf('b')}`]);
  });

  it('sends each provider its own jobs and touches nothing for a batch of invalid items', async () => {
    const none = await submit([{ error: new ValidationError('x') }]);
    expect(summary(none)).toEqual(['ValidationError']);
    expect(deps.store.lookups).toEqual([]);
    expect(deps.queue.batches).toEqual([]);

    await submit([
      item('a'),
      { idempotencyKey: 'b', request: { type: 'audio.transcribe', input: {} } as never },
    ]);
    expect(deps.queue.messages.map((message) => message.provider)).toEqual(['longhaul-http', 'deepgram']);
  });
});

/** The job a single submission of `cat` under the key would store. */
async function draft(key: string): Promise<Job> {
  const scratch = memoryIntake(deps.now, deps.jobTypeProviders).deps;
  return (await submitJob(scratch, { tenantId: 'acme', idempotencyKey: key, request: cat })).job;
}

describe('submitBatch with runAt', () => {
  it('stores the scheduled items as scheduled, in the backlog, and sends only the others', async () => {
    const runAt = '2026-03-01T13:00:00.000Z';
    const scheduled = { ...cat, runAt };

    const outcomes = await submit([item('a', scheduled), item('b', dog)]);

    expect(summary(outcomes)).toEqual([`accepted ${idOf('a')}`, `accepted ${idOf('b')}`]);
    expect(deps.store.jobs.get(idOf('a'))).toMatchObject({ status: 'scheduled', runAt });
    expect(deps.store.jobs.get(idOf('a'))?.enqueuedAt).toBeUndefined();
    expect(deps.queue.messages.map((message) => message.jobId)).toEqual([idOf('b')]);
    expect(deps.waiting.entries().map((entry) => entry.jobId)).toEqual([idOf('b')]);
    expect(backlog()).toBe(2);
  });
});
