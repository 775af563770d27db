/**
 * The vector index the search latency is measured through: the two calls a
 * search needs of Amazon S3 Vectors, `PutVectors` and `QueryVectors`, as a
 * port. `vectorIndexesUnderTest` (./indexes-under-test.ts) is the one place that
 * chooses what answers it.
 */

export interface IndexedVector {
  /** Unique in the index; putting a key again replaces its vector, as `PutVectors` does. */
  readonly key: string;
  readonly data: Float32Array;
  /** Filterable metadata: what a query's filter compares. */
  readonly metadata: Readonly<Record<string, string>>;
}

/** Equality on each named metadata field, all of them: `{ tenant: 't1' }`, S3 Vectors' `{ tenant: { $eq: 't1' } }`. */
export type VectorFilter = Readonly<Record<string, string>>;

export interface VectorHit {
  readonly key: string;
  /** Cosine distance, 1 − cosine similarity: what S3 Vectors answers for a cosine index; closest first. */
  readonly distance: number;
}

export interface VectorIndex {
  /** Up to 500 vectors a call, S3 Vectors' `PutVectors` limit. */
  put(vectors: readonly IndexedVector[]): Promise<void>;
  /** The `topK` vectors closest to `vector` among those the filter keeps, closest first. */
  query(vector: Float32Array, topK: number, filter: VectorFilter): Promise<VectorHit[]>;
}

/** `PutVectors` takes at most this many vectors a call; QueryVectors answers at most `QUERY_TOP_K_MAX`. */
export const PUT_VECTORS_MAX = 500;
export const QUERY_TOP_K_MAX = 100;

/** Vectors kept in blocks of this many, so the index grows without copying what it holds. */
const BLOCK_VECTORS = 4096;

const matches = (metadata: Readonly<Record<string, string>>, wanted: readonly [string, string][]) => {
  for (const [name, value] of wanted) if (metadata[name] !== value) return false;
  return true;
};

/**
 * An exact scan in this process: every vector the filter keeps is compared
 * with the query, none skipped. It answers what the local S3 Vectors emulator
 * will (an exact cosine index with metadata filters), without a network hop.
 */
export class ExactScanIndex implements VectorIndex {
  private readonly blocks: Float32Array[] = [];
  private readonly inverseNorms: number[] = [];
  private readonly keys: string[] = [];
  private readonly metadata: Readonly<Record<string, string>>[] = [];
  private readonly slots = new Map<string, number>();

  constructor(readonly dimensions: number) {
    if (!Number.isInteger(dimensions) || dimensions < 1) {
      throw new RangeError(`dimensions must be a whole number above 0, got ${dimensions}`);
    }
  }

  get size(): number {
    return this.keys.length;
  }

  async put(vectors: readonly IndexedVector[]): Promise<void> {
    if (vectors.length > PUT_VECTORS_MAX) {
      throw new RangeError(`PutVectors takes at most ${PUT_VECTORS_MAX} vectors, got ${vectors.length}`);
    }
    for (const vector of vectors) {
      if (vector.data.length !== this.dimensions) {
        throw new RangeError(
          `vector ${vector.key} has ${vector.data.length} dimensions; the index has ${this.dimensions}`,
        );
      }
    }
    for (const vector of vectors) {
      const slot = this.slots.get(vector.key) ?? this.keys.length;
      if (slot === this.keys.length) {
        if (slot % BLOCK_VECTORS === 0) this.blocks.push(new Float32Array(BLOCK_VECTORS * this.dimensions));
        this.slots.set(vector.key, slot);
        this.keys.push(vector.key);
      }
      const block = this.blocks[Math.floor(slot / BLOCK_VECTORS)] as Float32Array;
      block.set(vector.data, (slot % BLOCK_VECTORS) * this.dimensions);
      let squares = 0;
      for (const value of vector.data) squares += value * value;
      this.inverseNorms[slot] = squares === 0 ? 0 : 1 / Math.sqrt(squares);
      this.metadata[slot] = vector.metadata;
    }
  }

