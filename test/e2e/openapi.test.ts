import { createHmac } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import type { ValidateFunction } from 'ajv/dist/2020';
import { Webhook } from 'standardwebhooks';
import { parse } from 'yaml';
import { PROVIDER_NAMES, PROVIDERS } from '../../config/providers';
import { DynamoDbJobStore } from '../../lambdas/adapters/dynamodb-job-store';
import { type OperationObject, openApiDocument, type ResponseObject } from '../../lambdas/api/openapi';
import { deriveJobId, fingerprint } from '../../lambdas/domain/idempotency';
import { type JobResource, newJob } from '../../lambdas/domain/job';
import { signPayload } from '../../lambdas/shared/signature';
import { localDefaults } from '../../local/config';
import {
  documentClient,
  pollUntil,
  type RunningLocalStack,
  startLocalStack,
} from '../../local/harness/local-stack';
import { DEFAULT_REPLICATE_WEBHOOK_SECRET } from '../../local/provider-sim/defaults';
import { openApiSchemaAjv } from '../support/openapi-ajv';
import { simulatorCall } from './support/simulator';
import { startWebhookReceiver } from './support/webhook-receiver';

/**
 * Real answers of the local stack, route by route, checked against the
 * OpenAPI document: the status must be documented for the operation, the
 * body must match the documented schema of its media type, and documented
 * required headers must be there. Response schemas are closed, so a field
 * the server sends but the document does not describe fails here.
 */

jest.setTimeout(120_000);

const KEY = 'openapi-key-3f9a';
const OTHER_KEY = 'openapi-other-key-51c2';
const THROTTLED_KEY = 'openapi-throttled-key-0b7d';
const ADMIN_KEY = 'openapi-admin-key-88e1';
const PROVIDER_SECRET = 'openapi-provider-webhook-secret-0123456789';

type Method = 'get' | 'post' | 'put' | 'patch' | 'delete';

/** Compiles schemas in place inside the document, so their `#/components/...` references resolve. */
function documentValidator() {
  const ajv = openApiSchemaAjv(openApiDocument as object);
  const compiled = new Map<string, ValidateFunction>();
  return (pointer: string): ValidateFunction => {
    let validate = compiled.get(pointer);
    if (!validate) {
      validate = ajv.compile({ $ref: `openapi#${pointer}` });
      compiled.set(pointer, validate);
    }
    return validate;
  };
}

const schemaAt = documentValidator();
const pointerSegment = (segment: string) => segment.replaceAll('~', '~0').replaceAll('/', '~1');

/** Operation × status pairs whose real answers were validated. */
const covered = new Set<string>();

interface Answer {
  readonly status: number;
  readonly headers: Headers;
  readonly text: string;
  readonly body: any;
}

/** The response object the document gives for this status, and its JSON Pointer. */
function documentedResponse(
  operation: OperationObject,
  operationPointer: string,
  status: number,
): { pointer: string; response: ResponseObject } | undefined {
  const key = [String(status), `${String(status)[0]}XX`, 'default'].find((k) => k in operation.responses);
  if (!key) return undefined;
  const found = operation.responses[key] as ResponseObject | { $ref: string };
  if ('$ref' in found) {
    const pointer = found.$ref.slice(1);
    const name = pointer.split('/').pop() as string;
    return { pointer, response: openApiDocument.components.responses[name] as ResponseObject };
  }
  return { pointer: `${operationPointer}/responses/${pointerSegment(key)}`, response: found };
}

/** Asserts that the answer is one the document describes for `method path`. */
function expectDocumented(method: Method, path: string, answer: Answer): void {
  const operation = openApiDocument.paths[path]?.[method];
  if (!operation) throw new Error(`${method.toUpperCase()} ${path} is not in the document`);
  const documented = documentedResponse(operation, `/paths/${pointerSegment(path)}/${method}`, answer.status);
  expect({ route: `${method} ${path}`, status: answer.status, documented: documented !== undefined }).toEqual(
    {
      route: `${method} ${path}`,
      status: answer.status,
      documented: true,
    },
  );
  const { pointer, response } = documented!;

  if (response.content) {
    const mediaType = answer.headers.get('content-type')?.split(';')[0]?.trim() ?? '';
    expect(Object.keys(response.content)).toContain(mediaType);
    const validate = schemaAt(`${pointer}/content/${pointerSegment(mediaType)}/schema`);
    validate(answer.body);
    expect({ route: `${method} ${path}`, status: answer.status, errors: validate.errors ?? null }).toEqual({
      route: `${method} ${path}`,
      status: answer.status,
      errors: null,
    });
  } else {
    expect(answer.text).toBe('');
  }
  for (const [name, header] of Object.entries(response.headers ?? {})) {
    const value = answer.headers.get(name);
    if (header.required)
      expect({ header: name, present: value !== null }).toEqual({ header: name, present: true });
    if (value === null) continue;
    const validate = schemaAt(`${pointer}/headers/${pointerSegment(name)}/schema`);
    const typed = (header.schema as { type?: string }).type === 'integer' ? Number(value) : value;
    expect({ header: name, valid: validate(typed), errors: validate.errors ?? null }).toEqual({
      header: name,
      valid: true,
      errors: null,
    });
  }
  covered.add(`${operation.operationId} ${answer.status}`);
}

let stack: RunningLocalStack;
let providerUrl: string;

beforeAll(async () => {
  stack = await startLocalStack({
    env: {
      LONGHAUL_API_KEYS: `${KEY}:acme,${OTHER_KEY}:beta,${THROTTLED_KEY}:gamma`,
      LONGHAUL_ADMIN_KEY: ADMIN_KEY,
      PROVIDER_WEBHOOK_SECRET: PROVIDER_SECRET,
      SIM_JOB_MS: '300',
      SIM_PROGRESS_HZ: '10',
      // A submission whose answer is lost cannot be resent safely: the job goes to review.
      SIM_IDEMPOTENT: '0',
      PROVIDER_IDEMPOTENT: '0',
      PROVIDER_TIMEOUT_MS: '1000',
      SLOT_WAIT_MAX_SECONDS: '1',
    },
  });
  providerUrl = stack.endpoints.providerUrl;
});

afterAll(async () => {
  await stack?.stop();
});

interface Send {
  readonly key?: string | null;
  readonly idempotencyKey?: string;
  readonly json?: unknown;
  readonly body?: string | FormData;
  readonly headers?: Record<string, string>;
}

/** Sends a request and validates the answer against the document's entry for the route template. */
async function send(method: Method, template: string, url: string, options: Send = {}): Promise<Answer> {
  const headers: Record<string, string> = { ...options.headers };
  const key = options.key === undefined ? KEY : options.key;
  if (key !== null) headers['x-api-key'] = key;
  if (options.idempotencyKey) headers['idempotency-key'] = options.idempotencyKey;
  let body = options.body;
  if (options.json !== undefined) {
    headers['content-type'] ??= 'application/json';
    body = JSON.stringify(options.json);
  }
  const response = await fetch(`${stack.baseUrl}${url}`, { method: method.toUpperCase(), headers, body });
  const text = await response.text();
  let parsed: unknown;
  try {
    parsed = text ? JSON.parse(text) : undefined;
  } catch {
    parsed = text;
  }
  const answer = { status: response.status, headers: response.headers, text, body: parsed as any };
  expectDocumented(method, template, answer);
  return answer;
}

