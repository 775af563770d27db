import type { LifecycleEvent } from '../../config/events';
import { VECTOR_REVISION_OBJECTS } from '../../config/layout';
import type {
  CreateMediaRequest,
  CreateVersionRequest,
  ListMediaQuery,
  MediaItemView,
  MediaVersionView,
  UpdateMediaRequest,
} from '../../config/media';
import { childJobIdsOf } from './children';
import { dayNumberOf, discardVectors, storedVectorKeysOf } from './embedding';
import { IdempotencyKeyReusedError, MediaNotFoundError } from './errors';
import { eventEnvelope, publishLifecycleEvent } from './events';
import { deriveMediaId, fingerprint } from './idempotency';
import { currentExecutionOf, isTerminal, type Job } from './job';
import type { EventPublisher, JobStore, OutputStore, Timeline, VectorIndex, Workflow } from './ports';
import { presentJob } from './present';
import { rootOutputPrefix } from './publish';

/**
 * The sermon library: media items and their versions. An item is what a
 * tenant publishes; each recording of it is a version, published by an
 * `audio.publish` job that carries `media: {id, version}`. Four rules keep
 * listeners and search consistent whatever order things happen in:
 *
 * - A version's number is claimed before its job is submitted, but the
 *   version counts (is shown in progress) only once its job was admitted, and
 *   it supersedes an older one in progress only once its own recording
 *   proved good (past its probe): a refused request, or a recording that is
 *   not audio, never costs the version in progress its paid work.
 * - The current version switches only once the new one's job has succeeded
 *   (stream, passages, vectors in place, the success recorded), in one
 *   conditional write fenced by version number: no version older than the
 *   newest proven one may become current, so an older one that finishes late
 *   never can, and the current version is always a succeeded job.
 * - Search shows a passage only if its version is its item's current one,
 *   and reads what it shows (title, labels, date) from the item, so a
 *   metadata change is one write plus, for what search filters by, a rewrite
 *   of the current version's vector metadata: no provider is called.
 * - What a version made is deleted after it stops being current (after a
 *   grace period, so a listener mid-stream finishes), when it is superseded
 *   before it ever was, and when its item is deleted: retirements the
 *   reconciler carries out, so a crash anywhere leaves them to be done.
 */

export interface MediaVersionRef {
  readonly number: number;
  readonly jobId: string;
}

/** A media item as the store keeps it. `rev` counts its writes: every write is conditional on it. */
export interface MediaItem {
  readonly id: string;
  readonly tenantId: string;
  readonly idempotencyKey: string;
  readonly fingerprint: string;
  readonly title: string;
  readonly speaker?: string;
  readonly date?: string;
  readonly labels: readonly string[];
  readonly createdAt: string;
  readonly updatedAt: string;
  /** Counts metadata changes; the vectors of a version say which one they carry. */
  readonly metadataRevision: number;
  /** The newest version number handed out, and to which job: a retry of the request finds its own. */
  readonly claimed?: MediaVersionRef;
  /** The newest version admitted (its job exists): the one shown in progress. */
  readonly latest?: MediaVersionRef;
  /** The newest version whose recording proved good (past its probe): no older one may become current. */
  readonly proven?: MediaVersionRef;
  readonly current?: MediaVersionRef & { readonly publishedAt: string };
  /** Set by DELETE: the item is gone for clients, its retirements are under way. */
  readonly deletedAt?: string;
  readonly rev: number;
}

export interface MediaPage {
  readonly items: readonly MediaItem[];
  readonly nextCursor: string | null;
}

/** Something a version made, to be deleted once `runAt` has passed and its job has stopped. */
export interface Retirement {
  readonly tenantId: string;
  readonly mediaId: string;
  readonly jobId: string;
  readonly runAt: string;
  readonly reason: 'replaced' | 'superseded' | 'deleted';
  /** The upload the version was made from, deleted with it unless another version of the item uses it. */
  readonly audioRef?: string;
}

