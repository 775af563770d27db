import { computeTaskEnv } from '../../config/layout';
import { loadSettings } from '../../config/settings';
import { COMPUTE_STEPS, type ComputeStep, runComputeStep } from '../domain/compute';
import { computeDeps } from './deps';

/**
 * The Fargate task's entrypoint (and the local stack's child process for
 * both paths): one compute step, named by `computeTaskEnv` (config/layout.ts),
 * which the `ecs:runTask.sync` state sets through container overrides. The
 * step records its outcome under the job, an error included, and the state
 * after the task collects it and raises a recorded error again: an ECS
 * task's exit code is not the step's error. So the task exits 0 once the
 * step has run; if even recording failed, the collecting state finds no
 * outcome and the step is retried.
 */
async function main(): Promise<number> {
  const step = process.env[computeTaskEnv.step] as ComputeStep;
  const jobId = process.env[computeTaskEnv.jobId] ?? '';
  if (!COMPUTE_STEPS.includes(step) || jobId === '') {
    console.error(
      `${computeTaskEnv.step} must be one of ${COMPUTE_STEPS.join(', ')} and ${computeTaskEnv.jobId} a job id.`,
    );
    return 2;
  }
  const deps = computeDeps(loadSettings(process.env));
  try {
    await runComputeStep(deps, { step, jobId });
    console.log(JSON.stringify({ level: 'INFO', message: 'compute step done', step, jobId }));
  } catch (error) {
    // Recorded by runComputeStep before it threw, unless recording is what failed.
    console.error(
      JSON.stringify({ level: 'ERROR', message: 'compute step failed', step, jobId, error: String(error) }),
    );
  }
  return 0;
}

main().then(
  (code) => {
    process.exitCode = code;
  },
  (error: unknown) => {
    console.error(error);
    process.exitCode = 1;
  },
);
