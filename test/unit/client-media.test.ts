import { Longhaul, LonghaulError, LonghaulUsageError, type MediaItem } from '../../client';
import { mediaItemView, mediaPage } from '../../config/media';
import { type ScriptedRequest, scriptedFetch } from './support/scripted-fetch';

/**
 * The SDK's media library calls against a scripted transport: the exact
 * requests they send, one Idempotency-Key per call kept across its retries,
 * the query a listing builds page after page, and the answers they read
 * (a 204 with no body, a 404 as the typed error).
 */

const BASE = 'https://api.example.test/prod';
const MEDIA_ID = 'med_abcdefghijklmnopqrstuvwxyz';
const JOB_ID = 'job_abcdefghijklmnopqrstuvwxyz';
const UPLOAD_REF = 'upl_0123456789abcdefghijklmn';

/** Answers as the handler gives them: parsed with its own schema, so a fixture of another shape fails here. */
const item = (extra: Record<string, unknown> = {}): MediaItem =>
  mediaItemView.parse({
    id: MEDIA_ID,
    title: 'Advent 1',
    speaker: 'R. Hale',
    date: '2025-11-30',
    labels: ['advent'],
    createdAt: '2026-03-01T08:00:00.000Z',
    updatedAt: '2026-03-01T08:00:00.000Z',
    ...extra,
  });
const publishing = item({
  inProgress: { number: 1, jobId: JOB_ID, status: 'publishing', createdAt: '2026-03-01T08:01:00.000Z' },
});

const json =
  (status: number, body: unknown, headers: Record<string, string> = {}) =>
  () =>
    new Response(JSON.stringify(body), {
      status,
      headers: { 'content-type': 'application/json', ...headers },
    });
const problem = (status: number, code: string) => () =>
  new Response(
    JSON.stringify({ type: `urn:longhaul:problem:${code}`, title: code, status, detail: code, code }),
    { status, headers: { 'content-type': 'application/problem+json' } },
  );
const noContent = () => () => new Response(null, { status: 204 });

/** A client over a transport that answers from a script, one step per request, and records each request. */
function scripted(steps: (() => Response)[]) {
  const { fetch, sent } = scriptedFetch(steps);
  const client = new Longhaul({
    baseUrl: BASE,
    apiKey: 'tenant-key',
    fetch,
    retry: { maxAttempts: 4, baseDelayMs: 1, maxDelayMs: 1 },
    sleep: async () => undefined,
  });
  return { client, sent, left: steps };
}

const bodyOf = (request: ScriptedRequest | undefined) => JSON.parse(String(request?.body));

describe('createMedia', () => {
  it('sends the metadata under one minted key, the same on every retry', async () => {
    const { client, sent } = scripted([
      problem(503, 'service-unavailable'),
      problem(409, 'idempotency-key-in-use'),
      json(201, item(), { location: `/prod/v1/media/${MEDIA_ID}` }),
    ]);
    const request = { title: 'Advent 1', speaker: 'R. Hale', date: '2025-11-30', labels: ['advent'] };

    const created = await client.createMedia(request);

    expect(sent.map((r) => `${r.method} ${r.url}`)).toEqual(Array(3).fill(`POST ${BASE}/v1/media`));
    const keys = sent.map((r) => r.headers.get('idempotency-key'));
    expect(keys[0]).toMatch(/^[0-9a-f-]{36}$/);
    expect(new Set(keys)).toEqual(new Set([keys[0]]));
    expect(sent.map(bodyOf)).toEqual(Array(3).fill(request));
    expect(sent[0]?.headers.get('content-type')).toBe('application/json');
    expect(created).toEqual({ item: item(), replayed: false, idempotencyKey: keys[0] });
  });

  it('mints a new key for each call, and sends the one it is given to resume', async () => {
    const { client, sent } = scripted([
      json(201, item()),
      json(201, item()),
      json(201, item(), { 'idempotent-replayed': 'true' }),
    ]);

    await client.createMedia({ title: 'Advent 1' });
    await client.createMedia({ title: 'Advent 1' });
    const resumed = await client.createMedia({ title: 'Advent 1' }, { idempotencyKey: 'advent-1-upload' });

    const keys = sent.map((r) => r.headers.get('idempotency-key'));
    expect(keys[0]).not.toBe(keys[1]);
    expect(keys[2]).toBe('advent-1-upload');
    expect({ replayed: resumed.replayed, key: resumed.idempotencyKey }).toEqual({
      replayed: true,
      key: 'advent-1-upload',
    });
  });

  it('refuses a malformed key before any request', async () => {
    const { client, sent } = scripted([]);
    await expect(client.createMedia({ title: 'x' }, { idempotencyKey: 'has space' })).rejects.toBeInstanceOf(
      LonghaulUsageError,
    );
    expect(sent).toEqual([]);
  });
});

describe('listing media', () => {
  it('builds the query string from the filter, and follows nextCursor with the same filter', async () => {
    const { client, sent } = scripted([
      json(200, mediaPage.parse({ items: [item()], nextCursor: 'c2' })),
      json(200, mediaPage.parse({ items: [item({ title: 'Advent 2' })], nextCursor: null })),
    ]);

    const items = await client
      .listMedia({ label: 'advent', dateFrom: '2025-11-01', dateTo: '2025-12-31', limit: 1 })
      .toArray();

    expect(sent.map((r) => `${r.method} ${r.url}`)).toEqual([
      `GET ${BASE}/v1/media?label=advent&dateFrom=2025-11-01&dateTo=2025-12-31&limit=1`,
      `GET ${BASE}/v1/media?label=advent&dateFrom=2025-11-01&dateTo=2025-12-31&limit=1&cursor=c2`,
    ]);
    expect(items.map((listed) => listed.title)).toEqual(['Advent 1', 'Advent 2']);
  });

  it('asks for no more than it still needs, and sends no query it was not given', async () => {
    const { client, sent } = scripted([json(200, { items: [item(), item()], nextCursor: 'c2' })]);

    const { items, nextCursor } = await client.listMedia().take(2);

    expect(sent.map((r) => r.url)).toEqual([`${BASE}/v1/media?limit=2`]);
    expect({ items: items.length, nextCursor }).toEqual({ items: 2, nextCursor: 'c2' });
    const page = scripted([json(200, { items: [], nextCursor: null })]);
    await page.client.listMediaPage();
    expect(page.sent.map((r) => r.url)).toEqual([`${BASE}/v1/media`]);
  });
});

