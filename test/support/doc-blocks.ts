import { readdirSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';

/**
 * The fenced code blocks of the documentation and what each is for, read from
 * its info string, so whether a block is run is written beside the block:
 *
 * - ```` ```sh ````: commands a reader types, run in order in one shell per page;
 * - ```` ```ts file=<path> ```` (or js, mjs, mts, json): a file the reader saves as
 *   `<path>`; a later `sh` block of the page runs or reads it;
 * - ```` ```ts continues=<path> ````: more of the program an earlier `file=` block
 *   starts, using what it defined; run after it, each in a scope of its own;
 * - ```` ```ts runs-in=<test> ````: run by that test, which reads it from the page;
 * - ```` ```json ````: data shown whole, checked to parse;
 * - ```` ```text output ````: what the `sh` block before it prints, checked
 *   (`…` stands for any text, a line of `…` for any lines);
 * - ```` ```text ````: a diagram or a sample, not run;
 * - ```` ```<lang> no-run: <reason> ````: not run, for the reason given.
 *
 * Anything else is a block nobody checks, which the docs do not have.
 */

const ROOT = resolve(__dirname, '../..');

/** The pages whose blocks are checked: the README, the contributing guide, docs/, the examples' guide and the client package's README. */
export const DOC_PAGES: readonly string[] = [
  'README.md',
  'CONTRIBUTING.md',
  ...readdirSync(join(ROOT, 'docs'), { recursive: true, encoding: 'utf8' })
    .filter((name) => name.endsWith('.md'))
    .sort()
    .map((name) => `docs/${name}`),
  'examples/README.md',
  'client/README.md',
];

export interface DocBlock {
  readonly page: string;
  /** 1-based line of the opening fence. */
  readonly line: number;
  /** The info string after the opening fence, as written. */
  readonly info: string;
  /** The nearest heading above the block, with its `#`s. */
  readonly heading: string;
  /** The block's text, ending with a newline. */
  readonly code: string;
}

export type BlockUse =
  | { readonly kind: 'shell' }
  | { readonly kind: 'file'; readonly path: string }
  | { readonly kind: 'continuation'; readonly of: string }
  | { readonly kind: 'run-by-test'; readonly test: string }
  | { readonly kind: 'json' }
  | { readonly kind: 'output' }
  | { readonly kind: 'text' }
  | { readonly kind: 'not-run'; readonly reason: string }
  | { readonly kind: 'unmarked'; readonly problem: string };

const SOURCE_LANGUAGES = new Set(['ts', 'js', 'mjs', 'mts', 'json']);

/** Every fenced block of `markdown`, in order (``` fences, not indented). */
export function blocksOf(page: string, markdown: string): DocBlock[] {
  const blocks: DocBlock[] = [];
  const lines = markdown.split('\n');
  let heading = '';
  for (let at = 0; at < lines.length; at++) {
    const line = lines[at] as string;
    if (/^#{1,6} /.test(line)) heading = line;
    const fence = /^```(.*)$/.exec(line);
    if (!fence) continue;
    const start = at;
    const body: string[] = [];
    for (at++; at < lines.length && lines[at] !== '```'; at++) body.push(lines[at] as string);
    if (at >= lines.length) throw new Error(`${page}:${start + 1}: a code block is never closed`);
    blocks.push({
      page,
      line: start + 1,
      info: (fence[1] ?? '').trim(),
      heading,
      code: body.length === 0 ? '' : `${body.join('\n')}\n`,
    });
  }
  return blocks;
}

export function docBlocks(page: string): DocBlock[] {
  return blocksOf(page, readFileSync(join(ROOT, page), 'utf8'));
}

/** What `block` is for, from its info string. */
export function useOf(block: DocBlock): BlockUse {
  const notRun = /^\S+ no-run:\s*(.*)$/.exec(block.info);
  if (notRun) {
    const reason = (notRun[1] ?? '').trim();
    return reason === ''
      ? { kind: 'unmarked', problem: 'no-run without a reason' }
      : { kind: 'not-run', reason };
  }
  const [language = '', ...attributes] = block.info.split(/\s+/);
  const attribute = (name: string) =>
    attributes.find((each) => each.startsWith(`${name}=`))?.slice(name.length + 1);
  if (language === 'sh' && attributes.length === 0) return { kind: 'shell' };
  if (language === 'text' && attributes.length === 0) return { kind: 'text' };
  if (language === 'text' && block.info === 'text output') return { kind: 'output' };
  if (language === 'json' && attributes.length === 0) return { kind: 'json' };
  if (SOURCE_LANGUAGES.has(language) && attributes.length === 1) {
    const path = attribute('file');
    if (path) return { kind: 'file', path };
    const of = attribute('continues');
    if (of) return { kind: 'continuation', of };
    const test = attribute('runs-in');
    if (test) return { kind: 'run-by-test', test };
  }
  return {
    kind: 'unmarked',
    problem:
      language === ''
        ? 'no info string: mark it text, or make it run'
        : `"${block.info}" says neither how it runs nor why it does not`,
  };
}

/** `page:line`, how a block is named in messages. */
export const where = (block: DocBlock) => `${block.page}:${block.line}`;

/**
 * Whether `printed` is what a `text output` block shows: line for line, where
 * `…` in a line stands for any text and a line of `…` alone for any lines.
 */
export function matchesOutput(expected: string, printed: string): boolean {
  const literal = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  const pattern = expected
    .trimEnd()
    .split('\n')
    .map((line) =>
      line.trim() === '…' ? '(?:[^\\n]*\\n)*?' : `${line.split('…').map(literal).join('.*')}\\n`,
    )
    .join('');
  return new RegExp(`^${pattern}$`).test(`${printed.trimEnd()}\n`);
}

/**
 * A program and the blocks that continue it, as one module: each block in a
 * scope of its own after the program (so it sees what the program defined and
 * may reuse a name another block used), its imports turned into the same
 * bindings from `await import(…)` inside that scope, and a line on stderr
 * naming the block before it runs, so a failure says which block failed.
 */
export function continuedProgram(
  program: string,
  blocks: readonly { readonly name: string; readonly code: string }[],
): string {
  const scoped = blocks.map(({ name, code }) => {
    const body = code.replace(
      /^import (?:\{([^}]*)\}|\* as (\w+)|(\w+)) from ('[^']+'|"[^"]+");?$/gm,
      (
        _line,
        named: string | undefined,
        namespace: string | undefined,
        fallback: string | undefined,
        from,
      ) => {
        if (namespace) return `const ${namespace} = await import(${from});`;
        if (fallback) return `const { default: ${fallback} } = await import(${from});`;
        const bindings = (named ?? '')
          .split(',')
          .map((each) =>
            each
              .trim()
              .replace(/^type\s+\w+$/, '')
              .replace(/\s+as\s+/, ': '),
          )
          .filter(Boolean);
        return `const { ${bindings.join(', ')} } = await import(${from});`;
      },
    );
    return `{\nconsole.error(${JSON.stringify(`» ${name}`)});\n${body}}\n`;
  });
  return `${program}\n${scoped.join('\n')}`;
}
