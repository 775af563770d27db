import { TenantNotFoundError, ValidationError } from '../../lambdas/domain/errors';
import { newJob } from '../../lambdas/domain/job';
import {
  cachedShares,
  getTenant,
  parseTenantChanges,
  parseTenantName,
  putTenant,
  sharesOf,
  type TenantDeps,
} from '../../lambdas/domain/tenants';
import { MemoryStore, MemoryTenantKeys, MemoryTenants } from './support/memory-ports';
import { errorsOf } from './support/validation';

const at = new Date('2026-06-01T09:00:00.000Z');
let jobs: MemoryStore;
let deps: TenantDeps & { tenants: MemoryTenants; keys: MemoryTenantKeys };
beforeEach(() => {
  jobs = new MemoryStore();
  deps = {
    tenants: new MemoryTenants(jobs),
    keys: new MemoryTenantKeys(new Set(['acme', 'globex'])),
    now: () => at,
  };
});

describe('parseTenantChanges', () => {
  it.each([
    [{}, {}],
    [{ weight: 1 }, { weight: 1 }],
    [
      { weight: 100, maxInFlight: 3, maxQueued: 1 },
      { weight: 100, maxInFlight: 3, maxQueued: 1 },
    ],
    [{ maxInFlight: null }, { maxInFlight: null }],
  ])('accepts %j', (body, changes) => {
    expect(parseTenantChanges(body)).toEqual(changes);
  });

  it.each([
    ['a weight of 0', { weight: 0 }, '/weight', 'must be an integer from 1 to 100'],
    ['a weight over 100', { weight: 101 }, '/weight', 'must be an integer from 1 to 100'],
    ['a fractional weight', { weight: 1.5 }, '/weight', 'must be an integer from 1 to 100'],
    ['a weight given as text', { weight: '5' }, '/weight', 'must be an integer from 1 to 100'],
    ['a null weight', { weight: null }, '/weight', 'must be an integer from 1 to 100'],
    ['a weight past the safe integers', { weight: 2 ** 60 }, '/weight', 'must be an integer from 1 to 100'],
    [
      'a cap of 0',
      { maxInFlight: 0 },
      '/maxInFlight',
      'must be an integer of at least 1, or null for no cap',
    ],
    [
      'a negative cap',
      { maxInFlight: -2 },
      '/maxInFlight',
      'must be an integer of at least 1, or null for no cap',
    ],
    [
      'a fractional cap',
      { maxInFlight: 2.5 },
      '/maxInFlight',
      'must be an integer of at least 1, or null for no cap',
    ],
    [
      'a cap given as text',
      { maxInFlight: '2' },
      '/maxInFlight',
      'must be an integer of at least 1, or null for no cap',
    ],
    ['a maxQueued of 0', { maxQueued: 0 }, '/maxQueued', 'must be an integer of at least 1'],
    ['a fractional maxQueued', { maxQueued: 10.5 }, '/maxQueued', 'must be an integer of at least 1'],
    ['a null maxQueued', { maxQueued: null }, '/maxQueued', 'must be an integer of at least 1'],
    ['an unknown field', { weight: 2, priority: 'high' }, '', 'unknown field(s): priority'],
    ['a body that is an array', [], '', 'Invalid input: expected object, received array'],
    ['a body that is null', null, '', 'Invalid input: expected object, received null'],
  ])('refuses %s, naming the field once', (_, body, pointer, detail) => {
    expect(errorsOf(() => parseTenantChanges(body))).toEqual([{ pointer, detail }]);
  });

  it('names every invalid field of one body', () => {
    expect(
      errorsOf(() => parseTenantChanges({ weight: 0, maxInFlight: 0, maxQueued: 0 })).map((e) => e.pointer),
    ).toEqual(['/weight', '/maxInFlight', '/maxQueued']);
  });
});

describe('parseTenantName', () => {
  it.each(['acme', 'Acme.Inc', 'a', 'tenant_2', `t${'x'.repeat(63)}`])('takes %s', (name) => {
    expect(parseTenantName(name)).toBe(name);
  });

  it.each([
    ['nothing', undefined],
    ['an empty name', ''],
    ['a leading dash', '-acme'],
    ['a slash', 'acme/beta'],
    ['a space', 'ac me'],
    ['a name of 65 characters', `t${'x'.repeat(64)}`],
    ["the admin key's name", 'admin'],
  ])('refuses %s, naming the tenant', (_, name) => {
    expect(errorsOf(() => parseTenantName(name)).map((e) => e.parameter)).toEqual(['tenant']);
  });
});

