import { SendMessageBatchCommand } from '@aws-sdk/client-sqs';
import {
  pollUntil,
  queueDepth,
  type RunningLocalStack,
  sqsClient,
  startLocalStack,
} from '../../local/harness/local-stack';
import { apiCall, UNTHROTTLED_API } from './support/api';
import { simulatorCall } from './support/simulator';

/**
 * The hand-off lane under a backlog: with one slot and waiting jobs that back
 * off for up to 15 minutes, the jobs queue is flooded with thousands of visible
 * messages (as a long peak leaves it). A slot handed to the oldest waiting job
 * must start that job within moments, not once the dispatcher has worked
 * through the flood.
 *
 * The flood names the job that holds the slot, so the dispatcher drops each
 * message after reading it: a message of a waiting job could take a freed
 * slot itself in the moment between its release and the hand-off, and then no
 * hand-off would be measured. Messages of waiting jobs cost the dispatcher
 * more each, so a real backlog of the same length drains more slowly still.
 */

jest.setTimeout(60_000);

const KEY = 'hand-off-key-5d2a';
/** Visible messages of waiting jobs put ahead of every hand-off. */
const BACKLOG = 6000;
const WAITING_JOBS = 4;
/** The longest a job handed a slot may take to start; the dispatcher needs far longer for the backlog. */
const HAND_OFF_START_MS = 1500;

let stack: RunningLocalStack;

beforeAll(async () => {
  stack = await startLocalStack({
    env: {
      LONGHAUL_API_KEYS: `${KEY}:acme`,
      ...UNTHROTTLED_API,
      MAX_IN_FLIGHT: '1',
      // Long enough for the waiting jobs and the backlog to be in place before the first job ends.
      SIM_JOB_MS: '6000',
      SIM_PROGRESS_HZ: '1',
      SLOT_WAIT_MAX_SECONDS: '900',
    },
  });
});

afterAll(async () => {
  await stack?.stop();
});

const api = apiCall(() => stack.baseUrl, KEY);

const submit = async (name: string): Promise<string> => {
  const created = await api(
    'POST',
    '/v1/jobs',
    { type: 'image.generate', input: { prompt: name } },
    `lane-${name.replaceAll(' ', '-')}`,
  );
  expect(created.status).toBe(202);
  return created.body.id as string;
};

const status = async (id: string): Promise<string> => (await api('GET', `/v1/jobs/${id}`)).body.status;

const events = async (id: string) =>
  (await api('GET', `/v1/jobs/${id}/events`)).body.items as { at: string; type: string }[];

const at = (items: readonly { at: string; type: string }[], type: string): number | undefined => {
  const found = items.find((item) => item.type === type);
  return found === undefined ? undefined : Date.parse(found.at);
};

it('starts a job handed a freed slot at once, however many waiting jobs fill the jobs queue', async () => {
  const sqs = sqsClient(stack.endpoints);
  const first = await submit('first');
  await pollUntil(async () => (await status(first)) === 'running', {
    timeoutMs: 10_000,
    intervalMs: 50,
    description: 'the first job to run',
  });
  const waiting: string[] = [];
  for (let i = 0; i < WAITING_JOBS; i++) waiting.push(await submit(`waiting ${i}`));
  // Later jobs are short, so the slot changes hands several times while the backlog lasts.
  await simulatorCall(stack.endpoints.providerUrl)('/_sim/config', { jobMs: 500 });

  const batches = Array.from({ length: BACKLOG / 10 }, () =>
    Array.from({ length: 10 }, (_, i) => ({
      Id: String(i),
      MessageBody: JSON.stringify({ jobId: first, deferrals: 10 }),
    })),
  );
  for (let i = 0; i < batches.length; i += 20) {
    await Promise.all(
      batches
        .slice(i, i + 20)
        .map((entries) =>
          sqs.send(new SendMessageBatchCommand({ QueueUrl: stack.endpoints.jobQueueUrl, Entries: entries })),
        ),
    );
  }
  const backlogInPlace = Date.now();
  expect(await status(first)).toBe('running');

  // The moment the first job's slot is freed and handed on: the flood must still be queued then.
  await pollUntil(async () => (await status(first)) !== 'running' || undefined, {
    timeoutMs: 30_000,
    intervalMs: 50,
    description: 'the first job to finish',
  });
  const backlogLeft = await queueDepth(sqs, stack.endpoints.jobQueueUrl);
  await pollUntil(
    async () => (await Promise.all(waiting.map(status))).every((s) => s === 'succeeded') || undefined,
    { timeoutMs: 30_000, intervalMs: 200, description: 'every waiting job to succeed' },
  );

  // Every job that received a slot by hand-off after the flood started within moments of receiving it.
  const handOffs = (await Promise.all(waiting.map(events)))
    .map((items) => ({ received: at(items, 'slot.received'), started: at(items, 'job.dispatched') }))
    .filter(
      (handOff): handOff is { received: number; started: number } =>
        handOff.received !== undefined && handOff.received >= backlogInPlace,
    );
  const latencies = handOffs.map((handOff) => handOff.started - handOff.received);
  console.log(
    `hand-off to start under a backlog of ${BACKLOG}: ${latencies.join(', ')} ms; ${backlogLeft} messages queued when the first slot was handed on`,
  );
  expect(handOffs.length).toBeGreaterThanOrEqual(2);
  for (const latency of latencies) expect(latency).toBeLessThan(HAND_OFF_START_MS);
  // The first hand-off happened with the flood still ahead of it in the jobs queue.
  expect(backlogLeft).toBeGreaterThan(0);
});
