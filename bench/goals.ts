import { PEER_LEAVES_OUT } from './peer/leaves-out';
import type { Results } from './results';
import { fmt } from './support/common';

/**
 * The goals Longhaul's figures are held to, each beside what this run
 * measured and whether it met the goal (and by how much it missed). A ratio
 * to the peer is taken only from the same run; a figure whose section did
 * not run says so instead of passing.
 */

export interface GoalRow {
  readonly figure: string;
  readonly measured: string;
  readonly goal: string;
  /** `met`, `missed by …`, or `not measured: …`. */
  readonly verdict: string;
  /** Undefined when not measured. */
  readonly met?: boolean;
}

export const GOALS = {
  /** Utilization as a share of the peer's in the same run, where the peer has a figure. */
  utilizationOfPeerPct: 97,
  /** Utilization where the peer has no figure. */
  utilizationPct: 95,
  slotGapP50Ms: 150,
  slotGapP99Ms: 500,
  handOffSequentialCalls: 8,
  /** DynamoDB reads and writes per job, by the provider job's length in ms. */
  dynamoDb: {
    3000: { writes: 12, reads: 10 },
    60000: { writes: 70, reads: 130 },
  } as Readonly<Record<number, { writes: number; reads: number }>>,
  submitP99OfPeer: 3,
  /** USD per 1,000 jobs, by the provider job's length in ms. */
  usdPerThousandJobs: { 3000: 0.25, 60000: 0.4 } as Readonly<Record<number, number>>,
  /** The limits section's: a provider's rate and outages lengthen the queue and lose no job. */
  limits: {
    failedOrReview: 0,
    declaredRateOfLimitPct: 95,
    declaredThrottled: 0,
    undeclaredThrottledPct: 3,
    undeclaredRateOfLimitPct: 85,
    slotsFullAfterRecoveryS: 5,
  },
  handlerBundleKiB: 250,
  handlerInitMs: 100,
  benchS: 12 * 60,
} as const;

const notMeasured = (figure: string, goal: string, why: string): GoalRow => ({
  figure,
  measured: '',
  goal,
  verdict: `not measured: ${why}`,
});

/** How a figure and its goal are written. */
type Show = (n: number) => string;
const decimals = (n: number) => (Number.isInteger(n) ? 0 : Math.abs(n) < 10 ? 2 : 1);
const inUnit =
  (unit: string): Show =>
  (n) =>
    `${fmt(n, decimals(n))}${unit}`;
const usd: Show = (n) => `$${fmt(n, 2)}`;

/** A figure that must stay at or below `limit`. */
function atMost(figure: string, value: number, limit: number, show: Show, measured?: string): GoalRow {
  const met = value <= limit;
  return {
    figure,
    measured: measured ?? show(value),
    goal: `≤ ${show(limit)}`,
    verdict: met ? 'met' : `missed by ${show(value - limit)}`,
    met,
  };
}

/** A figure that must stay at or above `limit`. */
function atLeast(figure: string, value: number, limit: number, show: Show, measured?: string): GoalRow {
  const met = value >= limit;
  return {
    figure,
    measured: measured ?? show(value),
    goal: `≥ ${show(limit)}`,
    verdict: met ? 'met' : `missed by ${show(limit - value)}`,
    met,
  };
}

/** Longhaul's utilization as a share of the peer's, both from this run; `section` is Longhaul's. */
function utilizationOfPeer(
  figure: string,
  section: string,
  ours: number | undefined,
  theirs: number | undefined,
): GoalRow {
  const goal = `≥ ${GOALS.utilizationOfPeerPct} % of the peer's`;
  if (ours === undefined) return notMeasured(figure, goal, `the ${section} section did not run`);
  if (theirs === undefined) return notMeasured(figure, goal, "the peer's side did not run in this run");
  const share = (100 * ours) / theirs;
  return atLeast(
    figure,
    share,
    GOALS.utilizationOfPeerPct,
    (n) => `${fmt(n, 1)} % of the peer's`,
    `${fmt(ours, 1)} % vs the peer's ${fmt(theirs, 1)} % = ${fmt(share, 1)} % of it`,
  );
}

