import * as z from 'zod';
import {
  isTimeZone,
  nextRunAfter,
  parseScheduleExpression,
  type ScheduleExpression,
  ScheduleExpressionError,
} from '../../config/schedule-expressions';
import {
  IdempotencyKeyInUseError,
  IdempotencyKeyReusedError,
  ScheduleNotFoundError,
  TenantQueueFullError,
  ValidationError,
} from './errors';
import { deriveScheduleId, fingerprint, SCHEDULE_ID_PATTERN } from './idempotency';
import { type IntakeDeps, type SubmitResult, submitJob } from './intake';
import {
  type CreateJobRequest,
  PAGE_QUERY_FIELDS,
  parseCreateJob,
  type RequestPolicy,
  toValidationError,
} from './requests';

/**
 * Recurring schedules: a tenant's job template fired on an EventBridge
 * Scheduler expression. The schedule item is the truth; the trigger (one
 * EventBridge Scheduler schedule per Longhaul schedule) only says when to
 * look at it. A firing reads the item and creates nothing for a schedule that
 * is disabled or gone, so a trigger that outlived its schedule, or fired
 * just as it was disabled, is harmless. Each firing submits one job through
 * intake under the key `schedule:<id>:<fire time>`, so a repeated firing
 * (Scheduler delivers at least once) lands on the same job.
 */

export interface Schedule {
  readonly id: string;
  readonly tenantId: string;
  readonly expression: string;
  readonly timezone: string;
  readonly job: CreateJobRequest;
  /** Each firing's job gets a startBy this many seconds after the firing; absent: none. */
  readonly startWithinSeconds?: number;
  readonly enabled: boolean;
  readonly idempotencyKey: string;
  /** SHA-256 of the canonical request, to tell a replay from a reused key. */
  readonly fingerprint: string;
  /** A rate schedule fires at this instant and every period after it. */
  readonly startAt: string;
  readonly createdAt: string;
  readonly updatedAt: string;
  /** Moves on with every change of the schedule (absent on schedules stored before it counted: 0). */
  readonly revision?: number;
  /** The revision the trigger was last put as: the trigger says what the schedule says while it is `revision`. */
  readonly syncedRevision?: number;
}

const revisionOf = (schedule: Pick<Schedule, 'revision'>): number => schedule.revision ?? 0;

/** Whether the trigger was put as the schedule now says. */
export const isSynced = (schedule: Pick<Schedule, 'revision' | 'syncedRevision'>): boolean =>
  schedule.syncedRevision === revisionOf(schedule);

/** The schedule resource of the public API (CONTRACT section 1). */
export interface ScheduleResource {
  readonly id: string;
  readonly expression: string;
  readonly timezone: string;
  readonly job: CreateJobRequest;
  readonly startWithinSeconds?: number;
  readonly enabled: boolean;
  /** The next firing; null while disabled or when the expression never fires again. */
  readonly nextRunAt: string | null;
  readonly createdAt: string;
}

export interface SchedulePage {
  readonly items: readonly Schedule[];
  readonly nextCursor: string | null;
}

export type ScheduleCreateOutcome =
  | { readonly created: true }
  | { readonly created: false; readonly existing: Schedule };

/** The schedule items, each tenant's apart: another tenant's schedule is never found. */
export interface ScheduleStore {
  /** Creates the schedule with one conditional write unless one with its id exists, which it then returns. */
  create(schedule: Schedule): Promise<ScheduleCreateOutcome>;
  get(tenantId: string, scheduleId: string): Promise<Schedule | undefined>;
  /** In id order. Throws a ValidationError for a cursor it did not issue. */
  list(tenantId: string, query: { readonly limit: number; readonly cursor?: string }): Promise<SchedulePage>;
  /** Sets `enabled` on an existing schedule and moves its revision on; undefined if there is none. */
  setEnabled(tenantId: string, scheduleId: string, enabled: boolean, at: Date): Promise<Schedule | undefined>;
  /**
   * Records that the trigger was put as the schedule's `revision` says, with
   * one conditional write: false, and nothing written, when the schedule was
   * changed since (or is gone).
   */
  markSynced(schedule: Pick<Schedule, 'tenantId' | 'id' | 'revision'>): Promise<boolean>;
  delete(tenantId: string, scheduleId: string): Promise<void>;
}

/** The triggers that fire schedules: EventBridge Scheduler schedules in AWS. */
export interface ScheduleTriggers {
  /** Creates or replaces the schedule's trigger; a rate schedule's first firing is `firstRunAt`. */
  put(schedule: Schedule, firstRunAt: Date | undefined): Promise<void>;
  /** Removes the schedule's trigger; one already gone is fine. */
  remove(scheduleId: string): Promise<void>;
}

