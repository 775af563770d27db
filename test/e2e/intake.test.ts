import { GetObjectCommand } from '@aws-sdk/client-s3';
import { DeleteQueueCommand, GetQueueAttributesCommand } from '@aws-sdk/client-sqs';
import { GetCommand, ScanCommand } from '@aws-sdk/lib-dynamodb';
import { JOB_ITEM_SORT_KEY } from '../../config/layout';
import {
  documentClient,
  pollUntil,
  type RunningLocalStack,
  s3Client,
  sqsClient,
  startLocalStack,
} from '../../local/harness/local-stack';
import { UNTHROTTLED_API } from './support/api';

/**
 * CONTRACT section 1, intake routes, over real HTTP against the local stack:
 * idempotency, tenant isolation, validation and what every refusal leaves
 * behind (nothing).
 */

jest.setTimeout(60_000);

const ALPHA = 'intake-alpha-key-51c0';
const BETA = 'intake-beta-key-9a2d';
/** A tenant of its own for the tenant routes, so its usage is what those tests did. */
const GAMMA = 'intake-gamma-key-3e8b';
const ADMIN = 'intake-admin-key-77e1';
const responses: { method: string; path: string; status: number }[] = [];

let stack: RunningLocalStack;
beforeAll(async () => {
  stack = await startLocalStack({
    env: {
      LONGHAUL_API_KEYS: `${ALPHA}:alpha,${BETA}:beta,${GAMMA}:gamma`,
      LONGHAUL_ADMIN_KEY: ADMIN,
      // Room for the bursts below; throttling itself is tested with the local stack's defaults.
      ...UNTHROTTLED_API,
      // Intake alone: the queue keeps its messages, as with the event source mapping disabled.
      LONGHAUL_DISPATCH: '0',
    },
  });
});
afterAll(async () => {
  await stack?.stop();
});

interface CallOptions {
  readonly key?: string | null;
  readonly idempotencyKey?: string;
  readonly json?: unknown;
  readonly body?: RequestInit['body'];
  readonly headers?: Record<string, string>;
}

async function call(method: string, path: string, options: CallOptions = {}) {
  const headers: Record<string, string> = { ...options.headers };
  if (options.key !== null) headers['x-api-key'] = options.key ?? ALPHA;
  if (options.idempotencyKey !== undefined) headers['idempotency-key'] = options.idempotencyKey;
  let body = options.body;
  if (options.json !== undefined) {
    body = JSON.stringify(options.json);
    headers['content-type'] ??= 'application/json';
  }
  const response = await fetch(`${stack.baseUrl}${path}`, { method, headers, body });
  const text = await response.text();
  responses.push({ method, path, status: response.status });
  return {
    status: response.status,
    headers: response.headers,
    text,
    body: text ? (JSON.parse(text) as Record<string, any>) : undefined,
  };
}

const imageJob = (prompt = 'a lighthouse at dusk') => ({
  type: 'image.generate',
  input: { prompt, width: 512 },
});
let keyCounter = 0;
const freshKey = () => `e2e-${Date.now()}-${++keyCounter}`;

/** Job items and queue messages: what a refused request must not change. */
async function footprint() {
  const { Count } = await documentClient(stack.endpoints).send(
    new ScanCommand({
      TableName: stack.endpoints.jobTableName,
      FilterExpression: 'sk = :job',
      ExpressionAttributeValues: { ':job': JOB_ITEM_SORT_KEY },
      Select: 'COUNT',
    }),
  );
  const { Attributes = {} } = await sqsClient(stack.endpoints).send(
    new GetQueueAttributesCommand({
      QueueUrl: stack.endpoints.jobQueueUrl,
      AttributeNames: ['ApproximateNumberOfMessages', 'ApproximateNumberOfMessagesNotVisible'],
    }),
  );
  return {
    jobs: Count ?? 0,
    messages:
      Number(Attributes.ApproximateNumberOfMessages) +
      Number(Attributes.ApproximateNumberOfMessagesNotVisible),
  };
}

