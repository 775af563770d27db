import { createHash } from 'node:crypto';
import * as z from 'zod';
import { PROVIDER_NAMES } from '../../config/providers';
import { childrenOf } from './children';
import { mapWithConcurrency } from './concurrency';
import {
  IdempotencyKeyInUseError,
  IdempotencyKeyReusedError,
  JobAlreadyFinishedError,
  JobNotFoundError,
  JobNotResumableError,
  TenantQueueFullError,
  ValidationError,
} from './errors';
import { deriveJobId, fingerprint } from './idempotency';
import { type CancelDeps, cancelJob, type IntakeDeps, submitJob } from './intake';
import {
  isTerminal,
  JOB_STATUSES,
  JOB_TYPES,
  type Job,
  type JobStatus,
  type JobType,
  priorityOf,
  providerMayBeRunning,
  providerOf,
  takesSlot,
} from './job';
import { CANCELABLE_STATUSES } from './job-statuses';
import { RESOLVED_FAILED_CODE } from './operator';
import type { JobStore, TenantBacklogs, TenantJobQuery, Timeline } from './ports';
import { PAGE_QUERY_FIELDS, RFC3339_INSTANT, toValidationError } from './requests';
import type { cancelJobsResult, Resource, replayJobsResult, resumeJobsResult } from './resources';
import { type ResumeDeps, resumeJob, resumeRefusalOf } from './resume';
import { TENANT_ID_PATTERN, TENANT_ID_RULE } from './tenants';

/**
 * Acting on many jobs at once: a tenant cancels its own jobs by filter, an
 * operator replays finished jobs as new ones. Both walk the per-tenant
 * listings (one status at a time, within the filter's creation window) and
 * act on at most a setting's worth of jobs per request; the answer's
 * `nextCursor` says where the next request goes on. Each job is acted on by
 * the single-job use case (`cancelJob`, `submitJob`), so a bulk request is
 * only ever what that many single requests would be.
 */

const statusList = z
  .array(z.enum(JOB_STATUSES, { error: `must be one of ${JOB_STATUSES.join(', ')}` }), {
    error: 'must be an array of statuses',
  })
  .min(1, 'must name at least one status');
const windowFields = {
  type: z.enum(JOB_TYPES, { error: `must be one of ${JOB_TYPES.join(', ')}` }).optional(),
  createdAfter: RFC3339_INSTANT.optional(),
  createdBefore: RFC3339_INSTANT.optional(),
};
const afterBeforeBefore = (
  filter: { readonly createdAfter?: string | undefined; readonly createdBefore?: string | undefined },
  context: z.core.$RefinementCtx,
) => {
  if (filter.createdAfter === undefined || filter.createdBefore === undefined) return;
  if (Date.parse(filter.createdAfter) >= Date.parse(filter.createdBefore)) {
    context.addIssue({ code: 'custom', path: ['createdBefore'], message: 'must be later than createdAfter' });
  }
};
const { cursor } = PAGE_QUERY_FIELDS;

/** `POST /v1/jobs/cancel`'s body. */
export const cancelJobsRequest = z.strictObject({
  filter: z.strictObject({ status: statusList.optional(), ...windowFields }).superRefine(afterBeforeBefore),
  dryRun: z.boolean({ error: 'must be true or false' }).optional(),
  cursor,
});
export type CancelJobsRequest = z.infer<typeof cancelJobsRequest>;

/** `POST /v1/admin/jobs/replay`'s body. */
export const replayJobsRequest = z.strictObject({
  filter: z
    .strictObject({
      tenant: z.string().regex(TENANT_ID_PATTERN, `must be a tenant name: ${TENANT_ID_RULE}`).optional(),
      status: statusList,
      ...windowFields,
    })
    .superRefine(afterBeforeBefore),
  dryRun: z.boolean({ error: 'must be true or false' }).optional(),
  note: z.string({ error: 'must say why' }).trim().min(1, 'must say why').max(1000),
  cursor,
});
export type ReplayJobsRequest = z.infer<typeof replayJobsRequest>;

/** `POST /v1/admin/jobs/resume`'s body: failed jobs, by what failed them. */
export const resumeJobsRequest = z.strictObject({
  filter: z
    .strictObject({
      tenant: z.string().regex(TENANT_ID_PATTERN, `must be a tenant name: ${TENANT_ID_RULE}`).optional(),
      errorCode: z.string({ error: 'must be a string' }).min(1).max(200).optional(),
      provider: z.enum(PROVIDER_NAMES, { error: `must be one of ${PROVIDER_NAMES.join(', ')}` }).optional(),
      ...windowFields,
    })
    .superRefine(afterBeforeBefore),
  dryRun: z.boolean({ error: 'must be true or false' }).optional(),
  note: z.string({ error: 'must say why' }).trim().min(1, 'must say why').max(1000),
  cursor,
});
export type ResumeJobsRequest = z.infer<typeof resumeJobsRequest>;

