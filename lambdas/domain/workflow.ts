import { randomUUID } from 'node:crypto';
import * as z from 'zod';
import { type JobOutput, jobTypeModule, OutputInvalidError } from '../../config/job-types';
import type { ProviderBinding } from '../../config/job-types/job-type';
import { mediaTypeMatches } from '../../config/job-types/job-type';
import { WORKFLOW_STEPS, type WorkflowStep } from '../../config/layout';
import { PROVIDERS, type ProviderName } from '../../config/providers';
import { StatesError, StepError } from '../../config/workflow-errors';
import { childSettled, tellCancelingParent } from './children';
import { awaitChunk, resumeParent } from './chunk-jobs';
import { collectComputeOutcome } from './compute';
import { type FillDeps, fillFreeSlots, handOnFreeSlots, startJob } from './dispatch';
import {
  awaitEmbedding,
  discardVectors,
  type EmbeddingSettings,
  isSearchable,
  planEmbedding,
  storeVectors,
  vectorsManifestKey,
} from './embedding';
import {
  AmbiguousSubmissionError,
  causeMessage,
  InvalidJobInputError,
  JobFailedError,
  NeedsReviewError,
  ProviderPausedError,
  ProviderRejectedError,
  ProviderUnavailableError,
  SlotUnavailableError,
} from './errors';
import { type EventDeps, publishJobEvent } from './events';
import { waitingEntryOf } from './fair-share';
import { startFollowUps } from './follow-ups';
import { cancelChildren, cancelJob, type IntakeDeps } from './intake';
import {
  currentExecutionOf,
  executionNameOf,
  goesOn,
  isCanceling,
  isTerminal,
  type Job,
  type JobError,
  providerMayBeRunning,
  providerOf,
  providerWebhookUrlOf,
  queueWaitMsOf,
  slotHolderOf,
  submissionKeyOf,
  submissionTagOf,
  takesSlot,
} from './job';
import {
  type MediaStore,
  mayBecomeCurrent,
  mediaVectorMetadata,
  recordVectorRevision,
  switchToVersion,
  takeTheLead,
} from './media-library';
import { answeredPartKeyOf } from './output-keys';
import type {
  EnqueueOptions,
  InFlightLimits,
  InputStore,
  JobQueue,
  JobStore,
  OutputStore,
  SlotPools,
  TenantBacklogs,
  TenantShares,
  Timeline,
  VectorIndex,
  WaitingLines,
  Workflow,
} from './ports';
import type { AnsweredPart, Provider } from './provider';
import { applyProviderEvent, resumeAwait } from './provider-events';
import {
  askProvider,
  lookAfterPauseSeconds,
  PAUSE_DEFAULTS,
  type PauseDeps,
  type PauseObservation,
  type PauseSettings,
  pauseDetail,
  pauseProvider,
  throttledObservation,
} from './provider-pauses';
import {
  discardOutputs,
  type IndexResult,
  jobOutputPrefix,
  type ProbeResult,
  rootOutputPrefix,
  type TranscodeResult,
} from './publish';
import { giveBackOwnSlot, holdsOwnSlot, releaseOwnSlot, resumeNeedsSlot } from './slots';
import type { CaughtError, StepEvent } from './step-event';

/**
 * The steps of the media workflow. Each is safe to run twice (Step Functions
 * retries, at-least-once Lambda invocations, a restarted execution): every
 * change is a conditional write, and a step that finds its work done returns.
 */

export const STEP_NAMES = WORKFLOW_STEPS;
export type StepName = WorkflowStep;

export type { CaughtError, StepEvent };

export interface WorkflowDeps extends EventDeps {
  readonly store: JobStore;
  readonly slots: SlotPools;
  /** The dispatcher's queue: a released slot is handed, by fair share, to the job whose turn it is. */
  readonly queue: JobQueue;
  /** Each tenant's line of waiting jobs at each provider. */
  readonly waiting: WaitingLines;
  readonly tenantShares: TenantShares;
  readonly maxInFlight: InFlightLimits;
  /** Tenants' backlogs: a chunk job is counted in its tenant's (past the cap: its parent was admitted). */
  readonly backlogs: Pick<TenantBacklogs, 'admitPastCap'>;
  /** How a new chunk job's message goes, as intake's for a new job (`firstLookOf`). */
  readonly firstLook: (job: Job) => Promise<EnqueueOptions>;
  /** Each provider's adapter, built from its secret. */
  readonly providers: (name: ProviderName) => Promise<Provider>;
  readonly timeline: Timeline;
  readonly inputs: InputStore;
  readonly outputs: OutputStore;
  readonly workflow: Workflow;
  readonly now: () => Date;
  readonly maxUploadBytes: number;
  /** Longhaul's webhook endpoint for each provider; the job and its submission are added as query parameters. */
  readonly providerWebhookUrl: (provider: ProviderName) => string;
  /** Sends the client's webhook; throws WebhookDeliveryFailed to be retried. */
  readonly deliverWebhook: (job: Job) => Promise<'sent' | 'skipped'>;
  /** Checks a remote input URL (HEAD): size and media type. */
  readonly probeUrl: (url: string) => Promise<{ size?: number; contentType?: string }>;
  /** Fetches a provider's output file, which the provider deletes after a while. */
  readonly fetchOutput: (
    url: string,
  ) => Promise<{ readonly bytes: Uint8Array; readonly contentType?: string }>;
  /** Lifetime of the input URLs handed to providers that fetch their input. */
  readonly inputUrlTtlSeconds: number;
  /** Hears what the steps measure, for metrics. */
  readonly observe?: (observation: Observation) => void;
  /** The search index, where a publish job's passages go once embedded. */
  readonly vectors: VectorIndex;
  /** How the deployment embeds passages. */
  readonly embedding: EmbeddingSettings;
  /** Media items, whose versions `audio.publish` jobs publish (absent: no job is a version). */
  readonly media?: MediaStore;
  /** How long a replaced version's stream stays after the switch, for listeners mid-stream. */
  readonly mediaGraceSeconds?: number;
  /** Intake, through which a succeeded job's follow-ups are submitted as any job is. */
  readonly intake: IntakeDeps;
  /** How long a provider's grants pause when it throttles or is down without saying (default `PAUSE_DEFAULTS`). */
  readonly providerPause?: PauseSettings;
  readonly random?: () => number;
}