let keyCounter = 0;
const freshKey = () => `openapi-${Date.now()}-${++keyCounter}`;
const imageJob = (prompt = 'a lighthouse at dusk') => ({ type: 'image.generate', input: { prompt } });

// The provider's URL is known once the stack has started.
const sim = (path: string, body?: unknown) => simulatorCall(providerUrl)(path, body);

async function settled(
  id: string,
  statuses = ['succeeded', 'failed', 'canceled', 'needs_review'],
): Promise<any> {
  return pollUntil(
    async () => {
      const job = await send('get', '/v1/jobs/{id}', `/v1/jobs/${id}`);
      return statuses.includes(job.body.status) ? job.body : undefined;
    },
    { timeoutMs: 30_000, intervalMs: 100, description: `job ${id} in ${statuses.join('|')}` },
  );
}

/**
 * Arms a simulator fault for the next submission the provider gets. The jobs
 * earlier tests created run on in the background, so it first waits for none
 * to be active: one of them still on its way to the provider would take the
 * fault (a stall would then hold it running until its job timeout), and the
 * job meant for it would run unharmed.
 */
async function faultForNextSubmission(mode: 'reject' | 'stall' | 'accept-then-drop'): Promise<void> {
  let active: string[] = [];
  await pollUntil(
    async () => {
      active = [];
      for (const status of ['queued', 'running']) {
        const page = await send('get', '/v1/jobs', `/v1/jobs?status=${status}&limit=10`);
        active.push(...page.body.items.map((job: JobResource) => `${job.id} (${job.type}, ${job.status})`));
      }
      return active.length === 0;
    },
    { timeoutMs: 90_000, intervalMs: 100, description: 'no job of an earlier test still active' },
  ).catch(async (error: Error) => {
    // What held the first of them, and what the stack said of it: a stuck job explains itself.
    const id = active[0]?.split(' ')[0] ?? '';
    const timeline = await send('get', '/v1/jobs/{id}/events', `/v1/jobs/${id}/events`);
    const said = stack
      .output()
      .split('\n')
      .filter((line) => line.includes(id));
    throw new Error(
      `${error.message}: ${active.join(', ')}\n${JSON.stringify(timeline.body)}\n${said.slice(-20).join('\n')}`,
    );
  });
  await sim('/_sim/faults', { mode, count: 1 });
}

/**
 * Waits until the job's provider took its submission and it made progress
 * there: a job canceled before would leave the fault armed for it to a job of
 * a later test, which a stall would then hold running until its timeout.
 */
async function atProvider(id: string): Promise<void> {
  await pollUntil(
    async () => {
      const job = (await send('get', '/v1/jobs/{id}', `/v1/jobs/${id}`)).body;
      return job.status === 'running' && job.progress > 0;
    },
    { timeoutMs: 30_000, intervalMs: 100, description: `job ${id} running at its provider` },
  );
}

describe('the served document', () => {
  it('is the document in lambdas/api/openapi.ts, and openapi.yaml is the same document', async () => {
    const served = await send('get', '/openapi.json', '/openapi.json', { key: null });
    expect(served.status).toBe(200);
    expect(served.body).toEqual(JSON.parse(JSON.stringify(openApiDocument)));
    expect(parse(readFileSync(resolve(__dirname, '../../openapi.yaml'), 'utf8'))).toEqual(served.body);
  });

  it('health answers without a key', async () => {
    expect((await send('get', '/healthz', '/healthz', { key: null })).status).toBe(200);
  });
});

describe('POST /v1/jobs', () => {
  it('accepts JSON and multipart, and replays with Idempotent-Replayed', async () => {
    const key = freshKey();
    const first = await send('post', '/v1/jobs', '/v1/jobs', { idempotencyKey: key, json: imageJob() });
    expect(first.status).toBe(202);
    expect(first.headers.get('location')).toMatch(new RegExp(`/v1/jobs/${first.body.id}$`));
    const replay = await send('post', '/v1/jobs', '/v1/jobs', { idempotencyKey: key, json: imageJob() });
    expect({
      status: replay.status,
      id: replay.body.id,
      replayed: replay.headers.get('idempotent-replayed'),
    }).toEqual({ status: 202, id: first.body.id, replayed: 'true' });

    const form = new FormData();
    form.set('type', 'image.generate');
    form.set('input', JSON.stringify({ prompt: 'like this one' }));
    form.set(
      'file',
      new Blob([new Uint8Array([137, 80, 78, 71, 13, 10, 26, 10, 7])], { type: 'image/png' }),
      'a.png',
    );
    const multipart = await send('post', '/v1/jobs', '/v1/jobs', { idempotencyKey: freshKey(), body: form });
    expect(multipart.status).toBe(202);
    expect(multipart.body.input.sourceImageRef).toMatch(/^upl_/);

    // Finished jobs carry their result: validated against ImageResult.
    const done = await settled(first.body.id);
    expect(done.status).toBe('succeeded');
  });

  it('documents every refusal it gives', async () => {
    const cases: [string, Send, number, string][] = [
      ['no key', { key: null, idempotencyKey: freshKey(), json: imageJob() }, 401, 'unauthorized'],
      [
        'an unknown key',
        { key: 'not-a-key', idempotencyKey: freshKey(), json: imageJob() },
        401,
        'unauthorized',
      ],
      ['the admin key', { key: ADMIN_KEY, idempotencyKey: freshKey(), json: imageJob() }, 403, 'forbidden'],
      ['no Idempotency-Key', { json: imageJob() }, 400, 'idempotency-key-missing'],
      [
        'an invalid input',
        { idempotencyKey: freshKey(), json: { type: 'image.generate', input: { prompt: '' } } },
        400,
        'validation-failed',
      ],
      [
        'a body over 1 MiB',
        { idempotencyKey: freshKey(), json: imageJob('x'.repeat(1024 * 1024 + 10)) },
        413,
        'payload-too-large',
      ],
      [
        'text/plain',
        { idempotencyKey: freshKey(), body: 'hello', headers: { 'content-type': 'text/plain' } },
        415,
        'unsupported-media-type',
      ],
    ];
    for (const [what, request, status, code] of cases) {
      const answer = await send('post', '/v1/jobs', '/v1/jobs', request);
      expect({ what, status: answer.status, code: answer.body?.code }).toEqual({ what, status, code });
    }

    const key = freshKey();
    expect(
      (await send('post', '/v1/jobs', '/v1/jobs', { idempotencyKey: key, json: imageJob('one') })).status,
    ).toBe(202);
    const reused = await send('post', '/v1/jobs', '/v1/jobs', { idempotencyKey: key, json: imageJob('two') });
    expect({ status: reused.status, code: reused.body.code }).toEqual({
      status: 422,
      code: 'idempotency-key-reused',
    });
  });

  it('answers 409 idempotency-key-in-use with Retry-After while the first request is still being accepted', async () => {
    // A job written but not yet handed to the queue, as an intake still in progress leaves it.
    const key = freshKey();
    const request = imageJob('in intake');
    const store = new DynamoDbJobStore(documentClient(stack.endpoints), {
      tableName: stack.endpoints.jobTableName,
      retentionDays: 30,
    });
    await store.create(
      newJob(
        {
          id: deriveJobId('acme', key),
          tenantId: 'acme',
          type: 'image.generate',
          input: request.input,
          idempotencyKey: key,
          fingerprint: fingerprint({ ...request, webhookUrl: null }),
        },
        new Date(),
      ),
    );
    const answer = await send('post', '/v1/jobs', '/v1/jobs', { idempotencyKey: key, json: request });
    expect({ status: answer.status, code: answer.body.code }).toEqual({
      status: 409,
      code: 'idempotency-key-in-use',
    });
    // Never handed to the queue, it would wait for the reconciler's grace: later tests need no job active.
    const id = deriveJobId('acme', key);
    expect((await send('post', '/v1/jobs/{id}/cancel', `/v1/jobs/${id}/cancel`)).status).toBe(202);
  });

  it('answers 429 rate-limited with Retry-After to a tenant over its limit', async () => {
    const answers = await Promise.all(
      Array.from({ length: 100 }, () => send('get', '/v1/jobs', '/v1/jobs', { key: THROTTLED_KEY })),
    );
    const statuses = new Set(answers.map((a) => a.status));
    expect(statuses).toEqual(new Set([200, 429]));
  });
});

