import { rmSync } from 'node:fs';
import { Longhaul, type WaitUpdate } from '../../client';
import { jobIdOf } from '../../lambdas/domain/job';
import {
  pollUntil,
  type RunningLocalStack,
  startLocalStack,
  temporaryDataDir,
} from '../../local/harness/local-stack';
import { type RunningSimulator, startSimulator } from '../../local/provider-sim/simulator';

/**
 * waitForJob across a 60-second outage of the whole API: the local stack is
 * stopped while a job runs at the provider (which, like a real one, stays up)
 * and started again on the same data directory and port. The wait neither
 * fails nor gives up; it says it is waiting out an outage, and finishes with
 * the job once the restarted stack has caught up with the provider.
 */

jest.setTimeout(300_000);

const KEY = 'outage-key-51c0';
const OUTAGE_MS = 60_000;

let simulator: RunningSimulator;
const dataDir = temporaryDataDir();
const stacks: RunningLocalStack[] = [];

beforeAll(async () => {
  simulator = await startSimulator({
    port: 0,
    // Long enough to be running when the stack stops; it finishes while the stack is down.
    jobMs: 20_000,
    progressHz: 2,
    idempotent: true,
    webhookSecret: 'dev-provider-webhook-secret',
  });
});

afterAll(async () => {
  for (const stack of stacks) await stack.stop();
  await simulator?.close();
  rmSync(dataDir, { recursive: true, force: true });
});

it('survives a 60 s outage of the local stack and finishes', async () => {
  const env = {
    LONGHAUL_API_KEYS: `${KEY}:acme`,
    PROVIDER_URL: simulator.url,
    RECONCILE_INTERVAL_MS: '2000',
    QUEUED_GRACE_MS: '2000',
  };
  const first = await startLocalStack({ env, dataDir });
  stacks.push(first);
  const port = new URL(first.baseUrl).port;
  const client = new Longhaul({ baseUrl: first.baseUrl, apiKey: KEY });
  const { job } = await client.createJob(client.userAction(), {
    type: 'image.generate',
    input: { prompt: 'through the storm' },
  });
  await pollUntil(async () => (await client.getJob(job.id)).status === 'running', {
    timeoutMs: 30_000,
    description: 'the job to be running at the provider',
  });

  const updates: WaitUpdate[] = [];
  let settled = false;
  const waiting = client
    .waitForJob(job.id, {
      onProgress: (update) => updates.push(update),
      // Retries every few seconds at most, so the restart is noticed soon.
      retry: { baseDelayMs: 500, maxDelayMs: 4000 },
      signal: AbortSignal.timeout(240_000),
    })
    .finally(() => {
      settled = true;
    });
  await pollUntil(async () => updates.some((u) => u.type === 'stream' && u.state === 'open'), {
    description: 'the wait to follow the job live',
  });

  await first.stop();
  const stoppedAt = Date.now();
  await pollUntil(
    async () => Date.now() - stoppedAt >= OUTAGE_MS && updates.filter((u) => u.type === 'outage').length >= 5,
    { timeoutMs: OUTAGE_MS + 30_000, intervalMs: 1000, description: 'a 60 s outage, waited out' },
  );
  expect(settled).toBe(false);
  expect(updates.some((u) => u.type === 'stream' && u.state === 'closed')).toBe(true);

  const second = await startLocalStack({ env: { ...env, PORT: port }, dataDir });
  stacks.push(second);
  expect(second.baseUrl).toBe(first.baseUrl);

  const done = await waiting;
  expect(done).toMatchObject({ id: job.id, status: 'succeeded', progress: 100 });
  const outages = updates.filter((u) => u.type === 'outage');
  // Capped: however long the outage, the client retried every few seconds.
  expect(Math.max(...outages.map((u) => (u.type === 'outage' ? u.retryInMs : 0)))).toBeLessThanOrEqual(4000);
  const restored = updates.find((u) => u.type === 'restored');
  expect(restored?.type === 'restored' && restored.downMs).toBeGreaterThanOrEqual(OUTAGE_MS);
  const ledger = (await (await fetch(`${simulator.url}/_sim/ledger`)).json()) as {
    submissions: { idempotencyKey: string }[];
  };
  expect(ledger.submissions.filter((s) => jobIdOf(s.idempotencyKey) === job.id)).toHaveLength(1);
});