export function parseResumeJobs(body: unknown): ResumeJobsRequest {
  const parsed = resumeJobsRequest.safeParse(body);
  if (!parsed.success) throw toValidationError(parsed.error);
  return parsed.data;
}

export function parseCancelJobs(body: unknown): CancelJobsRequest {
  const parsed = cancelJobsRequest.safeParse(body);
  if (!parsed.success) throw toValidationError(parsed.error);
  return parsed.data;
}

export function parseReplayJobs(body: unknown): ReplayJobsRequest {
  const parsed = replayJobsRequest.safeParse(body);
  if (!parsed.success) throw toValidationError(parsed.error);
  return parsed.data;
}

/** Cancels or replays of one request in flight at once. */
const ACTIONS_AT_ONCE = 10;

/**
 * The most listings (one query each) one request reads. Listings with no
 * matching job take none of the job bound, so without this a replay across
 * thousands of tenants could spend its whole time on empty queries.
 */
export const LISTINGS_PER_REQUEST = 100;

/** One listing a walk goes through: a tenant's jobs in one status. */
interface Listing {
  readonly tenant: string;
  readonly status: JobStatus;
}

/** Where a walk stopped: the listing, the store's cursor in it, and the filter it was made for. */
const walkCursor = z.strictObject({
  t: z.string().min(1),
  s: z.enum(JOB_STATUSES),
  c: cursor,
  f: z.string().min(1),
});
type WalkPosition = z.infer<typeof walkCursor>;

const encodeWalk = (position: WalkPosition): string =>
  Buffer.from(JSON.stringify(position), 'utf8').toString('base64url');

function decodeWalk(value: string, filterTag: string): WalkPosition {
  let position: WalkPosition | undefined;
  try {
    position = walkCursor.parse(JSON.parse(Buffer.from(value, 'base64url').toString('utf8')));
  } catch {
    position = undefined;
  }
  if (!position || position.f !== filterTag) throw badCursor();
  return position;
}

const badCursor = () =>
  new ValidationError('The request body is invalid.', [
    { pointer: '/cursor', detail: 'must be a nextCursor returned for this same filter' },
  ]);

/** A filter's short fingerprint: a cursor is good only with the filter it was made for. */
const filterTagOf = (filter: unknown): string => fingerprint(filter).slice(0, 16);

/**
 * Reads the listings in order, from the cursor's position, until `budget`
 * jobs or LISTINGS_PER_REQUEST listings were read, or every listing is done.
 * Each read asks for no more than the budget left, so a request reads about
 * what it acts on. Answers the jobs read and the cursor of the rest (null: none).
 */
async function walk(
  store: Pick<JobStore, 'listByTenant'>,
  listings: readonly Listing[],
  query: Pick<TenantJobQuery, 'type' | 'createdAfter' | 'createdBefore'>,
  filterTag: string,
  from: string | undefined,
  budget: number,
): Promise<{ readonly jobs: readonly Job[]; readonly nextCursor: string | null }> {
  let index = 0;
  let storeCursor: string | undefined;
  if (from !== undefined) {
    const position = decodeWalk(from, filterTag);
    index = listings.findIndex((listing) => listing.tenant === position.t && listing.status === position.s);
    if (index < 0) throw badCursor();
    storeCursor = position.c;
  }
  const jobs: Job[] = [];
  let reads = 0;
  while (index < listings.length) {
    const listing = listings[index] as Listing;
    if (jobs.length >= budget || reads >= LISTINGS_PER_REQUEST) {
      return {
        jobs,
        nextCursor: encodeWalk({
          t: listing.tenant,
          s: listing.status,
          f: filterTag,
          ...(storeCursor ? { c: storeCursor } : {}),
        }),
      };
    }
    const page = await store.listByTenant(listing.tenant, {
      ...query,
      status: listing.status,
      limit: budget - jobs.length,
      ...(storeCursor ? { cursor: storeCursor } : {}),
    });
    reads++;
    jobs.push(...page.items);
    if (page.nextCursor) {
      storeCursor = page.nextCursor;
    } else {
      storeCursor = undefined;
      index++;
    }
  }
  return { jobs, nextCursor: null };
}

