import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { allRoutes, routes } from '../../config/layout';

/** The README's HTTP API table against the routes the API serves (config/layout.ts). */

const readme = readFileSync(resolve(__dirname, '../../README.md'), 'utf8');
const section = readme.slice(readme.indexOf('\n## HTTP API\n'));
const tableRows = section.slice(section.indexOf('\n|')).split('\n\n')[0]?.split('\n') ?? [];
/** `METHOD /path` of each row, without the query it shows. */
const listed = tableRows.flatMap((row) => /^\| `([A-Z]+ \/[^`?]*)/.exec(row)?.[1] ?? []);

describe("the README's HTTP API table", () => {
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
