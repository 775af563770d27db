import { providersSizes } from '../../bench/sections/providers';
import { startWaits, utilizationPct } from '../../bench/support/burst';

/** The two-provider section's arithmetic: start waits from the API's timestamps, utilization, sizes from env. */

const job = (id: string, createdAt: string, startedAt?: string) => ({
  id,
  createdAt,
  ...(startedAt ? { startedAt } : {}),
});

test('start waits are createdAt to startedAt, as nearest-rank p50, p95 and max', () => {
  const jobs = Array.from({ length: 20 }, (_, i) =>
    job(
      `j${i}`,
      '2026-12-01T00:00:00.000Z',
      new Date(Date.parse('2026-12-01T00:00:00.000Z') + (i + 1) * 100).toISOString(),
    ),
  );

  expect(startWaits(jobs)).toEqual({ jobs: 20, p50Ms: 1000, p95Ms: 1900, maxMs: 2000 });
});

test('a job that never started is an error, not a zero wait', () => {
  const jobs = [
    job('a', '2026-12-01T00:00:00.000Z', '2026-12-01T00:00:01.000Z'),
    job('b', '2026-12-01T00:00:00.000Z'),
  ];

  expect(() => startWaits(jobs)).toThrow('job b never started');
});

test('utilization is busy slot time over limit times makespan, in percent to one decimal', () => {
  expect(utilizationPct(300_000, 5, 149_300)).toBe(40.2);
  expect(utilizationPct(100_000, 3, 100_000 / 3)).toBe(100);
});

test('the section runs 300 images and 100 transcriptions unless the environment says otherwise', () => {
  expect(providersSizes({})).toEqual({ images: 160, transcriptions: 100 });
  expect(providersSizes({ BENCH_PROVIDERS_IMAGES: '20', BENCH_PROVIDERS_AUDIO: '10' })).toEqual({
    images: 20,
    transcriptions: 10,
  });
  expect(providersSizes({ BENCH_PROVIDERS_IMAGES: '' })).toEqual({ images: 160, transcriptions: 100 });
});

test.each(['0', '-3', '2.5', 'many'])('a size of %j is refused by name', (size) => {
  expect(() => providersSizes({ BENCH_PROVIDERS_AUDIO: size })).toThrow(
    `BENCH_PROVIDERS_AUDIO must be a whole number above 0, got ${size}`,
  );
});
