import {
  cancelJobs,
  LISTINGS_PER_REQUEST,
  parseCancelJobs,
  parseReplayJobs,
  parseResumeJobs,
  type ReplayDeps,
  replayJobs,
  replayKeyOf,
  resumeJobs,
} from '../../lambdas/domain/bulk';
import { ValidationError } from '../../lambdas/domain/errors';
import { deriveJobId } from '../../lambdas/domain/idempotency';
import { submitJob } from '../../lambdas/domain/intake';
import { type Job, type JobStatus, newJob } from '../../lambdas/domain/job';
import type { TenantRecord } from '../../lambdas/domain/tenants';
import {
  type MemoryEvents,
  type MemoryQueue,
  type MemoryStore,
  MemoryTimeline,
  MemoryWorkflow,
  memoryIntake,
} from './support/memory-ports';

let clock: Date;
let caps: Map<string, TenantRecord>;
let deps: ReplayDeps & {
  events: MemoryEvents;
  store: MemoryStore;
  queue: MemoryQueue;
  workflow: MemoryWorkflow;
  timeline: MemoryTimeline;
};
beforeEach(() => {
  clock = new Date('2026-03-01T12:00:00.000Z');
  const intake = memoryIntake(() => clock, {
    'image.generate': 'longhaul-http',
    'audio.transcribe': 'deepgram',
  });
  caps = intake.caps;
  deps = { ...intake.deps, workflow: new MemoryWorkflow(), timeline: new MemoryTimeline() };
});

const cat = { type: 'image.generate' as const, input: { prompt: 'a cat' } };
const speech = { type: 'audio.transcribe' as const, input: { audioUrl: 'https://example.com/a.mp3' } };

/** Submits a job one second after the last, then puts it in `status` as the workflow would have. */
async function job(
  key: string,
  status: JobStatus = 'queued',
  options: { tenant?: string; request?: typeof cat | typeof speech; patch?: Partial<Job> } = {},
): Promise<Job> {
  clock = new Date(clock.getTime() + 1000);
  const { job } = await submitJob(deps, {
    tenantId: options.tenant ?? 'acme',
    idempotencyKey: key,
    request: options.request ?? cat,
  });
  if (status !== 'queued') {
    await deps.store.transition(job, ['queued'], { status }, clock);
  }
  if (options.patch)
    deps.store.jobs.set(job.id, { ...(deps.store.jobs.get(job.id) as Job), ...options.patch });
  return deps.store.jobs.get(job.id) as Job;
}
const statusOf = (id: string) => deps.store.jobs.get(id)?.status;
const pointers = (run: () => unknown): string[] => {
  try {
    run();
  } catch (error) {
    if (error instanceof ValidationError) return error.errors.map((field) => field.pointer ?? '');
    throw error;
  }
  throw new Error('no validation error');
};

describe('parseCancelJobs', () => {
  it('takes a filter of statuses, a type and a creation window, and a dry run', () => {
    expect(
      parseCancelJobs({
        filter: {
          status: ['queued', 'running'],
          type: 'image.generate',
          createdAfter: '2026-03-01T12:00:00+02:00',
          createdBefore: '2026-03-01T12:00:00Z',
        },
        dryRun: true,
      }),
    ).toEqual({
      filter: {
        status: ['queued', 'running'],
        type: 'image.generate',
        createdAfter: '2026-03-01T12:00:00+02:00',
        createdBefore: '2026-03-01T12:00:00Z',
      },
      dryRun: true,
    });
    expect(parseCancelJobs({ filter: {} })).toEqual({ filter: {} });
  });

  it.each([
    ['an unknown status', { filter: { status: ['queued', 'paused'] } }, ['/filter/status/1']],
    ['an empty status list', { filter: { status: [] } }, ['/filter/status']],
    ['a status that is not a list', { filter: { status: 'queued' } }, ['/filter/status']],
    ['an unknown type', { filter: { type: 'video.render' } }, ['/filter/type']],
    [
      'a createdAfter that is not RFC 3339',
      { filter: { createdAfter: 'yesterday' } },
      ['/filter/createdAfter'],
    ],
    ['a date without a time', { filter: { createdBefore: '2026-03-01' } }, ['/filter/createdBefore']],
    [
      'createdAfter later than createdBefore',
      { filter: { createdAfter: '2026-03-02T00:00:00Z', createdBefore: '2026-03-01T00:00:00Z' } },
      ['/filter/createdBefore'],
    ],
    [
      'createdAfter equal to createdBefore',
      { filter: { createdAfter: '2026-03-01T00:00:00Z', createdBefore: '2026-03-01T01:00:00+01:00' } },
      ['/filter/createdBefore'],
    ],
    ['an unknown filter field', { filter: { tenant: 'globex' } }, ['/filter']],
    ['an unknown body field', { filter: {}, force: true }, ['']],
    ['no filter', { dryRun: true }, ['/filter']],
    ['a dryRun that is not a boolean', { filter: {}, dryRun: 'yes' }, ['/dryRun']],
  ])('refuses %s with a pointer to it', (_name, body, expected) => {
    expect(pointers(() => parseCancelJobs(body))).toEqual(expected);
  });
});

