import { jobTypeModule } from '../../config/job-types';
import type { FollowUp } from '../../config/job-types/job-type';
import { startJob } from '../../lambdas/domain/dispatch';
import { vectorKeyOf, vectorsManifestKey } from '../../lambdas/domain/embedding';
import {
  AmbiguousSubmissionError,
  ProviderRejectedError,
  ProviderUnavailableError,
} from '../../lambdas/domain/errors';
import { waitingEntryOf } from '../../lambdas/domain/fair-share';
import {
  executionNameOf,
  type Job,
  newJob,
  providerKeyOf,
  providerOf,
  slotHolderOf,
  submissionTagOf,
} from '../../lambdas/domain/job';
import { applyProviderEvent } from '../../lambdas/domain/provider-events';
import { pauseSecondsOf } from '../../lambdas/domain/provider-pauses';
import { jobOutputPrefix } from '../../lambdas/domain/publish';
import {
  jobErrorOf,
  type Observation,
  runStep,
  type StepEvent,
  type WorkflowDeps,
} from '../../lambdas/domain/workflow';
import { readFailure } from '../../lambdas/providers/common';
import { sampleJob } from './support/jobs';
import {
  type MemoryEvents,
  type MemoryOutputs,
  MemoryQueue,
  MemoryStore,
  type MemoryVectorIndex,
  MemoryWorkflow,
  memoryTenantShares,
  ScriptedProvider,
} from './support/memory-ports';
import { memoryWorkflowDeps } from './support/workflow-deps';

const clock = new Date('2026-05-01T10:00:00.000Z');
const PNG = Buffer.from([137, 80, 78, 71]).toString('base64');

function setup(options: { deduplicates?: boolean; job?: Partial<Job> } = {}) {
  const store = new MemoryStore();
  const job = sampleJob(clock, { webhookUrl: 'https://hooks.example/x', ...options.job });
  store.jobs.set(job.id, job);
  const delivered: string[] = [];
  const provider = new ScriptedProvider(options.deduplicates ?? true);
  const deps = memoryWorkflowDeps(
    { store, provider, clock },
    {
      fetchOutput: async (url: string) => ({ bytes: new TextEncoder().encode(url) }),
      deliverWebhook: async (j: Job) => {
        delivered.push(`${j.id}:${j.status}`);
        return 'sent' as const;
      },
    },
  );
  deps satisfies WorkflowDeps;
  const step = (name: StepEvent['step'], extra: Partial<StepEvent> = {}) =>
    runStep(deps, { step: name, jobId: job.id, executionName: executionNameOf(job), ...extra });
  const current = () => store.jobs.get(job.id) as Job;
  return { deps, step, current, delivered, job };
}

describe('prepare', () => {
  it('starts the job and records the execution', async () => {
    const { step, current, deps } = setup();
    await step('prepare');
    expect(current()).toMatchObject({
      status: 'running',
      startedAt: clock.toISOString(),
      executionName: executionNameOf(current()),
    });
    // A step's start and end are in the execution's history, not written by the step.
    expect(deps.timeline.types(current().id)).toEqual([]);
  });

  it('refuses a missing upload for good', async () => {
    const { step } = setup({ job: { input: { prompt: 'x', sourceImageRef: `upl_${'a'.repeat(22)}` } } });
    await expect(step('prepare')).rejects.toMatchObject({ name: 'InvalidJobInput', code: 'input_not_found' });
  });

  it('refuses audio of the wrong type or size', async () => {
    const { step, deps } = setup({
      job: { type: 'audio.transcribe', input: { audioRef: `upl_${'b'.repeat(22)}` } },
    });
    await deps.inputs.putInput('acme', `upl_${'b'.repeat(22)}`, new Uint8Array(2000), 'audio/mpeg');
    await expect(step('prepare')).rejects.toMatchObject({ code: 'input_too_large' });
    await deps.inputs.putInput('acme', `upl_${'b'.repeat(22)}`, new Uint8Array(10), 'text/html');
    await expect(step('prepare')).rejects.toMatchObject({ code: 'input_unsupported_media_type' });
  });

  it('stops the workflow for a job canceled before it started', async () => {
    const { step } = setup({ job: { status: 'canceled' } });
    await expect(step('prepare')).rejects.toMatchObject({ name: 'JobSettled' });
  });
});

