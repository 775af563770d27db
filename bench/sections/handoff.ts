import { pollUntil } from '../../local/harness/local-stack';
import { fmt, print, sleep } from '../support/common';
import {
  handOffCalls,
  loggedPathCalls,
  type PathCall,
  sequentialChain,
  transitionCalls,
} from '../support/hand-off';
import { startBenchStack } from '../support/stack';

/**
 * One hand-off, call by call: a stack at MAX_IN_FLIGHT=1 with two jobs, the
 * second waiting for the first's slot. Every AWS request, other HTTP call
 * (the provider's webhooks, the submission to it), function invocation and
 * state transition made between the first job's end at the provider and the
 * second job's acceptance there is listed with its time; the count of those
 * that happened one after another is the hand-off's length in calls. The
 * requests and invocations come from the request counter's log, the
 * transitions from the two executions' histories, the two moments from the
 * simulator's ledger.
 */

export interface HandOffFigures {
  readonly jobMs: number;
  /** From the first job's end at the provider to the second job's acceptance there. */
  readonly gapMs: number;
  /** Calls in that window, less the first job's own that ran beside the second's start. */
  readonly calls: { readonly requests: number; readonly invocations: number; readonly transitions: number };
  /** The longest chain of those calls each starting once the one before it was done. */
  readonly sequential: number;
  /** The chain, in order: `kind name`. */
  readonly chain: readonly string[];
}

const JOB_MS = 1000;

export async function handOffSection(): Promise<HandOffFigures> {
  print(`\n## Hand-off: MAX_IN_FLIGHT=1, two ${JOB_MS} ms jobs, the second waiting for the first's slot`);
  const s = await startBenchStack(
    { MAX_IN_FLIGHT: '1', SIM_JOB_MS: String(JOB_MS), SIM_IDEMPOTENT: '1' },
    { logCalls: true },
  );
  try {
    // The handlers compile on their first invocation: one job first, so the measured one does not pay for it.
    await s.settle([(await s.submit('warm-up')).id], 60_000);
    await s.provider('/_sim/reset', {});
    const first = (await s.submit('hand-off first')).id;
    // The second is submitted once the first holds the slot, so it is the one that waits.
    await pollUntil(async () => (await s.ledger()).submissions.length === 1, {
      timeoutMs: 60_000,
      intervalMs: 50,
      description: 'the first job to reach the provider',
    });
    const second = (await s.submit('hand-off second')).id;
    await s.settle([first, second], 60_000);
    await sleep(1000); // the first job's last steps, which run beside the second's
    const ledger = await s.ledger();
    const [held, next] = [...ledger.submissions].sort((a, b) => a.acceptedAt.localeCompare(b.acceptedAt));
    if (!held?.finishedAt || !next) throw new Error('the provider did not run both jobs one after the other');
    const from = Date.parse(held.finishedAt);
    const to = Date.parse(next.acceptedAt);
    const [firstHistory, secondHistory] = await Promise.all([s.history(first), s.history(second)]);
    const nextStartedAt = secondHistory.find((event) => event.type === 'ExecutionStarted')?.at;
    const calls = handOffCalls(
      [
        ...loggedPathCalls(await s.calls()),
        ...transitionCalls(first, firstHistory),
        ...transitionCalls(second, secondHistory),
      ],
      { from, to, nextJob: second, ...(nextStartedAt === undefined ? {} : { nextStartedAt }) },
    );
    const chain = sequentialChain(calls);
    const inChain = new Set(chain);
    const count = (kind: PathCall['kind']) => calls.filter((call) => call.kind === kind).length;
    const figures: HandOffFigures = {
      jobMs: JOB_MS,
      gapMs: Math.round(to - from),
      calls: {
        requests: count('request'),
        invocations: count('invocation'),
        transitions: count('transition'),
      },
      sequential: chain.length,
      chain: chain.map((call) => `${call.kind} ${call.name}`),
    };
    const whose = (call: PathCall) =>
      call.job === first ? 'first job' : call.job === second ? 'second job' : 'no job';
    print(
      `measured: the first job ended at the provider at +0 ms; the second was accepted at +${figures.gapMs} ms; ` +
        `* marks the ${figures.sequential} calls that happened one after another`,
    );
    print('| at | | call | what | duration |');
    print('|---:|---|---|---|---:|');
    for (const call of calls) {
      const took = call.kind === 'request' ? `${fmt(call.end - call.start, 1)} ms` : '';
      print(
        `| +${fmt(call.start - from, 1)} ms | ${inChain.has(call) ? '*' : ''} | ${call.kind} ${call.name} | ` +
          `${[whose(call), call.detail].filter(Boolean).join(', ')} | ${took} |`,
      );
    }
    print(
      `measured: ${calls.length} calls on the hand-off (${figures.calls.requests} requests, ${figures.calls.invocations} invocations, ` +
        `${figures.calls.transitions} state transitions), ${figures.sequential} of them one after another: ${figures.chain.join(' -> ')}`,
    );
    return figures;
  } finally {
    await s.stop();
  }
}
