import { DescribeExecutionCommand, GetExecutionHistoryCommand, type HistoryEvent } from '@aws-sdk/client-sfn';
import { DynamoDbJobStore } from '../../lambdas/adapters/dynamodb-job-store';
import { executionNameOf, jobIdOf } from '../../lambdas/domain/job';
import {
  documentClient,
  pollUntil,
  type RunningLocalStack,
  sfnClient,
  startLocalStack,
} from '../../local/harness/local-stack';
import { apiCall, UNTHROTTLED_API } from './support/api';
import { simulatorCall } from './support/simulator';

/**
 * Resuming a failed job on the local stack (`POST /v1/jobs/{id}/resume`): its
 * execution is redriven from the step that failed, the steps before it are
 * not run again and the provider is charged once in all; a job that is not
 * failed, or needs review, is refused and left as it was.
 */

jest.setTimeout(120_000);

const KEY = 'resume-key-4b2d';
const ADMIN_KEY = 'resume-admin-key-4b2d';

interface Ledger {
  readonly submissions: readonly { id: string; idempotencyKey: string; acceptedAt: string }[];
  readonly maxConcurrent: number;
}

/** A job as the API answers it. */
type JobBody = any;

let stack: RunningLocalStack;
let submitted = 0;

beforeAll(async () => {
  stack = await startLocalStack({
    env: {
      LONGHAUL_API_KEYS: `${KEY}:acme`,
      LONGHAUL_ADMIN_KEY: ADMIN_KEY,
      ...UNTHROTTLED_API,
      SIM_PORT: '0',
      SIM_JOB_MS: '300',
      PROVIDER_TIMEOUT_MS: '1000',
      SLOT_WAIT_MAX_SECONDS: '1',
      // One slot: jobs resumed while another holds it must wait for it, and the ledger shows whether they did.
      MAX_IN_FLIGHT: '1',
      // A provider that cannot deduplicate: a submission whose answer is lost goes to review.
      SIM_IDEMPOTENT: '0',
      // The first three jobs to reach finalize fail there once, as for a provider output finalize cannot use.
      LONGHAUL_FAULT_UNUSABLE_OUTPUTS: '3',
      // A submission whose outcome is unknown holds the one slot until the job timeout has passed, whatever
      // an operator resolves: a short one, so the tests after the review's get it back soon.
      JOB_TIMEOUT_MS: '12000',
      AWAIT_HEARTBEAT_SECONDS: '10',
      RECONCILE_INTERVAL_MS: '1000',
    },
  });
});

afterAll(async () => {
  await stack?.stop();
});

const api = apiCall(() => stack.baseUrl, KEY);

const sim = (path: string, body?: unknown) => simulatorCall(stack.endpoints.providerUrl)(path, body);
const chargesFor = async (jobId: string) =>
  ((await sim('/_sim/ledger')) as Ledger).submissions.filter(
    (submission) => jobIdOf(submission.idempotencyKey) === jobId,
  ).length;

async function submit(): Promise<string> {
  const created = await api(
    'POST',
    '/v1/jobs',
    { type: 'image.generate', input: { prompt: 'a lighthouse at dusk' } },
    `resume-${Date.now()}-${++submitted}`,
  );
  expect(created.status).toBe(202);
  return created.body.id as string;
}

const until = (jobId: string, done: (job: JobBody) => boolean, description: string): Promise<JobBody> =>
  pollUntil(
    async () => {
      const { body } = await api('GET', `/v1/jobs/${jobId}`);
      return done(body) ? body : undefined;
    },
    { timeoutMs: 30_000, intervalMs: 100, description: `job ${jobId} ${description}` },
  );
const settled = (jobId: string) =>
  until(
    jobId,
    (job) => ['succeeded', 'failed', 'canceled', 'needs_review'].includes(job.status),
    'to settle',
  );

const executionArnOf = (job: JobBody) =>
  `${stack.endpoints.stateMachineArn.replace(':stateMachine:', ':execution:')}:${executionNameOf(job)}`;

async function historyOf(job: JobBody): Promise<HistoryEvent[]> {
  const { events = [] } = await sfnClient(stack.endpoints).send(
    new GetExecutionHistoryCommand({ executionArn: executionArnOf(job), maxResults: 1000 }),
  );
  return events;
}

/** The steps function's steps the events scheduled, in order. */
const stepsScheduled = (events: readonly HistoryEvent[]): string[] =>
  events.flatMap((event) => {
    const parameters = event.taskScheduledEventDetails?.parameters;
    return parameters ? [(JSON.parse(parameters) as { Payload: { step: string } }).Payload.step] : [];
  });

const describeExecution = (job: JobBody) =>
  sfnClient(stack.endpoints).send(new DescribeExecutionCommand({ executionArn: executionArnOf(job) }));

let resumedJob: JobBody;