describe('parseReplayJobs', () => {
  it('needs statuses and a note, and takes a tenant', () => {
    expect(parseReplayJobs({ filter: { tenant: 'acme', status: ['failed'] }, note: ' retry ' })).toEqual({
      filter: { tenant: 'acme', status: ['failed'] },
      note: 'retry',
    });
    expect(pointers(() => parseReplayJobs({ filter: {}, note: 'x' }))).toEqual(['/filter/status']);
    expect(pointers(() => parseReplayJobs({ filter: { status: ['failed'] } }))).toEqual(['/note']);
    expect(pointers(() => parseReplayJobs({ filter: { status: ['failed'] }, note: '  ' }))).toEqual([
      '/note',
    ]);
    expect(
      pointers(() => parseReplayJobs({ filter: { status: ['failed'], owner: 'x' }, note: 'x' })),
    ).toEqual(['/filter']);
  });
});

describe('cancelJobs', () => {
  const cancel = (body: unknown, max = 100, tenant = 'acme') =>
    cancelJobs(deps, tenant, parseCancelJobs(body), max);

  it('cancels the matching unfinished jobs, skips finished ones and leaves other tenants alone', async () => {
    const queued = await job('q');
    const running = await job('r', 'running', { patch: { taskToken: 'token-r' } });
    const done = await job('d', 'succeeded');
    const theirs = await job('t', 'queued', { tenant: 'globex' });

    const result = await cancel({ filter: {} });

    expect(result).toMatchObject({ matched: 2, canceled: 2, cancelRequested: 0, nextCursor: null });
    expect([statusOf(queued.id), statusOf(running.id), statusOf(done.id), statusOf(theirs.id)]).toEqual([
      'canceled',
      'canceled',
      'succeeded',
      'queued',
    ]);
    // The running job's waiting step hears of it, as a single cancel tells it: the workflow stops it at the provider.
    expect(deps.workflow.failed).toEqual([
      { taskToken: 'token-r', error: 'JobCanceled', cause: '[canceled] Canceled by the client.' },
    ]);
    // Finished statuses' listings are never read.
    expect(deps.store.listings.map((listing) => listing.query.status)).toEqual([
      'scheduled',
      'queued',
      'running',
      'needs_review',
    ]);
  });

  it('cancels by type and creation window, the window exclusive at both ends', async () => {
    const first = await job('a'); // 12:00:01
    const second = await job('b'); // 12:00:02
    const third = await job('c', 'queued', { request: speech }); // 12:00:03
    const fourth = await job('d'); // 12:00:04

    const result = await cancel({
      filter: {
        type: 'image.generate',
        createdAfter: first.createdAt,
        createdBefore: '2026-03-01T14:00:04+02:00',
      },
    });

    expect(result).toMatchObject({ matched: 1, canceled: 1 });
    expect([first, second, third, fourth].map((j) => statusOf(j.id))).toEqual([
      'queued',
      'canceled',
      'queued',
      'queued',
    ]);
  });

  it('on a dry run counts what it would cancel and changes nothing', async () => {
    const jobs = [await job('a'), await job('b', 'running', { patch: { taskToken: 't' } })];
    const before = structuredClone([...deps.store.jobs.entries()]);

    const result = await cancel({ filter: { status: ['queued', 'running'] }, dryRun: true });

    expect(result).toMatchObject({ matched: 2, canceled: 0, nextCursor: null });
    expect([...deps.store.jobs.entries()]).toEqual(before);
    expect(deps.workflow.failed).toEqual([]);
    expect(jobs.map((j) => statusOf(j.id))).toEqual(['queued', 'running']);
  });

  it('is idempotent: run again, it finds nothing left and changes nothing', async () => {
    await job('a');
    await job('b');
    expect(await cancel({ filter: { status: ['queued'] } })).toMatchObject({ matched: 2, canceled: 2 });
    const after = structuredClone([...deps.store.jobs.entries()]);

    expect(await cancel({ filter: { status: ['queued'] } })).toMatchObject({
      matched: 0,
      canceled: 0,
      nextCursor: null,
    });
    expect([...deps.store.jobs.entries()]).toEqual(after);
  });

  it('answers 0 and 0 for a filter that matches nothing, reading nothing for finished statuses', async () => {
    await job('a', 'failed');
    expect(await cancel({ filter: { status: ['failed', 'succeeded'] } })).toMatchObject({
      matched: 0,
      canceled: 0,
      nextCursor: null,
    });
    expect(deps.store.listings).toEqual([]);
  });

  it('acts on at most its bound per request and goes on from the cursor, each job once', async () => {
    const jobs = [];
    for (const key of ['a', 'b', 'c', 'd', 'e']) jobs.push(await job(key));
    jobs.push(await job('f', 'running'));

    const first = await cancel({ filter: {} }, 2);
    expect(first).toMatchObject({ matched: 2, canceled: 2 });
    expect(first.nextCursor).toEqual(expect.any(String));
    // Newest first: e and d.
    expect(jobs.map((j) => statusOf(j.id))).toEqual([
      'queued',
      'queued',
      'queued',
      'canceled',
      'canceled',
      'running',
    ]);
    const second = await cancel({ filter: {}, cursor: first.nextCursor }, 2);
    expect(second).toMatchObject({ matched: 2, canceled: 2 });
    const third = await cancel({ filter: {}, cursor: second.nextCursor }, 2);
    expect(third).toMatchObject({ matched: 2, canceled: 2 });
    const last = await cancel({ filter: {}, cursor: third.nextCursor }, 2);
    expect(last).toEqual({ matched: 0, canceled: 0, cancelRequested: 0, nextCursor: null, canceledJobs: [] });
    expect(jobs.map((j) => statusOf(j.id))).toEqual(Array(6).fill('canceled'));
    // Each read asked for no more than the bound left.
    expect(deps.store.listings.every((listing) => listing.query.limit <= 2)).toBe(true);
  });

  it('refuses a cursor made for another filter, or not made here, with nothing changed', async () => {
    await job('a');
    await job('b');
    const { nextCursor } = await cancel({ filter: {}, dryRun: true }, 1);

    await expect(cancel({ filter: { status: ['queued'] }, cursor: nextCursor })).rejects.toThrow(
      ValidationError,
    );
    await expect(cancel({ filter: {}, cursor: 'bm9wZQ' })).rejects.toThrow(ValidationError);
    expect([...deps.store.jobs.values()].map((j) => j.status)).toEqual(['queued', 'queued']);
  });

  it('leaves a job in review in review, carrying the request, as a single cancel does', async () => {
    const review = await job('r', 'needs_review');

    expect(await cancel({ filter: {} })).toMatchObject({ matched: 1, canceled: 0, cancelRequested: 1 });
    expect(deps.store.jobs.get(review.id)).toMatchObject({
      status: 'needs_review',
      cancelRequestedAt: clock.toISOString(),
    });
  });

  it('gives canceled queued jobs back to the backlog', async () => {
    await job('a');
    await job('b');
    expect(deps.store.backlogs.get('acme')).toBe(2);
    await cancel({ filter: {} });
    expect(deps.store.backlogs.get('acme')).toBe(0);
  });
});