/** What the steps measure along the way. */
export type Observation =
  /** A job the workflow made (a child, a follow-up): submitted as a client's would be. */
  | { readonly kind: 'submitted'; readonly jobType: string }
  | { readonly kind: 'started'; readonly jobType: string; readonly queueWaitMs: number }
  | {
      readonly kind: 'provider';
      readonly outcome: 'accepted' | 'unavailable' | 'rejected' | 'ambiguous';
      readonly latencyMs: number;
    }
  | {
      readonly kind: 'finished';
      readonly jobType: string;
      readonly status: 'succeeded' | 'failed' | 'needs_review';
      readonly durationMs?: number;
      /** Why a job failed or went to review. */
      readonly error?: JobError;
    }
  | PauseObservation;

/**
 * The provider did not take the submission because it throttles or is down:
 * that did no work, so it is neither a failure nor an attempt. Its grants
 * pause (`pauseProvider`), and the job gives its slot back and goes back to
 * its tenant's line at the place it had, queued, for a new run once a grant
 * comes: this run ends. The pause is set before the slot goes, so the slot
 * is not handed to another job that would meet the same refusal.
 */
async function returnToLine(deps: WorkflowDeps, job: Job, error: ProviderUnavailableError): Promise<Error> {
  const provider = providerOf(job);
  const pause = await pauseProvider(pauseDepsOf(deps, provider), error);
  await deps.waiting.add(waitingEntryOf(job));
  const queued = await deps.store.returnToQueue(job, deps.now());
  if (!queued) {
    const current = await loadJob(deps, job.id);
    if (current.status === 'queued') return waitInLine(deps, current);
    return new JobSettledError(`Job ${job.id} is ${current.status}.`);
  }
  await deps.timeline.record(job.id, {
    at: deps.now().toISOString(),
    type: 'provider.paused',
    detail: pauseDetail(provider, pause.until, pause.reason),
  });
  return waitInLine(deps, queued);
}

/** How the steps pause a provider, and tell of it. */
const pauseDepsOf = (deps: WorkflowDeps, provider: ProviderName): PauseDeps => ({
  provider,
  pool: deps.slots(provider),
  now: deps.now(),
  settings: deps.providerPause ?? PAUSE_DEFAULTS,
  random: deps.random ?? Math.random,
  events: deps.events,
  ...(deps.observe ? { observe: deps.observe } : {}),
});

/**
 * A job put back in its line by its run's submit: its slot goes back, and its
 * message looks for a grant once its provider's pause ends (a release hands
 * slots on, but none is handed while the pause lasts).
 */
async function waitInLine(deps: WorkflowDeps, job: Job): Promise<ProviderPausedError> {
  await releaseOwnSlot(deps.slots, job);
  const state = await deps.slots(providerOf(job)).state();
  const now = deps.now();
  await deps.store.touchEnqueued(job.id, now);
  await deps.queue.enqueue(job, {
    delaySeconds: lookAfterPauseSeconds(state.pausedUntil ?? now.getTime(), now, deps.random ?? Math.random),
    deferrals: 1,
  });
  return new ProviderPausedError(`Job ${job.id} waits in line until its provider takes submissions again.`);
}

/**
 * The probe after a pause was taken: the provider takes submissions again, so
 * the grants the probe held back go on now, not when its time is up, and the
 * free slots go to the jobs whose turn it is (nobody else hands them on: the
 * jobs waiting for the pause looked at the pool and went back to wait out the
 * probe). One conditional write, made only by a probe.
 */
async function endProbe(deps: WorkflowDeps, job: Job, stateMachine: string | undefined): Promise<void> {
  const provider = providerOf(job);
  if (!(await deps.slots(provider).endProbe(slotHolderOf(job), deps.now()))) return;
  await handOnFreeSlots(fillDeps(deps, stateMachine), provider, `${provider} took the probe after its pause`);
}

/** The job was settled elsewhere (canceled, resolved): the workflow has nothing left to do. */
export class JobSettledError extends Error {
  override readonly name = StepError.jobSettled;
}

const errorMessage = (code: string, message: string) => `[${code}] ${message}`;

/**
 * Runs one step. Its start, end, retries and failure are in the execution's
 * history, which the job's timeline reads (`stepEventsOf`): a step writes
 * nothing of its own for them.
 */
export async function runStep(deps: WorkflowDeps, event: StepEvent): Promise<unknown> {
  return steps[event.step](deps, event);
}

async function loadJob(deps: WorkflowDeps, jobId: string): Promise<Job> {
  const job = await deps.store.get(jobId);
  if (!job) throw new JobSettledError(`Job ${jobId} no longer exists.`);
  return job;
}

type Step = (deps: WorkflowDeps, event: StepEvent) => Promise<unknown>;

/**
 * A step that may settle the job it loads. A chunk job settled by it tells its
 * parent's waiting state, also on a retry after the word went (it says it
 * again); only a chunk job is read again for that, the parent being fixed.
 */
function settling(body: (deps: WorkflowDeps, event: StepEvent, job: Job) => Promise<unknown>): Step {
  return async (deps, event) => {
    const job = await loadJob(deps, event.jobId);
    const result = await body(deps, event, job);
    if (job.parent) {
      const settled = await deps.store.get(job.id);
      if (settled) {
        await resumeParent(deps, settled);
        await tellCancelingParent(deps, settled);
      }
    }
    return result;
  };
}

