import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buildPackage } from '../../client/scripts/build-package';
import { DOC_PAGES, type DocBlock, docBlocks, matchesOutput, useOf, where } from '../support/doc-blocks';
import { generateTestAudio } from '../support/test-audio';
import {
  OWN_PROVIDER_FOR_EVERY_JOB_TYPE,
  type RunningLocalStack,
  startLocalStack,
} from './support/local-stack';
import { type ReaderProject, ReaderShell, type ShellRun, tail } from './support/reader-shell';

/**
 * Every page of the documentation followed line by line, as a reader with a
 * fresh clone would: its shell blocks run in order in one terminal per page,
 * the files it has the reader save are saved, and where it shows what a
 * command prints, that is what the command must print. One local stack, as
 * `npm start` runs it with the documented keys, serves every page.
 * test/unit/docs-blocks.test.ts checks that every block is run here or marked
 * with the reason it is not.
 */

jest.setTimeout(120_000);

/** The blocks of a page this test acts on, in the page's order. */
const acted = (page: string) =>
  docBlocks(page).filter((block) => ['shell', 'file', 'output'].includes(useOf(block).kind));

const PAGES = DOC_PAGES.filter((page) => acted(page).length > 0);

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

const title = (block: DocBlock) => `${where(block)} ${block.code.split('\n')[0]?.slice(0, 70) ?? ''}`;

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

  it.each(acted(page).map((block) => [title(block), block] as const))('%s', async (_title, block) => {
    const use = useOf(block);
    if (use.kind === 'file') {
      shell.save(use.path, block.code);
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
    const run = await shell.run(block.code);
    if (run.status !== 0) {
      throw new Error(`${where(block)} exited ${run.status}:\n${block.code}${tail(run.stdout, run.stderr)}`);
    }
    last = run;
  });
});