export interface MediaStore {
  create(
    item: MediaItem,
  ): Promise<{ readonly created: true } | { readonly created: false; readonly existing: MediaItem }>;
  get(tenantId: string, mediaId: string): Promise<MediaItem | undefined>;
  /** Writes `item` if the stored one still has rev `item.rev`, as rev + 1; false if it changed meanwhile. */
  replace(item: MediaItem): Promise<boolean>;
  list(tenantId: string, query: ListMediaQuery & { readonly limit: number }): Promise<MediaPage>;
  putRetirement(retirement: Retirement): Promise<void>;
  /**
   * Records that an item's versions are made from an upload (idempotent). An
   * upload may serve several items: it is deleted only when the last lets go.
   */
  claimUpload(tenantId: string, ref: string, mediaId: string): Promise<void>;
  /** Lets go of an item's claim on an upload; answers how many items still claim it. */
  releaseUpload(tenantId: string, ref: string, mediaId: string): Promise<number>;
  /** Retirements whose time has come, oldest first. */
  dueRetirements(now: Date, limit: number): Promise<Retirement[]>;
  deleteRetirement(retirement: Pick<Retirement, 'tenantId' | 'jobId'>): Promise<void>;
}

export interface MediaDeps {
  readonly media: MediaStore;
  readonly now: () => Date;
  /** The deployment's event bus, where `media.*` events go (absent: none are put). */
  readonly events?: EventPublisher;
}

type MediaEvent =
  | { readonly detailType: 'media.version.published'; readonly version: number; readonly jobId: string }
  | {
      readonly detailType: 'media.version.superseded';
      readonly version: number;
      readonly supersededBy: number;
    }
  | { readonly detailType: 'media.updated'; readonly fields: readonly string[] }
  | { readonly detailType: 'media.deleted' };

/** Puts a `media.*` event on the bus, its id derived from what changed (`idPart` tells repeats of a change apart). */
async function mediaEvent(
  deps: MediaDeps,
  item: Pick<MediaItem, 'id' | 'tenantId'>,
  at: string,
  event: MediaEvent,
  idPart = '',
): Promise<void> {
  if (!deps.events) return;
  const { detailType, ...fields } = event;
  const idParts = [detailType, item.id, ...Object.values(fields).map(String), idPart];
  await publishLifecycleEvent({ events: deps.events }, {
    detailType,
    detail: { ...eventEnvelope(item.tenantId, at, ...idParts), mediaId: item.id, ...fields },
  } as LifecycleEvent);
}

/** Writes a change to an item against concurrent writers: re-read and re-decide until a write lands. */
async function mutate(
  deps: MediaDeps,
  tenantId: string,
  mediaId: string,
  change: (item: MediaItem) => MediaItem | undefined,
  /** The item as the caller just read it: the first try writes from it, a try after a conflict reads again. */
  read?: MediaItem,
): Promise<{ readonly before: MediaItem; readonly after: MediaItem | undefined }> {
  for (let attempt = 0; attempt < 8; attempt++) {
    const before = attempt === 0 && read ? read : await deps.media.get(tenantId, mediaId);
    if (!before || before.deletedAt) throw new MediaNotFoundError(mediaId);
    const after = change(before);
    if (!after) return { before, after: undefined };
    if (await deps.media.replace({ ...after, rev: before.rev })) {
      return { before, after: { ...after, rev: before.rev + 1 } };
    }
  }
  throw new Error(`Media item ${mediaId} kept changing; try again.`);
}

export async function createMediaItem(
  deps: MediaDeps,
  command: {
    readonly tenantId: string;
    readonly idempotencyKey: string;
    readonly request: CreateMediaRequest;
  },
): Promise<{ readonly item: MediaItem; readonly replayed: boolean }> {
  const { tenantId, idempotencyKey, request } = command;
  const at = deps.now().toISOString();
  const item: MediaItem = {
    id: deriveMediaId(tenantId, idempotencyKey),
    tenantId,
    idempotencyKey,
    fingerprint: fingerprint(request),
    title: request.title,
    ...(request.speaker !== undefined ? { speaker: request.speaker } : {}),
    ...(request.date !== undefined ? { date: request.date } : {}),
    labels: request.labels ?? [],
    createdAt: at,
    updatedAt: at,
    metadataRevision: 1,
    rev: 0,
  };
  const outcome = await deps.media.create(item);
  if (outcome.created) return { item, replayed: false };
  if (outcome.existing.fingerprint !== item.fingerprint || outcome.existing.deletedAt) {
    throw new IdempotencyKeyReusedError(
      'This Idempotency-Key was already used for another media item; use a new key for a new item.',
    );
  }
  return { item: outcome.existing, replayed: true };
}

export async function getMediaItem(
  media: Pick<MediaStore, 'get'>,
  tenantId: string,
  mediaId: string,
): Promise<MediaItem> {
  const item = await media.get(tenantId, mediaId);
  if (!item || item.deletedAt) throw new MediaNotFoundError(mediaId);
  return item;
}

