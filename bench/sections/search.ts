import { SEARCH_LIMIT_DEFAULT } from '../../config/search';
import { type SearchCost, type SearchCostAssumptions, searchCostPerHour } from '../cost';
import { PRICES_REGION } from '../prices';
import {
  LANGUAGES,
  type Language,
  loadRetrievalSet,
  QUERY_KINDS,
  type QueryKind,
  type RetrievalSet,
  WORDS_PER_SECOND,
} from '../retrieval/set';
import { fmt, print, round, sizeFromEnv } from '../support/common';
import { vectorIndexesUnderTest } from '../support/indexes-under-test';
import {
  bm25Scorer,
  EMBEDDING,
  embedderScorer,
  evaluate,
  MRR_CUTOFF,
  type Quality,
  type QualityReport,
  RECALL_AT,
} from '../support/retrieval';
import { type LatencyFigures, measureSearchLatency } from '../support/search-latency';

/**
 * Search over published sermons: (1) quality on the labelled set
 * (bench/retrieval), the local embedder's exact cosine ranking beside a
 * keyword search, MiniSearch's BM25+, as the peer; (2) a search's latency
 * over 1,000 published hours of synthetic passages, locally, through an
 * exact scan in this process and through the local S3 Vectors emulator over
 * HTTP with the AWS SDK (../support/vector-index.ts chooses), beside what the
 * S3 Vectors documentation says of it in AWS; (3) what an hour costs to
 * publish and keep searchable, and a thousand searches, at AWS list prices.
 * Embedding throughput at the provider's limit is measured through the
 * whole audio.publish pipeline, in the embedding section.
 *
 * The local embedder is lexical (signed hashing of word stems): its figures
 * say how far shared words alone go on this set, not how a semantic model
 * would do. `BENCH_SEARCH_HOURS` and `BENCH_SEARCH_QUERIES` change the index
 * and the number of timed queries.
 */

/** What the S3 Vectors documentation says a query takes, in place of a measurement in AWS. */
export const S3_VECTORS_DOCUMENTED_LATENCY = {
  text: 'sub-second for cold queries, as low as 100 ms for warm ones',
  warmMs: 100,
  coldMs: 1000,
  source:
    'Amazon S3 User Guide, "S3 Vectors best practices", https://docs.aws.amazon.com/AmazonS3/latest/userguide/s3-vectors-best-practices.html: "sub-second query performance for cold queries and as low as 100 milliseconds for warm queries" (read 2026-12-06 in the stored copy of the same page at docs.amazonaws.cn/en_us; the stored docs.aws.amazon.com copy is older and says "sub-second query performance")',
} as const;

/** About the passages `indexPassages` makes (30 to 60 s, cut at a sentence's end): 90 an hour. */
const PASSAGE_SECONDS = 40;
const OTHER_TENANT_HOURS = 10;
const CORPUS_SEED = 20261206;

/** Characters a token takes: Titan's English average, and Cohere's rule of thumb, from each model's guide. */
const CHARS_PER_TOKEN = { titan: 4.7, cohere: 4 } as const;
const CHARS_PER_TOKEN_SOURCES = [
  'Titan: 4.7 characters a token on average in English, https://docs.aws.amazon.com/bedrock/latest/userguide/titan-embedding-models.html',
  'Cohere: "1 token is about 4 characters", https://docs.aws.amazon.com/bedrock/latest/userguide/model-parameters-embed.html',
];
/**
 * A passage's vector as the pipeline would store it: its key
 * (`<job id>#<index>`: `job_` and 26 characters, `#`, up to 3 digits); as
 * filterable metadata the tenant, the recording, its date and labels, about
 * 128 bytes; as metadata returned with a hit, the passage's text and times.
 */
const KEY_BYTES = 34;
const FILTERABLE_METADATA_BYTES = 128;
const PASSAGE_TIMES_BYTES = 32;
const COST_QUERIES = 1000;

export interface SetSize {
  readonly sermons: number;
  readonly passages: number;
  readonly words: number;
  readonly queries: number;
  readonly byLanguage: Readonly<Record<Language, { sermons: number; queries: number }>>;
  readonly byKind: Readonly<Record<QueryKind, number>>;
}

export interface SearchFigures {
  readonly set: SetSize;
  readonly quality: {
    readonly embedder: QualityReport;
    /** The peer: BM25+ over the embedder's own terms (stems, stop words out). */
    readonly bm25: QualityReport;
    /** BM25+ over MiniSearch's default terms (lower-cased words, nothing stemmed or dropped). */
    readonly bm25Words: QualityReport;
  };
  readonly latency: LatencyFigures;
  readonly aws: typeof S3_VECTORS_DOCUMENTED_LATENCY;
  readonly cost: { readonly assumptions: SearchCostAssumptions; readonly perHour: SearchCost };
}

