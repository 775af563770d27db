import fc from 'fast-check';
import {
  apiKeyJunk,
  brokenMultipart,
  contentEncodings,
  contentTypes,
  cursorValue,
  invalidIdempotencyKey,
  invalidJobBody,
  invalidUploadRequest,
  junkId,
  queryString,
  queryValue,
  randomBytes,
  validKey,
} from './arbitraries';
import { problemAnswer } from './invariants';
import { auth, FIXTURE_REQUESTS, useFuzzStack } from './stack';

/**
 * Fuzzing the jobs routes: POST /v1/jobs (JSON, any bytes, its headers,
 * multipart), GET /v1/jobs and the routes of one job; and POST /v1/uploads,
 * through which a job's file comes (one property, too small for a stack of
 * its own). Every answer holds to the invariants (./invariants.ts); a refused
 * request changes nothing.
 */

const fuzzing = useFuzzStack('jobs', { fixtures: true });
const { fuzz } = fuzzing;

describe('fuzzing POST /v1/jobs, GET /v1/jobs and the job routes', () => {
  it('POST /v1/jobs refuses every invalid JSON request with a problem and creates nothing', async () => {
    await fuzz(
      'POST /v1/jobs json',
      fc.record({ body: invalidJobBody, charset: fc.constantFrom('', '; charset=utf-8', '; charset=UTF-8') }),
      ({ body, charset }) => ({
        method: 'POST',
        path: '/v1/jobs',
        headers: [auth(), ['Idempotency-Key', validKey()], ['Content-Type', `application/json${charset}`]],
        body: Buffer.from(body, 'utf8'),
      }),
      {
        numRuns: 120,
        perRun: true,
        expect: (_value, res, code) => expect([res.status, code]).toEqual(problemAnswer('validation-failed')),
      },
    );
  });

  it('POST /v1/jobs survives any bytes, content type and content encoding', async () => {
    await fuzz(
      'POST /v1/jobs bytes',
      fc.record({
        body: fc.oneof(
          randomBytes,
          invalidJobBody.map((text) => Buffer.from(text)),
        ),
        contentType: fc.option(contentTypes, { nil: undefined }),
        encoding: contentEncodings,
        base64: fc.boolean(),
      }),
      ({ body, contentType, encoding, base64 }) => ({
        method: 'POST',
        path: '/v1/jobs',
        headers: [
          auth(),
          ['Idempotency-Key', validKey()],
          ...(contentType !== undefined ? [['Content-Type', contentType] as [string, string]] : []),
          ...(encoding !== undefined ? [['Content-Encoding', encoding] as [string, string]] : []),
        ],
        body: base64 ? Buffer.from(body.toString('base64')) : body,
      }),
      { numRuns: 100, perRun: true },
    );
  });

  it('POST /v1/jobs refuses a valid body under a broken Idempotency-Key or API key', async () => {
    const validBody = Buffer.from(
      JSON.stringify({ type: 'image.generate', input: { prompt: 'fuzzed headers' } }),
    );
    await fuzz(
      'POST /v1/jobs headers',
      fc.oneof(
        fc.record({ kind: fc.constant('idempotency' as const), key: invalidIdempotencyKey }),
        fc.record({ kind: fc.constant('api-key' as const), key: apiKeyJunk }),
        fc.record({
          kind: fc.constant('missing' as const),
          key: fc.constantFrom('idempotency', 'api-key', 'both'),
        }),
      ),
      (value) => {
        const headers: [string, string][] = [['Content-Type', 'application/json']];
        if (value.kind === 'idempotency') headers.push(auth(), ['Idempotency-Key', value.key]);
        if (value.kind === 'api-key') headers.push(['X-API-Key', value.key], ['Idempotency-Key', validKey()]);
        if (value.kind === 'missing') {
          if (value.key !== 'api-key' && value.key !== 'both') headers.push(auth());
          if (value.key === 'api-key') headers.push(['Idempotency-Key', validKey()]);
        }
        return { method: 'POST', path: '/v1/jobs', headers, body: validBody };
      },
      {
        numRuns: 80,
        perRun: true,
        expect: (value, res, code) => {
          if (value.kind === 'idempotency')
            expect([res.status, code]).toEqual(problemAnswer('idempotency-key-missing'));
          if (value.kind === 'api-key') expect([res.status, code]).toEqual(problemAnswer('unauthorized'));
          if (value.kind === 'missing')
            expect(code).toBe(value.key === 'idempotency' ? 'idempotency-key-missing' : 'unauthorized');
        },
      },
    );
  });

  it('POST /v1/jobs refuses broken multipart bodies and stores no file', async () => {
    await fuzz(
      'POST /v1/jobs multipart',
      brokenMultipart,
      ({ contentType, body }) => ({
        method: 'POST',
        path: '/v1/jobs',
        headers: [auth(), ['Idempotency-Key', validKey()], ['Content-Type', contentType]],
        body,
      }),
      { numRuns: 80, perRun: true, expect: (_value, res) => expect(res.status).toBe(400) },
    );
  });

  it('GET /v1/jobs answers any query with a page or a validation problem', async () => {
    const { fixture } = fuzzing;
    await fuzz(
      'GET /v1/jobs query',
      fc.oneof(
        queryString(['status', 'limit', 'cursor', 'unknown'], queryValue),
        queryString(['cursor'], cursorValue),
      ),
      (query) => ({ method: 'GET', path: `/v1/jobs${query}`, headers: [auth()] }),
      {
        numRuns: 120,
        expect: (_query, res, code) => {
          if (res.status === 200) {
            const page = JSON.parse(res.body.toString());
            expect(Array.isArray(page.items)).toBe(true);
            // Whatever the cursor said, a tenant sees only its own jobs.
            expect(page.items.map((job: { id: string }) => job.id)).not.toContain(fixture.others);
          } else expect([res.status, code]).toEqual(problemAnswer('validation-failed'));
        },
      },
    );
  });

  it('job routes answer 404 for any path parameter that is not the caller’s job, and never another tenant’s', async () => {
    const { fixture } = fuzzing;
    const ids = () =>
      fc.oneof(
        { weight: 4, arbitrary: junkId },
        {
          weight: 1,
          arbitrary: fc.constantFrom(fixture.others, fixture.succeeded, fixture.failed, fixture.canceled),
        },
      );
    await fuzz(
      'job path parameters',
      fc.record({
        id: ids(),
        route: fc.constantFrom('get', 'events', 'cancel', 'resolve-as-tenant'),
        suffix: fc.constantFrom('', '', '', '/', '//', '/..', '?x=1', '#frag'),
      }),
      ({ id, route, suffix }) => ({
        method: route === 'get' || route === 'events' ? 'GET' : 'POST',
        path: {
          get: `/v1/jobs/${id}${suffix}`,
          events: `/v1/jobs/${id}/events${suffix}`,
          cancel: `/v1/jobs/${id}/cancel${suffix}`,
          'resolve-as-tenant': `/v1/admin/jobs/${id}/resolve${suffix}`,
        }[route],
        headers: [auth()],
      }),
      {
        numRuns: 150,
        perRun: true,
        expect: ({ id, route }, res, code) => {
          if (id === fixture.others && route !== 'resolve-as-tenant')
            expect([res.status, code]).toEqual(problemAnswer('not-found'));
          if (route === 'resolve-as-tenant' && res.status !== 404) expect(res.status).toBe(403);
          if (res.status < 300) expect([fixture.succeeded, fixture.failed, fixture.canceled]).toContain(id);
        },
      },
    );
  });

  it('a repeated Idempotency-Key replays the first answer or is refused, and changes nothing', async () => {
    const { fixture } = fuzzing;
    const names = Object.keys(FIXTURE_REQUESTS) as (keyof typeof FIXTURE_REQUESTS)[];
    await fuzz(
      'POST /v1/jobs replays',
      fc.record({
        name: fc.constantFrom(...names),
        same: fc.boolean(),
        // The same request in other words: key order and whitespace do not make it another request.
        spacing: fc.constantFrom(0, 2, '\t'),
        reversed: fc.boolean(),
        other: fc.oneof(
          fc.string({ minLength: 1, maxLength: 40 }).map((prompt) => ({ prompt })),
          fc.constant({ prompt: 'a lighthouse', width: 512 }),
        ),
      }),
      ({ name, same, spacing, reversed, other }) => {
        const { apiKey, idem, prompt } = FIXTURE_REQUESTS[name];
        const input = same ? { prompt } : other;
        const body = reversed ? { input, type: 'image.generate' } : { type: 'image.generate', input };
        return {
          method: 'POST',
          path: '/v1/jobs',
          headers: [
            ['X-API-Key', apiKey],
            ['Idempotency-Key', idem],
            ['Content-Type', 'application/json'],
          ],
          body: Buffer.from(JSON.stringify(body, null, spacing)),
        };
      },
      {
        numRuns: 40,
        perRun: true,
        expect: ({ name, same, other }, res, code) => {
          if (same || (other.prompt === FIXTURE_REQUESTS[name].prompt && !('width' in other))) {
            expect(res.status).toBe(202);
            expect(res.headers['idempotent-replayed']).toBe('true');
            expect(JSON.parse(res.body.toString()).id).toBe(fixture[name]);
          } else expect([res.status, code]).toEqual(problemAnswer('idempotency-key-reused'));
        },
      },
    );
  });
});

describe('fuzzing POST /v1/uploads', () => {
  it('POST /v1/uploads refuses any invalid upload request', async () => {
    await fuzz(
      'POST /v1/uploads',
      invalidUploadRequest,
      ({ text, contentType }) => ({
        method: 'POST',
        path: '/v1/uploads',
        headers: [auth(), ['Content-Type', contentType]],
        body: Buffer.from(text, 'utf8'),
      }),
      {
        numRuns: 80,
        perRun: true,
        expect: (_value, res) => {
          if (res.status === 201) {
            const ticket = JSON.parse(res.body.toString());
            expect(ticket).toEqual({
              ref: expect.any(String),
              uploadUrl: expect.any(String),
              expiresAt: expect.any(String),
            });
          }
        },
      },
    );
  });
});
