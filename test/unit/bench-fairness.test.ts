import { fairnessSizes } from '../../bench/sections/fairness';
import {
  busySlotMsWithin,
  finishedPerSecond,
  overtaking,
  ratioText,
  startsWhileBothWait,
  startWaitsUntil,
  waitsText,
  withinRatio,
} from '../../bench/support/fairness';

/** The fairness section's arithmetic: censored start waits, busy time in a window, shared starts, overtaking. */

const T0 = Date.parse('2026-12-01T00:00:00.000Z');
const at = (ms: number) => new Date(T0 + ms).toISOString();
const job = (id: string, createdMs: number, startedMs?: number, finishedMs?: number) => ({
  id,
  createdAt: at(createdMs),
  ...(startedMs === undefined ? {} : { startedAt: at(startedMs) }),
  ...(finishedMs === undefined ? {} : { finishedAt: at(finishedMs) }),
});

describe('start waits until a cutoff', () => {
  test('with every job started, they are exact nearest-rank p50, p95 and max', () => {
    const jobs = Array.from({ length: 20 }, (_, i) => job(`j${i}`, 0, (i + 1) * 100));

    expect(startWaitsUntil(jobs, T0 + 10_000)).toEqual({
      jobs: 20,
      started: 20,
      p50: { ms: 1000, atLeast: false },
      p95: { ms: 1900, atLeast: false },
      max: { ms: 2000, atLeast: false },
    });
  });

  test('a job not started by the cutoff waits until it, and every quantile it may move is a lower bound', () => {
    // Waits 1, 2, 3 s started; one created at 8 s never started: 2 s by a cutoff at 10 s, ranked after
    // the started 2 s (its true wait is longer), so the p50 stays exact and the p95 and max do not.
    const jobs = [job('a', 0, 1000), job('b', 0, 2000), job('c', 0, 3000), job('d', 8000)];

    expect(startWaitsUntil(jobs, T0 + 10_000)).toEqual({
      jobs: 4,
      started: 3,
      p50: { ms: 2000, atLeast: false },
      p95: { ms: 3000, atLeast: true },
      max: { ms: 3000, atLeast: true },
    });
  });

  test('in print, a lower bound is marked and an exact figure is not', () => {
    const jobs = [job('a', 0, 1000), job('b', 0, 2000), job('c', 0, 3000), job('d', 8000)];

    expect(waitsText(startWaitsUntil(jobs, T0 + 10_000))).toBe(
      '2000 / >= 3000 / >= 3000 ms (n=4, 3 started)',
    );
  });

  test('a quantile below every unstarted job is exact', () => {
    const jobs = [job('a', 0, 1000), job('b', 0, 1500), job('c', 0, 2000), job('d', 0)];

    const waits = startWaitsUntil(jobs, T0 + 9000);

    expect(waits.p50).toEqual({ ms: 1500, atLeast: false });
    expect(waits.max).toEqual({ ms: 9000, atLeast: true });
  });

  test('a job started after the cutoff counts as not started', () => {
    expect(startWaitsUntil([job('a', 0, 12_000)], T0 + 10_000)).toMatchObject({
      started: 0,
      max: { ms: 10_000, atLeast: true },
    });
  });

  test('a job created after the cutoff is an error, not a negative wait', () => {
    expect(() => startWaitsUntil([job('late', 11_000)], T0 + 10_000)).toThrow(
      'job late was created after the cutoff',
    );
  });
});

test('busy slot time counts only the part of each job inside the window', () => {
  // One job wholly inside, one straddling each edge, one wholly outside.
  const accepted = [at(2000), at(-400), at(9500), at(20_000)];

  expect(busySlotMsWithin(accepted, 1000, T0, T0 + 10_000)).toBe(1000 + 600 + 500);
});

test('throughput is the jobs finished inside the window per second of it', () => {
  const jobs = [job('a', 0, 1, 2000), job('b', 0, 1, 9000), job('c', 0, 1, 11_000), job('d', 0, 1)];

  expect(finishedPerSecond(jobs, T0, T0 + 10_000)).toBe(0.2);
  expect(() => finishedPerSecond(jobs, T0, T0)).toThrow('the window must end after it begins');
});

describe('starts while both tenants wait', () => {
  test('counts only the starts made while each tenant had a job created and not yet started', () => {
    const first = [
      job('a1', 0, 100), // before b has anything waiting: not counted
      job('a2', 0, 1000),
      job('a3', 0, 2000),
      job('a4', 0, 3000),
      job('a5', 0, 5000), // after b's last start: not counted
    ];
    const second = [job('b1', 500, 1500), job('b2', 500, 2500)];

    expect(startsWhileBothWait(first, second)).toEqual({
      first: 2,
      second: 2,
      fromMs: T0 + 1000,
      toMs: T0 + 2500,
    });
  });

  test('a job never started keeps its tenant waiting to the end', () => {
    const first = [job('a1', 0, 1000), job('a2', 0, 2000), job('a3', 0, 3000)];
    const second = [job('b1', 0, 1500), job('b2', 0)];

    expect(startsWhileBothWait(first, second)).toMatchObject({ first: 3, second: 1 });
  });

  test('no start counted when the tenants never waited together', () => {
    expect(startsWhileBothWait([job('a', 0, 1000)], [job('b', 2000, 3000)])).toEqual({ first: 0, second: 0 });
  });
});

test('overtaking: the jobs waiting ahead of a job, and those of them that started before it', () => {
  const urgent = job('urgent', 5000, 7000);
  const others = [
    job('s1', 0, 1000), // started before it was submitted: not ahead
    job('s2', 0, 6000), // ahead, started first
    job('s3', 0, 8000), // ahead, started after it
    job('s4', 0), // ahead, never started
    job('s5', 6000, 6500), // submitted after it: not ahead
  ];

  expect(overtaking(urgent, others)).toEqual({ waitingAhead: 3, startedFirst: 1 });
});

test('a ratio reads as x : 1 and is checked against its target within a tolerance', () => {
  expect(ratioText(90, 30)).toBe('3.00 : 1');
  expect(ratioText(5, 0)).toBe('5 : 0');
  expect(ratioText(0, 0)).toBe('no starts');
  expect(withinRatio(99, 30, 3, 0.1)).toBe(true);
  expect(withinRatio(100, 30, 3, 0.1)).toBe(false);
  expect(withinRatio(3, 0, 3, 0.1)).toBe(false);
});

test('the section runs its default sizes unless the environment says otherwise', () => {
  expect(fairnessSizes({})).toEqual({ flood: 450, trickleS: 30, each: 80, backlog: 200 });
  expect(
    fairnessSizes({
      BENCH_FAIRNESS_FLOOD: '200',
      BENCH_FAIRNESS_TRICKLE_S: '10',
      BENCH_FAIRNESS_EACH: '30',
      BENCH_FAIRNESS_BACKLOG: '50',
    }),
  ).toEqual({ flood: 200, trickleS: 10, each: 30, backlog: 50 });
  expect(() => fairnessSizes({ BENCH_FAIRNESS_FLOOD: '2.5' })).toThrow(
    'BENCH_FAIRNESS_FLOOD must be a whole number above 0, got 2.5',
  );
});
