import { execFileSync } from 'node:child_process';
import { cpus, totalmem } from 'node:os';

/** Small helpers every bench section shares: output, order statistics and the machine's description. */

export const print = (line: string) => process.stdout.write(`${line}\n`);

/** Nearest-rank quantile; NaN for no samples. */
export function quantile(xs: readonly number[], q: number): number {
  const sorted = [...xs].sort((a, b) => a - b);
  if (sorted.length === 0) return Number.NaN;
  const rank = Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1));
  return sorted[rank] as number;
}

export const median = (xs: readonly number[]) => quantile(xs, 0.5);

export const fmt = (n: number, digits = 2) => n.toFixed(digits);

export const round = (n: number, digits = 3) => Number(n.toFixed(digits));

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** A size a section takes from the environment: a whole number above 0, else `fallback` when unset or empty. */
export function sizeFromEnv(
  env: Readonly<Record<string, string | undefined>>,
  name: string,
  fallback: number,
): number {
  const text = env[name];
  if (text === undefined || text === '') return fallback;
  const n = Number(text);
  if (!Number.isInteger(n) || n < 1) throw new Error(`${name} must be a whole number above 0, got ${text}`);
  return n;
}

/** Counts per key, sorted by key: the outcome of a batch of jobs. */
export function tally(values: readonly string[]): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const value of [...values].sort()) counts[value] = (counts[value] ?? 0) + 1;
  return counts;
}

export interface Machine {
  readonly cores: number;
  readonly cpu: string;
  readonly memoryGiB: number;
  readonly node: string;
  readonly os: string;
}

export function machine(): Machine {
  let os: string = process.platform;
  try {
    os = execFileSync('uname', ['-sr'], { encoding: 'utf8' }).trim();
  } catch {
    // uname is informational only.
  }
  return {
    cores: Number(execFileSync('nproc', { encoding: 'utf8' }).trim()),
    cpu: cpus()[0]?.model.trim() ?? 'unknown',
    memoryGiB: Math.round(totalmem() / 1024 ** 3),
    node: process.version,
    os,
  };
}
