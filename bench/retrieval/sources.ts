import * as z from 'zod';

/**
 * What a sermon and a query of the labelled set are written as, checked when
 * the set loads. The sermon and query files are typed by these, and
 * set.ts reads those files, so the shapes sit below both.
 */

export const PASSAGE_WORDS = { min: 60, max: 120 } as const;

export const LANGUAGES = ['en', 'ar'] as const;
export type Language = (typeof LANGUAGES)[number];

export const wordCount = (text: string) => text.trim().split(/\s+/u).length;

const passageText = z
  .string()
  .trim()
  .superRefine((text, ctx) => {
    const words = wordCount(text);
    if (words < PASSAGE_WORDS.min || words > PASSAGE_WORDS.max) {
      ctx.addIssue({
        code: 'custom',
        message: `a passage has ${PASSAGE_WORDS.min} to ${PASSAGE_WORDS.max} words, this one ${words}: "${text.slice(0, 40)}…"`,
      });
    }
  });

export const sermonSource = z.strictObject({
  id: z.string().regex(/^[a-z0-9]+(?:-[a-z0-9]+)*$/, 'must be kebab-case'),
  title: z.string().min(1),
  language: z.enum(LANGUAGES),
  /** What the preacher said, passage by passage, in order. */
  passages: z.array(passageText).min(3),
});
export type SermonSource = z.input<typeof sermonSource>;

export const querySource = z.strictObject({
  text: z.string().trim().min(1),
  sermonId: z.string(),
  passageIndex: z.int().min(0),
});
export type QuerySource = z.input<typeof querySource>;
