import type { Job, JobStatus } from '../../lambdas/domain/job';

/** A job item as the intake writes it, for sections that load the table directly. */
export function benchJob(id: string, status: JobStatus, at: Date): Job {
  const stamp = at.toISOString();
  const terminal = ['succeeded', 'failed', 'canceled'].includes(status);
  return {
    id,
    tenantId: 'bench',
    type: 'image.generate',
    status,
    progress: terminal ? 100 : 0,
    input: { prompt: 'bench' },
    result: null,
    error: null,
    attempts: terminal ? 1 : 0,
    idempotencyKey: `key-${id}`,
    fingerprint: 'f'.repeat(64),
    createdAt: stamp,
    updatedAt: stamp,
    statusAt: stamp,
    enqueuedAt: stamp,
    ...(terminal ? { startedAt: stamp, finishedAt: stamp } : {}),
  };
}