describe('submit', () => {
  it('records the intent, sends the job id as the idempotency key and keeps the provider id', async () => {
    const { step, current, deps } = setup({ job: { status: 'running' } });
    await step('submit');
    expect(deps.provider.submissions).toEqual([
      {
        idempotencyKey: providerKeyOf(current()),
        // What the job type hands its provider (here the generic one): its request, not the stored job.
        request: { type: 'image.generate', input: { prompt: 'a cat' } },
        webhookUrl: `https://longhaul.example/v1/provider/events?jobId=${current().id}&submission=${submissionTagOf(current())}`,
      },
    ]);
    expect(current()).toMatchObject({ providerJobId: 'gen_1', attempts: 1 });
    expect(current().submitIntent).toBeUndefined();
  });

  it('never submits twice once the provider accepted', async () => {
    const { step, deps } = setup({ job: { status: 'running' } });
    await step('submit');
    await step('submit', { retryCount: 1 });
    expect(deps.provider.submissions).toHaveLength(1);
  });

  it('pauses a throttling provider and puts the job back in its line, uncounted, instead of failing it', async () => {
    const { step, current, deps, job } = setup({ job: { status: 'running', attempts: 0 } });
    await deps.slots.acquire(slotHolderOf(job), 2);
    deps.provider.script.push(new ProviderUnavailableError('longhaul-http answered 429.', 7));
    await expect(step('submit')).rejects.toMatchObject({ name: 'ProviderPaused' });
    // Back in the queue for a new run, its slot given back, its place in its tenant's line as before.
    expect(current()).toMatchObject({ status: 'queued', runs: 1, attempts: 0, progress: 0 });
    expect(current().submitIntent).toBeUndefined();
    expect(current().executionName).toBeUndefined();
    expect(await deps.slots.holders()).toEqual([]);
    expect(deps.waiting.entries()).toEqual([waitingEntryOf(job)]);
    // Grants pause for as long as the provider asked, in the pool's own record.
    const until = clock.getTime() + 7000;
    expect(await deps.slots.state()).toMatchObject({
      pausedUntil: until,
      pauseReason: 'longhaul-http answered 429.',
      pauseSeconds: 7,
    });
    deps.slots.pool('longhaul-http').clock = () => clock;
    expect(await deps.slots.acquire('another', 2)).toBe(false);
    deps.slots.pool('longhaul-http').clock = () => new Date(until);
    expect(await deps.slots.acquire('another', 2)).toBe(true);
    // Its message looks again once the pause is over, not before.
    expect(deps.queue.messages).toEqual([
      {
        jobId: job.id,
        provider: 'longhaul-http',
        options: { delaySeconds: expect.any(Number), deferrals: 1 },
      },
    ]);
    expect(deps.queue.messages[0]?.options.delaySeconds).toBeGreaterThanOrEqual(7);
    expect(deps.queue.messages[0]?.options.delaySeconds).toBeLessThanOrEqual(9);
    expect(deps.timeline.types(job.id)).toEqual(['provider.paused']);
    // Nothing was charged: the one refused request is the only one sent.
    expect(deps.provider.submissions).toHaveLength(1);
  });

  it('finishes putting the job back in line when its return is retried, sending nothing', async () => {
    const { step, current, deps, job } = setup({ job: { status: 'running' } });
    deps.provider.script.push(new ProviderUnavailableError('503'));
    await expect(step('submit')).rejects.toMatchObject({ name: 'ProviderPaused' });
    await expect(step('submit', { retryCount: 1 })).rejects.toMatchObject({ name: 'ProviderPaused' });
    expect(current()).toMatchObject({ status: 'queued', runs: 1 });
    expect(deps.provider.submissions).toHaveLength(1);
    expect(deps.queue.messages.map((sent) => sent.jobId)).toEqual([job.id, job.id]);
  });

  it('doubles a pause the provider names no length for while it keeps refusing, up to the cap', () => {
    const settings = { baseSeconds: 4, maxSeconds: 6 };
    const at = clock.getTime();
    expect(pauseSecondsOf({}, {}, clock, settings, () => 1)).toBe(4);
    // Refused again within the last pause's length of its end: twice as long, capped.
    expect(pauseSecondsOf({}, { pausedUntil: at - 3000, pauseSeconds: 4 }, clock, settings, () => 1)).toBe(6);
    // Long after: the base again.
    expect(pauseSecondsOf({}, { pausedUntil: at - 5000, pauseSeconds: 4 }, clock, settings, () => 1)).toBe(4);
    // What the provider asks for, capped.
    expect(pauseSecondsOf({ retryAfterSeconds: 30 }, {}, clock, settings, () => 0)).toBe(6);
  });

  it('pauses for the time the provider names each time it names one, however often it refused before', () => {
    const settings = { baseSeconds: 4, maxSeconds: 300 };
    const at = clock.getTime();
    // A provider down for minutes that asks to be tried again in a second is tried again in a second,
    // so its recovery is seen a second after it comes, not a doubled backoff later.
    for (const last of [1, 8, 120]) {
      expect(
        pauseSecondsOf(
          { retryAfterSeconds: 1 },
          { pausedUntil: at - 500, pauseSeconds: last },
          clock,
          settings,
          () => 1,
        ),
      ).toBe(1);
    }
    expect(pauseSecondsOf({ retryAfterSeconds: 0 }, {}, clock, settings, () => 1)).toBe(1);
  });

  it('fails for good, with the code, when the provider rejects', async () => {
    const { step, deps } = setup({ job: { status: 'running' } });
    deps.provider.script.push(new ProviderRejectedError('bad prompt', 'provider_rejected_400'));
    await expect(step('submit')).rejects.toMatchObject({
      name: 'ProviderRejected',
      message: '[provider_rejected_400] bad prompt',
    });
  });

  it('resends with the same key after an ambiguous outcome when the provider deduplicates', async () => {
    const { step, current, deps } = setup({ job: { status: 'running' } });
    deps.provider.script.push(new AmbiguousSubmissionError('reset'));
    await expect(step('submit')).rejects.toMatchObject({ name: 'ProviderAmbiguous' });
    expect(current().submitIntent).toBeDefined();
    await step('submit', { retryCount: 1 });
    expect(deps.provider.submissions.map((s) => s.idempotencyKey)).toEqual([
      providerKeyOf(current()),
      providerKeyOf(current()),
    ]);
    expect(current().status).toBe('running');
  });

  it('resends an intent recorded before keys carried the creation time under the key it went out with', async () => {
    const { step, deps, job } = setup({
      job: { status: 'running', submitIntent: { attemptId: 'a0', at: clock.toISOString() } },
    });
    await step('submit', { retryCount: 1 });
    expect(deps.provider.submissions.map((s) => s.idempotencyKey)).toEqual([job.id]);
  });

  it('sends a job created again under an expired key under a key of its own', () => {
    const first = { id: 'job_aaaaaaaaaaaaaaaaaaaaaaaaaa', createdAt: '2026-01-01T00:00:00.000Z' };
    expect(providerKeyOf({ ...first, createdAt: '2026-03-01T00:00:00.000Z' })).not.toBe(providerKeyOf(first));
  });

  it('sends the job to review, not to the provider again, after an ambiguous outcome without deduplication', async () => {
    const { step, current, deps } = setup({ deduplicates: false, job: { status: 'running' } });
    deps.provider.script.push(new AmbiguousSubmissionError('timed out'));
    await expect(step('submit')).rejects.toMatchObject({ name: 'NeedsReview' });
    expect(current()).toMatchObject({ status: 'needs_review', error: { code: 'ambiguous_submission' } });
    expect(deps.provider.submissions).toHaveLength(1);
  });

  it('treats an intent left by a crashed attempt as ambiguous when the provider cannot deduplicate', async () => {
    const { step, current, deps } = setup({
      deduplicates: false,
      job: { status: 'running', submitIntent: { attemptId: 'a1', at: clock.toISOString() } },
    });
    await expect(step('submit')).rejects.toMatchObject({ name: 'NeedsReview' });
    expect(deps.provider.submissions).toHaveLength(0);
    expect(current().status).toBe('needs_review');
  });
});

describe('after an attempt with an unknown outcome (deduplicating provider)', () => {
  const unknown = { status: 'running' as const, submitIntent: { attemptId: 'a0', at: clock.toISOString() } };

  it('sends the job to review when a resend is rejected: the first attempt may have been accepted', async () => {
    const { step, current, deps } = setup({ job: unknown });
    deps.provider.script.push(new ProviderRejectedError('duplicate', 'provider_rejected_409'));
    await expect(step('submit')).rejects.toMatchObject({ name: 'NeedsReview' });
    expect(current()).toMatchObject({ status: 'needs_review', error: { code: 'ambiguous_submission' } });
  });

  it('keeps the unknown outcome on record when a resend finds the provider unavailable', async () => {
    const { step, current, deps } = setup({ job: unknown });
    deps.provider.script.push(new ProviderUnavailableError('503'));
    await expect(step('submit')).rejects.toMatchObject({ name: 'ProviderPaused' });
    // Back in line with its intent: its next run resends under the same key.
    expect(current()).toMatchObject({ status: 'queued' });
    expect(current().submitIntent).toBeDefined();
  });

  it('reviews instead of failing, and keeps the slot, when the workflow gives up', async () => {
    const { step, current, deps, job } = setup({ job: unknown });
    await deps.slots.acquire(slotHolderOf(job), 1);
    await step('fail', { error: { Error: 'ProviderUnavailable', Cause: '{"errorMessage":"503"}' } });
    expect(current()).toMatchObject({ status: 'needs_review', error: { code: 'ambiguous_submission' } });
    await step('release');
    expect(await deps.slots.holders()).toEqual([slotHolderOf(job)]);
  });

  it('reviews a job whose resends all ended unknown', async () => {
    const { step, current } = setup({ job: unknown });
    await step('review', { error: { Error: 'ProviderAmbiguous' } });
    expect(current()).toMatchObject({ status: 'needs_review', error: { code: 'ambiguous_submission' } });
  });
});

describe('await', () => {
  it('stores the task token and waits', async () => {
    const { step, current, deps } = setup({ job: { status: 'running', providerJobId: 'gen_1' } });
    await step('await', { taskToken: 't1' });
    expect(current().taskToken).toBe('t1');
    expect(deps.workflow.completed).toEqual([]);
  });

  it('resumes itself when the provider finished before the token was stored', async () => {
    const { step, deps } = setup({
      job: {
        status: 'running',
        providerJobId: 'gen_1',
        providerOutcome: { status: 'succeeded', at: clock.toISOString() },
      },
    });
    await step('await', { taskToken: 't1' });
    expect(deps.workflow.completed).toEqual([{ taskToken: 't1', output: { providerStatus: 'succeeded' } }]);
  });

  it('fails itself with the provider error when the provider job failed first', async () => {
    const { step, deps } = setup({
      job: {
        status: 'running',
        providerOutcome: {
          status: 'failed',
          error: { code: 'nsfw', message: 'refused' },
          at: clock.toISOString(),
        },
      },
    });
    await step('await', { taskToken: 't1' });
    expect(deps.workflow.failed).toEqual([
      { taskToken: 't1', error: 'ProviderJobFailed', cause: '[nsfw] refused' },
    ]);
  });
});

