import {
  closeSync,
  existsSync,
  fstatSync,
  fsyncSync,
  mkdirSync,
  openSync,
  readSync,
  renameSync,
  truncateSync,
  writeSync,
} from 'node:fs';
import { endianness } from 'node:os';
import { join } from 'node:path';
import { crc32 } from 'node:zlib';
import type { Metadata, MetadataPredicate } from './s3-vectors-filter';
import { KERNEL_LANES, type VectorKernels, type VectorMemory, vectorMemory } from './s3-vectors-simd';

/**
 * The local S3 Vectors' storage: each index's vectors in memory as float32,
 * made durable by an append-only log that is replayed on start.
 *
 * In memory, an index keeps its vectors as float32 in one contiguous
 * WebAssembly memory (see `IndexVectors`). A query is an exact scan: every
 * vector that passes the filter is compared, which is what an ENHANCED
 * index's pre-filtering promises (high recall), without the approximation
 * AWS's index may make.
 *
 * On disk, `<dir>/vectors.log` holds one record per change that was accepted
 * (a bucket or an index made, a batch of vectors put, a batch of keys deleted),
 * each framed by its length and CRC-32, written before the change is answered.
 * A record cut short by a crash is dropped on the next start (the request it
 * belonged to was never answered). Records are written without fsync: the log
 * outlives the process, as the rest of the local stack's state does, not the
 * machine. On start, a log holding more than twice the entries still live is
 * rewritten with only those.
 */

export type DistanceMetric = 'cosine' | 'euclidean';

export interface BucketConfig {
  readonly name: string;
  readonly arn: string;
  /** Epoch seconds. */
  readonly creationTime: number;
  readonly encryption: EncryptionConfig;
}

export interface EncryptionConfig {
  readonly sseType: 'AES256' | 'aws:kms';
  readonly kmsKeyArn?: string;
}

export interface IndexConfig {
  readonly bucket: string;
  readonly name: string;
  readonly arn: string;
  /** Epoch seconds. */
  readonly creationTime: number;
  readonly dataType: 'float32';
  readonly dimension: number;
  readonly distanceMetric: DistanceMetric;
  readonly nonFilterableMetadataKeys?: readonly string[];
  readonly encryption?: EncryptionConfig;
}

/** What the log records, in order; `put` carries its vectors' data beside the header. */
export type LogRecord =
  | { readonly op: 'bucket'; readonly bucket: BucketConfig }
  | { readonly op: 'index'; readonly index: IndexConfig }
  | {
      readonly op: 'put';
      readonly bucket: string;
      readonly index: string;
      readonly keys: readonly string[];
      readonly metadata: readonly Metadata[];
    }
  | {
      readonly op: 'delete';
      readonly bucket: string;
      readonly index: string;
      readonly keys: readonly string[];
    };

/** The query's place in an index's memory: room for the largest dimension S3 Vectors allows. */
const QUERY_BYTES = 4096 * 4;
const PAGE_BYTES = 64 * 1024;
/** The most a WebAssembly memory holds: 4 GiB, a million vectors of 1,024 dimensions. */
const MAX_PAGES = 65_536;

/** One hit of a search: the vector's key, its distance to the query and its metadata. */
export interface Hit {
  readonly key: string;
  readonly distance: number;
  readonly metadata: Metadata;
}

/**
 * The vectors of one index, in a WebAssembly memory of their own (so the
 * SIMD kernels of ./s3-vectors-simd.ts read them where they are): the query
 * first, then one slot per vector, each padded with zeros to a whole number of
 * kernel steps. Slots are dense: a deleted vector's slot takes the last one.
 */
export class IndexVectors {
  readonly #dimension: number;
  /** Floats per slot. */
  readonly #stride: number;
  readonly #metric: DistanceMetric;
  /** Made with the first vector: an index that holds none reserves no memory. */
  #memory: VectorMemory | undefined;
  #kernels: VectorKernels | undefined;
  /** A view of the whole memory; replaced whenever the memory grows. */
  #floats = new Float32Array(0);
  /** Cosine only: 1 / |v| of each slot, so a query costs one dot product per vector. */
  #inverseNorms = new Float64Array(1024);
  readonly #keys: string[] = [];
  readonly #metadata: Metadata[] = [];
  readonly #slots = new Map<string, number>();
  /** Keys in order, for listing; rebuilt after a key is added or removed. */
  #sortedKeys: string[] | undefined;

