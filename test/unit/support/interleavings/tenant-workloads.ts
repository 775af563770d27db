import fc from 'fast-check';
import type { TenantSetup } from './caps';
import { RESUME_ACTION_KINDS, resumeActions } from './resume-actions';
import { ACTION_KINDS, type Action, action, type Timed, type Workload } from './workloads';

/**
 * Workloads of several tenants sharing one provider: each with a weight and
 * maybe a cap of its own below the provider's limit, their jobs failing at
 * states a resume goes back to and resumed by their clients, besides every
 * fault of issue 12's workloads.
 */

/** Every kind of action, issue 12's and the resumes'. */
export const TENANT_ACTION_KINDS: readonly Action['kind'][] = [...ACTION_KINDS, ...RESUME_ACTION_KINDS];

/** The kinds that make and resume failed jobs, with what settles them: where resumes meet caps most often. */
export const RESUME_FOCUS: readonly Action['kind'][] = [
  'failStep',
  'resume',
  'reconcile',
  'tick',
  'webhook',
  'redeliver',
  'providerFault',
  'cancel',
];

const tenant = (name: string): fc.Arbitrary<TenantSetup> =>
  fc
    .record({
      weight: fc.integer({ min: 1, max: 3 }),
      maxInFlight: fc.option(fc.integer({ min: 1, max: 2 }), { nil: undefined, freq: 2 }),
    })
    .map(({ weight, maxInFlight }) => ({
      tenant: name,
      weight,
      ...(maxInFlight === undefined ? {} : { maxInFlight }),
    }));

export const tenantsWorkload = (
  maxActions: number,
  kinds: readonly Action['kind'][] = TENANT_ACTION_KINDS,
): fc.Arbitrary<Workload> =>
  fc.record({
    world: fc.record({
      jobs: fc.integer({ min: 3, max: 5 }),
      maxInFlight: fc.integer({ min: 1, max: 3 }),
      deduplicates: fc.boolean(),
      deliveries: fc.integer({ min: 4, max: 12 }),
      tenants: fc.tuple(tenant('acme'), tenant('globex')),
    }),
    actions: fc
      .array(
        fc.oneof(
          fc.record({ after: fc.nat({ max: 60 }), action: action(kinds) }).map((timed) => [timed]),
          // A step of a job dies early and its client resumes the job once it sees it failed: the resume
          // goes back to a step that needs the slot, which went on to the next job meanwhile.
          fc
            .record({
              after: fc.nat({ max: 8 }),
              failed: resumeActions.failStep,
              resume: resumeActions.resume,
            })
            .map(({ after, failed, resume }): Timed[] => [
              { after, action: failed },
              { after, action: { ...resume, job: failed.job, whenFailed: true } },
            ]),
        ),
        { maxLength: Math.ceil(maxActions / 2) },
      )
      .map((groups) => groups.flat().slice(0, maxActions)),
  });
