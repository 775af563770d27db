import fc from 'fast-check';
import {
  apiKeyJunk,
  cursorValue,
  invalidTenantSettings,
  junkId,
  queryString,
  queryValue,
  resolutionBody,
  tenantName,
} from './arbitraries';
import { ADMIN_KEY, KEY, useFuzzStack } from './stack';

/**
 * Fuzzing the admin routes (jobs, resolutions, the DLQ redrive, metrics,
 * tenants' settings) and the local ops view: tenants and junk keys are
 * refused, and so is every invalid resolution or setting, changing nothing.
 */

const fuzzing = useFuzzStack('admin', { fixtures: true });
const { fuzz } = fuzzing;

describe('fuzzing the admin routes', () => {
  it('admin routes (and the local ops view) refuse tenants and junk, and refuse invalid resolutions', async () => {
    const { fixture } = fuzzing;
    await fuzz(
      'admin routes',
      fc.record({
        key: fc.oneof(fc.constantFrom(ADMIN_KEY, ADMIN_KEY, KEY), apiKeyJunk),
        route: fc.constantFrom('list', 'resolve', 'redrive', 'metrics', 'dashboard-events'),
        query: queryString(['status', 'limit', 'cursor'], fc.oneof(queryValue, cursorValue)),
        id: fc.oneof(
          junkId,
          fc.constantFrom(fixture.succeeded, fixture.failed, fixture.others, fixture.canceled),
        ),
        body: resolutionBody,
      }),
      ({ key, route, query, id, body }) => {
        const headers: [string, string][] = [['X-API-Key', key]];
        if (route === 'list') return { method: 'GET', path: `/v1/admin/jobs${query}`, headers };
        if (route === 'redrive') return { method: 'POST', path: '/v1/admin/dlq/redrive', headers };
        if (route === 'metrics') return { method: 'GET', path: `/v1/admin/metrics${query}`, headers };
        if (route === 'dashboard-events')
          return { method: 'GET', path: `/dashboard/api/jobs/${id}/events${query}`, headers };
        return {
          method: 'POST',
          path: `/v1/admin/jobs/${id}/resolve`,
          headers: [...headers, ['Content-Type', 'application/json']],
          body: Buffer.from(body, 'utf8'),
        };
      },
      {
        numRuns: 120,
        perRun: true,
        expect: ({ key, route }, res) => {
          if (key !== ADMIN_KEY) expect([401, 403, 404]).toContain(res.status);
          if (route === 'resolve' && res.status < 300)
            throw new Error('no fixture job is in review, so no resolution can succeed');
        },
      },
    );
  });

  it('tenant routes refuse tenant keys, junk names and invalid settings, and change nothing', async () => {
    await fuzz(
      'tenant routes',
      fc.record({
        key: fc.oneof(fc.constantFrom(ADMIN_KEY, ADMIN_KEY, ADMIN_KEY, KEY), apiKeyJunk),
        method: fc.constantFrom('GET', 'PUT'),
        name: tenantName,
        body: invalidTenantSettings,
      }),
      ({ key, method, name, body }) => ({
        method,
        path: `/v1/admin/tenants/${name}`,
        headers: [
          ['X-API-Key', key],
          ...(method === 'PUT' ? [['Content-Type', 'application/json'] as const] : []),
        ],
        ...(method === 'PUT' ? { body: Buffer.from(body, 'utf8') } : {}),
      }),
      {
        numRuns: 120,
        perRun: true,
        expect: ({ key, method, name }, res) => {
          if (key !== ADMIN_KEY) expect([401, 403, 404]).toContain(res.status);
          else if (method === 'GET' && ['acme', 'globex'].includes(name)) expect(res.status).toBe(200);
          else expect([400, 404]).toContain(res.status);
        },
      },
    );
  });
});