function expectProblem(response: Awaited<ReturnType<typeof call>>, status: number, code: string) {
  expect({ status: response.status, code: response.body?.code }).toEqual({ status, code });
  expect(response.headers.get('content-type')).toMatch(/^application\/problem\+json/);
  expect(response.body).toMatchObject({
    type: `urn:longhaul:problem:${code}`,
    status,
    title: expect.any(String),
  });
  expect(response.text).not.toMatch(/\bat .*\.(ts|js):\d+/);
}

describe('POST /v1/jobs idempotency', () => {
  it('turns 50 concurrent identical requests into exactly one job and one queue message', async () => {
    const before = await footprint();
    const key = freshKey();
    const answers = await Promise.all(
      Array.from({ length: 50 }, () => call('POST', '/v1/jobs', { idempotencyKey: key, json: imageJob() })),
    );

    const statuses = answers.map((a) => a.status);
    expect(statuses.every((s) => s === 202 || s === 409)).toBe(true);
    const originals = answers.filter(
      (a) => a.status === 202 && a.headers.get('idempotent-replayed') !== 'true',
    );
    expect(originals).toHaveLength(1);
    const jobId = originals[0]?.body?.id;
    for (const answer of answers) {
      if (answer.status === 202) expect(answer.body?.id).toBe(jobId);
      else {
        expectProblem(answer, 409, 'idempotency-key-in-use');
        expect(answer.headers.get('retry-after')).toBe('1');
      }
    }
    expect(await footprint()).toEqual({ jobs: before.jobs + 1, messages: before.messages + 1 });
  });

  it('replays the original job for the same key and an equivalent body, with the replay header', async () => {
    const key = freshKey();
    const first = await call('POST', '/v1/jobs', { idempotencyKey: key, json: imageJob() });
    expect(first.status).toBe(202);
    expect(first.headers.get('idempotent-replayed')).toBeNull();
    const before = await footprint();

    // Same request, other key order and spacing.
    const again = await call('POST', '/v1/jobs', {
      idempotencyKey: key,
      body: '{ "input": { "width": 512, "prompt": "a lighthouse at dusk" },\n "type": "image.generate" }',
      headers: { 'content-type': 'application/json' },
    });

    expect(again.status).toBe(202);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(again.body).toEqual(first.body);
    expect(again.headers.get('location')).toBe(first.headers.get('location'));
    expect(await footprint()).toEqual(before);
  });

  it('refuses the same key with a different body', async () => {
    const key = freshKey();
    expect((await call('POST', '/v1/jobs', { idempotencyKey: key, json: imageJob() })).status).toBe(202);
    const before = await footprint();
    expectProblem(
      await call('POST', '/v1/jobs', { idempotencyKey: key, json: imageJob('a different prompt') }),
      422,
      'idempotency-key-reused',
    );
    expect(await footprint()).toEqual(before);
  });

  it.each([
    ['missing', undefined],
    ['too long', 'k'.repeat(256)],
    ['not visible ASCII', 'has space'],
  ])('refuses a %s key with 400', async (_, key) => {
    const before = await footprint();
    const options: CallOptions =
      key === undefined ? { json: imageJob() } : { idempotencyKey: key, json: imageJob() };
    expectProblem(await call('POST', '/v1/jobs', options), 400, 'idempotency-key-missing');
    expect(await footprint()).toEqual(before);
  });

  it('scopes keys to the tenant: same key, two tenants, two jobs, and no cross-tenant reads', async () => {
    const key = freshKey();
    const alpha = await call('POST', '/v1/jobs', { idempotencyKey: key, json: imageJob() });
    const beta = await call('POST', '/v1/jobs', { key: BETA, idempotencyKey: key, json: imageJob() });

    expect([alpha.status, beta.status]).toEqual([202, 202]);
    expect(beta.headers.get('idempotent-replayed')).toBeNull();
    expect(beta.body?.id).not.toBe(alpha.body?.id);
    expectProblem(await call('GET', `/v1/jobs/${alpha.body?.id}`, { key: BETA }), 404, 'not-found');
    expectProblem(await call('POST', `/v1/jobs/${alpha.body?.id}/cancel`, { key: BETA }), 404, 'not-found');
    expect((await call('GET', `/v1/jobs/${beta.body?.id}`, { key: BETA })).body?.id).toBe(beta.body?.id);
    const betaList = await call('GET', '/v1/jobs?limit=100', { key: BETA });
    expect(betaList.body?.items.map((job: { id: string }) => job.id)).not.toContain(alpha.body?.id);
  });
});

