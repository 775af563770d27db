import { spawn } from 'node:child_process';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { resolve } from 'node:path';
import { crc32, inflateSync } from 'node:zlib';
import { type Listening, listen } from '../../local/emulators/listen';
import { SAMPLE_TRANSCRIPT_SEGMENTS } from '../../local/provider-sim/outputs';
import { signProviderPayload, verifyProviderSignature } from '../../local/provider-sim/signature';
import {
  type FaultMode,
  type Ledger,
  type RunningSimulator,
  SIMULATED_GENERATION_FAILURE,
  type SimulatorOptions,
  startSimulator,
} from '../../local/provider-sim/simulator';
import type { ProviderEvent } from '../../local/provider-sim/webhooks';
import { waitFor } from './support/webhook-inbox';

/**
 * The simulated provider over real HTTP: a local webhook receiver on a free
 * port collects what the simulator posts. Jobs are short (300 ms at 20 Hz: six
 * ticks of 17, 33, 50, 67, 83 and 100) and every wait polls with a deadline.
 */

jest.setTimeout(15_000);

const SECRET = 'test-provider-webhook-secret';
const JOB_MS = 300;
const PROGRESS_HZ = 20;
const EXPECTED_TICKS = [17, 33, 50, 67, 83, 100];
const REPO_ROOT = resolve(__dirname, '../..');

interface Delivery {
  readonly raw: string;
  readonly signature: string | undefined;
  readonly event: ProviderEvent;
}

/** Records every webhook; `answer` decides the status code (and may take its time). */
class WebhookReceiver {
  readonly deliveries: Delivery[] = [];
  answer: (event: ProviderEvent) => number | Promise<number> = () => 204;
  /** The most deliveries for one generation that were ever open at the same time. */
  maxInFlightPerGeneration = 0;
  private readonly inFlight = new Map<string, number>();

  private constructor(
    private readonly listening: Listening,
    readonly url: string,
  ) {}

  static async start(): Promise<WebhookReceiver> {
    let receiver: WebhookReceiver | undefined;
    const listening = await listen(
      createServer((req, res) => void receiver?.receive(req, res)),
      '127.0.0.1',
    );
    receiver = new WebhookReceiver(listening, `${listening.endpoint}/v1/provider/events`);
    return receiver;
  }

  eventsFor(id: string): ProviderEvent[] {
    return this.deliveries.filter((delivery) => delivery.event.id === id).map((delivery) => delivery.event);
  }

  close(): Promise<void> {
    return this.listening.stop();
  }

  private async receive(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of req as AsyncIterable<Buffer>) chunks.push(chunk);
    const raw = Buffer.concat(chunks).toString('utf8');
    const event = JSON.parse(raw) as ProviderEvent;
    const open = (this.inFlight.get(event.id) ?? 0) + 1;
    this.inFlight.set(event.id, open);
    this.maxInFlightPerGeneration = Math.max(this.maxInFlightPerGeneration, open);
    const signature = req.headers['provider-signature'];
    this.deliveries.push({ raw, signature: Array.isArray(signature) ? signature[0] : signature, event });
    const status = await this.answer(event);
    this.inFlight.set(event.id, (this.inFlight.get(event.id) ?? 1) - 1);
    res.writeHead(status).end();
  }
}

const pause = (ms: number) => new Promise((done) => setTimeout(done, ms));

let simulator: RunningSimulator;
let receiver: WebhookReceiver;
const extraSimulators: RunningSimulator[] = [];

async function startExtraSimulator(options: Partial<SimulatorOptions>): Promise<RunningSimulator> {
  const extra = await startSimulator({
    jobMs: JOB_MS,
    progressHz: PROGRESS_HZ,
    idempotent: true,
    webhookSecret: SECRET,
    ...options,
  });
  extraSimulators.push(extra);
  return extra;
}

beforeEach(async () => {
  receiver = await WebhookReceiver.start();
  simulator = await startSimulator({
    jobMs: JOB_MS,
    progressHz: PROGRESS_HZ,
    idempotent: true,
    webhookSecret: SECRET,
  });
});

afterEach(async () => {
  await Promise.all([
    simulator.close(),
    receiver.close(),
    ...extraSimulators.splice(0).map((s) => s.close()),
  ]);
});