export async function listMediaItems(
  media: Pick<MediaStore, 'list'>,
  tenantId: string,
  query: ListMediaQuery,
  defaultLimit: number,
): Promise<MediaPage> {
  const page = await media.list(tenantId, { ...query, limit: query.limit ?? defaultLimit });
  return { ...page, items: page.items.filter((item) => !item.deletedAt) };
}

/**
 * Changes what the item says of itself. Search reads the title from the item;
 * what it filters by (labels, date) lives on the vectors too, so those of the
 * current version are rewritten with their own data: no transcode,
 * transcription or embedding. A version whose vectors are stored but not yet
 * current is fenced by `metadataRevision` in the switch instead.
 */
export async function updateMediaItem(
  deps: MediaDeps & {
    readonly jobs: Pick<JobStore, 'get'>;
    readonly outputs: Pick<OutputStore, 'getOutput'>;
    readonly vectors: Pick<VectorIndex, 'get' | 'put'>;
  },
  tenantId: string,
  mediaId: string,
  patch: UpdateMediaRequest,
): Promise<MediaItem> {
  const at = deps.now().toISOString();
  const { before, after } = await mutate(deps, tenantId, mediaId, (item) => {
    const next = applyPatch(item, patch);
    return { ...next, metadataRevision: item.metadataRevision + 1, updatedAt: at };
  });
  const item = after ?? before;
  await mediaEvent(
    deps,
    item,
    at,
    { detailType: 'media.updated', fields: Object.keys(patch) },
    String(item.metadataRevision),
  );
  const filtered = patch.labels !== undefined || patch.date !== undefined;
  if (filtered) await syncCurrentVectors(deps, item);
  return item;
}

/**
 * Rewrites the current version's vector metadata from the item, until the
 * item read after a rewrite is the one it was made from. The index has no
 * conditional write, so two changes' rewrites may land in either order; the
 * one whose rewrite lands last reads the item after it, and rewrites again
 * from a newer revision if there is one: the vectors end at the newest.
 */
async function syncCurrentVectors(
  deps: MediaDeps & {
    readonly jobs: Pick<JobStore, 'get'>;
    readonly outputs: Pick<OutputStore, 'getOutput'>;
    readonly vectors: Pick<VectorIndex, 'get' | 'put'>;
  },
  changed: MediaItem,
): Promise<void> {
  let item: MediaItem | undefined = changed;
  for (let attempt = 0; attempt < 8 && item?.current && !item.deletedAt; attempt++) {
    const job = await deps.jobs.get(item.current.jobId);
    if (!job) return;
    await refreshVectorMetadata(deps, job, item);
    const after: MediaItem | undefined = await deps.media.get(item.tenantId, item.id);
    if (after?.metadataRevision === item.metadataRevision && after.current?.jobId === item.current.jobId)
      return;
    item = after;
  }
}

function applyPatch(item: MediaItem, patch: UpdateMediaRequest): MediaItem {
  const { speaker: _speaker, date: _date, ...rest } = item;
  const speaker = patch.speaker === undefined ? item.speaker : (patch.speaker ?? undefined);
  const date = patch.date === undefined ? item.date : (patch.date ?? undefined);
  return {
    ...rest,
    ...(patch.title !== undefined ? { title: patch.title } : {}),
    ...(patch.labels !== undefined ? { labels: patch.labels } : {}),
    ...(speaker !== undefined ? { speaker } : {}),
    ...(date !== undefined ? { date } : {}),
  };
}

/** What every vector of a version carries about its item, at the item's current metadata. */
export function mediaVectorMetadata(item: MediaItem, job: Pick<Job, 'createdAt'>) {
  return {
    item: item.id,
    title: item.title,
    date: item.date ?? job.createdAt.slice(0, 10),
    labels: item.labels,
    revision: item.metadataRevision,
  };
}

/** Rewrites the metadata of a version's vectors from the item, keeping their data. */
export async function refreshVectorMetadata(
  deps: {
    readonly outputs: Pick<OutputStore, 'getOutput'>;
    readonly vectors: Pick<VectorIndex, 'get' | 'put'>;
  },
  job: Pick<Job, 'id' | 'tenantId' | 'createdAt'>,
  item: MediaItem,
): Promise<number> {
  const keys = await storedVectorKeysOf(deps.outputs, job);
  if (keys.length === 0) return 0;
  const stored = await deps.vectors.get(keys);
  const metadata = mediaVectorMetadata(item, job);
  await deps.vectors.put(
    stored.map((vector) => ({
      ...vector,
      metadata: {
        ...vector.metadata,
        item: metadata.item,
        title: metadata.title,
        date: dayNumberOf(metadata.date),
        labels: metadata.labels,
      },
    })),
  );
  return stored.length;
}

