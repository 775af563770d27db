import { randomUUID } from 'node:crypto';
import { MEDIA_ID_PATTERN } from '../../config/media';
import { S3_VECTORS_LIMITS } from '../../config/s3-vectors';
import {
  SEARCH_LIMIT_DEFAULT,
  type SearchHit,
  type SearchRequest,
  type SearchResult,
} from '../../config/search';
import { dayNumberOf } from './embedding';
import { ProviderUnavailableError, RateLimitedError } from './errors';
import type { Job } from './job';
import type { MediaItem, MediaStore } from './media-library';
import type { JobStore, OutputStore, SlotPool, VectorFilter, VectorHit, VectorIndex } from './ports';
import { servePlaylists, type TranscodeResult } from './publish';

/**
 * `POST /v1/search`: the query embedded with the model that embedded the
 * passages, the index asked for the nearest passages of the caller's tenant,
 * and each hit made playable from its first word. The tenant's filter is
 * built here from the authenticated tenant, never from the request, and every
 * hit is checked against it again before it is shown.
 */

export interface SearchDeps {
  readonly store: Pick<JobStore, 'get'>;
  readonly outputs: Pick<OutputStore, 'getOutput' | 'putOutput' | 'outputUrl'>;
  readonly vectors: Pick<VectorIndex, 'query' | 'metric'>;
  /** The query's embedding, made under a slot of the embedding provider (`withQuerySlot`). */
  readonly embedQuery: (text: string) => Promise<readonly number[]>;
  /** Media items: a passage of a version is shown only while that version is its item's current one. */
  readonly media?: Pick<MediaStore, 'get'>;
}

export async function search(
  deps: SearchDeps,
  tenantId: string,
  request: SearchRequest,
): Promise<SearchResult> {
  const limit = request.limit ?? SEARCH_LIMIT_DEFAULT;
  const vector = await deps.embedQuery(request.query);
  // Twice as many as answered: a version being published or replaced matches too, and is passed over.
  const topK = Math.min(limit * 2, SEARCH_QUERY_TOP_K_MAX);
  // Each query's nearest, together: the nearest of all, as the items are split between the queries.
  const hits = (
    await Promise.all(
      searchFiltersOf(tenantId, request.filter).map((filter) => deps.vectors.query(vector, topK, filter)),
    )
  )
    .flat()
    .sort((a, b) => a.distance - b.distance)
    .slice(0, topK);
  const recordings = new Map<string, Promise<Playable | undefined>>();
  const mediaItems = new Map<string, Promise<MediaItem | undefined>>();
  const once = <T>(cache: Map<string, Promise<T>>, id: string, load: () => Promise<T>) => {
    let loaded = cache.get(id);
    if (!loaded) {
      loaded = load();
      cache.set(id, loaded);
    }
    return loaded;
  };
  const answered: SearchHit[] = [];
  for (const hit of hits) {
    // The filter already kept other tenants out; a hit that says otherwise is never shown.
    if (hit.metadata.tenant !== tenantId) continue;
    const jobId = jobIdOfVectorKey(hit.key);
    let media: MediaItem | undefined;
    if (MEDIA_ID_PATTERN.test(hit.metadata.item)) {
      const itemId = hit.metadata.item;
      media = await once(mediaItems, itemId, async () => deps.media?.get(tenantId, itemId));
      // Only the current version of a live item is heard: never a version being published or replaced.
      if (!media || media.deletedAt || media.current?.jobId !== jobId) continue;
    } else if (jobId !== hit.metadata.item) continue;
    const recording = await once(recordings, jobId, () => playable(deps, tenantId, jobId));
    if (!recording) continue;
    answered.push(hitOf(hit, recording, deps.vectors.metric, media));
  }
  return { items: answered.slice(0, limit) };
}

/** The most nearest passages a search asks the index for (one page of QueryVectors). */
const SEARCH_QUERY_TOP_K_MAX = 100;

/** The job a vector's key names (`vectorKeyOf`: tenant, job, passage). */
const jobIdOfVectorKey = (key: string): string => key.split('/')[1] ?? '';

/**
 * The index's filters: the tenant's passages, and what the request narrows
 * them to (S3 Vectors' metadata filter language: a top-level `$and` of
 * conditions; an array field such as `labels` matches `$in` when any element
 * is listed). The index counts every value a filter evaluates as one
 * constraint, and takes a bounded number a query: the items a request names
 * are shared out between as many filters as it takes, each with the tenant
 * and every other condition, so no request the schema accepts is refused.
 */
export function searchFiltersOf(tenantId: string, filter: SearchRequest['filter']): VectorFilter[] {
  const tenant: Condition = { tenant: { $eq: tenantId } };
  const narrowing: Condition[] = [];
  if (filter?.dateFrom) narrowing.push({ date: { $gte: dayNumberOf(filter.dateFrom) } });
  if (filter?.dateTo) narrowing.push({ date: { $lte: dayNumberOf(filter.dateTo) } });
  if (filter?.labels) narrowing.push({ labels: { $in: filter.labels } });
  const itemIds = filter?.itemIds ?? [];
  if (itemIds.length === 0) return [filterOf([tenant, ...narrowing])];
  const itemsPerQuery = Math.max(
    1,
    S3_VECTORS_LIMITS.filterConstraintsPerQuery - constraintsOf([tenant, ...narrowing]),
  );
  const filters: VectorFilter[] = [];
  for (let from = 0; from < itemIds.length; from += itemsPerQuery) {
    const items: Condition = { item: { $in: itemIds.slice(from, from + itemsPerQuery) } };
    filters.push(filterOf([tenant, items, ...narrowing]));
  }
  return filters;
}

