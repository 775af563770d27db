/**
 * Generated from the OpenAPI document (lambdas/api/openapi.ts, components.schemas)
 * by `npx tsx client/scripts/api-types.ts`. Do not edit by hand. The SDK
 * ships alone, so it carries this copy of the server's types;
 * test/unit/client-contract.test.ts fails when it is stale.
 */

/** A search over the passages of every recording the tenant published. */
export type SearchRequest = {
  /** What the listener remembers, in their own words. */
  readonly query: string;
  /** Hits to answer at most (default 10). */
  readonly limit?: number;
  readonly filter?: SearchFilter;
};

/** Narrows the search to the tenant's recordings that match every field given. `dateFrom` must not be after `dateTo`. */
export type SearchFilter = {
  /** Only passages of these recordings (media item ids, or audio.publish job ids). */
  readonly itemIds?: readonly string[];
  /** Only recordings whose date is this day or later. */
  readonly dateFrom?: string;
  /** Only recordings whose date is this day or earlier. */
  readonly dateTo?: string;
  /** Only recordings that carry at least one of these labels. */
  readonly labels?: readonly string[];
};

/** One passage a search found. */
export type SearchHit = {
  /** How close the passage is to the query, higher is closer: 1 − the cosine distance with a cosine index, 1 / (1 + distance) with a Euclidean one. */
  readonly score: number;
  readonly item: {
    /** The recording: its media item, or its audio.publish job. */
    readonly id: string;
    readonly title?: string;
    /** The media item's speaker. */
    readonly speaker?: string;
    /** The media item's version the passage is from: its current one. */
    readonly version?: number;
    /** The recording's date: the one given when it was published, else the day it was. */
    readonly date: string;
    readonly labels: readonly string[];
  };
  readonly passage: {
    /** The passage's place in the recording's passages, from 0. */
    readonly index: number;
    /** Seconds from the start of the recording. */
    readonly start: number;
    readonly end: number;
    readonly text: string;
  };
  /** How to play the passage from its first word. */
  readonly playback: {
    /** The presigned HLS master playlist; a player starts it at `startSeconds` (hls.js: `startPosition`). */
    readonly playlistUrl: string;
    /** Where the passage's first word is, in seconds. */
    readonly startSeconds: number;
    /** The playlist with a media fragment, `#t=<start>`, the form a browser player takes. */
    readonly url: string;
  };
};

/** What a search found. */
export type SearchResult = {
  /** Hits, closest first. */
  readonly items: readonly SearchHit[];
};

/** A new media item: its metadata. Its audio comes as versions (`POST /v1/media/{id}/versions`). */
export type CreateMediaRequest = {
  /** What listeners and search see of it. */
  readonly title: string;
  /** Who preached or spoke. */
  readonly speaker?: string;
  /** When it was preached or recorded; search filters by it. */
  readonly date?: string;
  /** A series, a place, a topic; search filters by them. */
  readonly labels?: readonly string[];
};

/** A metadata change: what search shows and filters by changes without transcoding, transcribing or embedding again. */
export type UpdateMediaRequest = {
  /** What listeners and search see of it. */
  readonly title?: string;
  /** `null` removes it. */
  readonly speaker?: string | null;
  /** `null` removes it. */
  readonly date?: string | null;
  /** Replaces the labels. */
  readonly labels?: readonly string[];
};

/** A new recording of the item: an upload (`audioRef`) or an https URL. */
export type CreateVersionRequest = {
  /** An https URL the provider can fetch. */
  readonly audioUrl?: string;
  readonly audioRef?: string;
  readonly language?: string;
};

export type ListMediaQuery = {
  /** Only items that carry this label. */
  readonly label?: string;
  /** Only items dated this day or later. */
  readonly dateFrom?: string;
  /** Only items dated this day or earlier. */
  readonly dateTo?: string;
  readonly limit?: number;
  /** `nextCursor` of the previous page. */
  readonly cursor?: string;
};

/** A media item: its metadata, its current version and the one being published. */
export type MediaItem = {
  readonly id: string;
  readonly title: string;
  readonly speaker?: string;
  /** A calendar date, YYYY-MM-DD. */
  readonly date?: string;
  readonly labels: readonly string[];
  readonly createdAt: string;
  readonly updatedAt: string;
  /** What listeners and search get now; absent until one is published. */
  readonly current?: MediaVersion;
  /** The newest version, while it is being published. */
  readonly inProgress?: MediaVersion;
};

