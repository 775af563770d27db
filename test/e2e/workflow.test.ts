import { SendMessageCommand } from '@aws-sdk/client-sqs';
import { EVENT_DETAILS, EVENT_SOURCE } from '../../config/events';
import { jobIdOf } from '../../lambdas/domain/job';
import { checkSignature } from '../../lambdas/shared/signature';
import {
  pollUntil,
  queueDepth,
  type RunningLocalStack,
  sqsClient,
  startLocalStack,
} from '../../local/harness/local-stack';
import { apiCall, UNTHROTTLED_API } from './support/api';
import { simulatorCall } from './support/simulator';
import { startWebhookReceiver } from './support/webhook-receiver';

/**
 * The media workflow end to end on the local stack: dispatch under the
 * in-flight limit, the Step Functions workflow, the simulated provider and
 * its faults, webhooks both ways, cancel and the dead-letter queue.
 */

jest.setTimeout(120_000);

const KEY = 'workflow-key-7c1e';
const WEBHOOK_SECRET = 'workflow-webhook-secret-0123456789';
const baseEnv = {
  LONGHAUL_API_KEYS: `${KEY}:acme`,
  ...UNTHROTTLED_API,
  SIM_PORT: '0',
  SIM_JOB_MS: '500',
  SIM_PROGRESS_HZ: '10',
  PROVIDER_TIMEOUT_MS: '1000',
  SLOT_WAIT_MAX_SECONDS: '1',
  LONGHAUL_WEBHOOK_SECRET: WEBHOOK_SECRET,
};

interface Ledger {
  readonly submissions: readonly { id: string; idempotencyKey: string; acceptedAt: string }[];
  readonly maxConcurrent: number;
  readonly running: number;
}

function client(stack: RunningLocalStack) {
  const { providerUrl } = stack.endpoints;
  let counter = 0;
  const api = apiCall(() => stack.baseUrl, KEY);
  const sim = simulatorCall(providerUrl);
  return {
    api,
    ledger: (): Promise<Ledger> => sim('/_sim/ledger'),
    fault: (mode: string, count = 1) => sim('/_sim/faults', { mode, count }),
    reset: () => sim('/_sim/reset', {}),
    configure: (config: Record<string, unknown>) => sim('/_sim/config', config),
    submit: async (
      input: Record<string, unknown> = { prompt: 'a lighthouse' },
      extra: Record<string, unknown> = {},
    ) => {
      const created = await api(
        'POST',
        '/v1/jobs',
        { type: 'image.generate', input, ...extra },
        `wf-${Date.now()}-${++counter}`,
      );
      expect(created.status).toBe(202);
      return created.body.id as string;
    },
    /** Polls the job until `done` holds; returns it. */
    until: async (jobId: string, done: (job: any) => boolean, timeoutMs = 30_000) =>
      pollUntil(
        async () => {
          const { body } = await api('GET', `/v1/jobs/${jobId}`);
          return done(body) ? body : undefined;
        },
        { timeoutMs, intervalMs: 100, description: `job ${jobId}` },
      ),
    /** The job's events on the local bus, once its notify step (which puts them) has succeeded. */
    busEvents: async (jobId: string) => {
      await pollUntil(
        async () => {
          const { body } = await api('GET', `/v1/jobs/${jobId}/events`);
          return body.items.some(
            (e: { type: string; step?: string }) => e.type === 'step.succeeded' && e.step === 'notify',
          )
            ? true
            : undefined;
        },
        { timeoutMs: 30_000, intervalMs: 100, description: `job ${jobId} to be notified` },
      );
      const { eventBridgeEndpoint, eventBusName } = stack.endpoints;
      const { events } = (await (await fetch(`${eventBridgeEndpoint}/_events/${eventBusName}`)).json()) as {
        events: { source: string; 'detail-type': string; detail: { jobId?: string } }[];
      };
      return events.filter((event) => event.detail.jobId === jobId);
    },
    settled: (jobId: string, timeoutMs?: number) =>
      pollUntil(
        async () => {
          const { body } = await api('GET', `/v1/jobs/${jobId}`);
          return ['succeeded', 'failed', 'canceled', 'needs_review'].includes(body.status) ? body : undefined;
        },
        { timeoutMs: timeoutMs ?? 30_000, intervalMs: 100, description: `job ${jobId} to settle` },
      ),
  };
}