/** The idempotency key of a version's job: in a key space of its item, so it never meets a tenant's own job keys. */
export const versionJobKeyOf = (mediaId: string, idempotencyKey: string): string =>
  `media/${mediaId}/${idempotencyKey}`;

export interface StartVersionDeps extends MediaDeps {
  readonly jobs: Pick<JobStore, 'get'>;
  /** Submits the version's `audio.publish` job as intake does any job (idempotent by key). */
  readonly submit: (command: {
    readonly idempotencyKey: string;
    readonly input: Record<string, unknown>;
    readonly media: { readonly id: string; readonly version: number };
  }) => Promise<{ readonly job: Job; readonly replayed: boolean }>;
}

/**
 * Starts publishing a new recording of the item. The version number is
 * claimed on the item first (idempotently: the claim names the job's id, so
 * a retry finds its own claim), then the job is submitted, and only once
 * intake admitted it does the item count it as its newest version. A request
 * intake refuses (a full backlog, a bad input) gives its number back and
 * leaves the version in progress alone; a crash after the job was stored is
 * completed by the request's retry, or by the version's own workflow. The
 * version supersedes an older one in progress later, once its recording
 * proved good (`takeTheLead`).
 */
export async function startVersion(
  deps: StartVersionDeps,
  command: {
    readonly tenantId: string;
    readonly mediaId: string;
    readonly idempotencyKey: string;
    readonly request: CreateVersionRequest;
    readonly jobIdOf: (idempotencyKey: string) => string;
  },
): Promise<{ readonly item: MediaItem; readonly job: Job; readonly replayed: boolean }> {
  const { tenantId, mediaId, request } = command;
  const idempotencyKey = versionJobKeyOf(mediaId, command.idempotencyKey);
  const jobId = command.jobIdOf(idempotencyKey);
  const existing = await deps.jobs.get(jobId);
  const item = await getMediaItem(deps.media, tenantId, mediaId);
  if (existing) {
    const replay = await deps.submit({
      idempotencyKey,
      input: versionInput(item, request),
      media: existing.media ?? { id: mediaId, version: item.latest?.number ?? 1 },
    });
    return { item: await admitVersion(deps, replay.job), job: replay.job, replayed: true };
  }
  const { before, after } = await mutate(
    deps,
    tenantId,
    mediaId,
    (current) => {
      if (current.claimed?.jobId === jobId) return undefined;
      return {
        ...current,
        claimed: { number: newestNumberOf(current) + 1, jobId },
        updatedAt: deps.now().toISOString(),
      };
    },
    item,
  );
  const claimed = after ?? before;
  const version = claimed.claimed?.number ?? 1;
  let submitted: { readonly job: Job; readonly replayed: boolean };
  try {
    submitted = await deps.submit({
      idempotencyKey,
      input: versionInput(claimed, request),
      media: { id: mediaId, version },
    });
  } catch (error) {
    await giveBackClaim(deps, tenantId, mediaId, jobId).catch(() => undefined);
    throw error;
  }
  return { item: await admitVersion(deps, submitted.job), job: submitted.job, replayed: submitted.replayed };
}

/** The highest version number the item ever handed out. */
const newestNumberOf = (item: MediaItem): number =>
  Math.max(item.claimed?.number ?? 0, item.latest?.number ?? 0, item.current?.number ?? 0);

/**
 * Records that a version's job exists: its upload is claimed by the item, and
 * the item counts it as its newest version unless a newer one was admitted
 * first. Safe to repeat (a replayed request completes an admission a crash
 * cut short).
 */
async function admitVersion(deps: StartVersionDeps, job: Job): Promise<MediaItem> {
  const media = job.media;
  const ref = job.input.audioRef;
  // A replay of a version long finished claims nothing again: its retirement may have let the upload go.
  if (media && typeof ref === 'string' && !isTerminal(job.status)) {
    await deps.media.claimUpload(job.tenantId, ref, media.id);
  }
  const { before, after } = await mutate(deps, job.tenantId, media?.id ?? '', (item) => {
    if (!media || (item.latest?.number ?? 0) >= media.version) return undefined;
    return { ...item, latest: { number: media.version, jobId: job.id }, updatedAt: deps.now().toISOString() };
  });
  return after ?? before;
}

