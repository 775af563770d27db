import { cpSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative, resolve } from 'node:path';
import {
  OWN_PROVIDER_FOR_EVERY_JOB_TYPE,
  pollUntil,
  type RunningLocalStack,
  startLocalStack,
} from '../../local/harness/local-stack';
import { docBlocks } from '../support/doc-blocks';

/**
 * A job type added the way docs/job-types.md's "Add your own job type" says, word
 * for word: its one file and its one registration line, written into a copy
 * of this project, and nothing else changed. The copy's local stack must then
 * accept, validate and document it, run it end to end on its provider, and
 * show it on the dashboard.
 */

jest.setTimeout(240_000);

const ROOT = resolve(__dirname, '../..');
const KEY = 'job-type-key-3f9a';
const ADMIN = 'job-type-admin-key-51c2';
const NAME = 'image.remove-background';
/** A follow-up declared on the new type in the copy: an image generated from the cut-out's media type. */
const FOLLOW_UP =
  "{ name: 'preview', jobType: 'image.generate', input: ({ result }) => ({ prompt: 'a preview of ' + String(result.contentType) }) }";

/** The guide's code blocks: the job type's file, then its registration. */
function guide(): { module: string; registration: string } {
  const [module, registration] = docBlocks('docs/job-types.md')
    .filter((block) => block.heading === '## Add your own job type' && block.info.startsWith('ts '))
    .map((block) => block.code);
  if (!module || !registration) throw new Error('docs/job-types.md: the job type guide lost its code blocks');
  return { module, registration };
}

/** This project, copied without what is built, installed or stored, with the guide applied. */
function projectWithTheGuide(): string {
  const copy = mkdtempSync(join(tmpdir(), 'longhaul-job-type-'));
  cpSync(ROOT, copy, {
    recursive: true,
    filter: (source) => !/^(node_modules|\.git|cdk\.out|\.longhaul)(\/|$)/.test(relative(ROOT, source)),
  });
  symlinkSync(join(ROOT, 'node_modules'), join(copy, 'node_modules'));
  const { module, registration } = guide();
  // Beyond the guide: the new type starts a follow-up when a job of it succeeds, to see one made end to end.
  const withFollowUp = module.replace('defineJobType({', `defineJobType({\n  followUps: [${FOLLOW_UP}],`);
  if (withFollowUp === module)
    throw new Error('docs/job-types.md: the job type guide no longer calls defineJobType({');
  writeFileSync(join(copy, 'config/job-types/image-remove-background.ts'), withFollowUp);
  const index = join(copy, 'config/job-types/index.ts');
  const registrations = registration.trim().split('\n');
  const importLine = registrations.find((line) => line.startsWith('import '));
  const registryLine = registrations.find((line) => line.startsWith('export const JOB_TYPE_MODULES'));
  const source = readFileSync(index, 'utf8');
  const updated = `${importLine}\n${source.replace(/^export const JOB_TYPE_MODULES = .*$/m, registryLine ?? '')}`;
  if (updated === source || !registryLine)
    throw new Error('config/job-types/index.ts: no registry line to change');
  writeFileSync(index, updated);
  return copy;
}

let copy: string;
let stack: RunningLocalStack;

async function api(path: string, init: RequestInit & { key?: string } = {}) {
  const response = await fetch(`${stack.baseUrl}${path}`, {
    ...init,
    headers: { 'x-api-key': init.key ?? KEY, ...(init.headers as Record<string, string>) },
  });
  const text = await response.text();
  return { status: response.status, body: text ? JSON.parse(text) : undefined };
}

beforeAll(async () => {
  copy = projectWithTheGuide();
  stack = await startLocalStack({
    root: copy,
    env: {
      ...OWN_PROVIDER_FOR_EVERY_JOB_TYPE,
      LONGHAUL_API_KEYS: `${KEY}:acme`,
      LONGHAUL_ADMIN_KEY: ADMIN,
      SIM_JOB_MS: '500',
    },
    readyTimeoutMs: 180_000,
  });
});

afterAll(async () => {
  await stack?.stop();
  if (copy) rmSync(copy, { recursive: true, force: true });
});

