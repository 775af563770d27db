import { embedText } from '../../local/provider-sim/embedder';
import type { LabelledPassage } from '../retrieval/set';
import { quantile, round } from './common';
import { EMBEDDING } from './retrieval';
import { type CorpusOptions, publishedHours } from './synthetic-corpus';
import { PUT_VECTORS_MAX, type VectorIndex } from './vector-index';

/**
 * A search's time on a large index: the query embedded by the local
 * embedder, then the `topK` closest passages of one tenant asked of the
 * index. Every index first holds that tenant's `hours` of synthetic passages,
 * embedded once and put in batches of `PutVectors`' size, and a few hours of
 * another tenant's, which the filter must keep out of every answer; then the
 * indexes are asked the same queries one after the other.
 */

/** An index the queries are timed through: filled with `put`, asked with `query` once `ready` has answered. */
export interface TimedIndex {
  readonly name: string;
  readonly index: VectorIndex;
  ready?(): Promise<void>;
}

export interface LatencyOptions {
  /** Each filled with the same vectors, then asked the same queries, one index after the other. */
  readonly indexes: readonly TimedIndex[];
  /** The labelled set's passages: the corpus's sentences. */
  readonly passages: readonly LabelledPassage[];
  /** The queries, asked in turn until `queries` have been timed. */
  readonly texts: readonly string[];
  readonly hours: number;
  readonly otherTenantHours: number;
  readonly queries: number;
  readonly topK: number;
  readonly seed: number;
  readonly passageSeconds: number;
  readonly wordsPerSecond: number;
}

/** One index's times: its `ready` after the fill, and the timed queries. */
export interface IndexLatency {
  readonly index: string;
  readonly readyS: number;
  readonly p50Ms: number;
  readonly p99Ms: number;
  readonly maxMs: number;
  /** Queries whose top `topK` keys were the first index's, in any order: exact indexes agree but for ties. */
  readonly sameAsFirst: number;
}

export interface LatencyFigures {
  readonly hours: number;
  readonly passages: number;
  readonly otherTenantPassages: number;
  /** Embedding every passage and putting it in every index, before any query. */
  readonly fillS: number;
  readonly queries: number;
  readonly topK: number;
  readonly byIndex: readonly IndexLatency[];
}

export const TENANT = 'tenant-a';
export const OTHER_TENANT = 'tenant-b';
/** Untimed queries first, so that the timed ones find the code compiled, as a warm search function would. */
const WARM_UP_QUERIES = 3;

/** Embeds each passage once and puts every batch, of `PutVectors`' size, into each index. */
async function fill(
  indexes: readonly TimedIndex[],
  passages: readonly LabelledPassage[],
  options: CorpusOptions,
) {
  let batch: { key: string; data: Float32Array; metadata: { tenant: string } }[] = [];
  let count = 0;
  const put = async () => {
    for (const { index } of indexes) await index.put(batch);
    count += batch.length;
    batch = [];
  };
  for (const passage of publishedHours(passages, options)) {
    batch.push({
      key: passage.key,
      data: Float32Array.from(embedText(passage.text, EMBEDDING)),
      metadata: { tenant: passage.tenant },
    });
    if (batch.length === PUT_VECTORS_MAX) await put();
  }
  if (batch.length > 0) await put();
  return count;
}

export async function measureSearchLatency(o: LatencyOptions): Promise<LatencyFigures> {
  if (o.texts.length === 0) throw new RangeError('no queries to ask');
  if (o.indexes.length === 0) throw new RangeError('no index to ask');
  const corpus = { passageSeconds: o.passageSeconds, wordsPerSecond: o.wordsPerSecond };
  const fillStarted = performance.now();
  const passages = await fill(o.indexes, o.passages, {
    ...corpus,
    hours: o.hours,
    tenant: TENANT,
    seed: o.seed,
  });
  const otherTenantPassages = await fill(o.indexes, o.passages, {
    ...corpus,
    hours: o.otherTenantHours,
    tenant: OTHER_TENANT,
    seed: o.seed + 1,
    keyPrefix: `${OTHER_TENANT}/`,
  });
  const fillS = (performance.now() - fillStarted) / 1000;

  const queryTexts = Array.from({ length: o.queries }, (_, i) => o.texts[i % o.texts.length] as string);
  let firstAnswers: string[][] | undefined;
  const byIndex: IndexLatency[] = [];
  for (const { name, index, ready } of o.indexes) {
    const readyStarted = performance.now();
    await ready?.();
    const readyS = (performance.now() - readyStarted) / 1000;
    // The query is embedded within the timed search, as the search function does.
    const search = async (text: string) => {
      const vector = Float32Array.from(embedText(text, EMBEDDING));
      return index.query(vector, o.topK, { tenant: TENANT });
    };
    for (let i = 0; i < WARM_UP_QUERIES; i++) await search(o.texts[i % o.texts.length] as string);
    const times: number[] = [];
    const answers: string[][] = [];
    for (const text of queryTexts) {
      const started = performance.now();
      const hits = await search(text);
      times.push(performance.now() - started);
      const foreign = hits.find((hit) => hit.key.startsWith(`${OTHER_TENANT}/`));
      if (foreign) throw new Error(`${name}: "${text}" found ${foreign.key}, another tenant's passage`);
      if (hits.length !== o.topK)
        throw new Error(`${name}: "${text}" found ${hits.length} passages, not ${o.topK}`);
      answers.push(hits.map((hit) => hit.key).sort());
    }
    firstAnswers ??= answers;
    const first = firstAnswers;
    byIndex.push({
      index: name,
      readyS: round(readyS, 1),
      p50Ms: round(quantile(times, 0.5), 1),
      p99Ms: round(quantile(times, 0.99), 1),
      maxMs: round(Math.max(...times), 1),
      sameAsFirst: answers.filter((keys, i) => keys.join('\n') === first[i]?.join('\n')).length,
    });
  }
  return {
    hours: o.hours,
    passages,
    otherTenantPassages,
    fillS: round(fillS, 1),
    queries: o.queries,
    topK: o.topK,
    byIndex,
  };
}