/** A condition on one metadata key: its operators and their operands. */
type Condition = Readonly<Record<string, Readonly<Record<string, unknown>>>>;

/** As the index counts them: every value a condition evaluates is one constraint (a `$in` of three is three). */
const constraintsOf = (conditions: readonly Condition[]): number =>
  conditions
    .flatMap((condition) => Object.values(condition).flatMap((operators) => Object.values(operators)))
    .reduce<number>((sum, operand) => sum + (Array.isArray(operand) ? operand.length : 1), 0);

const filterOf = (conditions: readonly Condition[]): VectorFilter =>
  conditions.length === 1 ? (conditions[0] as VectorFilter) : { $and: conditions };

/** Higher is closer: 1 − cosine distance, or 1 / (1 + Euclidean distance). */
export const scoreOf = (distance: number, metric: 'cosine' | 'euclidean'): number =>
  metric === 'cosine' ? 1 - distance : 1 / (1 + distance);

interface Playable {
  readonly job: Job;
  readonly playlistUrl: string;
}

/** The recording a hit belongs to, if it is the tenant's, published and still there, with its stream served. */
async function playable(deps: SearchDeps, tenantId: string, itemId: string): Promise<Playable | undefined> {
  const job = await deps.store.get(itemId);
  if (!job || job.tenantId !== tenantId || job.status !== 'succeeded') return undefined;
  const stream = job.result?.stream as TranscodeResult | undefined;
  if (!stream) return undefined;
  const served = await servePlaylists(deps.outputs, job, stream);
  return served && { job, playlistUrl: served.playlistUrl };
}

function hitOf(
  hit: VectorHit,
  item: Playable,
  metric: 'cosine' | 'euclidean',
  media: MediaItem | undefined,
): SearchHit {
  const { metadata } = hit;
  const start = metadata.start;
  const input = item.job.input as { title?: string; date?: string; labels?: string[] };
  // An item's metadata is read from the item, so a change shows at once, without touching the recording.
  const described = media
    ? {
        id: media.id,
        title: media.title,
        ...(media.speaker ? { speaker: media.speaker } : {}),
        date: media.date ?? item.job.createdAt.slice(0, 10),
        labels: [...media.labels],
        ...(media.current ? { version: media.current.number } : {}),
      }
    : {
        id: item.job.id,
        ...(input.title ? { title: input.title } : {}),
        date: (input.date ?? item.job.createdAt).slice(0, 10),
        labels: input.labels ?? [],
      };
  return {
    score: Number(scoreOf(hit.distance, metric).toFixed(6)),
    item: described,
    passage: { index: metadata.passage, start, end: metadata.end, text: metadata.text },
    playback: {
      playlistUrl: item.playlistUrl,
      startSeconds: start,
      url: `${item.playlistUrl}#t=${Number(start.toFixed(3))}`,
    },
  };
}

/** A query's hold on an embedding provider slot: `query_<lease end, ms>_<random>`, freed by the reconciler after its lease. */
const QUERY_HOLDER = /^query_(\d+)_[0-9a-f]+$/;

/** The lease of a query's slot: longer than the API's integration timeout, so a live query never loses it. */
export const QUERY_SLOT_LEASE_MS = 60_000;

/** When a query slot's lease ends; undefined for a holder that is no query's (a job's). */
export function queryLeaseEndOf(holder: string): number | undefined {
  const match = QUERY_HOLDER.exec(holder);
  return match ? Number(match[1]) : undefined;
}

/** How long a query waits for a slot of the embedding provider before it is told to retry. */
const SLOT_WAIT_MS = 1500;

/**
 * Runs a query's call to the embedding provider under one of its slots: the
 * provider's limit holds for searches as for embedding jobs, in the same one
 * place. Without a free slot for a moment, the search answers 429 with a
 * Retry-After rather than waiting long behind the indexing of a burst. The
 * slot, once given back, is handed on (`handOn`) to the job whose turn it is.
 */
export async function withQuerySlot<T>(
  pool: Pick<SlotPool, 'acquire' | 'release'>,
  limit: number,
  now: () => number,
  call: () => Promise<T>,
  handOn: () => Promise<void>,
): Promise<T> {
  const holder = `query_${now() + QUERY_SLOT_LEASE_MS}_${randomUUID().replaceAll('-', '')}`;
  const deadline = now() + SLOT_WAIT_MS;
  for (let wait = 25; !(await pool.acquire(holder, limit)); wait = Math.min(wait * 2, 400)) {
    if (now() + wait > deadline) {
      throw new RateLimitedError('Every embedding provider slot is busy; retry the search shortly.', 1);
    }
    await new Promise((resolve) => setTimeout(resolve, wait));
  }
  try {
    return await call();
  } catch (error) {
    // The provider throttled or could not be reached: nothing was done, the search may be retried.
    if (error instanceof ProviderUnavailableError) {
      throw new RateLimitedError('The embedding provider is busy; retry the search shortly.', 2);
    }
    throw error;
  } finally {
    if (await pool.release(holder)) await handOn();
  }
}