describe('finalize, release and notify', () => {
  it('stores the image, succeeds the job with progress 100 and a key for the URL', async () => {
    const { step, current, deps } = setup({ job: { status: 'running', providerJobId: 'gen_1' } });
    deps.provider.statuses.set('gen_1', {
      id: 'gen_1',
      status: 'succeeded',
      progress: 100,
      output: { image: { contentType: 'image/png', base64: PNG } },
    });
    await step('finalize');
    const key = `outputs/acme/${current().id}/image.png`;
    expect(current()).toMatchObject({ status: 'succeeded', progress: 100, result: { outputKey: key } });
    expect(deps.outputs.objects.get(key)?.contentType).toBe('image/png');
  });

  it('waits for a provider that is down when finalize reads its output: its grants pause and the step is tried again, the job still running', async () => {
    const { step, current, deps } = setup({ job: { status: 'running', providerJobId: 'gen_1' } });
    const down = readFailure(
      'longhaul-http',
      { kind: 'answered', status: 503, retryAfterSeconds: 6 },
      undefined,
    );
    let reads = 0;
    deps.provider.status = async () => {
      reads += 1;
      throw down;
    };
    await expect(step('finalize')).rejects.toMatchObject({ name: 'WaitingForProvider' });
    expect(current()).toMatchObject({ status: 'running', providerJobId: 'gen_1' });
    expect(await deps.slots.state()).toMatchObject({ pausedUntil: clock.getTime() + 6000, pauseSeconds: 6 });
    // A retry while the pause lasts does not ask the provider again.
    await expect(step('finalize', { retryCount: 1 })).rejects.toMatchObject({ name: 'WaitingForProvider' });
    expect(reads).toBe(1);
    // Once the pause is over the retry asks, and the job succeeds.
    deps.provider.status = ScriptedProvider.prototype.status;
    deps.provider.statuses.set('gen_1', {
      id: 'gen_1',
      status: 'succeeded',
      progress: 100,
      output: { image: { contentType: 'image/png', base64: PNG } },
    });
    const later = new Date(clock.getTime() + 6000);
    await runStep(
      { ...deps, now: () => later },
      { step: 'finalize', jobId: current().id, executionName: executionNameOf(current()), retryCount: 2 },
    );
    expect(current()).toMatchObject({ status: 'succeeded' });
  });

  it('finalizes from the output the completion webhook kept, without asking the provider', async () => {
    const keptKey = 'outputs/acme/kept/provider-output.json';
    const { step, current, deps } = setup({
      job: {
        status: 'running',
        providerJobId: 'gen_kept',
        providerOutcome: { status: 'succeeded', at: '2026-05-01T10:00:00.000Z', outputKey: keptKey },
      },
    });
    await deps.outputs.putOutput(
      keptKey,
      JSON.stringify({ image: { contentType: 'image/png', base64: PNG } }),
      'application/json',
    );
    // No status is scripted for gen_kept: asking the provider would throw.
    await step('finalize');
    const key = `outputs/acme/${current().id}/image.png`;
    expect(current()).toMatchObject({ status: 'succeeded', result: { outputKey: key } });
    expect(deps.outputs.objects.get(key)?.contentType).toBe('image/png');
  });

  it('parses a transcript into text and segments', async () => {
    const { step, current, deps } = setup({
      job: {
        status: 'running',
        providerJobId: 'gen_1',
        type: 'audio.transcribe',
        input: { audioUrl: 'https://a/b' },
      },
    });
    deps.provider.statuses.set('gen_1', {
      id: 'gen_1',
      status: 'succeeded',
      progress: 100,
      output: {
        transcript: {
          language: 'en',
          text: 'hello there',
          segments: [{ start: 0, end: 1, text: 'hello there' }],
        },
      },
    });
    await step('finalize');
    expect(current().result).toEqual({
      transcriptKey: `outputs/acme/${current().id}/transcript.json`,
      language: 'en',
      text: 'hello there',
      segments: 1,
    });
  });

  it('refuses an output it cannot use', async () => {
    const { step, deps } = setup({ job: { status: 'running', providerJobId: 'gen_1' } });
    deps.provider.statuses.set('gen_1', {
      id: 'gen_1',
      status: 'succeeded',
      progress: 100,
      output: { image: 'nope' },
    });
    await expect(step('finalize')).rejects.toMatchObject({ code: 'output_invalid' });
  });

  it('releases the slot once, and notifies finished jobs', async () => {
    const { step, deps, delivered, job } = setup({ job: { status: 'succeeded' } });
    await deps.slots.acquire(slotHolderOf(job), 1);
    await step('release');
    await step('release', { retryCount: 1 });
    expect(await deps.slots.holders()).toEqual([]);
    expect(deps.timeline.types(job.id).filter((t) => t === 'slot.released')).toHaveLength(1);
    await step('notify');
    expect(delivered).toEqual([`${job.id}:succeeded`]);
  });
});