/**
 * A request intake refused stored no job: its number goes back, unless a
 * later request claimed one after it (then it stays a gap: numbers never
 * repeat).
 */
async function giveBackClaim(deps: StartVersionDeps, tenantId: string, mediaId: string, jobId: string) {
  if (await deps.jobs.get(jobId)) return;
  await mutate(deps, tenantId, mediaId, (item) => {
    const admitted = Math.max(item.latest?.number ?? 0, item.current?.number ?? 0);
    if (item.claimed?.jobId !== jobId || item.claimed.number !== admitted + 1) return undefined;
    const { claimed: _claimed, ...rest } = item;
    return rest;
  });
}

/** The `audio.publish` input of a version: its recording, and what the item says of itself at the start. */
function versionInput(item: MediaItem, request: CreateVersionRequest): Record<string, unknown> {
  return {
    ...request,
    title: item.title,
    ...(item.date ? { date: item.date } : {}),
    ...(item.labels.length > 0 ? { labels: item.labels } : {}),
  };
}

/** What taking the lead needs: a cancel for the version it supersedes (intake's `cancelJob`). */
export interface LeadDeps extends MediaDeps {
  readonly jobs: Pick<JobStore, 'get'>;
  /** Cancels a job and what it made, at its providers where they can (intake's `cancelJob`). */
  readonly cancel: (jobId: string) => Promise<unknown>;
}

/** Whether a version may no longer become current: a newer one proved good, or a newer one is current. */
const overtaken = (item: MediaItem, number: number): boolean =>
  number < (item.proven?.number ?? 0) || number < (item.current?.number ?? 0);

/**
 * A version whose recording proved good (its probe passed) takes the lead:
 * the item records it as the newest proven version, and the one that led
 * before it, if still in progress and not current, is superseded (canceled,
 * and retired at once). A version that finds a newer one already proven, or
 * its item deleted, is overtaken: it is retired, and its workflow ends it. The
 * older one is superseded before the item names the newer, so a step stopped
 * between the two does both again. Answers `overtaken` or `leading`.
 */
export async function takeTheLead(deps: LeadDeps, job: Job): Promise<'leading' | 'overtaken'> {
  const media = job.media;
  if (!media) return 'leading';
  for (let attempt = 0; attempt < 8; attempt++) {
    const item = await deps.media.get(job.tenantId, media.id);
    if (!item || item.deletedAt || overtaken(item, media.version)) {
      if (item && !item.deletedAt) {
        await mediaEvent(deps, item, deps.now().toISOString(), {
          detailType: 'media.version.superseded',
          version: media.version,
          supersededBy: Math.max(item.proven?.number ?? 0, item.current?.number ?? 0),
        });
      }
      await retire(deps, item ?? { id: media.id, tenantId: job.tenantId }, job, 'superseded');
      return 'overtaken';
    }
    const previous = item.proven;
    if (previous?.jobId === job.id) return 'leading';
    if (previous && previous.number < media.version && previous.jobId !== item.current?.jobId) {
      await supersede(deps, item, previous, media.version);
    }
    const latest =
      (item.latest?.number ?? 0) >= media.version ? item.latest : { number: media.version, jobId: job.id };
    const led = await deps.media.replace({
      ...item,
      proven: { number: media.version, jobId: job.id },
      ...(latest ? { latest } : {}),
      updatedAt: deps.now().toISOString(),
    });
    if (led) return 'leading';
  }
  throw new Error(`Media item ${media.id} kept changing while version ${media.version} took the lead.`);
}

async function supersede(
  deps: LeadDeps,
  item: MediaItem,
  version: MediaVersionRef,
  by: number,
): Promise<void> {
  const job = await deps.jobs.get(version.jobId);
  // A cancel that fails is the retirement's to repeat: the reconciler cancels a running version it retires.
  if (job && !isTerminal(job.status)) await deps.cancel(job.id).catch(() => undefined);
  await mediaEvent(deps, item, deps.now().toISOString(), {
    detailType: 'media.version.superseded',
    version: version.number,
    supersededBy: by,
  });
  await retire(deps, item, job ?? { id: version.jobId, input: {} }, 'superseded');
}

/** Retires what a version made, now: for the reconciler to delete once its job has stopped. */
async function retire(
  deps: MediaDeps,
  item: Pick<MediaItem, 'id' | 'tenantId'>,
  job: Pick<Job, 'id' | 'input'>,
  reason: Retirement['reason'],
): Promise<void> {
  await deps.media.putRetirement({
    tenantId: item.tenantId,
    mediaId: item.id,
    jobId: job.id,
    runAt: deps.now().toISOString(),
    reason,
    ...audioRefOf(job),
  });
}

