import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { EVENT_DETAIL_TYPES } from '../../config/events';
import { JOB_TYPE_MODULES } from '../../config/job-types';
import { allRoutes, routes } from '../../config/layout';
import { PROBLEM_CODES } from '../../lambdas/api/openapi';
import { localDefaults } from '../../local/config';
import { FAULT_MODES, SIM_CONFIG_KEYS, SIM_CONTROLS } from '../../local/provider-sim/simulator';

/**
 * The README is the front door: small, with the two commands exactly as CI runs
 * them. The reference tables that restate code live in docs/ and are checked
 * here against the code that holds each fact.
 */

const ROOT = resolve(__dirname, '../..');
const read = (path: string) => readFileSync(resolve(ROOT, path), 'utf8');
const readme = read('README.md');

/** The first table after `heading` in `text`, one string per row (header and rule included). */
function tableAfter(text: string, heading: string): string[] {
  const at = text.indexOf(`\n${heading}\n`);
  if (at < 0) throw new Error(`no heading ${heading}`);
  const section = text.slice(at + heading.length + 2);
  return (
    section
      .slice(section.indexOf('\n|') + 1)
      .split('\n\n')[0]
      ?.split('\n') ?? []
  );
}

/** The first cell's backquoted value of each body row. */
const firstCells = (rows: string[], pattern: RegExp) => rows.flatMap((row) => pattern.exec(row)?.[1] ?? []);

describe('README.md', () => {
  it('is the front door: under 10 KB', () => {
    expect(Buffer.byteLength(readme)).toBeLessThan(10 * 1024);
  });

  it('gives the two commands CI runs (.ci/run: `npm ci`, then `npm test`), and how long the tests take', () => {
    expect(readme).toContain('`npm ci && npm start`');
    expect(readme).toContain('`npm ci && npm test`');
    expect(readme).toMatch(/about nine minutes/);
    expect(readme).toContain('`npx cdk synth`');
    expect(readme).toContain('`npx cdk deploy`');
    const ci = read('.ci/run').split('\n');
    expect(ci).toContain('npm ci || exit 1');
    expect(ci).toContain('npm test');
  });

  it('names both product stories in plain words', () => {
    expect(readme).toMatch(/image-generation app/);
    expect(readme).toMatch(/sermon platform/);
  });

  it('has a row for each job type a client can submit, and no other', () => {
    const rows = tableAfter(readme, '## Job types');
    expect(firstCells(rows, /^\| `([a-z.-]+)`/)).toEqual(JOB_TYPE_MODULES.map((module) => module.name));
  });
});

describe("docs/http-api.md's route table", () => {
  const listed = firstCells(tableAfter(read('docs/http-api.md'), '## Routes'), /^\| `([A-Z]+ \/[^`?]*)/);

  it('has a row for every route of the API', () => {
    const missing = routes
      .map((route) => `${route.method} ${route.path}`)
      .filter((key) => !listed.includes(key));
    expect(missing).toEqual([]);
  });

  it('has no row for a route the API does not serve, and none twice', () => {
    const served = new Set(allRoutes.map((route) => `${route.method} ${route.path}`));
    expect(listed.filter((key) => !served.has(key))).toEqual([]);
    expect(new Set(listed).size).toBe(listed.length);
  });
});

describe("docs/http-api.md's problem codes", () => {
  it('has one row for each code the API answers with, and no other', () => {
    const listed = firstCells(tableAfter(read('docs/http-api.md'), '## Problem codes'), /^\| `([a-z-]+)`/);
    expect([...listed].sort()).toEqual([...PROBLEM_CODES].sort());
  });
});

describe("docs/operations.md's table of events on the bus", () => {
  it('has one row for each detail-type config/events.ts defines, and no other', () => {
    const rows = tableAfter(read('docs/operations.md'), '## Events on the bus');
    expect(firstCells(rows, /^\| `([a-z_.]+)`/)).toEqual([...EVENT_DETAIL_TYPES]);
  });
});

describe("docs/local-stack.md's variables", () => {
  it('has a row for each variable the local stack reads with a default', () => {
    const rows = tableAfter(read('docs/local-stack.md'), '## Variables of the local stack');
    const listed = firstCells(rows, /^\| `([A-Z_]+)`/);
    expect(Object.keys(localDefaults).filter((name) => !listed.includes(name))).toEqual([]);
  });

  it('gives the local webhook signing secret as local/config.ts sets it', () => {
    expect(read('docs/local-stack.md')).toContain(
      `| \`LONGHAUL_WEBHOOK_SECRET\` | \`${localDefaults.LONGHAUL_WEBHOOK_SECRET}\` |`,
    );
  });
});

describe("docs/local-stack.md's test controls", () => {
  const text = read('docs/local-stack.md');
  const from = text.indexOf('\n### Test controls\n');
  const section = text.slice(from, text.indexOf('\n### ', from + 1));

  it('has a row for every route of the simulator under /_sim', () => {
    const rows = tableAfter(text, '### Test controls');
    const listed = firstCells(rows, /^\| `(?:GET|POST) (\/_sim\/[a-z]+)/);
    expect(SIM_CONTROLS.filter((route) => !listed.includes(route))).toEqual([]);
  });

  it('describes every fault mode and every setting /_sim/config takes', () => {
    const rows = section.split('\n').filter((line) => line.startsWith('| `'));
    const named = firstCells(rows, /^\| `([a-zA-Z-]+)`/);
    expect(FAULT_MODES.filter((mode) => mode !== 'outage' && !named.includes(mode))).toEqual([]);
    expect(section).toContain('`POST /_sim/faults {mode: "outage", seconds, provider?}`');
    expect(SIM_CONFIG_KEYS.filter((key) => !named.includes(key))).toEqual([]);
  });
});

describe('CHANGELOG.md', () => {
  it("opens with the version package.json carries: one version number, the changelog's", () => {
    const { version } = JSON.parse(read('package.json')) as { version: string };
    const newest = /^## (\S+)/m.exec(read('CHANGELOG.md'))?.[1];
    expect(newest).toBe(version);
  });
});