/** One recording of a media item. */
export type MediaVersion = {
  /** 1 for the first recording, then one more for each. */
  readonly number: number;
  /** The audio.publish job that publishes it. */
  readonly jobId: string;
  readonly status: 'publishing' | 'published' | 'failed' | 'superseded' | 'canceled';
  readonly createdAt: string;
  readonly publishedAt?: string;
  readonly durationSeconds?: number;
  /** The presigned HLS master playlist of this version. */
  readonly playlistUrl?: string;
  readonly transcriptUrl?: string;
  /** How many passages its transcript has. */
  readonly passages?: number;
  /** Whether search finds its passages. */
  readonly searchable?: boolean;
};

export type MediaPage = {
  readonly items: readonly MediaItem[];
  readonly nextCursor: string | null;
};

export type JobError = {
  readonly code: string;
  readonly message: string;
};

/** Why a queued job waits; present only while it is queued and the reason is known. Read when the job is read: it says how things stood then. */
export type JobWaiting = {
  /** `provider_paused`: its provider throttled or went down (or an operator paused it), and no job goes there until `until`. `provider_full`: every slot of its provider is taken; it waits in its tenant's line. `tenant_cap`: its tenant holds as many of the provider's slots as its maxInFlight allows. `rate_limited`: its provider's request rate is used up for now. */
  readonly reason: 'provider_paused' | 'provider_full' | 'tenant_cap' | 'rate_limited';
  /** When the reason ends, where it is known (a pause, the next token of the rate). */
  readonly until?: string;
  /** Its place in its tenant's line (1: next), when it is near the head; absent further back. */
  readonly position?: number;
  /** When it is expected to start, where known: behind a pause or the rate, `until` and then a token each for the jobs ahead of it in its tenant's line (other tenants' turns can come between). */
  readonly estimatedStartAt?: string;
};

/** A provider as operators see it. */
export type ProviderStatus = {
  readonly name: 'longhaul-http' | 'replicate' | 'deepgram' | 'bedrock';
  /** `open`: it takes submissions; `paused`: no job is granted a slot until `pausedUntil` (its jobs wait in their lines, none fails); `probing`: one job tries it before grants go on. */
  readonly state: 'open' | 'paused' | 'probing';
  /** While `paused`: when grants go on by themselves. */
  readonly pausedUntil?: string;
  /** While `paused`: why, as the provider answered (a 429, a 503) or as the operator who paused it wrote. */
  readonly reason?: string;
  /** Its in-flight limit (MAX_IN_FLIGHT_<PROVIDER>). */
  readonly maxInFlight: number;
  /** Slots held now. */
  readonly inFlight: number;
  /** Jobs waiting for one of its slots. */
  readonly queued: number;
};

/** Counted from the job indexes, which lag the jobs by a moment. */
export type TenantUsage = {
  /** Jobs waiting for a provider slot. */
  readonly queued: number;
  /** Jobs waiting for their runAt. */
  readonly scheduled: number;
  /** Jobs running at any provider. */
  readonly inFlight: number;
};

/** A tenant's settings, with which the scheduler shares each provider's slots among tenants with waiting jobs, and what the tenant has in the system now. A tenant whose settings were never set has the defaults. */
export type Tenant = {
  readonly tenant: string;
  /** Its share of a freed provider slot, in proportion to the other waiting tenants' weights. */
  readonly weight: number;
  /** Its jobs running at one provider at most, inside that provider's own limit. Absent: no cap of its own. */
  readonly maxInFlight?: number;
  /** Its queued and scheduled jobs at most. */
  readonly maxQueued: number;
  readonly usage: TenantUsage;
};

/** One entry of a job's history, e.g. `job.accepted`, `job.enqueued`, `step.succeeded` (with `step` one of prepare, submit, await, release, finalize, notify), `step.retry`, `provider.accepted`, `job.needs_review`, `operator.resolved`. */
export type TimelineEvent = {
  readonly at: string;
  readonly type: string;
  readonly step?: string;
  readonly attempt?: number;
  readonly detail?: string;
};

export type UploadTicket = {
  /** Use as sourceImageRef (image.generate, image/*) or audioRef (audio.transcribe, audio/*) or audioRef (audio.publish, audio/*) once the PUT succeeded. */
  readonly ref: string;
  /** Presigned PUT URL. */
  readonly uploadUrl: string;
  readonly expiresAt: string;
};