describe('POST /v1/jobs validation', () => {
  it.each([
    [
      'malformed JSON',
      { body: '{"type": "image.generate", "input": {', headers: { 'content-type': 'application/json' } },
      400,
      'validation-failed',
    ],
    ['a body that is not an object', { json: ['image.generate'] }, 400, 'validation-failed'],
    ['wrong types', { json: { type: 'image.generate', input: { prompt: 42 } } }, 400, 'validation-failed'],
    [
      'an unknown job type',
      { json: { type: 'video.render', input: { prompt: 'x' } } },
      400,
      'validation-failed',
    ],
    [
      'an out-of-range width',
      { json: { type: 'image.generate', input: { prompt: 'x', width: 4096 } } },
      400,
      'validation-failed',
    ],
    [
      'an http audio URL',
      { json: { type: 'audio.transcribe', input: { audioUrl: 'http://example.com/a.mp3' } } },
      400,
      'validation-failed',
    ],
    [
      'text/plain',
      { body: 'make me a cat', headers: { 'content-type': 'text/plain' } },
      415,
      'unsupported-media-type',
    ],
    ['no content type', { body: '{}' }, 415, 'unsupported-media-type'],
    [
      'a 5 MiB JSON body',
      {
        body: `{"type":"image.generate","input":{"prompt":"${'x'.repeat(5 * 1024 * 1024)}"}}`,
        headers: { 'content-type': 'application/json' },
      },
      413,
      'payload-too-large',
    ],
  ])('answers %s with its problem and writes nothing', async (_, options, status, code) => {
    const before = await footprint();
    const answer = await call('POST', '/v1/jobs', {
      idempotencyKey: freshKey(),
      ...(options as CallOptions),
    });
    expectProblem(answer, status, code);
    expect(await footprint()).toEqual(before);
  });

  it('points at every invalid field', async () => {
    const answer = await call('POST', '/v1/jobs', {
      idempotencyKey: freshKey(),
      json: { type: 'image.generate', input: { prompt: '', width: 10, extra: true } },
    });
    expectProblem(answer, 400, 'validation-failed');
    expect(answer.body?.errors.map((e: { pointer: string }) => e.pointer).sort()).toEqual(
      ['/input', '/input/prompt', '/input/width'].sort(),
    );
  });
});

