import { createHmac } from 'node:crypto';
import { SendMessageBatchCommand } from '@aws-sdk/client-sqs';
import { Webhook } from 'standardwebhooks';
import { PROVIDERS } from '../../config/providers';
import { parseLocalConfig } from '../../local/config';
import {
  OWN_PROVIDER_FOR_EVERY_JOB_TYPE,
  pollUntil,
  queueDepth,
  type RunningLocalStack,
  sqsClient,
  startLocalStack,
} from '../../local/harness/local-stack';
import { flacHeaderOf } from '../../local/harness/test-audio';
import { DEFAULT_REPLICATE_WEBHOOK_SECRET } from '../../local/provider-sim/defaults';
import type { Usage } from '../../local/usage';
import { UNTHROTTLED_API } from './support/api';
import { simulatorCall } from './support/simulator';

/**
 * The shipped job types on the providers they name, as `npm start` runs them:
 * image.generate on Replicate, audio.transcribe on Deepgram, through the
 * simulator's dialects of their wire formats (driven by each provider's
 * official SDK inside the adapters), each provider under its own limit.
 */

jest.setTimeout(120_000);

const KEY = 'providers-key-5e1f';
const ADMIN_KEY = 'providers-admin-key-7c3d';
const env = {
  ...OWN_PROVIDER_FOR_EVERY_JOB_TYPE,
  LONGHAUL_API_KEYS: `${KEY}:acme`,
  LONGHAUL_ADMIN_KEY: ADMIN_KEY,
  ...UNTHROTTLED_API,
  SIM_JOB_MS: '1500',
  SIM_PROGRESS_HZ: '10',
  PROVIDER_TIMEOUT_MS: '1000',
  SLOT_WAIT_MAX_SECONDS: '1',
  MAX_IN_FLIGHT_REPLICATE: '2',
  MAX_IN_FLIGHT_DEEPGRAM: '1',
};

interface ProviderLedger {
  readonly submissions: readonly { id: string }[];
  readonly maxConcurrent: number;
  readonly running: number;
}

/** Messages put in Replicate's queue ahead of a transcription; the dispatcher needs seconds to drain them. */
const BACKLOG = 3000;
/**
 * The longest a transcription may take from submission to dispatch, whatever Replicate's queue holds: a
 * start on a machine busy with other suites, not a wait behind the backlog (which the backlog still there
 * at its dispatch proves); a loaded run once took 1.6 s.
 */
const TRANSCRIPTION_START_MS = 3000;

let stack: RunningLocalStack;
let counter = 0;

/** Requests this file sent to the REST API. */
let apiRequests = 0;

async function api(method: string, path: string, body?: unknown, headers: Record<string, string> = {}) {
  apiRequests += 1;
  const response = await fetch(`${stack.baseUrl}${path}`, {
    method,
    headers: { 'x-api-key': KEY, ...headers },
    body: body === undefined ? undefined : body instanceof FormData ? body : JSON.stringify(body),
  });
  const text = await response.text();
  if (response.status >= 500) throw new Error(`${method} ${path} answered ${response.status}: ${text}`);
  return { status: response.status, body: text ? JSON.parse(text) : undefined };
}

const sim = () => simulatorCall(stack.endpoints.providerUrl);
/** Where each dialect lives on the simulator. */
const dialects = parseLocalConfig({}).provider.dialects;

/** The stack's metered usage: Lambda invocations by function, and REST API requests. */
async function usage(): Promise<Usage> {
  const response = await fetch(`${stack.baseUrl}/v1/admin/metrics`, { headers: { 'x-api-key': ADMIN_KEY } });
  return ((await response.json()) as { usage: Usage }).usage;
}
const ledger = async (provider: 'replicate' | 'deepgram'): Promise<ProviderLedger> =>
  (await sim()('/_sim/ledger')).byProvider?.[provider] ?? { submissions: [], maxConcurrent: 0, running: 0 };