describe('one media item', () => {
  it('gets an item, and raises a missing one as not-found without retrying', async () => {
    const { client, sent } = scripted([json(200, publishing), problem(404, 'not-found')]);

    expect(await client.getMedia(MEDIA_ID)).toEqual(publishing);
    const missing = await client.getMedia('med_gone').catch((error: unknown) => error);

    expect(missing).toBeInstanceOf(LonghaulError);
    expect({ status: (missing as LonghaulError).status, code: (missing as LonghaulError).code }).toEqual({
      status: 404,
      code: 'not-found',
    });
    expect(sent.map((r) => `${r.method} ${r.url}`)).toEqual([
      `GET ${BASE}/v1/media/${MEDIA_ID}`,
      `GET ${BASE}/v1/media/med_gone`,
    ]);
  });

  it('patches the fields it is given, null removing one, and retries the same change', async () => {
    const { client, sent } = scripted([
      problem(502, 'internal-error'),
      json(200, item({ title: 'Advent 2' })),
    ]);
    const patch = { title: 'Advent 2', speaker: null, labels: [] };

    const updated = await client.updateMedia(MEDIA_ID, patch);

    expect(sent.map((r) => `${r.method} ${r.url}`)).toEqual(
      Array(2).fill(`PATCH ${BASE}/v1/media/${MEDIA_ID}`),
    );
    expect(sent.map(bodyOf)).toEqual([patch, patch]);
    expect(sent[1]?.headers.get('content-type')).toBe('application/json');
    expect(updated.title).toBe('Advent 2');
  });

  it('deletes an item: a 204 with no body resolves, with no body sent', async () => {
    const { client, sent, left } = scripted([noContent()]);

    await expect(client.deleteMedia(MEDIA_ID)).resolves.toBeUndefined();

    expect(sent.map((r) => ({ request: `${r.method} ${r.url}`, body: r.body }))).toEqual([
      { request: `DELETE ${BASE}/v1/media/${MEDIA_ID}`, body: undefined },
    ]);
    expect(left).toEqual([]);
  });
});

describe('publishVersion', () => {
  it("sends the source under one key across retries, and names the version's job from Location", async () => {
    const { client, sent } = scripted([
      problem(429, 'tenant-queue-full'),
      json(202, publishing, { location: `/prod/v1/jobs/${JOB_ID}` }),
    ]);
    const source = { audioUrl: 'https://media.example.test/advent-1.mp3', language: 'en' };

    const published = await client.publishVersion(MEDIA_ID, source, { idempotencyKey: 'advent-1-take-2' });

    expect(sent.map((r) => `${r.method} ${r.url}`)).toEqual(
      Array(2).fill(`POST ${BASE}/v1/media/${MEDIA_ID}/versions`),
    );
    expect(sent.map((r) => r.headers.get('idempotency-key'))).toEqual(['advent-1-take-2', 'advent-1-take-2']);
    expect(sent.map(bodyOf)).toEqual([source, source]);
    expect(published).toEqual({
      item: publishing,
      replayed: false,
      idempotencyKey: 'advent-1-take-2',
      jobId: JOB_ID,
      location: `/prod/v1/jobs/${JOB_ID}`,
    });
  });

  it('uploads a file once, then sends its ref, however often the publish is retried', async () => {
    const uploadUrl = 'https://uploads.example.test/put?X-Amz-Signature=abc';
    const { client, sent } = scripted([
      json(201, { ref: UPLOAD_REF, uploadUrl, expiresAt: '2026-03-01T09:00:00.000Z' }),
      () => new Response(null, { status: 200 }),
      problem(503, 'service-unavailable'),
      json(202, publishing, { location: `/prod/v1/jobs/${JOB_ID}` }),
    ]);
    const data = new Uint8Array([1, 2, 3, 4]);

    const published = await client.publishVersion(MEDIA_ID, {
      file: { data, contentType: 'audio/mpeg' },
      language: 'en',
    });

    expect(sent.map((r) => `${r.method} ${r.url}`)).toEqual([
      `POST ${BASE}/v1/uploads`,
      `PUT ${uploadUrl}`,
      `POST ${BASE}/v1/media/${MEDIA_ID}/versions`,
      `POST ${BASE}/v1/media/${MEDIA_ID}/versions`,
    ]);
    expect(bodyOf(sent[0])).toEqual({ contentType: 'audio/mpeg', contentLength: 4 });
    expect([bodyOf(sent[2]), bodyOf(sent[3])]).toEqual([
      { language: 'en', audioRef: UPLOAD_REF },
      { language: 'en', audioRef: UPLOAD_REF },
    ]);
    expect(sent[2]?.headers.get('idempotency-key')).toBe(published.idempotencyKey);
    expect(sent[3]?.headers.get('idempotency-key')).toBe(published.idempotencyKey);
    expect(published.jobId).toBe(JOB_ID);
  });
});