describe('POST /v1/jobs priority', () => {
  it('keeps the priority asked for, in JSON and multipart, and defaults it to standard', async () => {
    const interactive = await call('POST', '/v1/jobs', {
      idempotencyKey: freshKey(),
      json: { ...imageJob(), priority: 'interactive' },
    });
    const form = new FormData();
    form.set('type', 'image.generate');
    form.set('input', JSON.stringify({ prompt: 'whenever' }));
    form.set('priority', 'batch');
    const batch = await call('POST', '/v1/jobs', { idempotencyKey: freshKey(), body: form });
    const unasked = await call('POST', '/v1/jobs', { idempotencyKey: freshKey(), json: imageJob() });

    expect([interactive.status, batch.status, unasked.status]).toEqual([202, 202, 202]);
    expect([interactive.body?.priority, batch.body?.priority, unasked.body?.priority]).toEqual([
      'interactive',
      'batch',
      'standard',
    ]);
    const stored = await Promise.all(
      [interactive, batch, unasked].map(async (created) => {
        const { Item } = await documentClient(stack.endpoints).send(
          new GetCommand({
            TableName: stack.endpoints.jobTableName,
            Key: { pk: created.body?.id, sk: JOB_ITEM_SORT_KEY },
          }),
        );
        return [Item?.priority, (await call('GET', `/v1/jobs/${created.body?.id}`)).body?.priority];
      }),
    );
    expect(stored).toEqual([
      ['interactive', 'interactive'],
      ['batch', 'batch'],
      ['standard', 'standard'],
    ]);
  });

  it.each([
    ['an unknown priority', { json: { ...imageJob(), priority: 'urgent' } }],
    ['a priority in capitals', { json: { ...imageJob(), priority: 'BATCH' } }],
    ['a null priority', { json: { ...imageJob(), priority: null } }],
    ['a numeric priority', { json: { ...imageJob(), priority: 1 } }],
  ])('refuses %s naming priority, and writes nothing', async (_, options) => {
    const before = await footprint();
    const answer = await call('POST', '/v1/jobs', { idempotencyKey: freshKey(), ...options });
    expectProblem(answer, 400, 'validation-failed');
    expect(answer.body?.errors.map((e: { pointer: string }) => e.pointer)).toEqual(['/priority']);
    expect(await footprint()).toEqual(before);
  });

  it('refuses an unknown priority in a multipart body', async () => {
    const before = await footprint();
    const form = new FormData();
    form.set('type', 'image.generate');
    form.set('input', JSON.stringify({ prompt: 'x' }));
    form.set('priority', 'urgent');
    const answer = await call('POST', '/v1/jobs', { idempotencyKey: freshKey(), body: form });
    expectProblem(answer, 400, 'validation-failed');
    expect(answer.body?.errors.map((e: { pointer: string }) => e.pointer)).toEqual(['/priority']);
    expect(await footprint()).toEqual(before);
  });

  it('replays the job for its own priority (standard asked or not) and refuses the key with another', async () => {
    const key = freshKey();
    const first = await call('POST', '/v1/jobs', { idempotencyKey: key, json: imageJob() });
    expect(first.status).toBe(202);
    const before = await footprint();

    const standard = await call('POST', '/v1/jobs', {
      idempotencyKey: key,
      json: { ...imageJob(), priority: 'standard' },
    });
    expect({ status: standard.status, replayed: standard.headers.get('idempotent-replayed') }).toEqual({
      status: 202,
      replayed: 'true',
    });
    expect(standard.body).toEqual(first.body);
    expectProblem(
      await call('POST', '/v1/jobs', { idempotencyKey: key, json: { ...imageJob(), priority: 'batch' } }),
      422,
      'idempotency-key-reused',
    );

    const batchKey = freshKey();
    const batch = await call('POST', '/v1/jobs', {
      idempotencyKey: batchKey,
      json: { ...imageJob(), priority: 'batch' },
    });
    expect(batch.status).toBe(202);
    for (const other of [imageJob(), { ...imageJob(), priority: 'interactive' }]) {
      expectProblem(
        await call('POST', '/v1/jobs', { idempotencyKey: batchKey, json: other }),
        422,
        'idempotency-key-reused',
      );
    }
    expect(await footprint()).toEqual({ jobs: before.jobs + 1, messages: before.messages + 1 });
  });
});