const steps: Record<StepName, Step> = {
  async prepare(deps, event) {
    let job = await loadJob(deps, event.jobId);
    if (job.status === 'queued') {
      const now = deps.now();
      const started = await deps.store.transition(
        job,
        ['queued'],
        {
          status: 'running',
          startedAt: now.toISOString(),
          ...(event.executionName ? { executionName: event.executionName } : {}),
        },
        now,
      );
      if (started) observeStarted(deps, started);
      job = started ?? (await loadJob(deps, event.jobId));
    }
    if (job.status !== 'running') throw new JobSettledError(`Job ${job.id} is ${job.status}.`);
    // A restarted run of a job already sent to the provider does not look at its input again: a
    // presigned audioUrl may have expired since, and the provider has what it needs.
    if (!job.providerJobId && !job.submitIntent) await checkInput(deps, job);
    // The state machine routes on it: one submission, or audio.publish's compute steps and chunk jobs.
    return { flow: takesSlot(job) ? 'submission' : 'publish' };
  },

  async submit(deps, event) {
    const job = await loadJob(deps, event.jobId);
    // A retry of a submit that put the job back in its line: the rest of that return is done again.
    if (job.status === 'queued' && event.executionName && event.executionName !== executionNameOf(job)) {
      throw await waitInLine(deps, job);
    }
    if (job.status !== 'running') throw new JobSettledError(`Job ${job.id} is ${job.status}.`);
    if (job.providerJobId) return null;
    const provider = await deps.providers(providerOf(job));
    if (job.submitIntent && !provider.deduplicates) {
      // A previous attempt sent the request and never learned the answer; a
      // provider that cannot deduplicate may already be running (and billing) it.
      throw await markNeedsReview(deps, job, {
        code: 'ambiguous_submission',
        message: 'A previous submission may have been accepted; it was not sent again.',
      });
    }
    // An intent left by an earlier attempt (resent here because the provider
    // deduplicates) means that attempt may have been accepted: no later answer
    // to this resend can prove it was not.
    const earlierAttemptUnknown = job.submitIntent !== undefined;
    // Built before the intent is taken: a failure here has sent nothing.
    // Only what the job's own workflow stored (a chunk under its parent's outputs) can be handed out or read.
    const ownOutput = (key: string): string => {
      if (!key.startsWith(rootOutputPrefix(job)) || key.includes('/../')) {
        throw new InvalidJobInputError(
          errorMessage('input_invalid', 'The input names an output of another job.'),
          'input_invalid',
        );
      }
      return key;
    };
    const request = await bindingOf(job).request(job.input, {
      inputUrl: (ref) => deps.inputs.downloadUrl(job.tenantId, ref, deps.inputUrlTtlSeconds),
      outputUrl: (key) => deps.outputs.outputUrl(ownOutput(key)),
      readOutput: async (key) => {
        const bytes = await deps.outputs.getOutput(ownOutput(key));
        if (!bytes) {
          throw new InvalidJobInputError(
            errorMessage('input_not_found', `No output ${key}.`),
            'input_not_found',
          );
        }
        return new TextDecoder().decode(bytes);
      },
    });
    // Paid work of an earlier attempt that a refusal cut short: this one goes on from it.
    const answered = job.answeredCalls ? await answeredPartOf(deps, job) : undefined;
    // A resend goes under the key of the submission it repeats; a first send under the job's key.
    const providerKey = submissionKeyOf(job);
    const intent = await deps.store.recordSubmitIntent(
      job.id,
      { attemptId: randomUUID(), at: deps.now().toISOString(), providerKey },
      job.submitIntent?.attemptId,
    );
    if (!intent) {
      // Another invocation of this step (Step Functions retries an invocation it
      // lost sight of, which may still run) took the intent first, or the job
      // moved on. This one sends nothing; a retry finds what the other learned.
      const current = await loadJob(deps, job.id);
      if (current.status !== 'running') throw new JobSettledError(`Job ${job.id} is ${current.status}.`);
      if (current.providerJobId) return null;
      throw new AmbiguousSubmissionError('Another attempt is submitting; its outcome is not known yet.');
    }
    const sentAt = Date.now();
    const observeCall = (outcome: 'accepted' | 'unavailable' | 'rejected' | 'ambiguous') =>
      deps.observe?.({ kind: 'provider', outcome, latencyMs: Date.now() - sentAt });
    let providerJobId: string;
    let answer: { readonly output: unknown } | undefined;
    try {
      ({ providerJobId, answer } = await provider.submit({
        idempotencyKey: providerKey,
        request,
        webhookUrl: providerWebhookUrlOf(deps.providerWebhookUrl(provider.name), job),
        ...(answered ? { answered } : {}),
      }));
    } catch (error) {
      observeCall(
        error instanceof ProviderUnavailableError
          ? 'unavailable'
          : error instanceof ProviderRejectedError
            ? 'rejected'
            : 'ambiguous',
      );
      if (error instanceof ProviderUnavailableError) {
        deps.observe?.(throttledObservation(providerOf(job), 'submit', error));
      }
      if (error instanceof ProviderRejectedError && earlierAttemptUnknown) {
        throw await markNeedsReview(deps, job, {
          code: 'ambiguous_submission',
          message: `The provider refused a resend (${error.code}) after an attempt with an unknown outcome, which it may have accepted.`,
        });
      }
      if (error instanceof ProviderUnavailableError || error instanceof ProviderRejectedError) {
        // This request was definitely not accepted; unless an earlier one may
        // have been, a later attempt is not ambiguous. (A provider that deduplicates
        // answers that later resend's calls without charging them again.)
        if (!earlierAttemptUnknown) {
          const kept = error instanceof ProviderUnavailableError ? error.answered : undefined;
          // Kept before the intent goes: should the keeping fail, the intent leaves the job to a person.
          if (kept && kept.calls > (job.answeredCalls ?? 0)) {
            await deps.outputs.putOutput(answeredPartKeyOf(job), JSON.stringify(kept), 'application/json');
          }
          await deps.store.settleSubmitIntent(job.id, undefined, deps.now(), kept?.calls);
        }
        if (error instanceof ProviderRejectedError)
          throw new ProviderRejectedError(errorMessage(error.code, error.message), error.code);
        throw await returnToLine(deps, job, error);
      }
      if (error instanceof AmbiguousSubmissionError && !provider.deduplicates) {
        throw await markNeedsReview(deps, job, { code: 'ambiguous_submission', message: error.message });
      }
      // Ambiguous with a deduplicating provider: the intent stays, and a retry resends the same key.
      throw error;
    }
    // Accepted: whatever fails from here on is bookkeeping, never a reason to doubt the submission.
    observeCall('accepted');
    if (answer) {
      // A provider that answers at once: its answer is the outcome a completion webhook would carry,
      // kept and recorded before the submission is settled, so the await step finds it when it starts.
      await applyProviderEvent(
        deps,
        job.id,
        { type: 'succeeded', id: providerJobId, output: answer.output },
        submissionTagOf(job),
      );
    }
    await deps.store.settleSubmitIntent(job.id, providerJobId, deps.now());
    if (!answer) {
      await deps.timeline.record(job.id, { at: deps.now().toISOString(), type: 'provider.accepted' });
    }
    // Once the acceptance is recorded, and never at its cost: a probe not ended here ends when its time is up.
    if (job.probes) await endProbe(deps, job, event.stateMachineArn).catch(() => undefined);
    return null;
  },

  async await(deps, event) {
    if (!event.taskToken) throw new Error('The await step needs a task token.');
    const job = await deps.store.recordTaskToken(event.jobId, event.taskToken, deps.now());
    if (!job) throw new JobSettledError(`Job ${event.jobId} is no longer running.`);
    // The provider may have finished before the token was stored; then nobody else will resume the step.
    if (job.providerOutcome) await resumeAwait(deps.workflow, event.taskToken, job.providerOutcome);
    return null;
  },

  async release(deps, event) {
    // A job the provider may be running keeps its slot; the reconciler frees it once it cannot be.
    const job = await deps.store.get(event.jobId);
    if (!job) return null; // the reconciler frees the slots of jobs that vanished
    // An older run's step (its execution outlived an operator's requeue) frees nothing of the new run's.
    if (event.executionName && event.executionName !== currentExecutionOf(job)) return null;
    if (providerMayBeRunning(job)) return null;
    const left = await giveBackOwnSlot(deps.slots, job);
    const at = deps.now().toISOString();
    try {
      // Also on a retry whose first try released the slot but stopped before the hand-off. Every free
      // slot is filled, not only this one: a choice that lost a race earlier may have left one free.
      // The job that gets a slot records it: another tenant's job id is not for this one's timeline.
      // The release's own record waits for nobody: the next job's start comes first.
      await Promise.all([
        handSlotsOn(deps, providerOf(job), event.stateMachineArn),
        left !== 'not held' ? deps.timeline.record(event.jobId, { at, type: 'slot.released' }) : undefined,
      ]);
    } finally {
      // The look at an idle tenant's line, and the drop of its pass, wait for the next job's start, not it for them.
      if (left === 'last') await deps.slots(providerOf(job)).forgetIdlePass(job.tenantId);
    }
    return null;
  },

  async transcribe(deps, event) {
    if (!event.taskToken || !event.chunk)
      throw new Error('The transcribe step needs a task token and a chunk.');
    const job = await loadJob(deps, event.jobId);
    if (!goesOn(job)) throw new JobSettledError(`Job ${job.id} is ${settledStatusOf(job)}.`);
    await leadOrEnd(deps, job);
    await awaitChunk(deps, job, event.chunk, event.taskToken);
    return null;
  },

  async 'plan-embedding'(deps, event) {
    const job = await loadJob(deps, event.jobId);
    if (!goesOn(job)) throw new JobSettledError(`Job ${job.id} is ${settledStatusOf(job)}.`);
    return planEmbedding(deps, job, deps.embedding);
  },

  async embed(deps, event) {
    if (!event.taskToken || !event.run || !event.passagesKey)
      throw new Error('The embed step needs a task token, a run and the passages.');
    const job = await loadJob(deps, event.jobId);
    if (!goesOn(job)) throw new JobSettledError(`Job ${job.id} is ${settledStatusOf(job)}.`);
    await awaitEmbedding(
      deps,
      job,
      { passagesKey: event.passagesKey },
      event.run,
      deps.embedding,
      event.taskToken,
    );
    return null;
  },

  async 'store-vectors'(deps, event) {
    if (!event.passagesKey || !event.embedded)
      throw new Error('The store-vectors step needs the embedded runs.');
    const job = await loadJob(deps, event.jobId);
    if (!goesOn(job)) throw new JobSettledError(`Job ${job.id} is ${settledStatusOf(job)}.`);
    // A version of a media item carries the item's metadata as it is now, and says which revision.
    const item = job.media && deps.media ? await deps.media.get(job.tenantId, job.media.id) : undefined;
    const stored = await storeVectors(
      deps,
      job,
      { passagesKey: event.passagesKey },
      event.embedded,
      item ? mediaVectorMetadata(item, job) : undefined,
    );
    if (item) await recordVectorRevision(deps.outputs, job, item.metadataRevision);
    // Canceled while its vectors went in: they go again, and the settle path finds nothing left.
    const now = await loadJob(deps, job.id);
    if (!goesOn(now)) {
      await discardVectors(deps, now);
      throw new JobSettledError(`Job ${job.id} is ${settledStatusOf(now)}.`);
    }
    await deps.timeline.record(job.id, {
      at: deps.now().toISOString(),
      type: 'vectors.stored',
      detail: `${stored} passages searchable`,
    });
    return null;
  },

  async 'await-children'(deps, event) {
    if (!event.taskToken) throw new Error('The await-children step needs a task token.');
    const job = await deps.store.recordTaskToken(event.jobId, event.taskToken, deps.now());
    // A job that goes on has nothing to wait for here, and must not end its execution as settled while
    // it runs: the execution fails, and the reconciler runs the job on from where it is.
    if (job && goesOn(job))
      throw new Error(`Job ${job.id} goes on: it has no canceled children to wait for.`);
    // Not running: settled elsewhere (canceled, in review, gone).
    if (!job || !isCanceling(job)) {
      await deps.workflow.completeTask(event.taskToken, {});
      return null;
    }
    if (await finishCancel(deps, job)) await deps.workflow.completeTask(event.taskToken, {});
    return null;
  },

  finalize: settling(async (deps, event, job) => {
    // A version whose success was recorded and whose switch was not (a try stopped between them) switches now.
    if (job.status === 'succeeded' && job.media) return publishVersion(deps, job);
    if (!goesOn(job)) throw new JobSettledError(`Job ${job.id} is ${settledStatusOf(job)}.`);
    if (!takesSlot(job)) return finalizePublished(deps, job);
    if (!job.providerJobId) throw new Error(`Job ${job.id} has no provider job to finalize.`);
    const raw = await providerOutput(deps, job, job.providerJobId, (event.retryCount ?? 0) > 0);
    let output: JobOutput;
    try {
      output = bindingOf(job).output(raw, job.input);
    } catch (error) {
      if (!(error instanceof OutputInvalidError)) throw error;
      throw new InvalidJobInputError(
        errorMessage('output_invalid', `The provider returned an unusable output: ${error.message}`),
        'output_invalid',
      );
    }
    return succeed(deps, job, await storeOutput(deps, job, output));
  }),

  // Every end of a job passes here (notify, notify-failure, notify-settled), so its event is put here, before
  // its webhook; a retry puts it again under the same event id. A succeeded job's follow-ups start here too.
  async notify(deps, event) {
    const job = await loadJob(deps, event.jobId);
    if (isTerminal(job.status) || job.status === 'needs_review') await publishJobEvent(deps, job);
    if (job.status === 'succeeded') {
      // A version whose execution stopped between its success and its switch is switched here, or again.
      await publishVersion(deps, job);
      await startFollowUps(deps, job);
    }
    const outcome = await deps.deliverWebhook(job);
    if (outcome === 'sent') {
      await deps.timeline.record(job.id, { at: deps.now().toISOString(), type: 'webhook.delivered' });
    }
    return null;
  },

  fail: settling(async (deps, event, job) => {
    // Also on a retry whose first try failed the job but stopped before its outputs were dealt with.
    if (job.status === 'failed') {
      await discardFailedOutputs(deps, job, job.error);
      return null;
    }
    if (isTerminal(job.status) || job.status === 'needs_review') return null;
    // A publish being canceled (its item deleted, its client's cancel) whose step failed meanwhile, a chunk
    // the cancel stopped coming back failed, still ends canceled: it waits for its children as any canceled
    // publish does (the state machine sends this to await-children), and is never failed instead.
    if (isCanceling(job) && !takesSlot(job)) throw new JobSettledError(`Job ${job.id} is canceling.`);
    const error = jobErrorOf(event.error);
    if (unresolvedSubmission(job)) {
      // Whatever failed, the provider may have accepted a submission: a person decides, not the workflow.
      await markNeedsReview(deps, job, {
        code: 'ambiguous_submission',
        message: `${error.message} A submission's outcome is unknown.`,
      });
      return null;
    }
    if (job.providerJobId && !OUTCOME_ERRORS.has(event.error?.Error ?? '')) {
      // The provider accepted (and billed) the job, and what failed is our own
      // bookkeeping: a throttled or failed step, a lagging status, storage. The
      // job did not fail; it waits for its true outcome, which the reconciler
      // keeps asking the provider for, and its slot stays held while the
      // provider may still run it.
      await markNeedsReview(deps, job, {
        code: 'accepted_then_interrupted',
        message: `The provider accepted the job, then a step failed: [${error.code}] ${error.message}`,
      });
      return null;
    }
    const now = deps.now();
    const failed = await deps.store.transition(
      job,
      ['queued', 'running'],
      { status: 'failed', error, finishedAt: now.toISOString() },
      now,
    );
    if (failed) {
      deps.observe?.({ kind: 'finished', jobType: job.type, status: 'failed', error });
      await discardFailedOutputs(deps, job, error);
    }
    return null;
  }),

  /**
   * Where a failed job's execution fails: while the job is failed it raises
   * JobFailed, so the execution fails at this Task and a redrive runs it
   * again. Run again after its client resumed the job (running again, under
   * this same execution), it lets the execution go on to the state that
   * failed, once the job holds its provider slot if that state ran with one
   * (the failure path released it). It takes none itself: the job waits in
   * its tenant's line, at the place its submission gave it, and is granted a
   * slot by fair share as any job is; until then the execution parks here
   * again (SlotUnavailable), and the grant redrives it (`startJob`).
   */
  async park(deps, event) {
    const job = await loadJob(deps, event.jobId);
    if (
      job.status !== 'running' ||
      (event.executionName !== undefined && event.executionName !== currentExecutionOf(job))
    ) {
      throw new JobFailedError(`Job ${job.id} is ${job.status}; its error is on the job.`);
    }
    if (resumeNeedsSlot(job, event.failedAt)) {
      const provider = providerOf(job);
      if (!holdsOwnSlot(new Set(await deps.slots(provider).holders()), job)) {
        await deps.waiting.add(waitingEntryOf(job));
        // Its turn may have come: free slots go to the jobs whose turn it is, this one's included.
        if (!(await fillFreeSlots(fillDeps(deps), provider, job.id))) {
          throw new SlotUnavailableError(
            `Resumed job ${job.id} waits in its tenant's line for a ${provider} slot.`,
          );
        }
      }
    }
    return null;
  },

  // The job was finished elsewhere (canceled by its client, resolved by an operator or the reconciler).
  settle: settling(async (deps, event, job) => {
    if (job.status === 'needs_review') return null;
    // A canceled publish leaves nothing searchable behind, and a canceled job no outputs.
    if (job.status === 'canceled' && !job.parent && !takesSlot(job)) await discardVectors(deps, job);
    if (job.status === 'canceled') await discardOutputs(deps.outputs, job);
    if (job.status === 'canceled' && job.providerJobId && !job.providerOutcome) {
      // A provider that cannot stop a job (Deepgram) is not asked: the job runs out there, its slot held
      // until its end is heard of, and nothing of its result is kept.
      if (!PROVIDERS[providerOf(job)].cancels) {
        await steps.release(deps, event);
        return null;
      }
      try {
        await stopAtProvider(await providerDeps(deps, job), job, job.providerJobId);
      } catch {
        // Not confirmed: the slot stays held while the provider may run the job; the reconciler asks again.
      }
    }
    await steps.release(deps, event);
    return null;
  }),

  review: settling(async (deps, event, job) => {
    // A first try put the job's event when it moved it to review; a retry may follow a try that stopped after
    // the move and before the event.
    if (job.status === 'needs_review' && (event.retryCount ?? 0) > 0) await publishJobEvent(deps, job);
    const caught = event.error?.Error ?? '';
    if (caught === StepError.needsReview && job.status === 'running') {
      // One of the job's chunk jobs needs a person (its submission's outcome is unknown): so does the job.
      await markNeedsReview(deps, job, jobErrorOf(event.error));
    }
    if (caught === StepError.providerAmbiguous) {
      // Resends with the same key kept ending with an unknown outcome.
      await markNeedsReview(deps, job, {
        code: 'ambiguous_submission',
        message: 'Every resend of the submission ended with an unknown outcome.',
      });
    }
    if (caught === StatesError.timeout || caught === StatesError.heartbeatTimeout) {
      await markNeedsReview(deps, job, {
        code: 'provider_timeout',
        message: 'The provider did not finish in time; it was asked to stop.',
      });
      // Once the provider confirms the stop the job no longer uses capacity there.
      if (job.providerJobId) {
        try {
          await stopAtProvider(await providerDeps(deps, job), job, job.providerJobId);
          await steps.release(deps, event);
        } catch {
          // Keep the slot: the provider may still be running the job.
        }
      }
    }
    // Ambiguous submissions keep their slot: the provider may be running the job,
    // and the reconciler frees it once the job timeout has passed.
    return null;
  }),
};

