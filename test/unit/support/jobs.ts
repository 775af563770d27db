import { type Job, newJob } from '../../../lambdas/domain/job';

/**
 * The job a unit test starts from when only some of its fields matter: tenant
 * acme's image.generate of "a cat" under the Idempotency-Key `k1`, as intake
 * creates it at `createdAt`, with the test's own fields over it.
 */
export function sampleJob(createdAt: Date, overrides: Partial<Job> = {}): Job {
  return {
    ...newJob(
      {
        id: 'job_aaaaaaaaaaaaaaaaaaaaaaaaaa',
        tenantId: 'acme',
        type: 'image.generate',
        input: { prompt: 'a cat' },
        idempotencyKey: 'k1',
        fingerprint: 'f1',
      },
      createdAt,
    ),
    ...overrides,
  };
}
