import { EventBridgeClient, PutEventsCommand } from '@aws-sdk/client-eventbridge';
import { mockClient } from 'aws-sdk-client-mock';
import { type LifecycleEvent, PUT_EVENTS_LIMITS, putEventsEntrySize } from '../../config/events';
import { batchesOf, EventBridgeEvents } from '../../lambdas/adapters/eventbridge-events';

const events = mockClient(EventBridgeClient);
const BUS = 'Longhaul';
const pauses: number[] = [];
const publisher = () =>
  new EventBridgeEvents(new EventBridgeClient({ region: 'us-east-1' }), BUS, async (ms) => {
    pauses.push(ms);
  });

const calls = () => events.commandCalls(PutEventsCommand).map((call) => call.args[0].input.Entries ?? []);

/** A job.succeeded event whose detail is about `padding` bytes longer (in its idempotency key). */
function succeeded(n: number, padding = 0): LifecycleEvent {
  return {
    detailType: 'job.succeeded',
    detail: {
      schemaVersion: 1,
      eventId: `evt_${String(n).padStart(22, '0')}`,
      occurredAt: '2026-12-06T05:00:00.000Z',
      tenantId: 'acme',
      jobId: `job_${n}`,
      jobType: 'image.generate',
      idempotencyKey: `k${n}${'x'.repeat(padding)}`,
      createdAt: '2026-12-06T04:59:00.000Z',
      status: 'succeeded',
      finishedAt: '2026-12-06T05:00:00.000Z',
    },
  };
}

beforeEach(() => {
  events.reset();
  pauses.length = 0;
  events.on(PutEventsCommand).callsFake((input: { Entries: unknown[] }) => ({
    FailedEntryCount: 0,
    Entries: input.Entries.map((_, index) => ({ EventId: `eb-${index}` })),
  }));
});

it('puts each event on the bus with the source, its detail-type, its detail as JSON and when it happened', async () => {
  const event = succeeded(1);
  await publisher().publish([event]);
  expect(calls()).toEqual([
    [
      {
        EventBusName: BUS,
        Source: 'longhaul',
        DetailType: 'job.succeeded',
        Detail: JSON.stringify(event.detail),
        Time: new Date('2026-12-06T05:00:00.000Z'),
      },
    ],
  ]);
});

it('puts at most 10 entries a request, in order', async () => {
  await publisher().publish(Array.from({ length: 23 }, (_, n) => succeeded(n)));
  const sizes = calls().map((entries) => entries.length);
  expect(sizes).toEqual([10, 10, 3]);
  expect(
    calls()
      .flat()
      .map((entry) => JSON.parse(entry.Detail ?? '{}').jobId),
  ).toEqual(Array.from({ length: 23 }, (_, n) => `job_${n}`));
});

it('cuts requests before their entries pass 256 KB, counted as EventBridge counts them', async () => {
  // Three events of about 100 KB: two fit in a request, the third goes in the next.
  const big = [1, 2, 3].map((n) => succeeded(n, 100_000));
  await publisher().publish(big);
  expect(calls().map((entries) => entries.length)).toEqual([2, 1]);
  for (const entries of calls()) {
    const bytes = entries.reduce((sum, entry) => sum + putEventsEntrySize(entry), 0);
    expect(bytes).toBeLessThanOrEqual(PUT_EVENTS_LIMITS.requestEntriesBytes);
  }
});

it('refuses an event bigger than a request may hold, and sends nothing', async () => {
  await expect(publisher().publish([succeeded(1), succeeded(2, 270_000)])).rejects.toMatchObject({
    name: 'EventsNotPut',
  });
  expect(calls()).toEqual([]);
});

it('tries again only the entries EventBridge failed, after a pause that doubles', async () => {
  let answer = 0;
  events.on(PutEventsCommand).callsFake((input: { Entries: unknown[] }) => {
    answer++;
    // The first answer fails the 2nd and 3rd entries, the second the (new) 1st, the third none.
    const failing = answer === 1 ? [1, 2] : answer === 2 ? [0] : [];
    return {
      FailedEntryCount: failing.length,
      Entries: input.Entries.map((_, index) =>
        failing.includes(index)
          ? { ErrorCode: 'ThrottlingException', ErrorMessage: 'slow down' }
          : { EventId: `eb-${answer}-${index}` },
      ),
    };
  });
  await publisher().publish([succeeded(1), succeeded(2), succeeded(3)]);
  expect(calls().map((entries) => entries.map((entry) => JSON.parse(entry.Detail ?? '{}').jobId))).toEqual([
    ['job_1', 'job_2', 'job_3'],
    ['job_2', 'job_3'],
    ['job_2'],
  ]);
  expect(pauses).toEqual([100, 200]);
});

it('throws when entries keep failing, after three tries', async () => {
  events.on(PutEventsCommand).resolves({
    FailedEntryCount: 1,
    Entries: [{ ErrorCode: 'InternalFailure', ErrorMessage: 'try later' }],
  });
  await expect(publisher().publish([succeeded(1)])).rejects.toThrow(
    'EventBridge did not take 1 of 1 events: InternalFailure try later',
  );
  expect(calls()).toHaveLength(3);
});

it('throws at once for an entry a later try cannot fix', async () => {
  events.on(PutEventsCommand).resolves({
    FailedEntryCount: 1,
    Entries: [{ EventId: 'eb-0' }, { ErrorCode: 'MalformedDetail', ErrorMessage: 'Detail is malformed.' }],
  });
  await expect(publisher().publish([succeeded(1), succeeded(2)])).rejects.toThrow(/MalformedDetail/);
  expect(calls()).toHaveLength(1);
});

it('propagates a refused request (no bus, no permission) for the caller to retry', async () => {
  events.on(PutEventsCommand).rejects(
    Object.assign(new Error('Event bus Longhaul does not exist.'), {
      name: 'ResourceNotFoundException',
    }),
  );
  await expect(publisher().publish([succeeded(1)])).rejects.toMatchObject({
    name: 'ResourceNotFoundException',
  });
});

it('batches nothing for nothing', () => {
  expect(batchesOf([])).toEqual([]);
});
