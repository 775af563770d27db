import {
  DescribeExecutionCommand,
  ExecutionDoesNotExist,
  ExecutionNotRedrivable,
  GetExecutionHistoryCommand,
  type HistoryEvent,
  RedriveExecutionCommand,
  SFNClient,
} from '@aws-sdk/client-sfn';
import { mockClient } from 'aws-sdk-client-mock';
import { SfnWorkflow, stepEventsOf } from '../../lambdas/adapters/sfn-workflow';
import { jobTimeline, RUNNING_STEPS_FRESH_MS } from '../../lambdas/domain/intake';
import { executionNameOf } from '../../lambdas/domain/job';
import { sampleJob } from './support/jobs';
import { MemoryTimeline, MemoryWorkflow } from './support/memory-ports';

const MACHINE = 'arn:aws:states:us-east-1:123456789012:stateMachine:Longhaul';
const STEPS_FUNCTION = 'arn:aws:lambda:us-east-1:123456789012:function:longhaul-workflow';

let id = 0;
const at = (second: number) => new Date(Date.UTC(2026, 4, 1, 9, 0, second));
/** A task of the steps function as the history shows it: scheduled with its payload, then its end. */
const scheduled = (second: number, payload: Record<string, unknown>): HistoryEvent => ({
  id: ++id,
  timestamp: at(second),
  type: 'TaskScheduled',
  taskScheduledEventDetails: {
    resourceType: 'lambda',
    resource: 'invoke',
    region: 'us-east-1',
    parameters: JSON.stringify({ FunctionName: STEPS_FUNCTION, Payload: payload }),
  },
});
const event = (second: number, type: HistoryEvent['type'], details: Partial<HistoryEvent> = {}) =>
  ({ id: ++id, timestamp: at(second), type, ...details }) as HistoryEvent;