  constructor(dimension: number, metric: DistanceMetric) {
    this.#dimension = dimension;
    this.#stride = Math.ceil(dimension / KERNEL_LANES) * KERNEL_LANES;
    this.#metric = metric;
  }

  get size(): number {
    return this.#keys.length;
  }

  has(key: string): boolean {
    return this.#slots.has(key);
  }

  /** Puts (or replaces) the vector of `key`; `data` holds exactly one vector. */
  put(key: string, data: Float32Array, metadata: Metadata): void {
    let slot = this.#slots.get(key);
    if (slot === undefined) {
      slot = this.#keys.length;
      this.#reserve(slot + 1);
      this.#keys.push(key);
      this.#metadata.push(metadata);
      this.#slots.set(key, slot);
      this.#sortedKeys = undefined;
    } else {
      this.#metadata[slot] = metadata;
    }
    this.#floats.set(data, this.#start(slot));
    if (this.#metric === 'cosine') {
      let sum = 0;
      for (let i = 0; i < this.#dimension; i++) sum += (data[i] as number) * (data[i] as number);
      this.#inverseNorms[slot] = 1 / Math.sqrt(sum);
    }
  }

  /** Deletes the vector of `key`; false when there was none. */
  delete(key: string): boolean {
    const slot = this.#slots.get(key);
    if (slot === undefined) return false;
    const last = this.#keys.length - 1;
    if (slot !== last) {
      const from = this.#start(last);
      this.#floats.copyWithin(this.#start(slot), from, from + this.#stride);
      this.#inverseNorms[slot] = this.#inverseNorms[last] as number;
      const moved = this.#keys[last] as string;
      this.#keys[slot] = moved;
      this.#metadata[slot] = this.#metadata[last] as Metadata;
      this.#slots.set(moved, slot);
    }
    this.#keys.pop();
    this.#metadata.pop();
    this.#slots.delete(key);
    this.#sortedKeys = undefined;
    return true;
  }

  /** The stored vector (a view, valid until the index next changes) and metadata of `key`. */
  get(key: string): { readonly data: Float32Array; readonly metadata: Metadata } | undefined {
    const slot = this.#slots.get(key);
    if (slot === undefined) return undefined;
    return { data: this.#vector(slot), metadata: this.#metadata[slot] as Metadata };
  }

  /** Every key, in code-unit order. */
  sortedKeys(): readonly string[] {
    this.#sortedKeys ??= [...this.#keys].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
    return this.#sortedKeys;
  }

  /** Every vector, in slot order, for a rewrite of the log; each view is valid until the index changes. */
  *entries(): Generator<{ key: string; data: Float32Array; metadata: Metadata }> {
    for (let slot = 0; slot < this.#keys.length; slot++) {
      yield {
        key: this.#keys[slot] as string,
        data: this.#vector(slot),
        metadata: this.#metadata[slot] as Metadata,
      };
    }
  }

  /**
   * The `k` vectors nearest to `query` among those `filter` lets through,
   * nearest first; equal distances in key order. Cosine distance is
   * 1 − cosine similarity; euclidean distance is the L2 norm of the difference.
   */
  search(query: Float32Array, k: number, filter?: MetadataPredicate): Hit[] {
    const count = this.#keys.length;
    if (count === 0 || !this.#kernels) return [];
    this.#floats.set(query, 0);
    let queryNorm = 0;
    for (let i = 0; i < this.#dimension; i++) queryNorm += (query[i] as number) * (query[i] as number);
    const inverseQueryNorm = 1 / Math.sqrt(queryNorm);
    const cosine = this.#metric === 'cosine';
    const { dot, l2 } = this.#kernels;
    const stride = this.#stride;
    const slotBytes = stride * 4;
    const nearest = new NearestHeap(k, this.#keys);
    for (let slot = 0; slot < count; slot++) {
      if (filter && !filter(this.#metadata[slot] as Metadata)) continue;
      const at = QUERY_BYTES + slot * slotBytes;
      const distance = cosine
        ? // Rounding can take a similarity a hair beyond ±1; a distance stays within [0, 2].
          Math.min(
            2,
            Math.max(0, 1 - dot(0, at, stride) * inverseQueryNorm * (this.#inverseNorms[slot] as number)),
          )
        : Math.sqrt(l2(0, at, stride));
      nearest.offer(slot, distance);
    }
    return nearest.sorted().map(({ slot, distance }) => ({
      key: this.#keys[slot] as string,
      distance,
      metadata: this.#metadata[slot] as Metadata,
    }));
  }

  /** Float offset of a slot. */
  #start(slot: number): number {
    return QUERY_BYTES / 4 + slot * this.#stride;
  }

  #vector(slot: number): Float32Array {
    const start = this.#start(slot);
    return this.#floats.subarray(start, start + this.#dimension);
  }

  /** Grows the memory (doubling, within its maximum) until `slots` slots fit. */
  #reserve(slots: number): void {
    const needed = Math.ceil((QUERY_BYTES + slots * this.#stride * 4) / PAGE_BYTES);
    if (needed > MAX_PAGES) {
      throw new Error(
        `the emulator keeps at most ${slots - 1} vectors of ${this.#dimension} dimensions in an index`,
      );
    }
    if (!this.#memory) {
      ({ memory: this.#memory, kernels: this.#kernels } = vectorMemory(needed, MAX_PAGES));
      this.#floats = new Float32Array(this.#memory.buffer);
    }
    const pages = this.#memory.buffer.byteLength / PAGE_BYTES;
    if (needed > pages) {
      this.#memory.grow(Math.min(MAX_PAGES, Math.max(needed, pages * 2)) - pages);
      this.#floats = new Float32Array(this.#memory.buffer);
    }
    if (slots > this.#inverseNorms.length) {
      const grown = new Float64Array(this.#inverseNorms.length * 2);
      grown.set(this.#inverseNorms);
      this.#inverseNorms = grown;
    }
  }
}

/** The `k` smallest (distance, key) pairs offered: a max-heap whose root is the worst kept. */
class NearestHeap {
  readonly #slots: Int32Array;
  readonly #distances: Float64Array;
  #size = 0;

  constructor(
    private readonly k: number,
    private readonly keys: readonly string[],
  ) {
    this.#slots = new Int32Array(k);
    this.#distances = new Float64Array(k);
  }

  offer(slot: number, distance: number): void {
    if (this.#size < this.k) {
      let i = this.#size++;
      while (i > 0) {
        const parent = (i - 1) >> 1;
        if (!this.#worse(slot, distance, this.#slots[parent] as number, this.#distances[parent] as number))
          break;
        this.#slots[i] = this.#slots[parent] as number;
        this.#distances[i] = this.#distances[parent] as number;
        i = parent;
      }
      this.#slots[i] = slot;
      this.#distances[i] = distance;
      return;
    }
    if (!this.#worse(this.#slots[0] as number, this.#distances[0] as number, slot, distance)) return;
    let i = 0;
    for (;;) {
      const left = 2 * i + 1;
      if (left >= this.k) break;
      const right = left + 1;
      let child = left;
      if (
        right < this.k &&
        this.#worse(
          this.#slots[right] as number,
          this.#distances[right] as number,
          this.#slots[left] as number,
          this.#distances[left] as number,
        )
      ) {
        child = right;
      }
      if (!this.#worse(this.#slots[child] as number, this.#distances[child] as number, slot, distance)) break;
      this.#slots[i] = this.#slots[child] as number;
      this.#distances[i] = this.#distances[child] as number;
      i = child;
    }
    this.#slots[i] = slot;
    this.#distances[i] = distance;
  }

  sorted(): { slot: number; distance: number }[] {
    const hits = Array.from({ length: this.#size }, (_, i) => ({
      slot: this.#slots[i] as number,
      distance: this.#distances[i] as number,
    }));
    return hits.sort((a, b) => (this.#worse(a.slot, a.distance, b.slot, b.distance) ? 1 : -1));
  }

  /** Whether (slotA, a) ranks after (slotB, b): farther, or as far with a later key. */
  #worse(slotA: number, a: number, slotB: number, b: number): boolean {
    if (a !== b) return a > b;
    return (this.keys[slotA] as string) > (this.keys[slotB] as string);
  }
}

const LOG_FILE = 'vectors.log';
/** Length and CRC-32 of a record's payload. */
const FRAME_BYTES = 8;

/**
 * The append-only log under `dir`. `open` replays every whole record through
 * `apply` (in the order written) and drops a torn last one.
 */
export class VectorLog {
  #fd: number;
  readonly #file: string;

  private constructor(
    readonly dir: string,
    fd: number,
  ) {
    this.#fd = fd;
    this.#file = join(dir, LOG_FILE);
  }

  static open(
    dir: string,
    apply: (record: LogRecord, data: Float32Array | undefined) => void,
    log: (line: string) => void,
  ): VectorLog {
    if (endianness() !== 'LE')
      throw new Error('the S3 Vectors emulator stores float32 data little-endian only');
    mkdirSync(dir, { recursive: true });
    const file = join(dir, LOG_FILE);
    if (existsSync(file)) replay(file, apply, log);
    return new VectorLog(dir, openSync(file, 'a'));
  }

  append(record: LogRecord, data?: Float32Array): void {
    writeFully(this.#fd, encode(record, data));
  }

  /** Replaces the log with `records`, atomically: a crash leaves the old log or the new one. */
  rewrite(records: Iterable<{ record: LogRecord; data?: Float32Array }>): void {
    const temporary = join(this.dir, `${LOG_FILE}.${process.pid}.tmp`);
    const fd = openSync(temporary, 'w');
    try {
      for (const { record, data } of records) writeFully(fd, encode(record, data));
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
    closeSync(this.#fd);
    renameSync(temporary, this.#file);
    this.#fd = openSync(this.#file, 'a');
  }

  close(): void {
    closeSync(this.#fd);
  }
}

function writeFully(fd: number, buffer: Buffer): void {
  let written = 0;
  while (written < buffer.length) written += writeSync(fd, buffer, written);
}

/** `[length][crc32][header length][header JSON][padding to 4 bytes][float32 data]`. */
function encode(record: LogRecord, data: Float32Array | undefined): Buffer {
  const header = Buffer.from(JSON.stringify(record));
  const dataOffset = align4(4 + header.length);
  const payloadLength = dataOffset + (data ? data.byteLength : 0);
  const buffer = Buffer.alloc(FRAME_BYTES + payloadLength);
  buffer.writeUInt32LE(header.length, FRAME_BYTES);
  header.copy(buffer, FRAME_BYTES + 4);
  if (data) {
    Buffer.from(data.buffer, data.byteOffset, data.byteLength).copy(buffer, FRAME_BYTES + dataOffset);
  }
  const payload = buffer.subarray(FRAME_BYTES);
  buffer.writeUInt32LE(payloadLength, 0);
  buffer.writeUInt32LE(crc32(payload), 4);
  return buffer;
}

const align4 = (n: number) => (n + 3) & ~3;

function replay(
  file: string,
  apply: (record: LogRecord, data: Float32Array | undefined) => void,
  log: (line: string) => void,
): void {
  const fd = openSync(file, 'r');
  let position = 0;
  let size: number;
  try {
    size = fstatSync(fd).size;
    const frame = Buffer.alloc(FRAME_BYTES);
    while (position + FRAME_BYTES <= size) {
      readSync(fd, frame, 0, FRAME_BYTES, position);
      const length = frame.readUInt32LE(0);
      const end = position + FRAME_BYTES + length;
      if (end > size) break;
      // Unpooled, so it starts at offset 0 and the data (aligned within it) can be viewed as float32.
      const payload = Buffer.allocUnsafeSlow(length);
      readSync(fd, payload, 0, length, position + FRAME_BYTES);
      if (crc32(payload) !== frame.readUInt32LE(4)) {
        if (end === size) break;
        throw new Error(
          `${file} is corrupt at byte ${position}; remove it to start with an empty S3 Vectors`,
        );
      }
      const headerLength = payload.readUInt32LE(0);
      const record = JSON.parse(payload.toString('utf8', 4, 4 + headerLength)) as LogRecord;
      const dataOffset = align4(4 + headerLength);
      const data =
        length > dataOffset
          ? new Float32Array(payload.buffer, payload.byteOffset + dataOffset, (length - dataOffset) / 4)
          : undefined;
      apply(record, data);
      position = end;
    }
  } finally {
    closeSync(fd);
  }
  if (position < size) {
    log(
      `s3vectors: dropped a record cut short at byte ${position} of ${file} (its request was never answered)`,
    );
    truncateSync(file, position);
  }
}