function imageRequest(prompt = 'a lighthouse at dusk') {
  return { type: 'image.generate', input: { prompt }, webhookUrl: receiver.url };
}

function submit(
  options: {
    key?: string;
    body?: unknown;
    headers?: Record<string, string>;
    signal?: AbortSignal;
    to?: RunningSimulator;
  } = {},
): Promise<Response> {
  return fetch(`${(options.to ?? simulator).url}/v1/generations`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      ...(options.key ? { 'Idempotency-Key': options.key } : {}),
      ...options.headers,
    },
    body: typeof options.body === 'string' ? options.body : JSON.stringify(options.body ?? imageRequest()),
    signal: options.signal,
  });
}

async function submitOk(options: Parameters<typeof submit>[0] = {}): Promise<string> {
  const response = await submit(options);
  expect(response.status).toBe(201);
  const { id } = (await response.json()) as { id: string };
  return id;
}

async function postJson(path: string, body: unknown, to = simulator): Promise<Response> {
  return fetch(`${to.url}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
}

async function injectFault(mode: FaultMode, count = 1): Promise<void> {
  const response = await postJson('/_sim/faults', { mode, count });
  expect(response.status).toBe(204);
}

async function ledger(): Promise<Ledger> {
  const response = await fetch(`${simulator.url}/_sim/ledger`);
  expect(response.status).toBe(200);
  return (await response.json()) as Ledger;
}

interface GenerationView {
  id: string;
  status: string;
  progress: number;
  output?: unknown;
  error?: unknown;
}

async function generation(id: string): Promise<GenerationView> {
  const response = await fetch(`${simulator.url}/v1/generations/${id}`);
  expect(response.status).toBe(200);
  return (await response.json()) as GenerationView;
}

const statusOf = async (id: string, status: string) => {
  const view = await generation(id);
  return view.status === status ? view : undefined;
};

const terminalEvent = (id: string) =>
  receiver.eventsFor(id).find((event) => event.type !== 'progress') as ProviderEvent | undefined;

/** Reads a PNG chunk by chunk, checking every CRC, and returns its size and inflated image data. */
function decodePng(base64: string): { width: number; height: number; colorType: number; pixels: Buffer } {
  const png = Buffer.from(base64, 'base64');
  expect(png.subarray(0, 8)).toEqual(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]));
  const chunks: { type: string; data: Buffer }[] = [];
  for (let offset = 8; offset < png.length; ) {
    const length = png.readUInt32BE(offset);
    const typeAndData = png.subarray(offset + 4, offset + 8 + length);
    expect(png.readUInt32BE(offset + 8 + length)).toBe(crc32(typeAndData));
    chunks.push({ type: typeAndData.subarray(0, 4).toString('ascii'), data: typeAndData.subarray(4) });
    offset += 12 + length;
  }
  expect(chunks.map((chunk) => chunk.type)).toEqual(['IHDR', 'IDAT', 'IEND']);
  const header = chunks[0]?.data as Buffer;
  return {
    width: header.readUInt32BE(0),
    height: header.readUInt32BE(4),
    colorType: header[9] as number,
    pixels: inflateSync(chunks[1]?.data as Buffer),
  };
}

describe('provider webhook signature', () => {
  const body = '{"type":"progress","id":"gen_1","progress":50,"at":"2030-01-01T00:00:00.000Z"}';
  const t = 1_900_000_000;

  it('verifies what it signed, within the tolerance only', () => {
    const header = signProviderPayload(SECRET, body, t);
    expect(header).toMatch(/^t=1900000000,v1=[0-9a-f]{64}$/);
    expect(verifyProviderSignature(SECRET, header, body, t + 300, 300)).toBe(true);
    expect(verifyProviderSignature(SECRET, header, Buffer.from(body), t - 300, 300)).toBe(true);
    expect(verifyProviderSignature(SECRET, header, body, t + 301, 300)).toBe(false);
    expect(verifyProviderSignature(SECRET, header, body.replace('50', '51'), t, 300)).toBe(false);
    expect(verifyProviderSignature('another-secret', header, body, t, 300)).toBe(false);
  });

  it('accepts any one matching v1 entry and refuses malformed headers', () => {
    const valid = signProviderPayload(SECRET, body, t);
    const v1 = valid.split('v1=')[1];
    expect(verifyProviderSignature(SECRET, `t=${t},v1=${'0'.repeat(64)},v1=${v1}`, body, t, 300)).toBe(true);
    for (const header of [
      undefined,
      '',
      `v1=${v1}`,
      `t=${t}`,
      `t=abc,v1=${v1}`,
      `t=${t},v1=${v1?.slice(2)}`,
    ]) {
      expect(verifyProviderSignature(SECRET, header, body, t, 300)).toBe(false);
    }
  });
});

describe('simulated provider: generations', () => {
  it('streams every progress tick in order, signed, one at a time, then a succeeded webhook with a PNG', async () => {
    // A receiver slower than the tick rate: ticks must queue up, not overlap, drop or reorder.
    receiver.answer = async (event) => {
      if (event.type === 'progress') await pause(70);
      return 204;
    };

    const id = await submitOk({ key: 'order-1' });

    expect(id).toMatch(/^gen_[0-9a-f]{24}$/);
    const events = await waitFor('the succeeded webhook', () => terminalEvent(id) && receiver.eventsFor(id));
    expect(events.map((event) => (event.type === 'progress' ? event.progress : event.type))).toEqual([
      ...EXPECTED_TICKS,
      'succeeded',
    ]);
    expect(receiver.maxInFlightPerGeneration).toBe(1);
    const now = Math.floor(Date.now() / 1000);
    for (const delivery of receiver.deliveries) {
      expect(verifyProviderSignature(SECRET, delivery.signature, delivery.raw, now, 5)).toBe(true);
      expect(Number.isNaN(Date.parse(delivery.event.at))).toBe(false);
    }
    const succeeded = events.at(-1) as Extract<ProviderEvent, { type: 'succeeded' }>;
    expect(Object.keys(succeeded).sort()).toEqual(['at', 'id', 'output', 'type']);
    const output = succeeded.output as { image: { contentType: string; base64: string } };
    expect(output.image.contentType).toBe('image/png');
    const png = decodePng(output.image.base64);
    expect([png.width, png.height, png.colorType]).toEqual([16, 16, 2]);
    expect(png.pixels.length).toBe(16 * (1 + 16 * 3));
    expect(await generation(id)).toEqual({ id, status: 'succeeded', progress: 100, output });
    const after = await ledger();
    expect(after.submissions).toEqual([
      {
        id,
        idempotencyKey: 'order-1',
        acceptedAt: expect.any(String),
        finishedAt: expect.any(String),
        outcome: 'succeeded',
      },
    ]);
    const { acceptedAt, finishedAt = '' } = after.submissions[0] ?? { acceptedAt: '' };
    // Finished once its whole run was over, and before its last webhook was sent.
    expect(Date.parse(finishedAt) - Date.parse(acceptedAt)).toBeGreaterThanOrEqual(JOB_MS);
    expect(Date.parse(finishedAt)).toBeLessThanOrEqual(Date.parse(succeeded.at));
    expect([after.running, after.maxConcurrent]).toEqual([0, 1]);
  });

  it('transcribes audio into deterministic segments in the requested language', async () => {
    const id = await submitOk({
      body: {
        type: 'audio.transcribe',
        input: { audioUrl: 'https://example.com/a.wav', language: 'de' },
        webhookUrl: receiver.url,
      },
    });

    const done = await waitFor('the transcription', () => statusOf(id, 'succeeded'));
    expect(done.output).toEqual({
      transcript: {
        language: 'de',
        text: 'Welcome to the long haul. Slow jobs finish exactly once. Thank you for waiting.',
        segments: SAMPLE_TRANSCRIPT_SEGMENTS,
      },
    });
    expect(SAMPLE_TRANSCRIPT_SEGMENTS.length).toBeGreaterThanOrEqual(2);
  });

  it('retries a completion webhook until the receiver answers 2xx, but never a progress tick', async () => {
    let refusals = 0;
    receiver.answer = (event) => {
      if (event.type === 'progress' && event.progress === 50) return 500;
      if (event.type === 'succeeded' && refusals < 2) {
        refusals += 1;
        return 500;
      }
      return 204;
    };

    const id = await submitOk();

    await waitFor(
      'the third succeeded delivery',
      () => receiver.eventsFor(id).filter((e) => e.type === 'succeeded').length === 3,
    );
    const deliveries = receiver.deliveries.filter((delivery) => delivery.event.id === id);
    expect(
      deliveries
        .filter((d) => d.event.type === 'progress')
        .map((d) => (d.event as { progress: number }).progress),
    ).toEqual(EXPECTED_TICKS);
    const completions = deliveries.filter((d) => d.event.type === 'succeeded');
    expect(new Set(completions.map((d) => d.raw)).size).toBe(1);
    const now = Math.floor(Date.now() / 1000);
    for (const completion of completions) {
      expect(verifyProviderSignature(SECRET, completion.signature, completion.raw, now, 5)).toBe(true);
    }
  });

  it('charges an idempotent repeat nothing and answers it with the first id', async () => {
    const first = await submitOk({ key: 'same-key' });
    const repeat = await submit({ key: 'same-key' });

    expect(repeat.status).toBe(201);
    expect(repeat.headers.get('idempotent-replayed')).toBe('true');
    expect(await repeat.json()).toEqual({ id: first });
    await waitFor('the succeeded webhook', () => terminalEvent(first));
    const after = await ledger();
    expect(after.submissions.map((entry) => [entry.id, entry.idempotencyKey])).toEqual([[first, 'same-key']]);
    expect(after.maxConcurrent).toBe(1);
  });

  it('charges every repeat once idempotency is switched off', async () => {
    const config = await postJson('/_sim/config', { idempotent: false });
    expect(config.status).toBe(200);
    expect(await config.json()).toEqual({ jobMs: JOB_MS, progressHz: PROGRESS_HZ, idempotent: false });

    const first = await submitOk({ key: 'repeat-key' });
    const second = await submitOk({ key: 'repeat-key' });

    expect(second).not.toBe(first);
    const after = await ledger();
    expect(after.submissions.map((entry) => [entry.id, entry.idempotencyKey])).toEqual([
      [first, 'repeat-key'],
      [second, 'repeat-key'],
    ]);
    expect(after.running).toBe(2);
    await waitFor('both jobs to finish', () => terminalEvent(first) && terminalEvent(second));
  });

  it('gives each generation the config of its submission time', async () => {
    await postJson('/_sim/config', { jobMs: 10_000 });
    const slow = await submitOk();
    await postJson('/_sim/config', { jobMs: 200 });
    const fast = await submitOk();

    await waitFor('the fast job', () => statusOf(fast, 'succeeded'));
    const slowView = await generation(slow);
    expect(slowView.status).toBe('running');
    expect(slowView.progress).toBeLessThan(10);
    expect((await ledger()).running).toBe(1);
  });

  it('counts jobs running at once into maxConcurrent and keeps the peak', async () => {
    const ids = await Promise.all([1, 2, 3, 4].map((n) => submitOk({ key: `parallel-${n}` })));

    expect(new Set(ids).size).toBe(4);
    const during = await ledger();
    expect([during.running, during.maxConcurrent]).toEqual([4, 4]);
    await waitFor('all four completions', () => ids.every((id) => terminalEvent(id)?.type === 'succeeded'));
    const after = await ledger();
    expect([after.running, after.maxConcurrent, after.submissions.length]).toEqual([0, 4, 4]);

    const later = await submitOk();
    expect([(await ledger()).running, (await ledger()).maxConcurrent]).toEqual([1, 4]);
    await waitFor('the later job', () => terminalEvent(later));
    expect((await ledger()).running).toBe(0);
  });

  it('cancels a running job with a canceled webhook and leaves finished ones as they are', async () => {
    await postJson('/_sim/config', { jobMs: 10_000 });
    const id = await submitOk();
    await waitFor('the first tick', () => receiver.eventsFor(id).length > 0);

    const cancel = await fetch(`${simulator.url}/v1/generations/${id}/cancel`, { method: 'POST' });

    expect(cancel.status).toBe(200);
    expect(await cancel.json()).toEqual({ id, status: 'canceled' });
    expect((await ledger()).running).toBe(0);
    const canceled = await waitFor('the canceled webhook', () => terminalEvent(id));
    expect(canceled).toEqual({ type: 'canceled', id, at: expect.any(String) });
    const [entry] = (await ledger()).submissions;
    expect(Date.parse(entry?.finishedAt ?? '')).toBeLessThanOrEqual(Date.parse(canceled?.at ?? ''));
    const view = await generation(id);
    expect(view.status).toBe('canceled');
    expect(view.progress).toBeLessThan(100);
    const again = await fetch(`${simulator.url}/v1/generations/${id}/cancel`, { method: 'POST' });
    expect(await again.json()).toEqual({ id, status: 'canceled' });

    await postJson('/_sim/config', { jobMs: 200 });
    const finished = await submitOk();
    await waitFor('the short job', () => statusOf(finished, 'succeeded'));
    const late = await fetch(`${simulator.url}/v1/generations/${finished}/cancel`, { method: 'POST' });
    expect(late.status).toBe(200);
    expect(await late.json()).toEqual({ id: finished, status: 'succeeded' });
    // The short job finished after the cancel, so a tick of the canceled job would have arrived by now.
    expect(receiver.eventsFor(id).at(-1)?.type).toBe('canceled');
  });

  it('answers 404 for unknown generations', async () => {
    const get = await fetch(`${simulator.url}/v1/generations/gen_unknown`);
    const cancel = await fetch(`${simulator.url}/v1/generations/gen_unknown/cancel`, { method: 'POST' });

    expect([get.status, cancel.status]).toEqual([404, 404]);
    expect(await get.json()).toEqual({ error: { code: 'not_found', message: expect.any(String) } });
  });

  it('refuses malformed submissions without charging or consuming a fault', async () => {
    await injectFault('unavailable');
    const bad = [
      { type: 'video.render', input: { prompt: 'x' }, webhookUrl: receiver.url },
      { type: 'image.generate', input: { prompt: '' }, webhookUrl: receiver.url },
      { type: 'image.generate', input: { prompt: 'x' }, webhookUrl: 'ftp://example.com/hook' },
      { type: 'image.generate', input: { prompt: 'x' } },
      'not json',
    ];

    for (const body of bad) {
      const response = await submit({ body });
      expect(response.status).toBe(400);
      expect(await response.json()).toEqual({
        error: { code: 'invalid_request', message: expect.any(String) },
      });
    }
    const badKey = await submit({ key: 'has space' });
    expect(badKey.status).toBe(400);

    expect((await ledger()).submissions).toEqual([]);
    expect((await submit()).status).toBe(503);
    expect((await ledger()).submissions).toEqual([]);
    await submitOk();
  });

  it('requires the bearer API key on the provider API when one is configured', async () => {
    const guarded = await startExtraSimulator({ apiKey: 'provider-key' });

    const anonymous = await submit({ to: guarded });
    const wrong = await submit({ to: guarded, headers: { Authorization: 'Bearer other-key' } });
    const right = await submit({ to: guarded, headers: { Authorization: 'Bearer provider-key' } });

    expect([anonymous.status, wrong.status, right.status]).toEqual([401, 401, 201]);
    expect(await anonymous.json()).toEqual({ error: { code: 'unauthorized', message: expect.any(String) } });
    const { id } = (await right.json()) as { id: string };
    expect((await fetch(`${guarded.url}/v1/generations/${id}`)).status).toBe(401);
    const read = await fetch(`${guarded.url}/v1/generations/${id}`, {
      headers: { Authorization: 'Bearer provider-key' },
    });
    expect(read.status).toBe(200);
    const charges = (await (await fetch(`${guarded.url}/_sim/ledger`)).json()) as Ledger;
    expect(charges.submissions.map((entry) => entry.id)).toEqual([id]);
  });
});

describe('simulated provider: faults', () => {
  it('reject answers 400 without a charge, once', async () => {
    await injectFault('reject');

    const rejected = await submit({ key: 'reject-1' });

    expect(rejected.status).toBe(400);
    expect(await rejected.json()).toEqual({
      error: { code: 'invalid_request', message: expect.any(String) },
    });
    expect((await ledger()).submissions).toEqual([]);
    const id = await submitOk({ key: 'reject-1' });
    expect((await ledger()).submissions.map((entry) => entry.id)).toEqual([id]);
  });

  it('unavailable answers 503 with Retry-After for as many submissions as counted, without charges', async () => {
    await injectFault('unavailable', 2);

    const first = await submit({ key: 'busy' });
    const second = await submit({ key: 'busy' });

    expect([first.status, second.status]).toEqual([503, 503]);
    expect(first.headers.get('retry-after')).toBe('1');
    expect(await first.json()).toEqual({
      error: { code: 'service_unavailable', message: expect.any(String) },
    });
    expect((await ledger()).submissions).toEqual([]);
    await submitOk({ key: 'busy' });
    expect((await ledger()).submissions).toHaveLength(1);
  });

  it('consumes queued faults in the order they were posted', async () => {
    await injectFault('reject');
    await injectFault('unavailable');

    const statuses = [];
    for (let n = 0; n < 3; n++) statuses.push((await submit()).status);

    expect(statuses).toEqual([400, 503, 201]);
  });

  it('refuses a malformed fault', async () => {
    for (const body of [
      { mode: 'explode', count: 1 },
      { mode: 'reject', count: 0 },
      { mode: 'reject', count: 1.5 },
    ]) {
      const response = await postJson('/_sim/faults', body);
      expect(response.status).toBe(400);
    }
    await submitOk();
  });

  it('accept-then-drop charges, resets the connection, and the job runs; a keyed retry finds it', async () => {
    await injectFault('accept-then-drop');

    await expect(submit({ key: 'dropped' })).rejects.toThrow();

    const charged = await ledger();
    // The job may already have finished: only the charge is asserted here.
    expect(charged.submissions).toMatchObject([
      { id: expect.any(String), idempotencyKey: 'dropped', acceptedAt: expect.any(String) },
    ]);
    const id = charged.submissions[0]?.id as string;
    expect(await submitOk({ key: 'dropped' })).toBe(id);
    await waitFor('the dropped job to finish', () => terminalEvent(id)?.type === 'succeeded');
    expect((await ledger()).submissions).toHaveLength(1);
  });

  it('timeout charges but holds the answer past the caller timeout; close() still returns at once', async () => {
    await injectFault('timeout', 2);

    const aborted = submit({ key: 'slow', signal: AbortSignal.timeout(500) });

    await expect(aborted).rejects.toMatchObject({ name: 'TimeoutError' });
    const charged = await ledger();
    expect(charged.submissions.map((entry) => entry.idempotencyKey)).toEqual(['slow']);
    const id = charged.submissions[0]?.id as string;
    await waitFor('the held job to run', () => terminalEvent(id)?.type === 'succeeded');

    const pending = submit({ key: 'held' });
    const settled = pending.then(
      () => 'answered',
      () => 'rejected',
    );
    await waitFor('the held submission to be charged', async () => (await ledger()).submissions.length === 2);
    const started = Date.now();
    await simulator.close();
    expect(Date.now() - started).toBeLessThan(1000);
    expect(await settled).toBe('rejected');
  });

  it('lose-webhooks runs the job but sends no webhook at all', async () => {
    await injectFault('lose-webhooks');
    const lost = await submitOk();
    const witness = await submitOk();

    // The witness was submitted later with the same duration, so the lost job's webhooks would have come first.
    await waitFor('the witness job webhook', () => terminalEvent(witness)?.type === 'succeeded');
    const view = await waitFor('the lost job', () => statusOf(lost, 'succeeded'));
    expect(view.progress).toBe(100);
    expect(receiver.eventsFor(lost)).toEqual([]);
    expect((await ledger()).submissions).toHaveLength(2);
  });

  it('fail-job fails at about half time with a failed webhook', async () => {
    await injectFault('fail-job');
    const id = await submitOk();

    const failed = await waitFor('the failed webhook', () => terminalEvent(id));

    expect(failed).toEqual({
      type: 'failed',
      id,
      error: SIMULATED_GENERATION_FAILURE,
      at: expect.any(String),
    });
    expect(
      receiver.eventsFor(id).map((event) => (event.type === 'progress' ? event.progress : event.type)),
    ).toEqual([17, 33, 50, 'failed']);
    expect(await generation(id)).toEqual({
      id,
      status: 'failed',
      progress: 50,
      error: SIMULATED_GENERATION_FAILURE,
    });
    const after = await ledger();
    expect([after.submissions.length, after.running]).toEqual([1, 0]);
    expect(Date.parse(after.submissions[0]?.finishedAt ?? '')).toBeLessThanOrEqual(Date.parse(failed.at));
  });

  it('stall stops progress half way and never finishes, still counting as running', async () => {
    await injectFault('stall');
    const stalled = await submitOk();
    const witness = await submitOk();

    // The witness started after the stalled job and ran its full jobMs, so the stalled job is past its own.
    await waitFor('the witness job', () => statusOf(witness, 'succeeded'));
    await waitFor('the witness webhook', () => terminalEvent(witness));
    expect(await generation(stalled)).toEqual({ id: stalled, status: 'running', progress: 50 });
    expect(receiver.eventsFor(stalled).map((event) => event.type)).toEqual([
      'progress',
      'progress',
      'progress',
    ]);
    const after = await ledger();
    expect([after.running, after.maxConcurrent]).toEqual([1, 2]);
    const finished = (entryId: string) => after.submissions.find((entry) => entry.id === entryId)?.finishedAt;
    expect([finished(stalled), typeof finished(witness)]).toEqual([undefined, 'string']);
  });

  it('reset clears charges, faults, jobs and config changes', async () => {
    await postJson('/_sim/config', { jobMs: 10_000, idempotent: false });
    await injectFault('reject');
    await injectFault('stall');
    await submit();
    await submitOk();

    const reset = await postJson('/_sim/reset', {});

    expect(reset.status).toBe(204);
    expect(await ledger()).toEqual({ submissions: [], maxConcurrent: 0, running: 0 });
    const config = await fetch(`${simulator.url}/_sim/config`);
    expect(await config.json()).toEqual({ jobMs: JOB_MS, progressHz: PROGRESS_HZ, idempotent: true });
    const id = await submitOk();
    await waitFor('a normal job after reset', () => terminalEvent(id)?.type === 'succeeded');
  });
});

describe('npm run sim', () => {
  function runCli(env: Record<string, string>) {
    const child = spawn(process.execPath, ['--import', 'tsx', 'local/provider-sim/main.ts'], {
      cwd: REPO_ROOT,
      env: { ...process.env, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const output = { stdout: '', stderr: '' };
    child.stdout.on('data', (chunk: Buffer) => {
      output.stdout += chunk.toString('utf8');
    });
    child.stderr.on('data', (chunk: Buffer) => {
      output.stderr += chunk.toString('utf8');
    });
    const exited = new Promise<number | null>((done) => child.once('exit', (code) => done(code)));
    return { child, output, exited };
  }

  it('prints the ready line, serves, and exits 0 on SIGTERM', async () => {
    const cli = runCli({ SIM_PORT: '0', SIM_JOB_MS: '200' });
    try {
      const line = await waitFor(
        'the ready line',
        () => cli.output.stdout.includes('\n') && cli.output.stdout,
        10_000,
      );
      const match = /^longhaul sim: ready at http:\/\/127\.0\.0\.1:(\d+)\n$/.exec(line);
      expect(match).not.toBeNull();
      const ledgerResponse = await fetch(`http://127.0.0.1:${match?.[1]}/_sim/ledger`);
      expect(await ledgerResponse.json()).toEqual({ submissions: [], maxConcurrent: 0, running: 0 });

      cli.child.kill('SIGTERM');

      expect(await cli.exited).toBe(0);
    } finally {
      if (cli.child.exitCode === null) cli.child.kill('SIGKILL');
    }
  });

  it('exits 1 naming each bad variable and its value', async () => {
    const cli = runCli({ SIM_PORT: '0', SIM_PROGRESS_HZ: 'fast', SIM_IDEMPOTENT: 'maybe' });

    expect(await cli.exited).toBe(1);
    expect(cli.output.stdout).toBe('');
    expect(cli.output.stderr).toContain('SIM_PROGRESS_HZ: must be a number (got "fast")');
    expect(cli.output.stderr).toContain('SIM_IDEMPOTENT: must be 1, 0, true or false (got "maybe")');
  });
});
