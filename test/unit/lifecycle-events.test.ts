import { EVENT_DETAILS, type LifecycleEvent, putEventsEntrySize } from '../../config/events';
import { JobAlreadyFinishedError } from '../../lambdas/domain/errors';
import { eventIdOf, jobEventOf, publishLifecycleEvent } from '../../lambdas/domain/events';
import { cancelJob, submitJob } from '../../lambdas/domain/intake';
import type { Job } from '../../lambdas/domain/job';
import { resolveJob } from '../../lambdas/domain/operator';
import { sampleJob } from './support/jobs';
import {
  limits,
  MemoryEvents,
  MemoryQueue,
  MemoryTimeline,
  MemoryWaitingLines,
  MemoryWorkflow,
  memoryIntake,
  memorySlots,
  memoryTenantShares,
} from './support/memory-ports';

const clock = new Date('2026-12-06T05:00:00.000Z');

const job = (overrides: Partial<Job> = {}): Job => sampleJob(new Date('2026-12-06T04:00:00.000Z'), overrides);

/** What an operator's resolve hands a freed slot on with. */
const lines = {
  waiting: new MemoryWaitingLines(),
  tenantShares: memoryTenantShares(),
  maxInFlight: limits(2),
};

describe('jobEventOf', () => {
  it.each([
    ['succeeded', 'job.succeeded', {}],
    ['canceled', 'job.canceled', {}],
    ['failed', 'job.failed', { error: { code: 'provider_failed', message: 'boom' } }],
    ['needs_review', 'job.needs_review', { error: { code: 'provider_timeout', message: 'late' } }],
  ] as const)('gives a %s job a %s event whose detail fits its schema', (status, detailType, extra) => {
    const event = jobEventOf(job({ status, finishedAt: clock.toISOString(), ...extra }));
    expect(event?.detailType).toBe(detailType);
    expect(EVENT_DETAILS[detailType].safeParse(event?.detail).success).toBe(true);
    expect(event?.detail).toMatchObject({
      jobId: 'job_aaaaaaaaaaaaaaaaaaaaaaaaaa',
      tenantId: 'acme',
      status,
    });
  });

  it.each(['scheduled', 'queued', 'running'] as const)('gives a %s job none', (status) => {
    expect(jobEventOf(job({ status }))).toBeUndefined();
  });

  it('keeps one id per job and status, and a new one for another status, record or requeue', () => {
    const id = (overrides: Partial<Job>) =>
      jobEventOf(job({ status: 'succeeded', ...overrides }))?.detail.eventId;
    const first = id({});
    expect(first).toMatch(/^evt_[A-Za-z0-9_-]{22}$/);
    // Read again later (progress, updatedAt moved): the same change, the same id.
    expect(id({ updatedAt: '2026-12-07T00:00:00.000Z', progress: 100 })).toBe(first);
    expect(jobEventOf(job({ status: 'canceled' }))?.detail.eventId).not.toBe(first);
    expect(id({ createdAt: '2026-12-08T00:00:00.000Z' })).not.toBe(first);
    expect(id({ resubmissions: 1 })).not.toBe(first);
  });

  it('says nothing of the input or the result', () => {
    const detail = jobEventOf(job({ status: 'succeeded', result: { outputKey: 'secret/key' } }))?.detail;
    expect(JSON.stringify(detail)).not.toMatch(/a cat|secret\/key/);
  });
});

describe('publishLifecycleEvent', () => {
  const media: LifecycleEvent = {
    detailType: 'media.version.published',
    detail: {
      schemaVersion: 1,
      eventId: eventIdOf('media', 'med_1', 'published', '3'),
      occurredAt: clock.toISOString(),
      tenantId: 'acme',
      mediaId: 'med_1',
      version: 3,
    },
  };

  it('puts a media event that fits its schema', async () => {
    const events = new MemoryEvents();
    await publishLifecycleEvent({ events }, media);
    expect(events.published).toEqual([media]);
  });

  it('refuses, and puts nothing of, a detail that does not fit its schema', async () => {
    const events = new MemoryEvents();
    const wrong = { ...media, detail: { ...media.detail, version: 0 } } as LifecycleEvent;
    await expect(publishLifecycleEvent({ events }, wrong)).rejects.toThrow();
    await expect(
      publishLifecycleEvent({ events }, {
        ...media,
        detail: { ...media.detail, extra: 1 },
      } as LifecycleEvent),
    ).rejects.toThrow();
    expect(events.published).toEqual([]);
  });
});

