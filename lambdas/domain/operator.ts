import * as z from 'zod';
import { PROVIDER_NAMES, type ProviderName } from '../../config/providers';
import { type FillDeps, handOnFreeSlots } from './dispatch';
import { JobAlreadyFinishedError, JobNotFoundError, JobNotInReviewError, ValidationError } from './errors';
import { type EventDeps, publishJobEvent } from './events';
import { isTerminal, type Job, providerMayBeRunning, providerOf } from './job';
import { type MediaStore, switchToVersion } from './media-library';
import type {
  ActiveStatus,
  InFlightLimits,
  JobPage,
  JobStore,
  OutputStore,
  SlotPoolState,
  SlotPools,
  Timeline,
  VectorIndex,
} from './ports';
import { isPaused } from './provider-pauses';
import { releaseOwnSlot } from './slots';

/** Operators settle what needs a person: jobs in review. */

export const resolution = z.strictObject({
  outcome: z
    .enum(['succeeded', 'failed', 'requeue'], { error: 'must be succeeded, failed or requeue' })
    .describe(
      '`succeeded` or `failed` as the operator found the job at the provider; `requeue` submits it again under a new provider key.',
    ),
  note: z.string().trim().min(1, 'must say why').max(1000).describe('Why; recorded in the timeline.'),
});
export type Resolution = z.infer<typeof resolution>;

/** The error code of a job an operator resolved as failed: its provider outcome is known, by the operator's word. */
export const RESOLVED_FAILED_CODE = 'resolved_failed';

export function parseResolution(body: unknown): Resolution {
  const parsed = resolution.safeParse(body);
  if (!parsed.success) {
    throw new ValidationError(
      'The resolution is invalid.',
      parsed.error.issues.map((issue) => ({
        pointer: `/${issue.path.join('/')}`,
        detail:
          issue.code === 'unrecognized_keys' ? `unknown field(s): ${issue.keys.join(', ')}` : issue.message,
      })),
    );
  }
  return parsed.data;
}

/** What resolving takes: the job, and the lines a freed slot is handed on to (`handOnFreeSlots`). */
export interface OperatorDeps extends EventDeps, Omit<FillDeps, 'events'> {
  readonly store: JobStore;
  readonly timeline: Timeline;
  /** Media items: a version resolved as succeeded is switched in as its finalize would have (absent: none is). */
  readonly media?: MediaStore;
  readonly outputs?: Pick<OutputStore, 'getOutput' | 'putOutput'>;
  readonly vectors?: Pick<VectorIndex, 'get' | 'put'>;
  readonly mediaGraceSeconds?: number;
}

/**
 * A version of a media item resolved as succeeded: its workflow ended in
 * review, so its switch is made here, as its finalize would have made it
 * (fenced, and retired if it has no result to serve). Safe to repeat.
 */
async function switchResolvedVersion(deps: OperatorDeps, job: Job): Promise<void> {
  if (job.status !== 'succeeded' || !job.media || !deps.media || !deps.outputs || !deps.vectors) return;
  await switchToVersion(
    {
      ...deps,
      media: deps.media,
      outputs: deps.outputs,
      vectors: deps.vectors,
      graceSeconds: deps.mediaGraceSeconds ?? 0,
    },
    job,
  );
}

/**
 * Settles a job in review: `succeeded` or `failed` as the operator found it
 * at the provider, or `requeue` to submit it again under a new provider key.
 * Its slot is released, unless the provider may still be running it (a
 * requeued job takes one again).
 */
export async function resolveJob(
  deps: OperatorDeps,
  jobId: string,
  { outcome, note }: Resolution,
): Promise<Job> {
  const job = await deps.store.get(jobId);
  if (!job) throw new JobNotFoundError(jobId);
  if (isTerminal(job.status)) {
    // A retried resolution whose first try stopped before its switch or event: both again, then the 409.
    await switchResolvedVersion(deps, job);
    await publishJobEvent(deps, job);
    throw new JobAlreadyFinishedError(job.id, job.status);
  }
  if (job.status !== 'needs_review') throw new JobNotInReviewError(job.id, job.status);
  const now = deps.now();
  let resolved: Job | undefined;
  if (outcome === 'requeue') {
    resolved = await deps.store.requeueForResubmission(job, now);
  } else {
    resolved = await deps.store.transition(
      job,
      ['needs_review'],
      outcome === 'succeeded'
        ? { status: 'succeeded', progress: 100, error: null, finishedAt: now.toISOString() }
        : {
            status: 'failed',
            error: { code: RESOLVED_FAILED_CODE, message: note },
            finishedAt: now.toISOString(),
          },
      now,
    );
  }
  if (!resolved) throw new JobNotInReviewError(job.id, 'changed');
  // The submission in review gives its slot back once the provider cannot be running it; a requeued job
  // takes one for its new submission. Whatever the operator found, a provider job with no end heard of,
  // or a submission whose outcome is unknown (one that arrives late at the provider runs there all the
  // same), may still run: its slot stays held until the reconciler hears of its end, stops it, or sees
  // the job timeout pass since it was sent, so the limit holds meanwhile.
  const released =
    outcome !== 'requeue' && providerMayBeRunning(job) ? false : await releaseOwnSlot(deps.slots, job);
  await deps.timeline.record(job.id, {
    at: now.toISOString(),
    type: 'operator.resolved',
    detail: `${outcome}: ${note}`,
  });
  if (outcome === 'requeue') {
    await deps.queue.enqueue(job);
    await deps.store.touchEnqueued(job.id, deps.now());
  } else {
    // The job's workflow ended when it went to review: the resolution is its last change, put here.
    await switchResolvedVersion(deps, resolved);
    await publishJobEvent(deps, resolved);
  }
  // The slot goes to the job whose turn it is (the requeued one takes its turn in its line).
  if (released) await handOnFreeSlots(deps, providerOf(job), 'a slot an operator freed');
  return resolved;
}

