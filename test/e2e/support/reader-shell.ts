import { execFile, spawn } from 'node:child_process';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, join, resolve } from 'node:path';

/**
 * A reader's terminal: the documentation's shell blocks run one after another
 * in bash, with the variables each block set still set for the next, as in
 * one terminal. The reader is in a clone of this project (every file of it
 * linked, so what a block writes stays out of the repository), or in a
 * project of their own that installed the client package. A failed command fails its block (`set -euo pipefail`), a curl
 * answered with an error status too (`--fail-with-body`), and `set -u` turns
 * a variable the page never set into a failure instead of an empty string.
 */

const ROOT = resolve(__dirname, '../../..');
const BIN = join(ROOT, 'node_modules', '.bin');
/** What a clone has that the reader's directory should not share: history and local state. */
const NOT_LINKED = new Set(['.git', '.longhaul', 'cdk.out']);
/** The address the documents use; the test's stack listens elsewhere. */
export const DOCUMENTED_ADDRESS = '127.0.0.1:3000';

export interface ShellRun {
  readonly status: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

/** Where the reader stands: a clone of this project, or a project that installed the package built in `packageDir`. */
export type ReaderProject =
  | { readonly kind: 'clone' }
  | { readonly kind: 'package-user'; readonly packageDir: string };

export class ReaderShell {
  /** The reader's working directory: the clone's root, or their project's. */
  readonly dir: string;
  private readonly state: string;
  private readonly path: string;
  private blocks = 0;
  private readonly files = new Set<string>();

  /** `address`: where the test's stack listens (`127.0.0.1:<port>`), put wherever the docs say 127.0.0.1:3000. */
  constructor(
    private readonly address: string,
    project: ReaderProject = { kind: 'clone' },
  ) {
    this.dir = mkdtempSync(join(tmpdir(), 'longhaul-reader-'));
    if (project.kind === 'clone') {
      for (const entry of readdirSync(ROOT)) {
        if (!NOT_LINKED.has(entry)) symlinkSync(join(ROOT, entry), join(this.dir, entry));
      }
      this.path = BIN;
    } else {
      // As `npm install longhaul-client` leaves it: the package in node_modules, its bin linked.
      const modules = join(this.dir, 'node_modules');
      mkdirSync(join(modules, '.bin'), { recursive: true });
      symlinkSync(project.packageDir, join(modules, 'longhaul-client'));
      symlinkSync('../longhaul-client/dist/cli.js', join(modules, '.bin', 'longhaul'));
      // A TypeScript reader's Node types (npm install -D @types/node).
      symlinkSync(join(ROOT, 'node_modules', '@types'), join(modules, '@types'));
      writeFileSync(join(this.dir, 'package.json'), '{ "private": true }\n');
      // This project's Node 24 after the reader's own bins, as a reader with Node 24 has it.
      this.path = `${join(modules, '.bin')}${delimiter}${BIN}`;
    }
    mkdirSync(join(this.dir, '.reader'));
    this.state = join(this.dir, '.reader', 'variables.sh');
  }

  /** The documented text as it applies here: the test's stack in place of the documented address. */
  localize(text: string): string {
    return text.split(DOCUMENTED_ADDRESS).join(this.address);
  }

  /** Saves a file the page has the reader write. */
  save(path: string, text: string): void {
    writeFileSync(join(this.dir, path), this.localize(text));
    this.files.add(path);
  }

  /** What a saved file holds now. */
  read(path: string): string {
    return readFileSync(join(this.dir, path), 'utf8');
  }

  /** The paths of the files saved so far. */
  saved(): readonly string[] {
    return [...this.files];
  }

  /** Runs one block as the reader would type it after the page's earlier blocks. */
  run(code: string, timeoutMs = 90_000): Promise<ShellRun> {
    const block = join(this.dir, '.reader', `block-${++this.blocks}.sh`);
    writeFileSync(block, this.localize(code));
    const fresh = join(this.dir, '.reader', 'fresh.txt');
    const script = [
      'set -euo pipefail',
      'curl() { command curl --fail-with-body "$@"; }',
      `declare -p > '${fresh}'`,
      `if [ -f '${this.state}' ]; then source '${this.state}'; fi`,
      `source '${block}'`,
      // What the page has set or changed so far, against a terminal just opened, for the next block:
      // variables (new or changed, exported or not) and functions.
      `declare -p | grep -vxFf '${fresh}' | grep -Ev '^declare -[-a-zA-Z]* (__reader_|_=|BASH|PIPESTATUS=|FUNCNAME=|COLUMNS=|LINES=)' > '${this.state}.next' || true`,
      'for __reader_function in $(compgen -A function); do',
      '  [ "$__reader_function" = curl ] || declare -f "$__reader_function"',
      `done >> '${this.state}.next'`,
      `mv '${this.state}.next' '${this.state}'`,
    ].join('\n');
    const env: NodeJS.ProcessEnv = Object.fromEntries(
      Object.entries(process.env).filter(
        ([name]) => !name.startsWith('LONGHAUL_') && !name.startsWith('npm_'),
      ),
    );
    const child = spawn('bash', ['-c', script], {
      cwd: this.dir,
      env: {
        ...env,
        PATH: `${this.path}${delimiter}${process.env.PATH ?? ''}`,
        // A reader's own keys stay out of it; `longhaul login` would write here.
        LONGHAUL_CONFIG_DIR: join(this.dir, '.reader', 'config'),
        // The SDK's examples and the CLI default to the documented address, where the reader's
        // `npm start` listens; here the stack is elsewhere, so the default is set to it. No key is.
        LONGHAUL_URL: `http://${this.address}`,
        npm_config_update_notifier: 'false',
        npm_config_fund: 'false',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true,
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => {
      stdout += chunk.toString('utf8');
    });
    child.stderr.on('data', (chunk: Buffer) => {
      stderr += chunk.toString('utf8');
    });
    return new Promise((resolveRun, rejectRun) => {
      const timer = setTimeout(() => {
        try {
          process.kill(-(child.pid as number), 'SIGKILL');
        } catch {
          // Already gone.
        }
        rejectRun(new Error(`still running after ${timeoutMs} ms:\n${code}\n${tail(stdout, stderr)}`));
      }, timeoutMs);
      child.once('error', rejectRun);
      child.once('close', (status) => {
        clearTimeout(timer);
        resolveRun({ status, stdout, stderr });
      });
    });
  }

  /**
   * Type-checks a saved TypeScript file as a reader's editor would, strict,
   * for the Node it runs on: what Node's type stripping runs without looking.
   */
  typeCheck(path: string): Promise<ShellRun> {
    return new Promise((resolveCheck) => {
      execFile(
        join(BIN, 'tsc'),
        [
          ...['--noEmit', '--strict', '--skipLibCheck', '--allowImportingTsExtensions'],
          ...[
            '--module',
            'nodenext',
            '--moduleResolution',
            'nodenext',
            '--target',
            'es2023',
            '--types',
            'node',
          ],
          path,
        ],
        { cwd: this.dir, timeout: 60_000 },
        (error, stdout, stderr) => {
          const status = error ? (typeof error.code === 'number' ? error.code : 1) : 0;
          resolveCheck({ status, stdout, stderr });
        },
      );
    });
  }

  remove(): void {
    if (existsSync(this.dir)) rmSync(this.dir, { recursive: true, force: true });
  }
}

/** The end of what a block printed, for a failure message. */
export function tail(stdout: string, stderr: string): string {
  return `--- stdout ---\n${stdout.slice(-3000)}\n--- stderr ---\n${stderr.slice(-3000)}`;
}