describe('admin tenants', () => {
  const tenantPath = (name: string) => `/v1/admin/tenants/${name}`;
  /** The tenant's stored settings item, as the table has it; undefined when it has none. */
  const storedTenant = async (name: string) =>
    (
      await documentClient(stack.endpoints).send(
        new GetCommand({
          TableName: stack.endpoints.jobTableName,
          Key: { pk: `TENANT#${name}`, sk: 'TENANT' },
        }),
      )
    ).Item;

  it('shows the defaults for a tenant with keys and no settings, and counts what it has waiting', async () => {
    const fresh = await call('GET', tenantPath('gamma'), { key: ADMIN });
    expect({ status: fresh.status, body: fresh.body }).toEqual({
      status: 200,
      body: {
        tenant: 'gamma',
        weight: 1,
        maxQueued: 10_000,
        usage: { queued: 0, scheduled: 0, inFlight: 0 },
      },
    });
    expect(await storedTenant('gamma')).toBeUndefined();

    const jobs = [];
    for (let i = 0; i < 3; i++) {
      jobs.push(await call('POST', '/v1/jobs', { key: GAMMA, idempotencyKey: freshKey(), json: imageJob() }));
    }
    expect(jobs.map((job) => job.status)).toEqual([202, 202, 202]);
    await call('POST', `/v1/jobs/${jobs[0]?.body?.id}/cancel`, { key: GAMMA });
    // Counted from an index, which may lag the jobs.
    const usage = await pollUntil(
      async () => {
        const tenant = await call('GET', tenantPath('gamma'), { key: ADMIN });
        return tenant.body?.usage.queued === 2 ? tenant.body.usage : undefined;
      },
      { timeoutMs: 10_000, description: "gamma's two queued jobs to be counted" },
    );
    expect(usage).toEqual({ queued: 2, scheduled: 0, inFlight: 0 });
  });

  it('sets what a PUT names, keeps the rest, removes the cap for null, and answers a repeat alike', async () => {
    const set = await call('PUT', tenantPath('beta'), {
      key: ADMIN,
      json: { weight: 5, maxInFlight: 2, maxQueued: 100 },
    });
    expect({ status: set.status, settings: { ...set.body, usage: undefined } }).toEqual({
      status: 200,
      settings: { tenant: 'beta', weight: 5, maxInFlight: 2, maxQueued: 100, usage: undefined },
    });
    expect(set.body?.usage).toEqual({
      queued: expect.any(Number),
      scheduled: 0,
      inFlight: 0,
    });
    expect((await call('GET', tenantPath('beta'), { key: ADMIN })).body).toEqual(set.body);
    expect(await storedTenant('beta')).toMatchObject({
      tenant: 'beta',
      weight: 5,
      maxInFlight: 2,
      maxQueued: 100,
    });

    const queuedOnly = await call('PUT', tenantPath('beta'), { key: ADMIN, json: { maxQueued: 50 } });
    expect(queuedOnly.body).toMatchObject({ weight: 5, maxInFlight: 2, maxQueued: 50 });
    const uncapped = await call('PUT', tenantPath('beta'), { key: ADMIN, json: { maxInFlight: null } });
    expect(uncapped.status).toBe(200);
    expect(uncapped.body).not.toHaveProperty('maxInFlight');
    expect(uncapped.body).toMatchObject({ weight: 5, maxQueued: 50 });
    expect(await storedTenant('beta')).not.toHaveProperty('maxInFlight');

    const again = await call('PUT', tenantPath('beta'), { key: ADMIN, json: { maxInFlight: null } });
    expect({ status: again.status, body: again.body }).toEqual({ status: 200, body: uncapped.body });
    const empty = await call('PUT', tenantPath('beta'), { key: ADMIN, json: {} });
    expect({ status: empty.status, body: empty.body }).toEqual({ status: 200, body: uncapped.body });
  });

  const weight = 'must be an integer from 1 to 100';
  const cap = 'must be an integer of at least 1, or null for no cap';
  const atLeastOne = 'must be an integer of at least 1';
  it.each([
    ['a weight of 0', { weight: 0 }, [{ pointer: '/weight', detail: weight }]],
    ['a weight over 100', { weight: 101 }, [{ pointer: '/weight', detail: weight }]],
    ['a fractional weight', { weight: 2.5 }, [{ pointer: '/weight', detail: weight }]],
    ['a weight given as text', { weight: '5' }, [{ pointer: '/weight', detail: weight }]],
    ['a null weight', { weight: null }, [{ pointer: '/weight', detail: weight }]],
    ['a cap of 0', { maxInFlight: 0 }, [{ pointer: '/maxInFlight', detail: cap }]],
    ['a negative cap', { maxInFlight: -1 }, [{ pointer: '/maxInFlight', detail: cap }]],
    ['a fractional cap', { maxInFlight: 1.5 }, [{ pointer: '/maxInFlight', detail: cap }]],
    ['a maxQueued of 0', { maxQueued: 0 }, [{ pointer: '/maxQueued', detail: atLeastOne }]],
    ['a fractional maxQueued', { maxQueued: 9.5 }, [{ pointer: '/maxQueued', detail: atLeastOne }]],
    [
      'an unknown field',
      { weight: 3, priority: 'high' },
      [{ pointer: '', detail: 'unknown field(s): priority' }],
    ],
    [
      'a valid field beside an invalid one',
      { weight: 3, maxQueued: 0 },
      [{ pointer: '/maxQueued', detail: atLeastOne }],
    ],
    [
      'a body that is an array',
      [{ weight: 3 }],
      [{ pointer: '', detail: 'Invalid input: expected object, received array' }],
    ],
  ])('refuses %s with 400 naming the field, and changes nothing', async (_, json, errors) => {
    await call('PUT', tenantPath('alpha'), {
      key: ADMIN,
      json: { weight: 7, maxInFlight: 4, maxQueued: 70 },
    });
    const before = await storedTenant('alpha');
    expect(before).toMatchObject({ weight: 7, maxInFlight: 4, maxQueued: 70 });

    const refused = await call('PUT', tenantPath('alpha'), { key: ADMIN, json });
    expectProblem(refused, 400, 'validation-failed');
    expect(refused.body?.errors).toEqual(errors);

    expect(await storedTenant('alpha')).toEqual(before);
    expect((await call('GET', tenantPath('alpha'), { key: ADMIN })).body).toMatchObject({
      weight: 7,
      maxInFlight: 4,
      maxQueued: 70,
    });
  });

  it('refuses a body that is not JSON, or not sent as JSON, and changes nothing', async () => {
    await call('PUT', tenantPath('alpha'), { key: ADMIN, json: { weight: 7 } });
    const before = await storedTenant('alpha');
    expectProblem(
      await call('PUT', tenantPath('alpha'), {
        key: ADMIN,
        body: '{"weight": ',
        headers: { 'content-type': 'application/json' },
      }),
      400,
      'validation-failed',
    );
    expectProblem(
      await call('PUT', tenantPath('alpha'), {
        key: ADMIN,
        body: '{"weight": 2}',
        headers: { 'content-type': 'text/plain' },
      }),
      415,
      'unsupported-media-type',
    );
    expect(await storedTenant('alpha')).toEqual(before);
  });

  it.each([
    ['no key carries', 'nobody', 'is not a tenant'],
    ["is the admin key's", 'admin', "the admin key's"],
    ['cannot be a tenant name', '-dash', 'letters, digits'],
    ['is too long for a tenant name', `t${'x'.repeat(64)}`, 'letters, digits'],
  ])(
    'refuses a PUT for a name that %s with 400 naming tenant, and stores nothing',
    async (_, name, detail) => {
      const refused = await call('PUT', tenantPath(name), { key: ADMIN, json: { weight: 2 } });
      expectProblem(refused, 400, 'validation-failed');
      expect(refused.body?.errors).toEqual([
        { parameter: 'tenant', detail: expect.stringContaining(detail) },
      ]);
      expect(await storedTenant(name)).toBeUndefined();
    },
  );

  it('does not find a name that no key carries, and refuses one that cannot be a tenant', async () => {
    expectProblem(await call('GET', tenantPath('nobody'), { key: ADMIN }), 404, 'not-found');
    const admin = await call('GET', tenantPath('admin'), { key: ADMIN });
    expectProblem(admin, 400, 'validation-failed');
    expect(admin.body?.errors.map((e: { parameter: string }) => e.parameter)).toEqual(['tenant']);
  });

  it('answers tenant keys 403 and missing keys 401, and changes nothing', async () => {
    await call('PUT', tenantPath('alpha'), { key: ADMIN, json: { weight: 7 } });
    const before = await storedTenant('alpha');
    expectProblem(await call('GET', tenantPath('alpha')), 403, 'forbidden');
    expectProblem(await call('PUT', tenantPath('alpha'), { json: { weight: 100 } }), 403, 'forbidden');
    expectProblem(await call('PUT', tenantPath('beta'), { json: { weight: 100 } }), 403, 'forbidden');
    expectProblem(
      await call('PUT', tenantPath('alpha'), { key: null, json: { weight: 100 } }),
      401,
      'unauthorized',
    );
    expect(await storedTenant('alpha')).toEqual(before);
  });
});

