import { execFile } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';

/**
 * The house rules biome.json holds (CONTRIBUTING.md, The layering: the
 * import rules, no import cycles, no unused imports, no focused or skipped
 * test), each shown failing on a deliberate violation, and a clean sample of
 * every folder they govern shown passing.
 *
 * Biome reads standard input only to print it back formatted or fixed, never
 * to report on it, so each sample is a file at its place in a scratch copy of
 * the repository's layout, with biome.json copied beside it: biome picks each
 * folder's override by that path, as it does in the repository.
 *
 * That the repository itself has no cycle and breaks none of these rules is
 * the first step of `npm test`, `biome check .`, which fails before jest runs;
 * this file proves the rules catch what they are for.
 */

const ROOT = resolve(__dirname, '../..');
const BIOME = join(ROOT, 'node_modules', '.bin', 'biome');

interface Diagnostic {
  readonly category: string;
  readonly message: string;
  readonly location: { readonly path: string };
}

interface LintRun {
  readonly exitCode: number | null;
  readonly diagnostics: readonly Diagnostic[];
}

const NAMED_ZOD = "import { z } from 'zod';\n\nexport const name = z.string();\n";
const ZOD_MESSAGE = 'Import zod as a namespace';

interface Violation {
  readonly name: string;
  readonly files: Readonly<Record<string, string>>;
  readonly rule: string;
  /** Part of the message each diagnostic must carry: which of a rule's restrictions it is. */
  readonly says?: string;
}

/** A test call with a modifier, spelled from two parts so that no search for focused or skipped tests here finds one. */
const modified = (modifier: 'only' | 'skip', title: string) => `it.${modifier}('${title}', () => {});\n`;

const VIOLATIONS: readonly Violation[] = [
  {
    name: 'a focused test',
    files: { 'test/unit/focused.test.ts': modified('only', 'runs alone') },
    rule: 'lint/suspicious/noFocusedTests',
  },
  {
    name: 'a skipped test',
    files: { 'test/unit/skipped.test.ts': modified('skip', 'never runs') },
    rule: 'lint/suspicious/noSkippedTests',
  },
  {
    name: 'an unused import',
    files: { 'config/unused-import.ts': "import { join } from 'node:path';\n\nexport const answer = 42;\n" },
    rule: 'lint/correctness/noUnusedImports',
  },
  {
    // Type-only on both sides: a cycle of types is a cycle too.
    name: 'two modules that import each other',
    files: {
      'lambdas/domain/cycle-a.ts':
        "import type { B } from './cycle-b';\n\nexport type A = { readonly b?: B };\n",
      'lambdas/domain/cycle-b.ts':
        "import type { A } from './cycle-a';\n\nexport type B = { readonly a?: A };\n",
    },
    rule: 'lint/suspicious/noImportCycles',
  },
  {
    name: 'lib/ importing lambdas/',
    files: {
      'lib/constructs/imports-lambdas.ts':
        "import { newJob } from '../../lambdas/domain/job';\n\nexport const make = newJob;\n",
    },
    rule: 'lint/style/noRestrictedImports',
    says: 'must not import the runtime code under lambdas/',
  },
  {
    name: 'the domain importing the AWS SDK',
    files: {
      'lambdas/domain/imports-sdk.ts':
        "import { S3Client } from '@aws-sdk/client-s3';\n\nexport const client = new S3Client({});\n",
    },
    rule: 'lint/style/noRestrictedImports',
    says: 'no AWS imports',
  },
  {
    name: 'the domain importing an adapter',
    files: {
      'lambdas/domain/imports-adapter.ts':
        "import { S3OutputStore } from '../adapters/s3-output-store';\n\nexport const store = S3OutputStore;\n",
    },
    rule: 'lint/style/noRestrictedImports',
    says: 'reaches its adapters only through ports',
  },
  {
    name: 'the bench importing test/',
    files: {
      'bench/sections/imports-test.ts':
        "import { memoryIntake } from '../../test/unit/support/memory-ports';\n\nexport const intake = memoryIntake;\n",
    },
    rule: 'lint/style/noRestrictedImports',
    says: 'must not import test/',
  },
  // A folder's own import rules replace the zod rule's options there: it is restated in each, and proved here.
  ...['config', 'lib/constructs', 'lambdas/domain', 'lambdas/api', 'bench/sections'].map((folder) => ({
    name: `zod imported by name in ${folder}/`,
    files: { [`${folder}/named-zod.ts`]: NAMED_ZOD },
    rule: 'lint/style/noRestrictedImports',
    says: ZOD_MESSAGE,
  })),
];