describe('putEventsEntrySize', () => {
  it('counts as EventBridge documents: 14 bytes for a Time, UTF-8 bytes of the rest', () => {
    expect(
      putEventsEntrySize({
        Source: 'longhaul',
        DetailType: 'job.failed',
        Detail: '{"é":1}',
        Resources: ['ab'],
      }),
    ).toBe(8 + 10 + 8 + 2);
    expect(putEventsEntrySize({ Time: new Date(), Source: 'x', DetailType: 'y' })).toBe(16);
  });
});

describe('jobs settled outside a workflow', () => {
  const setup = () => {
    const intake = memoryIntake(() => clock, {
      'image.generate': 'longhaul-http',
      'audio.transcribe': 'longhaul-http',
    });
    const deps = { ...intake.deps, workflow: new MemoryWorkflow(), timeline: new MemoryTimeline() };
    return { deps, events: intake.deps.events };
  };

  it('puts job.canceled when a queued job is canceled, and again (same id) when the cancel is repeated', async () => {
    const { deps, events } = setup();
    const { job: queued } = await submitJob(deps, {
      tenantId: 'acme',
      idempotencyKey: 'k1',
      request: { type: 'image.generate', input: { prompt: 'a cat' } },
    });
    await cancelJob(deps, 'acme', queued.id);
    expect(events.published).toEqual([
      {
        detailType: 'job.canceled',
        detail: expect.objectContaining({ jobId: queued.id, status: 'canceled' }),
      },
    ]);
    await cancelJob(deps, 'acme', queued.id);
    expect(events.published.map((event) => event.detail.eventId)).toEqual([
      events.published[0]?.detail.eventId,
      events.published[0]?.detail.eventId,
    ]);
  });

  it("leaves a running job's event to its workflow's settle path", async () => {
    const { deps, events } = setup();
    deps.store.jobs.set('job_running', job({ id: 'job_running', status: 'running', taskToken: 'tok' }));
    await cancelJob(deps, 'acme', 'job_running');
    expect(deps.workflow.failed).toHaveLength(1);
    expect(events.published).toEqual([]);
  });

  it.each(['succeeded', 'failed'] as const)(
    'puts job.%s when an operator resolves a job in review',
    async (outcome) => {
      const { deps, events } = setup();
      deps.store.jobs.set('job_review', job({ id: 'job_review', status: 'needs_review' }));
      await resolveJob({ ...deps, slots: memorySlots(), queue: new MemoryQueue(), ...lines }, 'job_review', {
        outcome,
        note: 'checked',
      });
      expect(events.detailTypes()).toEqual([`job.${outcome}`]);
    },
  );

  it('puts the event again when a resolution is retried after its first try stopped before the event', async () => {
    const { deps, events } = setup();
    deps.store.jobs.set('job_review', job({ id: 'job_review', status: 'needs_review' }));
    const operator = { ...deps, slots: memorySlots(), queue: new MemoryQueue(), ...lines };
    events.failures = 1;
    await expect(
      resolveJob(operator, 'job_review', { outcome: 'succeeded', note: 'checked' }),
    ).rejects.toThrow('The bus did not take the events.');
    await expect(
      resolveJob(operator, 'job_review', { outcome: 'succeeded', note: 'checked' }),
    ).rejects.toThrow(JobAlreadyFinishedError);
    expect(events.detailTypes()).toEqual(['job.succeeded']);
  });

  it('puts nothing when an operator requeues a job in review', async () => {
    const { deps, events } = setup();
    deps.store.jobs.set('job_review', job({ id: 'job_review', status: 'needs_review' }));
    await resolveJob({ ...deps, slots: memorySlots(), queue: new MemoryQueue(), ...lines }, 'job_review', {
      outcome: 'requeue',
      note: 'again',
    });
    expect(events.published).toEqual([]);
  });
});