export interface ScheduleDeps {
  readonly schedules: ScheduleStore;
  readonly triggers: ScheduleTriggers;
  readonly now: () => Date;
}

const jobTemplate = z.record(z.string(), z.unknown(), { error: 'must be an object' });

/** The longest startWithinSeconds: a year, as far as a runAt may be ahead. */
export const MAX_START_WITHIN_SECONDS = 365 * 86_400;
const START_WITHIN = `must be a whole number of seconds from 1 to ${MAX_START_WITHIN_SECONDS}`;

const createScheduleBody = z.strictObject({
  expression: z.string({ error: 'must be a string' }),
  timezone: z.string({ error: 'must be a string' }).optional(),
  job: jobTemplate,
  startWithinSeconds: z
    .int({ error: START_WITHIN })
    .min(1, START_WITHIN)
    .max(MAX_START_WITHIN_SECONDS, START_WITHIN)
    .optional(),
  enabled: z.boolean({ error: 'must be true or false' }).optional(),
});

export interface CreateScheduleRequest {
  readonly expression: string;
  readonly timezone: string;
  readonly job: CreateJobRequest;
  /** Absent: the firings' jobs have no startBy. */
  readonly startWithinSeconds?: number;
  readonly enabled: boolean;
}

export const DEFAULT_TIMEZONE = 'UTC';

/**
 * Validates a schedule request: the expression as EventBridge Scheduler takes
 * it (at most once a minute, and firing at least once more), an IANA time
 * zone, and the job template exactly as POST /v1/jobs validates a job.
 * Every problem is reported at once, with a pointer.
 */
export function parseCreateSchedule(body: unknown, policy: RequestPolicy, now: Date): CreateScheduleRequest {
  const envelope = createScheduleBody.safeParse(body);
  if (!envelope.success) throw toValidationError(envelope.error);
  const { expression, timezone = DEFAULT_TIMEZONE, job, startWithinSeconds, enabled = true } = envelope.data;
  const errors: { pointer: string; detail: string }[] = [];
  let parsed: ScheduleExpression | undefined;
  try {
    parsed = parseScheduleExpression(expression);
  } catch (error) {
    if (!(error instanceof ScheduleExpressionError)) throw error;
    errors.push({ pointer: '/expression', detail: error.message });
  }
  const knownZone = isTimeZone(timezone);
  if (!knownZone)
    errors.push({ pointer: '/timezone', detail: 'must be an IANA time zone name, e.g. Europe/Berlin' });
  if (parsed && knownZone && nextRunAfter(parsed, timezone, now, now) === undefined) {
    errors.push({ pointer: '/expression', detail: 'never fires after now' });
  }
  const { startBy, ...templateFields } = job;
  if (startBy !== undefined) {
    // A fixed instant would pass for every firing after it: the deadline is relative to each firing instead.
    errors.push({
      pointer: '/job/startBy',
      detail: "is not part of a schedule's job: give startWithinSeconds, counted from each firing",
    });
  }
  let template: CreateJobRequest | undefined;
  try {
    template = parseCreateJob(templateFields, policy);
  } catch (error) {
    if (!(error instanceof ValidationError)) throw error;
    errors.push(
      ...error.errors.map((field) => ({ pointer: `/job${field.pointer ?? ''}`, detail: field.detail })),
    );
  }
  if (template?.runAt !== undefined) {
    // Each firing runs its job at the firing's time; a fixed runAt would schedule every firing's job for one instant.
    errors.push({
      pointer: '/job/runAt',
      detail: "is not part of a schedule's job: each firing's job runs then",
    });
  }
  if (errors.length > 0 || template === undefined) {
    throw new ValidationError('The request body is invalid.', errors);
  }
  return {
    expression,
    timezone,
    job: template,
    ...(startWithinSeconds !== undefined ? { startWithinSeconds } : {}),
    enabled,
  };
}

export const updateScheduleBody = z.strictObject({ enabled: z.boolean({ error: 'must be true or false' }) });

export function parseUpdateSchedule(body: unknown): { readonly enabled: boolean } {
  const parsed = updateScheduleBody.safeParse(body);
  if (!parsed.success) throw toValidationError(parsed.error);
  return parsed.data;
}

const listQuery = z.strictObject(PAGE_QUERY_FIELDS);

export function parseListSchedules(query: Record<string, string | undefined>): z.infer<typeof listQuery> {
  const parsed = listQuery.safeParse(query);
  if (!parsed.success) throw toValidationError(parsed.error, [], 'query');
  return parsed.data;
}

/** The schedule as clients see it, with its next firing as of `now`. */
export function presentSchedule(schedule: Schedule, now: Date): ScheduleResource {
  return {
    id: schedule.id,
    expression: schedule.expression,
    timezone: schedule.timezone,
    job: schedule.job,
    ...(schedule.startWithinSeconds !== undefined ? { startWithinSeconds: schedule.startWithinSeconds } : {}),
    enabled: schedule.enabled,
    nextRunAt: schedule.enabled ? (nextRunOf(schedule, now)?.toISOString() ?? null) : null,
    createdAt: schedule.createdAt,
  };
}

