import { chmodSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { UsageError } from './usage-error';

/**
 * Where the CLI finds a key, never on its command line (where `ps` and shell
 * history would keep it): `--api-key-file <path>` (`-` for stdin), the
 * environment, or the key `longhaul login` stored in the user's config
 * directory, readable by the user alone.
 */

/** The two kinds of key: a tenant's (most commands) and the operator's (review, dlq). */
export type KeyKind = 'apiKey' | 'adminKey';

export interface StoredKeys {
  readonly apiKey?: string;
  readonly adminKey?: string;
}

/** `LONGHAUL_CONFIG_DIR`, else `$XDG_CONFIG_HOME/longhaul`, else `~/.config/longhaul` (`%APPDATA%\longhaul` on Windows). */
export function configDir(env: Readonly<Record<string, string | undefined>>): string {
  if (env.LONGHAUL_CONFIG_DIR) return env.LONGHAUL_CONFIG_DIR;
  if (env.XDG_CONFIG_HOME) return join(env.XDG_CONFIG_HOME, 'longhaul');
  if (process.platform === 'win32' && env.APPDATA) return join(env.APPDATA, 'longhaul');
  return join(homedir(), '.config', 'longhaul');
}

export const credentialsFile = (env: Readonly<Record<string, string | undefined>>): string =>
  join(configDir(env), 'credentials.json');

export function readStoredKeys(env: Readonly<Record<string, string | undefined>>): StoredKeys {
  let text: string;
  try {
    text = readFileSync(credentialsFile(env), 'utf8');
  } catch {
    return {};
  }
  try {
    const parsed = JSON.parse(text) as StoredKeys;
    return {
      ...(typeof parsed.apiKey === 'string' ? { apiKey: parsed.apiKey } : {}),
      ...(typeof parsed.adminKey === 'string' ? { adminKey: parsed.adminKey } : {}),
    };
  } catch {
    throw new UsageError(`${credentialsFile(env)} is not JSON: run longhaul login again.`);
  }
}

/** Stores `key` as the `kind` key, beside the other kind's, in a file only the user may read (0600). */
export function storeKey(
  env: Readonly<Record<string, string | undefined>>,
  kind: KeyKind,
  key: string | undefined,
): string {
  const directory = configDir(env);
  mkdirSync(directory, { recursive: true, mode: 0o700 });
  const path = credentialsFile(env);
  const { [kind]: _replaced, ...others } = readStoredKeys(env);
  const keys = { ...others, ...(key !== undefined ? { [kind]: key } : {}) };
  writeFileSync(path, `${JSON.stringify(keys, null, 2)}\n`, { mode: 0o600 });
  // writeFileSync's mode applies to a new file only: an older one is made private too.
  chmodSync(path, 0o600);
  return path;
}

/** The first line of a key file or of stdin, trimmed; a usage error naming the file when there is none. */
export function keyFromText(text: string, source: string): string {
  const key = text.split(/\r?\n/, 1)[0]?.trim() ?? '';
  if (key === '') throw new UsageError(`${source} holds no key.`);
  return key;
}

/** The key in the file `--api-key-file` names. */
export function readKeyFile(path: string): string {
  let isDirectory = false;
  try {
    isDirectory = statSync(path).isDirectory();
  } catch {
    throw new UsageError(`--api-key-file ${path}: no such file.`);
  }
  if (isDirectory) throw new UsageError(`--api-key-file ${path} is a directory, not a file.`);
  try {
    return keyFromText(readFileSync(path, 'utf8'), `--api-key-file ${path}`);
  } catch (error) {
    if (error instanceof UsageError) throw error;
    throw new UsageError(`--api-key-file ${path} cannot be read: ${(error as Error).message}`);
  }
}
