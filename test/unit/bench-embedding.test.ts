import {
  chargedCalls,
  embeddingShare,
  ledgerIntervals,
  limitUse,
  runGaps,
} from '../../bench/support/embedding';
import { gapFigures } from '../../bench/support/hand-off';
import type { LoggedCall } from '../../bench/support/stack';
import { passageRuns } from '../../lambdas/domain/embedding';

/** The embedding section's arithmetic: the limit's use from the ledger's calls, the runs, the calls charged to them. */

describe('the use of a limit', () => {
  test('integrates the calls in flight over the window from the first acceptance to the last answer', () => {
    // Limit 2 over 0..1000: [0,400] and [0,500] and [500,1000] busy 1400 slot-ms of 2000.
    const use = limitUse(
      [
        { start: 500, end: 1000 },
        { start: 0, end: 400 },
        { start: 0, end: 500 },
      ],
      2,
    );

    expect(use).toEqual({ calls: 3, windowMs: 1000, busySlotMs: 1400, maxInFlight: 2, utilization: 0.7 });
  });

  test('counts a call that starts as another ends as its successor, not beside it', () => {
    const use = limitUse(
      [
        { start: 0, end: 100 },
        { start: 100, end: 200 },
        { start: 200, end: 300 },
      ],
      1,
    );

    expect(use.maxInFlight).toBe(1);
    expect(use.utilization).toBe(1);
  });

  test('shows more calls in flight than the limit as a use above 1, not hidden', () => {
    const use = limitUse(
      [
        { start: 0, end: 100 },
        { start: 0, end: 100 },
        { start: 50, end: 100 },
      ],
      2,
    );

    expect(use.maxInFlight).toBe(3);
    expect(use.utilization).toBeCloseTo(250 / 200, 10);
  });

  test('refuses no calls, a call that ends before it starts, and a limit that is not a whole number above 0', () => {
    expect(() => limitUse([], 1)).toThrow('no calls to measure');
    expect(() => limitUse([{ start: 10, end: 5 }], 1)).toThrow(
      'a call must end at or after its start, got 10..5',
    );
    expect(() => limitUse([{ start: 0, end: 1 }], 0)).toThrow('limit must be a whole number above 0, got 0');
    expect(() => limitUse([{ start: 0, end: 1 }], 1.5)).toThrow(
      'limit must be a whole number above 0, got 1.5',
    );
  });

  test("reads the ledger's times, and refuses a call still unanswered", () => {
    expect(
      ledgerIntervals([
        { id: 'a', acceptedAt: '2026-12-06T00:00:00.000Z', finishedAt: '2026-12-06T00:00:00.250Z' },
      ]),
    ).toEqual([
      { start: Date.parse('2026-12-06T00:00:00.000Z'), end: Date.parse('2026-12-06T00:00:00.250Z') },
    ]);
    expect(() => ledgerIntervals([{ id: 'b', acceptedAt: '2026-12-06T00:00:00.000Z' }])).toThrow(
      'call b has not been answered',
    );
  });
});

describe('runs of passages', () => {
  test('cuts a recording into runs of the size from the first passage, the last holding what is left', () => {
    expect(passageRuns(5, 2)).toEqual([
      { from: 0, count: 2 },
      { from: 2, count: 2 },
      { from: 4, count: 1 },
    ]);
    expect(passageRuns(4, 2)).toEqual([
      { from: 0, count: 2 },
      { from: 2, count: 2 },
    ]);
    expect(passageRuns(0, 2)).toEqual([]);
    expect(() => passageRuns(3, 0)).toThrow('perRun must be a whole number above 0, got 0');
  });

  test("measures the gaps within runs and a freed slot's wait for the next run, while runs waited", () => {
    // Limit 1, all three runs queued at 0: run 1 [0,100],[110,200]; run 2 [260,300],[305,400]; run 3 [410,500].
    const gaps = runGaps(
      [
        {
          queuedAt: 0,
          calls: [
            { start: 110, end: 200 },
            { start: 0, end: 100 },
          ],
        },
        {
          queuedAt: 0,
          calls: [
            { start: 260, end: 300 },
            { start: 305, end: 400 },
          ],
        },
        { queuedAt: 0, calls: [{ start: 410, end: 500 }] },
      ],
      1,
    );

    expect(gaps).toEqual({ withinRuns: [10, 5], betweenRuns: [60, 10] });
    expect(() => runGaps([{ queuedAt: 0, calls: [] }], 1)).toThrow('a run has no calls');
  });

  test('gives count, p50, p99 and max of gaps, and nothing for none', () => {
    expect(gapFigures([30, 10, 20])).toEqual({ gaps: 3, p50Ms: 20, p99Ms: 30, maxMs: 30 });
    expect(gapFigures([])).toBeUndefined();
  });
});

