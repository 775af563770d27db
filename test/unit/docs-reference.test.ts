import { readFileSync } from 'node:fs';
import { relative, resolve } from 'node:path';
import { settingFields } from '../../config/settings';
import { REFERENCE_PAGES } from '../../docs/scripts/reference';

/** The reference pages generated from the code (configuration, metrics) are committed as generated. */

const ROOT = resolve(__dirname, '../..');

describe.each(REFERENCE_PAGES.map((page) => [relative(ROOT, page.path), page] as const))(
  '%s',
  (_name, page) => {
    it('equals what `npx tsx docs/scripts/reference.ts` renders from the code', () => {
      expect(readFileSync(page.path, 'utf8')).toBe(page.render());
    });
  },
);

describe('docs/configuration.md', () => {
  it('names every setting of config/settings.ts, with its default', () => {
    const page = readFileSync(resolve(ROOT, 'docs/configuration.md'), 'utf8');
    for (const field of Object.values(settingFields)) {
      expect(page).toContain(`| \`${field.env}\` | `);
    }
  });
});