const wordsOf = (text: string) => text.trim().split(/\s+/u).length;

export function setSize(set: RetrievalSet): SetSize {
  const count = <T>(items: readonly T[], keep: (item: T) => boolean) => items.filter(keep).length;
  return {
    sermons: set.sermons.length,
    passages: set.passages.length,
    words: set.passages.reduce((sum, passage) => sum + wordsOf(passage.text), 0),
    queries: set.queries.length,
    byLanguage: Object.fromEntries(
      LANGUAGES.map((language) => [
        language,
        {
          sermons: count(set.sermons, (s) => s.language === language),
          queries: count(set.queries, (q) => q.language === language),
        },
      ]),
    ) as SetSize['byLanguage'],
    byKind: Object.fromEntries(
      QUERY_KINDS.map((kind) => [kind, count(set.queries, (q) => q.kind === kind)]),
    ) as SetSize['byKind'],
  };
}

/** The cost model's inputs: the pace and passage size above, characters per word and per query measured on the set. */
export function costAssumptions(set: RetrievalSet, indexHours: number): SearchCostAssumptions {
  const english = set.passages.filter((passage) => passage.language === 'en');
  const chars = english.reduce((sum, passage) => sum + passage.text.length + 1, 0);
  const words = english.reduce((sum, passage) => sum + wordsOf(passage.text), 0);
  const charsPerWord = chars / words;
  const queries = set.queries.filter((query) => query.language === 'en');
  const queryChars = queries.reduce((sum, query) => sum + query.text.length, 0) / queries.length;
  const passageWords = PASSAGE_SECONDS * WORDS_PER_SECOND;
  return {
    wordsPerHour: WORDS_PER_SECOND * 3600,
    passageSeconds: PASSAGE_SECONDS,
    charsPerWord: round(charsPerWord, 2),
    charsPerToken: CHARS_PER_TOKEN,
    vector: {
      dimensions: EMBEDDING.dimensions,
      keyBytes: KEY_BYTES,
      filterableMetadataBytes: FILTERABLE_METADATA_BYTES,
      nonFilterableMetadataBytes: Math.round(passageWords * charsPerWord) + PASSAGE_TIMES_BYTES,
    },
    indexHours,
    queries: COST_QUERIES,
    queryChars: round(queryChars, 1),
  };
}

/** Whole units with thousands marked; a fraction to four significant figures. */
const quantityText = (n: number) => (n >= 1 ? Math.round(n).toLocaleString('en-US') : n.toPrecision(4));
const pct = (share: number) => `${fmt(share * 100, 1)} %`;
const qualityText = (q: Quality) => `${pct(q.recallAt5)} / ${fmt(q.mrr, 3)}`;

function printQuality(set: RetrievalSet, quality: SearchFigures['quality']) {
  const size = setSize(set);
  print(
    `labelled set: ${size.sermons} sermons (${size.byLanguage.ar.sermons} in Arabic), ${size.passages} passages, ` +
      `${size.words.toLocaleString('en-US')} words; ${size.queries} queries (${size.byLanguage.ar.queries} in Arabic): ` +
      QUERY_KINDS.map((kind) => `${size.byKind[kind]} ${kind}`).join(', '),
  );
  print(
    `measured: recall@${RECALL_AT} / MRR@${MRR_CUTOFF} of the labelled passage among all ${size.passages} (ties ranked against it)`,
  );
  const kinds = QUERY_KINDS.map((kind) => `${kind} (${size.byKind[kind]})`);
  print(`| method | all (${size.queries}) | ${kinds.join(' | ')} | Arabic (${size.byLanguage.ar.queries}) |`);
  print(`|---|---:|${kinds.map(() => '---:|').join('')}---:|`);
  const rows: [string, QualityReport][] = [
    [`local embedder, exact cosine, ${EMBEDDING.dimensions} dims`, quality.embedder],
    ["peer: MiniSearch BM25+, the embedder's stems", quality.bm25],
    ['MiniSearch BM25+, plain lower-cased words', quality.bm25Words],
  ];
  for (const [name, report] of rows) {
    print(
      `| ${name} | ${qualityText(report)} | ${QUERY_KINDS.map((kind) => qualityText(report.byKind[kind])).join(' | ')} | ${qualityText(report.byLanguage.ar)} |`,
    );
  }
  const missed = set.queries.filter(
    (query) =>
      (quality.embedder.ranks[query.id] as number) > RECALL_AT &&
      (quality.bm25.ranks[query.id] as number) > RECALL_AT,
  );
  print(`missed by both the embedder and the peer (rank of the labelled passage: embedder / peer):`);
  for (const query of missed) {
    print(
      `- ${query.id} ${query.kind}: "${query.text}" (${quality.embedder.ranks[query.id]} / ${quality.bm25.ranks[query.id]})`,
    );
  }
}