describe('POST /v1/jobs/batch', () => {
  it("answers each item as POST /v1/jobs would, and documents the batch's refusals", async () => {
    const key = freshKey();
    const items = [
      { idempotencyKey: key, ...imageJob('batched') },
      { idempotencyKey: key, ...imageJob('batched') },
      { idempotencyKey: key, ...imageJob('another') },
      { idempotencyKey: freshKey(), type: 'image.generate', input: { prompt: '' } },
      { ...imageJob() },
    ];
    const answer = await send('post', '/v1/jobs/batch', '/v1/jobs/batch', { json: { items } });
    expect(answer.status).toBe(200);
    expect(answer.body.items.map((item: { status: number }) => item.status)).toEqual([
      202, 202, 422, 400, 400,
    ]);

    const cases: [string, Send, number, string][] = [
      ['no key', { key: null, json: { items } }, 401, 'unauthorized'],
      ['the admin key', { key: ADMIN_KEY, json: { items } }, 403, 'forbidden'],
      ['no items', { json: { items: [] } }, 400, 'validation-failed'],
      [
        'a body over 1 MiB',
        { json: { items: [imageJob('x'.repeat(1024 * 1024 + 10))] } },
        413,
        'payload-too-large',
      ],
      [
        'text/plain',
        { body: 'hello', headers: { 'content-type': 'text/plain' } },
        415,
        'unsupported-media-type',
      ],
    ];
    for (const [what, request, status, code] of cases) {
      const refused = await send('post', '/v1/jobs/batch', '/v1/jobs/batch', request);
      expect({ what, status: refused.status, code: refused.body?.code }).toEqual({ what, status, code });
    }
  });
});

describe('reading and canceling jobs', () => {
  it('lists, gets, cancels and reads timelines, and documents their refusals', async () => {
    const created = await send('post', '/v1/jobs', '/v1/jobs', {
      idempotencyKey: freshKey(),
      json: imageJob(),
    });
    const id = created.body.id as string;

    expect((await send('get', '/v1/jobs', '/v1/jobs?limit=5')).status).toBe(200);
    const filtered = await send('get', '/v1/jobs', '/v1/jobs?status=queued&limit=1');
    expect(filtered.status).toBe(200);
    expect((await send('get', '/v1/jobs', '/v1/jobs?limit=0')).body.code).toBe('validation-failed');
    expect((await send('get', '/v1/jobs', '/v1/jobs?status=finished')).status).toBe(400);
    expect((await send('get', '/v1/jobs', '/v1/jobs', { key: null })).status).toBe(401);

    expect((await send('get', '/v1/jobs/{id}', `/v1/jobs/${id}`)).status).toBe(200);
    expect((await send('get', '/v1/jobs/{id}', `/v1/jobs/${id}`, { key: OTHER_KEY })).status).toBe(404);
    expect((await send('get', '/v1/jobs/{id}/events', `/v1/jobs/${id}/events`)).status).toBe(200);
    expect(
      (await send('get', '/v1/jobs/{id}/events', '/v1/jobs/job_aaaaaaaaaaaaaaaaaaaaaaaaaa/events')).status,
    ).toBe(404);

    const done = await settled(id);
    expect(done.status).toBe('succeeded');
    const timeline = await send('get', '/v1/jobs/{id}/events', `/v1/jobs/${id}/events`);
    expect(timeline.body.items.map((e: { type: string }) => e.type)).toContain('job.accepted');

    const finished = await send('post', '/v1/jobs/{id}/cancel', `/v1/jobs/${id}/cancel`);
    expect({ status: finished.status, code: finished.body.code }).toEqual({
      status: 409,
      code: 'job-already-finished',
    });
    expect(
      (await send('post', '/v1/jobs/{id}/cancel', '/v1/jobs/job_aaaaaaaaaaaaaaaaaaaaaaaaaa/cancel')).status,
    ).toBe(404);

    const notResumable = await send('post', '/v1/jobs/{id}/resume', `/v1/jobs/${id}/resume`);
    expect({ status: notResumable.status, code: notResumable.body.code }).toEqual({
      status: 409,
      code: 'job-not-resumable',
    });
    expect(
      (await send('post', '/v1/jobs/{id}/resume', '/v1/jobs/job_aaaaaaaaaaaaaaaaaaaaaaaaaa/resume')).status,
    ).toBe(404);
    // Refused by the provider before it accepted anything: a failure a resume goes on from, at submit.
    await faultForNextSubmission('reject');
    const rejected = await send('post', '/v1/jobs', '/v1/jobs', {
      idempotencyKey: freshKey(),
      json: imageJob('rejected once'),
    });
    expect((await settled(rejected.body.id)).status).toBe('failed');
    const resumed = await send('post', '/v1/jobs/{id}/resume', `/v1/jobs/${rejected.body.id}/resume`);
    expect({ status: resumed.status, job: resumed.body.status }).toEqual({ status: 202, job: 'running' });
    expect((await settled(rejected.body.id)).status).toBe('succeeded');

    await faultForNextSubmission('stall');
    const stalled = await send('post', '/v1/jobs', '/v1/jobs', {
      idempotencyKey: freshKey(),
      json: imageJob('stall'),
    });
    await atProvider(stalled.body.id);
    const canceled = await send('post', '/v1/jobs/{id}/cancel', `/v1/jobs/${stalled.body.id}/cancel`);
    expect({ status: canceled.status, job: canceled.body.status }).toEqual({ status: 202, job: 'canceled' });
  });
});

