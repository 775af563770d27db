import { embedText } from '../../local/provider-sim/embedder';
import type { LabelledPassage } from '../retrieval/set';
import { quantile, round } from './common';
import { EMBEDDING } from './retrieval';
import { type CorpusOptions, publishedHours } from './synthetic-corpus';
import { PUT_VECTORS_MAX, type VectorIndex } from './vector-index';

/**
 * A search's time on a large index: the query embedded by the local
 * embedder, then the `topK` closest passages of one tenant asked of the
 * index. The index first holds that tenant's `hours` of synthetic passages,
 * embedded the same way and put in batches of `PutVectors`' size, and a few
 * hours of another tenant's, which the filter must keep out of every answer.
 */

export interface LatencyOptions {
  readonly index: VectorIndex;
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

export interface LatencyFigures {
  readonly hours: number;
  readonly passages: number;
  readonly otherTenantPassages: number;
  /** Embedding every passage and putting it in the index, before any query. */
  readonly fillS: number;
  readonly queries: number;
  readonly topK: number;
  readonly p50Ms: number;
  readonly p99Ms: number;
  readonly maxMs: number;
}

export const TENANT = 'tenant-a';
export const OTHER_TENANT = 'tenant-b';
/** Untimed queries first, so that the timed ones find the code compiled, as a warm search function would. */
const WARM_UP_QUERIES = 3;

async function fill(index: VectorIndex, passages: readonly LabelledPassage[], options: CorpusOptions) {
  let batch: { key: string; data: Float32Array; metadata: { tenant: string } }[] = [];
  let count = 0;
  for (const passage of publishedHours(passages, options)) {
    batch.push({
      key: passage.key,
      data: Float32Array.from(embedText(passage.text, EMBEDDING)),
      metadata: { tenant: passage.tenant },
    });
    if (batch.length === PUT_VECTORS_MAX) {
      await index.put(batch);
      count += batch.length;
      batch = [];
    }
  }
  if (batch.length > 0) await index.put(batch);
  return count + batch.length;
}

export async function measureSearchLatency(o: LatencyOptions): Promise<LatencyFigures> {
  if (o.texts.length === 0) throw new RangeError('no queries to ask');
  const corpus = { passageSeconds: o.passageSeconds, wordsPerSecond: o.wordsPerSecond };
  const fillStarted = performance.now();
  const passages = await fill(o.index, o.passages, {
    ...corpus,
    hours: o.hours,
    tenant: TENANT,
    seed: o.seed,
  });
  const otherTenantPassages = await fill(o.index, o.passages, {
    ...corpus,
    hours: o.otherTenantHours,
    tenant: OTHER_TENANT,
    seed: o.seed + 1,
    keyPrefix: `${OTHER_TENANT}/`,
  });
  const fillS = (performance.now() - fillStarted) / 1000;

  const search = async (text: string) => {
    const vector = Float32Array.from(embedText(text, EMBEDDING));
    return o.index.query(vector, o.topK, { tenant: TENANT });
  };
  for (let i = 0; i < WARM_UP_QUERIES; i++) await search(o.texts[i % o.texts.length] as string);
  const times: number[] = [];
  for (let i = 0; i < o.queries; i++) {
    const text = o.texts[i % o.texts.length] as string;
    const started = performance.now();
    const hits = await search(text);
    times.push(performance.now() - started);
    const foreign = hits.find((hit) => hit.key.startsWith(`${OTHER_TENANT}/`));
    if (foreign) throw new Error(`"${text}" found ${foreign.key}, another tenant's passage`);
    if (hits.length !== o.topK) throw new Error(`"${text}" found ${hits.length} passages, not ${o.topK}`);
  }
  return {
    hours: o.hours,
    passages,
    otherTenantPassages,
    fillS: round(fillS, 1),
    queries: o.queries,
    topK: o.topK,
    p50Ms: round(quantile(times, 0.5), 1),
    p99Ms: round(quantile(times, 0.99), 1),
    maxMs: round(Math.max(...times), 1),
  };
}