const audioRefOf = (job: Pick<Job, 'input'> | undefined): { audioRef?: string } => {
  const ref = job?.input.audioRef;
  return typeof ref === 'string' ? { audioRef: ref } : {};
};

/** What the switch decided: current now, or fenced out (a newer version proved good, or the item was deleted). */
export type SwitchOutcome = 'current' | 'fenced';

/**
 * Whether a version may still become current: its item exists and no newer
 * version proved good or became current. Read before the version's job is
 * made `succeeded`, so one that can never be current ends `canceled`.
 */
export async function mayBecomeCurrent(media: Pick<MediaStore, 'get'>, job: Job): Promise<boolean> {
  if (!job.media) return true;
  const item = await media.get(job.tenantId, job.media.id);
  return item !== undefined && !item.deletedAt && !overtaken(item, job.media.version);
}

/**
 * Makes a succeeded version its item's current one, in one write that holds
 * only if no newer version proved good or became current meanwhile, the
 * item still exists, and the version's vectors carry the item's current
 * metadata (else they are rewritten first). Only a job already `succeeded`
 * switches in, and a succeeded job stays so: the item's current version is
 * always one with its result. Safe to run again: a version already current
 * stays so. The version it replaces is retired after `graceSeconds`; a
 * version fenced out after its success is retired at once.
 */
export async function switchToVersion(
  deps: MediaDeps & {
    readonly outputs: Pick<OutputStore, 'getOutput' | 'putOutput'>;
    readonly vectors: Pick<VectorIndex, 'get' | 'put'>;
    readonly graceSeconds: number;
  },
  job: Job,
): Promise<SwitchOutcome> {
  const media = job.media;
  if (!media) return 'current';
  if (job.status !== 'succeeded') {
    throw new Error(`Job ${job.id} is ${job.status}: only a succeeded version becomes current.`);
  }
  for (let attempt = 0; attempt < 8; attempt++) {
    const item = await deps.media.get(job.tenantId, media.id);
    if (!item || item.deletedAt) return 'fenced';
    if (item.current?.jobId === job.id) return 'current';
    // One resolved as succeeded by an operator before its finalize made its result has nothing to serve.
    if (overtaken(item, media.version) || !job.result) {
      await retire(deps, item, job, 'superseded');
      return 'fenced';
    }
    if ((await vectorRevisionOf(deps.outputs, job)) !== item.metadataRevision) {
      await refreshVectorMetadata(deps, job, item);
      await recordVectorRevision(deps.outputs, job, item.metadataRevision);
    }
    const now = deps.now();
    const latest =
      (item.latest?.number ?? 0) >= media.version ? item.latest : { number: media.version, jobId: job.id };
    const switched = await deps.media.replace({
      ...item,
      current: { number: media.version, jobId: job.id, publishedAt: now.toISOString() },
      ...(latest ? { latest } : {}),
      updatedAt: now.toISOString(),
    });
    if (!switched) continue;
    if (item.current) {
      const previous = item.current;
      await deps.media.putRetirement({
        tenantId: item.tenantId,
        mediaId: item.id,
        jobId: previous.jobId,
        runAt: new Date(now.getTime() + deps.graceSeconds * 1000).toISOString(),
        reason: 'replaced',
      });
      await mediaEvent(deps, item, now.toISOString(), {
        detailType: 'media.version.superseded',
        version: previous.number,
        supersededBy: media.version,
      });
    }
    await mediaEvent(deps, item, now.toISOString(), {
      detailType: 'media.version.published',
      version: media.version,
      jobId: job.id,
    });
    return 'current';
  }
  throw new Error(`Media item ${media.id} kept changing while version ${media.version} was switched in.`);
}

/** The metadata revision a version's vectors carry (recorded beside its vectors manifest). */
const vectorRevisionKey = (job: Pick<Job, 'id' | 'tenantId'>) =>
  `${rootOutputPrefix(job)}${VECTOR_REVISION_OBJECTS.split('/').at(-1)}`;

async function vectorRevisionOf(outputs: Pick<OutputStore, 'getOutput'>, job: Pick<Job, 'id' | 'tenantId'>) {
  const bytes = await outputs.getOutput(vectorRevisionKey(job));
  if (!bytes) return undefined;
  return (JSON.parse(new TextDecoder().decode(bytes)) as { revision?: number }).revision;
}

