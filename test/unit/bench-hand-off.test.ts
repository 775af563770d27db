import { ledgerTimes, slotGapFigures, slotGaps } from '../../bench/support/hand-off';

/** The bench's slot gaps: from a job's end at the provider to the acceptance of the job that took its slot. */

describe('slot gaps', () => {
  it('pairs each acceptance past the limit with the finish that freed its slot, in time order', () => {
    // Limit 2: jobs 1 and 2 start at once; 3 takes the slot 1 frees, 4 the slot 2 frees, 5 the slot 3 frees.
    const gaps = slotGaps({
      accepted: [1000, 0, 1150, 0, 2400], // given out of order
      finished: [1300, 1000, 900, 2200],
      queued: [0, 0, 0, 0, 0],
      limit: 2,
    });
    expect(gaps).toEqual([1000 - 900, 1150 - 1000, 2400 - 1300]);
  });

  it('leaves out a slot that freed while no job was waiting', () => {
    // Limit 1: job 2 reaches the service only at 1500, after job 1 ended at 1000; job 3 waits behind job 2.
    const gaps = slotGaps({
      accepted: [0, 1600, 2700],
      finished: [1000, 2600],
      queued: [0, 1500, 1550],
      limit: 1,
    });
    expect(gaps).toEqual([2700 - 2600]);
  });

  it('stops at the last finish: an acceptance with no finish before it freed no slot yet', () => {
    expect(slotGaps({ accepted: [0, 10, 20], finished: [5], queued: [0, 0, 0], limit: 1 })).toEqual([5]);
    expect(slotGaps({ accepted: [0], finished: [], queued: [0], limit: 1 })).toEqual([]);
  });

  it('refuses a limit that is not a whole number above 0', () => {
    expect(() => slotGaps({ accepted: [], finished: [], queued: [], limit: 0 })).toThrow(
      'limit must be a whole number above 0, got 0',
    );
  });

  it('gives p50, p99 and max over the gaps, and nothing when no slot was handed on', () => {
    const accepted = Array.from({ length: 101 }, (_, i) => i * 1000 + (i === 100 ? 900 : i > 0 ? 100 : 0));
    const finished = Array.from({ length: 100 }, (_, i) => (i + 1) * 1000);
    const queued = accepted.map(() => 0);
    expect(slotGapFigures({ accepted, finished, queued, limit: 1 })).toEqual({
      gaps: 100,
      p50Ms: 100,
      p99Ms: 100,
      maxMs: 900,
    });
    expect(slotGapFigures({ accepted: [0], finished: [5], queued: [0], limit: 1 })).toBeUndefined();
  });

  it("reads the simulator's ledger, leaving out jobs that have not finished", () => {
    expect(
      ledgerTimes([
        { acceptedAt: '2026-01-01T00:00:00.000Z', finishedAt: '2026-01-01T00:00:01.250Z' },
        { acceptedAt: '2026-01-01T00:00:00.500Z' },
      ]),
    ).toEqual({
      accepted: [Date.parse('2026-01-01T00:00:00.000Z'), Date.parse('2026-01-01T00:00:00.500Z')],
      finished: [Date.parse('2026-01-01T00:00:01.250Z')],
    });
  });
});