export async function searchSection(): Promise<SearchFigures> {
  const hours = sizeFromEnv(process.env, 'BENCH_SEARCH_HOURS', 1000);
  const queries = sizeFromEnv(process.env, 'BENCH_SEARCH_QUERIES', 200);
  print(
    `\n## Search over published sermons: quality on a labelled set, latency over ${hours.toLocaleString('en-US')} published hours, cost`,
  );
  const set = loadRetrievalSet();
  const quality = {
    embedder: evaluate(set, embedderScorer(set.passages)),
    bm25: evaluate(set, bm25Scorer(set.passages, 'stems')),
    bm25Words: evaluate(set, bm25Scorer(set.passages, 'words')),
  };
  printQuality(set, quality);

  const underTest = await vectorIndexesUnderTest(EMBEDDING.dimensions);
  let latency: LatencyFigures;
  try {
    latency = await measureSearchLatency({
      indexes: underTest,
      passages: set.passages,
      texts: set.queries.map((query) => query.text),
      hours,
      otherTenantHours: OTHER_TENANT_HOURS,
      queries,
      topK: SEARCH_LIMIT_DEFAULT,
      seed: CORPUS_SEED,
      passageSeconds: PASSAGE_SECONDS,
      wordsPerSecond: WORDS_PER_SECOND,
    });
  } finally {
    for (const index of underTest) await index.close();
  }
  print(
    `measured: search latency over ${latency.queries} queries, each the query embedded locally, then top ${latency.topK} of one tenant's ` +
      `${latency.passages.toLocaleString('en-US')} passages (${latency.hours.toLocaleString('en-US')} h of ${PASSAGE_SECONDS} s) beside ` +
      `${latency.otherTenantPassages} of another tenant's the filter kept out; embedding the passages and filling the indexes took ${latency.fillS} s`,
  );
  print('| index | p50 | p99 | max | same top 10 as the first | ready after the fill | filled |');
  print('|---|---:|---:|---:|---:|---:|---|');
  latency.byIndex.forEach((measured, i) => {
    print(
      `| ${measured.index} | ${measured.p50Ms} ms | ${measured.p99Ms} ms | ${measured.maxMs} ms | ` +
        `${measured.sameAsFirst} of ${latency.queries} | ${measured.readyS} s | ${underTest[i]?.loading} |`,
    );
  });
  print(
    `documented, not measured: S3 Vectors in AWS, ${S3_VECTORS_DOCUMENTED_LATENCY.text} (${S3_VECTORS_DOCUMENTED_LATENCY.source})`,
  );

  const assumptions = costAssumptions(set, hours);
  const perHour = searchCostPerHour(assumptions);
  const v = assumptions.vector;
  print(
    `computed: cost per published hour, ${PRICES_REGION} list prices (bench/prices.ts, checked 2026-12-06); assumed: ` +
      `${assumptions.wordsPerHour.toLocaleString('en-US')} words an hour, ${fmt(perHour.passagesPerHour, 0)} passages of ${PASSAGE_SECONDS} s, ` +
      `${assumptions.charsPerWord} characters a word (measured on the set's English passages), ` +
      `${CHARS_PER_TOKEN.titan} characters a Titan token and ${CHARS_PER_TOKEN.cohere} a Cohere one (${CHARS_PER_TOKEN_SOURCES.join('; ')}); ` +
      `a vector of ${v.dimensions} float32 (${v.dimensions * 4} bytes), a ${v.keyBytes}-byte key, ${v.filterableMetadataBytes} bytes of filterable metadata ` +
      `and ${v.nonFilterableMetadataBytes} of text and times: ${perHour.storedBytesPerVector} bytes stored, ${perHour.queriedBytesPerVector} processed a query; ` +
      "English text (Titan's ratio is for English; Arabic may take more tokens)",
  );
  print('| item | quantity | unit | USD |');
  print('|---|---:|---|---:|');
  for (const line of perHour.lines) {
    print(`| ${line.item} | ${quantityText(line.quantity)} | ${line.unit} | $${fmt(line.usd, 6)} |`);
  }
  print(
    `per published hour: once $${fmt(perHour.embedTitanUsd + perHour.putUsd, 6)} (Titan) or $${fmt(perHour.embedCohereUsd + perHour.putUsd, 6)} (Cohere), ` +
      `then $${fmt(perHour.storageUsdPerMonth, 6)} a month; ${COST_QUERIES.toLocaleString('en-US')} searches over ${hours.toLocaleString('en-US')} h: $${fmt(perHour.queries.totalUsd, 4)}`,
  );
  return {
    set: setSize(set),
    quality,
    latency,
    aws: S3_VECTORS_DOCUMENTED_LATENCY,
    cost: { assumptions, perHour },
  };
}