describe('a job’s step events, read from its execution’s history', () => {
  it('are each step’s start, retry, end and failure, with its attempt and error', () => {
    const history: HistoryEvent[] = [
      event(0, 'ExecutionStarted'),
      event(0, 'TaskStateEntered', { stateEnteredEventDetails: { name: 'prepare' } }),
      scheduled(1, { step: 'prepare', jobId: 'job_a', retryCount: 0 }),
      event(1, 'TaskStarted'),
      event(2, 'TaskSucceeded'),
      scheduled(3, { step: 'submit', jobId: 'job_a', retryCount: 0 }),
      event(4, 'TaskFailed', {
        taskFailedEventDetails: {
          resourceType: 'lambda',
          resource: 'invoke',
          error: 'ProviderUnavailable',
          cause: JSON.stringify({ errorType: 'ProviderUnavailable', errorMessage: 'Provider answered 503.' }),
        },
      }),
      scheduled(6, { step: 'submit', jobId: 'job_a', retryCount: 1 }),
      event(7, 'TaskSucceeded'),
      // The compute function's steps record their own events: they are left out here.
      scheduled(8, { step: 'probe', jobId: 'job_a' }),
      event(9, 'TaskSucceeded'),
      scheduled(10, { step: 'await', jobId: 'job_a', retryCount: 0, taskToken: 't' }),
      event(20, 'TaskTimedOut', {
        taskTimedOutEventDetails: {
          resourceType: 'lambda',
          resource: 'invoke.waitForTaskToken',
          error: 'States.Timeout',
          cause: 'late',
        },
      }),
    ];

    expect(stepEventsOf(history)).toEqual([
      { at: at(0).toISOString(), type: 'job.dispatched' },
      { at: at(1).toISOString(), type: 'step.started', step: 'prepare', attempt: 1 },
      { at: at(2).toISOString(), type: 'step.succeeded', step: 'prepare', attempt: 1 },
      { at: at(3).toISOString(), type: 'step.started', step: 'submit', attempt: 1 },
      {
        at: at(4).toISOString(),
        type: 'step.failed',
        step: 'submit',
        attempt: 1,
        detail: 'ProviderUnavailable: Provider answered 503.',
      },
      { at: at(6).toISOString(), type: 'step.retry', step: 'submit', attempt: 2 },
      { at: at(7).toISOString(), type: 'step.succeeded', step: 'submit', attempt: 2 },
      { at: at(10).toISOString(), type: 'step.started', step: 'await', attempt: 1 },
      {
        at: at(20).toISOString(),
        type: 'step.failed',
        step: 'await',
        attempt: 1,
        detail: 'States.Timeout: late',
      },
    ]);
  });

  it('are read page by page from the named execution, with the data that names each step', async () => {
    const sfn = mockClient(SFNClient);
    sfn
      .on(GetExecutionHistoryCommand)
      .resolvesOnce({ events: [scheduled(1, { step: 'prepare', retryCount: 0 })], nextToken: 'page-2' })
      .resolvesOnce({ events: [event(2, 'TaskSucceeded')] });

    const { events, ended } = await new SfnWorkflow(new SFNClient({}), MACHINE).stepEvents('job_a-g1');

    expect(events.map((e) => e.type)).toEqual(['step.started', 'step.succeeded']);
    expect(ended).toBe(false);
    expect(sfn.commandCalls(GetExecutionHistoryCommand).map((call) => call.args[0].input)).toEqual([
      {
        executionArn: 'arn:aws:states:us-east-1:123456789012:execution:Longhaul:job_a-g1',
        maxResults: 1000,
        includeExecutionData: true,
      },
      {
        executionArn: 'arn:aws:states:us-east-1:123456789012:execution:Longhaul:job_a-g1',
        maxResults: 1000,
        includeExecutionData: true,
        nextToken: 'page-2',
      },
    ]);
    sfn.restore();
  });

  it('are none for an execution that never started', async () => {
    const sfn = mockClient(SFNClient);
    sfn
      .on(GetExecutionHistoryCommand)
      .rejects(new ExecutionDoesNotExist({ message: 'Execution Does Not Exist', $metadata: {} }));

    await expect(new SfnWorkflow(new SFNClient({}), MACHINE).stepEvents('job_a-g1')).resolves.toEqual({
      events: [],
      ended: false,
    });
    sfn.restore();
  });

  it('come from every run of the job, between what Longhaul recorded, in time order', async () => {
    const job = sampleJob(at(0), { runs: 1 });
    const timeline = new MemoryTimeline();
    await timeline.record(job.id, { at: at(3).toISOString(), type: 'provider.accepted' });
    const workflow = new MemoryWorkflow();
    workflow.histories.set(executionNameOf({ ...job, runs: undefined }), [
      { at: at(1).toISOString(), type: 'step.started', step: 'submit', attempt: 1 },
    ]);
    workflow.histories.set(executionNameOf(job), [
      { at: at(5).toISOString(), type: 'step.started', step: 'submit', attempt: 1 },
    ]);

    const events = await jobTimeline(timeline, workflow, job, at(9));

    expect(events.map((e) => `${e.at.slice(17, 19)} ${e.type}`)).toEqual([
      '00 job.accepted',
      '01 step.started',
      '03 provider.accepted',
      '05 step.started',
    ]);
  });
});