/**
 * Active jobs of one status across every provider, a page at a time: each
 * provider's listing in turn, the cursor saying which and where.
 */
export async function listActiveJobs(
  store: Pick<JobStore, 'listActive'>,
  status: ActiveStatus,
  page: { readonly limit: number; readonly cursor?: string },
): Promise<JobPage> {
  const position: { provider: string; cursor?: string } =
    page.cursor === undefined ? { provider: PROVIDER_NAMES[0] as string } : decodeActiveCursor(page.cursor);
  const items: Job[] = [];
  let index = PROVIDER_NAMES.indexOf(position.provider as ProviderName);
  let cursor = position.cursor;
  while (index < PROVIDER_NAMES.length && items.length < page.limit) {
    const provider = PROVIDER_NAMES[index] as ProviderName;
    const listed = await store.listActive(provider, status, {
      limit: page.limit - items.length,
      ...(cursor ? { cursor } : {}),
    });
    items.push(...listed.items);
    if (listed.nextCursor) {
      cursor = listed.nextCursor;
      if (items.length >= page.limit) return { items, nextCursor: encodeActiveCursor(provider, cursor) };
    } else {
      cursor = undefined;
      index++;
    }
  }
  const next = PROVIDER_NAMES[index];
  return { items, nextCursor: next ? encodeActiveCursor(next, cursor) : null };
}

const activeCursor = z.strictObject({
  provider: z.enum(PROVIDER_NAMES as [ProviderName, ...ProviderName[]]),
  cursor: z.string().min(1).max(2048).optional(),
});

const encodeActiveCursor = (provider: ProviderName, cursor: string | undefined): string =>
  Buffer.from(JSON.stringify({ provider, ...(cursor ? { cursor } : {}) }), 'utf8').toString('base64url');

function decodeActiveCursor(value: string): z.infer<typeof activeCursor> {
  try {
    return activeCursor.parse(JSON.parse(Buffer.from(value, 'base64url').toString('utf8')));
  } catch {
    throw new ValidationError('The request query is invalid.', [
      { parameter: 'cursor', detail: 'must be a nextCursor returned by this listing' },
    ]);
  }
}

/**
 * Whether a provider takes submissions: `open`; `paused` until `pausedUntil`
 * (it throttled or went down, or an operator paused it); `probing`: a pause
 * ended and one job tries the provider before grants go on.
 */
export const PROVIDER_STATES = ['open', 'paused', 'probing'] as const;
export type ProviderState = (typeof PROVIDER_STATES)[number];

/** One provider as operators see it: whether it takes submissions, its limit, what it runs now and what waits for it. */
export const providerStatus = z
  .object({
    name: z.enum(PROVIDER_NAMES),
    state: z
      .enum(PROVIDER_STATES)
      .describe(
        '`open`: it takes submissions; `paused`: no job is granted a slot until `pausedUntil` (its jobs wait in their lines, none fails); `probing`: one job tries it before grants go on.',
      ),
    pausedUntil: z.iso
      .datetime({ offset: true })
      .optional()
      .describe('While `paused`: when grants go on by themselves.'),
    reason: z
      .string()
      .optional()
      .describe(
        'While `paused`: why, as the provider answered (a 429, a 503) or as the operator who paused it wrote.',
      ),
    maxInFlight: z.int().min(1).describe('Its in-flight limit (MAX_IN_FLIGHT_<PROVIDER>).'),
    inFlight: z.int().min(0).describe('Slots held now.'),
    queued: z.int().min(0).describe('Jobs waiting for one of its slots.'),
  })
  .meta({ description: 'A provider as operators see it.' });
export type ProviderStatus = Readonly<z.infer<typeof providerStatus>>;

/** What a provider's status is read from: its pool (one read of its item) and the count of its queued jobs. */
export interface ProviderStatusDeps {
  readonly store: Pick<JobStore, 'countActive'>;
  readonly slots: SlotPools;
  readonly maxInFlight: InFlightLimits;
  readonly now: () => Date;
}

/** Whether a pool takes grants at `now`, and while it does not, until when and why. */
export function providerStateOf(
  state: Pick<SlotPoolState, 'pausedUntil' | 'pauseReason'>,
  now: Date,
): Pick<ProviderStatus, 'state' | 'pausedUntil' | 'reason'> {
  if (state.pausedUntil === undefined || !isPaused(state, now)) return { state: 'open' };
  return {
    state: 'paused',
    pausedUntil: new Date(state.pausedUntil).toISOString(),
    ...(state.pauseReason !== undefined ? { reason: state.pauseReason } : {}),
  };
}

/** One provider's state, limit, slots held and queued jobs. */
export async function providerStatusOf(
  deps: ProviderStatusDeps,
  name: ProviderName,
): Promise<ProviderStatus> {
  const [state, queued] = await Promise.all([
    deps.slots(name).state(),
    deps.store.countActive(name, 'queued'),
  ]);
  return {
    name,
    ...providerStateOf(state, deps.now()),
    maxInFlight: deps.maxInFlight[name],
    inFlight: state.holders.length,
    queued,
  };
}

/** Every provider's state, limit, slots held and queued jobs (`GET /v1/admin/providers`). */
export async function providerStatuses(deps: ProviderStatusDeps): Promise<ProviderStatus[]> {
  return Promise.all(PROVIDER_NAMES.map((name) => providerStatusOf(deps, name)));
}