describe('schedules', () => {
  it('creates, replays, lists, gets, disables and deletes a schedule, and documents its refusals', async () => {
    const key = freshKey();
    const request = { expression: 'cron(0 9 ? * MON-FRI *)', timezone: 'Europe/Berlin', job: imageJob() };
    const created = await send('post', '/v1/schedules', '/v1/schedules', {
      idempotencyKey: key,
      json: request,
    });
    expect(created.status).toBe(201);
    const id = created.body.id as string;
    const replayed = await send('post', '/v1/schedules', '/v1/schedules', {
      idempotencyKey: key,
      json: request,
    });
    expect([replayed.status, replayed.body.id]).toEqual([201, id]);
    const reused = await send('post', '/v1/schedules', '/v1/schedules', {
      idempotencyKey: key,
      json: { ...request, expression: 'rate(1 hour)' },
    });
    expect(reused.status).toBe(422);
    const invalid = await send('post', '/v1/schedules', '/v1/schedules', {
      idempotencyKey: freshKey(),
      json: { ...request, expression: 'rate(0 minutes)' },
    });
    expect(invalid.body.code).toBe('validation-failed');
    expect((await send('post', '/v1/schedules', '/v1/schedules', { json: request })).status).toBe(400);

    expect((await send('get', '/v1/schedules', '/v1/schedules?limit=5')).status).toBe(200);
    expect((await send('get', '/v1/schedules', '/v1/schedules?limit=0')).status).toBe(400);
    expect((await send('get', '/v1/schedules/{id}', `/v1/schedules/${id}`)).status).toBe(200);
    expect((await send('get', '/v1/schedules/{id}', `/v1/schedules/${id}`, { key: OTHER_KEY })).status).toBe(
      404,
    );
    const disabled = await send('patch', '/v1/schedules/{id}', `/v1/schedules/${id}`, {
      json: { enabled: false },
    });
    expect([disabled.status, disabled.body.nextRunAt]).toEqual([200, null]);
    expect(
      (await send('patch', '/v1/schedules/{id}', `/v1/schedules/${id}`, { json: { on: 1 } })).status,
    ).toBe(400);
    expect((await send('delete', '/v1/schedules/{id}', `/v1/schedules/${id}`)).status).toBe(204);
    expect((await send('delete', '/v1/schedules/{id}', `/v1/schedules/${id}`)).status).toBe(404);
    expect(
      (await send('patch', '/v1/schedules/{id}', `/v1/schedules/${id}`, { json: { enabled: true } })).status,
    ).toBe(404);
  });
});

describe('POST /v1/uploads', () => {
  it('hands out tickets and documents its refusals', async () => {
    const ticket = await send('post', '/v1/uploads', '/v1/uploads', {
      json: { contentType: 'audio/mpeg', contentLength: 1234 },
    });
    expect(ticket.status).toBe(201);
    const invalid = await send('post', '/v1/uploads', '/v1/uploads', {
      json: { contentType: 'application/x-sh', contentLength: 10 },
    });
    expect(invalid.status).toBe(400);
    const wrongType = await send('post', '/v1/uploads', '/v1/uploads', {
      body: 'contentType=audio/mpeg',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
    });
    expect(wrongType.status).toBe(415);
  });
});

describe('POST /v1/uploads/multipart, /v1/uploads/{ref}/parts and /v1/uploads/{ref}/complete', () => {
  it('start an upload in parts, renew a part URL, store the parts and assemble them, and document their refusals', async () => {
    const size = 9 * 1024 * 1024;
    const started = await send('post', '/v1/uploads/multipart', '/v1/uploads/multipart', {
      json: { contentType: 'audio/wav', contentLength: size },
    });
    expect(started.status).toBe(201);
    expect(started.body.parts).toHaveLength(2);
    // Part 2 goes up through a renewed URL, as after the first URLs expired.
    const partsTemplate = '/v1/uploads/{ref}/parts';
    const partsPath = `/v1/uploads/${started.body.ref}/parts`;
    const renewed = await send('post', partsTemplate, partsPath, {
      json: { uploadId: started.body.uploadId, contentLength: size, partNumbers: [2] },
    });
    expect(renewed.status).toBe(200);
    expect(renewed.body).toMatchObject({
      ref: started.body.ref,
      uploadId: started.body.uploadId,
      partSizeBytes: started.body.partSizeBytes,
    });
    expect(renewed.body.parts.map((part: { partNumber: number }) => part.partNumber)).toEqual([2]);
    const beyond = await send('post', partsTemplate, partsPath, {
      json: { uploadId: started.body.uploadId, contentLength: size, partNumbers: [3] },
    });
    expect({ status: beyond.status, errors: beyond.body.errors }).toEqual({
      status: 400,
      errors: [{ pointer: '/partNumbers/0', detail: `a file of ${size} bytes has parts 1 to 2` }],
    });
    const parts = [];
    for (const part of [started.body.parts[0], renewed.body.parts[0]] as {
      partNumber: number;
      uploadUrl: string;
    }[]) {
      const length = part.partNumber === 1 ? started.body.partSizeBytes : size - started.body.partSizeBytes;
      const stored = await fetch(part.uploadUrl, { method: 'PUT', body: new Uint8Array(length) });
      expect(stored.status).toBe(200);
      parts.push({ partNumber: part.partNumber, etag: stored.headers.get('etag') as string });
    }
    const template = '/v1/uploads/{ref}/complete';
    const path = `/v1/uploads/${started.body.ref}/complete`;
    const wrongEtag = await send('post', template, path, {
      json: { uploadId: started.body.uploadId, parts: [{ ...parts[0], etag: '"nope"' }, parts[1]] },
    });
    expect(wrongEtag.status).toBe(400);
    const completed = await send('post', template, path, {
      json: { uploadId: started.body.uploadId, parts },
    });
    expect(completed.status).toBe(200);
    expect(completed.body).toEqual({ ref: started.body.ref });
    expect(
      (
        await send('post', template, path, {
          json: { uploadId: started.body.uploadId, parts: [parts[1], parts[0]] },
        })
      ).status,
    ).toBe(400);
    const invalid = await send('post', '/v1/uploads/multipart', '/v1/uploads/multipart', {
      json: { contentType: 'audio/wav', contentLength: 0 },
    });
    expect(invalid.status).toBe(400);
  });
});