test('a job failed at its last step resumes from there: it succeeds, earlier steps are not run again, one charge in all', async () => {
  const failed = await settled(await submit());
  expect(failed).toMatchObject({ status: 'failed', error: { code: 'output_invalid' } });
  expect(await chargesFor(failed.id)).toBe(1);
  // The job is failed a step before its execution is: the execution ends at its park task.
  await pollUntil(async () => (await describeExecution(failed)).status === 'FAILED', {
    description: `${failed.id}'s execution to end`,
  });
  const before = await historyOf(failed);
  expect(stepsScheduled(before)).toEqual([
    'prepare',
    'submit',
    'await',
    'release',
    'finalize',
    'fail',
    'notify',
    'release',
    'park',
  ]);
  expect(await describeExecution(failed)).toMatchObject({ status: 'FAILED', error: 'JobFailed' });

  const resumed = await api('POST', `/v1/jobs/${failed.id}/resume`);
  expect(resumed).toMatchObject({ status: 202, body: { id: failed.id, status: 'running', error: null } });
  expect(resumed.body.finishedAt).toBeUndefined();

  resumedJob = await settled(failed.id);
  expect(resumedJob).toMatchObject({ status: 'succeeded', progress: 100, error: null });
  expect(resumedJob.result).toEqual(expect.any(Object));
  // One submission to the provider, before the failure; the resume paid for nothing again.
  expect(await chargesFor(failed.id)).toBe(1);

  const execution = await describeExecution(resumedJob);
  expect(execution).toMatchObject({ status: 'SUCCEEDED', redriveCount: 1 });
  const history = await historyOf(resumedJob);
  const redriven = history.findIndex((event) => event.type === 'ExecutionRedriven');
  expect(history.filter((event) => event.type === 'ExecutionRedriven')).toHaveLength(1);
  // From the park task where it failed, back to finalize with the input it had, then on as a success.
  expect(stepsScheduled(history.slice(redriven))).toEqual(['park', 'finalize', 'notify']);
  expect(history.slice(0, redriven)).toEqual(before);

  const timeline = (await api('GET', `/v1/jobs/${failed.id}/events`)).body.items as { type: string }[];
  expect(timeline.map((event) => event.type)).toContain('job.resumed');
});

test('a resume that stopped between its write and its redrive is redriven by the reconciler, once', async () => {
  const failed = await settled(await submit());
  expect(failed).toMatchObject({ status: 'failed', error: { code: 'output_invalid' } });
  // A resume is written only once the job is failed; its execution ends a step later, at its park task.
  await pollUntil(async () => (await describeExecution(failed)).status === 'FAILED', {
    description: `${failed.id}'s execution to end`,
  });
  const store = new DynamoDbJobStore(documentClient(stack.endpoints), {
    tableName: stack.endpoints.jobTableName,
    retentionDays: 30,
  });
  // The resume's write, with no redrive after it: what a resume that crashed in between leaves.
  const record = await store.get(failed.id);
  expect(record && (await store.reopenFailed(record, new Date()))).toMatchObject({ status: 'running' });
  expect((await describeExecution(failed)).status).toBe('FAILED');

  const done = await until(failed.id, (job) => job.status !== 'running', 'to finish after the reconciler');

  expect(done).toMatchObject({ status: 'succeeded', error: null });
  // The job succeeds at finalize; its execution ends a step later, after notify.
  await pollUntil(async () => (await describeExecution(done)).status !== 'RUNNING', {
    description: `${failed.id}'s execution to end`,
  });
  expect(await describeExecution(done)).toMatchObject({ status: 'SUCCEEDED', redriveCount: 1 });
  expect(stepsScheduled(await historyOf(done)).slice(-3)).toEqual(['park', 'finalize', 'notify']);
  expect(await chargesFor(failed.id)).toBe(1);
  const timeline = (await api('GET', `/v1/jobs/${failed.id}/events`)).body.items as { type: string }[];
  expect(timeline.filter((event) => event.type === 'reconciler.redriven')).toHaveLength(1);
});

test('resuming a succeeded job is refused with 409 and changes nothing', async () => {
  expect(resumedJob?.status).toBe('succeeded');
  const refused = await api('POST', `/v1/jobs/${resumedJob.id}/resume`);
  expect(refused.status).toBe(409);
  expect(refused.body).toMatchObject({ code: 'job-not-resumable', status: 409 });
  // Its result's URLs are signed afresh on every read; the job itself is as it was.
  const { status, updatedAt, finishedAt, error } = (await api('GET', `/v1/jobs/${resumedJob.id}`)).body;
  expect({ status, updatedAt, finishedAt, error }).toEqual({
    status: 'succeeded',
    updatedAt: resumedJob.updatedAt,
    finishedAt: resumedJob.finishedAt,
    error: null,
  });
  expect((await describeExecution(resumedJob)).redriveCount).toBe(1);
});

test('resuming a running job is refused with 409 and changes nothing', async () => {
  await sim('/_sim/config', { jobMs: 60_000 });
  try {
    const id = await submit();
    const running = await until(id, (job) => job.status === 'running', 'to run');
    await pollUntil(async () => (await chargesFor(id)) === 1, { description: 'the job at the provider' });

    const refused = await api('POST', `/v1/jobs/${id}/resume`);

    expect(refused.status).toBe(409);
    expect(refused.body).toMatchObject({
      code: 'job-not-resumable',
      detail: expect.stringContaining('running'),
    });
    const after = (await api('GET', `/v1/jobs/${id}`)).body;
    expect(after).toMatchObject({ status: 'running', updatedAt: expect.any(String) });
    expect(after.updatedAt >= running.updatedAt).toBe(true);
    expect(await describeExecution(running)).toMatchObject({ status: 'RUNNING', redriveCount: 0 });
    expect(await chargesFor(id)).toBe(1);
    await api('POST', `/v1/jobs/${id}/cancel`);
  } finally {
    await sim('/_sim/config', { jobMs: 300 });
  }
});