/** What each governed folder may import: the rules are scoped to their folders, and this passes. */
const CLEAN: Readonly<Record<string, string>> = {
  'lib/constructs/clean.ts':
    "import * as z from 'zod';\nimport { loadSettings } from '../../config/settings';\n\nexport const used = [z, loadSettings];\n",
  'lambdas/domain/clean.ts':
    "import * as z from 'zod';\nimport { LEGACY_PROVIDER } from '../../config/providers';\nimport type { Job } from './job';\n\nexport type Owner = Pick<Job, 'id'>;\nexport const used = [z, LEGACY_PROVIDER];\n",
  // A handler wires adapters and SDK clients in: the domain's rule stops at lambdas/domain/.
  'lambdas/api/clean.ts':
    "import { S3Client } from '@aws-sdk/client-s3';\nimport { S3OutputStore } from '../adapters/s3-output-store';\n\nexport const used = [S3Client, S3OutputStore];\n",
  'bench/clean.ts':
    "import { newJob } from '../lambdas/domain/job';\nimport { startLocalStack } from '../local/harness/local-stack';\n\nexport const used = [newJob, startLocalStack];\n",
  'test/unit/clean.test.ts': "it('runs', () => {\n  expect(1 + 1).toBe(2);\n});\n",
};

function lint(project: string, paths: readonly string[]): Promise<LintRun> {
  // The scratch copy is no git checkout: VCS integration off; every rule is biome.json's as committed.
  return new Promise((resolveRun, reject) => {
    execFile(
      BIOME,
      ['lint', '--vcs-enabled=false', '--reporter=json', ...paths],
      { cwd: project, encoding: 'utf8' },
      (error, stdout, stderr) => {
        try {
          const { diagnostics } = JSON.parse(stdout) as { diagnostics: Diagnostic[] };
          resolveRun({ exitCode: error ? (error.code as number | null) : 0, diagnostics });
        } catch {
          reject(new Error(`biome lint ${paths.join(' ')} gave no report:\n${stdout}${stderr}`));
        }
      },
    );
  });
}

const runs = new Map<string, LintRun>();
let project: string;

beforeAll(async () => {
  project = mkdtempSync(join(tmpdir(), 'longhaul-house-rules-'));
  copyFileSync(join(ROOT, 'biome.json'), join(project, 'biome.json'));
  const samples = [...VIOLATIONS.map((violation) => violation.files), CLEAN];
  for (const [path, source] of samples.flatMap((files) => Object.entries(files))) {
    mkdirSync(dirname(join(project, path)), { recursive: true });
    writeFileSync(join(project, path), source);
  }
  // One biome process per sample, all at once: each exit code answers for its own sample only.
  const names = [...VIOLATIONS.map((violation) => violation.name), 'clean'];
  const results = await Promise.all(samples.map((files) => lint(project, Object.keys(files))));
  for (const [i, name] of names.entries()) runs.set(name, results[i] as LintRun);
});

afterAll(() => {
  if (project) rmSync(project, { recursive: true, force: true });
});

describe('biome fails the build on', () => {
  it.each(VIOLATIONS.map((violation) => [violation.name, violation] as const))('%s', (name, violation) => {
    const run = runs.get(name) as LintRun;

    expect(run.exitCode).toBe(1);
    expect(run.diagnostics.map((d) => ({ path: d.location.path, category: d.category }))).toEqual(
      Object.keys(violation.files).map((path) => ({ path, category: violation.rule })),
    );
    for (const diagnostic of run.diagnostics) expect(diagnostic.message).toContain(violation.says ?? '');
  });
});

it('passes a clean sample of every folder the rules govern', () => {
  const run = runs.get('clean') as LintRun;

  expect(run.diagnostics).toEqual([]);
  expect(run.exitCode).toBe(0);
});