describe('POST /v1/jobs/{id}/stream-ticket', () => {
  it("hands a ticket to the job's tenant and no one else, not even the admin key", async () => {
    const created = await send('post', '/v1/jobs', '/v1/jobs', {
      idempotencyKey: freshKey(),
      json: imageJob(),
    });
    const template = '/v1/jobs/{id}/stream-ticket';
    const ticket = await send('post', template, `/v1/jobs/${created.body.id}/stream-ticket`);
    expect(ticket.status).toBe(201);
    expect(ticket.body.streamUrl).toBe(stack.endpoints.streamUrl);
    expect(
      (await send('post', template, '/v1/jobs/job_aaaaaaaaaaaaaaaaaaaaaaaaaa/stream-ticket')).status,
    ).toBe(404);
    expect(
      (await send('post', template, `/v1/jobs/${created.body.id}/stream-ticket`, { key: 'not-a-key' }))
        .status,
    ).toBe(401);
    // The admin key opens every tenant's jobs, so it must never be turned into a ticket for a URL.
    const admin = await send('post', template, `/v1/jobs/${created.body.id}/stream-ticket`, {
      key: ADMIN_KEY,
    });
    expect({ status: admin.status, code: admin.body?.code, detail: admin.body?.detail }).toEqual({
      status: 403,
      code: 'forbidden',
      detail: 'This route needs a tenant API key.',
    });
    expect(admin.body).not.toHaveProperty('ticket');
  });
});

describe('POST /v1/search', () => {
  it('answers a search with the documented result, and documents each refusal it gives', async () => {
    // No recording is published on this stack: the answer has no hits, and its shape is still checked.
    const found = await send('post', '/v1/search', '/v1/search', {
      json: { query: 'grace is not earned', limit: 5, filter: { labels: ['advent'] } },
    });
    expect({ status: found.status, body: found.body }).toEqual({ status: 200, body: { items: [] } });

    const cases: [string, Send, number, string][] = [
      ['no key', { key: null, json: { query: 'grace' } }, 401, 'unauthorized'],
      ['the admin key', { key: ADMIN_KEY, json: { query: 'grace' } }, 403, 'forbidden'],
      ['an empty query', { json: { query: '  ' } }, 400, 'validation-failed'],
      [
        'an unknown filter key',
        { json: { query: 'grace', filter: { speaker: 'x' } } },
        400,
        'validation-failed',
      ],
      [
        'dateFrom after dateTo',
        { json: { query: 'grace', filter: { dateFrom: '2026-03-02', dateTo: '2026-03-01' } } },
        400,
        'validation-failed',
      ],
      ['a body over 1 MiB', { json: { query: 'x'.repeat(1024 * 1024 + 10) } }, 413, 'payload-too-large'],
      [
        'text/plain',
        { body: 'grace', headers: { 'content-type': 'text/plain' } },
        415,
        'unsupported-media-type',
      ],
    ];
    for (const [what, request, status, code] of cases) {
      const answer = await send('post', '/v1/search', '/v1/search', request);
      expect({ what, status: answer.status, code: answer.body?.code }).toEqual({ what, status, code });
    }
  });
});

describe('admin routes', () => {
  it('lists jobs in review, resolves one, redrives the dead-letter queue and refuses tenant keys', async () => {
    await faultForNextSubmission('accept-then-drop');
    const ambiguous = await send('post', '/v1/jobs', '/v1/jobs', {
      idempotencyKey: freshKey(),
      json: imageJob(),
    });
    const id = ambiguous.body.id as string;
    expect((await settled(id)).status).toBe('needs_review');

    const review = await send('get', '/v1/admin/jobs', '/v1/admin/jobs', { key: ADMIN_KEY });
    expect(
      review.body.items.map((job: { id: string; tenantId: string }) => [job.id, job.tenantId]),
    ).toContainEqual([id, 'acme']);
    expect(
      (await send('get', '/v1/admin/jobs', '/v1/admin/jobs?status=running&limit=2', { key: ADMIN_KEY }))
        .status,
    ).toBe(200);
    expect(
      (await send('get', '/v1/admin/jobs', '/v1/admin/jobs?status=succeeded', { key: ADMIN_KEY })).status,
    ).toBe(400);
    expect((await send('get', '/v1/admin/jobs', '/v1/admin/jobs')).status).toBe(403);
    expect((await send('get', '/v1/admin/jobs', '/v1/admin/jobs', { key: 'not-a-key' })).status).toBe(401);

    // The job in review holds its slot: the generic provider shows it, with its limit.
    const providers = await send('get', '/v1/admin/providers', '/v1/admin/providers', { key: ADMIN_KEY });
    expect(providers.status).toBe(200);
    expect(providers.body.items.map((p: { name: string }) => p.name)).toEqual([...PROVIDER_NAMES]);
    expect(providers.body.items[0]).toMatchObject({ name: 'longhaul-http', inFlight: expect.any(Number) });
    expect(providers.body.items[0].inFlight).toBeGreaterThanOrEqual(1);
    expect((await send('get', '/v1/admin/providers', '/v1/admin/providers')).status).toBe(403);

    // Paused by hand and resumed at once; refused with nothing changed for a bad body, an unknown provider, a tenant's key.
    const pauseTemplate = '/v1/admin/providers/{provider}/pause';
    const resumeTemplate = '/v1/admin/providers/{provider}/resume';
    const pause = { seconds: 60, reason: 'a maintenance window' };
    expect(
      (
        await send('post', pauseTemplate, '/v1/admin/providers/deepgram/pause', {
          key: ADMIN_KEY,
          json: { seconds: 0 },
        })
      ).status,
    ).toBe(400);
    expect(
      (await send('post', pauseTemplate, '/v1/admin/providers/nope/pause', { key: ADMIN_KEY, json: pause }))
        .status,
    ).toBe(404);
    expect(
      (await send('post', pauseTemplate, '/v1/admin/providers/deepgram/pause', { json: pause })).status,
    ).toBe(403);
    const paused = await send('post', pauseTemplate, '/v1/admin/providers/deepgram/pause', {
      key: ADMIN_KEY,
      json: pause,
    });
    expect(paused).toMatchObject({
      status: 200,
      body: { name: 'deepgram', state: 'paused', reason: pause.reason },
    });
    expect(
      (await send('post', resumeTemplate, '/v1/admin/providers/nope/resume', { key: ADMIN_KEY })).status,
    ).toBe(404);
    expect((await send('post', resumeTemplate, '/v1/admin/providers/deepgram/resume')).status).toBe(403);
    expect(
      await send('post', resumeTemplate, '/v1/admin/providers/deepgram/resume', { key: ADMIN_KEY }),
    ).toMatchObject({ status: 200, body: { name: 'deepgram', state: 'open' } });

    const resolvePath = `/v1/admin/jobs/${id}/resolve`;
    const template = '/v1/admin/jobs/{id}/resolve';
    const invalid = await send('post', template, resolvePath, {
      key: ADMIN_KEY,
      json: { outcome: 'maybe', note: 'x' },
    });
    expect(invalid.status).toBe(400);
    const resolved = await send('post', template, resolvePath, {
      key: ADMIN_KEY,
      json: { outcome: 'succeeded', note: 'the provider shows it finished' },
    });
    expect({ status: resolved.status, job: resolved.body.status }).toEqual({ status: 200, job: 'succeeded' });
    const again = await send('post', template, resolvePath, {
      key: ADMIN_KEY,
      json: { outcome: 'failed', note: 'x' },
    });
    expect({ status: again.status, code: again.body.code }).toEqual({
      status: 409,
      code: 'job-already-finished',
    });
    const missing = await send('post', template, '/v1/admin/jobs/job_aaaaaaaaaaaaaaaaaaaaaaaaaa/resolve', {
      key: ADMIN_KEY,
      json: { outcome: 'failed', note: 'x' },
    });
    expect(missing.status).toBe(404);

    await faultForNextSubmission('stall');
    const running = await send('post', '/v1/jobs', '/v1/jobs', {
      idempotencyKey: freshKey(),
      json: imageJob(),
    });
    await atProvider(running.body.id);
    const notInReview = await send('post', template, `/v1/admin/jobs/${running.body.id}/resolve`, {
      key: ADMIN_KEY,
      json: { outcome: 'failed', note: 'x' },
    });
    expect({ status: notInReview.status, code: notInReview.body.code }).toEqual({
      status: 409,
      code: 'job-not-in-review',
    });
    await send('post', '/v1/jobs/{id}/cancel', `/v1/jobs/${running.body.id}/cancel`);

    const redrive = await send('post', '/v1/admin/dlq/redrive', '/v1/admin/dlq/redrive', { key: ADMIN_KEY });
    expect(redrive.status).toBe(202);
    expect((await send('post', '/v1/admin/dlq/redrive', '/v1/admin/dlq/redrive')).status).toBe(403);
  });
});

