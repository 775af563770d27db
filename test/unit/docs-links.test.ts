import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';

/**
 * The documentation works in a clone: every relative link names a file of the
 * repository (and a heading of it, when it has an anchor), nothing points
 * outside it, and the shell examples call the API as it wants to be called.
 */

const ROOT = resolve(__dirname, '../..');

const PAGES = [
  'README.md',
  'CHANGELOG.md',
  'CONTRIBUTING.md',
  'examples/README.md',
  'local/README.md',
  'client/README.md',
  ...readdirSync(join(ROOT, 'docs'))
    .filter((name) => name.endsWith('.md'))
    .map((name) => `docs/${name}`),
];

const read = (page: string) => readFileSync(join(ROOT, page), 'utf8');

/** The text outside fenced code blocks, where a `[x](y)` is a link. */
const prose = (markdown: string) => markdown.replace(/^```[\s\S]*?^```/gm, '');

/** GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens. */
function slug(heading: string): string {
  return heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N} _-]/gu, '')
    .replace(/ /g, '-');
}

/** The anchors of a page's headings, numbered as GitHub numbers repeats (`x`, `x-1`). */
function anchors(markdown: string): Set<string> {
  const seen = new Map<string, number>();
  const found = new Set<string>();
  for (const match of prose(markdown).matchAll(/^#{1,6} (.+)$/gm)) {
    const base = slug(match[1] ?? '');
    const count = seen.get(base) ?? 0;
    seen.set(base, count + 1);
    found.add(count === 0 ? base : `${base}-${count}`);
  }
  return found;
}

function links(page: string): string[] {
  return [...prose(read(page)).matchAll(/\]\(([^)\s]+)\)/g)].map((match) => match[1] ?? '');
}

describe('slug', () => {
  it("makes GitHub's anchors", () => {
    expect(slug('Resume a failed job from the step that failed')).toBe(
      'resume-a-failed-job-from-the-step-that-failed',
    );
    expect(slug('Media library: items and their versions')).toBe('media-library-items-and-their-versions');
    expect(slug('Scheduled jobs: `runAt`')).toBe('scheduled-jobs-runat');
    expect(slug('Node 24 and the EBADENGINE warnings')).toBe('node-24-and-the-ebadengine-warnings');
  });
});

describe.each(PAGES)('%s', (page) => {
  it('exists', () => {
    expect(existsSync(join(ROOT, page))).toBe(true);
  });

  it('links only to files of the repository that exist, and to headings they have', () => {
    const broken: string[] = [];
    for (const link of links(page)) {
      if (/^(https?|mailto):/.test(link)) continue;
      const [path = '', anchor] = link.split('#');
      const target = path === '' ? join(ROOT, page) : resolve(dirname(join(ROOT, page)), path);
      if (relative(ROOT, target).startsWith('..') || !existsSync(target)) {
        broken.push(`${link}: no such file in the repository`);
        continue;
      }
      if (anchor !== undefined) {
        if (statSync(target).isDirectory() || !target.endsWith('.md'))
          broken.push(`${link}: anchor into a non-page`);
        else if (!anchors(readFileSync(target, 'utf8')).has(anchor)) broken.push(`${link}: no such heading`);
      }
    }
    expect(broken).toEqual([]);
  });

  it('cites nothing a clone does not have', () => {
    expect(read(page)).not.toMatch(/CONTRACT\.md|\.\.\/shared\/|CONTRACT section/);
  });

  it('calls the API with X-API-Key (never `Authorization: Bearer`) and mints keys without `uuidgen`', () => {
    const text = read(page);
    expect(text).not.toMatch(/authorization: bearer/i);
    expect(text).not.toMatch(/\buuidgen\b/);
    const curls = [...text.matchAll(/^curl (?:[^\n]*\\\n)*[^\n]*$/gm)].map((match) => match[0]);
    for (const command of curls.filter((c) => /\/v1\//.test(c))) expect(command).toMatch(/X-API-Key: /);
  });
});
