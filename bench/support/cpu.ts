import { readdirSync, readFileSync } from 'node:fs';

/**
 * CPU time used by a process and its descendants (Linux `/proc`): what the
 * local stack spends, so a section can say whether the one process that runs
 * every function and emulator was busy all the time. Undefined where there
 * is no `/proc`.
 */

/** Clock ticks per second of `/proc/<pid>/stat` (USER_HZ, 100 on Linux). */
export const TICKS_PER_S = 100;

export interface ProcStat {
  readonly pid: number;
  readonly ppid: number;
  /** CPU ticks the process itself used. */
  readonly ticks: number;
  /** CPU ticks of its children that ended and were waited for (no longer in the tree). */
  readonly reapedTicks: number;
}

function readStat(pid: string): ProcStat | undefined {
  try {
    const text = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // The command name is in parentheses and may hold spaces: the fields after it are fixed.
    const fields = text.slice(text.lastIndexOf(')') + 2).split(' ');
    return {
      pid: Number(pid),
      ppid: Number(fields[1]),
      ticks: Number(fields[11]) + Number(fields[12]),
      reapedTicks: Number(fields[13]) + Number(fields[14]),
    };
  } catch {
    return undefined;
  }
}

/** The live processes of the tree under `root`, root first; undefined where there is no `/proc` or no such process. */
export function processTree(root: number): ProcStat[] | undefined {
  let entries: string[];
  try {
    entries = readdirSync('/proc').filter((name) => /^\d+$/.test(name));
  } catch {
    return undefined;
  }
  const stats = entries.flatMap((pid) => readStat(pid) ?? []);
  const children = new Map<number, ProcStat[]>();
  for (const stat of stats) children.set(stat.ppid, [...(children.get(stat.ppid) ?? []), stat]);
  const rootStat = stats.find((stat) => stat.pid === root);
  if (!rootStat) return undefined;
  const tree: ProcStat[] = [];
  const pending = [rootStat];
  while (pending.length > 0) {
    const stat = pending.pop() as ProcStat;
    tree.push(stat);
    pending.push(...(children.get(stat.pid) ?? []));
  }
  return tree;
}

/** Seconds of CPU the process tree under `root` has used so far. */
export function cpuSecondsOfTree(root: number): number | undefined {
  const tree = processTree(root);
  return tree && tree.reduce((sum, stat) => sum + stat.ticks, 0) / TICKS_PER_S;
}

/** Seconds of CPU the trees under `roots` have used so far, added up; undefined when any is unreadable. */
export function cpuSecondsOfTrees(roots: readonly number[]): number | undefined {
  let total = 0;
  for (const root of roots) {
    const seconds = cpuSecondsOfTree(root);
    if (seconds === undefined) return undefined;
    total += seconds;
  }
  return total;
}

/** Starts counting CPU; the returned function gives the seconds the trees under `roots` used since. */
export function cpuSince(roots: readonly number[]): () => number | undefined {
  const started = cpuSecondsOfTrees(roots);
  return () => {
    const now = cpuSecondsOfTrees(roots);
    return started === undefined || now === undefined ? undefined : now - started;
  };
}

/** Starts measuring; the returned function gives the cores the tree kept busy on average since (1 = one core all the time). */
export function cpuMeter(root: number): () => number | undefined {
  const startedCpu = cpuSecondsOfTree(root);
  const startedAt = performance.now();
  return () => {
    const now = cpuSecondsOfTree(root);
    if (startedCpu === undefined || now === undefined) return undefined;
    return (now - startedCpu) / ((performance.now() - startedAt) / 1000);
  };
}
