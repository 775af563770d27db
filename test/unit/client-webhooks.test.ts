import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { createContext, runInContext } from 'node:vm';
import { build } from 'esbuild';
import { Longhaul, LonghaulWebhookError } from '../../client';
import { signPayload } from '../../lambdas/shared/signature';
import { deliverSignedWebhook } from '../../lambdas/shared/webhooks';

/**
 * Longhaul.webhooks.verify against webhooks the server's own code signs and
 * sends: accepted as sent, refused once tampered with, stale, or signed with
 * another secret; several v1 values (a secret rotation) are honoured.
 */

const SECRET = 'whsec-test-secret-0123456789';
const job = {
  id: 'job_hookhookhookhookhookhookho',
  type: 'image.generate',
  status: 'succeeded',
  progress: 100,
  input: { prompt: 'x' },
  result: { outputUrl: 'https://out.test/x.png', contentType: 'image/png' },
  error: null,
  attempts: 1,
  idempotencyKey: 'k',
  createdAt: '2026-01-01T00:00:00.000Z',
  updatedAt: '2026-01-01T00:00:01.000Z',
};

interface Delivery {
  readonly rawBody: Buffer;
  /** The Longhaul-Signature header. */
  readonly header: string;
  /** Every header, as Node's request.headers has them. */
  readonly headers: IncomingHttpHeaders;
}

const EVENT_ID = 'evt_clientclientclientclie';

/** One webhook as the server delivers it: the raw body and the headers received. */
async function delivered(body: string): Promise<Delivery> {
  let received: Delivery | undefined;
  const server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      received = {
        rawBody: Buffer.concat(chunks),
        header: String(request.headers['longhaul-signature']),
        headers: request.headers,
      };
      response.writeHead(204).end();
    });
  });
  await new Promise<void>((listening) => server.listen(0, '127.0.0.1', listening));
  try {
    const { port } = server.address() as AddressInfo;
    const outcome = await deliverSignedWebhook({
      url: `http://127.0.0.1:${port}/hooks`,
      body,
      secret: SECRET,
      eventId: EVENT_ID,
      timeoutMs: 5000,
      allowPrivate: true,
    });
    expect(outcome).toBe('sent');
  } finally {
    await new Promise((closed) => server.close(closed));
  }
  if (!received) throw new Error('no webhook arrived');
  return received;
}

const reason = (run: () => unknown) => {
  try {
    run();
  } catch (error) {
    if (error instanceof LonghaulWebhookError) return error.reason;
    throw error;
  }
  return 'accepted';
};

it('accepts a webhook the server signed and sent, and returns its event', async () => {
  const { rawBody, header } = await delivered(JSON.stringify(job));
  const event = Longhaul.webhooks.verify(rawBody, header, SECRET);
  expect(event.type).toBe('job.succeeded');
  expect(event.job).toEqual(job);
  expect(Math.abs(event.signedAt - Date.now() / 1000)).toBeLessThan(60);
  // The body as a string verifies too.
  expect(Longhaul.webhooks.verify(rawBody.toString('utf8'), header, SECRET).type).toBe('job.succeeded');
});

it('refuses a tampered body, a wrong secret, a stale signature and a malformed header', async () => {
  const { rawBody, header } = await delivered(JSON.stringify(job));
  const tampered = Buffer.from(rawBody.toString('utf8').replace('"succeeded"', '"failed"'));
  expect(reason(() => Longhaul.webhooks.verify(tampered, header, SECRET))).toBe('mismatch');
  expect(reason(() => Longhaul.webhooks.verify(rawBody, header, 'another-secret-0123456789'))).toBe(
    'mismatch',
  );
  const later = Number(/t=(\d+)/.exec(header)?.[1]) + 301;
  expect(reason(() => Longhaul.webhooks.verify(rawBody, header, SECRET, { nowSeconds: later }))).toBe(
    'stale',
  );
  expect(
    reason(() =>
      Longhaul.webhooks.verify(rawBody, header, SECRET, { nowSeconds: later, toleranceSeconds: 600 }),
    ),
  ).toBe('accepted');
  for (const bad of [
    undefined,
    null,
    '',
    'v1=abc',
    't=1',
    'garbage',
    `t=1,v1=${'0'.repeat(64)},${'x'.repeat(2000)}`,
  ]) {
    expect(reason(() => Longhaul.webhooks.verify(rawBody, bad, SECRET))).toBe('malformed');
  }
});

it('honours several v1 values and several secrets, for a rotation without downtime', () => {
  const body = JSON.stringify({ ...job, status: 'failed', error: { code: 'x', message: 'y' } });
  const now = Math.floor(Date.now() / 1000);
  const oldSigned = signPayload('old-secret-0123456789', body, now);
  const newSigned = signPayload(SECRET, body, now);
  const both = `${oldSigned},v1=${newSigned.split('v1=')[1]}`;
  expect(Longhaul.webhooks.verify(body, both, SECRET).type).toBe('job.failed');
  expect(Longhaul.webhooks.verify(body, both, 'old-secret-0123456789').type).toBe('job.failed');
  expect(Longhaul.webhooks.verify(body, oldSigned, ['old-secret-0123456789', SECRET]).type).toBe(
    'job.failed',
  );
  expect(reason(() => Longhaul.webhooks.verify(body, oldSigned, [SECRET]))).toBe('mismatch');
});