/** The store query of a filter's type and creation window, the instants in UTC as `createdAt` is stored. */
function windowOf(filter: {
  readonly type?: JobType | undefined;
  readonly createdAfter?: string | undefined;
  readonly createdBefore?: string | undefined;
}): Pick<TenantJobQuery, 'type' | 'createdAfter' | 'createdBefore'> {
  const utc = (at: string) => new Date(Date.parse(at)).toISOString();
  return {
    ...(filter.type !== undefined ? { type: filter.type } : {}),
    ...(filter.createdAfter !== undefined ? { createdAfter: utc(filter.createdAfter) } : {}),
    ...(filter.createdBefore !== undefined ? { createdBefore: utc(filter.createdBefore) } : {}),
  };
}

/** A bulk cancel's answer (`POST /v1/jobs/cancel`), with the jobs it canceled for the caller's metrics. */
export type BulkCancelResult = Resource<typeof cancelJobsResult> & { readonly canceledJobs: readonly Job[] };

/**
 * Cancels the tenant's unfinished jobs that match the filter, at most
 * `maxPerRequest` of them, each exactly as `POST /v1/jobs/{id}/cancel` would
 * (`cancelJob`: a conditional transition; a running job's waiting step is
 * told, and the workflow cancels at the provider and frees the slot). Only
 * the unfinished statuses' listings are read, so finished jobs cost nothing
 * and a filter naming only finished statuses matches nothing. A job that
 * finished between the listing and its cancel is skipped. A dry run only
 * counts. Run again, it finds the canceled jobs gone from their listings.
 */
export async function cancelJobs(
  deps: CancelDeps,
  tenantId: string,
  request: CancelJobsRequest,
  maxPerRequest: number,
): Promise<BulkCancelResult> {
  const { filter } = request;
  const statuses = CANCELABLE_STATUSES.filter((status) => !filter.status || filter.status.includes(status));
  const { jobs, nextCursor } = await walk(
    deps.store,
    statuses.map((status) => ({ tenant: tenantId, status })),
    windowOf(filter),
    filterTagOf(filter),
    request.cursor,
    maxPerRequest,
  );
  if (request.dryRun) {
    return { matched: jobs.length, canceled: 0, cancelRequested: 0, nextCursor, canceledJobs: [] };
  }
  const outcomes = await mapWithConcurrency(jobs, ACTIONS_AT_ONCE, async (job) => {
    try {
      return await cancelJob(deps, tenantId, job.id);
    } catch (error) {
      // Finished or expired since it was listed: nothing left to cancel.
      if (error instanceof JobAlreadyFinishedError || error instanceof JobNotFoundError) return undefined;
      throw error;
    }
  });
  const canceledJobs = outcomes.filter((job): job is Job => job?.status === 'canceled');
  return {
    matched: jobs.length,
    canceled: canceledJobs.length,
    cancelRequested: outcomes.filter((job) => job && job.status !== 'canceled' && job.cancelRequestedAt)
      .length,
    nextCursor,
    canceledJobs,
  };
}

/** Why a matching job was not replayed (`REPLAY_REFUSALS`, in lambdas/domain/resources.ts). */
export type ReplayRefusal = ReplayResult['refused'][number]['reason'];

/** A replay's answer (`POST /v1/admin/jobs/replay`). */
export type ReplayResult = Resource<typeof replayJobsResult>;

export interface ReplayDeps extends IntakeDeps {
  readonly timeline: Pick<Timeline, 'record' | 'list'>;
}

/**
 * The idempotency key of a job's replay under an operator's note: the same
 * request retried (after a timeout, or a crash midway) lands on the same new
 * jobs and replays nothing twice; a deliberate second replay says so with
 * another note. The key lives with the new job, so for the job retention.
 */
export const replayKeyOf = (original: Pick<Job, 'id'>, note: string): string =>
  `replay:${original.id}:${createHash('sha256').update(note.trim(), 'utf8').digest('base64url').slice(0, 22)}`;

/**
 * Why a job may not be replayed, or undefined when it may. A job that makes
 * jobs of its own (audio.publish) is refused while one of them is in review
 * or was sent with no known outcome: that child may have been charged, and
 * the replay would send its work again under a new key. Requests: none for
 * a job with no children; for one with children, a timeline query and one
 * batched read of them.
 */