describe('bulk cancel and replay', () => {
  it('answer as documented, and refuse bad filters and the wrong key', async () => {
    // A dry run over every unfinished job, and a cancel whose window holds none: nothing of the other tests changes.
    const dry = await send('post', '/v1/jobs/cancel', '/v1/jobs/cancel', {
      json: { filter: {}, dryRun: true },
    });
    expect(dry.body).toMatchObject({ canceled: 0, cancelRequested: 0 });
    const none = await send('post', '/v1/jobs/cancel', '/v1/jobs/cancel', {
      json: { filter: { status: ['queued'], createdBefore: '2000-01-01T00:00:00Z' } },
    });
    expect(none.body).toEqual({ matched: 0, canceled: 0, cancelRequested: 0, nextCursor: null });
    const bad = await send('post', '/v1/jobs/cancel', '/v1/jobs/cancel', {
      json: { filter: { createdAfter: '2026-03-02T00:00:00Z', createdBefore: '2026-03-01T00:00:00Z' } },
    });
    expect(bad.body.errors).toEqual([
      { pointer: '/filter/createdBefore', detail: 'must be later than createdAfter' },
    ]);
    expect(
      (await send('post', '/v1/jobs/cancel', '/v1/jobs/cancel', { key: null, json: { filter: {} } })).status,
    ).toBe(401);

    const replay = await send('post', '/v1/admin/jobs/replay', '/v1/admin/jobs/replay', {
      key: ADMIN_KEY,
      json: {
        filter: { tenant: 'acme', status: ['succeeded', 'needs_review'] },
        note: 'document check',
        dryRun: true,
      },
    });
    expect(replay.body).toMatchObject({ replayed: 0, alreadyReplayed: 0, jobs: [] });
    expect(replay.body.matched).toBeGreaterThan(0);
    const noNote = await send('post', '/v1/admin/jobs/replay', '/v1/admin/jobs/replay', {
      key: ADMIN_KEY,
      json: { filter: { status: ['failed'] } },
    });
    expect(noNote.body.errors).toEqual([{ pointer: '/note', detail: 'must say why' }]);
    const tenantKey = await send('post', '/v1/admin/jobs/replay', '/v1/admin/jobs/replay', {
      json: { filter: { status: ['failed'] }, note: 'x' },
    });
    expect(tenantKey.status).toBe(403);

    const resume = await send('post', '/v1/admin/jobs/resume', '/v1/admin/jobs/resume', {
      key: ADMIN_KEY,
      json: {
        filter: { tenant: 'acme', errorCode: 'provider_unavailable' },
        note: 'document check',
        dryRun: true,
      },
    });
    expect(resume.status).toBe(200);
    const unknownProvider = await send('post', '/v1/admin/jobs/resume', '/v1/admin/jobs/resume', {
      key: ADMIN_KEY,
      json: { filter: { provider: 'nobody' }, note: 'x' },
    });
    expect(unknownProvider.status).toBe(400);
  });
});

describe('admin tenant routes', () => {
  it("reads and sets a tenant's settings, and refuses bad input, unknown names and tenant keys", async () => {
    const template = '/v1/admin/tenants/{tenant}';
    const defaults = await send('get', template, '/v1/admin/tenants/gamma', { key: ADMIN_KEY });
    expect({ status: defaults.status, weight: defaults.body.weight }).toEqual({ status: 200, weight: 1 });

    const set = await send('put', template, '/v1/admin/tenants/gamma', {
      key: ADMIN_KEY,
      json: { weight: 4, maxInFlight: 2 },
    });
    expect({ status: set.status, maxInFlight: set.body.maxInFlight }).toEqual({
      status: 200,
      maxInFlight: 2,
    });
    const uncapped = await send('put', template, '/v1/admin/tenants/gamma', {
      key: ADMIN_KEY,
      json: { maxInFlight: null },
    });
    expect(uncapped.body).not.toHaveProperty('maxInFlight');

    const invalid = await send('put', template, '/v1/admin/tenants/gamma', {
      key: ADMIN_KEY,
      json: { weight: 101 },
    });
    expect({ status: invalid.status, pointer: invalid.body.errors[0].pointer }).toEqual({
      status: 400,
      pointer: '/weight',
    });
    const unknown = await send('put', template, '/v1/admin/tenants/nobody', {
      key: ADMIN_KEY,
      json: { weight: 2 },
    });
    expect({ status: unknown.status, parameter: unknown.body.errors[0].parameter }).toEqual({
      status: 400,
      parameter: 'tenant',
    });
    expect((await send('get', template, '/v1/admin/tenants/nobody', { key: ADMIN_KEY })).status).toBe(404);
    expect((await send('get', template, '/v1/admin/tenants/acme')).status).toBe(403);
    expect((await send('put', template, '/v1/admin/tenants/acme', { json: { weight: 2 } })).status).toBe(403);
  });
});