const queueDepthOf = (stack: RunningLocalStack, queueUrl: string) =>
  queueDepth(sqsClient(stack.endpoints), queueUrl);

describe('with a deduplicating provider and MAX_IN_FLIGHT=3', () => {
  let stack: RunningLocalStack;
  let c: ReturnType<typeof client>;
  beforeAll(async () => {
    stack = await startLocalStack({ env: { ...baseEnv, MAX_IN_FLIGHT: '3', SIM_IDEMPOTENT: '1' } });
    c = client(stack);
  });
  afterAll(async () => {
    await stack?.stop();
  });
  beforeEach(async () => {
    await c.reset();
  });

  it('runs 30 jobs submitted at once, never more than 3 at the provider, one charge each', async () => {
    const ids = await Promise.all(Array.from({ length: 30 }, (_, i) => c.submit({ prompt: `burst ${i}` })));
    const jobs = await Promise.all(ids.map((id) => c.settled(id, 90_000)));

    expect(jobs.map((job) => job.status)).toEqual(ids.map(() => 'succeeded'));
    const ledger = await c.ledger();
    expect(ledger.submissions).toHaveLength(30);
    expect(new Set(ledger.submissions.map((s) => jobIdOf(s.idempotencyKey)))).toEqual(new Set(ids));
    expect(ledger.maxConcurrent).toBeLessThanOrEqual(3);
    expect(ledger.maxConcurrent).toBeGreaterThanOrEqual(2);
    expect(await queueDepthOf(stack, stack.endpoints.deadLetterQueueUrl)).toBe(0);
  });

  it('delivers a finished image with a fetchable PNG and a signed webhook to the client', async () => {
    const receiver = await startWebhookReceiver();
    try {
      const id = await c.submit({ prompt: 'with a webhook' }, { webhookUrl: receiver.url });
      const job = await c.settled(id);

      expect(job).toMatchObject({ status: 'succeeded', progress: 100, attempts: 1 });
      const image = await fetch(job.result.outputUrl);
      expect(image.status).toBe(200);
      expect(Buffer.from(await image.arrayBuffer()).subarray(0, 4)).toEqual(Buffer.from([137, 80, 78, 71]));
      const delivery = await pollUntil(() => receiver.deliveries[0], { description: 'the client webhook' });
      const now = Math.floor(Date.now() / 1000);
      const signature = delivery.headers['longhaul-signature'] as string | undefined;
      const body = delivery.rawBody.toString();
      expect(checkSignature(WEBHOOK_SECRET, signature, body, now, 300)).toBe('valid');
      expect(JSON.parse(body)).toMatchObject({ id, status: 'succeeded' });

      // The notify step records its success once the client has its webhook: read the timeline after it.
      const steps = await pollUntil(
        async () => {
          const timeline = await c.api('GET', `/v1/jobs/${id}/events`);
          const succeeded = timeline.body.items
            .filter((e: { type: string }) => e.type === 'step.succeeded')
            .map((e: { step: string }) => e.step);
          return succeeded.includes('notify') ? succeeded : undefined;
        },
        { description: 'the notify step to succeed' },
      );
      expect(steps).toEqual(['prepare', 'submit', 'await', 'release', 'finalize', 'notify']);
    } finally {
      await receiver.close();
    }
  });

  it('waits out a provider that is unavailable twice, back in its line, then succeeds with one charge', async () => {
    await c.fault('unavailable', 2);
    const job = await c.settled(await c.submit());
    expect(job).toMatchObject({ status: 'succeeded', error: null });
    expect((await c.ledger()).submissions).toHaveLength(1);
    const events: { type: string; step?: string }[] = (await c.api('GET', `/v1/jobs/${job.id}/events`)).body
      .items;
    // Each refusal paused the provider and put the job back in its line: no retry held its slot meanwhile.
    expect(events.filter((e) => e.type === 'provider.paused')).toHaveLength(2);
    expect(events.filter((e) => e.type === 'step.retry' && e.step === 'submit')).toHaveLength(0);
  });

  it('fails a rejected submission with its error code and no charge', async () => {
    await c.fault('reject');
    const job = await c.settled(await c.submit());
    expect(job).toMatchObject({ status: 'failed', error: { code: 'provider_rejected_400' } });
    expect((await c.ledger()).submissions).toHaveLength(0);
  });

  it('fails a job that fails at the provider through the on-failure path', async () => {
    await c.fault('fail-job');
    const job = await c.settled(await c.submit());
    expect(job).toMatchObject({ status: 'failed', error: { code: 'generation_failed' } });
    expect((await c.ledger()).submissions).toHaveLength(1);
    const events = (await c.api('GET', `/v1/jobs/${job.id}/events`)).body.items;
    expect(
      events.some((e: { type: string; step?: string }) => e.type === 'step.succeeded' && e.step === 'fail'),
    ).toBe(true);
  });

  it('puts exactly one event of the documented schema on the bus for a job that succeeded and one that failed', async () => {
    const succeeded = await c.settled(await c.submit({ prompt: 'an event' }));
    await c.fault('fail-job');
    const failed = await c.settled(await c.submit({ prompt: 'a failing event' }));
    expect([succeeded.status, failed.status]).toEqual(['succeeded', 'failed']);

    const [success] = await c.busEvents(succeeded.id);
    const [failure] = await c.busEvents(failed.id);
    expect(await c.busEvents(succeeded.id)).toHaveLength(1);
    expect(await c.busEvents(failed.id)).toHaveLength(1);
    expect(success).toMatchObject({ source: EVENT_SOURCE, 'detail-type': 'job.succeeded' });
    expect(EVENT_DETAILS['job.succeeded'].parse(success?.detail)).toMatchObject({
      jobId: succeeded.id,
      tenantId: 'acme',
      jobType: 'image.generate',
      status: 'succeeded',
      finishedAt: succeeded.finishedAt,
    });
    expect(failure).toMatchObject({ source: EVENT_SOURCE, 'detail-type': 'job.failed' });
    expect(EVENT_DETAILS['job.failed'].parse(failure?.detail)).toMatchObject({
      jobId: failed.id,
      status: 'failed',
      error: { code: 'generation_failed' },
    });
  });

  it.each(['accept-then-drop', 'timeout'])(
    'recovers from %s by resending the same key: succeeded, one charge',
    async (mode) => {
      await c.fault(mode);
      const job = await c.settled(await c.submit());
      expect(job.status).toBe('succeeded');
      expect((await c.ledger()).submissions).toHaveLength(1);
    },
  );

  it('cancels a running job: canceled, stopped at the provider, and the next job gets its slot', async () => {
    await c.configure({ jobMs: 60_000 });
    const running = await Promise.all([c.submit(), c.submit(), c.submit()]);
    await Promise.all(running.map((id) => c.until(id, (job) => job.status === 'running')));
    await pollUntil(async () => (await c.ledger()).running === 3, {
      description: 'three jobs at the provider',
    });
    const waiting = await c.submit();

    const canceled = await c.api('POST', `/v1/jobs/${running[0]}/cancel`);
    expect(canceled).toMatchObject({ status: 202, body: { status: 'canceled' } });

    await c.until(waiting, (job) => job.status === 'running', 20_000);
    // Running here means its workflow started; its submission reaches the provider a moment later.
    const ledger = await pollUntil(
      async () => {
        const current = await c.ledger();
        return current.running === 3 ? current : undefined;
      },
      { description: 'the waiting job to be at the provider' },
    );
    expect(ledger.maxConcurrent).toBe(3);
    expect((await c.api('POST', `/v1/jobs/${running[0]}/cancel`)).body.status).toBe('canceled');
    for (const id of [...running.slice(1), waiting]) await c.api('POST', `/v1/jobs/${id}/cancel`);
    await pollUntil(async () => (await c.ledger()).running === 0, { description: 'the provider to be idle' });
  });
});