describe('replayJobs', () => {
  const replay = (body: unknown, max = 50) => replayJobs(deps, parseReplayJobs(body), max);
  const newJobs = () => [...deps.store.jobs.values()].filter((j) => j.replayOf !== undefined);

  it('makes a new queued job with replayOf for each finished job, and marks the original replacedBy it', async () => {
    const failed = await job('f', 'failed', {
      patch: {
        error: { code: 'provider_rejected', message: 'no' },
        priority: 'batch',
        webhookUrl: 'https://example.com/hook',
      },
    });
    const original = structuredClone(deps.store.jobs.get(failed.id));
    deps.queue.messages.length = 0;

    const result = await replay({ filter: { tenant: 'acme', status: ['failed'] }, note: 'provider fixed' });

    const id = deriveJobId('acme', replayKeyOf(failed, 'provider fixed'));
    expect(result).toEqual({
      matched: 1,
      replayed: 1,
      alreadyReplayed: 0,
      refused: [],
      jobs: [{ id, replayOf: failed.id, tenantId: 'acme' }],
      nextCursor: null,
    });
    expect(deps.store.jobs.get(id)).toMatchObject({
      tenantId: 'acme',
      type: 'image.generate',
      input: cat.input,
      webhookUrl: 'https://example.com/hook',
      priority: 'batch',
      status: 'queued',
      replayOf: failed.id,
      error: null,
      attempts: 0,
    });
    // The original changes in one way only: it names its replay (and the key it is made under), so a
    // client tracking it finds the outcome, and a resume of it is refused (one charge for one action).
    expect(deps.store.jobs.get(failed.id)).toEqual({
      ...original,
      replacedBy: id,
      replacedByKey: replayKeyOf(failed, 'provider fixed'),
    });
    // Through intake: in its line, one message, counted in the tenant's backlog.
    expect(deps.queue.messages.map((message) => message.jobId)).toEqual([id]);
    expect(deps.store.backlogs.get('acme')).toBe(1);
    expect(deps.timeline.types(id)).toEqual(['operator.replayed']);
  });

  it('refuses jobs in review, unfinished jobs and finished ones whose submission outcome is unknown, with the reason', async () => {
    const review = await job('n', 'needs_review');
    const queued = await job('q');
    const unknown = await job('u', 'failed', {
      patch: { submitIntent: { attemptId: 'a1', at: clock.toISOString() } },
    });
    const failed = await job('f', 'failed');

    const result = await replay({
      filter: { status: ['needs_review', 'queued', 'failed'] },
      note: 'again',
    });

    expect(result.refused).toEqual(
      expect.arrayContaining([
        { id: review.id, reason: 'needs-review' },
        { id: queued.id, reason: 'not-finished' },
        { id: unknown.id, reason: 'provider-outcome-unknown' },
      ]),
    );
    expect(result).toMatchObject({ matched: 4, replayed: 1 });
    expect(newJobs().map((j) => j.replayOf)).toEqual([failed.id]);
  });

  it('refuses a publish one of whose child jobs is in review or was sent with no known outcome, and replays one whose children are known', async () => {
    const publish = (id: string, key: string): Job => {
      const made = {
        ...newJob(
          {
            id,
            tenantId: 'acme',
            type: 'audio.publish',
            provider: 'deepgram',
            input: { audioRef: 'upl_x' },
            idempotencyKey: key,
            fingerprint: 'f',
          },
          clock,
        ),
        status: 'failed' as const,
        error: { code: 'chunk_failed', message: 'x' },
      };
      deps.store.jobs.set(id, made);
      return made;
    };
    const child = async (parent: Job, index: number, patch: Partial<Job>) => {
      const id = `job_${String.fromCharCode(107 + index).repeat(22)}${parent.id.slice(4, 8)}`;
      deps.store.jobs.set(id, {
        ...newJob(
          {
            id,
            tenantId: 'acme',
            type: 'audio.publish.chunk',
            provider: 'deepgram',
            input: { chunkKey: 'k' },
            idempotencyKey: `${parent.idempotencyKey}:chunk-${index}`,
            fingerprint: 'f',
            parent: { jobId: parent.id, index },
          },
          clock,
        ),
        ...patch,
      });
      await deps.timeline.record(parent.id, {
        at: clock.toISOString(),
        type: 'chunk.submitted',
        detail: `chunk ${index} as ${id}`,
      });
    };
    const reviewed = publish('job_aaaaaaaaaaaaaaaaaaaaaaaaaa', 'p1');
    await child(reviewed, 0, { status: 'succeeded' });
    await child(reviewed, 1, {
      status: 'needs_review',
      error: { code: 'ambiguous_submission', message: 'x' },
    });
    const unknown = publish('job_bbbbbbbbbbbbbbbbbbbbbbbbbb', 'p2');
    await child(unknown, 0, {
      status: 'canceled',
      submitIntent: { attemptId: 'a1', at: clock.toISOString() },
    });
    const known = publish('job_cccccccccccccccccccccccccc', 'p3');
    await child(known, 0, {
      status: 'failed',
      providerJobId: 'dg-1',
      providerOutcome: { status: 'failed', at: clock.toISOString() },
    });

    const result = await replay({ filter: { tenant: 'acme', status: ['failed'] }, note: 'after the outage' });

    expect([...result.refused].sort((a, b) => a.id.localeCompare(b.id))).toEqual([
      { id: reviewed.id, reason: 'child-outcome-unknown' },
      { id: unknown.id, reason: 'child-outcome-unknown' },
    ]);
    expect(newJobs().map((j) => j.replayOf)).toEqual([known.id]);
  });

  it('replays a job an operator resolved out of review: its outcome is known by the operator', async () => {
    const intent = { submitIntent: { attemptId: 'a1', at: clock.toISOString() } };
    const resolved = await job('r', 'failed', {
      patch: { ...intent, error: { code: 'resolved_failed', message: 'checked with the provider' } },
    });
    const canceled = await job('c', 'canceled', { patch: intent });

    const result = await replay({ filter: { status: ['failed', 'canceled'] }, note: 'x' });

    expect(result.refused).toEqual([{ id: canceled.id, reason: 'provider-outcome-unknown' }]);
    expect(newJobs().map((j) => j.replayOf)).toEqual([resolved.id]);
  });

  it('run twice with the same note replays nothing twice; another note replays again', async () => {
    const failed = await job('f', 'failed');
    const body = { filter: { status: ['failed'] }, note: 'after the outage' };

    expect(await replay(body)).toMatchObject({ replayed: 1, alreadyReplayed: 0 });
    clock = new Date(clock.getTime() + 60_000);
    const again = await replay(body);

    expect(again).toMatchObject({ matched: 1, replayed: 0, alreadyReplayed: 1, refused: [] });
    expect(newJobs()).toHaveLength(1);
    expect(again.jobs).toEqual([{ id: newJobs()[0]?.id, replayOf: failed.id, tenantId: 'acme' }]);

    expect(await replay({ ...body, note: 'second try' })).toMatchObject({ replayed: 1 });
    expect(newJobs()).toHaveLength(2);
  });

  it('makes the replay a stopped replay named and never made, whatever the next note: one replay, the one named', async () => {
    const failed = await job('f', 'failed');
    const create = deps.store.create.bind(deps.store);
    let stopped = 0;
    deps.store.create = async (draft) => {
      // The first replay's request stops after the original named its replay, before making it.
      if (draft.replayOf !== undefined && stopped++ === 0) throw new Error('Lambda timed out');
      return create(draft);
    };
    await expect(replay({ filter: { status: ['failed'] }, note: 'after the outage' })).rejects.toThrow(
      'Lambda timed out',
    );
    const named = deriveJobId('acme', replayKeyOf(failed, 'after the outage'));
    expect(deps.store.jobs.get(failed.id)?.replacedBy).toBe(named);

    const next = await replay({ filter: { status: ['failed'] }, note: 'second try' });

    expect(next).toMatchObject({ replayed: 1, refused: [], jobs: [{ id: named, replayOf: failed.id }] });
    expect(newJobs().map((j) => j.id)).toEqual([named]);
    expect(deps.store.jobs.get(failed.id)?.replacedBy).toBe(named);
  });

  it('makes one replay when a second request meets the first between naming its replay and making it', async () => {
    const failed = await job('f', 'failed');
    const create = deps.store.create.bind(deps.store);
    let reached: () => void = () => {};
    const atCreate = new Promise<void>((resolve) => {
      reached = resolve;
    });
    let go: () => void = () => {};
    const gate = new Promise<void>((resolve) => {
      go = resolve;
    });
    let held = 0;
    deps.store.create = async (draft) => {
      if (draft.replayOf !== undefined && held++ === 0) {
        reached();
        await gate;
      }
      return create(draft);
    };
    const first = replay({ filter: { status: ['failed'] }, note: 'after the outage' });
    await atCreate;
    await replay({ filter: { status: ['failed'] }, note: 'second try' });
    go();
    await first;

    const named = deriveJobId('acme', replayKeyOf(failed, 'after the outage'));
    expect(newJobs().map((j) => j.id)).toEqual([named]);
    expect(deps.store.jobs.get(failed.id)?.replacedBy).toBe(named);
  });

  it('refuses a job resumed after it was listed: the resume runs, and the original names no replay', async () => {
    const failed = await job('f', 'failed');
    const listed = deps.store.listByTenant.bind(deps.store);
    deps.store.listByTenant = async (tenant, query) => {
      const page = await listed(tenant, query);
      // Its client resumes it between the replay's listing and its write.
      await deps.store.reopenFailed(failed, clock);
      return page;
    };

    const result = await replay({ filter: { status: ['failed'] }, note: 'x' });

    expect(result).toMatchObject({ replayed: 0, refused: [{ id: failed.id, reason: 'not-finished' }] });
    expect(newJobs()).toEqual([]);
    expect(deps.store.jobs.get(failed.id)).toMatchObject({ status: 'running' });
    expect(deps.store.jobs.get(failed.id)?.replacedBy).toBeUndefined();
  });

  it('refuses a replay beyond the tenant cap with tenant-queue-full, and stores nothing for it', async () => {
    const a = await job('a', 'failed');
    const b = await job('b', 'failed');
    caps.set('acme', { tenant: 'acme', weight: 1, maxQueued: 1 } as TenantRecord);

    const result = await replay({ filter: { status: ['failed'] }, note: 'x' });

    expect(result).toMatchObject({ matched: 2, replayed: 1 });
    // Newest first: b takes the one place, a is refused.
    expect(result.refused).toEqual([{ id: a.id, reason: 'tenant-queue-full' }]);
    expect(newJobs().map((j) => j.replayOf)).toEqual([b.id]);
    expect(deps.store.backlogs.get('acme')).toBe(1);
  });

  it('on a dry run counts and refuses, and creates nothing', async () => {
    await job('f', 'failed');
    const review = await job('n', 'needs_review');
    const before = deps.store.jobs.size;

    const result = await replay({ filter: { status: ['failed', 'needs_review'] }, note: 'x', dryRun: true });

    expect(result).toEqual({
      matched: 2,
      replayed: 0,
      alreadyReplayed: 0,
      refused: [{ id: review.id, reason: 'needs-review' }],
      jobs: [],
      nextCursor: null,
    });
    expect(deps.store.jobs.size).toBe(before);
  });

  it("walks every tenant's jobs without a tenant, a bounded page at a time", async () => {
    const mine = await job('a', 'failed');
    const theirs = await job('b', 'canceled', { tenant: 'globex' });
    await job('c', 'succeeded', { tenant: 'globex' });

    const first = await replay({ filter: { status: ['failed', 'canceled'] }, note: 'x' }, 1);
    expect(first).toMatchObject({ matched: 1, replayed: 1, nextCursor: expect.any(String) });
    const second = await replay(
      { filter: { status: ['failed', 'canceled'] }, note: 'x', cursor: first.nextCursor },
      1,
    );
    // The listings left hold one job in all: the walk reads past the empty ones to the end.
    expect(second).toMatchObject({ matched: 1, replayed: 1, nextCursor: null });

    expect(
      newJobs()
        .map((j) => `${j.tenantId} ${j.replayOf}`)
        .sort(),
    ).toEqual([`acme ${mine.id}`, `globex ${theirs.id}`]);
  });

  it('reads at most LISTINGS_PER_REQUEST listings a request, so tenants with nothing to replay cost bounded time', async () => {
    const failed = await job('f', 'failed', { tenant: 'zeta' });
    // Tenants that had jobs admitted once, with none failed now.
    for (let n = 0; n < LISTINGS_PER_REQUEST + 20; n++)
      deps.store.backlogs.set(`quiet-${String(n).padStart(3, '0')}`, 0);
    const body = { filter: { status: ['failed'] }, note: 'x' };

    const first = await replay(body);
    expect(first).toMatchObject({ matched: 0, replayed: 0, nextCursor: expect.any(String) });
    expect(deps.store.listings).toHaveLength(LISTINGS_PER_REQUEST);
    const second = await replay({ ...body, cursor: first.nextCursor });
    expect(second).toMatchObject({ matched: 1, replayed: 1, nextCursor: null });
    expect(newJobs().map((j) => j.replayOf)).toEqual([failed.id]);
  });
});