describe('POST /v1/provider/events', () => {
  const signed = (body: string) => ({
    'content-type': 'application/json',
    'provider-signature': signPayload(PROVIDER_SECRET, body, Math.floor(Date.now() / 1000)),
  });

  it('acknowledges a signed event, and refuses a bad signature or a missing job id', async () => {
    const body = JSON.stringify({ type: 'canceled', id: 'gen_unknown', at: new Date().toISOString() });
    const unknownJob = '/v1/provider/events?jobId=job_aaaaaaaaaaaaaaaaaaaaaaaaaa';
    const template = '/v1/provider/events';
    expect(
      (await send('post', template, unknownJob, { key: null, body, headers: signed(body) })).status,
    ).toBe(204);
    const forged = await send('post', template, unknownJob, {
      key: null,
      body,
      headers: { 'content-type': 'application/json', 'provider-signature': `t=1,v1=${'0'.repeat(64)}` },
    });
    expect(forged.status).toBe(401);
    expect((await send('post', template, template, { key: null, body, headers: signed(body) })).status).toBe(
      400,
    );
  });

  it('takes the submission tag of the webhook URL, and refuses a malformed one with a problem', async () => {
    const body = JSON.stringify({ type: 'canceled', id: 'gen_unknown', at: new Date().toISOString() });
    const template = '/v1/provider/events';
    const event = (submission: string) =>
      send('post', template, `${template}?jobId=job_aaaaaaaaaaaaaaaaaaaaaaaaaa&submission=${submission}`, {
        key: null,
        body,
        headers: signed(body),
      });
    expect((await event('momqrls0.1')).status).toBe(204);
    const malformed = await event('1');
    expect(malformed.status).toBe(400);
    expect(malformed.body).toMatchObject({
      code: 'validation-failed',
      errors: [{ parameter: 'submission' }],
    });
  });
});

const DEEPGRAM_CALLBACK_SECRET = localDefaults.DEEPGRAM_CALLBACK_SECRET;

describe("each provider's webhook route", () => {
  it('acknowledges a verified Replicate webhook and refuses a forged one', async () => {
    const template = PROVIDERS.replicate.webhookPath;
    const url = `${template}?jobId=job_aaaaaaaaaaaaaaaaaaaaaaaaaa&submission=momqrls0.0`;
    const body = JSON.stringify({ id: 'p_unknown', status: 'canceled' });
    const signedBy = (secret: string) => {
      const at = new Date();
      return {
        'content-type': 'application/json',
        'webhook-id': 'msg_openapi',
        'webhook-timestamp': String(Math.floor(at.getTime() / 1000)),
        'webhook-signature': new Webhook(secret).sign('msg_openapi', at, body),
      };
    };
    const taken = await send('post', template, url, {
      key: null,
      body,
      headers: signedBy(DEFAULT_REPLICATE_WEBHOOK_SECRET),
    });
    expect(taken.status).toBe(204);
    const forged = await send('post', template, url, {
      key: null,
      body,
      headers: signedBy(`whsec_${Buffer.from('some other key!!').toString('base64')}`),
    });
    expect(forged.status).toBe(401);
  });

  it('acknowledges a Deepgram callback whose URL Longhaul signed, and refuses one it did not', async () => {
    const template = PROVIDERS.deepgram.webhookPath;
    const query = 'jobId=job_aaaaaaaaaaaaaaaaaaaaaaaaaa&submission=momqrls0.0';
    const sig = createHmac('sha256', DEEPGRAM_CALLBACK_SECRET).update(query).digest('hex');
    const body = JSON.stringify({ err_code: 'INTERNAL_SERVER_ERROR', err_msg: 'gone', request_id: 'r1' });
    const headers = { 'content-type': 'application/json' };
    expect(
      (await send('post', template, `${template}?${query}&sig=${sig}`, { key: null, body, headers })).status,
    ).toBe(204);
    expect(
      (
        await send('post', template, `${template}?${query}&sig=${'0'.repeat(64)}`, {
          key: null,
          body,
          headers,
        })
      ).status,
    ).toBe(401);
  });
});

describe('the documented messages', () => {
  it('live-progress messages match LiveMessage', async () => {
    await sim('/_sim/config', { jobMs: 1000 });
    try {
      const created = await send('post', '/v1/jobs', '/v1/jobs', {
        idempotencyKey: freshKey(),
        json: imageJob(),
      });
      const messages: unknown[] = [];
      const { body: ticket } = await send(
        'post',
        '/v1/jobs/{id}/stream-ticket',
        `/v1/jobs/${created.body.id}/stream-ticket`,
      );
      const socket = new WebSocket(`${ticket.streamUrl}?ticket=${ticket.ticket}`);
      socket.addEventListener('message', (event) => messages.push(JSON.parse(String(event.data))));
      try {
        await pollUntil(() => messages.some((m: any) => m.type === 'status' && m.status === 'succeeded'), {
          timeoutMs: 30_000,
          description: 'the final status message',
        });
      } finally {
        socket.close();
      }
      const validate = schemaAt('/components/schemas/LiveMessage');
      const invalid = messages.filter((message) => !validate(message));
      expect(invalid).toEqual([]);
      expect(new Set(messages.map((m: any) => m.type))).toEqual(new Set(['progress', 'status']));
    } finally {
      await sim('/_sim/config', { jobMs: 300 });
    }
  });

  it('the finished-job webhook matches the jobFinished webhook', async () => {
    const receiver = await startWebhookReceiver();
    try {
      await send('post', '/v1/jobs', '/v1/jobs', {
        idempotencyKey: freshKey(),
        json: { ...imageJob(), webhookUrl: receiver.url },
      });
      const delivery = await pollUntil(() => receiver.deliveries[0], {
        timeoutMs: 30_000,
        description: 'the webhook',
      });
      expect(delivery.headers['longhaul-signature']).toMatch(/^t=\d+,v1=[0-9a-f]{64}$/);
      const validate = schemaAt('/webhooks/jobFinished/post/requestBody/content/application~1json/schema');
      expect({
        valid: validate(JSON.parse(delivery.rawBody.toString())),
        errors: validate.errors ?? null,
      }).toEqual({
        valid: true,
        errors: null,
      });
    } finally {
      await receiver.close();
    }
  });
});