/** Records which metadata revision a version's vectors carry; the switch compares it with the item's. */
export async function recordVectorRevision(
  outputs: Pick<OutputStore, 'putOutput'>,
  job: Pick<Job, 'id' | 'tenantId'>,
  revision: number,
): Promise<void> {
  await outputs.putOutput(vectorRevisionKey(job), JSON.stringify({ revision }), 'application/json');
}

/**
 * Deletes the item: at once for clients (GET answers 404, no version can be
 * started), then its work in progress is canceled and everything its
 * versions made is retired now, for the reconciler to delete.
 */
export async function deleteMediaItem(
  deps: MediaDeps & {
    readonly jobs: Pick<JobStore, 'get'>;
    readonly cancel: (jobId: string) => Promise<void>;
  },
  tenantId: string,
  mediaId: string,
): Promise<void> {
  const at = deps.now().toISOString();
  const { before } = await mutate(deps, tenantId, mediaId, (item) => ({
    ...item,
    deletedAt: at,
    updatedAt: at,
  }));
  await mediaEvent(deps, before, at, { detailType: 'media.deleted' });
  const versions = [before.latest, before.proven, before.current].filter(
    (version, index, all): version is MediaVersionRef =>
      version !== undefined && all.findIndex((other) => other?.jobId === version.jobId) === index,
  );
  for (const version of versions) {
    const job = await deps.jobs.get(version.jobId);
    if (job && !isTerminal(job.status)) await deps.cancel(job.id).catch(() => undefined);
    await deps.media.putRetirement({
      tenantId,
      mediaId,
      jobId: version.jobId,
      runAt: at,
      reason: 'deleted',
      ...audioRefOf(job),
    });
  }
}

export interface RetireDeps extends MediaDeps {
  readonly jobs: Pick<JobStore, 'get'>;
  /** Where a publish recorded the jobs it made: their outputs are under its own, so they must stop first. */
  readonly timeline: Pick<Timeline, 'list'>;
  /** A canceled version's workflow may still be in a step that writes (a transcode): it must have ended. */
  readonly workflow: Pick<Workflow, 'status'>;
  readonly outputs: Pick<OutputStore, 'getOutput' | 'deleteOutputs'>;
  readonly vectors: Pick<VectorIndex, 'delete'>;
  readonly deleteInput: (tenantId: string, ref: string) => Promise<void>;
  readonly cancel: (job: Job) => Promise<void>;
  /** The longest a step may run (a compute step's timeout): how long an abandoned one might still write. */
  readonly quietSeconds: number;
}

/**
 * Carries out the retirements whose time has come: a version's vectors
 * first (the manifest that lists them is one of its outputs), then every
 * output under its job (stream, transcripts, passages, its chunks' and
 * embedding runs' files), then its upload unless another live version uses
 * it. A version still running, with a child job still running (a chunk at a
 * provider that cannot cancel), or whose workflow is still in a step, is
 * canceled and left for a later pass. A retirement stays until a pass finds
 * nothing left to delete, a step's timeout after the version stopped, so a
 * step its workflow abandoned that writes late is cleaned up too. Answers how
 * many retirements deleted something.
 */
export async function retireDue(deps: RetireDeps, limit: number): Promise<number> {
  let done = 0;
  for (const retirement of await deps.media.dueRetirements(deps.now(), limit)) {
    const job = await deps.jobs.get(retirement.jobId);
    const item = await deps.media.get(retirement.tenantId, retirement.mediaId);
    // A version that became current again (a retry of its switch won the race) is not retired.
    if (item?.current?.jobId === retirement.jobId && !item.deletedAt) {
      await deps.media.deleteRetirement(retirement);
      continue;
    }
    if (job && !isTerminal(job.status)) {
      await deps.cancel(job).catch(() => undefined);
      continue;
    }
    // A chunk still at a provider that cannot cancel (Deepgram) writes under its parent when it ends.
    if (job && (await hasRunningChildren(deps, job))) continue;
    if (job && (await deps.workflow.status(currentExecutionOf(job))) === 'RUNNING') continue;
    const owner = { id: retirement.jobId, tenantId: retirement.tenantId };
    const deleted =
      (await discardVectors(deps, owner)) + (await deps.outputs.deleteOutputs(rootOutputPrefix(owner)));
    // The upload goes when no version of this item uses it and no other item claims it.
    if (retirement.audioRef && !(await refInUse(deps, item, retirement))) {
      const { tenantId, audioRef, mediaId } = retirement;
      if ((await deps.media.releaseUpload(tenantId, audioRef, mediaId)) === 0) {
        await deps.deleteInput(tenantId, audioRef);
      }
    }
    if (deleted > 0) done++;
    // A step its workflow abandoned (a transcode in a branch a cancel cut short) may still write for
    // as long as a step can run: the retirement stays until a pass after that finds nothing left.
    const quietAt = Date.parse(job?.statusAt ?? retirement.runAt) + deps.quietSeconds * 1000;
    if (deleted > 0 || deps.now().getTime() < quietAt) {
      await deps.media.putRetirement({ ...retirement, runAt: deps.now().toISOString() });
      continue;
    }
    await deps.media.deleteRetirement(retirement);
  }
  return done;
}

