import fc from 'fast-check';
import { type ResumeAction, resumeActions } from './resume-actions';
import type { WorldOptions } from './world';

/**
 * What happens to Longhaul during one run, besides the submissions of its
 * jobs: every action starts at a moment the scheduler picks. `job` is an index
 * into the run's jobs (taken modulo their number); `crashAfter` stops the
 * handler just before that many port calls.
 */
export type Action =
  | { readonly kind: 'submit'; readonly job: number }
  | { readonly kind: 'redeliver'; readonly job: number; readonly crashAfter?: number }
  | {
      readonly kind: 'webhook';
      readonly job: number;
      readonly run: 'latest' | 'first';
      readonly outcome: 'succeeded' | 'failed';
      readonly times: number;
    }
  | {
      readonly kind: 'progress';
      readonly job: number;
      readonly run: 'latest' | 'first';
      readonly progress: number;
    }
  | { readonly kind: 'cancel'; readonly job: number; readonly crashAfter?: number }
  | { readonly kind: 'resolve'; readonly job: number; readonly outcome: 'succeeded' | 'failed' | 'requeue' }
  | { readonly kind: 'reconcile'; readonly crashAfter?: number }
  | { readonly kind: 'stepRetry'; readonly job: number; readonly step: RetriedStep }
  | { readonly kind: 'throttle'; readonly job: number; readonly step: RetriedStep; readonly times: number }
  | { readonly kind: 'crash'; readonly job: number; readonly closeExecution: boolean }
  | { readonly kind: 'missHeartbeat'; readonly job: number }
  | {
      readonly kind: 'portFault';
      readonly port: string;
      readonly method: string;
      readonly when: 'before' | 'after';
    }
  | { readonly kind: 'providerFault'; readonly fault: 'unavailable' | 'ambiguous' | 'cancel' }
  | { readonly kind: 'expire'; readonly job: number }
  | { readonly kind: 'tick'; readonly ms: number }
  | ResumeAction;

export type RetriedStep =
  | 'prepare'
  | 'submit'
  | 'await'
  | 'release'
  | 'finalize'
  | 'fail'
  | 'settle'
  | 'review';

/** An action and how many scheduling points pass before it starts (so some come late). */
export interface Timed {
  readonly after: number;
  readonly action: Action;
}

export interface Workload {
  readonly world: WorldOptions;
  readonly actions: readonly Timed[];
}

const job = fc.nat({ max: 2 });
const crashAfter = fc.option(fc.nat({ max: 6 }), { nil: undefined });
const step = fc.constantFrom<RetriedStep>(
  'prepare',
  'submit',
  'await',
  'release',
  'finalize',
  'fail',
  'settle',
  'review',
);

/** Port calls worth failing: bookkeeping writes around the provider, resumes, slot moves, the queue. */
const PORT_FAULTS: readonly (readonly [string, string])[] = [
  ['store', 'recordTaskToken'],
  ['store', 'settleSubmitIntent'],
  ['store', 'transition'],
  ['store', 'recordProviderOutcome'],
  ['store', 'get'],
  ['store', 'startWithSlot'],
  ['timeline', 'record'],
  ['workflow', 'completeTask'],
  ['workflow', 'failTask'],
  ['workflow', 'start'],
  ['slots', 'release'],
  ['slots', 'acquire'],
  ['queue', 'enqueue'],
  ['outputs', 'putOutput'],
];

const maybe = <T extends object>(record: T) =>
  Object.fromEntries(Object.entries(record).filter(([, value]) => value !== undefined)) as T;

/** The actions of issue 12's workloads; a world with resumes adds its own (resume-actions.ts). */
const actions: {
  readonly [K in Exclude<Action['kind'], ResumeAction['kind']>]: fc.Arbitrary<Extract<Action, { kind: K }>>;
} = {
  submit: job.map((j) => ({ kind: 'submit' as const, job: j })),
  redeliver: fc.record({ job, crashAfter }).map((a) => maybe({ kind: 'redeliver' as const, ...a })),
  webhook: fc
    .record({
      job,
      run: fc.constantFrom('latest' as const, 'first' as const),
      outcome: fc.constantFrom('succeeded' as const, 'failed' as const),
      times: fc.integer({ min: 1, max: 2 }),
    })
    .map((a) => ({ kind: 'webhook' as const, ...a })),
  progress: fc
    .record({
      job,
      run: fc.constantFrom('latest' as const, 'first' as const),
      progress: fc.integer({ min: 1, max: 99 }),
    })
    .map((a) => ({ kind: 'progress' as const, ...a })),
  cancel: fc.record({ job, crashAfter }).map((a) => maybe({ kind: 'cancel' as const, ...a })),
  resolve: fc
    .record({ job, outcome: fc.constantFrom('succeeded' as const, 'failed' as const, 'requeue' as const) })
    .map((a) => ({ kind: 'resolve' as const, ...a })),
  reconcile: fc.record({ crashAfter }).map((a) => maybe({ kind: 'reconcile' as const, ...a })),
  stepRetry: fc.record({ job, step }).map((a) => ({ kind: 'stepRetry' as const, ...a })),
  throttle: fc
    .record({ job, step, times: fc.integer({ min: 1, max: 9 }) })
    .map((a) => ({ kind: 'throttle' as const, ...a })),
  crash: fc.record({ job, closeExecution: fc.boolean() }).map((a) => ({ kind: 'crash' as const, ...a })),
  missHeartbeat: job.map((j) => ({ kind: 'missHeartbeat' as const, job: j })),
  portFault: fc
    .record({
      target: fc.constantFrom(...PORT_FAULTS),
      when: fc.constantFrom('before' as const, 'after' as const),
    })
    .map(({ target: [port, method], when }) => ({ kind: 'portFault' as const, port, method, when })),
  providerFault: fc
    .constantFrom('unavailable' as const, 'ambiguous' as const, 'cancel' as const)
    .map((fault) => ({ kind: 'providerFault' as const, fault })),
  expire: job.map((j) => ({ kind: 'expire' as const, job: j })),
  tick: fc.constantFrom(61_000, 660_000).map((ms) => ({ kind: 'tick' as const, ms })),
};

export const ACTION_KINDS = Object.keys(actions) as Action['kind'][];

const everyAction = { ...actions, ...resumeActions };

/** An action of one of `kinds` (issue 12's by default: a focus narrows the search to some paths). */
export const action = (kinds: readonly Action['kind'][] = ACTION_KINDS): fc.Arbitrary<Action> =>
  fc.oneof(...kinds.map((kind) => everyAction[kind] as fc.Arbitrary<Action>));

export const workload = (maxActions: number, kinds?: readonly Action['kind'][]): fc.Arbitrary<Workload> =>
  fc.record({
    world: fc.record({
      jobs: fc.integer({ min: 1, max: 3 }),
      maxInFlight: fc.integer({ min: 1, max: 2 }),
      deduplicates: fc.boolean(),
      deliveries: fc.integer({ min: 4, max: 12 }),
    }),
    actions: fc.array(fc.record({ after: fc.nat({ max: 60 }), action: action(kinds) }), {
      maxLength: maxActions,
    }),
  });
