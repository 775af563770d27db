import type fc from 'fast-check';
import type { ExecutionStatus, StepHistory, Workflow } from '../../../../lambdas/domain/ports';
import type { CaughtError, StepEvent } from '../../../../lambdas/domain/workflow';
import { Actor } from './scheduled';

/** The part of the Amazon States Language the media workflow uses. */
interface Retrier {
  readonly ErrorEquals: readonly string[];
  readonly MaxAttempts?: number;
}
interface Catcher {
  readonly ErrorEquals: readonly string[];
  readonly ResultPath: string | null;
  readonly Next: string;
}
/** A Choice rule, as the workflow writes them: one string compared at one path. */
interface ChoiceRule {
  readonly Variable: string;
  readonly StringEquals: string;
  readonly Next: string;
}
interface State {
  readonly Type: 'Task' | 'Succeed' | 'Fail' | 'Pass' | 'Choice';
  readonly Choices?: readonly ChoiceRule[];
  readonly Default?: string;
  readonly Resource?: string;
  /** A Pass state's result, put at its ResultPath (`$.<field>`). */
  readonly Result?: unknown;
  readonly ResultPath?: string;
  readonly Parameters?: { readonly Payload: Record<string, unknown> };
  readonly Retry?: readonly Retrier[];
  readonly Catch?: readonly Catcher[];
  readonly Next?: string;
  readonly End?: boolean;
  readonly TimeoutSeconds?: number;
  readonly HeartbeatSeconds?: number;
}
export interface Definition {
  readonly StartAt: string;
  readonly States: Record<string, State>;
}

type TaskOutcome = { readonly error?: CaughtError };

interface Waiting {
  readonly token: string;
  readonly since: number;
  beat: number;
  readonly timeoutMs?: number;
  readonly heartbeatMs?: number;
  readonly settle: (outcome: TaskOutcome) => void;
}

interface Execution {
  readonly name: string;
  readonly jobId: string;
  status: ExecutionStatus;
  /** The state it is in (or ended in). */
  state: string;
  /** What that state was entered with: a redrive enters it again with this. */
  input: Record<string, unknown>;
  /** When it closed, on the world's clock; undefined while it runs. */
  closedAt?: number;
  /** The client tokens of its redrives, with when each was first used. */
  readonly redriveTokens: { readonly token: string; readonly at: number }[];
  readonly invocations: Set<Actor>;
  waiting?: Waiting;
}

/** Runs one step invocation: the steps Lambda. */
export type Invoke = (event: StepEvent, actor: Actor) => Promise<unknown>;

/** How long any Lambda invocation may run; a clock jump past it stops the invocation at its next call. */
export const LAMBDA_TIMEOUT_MS = 60_000;

const DAY_MS = 86_400_000;
/** Step Functions redrives an execution that failed, was stopped or timed out, within 14 days of its end. */
const REDRIVABLE: ReadonlySet<ExecutionStatus> = new Set(['FAILED', 'ABORTED', 'TIMED_OUT']);
const REDRIVE_WINDOW_MS = 14 * DAY_MS;
/** A repeated client token answers as the first redrive did, for 15 minutes, and redrives nothing. */
const REDRIVE_TOKEN_TTL_MS = 15 * 60 * 1000;
/** How long Step Functions keeps a closed Standard execution: after it, its name is free and unknown. */
export const EXECUTION_RETENTION_MS = 90 * DAY_MS;

const matches = (errors: readonly string[], name: string) =>
  errors.includes(name) || (errors.includes('States.ALL') && !name.startsWith('States.Runtime'));

const lambdaError = (error: unknown): CaughtError => {
  const failure = error as Error;
  const errorType = failure?.name ?? 'Error';
  return { Error: errorType, Cause: JSON.stringify({ errorType, errorMessage: failure?.message ?? '' }) };
};

/**
 * Step Functions as the workflow's callers meet it, running the synthesized
 * definition: executions keyed by name (a name starts once, and a closed name
 * answers as already existing), Retry and Catch as the definition says, task
 * tokens that go stale when their state is left, the await state's
 * timeout and heartbeat, fired when the clock passes them, and redrives
 * (a resume), which go on from the state the execution ended in.
 *
 * Faults: an Invoke that fails after Lambda took it (the retry runs beside the
 * first invocation), throttled invocations, invocations that die before their
 * handler ran, and crashes of the invocation in flight (with or without the
 * execution closing).
 */
