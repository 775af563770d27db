import {
  handOffCalls,
  ledgerTimes,
  loggedPathCalls,
  type PathCall,
  sequentialChain,
  slotGapFigures,
  slotGaps,
  transitionCalls,
} from '../../bench/support/hand-off';

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

describe('the calls of one hand-off', () => {
  const call = (name: string, start: number, end: number, job?: string): PathCall => ({
    kind: 'request',
    name,
    start,
    end,
    ...(job ? { job } : {}),
  });

  it("gives each request its invocation's job, and a workflow step's invocation its job", () => {
    const calls = loggedPathCalls([
      { kind: 'invocation', name: 'workflow', detail: 'finalize job_a', start: 10, end: 40, id: 1 },
      { kind: 'request', name: 'dynamodb:UpdateItem', start: 12, end: 15, invocation: 1 },
      { kind: 'invocation', name: 'api', detail: 'POST /v1/provider/events', start: 5, end: 9, id: 2 },
      { kind: 'request', name: 'states:SendTaskSuccess', start: 6, end: 8, invocation: 2 },
      { kind: 'request', name: 'http:POST /v1/provider/events', start: 4 }, // no end: counted done at its start
    ]);
    expect(calls).toEqual([
      { kind: 'invocation', name: 'workflow', detail: 'finalize job_a', start: 10, end: 10, job: 'job_a' },
      {
        kind: 'request',
        name: 'dynamodb:UpdateItem',
        detail: 'in workflow finalize job_a',
        start: 12,
        end: 15,
        job: 'job_a',
      },
      { kind: 'invocation', name: 'api', detail: 'POST /v1/provider/events', start: 5, end: 5 },
      {
        kind: 'request',
        name: 'states:SendTaskSuccess',
        detail: 'in api POST /v1/provider/events',
        start: 6,
        end: 8,
      },
      { kind: 'request', name: 'http:POST /v1/provider/events', start: 4, end: 4 },
    ]);
  });

  it("takes an execution's transitions from the states it entered", () => {
    expect(
      transitionCalls('job_b', [
        { type: 'ExecutionStarted', at: 1 },
        { type: 'TaskStateEntered', at: 2, state: 'Prepare' },
        { type: 'TaskScheduled', at: 3 },
        { type: 'ChoiceStateEntered', at: 4, state: 'Submitted?' },
      ]),
    ).toEqual([
      { kind: 'transition', name: 'Prepare', start: 2, end: 2, job: 'job_b' },
      { kind: 'transition', name: 'Submitted?', start: 4, end: 4, job: 'job_b' },
    ]);
  });

  it("keeps the calls in the window, less the finished job's that ran beside the next job", () => {
    const calls = [
      call('before the finish', 90, 95, 'job_a'),
      call('release', 110, 120, 'job_a'),
      call('webhook', 105, 107),
      call('notify, beside the next job', 160, 170, 'job_a'),
      call('prepare', 150, 155, 'job_b'),
      call('submit', 180, 200, 'job_b'),
      call('after the acceptance', 230, 240, 'job_b'),
      call('a long poll still open at the acceptance', 120, 1120),
    ];
    expect(
      handOffCalls(calls, { from: 100, to: 200, nextJob: 'job_b', nextStartedAt: 140 }).map((c) => c.name),
    ).toEqual(['webhook', 'release', 'prepare', 'submit']);
    expect(handOffCalls(calls, { from: 100, to: 200, nextJob: 'job_b' }).map((c) => c.name)).toEqual([
      'webhook',
      'release',
      'prepare',
      'notify, beside the next job',
      'submit',
    ]);
  });

  it('counts the calls that happened one after another, once each, not those that overlapped', () => {
    const chain = sequentialChain([
      call('a', 0, 10),
      call('b, beside a', 2, 8),
      call('c', 10, 20),
      { kind: 'invocation', name: 'd', start: 21, end: 21 },
      call('e, inside d', 22, 30),
      call('f, beside e', 25, 40),
      { kind: 'transition', name: 'g', start: 30, end: 30 },
    ]);
    expect(chain.map((c) => c.name)).toEqual(['b, beside a', 'c', 'd', 'e, inside d', 'g']);
    expect(sequentialChain([])).toEqual([]);
  });
});
