import MiniSearch from 'minisearch';
import { SEARCH_LIMIT_DEFAULT } from '../../config/search';
import { defaultSettings } from '../../config/settings';
import { embedText, stems } from '../../local/provider-sim/embedder';
import {
  LANGUAGES,
  type LabelledPassage,
  type LabelledQuery,
  type Language,
  QUERY_KINDS,
  type QueryKind,
  type RetrievalSet,
} from '../retrieval/set';
import { round } from './common';

/**
 * Search quality on the labelled set: where each query's passage ranks among
 * all the set's passages, for the local embedder and for a keyword search.
 * Recall@5 is the share of queries whose passage is among the first five;
 * MRR is the mean of 1 / rank, counted 0 beyond the answer a search gives by
 * default (`SEARCH_LIMIT_DEFAULT`, 10), since a listener never sees those.
 */

export const RECALL_AT = 5;
export const MRR_CUTOFF = SEARCH_LIMIT_DEFAULT;
/** The embedding a deployment asks for by default (Titan Text Embeddings V2, 1,024 dimensions, unit length), locally. */
export const EMBEDDING = {
  dimensions: defaultSettings.embeddingDimensions,
  normalize: defaultSettings.embeddingNormalize,
} as const;

/** Every passage's score for a query, in the set's passage order; higher is closer. */
export type Scorer = (query: string) => ArrayLike<number>;

/**
 * The passage's rank, from 1, counting every other passage that scores at
 * least as high as it ahead of it: a tie is never a hit by luck of the order,
 * and a passage that shares nothing with the query ranks behind all that do.
 */
export function pessimisticRank(scores: ArrayLike<number>, expected: number): number {
  const own = scores[expected];
  if (own === undefined) throw new RangeError(`no passage ${expected} among ${scores.length}`);
  let ahead = 0;
  for (let i = 0; i < scores.length; i++) if (i !== expected && (scores[i] as number) >= own) ahead++;
  return ahead + 1;
}

/** The share of queries whose passage ranked within the first `k`. */
export function recallAt(ranks: readonly number[], k: number): number {
  if (ranks.length === 0) throw new RangeError('recall of no queries');
  return ranks.filter((rank) => rank <= k).length / ranks.length;
}

/** The mean of 1 / rank, a rank beyond `cutoff` counting 0. */
export function meanReciprocalRank(ranks: readonly number[], cutoff: number): number {
  if (ranks.length === 0) throw new RangeError('MRR of no queries');
  return ranks.reduce((sum, rank) => sum + (rank <= cutoff ? 1 / rank : 0), 0) / ranks.length;
}

const dot = (a: Float32Array, b: Float32Array) => {
  let sum = 0;
  for (let i = 0; i < a.length; i++) sum += (a[i] as number) * (b[i] as number);
  return sum;
};

/** The local embedder, exactly: every passage embedded, ranked by cosine (a dot product of unit vectors). */
export function embedderScorer(passages: readonly LabelledPassage[]): Scorer {
  const vectors = passages.map((passage) => Float32Array.from(embedText(passage.text, EMBEDDING)));
  return (query) => {
    const asked = Float32Array.from(embedText(query, EMBEDDING));
    return vectors.map((vector) => dot(asked, vector));
  };
}

/**
 * How the keyword peer splits text into terms: `stems`, the local embedder's
 * own (Porter stems of Latin-script words, Arabic as written, its stop words
 * left out), so that the two differ only in how they score; or `words`,
 * MiniSearch's defaults (words between spaces and punctuation, lower-cased,
 * nothing stemmed or dropped).
 */
export type Terms = 'stems' | 'words';

/**
 * The peer: MiniSearch 7's default scoring, BM25+ (k1 1.2, b 0.7, δ 0.5) summed
 * over the query's terms, times the number of distinct query terms a passage
 * matched; exact terms only, no prefix or fuzzy matching. A passage that
 * matches no term scores 0.
 */
export function bm25Scorer(passages: readonly LabelledPassage[], terms: Terms): Scorer {
  const index = new MiniSearch<{ id: number; text: string }>({
    fields: ['text'],
    ...(terms === 'stems'
      ? { tokenize: (text: string) => stems(text), processTerm: (term: string) => term }
      : {}),
  });
  index.addAll(passages.map((passage, id) => ({ id, text: passage.text })));
  return (query) => {
    const scores = new Float64Array(passages.length);
    for (const hit of index.search(query)) scores[hit.id as number] = hit.score;
    return scores;
  };
}

export interface Quality {
  readonly queries: number;
  readonly recallAt5: number;
  readonly mrr: number;
}

export interface QualityReport extends Quality {
  readonly byKind: Readonly<Record<QueryKind, Quality>>;
  readonly byLanguage: Readonly<Record<Language, Quality>>;
  /** Each query's passage's rank, by query id. */
  readonly ranks: Readonly<Record<string, number>>;
}

const quality = (ranks: readonly number[]): Quality => ({
  queries: ranks.length,
  recallAt5: ranks.length === 0 ? 0 : round(recallAt(ranks, RECALL_AT), 3),
  mrr: ranks.length === 0 ? 0 : round(meanReciprocalRank(ranks, MRR_CUTOFF), 3),
});

/** Every query of the set through one scorer. */
export function evaluate(set: RetrievalSet, scorer: Scorer): QualityReport {
  const position = new Map(set.passages.map((passage, i) => [passage.key, i]));
  const ranked = set.queries.map((query): [LabelledQuery, number] => {
    const expected = position.get(query.expected);
    if (expected === undefined)
      throw new Error(`${query.id} expects ${query.expected}, which is not in the set`);
    return [query, pessimisticRank(scorer(query.text), expected)];
  });
  const where = (keep: (query: LabelledQuery) => boolean) =>
    quality(ranked.filter(([query]) => keep(query)).map(([, rank]) => rank));
  return {
    ...where(() => true),
    byKind: Object.fromEntries(QUERY_KINDS.map((kind) => [kind, where((q) => q.kind === kind)])) as Record<
      QueryKind,
      Quality
    >,
    byLanguage: Object.fromEntries(
      LANGUAGES.map((language) => [language, where((q) => q.language === language)]),
    ) as Record<Language, Quality>,
    ranks: Object.fromEntries(ranked.map(([query, rank]) => [query.id, rank])),
  };
}