describe('with a provider that cannot deduplicate', () => {
  let stack: RunningLocalStack;
  let c: ReturnType<typeof client>;
  beforeAll(async () => {
    stack = await startLocalStack({ env: { ...baseEnv, MAX_IN_FLIGHT: '2', SIM_IDEMPOTENT: '0' } });
    c = client(stack);
  });
  afterAll(async () => {
    await stack?.stop();
  });
  beforeEach(async () => {
    await c.reset();
  });

  it.each(['accept-then-drop', 'timeout'])(
    'sends a job to review after %s instead of submitting again: one charge',
    async (mode) => {
      await c.fault(mode);
      const job = await c.settled(await c.submit());
      expect(job).toMatchObject({ status: 'needs_review', error: { code: 'ambiguous_submission' } });
      expect((await c.ledger()).submissions).toHaveLength(1);
    },
  );
});

describe('the dead-letter queue', () => {
  let stack: RunningLocalStack;
  let c: ReturnType<typeof client>;
  beforeAll(async () => {
    // A one-second consumer timeout makes the visibility timeout six seconds, so five receives take half a minute.
    stack = await startLocalStack({
      env: { ...baseEnv, MAX_IN_FLIGHT: '1', SIM_JOB_MS: '700', DISPATCH_TIMEOUT_SECONDS: '1' },
    });
    c = client(stack);
  });
  afterAll(async () => {
    await stack?.stop();
  });

  it('takes a message that always fails after 5 receives, but never a job that waits long for a slot', async () => {
    await sqsClient(stack.endpoints).send(
      new SendMessageCommand({ QueueUrl: stack.endpoints.jobQueueUrl, MessageBody: '{"not":"a job"}' }),
    );
    // With one slot and 0.7 s jobs, the last of 10 jobs waits several seconds and looks for a slot many times.
    const ids = await Promise.all(Array.from({ length: 10 }, (_, i) => c.submit({ prompt: `backlog ${i}` })));
    const jobs = await Promise.all(ids.map((id) => c.settled(id, 90_000)));
    expect(jobs.map((job) => job.status)).toEqual(ids.map(() => 'succeeded'));
    expect((await c.ledger()).maxConcurrent).toBe(1);

    await pollUntil(async () => (await queueDepthOf(stack, stack.endpoints.deadLetterQueueUrl)) === 1, {
      timeoutMs: 60_000,
      intervalMs: 500,
      description: 'the poison message in the dead-letter queue',
    });
    expect(await queueDepthOf(stack, stack.endpoints.jobQueueUrl)).toBe(0);
  });
});

