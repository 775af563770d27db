import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadSettings } from '../../config/settings';
import { localSettingsEnvironment } from '../../local/config';
import { pollUntil, type RunningLocalStack, startLocalStack } from '../../local/harness/local-stack';
import {
  LocalTemplate,
  synthesizedTemplatePath,
  TEMPLATE_ENV,
  type TemplateJson,
} from '../../local/template';

jest.setTimeout(120_000);

/**
 * The local stack holds the handlers to their roles' policies as synthesized:
 * a grant missing from lib/ fails here as it would in AWS.
 */

const KEY = 'iam-key-5d2a';
const env = {
  LONGHAUL_API_KEYS: `${KEY}:acme`,
  SIM_JOB_MS: '300',
  PROVIDER_TIMEOUT_MS: '1000',
  SLOT_WAIT_MAX_SECONDS: '1',
};

interface Job {
  readonly id: string;
  readonly status: string;
  readonly error: { readonly code: string } | null;
}

async function createJob(stack: RunningLocalStack, key: string, body: unknown): Promise<Job> {
  const response = await fetch(`${stack.baseUrl}/v1/jobs`, {
    method: 'POST',
    headers: { 'x-api-key': KEY, 'idempotency-key': key, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  expect(response.status).toBe(202);
  return (await response.json()) as Job;
}

function finished(stack: RunningLocalStack, id: string): Promise<Job> {
  return pollUntil(
    async () => {
      const response = await fetch(`${stack.baseUrl}/v1/jobs/${id}`, { headers: { 'x-api-key': KEY } });
      const job = (await response.json()) as Job;
      return ['succeeded', 'failed', 'needs_review', 'canceled'].includes(job.status) && job;
    },
    { timeoutMs: 60_000, intervalMs: 100, description: `job ${id} to finish` },
  );
}

describe('the synthesized policies', () => {
  let stack: RunningLocalStack;
  beforeAll(async () => {
    stack = await startLocalStack({ env });
  });
  afterAll(() => stack?.stop());

  it('let a job run from intake to success', async () => {
    const job = await createJob(stack, 'iam-ok', {
      type: 'image.generate',
      input: { prompt: 'a lighthouse' },
    });
    await expect(finished(stack, job.id)).resolves.toMatchObject({ status: 'succeeded', error: null });
    expect(stack.output()).not.toMatch(/IAM: .*denied/);
  });

  it('fail a job whose upload never arrived with input_not_found: without s3:ListBucket, S3 answers 403', async () => {
    const job = await createJob(stack, 'iam-missing-upload', {
      type: 'audio.transcribe',
      input: { audioRef: `upl_${'m'.repeat(22)}` },
    });
    await expect(finished(stack, job.id)).resolves.toMatchObject({
      status: 'failed',
      error: { code: 'input_not_found' },
    });
  });
});

/**
 * The synthesized template with `action` taken out of the policies of the
 * function of `service`, as if lib/ had forgotten that grant; answers the
 * doctored file, in `directory`.
 */
function withoutGrant(directory: string, service: string, action: string): string {
  const settings = loadSettings(localSettingsEnvironment({ ...process.env, ...env }));
  const json = JSON.parse(readFileSync(synthesizedTemplatePath(settings), 'utf8')) as TemplateJson;
  const template = new LocalTemplate(json, 'the synthesized template');
  const role = template.function(service).roleLogicalId;
  let removed = 0;
  for (const resource of Object.values(json.Resources)) {
    const props = resource.Properties as {
      Roles?: { Ref?: string }[];
      PolicyDocument?: { Statement: { Action: string | string[] }[] };
    };
    if (resource.Type !== 'AWS::IAM::Policy' || !props.Roles?.some((r) => r.Ref === role)) continue;
    for (const statement of props.PolicyDocument?.Statement ?? []) {
      const actions = [statement.Action].flat();
      if (!actions.includes(action)) continue;
      statement.Action = actions.filter((other) => other !== action);
      removed += 1;
    }
  }
  expect(removed).toBe(1);
  const file = join(directory, `without-${service}-${action.replace(':', '-')}.template.json`);
  writeFileSync(file, JSON.stringify(json));
  return file;
}

describe('a template with a grant removed', () => {
  const directory = mkdtempSync(join(tmpdir(), 'longhaul-iam-'));
  let stack: RunningLocalStack;

  beforeAll(async () => {
    // The workflow steps' write to the output bucket, as if lib/ had forgotten grantWrite.
    const file = withoutGrant(directory, 'workflow', 's3:PutObject');
    stack = await startLocalStack({ env: { ...env, [TEMPLATE_ENV]: file } });
  });
  afterAll(async () => {
    await stack?.stop();
    rmSync(directory, { recursive: true, force: true });
  });

  it('fails the step that needs it with AccessDenied, and the job with it', async () => {
    const job = await createJob(stack, 'iam-no-put', {
      type: 'image.generate',
      input: { prompt: 'a lighthouse' },
    });
    const done = await finished(stack, job.id);
    expect(done.status).not.toBe('succeeded');
    const events = (await (
      await fetch(`${stack.baseUrl}/v1/jobs/${job.id}/events`, { headers: { 'x-api-key': KEY } })
    ).json()) as { items: { type: string; step?: string; detail?: string }[] };
    expect(events.items).toContainEqual(
      expect.objectContaining({
        type: 'step.failed',
        step: 'finalize',
        detail: expect.stringMatching(/^AccessDenied\b/),
      }),
    );
    expect(stack.output()).toMatch(
      /IAM: workflow: denied s3:PutObject on arn:aws:s3:::longhaul-outputs\/outputs\/acme\/job_\w+\//,
    );
  });
});

describe("a template without the provider events function's write of a job", () => {
  const directory = mkdtempSync(join(tmpdir(), 'longhaul-iam-'));
  let stack: RunningLocalStack;

  beforeAll(async () => {
    const file = withoutGrant(directory, 'provider-events', 'dynamodb:UpdateItem');
    stack = await startLocalStack({ env: { ...env, [TEMPLATE_ENV]: file } });
  });
  afterAll(async () => {
    await stack?.stop();
    rmSync(directory, { recursive: true, force: true });
  });

  it("denies a provider's progress tick its write, as that function's own role says", async () => {
    const job = await createJob(stack, 'iam-no-tick-write', {
      type: 'image.generate',
      input: { prompt: 'a lighthouse' },
    });
    await pollUntil(
      async () =>
        /IAM: provider-events: denied dynamodb:UpdateItem on arn:aws:dynamodb:[\w-]+:\d+:table\//.test(
          stack.output(),
        ),
      { timeoutMs: 30_000, intervalMs: 100, description: `a tick of ${job.id} denied its write` },
    );
  });
});