describe('handing a released slot to the job whose turn it is', () => {
  const waiting = (id: string, createdAt: string): Job =>
    ({
      ...newJob(
        {
          id,
          tenantId: 'acme',
          type: 'image.generate',
          input: { prompt: 'a dog' },
          idempotencyKey: id,
          fingerprint: 'f',
        },
        new Date(createdAt),
      ),
    }) as Job;
  /** A queued job in its tenant's line, as intake leaves it. */
  const enter = async (deps: ReturnType<typeof setup>['deps'], ...jobs: Job[]) => {
    for (const queued of jobs) {
      deps.store.jobs.set(queued.id, queued);
      await deps.waiting.add(waitingEntryOf(queued));
    }
  };

  it('takes the freed slot for the oldest queued job and sends it to the dispatcher by the hand-off lane', async () => {
    const { step, deps, job } = setup({ job: { status: 'succeeded' } });
    const older = waiting('job_bbbbbbbbbbbbbbbbbbbbbbbbbb', '2026-05-01T09:00:00.000Z');
    const newer = waiting('job_cccccccccccccccccccccccccc', '2026-05-01T09:30:00.000Z');
    await enter(deps, newer, older);
    await deps.slots.acquire(slotHolderOf(job), 2);
    await deps.slots.acquire('job_dddddddddddddddddddddddddd', 2); // the pool is full

    await step('release');

    expect([...(await deps.slots.holders())].sort()).toEqual([
      slotHolderOf(older),
      'job_dddddddddddddddddddddddddd',
    ]);
    expect(deps.queue.messages).toEqual([
      { jobId: older.id, provider: 'longhaul-http', options: { handOff: true } },
    ]);
    expect(deps.store.jobs.get(older.id)?.enqueuedAt).toBe(clock.toISOString());
    expect(deps.timeline.types(job.id)).toEqual(['slot.released']);
    expect(deps.timeline.types(older.id)).toEqual(['slot.received']);
  });

  it('ends the probe after a pause once the provider takes it, and hands the free slots on at once', async () => {
    const { step, deps, job, current } = setup({ job: { status: 'running', probes: true } });
    const older = waiting('job_bbbbbbbbbbbbbbbbbbbbbbbbbb', '2026-05-01T09:00:00.000Z');
    await enter(deps, older);
    await deps.slots.pause({ until: new Date(clock.getTime() - 1000), seconds: 5, reason: '503' });
    // The first grant after the pause is the probe: no other grant goes until its time is up.
    expect(await deps.slots.acquire(slotHolderOf(job), 2)).toBe(true);
    expect((await deps.slots.state()).probeUntil).toBeGreaterThan(clock.getTime());

    await step('submit');

    expect(current().providerJobId).toBeDefined();
    expect([...(await deps.slots.holders())].sort()).toEqual([slotHolderOf(older), slotHolderOf(job)].sort());
    expect(deps.queue.messages).toEqual([
      { jobId: older.id, provider: 'longhaul-http', options: { handOff: true } },
    ]);
    expect(deps.timeline.types(older.id)).toEqual(['slot.received']);
  });

  it('records an accepted probe as accepted even when ending the probe fails: the probe then ends on its own', async () => {
    const { step, deps, job, current } = setup({
      job: { status: 'running', probes: true },
      deduplicates: false,
    });
    await deps.slots.pause({ until: new Date(clock.getTime() - 1000), seconds: 5, reason: '503' });
    expect(await deps.slots.acquire(slotHolderOf(job), 2)).toBe(true);
    deps.slots.pool('longhaul-http').endProbe = async () => {
      throw new Error('ProvisionedThroughputExceededException');
    };

    await expect(step('submit')).resolves.toBeNull();

    // Settled: a retry of the step would otherwise find its intent unsettled and send the job to review.
    expect(current().providerJobId).toBeDefined();
    expect(current().submitIntent).toBeUndefined();
  });

  const MACHINE = 'arn:aws:states:us-east-1:123456789012:stateMachine:Longhaul';

  it('starts the next job before it drops the pass of a tenant its release left idle, which it still drops', async () => {
    const { step, deps, job } = setup({ job: { status: 'succeeded', tenantId: 'globex' } });
    const older = waiting('job_bbbbbbbbbbbbbbbbbbbbbbbbbb', '2026-05-01T09:00:00.000Z');
    await enter(deps, older);
    const pool = deps.slots.pool(providerOf(job));
    await pool.acquire(slotHolderOf(job), 1, {
      tenant: 'globex',
      pass: { expected: undefined, next: 5, floor: 0 },
    });
    const forget = pool.forgetIdlePass.bind(pool);
    const startedBeforeForget: string[][] = [];
    pool.forgetIdlePass = async (tenant) => {
      startedBeforeForget.push([...deps.workflow.started]);
      await forget(tenant);
    };

    await step('release', { stateMachineArn: MACHINE });

    // The look at the idle tenant's line is off the hand-off's path: the next job has started by then.
    expect(startedBeforeForget).toEqual([[executionNameOf(older)]]);
    expect((await pool.state()).passes).toEqual({ acme: expect.any(Number) });
    expect(await pool.holders()).toEqual([slotHolderOf(older)]);
  });

  it('starts the chosen job on its own state machine at once, with no hand-off message', async () => {
    const { step, deps, job } = setup({ job: { status: 'succeeded' } });
    const older = waiting('job_bbbbbbbbbbbbbbbbbbbbbbbbbb', '2026-05-01T09:00:00.000Z');
    await enter(deps, older);
    await deps.slots.acquire(slotHolderOf(job), 1);

    await step('release', { stateMachineArn: MACHINE });

    expect(await deps.slots.holders()).toEqual([slotHolderOf(older)]);
    expect(deps.queue.messages).toEqual([]);
    expect(deps.workflow.started).toEqual([executionNameOf(older)]);
    expect(deps.workflow.machines.get(executionNameOf(older))).toBe(MACHINE);
    expect(deps.waiting.entries()).toEqual([]);
    // Its start is in its execution's history, not written here.
    expect(deps.timeline.types(older.id)).toEqual(['slot.received']);
  });

  it('sends the chosen job by the hand-off lane when its start fails, keeping its slot', async () => {
    const { step, deps, job } = setup({ job: { status: 'succeeded' } });
    const older = waiting('job_bbbbbbbbbbbbbbbbbbbbbbbbbb', '2026-05-01T09:00:00.000Z');
    await enter(deps, older);
    await deps.slots.acquire(slotHolderOf(job), 1);
    deps.workflow.failStarts = 1;

    await step('release', { stateMachineArn: MACHINE });

    expect(await deps.slots.holders()).toEqual([slotHolderOf(older)]);
    expect(deps.workflow.started).toEqual([]);
    expect(deps.queue.messages).toEqual([
      { jobId: older.id, provider: 'longhaul-http', options: { handOff: true } },
    ]);
  });

  it('fills every free slot, not only the one it freed', async () => {
    const { step, deps, job } = setup({ job: { status: 'succeeded' } });
    const jobs = ['b', 'c', 'e', 'f'].map((letter, i) =>
      waiting(`job_${letter.repeat(26)}`, `2026-05-01T09:0${i}:00.000Z`),
    );
    await enter(deps, ...jobs);
    // A limit of 3 with only this job holding one: two slots were left free by earlier lost races.
    (deps.maxInFlight as Record<string, number>)['longhaul-http'] = 3;
    await deps.slots.acquire(slotHolderOf(job), 3);

    await step('release', { stateMachineArn: MACHINE });

    expect(deps.workflow.started).toEqual(jobs.slice(0, 3).map((queued) => executionNameOf(queued)));
    expect((await deps.slots.holders()).length).toBe(3);
    expect(deps.waiting.entries().map((entry) => entry.jobId)).toEqual([jobs[3]?.id]);
  });

  it('passes over a queued job that already holds a slot, and never goes past the limit', async () => {
    const { step, deps, job } = setup({ job: { status: 'succeeded' } });
    const dispatched = waiting('job_bbbbbbbbbbbbbbbbbbbbbbbbbb', '2026-05-01T09:00:00.000Z');
    const next = waiting('job_cccccccccccccccccccccccccc', '2026-05-01T09:30:00.000Z');
    const last = waiting('job_eeeeeeeeeeeeeeeeeeeeeeeeee', '2026-05-01T09:45:00.000Z');
    await enter(deps, dispatched, next, last);
    await deps.slots.acquire(slotHolderOf(job), 2);
    await deps.slots.acquire(slotHolderOf(dispatched), 2);

    await step('release');
    await step('release', { retryCount: 1 }); // nothing left to free: no second hand-off

    expect([...(await deps.slots.holders())].sort()).toEqual([slotHolderOf(dispatched), slotHolderOf(next)]);
    expect(deps.queue.messages.map((m) => m.jobId)).toEqual([next.id]);
  });

  it('passes over a job that left its line another way, removing its entry, and holds no slot for it', async () => {
    const { step, deps, job } = setup({ job: { status: 'succeeded' } });
    const finished = waiting('job_bbbbbbbbbbbbbbbbbbbbbbbbbb', '2026-05-01T09:00:00.000Z');
    const next = waiting('job_cccccccccccccccccccccccccc', '2026-05-01T09:30:00.000Z');
    await enter(deps, finished, next);
    // Canceled while it waited: its entry is still in the line.
    deps.store.jobs.set(finished.id, { ...finished, status: 'canceled' } as Job);
    await deps.slots.acquire(slotHolderOf(job), 1);

    await step('release');

    expect(await deps.slots.holders()).toEqual([slotHolderOf(next)]);
    expect(deps.queue.messages.map((m) => m.jobId)).toEqual([next.id]);
    expect(deps.waiting.entries()).toEqual([]);
  });

  it('takes no slot for a job canceled between the read and the grant, and drops its entry', async () => {
    const { step, deps, job } = setup({ job: { status: 'succeeded' } });
    const raced = waiting('job_bbbbbbbbbbbbbbbbbbbbbbbbbb', '2026-05-01T09:00:00.000Z');
    await enter(deps, raced);
    const grant = deps.store.startWithSlot.bind(deps.store);
    deps.store.startWithSlot = async (request, at) => {
      // Canceled after the choice read it queued, before the grant's write.
      if (request.job.id === raced.id) deps.store.jobs.set(raced.id, { ...raced, status: 'canceled' } as Job);
      return grant(request, at);
    };
    await deps.slots.acquire(slotHolderOf(job), 1);

    await step('release');

    expect(await deps.slots.holders()).toEqual([]);
    expect(deps.queue.messages).toEqual([]);
    expect(deps.workflow.started).toEqual([]);
    expect(deps.waiting.entries()).toEqual([]);
  });

  it('hands off nothing while the slot stays held for an unresolved submission, or when nobody waits', async () => {
    const { step, deps, job } = setup({
      deduplicates: false,
      job: { status: 'running', submitIntent: { attemptId: 'a1', at: clock.toISOString() } },
    });
    const queued = waiting('job_bbbbbbbbbbbbbbbbbbbbbbbbbb', '2026-05-01T09:00:00.000Z');
    deps.store.jobs.set(queued.id, queued);
    await deps.slots.acquire(slotHolderOf(job), 2);
    await deps.slots.acquire('job_dddddddddddddddddddddddddd', 2);
    await step('release');
    expect(deps.queue.messages).toEqual([]);
    expect(await deps.slots.holders()).toContain(slotHolderOf(job));

    const idle = setup({ job: { status: 'succeeded' } });
    await idle.deps.slots.acquire(slotHolderOf(idle.job), 2);
    await idle.step('release');
    expect(idle.deps.queue.messages).toEqual([]);
    expect(await idle.deps.slots.holders()).toEqual([]);
  });
});