function nextRunOf(schedule: Schedule, now: Date): Date | undefined {
  return nextRunAfter(
    parseScheduleExpression(schedule.expression),
    schedule.timezone,
    now,
    new Date(schedule.startAt),
  );
}

/** The minute after `at`: a new rate schedule's first firing, so it never fires before it is answered. */
function nextMinute(at: Date): Date {
  return new Date(Math.floor(at.getTime() / 60_000) * 60_000 + 60_000);
}

/**
 * Creates a schedule under the tenant's Idempotency-Key: one conditional
 * write of the item, then its trigger. The same key and request replay the
 * schedule (and put its trigger again if the first request did not get to
 * it); another request under the key is refused.
 */
export async function createSchedule(
  deps: ScheduleDeps,
  command: {
    readonly tenantId: string;
    readonly idempotencyKey: string;
    readonly request: CreateScheduleRequest;
  },
): Promise<{ readonly schedule: Schedule; readonly replayed: boolean }> {
  const { tenantId, idempotencyKey, request } = command;
  const now = deps.now();
  const at = now.toISOString();
  const schedule: Schedule = {
    id: deriveScheduleId(tenantId, idempotencyKey),
    tenantId,
    expression: request.expression,
    timezone: request.timezone,
    job: request.job,
    ...(request.startWithinSeconds !== undefined ? { startWithinSeconds: request.startWithinSeconds } : {}),
    enabled: request.enabled,
    idempotencyKey,
    fingerprint: fingerprint(request),
    startAt: nextMinute(now).toISOString(),
    createdAt: at,
    updatedAt: at,
    revision: 1,
  };
  const outcome = await deps.schedules.create(schedule);
  if (!outcome.created) {
    const existing = outcome.existing;
    if (existing.fingerprint !== schedule.fingerprint) {
      throw new IdempotencyKeyReusedError(
        'This Idempotency-Key was already used with a different request body; use a new key for a new schedule.',
      );
    }
    return { schedule: isSynced(existing) ? existing : await sync(deps, existing), replayed: true };
  }
  return { schedule: await sync(deps, schedule), replayed: false };
}

/** Changes landing between a put of the trigger and its record that one sync puts the trigger again for. */
const SYNC_ROUNDS = 10;

/**
 * Puts the schedule's trigger as the item says, then records which revision
 * it put. Scheduler keeps whichever put lands last, and two changes' puts may
 * land in either order: a sync whose revision was overtaken before its record
 * may have put its older state over the newer one's, so it reads the schedule
 * again and puts the newest, until a record holds. The trigger so ends as the
 * newest change says, and a schedule marked synced is. A schedule deleted
 * meanwhile loses the trigger this may have put after the delete removed it.
 */
async function sync(deps: ScheduleDeps, schedule: Schedule): Promise<Schedule> {
  let current = schedule;
  for (let round = 1; ; round++) {
    await deps.triggers.put(current, firstRunOf(current, deps.now()));
    if (await deps.schedules.markSynced(current)) return { ...current, syncedRevision: revisionOf(current) };
    const newer = await deps.schedules.get(current.tenantId, current.id);
    if (!newer) {
      await deps.triggers.remove(current.id);
      throw new ScheduleNotFoundError(current.id);
    }
    if (round === SYNC_ROUNDS) {
      throw new Error(`Schedule ${current.id} kept changing while its trigger was put; not synced.`);
    }
    current = newer;
  }
}

/**
 * Where a rate schedule's trigger starts: its next firing on the schedule's
 * own grid, so a trigger put again (re-enabled, replayed) keeps the phase the
 * schedule was created with. Cron schedules need none.
 */
function firstRunOf(schedule: Schedule, now: Date): Date | undefined {
  if (parseScheduleExpression(schedule.expression).kind !== 'rate') return undefined;
  return nextRunOf(schedule, now);
}

export async function getSchedule(
  schedules: Pick<ScheduleStore, 'get'>,
  tenantId: string,
  scheduleId: string,
): Promise<Schedule> {
  const schedule = await schedules.get(tenantId, scheduleId);
  if (!schedule) throw new ScheduleNotFoundError(scheduleId);
  return schedule;
}

export function listSchedules(
  schedules: Pick<ScheduleStore, 'list'>,
  tenantId: string,
  query: { readonly limit: number; readonly cursor?: string },
): Promise<SchedulePage> {
  return schedules.list(tenantId, query);
}