async function hasRunningChildren(deps: RetireDeps, job: Job): Promise<boolean> {
  for (const childId of childJobIdsOf(await deps.timeline.list(job.id, job.createdAt))) {
    const child = await deps.jobs.get(childId);
    if (child && !isTerminal(child.status)) return true;
  }
  return false;
}

async function refInUse(deps: RetireDeps, item: MediaItem | undefined, retirement: Retirement) {
  if (!item || item.deletedAt) return false;
  for (const version of [item.current, item.latest, item.proven]) {
    if (!version || version.jobId === retirement.jobId) continue;
    const job = await deps.jobs.get(version.jobId);
    if (job?.input.audioRef === retirement.audioRef) return true;
  }
  return false;
}

/** The item as the API shows it: its metadata, its current version, and the newest if it is not current. */
export async function presentMediaItem(
  item: MediaItem,
  deps: {
    readonly jobs: Pick<JobStore, 'get'>;
    readonly outputs: Pick<OutputStore, 'outputUrl' | 'getOutput' | 'putOutput'>;
  },
): Promise<MediaItemView> {
  const current = item.current ? await presentVersion(deps, item, item.current) : undefined;
  const newest =
    item.latest &&
    item.latest.jobId !== item.current?.jobId &&
    item.latest.number > (item.current?.number ?? 0)
      ? await presentVersion(deps, item, item.latest)
      : undefined;
  return {
    id: item.id,
    title: item.title,
    ...(item.speaker !== undefined ? { speaker: item.speaker } : {}),
    ...(item.date !== undefined ? { date: item.date } : {}),
    labels: [...item.labels],
    createdAt: item.createdAt,
    updatedAt: item.updatedAt,
    ...(current ? { current } : {}),
    ...(newest ? { inProgress: newest } : {}),
  };
}

async function presentVersion(
  deps: {
    readonly jobs: Pick<JobStore, 'get'>;
    readonly outputs: Pick<OutputStore, 'outputUrl' | 'getOutput' | 'putOutput'>;
  },
  item: MediaItem,
  version: MediaVersionRef,
): Promise<MediaVersionView | undefined> {
  const job = await deps.jobs.get(version.jobId);
  if (!job) return undefined;
  const isCurrent = item.current?.jobId === job.id;
  const base = {
    number: version.number,
    jobId: job.id,
    status: versionStatusOf(job, isCurrent, item),
    createdAt: job.createdAt,
    ...(isCurrent && item.current ? { publishedAt: item.current.publishedAt } : {}),
  };
  if (!isCurrent || job.status !== 'succeeded') return base;
  const shown = await presentJob(job, deps.outputs);
  const result = (shown.result ?? {}) as {
    durationSeconds?: number;
    playlistUrl?: string;
    transcriptUrl?: string;
    passages?: unknown[];
    searchable?: boolean;
  };
  return {
    ...base,
    ...(result.durationSeconds !== undefined ? { durationSeconds: result.durationSeconds } : {}),
    ...(result.playlistUrl ? { playlistUrl: result.playlistUrl } : {}),
    ...(result.transcriptUrl ? { transcriptUrl: result.transcriptUrl } : {}),
    ...(Array.isArray(result.passages) ? { passages: result.passages.length } : {}),
    ...(result.searchable !== undefined ? { searchable: result.searchable } : {}),
  };
}

function versionStatusOf(job: Job, isCurrent: boolean, item: MediaItem): MediaVersionView['status'] {
  if (isCurrent) return 'published';
  if (job.status === 'failed' || job.status === 'needs_review') return 'failed';
  if (job.status === 'canceled') return item.latest?.jobId === job.id ? 'canceled' : 'superseded';
  if (job.status === 'succeeded') return 'superseded';
  return 'publishing';
}
