import { goalRows } from '../../bench/goals';
import type { Results } from '../../bench/results';

/** The goals table: each figure of a run beside its goal, met or missed by how much, or not measured. */

const burst = {
  utilizationPct: 66.7,
  submitP99Ms: 4559,
  slotGap: { gaps: 495, p50Ms: 117, p99Ms: 7776, maxMs: 9193 },
};
const costRun = (jobMs: number, writes: number, reads: number, usd: number) => ({
  jobMs,
  dynamodb: { writes, reads },
  cost: { usdPerThousandJobs: usd },
});

const full = {
  command: 'npm run bench',
  durationS: 700,
  backPressure: burst,
  peer: { burst: { utilizationPct: 99.3, submitP99Ms: 69 } },
  providers: { alone: { providers: [{ provider: 'deepgram', utilizationPct: 96 }] } },
  fairness: { flood: { longhaul: { utilizationPct: 98 }, peer: { utilizationPct: 99.3 } } },
  handOff: { sequential: 29 },
  cost: { runs: [costRun(3000, 12, 65.6, 0.39), costRun(60_000, 80.6, 822, 2.75)] },
  coldStart: [
    { handler: 'api', bundleKiB: 690.2, initMs: 207 },
    { handler: 'dispatch', bundleKiB: 240, initMs: 90 },
  ],
} as unknown as Results;

const row = (rows: ReturnType<typeof goalRows>, figure: string) => {
  const found = rows.find((r) => r.figure.startsWith(figure));
  if (!found) throw new Error(`no row ${figure}`);
  return found;
};

it('sets each figure beside its goal, with what it missed by', () => {
  const rows = goalRows(full);
  expect(row(rows, 'provider utilization in the burst')).toEqual({
    figure: 'provider utilization in the burst (backpressure)',
    measured: "66.7 % vs the peer's 99.3 % = 67.2 % of it",
    goal: "≥ 97.0 % of the peer's",
    verdict: "missed by 29.8 % of the peer's",
    met: false,
  });
  expect(row(rows, 'Deepgram utilization')).toMatchObject({
    measured: '96 %',
    goal: '≥ 95 %',
    verdict: 'met',
  });
  expect(row(rows, 'provider utilization, two-tenant flood')).toMatchObject({ verdict: 'met', met: true });
  expect(
    row(rows, "a freed slot's wait for its next job in the burst (provider finish to next acceptance), p50"),
  ).toMatchObject({ measured: '117 ms', goal: '≤ 150 ms', verdict: 'met' });
  expect(
    row(rows, "a freed slot's wait for its next job in the burst (provider finish to next acceptance), p99"),
  ).toMatchObject({ measured: '7776 ms', goal: '≤ 500 ms', verdict: 'missed by 7276 ms', met: false });
  expect(row(rows, 'calls one after another')).toMatchObject({ measured: '29', verdict: 'missed by 21' });
  expect(row(rows, 'DynamoDB writes per job, 3 s job')).toMatchObject({ goal: '≤ 12', verdict: 'met' });
  expect(row(rows, 'DynamoDB reads per job, 3 s job')).toMatchObject({ verdict: 'missed by 55.6' });
  expect(row(rows, 'DynamoDB writes per job, 60 s job')).toMatchObject({ verdict: 'missed by 10.6' });
  expect(row(rows, 'DynamoDB reads per job, 60 s job')).toMatchObject({
    goal: '≤ 130',
    verdict: 'missed by 692',
  });
  expect(row(rows, 'submit latency p99')).toMatchObject({
    measured: "4559 ms vs the peer's 69 ms = 66.1x",
    goal: "≤ 3.0x the peer's",
    met: false,
  });
  expect(row(rows, 'AWS cost per 1,000 jobs, 3 s job')).toMatchObject({
    measured: '$0.39',
    goal: '≤ $0.25',
    verdict: 'missed by $0.14',
  });
  expect(row(rows, 'AWS cost per 1,000 jobs, 60 s job')).toMatchObject({ goal: '≤ $0.40', met: false });
  expect(row(rows, "every handler's bundle")).toMatchObject({
    measured: 'largest api 690.2 KiB; 1 of 2 over',
    verdict: 'missed by 440.2 KiB',
  });
  expect(row(rows, "every handler's module init")).toMatchObject({
    measured: 'slowest api 207 ms; 1 of 2 over',
    verdict: 'missed by 107 ms',
  });
  expect(row(rows, '`npm run bench`')).toMatchObject({ measured: '700 s', goal: '≤ 720 s', verdict: 'met' });
});