describe('resumeJobs', () => {
  const resume = (body: unknown, max = 50) => resumeJobs(deps, parseResumeJobs(body), max);
  const outage = { code: 'provider_unavailable', message: 'The provider answered 503.' };

  it('resumes the failed jobs matching the error code and provider, each as a client resume would, and refuses the rest with why', async () => {
    const a = await job('a', 'failed', { patch: { error: outage, executionName: 'e-a' } });
    const b = await job('b', 'failed', { tenant: 'globex', patch: { error: outage, executionName: 'e-b' } });
    const other = await job('c', 'failed', { patch: { error: { code: 'input_invalid', message: 'no' } } });
    const elsewhere = await job('d', 'failed', { request: speech, patch: { error: outage } });
    const late = await job('e', 'failed', {
      patch: { error: { code: 'provider_unavailable', message: 'x' }, replacedBy: 'job_replay' },
    });
    const running = await job('f', 'running');
    deps.workflow.statuses.set('e-a', 'FAILED');
    deps.workflow.statuses.set('e-b', 'FAILED');

    const result = await resume({
      filter: { errorCode: 'provider_unavailable', provider: 'longhaul-http' },
      note: 'the outage of 12:00',
    });

    expect(result).toEqual({
      matched: 3,
      resumed: 2,
      refused: [
        { id: late.id, reason: `Job ${late.id} was replayed as job job_replay; follow that job instead.` },
      ],
      nextCursor: null,
    });
    expect([a, b].map((j) => deps.store.jobs.get(j.id)?.status)).toEqual(['running', 'running']);
    expect(deps.workflow.redriven.sort()).toEqual(['e-a/resume-1', 'e-b/resume-1']);
    expect(deps.timeline.types(a.id)).toEqual(['job.resumed', 'operator.resumed']);
    expect([other, elsewhere, running].map((j) => statusOf(j.id))).toEqual(['failed', 'failed', 'running']);
  });

  it('on a dry run counts and refuses, and resumes nothing', async () => {
    const a = await job('a', 'failed', { patch: { error: outage } });
    const result = await resume({ filter: { tenant: 'acme' }, dryRun: true, note: 'look first' });
    expect(result).toEqual({ matched: 1, resumed: 0, refused: [], nextCursor: null });
    expect(statusOf(a.id)).toBe('failed');
    expect(deps.workflow.redriven).toEqual([]);
  });

  it('needs a note, and refuses an unknown field', () => {
    expect(pointers(() => parseResumeJobs({ filter: {} }))).toEqual(['/note']);
    expect(pointers(() => parseResumeJobs({ filter: { status: ['failed'] }, note: 'x' }))).toEqual([
      '/filter',
    ]);
  });
});