async function refusalOf(
  deps: Pick<ReplayDeps, 'timeline' | 'store'>,
  job: Job,
): Promise<ReplayRefusal | undefined> {
  if (job.status === 'needs_review') return 'needs-review';
  if (!isTerminal(job.status)) return 'not-finished';
  // A success, or an operator's resolution, is a known outcome even where the submission's bookkeeping
  // was never settled (a job resolved out of review keeps its intent).
  const known = job.status === 'succeeded' || job.error?.code === RESOLVED_FAILED_CODE;
  if (providerMayBeRunning(job) && !known) return 'provider-outcome-unknown';
  if (!known && !takesSlot(job)) {
    const children = await childrenOf(deps, job);
    if (children.some((child) => child.status === 'needs_review' || unknownSubmission(child)))
      return 'child-outcome-unknown';
  }
  return undefined;
}

/** A submission sent with no known outcome: its provider may be running, and charging, it. */
const unknownSubmission = (job: Job): boolean =>
  job.submitIntent !== undefined && job.providerJobId === undefined;

/**
 * Replays the jobs that match the filter, at most `maxPerRequest` of them:
 * each finished job becomes a new job with the same tenant, type, input,
 * webhook and priority, `replayOf` naming the original, which is never
 * touched. Each replay goes through intake as a submission would (the
 * tenant's `maxQueued`, its line, its provider's slots through dispatch),
 * under a key derived from the original and the note (`replayKeyOf`). Jobs
 * whose provider submission may have been charged with no known outcome, and
 * jobs not finished, are refused with the reason. Without a tenant, every
 * tenant that ever had a job admitted is walked, one per-tenant listing each.
 */
export async function replayJobs(
  deps: ReplayDeps,
  request: ReplayJobsRequest,
  maxPerRequest: number,
): Promise<ReplayResult> {
  const { filter, note } = request;
  const tenants = filter.tenant !== undefined ? [filter.tenant] : await deps.backlogs.tenants();
  const statuses = JOB_STATUSES.filter((status) => filter.status.includes(status));
  const { jobs, nextCursor } = await walk(
    deps.store,
    tenants.flatMap((tenant) => statuses.map((status) => ({ tenant, status }))),
    windowOf(filter),
    filterTagOf(filter),
    request.cursor,
    maxPerRequest,
  );
  const refused: { id: string; reason: ReplayRefusal }[] = [];
  const replays: { id: string; replayOf: string; tenantId: string }[] = [];
  let replayed = 0;
  let alreadyReplayed = 0;
  const reasons = await mapWithConcurrency(jobs, ACTIONS_AT_ONCE, (job) => refusalOf(deps, job));
  const replayable = jobs.filter((job, index) => {
    const reason = reasons[index];
    if (reason) refused.push({ id: job.id, reason });
    return reason === undefined;
  });
  if (!request.dryRun) {
    await mapWithConcurrency(replayable, ACTIONS_AT_ONCE, async (original) => {
      // A replay named and never made (its request stopped between the two, or is between them now) is
      // made now, under the key it was named with, whatever this request's note: the mark and the job
      // agree, and of the two requests making it one creates it and the other finds it.
      const unmade = await unmadeReplayOf(deps, original);
      const idempotencyKey = unmade ?? replayKeyOf(original, note);
      const replacement = deriveJobId(original.tenantId, idempotencyKey);
      // The original names its replay first, in one conditional write on the status it was listed in:
      // a resume of it is refused from then on, and one that came first (running again) refuses this.
      const marked =
        original.replacedBy === replacement
          ? original
          : await deps.store.markReplaced(original, replacement, original.replacedBy, idempotencyKey);
      if (!marked) {
        const now = await deps.store.get(original.id);
        refused.push({ id: original.id, reason: (now && (await refusalOf(deps, now))) ?? 'not-finished' });
        return;
      }
      try {
        const { job, replayed: found } = await submitJob(deps, {
          tenantId: original.tenantId,
          idempotencyKey,
          request: {
            // Listings never hold a workflow's own jobs (`internal` types), so this is a type clients submit.
            type: original.type as JobType,
            input: original.input,
            ...(original.webhookUrl !== undefined ? { webhookUrl: original.webhookUrl } : {}),
            priority: priorityOf(original),
          },
          replayOf: original.id,
        });
        replays.push({ id: job.id, replayOf: original.id, tenantId: job.tenantId });
        if (found) {
          alreadyReplayed++;
          return;
        }
        replayed++;
        await deps.timeline
          .record(job.id, {
            at: deps.now().toISOString(),
            type: 'operator.replayed',
            detail: `${original.id}: ${note}`,
          })
          .catch(() => {});
      } catch (error) {
        const reason = submitRefusalOf(error);
        if (!reason) throw error;
        // No replay was made: the original takes back what it named before (the same replay, being
        // accepted by another request right now, keeps its name).
        if (reason !== 'replay-in-progress' && unmade === undefined) {
          await deps.store.markReplaced(marked, original.replacedBy, replacement, original.replacedByKey);
        }
        refused.push({ id: original.id, reason });
      }
    });
  }
  const order = new Map(jobs.map((job, index) => [job.id, index]));
  const inOrder = <T extends { readonly id: string }>(items: T[], key: (item: T) => string) =>
    items.sort((a, b) => (order.get(key(a)) ?? 0) - (order.get(key(b)) ?? 0));
  return {
    matched: jobs.length,
    replayed,
    alreadyReplayed,
    refused: inOrder(refused, (item) => item.id),
    jobs: inOrder(replays, (item) => item.replayOf),
    nextCursor,
  };
}

