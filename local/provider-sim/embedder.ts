import { createHash } from 'node:crypto';
import { stemmer } from 'stemmer';

/**
 * The simulator's stand-in for a Bedrock embedding model: deterministic and
 * lexical. A text becomes its word stems (Porter's stemmer for Latin-script
 * words, so "forgiving" and "forgive" meet; other scripts, Arabic among them,
 * by the word as written), each hashed into one of `dimensions` buckets with
 * a sign from the same hash, weighted by 1 + ln(count). Two texts that share
 * stems point the same way, and a cosine ranks a passage that shares words
 * with the query above one that shares none. It knows nothing of meaning:
 * "pardon" finds nothing of "forgive". Real semantics come from the deployed
 * model.
 */

/** Words too common to tell passages apart; without them, every passage would share something with every query. */
const STOP_WORDS = new Set(
  (
    'a an and are as at be been but by did do does for from had has have he her him his how i if in into is it ' +
    'its me my no not of on or our she so than that the their them then there these they this those to was we ' +
    'were what when where which who whom why will with would you your us about all also can could just like ' +
    'may more most must one only other over shall should some such up very upon unto ye thee thou thy'
  ).split(' '),
);

const WORD = /[\p{L}\p{N}]+(?:['’][\p{L}]+)*/gu;
const LATIN = /^[a-z0-9'’]+$/;

/** The stems a text is made of, in order, stop words left out. */
export function stems(text: string): string[] {
  const out: string[] = [];
  for (const match of text.normalize('NFKC').toLowerCase().matchAll(WORD)) {
    const word = match[0].replace(/['’]s$/, '').replace(/['’]/g, '');
    if (word.length === 0 || STOP_WORDS.has(word)) continue;
    out.push(LATIN.test(word) ? stemmer(word) : word);
  }
  return out;
}

export interface EmbedOptions {
  readonly dimensions: number;
  /** Unit length, as Titan's `normalize: true` answers and Cohere always does. */
  readonly normalize: boolean;
}

/** What a text without a single stem is embedded as. */
const EMPTY_TEXT = '\u0000';

/** The text's embedding: a signed, hashed bag of its stems (never the zero vector). */
export function embedText(text: string, options: EmbedOptions): number[] {
  const { dimensions, normalize } = options;
  const counts = new Map<string, number>();
  for (const stem of stems(text)) counts.set(stem, (counts.get(stem) ?? 0) + 1);
  // A text of stop words alone still points somewhere: a real model never answers a zero vector,
  // and S3 Vectors refuses one under the cosine metric.
  if (counts.size === 0) counts.set(EMPTY_TEXT, 1);
  const vector = new Array<number>(dimensions).fill(0);
  for (const [stem, count] of counts) {
    const digest = createHash('sha256').update(stem).digest();
    const bucket = digest.readUInt32BE(0) % dimensions;
    const sign = (digest[4] as number) & 1 ? 1 : -1;
    vector[bucket] = (vector[bucket] as number) + sign * (1 + Math.log(count));
  }
  if (!normalize) return vector;
  const length = Math.hypot(...vector);
  return vector.map((value) => value / length);
}

/** Input tokens as the simulator bills them: about 4.7 characters each, Titan's average for English. */
export const tokenCountOf = (text: string): number => Math.max(1, Math.ceil(text.length / 4.7));
