import type { LifecycleEvent } from '../../config/events';
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
 * `audio.publish` job that carries `media: {id, version}`. Three rules keep
 * listeners and search consistent whatever order things happen in:
 *
 * - The current version switches only when the new one has fully succeeded
 *   (stream, passages, vectors in place), in one conditional write that is
 *   fenced by version number: only the newest version started may become
 *   current, so an older one that finishes late never can.
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
  /** The newest version started; the only one that may become current. */
  readonly latest?: MediaVersionRef;
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
): Promise<{ readonly before: MediaItem; readonly after: MediaItem | undefined }> {
  for (let attempt = 0; attempt < 8; attempt++) {
    const before = await deps.media.get(tenantId, mediaId);
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
  if (filtered && item.current) {
    const job = await deps.jobs.get(item.current.jobId);
    if (job) await refreshVectorMetadata(deps, job, item);
  }
  return item;
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
  /** Cancels a job and what it made, at its providers where they can (intake's `cancelJob`). */
  readonly cancel: (jobId: string) => Promise<void>;
}

/**
 * Starts publishing a new recording of the item. The version number is
 * claimed on the item first (idempotently: the claim names the job's id, so
 * a retry finds its own claim), then the job is submitted; a crash between
 * the two leaves a claim the same request completes. A newer version
 * supersedes one still publishing: it is canceled at its providers, and the
 * switch's fence keeps it from ever becoming current.
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
    return { item, job: replay.job, replayed: true };
  }
  const { before, after } = await mutate(deps, tenantId, mediaId, (current) => {
    if (current.latest?.jobId === jobId) return undefined;
    return {
      ...current,
      latest: { number: (current.latest?.number ?? 0) + 1, jobId },
      updatedAt: deps.now().toISOString(),
    };
  });
  const claimed = after ?? before;
  const version = claimed.latest?.number ?? 1;
  if (request.audioRef) await deps.media.claimUpload(tenantId, request.audioRef, mediaId);
  const superseded = after ? before.latest : undefined;
  const { job, replayed } = await deps.submit({
    idempotencyKey,
    input: versionInput(claimed, request),
    media: { id: mediaId, version },
  });
  if (superseded && superseded.jobId !== before.current?.jobId) {
    await supersede(deps, claimed, superseded);
  }
  return { item: claimed, job, replayed };
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

async function supersede(deps: StartVersionDeps, item: MediaItem, version: MediaVersionRef): Promise<void> {
  const job = await deps.jobs.get(version.jobId);
  if (job && !isTerminal(job.status)) await deps.cancel(job.id).catch(() => undefined);
  await mediaEvent(deps, item, deps.now().toISOString(), {
    detailType: 'media.version.superseded',
    version: version.number,
    supersededBy: item.latest?.number ?? version.number + 1,
  });
  await deps.media.putRetirement({
    tenantId: item.tenantId,
    mediaId: item.id,
    jobId: version.jobId,
    runAt: deps.now().toISOString(),
    reason: 'superseded',
    ...audioRefOf(job),
  });
}

const audioRefOf = (job: Pick<Job, 'input'> | undefined): { audioRef?: string } => {
  const ref = job?.input.audioRef;
  return typeof ref === 'string' ? { audioRef: ref } : {};
};

/** What the switch decided: current now, or fenced out (a newer version was started, or the item deleted). */
export type SwitchOutcome = 'current' | 'fenced';

/**
 * Makes a fully published version its item's current one, in one write that
 * holds only if this is still the newest version started, the item still
 * exists, and the version's vectors carry the item's current metadata (else
 * they are rewritten first). Safe to run again: a version already current
 * stays so. The version it replaces is retired after `graceSeconds`.
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
  for (let attempt = 0; attempt < 8; attempt++) {
    const item = await deps.media.get(job.tenantId, media.id);
    if (!item || item.deletedAt || item.latest?.jobId !== job.id) {
      if (item?.current?.jobId === job.id && !item.deletedAt) return 'current';
      return 'fenced';
    }
    if (item.current?.jobId === job.id) return 'current';
    if ((await vectorRevisionOf(deps.outputs, job)) !== item.metadataRevision) {
      await refreshVectorMetadata(deps, job, item);
      await recordVectorRevision(deps.outputs, job, item.metadataRevision);
    }
    const now = deps.now();
    const switched = await deps.media.replace({
      ...item,
      current: { number: media.version, jobId: job.id, publishedAt: now.toISOString() },
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
  `${rootOutputPrefix(job)}vectors-revision.json`;

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
  const versions = [before.latest, before.current].filter(
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
  for (const version of [item.current, item.latest]) {
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