async function submitImage(prompt: string): Promise<string> {
  const created = await api(
    'POST',
    '/v1/jobs',
    { type: 'image.generate', input: { prompt } },
    { 'content-type': 'application/json', 'idempotency-key': `img-${Date.now()}-${++counter}` },
  );
  expect(created.status).toBe(202);
  return created.body.id;
}

/** A transcription of an uploaded file: Deepgram fetches it through a presigned URL of the input bucket. */
async function submitAudio(name: string): Promise<string> {
  const form = new FormData();
  form.set('type', 'audio.transcribe');
  form.set('input', JSON.stringify({ language: 'en' }));
  form.set('file', new Blob([Buffer.from(`RIFF${name}`)], { type: 'audio/wav' }), `${name}.wav`);
  const created = await api('POST', '/v1/jobs', form, {
    'idempotency-key': `aud-${Date.now()}-${++counter}`,
  });
  expect(created.status).toBe(202);
  return created.body.id;
}

const settled = (id: string, timeoutMs = 60_000) =>
  pollUntil(
    async () => {
      const { body } = await api('GET', `/v1/jobs/${id}`);
      return ['succeeded', 'failed', 'canceled', 'needs_review'].includes(body.status) ? body : undefined;
    },
    { timeoutMs, intervalMs: 100, description: `job ${id} to settle` },
  );

beforeAll(async () => {
  stack = await startLocalStack({ env, readyTimeoutMs: 60_000 });
});
afterAll(async () => {
  await stack?.stop();
});
beforeEach(async () => {
  await sim()('/_sim/reset', {});
});

