import { copyFile, mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { loadSettings } from '../../config/settings';
import { FfmpegMedia } from '../../lambdas/adapters/ffmpeg-media';
import { publishPlanOf } from '../../lambdas/compute/deps';
import {
  COMPUTE_STEPS,
  type ComputeDeps,
  type ComputeStep,
  runComputeStep,
} from '../../lambdas/domain/compute';
import { type Job, newJob } from '../../lambdas/domain/job';
import type { OutputStore } from '../../lambdas/domain/ports';

/**
 * One compute step of audio.publish in a process of its own, as the compute
 * function or the Fargate task runs it: `runComputeStep` with the ffmpeg
 * media tools and the plan the settings give (`publishPlanOf`), over a job
 * held in memory and an output bucket that is a directory. Only the ports
 * differ from AWS: the input is copied where Lambda would download it, and
 * outputs are written to disk where Lambda would put them to S3.
 *
 * `tsx bench/support/compute-step.ts <step> <audio file> <work dir>`, with
 * the settings (TRANSCRIBE_CHUNK_SECONDS, …) in the environment; prints
 * `{stepMs, result}` as one line of JSON: how long the step took once the
 * process had started (what a warm invocation is billed), and its answer. The scratch directory (the function's
 * /tmp) and the outputs are both under the work directory.
 */

/** Outputs as files under `root`, keyed by their object key. */
class DirectoryOutputs implements OutputStore {
  constructor(private readonly root: string) {}

  async putOutput(key: string, body: Uint8Array | string): Promise<void> {
    const file = this.fileOf(key);
    await mkdir(path.dirname(file), { recursive: true });
    await writeFile(file, body);
  }

  async outputUrl(key: string): Promise<string> {
    return pathToFileURL(this.fileOf(key)).toString();
  }

  async getOutput(key: string): Promise<Uint8Array | undefined> {
    try {
      return await readFile(this.fileOf(key));
    } catch {
      return undefined;
    }
  }

  async deleteOutputs(prefix: string): Promise<number> {
    await rm(this.fileOf(prefix), { recursive: true, force: true });
    return 0;
  }

  private fileOf(key: string): string {
    return path.join(this.root, ...key.split('/'));
  }
}

async function main(): Promise<void> {
  const [step, audioFile, workDir] = process.argv.slice(2) as [ComputeStep, string, string];
  if (!COMPUTE_STEPS.includes(step) || !audioFile || !workDir) {
    throw new Error(`usage: compute-step.ts <${COMPUTE_STEPS.join('|')}> <audio file> <work dir>`);
  }
  const settings = loadSettings(process.env);
  const job = newJob(
    {
      id: 'job_bench00000000000000000000',
      tenantId: 'bench',
      // The type joins the registry with its workflow; the step reads only the input.
      type: 'audio.publish' as Job['type'],
      input: { audioUrl: pathToFileURL(audioFile).toString() },
      idempotencyKey: 'bench-media',
      fingerprint: 'bench-media',
    },
    new Date(),
  ) as Job;
  const scratchRoot = path.join(workDir, 'tmp');
  await mkdir(scratchRoot, { recursive: true });
  const deps: ComputeDeps = {
    store: { get: async (id) => (id === job.id ? job : undefined) },
    // The step names itself in the job's timeline; nobody reads it here.
    timeline: { record: async () => {} },
    now: () => new Date(),
    outputs: new DirectoryOutputs(path.join(workDir, 'outputs')),
    inputs: {
      downloadUrl: async () => {
        throw new Error('the bench names its audio by URL');
      },
    },
    media: new FfmpegMedia({ processTimeoutMs: settings.computeTimeoutSeconds * 1000 }),
    download: (url, file) => copyFile(new URL(url), file),
    scratchRoot,
    plan: publishPlanOf(settings),
    inputUrlTtlSeconds: settings.uploadUrlTtlSeconds,
  };
  const started = performance.now();
  const result = await runComputeStep(deps, { step, jobId: job.id });
  const stepMs = performance.now() - started;
  process.stdout.write(`${JSON.stringify({ stepMs, result })}\n`);
}

main().catch((error: unknown) => {
  process.stderr.write(`${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  process.exitCode = 1;
});
