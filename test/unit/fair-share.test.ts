import fc from 'fast-check';
import {
  chooseTenant,
  RANK_DELAY_MS,
  rankOf,
  STRIDE,
  strideOf,
  type TenantCandidate,
  waitingSortKey,
} from '../../lambdas/domain/fair-share';
import { JOB_PRIORITIES, type JobPriority } from '../../lambdas/domain/job';

interface WaitingTenant {
  readonly tenant: string;
  readonly weight: number;
  readonly inFlight?: number;
  readonly maxInFlight?: number;
}

/** One provider's pool item as the chooser sees it, updated the way the conditional write will. */
class Pool {
  readonly passes = new Map<string, number>();
  floor = 0;

  /** Serves one of `waiting`; returns the tenant whose job starts, or undefined. */
  serve(waiting: readonly WaitingTenant[]): string | undefined {
    const candidates: TenantCandidate[] = waiting.map((t) => ({
      ...t,
      inFlight: t.inFlight ?? 0,
      pass: this.passes.get(t.tenant),
    }));
    const choice = chooseTenant(candidates, this.floor);
    if (choice === undefined) return undefined;
    if (choice.expectedPass !== this.passes.get(choice.tenant)) throw new Error('condition failed');
    if (choice.floor < this.floor) throw new Error('floor went down');
    this.passes.set(choice.tenant, choice.nextPass);
    this.floor = choice.floor;
    return choice.tenant;
  }

  /** Serves `waiting`, every one always with a job waiting, `choices` times; returns who started, in order. */
  serveAll(waiting: readonly WaitingTenant[], choices: number): string[] {
    return Array.from({ length: choices }, () => this.serve(waiting) as string);
  }
}

const count = (starts: readonly string[], tenant: string) => starts.filter((t) => t === tenant).length;

/** The most starts of others before `tenant`'s first start, between two of its starts, or after its last. */
function longestWait(starts: readonly string[], tenant: string): number {
  let longest = 0;
  let since = 0;
  for (const started of starts) {
    if (started === tenant) since = 0;
    else longest = Math.max(longest, ++since);
  }
  return longest;
}

/**
 * Starts of others a tenant of weight `weight` may wait through: in the pass
 * span of one of its strides, each other tenant is served about
 * `otherWeight / weight` times, plus once for where the span starts.
 */
const waitBound = (weight: number, others: readonly number[]) =>
  others.reduce((sum, other) => sum + Math.ceil(other / weight) + 1, 0);

const tenantsOf = (weights: readonly number[]): WaitingTenant[] =>
  weights.map((weight, i) => ({ tenant: `other-${i}`, weight }));

