import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buildPackage } from '../../client/scripts/build-package';
import {
  OWN_PROVIDER_FOR_EVERY_JOB_TYPE,
  type RunningLocalStack,
  startLocalStack,
} from '../../local/harness/local-stack';
import { generateTestAudio } from '../../local/harness/test-audio';
import {
  continuedProgram,
  DOC_PAGES,
  type DocBlock,
  docBlocks,
  matchesOutput,
  useOf,
  where,
} from '../support/doc-blocks';
import { type ReaderProject, ReaderShell, type ShellRun, tail } from './support/reader-shell';

/**
 * Every page of the documentation followed line by line, as a reader with a
 * fresh clone would (the client package's README: as someone who installed
 * the package): its shell blocks run in order in one terminal per page, the
 * files it has the reader save are saved, the blocks that continue a saved
 * program run after it, and where it shows what a command prints, that is
 * what the command must print. One local stack, as
 * `npm start` runs it with the documented keys, serves every page.
 * test/unit/docs-blocks.test.ts checks that every block is run here or marked
 * with the reason it is not.
 */

jest.setTimeout(120_000);

/** One step of following a page: a block, or a program run with the blocks that continue it. */
type Step =
  | { readonly title: string; readonly block: DocBlock }
  | { readonly title: string; readonly program: string; readonly continuations: readonly DocBlock[] };

/** The blocks of `page` that continue the program it has the reader save as `path`, named for failures. */
function continuationsOf(page: string, path: string): DocBlock[] {
  return docBlocks(page).filter((block) => {
    const use = useOf(block);
    return use.kind === 'continuation' && use.of === path;
  });
}

/**
 * What this test does with a page, in the page's order: its shell, file and
 * output blocks, and each program's continuations run together where the last
 * of them stands, so the program runs once for them all.
 */
function steps(page: string): Step[] {
  const blocks = docBlocks(page);
  const result: Step[] = [];
  for (const block of blocks) {
    const use = useOf(block);
    if (['shell', 'file', 'output'].includes(use.kind)) {
      result.push({ title: `${where(block)} ${block.code.split('\n')[0]?.slice(0, 70) ?? ''}`, block });
    }
    if (use.kind !== 'continuation') continue;
    const continuations = continuationsOf(page, use.of);
    if (continuations.at(-1)?.line !== block.line) continue;
    const first = continuations[0] as DocBlock;
    result.push({
      title: `${page}:${first.line}-${block.line} ${use.of} continued by ${continuations.length} blocks`,
      program: use.of,
      continuations,
    });
  }
  return result;
}

const PAGES = DOC_PAGES.filter((page) => steps(page).length > 0);

/** The client package's README is read by someone who installed the package, not by someone in a clone. */
const PACKAGE_PAGES = new Set(['client/README.md']);

let stack: RunningLocalStack;
let packageDir: string;

beforeAll(async () => {
  packageDir = mkdtempSync(join(tmpdir(), 'longhaul-docs-package-'));
  // The package for client/README.md's reader is built while the stack starts.
  const starting = startLocalStack({
    env: {
      // What a fresh clone's `npm start` runs: each job type on its own provider, the documented keys.
      ...OWN_PROVIDER_FOR_EVERY_JOB_TYPE,
      LONGHAUL_API_KEYS: 'dev-key:dev',
      LONGHAUL_ADMIN_KEY: 'dev-admin-key',
      // Quicker jobs than npm start's 3 s, not much quicker: a job that ends before its watcher's
      // subscription shows in the subscriptions' job index reaches the watcher only at its next read,
      // up to 10 s later (the SDK's livePollIntervalMs), which costs more than the job.
      SIM_JOB_MS: '2000',
      SLOT_WAIT_MAX_SECONDS: '1',
    },
  }).then((started) => {
    stack = started;
  });
  await Promise.all([starting, buildPackage(packageDir)]);
});

afterAll(async () => {
  await stack?.stop();
  rmSync(packageDir, { recursive: true, force: true });
});

describe.each(PAGES)('%s, followed line by line', (page) => {
  let shell: ReaderShell;
  let last: ShellRun | undefined;

  beforeAll(async () => {
    const project: ReaderProject = PACKAGE_PAGES.has(page)
      ? { kind: 'package-user', packageDir }
      : { kind: 'clone' };
    shell = new ReaderShell(new URL(stack.baseUrl).host, project);
    if (project.kind === 'package-user') {
      // The recording the page tells its reader to bring, saying what its search example looks for.
      await generateTestAudio(join(shell.dir, 'sermon.wav'), {
        seconds: 8,
        kind: 'speechlike',
        comment: 'Grace is not earned; it is given.',
      });
    }
  });

  afterAll(() => {
    shell?.remove();
  });

  /** The command line each saved program was run with, by its path. */
  const runWith = new Map<string, string>();

  it.each(steps(page).map((step) => [step.title, step] as const))('%s', async (_title, step) => {
    if ('program' in step) {
      const command = runWith.get(step.program);
      if (!command)
        throw new Error(`${page}: no command ran ${step.program} before the blocks that continue it`);
      const continued = step.program.replace(/(\.\w+)$/, '.continued$1');
      shell.save(
        continued,
        continuedProgram(
          shell.read(step.program),
          step.continuations.map((block) => ({ name: where(block), code: block.code })),
        ),
      );
      const run = await shell.run(command.split(step.program).join(continued));
      if (run.status !== 0)
        throw new Error(`${step.title} exited ${run.status}:\n${tail(run.stdout, run.stderr)}`);
      // Each block says so on stderr as it starts: the last one too, so none was skipped.
      expect(run.stderr).toContain(`» ${where(step.continuations.at(-1) as DocBlock)}`);
      return;
    }
    const { block } = step;
    const use = useOf(block);
    if (use.kind === 'file') {
      shell.save(use.path, block.code);
      if (/\.[cm]?ts$/.test(use.path)) {
        // The program as the page's later blocks continue it, checked as TypeScript before it runs.
        const checked = use.path.replace(/(\.\w+)$/, '.checked$1');
        shell.save(
          checked,
          continuedProgram(
            block.code,
            continuationsOf(page, use.path).map((each) => ({ name: where(each), code: each.code })),
          ),
        );
        const check = await shell.typeCheck(checked);
        if (check.status !== 0) {
          throw new Error(`${where(block)} does not type-check:\n${tail(check.stdout, check.stderr)}`);
        }
      }
      return;
    }
    if (use.kind === 'output') {
      if (!last) throw new Error(`${where(block)}: no command ran before this output`);
      if (!matchesOutput(shell.localize(block.code), last.stdout)) {
        throw new Error(
          `${where(block)}: the commands before it printed something else.\n--- shown ---\n${block.code}${tail(last.stdout, last.stderr)}`,
        );
      }
      return;
    }
    last = undefined;
    for (const line of block.code.split('\n')) {
      for (const saved of shell.saved()) if (line.includes(saved)) runWith.set(saved, line.trim());
    }
    const run = await shell.run(block.code);
    if (run.status !== 0) {
      throw new Error(`${where(block)} exited ${run.status}:\n${block.code}${tail(run.stdout, run.stderr)}`);
    }
    last = run;
  });
});