describe('failure, review and settling', () => {
  it('records the caught error code on the job', async () => {
    const { step, current } = setup({ job: { status: 'running' } });
    await step('fail', {
      error: {
        Error: 'ProviderRejected',
        Cause: JSON.stringify({
          errorType: 'ProviderRejected',
          errorMessage: '[provider_rejected_400] bad prompt',
        }),
      },
    });
    expect(current()).toMatchObject({
      status: 'failed',
      error: { code: 'provider_rejected_400', message: 'bad prompt' },
      finishedAt: clock.toISOString(),
    });
  });

  it('does not overwrite a job another path already finished', async () => {
    const { step, current } = setup({ job: { status: 'canceled' } });
    await step('fail', { error: { Error: 'States.ALL' } });
    expect(current().status).toBe('canceled');
  });

  it('reviews a timed-out job, stops it at the provider and frees its slot', async () => {
    const { step, current, deps, job } = setup({ job: { status: 'running', providerJobId: 'gen_9' } });
    await deps.slots.acquire(slotHolderOf(job), 1);
    await step('review', { error: { Error: 'States.Timeout' } });
    expect(current()).toMatchObject({ status: 'needs_review', error: { code: 'provider_timeout' } });
    expect(deps.provider.canceled).toEqual(['gen_9']);
    expect(await deps.slots.holders()).toEqual([]);
  });

  it('keeps the slot of an ambiguous submission under review', async () => {
    const { step, deps, job } = setup({ job: { status: 'needs_review' } });
    await deps.slots.acquire(slotHolderOf(job), 1);
    await step('review', { error: { Error: 'NeedsReview' } });
    expect(await deps.slots.holders()).toEqual([slotHolderOf(job)]);
  });

  it('settles a job canceled while running: cancels at the provider and frees the slot', async () => {
    const { step, deps, job } = setup({ job: { status: 'canceled', providerJobId: 'gen_3' } });
    await deps.slots.acquire(slotHolderOf(job), 1);
    await step('settle');
    expect(deps.provider.canceled).toEqual(['gen_3']);
    expect(await deps.slots.holders()).toEqual([]);
  });

  it("lists the cancel's request before the provider's confirmation, which may come before its answer", async () => {
    const { step, deps, job } = setup({ job: { status: 'canceled', providerJobId: 'gen_3' } });
    let now = clock;
    deps.now = () => now;
    const cancel = deps.provider.cancel.bind(deps.provider);
    deps.provider.cancel = async (providerJobId) => {
      // The provider stops the job and its webhook lands while the cancel's answer is on its way back.
      now = new Date(clock.getTime() + 100);
      await applyProviderEvent(deps, job.id, { type: 'canceled', id: providerJobId }, submissionTagOf(job));
      await cancel(providerJobId);
      now = new Date(clock.getTime() + 200);
    };
    await step('settle');
    const events = await deps.timeline.list(job.id, '');
    expect([...events].sort((a, b) => a.at.localeCompare(b.at)).map((event) => event.type)).toEqual([
      'provider.cancel_requested',
      'provider.canceled',
    ]);
  });
});

describe('what an operator sees of refusals, pauses and failures', () => {
  /** The steps' observations of one kind or another, in order, with the deps that heard them. */
  function observed(options: Parameters<typeof setup>[0]) {
    const world = setup(options);
    const seen: Observation[] = [];
    const deps = { ...world.deps, observe: (observation: Observation) => void seen.push(observation) };
    const step = (name: StepEvent['step'], extra: Partial<StepEvent> = {}) =>
      runStep(deps, { step: name, jobId: world.job.id, executionName: executionNameOf(world.job), ...extra });
    const of = (...kinds: Observation['kind'][]) => seen.filter((o) => kinds.includes(o.kind));
    return { ...world, deps, step, of };
  }

  it('hears of every throttle answer at submit and the pause it leads to, with the provider, until when and why', async () => {
    const { step, deps, of } = observed({ job: { status: 'running' } });
    deps.provider.script.push(new ProviderUnavailableError('longhaul-http answered 429.', 7));

    await expect(step('submit')).rejects.toMatchObject({ name: 'ProviderPaused' });

    expect(of('throttled', 'paused')).toEqual([
      {
        kind: 'throttled',
        provider: 'longhaul-http',
        asked: 'submit',
        reason: 'longhaul-http answered 429.',
        retryAfterSeconds: 7,
      },
      {
        kind: 'paused',
        provider: 'longhaul-http',
        until: new Date(clock.getTime() + 7000).toISOString(),
        reason: 'longhaul-http answered 429.',
        started: true,
      },
    ]);
  });

  it('hears of a throttled status read and of the pause in force a later refusal meets', async () => {
    const { step, deps, of } = observed({ job: { status: 'running', providerJobId: 'gen_1' } });
    // A pause of two minutes in force, longer than the doubled backoff this refusal would start.
    const until = clock.getTime() + 120_000;
    await deps.slots
      .pool('longhaul-http')
      .pause({ until: new Date(until), seconds: 10, reason: 'an outage' });
    deps.provider.status = async () => {
      throw readFailure('longhaul-http', { kind: 'answered', status: 503 }, undefined);
    };

    await expect(step('finalize')).rejects.toMatchObject({ name: 'WaitingForProvider' });

    expect(of('throttled', 'paused')).toEqual([
      {
        kind: 'throttled',
        provider: 'longhaul-http',
        asked: 'status',
        reason: 'longhaul-http answered 503.',
      },
      {
        kind: 'paused',
        provider: 'longhaul-http',
        until: new Date(until).toISOString(),
        reason: 'an outage',
        started: false,
      },
    ]);
  });

  it('hears of every failed job and every job sent to review, with its error', async () => {
    const failing = observed({ job: { status: 'running' } });
    await failing.step('fail', {
      error: { Error: 'ProviderRejected', Cause: '[provider_rejected_400] bad prompt' },
    });
    expect(failing.of('finished')).toEqual([
      {
        kind: 'finished',
        jobType: 'image.generate',
        status: 'failed',
        error: { code: 'provider_rejected_400', message: 'bad prompt' },
      },
    ]);

    const reviewed = observed({ deduplicates: false, job: { status: 'running' } });
    reviewed.deps.provider.script.push(
      new AmbiguousSubmissionError('longhaul-http answered 500 without a job id.'),
    );
    await expect(reviewed.step('submit')).rejects.toMatchObject({ name: 'NeedsReview' });
    expect(reviewed.of('finished')).toEqual([
      {
        kind: 'finished',
        jobType: 'image.generate',
        status: 'needs_review',
        error: { code: 'ambiguous_submission', message: 'longhaul-http answered 500 without a job id.' },
      },
    ]);
  });
});

describe('events on the bus', () => {
  const eventsOf = (deps: { events: MemoryEvents }) =>
    deps.events.published.map((event) => `${event.detailType} ${event.detail.eventId}`);

  it('puts one job.succeeded event when a job finishes, before its webhook, and the same again on a retry', async () => {
    const { step, current, deps, delivered } = setup({ job: { status: 'running', providerJobId: 'gen_1' } });
    deps.provider.statuses.set('gen_1', {
      id: 'gen_1',
      status: 'succeeded',
      progress: 100,
      output: { image: { contentType: 'image/png', base64: PNG } },
    });
    await step('finalize');
    expect(deps.events.published).toEqual([]);
    await step('notify');
    expect(deps.events.published).toEqual([
      {
        detailType: 'job.succeeded',
        detail: expect.objectContaining({
          schemaVersion: 1,
          tenantId: 'acme',
          jobId: current().id,
          jobType: 'image.generate',
          idempotencyKey: 'k1',
          status: 'succeeded',
          finishedAt: clock.toISOString(),
          occurredAt: clock.toISOString(),
        }),
      },
    ]);
    expect(delivered).toEqual([`${current().id}:succeeded`]);
    // A retried notify (its webhook failed) puts the event again, under the same id, for consumers to drop.
    await step('notify', { retryCount: 1 });
    const [first, second] = eventsOf(deps);
    expect(second).toBe(first);
    expect(deps.events.published).toHaveLength(2);
  });

  it('puts job.failed with the error after the failure path, and job.canceled after the settle path', async () => {
    const failing = setup({ job: { status: 'running' } });
    await failing.step('fail', {
      error: { Error: 'ProviderRejected', Cause: '[provider_rejected_400] bad prompt' },
    });
    await failing.step('notify');
    expect(failing.deps.events.published).toEqual([
      {
        detailType: 'job.failed',
        detail: expect.objectContaining({
          status: 'failed',
          error: { code: 'provider_rejected_400', message: 'bad prompt' },
        }),
      },
    ]);
    const canceled = setup({ job: { status: 'canceled', finishedAt: clock.toISOString() } });
    await canceled.step('settle');
    await canceled.step('notify');
    expect(canceled.deps.events.detailTypes()).toEqual(['job.canceled']);
  });

  it('retries the notify step, webhook unsent, when the bus did not take the event', async () => {
    const { step, deps, delivered } = setup({
      job: { status: 'succeeded', finishedAt: clock.toISOString() },
    });
    deps.events.failures = 1;
    await expect(step('notify')).rejects.toThrow('The bus did not take the events.');
    expect(delivered).toEqual([]);
    await step('notify', { retryCount: 1 });
    expect(deps.events.detailTypes()).toEqual(['job.succeeded']);
    expect(delivered).toHaveLength(1);
  });

  it('puts job.needs_review once when a job goes to review, and again only on a retry of the review step', async () => {
    const { step, current, deps } = setup({ job: { status: 'running', providerJobId: 'gen_9' } });
    await step('review', { error: { Error: 'States.Timeout' } });
    expect(deps.events.published).toEqual([
      {
        detailType: 'job.needs_review',
        detail: expect.objectContaining({
          status: 'needs_review',
          error: expect.objectContaining({ code: 'provider_timeout' }),
        }),
      },
    ]);
    expect(current().status).toBe('needs_review');
    await step('review', { error: { Error: 'States.Timeout' }, retryCount: 1 });
    expect(eventsOf(deps)).toEqual([eventsOf(deps)[0], eventsOf(deps)[0]]);
  });

  it('puts nothing for a job that is still running, nor for a chunk job a workflow made', async () => {
    const running = setup({ job: { status: 'running' } });
    await running.step('notify');
    expect(running.deps.events.published).toEqual([]);
    const chunk = setup({
      job: { status: 'succeeded', parent: { jobId: 'job_pppppppppppppppppppppppppp', index: 0 } },
    });
    await chunk.step('notify');
    expect(chunk.deps.events.published).toEqual([]);
  });
});

