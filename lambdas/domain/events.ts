import { createHash } from 'node:crypto';
import {
  EVENT_DETAILS,
  EVENT_SCHEMA_VERSION,
  type EventDetail,
  type EventDetailType,
  JOB_EVENT_OF_STATUS,
  type LifecycleEvent,
} from '../../config/events';
import type { Job } from './job';
import type { EventPublisher } from './ports';

/**
 * Lifecycle events on the deployment's bus (config/events.ts): built from
 * what the caller already holds, so putting one reads and writes nothing in
 * the job table; one PutEvents call per change.
 */

export interface EventDeps {
  readonly events: EventPublisher;
}

/**
 * An event id derived from what identifies the change, so every put of the
 * same change carries the same id: `evt_` and 22 characters of a SHA-256.
 */
export function eventIdOf(...parts: readonly string[]): string {
  return `evt_${createHash('sha256').update(parts.join('\n')).digest('base64url').slice(0, 22)}`;
}

/**
 * Puts one lifecycle event, its detail checked against its detail-type's
 * schema first (a detail that does not match is a bug, thrown here, never
 * put). The media work calls this for its `media.*` events.
 */
export async function publishLifecycleEvent(deps: EventDeps, event: LifecycleEvent): Promise<void> {
  const schema = EVENT_DETAILS[event.detailType];
  const detail = schema.parse(event.detail) as EventDetail<EventDetailType>;
  await deps.events.publish([{ detailType: event.detailType, detail } as LifecycleEvent]);
}

/** The detail every event carries besides its own, with the id derived from `idParts`. */
export function eventEnvelope(
  tenantId: string,
  occurredAt: string,
  ...idParts: readonly string[]
): { schemaVersion: typeof EVENT_SCHEMA_VERSION; eventId: string; occurredAt: string; tenantId: string } {
  return { schemaVersion: EVENT_SCHEMA_VERSION, eventId: eventIdOf(...idParts), occurredAt, tenantId };
}

/**
 * The event of the status the job is in, or undefined when its status puts
 * none (`scheduled`, `queued`, `running`) or the job is a workflow's own
 * (a chunk or an embedding run of `audio.publish`, which clients never see).
 * Its id is the job's id, its record's creation, the status and the number
 * of operator requeues: one id per time the job reached that status.
 */
export function jobEventOf(job: Job): LifecycleEvent | undefined {
  if (job.parent) return undefined;
  const status = job.status;
  if (!(status in JOB_EVENT_OF_STATUS)) return undefined;
  const detailType = JOB_EVENT_OF_STATUS[status as keyof typeof JOB_EVENT_OF_STATUS];
  const finishedAt = job.finishedAt ?? job.statusAt;
  const common = {
    ...eventEnvelope(job.tenantId, finishedAt, ...jobEventIdParts(job)),
    jobId: job.id,
    jobType: job.type,
    idempotencyKey: job.idempotencyKey,
    createdAt: job.createdAt,
    ...(job.replayOf !== undefined ? { replayOf: job.replayOf } : {}),
    ...(job.scheduleId !== undefined ? { scheduleId: job.scheduleId } : {}),
  };
  const error = job.error ?? { code: 'unknown', message: 'No reason was recorded.' };
  switch (detailType) {
    case 'job.succeeded':
      return { detailType, detail: { ...common, status: 'succeeded', finishedAt } };
    case 'job.canceled':
      return { detailType, detail: { ...common, status: 'canceled', finishedAt } };
    case 'job.failed':
      return { detailType, detail: { ...common, status: 'failed', finishedAt, error } };
    case 'job.needs_review':
      return { detailType, detail: { ...common, status: 'needs_review', error } };
  }
}

/** What identifies the job's current status: its id, its record's creation, the status, the requeues. */
function jobEventIdParts(job: Job): readonly string[] {
  return ['job', job.id, job.createdAt, job.status, String(job.resubmissions ?? 0)];
}

/**
 * The id of the job's current status as an event: its lifecycle event's id
 * on the bus, and the id its client webhook carries, so every delivery of
 * one status (a retried notify) has the same id to deduplicate on.
 */
export function jobEventIdOf(job: Job): string {
  return eventIdOf(...jobEventIdParts(job));
}

/** Puts the event of the job's current status, if it has one; safe to repeat (same event id). */
export async function publishJobEvent(deps: EventDeps, job: Job): Promise<void> {
  const event = jobEventOf(job);
  if (event) await publishLifecycleEvent(deps, event);
  // A version of a media item that failed: the item keeps serving what it served.
  if (job.media && job.status === 'failed' && job.error) {
    await publishLifecycleEvent(deps, {
      detailType: 'media.version.failed',
      detail: {
        ...eventEnvelope(job.tenantId, job.statusAt, 'media.version.failed', job.id, job.statusAt),
        mediaId: job.media.id,
        version: job.media.version,
        jobId: job.id,
        error: job.error,
      },
    });
  }
}