describe('media', () => {
  it('creates, lists, reads, changes, publishes a version of and deletes an item, and documents their refusals', async () => {
    const key = freshKey();
    const request = { title: 'Advent 1', speaker: 'R. Hale', date: '2025-11-30', labels: ['advent'] };
    const created = await send('post', '/v1/media', '/v1/media', { idempotencyKey: key, json: request });
    expect(created.status).toBe(201);
    const id = created.body.id as string;
    expect(created.headers.get('location')).toMatch(new RegExp(`/v1/media/${id}$`));
    const replayed = await send('post', '/v1/media', '/v1/media', { idempotencyKey: key, json: request });
    expect([replayed.status, replayed.body.id, replayed.headers.get('idempotent-replayed')]).toEqual([
      201,
      id,
      'true',
    ]);
    const refusals: [string, Send, number, string][] = [
      [
        'a reused key',
        { idempotencyKey: key, json: { ...request, title: 'Advent 2' } },
        422,
        'idempotency-key-reused',
      ],
      ['no key', { json: request }, 400, 'idempotency-key-missing'],
      [
        'a label twice',
        { idempotencyKey: freshKey(), json: { title: 'x', labels: ['a', 'a'] } },
        400,
        'validation-failed',
      ],
      [
        'text/plain',
        { idempotencyKey: freshKey(), body: 'Advent 1', headers: { 'content-type': 'text/plain' } },
        415,
        'unsupported-media-type',
      ],
    ];
    for (const [what, options, status, code] of refusals) {
      const answer = await send('post', '/v1/media', '/v1/media', options);
      expect({ what, status: answer.status, code: answer.body?.code }).toEqual({ what, status, code });
    }

    const listed = await send('get', '/v1/media', '/v1/media?label=advent&dateFrom=2025-11-01&limit=100');
    expect(listed.status).toBe(200);
    expect(listed.body.items.map((item: { id: string }) => item.id)).toContain(id);
    expect((await send('get', '/v1/media', '/v1/media?limit=0')).status).toBe(400);
    expect((await send('get', '/v1/media/{id}', `/v1/media/${id}`)).status).toBe(200);
    expect((await send('get', '/v1/media/{id}', `/v1/media/${id}`, { key: OTHER_KEY })).status).toBe(404);
    const updated = await send('patch', '/v1/media/{id}', `/v1/media/${id}`, {
      json: { title: 'Advent 1: Waiting', speaker: null },
    });
    expect([updated.status, updated.body.title, updated.body.speaker]).toEqual([
      200,
      'Advent 1: Waiting',
      undefined,
    ]);
    expect((await send('patch', '/v1/media/{id}', `/v1/media/${id}`, { json: {} })).status).toBe(400);

    const ticket = await send('post', '/v1/uploads', '/v1/uploads', {
      json: { contentType: 'audio/mpeg', contentLength: 4 },
    });
    const put = await fetch(ticket.body.uploadUrl, {
      method: 'PUT',
      headers: { 'content-type': 'audio/mpeg' },
      body: new Uint8Array([1, 2, 3, 4]),
    });
    expect(put.ok).toBe(true);
    const versionKey = freshKey();
    const version = { audioRef: ticket.body.ref, language: 'en' };
    const path = `/v1/media/${id}/versions`;
    const started = await send('post', '/v1/media/{id}/versions', path, {
      idempotencyKey: versionKey,
      json: version,
    });
    expect([started.status, started.body.inProgress?.number]).toEqual([202, 1]);
    expect(started.headers.get('location')).toMatch(new RegExp(`/v1/jobs/${started.body.inProgress.jobId}$`));
    const again = await send('post', '/v1/media/{id}/versions', path, {
      idempotencyKey: versionKey,
      json: version,
    });
    expect([again.status, again.headers.get('idempotent-replayed')]).toEqual([202, 'true']);
    const twoSources = await send('post', '/v1/media/{id}/versions', path, {
      idempotencyKey: freshKey(),
      json: { ...version, audioUrl: 'https://media.example.test/a.mp3' },
    });
    expect([twoSources.status, twoSources.body.code]).toEqual([400, 'validation-failed']);
    expect(
      (
        await send('post', '/v1/media/{id}/versions', path, {
          idempotencyKey: freshKey(),
          json: version,
          key: OTHER_KEY,
        })
      ).status,
    ).toBe(404);

    expect((await send('delete', '/v1/media/{id}', `/v1/media/${id}`)).status).toBe(204);
    expect((await send('delete', '/v1/media/{id}', `/v1/media/${id}`)).status).toBe(404);
    expect((await send('get', '/v1/media/{id}', `/v1/media/${id}`)).status).toBe(404);
  });
});

describe('coverage', () => {
  it('validated a success of every operation and the main refusals', () => {
    const expected = [
      'getHealth 200',
      'getOpenApiDocument 200',
      'createJob 202',
      'createJob 400',
      'createJob 401',
      'createJob 403',
      'createJob 409',
      'createJob 413',
      'createJob 415',
      'createJob 422',
      'createJobBatch 200',
      'createJobBatch 400',
      'createJobBatch 401',
      'createJobBatch 403',
      'createJobBatch 413',
      'createJobBatch 415',
      'listJobs 200',
      'listJobs 400',
      'listJobs 401',
      'listJobs 429',
      'getJob 200',
      'getJob 404',
      'cancelJob 202',
      'cancelJob 404',
      'cancelJob 409',
      'resumeJob 202',
      'resumeJob 404',
      'resumeJob 409',
      'getJobEvents 200',
      'getJobEvents 404',
      'createSchedule 201',
      'createSchedule 400',
      'createSchedule 422',
      'listSchedules 200',
      'listSchedules 400',
      'getSchedule 200',
      'getSchedule 404',
      'updateSchedule 200',
      'updateSchedule 400',
      'updateSchedule 404',
      'deleteSchedule 204',
      'deleteSchedule 404',
      'createUpload 201',
      'createUpload 400',
      'createUpload 415',
      'createMultipartUpload 201',
      'createMultipartUpload 400',
      'completeMultipartUpload 200',
      'completeMultipartUpload 400',
      'renewMultipartUploadParts 200',
      'renewMultipartUploadParts 400',
      'createStreamTicket 201',
      'createStreamTicket 401',
      'createStreamTicket 403',
      'createStreamTicket 404',
      'adminListJobs 200',
      'adminListJobs 400',
      'adminListJobs 401',
      'adminListJobs 403',
      'adminListProviders 200',
      'adminListProviders 403',
      'adminPauseProvider 200',
      'adminPauseProvider 400',
      'adminPauseProvider 403',
      'adminPauseProvider 404',
      'adminResumeProvider 200',
      'adminResumeProvider 403',
      'adminResumeProvider 404',
      'adminResolveJob 200',
      'adminResolveJob 400',
      'adminResolveJob 404',
      'adminResolveJob 409',
      'adminGetTenant 200',
      'adminGetTenant 403',
      'adminGetTenant 404',
      'adminPutTenant 200',
      'adminPutTenant 400',
      'adminPutTenant 403',
      'adminRedriveDeadLetters 202',
      'adminRedriveDeadLetters 403',
      'cancelJobs 200',
      'cancelJobs 400',
      'cancelJobs 401',
      'adminReplayJobs 200',
      'adminResumeJobs 200',
      'adminResumeJobs 400',
      'adminReplayJobs 400',
      'adminReplayJobs 403',
      'receiveProviderEvent 204',
      'receiveProviderEvent 400',
      'receiveProviderEvent 401',
      'receiveReplicateWebhook 204',
      'receiveReplicateWebhook 401',
      'receiveDeepgramCallback 204',
      'receiveDeepgramCallback 401',
      'search 200',
      'search 400',
      'search 401',
      'search 403',
      'search 413',
      'search 415',
      'createMedia 201',
      'createMedia 400',
      'createMedia 415',
      'createMedia 422',
      'listMedia 200',
      'listMedia 400',
      'getMedia 200',
      'getMedia 404',
      'updateMedia 200',
      'updateMedia 400',
      'deleteMedia 204',
      'deleteMedia 404',
      'publishMediaVersion 202',
      'publishMediaVersion 400',
      'publishMediaVersion 404',
    ];
    expect([...covered].sort()).toEqual(expected.sort());
    const operations = Object.values(openApiDocument.paths).flatMap((item) =>
      Object.values(item).map((operation) => operation.operationId),
    );
    for (const operationId of operations) {
      expect({ operationId, succeeded: [...covered].some((c) => c.startsWith(`${operationId} 2`)) }).toEqual({
        operationId,
        succeeded: true,
      });
    }
  });
});