describe('a job’s timeline, read again and again', () => {
  const prepared = (from: number): HistoryEvent[] => [
    event(from, 'ExecutionStarted'),
    scheduled(from + 1, { step: 'prepare', jobId: 'job_a', retryCount: 0 }),
    event(from + 2, 'TaskSucceeded'),
  ];
  /** A client that records every history request and answers each with `history()` as it is then. */
  const recordingClient = (history: () => HistoryEvent[]) => {
    const sfn = mockClient(SFNClient);
    sfn.on(GetExecutionHistoryCommand).callsFake(() => ({ events: history() }));
    return { sfn, reads: () => sfn.commandCalls(GetExecutionHistoryCommand).length };
  };
  const steps = (events: readonly { type: string; step?: string }[]) =>
    events.filter((e) => e.type.startsWith('step.')).map((e) => `${e.type}:${e.step}`);

  it('reads an ended job’s execution history once, and what it kept of it thereafter', async () => {
    const { sfn, reads } = recordingClient(() => [...prepared(0), event(3, 'ExecutionSucceeded')]);
    const workflow = new SfnWorkflow(new SFNClient({}), MACHINE);
    const timeline = new MemoryTimeline();
    const job = sampleJob(at(0), { status: 'succeeded', statusAt: at(3).toISOString() });

    const first = await jobTimeline(timeline, workflow, job, at(10));
    const again = await jobTimeline(timeline, workflow, job, at(11));
    const aDayLater = await jobTimeline(timeline, workflow, job, new Date(at(11).getTime() + 86_400_000));

    expect(steps(first)).toEqual(['step.started:prepare', 'step.succeeded:prepare']);
    expect(again).toEqual(first);
    expect(aDayLater).toEqual(first);
    expect(reads()).toBe(1);
    sfn.restore();
  });

  it('keeps nothing of an execution not started yet, and reads again once the job’s status moved since it kept one', async () => {
    let history: HistoryEvent[] = [];
    const { sfn, reads } = recordingClient(() => history);
    const workflow = new SfnWorkflow(new SFNClient({}), MACHINE);
    const timeline = new MemoryTimeline();
    const queued = sampleJob(at(0), { status: 'queued', statusAt: at(0).toISOString() });

    await jobTimeline(timeline, workflow, queued, at(1));
    history = prepared(2);
    const started = await jobTimeline(timeline, workflow, queued, at(3));
    expect(reads()).toBe(2);
    expect(steps(started)).toEqual(['step.started:prepare', 'step.succeeded:prepare']);

    // Kept at 3 s; the job moved on at 4 s: what was kept is no longer what the job is.
    history = [...history, scheduled(4, { step: 'submit', jobId: 'job_a', retryCount: 0 })];
    const running = { ...queued, status: 'running' as const, statusAt: at(4).toISOString() };
    const moved = await jobTimeline(timeline, workflow, running, at(5));
    expect(reads()).toBe(3);
    expect(steps(moved)).toContain('step.started:submit');
    sfn.restore();
  });

  it('reads a running job’s history again only once what it kept is older than RUNNING_STEPS_FRESH_MS', async () => {
    let history = prepared(0);
    const { sfn, reads } = recordingClient(() => history);
    const workflow = new SfnWorkflow(new SFNClient({}), MACHINE);
    const timeline = new MemoryTimeline();
    const job = sampleJob(at(0), { status: 'running' });

    await jobTimeline(timeline, workflow, job, at(10));
    history = [...history, scheduled(11, { step: 'submit', jobId: 'job_a', retryCount: 0 })];
    const within = await jobTimeline(
      timeline,
      workflow,
      job,
      new Date(at(10).getTime() + RUNNING_STEPS_FRESH_MS - 1),
    );
    expect(reads()).toBe(1);
    expect(steps(within)).toEqual(['step.started:prepare', 'step.succeeded:prepare']);

    const after = await jobTimeline(
      timeline,
      workflow,
      job,
      new Date(at(10).getTime() + RUNNING_STEPS_FRESH_MS),
    );
    expect(reads()).toBe(2);
    expect(steps(after)).toEqual(['step.started:prepare', 'step.succeeded:prepare', 'step.started:submit']);
    sfn.restore();
  });

  it('reads a resumed job’s history again: the redrive goes on from where the execution ended', async () => {
    let history = [...prepared(0), event(3, 'ExecutionFailed')];
    const { sfn, reads } = recordingClient(() => history);
    const workflow = new SfnWorkflow(new SFNClient({}), MACHINE);
    const timeline = new MemoryTimeline();
    const failed = sampleJob(at(0), { status: 'failed', statusAt: at(3).toISOString() });
    await jobTimeline(timeline, workflow, failed, at(10));
    await jobTimeline(timeline, workflow, failed, at(20));
    expect(reads()).toBe(1);

    // Resumed: the job is running again (one resume more), and its execution was redriven.
    const resumed = { ...failed, status: 'running' as const, resumes: 1, resumedAt: at(30).toISOString() };
    const redriven = [
      ...history,
      event(30, 'ExecutionRedriven'),
      scheduled(31, { step: 'submit', jobId: 'job_a', retryCount: 0 }),
    ];
    // Read between the resume's write and its redrive: ended, but its job is not settled, so not kept as ended.
    const beforeRedrive = await jobTimeline(timeline, workflow, resumed, at(30));
    expect(steps(beforeRedrive)).toEqual(['step.started:prepare', 'step.succeeded:prepare']);
    history = redriven;
    const later = await jobTimeline(
      timeline,
      workflow,
      resumed,
      new Date(at(30).getTime() + RUNNING_STEPS_FRESH_MS),
    );

    expect(reads()).toBe(3);
    expect(steps(later)).toEqual(['step.started:prepare', 'step.succeeded:prepare', 'step.started:submit']);
    sfn.restore();
  });
});

