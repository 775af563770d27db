import * as z from 'zod';
import { PROVIDER_NAMES } from './providers';

/**
 * The lifecycle events Longhaul puts on its deployment's EventBridge bus: the
 * one home of their `source`, their detail-types, the schema of each one's
 * `detail`, and the limits of EventBridge's PutEvents. The CDK stack, the
 * runtime and the local emulator all read it; docs/operations.md's "Events on the bus"
 * table is this module, in words.
 *
 * Every event on the bus looks like
 *
 * ```json
 * { "version": "0", "id": "<EventBridge's own id>", "source": "longhaul",
 *   "detail-type": "job.succeeded", "time": "…", "region": "…", "account": "…",
 *   "resources": [],
 *   "detail": { "schemaVersion": 1, "eventId": "evt_…", "occurredAt": "…", "tenantId": "acme", … } }
 * ```
 *
 * - `detail.schemaVersion` is {@link EVENT_SCHEMA_VERSION}: fields are only
 *   ever added within a version; a field removed or changed in meaning takes
 *   a new version.
 * - `detail.eventId` is stable per change: the same job reaching the same
 *   status (in the same run of its record) always carries the same id, so a
 *   consumer that keeps the ids it has seen drops the duplicates that
 *   at-least-once delivery brings (a retried step puts the event again).
 *   EventBridge's own top-level `id` differs on each put and cannot be used
 *   for that.
 * - `detail.occurredAt` is when the change happened (for a job: when it
 *   finished), not when the event was put.
 * - Events carry no job input or result (which may be large, and hold what a
 *   tenant would not want on a shared bus): a consumer reads the job by its
 *   id through the API.
 */

/** `source` of every event Longhaul puts; `aws.` prefixes are AWS's own. */
export const EVENT_SOURCE = 'longhaul';

/** Version of every event's `detail` schema. */
export const EVENT_SCHEMA_VERSION = 1;

/**
 * EventBridge's PutEvents limits, as documented on 6 December 2026:
 * - 10 entries per request, and each entry's `Source` 1..256 and `DetailType`
 *   1..128 characters (https://docs.aws.amazon.com/eventbridge/latest/APIReference/API_PutEvents.html,
 *   https://docs.aws.amazon.com/eventbridge/latest/APIReference/API_PutEventsRequestEntry.html);
 * - 256 KB of entries per request, each entry's size counted as
 *   `putEventsEntrySize` counts it
 *   (https://docs.aws.amazon.com/eventbridge/latest/userguide/eb-putevent-size.html).
 *   That page words the limit both per entry and for the request's entries
 *   together; the request's total is the stricter reading, so both the
 *   adapter and the local emulator hold every request to it.
 */
export const PUT_EVENTS_LIMITS = {
  entriesPerRequest: 10,
  requestEntriesBytes: 256 * 1024,
  /** What a given `Time` counts for, whatever its value. */
  timeBytes: 14,
  sourceLength: 256,
  detailTypeLength: 128,
  resourcesPerEntry: 100,
} as const;

/** The fields of a PutEvents entry that count toward its size. */
export interface SizedEntry {
  readonly Time?: unknown;
  readonly Source?: string;
  readonly DetailType?: string;
  readonly Detail?: string;
  readonly Resources?: readonly (string | null | undefined)[];
}

/**
 * An entry's size as EventBridge counts it: 14 bytes for a `Time`, and the
 * UTF-8 bytes of `Source`, `DetailType`, `Detail` and each of `Resources`.
 */
export function putEventsEntrySize(entry: SizedEntry): number {
  const bytes = (text: string | null | undefined) => (text ? Buffer.byteLength(text, 'utf8') : 0);
  return (
    (entry.Time !== undefined && entry.Time !== null ? PUT_EVENTS_LIMITS.timeBytes : 0) +
    bytes(entry.Source) +
    bytes(entry.DetailType) +
    bytes(entry.Detail) +
    (entry.Resources ?? []).reduce((sum, resource) => sum + bytes(resource), 0)
  );
}

const instant = z.iso.datetime({ offset: true });

/** What every event's detail carries. */
const common = {
  schemaVersion: z.literal(EVENT_SCHEMA_VERSION),
  /** Stable per change, for deduplication (see above). */
  eventId: z.string().regex(/^evt_[A-Za-z0-9_-]{22}$/),
  occurredAt: instant,
};

/** What every event of a tenant's job or media item carries. */
const envelope = {
  ...common,
  /** The tenant the job or media item belongs to: a rule can route each tenant's events apart. */
  tenantId: z.string().min(1),
};

