import { readFileSync } from 'node:fs';
import * as path from 'node:path';
import type { Action } from './workloads';

/** Most actions per workload in the recorded counterexamples: their paths replay only with this bound. */
export const REPLAY_ACTIONS = 14;

export interface FoundCase {
  readonly issuePath: string;
  readonly invariant: string;
  readonly seed: number;
  readonly path: string;
  /** The action kinds the search was narrowed to; undefined for all of them. */
  readonly focus?: readonly Action['kind'][];
}

/**
 * The counterexamples recorded in FOUND.md, read from its table (its rows
 * start with the issue's path number), so the seeds live in one place.
 */
export function foundCases(): FoundCase[] {
  return rowsOf('');
}

/**
 * The counterexamples found in the worlds of several tenants with caps and
 * resumes (`tenantsWorkload`), from FOUND.md's table of issue 38: its rows
 * start with `38.` and the number of the issue's defect.
 */
export function foundTenantCases(): FoundCase[] {
  return rowsOf('38\\.');
}

/** The rows of FOUND.md whose first cell is `prefix` (a pattern) and a number. */
function rowsOf(prefix: string): FoundCase[] {
  const row = new RegExp(
    `^\\|\\s*${prefix}(\\d+)\\s*\\|\\s*([^|]+?)\\s*\\|\\s*(-?\\d+)\\s*\\|\\s*\`([\\d:]+)\`\\s*\\|\\s*([a-zA-Z,]+)\\s*\\|`,
  );
  const table = readFileSync(path.join(__dirname, 'FOUND.md'), 'utf8');
  return table
    .split('\n')
    .map((line) => row.exec(line))
    .filter((match): match is RegExpExecArray => match !== null)
    .map(([, issuePath = '', invariant = '', seed = '', replayPath = '', focus = 'all']) => ({
      issuePath,
      invariant,
      seed: Number(seed),
      path: replayPath,
      ...(focus === 'all' ? {} : { focus: focus.split(',') as Action['kind'][] }),
    }));
}