export class SimulatedStepFunctions implements Workflow {
  readonly executions = new Map<string, Execution>();
  private tokens = 0;
  private readonly duplicated: { jobId: string; step: string }[] = [];
  private readonly throttled: { jobId: string; step: string; times: number }[] = [];
  private readonly broken: { jobId: string; step: string }[] = [];
  /** Errors of the driver itself: a broken harness must not pass for a clean run. */
  readonly defects: unknown[] = [];

  constructor(
    private readonly definition: Definition,
    private readonly invoke: Invoke,
    private readonly scheduler: fc.Scheduler,
    private readonly now: () => number,
  ) {}

  /** The harness checks outcomes, not the timeline: its executions keep no history. */
  async stepEvents(): Promise<StepHistory> {
    return { events: [], ended: false };
  }

  async start(executionName: string, input: { readonly jobId: string }) {
    if (this.executions.has(executionName)) return;
    const execution: Execution = {
      name: executionName,
      jobId: input.jobId,
      status: 'RUNNING',
      state: this.definition.StartAt,
      input: { jobId: input.jobId },
      redriveTokens: [],
      invocations: new Set(),
    };
    this.executions.set(executionName, execution);
    this.run(execution).catch((error) => this.defects.push(error));
  }

  /**
   * RedriveExecution as the workflow adapter answers it: a failed, stopped or
   * timed-out execution goes on from the state it ended in, entered again
   * with the input it had there (retry counts start again); a token used in
   * the last 15 minutes is that redrive again and changes nothing; a running
   * execution is `running`; one that succeeded, ended over 14 days ago or is
   * unknown is `ended`.
   */
  async redrive(executionName: string, clientToken: string): Promise<'redriven' | 'running' | 'ended'> {
    const execution = this.executions.get(executionName);
    if (!execution) return 'ended';
    const now = this.now();
    if (
      execution.redriveTokens.some(
        ({ token, at }) => token === clientToken && now - at < REDRIVE_TOKEN_TTL_MS,
      )
    )
      return 'redriven';
    if (execution.status === 'RUNNING') return 'running';
    if (!REDRIVABLE.has(execution.status) || now - (execution.closedAt ?? now) > REDRIVE_WINDOW_MS)
      return 'ended';
    execution.status = 'RUNNING';
    execution.closedAt = undefined;
    execution.redriveTokens.push({ token: clientToken, at: now });
    this.run(execution).catch((error) => this.defects.push(error));
    return 'redriven';
  }

  /** Closed executions older than Step Functions keeps them are gone: unknown, their names free again. */
  forgetClosedBefore(instant: number): void {
    for (const [name, execution] of this.executions) {
      if (execution.closedAt !== undefined && execution.closedAt < instant) this.executions.delete(name);
    }
  }

  async stop(executionName: string) {
    const execution = this.executions.get(executionName);
    if (execution?.status === 'RUNNING') this.close(execution, 'ABORTED');
  }

  async status(executionName: string): Promise<ExecutionStatus> {
    return this.executions.get(executionName)?.status ?? 'NOT_FOUND';
  }

  async heartbeat(taskToken: string) {
    const waiting = this.waitingFor(taskToken);
    if (waiting) waiting.beat = this.now();
    return waiting !== undefined;
  }

  async completeTask(taskToken: string) {
    return this.resume(taskToken, {});
  }

  async failTask(taskToken: string, error: string, cause: string) {
    return this.resume(taskToken, { error: { Error: error, Cause: cause } });
  }

  /** The next Invoke of `step` for this job fails after Lambda took it: Step Functions retries while it runs. */
  duplicateNextInvoke(jobId: string, step: string): void {
    this.duplicated.push({ jobId, step });
  }

  /** The next `times` invocations of `step` for this job are refused by Lambda. */
  throttle(jobId: string, step: string, times: number): void {
    this.throttled.push({ jobId, step, times });
  }

  /** The next invocation of `step` for this job dies before its handler did anything (an unhandled crash). */
  failNextInvoke(jobId: string, step: string): void {
    this.broken.push({ jobId, step });
  }

  stopFaults(): void {
    this.duplicated.length = 0;
    this.throttled.length = 0;
    this.broken.length = 0;
  }

  /** The invocations in flight for this job die; with `close`, its execution ends too. */
  crash(jobId: string, close: boolean): void {
    for (const execution of this.executions.values()) {
      if (execution.jobId !== jobId || execution.status !== 'RUNNING') continue;
      for (const actor of execution.invocations) actor.crash();
      if (close) this.close(execution, 'ABORTED');
    }
  }