/**
 * What a provider's event says: which provider, and who changed its state
 * (`provider`: it throttled or went down; `operator`: an admin, by hand). A
 * provider serves every tenant, so its events carry no `tenantId`.
 */
const providerFields = {
  ...common,
  provider: z.enum(PROVIDER_NAMES),
  by: z.enum(['provider', 'operator']),
};

const jobError = z.object({ code: z.string(), message: z.string() });

/** What a job event says of its job: enough to route on and to read the job by its id. */
const jobFields = {
  ...envelope,
  jobId: z.string().min(1),
  jobType: z.string().min(1),
  /** The key the job was submitted under (follow-ups: `follow-up:<parent>:<name>`). */
  idempotencyKey: z.string(),
  createdAt: instant,
  /** The job an operator replayed as this one. */
  replayOf: z.string().optional(),
  /** The recurring schedule whose firing created the job. */
  scheduleId: z.string().optional(),
};

/** What a media event says of its item. */
const mediaFields = {
  ...envelope,
  mediaId: z.string().min(1),
};

/** Each detail-type and the schema of its detail. */
export const EVENT_DETAILS = {
  /** A job finished with a result (its `result` is read through the API). */
  'job.succeeded': z.strictObject({ ...jobFields, status: z.literal('succeeded'), finishedAt: instant }),
  /** A job failed; `error` is the job's error. */
  'job.failed': z.strictObject({
    ...jobFields,
    status: z.literal('failed'),
    finishedAt: instant,
    error: jobError,
  }),
  /** A job was canceled by its client (or with the job that made it). */
  'job.canceled': z.strictObject({ ...jobFields, status: z.literal('canceled'), finishedAt: instant }),
  /**
   * A job needs an operator (its submission's outcome is unknown, or the
   * provider did not finish in time); `error` says why. It is settled later
   * by an operator or the reconciler, which puts the terminal event then.
   */
  'job.needs_review': z.strictObject({ ...jobFields, status: z.literal('needs_review'), error: jobError }),
  /** A version of a media item was published and is what the item now serves. */
  'media.version.published': z.strictObject({
    ...mediaFields,
    version: z.number().int().min(1),
    /** The job that published it. */
    jobId: z.string().min(1).optional(),
  }),
  /** Publishing a version of a media item failed; the item keeps serving what it served. */
  'media.version.failed': z.strictObject({
    ...mediaFields,
    version: z.number().int().min(1),
    jobId: z.string().min(1).optional(),
    error: jobError,
  }),
  /** A newer version replaced this one as what the item serves. */
  'media.version.superseded': z.strictObject({
    ...mediaFields,
    version: z.number().int().min(1),
    supersededBy: z.number().int().min(1),
  }),
  /** A media item's own fields (title, labels, date) changed. */
  'media.updated': z.strictObject({ ...mediaFields, fields: z.array(z.string().min(1)).min(1) }),
  /** A media item was deleted, with its versions. */
  'media.deleted': z.strictObject(mediaFields),
  /**
   * A provider's grants were paused while it took submissions: its jobs wait
   * in their lines (none fails) until `pausedUntil`, or until an operator
   * resumes it. Put once a pause; a pause lengthened while it lasts puts none,
   * unless an operator lengthens it.
   */
  'provider.paused': z.strictObject({
    ...providerFields,
    pausedUntil: instant,
    /** Why: what the provider answered, or the operator's reason. */
    reason: z.string(),
  }),
  /**
   * An operator ended a provider's pause: grants go on at once. A pause that
   * runs out by itself puts no event; grants go on at its `pausedUntil`.
   */
  'provider.resumed': z.strictObject(providerFields),
} as const;

export type EventDetailType = keyof typeof EVENT_DETAILS;
export const EVENT_DETAIL_TYPES = Object.keys(EVENT_DETAILS) as [EventDetailType, ...EventDetailType[]];

/** The detail of one detail-type. */
export type EventDetail<T extends EventDetailType> = z.infer<(typeof EVENT_DETAILS)[T]>;

/** One lifecycle event: its detail-type and its detail. */
export type LifecycleEvent = {
  [T in EventDetailType]: { readonly detailType: T; readonly detail: EventDetail<T> };
}[EventDetailType];

/** The detail-type of a job's status, for the statuses that put an event. */
export const JOB_EVENT_OF_STATUS = {
  succeeded: 'job.succeeded',
  failed: 'job.failed',
  canceled: 'job.canceled',
  needs_review: 'job.needs_review',
} as const satisfies Record<string, EventDetailType>;