/**
 * Finishes the cancel of a job with children once every child is settled:
 * children not finished yet are canceled (again: one made while the cancel
 * looked), and when none is left at a provider the job's vectors and outputs
 * go, then the job becomes `canceled`. What it derived goes first, while the
 * job is still active and so still in the reconciler's sight: a stop between
 * the two is finished by the next try. False while a child is unsettled.
 */
async function finishCancel(deps: WorkflowDeps, job: Job): Promise<boolean> {
  const children = await cancelChildren(deps, job);
  if (!children.every(childSettled)) return false;
  await discardVectors(deps, job);
  await discardOutputs(deps.outputs, job);
  const now = deps.now();
  await deps.store.transition(job, ['running'], { status: 'canceled', finishedAt: now.toISOString() }, now);
  await deps.timeline.record(job.id, {
    at: now.toISOString(),
    type: 'job.canceled',
    detail: children.length > 0 ? `after its ${children.length} child jobs settled` : 'it had no child jobs',
  });
  return true;
}

/** How a job that is no longer going on stands, for the JobSettled message. */
const settledStatusOf = (job: Job): string => (isCanceling(job) ? 'canceling' : job.status);

/**
 * Asks the provider to stop the job and records its confirmation as the
 * provider's outcome: from then on the job no longer uses capacity there, so
 * its slot may go. Throws when the provider did not confirm. The request is
 * in the job's timeline before it is sent: the provider may confirm the stop
 * by webhook (`provider.canceled`) before it answers the request.
 */