  /** A waiting await state of this job hears no heartbeat in time. */
  missHeartbeat(jobId: string): void {
    for (const execution of this.executions.values()) {
      if (execution.jobId === jobId)
        execution.waiting?.settle({ error: { Error: 'States.HeartbeatTimeout' } });
    }
  }

  /** Fires the await states' timeouts the clock has passed. */
  expireWaits(): void {
    const now = this.now();
    for (const execution of this.executions.values()) {
      const waiting = execution.waiting;
      if (!waiting || execution.status !== 'RUNNING') continue;
      if (waiting.timeoutMs !== undefined && now - waiting.since >= waiting.timeoutMs) {
        waiting.settle({ error: { Error: 'States.Timeout' } });
      } else if (waiting.heartbeatMs !== undefined && now - waiting.beat >= waiting.heartbeatMs) {
        waiting.settle({ error: { Error: 'States.HeartbeatTimeout' } });
      }
    }
  }

  private waitingFor(taskToken: string): Waiting | undefined {
    for (const execution of this.executions.values()) {
      if (execution.status === 'RUNNING' && execution.waiting?.token === taskToken) return execution.waiting;
    }
    return undefined;
  }

  private resume(taskToken: string, outcome: TaskOutcome): boolean {
    const waiting = this.waitingFor(taskToken);
    waiting?.settle(outcome);
    return waiting !== undefined;
  }

  private close(execution: Execution, status: ExecutionStatus): void {
    execution.status = status;
    execution.closedAt = this.now();
    const waiting = execution.waiting;
    execution.waiting = undefined;
    waiting?.settle({ error: { Error: 'States.Runtime', Cause: 'The execution closed.' } });
  }

  /** Runs the execution from the state it is in, with that state's input (a start's first, or where a redrive goes on). */
  private async run(execution: Execution): Promise<void> {
    let input = execution.input;
    let name = execution.state;
    for (;;) {
      await this.scheduler.schedule(Promise.resolve(), `${execution.name} ▷ ${name}`);
      if (execution.status !== 'RUNNING') return;
      const state = this.definition.States[name];
      if (!state) throw new Error(`The definition has no state ${name}.`);
      execution.state = name;
      execution.input = input;
      if (state.Type === 'Succeed') return this.close(execution, 'SUCCEEDED');
      if (state.Type === 'Fail') return this.close(execution, 'FAILED');
      if (state.Type === 'Choice') {
        const rule = state.Choices?.find((r) => valueAt(input, r.Variable) === r.StringEquals);
        const next = rule?.Next ?? state.Default;
        if (!next) throw new Error(`Choice state ${name} has no way on.`);
        name = next;
        continue;
      }
      if (state.Type === 'Pass') {
        const field = /^\$\.(\w+)$/.exec(state.ResultPath ?? '')?.[1];
        if (!field || !state.Next) throw new Error(`Unsupported Pass state ${name}.`);
        input = { ...input, [field]: state.Result };
        name = state.Next;
        continue;
      }
      const outcome = await this.runTask(execution, name, state, input);
      if (execution.status !== 'RUNNING') return;
      if (!outcome.error) {
        if (state.End || !state.Next) return this.close(execution, 'SUCCEEDED');
        name = state.Next;
        continue;
      }
      const caught = outcome.error;
      const catcher = state.Catch?.find((c) => matches(c.ErrorEquals, caught.Error));
      if (!catcher) return this.close(execution, 'FAILED');
      // ResultPath null: the error is dropped and the state's input goes on as it was.
      if (catcher.ResultPath !== '$.error' && catcher.ResultPath !== null)
        throw new Error(`Unsupported ResultPath ${catcher.ResultPath}.`);
      if (catcher.ResultPath === '$.error') input = { ...input, error: caught };
      name = catcher.Next;
    }
  }

  private async runTask(
    execution: Execution,
    name: string,
    state: State,
    input: Record<string, unknown>,
  ): Promise<TaskOutcome> {
    const used = new Map<number, number>();
    for (let retryCount = 0; ; retryCount++) {
      const outcome = await this.attempt(execution, name, state, input, retryCount);
      if (!outcome.error || execution.status !== 'RUNNING') return outcome;
      const caught = outcome.error;
      const index = (state.Retry ?? []).findIndex((r) => matches(r.ErrorEquals, caught.Error));
      const retrier = state.Retry?.[index];
      if (!retrier) return outcome;
      const count = used.get(index) ?? 0;
      if (count >= (retrier.MaxAttempts ?? 3)) return outcome;
      used.set(index, count + 1);
      await this.scheduler.schedule(Promise.resolve(), `${execution.name} ▷ ${name} retry ${retryCount + 1}`);
      if (execution.status !== 'RUNNING') return outcome;
    }
  }