describe('the shipped job types on their own providers', () => {
  it('generates an image on Replicate, kept in the output bucket before Replicate deletes it', async () => {
    const before = await usage();
    const sent = apiRequests;
    const id = await submitImage('a lighthouse at dusk');
    const job = await settled(id);

    expect(job).toMatchObject({ status: 'succeeded', provider: 'replicate', progress: 100 });
    expect(job.result.contentType).toBe('image/png');
    // The copy in Longhaul's output bucket, not the provider's expiring URL.
    expect(job.result.outputUrl.startsWith(stack.endpoints.providerUrl)).toBe(false);
    const image = Buffer.from(await (await fetch(job.result.outputUrl)).arrayBuffer());
    expect(image.subarray(1, 4).toString('latin1')).toBe('PNG');
    expect((await ledger('replicate')).submissions).toHaveLength(1);
    expect((await ledger('deepgram')).submissions).toHaveLength(0);

    // Replicate was given the provider events function's URL, and its webhooks went there: each an
    // invocation of that function, none a REST API request (the REST API saw this test's own only).
    const [charge] = (await ledger('replicate')).submissions;
    const prediction = await sim()(`${dialects.replicate.basePath}/predictions/${charge?.id}`);
    const eventsUrl = stack.endpoints.functionUrls['provider-events'];
    const webhookUrl = `${eventsUrl}v1/provider/replicate/events?jobId=${id}&submission=`;
    expect(String(prediction.webhook).slice(0, webhookUrl.length)).toBe(webhookUrl);
    const after = await usage();
    const invocations = (name: string) =>
      (after.lambda[name]?.invocations ?? 0) - (before.lambda[name]?.invocations ?? 0);
    // Replicate throttles its progress webhooks to one each half second: a 1.5 s job's, its start and completion.
    expect(invocations('longhaul-provider-events')).toBeGreaterThanOrEqual(3);
    expect(after.restApiRequests - before.restApiRequests).toBe(apiRequests - sent);
    expect(invocations('longhaul-api')).toBe(apiRequests - sent);
  });

  it('transcribes an upload on Deepgram, from the transcript its callback carried', async () => {
    const id = await submitAudio('sermon');
    const job = await settled(id);

    expect(job).toMatchObject({ status: 'succeeded', provider: 'deepgram' });
    expect(job.result).toMatchObject({ language: 'en', segments: expect.any(Number) });
    expect(job.result.text.length).toBeGreaterThan(10);
    const transcript = (await (await fetch(job.result.transcriptUrl)).json()) as { segments: unknown[] };
    expect(transcript.segments.length).toBe(job.result.segments);
    expect(transcript.segments[0]).toEqual({
      start: expect.any(Number),
      end: expect.any(Number),
      text: expect.any(String),
    });
    expect((await ledger('deepgram')).submissions).toHaveLength(1);
  });

  it("transcribes an hour of speech from Deepgram's callback of about 2 MB, every word listed twice", async () => {
    await sim()('/_sim/config', { provider: 'deepgram', realTimeFactor: 0 });
    const form = new FormData();
    form.set('type', 'audio.transcribe');
    form.set('input', JSON.stringify({ language: 'en' }));
    // Its header states an hour; the simulated Deepgram hears the length it states.
    form.set('file', new Blob([flacHeaderOf(3600)], { type: 'audio/flac' }), 'hour.flac');
    const created = await api('POST', '/v1/jobs', form, { 'idempotency-key': `hour-${Date.now()}` });
    expect(created.status).toBe(202);

    const job = await settled(created.body.id);

    expect(job).toMatchObject({ status: 'succeeded', provider: 'deepgram' });
    const transcript = (await (await fetch(job.result.transcriptUrl)).json()) as {
      text: string;
      segments: { end: number }[];
    };
    // 150 words a minute: the sample's 14 words said 643 times, three utterances each.
    expect(transcript.text.split(' ')).toHaveLength(643 * 14);
    expect(transcript.segments).toHaveLength(643 * 3);
    expect(job.result.segments).toBe(643 * 3);
    expect(transcript.segments.at(-1)?.end).toBe(3600);
    expect((await ledger('deepgram')).submissions).toHaveLength(1);
  });

  it('keeps each provider under its own limit, and a burst of images never delays a transcription', async () => {
    const images = await Promise.all(Array.from({ length: 8 }, (_, i) => submitImage(`burst ${i}`)));
    const audio = await submitAudio('during-the-burst');
    // What an operator sees meanwhile: Replicate full, with images waiting; its limits as configured.
    const seen = await pollUntil(
      async () => {
        const { body } = await api('GET', '/v1/admin/providers', undefined, { 'x-api-key': ADMIN_KEY });
        const byName = Object.fromEntries(
          (body.items as { name: string; maxInFlight: number; inFlight: number; queued: number }[]).map(
            (item) => [item.name, item],
          ),
        );
        return byName.replicate?.inFlight === 2 && byName.replicate.queued > 0 ? byName : undefined;
      },
      { timeoutMs: 10_000, intervalMs: 50, description: 'Replicate full with images waiting' },
    );
    expect(seen.replicate).toMatchObject({ maxInFlight: 2 });
    // At least one image runs; one handed a slot still counts as queued until its workflow starts.
    expect(seen.replicate?.queued).toBeLessThanOrEqual(7);
    expect(seen.deepgram).toMatchObject({ maxInFlight: 1 });
    expect(seen.deepgram?.inFlight).toBeLessThanOrEqual(1);

    const transcribed = await settled(audio);
    const stillWaiting = await Promise.all(
      images.map(async (id) => (await api('GET', `/v1/jobs/${id}`)).body),
    );
    const drawn = await Promise.all(images.map((id) => settled(id, 90_000)));

    expect(transcribed.status).toBe('succeeded');
    // Eight 1.5 s images two at a time take about 6 s; the transcription did not queue behind them.
    expect(stillWaiting.filter((job) => job.status !== 'succeeded').length).toBeGreaterThan(0);
    expect(drawn.map((job) => job.status)).toEqual(images.map(() => 'succeeded'));
    const replicate = await ledger('replicate');
    expect(replicate.submissions).toHaveLength(8);
    expect(replicate.maxConcurrent).toBe(2);
    expect((await ledger('deepgram')).maxConcurrent).toBe(1);
    expect(await queueDepth(sqsClient(stack.endpoints), stack.endpoints.deadLetterQueueUrl)).toBe(0);
  });

  it("starts a transcription at once while Replicate's queue holds thousands of messages", async () => {
    const sqs = sqsClient(stack.endpoints);
    const replicateQueue = stack.endpoints.jobQueues.replicate.url;
    // Messages naming a finished job: the dispatcher reads and drops each, as fast as it can go.
    const finished = (await settled(await submitImage('named by the backlog'))).id as string;
    for (let i = 0; i < BACKLOG / 10; i += 20) {
      await Promise.all(
        Array.from({ length: 20 }, () =>
          sqs.send(
            new SendMessageBatchCommand({
              QueueUrl: replicateQueue,
              Entries: Array.from({ length: 10 }, (_, n) => ({
                Id: String(n),
                MessageBody: JSON.stringify({ jobId: finished }),
              })),
            }),
          ),
        ),
      );
    }

    const id = await submitAudio('behind-no-backlog');
    const dispatched = await pollUntil(
      async () => {
        const { body } = await api('GET', `/v1/jobs/${id}/events`);
        return (body.items as { at: string; type: string }[]).find(
          (event) => event.type === 'job.dispatched',
        );
      },
      { timeoutMs: 30_000, intervalMs: 50, description: 'the transcription to be dispatched' },
    );
    const backlogLeft = await queueDepth(sqs, replicateQueue);
    const { body: job } = await api('GET', `/v1/jobs/${id}`);

    expect(Date.parse(dispatched.at) - Date.parse(job.createdAt)).toBeLessThan(TRANSCRIPTION_START_MS);
    // The backlog was still there when the transcription started: it went by its own queue.
    expect(backlogLeft).toBeGreaterThan(0);
    await settled(id);
  });

  it('sends a job to review after a Replicate submission with an unknown outcome, charged once', async () => {
    await sim()('/_sim/faults', { mode: 'accept-then-drop', count: 1, provider: 'replicate' });
    const id = await submitImage('dropped on the way back');
    const job = await settled(id);

    expect(job).toMatchObject({ status: 'needs_review', error: { code: 'ambiguous_submission' } });
    // Replicate cannot deduplicate: nothing was sent again, so exactly one charge.
    expect((await ledger('replicate')).submissions).toHaveLength(1);
  });

  it('cancels an image at Replicate: the prediction ends canceled there, billed only for the time it ran, and its slot goes', async () => {
    const SLOW_MS = 20_000;
    await sim()('/_sim/config', { provider: 'replicate', jobMs: SLOW_MS });
    const replicateInFlight = async (): Promise<number> => {
      const { body } = await api('GET', '/v1/admin/providers', undefined, { 'x-api-key': ADMIN_KEY });
      return body.items.find((item: { name: string }) => item.name === 'replicate')?.inFlight;
    };
    // A job an earlier test left in review holds its slot (Replicate may still run its prediction).
    const heldBefore = await replicateInFlight();
    try {
      const id = await submitImage('a slow cathedral');
      const charged = await pollUntil(
        async () => {
          const account = await ledger('replicate');
          return account.running === 1 ? account.submissions[0] : undefined;
        },
        { timeoutMs: 30_000, intervalMs: 100, description: 'the prediction running at Replicate' },
      );

      const canceled = await api('POST', `/v1/jobs/${id}/cancel`);
      expect(canceled).toMatchObject({ status: 202, body: { status: 'canceled' } });

      const entry = await pollUntil(
        async () => {
          const account = await ledger('replicate');
          const found = account.submissions.find((submission) => submission.id === charged?.id) as
            | { id: string; acceptedAt: string; finishedAt?: string; outcome?: string }
            | undefined;
          return found?.outcome ? { ...found, running: account.running } : undefined;
        },
        { timeoutMs: 15_000, intervalMs: 100, description: 'Replicate to end the prediction' },
      );
      // One charge, ended by the cancel long before the model would have finished.
      expect(entry).toMatchObject({ outcome: 'canceled', running: 0 });
      expect((await ledger('replicate')).submissions).toHaveLength(1);
      expect(Date.parse(entry.finishedAt ?? '') - Date.parse(entry.acceptedAt)).toBeLessThan(SLOW_MS / 2);
      const events = await api('GET', `/v1/jobs/${id}/events`);
      expect(events.body.items.map((event: { type: string }) => event.type)).toContain(
        'provider.cancel_requested',
      );
      // Confirmed, so the provider no longer runs it: the slot is free again.
      await pollUntil(async () => ((await replicateInFlight()) <= heldBefore ? true : undefined), {
        timeoutMs: 15_000,
        intervalMs: 100,
        description: "the canceled image's slot to be released",
      });
      expect((await api('GET', `/v1/jobs/${id}`)).body).toMatchObject({ status: 'canceled', result: null });
    } finally {
      await sim()('/_sim/config', { provider: 'replicate', jobMs: Number(env.SIM_JOB_MS) });
    }
  });
});

