import { limitsSizes } from '../../bench/sections/limits';
import { rateAfterBurst, slotsFullAfter, throttledSharePct } from '../../bench/support/limits';

/** The limits section's arithmetic: the rate once the burst is spent, the wait for full slots, the 429s' share. */

describe('the rate after the burst', () => {
  const limit = { requestsPerMinute: 120, burst: 3 };

  it('starts its window at the acceptance that emptied the bucket and counts the ones after it', () => {
    // Three at once spend the burst; then one every 500 ms (120 a minute), four more.
    const accepted = [0, 0, 0, 500, 1000, 1500, 2000];

    expect(rateAfterBurst(accepted, limit)).toEqual({
      burstSpent: true,
      windowStartAt: 0,
      windowMs: 2000,
      submissions: 4,
      perMinute: 120,
    });
  });

  it('replays the bucket as the provider keeps it: a submission late enough to find a token left spends nothing', () => {
    // One every 1000 ms at 120 a minute never empties a bucket of 3; the burst of three at 5000 does.
    const accepted = [5000, 0, 1000, 2000, 3000, 4000, 5000, 5000, 6000, 7000];

    expect(rateAfterBurst(accepted, limit)).toEqual({
      burstSpent: true,
      windowStartAt: 5000,
      windowMs: 2000,
      submissions: 2,
      perMinute: 60,
    });
  });

  it('measures from the first acceptance when the burst was never spent, and says so', () => {
    expect(rateAfterBurst([0, 1000, 2000, 3000], limit)).toEqual({
      burstSpent: false,
      windowStartAt: 0,
      windowMs: 3000,
      submissions: 3,
      perMinute: 60,
    });
  });

  it('has no rate for a window without two acceptances', () => {
    expect(rateAfterBurst([], limit)).toBeUndefined();
    expect(rateAfterBurst([0, 0, 0], limit)).toBeUndefined();
  });
});

describe('the wait for full slots', () => {
  const entry = (acceptedAt: number, finishedAt?: number) => ({
    acceptedAt: new Date(acceptedAt).toISOString(),
    ...(finishedAt === undefined ? {} : { finishedAt: new Date(finishedAt).toISOString() }),
  });

  it('is the time from recovery to the acceptance that fills the last slot', () => {
    const ledger = [
      entry(0, 1000), // before the outage, ended
      entry(10_400, 11_400),
      entry(10_900, 11_900),
      entry(11_500, 12_500), // the first has ended: still two running
      entry(11_600, 12_600), // three at once
    ];

    expect(slotsFullAfter(ledger, 10_000, 3)).toBe(1600);
  });

  it('counts a job still running as holding its slot', () => {
    expect(slotsFullAfter([entry(10_100), entry(10_200)], 10_000, 2)).toBe(200);
  });

  it('is undefined when the slots never filled after recovery', () => {
    const ledger = [entry(9000, 20_000), entry(10_500, 11_500), entry(12_000, 13_000)];

    expect(slotsFullAfter(ledger, 10_000, 3)).toBeUndefined();
  });
});

test("the 429s' share is of every submission the provider answered, refused or accepted", () => {
  expect(throttledSharePct(3, 97)).toBe(3);
  expect(throttledSharePct(0, 240)).toBe(0);
  expect(throttledSharePct(0, 0)).toBe(0);
});

test("the section's sizes come from the environment, else the outage's full five minutes", () => {
  expect(limitsSizes({})).toEqual({ rateJobs: 180, outageJobs: 300, outageSeconds: 300 });
  expect(limitsSizes({ BENCH_LIMITS_OUTAGE_SECONDS: '20', BENCH_LIMITS_RATE_JOBS: '40' })).toEqual({
    rateJobs: 40,
    outageJobs: 300,
    outageSeconds: 20,
  });
  expect(() => limitsSizes({ BENCH_LIMITS_OUTAGE_JOBS: '0' })).toThrow(
    'BENCH_LIMITS_OUTAGE_JOBS must be a whole number above 0, got 0',
  );
});