  private async attempt(
    execution: Execution,
    name: string,
    state: State,
    input: Record<string, unknown>,
    retryCount: number,
  ): Promise<TaskOutcome> {
    const callsBack = state.Resource?.endsWith('.waitForTaskToken') ?? false;
    const token = callsBack ? `${execution.name}/${name}/${++this.tokens}` : undefined;
    const event = resolvePayload(state.Parameters?.Payload ?? {}, {
      input,
      context: {
        State: { RetryCount: retryCount },
        Execution: { Name: execution.name },
        Task: { Token: token },
      },
    }) as unknown as StepEvent;
    if (this.takeThrottle(execution.jobId, event.step)) {
      return { error: { Error: 'Lambda.TooManyRequestsException', Cause: 'Rate exceeded' } };
    }
    const brokenAt = this.broken.findIndex((b) => b.jobId === execution.jobId && b.step === event.step);
    if (brokenAt >= 0) {
      this.broken.splice(brokenAt, 1);
      return { error: { Error: 'Runtime.ExitError', Cause: 'The function exited before completing.' } };
    }

    let callback: Promise<TaskOutcome> | undefined;
    if (token) {
      const now = this.now();
      callback = new Promise((settle) => {
        execution.waiting = {
          token,
          since: now,
          beat: now,
          ...(state.TimeoutSeconds ? { timeoutMs: state.TimeoutSeconds * 1000 } : {}),
          ...(state.HeartbeatSeconds ? { heartbeatMs: state.HeartbeatSeconds * 1000 } : {}),
          settle,
        };
      });
    }
    const actor = new Actor(
      `${execution.name}:${name}#${retryCount}`,
      undefined,
      undefined,
      this.now() + LAMBDA_TIMEOUT_MS,
    );
    execution.invocations.add(actor);
    const invocation: Promise<TaskOutcome> = this.invoke(event, actor).then(
      () => ({}),
      (error) => ({ error: lambdaError(error) }),
    );
    void invocation.finally(() => execution.invocations.delete(actor));
    const died = actor.crashed.then(() => ({
      error: { Error: 'Sandbox.Timedout', Cause: 'Task timed out.' },
    }));

    let outcome: TaskOutcome;
    if (this.takeDuplicate(execution.jobId, event.step)) {
      // Invoke failed after Lambda accepted the call: this invocation goes on, unseen, beside the retry.
      outcome = { error: { Error: 'Lambda.ServiceException', Cause: 'Service unavailable' } };
    } else {
      const finished = Promise.race([invocation, died]);
      outcome = callback
        ? await Promise.race([callback, finished.then((result) => (result.error ? result : callback))])
        : await finished;
    }
    if (token && execution.waiting?.token === token) execution.waiting = undefined;
    return outcome;
  }

  private takeDuplicate(jobId: string, step: string): boolean {
    const index = this.duplicated.findIndex((d) => d.jobId === jobId && d.step === step);
    if (index >= 0) this.duplicated.splice(index, 1);
    return index >= 0;
  }

  private takeThrottle(jobId: string, step: string): boolean {
    const throttle = this.throttled.find((t) => t.jobId === jobId && t.step === step && t.times > 0);
    if (throttle) throttle.times--;
    return throttle !== undefined;
  }
}

/** Evaluates a Payload template: `key.$` entries take the value at their path (`$.` input, `$$.` context). */
function resolvePayload(
  template: Record<string, unknown>,
  sources: { readonly input: Record<string, unknown>; readonly context: Record<string, unknown> },
): Record<string, unknown> {
  const payload: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(template)) {
    if (!key.endsWith('.$')) {
      payload[key] = value;
      continue;
    }
    const path = String(value);
    const found = path.startsWith('$$.')
      ? valueAt(sources.context, path.slice(1))
      : valueAt(sources.input, path);
    if (found !== undefined) payload[key.slice(0, -2)] = found;
  }
  return payload;
}

/** The value at a reference path (`$.a.b`) of `root`; undefined where it has none. */
function valueAt(root: Record<string, unknown>, path: string): unknown {
  let found: unknown = root;
  for (const segment of path.slice(2).split('.'))
    found = (found as Record<string, unknown> | undefined)?.[segment];
  return found;
}