describe('a released slot', () => {
  let stack: RunningLocalStack;
  let c: ReturnType<typeof client>;
  beforeAll(async () => {
    // Waiting jobs back off for up to 15 minutes: only the hand-off can start them promptly.
    stack = await startLocalStack({
      env: { ...baseEnv, MAX_IN_FLIGHT: '1', SIM_JOB_MS: '3000', SLOT_WAIT_MAX_SECONDS: '900' },
    });
    c = client(stack);
  });
  afterAll(async () => {
    await stack?.stop();
  });

  it('goes straight to the job that waited longest, in the order they came', async () => {
    const first = await c.submit({ prompt: 'first' });
    await c.until(first, (job) => job.status === 'running');
    const second = await c.submit({ prompt: 'second' });
    const third = await c.submit({ prompt: 'third' });

    const jobs = await Promise.all([first, second, third].map((id) => c.settled(id, 60_000)));
    expect(jobs.map((job) => job.status)).toEqual(['succeeded', 'succeeded', 'succeeded']);
    expect((await c.ledger()).maxConcurrent).toBe(1);

    const events = async (id: string) =>
      (await c.api('GET', `/v1/jobs/${id}/events`)).body.items as {
        at: string;
        type: string;
        detail?: string;
      }[];
    const at = (items: { at: string; type: string }[], type: string) =>
      Date.parse(items.find((item) => item.type === type)?.at ?? 'missing');
    const [ofFirst, ofSecond, ofThird] = await Promise.all([events(first), events(second), events(third)]);
    // Each waiting job took the slot the one before it released, in order, and started within moments.
    // A job's own backed-off message may happen to arrive just as the slot frees and take it first
    // (that is as prompt); the hand-off gives the slot in the other case, at least once here.
    expect(ofFirst.map((item) => item.type)).not.toContain('slot.received');
    expect(at(ofSecond, 'job.dispatched')).toBeGreaterThanOrEqual(at(ofFirst, 'slot.released'));
    expect(at(ofThird, 'job.dispatched')).toBeGreaterThanOrEqual(at(ofSecond, 'slot.released'));
    const handedOn = [at(ofSecond, 'slot.received'), at(ofThird, 'slot.received')].filter(Number.isFinite);
    expect(handedOn.length).toBeGreaterThanOrEqual(1);
    expect(at(ofSecond, 'job.dispatched') - at(ofFirst, 'slot.released')).toBeLessThan(2000);
    expect(at(ofThird, 'job.dispatched') - at(ofSecond, 'slot.released')).toBeLessThan(2000);
  });
});