/** PUT each part (bytes [(partNumber - 1) × partSizeBytes, partNumber × partSizeBytes) of the file) to its uploadUrl with exactly that Content-Length, keep each answer's ETag, then complete the upload. A failed part is sent again alone, to the same URL, until expiresAt; after that, POST /v1/uploads/{ref}/parts renews the URLs of the parts still missing. */
export type MultipartUploadTicket = {
  /** Use as sourceImageRef (image.generate, image/*) or audioRef (audio.transcribe, audio/*) or audioRef (audio.publish, audio/*) once the upload is completed. */
  readonly ref: string;
  readonly uploadId: string;
  readonly partSizeBytes: number;
  readonly parts: readonly {
    readonly partNumber: number;
    /** Presigned PUT URL of this part. */
    readonly uploadUrl: string;
  }[];
  readonly expiresAt: string;
};

/** Opens the live-progress WebSocket for one job: connect to `streamUrl?ticket=<ticket>` before expiresAt (60 s). Ask for a new ticket for each (re)connection. */
export type StreamTicket = {
  readonly ticket: string;
  readonly expiresAt: string;
  /** The WebSocket URL (AWS: the stack output StreamUrl). */
  readonly streamUrl: string;
};

export type CancelJobsResult = {
  /** The tenant's unfinished jobs (scheduled, queued, running, needs_review) this request found matching the filter: at most BULK_MAX_PER_REQUEST (100 by default). Finished jobs are never matched. */
  readonly matched: number;
  /** Of those, the jobs now canceled; 0 on a dry run. */
  readonly canceled: number;
  /** Of those, jobs that carry the cancel request (`cancelRequestedAt`) instead: jobs in review keep their status and only an operator settles them; an audio.publish stays `running` until every job it made is settled, then becomes `canceled`. */
  readonly cancelRequested: number;
  /** More jobs may match: send the same filter again with this as `cursor`. Null when every matching job was looked at. */
  readonly nextCursor: string | null;
};

export type ReplayJobsResult = {
  /** Jobs this request found matching the filter, replayed or refused: at most REPLAY_MAX_PER_REQUEST (50 by default). */
  readonly matched: number;
  /** New jobs this request created; 0 on a dry run. */
  readonly replayed: number;
  /** Jobs replayed with this note before (a retried request): their replay is in `jobs`, not made again. */
  readonly alreadyReplayed: number;
  readonly refused: readonly {
    readonly id: string;
    /** `needs-review`: its provider submission may have been charged with no known outcome; resolve it first. `not-finished`: it may still run. `provider-outcome-unknown`: finished, but a submission of it may still run at the provider. `tenant-queue-full`: the tenant is at its maxQueued; replay later. `replay-in-progress`: the same replay is being accepted right now; retry the request. `key-taken`: the replay's key names another job. `child-outcome-unknown`: a job it made (an audio.publish's chunk or embedding job) is in review, or was sent to its provider with no known outcome: it may have been charged; resolve that job first. */
    readonly reason:
      | 'needs-review'
      | 'not-finished'
      | 'provider-outcome-unknown'
      | 'tenant-queue-full'
      | 'replay-in-progress'
      | 'key-taken'
      | 'child-outcome-unknown';
  }[];
  /** Each replay made or found by this request. */
  readonly jobs: readonly {
    readonly id: string;
    readonly replayOf: string;
    readonly tenantId: string;
  }[];
  /** More jobs may match: send the same filter and note again with this as `cursor`. Null when every matching job was looked at. */
  readonly nextCursor: string | null;
};

export type ResumeJobsResult = {
  /** Failed jobs this request found matching the filter, resumed or refused: at most REPLAY_MAX_PER_REQUEST (50 by default) read. */
  readonly matched: number;
  /** Of those, the jobs now running again; 0 on a dry run. */
  readonly resumed: number;
  /** Matching jobs that may not be resumed: replayed already, sent to their provider with no known outcome, failed by their provider or by an operator, or ended by their startBy (submit those again). */
  readonly refused: readonly {
    readonly id: string;
    /** Why it is not resumed, as a single resume says. */
    readonly reason: string;
  }[];
  /** More jobs may match: send the same filter and note again with this as `cursor`. Null when every failed job was looked at. */
  readonly nextCursor: string | null;
};