describe('authentication', () => {
  it('answers 401 without a key or with an unknown key, and 403 to the admin key on tenant routes', async () => {
    expectProblem(await call('GET', '/v1/jobs', { key: null }), 401, 'unauthorized');
    expectProblem(await call('GET', '/v1/jobs', { key: 'not-a-key' }), 401, 'unauthorized');
    expectProblem(await call('GET', '/v1/jobs', { key: ADMIN }), 403, 'forbidden');
  });
});

describe('reading, listing and canceling', () => {
  it('returns the contract job resource with a Location that resolves to it', async () => {
    const created = await call('POST', '/v1/jobs', { idempotencyKey: freshKey(), json: imageJob() });
    const location = created.headers.get('location') ?? '';
    expect(location).toBe(`/v1/jobs/${created.body?.id}`);
    const read = await call('GET', location);
    expect(read.status).toBe(200);
    expect(read.body).toEqual({
      id: expect.stringMatching(/^job_[a-z2-7]{26}$/),
      type: 'image.generate',
      // The suites run every job type on the generic provider (PROVIDER_IMAGE_GENERATE).
      provider: 'longhaul-http',
      priority: 'standard',
      status: 'queued',
      progress: 0,
      input: { prompt: 'a lighthouse at dusk', width: 512 },
      result: null,
      error: null,
      attempts: 0,
      idempotencyKey: expect.any(String),
      createdAt: expect.stringMatching(/^\d{4}-\d\d-\d\dT/),
      // Asked to run now, so it was to run when it was created.
      runAt: read.body?.createdAt,
      updatedAt: expect.any(String),
    });
    expectProblem(await call('GET', '/v1/jobs/job_doesnotexist'), 404, 'not-found');
  });

  it('lists newest first in pages with opaque cursors, and filters by status', async () => {
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) {
      const created = await call('POST', '/v1/jobs', {
        key: BETA,
        idempotencyKey: freshKey(),
        json: imageJob(`p${i}`),
      });
      ids.push(created.body?.id);
    }
    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const page: Awaited<ReturnType<typeof call>> = await call(
        'GET',
        `/v1/jobs?limit=2${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`,
        { key: BETA },
      );
      expect(page.status).toBe(200);
      expect(page.body?.items.length).toBeLessThanOrEqual(2);
      seen.push(...(page.body?.items ?? []).map((job: { id: string }) => job.id));
      cursor = page.body?.nextCursor;
    } while (cursor);
    // Newest first: the five just created come first, in reverse order of creation.
    expect(seen.slice(0, 5)).toEqual([...ids].reverse());
    expect(new Set(seen).size).toBe(seen.length);

    await call('POST', `/v1/jobs/${ids[1]}/cancel`, { key: BETA });
    const canceled = await call('GET', '/v1/jobs?status=canceled', { key: BETA });
    expect(canceled.body?.items.map((job: { id: string }) => job.id)).toEqual([ids[1]]);
    expectProblem(await call('GET', '/v1/jobs?limit=101', { key: BETA }), 400, 'validation-failed');
    expectProblem(
      await call('GET', '/v1/jobs?cursor=bm90LWEtY3Vyc29y', { key: BETA }),
      400,
      'validation-failed',
    );
    expectProblem(await call('GET', '/v1/jobs?status=done', { key: BETA }), 400, 'validation-failed');
  });

  it('cancels a queued job idempotently', async () => {
    const created = await call('POST', '/v1/jobs', { idempotencyKey: freshKey(), json: imageJob() });
    const first = await call('POST', `/v1/jobs/${created.body?.id}/cancel`);
    const second = await call('POST', `/v1/jobs/${created.body?.id}/cancel`);
    expect([first.status, second.status]).toEqual([202, 202]);
    expect(first.body).toMatchObject({
      id: created.body?.id,
      status: 'canceled',
      finishedAt: expect.any(String),
    });
    expect(second.body).toEqual(first.body);
    expect((await call('GET', `/v1/jobs/${created.body?.id}`)).body?.status).toBe('canceled');
  });
});

