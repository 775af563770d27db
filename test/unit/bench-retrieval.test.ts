import { SERMONS } from '../../bench/retrieval/sermons';
import {
  kindOf,
  loadRetrievalSet,
  PASSAGE_WORDS,
  type QuerySource,
  type SermonSource,
  WORDS_PER_SECOND,
} from '../../bench/retrieval/set';
import {
  bm25Scorer,
  embedderScorer,
  evaluate,
  meanReciprocalRank,
  pessimisticRank,
  recallAt,
} from '../../bench/support/retrieval';

/** The search quality figures: the metrics on hand-made rankings, the labelled set's integrity, the scorers. */

const set = loadRetrievalSet();
const words = (text: string) => text.trim().split(/\s+/u).length;

describe('metrics', () => {
  test('recall@k is the share of queries whose passage ranked within k', () => {
    const ranks = [1, 3, 6, 11, 5];

    expect(recallAt(ranks, 5)).toBe(3 / 5);
    expect(recallAt(ranks, 1)).toBe(1 / 5);
    expect(recallAt(ranks, 20)).toBe(1);
  });

  test('MRR averages 1 / rank, a rank past the cutoff counting 0', () => {
    const ranks = [1, 3, 6, 11, 2];

    expect(meanReciprocalRank(ranks, 10)).toBeCloseTo((1 + 1 / 3 + 1 / 6 + 0 + 1 / 2) / 5, 12);
    expect(meanReciprocalRank(ranks, 5)).toBeCloseTo((1 + 1 / 3 + 0 + 0 + 1 / 2) / 5, 12);
    expect(meanReciprocalRank([1, 1], 10)).toBe(1);
  });

  test('no queries is an error, not a perfect or a zero score', () => {
    expect(() => recallAt([], 5)).toThrow('recall of no queries');
    expect(() => meanReciprocalRank([], 10)).toThrow('MRR of no queries');
  });

  test('a rank counts every other passage scoring at least as high: a tie is never won by order', () => {
    const scores = [0.5, 0.9, 0.5, 0.1];

    expect(pessimisticRank(scores, 1)).toBe(1);
    expect(pessimisticRank(scores, 0)).toBe(3);
    expect(pessimisticRank(scores, 2)).toBe(3);
    expect(pessimisticRank(scores, 3)).toBe(4);
    // Nothing shared with any passage: the labelled one is last, wherever it stands.
    expect(pessimisticRank([0, 0, 0, 0], 0)).toBe(4);
    expect(() => pessimisticRank(scores, 4)).toThrow('no passage 4 among 4');
  });
});

describe('the labelled set', () => {
  test('has at least 20 sermons, two of them in Arabic, and at least 50 queries, some in Arabic', () => {
    expect(set.sermons.length).toBeGreaterThanOrEqual(20);
    expect(set.sermons.filter((sermon) => sermon.language === 'ar').length).toBeGreaterThanOrEqual(2);
    expect(set.queries.length).toBeGreaterThanOrEqual(50);
    expect(set.queries.filter((query) => query.language === 'ar').length).toBeGreaterThanOrEqual(3);
  });

  test('every label points at a passage of the set', () => {
    const keys = new Set(set.passages.map((passage) => passage.key));

    for (const query of set.queries) expect(keys).toContain(query.expected);
  });

  test('no query is asked twice, whatever its case and spacing', () => {
    const texts = set.queries.map((query) => query.text.toLowerCase().replace(/\s+/gu, ' ').trim());

    expect(new Set(texts).size).toBe(texts.length);
  });

  test('has near-verbatim queries, paraphrases and hard ones', () => {
    const kinds = set.queries.map((query) => query.kind);

    expect(kinds.filter((kind) => kind === 'verbatim').length).toBeGreaterThanOrEqual(10);
    expect(kinds.filter((kind) => kind === 'paraphrase').length).toBeGreaterThanOrEqual(20);
    expect(kinds.filter((kind) => kind === 'hard').length).toBeGreaterThanOrEqual(5);
  });

  test('passages are the size indexPassages makes, timed back to back at the pace of speech', () => {
    for (const sermon of set.sermons) {
      let end = 0;
      for (const passage of sermon.passages) {
        expect(words(passage.text)).toBeGreaterThanOrEqual(PASSAGE_WORDS.min);
        expect(words(passage.text)).toBeLessThanOrEqual(PASSAGE_WORDS.max);
        expect(passage.start).toBe(end);
        expect(passage.end - passage.start).toBeCloseTo(words(passage.text) / WORDS_PER_SECOND, 0);
        end = passage.end;
      }
    }
  });
});

