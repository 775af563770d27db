import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
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

/** One webhook as the server delivers it: the raw body and the Longhaul-Signature header received. */
async function delivered(body: string): Promise<{ rawBody: Buffer; header: string }> {
  let received: { rawBody: Buffer; header: string } | undefined;
  const server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      received = { rawBody: Buffer.concat(chunks), header: String(request.headers['longhaul-signature']) };
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
      eventId: 'evt_clientclientclientclie',
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