describe('chooseTenant', () => {
  it('starts tenants of weights 3 and 1 in the ratio 3:1, and keeps close to it all along', () => {
    const starts = new Pool().serveAll(
      [
        { tenant: 'heavy', weight: 3 },
        { tenant: 'light', weight: 1 },
      ],
      4_000,
    );
    const ratio = count(starts, 'heavy') / count(starts, 'light');
    expect(Math.abs(ratio / 3 - 1)).toBeLessThanOrEqual(0.02);
    // Stride scheduling's lag stays bounded at every point, not only on average.
    starts.forEach((_, i) => {
      expect(Math.abs(count(starts.slice(0, i + 1), 'light') - (i + 1) / 4)).toBeLessThanOrEqual(1);
    });
  });

  it.each([
    [1, [1]],
    [1, [3]],
    [1, [1, 1, 1]],
    [1, [5, 10, 20]],
    [1, [100]],
    [1, [50, 50, 100]],
    [1, [7, 13, 2, 1]],
    [3, [1, 9]],
    [3, [100, 100]],
    [10, [100, 1, 25]],
    [100, [1, 1, 1]],
  ])(
    'makes a tenant of weight %d wait through no more starts than its weights allow among others of %j',
    (weight, others) => {
      const waiting = [...tenantsOf(others), { tenant: 'waiting', weight }];
      const total = others.reduce((sum, w) => sum + w, weight);
      const choices = Math.ceil((200 * total) / weight);
      const starts = new Pool().serveAll(waiting, choices);
      expect(count(starts, 'waiting')).toBeGreaterThanOrEqual(199);
      expect(longestWait(starts, 'waiting')).toBeLessThanOrEqual(waitBound(weight, others));
    },
  );

  it('chooses a tenant never served before at the next choice, however long others have flooded', () => {
    const pool = new Pool();
    const flooders = tenantsOf([100, 50]);
    pool.serveAll(flooders, 10_000);
    expect(pool.serve([...flooders, { tenant: 'newcomer', weight: 1 }])).toBe('newcomer');
  });

  it('starts a tenant that comes and goes within one round of each arrival while others flood', () => {
    const pool = new Pool();
    const flooders = tenantsOf([100, 50]);
    const bound = waitBound(1, [100, 50]);
    const gaps = [1, 7, 40, 150, 3, 300, 151, 2, 1_000, 90];
    let waits = 0;
    for (const gap of gaps) {
      pool.serveAll(flooders, gap);
      let wait = 0;
      while (pool.serve([...flooders, { tenant: 'intermittent', weight: 1 }]) !== 'intermittent') {
        wait += 1;
        expect(wait).toBeLessThanOrEqual(bound);
      }
      waits += wait;
    }
    // Right after a start it must wait about a round; after a long absence it goes at once.
    expect(waits).toBeGreaterThan(0);
  });

  it.each([1, 3])(
    'gives a tenant of weight %d back from 1,000 choices idle no more than its share',
    (weight) => {
      const pool = new Pool();
      const steady = { tenant: 'steady', weight: 1 };
      const returning = { tenant: 'returning', weight };
      pool.serveAll([steady, returning], 100);
      pool.serveAll([steady], 1_000);
      const starts = pool.serveAll([steady, returning], 200);
      const share = weight / (weight + 1);
      starts.forEach((_, i) => {
        expect(count(starts.slice(0, i + 1), 'returning')).toBeLessThanOrEqual(
          Math.ceil((i + 1) * share) + 1,
        );
      });
      expect(count(starts, 'returning')).toBeGreaterThanOrEqual(200 * share);
    },
  );

  it('joins a tenant back from idle at the floor and conditions the write on the pass it had stored', () => {
    expect(chooseTenant([{ tenant: 'acme', weight: 4, pass: 5, inFlight: 0 }], 100)).toEqual({
      tenant: 'acme',
      pass: 100,
      expectedPass: 5,
      nextPass: 100 + STRIDE / 4,
      floor: 100,
    });
  });

  it('joins a tenant never served at the floor and conditions the write on no pass being stored', () => {
    expect(chooseTenant([{ tenant: 'acme', weight: 1, inFlight: 0 }], 7)).toEqual({
      tenant: 'acme',
      pass: 7,
      expectedPass: undefined,
      nextPass: 7 + STRIDE,
      floor: 7,
    });
  });

  it('keeps the pass of a tenant ahead of the floor: going idle clears no debt', () => {
    expect(chooseTenant([{ tenant: 'acme', weight: 1, pass: 300, inFlight: 0 }], 100)).toEqual({
      tenant: 'acme',
      pass: 300,
      expectedPass: 300,
      nextPass: 300 + STRIDE,
      floor: 300,
    });
  });

  it('breaks a tie at the floor for the tenant never served, then the lowest stored pass, then the name', () => {
    const at = (pass?: number) => ({ weight: 1, inFlight: 0, ...(pass === undefined ? {} : { pass }) });
    const tied = [
      { tenant: 'a', ...at(50) },
      { tenant: 'b', ...at(10) },
      { tenant: 'c', ...at(100) },
    ];
    expect(chooseTenant(tied, 100)?.tenant).toBe('b');
    expect(chooseTenant([...tied, { tenant: 'z', ...at() }], 100)?.tenant).toBe('z');
    expect(chooseTenant([...tied, { tenant: 'y', ...at(10) }], 100)?.tenant).toBe('b');
  });

  it('serves every fresh tenant tied at the floor once in the first round, whatever their names', () => {
    const waiting = ['d', 'b', 'a', 'c'].map((tenant) => ({ tenant, weight: 1 }));
    expect(new Pool().serveAll(waiting, 8)).toEqual(['a', 'b', 'c', 'd', 'a', 'b', 'c', 'd']);
  });

  it('never chooses a tenant at its cap, however heavy, and lets it take the rest', () => {
    const pool = new Pool();
    const heavyInFlight = [0, 1, 2, 2, 1, 2, 0, 2];
    const starts: string[] = [];
    for (let i = 0; i < 400; i += 1) {
      const inFlight = heavyInFlight[i % heavyInFlight.length] ?? 0;
      const chosen = pool.serve([
        { tenant: 'heavy', weight: 100, inFlight, maxInFlight: 2 },
        { tenant: 'light', weight: 1, inFlight: 0 },
      ]);
      if (inFlight >= 2) expect(chosen).toBe('light');
      starts.push(chosen as string);
    }
    // Half the choices find heavy below its cap; at 100 to 1 it takes them all but light's first turn.
    expect(count(starts, 'heavy')).toBe(200 - 1);
  });

  it('chooses no one when every tenant is at its cap, or none waits', () => {
    expect(
      chooseTenant(
        [
          { tenant: 'a', weight: 1, inFlight: 1, maxInFlight: 1 },
          { tenant: 'b', weight: 5, inFlight: 3, maxInFlight: 2 },
        ],
        0,
      ),
    ).toBeUndefined();
    expect(chooseTenant([], 0)).toBeUndefined();
  });

  it.each([0, 101, 1.5, -1, Number.NaN])('refuses weight %d', (weight) => {
    expect(() => chooseTenant([{ tenant: 'acme', weight, inFlight: 0 }], 0)).toThrow(
      new RangeError(`A tenant's weight is an integer from 1 to 100; got ${weight}.`),
    );
    // A capped tenant's weight too: bad settings fail at once, not when the cap lifts.
    expect(() =>
      chooseTenant(
        [
          { tenant: 'ok', weight: 1, inFlight: 0 },
          { tenant: 'acme', weight, inFlight: 1, maxInFlight: 1 },
        ],
        0,
      ),
    ).toThrow(RangeError);
  });

  it('moves the lightest and the heaviest tenant on by a whole, positive stride', () => {
    expect(strideOf(1)).toBe(STRIDE);
    expect(strideOf(100)).toBe(STRIDE / 100);
    expect(strideOf(3)).toBe(333_333);
  });
});