export async function stopAtProvider(
  deps: {
    readonly provider: Pick<Provider, 'cancel'>;
    readonly store: WorkflowDeps['store'];
    readonly timeline: WorkflowDeps['timeline'];
    readonly now: () => Date;
  },
  job: Pick<Job, 'id' | 'createdAt' | 'resubmissions'>,
  providerJobId: string,
): Promise<void> {
  await deps.timeline.record(job.id, { at: deps.now().toISOString(), type: 'provider.cancel_requested' });
  await deps.provider.cancel(providerJobId);
  await deps.store.recordProviderOutcome(job, {
    status: 'canceled',
    at: deps.now().toISOString(),
    providerJobId,
  });
}

/** A job's start, once: by prepare for a job that takes no slot, by the grant of its slot for the others. */
function observeStarted(deps: Pick<WorkflowDeps, 'observe'>, job: Job): void {
  deps.observe?.({
    kind: 'started',
    jobType: job.type,
    queueWaitMs: queueWaitMsOf(job),
  });
}

/**
 * Gives the provider's free slots to the jobs whose turn it is, each started at
 * once on `stateMachine` (the caller's own) or, without it, sent by the
 * hand-off lane. Bounded by the limit: each slot is filled once.
 */
async function handSlotsOn(deps: WorkflowDeps, provider: ProviderName, stateMachine?: string): Promise<void> {
  await handOnFreeSlots(fillDeps(deps, stateMachine), provider, 'a slot another job released');
}

