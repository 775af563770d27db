import { seededRandom } from '../../local/seeded-random';
import type { LabelledPassage, Language } from '../retrieval/set';

export { seededRandom };

/**
 * Published hours that were never preached: passages stitched from the
 * labelled set's sentences, drawn at random with a fixed seed, so that an
 * index of a thousand hours has the set's vocabulary (a query finds hits in
 * it) and the same run builds the same corpus every time. Each hour is in one
 * language, Arabic as often as the set's passages are; each passage is a
 * sentence at a time until it holds the words `passageSeconds` of speech
 * take at `wordsPerSecond`.
 */

export interface SyntheticPassage {
  /** `<recording>#<index>`, the recording `h0001`, `h0002`…: the form a passage's vector key takes. */
  readonly key: string;
  readonly tenant: string;
  readonly language: Language;
  readonly text: string;
}

export interface CorpusOptions {
  readonly hours: number;
  readonly tenant: string;
  readonly seed: number;
  readonly passageSeconds: number;
  readonly wordsPerSecond: number;
  /** Prefixed to each recording's name, so two corpora in one index do not share keys. */
  readonly keyPrefix?: string;
}

/** A passage's sentences: cut after `.`, `!`, `?` or `…` (closing quotes allowed) where a space follows. */
export const sentencesOf = (text: string): string[] =>
  text.split(/(?<=[.!?…]["'”’]?)\s+/u).filter((sentence) => sentence.length > 0);

const wordsIn = (text: string) => text.split(/\s+/u).length;

/** The passages, hour by hour, made as they are asked for: an index is filled without holding them all. */
export function* publishedHours(
  passages: readonly LabelledPassage[],
  options: CorpusOptions,
): Generator<SyntheticPassage> {
  const { hours, tenant, seed, passageSeconds, wordsPerSecond, keyPrefix = '' } = options;
  const pools = new Map<Language, { sentence: string; words: number }[]>();
  for (const passage of passages) {
    const pool = pools.get(passage.language) ?? [];
    for (const sentence of sentencesOf(passage.text)) pool.push({ sentence, words: wordsIn(sentence) });
    pools.set(passage.language, pool);
  }
  const languages = passages.map((passage) => passage.language);
  const random = seededRandom(seed);
  const pick = <T>(items: readonly T[]) => items[Math.floor(random() * items.length)] as T;
  const passagesPerHour = Math.round(3600 / passageSeconds);
  const wordsPerPassage = Math.round(passageSeconds * wordsPerSecond);
  for (let hour = 1; hour <= hours; hour++) {
    const language = pick(languages);
    const pool = pools.get(language) as { sentence: string; words: number }[];
    const recording = `${keyPrefix}h${String(hour).padStart(4, '0')}`;
    for (let index = 0; index < passagesPerHour; index++) {
      const sentences: string[] = [];
      for (let words = 0; words < wordsPerPassage; ) {
        const next = pick(pool);
        sentences.push(next.sentence);
        words += next.words;
      }
      yield { key: `${recording}#${index}`, tenant, language, text: sentences.join(' ') };
    }
  }
}