describe('follow-ups', () => {
  const imageGenerate = jobTypeModule('image.generate') as { followUps?: readonly FollowUp[] };
  afterEach(() => {
    delete imageGenerate.followUps;
  });

  it("starts a succeeded job's follow-up once however often notify runs, and records it on the job", async () => {
    imageGenerate.followUps = [
      {
        name: 'again',
        jobType: 'image.generate',
        input: ({ input }) => ({ prompt: `${input.prompt}, again` }),
      },
    ];
    const { step, deps, job } = setup({ job: { status: 'succeeded', finishedAt: clock.toISOString() } });
    await step('notify');
    await step('notify', { retryCount: 1 });
    const made = [...deps.intake.store.jobs.values()].filter((other) => other.id !== job.id);
    expect(made).toEqual([
      expect.objectContaining({
        idempotencyKey: `follow-up:${job.id}:again`,
        tenantId: 'acme',
        input: { prompt: 'a cat, again' },
      }),
    ]);
    expect(deps.timeline.types(job.id)).toEqual([
      'follow-up.submitted',
      'webhook.delivered',
      'webhook.delivered',
    ]);
  });

  it('starts none for a job that failed', async () => {
    imageGenerate.followUps = [{ name: 'again', jobType: 'image.generate', input: () => ({ prompt: 'x' }) }];
    const { step, deps } = setup({ job: { status: 'failed', finishedAt: clock.toISOString() } });
    await step('notify');
    expect(deps.intake.store.jobs.size).toBe(1);
  });
});

describe('a cancel at a provider that cannot stop jobs', () => {
  it('asks nothing of the provider, keeps the slot while the provider runs the job out, and keeps no output', async () => {
    const { step, deps, job } = setup({
      job: { type: 'audio.transcribe', provider: 'deepgram', status: 'canceled', providerJobId: 'dg_1' },
    });
    await deps.slots.acquire(slotHolderOf(job), 1);
    await deps.outputs.putOutput(`${jobOutputPrefix(job)}provider-output-x.json`, '{}', 'application/json');

    await step('settle');

    expect(deps.provider.canceled).toEqual([]);
    expect(await deps.slots.holders()).toEqual([slotHolderOf(job)]);
    expect([...deps.outputs.objects.keys()]).toEqual([]);
  });
});

describe('await-children', () => {
  const parentId = 'job_aaaaaaaaaaaaaaaaaaaaaaaaaa';
  const childId = 'job_bbbbbbbbbbbbbbbbbbbbbbbbbb';
  function canceling() {
    const world = setup({
      job: {
        type: 'audio.publish',
        provider: 'deepgram',
        input: { audioRef: 'upl_x' },
        status: 'running',
        startedAt: clock.toISOString(),
        cancelRequestedAt: clock.toISOString(),
      },
    });
    const child = {
      ...newJob(
        {
          id: childId,
          tenantId: 'acme',
          type: 'audio.publish.chunk',
          provider: 'deepgram',
          input: { chunkKey: 'k' },
          idempotencyKey: 'chunk-0',
          fingerprint: 'f',
          parent: { jobId: parentId, index: 0 },
        },
        clock,
      ),
      status: 'canceled' as const,
      providerJobId: 'dg_1',
    };
    world.deps.store.jobs.set(child.id, child);
    return { ...world, child };
  }

  it('waits while a canceled child still runs at its provider, then cancels the job once it ended, leaving no outputs or vectors', async () => {
    const { step, deps, current, child, job } = canceling();
    await deps.timeline.record(job.id, {
      at: clock.toISOString(),
      type: 'chunk.submitted',
      detail: `chunk 0 as ${childId}`,
    });
    await deps.outputs.putOutput(
      `${jobOutputPrefix(job)}hls/master.m3u8`,
      '#EXTM3U',
      'application/vnd.apple.mpegurl',
    );
    await deps.outputs.putOutput(vectorsManifestKey(job), JSON.stringify({ count: 1 }), 'application/json');
    await deps.vectors.put([{ key: vectorKeyOf(job, 0), data: [1], metadata: {} as never }]);

    await step('await-children', { taskToken: 'wait-1' });

    expect(current()).toMatchObject({ status: 'running', taskToken: 'wait-1' });
    expect(deps.workflow.completed).toEqual([]);
    expect(deps.outputs.objects.size).toBe(2);

    // Deepgram ran it out; woken, the state looks again with a new token.
    deps.store.jobs.set(child.id, {
      ...child,
      providerOutcome: { status: 'succeeded', at: clock.toISOString(), providerJobId: 'dg_1' },
    });
    await step('await-children', { taskToken: 'wait-2' });

    expect(current()).toMatchObject({ status: 'canceled', finishedAt: clock.toISOString() });
    expect(deps.workflow.completed).toEqual([{ taskToken: 'wait-2', output: {} }]);
    expect(deps.outputs.objects.size).toBe(0);
    expect(deps.vectors.vectors.size).toBe(0);
    expect(deps.timeline.types(job.id)).toContain('job.canceled');
  });

  it('ends a canceled publish canceled when one of its steps fails meanwhile, never failed', async () => {
    // Its item deleted mid-publish: a chunk the cancel stopped at its provider came back failed, so the
    // state waiting for it failed, after the cancel was asked for.
    const { step, deps, current, child, job } = canceling();
    deps.store.jobs.set(child.id, {
      ...child,
      providerOutcome: { status: 'failed', at: clock.toISOString(), providerJobId: 'dg_1' },
    });
    await deps.timeline.record(job.id, {
      at: clock.toISOString(),
      type: 'chunk.submitted',
      detail: `chunk 0 as ${childId}`,
    });

    await expect(
      step('fail', { error: { Error: 'ChunkFailed', Cause: '[chunk_failed] Chunk 0 failed: stopped.' } }),
    ).rejects.toThrow(`Job ${job.id} is canceling.`);
    expect(current()).toMatchObject({ status: 'running', cancelRequestedAt: clock.toISOString() });
    await step('await-children', { taskToken: 'wait-1' });

    expect(current()).toMatchObject({ status: 'canceled', finishedAt: clock.toISOString() });
    expect(current().error ?? null).toBeNull();
    expect(deps.timeline.types(job.id)).toContain('job.canceled');
  });

  it('goes straight on for a job settled elsewhere, touching nothing', async () => {
    const { step, deps, current } = canceling();
    deps.store.jobs.set(current().id, { ...current(), status: 'failed' });

    await step('await-children', { taskToken: 'wait-1' });

    expect(deps.workflow.completed).toEqual([{ taskToken: 'wait-1', output: {} }]);
    expect(current().status).toBe('failed');
  });

  it('never ends the wait of a job that goes on: its execution fails, and the reconciler runs it on from where it is', async () => {
    const { step, deps, current } = canceling();
    const { cancelRequestedAt: _asked, ...goingOn } = current();
    deps.store.jobs.set(goingOn.id, goingOn);

    await expect(step('await-children', { taskToken: 'wait-1' })).rejects.toThrow(
      `Job ${goingOn.id} goes on: it has no canceled children to wait for.`,
    );

    expect(deps.workflow.completed).toEqual([]);
    expect(current()).toMatchObject({ status: 'running' });
  });
});