/** The limits section's rows: Longhaul's side of each case. */
function limitsRows(r: Results): GoalRow[] {
  const goals = GOALS.limits;
  const lost = 'jobs failed or sent to review by an outage or by 429s (limits: every case)';
  const declaredRate = 'submissions a minute at a declared rate, once the burst is spent (limits a)';
  const declared429s = '429s at a declared rate (limits a)';
  const undeclared429s = '429s as a share of submissions, rate not declared (limits b)';
  const undeclaredRate = 'submissions a minute, rate not declared, once the burst is spent (limits b)';
  const recovery = "from the provider's recovery to every slot in use (limits c)";
  const ofRate: Show = (n) => `${fmt(n, Number.isInteger(n) ? 0 : 1)} % of the rate`;
  const l = r.limits;
  if (!l) {
    const why = 'the limits section did not run';
    return [
      notMeasured(lost, `≤ ${goals.failedOrReview}`, why),
      notMeasured(declaredRate, `≥ ${ofRate(goals.declaredRateOfLimitPct)}`, why),
      notMeasured(declared429s, `≤ ${goals.declaredThrottled}`, why),
      notMeasured(undeclared429s, `≤ ${goals.undeclaredThrottledPct} %`, why),
      notMeasured(undeclaredRate, `≥ ${ofRate(goals.undeclaredRateOfLimitPct)}`, why),
      notMeasured(recovery, `≤ ${goals.slotsFullAfterRecoveryS} s`, why),
    ];
  }
  const limit = l.rate.requestsPerMinute;
  const { declared, undeclared, outage } = l;
  const failed = [declared.longhaul, undeclared.longhaul, outage.longhaul].map((run) => run.failedOrReview);
  const rateRow = (figure: string, perMinute: number | undefined, least: number, note = '') => {
    if (perMinute === undefined) {
      return notMeasured(figure, `≥ ${ofRate(least)}`, 'fewer than two acceptances after the burst');
    }
    const share = (100 * perMinute) / limit;
    const measured = `${fmt(perMinute, decimals(perMinute) === 0 ? 0 : 1)} a minute of ${limit} = ${fmt(share, 1)} %${note}`;
    return atLeast(figure, share, least, ofRate, measured);
  };
  const full = outage.longhaul.slotsFullS;
  const lostJobs = failed.reduce((sum, n) => sum + n, 0);
  return [
    atMost(
      lost,
      lostJobs,
      goals.failedOrReview,
      inUnit(''),
      `${lostJobs} (declared rate ${failed[0]}, undeclared ${failed[1]}, outage ${failed[2]})`,
    ),
    rateRow(
      declaredRate,
      declared.longhaul.rate?.perMinute,
      goals.declaredRateOfLimitPct,
      l.declaredRateRead ? '' : ' (this build read no declared rate)',
    ),
    atMost(declared429s, declared.longhaul.throttled, goals.declaredThrottled, inUnit('')),
    atMost(undeclared429s, undeclared.longhaul.throttledPct, goals.undeclaredThrottledPct, inUnit(' %')),
    rateRow(undeclaredRate, undeclared.longhaul.rate?.perMinute, goals.undeclaredRateOfLimitPct),
    full === undefined
      ? {
          figure: recovery,
          measured: `not within ${outage.waitedS} s`,
          goal: `≤ ${goals.slotsFullAfterRecoveryS} s`,
          verdict: `missed: not every slot in use within the ${outage.waitedS} s waited`,
          met: false,
        }
      : atMost(recovery, full, goals.slotsFullAfterRecoveryS, inUnit(' s')),
  ];
}

