import { SERMONS } from '../../bench/retrieval/sermons';
import {
  kindOf,
  loadRetrievalSet,
  PASSAGE_WORDS,
  type QuerySource,
  type SermonSource,
  WORDS_PER_SECOND,
} from '../../bench/retrieval/set';

/** The labelled set search quality is measured on: its size, its labels, how it refuses a bad one. */

const set = loadRetrievalSet();
const words = (text: string) => text.trim().split(/\s+/u).length;

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