it('documents the new job type in /openapi.json, with its input and result', async () => {
  const { body: document } = await api('/openapi.json');
  expect(document.components.schemas.JobType.enum).toContain(NAME);
  expect(document['x-job-types'][NAME]).toMatchObject({
    input: 'ImageRemoveBackgroundInput',
    result: 'ImageRemoveBackgroundResult',
  });
  expect(document.components.schemas.ImageRemoveBackgroundInput.required).toEqual(['imageRef']);
});

it('refuses invalid input for it with a precise problem, and stores nothing', async () => {
  const refused = await api('/v1/jobs', {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'idempotency-key': 'bad-input-1' },
    body: JSON.stringify({ type: NAME, input: { imageRef: 'not-a-ref' } }),
  });
  expect(refused.status).toBe(400);
  expect(refused.body).toMatchObject({ code: 'validation-failed', errors: [{ pointer: '/input/imageRef' }] });
  expect((await api('/v1/jobs')).body.items).toEqual([]);
});

it('runs it end to end on its provider from a multipart file, and shows it on the dashboard', async () => {
  const form = new FormData();
  form.set('type', NAME);
  form.set('input', '{}');
  form.set(
    'file',
    new Blob([Buffer.from('\x89PNG\r\n\x1a\nportrait')], { type: 'image/png' }),
    'portrait.png',
  );
  const created = await api('/v1/jobs', {
    method: 'POST',
    headers: { 'idempotency-key': 'cutout-1' },
    body: form,
  });
  expect(created.status).toBe(202);

  const job = await pollUntil(
    async () => {
      const { body } = await api(`/v1/jobs/${created.body.id}`);
      return ['succeeded', 'failed', 'needs_review'].includes(body.status) ? body : undefined;
    },
    { timeoutMs: 60_000, intervalMs: 200, description: 'the new job type to finish' },
  );
  expect(job).toMatchObject({ type: NAME, provider: 'replicate', status: 'succeeded' });
  expect(job.input.imageRef).toMatch(/^upl_/);
  expect(job.result.contentType).toBe('image/png');
  const image = Buffer.from(await (await fetch(job.result.outputUrl)).arrayBuffer());
  expect(image.subarray(1, 4).toString('latin1')).toBe('PNG');

  const report = await pollUntil(
    async () => {
      const { body } = await api('/v1/admin/metrics', { key: ADMIN });
      const row = body.jobTypes.find((t: { type: string }) => t.type === NAME);
      return row?.succeeded === 1 ? row : undefined;
    },
    { timeoutMs: 20_000, intervalMs: 250, description: 'the dashboard to count the new job type' },
  );
  expect(report).toEqual({ type: NAME, provider: 'replicate', submitted: 1, succeeded: 1, failed: 0 });

  // Its follow-up was made once, through intake, in the tenant, under the key derived from the job.
  const followUps = await pollUntil(
    async () => {
      const { body } = await api('/v1/jobs?limit=100');
      const made = body.items.filter((item: { idempotencyKey: string }) =>
        item.idempotencyKey.startsWith('follow-up:'),
      );
      const { body: timeline } = await api(`/v1/jobs/${job.id}/events`);
      const notified = timeline.items.some(
        (e: { type: string; step?: string }) => e.type === 'step.succeeded' && e.step === 'notify',
      );
      return notified && made.length > 0 ? { made, timeline: timeline.items } : undefined;
    },
    { timeoutMs: 20_000, intervalMs: 250, description: 'the follow-up to be made' },
  );
  expect(followUps.made).toEqual([
    expect.objectContaining({
      type: 'image.generate',
      idempotencyKey: `follow-up:${job.id}:preview`,
      input: { prompt: 'a preview of image/png' },
    }),
  ]);
  expect(
    followUps.timeline
      .filter((e: { type: string }) => e.type === 'follow-up.submitted')
      .map((e: { detail: string }) => e.detail),
  ).toEqual([`preview as ${followUps.made[0].id}`]);
  await expect(
    pollUntil(
      async () => {
        const { body } = await api(`/v1/jobs/${followUps.made[0].id}`);
        return body.status === 'succeeded' ? body : undefined;
      },
      { timeoutMs: 60_000, intervalMs: 200, description: 'the follow-up to finish' },
    ),
  ).resolves.toMatchObject({ status: 'succeeded' });
});
