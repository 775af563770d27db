import { existsSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/**
 * The data directory belongs to one running local stack at a time: a second
 * one would fight over LevelDB's lock (dynalite then crashes on its first
 * request) and over the SQLite file. A pid file makes that a clear error, and
 * a stale one (its process is gone) is taken over.
 */
export function lockDataDir(dataDir: string): () => void {
  mkdirSync(dataDir, { recursive: true });
  const lockFile = join(dataDir, 'local.pid');
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      writeFileSync(lockFile, String(process.pid), { flag: 'wx' });
      return () => rmSync(lockFile, { force: true });
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    }
    const holder = Number(readFileSync(lockFile, 'utf8').trim());
    if (Number.isInteger(holder) && holder > 0 && holder !== process.pid && isRunning(holder)) {
      throw new Error(
        `${dataDir} is in use by another local stack (pid ${holder}); stop it or set LONGHAUL_DATA_DIR to another directory`,
      );
    }
    rmSync(lockFile, { force: true });
  }
  throw new Error(`cannot lock ${dataDir}: ${lockFile} keeps reappearing`);
}

function isRunning(pid: number): boolean {
  // A stack killed a moment ago can linger as a zombie until its parent (often
  // PID 1 in a container) reaps it; signal 0 still reaches a zombie, /proc
  // tells them apart where it exists.
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const state = stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3);
    return state !== 'Z' && state !== 'X';
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT' && existsSync('/proc/self/stat')) return false;
  }
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Where a data directory keeps the DynamoDB tables (LevelDB). */
export function dynamoDbDir(dataDir: string): string {
  return join(dataDir, 'dynamodb');
}

/** Writes `file` whole or not at all, so a reader never sees half of it. */
export function writeFileAtomically(file: string, content: string): void {
  const temporary = `${file}.${process.pid}.tmp`;
  writeFileSync(temporary, content);
  renameSync(temporary, file);
}