describe('jobErrorOf', () => {
  it.each([
    [
      { Error: 'States.Timeout', Cause: 'Task timed out' },
      { code: 'timeout', message: 'Task timed out' },
    ],
    [
      { Error: 'ProviderUnavailable', Cause: '{"errorMessage":"Provider answered 503."}' },
      { code: 'provider_unavailable', message: 'Provider answered 503.' },
    ],
    [
      { Error: 'ProviderJobFailed', Cause: '[generation_failed] The model crashed' },
      { code: 'generation_failed', message: 'The model crashed' },
    ],
    [undefined, { code: 'internal_error', message: 'States.Runtime' }],
  ])('maps %j to %j', (caught, expected) => {
    expect(jobErrorOf(caught)).toEqual(expected);
  });
});

describe('a job the provider accepted', () => {
  const bookkeeping = { Error: 'Lambda.TooManyRequestsException', Cause: 'Rate exceeded' };

  it.each([
    ['the await step was throttled', bookkeeping],
    ['the token write failed', { Error: 'ProvisionedThroughputExceededException', Cause: 'slow down' }],
    ['finalize met a lagging status', { Error: 'ProviderUnavailable', Cause: 'Provider reports running' }],
  ])('goes to review, not failed, and keeps its slot, when %s', async (_case, error) => {
    const { step, current, deps, job } = setup({ job: { status: 'running', providerJobId: 'gen_1' } });
    await deps.slots.acquire(slotHolderOf(job), 2);

    await step('fail', { error });
    await step('release');

    expect(current()).toMatchObject({ status: 'needs_review', error: { code: 'accepted_then_interrupted' } });
    expect(await deps.slots.holders()).toEqual([slotHolderOf(job)]);
  });

  it('fails for its true outcome: the provider failed it', async () => {
    const { step, current, deps, job } = setup({
      job: {
        status: 'running',
        providerJobId: 'gen_1',
        providerOutcome: {
          status: 'failed',
          error: { code: 'oom', message: 'ran out' },
          at: clock.toISOString(),
        },
      },
    });
    await deps.slots.acquire(slotHolderOf(job), 2);

    await step('fail', { error: { Error: 'ProviderJobFailed', Cause: '[oom] ran out' } });
    await step('release');

    expect(current()).toMatchObject({ status: 'failed', error: { code: 'oom' } });
    expect(await deps.slots.holders()).toEqual([]);
  });

  it("keeps a failed job's outputs for a resume, and takes a failed publish's passages out of the search index, also on a retry", async () => {
    const { step, current, deps, job } = setup({ job: { status: 'running', type: 'audio.publish' } });
    const outputs = deps.outputs as MemoryOutputs;
    const vectors = deps.vectors as MemoryVectorIndex;
    const vectorFor = (key: string) => ({
      key,
      data: [1, 0],
      metadata: {
        tenant: 'acme',
        item: job.id,
        date: 0,
        labels: [],
        passage: 0,
        start: 0,
        end: 1,
        text: 'x',
      },
    });
    const stream = `outputs/acme/${job.id}/hls/master.m3u8`;
    await outputs.putOutput(stream, '#EXTM3U', 'application/vnd.apple.mpegurl');
    await outputs.putOutput(vectorsManifestKey(job), JSON.stringify({ count: 2 }), 'application/json');
    await vectors.put([0, 1].map((passage) => vectorFor(`acme/${job.id}/${passage}`)));
    const failure = { error: { Error: 'ChunkFailed', Cause: '[chunk_failed] chunk 2 failed twice' } };

    await step('fail', failure);
    expect(current()).toMatchObject({ status: 'failed', error: { code: 'chunk_failed' } });
    expect([...outputs.objects.keys()]).toEqual([stream]);
    expect(vectors.vectors.size).toBe(0);

    await outputs.putOutput(vectorsManifestKey(job), JSON.stringify({ count: 2 }), 'application/json');
    await step('fail', failure);
    expect([...outputs.objects.keys()]).toEqual([stream]);
  });

  it("deletes the outputs of a job failed by its input, also on a retry, and no other job's", async () => {
    const { step, current, deps, job } = setup({ job: { status: 'running' } });
    const outputs = deps.outputs as MemoryOutputs;
    const mine = `outputs/acme/${job.id}/hls/master.m3u8`;
    const others = `outputs/acme/${job.id}x/transcript.json`;
    await outputs.putOutput(mine, '#EXTM3U', 'application/vnd.apple.mpegurl');
    await outputs.putOutput(others, '{}', 'application/json');

    await step('fail', { error: { Error: 'InvalidJobInput', Cause: '[input_invalid] not audio' } });
    expect(current()).toMatchObject({ status: 'failed', error: { code: 'input_invalid' } });
    expect([...outputs.objects.keys()]).toEqual([others]);

    await outputs.putOutput(mine, '#EXTM3U', 'application/vnd.apple.mpegurl');
    await step('fail', { error: { Error: 'InvalidJobInput', Cause: '[input_invalid] not audio' } });
    expect([...outputs.objects.keys()]).toEqual([others]);
  });

  it('keeps the outputs of a job that goes to review instead of failing', async () => {
    const { step, current, deps, job } = setup({ job: { status: 'running', providerJobId: 'gen_1' } });
    const outputs = deps.outputs as MemoryOutputs;
    await outputs.putOutput(`outputs/acme/${job.id}/transcript.json`, '{}', 'application/json');
    await step('fail', { error: { Error: 'States.Timeout' } });
    expect(current().status).toBe('needs_review');
    expect(outputs.objects.size).toBe(1);
  });

  it('is not checked again by a restarted run, whose presigned input may have expired', async () => {
    const { step, deps } = setup({
      job: {
        status: 'running',
        type: 'audio.transcribe',
        input: { audioUrl: 'https://a.example/x.mp3' },
        providerJobId: 'gen_1',
      },
    });
    deps.probeUrl = async () => {
      throw new Error('403 Forbidden: the link expired');
    };
    await expect(step('prepare')).resolves.toEqual({ flow: 'submission' });
  });

  it('keeps its outcome when the timeline write after acceptance fails', async () => {
    const { step, current, deps } = setup({ job: { status: 'running' } });
    const record = deps.timeline.record.bind(deps.timeline);
    deps.timeline.record = async (jobId, event) => {
      if (event.type === 'provider.accepted') throw new Error('timeline unavailable');
      return record(jobId, event);
    };
    await expect(step('submit')).rejects.toThrow('timeline unavailable');
    expect(current()).toMatchObject({ providerJobId: 'gen_1' });
    expect(current().submitIntent).toBeUndefined();
  });
});

describe('two invocations of submit at once', () => {
  it('send one submission to a provider that cannot deduplicate', async () => {
    const { step, deps } = setup({ deduplicates: false, job: { status: 'running' } });
    // The retry starts while the first invocation is still waiting for the provider.
    let answer: (value: { providerJobId: string }) => void = () => {};
    deps.provider.submit = async (submission) => {
      deps.provider.submissions.push(submission);
      return new Promise((resolve) => {
        answer = resolve;
      });
    };
    // Both read the job before either records its intent.
    const first = step('submit');
    const second = step('submit', { retryCount: 1 });

    await expect(second).rejects.toMatchObject({ name: 'ProviderAmbiguous' });
    answer({ providerJobId: 'gen_1' });
    await first;

    expect(deps.provider.submissions).toHaveLength(1);
    // The retry of the losing invocation finds what the other learned, and sends nothing.
    await step('submit', { retryCount: 2 });
    expect(deps.provider.submissions).toHaveLength(1);
  });
});