describe('loading a set', () => {
  const filler = (seed: string) => Array.from({ length: 70 }, (_, i) => `${seed}${i}`).join(' ');
  const sermon: SermonSource = {
    id: 'one',
    title: 'One',
    language: 'en',
    passages: [filler('alpha'), filler('beta'), filler('gamma')],
  };
  const load =
    (queries: QuerySource[], sermons: SermonSource[] = [sermon]) =>
    () =>
      loadRetrievalSet({ sermons, queries });

  test('refuses a label past the sermon’s last passage', () => {
    expect(load([{ text: 'alpha', sermonId: 'one', passageIndex: 3 }])).toThrow(
      'sermon one has 3 passages, no passage 3',
    );
  });

  test('refuses a label naming no sermon', () => {
    expect(load([{ text: 'alpha', sermonId: 'two', passageIndex: 0 }])).toThrow('no sermon two');
  });

  test('refuses the same query twice, whatever its case and spacing', () => {
    expect(
      load([
        { text: 'Alpha  beta', sermonId: 'one', passageIndex: 0 },
        { text: 'alpha beta', sermonId: 'one', passageIndex: 1 },
      ]),
    ).toThrow('the same query as query 0');
  });

  test('refuses a passage too short to be one indexPassages makes', () => {
    const short = { ...sermon, passages: [...sermon.passages, 'a few words only'] };

    expect(load([{ text: 'alpha', sermonId: 'one', passageIndex: 0 }], [short])).toThrow(
      'a passage has 60 to 120 words, this one 4',
    );
  });

  test('refuses a sermon id given twice', () => {
    expect(load([{ text: 'alpha', sermonId: 'one', passageIndex: 0 }], [sermon, sermon])).toThrow(
      'sermon one twice',
    );
  });

  test('registers every sermon file once', () => {
    expect(new Set(SERMONS.map((s) => s.id)).size).toBe(SERMONS.length);
  });
});

describe('what kind a query is', () => {
  const passage = 'Peter asked how many times he should forgive his brother. Jesus said seventy times seven.';

  test('near-verbatim when its stems appear in the passage one after another, stop words aside', () => {
    expect(kindOf('how many times he should forgive his brother', passage)).toBe('verbatim');
    expect(kindOf('how many times shall I forgive my brother', passage)).toBe('verbatim');
    expect(kindOf('Forgiving his BROTHER', passage)).toBe('verbatim');
    expect(kindOf('how many times should he pardon his brother', passage)).toBe('paraphrase');
  });

  test('a paraphrase when it shares two stems or more, hard when one or none', () => {
    expect(kindOf('forgiving a brother again and again', passage)).toBe('paraphrase');
    expect(kindOf('pardoning a sibling endlessly', passage)).toBe('hard');
    expect(kindOf('pardoning a brother endlessly', passage)).toBe('hard');
  });
});

describe('scorers', () => {
  test('the embedder scores a passage asked word for word highest, at cosine 1', () => {
    const passage = set.passages[7]!;
    const scores = embedderScorer(set.passages)(passage.text);

    expect(scores[7]).toBeCloseTo(1, 5);
    expect(pessimisticRank(scores, 7)).toBe(1);
  });

  test('BM25 scores 0 a passage that shares no term with the query', () => {
    const scores = bm25Scorer(set.passages, 'stems')('Zacchaeus sycamore');
    const zacchaeus = set.passages.map((p, i) => [p, i] as const).filter(([p]) => p.sermonId === 'zacchaeus');
    const others = set.passages.map((_, i) => i).filter((i) => !zacchaeus.some(([, z]) => z === i));

    expect(scores[zacchaeus[1]![1]]).toBeGreaterThan(0);
    for (const i of others) expect(scores[i]).toBe(0);
  });

  test('the stemmed peer matches forms the plain one does not', () => {
    const stemmed = bm25Scorer(set.passages, 'stems')('forgiving');
    const plain = bm25Scorer(set.passages, 'words')('forgiving');
    const forgive = set.passages.findIndex((p) => p.key === 'forgiving-seventy-times-seven#0');

    expect(stemmed[forgive]).toBeGreaterThan(0);
    expect(plain[forgive]).toBe(0);
  });

  test('evaluation ranks each query against every passage of the set', () => {
    const position = new Map(set.passages.map((p, i) => [p.key, i]));
    const oracle = (text: string) => {
      const query = set.queries.find((q) => q.text === text)!;
      return set.passages.map((_, i) => (i === position.get(query.expected) ? 1 : 0));
    };

    const perfect = evaluate(set, oracle);
    const blind = evaluate(set, () => set.passages.map(() => 0));

    expect(perfect).toMatchObject({ queries: set.queries.length, recallAt5: 1, mrr: 1 });
    expect(perfect.byKind.hard.recallAt5).toBe(1);
    expect(blind).toMatchObject({ recallAt5: 0, mrr: 0 });
    expect(Object.values(blind.ranks).every((rank) => rank === set.passages.length)).toBe(true);
  });
});