  async query(vector: Float32Array, topK: number, filter: VectorFilter): Promise<VectorHit[]> {
    if (vector.length !== this.dimensions) {
      throw new RangeError(`the query has ${vector.length} dimensions; the index has ${this.dimensions}`);
    }
    if (!Number.isInteger(topK) || topK < 1 || topK > QUERY_TOP_K_MAX) {
      throw new RangeError(`topK must be 1 to ${QUERY_TOP_K_MAX}, got ${topK}`);
    }
    let squares = 0;
    for (const value of vector) squares += value * value;
    const inverseNorm = squares === 0 ? 0 : 1 / Math.sqrt(squares);
    const wanted = Object.entries(filter);
    // The best so far, closest first: similarity descending.
    const bestSlots: number[] = [];
    const bestScores: number[] = [];
    const consider = (slot: number, dot: number) => {
      const score = dot * inverseNorm * (this.inverseNorms[slot] as number);
      if (bestScores.length === topK && score <= (bestScores[topK - 1] as number)) return;
      let at = bestScores.length;
      while (at > 0 && (bestScores[at - 1] as number) < score) at--;
      bestScores.splice(at, 0, score);
      bestSlots.splice(at, 0, slot);
      if (bestScores.length > topK) {
        bestScores.pop();
        bestSlots.pop();
      }
    };
    const d = this.dimensions;
    const candidates = new Int32Array(BLOCK_VECTORS);
    for (let b = 0; b < this.blocks.length; b++) {
      const block = this.blocks[b] as Float32Array;
      const first = b * BLOCK_VECTORS;
      const end = Math.min(this.keys.length, first + BLOCK_VECTORS);
      let n = 0;
      for (let slot = first; slot < end; slot++) {
        if (matches(this.metadata[slot] as Readonly<Record<string, string>>, wanted)) candidates[n++] = slot;
      }
      // Four vectors a pass over the query: each of its values read once for four products.
      let k = 0;
      for (; k + 3 < n; k += 4) {
        const o0 = ((candidates[k] as number) - first) * d;
        const o1 = ((candidates[k + 1] as number) - first) * d;
        const o2 = ((candidates[k + 2] as number) - first) * d;
        const o3 = ((candidates[k + 3] as number) - first) * d;
        let s0 = 0;
        let s1 = 0;
        let s2 = 0;
        let s3 = 0;
        for (let i = 0; i < d; i++) {
          const x = vector[i] as number;
          s0 += (block[o0 + i] as number) * x;
          s1 += (block[o1 + i] as number) * x;
          s2 += (block[o2 + i] as number) * x;
          s3 += (block[o3 + i] as number) * x;
        }
        consider(candidates[k] as number, s0);
        consider(candidates[k + 1] as number, s1);
        consider(candidates[k + 2] as number, s2);
        consider(candidates[k + 3] as number, s3);
      }
      for (; k < n; k++) {
        const offset = ((candidates[k] as number) - first) * d;
        let sum = 0;
        for (let i = 0; i < d; i++) sum += (block[offset + i] as number) * (vector[i] as number);
        consider(candidates[k] as number, sum);
      }
    }
    return bestSlots.map((slot, rank) => ({
      key: this.keys[slot] as string,
      distance: 1 - (bestScores[rank] as number),
    }));
  }
}

/** What the section measures through, and how to let it go when done. */
export interface IndexUnderTest {
  readonly index: VectorIndex;
  /** What answered, as the section prints it. */
  readonly name: string;
  /** How the vectors got into it, as the section prints it once they are all put. */
  readonly loading: string;
  /** Called once every vector is put, before the first query. */
  ready(): Promise<void>;
  close(): Promise<void>;
}

/** The exact scan in this process, measured beside the emulator as what the index's own work costs without a network hop. */
export function inProcessIndex(dimensions: number): IndexUnderTest {
  return {
    index: new ExactScanIndex(dimensions),
    name: 'in-process exact scan',
    loading: 'put in this process',
    ready: async () => {},
    close: async () => {},
  };
}
