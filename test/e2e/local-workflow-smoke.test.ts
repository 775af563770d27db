import { rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { GetSecretValueCommand, SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import { DescribeExecutionCommand } from '@aws-sdk/client-sfn';
import { API_KEY_HEADER } from '../../config/layout';
import { executionNameOf, providerKeyOf } from '../../lambdas/domain/job';
import {
  pollUntil,
  type RunningLocalStack,
  sfnClient,
  startLocalStack,
  temporaryDataDir,
} from '../../local/harness/local-stack';
import { DEFAULT_REPLICATE_WEBHOOK_SECRET } from '../../local/provider-sim/defaults';
import { SAMPLE_PNG_BASE64 } from '../../local/provider-sim/outputs';
import { type Ledger, type RunningSimulator, startSimulator } from '../../local/provider-sim/simulator';

/**
 * The whole local stack on one job: HTTP intake, the queue and the dispatch
 * handler behind the event source mapping, the synthesized workflow on the
 * local Step Functions endpoint, the provider and its webhooks, the output
 * in S3. Jobs at the provider take 300 ms, so a job is done in about a second.
 */

const START_TIMEOUT_MS = 60_000;
const JOB_TIMEOUT_MS = 30_000;
const KEY = 'smoke-key-2b9d41';
const PROVIDER_WEBHOOK_SECRET = 'smoke-provider-webhook-secret-5e0c';
const env = {
  LONGHAUL_API_KEYS: `${KEY}:smoke`,
  SIM_JOB_MS: '300',
  SIM_PROGRESS_HZ: '10',
  PROVIDER_WEBHOOK_SECRET,
};
const PNG_SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
const TERMINAL = new Set(['succeeded', 'failed', 'canceled', 'needs_review']);

interface Job {
  readonly id: string;
  readonly status: string;
  readonly createdAt: string;
  readonly progress: number;
  readonly result: { readonly outputUrl?: string; readonly contentType?: string } | null;
  readonly error: unknown;
}

async function submitImageJob(stack: RunningLocalStack, idempotencyKey: string): Promise<Job> {
  const response = await fetch(`${stack.baseUrl}/v1/jobs`, {
    method: 'POST',
    headers: { [API_KEY_HEADER]: KEY, 'idempotency-key': idempotencyKey, 'content-type': 'application/json' },
    body: JSON.stringify({ type: 'image.generate', input: { prompt: 'a lighthouse at dusk', width: 256 } }),
  });
  expect(response.status).toBe(202);
  return (await response.json()) as Job;
}

async function readJob(stack: RunningLocalStack, id: string): Promise<Job> {
  const response = await fetch(`${stack.baseUrl}/v1/jobs/${id}`, { headers: { [API_KEY_HEADER]: KEY } });
  if (response.status !== 200) throw new Error(`GET /v1/jobs/${id} answered ${response.status}`);
  return (await response.json()) as Job;
}

/** The job once it is terminal (or in review); a job that never gets there fails with the stack's output. */
async function finishedJob(stack: RunningLocalStack, id: string): Promise<Job> {
  try {
    return await pollUntil(
      async () => {
        const job = await readJob(stack, id);
        return TERMINAL.has(job.status) ? job : undefined;
      },
      { timeoutMs: JOB_TIMEOUT_MS, intervalMs: 100, description: `job ${id} to finish` },
    );
  } catch (error) {
    throw new Error(
      `${(error as Error).message}\n--- local stack output (tail) ---\n${stack.output().slice(-6000)}`,
    );
  }
}

async function ledgerOf(providerUrl: string): Promise<Ledger> {
  const response = await fetch(`${providerUrl}/_sim/ledger`);
  expect(response.status).toBe(200);
  return (await response.json()) as Ledger;
}

/** A succeeded job, with what the stack said about it when it did not succeed. */
function expectSucceeded(job: Job, stack: RunningLocalStack): void {
  if (job.status !== 'succeeded') {
    throw new Error(
      `job ${job.id} ended ${job.status} with error ${JSON.stringify(job.error)}\n` +
        `--- local stack output (tail) ---\n${stack.output().slice(-6000)}`,
    );
  }
}

async function expectPngAt(url: string | undefined): Promise<void> {
  expect(url).toEqual(expect.stringMatching(/^http:\/\/127\.0\.0\.1:\d+\//));
  const response = await fetch(url as string);
  expect(response.status).toBe(200);
  const bytes = Buffer.from(await response.arrayBuffer());
  expect(bytes.subarray(0, PNG_SIGNATURE.length)).toEqual(PNG_SIGNATURE);
  expect(bytes).toEqual(Buffer.from(SAMPLE_PNG_BASE64, 'base64'));
}

describe('a job on the local stack with its own simulated provider', () => {
  let stack: RunningLocalStack;

  beforeAll(async () => {
    stack = await startLocalStack({ env });
  }, START_TIMEOUT_MS);

  afterAll(() => stack?.stop());

  it('publishes the workflow, secrets and provider endpoints in local.json', () => {
    expect(stack.endpoints).toMatchObject({
      sfnEndpoint: expect.stringMatching(/^http:\/\/127\.0\.0\.1:\d+$/),
      stateMachineArn: 'arn:aws:states:us-east-1:000000000000:stateMachine:longhaul-jobs',
      secretsEndpoint: expect.stringMatching(/^http:\/\/127\.0\.0\.1:\d+$/),
      providerUrl: expect.stringMatching(/^http:\/\/127\.0\.0\.1:\d+$/),
      outputBucketName: 'longhaul-outputs',
    });
    expect(stack.output()).toContain(`simulated provider at ${stack.endpoints.providerUrl}`);
  });

  it(
    'takes a job submitted over HTTP to succeeded, with a fetchable PNG and exactly one provider charge',
    async () => {
      const submitted = await submitImageJob(stack, `smoke-${Date.now()}`);
      expect(submitted.status).toBe('queued');

      const job = await finishedJob(stack, submitted.id);
      expectSucceeded(job, stack);
      expect(job.progress).toBe(100);
      expect(job.result?.contentType).toBe('image/png');
      await expectPngAt(job.result?.outputUrl);

      const ledger = await ledgerOf(stack.endpoints.providerUrl);
      expect(ledger.submissions).toEqual([
        {
          id: expect.stringMatching(/^gen_/),
          idempotencyKey: providerKeyOf(job),
          acceptedAt: expect.any(String),
          finishedAt: expect.any(String),
          outcome: 'succeeded',
        },
      ]);
      expect(ledger.running).toBe(0);

      // The workflow ran on the local Step Functions endpoint, as an execution named after the job and its creation.
      const sfn = sfnClient(stack.endpoints);
      try {
        // The job is succeeded at finalize; its execution ends a moment later, after notify.
        const execution = await pollUntil(
          async () => {
            const described = await sfn.send(
              new DescribeExecutionCommand({
                executionArn: `${stack.endpoints.stateMachineArn.replace(':stateMachine:', ':execution:')}:${executionNameOf(job)}`,
              }),
            );
            return described.status === 'RUNNING' ? undefined : described;
          },
          { description: 'the execution to end' },
        );
        expect(execution.status).toBe('SUCCEEDED');
        expect(JSON.parse(execution.input ?? '{}')).toMatchObject({ jobId: job.id });
      } finally {
        sfn.destroy();
      }
    },
    JOB_TIMEOUT_MS + 10_000,
  );

  it('serves the handlers their secrets from the local Secrets Manager, and nothing else', async () => {
    const secrets = new SecretsManagerClient({
      region: stack.endpoints.region,
      endpoint: stack.endpoints.secretsEndpoint,
      credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
    });
    try {
      const provider = await secrets.send(
        new GetSecretValueCommand({ SecretId: 'longhaul/provider/longhaul-http' }),
      );
      expect(provider.ARN).toMatch(
        /^arn:aws:secretsmanager:us-east-1:000000000000:secret:longhaul\/provider\/longhaul-http-[A-Za-z0-9]{6}$/,
      );
      expect(JSON.parse(provider.SecretString ?? '{}')).toEqual({
        baseUrl: stack.endpoints.providerUrl,
        webhookSecret: PROVIDER_WEBHOOK_SECRET,
      });
      // Each provider has a secret of its own, pointing at its dialect of the simulator.
      const replicate = await secrets.send(
        new GetSecretValueCommand({ SecretId: 'longhaul/provider/replicate' }),
      );
      expect(JSON.parse(replicate.SecretString ?? '{}')).toEqual({
        baseUrl: `${stack.endpoints.providerUrl}/replicate/v1`,
        // The simulator checks no key unless PROVIDER_API_KEY is set; Replicate's SDK insists on one.
        apiKey: expect.any(String),
        webhookSecret: DEFAULT_REPLICATE_WEBHOOK_SECRET,
      });
      const deepgram = await secrets.send(
        new GetSecretValueCommand({ SecretId: 'longhaul/provider/deepgram' }),
      );
      expect(JSON.parse(deepgram.SecretString ?? '{}')).toMatchObject({
        baseUrl: `${stack.endpoints.providerUrl}/deepgram`,
      });
      const byArn = await secrets.send(new GetSecretValueCommand({ SecretId: provider.ARN }));
      expect(byArn.VersionId).toBe(provider.VersionId);
      expect(byArn.CreatedDate).toBeInstanceOf(Date);
      await expect(
        secrets.send(new GetSecretValueCommand({ SecretId: 'longhaul/other' })),
      ).rejects.toMatchObject({
        name: 'ResourceNotFoundException',
        $metadata: { httpStatusCode: 400 },
      });
    } finally {
      secrets.destroy();
    }
    // Handlers read secrets from Secrets Manager, never from the environment, and the stack never logs them.
    expect(stack.output()).not.toContain(PROVIDER_WEBHOOK_SECRET);
  });
});

describe('a job on the local stack with PROVIDER_URL', () => {
  let simulator: RunningSimulator;
  let stack: RunningLocalStack;

  beforeAll(async () => {
    simulator = await startSimulator({
      port: 0,
      jobMs: 300,
      progressHz: 10,
      idempotent: true,
      webhookSecret: PROVIDER_WEBHOOK_SECRET,
    });
    // SIM_PORT is the running provider's own port: a stack that started a simulator anyway could not.
    stack = await startLocalStack({
      env: { ...env, PROVIDER_URL: simulator.url, SIM_PORT: String(simulator.port) },
    });
  }, START_TIMEOUT_MS);

  afterAll(async () => {
    await stack?.stop();
    await simulator?.close();
  });

  it(
    'starts no simulator of its own and sends the job to the one at PROVIDER_URL',
    async () => {
      expect(stack.endpoints.providerUrl).toBe(simulator.url);
      expect(stack.output()).not.toContain('simulated provider at');

      const submitted = await submitImageJob(stack, `external-${Date.now()}`);
      const job = await finishedJob(stack, submitted.id);
      expectSucceeded(job, stack);
      await expectPngAt(job.result?.outputUrl);

      const ledger = await ledgerOf(simulator.url);
      expect(ledger.submissions).toEqual([
        {
          id: expect.stringMatching(/^gen_/),
          idempotencyKey: providerKeyOf(job),
          acceptedAt: expect.any(String),
          finishedAt: expect.any(String),
          outcome: 'succeeded',
        },
      ]);
    },
    JOB_TIMEOUT_MS + 10_000,
  );

  it('leaves the provider running when it stops', async () => {
    await stack.stop();
    expect(await stack.exited).toEqual({ code: 0, signal: null });
    expect((await ledgerOf(simulator.url)).submissions).toHaveLength(1);
  }, 15_000);
});

describe('stopping the local stack', () => {
  it(
    'exits 0 promptly on SIGTERM while a job is at the provider',
    async () => {
      const stack = await startLocalStack({ env: { ...env, SIM_JOB_MS: '60000' } });
      try {
        const submitted = await submitImageJob(stack, `stop-${Date.now()}`);
        await pollUntil(async () => (await ledgerOf(stack.endpoints.providerUrl)).running === 1, {
          timeoutMs: JOB_TIMEOUT_MS,
          description: `job ${submitted.id} to reach the provider`,
        });
        const stopping = Date.now();
        await stack.stop();
        expect(await stack.exited).toEqual({ code: 0, signal: null });
        expect(Date.now() - stopping).toBeLessThan(5000);
      } finally {
        await stack.stop();
      }
    },
    START_TIMEOUT_MS + JOB_TIMEOUT_MS,
  );
});

/** A port nobody listens on right now. */
async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolveListen) => server.listen(0, '127.0.0.1', resolveListen));
  const { port } = server.address() as { port: number };
  await new Promise((resolveClose) => server.close(resolveClose));
  return port;
}

describe('restarting the local stack while a job is at the provider', () => {
  it(
    'resumes the workflow on the same data directory and finishes the job with one charge',
    async () => {
      // The provider outlives the stack, as a real one does, and its webhooks go
      // to the port the job was submitted from, so both runs use the same one.
      const simulator = await startSimulator({
        port: 0,
        jobMs: 4000,
        progressHz: 10,
        idempotent: true,
        webhookSecret: PROVIDER_WEBHOOK_SECRET,
      });
      const dataDir = temporaryDataDir();
      const restartEnv = { ...env, PROVIDER_URL: simulator.url, PORT: String(await freePort()) };
      let second: RunningLocalStack | undefined;
      try {
        const first = await startLocalStack({ dataDir, env: restartEnv });
        let id: string;
        try {
          id = (await submitImageJob(first, `restart-${Date.now()}`)).id;
          await pollUntil(async () => (await ledgerOf(simulator.url)).running === 1, {
            timeoutMs: JOB_TIMEOUT_MS,
            description: `job ${id} to reach the provider`,
          });
          expect((await readJob(first, id)).status).toBe('running');
        } finally {
          await first.stop();
        }
        expect(await first.exited).toEqual({ code: 0, signal: null });

        second = await startLocalStack({ dataDir, env: restartEnv });
        const job = await finishedJob(second, id);
        expectSucceeded(job, second);
        await expectPngAt(job.result?.outputUrl);
        expect((await ledgerOf(simulator.url)).submissions).toEqual([
          {
            id: expect.stringMatching(/^gen_/),
            idempotencyKey: providerKeyOf(job),
            acceptedAt: expect.any(String),
            finishedAt: expect.any(String),
            outcome: 'succeeded',
          },
        ]);
      } finally {
        await second?.stop();
        await simulator.close();
        rmSync(dataDir, { recursive: true, force: true });
      }
    },
    2 * START_TIMEOUT_MS + JOB_TIMEOUT_MS,
  );
});