/**
 * Enables or disables a schedule: the item first (a firing reads it, so a
 * disabled schedule creates nothing from that moment), then its trigger.
 * Idempotent; a failed trigger update is repaired by the same request again.
 * Of two changes at once the later one to reach the item wins, trigger
 * included; each answers the schedule as it then is.
 */
export async function setScheduleEnabled(
  deps: ScheduleDeps,
  tenantId: string,
  scheduleId: string,
  enabled: boolean,
): Promise<Schedule> {
  const current = await getSchedule(deps.schedules, tenantId, scheduleId);
  if (current.enabled === enabled && isSynced(current)) return current;
  const updated = await deps.schedules.setEnabled(tenantId, scheduleId, enabled, deps.now());
  if (!updated) throw new ScheduleNotFoundError(scheduleId);
  return sync(deps, updated);
}

/**
 * Deletes a schedule: its trigger first, then the item, so a failure between
 * the two leaves a schedule the same DELETE removes, never a trigger nobody
 * can reach.
 */
export async function deleteSchedule(
  deps: ScheduleDeps,
  tenantId: string,
  scheduleId: string,
): Promise<void> {
  await getSchedule(deps.schedules, tenantId, scheduleId);
  await deps.triggers.remove(scheduleId);
  await deps.schedules.delete(tenantId, scheduleId);
}

/** What a trigger's invocation carries (its `Input`, with Scheduler's scheduled time filled in). */
export interface Firing {
  readonly tenantId: string;
  readonly scheduleId: string;
  /** `<aws.scheduler.scheduled-time>`: when the firing was due, not when it was delivered. */
  readonly scheduledTime: string;
}

const firingSchema = z.strictObject({
  tenantId: z.string().min(1).max(128),
  scheduleId: z.string().regex(SCHEDULE_ID_PATTERN),
  scheduledTime: z.iso.datetime({ offset: true }),
});

/** The firing an invocation carries, or a ValidationError: a malformed event is never retried into a job. */
export function parseFiring(event: unknown): Firing {
  const parsed = firingSchema.safeParse(event);
  if (!parsed.success) throw toValidationError(parsed.error);
  return parsed.data;
}

/** The firing's time as the job's key names it: RFC 3339 in UTC, to the second. */
export function fireTimeOf(scheduledTime: string): string {
  return new Date(scheduledTime).toISOString().replace(/\.\d{3}Z$/, 'Z');
}

/**
 * The job a firing submits: the schedule's, with a startBy counted from the
 * firing's due time (not its delivery), so a repeated firing is the same request.
 */
function firingRequestOf(schedule: Schedule, firing: Firing): CreateJobRequest {
  if (schedule.startWithinSeconds === undefined) return schedule.job;
  const dueAt = Date.parse(fireTimeOf(firing.scheduledTime));
  return { ...schedule.job, startBy: new Date(dueAt + schedule.startWithinSeconds * 1000).toISOString() };
}

/** The idempotency key of the job a firing creates. */
export const firingKeyOf = (scheduleId: string, scheduledTime: string): string =>
  `schedule:${scheduleId}:${fireTimeOf(scheduledTime)}`;

export type FiringOutcome =
  | { readonly kind: 'skipped'; readonly reason: 'missing' | 'disabled' }
  | { readonly kind: 'refused'; readonly reason: 'tenant-queue-full' | 'key-in-use' | 'key-reused' }
  | { readonly kind: 'submitted'; readonly result: SubmitResult };

/**
 * One firing: reads the schedule and, if it exists and is enabled, submits
 * its job through intake under the firing's key. A repeated firing replays
 * the same job. A firing is refused, not retried, when the tenant's backlog
 * is full (a later firing comes), while the first delivery of the same
 * firing is still being accepted (it will finish), or when the tenant took
 * the firing's key for a request of its own.
 */
export async function fireSchedule(
  deps: { readonly schedules: Pick<ScheduleStore, 'get'>; readonly intake: IntakeDeps },
  firing: Firing,
): Promise<FiringOutcome> {
  const schedule = await deps.schedules.get(firing.tenantId, firing.scheduleId);
  if (!schedule) return { kind: 'skipped', reason: 'missing' };
  if (!schedule.enabled) return { kind: 'skipped', reason: 'disabled' };
  try {
    const result = await submitJob(deps.intake, {
      tenantId: schedule.tenantId,
      idempotencyKey: firingKeyOf(schedule.id, firing.scheduledTime),
      request: firingRequestOf(schedule, firing),
      scheduleId: schedule.id,
    });
    return { kind: 'submitted', result };
  } catch (error) {
    if (error instanceof TenantQueueFullError) return { kind: 'refused', reason: 'tenant-queue-full' };
    if (error instanceof IdempotencyKeyInUseError) return { kind: 'refused', reason: 'key-in-use' };
    if (error instanceof IdempotencyKeyReusedError) return { kind: 'refused', reason: 'key-reused' };
    throw error;
  }
}