describe('an old run', () => {
  it('frees nothing of the run an operator requeued it into', async () => {
    const { step, deps, job } = setup({ job: { status: 'running', resubmissions: 1, runs: 1 } });
    await deps.slots.acquire(slotHolderOf(job), 2);

    // The first run's execution, still going after the requeue, reaches its release step.
    await step('release', { executionName: executionNameOf({ ...job, runs: undefined }) });

    expect(await deps.slots.holders()).toEqual([slotHolderOf(job)]);
  });

  it('is not the run of a job created again under the same key after the first expired', () => {
    const first = { id: 'job_aaaaaaaaaaaaaaaaaaaaaaaaaa', createdAt: '2026-01-01T00:00:00.000Z' };
    const again = { ...first, createdAt: '2026-03-01T00:00:00.000Z' };
    expect(executionNameOf(again)).not.toBe(executionNameOf(first));
    expect(slotHolderOf(again)).not.toBe(slotHolderOf(first));
  });
});

describe('a slot taken before slots were named by submission', () => {
  it('is given back by the release step as the job’s own', async () => {
    const { step, deps, job } = setup({ job: { status: 'succeeded' } });
    await deps.slots.acquire(job.id, 2);
    await step('release');
    expect(await deps.slots.holders()).toEqual([]);
  });
});

describe('park (where a failed job waits for a resume)', () => {
  it('fails the execution while the job is failed, or is anything but running again', async () => {
    for (const status of ['failed', 'needs_review', 'canceled'] as const) {
      const { step, deps } = setup({ job: { status } });
      await expect(step('park', { failedAt: 'submit' })).rejects.toMatchObject({ name: 'JobFailed' });
      expect(await deps.slots.holders()).toEqual([]);
    }
  });

  it('lets a resumed job go back to a step that ran with its slot, once it has taken the slot again', async () => {
    const { step, deps, job } = setup({
      job: {
        status: 'running',
        resumes: 1,
        startedAt: clock.toISOString(),
        resumedAt: '2026-05-01T10:30:00.000Z',
      },
    });
    await expect(step('park', { failedAt: 'submit' })).resolves.toBeNull();
    expect(await deps.slots.holders()).toEqual([slotHolderOf(job)]);
    // A retry of the step keeps the one slot.
    await expect(step('park', { failedAt: 'submit' })).resolves.toBeNull();
    expect(await deps.slots.holders()).toEqual([slotHolderOf(job)]);
  });

  it('never passes the limit: with every slot held, the resume waits (SlotUnavailable, retried)', async () => {
    const { step, deps, job } = setup({ job: { status: 'running', resumes: 1 } });
    await deps.slots.acquire('job_other1-x.0', 2);
    await deps.slots.acquire('job_other2-x.0', 2);
    await expect(step('park', { failedAt: 'prepare' })).rejects.toMatchObject({ name: 'SlotUnavailable' });
    expect(await deps.slots.holders()).not.toContain(slotHolderOf(job));
  });

  it('takes no slot to go back to finalize, which runs after the provider is done', async () => {
    const { step, deps } = setup({ job: { status: 'running', resumes: 1, providerJobId: 'gen_1' } });
    await expect(step('park', { failedAt: 'finalize' })).resolves.toBeNull();
    expect(await deps.slots.holders()).toEqual([]);
  });

  it('is not fooled by an execution of an earlier run', async () => {
    const { step } = setup({ job: { status: 'running', resumes: 1 } });
    await expect(step('park', { failedAt: 'finalize', executionName: 'an-older-run' })).rejects.toMatchObject(
      {
        name: 'JobFailed',
      },
    );
  });
});

describe('park, for a resumed job that goes back to a step that ran with its slot', () => {
  const resumedAt = '2026-05-01T10:30:00.000Z';
  /** A job resumed after its submit was refused, its tenant `acme` at a cap of 1, and a slot of 2 held by `acme`. */
  async function resumed(options: { readonly cap?: number } = {}) {
    const store = new MemoryStore();
    const job = sampleJob(clock, {
      status: 'running',
      startedAt: clock.toISOString(),
      resumes: 1,
      resumedAt,
      statusAt: resumedAt,
    });
    store.jobs.set(job.id, job);
    const deps = memoryWorkflowDeps(
      { store, provider: new ScriptedProvider(true), clock },
      {
        tenantShares: memoryTenantShares(
          options.cap === undefined ? {} : { acme: { weight: 1, maxInFlight: options.cap } },
        ),
        queue: new MemoryQueue(),
        workflow: new MemoryWorkflow(),
      },
    );
    // Where the failure path parked it.
    deps.workflow.statuses.set(executionNameOf(job), 'FAILED');
    const step = (extra: Partial<StepEvent> = {}) =>
      runStep(deps, {
        step: 'park',
        jobId: job.id,
        executionName: executionNameOf(job),
        failedAt: 'submit',
        ...extra,
      });
    const queued = (id: string, createdAt: Date, tenantId = 'acme') => {
      const other = sampleJob(createdAt, { id, tenantId, status: 'queued' });
      store.jobs.set(other.id, other);
      return other;
    };
    return { deps, store, job, step, queued };
  }

  it('takes no slot past its tenant’s cap: it waits in its tenant’s line, and its execution parks again', async () => {
    const { deps, job, step } = await resumed({ cap: 1 });
    await deps.slots.acquire('job_bbbbbbbbbbbbbbbbbbbbbbbbbb-x.0', 2, { tenant: 'acme' });

    await expect(step()).rejects.toMatchObject({ name: 'SlotUnavailable' });

    expect(await deps.slots.holders()).toEqual(['job_bbbbbbbbbbbbbbbbbbbbbbbbbb-x.0']);
    expect(await deps.waiting.head('longhaul-http', 'acme', 10)).toEqual([waitingEntryOf(job)]);
  });

  it('waits at the place its submission gave it: a freed slot goes to it before newer jobs, and its grant redrives its execution', async () => {
    const { deps, store, job, step, queued } = await resumed();
    const holder = sampleJob(clock, {
      id: 'job_hhhhhhhhhhhhhhhhhhhhhhhhhh',
      tenantId: 'globex',
      status: 'succeeded',
      providerJobId: 'gen_h',
      providerOutcome: { status: 'succeeded', at: clock.toISOString() },
    });
    store.jobs.set(holder.id, holder);
    await deps.slots.acquire(slotHolderOf(holder), 2, { tenant: 'globex' });
    await deps.slots.acquire('job_gggggggggggggggggggggggggg-x.0', 2, { tenant: 'globex' });
    // A backlog of newer jobs of the same tenant, in line before the resume.
    const newer = [
      queued('job_nnnnnnnnnnnnnnnnnnnnnnnnn1', new Date('2026-05-01T10:20:00.000Z')),
      queued('job_nnnnnnnnnnnnnnnnnnnnnnnnn2', new Date('2026-05-01T10:25:00.000Z')),
    ];
    for (const other of newer) await deps.waiting.add(waitingEntryOf(other));

    await expect(step()).rejects.toMatchObject({ name: 'SlotUnavailable' });
    await runStep(deps, { step: 'release', jobId: holder.id, executionName: executionNameOf(holder) });

    expect(await deps.slots.holders()).toEqual(['job_gggggggggggggggggggggggggg-x.0', slotHolderOf(job)]);
    expect(newer.map((other) => store.jobs.get(other.id)?.status)).toEqual(['queued', 'queued']);
    // Its grant goes to the dispatcher, which redrives the parked execution under the grant's own token.
    expect(deps.queue.messages).toEqual([
      { jobId: job.id, provider: 'longhaul-http', options: { handOff: true } },
    ]);
    expect(await deps.waiting.head('longhaul-http', 'acme', 10)).toEqual(newer.map(waitingEntryOf));
    await startJob(deps, store.jobs.get(job.id) as Job);
    expect(deps.workflow.redriven).toEqual([`${executionNameOf(job)}/resume-1-slot`]);
    expect(deps.workflow.started).toEqual([]);
    // Run again by that redrive, park lets the execution go on.
    await expect(step()).resolves.toBeNull();
  });
});