describe('the calls charged to the embedding', () => {
  const invocation = (id: number, name: string, detail: string, start: number, end: number): LoggedCall => ({
    kind: 'invocation',
    id,
    name,
    detail,
    start,
    end,
  });
  const request = (
    invocationId: number | undefined,
    name: string,
    extra: Partial<LoggedCall> = {},
  ): LoggedCall => ({
    kind: 'request',
    name,
    start: 0,
    end: 1,
    ...(invocationId === undefined ? {} : { invocation: invocationId }),
    ...extra,
  });

  test("charges a run's steps wholly, its parent's embedding steps wholly, and a batch of messages by the runs' share", () => {
    const share = embeddingShare(new Set(['job_run1', 'job_run2']), new Set(['job_parent']));

    expect(share(invocation(1, 'workflow', 'submit job_run1', 0, 1))).toBe(1);
    expect(share(invocation(2, 'workflow', 'embed job_parent', 0, 1))).toBe(1);
    expect(share(invocation(3, 'workflow', 'transcode job_parent', 0, 1))).toBe(0);
    expect(share(invocation(4, 'workflow', 'submit job_other', 0, 1))).toBe(0);
    expect(
      share(invocation(5, 'dispatch', '4 message(s) for job_run1 job_other job_run2 job_parent', 0, 1)),
    ).toBe(0.5);
    expect(share(invocation(6, 'dispatch', '1 message(s)', 0, 1))).toBe(0);
    expect(share(invocation(7, 'api', 'POST /v1/jobs', 0, 1))).toBe(0);
  });

  test('adds up invocations, billed time and requests by their share, and leaves out requests made outside them', () => {
    const log: LoggedCall[] = [
      invocation(1, 'workflow', 'w', 1000, 1099.2), // 100 ms billed
      invocation(2, 'dispatch', 'd', 2000, 2000.1), // 1 ms billed, half charged
      invocation(3, 'api', 'a', 0, 50), // not charged
      request(1, 'dynamodb:GetItem', { reads: 1, writes: 0, readUnits: 1, writeUnits: 0 }),
      request(1, 'dynamodb:UpdateItem', { reads: 0, writes: 1, readUnits: 0, writeUnits: 2 }),
      request(2, 'dynamodb:TransactWriteItems', { reads: 0, writes: 2, readUnits: 0, writeUnits: 4 }),
      request(2, 'sqs:SendMessage'),
      request(3, 'dynamodb:PutItem', { reads: 0, writes: 1, readUnits: 0, writeUnits: 1 }),
      request(undefined, 'sqs:ReceiveMessage'),
    ];
    const shares: Record<string, number> = { w: 1, d: 0.5, a: 0 };

    const charged = chargedCalls(
      log,
      (call) => shares[call.detail ?? ''] ?? 0,
      (fn) => (fn === 'workflow' ? 1024 : 512),
    );

    expect(charged.invocations).toEqual({ workflow: 1, dispatch: 0.5 });
    expect(charged.gbSeconds).toBeCloseTo(1 * 0.1 + 0.5 * 0.5 * 0.001, 12);
    expect(charged.requests).toEqual({
      'dynamodb:GetItem': 1,
      'dynamodb:UpdateItem': 1,
      'dynamodb:TransactWriteItems': 0.5,
      'sqs:SendMessage': 0.5,
    });
    expect(charged.dynamodb).toEqual({ reads: 1, writes: 2, readUnits: 1, writeUnits: 4 });
  });

  test('refuses to bill an invocation that has not ended', () => {
    const running: LoggedCall = { kind: 'invocation', id: 9, name: 'workflow', detail: 'x', start: 0 };

    expect(() =>
      chargedCalls(
        [running],
        () => 1,
        () => 128,
      ),
    ).toThrow('invocation 9 of workflow has not ended');
  });
});
