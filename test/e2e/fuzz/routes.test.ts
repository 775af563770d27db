import fc from 'fast-check';
import { allRoutes } from '../../../config/layout';
import { type ProblemCode, problems } from '../../../config/problems';
import { LAMBDA_SYNC_REQUEST_BYTES } from '../../../config/settings';
import { signPayload } from '../../../lambdas/shared/signature';
import { OPS_PATHS } from '../../../local/ops/paths';
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

/**
 * Every route the gateway serves, as a request: each of the route table's
 * (config/layout.ts), and the local ops view's pages, which the local stack
 * serves outside it (local/ops/paths.ts). A path parameter names the tenant acme, or a
 * job, media item, schedule or upload that does not exist. Only a route that
 * needs no body and names nothing absent may succeed with fuzzed headers: a
 * read, or the DLQ redrive.
 */
const ABSENT = 'job_aaaaaaaaaaaaaaaaaaaaaaaaaa';
const pathArguments: Record<string, string> = { id: ABSENT, ref: ABSENT, tenant: 'acme' };
const localOpsRoutes = Object.values(OPS_PATHS).map((path) => ({ method: 'GET', path }) as const);
const routeTargets = [...allRoutes, ...localOpsRoutes].map(({ method, path }) => ({
  method,
  path: path.replace(/\{(\w+)\}/g, (_, name: string) => pathArguments[name] ?? ABSENT),
  mayAnswer:
    (method === 'GET' && !/\{(id|ref)\}/.test(path)) || `${method} ${path}` === 'POST /v1/admin/dlq/redrive',
}));

const fuzzing = useFuzzStack('routes', { fixtures: true });
const { api, fuzz } = fuzzing;

describe('fuzzing every route', () => {
  it('every route survives junk, repeated and oversized headers', async () => {
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
      ({ target: { method, path }, headers, body }) => ({
        method,
        path,
        // A Host header Node cannot route would only test Node; the gateway sees the one it got.
        headers: headers.filter(([name, value]) => !(name === 'Host' && value === '') && name !== 'Expect'),
        body,
      }),
      {
        // About seven runs a route, as when fewer routes were listed by hand.
        numRuns: 300,
        perRun: true,
        expect: ({ target }, res) => {
          if (res.status < 300) expect(target).toMatchObject({ mayAnswer: true });
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
        name: 'provider event over the 6 MB Lambda carries, with a valid signature',
        req: (() => {
          const body = JSON.stringify({
            type: 'progress',
            id: 'x',
            progress: 1,
            at: 'x',
            pad: 'p'.repeat(LAMBDA_SYNC_REQUEST_BYTES),
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
