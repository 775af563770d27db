import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  EventBridgeClient,
  EventBridgeServiceException,
  PutEventsCommand,
  type PutEventsRequestEntry,
} from '@aws-sdk/client-eventbridge';
import { PUT_EVENTS_LIMITS, putEventsEntrySize } from '../../config/events';
import { type EventBridgeEmulator, startEventBridgeEmulator } from '../../local/emulators/eventbridge';

/**
 * The local EventBridge (local/emulators/eventbridge.ts) as the real SDK
 * client sees it: PutEvents within the documented limits, refused past them,
 * and every event put kept in a log that outlives the emulator.
 */

let dataDir: string;
let emulator: EventBridgeEmulator;
let client: EventBridgeClient;

const start = () =>
  startEventBridgeEmulator({
    host: '127.0.0.1',
    region: 'us-east-1',
    accountId: '000000000000',
    buses: ['Longhaul'],
    dataDir,
  });

beforeEach(async () => {
  dataDir = mkdtempSync(join(tmpdir(), 'longhaul-eventbridge-'));
  emulator = await start();
  client = new EventBridgeClient({
    region: 'us-east-1',
    endpoint: emulator.endpoint,
    credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
    maxAttempts: 1,
  });
});

afterEach(async () => {
  client.destroy();
  await emulator.stop();
  rmSync(dataDir, { recursive: true, force: true });
});

const entry = (overrides: Partial<PutEventsRequestEntry> = {}): PutEventsRequestEntry => ({
  EventBusName: 'Longhaul',
  Source: 'longhaul',
  DetailType: 'job.succeeded',
  Detail: JSON.stringify({ jobId: 'job_1' }),
  ...overrides,
});
const put = (entries: PutEventsRequestEntry[]) => client.send(new PutEventsCommand({ Entries: entries }));

/** What the SDK raises for a refused request: its name and message. */
async function refusal(act: Promise<unknown>): Promise<{ name: string; message: string }> {
  try {
    await act;
  } catch (error) {
    expect(error).toBeInstanceOf(EventBridgeServiceException);
    return { name: (error as Error).name, message: (error as Error).message };
  }
  throw new Error('expected a refusal, got a success');
}

it('puts events and keeps them, as a target would receive them, in a log that outlives the emulator', async () => {
  const answer = await put([
    entry(),
    entry({ Detail: '{"jobId":"job_2"}', Time: new Date('2026-12-06T05:00:00Z') }),
  ]);
  expect(answer.FailedEntryCount).toBe(0);
  expect(answer.Entries?.map((result) => typeof result.EventId)).toEqual(['string', 'string']);
  await emulator.stop();
  emulator = await start();
  const events = emulator.events('Longhaul');
  expect(events.map((event) => event.detail)).toEqual([{ jobId: 'job_1' }, { jobId: 'job_2' }]);
  expect(events[1]).toMatchObject({
    version: '0',
    id: answer.Entries?.[1]?.EventId,
    source: 'longhaul',
    'detail-type': 'job.succeeded',
    account: '000000000000',
    region: 'us-east-1',
    time: '2026-12-06T05:00:00Z',
    resources: [],
  });
  const served = (await (await fetch(`${emulator.endpoint}/_events/Longhaul`)).json()) as {
    events: unknown[];
  };
  expect(served.events).toEqual(events);
});

it('takes 10 entries a request and refuses 11, putting none of them', async () => {
  await expect(put(Array.from({ length: 10 }, () => entry()))).resolves.toMatchObject({
    FailedEntryCount: 0,
  });
  await expect(refusal(put(Array.from({ length: 11 }, () => entry())))).resolves.toMatchObject({
    name: 'ValidationException',
  });
  await expect(refusal(put([]))).resolves.toMatchObject({ name: 'ValidationException' });
  expect(emulator.events('Longhaul')).toHaveLength(10);
});

it('takes 256 KB of entries a request, counted as EventBridge counts them, and refuses a byte more', async () => {
  const sized = (bytes: number) => {
    const bare = entry({ Detail: '{"p":""}' });
    return entry({ Detail: `{"p":"${'x'.repeat(bytes - putEventsEntrySize(bare))}"}` });
  };
  const half = PUT_EVENTS_LIMITS.requestEntriesBytes / 2;
  const exactly = [sized(half), sized(half)];
  expect(exactly.reduce((sum, e) => sum + putEventsEntrySize(e), 0)).toBe(
    PUT_EVENTS_LIMITS.requestEntriesBytes,
  );
  await expect(put(exactly)).resolves.toMatchObject({ FailedEntryCount: 0 });
  await expect(refusal(put([sized(half), sized(half + 1)]))).resolves.toMatchObject({
    name: 'ValidationException',
    message: expect.stringContaining('over the limit'),
  });
  await expect(refusal(put([sized(PUT_EVENTS_LIMITS.requestEntriesBytes + 1)]))).resolves.toMatchObject({
    name: 'ValidationException',
  });
  expect(emulator.events('Longhaul')).toHaveLength(2);
});

it('refuses a bus the template does not declare, by name or ARN, and the default bus', async () => {
  await expect(refusal(put([entry({ EventBusName: 'Other' })]))).resolves.toEqual({
    name: 'ResourceNotFoundException',
    message: 'Event bus Other does not exist.',
  });
  await expect(refusal(put([entry({ EventBusName: undefined })]))).resolves.toMatchObject({
    name: 'ResourceNotFoundException',
  });
  await expect(
    put([entry({ EventBusName: 'arn:aws:events:us-east-1:000000000000:event-bus/Longhaul' })]),
  ).resolves.toMatchObject({ FailedEntryCount: 0 });
  expect(emulator.events('Longhaul')).toHaveLength(1);
});

it('fails, entry by entry, a detail that is no JSON object, a reserved source and an overlong detail-type', async () => {
  const answer = await put([
    entry(),
    entry({ Detail: 'not json' }),
    entry({ Detail: '[1]' }),
    entry({ Source: 'aws.events' }),
    entry({ DetailType: 'x'.repeat(PUT_EVENTS_LIMITS.detailTypeLength + 1) }),
  ]);
  expect(answer.FailedEntryCount).toBe(4);
  expect(answer.Entries?.map((result) => result.ErrorCode ?? 'put')).toEqual([
    'put',
    'MalformedDetail',
    'MalformedDetail',
    'NotAuthorizedForSourceException',
    'InvalidArgument',
  ]);
  expect(emulator.events('Longhaul')).toHaveLength(1);
});
