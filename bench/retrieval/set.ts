import * as z from 'zod';
import type { Passage } from '../../lambdas/domain/passages';
import { stems } from '../../local/provider-sim/embedder';
import { QUERIES } from './queries';
import { SERMONS } from './sermons';
import {
  LANGUAGES,
  type Language,
  PASSAGE_WORDS,
  type QuerySource,
  querySource,
  type SermonSource,
  sermonSource,
  wordCount,
} from './sources';

export {
  LANGUAGES,
  type Language,
  PASSAGE_WORDS,
  type QuerySource,
  querySource,
  type SermonSource,
  sermonSource,
};

/**
 * The labelled set search quality is measured on: sermons cut into passages
 * the size `indexPassages` makes, and queries a listener might type, each
 * labelled with the one passage it should find.
 *
 * How it was made. Every sermon was written for this set (original prose, no
 * transcript of a real recording), one file each under ./sermons, on the
 * topics a congregation hears: forgiveness, the two sons of Luke 15, worry,
 * giving, rest, grief, justice, prayer, creation, strangers, patience,
 * humility, courage, gratitude, doubt, and more. Passages are 60 to 120 words,
 * 24 to 48 seconds at the 2.5 words a second a preacher speaks; their start
 * and end are derived from that pace, back to back. Two sermons are in Arabic,
 * because the product serves Arabic-speaking congregations, and Arabic has no
 * stemmer here: a word with a prefix (و، ال، ب) is another word.
 *
 * What it tests. Several sermons share their vocabulary on purpose (the
 * younger and the elder son; worry, anxious nights and Martha; giving,
 * justice and Zacchaeus; the Sabbath and the land's Sabbath; forgiveness in
 * the Lord's Prayer and in Peter's question), so a query's words alone do not
 * single its passage out. The queries were written after the passages, looking
 * at one passage each; what kind a query is follows from its words, not from
 * its author's intent (`kindOf`): near-verbatim (its stems appear in its
 * passage in order), paraphrase (it shares some stems) or hard (at most one
 * stem shared: a lexical method should miss most of these, and one English
 * query asks for an Arabic passage).
 */

/** A preacher's pace: about 9,000 words an hour. */
export const WORDS_PER_SECOND = 2.5;
const normalized = (text: string) => text.normalize('NFKC').toLowerCase().replace(/\s+/gu, ' ').trim();

export const retrievalSource = z
  .strictObject({ sermons: z.array(sermonSource).min(1), queries: z.array(querySource).min(1) })
  .superRefine(({ sermons, queries }, ctx) => {
    const seen = new Set<string>();
    sermons.forEach((sermon, i) => {
      if (seen.has(sermon.id)) {
        ctx.addIssue({ code: 'custom', path: ['sermons', i, 'id'], message: `sermon ${sermon.id} twice` });
      }
      seen.add(sermon.id);
    });
    const byId = new Map(sermons.map((sermon) => [sermon.id, sermon]));
    const texts = new Map<string, number>();
    queries.forEach((query, i) => {
      const sermon = byId.get(query.sermonId);
      if (!sermon) {
        ctx.addIssue({ code: 'custom', path: ['queries', i], message: `no sermon ${query.sermonId}` });
      } else if (query.passageIndex >= sermon.passages.length) {
        ctx.addIssue({
          code: 'custom',
          path: ['queries', i],
          message: `sermon ${query.sermonId} has ${sermon.passages.length} passages, no passage ${query.passageIndex}`,
        });
      }
      const text = normalized(query.text);
      const first = texts.get(text);
      if (first !== undefined) {
        ctx.addIssue({ code: 'custom', path: ['queries', i], message: `the same query as query ${first}` });
      }
      texts.set(text, i);
    });
  });

export const QUERY_KINDS = ['verbatim', 'paraphrase', 'hard'] as const;
export type QueryKind = (typeof QUERY_KINDS)[number];

export interface LabelledPassage extends Passage {
  /** `<sermonId>#<index>`: how rankings name a passage. */
  readonly key: string;
  readonly sermonId: string;
  readonly index: number;
  readonly language: Language;
}

export interface LabelledSermon {
  readonly id: string;
  readonly title: string;
  readonly language: Language;
  readonly passages: readonly LabelledPassage[];
}

export interface LabelledQuery {
  /** `q01`, `q02`…, in the order of ./queries.ts. */
  readonly id: string;
  readonly text: string;
  readonly language: Language;
  /** The key of the passage it should find. */
  readonly expected: string;
  readonly kind: QueryKind;
}

export interface RetrievalSet {
  readonly sermons: readonly LabelledSermon[];
  readonly passages: readonly LabelledPassage[];
  readonly queries: readonly LabelledQuery[];
}

export const passageKey = (sermonId: string, index: number) => `${sermonId}#${index}`;

const ARABIC = /\p{Script=Arabic}/u;
export const languageOf = (text: string): Language => (ARABIC.test(text) ? 'ar' : 'en');

/**
 * What kind a query is, from its words and its passage's, as the local
 * embedder reads them (stems, stop words left out): `verbatim` when the
 * query's stems appear in the passage one after another, `hard` when at most
 * one distinct stem is shared, `paraphrase` otherwise.
 */
export function kindOf(query: string, passage: string): QueryKind {
  const asked = stems(query);
  const said = stems(passage);
  const inOrder = said.some((_, start) => asked.every((stem, k) => said[start + k] === stem));
  if (asked.length > 0 && inOrder) return 'verbatim';
  const saidSet = new Set(said);
  const shared = new Set(asked.filter((stem) => saidSet.has(stem)));
  return shared.size <= 1 ? 'hard' : 'paraphrase';
}

/** Passages back to back from 0, each as long as its words take at `WORDS_PER_SECOND`, to 0.1 s. */
function timed(texts: readonly string[]): Passage[] {
  let start = 0;
  return texts.map((text) => {
    const end = Math.round((start + wordCount(text) / WORDS_PER_SECOND) * 10) / 10;
    const passage = { start, end, text };
    start = end;
    return passage;
  });
}

/** The set as shipped, or as given (a test's), validated: a bad label or a duplicate query throws. */
export function loadRetrievalSet(
  source: { sermons: readonly SermonSource[]; queries: readonly QuerySource[] } = {
    sermons: SERMONS,
    queries: QUERIES,
  },
): RetrievalSet {
  const { sermons, queries } = retrievalSource.parse(source);
  const labelled = sermons.map(
    (sermon): LabelledSermon => ({
      id: sermon.id,
      title: sermon.title,
      language: sermon.language,
      passages: timed(sermon.passages).map((passage, index) => ({
        ...passage,
        key: passageKey(sermon.id, index),
        sermonId: sermon.id,
        index,
        language: sermon.language,
      })),
    }),
  );
  const passages = labelled.flatMap((sermon) => sermon.passages);
  const byKey = new Map(passages.map((passage) => [passage.key, passage]));
  return {
    sermons: labelled,
    passages,
    queries: queries.map((query, i): LabelledQuery => {
      const expected = passageKey(query.sermonId, query.passageIndex);
      return {
        id: `q${String(i + 1).padStart(2, '0')}`,
        text: query.text,
        language: languageOf(query.text),
        expected,
        kind: kindOf(query.text, byKey.get(expected)?.text ?? ''),
      };
    }),
  };
}