describe('getTenant', () => {
  it('shows the defaults, and no cap, for a tenant with keys and no record', async () => {
    await expect(getTenant(deps, 'acme')).resolves.toEqual({
      tenant: 'acme',
      weight: 1,
      maxQueued: 10_000,
      usage: { queued: 0, scheduled: 0, inFlight: 0 },
    });
    expect(deps.tenants.records.size).toBe(0);
  });

  it('shows the record of a tenant that has one, even with no key left', async () => {
    deps.tenants.records.set('initech', { tenant: 'initech', weight: 7, maxInFlight: 2, maxQueued: 50 });
    await expect(getTenant(deps, 'initech')).resolves.toMatchObject({
      weight: 7,
      maxInFlight: 2,
      maxQueued: 50,
    });
  });

  it('counts what the tenant has waiting and running, and nothing of other tenants', async () => {
    const job = (id: string, tenantId: string, status: 'queued' | 'running' | 'succeeded' | 'needs_review') =>
      jobs.jobs.set(id, {
        ...newJob(
          { id, tenantId, type: 'image.generate', input: {}, idempotencyKey: id, fingerprint: 'f' },
          at,
        ),
        status,
      });
    job('job_1', 'acme', 'queued');
    job('job_2', 'acme', 'queued');
    job('job_3', 'acme', 'running');
    job('job_4', 'acme', 'succeeded');
    job('job_5', 'acme', 'needs_review');
    job('job_6', 'globex', 'queued');
    job('job_7', 'globex', 'running');
    await expect(getTenant(deps, 'acme')).resolves.toMatchObject({
      usage: { queued: 2, scheduled: 0, inFlight: 1 },
    });
  });

  it('does not find a name that has neither a record nor a key', async () => {
    await expect(getTenant(deps, 'nobody')).rejects.toThrow(TenantNotFoundError);
  });

  it('refuses a name that cannot be a tenant before looking anything up', async () => {
    deps.keys.tenants.add('admin');
    await expect(getTenant(deps, 'admin')).rejects.toThrow(ValidationError);
  });
});

describe('putTenant', () => {
  it('creates the record of a tenant with keys, with the defaults for what it leaves out', async () => {
    await expect(putTenant(deps, 'acme', { weight: 5 })).resolves.toEqual({
      tenant: 'acme',
      weight: 5,
      maxQueued: 10_000,
      usage: { queued: 0, scheduled: 0, inFlight: 0 },
    });
    expect(deps.tenants.records.get('acme')).toEqual({ tenant: 'acme', weight: 5, maxQueued: 10_000 });
  });

  it('sets what it names, keeps the rest, and removes the cap for an explicit null', async () => {
    await putTenant(deps, 'acme', { weight: 5, maxInFlight: 2, maxQueued: 30 });
    await expect(putTenant(deps, 'acme', { maxQueued: 40 })).resolves.toMatchObject({
      weight: 5,
      maxInFlight: 2,
      maxQueued: 40,
    });
    const uncapped = await putTenant(deps, 'acme', { maxInFlight: null });
    expect(uncapped).toEqual({ tenant: 'acme', weight: 5, maxQueued: 40, usage: expect.any(Object) });
  });

  it('is idempotent: the same request twice leaves the same record', async () => {
    const first = await putTenant(deps, 'acme', { weight: 3, maxInFlight: 4 });
    const second = await putTenant(deps, 'acme', { weight: 3, maxInFlight: 4 });
    expect(second).toEqual(first);
  });

  it('refuses a name no key carries, naming the tenant, and writes nothing', async () => {
    const errors = await putTenant(deps, 'nobody', { weight: 2 }).then(
      () => undefined,
      (error: ValidationError) => error.errors,
    );
    expect(errors).toEqual([
      { parameter: 'tenant', detail: 'is not a tenant: no API key carries this name' },
    ]);
    expect(deps.tenants.records.size).toBe(0);
  });

  it("refuses the admin key's name even though a key carries it, and writes nothing", async () => {
    deps.keys.tenants.add('admin');
    await expect(putTenant(deps, 'admin', { weight: 2 })).rejects.toThrow(ValidationError);
    expect(deps.tenants.records.size).toBe(0);
  });
});

describe("a tenant's share of the providers' slots", () => {
  it('is its weight and cap as set, or the defaults without a record', async () => {
    await deps.tenants.update('acme', { weight: 3, maxInFlight: 2 }, at);
    const shares = await sharesOf(deps.tenants)(['acme', 'globex']);
    expect(shares.get('acme')).toEqual({ weight: 3, maxInFlight: 2 });
    expect(shares.get('globex')).toEqual({ weight: 1 });
  });

  it('is read again once its time is up, so an operator change reaches the choices', async () => {
    let clock = 0;
    const reads: string[][] = [];
    const shares = cachedShares(
      async (tenants) => {
        reads.push([...tenants]);
        return sharesOf(deps.tenants)(tenants);
      },
      10_000,
      () => clock,
    );
    expect((await shares(['acme'])).get('acme')).toEqual({ weight: 1 });
    await deps.tenants.update('acme', { weight: 5 }, at);
    clock = 9_999;
    expect((await shares(['acme', 'globex'])).get('acme')).toEqual({ weight: 1 });
    clock = 10_000;
    expect((await shares(['acme'])).get('acme')).toEqual({ weight: 5 });
    expect(reads).toEqual([['acme'], ['globex'], ['acme']]);
  });
});
