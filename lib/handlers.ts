import * as path from 'node:path';

/** The repository root; `lib/` sits directly under it. Bundling resolves every entry and the lock file from here. */
export const REPO_ROOT = path.resolve(__dirname, '..');

/** The lock file esbuild bundling uses to find the project's dependencies. */
export const DEPS_LOCK_FILE = path.join(REPO_ROOT, 'package-lock.json');

/**
 * Entry file of a handler under `lambdas/<name>/handler.ts`. Infrastructure only
 * ever refers to handlers by path, so `lib/` never imports runtime code.
 */
export function handlerEntry(name: string): string {
  return path.join(REPO_ROOT, 'lambdas', name, 'handler.ts');
}
