import { rmSync } from 'node:fs';
import { StopExecutionCommand } from '@aws-sdk/client-sfn';
import { PurgeQueueCommand, SendMessageCommand } from '@aws-sdk/client-sqs';
import { GetCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { executionNameOf } from '../../lambdas/domain/job';
import {
  documentClient,
  pollUntil,
  queueDepth,
  type RunningLocalStack,
  sfnClient,
  sqsClient,
  startLocalStack,
  temporaryDataDir,
} from '../../local/harness/local-stack';
import { type RunningSimulator, startSimulator } from '../../local/provider-sim/simulator';
import { apiCall, UNTHROTTLED_API } from './support/api';
import { simulatorCall } from './support/simulator';

/**
 * Convergence on the local stack: lost webhooks, a stalled provider, lost
 * messages, killed executions and a killed stack all end with every job in
 * its true state, one charge per accepted job and the in-flight limit held.
 */

jest.setTimeout(180_000);

const KEY = 'converge-key-4d2a';
const OTHER = 'converge-other-key-8b1f';
const ADMIN = 'converge-admin-key-0c3e';
const SLOT_KEY = { pk: 'SLOTS', sk: 'SLOTS' };
const TERMINAL = ['succeeded', 'failed', 'canceled', 'needs_review'];
const baseEnv = {
  LONGHAUL_API_KEYS: `${KEY}:acme,${OTHER}:globex`,
  LONGHAUL_ADMIN_KEY: ADMIN,
  ...UNTHROTTLED_API,
  SIM_JOB_MS: '500',
  PROVIDER_TIMEOUT_MS: '1000',
  SLOT_WAIT_MAX_SECONDS: '1',
  RECONCILE_INTERVAL_MS: '2000',
  QUEUED_GRACE_MS: '2000',
};

function client(stack: RunningLocalStack, providerUrl?: string) {
  const provider = providerUrl ?? stack.endpoints.providerUrl;
  let counter = 0;
  const api = (method: string, path: string, options: { body?: unknown; key?: string; idem?: string } = {}) =>
    apiCall(() => stack.baseUrl, options.key ?? KEY)(method, path, options.body, options.idem);
  const sim = simulatorCall(provider);
  const self = {
    api,
    sim,
    submit: async (prompt = 'converge') => {
      const created = await api('POST', '/v1/jobs', {
        body: { type: 'image.generate', input: { prompt } },
        idem: `cv-${process.pid}-${Date.now()}-${++counter}`,
      });
      if (created.status !== 202)
        throw new Error(`submit answered ${created.status}: ${JSON.stringify(created.body)}`);
      return created.body.id as string;
    },
    until: (jobId: string, done: (job: any) => boolean, timeoutMs = 30_000) =>
      pollUntil(
        async () => {
          const { body } = await api('GET', `/v1/jobs/${jobId}`);
          return done(body) ? body : undefined;
        },
        { timeoutMs, intervalMs: 100, description: `job ${jobId}` },
      ),
    settled: (jobId: string, timeoutMs = 30_000) =>
      self.until(jobId, (job) => TERMINAL.includes(job.status), timeoutMs),
    holders: async (): Promise<string[]> => {
      const { Item } = await documentClient(stack.endpoints).send(
        new GetCommand({ TableName: stack.endpoints.jobTableName, Key: SLOT_KEY, ConsistentRead: true }),
      );
      return Item?.holders ? [...(Item.holders as Set<string>)] : [];
    },
  };
  return self;
}

describe('convergence through the reconciler', () => {
  let stack: RunningLocalStack;
  let c: ReturnType<typeof client>;
  beforeAll(async () => {
    stack = await startLocalStack({
      env: { ...baseEnv, MAX_IN_FLIGHT: '1', JOB_TIMEOUT_MS: '12000', AWAIT_HEARTBEAT_SECONDS: '10' },
    });
    c = client(stack);
  });
  afterAll(async () => {
    await stack?.stop();
  });
  beforeEach(async () => {
    await c.sim('/_sim/reset', {});
  });

  it('finishes a job whose provider webhooks are all lost within two reconciler periods', async () => {
    await c.sim('/_sim/faults', { mode: 'lose-webhooks', count: 1 });
    const id = await c.submit();
    const started = await c.until(id, (job) => job.status === 'running');
    const job = await c.settled(id, 15_000);
    expect(job.status).toBe('succeeded');
    // The provider ran 0.5 s; without webhooks, the reconciler's poll finishes it.
    expect(Date.parse(job.finishedAt) - Date.parse(started.startedAt)).toBeLessThan(500 + 2 * 2000 + 2000);
    const events = (await c.api('GET', `/v1/jobs/${id}/events`)).body.items.map(
      (e: { type: string }) => e.type,
    );
    expect(events).toContain('reconciler.completed_from_provider');
    expect((await c.sim('/_sim/ledger')).submissions).toHaveLength(1);
  });

  it('sends a stalled job to review after the job timeout, and an operator resolves it', async () => {
    await c.sim('/_sim/faults', { mode: 'stall', count: 1 });
    const id = await c.submit();
    const reviewed = await c.until(id, (job) => job.status === 'needs_review', 30_000);
    expect(reviewed.error.code).toMatch(/timeout/);

    const listed = await c.api('GET', '/v1/admin/jobs?status=needs_review', { key: ADMIN });
    expect(listed.status).toBe(200);
    expect(listed.body.items.map((job: { id: string }) => job.id)).toContain(id);
    expect((await c.api('GET', '/v1/admin/jobs?status=needs_review')).status).toBe(403);
    expect(
      (await c.api('POST', `/v1/admin/jobs/${id}/resolve`, { body: { outcome: 'failed', note: 'x' } }))
        .status,
    ).toBe(403);

    const resolved = await c.api('POST', `/v1/admin/jobs/${id}/resolve`, {
      key: ADMIN,
      body: { outcome: 'failed', note: 'provider confirmed it hung' },
    });
    expect(resolved).toMatchObject({
      status: 200,
      body: { status: 'failed', error: { code: 'resolved_failed', message: 'provider confirmed it hung' } },
    });
    const events = (await c.api('GET', `/v1/jobs/${id}/events`)).body.items;
    expect(events).toContainEqual(
      expect.objectContaining({ type: 'operator.resolved', detail: 'failed: provider confirmed it hung' }),
    );
    expect(await c.holders()).toEqual([]);
  });

  it('reclaims a slot held by a job that already finished, so the queue moves again', async () => {
    const finished = await c.settled(await c.submit());
    expect(finished.status).toBe('succeeded');
    // A crash between finishing and releasing leaves the only slot taken.
    await documentClient(stack.endpoints).send(
      new UpdateCommand({
        TableName: stack.endpoints.jobTableName,
        Key: SLOT_KEY,
        UpdateExpression: 'ADD inFlight :one, holders :job',
        ExpressionAttributeValues: { ':one': 1, ':job': new Set([finished.id]) },
      }),
    );
    const waiting = await c.submit();
    const job = await c.settled(waiting, 20_000);
    expect(job.status).toBe('succeeded');
    const events = (await c.api('GET', `/v1/jobs/${finished.id}/events`)).body.items.map(
      (e: { type: string }) => e.type,
    );
    expect(events).toContain('reconciler.slot_released');
  });

  it('restarts a running job whose execution was killed, without a second charge', async () => {
    await c.sim('/_sim/config', { jobMs: 3000 });
    const id = await c.submit();
    const running = await c.until(id, (job) => job.status === 'running');
    await pollUntil(async () => (await c.sim('/_sim/ledger')).running === 1, {
      description: 'the provider to run it',
    });
    const arn = `${stack.endpoints.stateMachineArn.replace(':stateMachine:', ':execution:')}:${executionNameOf(running)}`;
    await sfnClient(stack.endpoints).send(
      new StopExecutionCommand({ executionArn: arn, cause: 'killed by a test' }),
    );

    const job = await c.settled(id, 30_000);
    expect(job.status).toBe('succeeded');
    expect(running.id).toBe(id);
    expect((await c.sim('/_sim/ledger')).submissions).toHaveLength(1);
    const events = (await c.api('GET', `/v1/jobs/${id}/events`)).body.items.map(
      (e: { type: string }) => e.type,
    );
    expect(events).toContain('reconciler.restarted');
    await c.sim('/_sim/config', { jobMs: 500 });
  });

  it('re-enqueues a queued job whose message was lost', async () => {
    // A job at the provider holds the only slot so the next one stays queued; its message is lost;
    // the reconciler re-enqueues it, and it runs once the first job is canceled and frees the slot.
    // The slot is held by a real job, not a made-up holder: the reconciler frees a slot whose
    // holder does not exist at its next pass, which can come before the dispatcher first looks at
    // the job. The holder runs until canceled: were it to finish first, its release would hand the
    // slot to the waiting job and nothing would be left for the reconciler to find.
    await c.sim('/_sim/config', { jobMs: 60_000 });
    const holder = await c.submit('holds the slot');
    await pollUntil(async () => (await c.sim('/_sim/ledger')).running === 1, {
      description: 'the provider to run the slot holder',
    });
    await c.sim('/_sim/config', { jobMs: 500 });
    const id = await c.submit();
    // A job waiting for a slot gets a new (delayed) message each time the dispatcher looks, so one
    // purge can miss the message the dispatcher holds: purge until the queue stays empty.
    const sqs = sqsClient(stack.endpoints);
    // Each poll a second apart: empty now means it stayed empty since the last purge.
    await pollUntil(
      async () => {
        if ((await queueDepth(sqs, stack.endpoints.jobQueueUrl)) === 0) return true;
        await sqs.send(new PurgeQueueCommand({ QueueUrl: stack.endpoints.jobQueueUrl }));
        return false;
      },
      { timeoutMs: 15_000, intervalMs: 1000, description: "the waiting job's message to be lost" },
    );
    expect((await c.api('GET', `/v1/jobs/${id}`)).body.status).toBe('queued');
    await pollUntil(
      async () =>
        (await c.api('GET', `/v1/jobs/${id}/events`)).body.items.some(
          (e: { type: string }) => e.type === 'reconciler.requeued',
        ),
      { timeoutMs: 20_000, intervalMs: 250, description: 'the reconciler to re-enqueue the job' },
    );
    expect((await c.api('POST', `/v1/jobs/${holder}/cancel`)).status).toBe(202);
    expect((await c.settled(holder, 30_000)).status).toBe('canceled');
    const job = await c.settled(id, 30_000);
    expect(job.status).toBe('succeeded');
  });

  it('moves the dead-letter queue back with the admin redrive', async () => {
    await sqsClient(stack.endpoints).send(
      new SendMessageCommand({
        QueueUrl: stack.endpoints.deadLetterQueueUrl,
        MessageBody: '{"jobId":"job_bbbbbbbbbbbbbbbbbbbbbbbbbb"}',
      }),
    );
    expect((await c.api('POST', '/v1/admin/dlq/redrive')).status).toBe(403);
    const redrive = await c.api('POST', '/v1/admin/dlq/redrive', { key: ADMIN });
    expect(redrive.status).toBe(202);
    await pollUntil(
      async () => (await queueDepth(sqsClient(stack.endpoints), stack.endpoints.deadLetterQueueUrl)) === 0,
      { timeoutMs: 10_000, description: 'the dead-letter queue to drain' },
    );
  });
});

describe('live progress over the WebSocket', () => {
  let stack: RunningLocalStack;
  let c: ReturnType<typeof client>;
  beforeAll(async () => {
    stack = await startLocalStack({
      env: { ...baseEnv, MAX_IN_FLIGHT: '2', SIM_JOB_MS: '5000', SIM_PROGRESS_HZ: '10' },
    });
    c = client(stack);
  });
  afterAll(async () => {
    await stack?.stop();
  });

  it('streams every tick in order and the final status, while storage sees about one write a second', async () => {
    const id = await c.submit('watched');
    const url = `${stack.baseUrl.replace('http', 'ws')}/v1/stream?jobId=${id}&apiKey=${KEY}`;
    const messages: any[] = [];
    const socket = new WebSocket(url);
    socket.addEventListener('message', (event) => messages.push(JSON.parse(String(event.data))));
    await new Promise((resolve, reject) => {
      socket.addEventListener('open', resolve);
      socket.addEventListener('error', reject);
    });

    // Watch the stored progress while the job runs: each distinct value is one write.
    const stored = new Set<number>();
    const watcher = setInterval(async () => {
      const { Item } = await documentClient(stack.endpoints).send(
        new GetCommand({ TableName: stack.endpoints.jobTableName, Key: { pk: id, sk: 'JOB' } }),
      );
      if (Item?.status === 'running') stored.add(Item.progress as number);
    }, 50);
    try {
      await pollUntil(() => messages.some((m) => m.type === 'status' && m.status === 'succeeded'), {
        timeoutMs: 30_000,
        description: 'the final status over the socket',
      });
    } finally {
      clearInterval(watcher);
      socket.close();
    }

    const ticks = messages.filter((m) => m.type === 'progress');
    expect(ticks.length).toBeGreaterThanOrEqual(45); // 5 s at 10 per second: at least 90 %
    const values = ticks.map((m) => m.progress);
    expect(values).toEqual([...values].sort((a, b) => a - b));
    expect(ticks.every((m) => m.jobId === id && m.status === 'running' && typeof m.at === 'string')).toBe(
      true,
    );
    // About one persisted value per second of a 5 s job (plus the start).
    expect(stored.size).toBeLessThanOrEqual(8);
    expect(stored.size).toBeGreaterThanOrEqual(3);
  });

  it("refuses another tenant's key and a bad key", async () => {
    const id = await c.submit('private');
    for (const key of [OTHER, 'not-a-key']) {
      const socket = new WebSocket(
        `${stack.baseUrl.replace('http', 'ws')}/v1/stream?jobId=${id}&apiKey=${key}`,
      );
      const outcome = await new Promise<string>((resolve) => {
        socket.addEventListener('open', () => resolve('open'));
        socket.addEventListener('error', () => resolve('refused'));
        socket.addEventListener('close', () => resolve('refused'));
      });
      socket.close();
      expect(outcome).toBe('refused');
    }
  });
});

describe('a killed stack', () => {
  let simulator: RunningSimulator;
  const dataDir = temporaryDataDir();
  beforeAll(async () => {
    simulator = await startSimulator({
      port: 0,
      jobMs: 1000,
      progressHz: 5,
      idempotent: true,
      webhookSecret: 'dev-provider-webhook-secret',
    });
  });
  afterAll(async () => {
    await simulator?.close();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('loses no job, charges nothing twice and keeps the limit across a SIGKILL mid-burst', async () => {
    const env = { ...baseEnv, MAX_IN_FLIGHT: '3', PROVIDER_URL: simulator.url };
    const first = await startLocalStack({ env, dataDir });
    const c1 = client(first, simulator.url);
    const ids = await Promise.all(Array.from({ length: 20 }, (_, i) => c1.submit(`burst ${i}`)));
    await pollUntil(async () => (await c1.sim('/_sim/ledger')).submissions.length >= 5, {
      timeoutMs: 30_000,
      description: 'the burst to be under way',
    });
    first.kill();
    await first.exited;

    const second = await startLocalStack({ env, dataDir });
    try {
      const c2 = client(second, simulator.url);
      const jobs = await Promise.all(ids.map((id) => c2.settled(id, 120_000)));
      for (const job of jobs) {
        expect(TERMINAL).toContain(job.status);
        if (job.status !== 'succeeded')
          expect(job.error).toEqual(expect.objectContaining({ code: expect.any(String) }));
      }
      expect(jobs.filter((job) => job.status === 'succeeded').length).toBeGreaterThanOrEqual(18);
      const ledger = await c2.sim('/_sim/ledger');
      const keys = ledger.submissions.map((s: { idempotencyKey: string }) => s.idempotencyKey);
      expect(new Set(keys).size).toBe(keys.length);
      expect(ledger.maxConcurrent).toBeLessThanOrEqual(3);
      await pollUntil(async () => (await c2.holders()).length === 0, {
        description: 'every slot to be released',
      });
    } finally {
      await second.stop();
    }
  });
});