test('a job in review is never resumed: it is refused, telling to resolve its review first', async () => {
  await sim('/_sim/faults', { mode: 'accept-then-drop', count: 1 });
  const inReview = await settled(await submit());
  expect(inReview).toMatchObject({ status: 'needs_review', error: { code: 'ambiguous_submission' } });

  const refused = await api('POST', `/v1/jobs/${inReview.id}/resume`);

  expect(refused.status).toBe(409);
  expect(refused.body).toMatchObject({
    code: 'job-not-resumable',
    detail: expect.stringMatching(/needs review.*resolves the review first/),
  });
  expect((await api('GET', `/v1/jobs/${inReview.id}`)).body).toEqual(inReview);
  expect((await describeExecution(inReview)).redriveCount).toBe(0);
  expect(await chargesFor(inReview.id)).toBe(1);

  // The provider ran it: an operator settles it so. Its slot stays held while the provider may be running
  // the submission; the reconciler frees it once the job timeout has passed since it was sent.
  const resolved = await fetch(`${stack.baseUrl}/v1/admin/jobs/${inReview.id}/resolve`, {
    method: 'POST',
    headers: { 'x-api-key': ADMIN_KEY, 'content-type': 'application/json' },
    body: JSON.stringify({ outcome: 'succeeded', note: 'the provider ran it' }),
  });
  expect(resolved.status).toBe(200);
});

test('a job an operator replayed is never resumed: the original names its replay, which alone runs, one charge each', async () => {
  const failed = await settled(await submit());
  expect(failed).toMatchObject({ status: 'failed', error: { code: 'output_invalid' } });

  const replay = await fetch(`${stack.baseUrl}/v1/admin/jobs/replay`, {
    method: 'POST',
    headers: { 'x-api-key': ADMIN_KEY, 'content-type': 'application/json' },
    body: JSON.stringify({ filter: { tenant: 'acme', status: ['failed'] }, note: 'after the outage' }),
  });
  expect(replay.status).toBe(200);
  const replayed = ((await replay.json()) as { jobs: { id: string; replayOf: string }[] }).jobs.find(
    (job) => job.replayOf === failed.id,
  );
  expect(replayed).toBeDefined();
  const replacement = replayed?.id as string;

  const refused = await api('POST', `/v1/jobs/${failed.id}/resume`);

  expect(refused.status).toBe(409);
  expect(refused.body).toMatchObject({
    code: 'job-not-resumable',
    detail: `Job ${failed.id} was replayed as job ${replacement}; follow that job instead.`,
  });
  expect((await api('GET', `/v1/jobs/${failed.id}`)).body).toEqual({ ...failed, replacedBy: replacement });
  expect(await settled(replacement)).toMatchObject({ status: 'succeeded', replayOf: failed.id });
  expect((await describeExecution(failed)).redriveCount).toBe(0);
  expect([await chargesFor(failed.id), await chargesFor(replacement)]).toEqual([1, 1]);
});

test('jobs refused at submit and resumed while the one slot is busy wait for it: the provider never runs two at once, and each succeeds', async () => {
  // Refused at submit, each failed at a step that runs with the slot: a resume goes back there. The
  // stack's three finalize faults are spent by the tests above, which run first (alone, this one's busy
  // job would meet one).
  await sim('/_sim/faults', { mode: 'reject', count: 3 });
  const refused = await Promise.all([submit(), submit(), submit()]);
  for (const id of refused) {
    const failed = await settled(id);
    expect(failed).toMatchObject({ status: 'failed', error: { code: 'provider_rejected_400' } });
    expect(await chargesFor(id)).toBe(0);
    await pollUntil(async () => (await describeExecution(failed)).status === 'FAILED', {
      description: `${id}'s execution to end`,
    });
  }
  await sim('/_sim/config', { jobMs: 3_000 });
  try {
    const busy = await submit();
    await pollUntil(async () => (await chargesFor(busy)) === 1, {
      description: 'the slot busy at the provider',
    });

    for (const id of refused) {
      expect(await api('POST', `/v1/jobs/${id}/resume`)).toMatchObject({
        status: 202,
        body: { id, status: 'running' },
      });
    }

    expect(await settled(busy)).toMatchObject({ status: 'succeeded' });
    for (const id of refused) {
      expect(await settled(id)).toMatchObject({ status: 'succeeded', error: null });
      expect(await chargesFor(id)).toBe(1);
    }
    expect(((await sim('/_sim/ledger')) as Ledger).maxConcurrent).toBe(1);
  } finally {
    await sim('/_sim/config', { jobMs: 300 });
  }
});