/** How the steps grant slots: each grant counted as a start, started on `stateMachine` where known. */
function fillDeps(deps: WorkflowDeps, stateMachine?: string): FillDeps & Pick<WorkflowDeps, 'timeline'> {
  return {
    ...deps,
    ...(stateMachine ? { start: (next: Job) => startJob(deps, next, stateMachine) } : {}),
    observeStart: (next) => observeStarted(deps, next),
  };
}

/**
 * The end of an `audio.publish` job: what its compute steps recorded (the
 * probe's duration, the stream, the transcript and passages) becomes its
 * result. The stream is stored as keys (`stream`); it is served with fresh
 * presigned URLs each time the job is shown (`presentJob`).
 */
async function finalizePublished(deps: WorkflowDeps, job: Job): Promise<null> {
  const recorded = (step: 'probe' | 'transcode' | 'index') =>
    collectComputeOutcome({ store: deps.store, outputs: deps.outputs }, { step, jobId: job.id });
  const probe = (await recorded('probe')) as ProbeResult;
  const stream = (await recorded('transcode')) as TranscodeResult;
  const index = (await recorded('index')) as IndexResult;
  const result = {
    durationSeconds: probe.durationSeconds,
    stream: { playlistKey: stream.playlistKey, renditions: stream.renditions },
    transcriptKey: index.transcriptKey,
    ...(index.passages ? { passages: index.passages } : { passagesKey: index.passagesKey }),
    searchable: await isSearchable(deps.outputs, job),
  };
  if (job.media && deps.media && !(await mayBecomeCurrent(deps.media, job))) {
    return supersededVersion(deps, job);
  }
  // Success first, then the switch, conditioned on it: the item never names a version without its result
  // (one timed out to review meanwhile stays where it is, and the current version stays current).
  const succeeded = await markSucceeded(deps, job, result);
  if (succeeded) await publishVersion(deps, succeeded);
  return null;
}

