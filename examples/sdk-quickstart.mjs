// Submit a job with the SDK, follow its progress live, and verify the signed
// webhook Longhaul sends when it finishes.
//
//   npm start                              # in one terminal: the local stack
//   npx tsx examples/sdk-quickstart.mjs    # in another
//
// LONGHAUL_URL, LONGHAUL_API_KEY and LONGHAUL_WEBHOOK_SECRET default to the
// local stack's development values. In your own project, import from
// 'longhaul-client' instead of '../client/index.ts'.
import { createServer } from 'node:http';
import { Longhaul, verifyWebhook } from '../client/index.ts';

const baseUrl = process.env.LONGHAUL_URL ?? 'http://127.0.0.1:3000';
const apiKey = process.env.LONGHAUL_API_KEY ?? 'dev-key';
const webhookSecret = process.env.LONGHAUL_WEBHOOK_SECRET ?? 'dev-webhook-signing-secret';
const prompt = process.argv[2] ?? 'a lighthouse at dusk';

// 1. A receiver for the job's webhook. Verify the raw body before parsing it.
let settleWebhook;
const webhook = new Promise((resolve, reject) => {
  settleWebhook = { resolve, reject };
});
const receiver = createServer((request, response) => {
  const chunks = [];
  request.on('data', (chunk) => chunks.push(chunk));
  request.on('end', async () => {
    try {
      const event = await verifyWebhook(
        Buffer.concat(chunks),
        request.headers['longhaul-signature'],
        webhookSecret,
      );
      response.writeHead(204).end();
      settleWebhook.resolve(event);
    } catch (error) {
      response.writeHead(400).end();
      settleWebhook.reject(error);
    }
  });
});
await new Promise((resolve) => receiver.listen(0, '127.0.0.1', resolve));
// The local stack allows loopback webhook targets; in AWS use a public https URL.
const webhookUrl = `http://127.0.0.1:${receiver.address().port}/longhaul-webhook`;

// 2. One user action, one idempotency key: a retry of this request finds the same job.
const longhaul = new Longhaul({ baseUrl, apiKey });
const action = longhaul.userAction();
const { job } = await longhaul.createJob(action, {
  type: 'image.generate',
  input: { prompt },
  webhookUrl,
});
console.log(`submitted ${job.id} (${job.status}) with idempotency key ${action.idempotencyKey}`);

// 3. Follow it live (WebSocket with a stream ticket; polling if that is unavailable).
let lastProgress = -1;
const finished = await longhaul.waitForJob(job.id, {
  timeoutMs: 120_000,
  onProgress: (update) => {
    if (update.type === 'progress' && update.progress !== lastProgress) {
      lastProgress = update.progress;
      console.log(`progress ${update.status} ${update.progress}%`);
    }
  },
});
console.log(`finished ${finished.id}: ${finished.status}`);
if (finished.status === 'succeeded') console.log(`result ${JSON.stringify(finished.result)}`);

// 4. The webhook arrives once the job is finished (it is retried with backoff).
const timer = setTimeout(() => settleWebhook.reject(new Error('no webhook within 30 s')), 30_000);
try {
  const event = await webhook;
  console.log(`webhook verified: ${event.type} for ${event.job.id}`);
} finally {
  clearTimeout(timer);
  receiver.close();
}
if (finished.status !== 'succeeded') process.exitCode = 1;