it('takes a ratio to the peer only from the same run, and never passes a figure it did not measure', () => {
  const alone = { ...full, command: 'npm run bench -- backpressure', peer: undefined } as Results;
  const rows = goalRows(alone);
  expect(row(rows, 'provider utilization in the burst')).toMatchObject({
    verdict: "not measured: the peer's side did not run in this run",
  });
  expect(row(rows, 'provider utilization in the burst').met).toBeUndefined();
  expect(row(rows, 'submit latency p99').verdict).toBe(
    "not measured: the peer's side did not run in this run",
  );
  expect(row(rows, '`npm run bench`').verdict).toBe(
    'not measured: only some sections ran (npm run bench -- backpressure, 700 s)',
  );

  const empty = goalRows({
    ...full,
    backPressure: undefined,
    cost: undefined,
    coldStart: [],
    handOff: undefined,
  });
  expect(row(empty, 'provider utilization in the burst').verdict).toBe(
    'not measured: the backpressure section did not run',
  );
  expect(empty.filter((r) => r.met !== undefined).map((r) => r.figure)).toEqual([
    'Deepgram utilization, transcriptions alone (providers; the peer has no figure)',
    'provider utilization, two-tenant flood (fairness)',
    '`npm run bench`, every section in one run',
  ]);
});

it("holds the limits section's runs to their goals: no job lost to a rate or an outage, the rate kept or learned, the slots full soon after recovery", () => {
  const rateRun = (perMinute: number, throttled: number, throttledPct: number, failedOrReview = 0) => ({
    rate: { perMinute },
    throttled,
    throttledPct,
    failedOrReview,
  });
  const limits = {
    rate: { requestsPerMinute: 120, burst: 10 },
    declaredRateRead: true,
    declared: { longhaul: rateRun(118.8, 0, 0) },
    undeclared: { longhaul: rateRun(96, 7, 3.7, 1) },
    outage: { seconds: 300, waitedS: 120, longhaul: { failedOrReview: 2, slotsFullS: 1.5 } },
  };
  const rows = goalRows({ ...full, limits } as unknown as Results);
  expect(row(rows, 'jobs failed or sent to review by an outage or by 429s')).toMatchObject({
    measured: '3 (declared rate 0, undeclared 1, outage 2)',
    goal: '≤ 0',
    verdict: 'missed by 3',
    met: false,
  });
  expect(row(rows, 'submissions a minute at a declared rate')).toMatchObject({
    measured: '118.8 a minute of 120 = 99.0 %',
    goal: '≥ 95 % of the rate',
    verdict: 'met',
  });
  expect(row(rows, '429s at a declared rate')).toMatchObject({ measured: '0', goal: '≤ 0', met: true });
  expect(row(rows, '429s as a share of submissions, rate not declared')).toMatchObject({
    measured: '3.70 %',
    goal: '≤ 3 %',
    verdict: 'missed by 0.70 %',
  });
  expect(row(rows, 'submissions a minute, rate not declared')).toMatchObject({
    measured: '96 a minute of 120 = 80.0 %',
    goal: '≥ 85 % of the rate',
    verdict: 'missed by 5 % of the rate',
  });
  expect(row(rows, "from the provider's recovery to every slot in use")).toMatchObject({
    measured: '1.50 s',
    goal: '≤ 5 s',
    met: true,
  });

  const unread = goalRows({
    ...full,
    limits: {
      ...limits,
      declaredRateRead: false,
      outage: { seconds: 300, waitedS: 120, longhaul: { failedOrReview: 0 } },
    },
  } as unknown as Results);
  expect(row(unread, 'submissions a minute at a declared rate').measured).toBe(
    '118.8 a minute of 120 = 99.0 % (this build read no declared rate)',
  );
  expect(row(unread, "from the provider's recovery to every slot in use")).toMatchObject({
    measured: 'not within 120 s',
    verdict: 'missed: not every slot in use within the 120 s waited',
    met: false,
  });
  expect(row(goalRows(full), 'jobs failed or sent to review by an outage or by 429s').verdict).toBe(
    'not measured: the limits section did not run',
  );
});
