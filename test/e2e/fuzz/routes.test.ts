import fc from 'fast-check';
import { type ProblemCode, problems } from '../../../config/problems';
import { signPayload } from '../../../lambdas/shared/signature';
import {
  anyMethod,
  apiKeyJunk,
  headerName,
  headerValue,
  invalidJobBody,
  oddPath,
  randomBytes,
  validKey,
} from './arbitraries';
import { checkAnswer, footprint, footprintChanges } from './invariants';
import type { RawRequest } from './raw-http';
import { ADMIN_KEY, auth, KEY, PROVIDER_SECRET, useFuzzStack } from './stack';

/**
 * Fuzzing what every route shares: the headers, the route table itself
 * (unknown paths and methods) and the body limits.
 */

const fuzzing = useFuzzStack('routes', { fixtures: true });
const { api, fuzz } = fuzzing;

describe('fuzzing every route', () => {
  it('every route survives junk, repeated and oversized headers', async () => {
    const routeTargets: readonly (readonly [string, string])[] = [
      ['GET', '/healthz'],
      ['GET', '/openapi.json'],
      ['GET', '/v1/jobs'],
      ['GET', '/v1/jobs/job_aaaaaaaaaaaaaaaaaaaaaaaaaa'],
      ['GET', '/v1/jobs/job_aaaaaaaaaaaaaaaaaaaaaaaaaa/events'],
      ['POST', '/v1/jobs'],
      ['POST', '/v1/jobs/job_aaaaaaaaaaaaaaaaaaaaaaaaaa/cancel'],
      ['POST', '/v1/uploads'],
      ['GET', '/v1/admin/jobs'],
      ['POST', '/v1/admin/jobs/job_aaaaaaaaaaaaaaaaaaaaaaaaaa/resolve'],
      ['POST', '/v1/provider/events'],
      ['GET', '/v1/admin/metrics'],
      ['GET', '/v1/admin/tenants/acme'],
      ['PUT', '/v1/admin/tenants/acme'],
      ['GET', '/dashboard'],
      ['GET', '/dashboard/api/jobs/job_aaaaaaaaaaaaaaaaaaaaaaaaaa/events'],
    ] as const;
    await fuzz(
      'headers',
      fc.record({
        target: fc.constantFrom(...routeTargets),
        headers: fc.array(
          fc.tuple(
            headerName,
            fc.oneof(
              headerValue,
              apiKeyJunk.map((s) => s.replace(/[^\t\x20-\x7e]/g, '')),
              fc.constantFrom(KEY, ADMIN_KEY),
            ),
          ),
          { maxLength: 8 },
        ),
        body: fc.option(
          fc.oneof(
            randomBytes,
            invalidJobBody.map((text) => Buffer.from(text)),
          ),
          { nil: undefined },
        ),
      }),
      ({ target: [method, path], headers, body }) => ({
        method,
        path,
        // A Host header Node cannot route would only test Node; the gateway sees the one it got.
        headers: headers.filter(([name, value]) => !(name === 'Host' && value === '') && name !== 'Expect'),
        body,
      }),
      {
        numRuns: 150,
        perRun: true,
        expect: ({ target: [method, path] }, res) => {
          // Only the open routes, or a fixture-free GET, can succeed with fuzzed headers.
          if (res.status < 300)
            expect([
              'GET /healthz',
              'GET /openapi.json',
              'GET /v1/jobs',
              'GET /v1/admin/jobs',
              'GET /v1/admin/metrics',
              'GET /v1/admin/tenants/acme',
              'GET /dashboard',
            ]).toContain(`${method} ${path}`);
        },
      },
    );
  });

  it('unknown routes and methods get a problem, never a 5xx', async () => {
    await fuzz(
      'routes and methods',
      fc.record({
        method: anyMethod,
        path: oddPath,
      }),
      ({ method, path }) => ({ method, path, headers: [auth()] }),
      { numRuns: 100, perRun: true },
    );
  });

  it('refuses oversized bodies with 413 before parsing them, and empty ones with 400', async () => {
    const { fixture } = fuzzing;
    const MiB = 1024 * 1024;
    const now = Math.floor(Date.now() / 1000);
    const cases: { name: string; req: RawRequest; code: ProblemCode }[] = [
      {
        name: 'empty JSON body',
        req: {
          method: 'POST',
          path: '/v1/jobs',
          headers: [auth(), ['Idempotency-Key', validKey()], ['Content-Type', 'application/json']],
        },
        code: 'validation-failed',
      },
      {
        name: 'JSON body of 1 MiB + 1',
        req: {
          method: 'POST',
          path: '/v1/jobs',
          headers: [auth(), ['Idempotency-Key', validKey()], ['Content-Type', 'application/json']],
          body: Buffer.from(`{"type":"image.generate","input":{"prompt":"${'p'.repeat(MiB + 1 - 46)}"}}`),
        },
        code: 'payload-too-large',
      },
      {
        name: 'multipart body of 4.5 MiB + 1',
        req: {
          method: 'POST',
          path: '/v1/jobs',
          headers: [
            auth(),
            ['Idempotency-Key', validKey()],
            ['Content-Type', 'multipart/form-data; boundary=b'],
          ],
          body: Buffer.alloc(Math.floor(4.5 * MiB) + 1, 'x'),
        },
        code: 'payload-too-large',
      },
      {
        name: 'body over the gateway’s 10 MiB',
        req: {
          method: 'POST',
          path: '/v1/jobs',
          headers: [auth(), ['Idempotency-Key', validKey()], ['Content-Type', 'application/json']],
          body: Buffer.alloc(10 * MiB + 1024, ' '),
        },
        code: 'payload-too-large',
      },
      {
        name: 'provider event over 1 MiB with a valid signature',
        req: (() => {
          const body = JSON.stringify({
            type: 'progress',
            id: 'x',
            progress: 1,
            at: 'x',
            pad: 'p'.repeat(MiB),
          });
          return {
            method: 'POST',
            path: `/v1/provider/events?jobId=${fixture.succeeded}`,
            headers: [
              ['Content-Type', 'application/json'],
              ['Provider-Signature', signPayload(PROVIDER_SECRET, body, now)],
            ],
            body: Buffer.from(body),
          };
        })(),
        code: 'payload-too-large',
      },
      {
        name: 'upload request of 11 MiB',
        req: {
          method: 'POST',
          path: '/v1/uploads',
          headers: [auth(), ['Content-Type', 'application/json']],
          body: Buffer.alloc(11 * MiB, '['),
        },
        code: 'payload-too-large',
      },
    ];
    const before = await footprint(fuzzing.stack);
    for (const { name, req, code } of cases) {
      const res = await api(req);
      const answer = checkAnswer(req, res);
      expect({ name, status: res.status, code: answer.code }).toEqual({
        name,
        status: problems[code].status,
        code,
      });
    }
    expect(footprintChanges(before, await footprint(fuzzing.stack))).toEqual([]);
  });
});
