import fc from 'fast-check';

/**
 * What a world with resumes adds to a workload's actions: a step that dies
 * (so its job fails at a state a resume goes back to), and a client resuming
 * a job: at a moment the scheduler picks, or once it sees the job failed;
 * maybe days later, past Step Functions' redrive window or its retention of
 * closed executions (so the resume finds its execution unredrivable or
 * gone); maybe followed, a minute later, by the reconciler's next pass (the
 * one that converges a resume whose redrive did not run).
 */
export type ResumeAction =
  | { readonly kind: 'failStep'; readonly job: number; readonly step: ResumableStep }
  | {
      readonly kind: 'resume';
      readonly job: number;
      readonly whenFailed: boolean;
      readonly daysLater: ResumeDelayDays;
      readonly reconciled: boolean;
    };

/** The states a resume goes back to (`resume-at` of the workflow). */
export type ResumableStep = 'prepare' | 'submit' | 'await' | 'finalize';

/** At once, past the 14 days a failed execution can be redriven, or past the 90 days it is kept at all. */
export type ResumeDelayDays = 0 | 15 | 91;

const job = fc.nat({ max: 4 });

export const resumeActions: {
  readonly [K in ResumeAction['kind']]: fc.Arbitrary<Extract<ResumeAction, { kind: K }>>;
} = {
  failStep: fc
    .record({ job, step: fc.constantFrom<ResumableStep>('prepare', 'submit', 'await', 'finalize') })
    .map((a) => ({ kind: 'failStep' as const, ...a })),
  resume: fc
    .record({
      job,
      whenFailed: fc.boolean(),
      daysLater: fc.constantFrom<ResumeDelayDays>(0, 0, 15, 91),
      reconciled: fc.boolean(),
    })
    .map((a) => ({ kind: 'resume' as const, ...a })),
};

export const RESUME_ACTION_KINDS = Object.keys(resumeActions) as ResumeAction['kind'][];
