import {
  IdempotencyKeyInUseError,
  IdempotencyKeyMissingError,
  IdempotencyKeyReusedError,
  ValidationError,
} from '../../lambdas/domain/errors';
import {
  decideOnExisting,
  deriveJobId,
  fingerprint,
  JOB_ID_PATTERN,
  requireIdempotencyKey,
} from '../../lambdas/domain/idempotency';
import type { Job } from '../../lambdas/domain/job';
import { sampleJob } from './support/jobs';

describe('fingerprint', () => {
  it('ignores key order at every depth', () => {
    const a = { type: 'image.generate', input: { prompt: 'a cat', width: 512, nested: { x: 1, y: [1, 2] } } };
    const b = { input: { nested: { y: [1, 2], x: 1 }, width: 512, prompt: 'a cat' }, type: 'image.generate' };
    expect(fingerprint(a)).toBe(fingerprint(b));
  });

  it('tells apart bodies that differ in a value, in array order or in number', () => {
    const base = fingerprint({ input: { prompt: 'a cat', list: [1, 2] } });
    expect(fingerprint({ input: { prompt: 'a dog', list: [1, 2] } })).not.toBe(base);
    expect(fingerprint({ input: { prompt: 'a cat', list: [2, 1] } })).not.toBe(base);
    expect(fingerprint({ input: { prompt: 'a cat', list: [1, 2], width: 64 } })).not.toBe(base);
  });

  it('treats equal numbers written differently as the same request', () => {
    expect(fingerprint(JSON.parse('{"width": 512.0}'))).toBe(fingerprint(JSON.parse('{"width": 512}')));
  });

  it('is a SHA-256 hex digest', () => {
    expect(fingerprint({ a: 1 })).toMatch(/^[0-9a-f]{64}$/);
  });

  it('refuses a body with an unpaired surrogate as a validation error', () => {
    expect(() => fingerprint({ prompt: '\ud800' })).toThrow(ValidationError);
  });
});

describe('deriveJobId', () => {
  it('is stable for one tenant and key', () => {
    expect(deriveJobId('acme', 'key-1')).toBe(deriveJobId('acme', 'key-1'));
    expect(deriveJobId('acme', 'key-1')).toMatch(JOB_ID_PATTERN);
  });

  it('scopes the key to the tenant', () => {
    expect(deriveJobId('acme', 'key-1')).not.toBe(deriveJobId('globex', 'key-1'));
    // The separator keeps (tenant, key) pairs from running into each other.
    expect(deriveJobId('ab', 'c')).not.toBe(deriveJobId('a', 'bc'));
  });
});

describe('requireIdempotencyKey', () => {
  it.each(['k', 'a'.repeat(255), '8e03978e-40d5-43e8-bc93-6894a57f9324', '"quoted"', '~!@#$%^&*()'])(
    'accepts %s',
    (key) => {
      expect(requireIdempotencyKey(key)).toBe(key);
    },
  );

  it.each([
    ['missing', undefined],
    ['empty', ''],
    ['too long', 'a'.repeat(256)],
    ['with a space', 'a b'],
    ['with a tab', 'a\tb'],
    ['non-ASCII', 'clé'],
  ])('refuses a key that is %s', (_, key) => {
    expect(() => requireIdempotencyKey(key)).toThrow(IdempotencyKeyMissingError);
  });
});

describe('decideOnExisting', () => {
  const created = new Date('2026-01-01T00:00:00.000Z');
  const job = (overrides: Partial<Job> = {}): Job => sampleJob(created, overrides);
  const at = (ms: number) => new Date(created.getTime() + ms);

  it('replays the job when the body matches and intake finished', () => {
    const existing = job({ enqueuedAt: at(5).toISOString() });
    expect(decideOnExisting(existing, 'f1', at(10), 30_000)).toBe(existing);
  });

  it('refuses a different body with the same key, even while the first is in progress', () => {
    expect(() => decideOnExisting(job(), 'f2', at(10), 30_000)).toThrow(IdempotencyKeyReusedError);
  });

  it('answers in-use while the first request has not enqueued the job yet', () => {
    expect(() => decideOnExisting(job(), 'f1', at(29_999), 30_000)).toThrow(IdempotencyKeyInUseError);
  });

  it('replays once the in-progress window has passed, as the first request is then over', () => {
    const existing = job();
    expect(decideOnExisting(existing, 'f1', at(30_000), 30_000)).toBe(existing);
  });

  it('replays a job that already moved on from queued', () => {
    const existing = job({ status: 'running' });
    expect(decideOnExisting(existing, 'f1', at(10), 30_000)).toBe(existing);
  });
});
