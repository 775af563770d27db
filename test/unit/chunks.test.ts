import fc from 'fast-check';
import { chunkIdempotencyKey, MIN_TAIL_SHARE, planChunks } from '../../lambdas/domain/chunks';
import { KEY_PATTERN } from '../../lambdas/domain/idempotency';

describe('planChunks', () => {
  it('cuts whole chunks from the start and gives the remainder its own chunk', () => {
    expect(planChunks(1_900, 600)).toEqual([
      { index: 0, offsetSeconds: 0, durationSeconds: 600 },
      { index: 1, offsetSeconds: 600, durationSeconds: 600 },
      { index: 2, offsetSeconds: 1_200, durationSeconds: 600 },
      { index: 3, offsetSeconds: 1_800, durationSeconds: 100 },
    ]);
  });

  it('folds a remainder shorter than a tenth of a chunk into the chunk before', () => {
    expect(planChunks(1_859.8, 600)).toEqual([
      { index: 0, offsetSeconds: 0, durationSeconds: 600 },
      { index: 1, offsetSeconds: 600, durationSeconds: 600 },
      { index: 2, offsetSeconds: 1_200, durationSeconds: 1_859.8 - 1_200 },
    ]);
    expect(planChunks(1_200.2, 600)).toHaveLength(2);
    expect(planChunks(1_260, 600)).toHaveLength(3);
  });

  it('makes one chunk of a recording no longer than a chunk, however short', () => {
    expect(planChunks(0.2, 600)).toEqual([{ index: 0, offsetSeconds: 0, durationSeconds: 0.2 }]);
    expect(planChunks(600, 600)).toEqual([{ index: 0, offsetSeconds: 0, durationSeconds: 600 }]);
  });

  it('refuses durations that cannot be cut', () => {
    expect(() => planChunks(0, 600)).toThrow('positive, finite time, not 0 s');
    expect(() => planChunks(Number.NaN, 600)).toThrow(RangeError);
    expect(() => planChunks(60, 0)).toThrow('Chunks must last a positive, finite time, not 0 s.');
    expect(() => planChunks(60, Number.POSITIVE_INFINITY)).toThrow(RangeError);
  });

  it('covers the recording end to end with chunks of the planned length', () => {
    fc.assert(
      fc.property(
        fc.double({ min: 0.001, max: 10 * 3600, noNaN: true }),
        fc.integer({ min: 60, max: 3_600 }),
        (duration, chunkSeconds) => {
          const chunks = planChunks(duration, chunkSeconds);
          const total = chunks.reduce((sum, chunk) => sum + chunk.durationSeconds, 0);
          expect(Math.abs(total - duration)).toBeLessThanOrEqual(1e-9 * duration);
          chunks.forEach((chunk, index) => {
            expect(chunk.index).toBe(index);
            expect(chunk.offsetSeconds).toBe(index * chunkSeconds);
            expect(chunk.durationSeconds).toBeGreaterThan(0);
            if (index < chunks.length - 1) expect(chunk.durationSeconds).toBe(chunkSeconds);
          });
          const last = chunks[chunks.length - 1]!;
          expect(last.durationSeconds).toBeLessThan(chunkSeconds * (1 + MIN_TAIL_SHARE) + 1e-6);
          if (chunks.length > 1) {
            expect(last.durationSeconds).toBeGreaterThanOrEqual(chunkSeconds * MIN_TAIL_SHARE - 1e-6);
          }
        },
      ),
    );
  });
});

describe('chunkIdempotencyKey', () => {
  it("appends the chunk's index to the job's key", () => {
    expect(chunkIdempotencyKey('job_abc.lx2k', 0)).toBe('job_abc.lx2k:chunk-0');
    expect(chunkIdempotencyKey('job_abc.lx2k:1', 12)).toBe('job_abc.lx2k:1:chunk-12');
  });

  it('keeps a key that would pass 255 characters within 255, distinct for keys sharing a prefix', () => {
    const a = `${'k'.repeat(254)}a`;
    const b = `${'k'.repeat(254)}b`;
    const keyA = chunkIdempotencyKey(a, 7);
    expect(keyA).toHaveLength(255);
    expect(keyA).toMatch(KEY_PATTERN);
    expect(keyA.endsWith(':chunk-7')).toBe(true);
    expect(chunkIdempotencyKey(b, 7)).not.toBe(keyA);
    expect(chunkIdempotencyKey(a, 7)).toBe(keyA);
  });

  it('refuses a job key or index the contract does not allow', () => {
    expect(() => chunkIdempotencyKey('', 0)).toThrow('A job key must be 1 to 255 visible ASCII characters.');
    expect(() => chunkIdempotencyKey('has space', 0)).toThrow(RangeError);
    expect(() => chunkIdempotencyKey('job', -1)).toThrow('A chunk index is a whole number from 0, not -1.');
    expect(() => chunkIdempotencyKey('job', 1.5)).toThrow(RangeError);
  });

  const jobKey = fc.string({
    unit: fc.integer({ min: 0x21, max: 0x7e }).map(String.fromCharCode),
    minLength: 1,
    maxLength: 255,
  });
  const index = fc.integer({ min: 0, max: 100_000 });

  it('is the same for the same chunk and a valid key of its own', () => {
    fc.assert(
      fc.property(jobKey, index, (key, i) => {
        const chunkKey = chunkIdempotencyKey(key, i);
        expect(chunkKey).toMatch(KEY_PATTERN);
        expect(chunkIdempotencyKey(key, i)).toBe(chunkKey);
        expect(chunkKey).not.toBe(key);
      }),
    );
  });

  // Keys made of the suffix's own pieces, so that two pairs often spell the same string if the index
  // were not read back from the last mark.
  const lookalikeKey = fc
    .array(fc.constantFrom('j', ':chunk-', '1', '2', '0'), { minLength: 1, maxLength: 6 })
    .map((parts) => parts.join(''));
  const smallIndex = fc.integer({ min: 0, max: 30 });

  it('differs between any two chunks, of one job or of two', () => {
    fc.assert(
      fc.property(
        fc.tuple(lookalikeKey, smallIndex),
        fc.tuple(lookalikeKey, smallIndex),
        ([keyA, indexA], [keyB, indexB]) => {
          fc.pre(keyA !== keyB || indexA !== indexB);
          expect(chunkIdempotencyKey(keyA, indexA)).not.toBe(chunkIdempotencyKey(keyB, indexB));
        },
      ),
      { numRuns: 2_000 },
    );
    // Keys built to collide if the index were not read back from the last mark.
    expect(chunkIdempotencyKey('job:chunk-1', 2)).not.toBe(chunkIdempotencyKey('job', 1));
    expect(chunkIdempotencyKey('job:chunk-1', 2)).not.toBe(chunkIdempotencyKey('job:chunk-12', 0));
  });
});
