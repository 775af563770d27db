import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import { processTree, TICKS_PER_S } from './cpu';

/**
 * Runs one compute step of audio.publish in a process of its own
 * (./compute-step.ts) and watches its process tree (the step's Node process
 * and the ffmpeg and ffprobe it starts) through `/proc` while it runs: the
 * most resident memory the tree held at once, each program's own peak, and
 * the CPU the tree used. Linux only.
 */

const ROOT = join(__dirname, '..', '..');
const SCRIPT = join(__dirname, 'compute-step.ts');
const SAMPLE_EVERY_MS = 50;

export interface StepRun {
  readonly step: string;
  /** Spawn to exit: the process's start (Node, module loading) included. */
  readonly wallS: number;
  /** The step alone, timed inside the process: what a warm invocation runs. */
  readonly stepS: number;
  /** CPU seconds of the whole tree (the step's process and every program it ran). */
  readonly cpuS: number;
  /** The most resident memory (VmRSS) the tree held at once, over 50 ms samples. */
  readonly peakTreeRssMiB: number;
  /**
   * Each program's own peak resident memory (VmRSS), the largest seen per name,
   * read in the same samples as the tree's: so no program's peak can exceed the
   * tree's, as a kernel high-water mark taken between two samples could.
   */
  readonly peakByProgramMiB: Readonly<Record<string, number>>;
  readonly result: unknown;
}

/**
 * tsx's compiler service: the bench runs the step's TypeScript through tsx,
 * where a function runs a bundle, so it is left out of the tree.
 */
const NOT_OF_THE_STEP = new Set(['esbuild']);

function status(pid: number): { name: string; rssKiB: number } | undefined {
  try {
    const text = readFileSync(`/proc/${pid}/status`, 'utf8');
    const field = (name: string) => Number(new RegExp(`^${name}:\\s+(\\d+) kB`, 'm').exec(text)?.[1] ?? 0);
    // The program, not the thread name (Node names its main thread MainThread).
    const program = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0')[0] ?? '';
    const name = basename(program);
    // An ended process not yet waited for has no command line and holds no memory.
    if (name === '') return undefined;
    return { name, rssKiB: field('VmRSS') };
  } catch {
    return undefined; // it ended between listing and reading
  }
}

/** Runs `step` on `audioFile` with `env` added to the bench's environment; `workDir` holds its /tmp and outputs. */
export function runStepProcess(
  step: string,
  audioFile: string,
  workDir: string,
  env: Readonly<Record<string, string>>,
): Promise<StepRun> {
  const started = performance.now();
  const child = spawn(process.execPath, ['--import', 'tsx', SCRIPT, step, audioFile, workDir], {
    cwd: ROOT,
    env: { ...process.env, POWERTOOLS_LOG_LEVEL: 'WARN', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => {
    stdout += chunk.toString('utf8');
  });
  child.stderr.on('data', (chunk: Buffer) => {
    stderr = (stderr + chunk.toString('utf8')).slice(-8192);
  });
  let peakTreeKiB = 0;
  let cpuTicks = 0;
  const peakByProgram: Record<string, number> = {};
  const sample = () => {
    const tree = child.pid === undefined ? undefined : processTree(child.pid);
    if (!tree) return;
    let treeKiB = 0;
    let ticks = 0;
    for (const proc of tree) {
      const seen = status(proc.pid);
      if (!seen || NOT_OF_THE_STEP.has(seen.name)) continue;
      // A running process's own ticks, plus those of its children that ended: none is counted twice.
      ticks += proc.ticks + proc.reapedTicks;
      treeKiB += seen.rssKiB;
      peakByProgram[seen.name] = Math.max(peakByProgram[seen.name] ?? 0, seen.rssKiB);
    }
    peakTreeKiB = Math.max(peakTreeKiB, treeKiB);
    cpuTicks = Math.max(cpuTicks, ticks);
  };
  const sampler = setInterval(sample, SAMPLE_EVERY_MS);
  return new Promise((resolve, reject) => {
    child.once('error', (error) => {
      clearInterval(sampler);
      reject(error);
    });
    child.once('exit', (code) => {
      clearInterval(sampler);
      const wallS = (performance.now() - started) / 1000;
      const line = stdout.trim().split('\n').at(-1) ?? '';
      if (code !== 0 || !line) {
        reject(new Error(`the ${step} step exited ${code}: ${stderr.trim()}`));
        return;
      }
      const { stepMs, result } = JSON.parse(line) as { stepMs: number; result: unknown };
      const mib = (kib: number) => Math.round(kib / 102.4) / 10;
      resolve({
        step,
        wallS,
        stepS: stepMs / 1000,
        cpuS: cpuTicks / TICKS_PER_S,
        peakTreeRssMiB: mib(peakTreeKiB),
        peakByProgramMiB: Object.fromEntries(
          Object.entries(peakByProgram)
            .sort(([a], [b]) => a.localeCompare(b))
            .map(([name, kib]) => [name, mib(kib)]),
        ),
        result,
      });
    });
  });
}