/** Makes a succeeded version of a media item its current one (no media item: nothing to do). */
async function publishVersion(deps: WorkflowDeps, job: Job): Promise<null> {
  if (!job.media || !deps.media) return null;
  await switchToVersion({ ...deps, media: deps.media, graceSeconds: deps.mediaGraceSeconds ?? 0 }, job);
  return null;
}

/**
 * A version of a media item whose recording proved good (its probe passed,
 * its chunks are cut) supersedes the older one in progress before any chunk
 * of its own is charged, in the first step that would charge one: each
 * chunk's `transcribe`. The first to come takes the lead; the others, and
 * any retry, find it taken in one read. A version a newer good one overtook
 * ends here, canceled, with what another chunk's state made meanwhile. Any
 * other job goes on, asking nothing.
 */
async function leadOrEnd(deps: WorkflowDeps, job: Job): Promise<void> {
  if (!job.media || !deps.media) return;
  const lead = await takeTheLead(
    { ...deps, media: deps.media, jobs: deps.store, cancel: (id) => cancelJob(deps, job.tenantId, id) },
    job,
  );
  if (lead === 'leading') return;
  await supersededVersion(deps, job);
  await cancelChildren(deps, job);
  throw new JobSettledError(`Job ${job.id} was superseded by a newer version.`);
}

/**
 * A version that may no longer become current (a newer one proved good, or
 * its item was deleted) ends canceled, and what it made goes at once: no
 * listener was ever given it.
 */
async function supersededVersion(deps: WorkflowDeps, job: Job): Promise<null> {
  const now = deps.now();
  const error = {
    code: 'superseded',
    message: 'A newer version of the media item proved good, or the item was deleted.',
  };
  await deps.store.transition(
    job,
    ['running'],
    { status: 'canceled', error, finishedAt: now.toISOString() },
    now,
  );
  await discardVectors(deps, job);
  await deps.outputs.deleteOutputs(rootOutputPrefix(job));
  return null;
}

/**
 * What a failed job leaves behind. Never passages in the search index (nor
 * the record that they were in it: a resume that goes back to storing them
 * stores them again, one that does not leaves the job unsearchable, never
 * wrong). A job failed by its own input (`input_*`: not audio, too long, no
 * such upload) leaves no outputs either: a resume would fail the same way.
 * Any other failure keeps its outputs (a stream, chunks, a transcript, the
 * provider's output), never shown for a failed job, so that a resume goes
 * on from them; the output bucket's lifecycle expires them.
 */
async function discardFailedOutputs(deps: WorkflowDeps, job: Job, error: JobError | null): Promise<void> {
  if (!takesSlot(job)) {
    await discardVectors(deps, job);
    await deps.outputs.deleteOutputs(vectorsManifestKey(job));
  }
  if (error?.code.startsWith('input_')) await discardOutputs(deps.outputs, job);
}

/** Moves a running job to succeeded with its result, and counts it. */
async function succeed(deps: WorkflowDeps, job: Job, result: Record<string, unknown>): Promise<null> {
  await markSucceeded(deps, job, result);
  return null;
}

/** `succeed`, answering the succeeded job (undefined when the job had left `running`). */
async function markSucceeded(
  deps: WorkflowDeps,
  job: Job,
  result: Record<string, unknown>,
): Promise<Job | undefined> {
  const now = deps.now();
  const succeeded = await deps.store.transition(
    job,
    ['running'],
    { status: 'succeeded', result, progress: 100, error: null, finishedAt: now.toISOString() },
    now,
  );
  if (!succeeded) {
    // Canceled while its outputs were stored: they go, as the cancel's own path could not see them.
    if ((await deps.store.get(job.id))?.status === 'canceled') await discardOutputs(deps.outputs, job);
    return undefined;
  }
  deps.observe?.({
    kind: 'finished',
    jobType: job.type,
    status: 'succeeded',
    ...(job.startedAt ? { durationMs: now.getTime() - Date.parse(job.startedAt) } : {}),
  });
  return succeeded;
}

/** Moves a running job to needs_review with its reason, records why, and returns the error that stops the workflow. */
async function markNeedsReview(deps: WorkflowDeps, job: Job, reason: JobError): Promise<NeedsReviewError> {
  const now = deps.now();
  const reviewed = await deps.store.transition(
    job,
    ['running'],
    { status: 'needs_review', error: reason },
    now,
  );
  if (reviewed) {
    deps.observe?.({ kind: 'finished', jobType: job.type, status: 'needs_review', error: reason });
    await publishJobEvent(deps, reviewed);
  }
  await deps.timeline.record(job.id, {
    at: now.toISOString(),
    type: 'job.needs_review',
    detail: reason.message,
  });
  return new NeedsReviewError(errorMessage(reason.code, reason.message), reason.code);
}