describe("each provider's webhook route", () => {
  it('refuses a Replicate webhook with a wrong signature with 401, and changes nothing', async () => {
    const id = await submitImage('a forged completion');
    const body = JSON.stringify({ id: 'forged', status: 'succeeded', output: ['https://example.com/x.png'] });
    const forged = new Webhook(`whsec_${Buffer.from('not the key').toString('base64')}`);
    const messageId = 'msg_forged';
    const at = new Date();
    const response = await fetch(`${stack.baseUrl}${PROVIDERS.replicate.webhookPath}?jobId=${id}`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'webhook-id': messageId,
        'webhook-timestamp': String(Math.floor(at.getTime() / 1000)),
        'webhook-signature': forged.sign(messageId, at, body),
      },
      body,
    });

    expect(response.status).toBe(401);
    expect(response.headers.get('content-type')).toContain('application/problem+json');
    const job = await settled(id);
    expect(job.status).toBe('succeeded');
    expect(job.result.outputUrl).not.toContain('example.com');
  });

  it('refuses a correctly signed Replicate webhook sent long ago (a replay) with 401, and changes nothing', async () => {
    const id = await submitImage('a replayed completion');
    const body = JSON.stringify({
      id: 'replayed',
      status: 'succeeded',
      output: ['https://example.com/x.png'],
    });
    const signer = new Webhook(DEFAULT_REPLICATE_WEBHOOK_SECRET);
    const longAgo = new Date(Date.now() - 10 * 60_000);
    const response = await fetch(`${stack.baseUrl}${PROVIDERS.replicate.webhookPath}?jobId=${id}`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'webhook-id': 'msg_replayed',
        'webhook-timestamp': String(Math.floor(longAgo.getTime() / 1000)),
        'webhook-signature': signer.sign('msg_replayed', longAgo, body),
      },
      body,
    });

    expect(response.status).toBe(401);
    const job = await settled(id);
    expect(job.status).toBe('succeeded');
    expect(job.result.outputUrl).not.toContain('example.com');
  });

  it('takes a correctly signed Replicate webhook for a job it does not know, and changes nothing', async () => {
    const body = JSON.stringify({
      id: 'p_unknown',
      status: 'succeeded',
      output: ['https://example.com/x.png'],
    });
    const signer = new Webhook(DEFAULT_REPLICATE_WEBHOOK_SECRET);
    const at = new Date();
    const response = await fetch(
      `${stack.baseUrl}${PROVIDERS.replicate.webhookPath}?jobId=job_aaaaaaaaaaaaaaaaaaaaaaaaaa`,
      {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'webhook-id': 'msg_unknown',
          'webhook-timestamp': String(Math.floor(at.getTime() / 1000)),
          'webhook-signature': signer.sign('msg_unknown', at, body),
        },
        body,
      },
    );
    expect(response.status).toBe(204);
  });

  it('refuses a Deepgram callback whose URL signature is missing or wrong with 401', async () => {
    const url = `${stack.baseUrl}${PROVIDERS.deepgram.webhookPath}?jobId=job_aaaaaaaaaaaaaaaaaaaaaaaaaa&submission=abc.0`;
    const body = JSON.stringify({ metadata: { request_id: 'r1' }, results: { channels: [] } });
    const unsigned = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body,
    });
    const wrong = createHmac('sha256', 'not the key').update('jobId=x&submission=y').digest('hex');
    const forged = await fetch(`${url}&sig=${wrong}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body,
    });

    expect([unsigned.status, forged.status]).toEqual([401, 401]);
  });
});