/**
 * The key of the replay the job names but that does not exist: undefined
 * when it names none, or one that exists. One read, only for a job that
 * names a replay.
 */
async function unmadeReplayOf(deps: Pick<ReplayDeps, 'store'>, job: Job): Promise<string | undefined> {
  if (job.replacedBy === undefined || job.replacedByKey === undefined) return undefined;
  return (await deps.store.get(job.replacedBy)) ? undefined : job.replacedByKey;
}

function submitRefusalOf(error: unknown): ReplayRefusal | undefined {
  if (error instanceof TenantQueueFullError) return 'tenant-queue-full';
  if (error instanceof IdempotencyKeyInUseError) return 'replay-in-progress';
  if (error instanceof IdempotencyKeyReusedError) return 'key-taken';
  return undefined;
}

/** A bulk resume's answer (`POST /v1/admin/jobs/resume`). */
export type ResumeResult = Resource<typeof resumeJobsResult>;

export interface BulkResumeDeps extends ResumeDeps {
  /** Every tenant that ever had a job admitted: walked when the filter names none. */
  readonly backlogs: Pick<TenantBacklogs, 'tenants'>;
}

/**
 * Resumes the failed jobs that match the filter (what failed them, where,
 * when), at most `maxPerRequest` of them, each exactly as its client's
 * `POST /v1/jobs/{id}/resume` would (`resumeJob`): one conditional write from
 * `failed`, its execution redriven from the state that failed, and a job
 * that needs its provider slot back waiting for it in its tenant's line, so
 * a bulk resume after an outage lengthens the queue and never overshoots a
 * limit. A job that may not be resumed (replayed, in doubt at its provider,
 * failed by its provider or an operator, past its startBy) is refused with
 * why. Only the failed listings are read; the error code and provider are
 * matched on the jobs read. Without a tenant, every tenant that ever had a
 * job admitted is walked. A dry run only counts. Run again, it finds the
 * resumed jobs gone from the failed listings.
 */
export async function resumeJobs(
  deps: BulkResumeDeps,
  request: ResumeJobsRequest,
  maxPerRequest: number,
): Promise<ResumeResult> {
  const { filter, note } = request;
  const tenants = filter.tenant !== undefined ? [filter.tenant] : await deps.backlogs.tenants();
  const { jobs, nextCursor } = await walk(
    deps.store,
    tenants.map((tenant) => ({ tenant, status: 'failed' as const })),
    windowOf(filter),
    filterTagOf(filter),
    request.cursor,
    maxPerRequest,
  );
  const matching = jobs.filter(
    (job) =>
      job.parent === undefined &&
      (filter.errorCode === undefined || job.error?.code === filter.errorCode) &&
      (filter.provider === undefined || providerOf(job) === filter.provider),
  );
  const refused: { id: string; reason: string }[] = [];
  let resumed = 0;
  await mapWithConcurrency(matching, ACTIONS_AT_ONCE, async (job) => {
    const refusal = resumeRefusalOf(job);
    if (refusal) {
      refused.push({ id: job.id, reason: refusal });
      return;
    }
    if (request.dryRun) return;
    try {
      await resumeJob(deps, job.tenantId, job.id);
    } catch (error) {
      if (!(error instanceof JobNotResumableError)) throw error;
      refused.push({ id: job.id, reason: error.message });
      return;
    }
    resumed++;
    await deps.timeline.record(job.id, {
      at: deps.now().toISOString(),
      type: 'operator.resumed',
      detail: note,
    });
  });
  return { matched: matching.length, resumed, refused, nextCursor };
}
