import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ReceiveMessageCommand } from '@aws-sdk/client-sqs';
import { loadSettings } from '../../config/settings';
import {
  pollUntil,
  queueDepth,
  type RunningLocalStack,
  sqsClient,
  startLocalStack,
  temporaryDataDir,
} from '../../local/harness/local-stack';
import { synthesizedTemplatePath, TEMPLATE_ENV, type TemplateJson } from '../../local/template';

/**
 * Lambda's recursive loop detection against the dispatcher's re-enqueue loop
 * (SQS → dispatch → SQS): a job that waits for a slot through more than 16
 * deferrals is dead-lettered unless the dispatch function's `RecursiveLoop`
 * is `Allow` in the synthesized template. One slot, held by a long job; the
 * second job defers about once a second.
 */

jest.setTimeout(240_000);

const KEY = 'recursion-key-61f0';
const env = {
  LONGHAUL_API_KEYS: `${KEY}:acme`,
  MAX_IN_FLIGHT: '1',
  SLOT_WAIT_MAX_SECONDS: '1',
  // A visibility timeout of 6 s, so a stopped message reaches the DLQ after 5 receives in about 30 s.
  DISPATCH_TIMEOUT_SECONDS: '1',
  // Long enough that the reconciler does not start a new chain for the waiting job.
  QUEUED_GRACE_MS: '600000',
  RECONCILE_INTERVAL_MS: '2000',
};

async function submit(stack: RunningLocalStack, name: string): Promise<string> {
  const response = await fetch(`${stack.baseUrl}/v1/jobs`, {
    method: 'POST',
    headers: {
      'x-api-key': KEY,
      'content-type': 'application/json',
      'idempotency-key': `${name}-${Date.now()}`,
    },
    body: JSON.stringify({ type: 'image.generate', input: { prompt: name } }),
  });
  expect(response.status).toBe(202);
  return ((await response.json()) as { id: string }).id;
}

async function job(stack: RunningLocalStack, id: string): Promise<{ status: string }> {
  const response = await fetch(`${stack.baseUrl}/v1/jobs/${id}`, { headers: { 'x-api-key': KEY } });
  return (await response.json()) as { status: string };
}

/** Starts a job that holds the only slot, then one that waits for it; returns the waiting job. */
async function waitingBehindAHeldSlot(stack: RunningLocalStack): Promise<string> {
  const holder = await submit(stack, 'holder');
  await pollUntil(async () => (await job(stack, holder)).status === 'running', {
    timeoutMs: 30_000,
    description: 'the first job to hold the slot',
  });
  return submit(stack, 'waiter');
}

async function deadLettered(stack: RunningLocalStack): Promise<string[]> {
  const { Messages = [] } = await sqsClient(stack.endpoints).send(
    new ReceiveMessageCommand({
      QueueUrl: stack.endpoints.deadLetterQueueUrl,
      MaxNumberOfMessages: 10,
      VisibilityTimeout: 0,
    }),
  );
  return Messages.map((message) => (JSON.parse(message.Body ?? '{}') as { jobId: string }).jobId);
}

// The two stacks run side by side: each test waits on timers far more than it computes.
test.concurrent('without RecursiveLoop Allow, a job waiting through more than 16 deferrals is dead-lettered', async () => {
  const dir = temporaryDataDir();
  const doctored = join(dir, 'template.json');
  const template = JSON.parse(
    readFileSync(synthesizedTemplatePath(loadSettings({ ...process.env, ...env })), 'utf8'),
  ) as TemplateJson & { Resources: Record<string, { Properties?: Record<string, unknown> }> };
  const dispatch = Object.values(template.Resources).filter(
    (resource) => resource.Properties?.RecursiveLoop !== undefined,
  );
  expect(dispatch).toHaveLength(1);
  for (const resource of dispatch) delete resource.Properties?.RecursiveLoop;
  writeFileSync(doctored, JSON.stringify(template));

  const stack = await startLocalStack({ env: { ...env, SIM_JOB_MS: '120000', [TEMPLATE_ENV]: doctored } });
  try {
    const waiter = await waitingBehindAHeldSlot(stack);
    const dead = await pollUntil(async () => (await deadLettered(stack)).includes(waiter), {
      timeoutMs: 150_000,
      intervalMs: 1000,
      description: 'the waiting job in the dead-letter queue',
    });
    expect(dead).toBe(true);
    expect(stack.output()).toMatch(/recursive loop detected/);
  } finally {
    await stack.stop();
    rmSync(dir, { recursive: true, force: true });
  }
});

test.concurrent('with the template as synthesized, the same wait ends with the job run and nothing dead-lettered', async () => {
  // The holder runs about 25 s: the waiter defers about once a second, well past Lambda's 16.
  const stack = await startLocalStack({ env: { ...env, SIM_JOB_MS: '25000' } });
  try {
    const waiter = await waitingBehindAHeldSlot(stack);
    await pollUntil(async () => (await job(stack, waiter)).status === 'succeeded', {
      timeoutMs: 150_000,
      intervalMs: 1000,
      description: 'the waiting job to succeed',
    });
    expect(await queueDepth(sqsClient(stack.endpoints), stack.endpoints.deadLetterQueueUrl)).toBe(0);
    expect(stack.output()).not.toMatch(/recursive loop detected/);
  } finally {
    await stack.stop();
  }
});