describe('redrive', () => {
  it('redrives the named execution under the client token', async () => {
    const sfn = mockClient(SFNClient);
    sfn.on(RedriveExecutionCommand).resolves({ redriveDate: at(0) });

    await expect(new SfnWorkflow(new SFNClient({}), MACHINE).redrive('job_a-g1', 'resume-1')).resolves.toBe(
      'redriven',
    );
    expect(sfn.commandCalls(RedriveExecutionCommand).map((call) => call.args[0].input)).toEqual([
      {
        executionArn: 'arn:aws:states:us-east-1:123456789012:execution:Longhaul:job_a-g1',
        clientToken: 'resume-1',
      },
    ]);
    sfn.restore();
  });

  it('answers running for an execution still on its failure path, and ended for one that can never be redriven', async () => {
    const sfn = mockClient(SFNClient);
    sfn
      .on(RedriveExecutionCommand)
      .rejects(new ExecutionNotRedrivable({ message: 'Execution is RUNNING', $metadata: {} }));
    sfn
      .on(DescribeExecutionCommand)
      .resolvesOnce({ status: 'RUNNING' })
      .resolvesOnce({ status: 'SUCCEEDED' });
    const workflow = new SfnWorkflow(new SFNClient({}), MACHINE);

    await expect(workflow.redrive('job_a-g1', 'resume-1')).resolves.toBe('running');
    await expect(workflow.redrive('job_a-g1', 'resume-1')).resolves.toBe('ended');
    sfn.restore();
  });

  it('redrives an execution that failed between the refusal and the look at its status', async () => {
    const sfn = mockClient(SFNClient);
    sfn
      .on(RedriveExecutionCommand)
      .rejectsOnce(new ExecutionNotRedrivable({ message: 'Execution is RUNNING', $metadata: {} }))
      .resolves({ redriveDate: at(0) });
    sfn.on(DescribeExecutionCommand).resolves({ status: 'FAILED' });

    await expect(new SfnWorkflow(new SFNClient({}), MACHINE).redrive('job_a-g1', 'resume-1')).resolves.toBe(
      'redriven',
    );
    expect(sfn.commandCalls(RedriveExecutionCommand)).toHaveLength(2);
    sfn.restore();
  });

  it('answers ended when a failed execution refuses a second redrive (it ended over 14 days ago)', async () => {
    const sfn = mockClient(SFNClient);
    sfn.on(RedriveExecutionCommand).rejects(
      new ExecutionNotRedrivable({
        message: 'Execution ended more than 14 days ago and cannot be redriven',
        $metadata: {},
      }),
    );
    sfn.on(DescribeExecutionCommand).resolves({ status: 'FAILED' });

    await expect(new SfnWorkflow(new SFNClient({}), MACHINE).redrive('job_a-g1', 'resume-1')).resolves.toBe(
      'ended',
    );
    expect(sfn.commandCalls(RedriveExecutionCommand)).toHaveLength(2);
    sfn.restore();
  });

  it('answers ended for an execution that does not exist, and throws what else Step Functions answers', async () => {
    const sfn = mockClient(SFNClient);
    sfn
      .on(RedriveExecutionCommand)
      .rejectsOnce(new ExecutionDoesNotExist({ message: 'Execution does not exist', $metadata: {} }))
      .rejectsOnce(new Error('ThrottlingException'));
    const workflow = new SfnWorkflow(new SFNClient({}), MACHINE);

    await expect(workflow.redrive('job_a-g1', 'resume-1')).resolves.toBe('ended');
    await expect(workflow.redrive('job_a-g1', 'resume-1')).rejects.toThrow('ThrottlingException');
    expect(sfn.commandCalls(DescribeExecutionCommand)).toHaveLength(0);
    sfn.restore();
  });
});
