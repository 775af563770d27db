import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { EVENT_DETAIL_TYPES } from '../../config/events';
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

describe("the README's table of events on the bus", () => {
  it('has one row for each detail-type config/events.ts defines, and no other', () => {
    const events = readme.slice(readme.indexOf('\n## Events on the bus\n'));
    const rows = events.slice(events.indexOf('\n|')).split('\n\n')[0]?.split('\n') ?? [];
    const listedTypes = rows.flatMap((row) => /^\| `([a-z_.]+)`/.exec(row)?.[1] ?? []);
    expect(listedTypes).toEqual([...EVENT_DETAIL_TYPES]);
  });
});