describe('with the request headers', () => {
  it('gives the event the id the server sent in Longhaul-Event-Id, from Node headers or fetch Headers', async () => {
    const { rawBody, headers } = await delivered(JSON.stringify(job));
    expect(headers['longhaul-event-id']).toBe(EVENT_ID);
    expect(Longhaul.webhooks.verify(rawBody, headers, SECRET).id).toBe(EVENT_ID);
    const fetchHeaders = new Headers(headers as Record<string, string>);
    expect((await Longhaul.webhooks.verifyAsync(rawBody, fetchHeaders, SECRET)).id).toBe(EVENT_ID);
    // The signature header alone verifies as before, without an id.
    expect(
      Longhaul.webhooks.verify(rawBody, String(headers['longhaul-signature']), SECRET).id,
    ).toBeUndefined();
  });
});

describe('verifyAsync (Web Crypto)', () => {
  const asyncReason = (run: () => Promise<unknown>) =>
    run().then(
      () => 'accepted',
      (error: unknown) => {
        if (error instanceof LonghaulWebhookError) return error.reason;
        throw error;
      },
    );

  it('accepts and refuses exactly what verify does', async () => {
    const { rawBody, header } = await delivered(JSON.stringify(job));
    const event = await Longhaul.webhooks.verifyAsync(rawBody, header, SECRET);
    expect(event).toEqual(Longhaul.webhooks.verify(rawBody, header, SECRET));
    const tampered = Buffer.from(rawBody.toString('utf8').replace('"succeeded"', '"failed"'));
    const later = Number(/t=(\d+)/.exec(header)?.[1]) + 301;
    const cases: [string, () => Promise<unknown>][] = [
      ['mismatch', () => Longhaul.webhooks.verifyAsync(tampered, header, SECRET)],
      ['mismatch', () => Longhaul.webhooks.verifyAsync(rawBody, header, 'another-secret-0123456789')],
      ['stale', () => Longhaul.webhooks.verifyAsync(rawBody, header, SECRET, { nowSeconds: later })],
      ['malformed', () => Longhaul.webhooks.verifyAsync(rawBody, 'garbage', SECRET)],
      ['accepted', () => Longhaul.webhooks.verifyAsync(rawBody, header, ['old-secret-0123456789', SECRET])],
    ];
    for (const [expected, run] of cases) expect(await asyncReason(run)).toBe(expected);
  });

  it('runs where there is no node:crypto, no process and no require, as in an edge runtime', async () => {
    const bundle = await build({
      entryPoints: [join(__dirname, '..', '..', 'client', 'index.ts')],
      bundle: true,
      platform: 'neutral',
      format: 'iife',
      globalName: 'longhaul',
      write: false,
      logLevel: 'silent',
    });
    const code = bundle.outputFiles[0]?.text ?? '';
    expect(code).not.toMatch(/(?:\bfrom\s*|\brequire\(|\bimport\()["']node:/);
    // Only what a Web-standard runtime has: Web Crypto, text codecs, base64.
    const edge = createContext({ crypto: globalThis.crypto, TextEncoder, TextDecoder, btoa, URL, Headers });
    runInContext(code, edge);
    const { rawBody, headers } = await delivered(JSON.stringify(job));
    const verified = await runInContext(
      'longhaul.verifyWebhookAsync(body, headers, secret).then((event) => [event.id, event.type])',
      Object.assign(edge, { body: rawBody.toString('utf8'), headers, secret: SECRET }),
    );
    expect(verified).toEqual([EVENT_ID, 'job.succeeded']);
    const sync = runInContext(
      'try { longhaul.verifyWebhook(body, headers, secret); "accepted" } catch (e) { e.name + ": " + e.message }',
      edge,
    );
    expect(sync).toBe(
      'LonghaulUsageError: webhooks.verify needs Node 20.16 or later; in other runtimes use webhooks.verifyAsync (Web Crypto).',
    );
  });
});

describe('test webhooks', () => {
  it('signs a header the server would have signed, which verify accepts', async () => {
    const body = JSON.stringify(job);
    const t = 1_800_000_000;
    const header = await Longhaul.webhooks.generateTestHeaderString({
      payload: body,
      secret: SECRET,
      timestamp: t,
    });
    expect(header).toBe(signPayload(SECRET, body, t));
    expect(Longhaul.webhooks.verify(body, header, SECRET, { nowSeconds: t }).job).toEqual(job);
  });

  it('makes a whole webhook, its id stable for one job and status, that a receiver verifies', async () => {
    const first = await Longhaul.webhooks.signTestWebhook({ payload: job as never, secret: SECRET });
    const again = await Longhaul.webhooks.signTestWebhook({ payload: job as never, secret: SECRET });
    const failed = await Longhaul.webhooks.signTestWebhook({
      payload: { ...job, status: 'failed' } as never,
      secret: SECRET,
    });
    expect(first.body).toBe(JSON.stringify(job));
    expect(first.headers['content-type']).toBe('application/json');
    expect(first.headers['longhaul-event-id']).toMatch(/^evt_[A-Za-z0-9_-]{22}$/);
    expect(again.headers['longhaul-event-id']).toBe(first.headers['longhaul-event-id']);
    expect(failed.headers['longhaul-event-id']).not.toBe(first.headers['longhaul-event-id']);
    const event = await Longhaul.webhooks.verifyAsync(first.body, first.headers, SECRET);
    expect({ id: event.id, type: event.type }).toEqual({
      id: first.headers['longhaul-event-id'],
      type: 'job.succeeded',
    });
    const named = await Longhaul.webhooks.signTestWebhook({
      payload: first.body,
      secret: SECRET,
      eventId: 'evt_mineminemineminemineminem',
    });
    expect(Longhaul.webhooks.verify(named.body, named.headers, SECRET).id).toBe(
      'evt_mineminemineminemineminem',
    );
  });
});
