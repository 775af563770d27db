import { existsSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import {
  blocksOf,
  continuedProgram,
  DOC_PAGES,
  docBlocks,
  matchesOutput,
  useOf,
  where,
} from '../support/doc-blocks';

/**
 * Every code block of the documentation says how it is checked: run by
 * test/e2e/docs-examples.test.ts, run by a named test, parsed, compared with
 * what the block before it prints, or shown and not run for a stated reason.
 * A block that says none of these fails here, so an example cannot be added
 * that no test runs.
 */

const ROOT = resolve(__dirname, '../..');

describe('the info string of a block', () => {
  const block = (info: string, code = 'x\n') =>
    blocksOf('page.md', `# Page\n\n\`\`\`${info}\n${code}\`\`\`\n`)[0] as Parameters<typeof useOf>[0];

  it('names how the block is used', () => {
    expect(useOf(block('sh'))).toEqual({ kind: 'shell' });
    expect(useOf(block('ts file=publish.mts'))).toEqual({ kind: 'file', path: 'publish.mts' });
    expect(useOf(block('ts runs-in=test/e2e/x.test.ts'))).toEqual({
      kind: 'run-by-test',
      test: 'test/e2e/x.test.ts',
    });
    expect(useOf(block('ts continues=publish.mts'))).toEqual({ kind: 'continuation', of: 'publish.mts' });
    expect(useOf(block('json'))).toEqual({ kind: 'json' });
    expect(useOf(block('text'))).toEqual({ kind: 'text' });
    expect(useOf(block('text output'))).toEqual({ kind: 'output' });
    expect(useOf(block('sh no-run: needs an AWS account'))).toEqual({
      kind: 'not-run',
      reason: 'needs an AWS account',
    });
  });

  it('is unmarked when it is missing, says nothing of running, or gives no reason for not running', () => {
    for (const info of ['', 'ts', 'js', 'bash', 'sh no-run:', 'sh file=x.sh', 'text outputs']) {
      expect(useOf(block(info))).toMatchObject({ kind: 'unmarked' });
    }
  });

  it('reads the block, its line and its heading', () => {
    expect(blocksOf('page.md', '# A\n\n## B\n\n```sh\necho 1\necho 2\n```\n')).toEqual([
      { page: 'page.md', line: 5, info: 'sh', heading: '## B', code: 'echo 1\necho 2\n' },
    ]);
  });
});

describe('an expected output', () => {
  it('matches line for line, with … for any text in a line and a line of … for any lines', () => {
    expect(matchesOutput('a job\n', 'a job\n')).toBe(true);
    expect(matchesOutput('job_… queued\n', 'job_01abc queued\n')).toBe(true);
    expect(matchesOutput('…\nfound\n…\n', 'first\nfound\nlast\n')).toBe(true);
    expect(matchesOutput('…\nfound\n…\n', 'found\n')).toBe(true);
  });

  it('fails on a missing, changed or extra line', () => {
    expect(matchesOutput('a job\n', 'no job\n')).toBe(false);
    expect(matchesOutput('a\nb\n', 'a\n')).toBe(false);
    expect(matchesOutput('a\n', 'a\nb\n')).toBe(false);
    expect(matchesOutput('(1)\n', '1\n')).toBe(false);
  });
});

describe('a program continued by blocks', () => {
  it('runs each block after the program in a scope of its own, named on stderr, its imports bound there', () => {
    const program = continuedProgram("import { a } from 'x';\nconst job = 1;\n", [
      {
        name: 'page.md:3',
        code: "import { b, c as d } from 'y';\nimport * as z from 'node:fs';\nconst job2 = job;\n",
      },
      { name: 'page.md:9', code: "import e from 'w';\nconst job2 = e;\n" },
    ]);
    expect(program).toBe(
      [
        "import { a } from 'x';",
        'const job = 1;',
        '',
        '{',
        'console.error("» page.md:3");',
        "const { b, c: d } = await import('y');",
        "const z = await import('node:fs');",
        'const job2 = job;',
        '}',
        '',
        '{',
        'console.error("» page.md:9");',
        "const { default: e } = await import('w');",
        'const job2 = e;',
        '}',
        '',
      ].join('\n'),
    );
  });
});

describe.each(DOC_PAGES)('%s', (page) => {
  const blocks = docBlocks(page);

  it('marks every code block with how it is checked', () => {
    const unmarked = blocks.flatMap((block) => {
      const use = useOf(block);
      return use.kind === 'unmarked' ? [`${where(block)} ${use.problem}`] : [];
    });
    expect(unmarked).toEqual([]);
  });

  it('runs or reads each file it has the reader save, in a later command', () => {
    const orphans = blocks.flatMap((block, index) => {
      const use = useOf(block);
      if (use.kind !== 'file') return [];
      const later = blocks.slice(index + 1).filter((each) => useOf(each).kind === 'shell');
      return later.some((each) => each.code.includes(use.path)) ? [] : [`${where(block)} ${use.path}`];
    });
    expect(orphans).toEqual([]);
  });

  it('continues only a program an earlier block has the reader save', () => {
    const orphans = blocks.flatMap((block, index) => {
      const use = useOf(block);
      if (use.kind !== 'continuation') return [];
      const saved = blocks.slice(0, index).some((each) => {
        const earlier = useOf(each);
        return earlier.kind === 'file' && earlier.path === use.of;
      });
      return saved ? [] : [`${where(block)} ${use.of}`];
    });
    expect(orphans).toEqual([]);
  });

  it('shows an expected output only right after the commands that print it', () => {
    const misplaced = blocks.flatMap((block, index) =>
      useOf(block).kind === 'output' && useOf(blocks[index - 1] ?? block).kind !== 'shell'
        ? [where(block)]
        : [],
    );
    expect(misplaced).toEqual([]);
  });

  it('has only JSON that parses', () => {
    for (const block of blocks) {
      const use = useOf(block);
      if (use.kind === 'json' || (use.kind === 'file' && use.path.endsWith('.json'))) {
        expect(() => JSON.parse(block.code)).not.toThrow();
      }
    }
  });

  it('names, for a block another test runs, a test that reads this page', () => {
    for (const block of blocks) {
      const use = useOf(block);
      if (use.kind !== 'run-by-test') continue;
      expect(existsSync(join(ROOT, use.test))).toBe(true);
      expect(readFileSync(join(ROOT, use.test), 'utf8')).toContain(`'${page}'`);
    }
  });
});