describe('inputs', () => {
  it('stores a multipart file part privately and references it from the job', async () => {
    const png = new Uint8Array([137, 80, 78, 71, 13, 10, 26, 10, 1, 2, 3]);
    const form = new FormData();
    form.set('type', 'image.generate');
    form.set('input', JSON.stringify({ prompt: 'like this one' }));
    form.set('file', new Blob([png], { type: 'image/png' }), 'source.png');

    const created = await call('POST', '/v1/jobs', { idempotencyKey: freshKey(), body: form });

    expect(created.status).toBe(202);
    const ref = created.body?.input.sourceImageRef;
    expect(ref).toMatch(/^upl_/);
    const object = await s3Client(stack.endpoints).send(
      new GetObjectCommand({ Bucket: stack.endpoints.inputBucketName, Key: `inputs/alpha/${ref}` }),
    );
    expect(new Uint8Array(await object.Body!.transformToByteArray())).toEqual(png);
    expect(object.ContentType).toBe('image/png');
  });

  it('refuses a multipart body over 4.5 MiB and writes nothing', async () => {
    const before = await footprint();
    const form = new FormData();
    form.set('type', 'image.generate');
    form.set('input', JSON.stringify({ prompt: 'too big' }));
    form.set('file', new Blob([new Uint8Array(4.6 * 1024 * 1024)], { type: 'image/png' }), 'big.png');
    expectProblem(
      await call('POST', '/v1/jobs', { idempotencyKey: freshKey(), body: form }),
      413,
      'payload-too-large',
    );
    expect(await footprint()).toEqual(before);
  });

  it('hands out a presigned upload that accepts exactly the declared file, usable as a job input', async () => {
    const audio = new TextEncoder().encode('ID3 pretend mp3 bytes');
    const ticket = await call('POST', '/v1/uploads', {
      json: { contentType: 'audio/mpeg', contentLength: audio.length },
    });
    expect(ticket.status).toBe(201);
    expect(ticket.body).toEqual({
      ref: expect.stringMatching(/^upl_/),
      uploadUrl: expect.stringMatching(/^http/),
      expiresAt: expect.any(String),
    });

    const put = await fetch(ticket.body?.uploadUrl, {
      method: 'PUT',
      headers: { 'content-type': 'audio/mpeg' },
      body: audio,
    });
    expect(put.status).toBe(200);

    const job = await call('POST', '/v1/jobs', {
      idempotencyKey: freshKey(),
      json: { type: 'audio.transcribe', input: { audioRef: ticket.body?.ref, language: 'en' } },
    });
    expect(job.status).toBe(202);
    expectProblem(
      await call('POST', '/v1/uploads', { json: { contentType: 'application/x-sh', contentLength: 10 } }),
      400,
      'validation-failed',
    );
  });
});