describe('rankOf', () => {
  const now = new Date('2026-05-01T10:00:00.000Z');
  const earlier = (ms: number) => new Date(now.getTime() - ms);
  const MINUTE = 60_000;

  it('puts interactive submitted now ahead of standard submitted less than 10 minutes before it', () => {
    expect(rankOf('interactive', now) < rankOf('standard', earlier(10 * MINUTE - 1))).toBe(true);
    expect(rankOf('interactive', now) < rankOf('standard', now)).toBe(true);
  });

  it('ties interactive submitted now with standard submitted exactly 10 minutes before, for the job id to break', () => {
    expect(rankOf('interactive', now)).toBe(rankOf('standard', earlier(10 * MINUTE)));
    expect(
      waitingSortKey('interactive', now, 'job_b') > waitingSortKey('standard', earlier(10 * MINUTE), 'job_a'),
    ).toBe(true);
  });

  it('puts standard submitted more than 10 minutes before ahead of interactive submitted now', () => {
    expect(rankOf('standard', earlier(10 * MINUTE + 1)) < rankOf('interactive', now)).toBe(true);
  });

  it('puts batch that waited 61 minutes ahead of interactive submitted now, and one that waited 59 behind', () => {
    expect(rankOf('batch', earlier(61 * MINUTE)) < rankOf('interactive', now)).toBe(true);
    expect(rankOf('batch', earlier(59 * MINUTE)) > rankOf('interactive', now)).toBe(true);
  });

  it('lists priorities from the least delayed', () => {
    const delays = JOB_PRIORITIES.map((priority) => RANK_DELAY_MS[priority]);
    expect(delays).toEqual([0, 10 * MINUTE, 60 * MINUTE]);
  });

  it('reads a creation time given as an ISO string as the same instant', () => {
    expect(rankOf('batch', now.toISOString())).toBe(rankOf('batch', now));
    expect(rankOf('interactive', now)).toBe(String(now.getTime()).padStart(16, '0'));
  });

  it('sorts as strings the way the instants sort as numbers, across digit counts and up to the year 2300', () => {
    const instants = [
      0,
      9,
      10,
      999_999_999_999,
      1_000_000_000_000,
      now.getTime(),
      9_999_999_999_999,
      10_000_000_000_000,
      Date.UTC(2300, 0, 1),
      8.64e15,
    ];
    const jobs = instants.flatMap((ms) => JOB_PRIORITIES.map((priority) => ({ priority, ms })));
    const byString = [...jobs].sort((a, b) =>
      compare(rankOf(a.priority, new Date(a.ms)), rankOf(b.priority, new Date(b.ms))),
    );
    const byNumber = [...jobs].sort(
      (a, b) => a.ms + RANK_DELAY_MS[a.priority] - (b.ms + RANK_DELAY_MS[b.priority]),
    );
    expect(byString).toEqual(byNumber);
  });

  const job = fc.record({
    priority: fc.constantFrom(...JOB_PRIORITIES),
    createdAt: fc.date({ min: new Date(0), max: new Date(Date.UTC(2300, 0, 1)), noInvalidDate: true }),
  });
  const rank = (j: { priority: JobPriority; createdAt: Date }) => rankOf(j.priority, j.createdAt);
  const delayed = (j: { priority: JobPriority; createdAt: Date }) =>
    j.createdAt.getTime() + RANK_DELAY_MS[j.priority];

  it('orders any two jobs as their delayed instants', () => {
    fc.assert(
      fc.property(job, job, (a, b) => {
        expect(Math.sign(compare(rank(a), rank(b)))).toBe(Math.sign(delayed(a) - delayed(b)));
      }),
    );
  });

  it('never lets a job be passed by one submitted more than its delay after it, whatever its priority', () => {
    fc.assert(
      fc.property(
        job,
        fc.constantFrom(...JOB_PRIORITIES),
        fc.integer({ min: 1, max: 10 * 24 * 60 * MINUTE }),
        (first, priority, after) => {
          const later = {
            priority,
            createdAt: new Date(first.createdAt.getTime() + RANK_DELAY_MS[first.priority] + after),
          };
          expect(rank(first) < rank(later)).toBe(true);
        },
      ),
    );
  });

  it('refuses a creation time that is not a date or is before 1970', () => {
    expect(() => rankOf('standard', 'yesterday')).toThrow(
      new RangeError("A job's rank needs a creation time from 1970 on; got yesterday."),
    );
    expect(() => rankOf('standard', new Date(Number.NaN))).toThrow(RangeError);
    expect(() => rankOf('standard', new Date(-1))).toThrow(RangeError);
  });
});

const compare = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);