export function goalRows(r: Results): GoalRow[] {
  const rows: GoalRow[] = [];
  const b = r.backPressure;
  const p = r.peer?.burst;

  rows.push(
    utilizationOfPeer(
      'provider utilization in the burst (backpressure)',
      'backpressure',
      b?.utilizationPct,
      p?.utilizationPct,
    ),
  );
  const deepgram = r.providers?.alone.providers.find((use) => use.provider === 'deepgram');
  const alone = 'Deepgram utilization, transcriptions alone (providers; the peer has no figure)';
  rows.push(
    deepgram
      ? atLeast(alone, deepgram.utilizationPct, GOALS.utilizationPct, inUnit(' %'))
      : notMeasured(alone, `≥ ${GOALS.utilizationPct} %`, 'the providers section did not run'),
  );
  rows.push(
    utilizationOfPeer(
      'provider utilization, two-tenant flood (fairness)',
      'fairness',
      r.fairness?.flood.longhaul.utilizationPct,
      r.fairness?.flood.peer.utilizationPct,
    ),
  );

  const gapFigure = "a freed slot's wait for its next job in the burst (provider finish to next acceptance)";
  const gapGoal = `p50 ≤ ${GOALS.slotGapP50Ms} ms, p99 ≤ ${GOALS.slotGapP99Ms} ms`;
  if (!b) rows.push(notMeasured(gapFigure, gapGoal, 'the backpressure section did not run'));
  else if (!b.slotGap) rows.push(notMeasured(gapFigure, gapGoal, 'no slot freed while a job waited'));
  else {
    rows.push(
      atMost(`${gapFigure}, p50`, b.slotGap.p50Ms, GOALS.slotGapP50Ms, inUnit(' ms')),
      atMost(`${gapFigure}, p99`, b.slotGap.p99Ms, GOALS.slotGapP99Ms, inUnit(' ms')),
    );
  }
  const chain = 'calls one after another from a job’s end at the provider to the next acceptance (handoff)';
  rows.push(
    r.handOff
      ? atMost(chain, r.handOff.sequential, GOALS.handOffSequentialCalls, inUnit(''))
      : notMeasured(chain, `≤ ${GOALS.handOffSequentialCalls}`, 'the handoff section did not run'),
  );

  for (const [jobMs, limits] of Object.entries(GOALS.dynamoDb)) {
    const run = r.cost?.runs.find((candidate) => candidate.jobMs === Number(jobMs));
    const job = `${Number(jobMs) / 1000} s job`;
    const figure = (what: string) =>
      `DynamoDB ${what} per job, ${job} (a batch's or transaction's items each one)`;
    if (!run) {
      rows.push(
        notMeasured(
          figure('writes / reads'),
          `≤ ${limits.writes} / ≤ ${limits.reads}`,
          'the cost section did not run',
        ),
      );
      continue;
    }
    rows.push(
      atMost(figure('writes'), run.dynamodb.writes, limits.writes, inUnit('')),
      atMost(figure('reads'), run.dynamodb.reads, limits.reads, inUnit('')),
    );
  }

  const submit = 'submit latency p99 during the burst';
  const submitGoal = `≤ ${GOALS.submitP99OfPeer}x the peer's`;
  if (!b) rows.push(notMeasured(submit, submitGoal, 'the backpressure section did not run'));
  else if (!p) rows.push(notMeasured(submit, submitGoal, "the peer's side did not run in this run"));
  else {
    const times = b.submitP99Ms / p.submitP99Ms;
    rows.push(
      atMost(
        submit,
        times,
        GOALS.submitP99OfPeer,
        (n) => `${fmt(n, 1)}x the peer's`,
        `${b.submitP99Ms} ms vs the peer's ${fmt(p.submitP99Ms, 0)} ms = ${fmt(times, 1)}x`,
      ),
    );
  }

  for (const [jobMs, limit] of Object.entries(GOALS.usdPerThousandJobs)) {
    const run = r.cost?.runs.find((candidate) => candidate.jobMs === Number(jobMs));
    const figure = `AWS cost per 1,000 jobs, ${Number(jobMs) / 1000} s job`;
    rows.push(
      run
        ? atMost(figure, run.cost.usdPerThousandJobs, limit, usd)
        : notMeasured(figure, `≤ ${usd(limit)}`, 'the cost section did not run'),
    );
  }

  const handlers = r.coldStart ?? [];
  if (handlers.length === 0) {
    rows.push(
      notMeasured(
        "every handler's bundle / module init",
        `≤ ${GOALS.handlerBundleKiB} KiB / ≤ ${GOALS.handlerInitMs} ms`,
        'the coldstart section did not run',
      ),
    );
  } else {
    const largest = handlers.reduce((a, h) => (h.bundleKiB > a.bundleKiB ? h : a));
    const slowest = handlers.reduce((a, h) => (h.initMs > a.initMs ? h : a));
    const over = (n: number) => (n === 0 ? '' : `; ${n} of ${handlers.length} over`);
    const bundles = atMost(
      `every handler's bundle (${handlers.length} handlers)`,
      largest.bundleKiB,
      GOALS.handlerBundleKiB,
      inUnit(' KiB'),
    );
    const inits = atMost(
      `every handler's module init (${handlers.length} handlers)`,
      slowest.initMs,
      GOALS.handlerInitMs,
      inUnit(' ms'),
    );
    rows.push(
      {
        ...bundles,
        measured: `largest ${largest.handler} ${fmt(largest.bundleKiB, 1)} KiB${over(handlers.filter((h) => h.bundleKiB > GOALS.handlerBundleKiB).length)}`,
      },
      {
        ...inits,
        measured: `slowest ${slowest.handler} ${slowest.initMs} ms${over(handlers.filter((h) => h.initMs > GOALS.handlerInitMs).length)}`,
      },
    );
  }

  rows.push(...limitsRows(r));

  const bench = '`npm run bench`, every section in one run';
  const benchGoal = `≤ ${GOALS.benchS / 60} min`;
  rows.push(
    r.command === 'npm run bench'
      ? atMost(bench, r.durationS, GOALS.benchS, inUnit(' s'))
      : notMeasured(bench, benchGoal, `only some sections ran (${r.command}, ${r.durationS} s)`),
  );
  return rows;
}

export function printGoals(results: Results, print: (line: string) => void): void {
  const rows = goalRows(results);
  print('\n## Goals');
  print('| figure | measured | goal | verdict |');
  print('|---|---|---|---|');
  for (const row of rows) print(`| ${row.figure} | ${row.measured} | ${row.goal} | ${row.verdict} |`);
  const measured = rows.filter((row) => row.met !== undefined);
  print(
    `${measured.filter((row) => row.met).length} of ${measured.length} measured goals met; ` +
      `${rows.length - measured.length} not measured in this run.`,
  );
  print(`What the peer does not do: ${PEER_LEAVES_OUT.join('; ')}.`);
}