describe('health', () => {
  it('answers without a key', async () => {
    const health = await call('GET', '/healthz', { key: null });
    expect({ status: health.status, body: health.body }).toEqual({ status: 200, body: { status: 'ok' } });
  });
});

describe('enqueue failure', () => {
  it('still accepts a job it could not enqueue and keeps it queued for the reconciler', async () => {
    const sqs = sqsClient(stack.endpoints);
    await sqs.send(new DeleteQueueCommand({ QueueUrl: stack.endpoints.jobQueueUrl }));

    const created = await call('POST', '/v1/jobs', { idempotencyKey: freshKey(), json: imageJob() });

    expect(created.status).toBe(202);
    expect(created.body?.status).toBe('queued');
    const { Item } = await documentClient(stack.endpoints).send(
      new GetCommand({
        TableName: stack.endpoints.jobTableName,
        Key: { pk: created.body?.id, sk: JOB_ITEM_SORT_KEY },
      }),
    );
    expect(Item).toMatchObject({ status: 'queued', activeKey: 'longhaul-http#queued' });
    expect(Item?.enqueuedAt).toBeUndefined();
  });
});

afterAll(() => {
  // No request, valid or not, may be answered with a server error.
  expect(responses.filter((r) => r.status >= 500)).toEqual([]);
});