/** The job error for what a Catch clause caught: `[code] message` when our steps raised it. */
export function jobErrorOf(caught: CaughtError | undefined): JobError {
  const name = caught?.Error ?? StatesError.runtime;
  const message = causeMessage(caught?.Cause ?? name);
  const coded = /^\[([a-z0-9_]+)\] (.*)$/s.exec(message);
  if (coded?.[1] && coded[2] !== undefined) return { code: coded[1], message: coded[2] };
  const byError: Record<string, string> = {
    [StepError.providerUnavailable]: 'provider_unavailable',
    [StepError.providerAmbiguous]: 'ambiguous_submission',
    [StatesError.timeout]: 'timeout',
    [StatesError.heartbeatTimeout]: 'timeout',
    [StatesError.taskFailed]: 'step_failed',
  };
  return { code: byError[name] ?? 'internal_error', message: message.slice(0, 500) };
}

async function checkInput(deps: WorkflowDeps, job: Job): Promise<void> {
  const source = jobTypeModule(job.type).file;
  if (!source) return;
  const ref = job.input[source.refField];
  const url = source.urlField ? job.input[source.urlField] : undefined;
  let info: { size?: number; contentType?: string } | undefined;
  if (typeof ref === 'string') {
    info = await deps.inputs.inputInfo(job.tenantId, ref);
    if (!info)
      throw new InvalidJobInputError(errorMessage('input_not_found', `No upload ${ref}.`), 'input_not_found');
  } else if (typeof url === 'string') {
    info = await deps.probeUrl(url);
  } else {
    return;
  }
  if (
    info.contentType &&
    !mediaTypeMatches(source.mediaTypes, info.contentType) &&
    info.contentType !== 'application/octet-stream'
  ) {
    throw new InvalidJobInputError(
      errorMessage('input_unsupported_media_type', `The input is ${info.contentType}.`),
      'input_unsupported_media_type',
    );
  }
  if (info.size !== undefined && info.size > deps.maxUploadBytes) {
    throw new InvalidJobInputError(
      errorMessage(
        'input_too_large',
        `The input is ${info.size} bytes; the limit is ${deps.maxUploadBytes}.`,
      ),
      'input_too_large',
    );
  }
  if (info.size === 0)
    throw new InvalidJobInputError(errorMessage('input_empty', 'The input is empty.'), 'input_empty');
}

/** How the job's type runs on the job's provider. */
function bindingOf(job: Job): ProviderBinding<ProviderName> {
  const binding = jobTypeModule(job.type).providers[providerOf(job)] as
    | ProviderBinding<ProviderName>
    | undefined;
  if (!binding) {
    throw new InvalidJobInputError(
      errorMessage('provider_unsupported', `${job.type} jobs cannot run on ${providerOf(job)}.`),
      'provider_unsupported',
    );
  }
  return binding;
}

/**
 * What the provider produced: the output its completion webhook carried, kept
 * when it arrived (some providers hand it over only then), or else what the
 * provider says of the job now.
 */
async function providerOutput(
  deps: WorkflowDeps,
  job: Job,
  providerJobId: string,
  retried: boolean,
): Promise<unknown> {
  const kept = job.providerOutcome?.outputKey;
  if (kept) {
    const bytes = await deps.outputs.getOutput(kept);
    if (bytes) return JSON.parse(new TextDecoder().decode(bytes));
  }
  const provider = await deps.providers(providerOf(job));
  const status = await askProvider(pauseDepsOf(deps, providerOf(job)), retried, () =>
    provider.status(providerJobId),
  );
  if (status.status !== 'succeeded') {
    throw new ProviderUnavailableError(`Provider reports ${status.status} for a completed job.`);
  }
  return status.output;
}

/** What stopping a job at its provider (`stopAtProvider`) needs: the job's own provider. */
export async function providerDeps(
  deps: Pick<WorkflowDeps, 'providers' | 'store' | 'timeline' | 'now'>,
  job: Pick<Job, 'provider'>,
) {
  return {
    provider: await deps.providers(providerOf(job)),
    store: deps.store,
    timeline: deps.timeline,
    now: deps.now,
  };
}

/**
 * Keeps the job's output files under the job in the output bucket (a
 * provider's URLs are fetched now: providers delete outputs) and returns the
 * result with each file's key as `<field>Key`.
 */
async function storeOutput(
  deps: WorkflowDeps,
  job: Job,
  output: JobOutput,
): Promise<Record<string, unknown>> {
  const prefix = jobOutputPrefix(job);
  const result: Record<string, unknown> = { ...output.result };
  for (const file of output.files) {
    const key = `${prefix}${file.fileName}`;
    const { content } = file;
    const body =
      'bytes' in content
        ? content.bytes
        : 'text' in content
          ? content.text
          : (await deps.fetchOutput(content.url)).bytes;
    await deps.outputs.putOutput(key, body, file.contentType);
    result[`${file.field}Key`] = key;
  }
  return result;
}

const answeredPart: z.ZodType<AnsweredPart> = z.object({ calls: z.int().min(1), output: z.unknown() });

/** What the provider answered of the job's submission before it refused a call, as the refusal kept it. */
async function answeredPartOf(deps: Pick<WorkflowDeps, 'outputs'>, job: Job): Promise<AnsweredPart> {
  const bytes = await deps.outputs.getOutput(answeredPartKeyOf(job));
  // Sending all again would pay a second time for what was answered: nothing is sent without it.
  if (!bytes) throw new Error(`The ${job.answeredCalls} answered call(s) of job ${job.id} are missing.`);
  return answeredPart.parse(JSON.parse(new TextDecoder().decode(bytes)));
}

/** A submission was sent and neither accepted (no provider id) nor known to be refused. */
function unresolvedSubmission(job: Job): boolean {
  return job.submitIntent !== undefined && job.providerJobId === undefined;
}

/**
 * Errors that are the job's true outcome once the provider accepted it: the
 * provider failed or canceled it, or its output is unusable. Any other error
 * after acceptance is bookkeeping.
 */
const OUTCOME_ERRORS: ReadonlySet<string> = new Set([
  StepError.providerJobFailed,
  StepError.invalidJobInput,
  StepError.providerRejected,
]);
