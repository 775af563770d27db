import { jobTypeModule } from '../../config/job-types';
import { checkFollowUps, type FollowUp, type JobTypeModule } from '../../config/job-types/job-type';
import { FOLLOW_UP_EVENTS, followUpKeyOf, startFollowUps } from '../../lambdas/domain/follow-ups';
import { deriveJobId } from '../../lambdas/domain/idempotency';
import { type Job, newJob } from '../../lambdas/domain/job';
import { MemoryTimeline, memoryIntake } from './support/memory-ports';

const clock = new Date('2026-12-06T05:00:00.000Z');

/** image.generate, given follow-ups for one test: no job type declares any. */
const imageGenerate = jobTypeModule('image.generate') as { followUps?: readonly FollowUp[] };
const caption: FollowUp = {
  name: 'variation',
  jobType: 'image.generate',
  input: ({ input, result }) => ({
    prompt: `a variation of ${String(input.prompt)} (${String(result.outputKey)})`,
  }),
};
afterEach(() => {
  delete imageGenerate.followUps;
});

function setup() {
  const intake = memoryIntake(() => clock, {
    'image.generate': 'longhaul-http',
    'audio.transcribe': 'longhaul-http',
  });
  const timeline = new MemoryTimeline();
  const parent: Job = {
    ...newJob(
      {
        id: 'job_pppppppppppppppppppppppppp',
        tenantId: 'acme',
        type: 'image.generate',
        priority: 'batch',
        input: { prompt: 'a cat' },
        idempotencyKey: 'k1',
        fingerprint: 'f1',
        webhookUrl: 'https://hooks.example/x',
      },
      clock,
    ),
    status: 'succeeded',
    result: { outputKey: 'outputs/acme/job_p/image.png' },
  };
  intake.deps.store.jobs.set(parent.id, parent);
  const deps = { intake: intake.deps, timeline, now: () => clock };
  return { deps, parent, store: intake.deps.store, queue: intake.deps.queue, caps: intake.caps, timeline };
}

describe('startFollowUps', () => {
  it("submits each follow-up once, in the parent's tenant, under a key derived from the parent, even when run twice", async () => {
    imageGenerate.followUps = [caption];
    const { deps, parent, store, queue, timeline } = setup();
    await startFollowUps(deps, parent);
    await startFollowUps(deps, parent);
    const key = followUpKeyOf(parent.id, 'variation');
    expect(key).toBe('follow-up:job_pppppppppppppppppppppppppp:variation');
    const followUps = [...store.jobs.values()].filter((job) => job.id !== parent.id);
    expect(followUps).toEqual([
      expect.objectContaining({
        id: deriveJobId('acme', key),
        tenantId: 'acme',
        type: 'image.generate',
        status: 'queued',
        idempotencyKey: key,
        priority: 'batch',
        webhookUrl: 'https://hooks.example/x',
        input: { prompt: 'a variation of a cat (outputs/acme/job_p/image.png)' },
      }),
    ]);
    expect(queue.messages.map((message) => message.jobId)).toEqual([followUps[0]?.id]);
    expect(timeline.events.get(parent.id)).toEqual([
      {
        at: clock.toISOString(),
        type: FOLLOW_UP_EVENTS.submitted,
        detail: `variation as ${followUps[0]?.id}`,
      },
    ]);
  });

  it('starts nothing for a job that did not succeed, or whose type declares none', async () => {
    const { deps, parent, store } = setup();
    await startFollowUps(deps, parent);
    imageGenerate.followUps = [caption];
    await startFollowUps(deps, { ...parent, status: 'failed' });
    expect(store.jobs.size).toBe(1);
  });

  it('records, and does not throw for, a follow-up refused by a full queue or an input that does not fit', async () => {
    imageGenerate.followUps = [
      caption,
      { name: 'broken', jobType: 'image.generate', input: () => ({ prompt: '' }) },
    ];
    const { deps, parent, store, caps, timeline } = setup();
    caps.set('acme', { tenant: 'acme', weight: 1, maxQueued: 0 });
    await startFollowUps(deps, parent);
    expect(store.jobs.size).toBe(1);
    expect(timeline.events.get(parent.id)?.map((event) => `${event.type} ${event.detail}`)).toEqual([
      `${FOLLOW_UP_EVENTS.refused} variation: the tenant's queue is full`,
      `${FOLLOW_UP_EVENTS.refused} broken: its input does not fit image.generate`,
    ]);
  });

  it('makes nothing more, and waits for nothing, when an earlier run stored the follow-up but did not enqueue it', async () => {
    imageGenerate.followUps = [caption];
    const { deps, parent, store, queue } = setup();
    queue.failing = true;
    await startFollowUps(deps, parent);
    queue.failing = false;
    // The retry comes while the first run's submission still counts as in progress.
    await startFollowUps(deps, parent);
    expect([...store.jobs.values()].filter((job) => job.id !== parent.id)).toEqual([
      expect.objectContaining({ idempotencyKey: followUpKeyOf(parent.id, 'variation'), status: 'queued' }),
    ]);
  });

  it('throws what intake could not do for now, for the step to retry', async () => {
    imageGenerate.followUps = [caption];
    const { deps, parent } = setup();
    deps.intake.store.create = async () => {
      throw new Error('table unavailable');
    };
    await expect(startFollowUps(deps, parent)).rejects.toThrow('table unavailable');
  });
});

describe('checkFollowUps', () => {
  const type = (name: string, followUps: FollowUp[] = [], internal = false) =>
    ({ name, followUps, ...(internal ? { internal: true } : {}) }) as unknown as JobTypeModule;
  const to = (jobType: string, name = 'next'): FollowUp => ({ name, jobType, input: () => ({}) });

  it('accepts follow-ups that end', () => {
    expect(() => checkFollowUps([type('a', [to('b')]), type('b', [to('c')]), type('c')])).not.toThrow();
  });

  it.each([
    ['a bad name', [type('a', [to('b', 'Not OK')]), type('b')], /a name is 1..63 of a-z/],
    ['a name used twice', [type('a', [to('b'), to('b')]), type('b')], /the name is used twice/],
    ['an unknown type', [type('a', [to('zzz')])], /"zzz" is no job type clients may submit/],
    [
      'an internal type',
      [type('a', [to('b')]), type('b', [], true)],
      /"b" is no job type clients may submit/,
    ],
    ['a cycle', [type('a', [to('b')]), type('b', [to('a')])], /follow-ups start jobs forever: a → b → a/],
    ['a type following itself', [type('a', [to('a')])], /a → a/],
  ] as const)('refuses %s', (_, modules, message) => {
    expect(() => checkFollowUps(modules)).toThrow(message);
  });
});
