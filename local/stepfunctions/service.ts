import { randomUUID } from 'node:crypto';
import {
  ApiError,
  executionAlreadyExists,
  executionDoesNotExist,
  executionNotRedrivable,
  invalidArn,
  invalidExecutionInput,
  invalidName,
  invalidOutput,
  invalidToken,
  missingParameter,
  stateMachineDoesNotExist,
  taskDoesNotExist,
  taskTimedOut,
  validationError,
} from './errors';
import { type MachineRuntime, RunningExecution } from './execution';
import type { ExecutionRecord, ExecutionStatus, ExecutionStore, HistoryRecord } from './store';
import type { TaskAttempt } from './tasks';
import { TaskTokens } from './tokens';

/**
 * The Step Functions API actions, over the store and the executions running
 * in this process. Answers are shaped as the service's JSON (dates in epoch
 * seconds), errors are ApiErrors named as in the service model.
 */

type Body = Record<string, unknown>;

const STATUSES: readonly ExecutionStatus[] = ['RUNNING', 'SUCCEEDED', 'FAILED', 'TIMED_OUT', 'ABORTED'];
/** Step Functions' limit on execution input and task output. */
const MAX_PAYLOAD_BYTES = 256 * 1024;
const STATE_MACHINE_ARN = /^arn:aws[a-z-]*:states:[a-z0-9-]+:\d{12}:stateMachine:[^:]+$/;
const EXECUTION_ARN = /^arn:aws[a-z-]*:states:[a-z0-9-]+:\d{12}:execution:[^:]+:[^:]+$/;
/** Characters Step Functions refuses in execution names, besides whitespace and control characters. */
const NAME_FORBIDDEN = new Set('<>{}[]?*"#%\\^|~`$&,;:/');

const epochSeconds = (ms: number) => ms / 1000;

/** Step Functions redrives an execution that failed, was stopped or timed out, within 14 days of its end. */
const REDRIVABLE: ReadonlySet<ExecutionStatus> = new Set(['FAILED', 'ABORTED', 'TIMED_OUT']);
const REDRIVE_WINDOW_MS = 14 * 24 * 3600 * 1000;
/** A repeated client token answers the first redrive's answer for 15 minutes; the last 10 tokens are kept. */
const REDRIVE_TOKEN_TTL_MS = 15 * 60 * 1000;
const REDRIVE_TOKENS_KEPT = 10;
/** Step Functions' limit on redrives of one execution. */
const MAX_REDRIVES = 1000;

/** Why the execution cannot be redriven, or undefined when it can. */
function notRedrivableReason(record: ExecutionRecord, now: number): string | undefined {
  if (!REDRIVABLE.has(record.status)) return `Execution is ${record.status} and cannot be redriven`;
  if (now - (record.stopDate ?? now) > REDRIVE_WINDOW_MS) {
    return 'Execution ended more than 14 days ago and cannot be redriven';
  }
  if (record.redriveCount >= MAX_REDRIVES) return 'Execution has reached the maximum number of redrives';
  return undefined;
}

export function isValidName(name: string): boolean {
  const characters = [...name];
  return (
    characters.length >= 1 &&
    characters.length <= 80 &&
    characters.every((character) => {
      const code = character.codePointAt(0) ?? 0;
      const control = code <= 0x1f || (code >= 0x7f && code <= 0x9f);
      return !control && !/\s/u.test(character) && !NAME_FORBIDDEN.has(character);
    })
  );
}

function requiredString(body: Body, key: string): string {
  const value = body[key];
  if (value === undefined || value === null) throw missingParameter(key);
  if (typeof value !== 'string') throw validationError(`Value at '${key}' must be a string`);
  return value;
}

function optionalString(body: Body, key: string, maxLength?: number): string | undefined {
  const value = body[key];
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'string') throw validationError(`Value at '${key}' must be a string`);
  if (maxLength !== undefined && value.length > maxLength) {
    throw validationError(
      `1 validation error detected: Value at '${key}' failed to satisfy constraint: Member must have length less than or equal to ${maxLength}`,
    );
  }
  return value;
}

/** maxResults: 0 or absent means the default page size of 100, at most 1000. */
function pageSize(body: Body): number {
  const value = body.maxResults;
  if (value === undefined || value === null || value === 0) return 100;
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 0 || value > 1000) {
    throw validationError(
      "1 validation error detected: Value at 'maxResults' failed to satisfy constraint: Member must have value less than or equal to 1000",
    );
  }
  return value;
}

const encodePageToken = (position: number) => Buffer.from(JSON.stringify({ position })).toString('base64url');

function decodePageToken(body: Body): number | undefined {
  const token = optionalString(body, 'nextToken');
  if (token === undefined) return undefined;
  try {
    const { position } = JSON.parse(Buffer.from(token, 'base64url').toString()) as { position?: unknown };
    if (typeof position === 'number' && Number.isInteger(position)) return position;
  } catch {
    // Reported below like any other token this service did not issue.
  }
  throw new ApiError('InvalidToken', `Invalid Token: '${token}'`);
}

function parseJsonPayload(value: string, fail: (detail: string) => ApiError): unknown {
  if (Buffer.byteLength(value) > MAX_PAYLOAD_BYTES) {
    throw fail(`the payload exceeds ${MAX_PAYLOAD_BYTES} bytes`);
  }
  try {
    return JSON.parse(value);
  } catch (error) {
    throw fail((error as Error).message);
  }
}

function withoutData(details: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(
    Object.entries(details).map(([key, value]) => [
      key,
      value && typeof value === 'object'
        ? Object.fromEntries(
            Object.entries(value).filter(([field]) => !['input', 'output', 'parameters'].includes(field)),
          )
        : value,
    ]),
  );
}

function redriveStatusOf(record: ExecutionRecord) {
  const reason = notRedrivableReason(record, Date.now());
  return reason === undefined
    ? { redriveStatus: 'REDRIVABLE' }
    : { redriveStatus: 'NOT_REDRIVABLE', redriveStatusReason: reason };
}

export class StepFunctionsService {
  private readonly running = new Map<string, RunningExecution>();
  private readonly tokens = new TaskTokens();
  private closing = false;
  private readonly actions: Record<string, (body: Body) => unknown> = {
    StartExecution: (body) => this.startExecution(body),
    DescribeExecution: (body) => this.describeExecution(body),
    StopExecution: (body) => this.stopExecution(body),
    RedriveExecution: (body) => this.redriveExecution(body),
    ListExecutions: (body) => this.listExecutions(body),
    GetExecutionHistory: (body) => this.getExecutionHistory(body),
    SendTaskSuccess: (body) => this.sendTaskSuccess(body),
    SendTaskFailure: (body) => this.sendTaskFailure(body),
    SendTaskHeartbeat: (body) => this.sendTaskHeartbeat(body),
    DescribeStateMachine: (body) => this.describeStateMachine(body),
    DescribeStateMachineForExecution: (body) => this.describeStateMachineForExecution(body),
    ListStateMachines: () => this.listStateMachines(),
  };

  constructor(
    private readonly env: {
      readonly store: ExecutionStore;
      readonly region: string;
      readonly accountId: string;
      readonly machines: ReadonlyMap<string, MachineRuntime>;
      readonly timeoutErrorClass: new () => Error;
      readonly creationDate: number;
    },
  ) {}

  handle(action: string, body: Body): unknown {
    const run = this.actions[action];
    if (!run) {
      throw new ApiError('UnknownOperationException', `The action ${action} is not implemented locally`);
    }
    if (this.closing) throw new ApiError('ServiceUnavailable', 'The local Step Functions is shutting down');
    return run(body);
  }

  /** Restarts, from the beginning, the executions that were running when the previous process stopped. */
  resumeRunning(): void {
    for (const record of this.env.store.running()) {
      const machine = this.env.machines.get(record.stateMachineArn);
      // Left RUNNING: a later start that defines the state machine again resumes it.
      if (!machine) continue;
      record.redriveCount += 1;
      record.redriveDate = Date.now();
      this.env.store.save(record);
      this.env.store.appendEvent(
        record.executionArn,
        'ExecutionRedriven',
        { executionRedrivenEventDetails: { redriveCount: record.redriveCount } },
        record.redriveDate,
      );
      this.launch(machine, record);
    }
  }

  /** Lets go of every running execution without recording it as stopped, so the next start resumes it. */
  async shutdown(): Promise<void> {
    this.closing = true;
    const executions = [...this.running.values()];
    for (const execution of executions) execution.halt();
    await Promise.allSettled(executions.map((execution) => execution.done));
  }

  private launch(machine: MachineRuntime, record: ExecutionRecord): void {
    const execution = new RunningExecution(
      {
        store: this.env.store,
        tokens: this.tokens,
        region: this.env.region,
        timeoutErrorClass: this.env.timeoutErrorClass,
        onHalted: (halted) => {
          if (this.running.get(halted.executionArn) === halted) this.running.delete(halted.executionArn);
        },
      },
      machine,
      record,
    );
    this.running.set(record.executionArn, execution);
    execution.start();
  }

  private machine(body: Body): MachineRuntime {
    const arn = requiredString(body, 'stateMachineArn');
    if (!STATE_MACHINE_ARN.test(arn)) throw invalidArn(arn);
    const machine = this.env.machines.get(arn);
    if (!machine) throw stateMachineDoesNotExist(arn);
    return machine;
  }

  private execution(body: Body): ExecutionRecord {
    const arn = requiredString(body, 'executionArn');
    if (!EXECUTION_ARN.test(arn)) throw invalidArn(arn);
    const record = this.env.store.get(arn);
    if (!record) throw executionDoesNotExist(arn);
    return record;
  }

  private startExecution(body: Body) {
    const machine = this.machine(body);
    const name = optionalString(body, 'name') ?? randomUUID();
    if (!isValidName(name)) throw invalidName(name);
    const input = optionalString(body, 'input') ?? '{}';
    parseJsonPayload(input, invalidExecutionInput);
    const traceHeader = optionalString(body, 'traceHeader');
    const executionArn = `arn:aws:states:${this.env.region}:${this.env.accountId}:execution:${machine.name}:${name}`;

    const existing = this.env.store.get(executionArn);
    if (existing) {
      // Standard workflows: the same name and input while it runs is the same request; anything else is a conflict.
      if (existing.status === 'RUNNING' && existing.input === input) {
        return { executionArn, startDate: epochSeconds(existing.startDate) };
      }
      throw executionAlreadyExists(executionArn);
    }
    const record: ExecutionRecord = {
      executionArn,
      stateMachineArn: machine.arn,
      name,
      input,
      startDate: Date.now(),
      status: 'RUNNING',
      redriveCount: 0,
      ...(traceHeader === undefined ? {} : { traceHeader }),
    };
    this.env.store.insert(record);
    this.env.store.appendEvent(
      executionArn,
      'ExecutionStarted',
      {
        executionStartedEventDetails: { input, inputDetails: { truncated: false }, roleArn: machine.roleArn },
      },
      record.startDate,
    );
    this.launch(machine, record);
    return { executionArn, startDate: epochSeconds(record.startDate) };
  }

  private describeExecution(body: Body) {
    const record = this.execution(body);
    return {
      executionArn: record.executionArn,
      stateMachineArn: record.stateMachineArn,
      name: record.name,
      status: record.status,
      startDate: epochSeconds(record.startDate),
      ...(record.stopDate === undefined ? {} : { stopDate: epochSeconds(record.stopDate) }),
      input: record.input,
      inputDetails: { included: true },
      ...(record.output === undefined ? {} : { output: record.output, outputDetails: { included: true } }),
      ...(record.error === undefined ? {} : { error: record.error }),
      ...(record.cause === undefined ? {} : { cause: record.cause }),
      ...(record.traceHeader === undefined ? {} : { traceHeader: record.traceHeader }),
      redriveCount: record.redriveCount,
      ...(record.redriveDate === undefined ? {} : { redriveDate: epochSeconds(record.redriveDate) }),
      ...redriveStatusOf(record),
    };
  }

  /**
   * RedriveExecution: a failed, aborted or timed-out execution goes on, under
   * the same ARN, from the top-level state it ended in, entered again with the
   * input it had then; the states that succeeded before it are not run again.
   * A Map or Parallel state is entered again whole (Step Functions reruns
   * only its unsuccessful iterations or branches).
   */
  private redriveExecution(body: Body) {
    const record = this.execution(body);
    const clientToken = optionalString(body, 'clientToken', 64);
    const now = Date.now();
    const repeated = record.redriveTokens?.find(
      (kept) => kept.token === clientToken && now - kept.at < REDRIVE_TOKEN_TTL_MS,
    );
    if (repeated) return { redriveDate: epochSeconds(repeated.at) };
    const reason = notRedrivableReason(record, now);
    if (reason) throw executionNotRedrivable(record.executionArn, reason);
    const machine = this.env.machines.get(record.stateMachineArn);
    if (!machine) throw stateMachineDoesNotExist(record.stateMachineArn);
    const from = this.env.store.lastEntered(record.executionArn, machine.compiled.topLevelStates);
    delete record.output;
    delete record.error;
    delete record.cause;
    delete record.stopDate;
    Object.assign(record, {
      status: 'RUNNING',
      redriveCount: record.redriveCount + 1,
      redriveDate: now,
      redriveFrom: from,
      redriveTokens: [
        ...(record.redriveTokens ?? []),
        ...(clientToken === undefined ? [] : [{ token: clientToken, at: now }]),
      ].slice(-REDRIVE_TOKENS_KEPT),
    });
    this.env.store.save(record);
    this.env.store.appendEvent(
      record.executionArn,
      'ExecutionRedriven',
      { executionRedrivenEventDetails: { redriveCount: record.redriveCount } },
      now,
    );
    this.launch(machine, record);
    return { redriveDate: epochSeconds(now) };
  }

  private stopExecution(body: Body) {
    const record = this.execution(body);
    const error = optionalString(body, 'error', 256);
    const cause = optionalString(body, 'cause', 32768);
    const execution = this.running.get(record.executionArn);
    if (execution) {
      execution.stop(error, cause);
      return { stopDate: epochSeconds(execution.record.stopDate ?? Date.now()) };
    }
    if (record.status === 'RUNNING') {
      // Running when an earlier process stopped, and not resumed: stopping it is all that is left to do.
      const fields = { ...(error === undefined ? {} : { error }), ...(cause === undefined ? {} : { cause }) };
      Object.assign(record, fields, { status: 'ABORTED', stopDate: Date.now() });
      this.env.store.save(record);
      this.env.store.appendEvent(
        record.executionArn,
        'ExecutionAborted',
        { executionAbortedEventDetails: fields },
        record.stopDate,
      );
    }
    return { stopDate: epochSeconds(record.stopDate ?? Date.now()) };
  }

  private listExecutions(body: Body) {
    if (body.mapRunArn !== undefined && body.mapRunArn !== null) {
      throw validationError('Map Runs (distributed Map) are not available locally');
    }
    if (body.stateMachineArn === undefined || body.stateMachineArn === null) {
      throw validationError('Must specify a stateMachineArn or a mapRunArn');
    }
    const machine = this.machine(body);
    const statusFilter = optionalString(body, 'statusFilter');
    if (
      statusFilter !== undefined &&
      statusFilter !== 'PENDING_REDRIVE' &&
      !STATUSES.includes(statusFilter as ExecutionStatus)
    ) {
      throw validationError(
        `Value '${statusFilter}' at 'statusFilter' failed to satisfy constraint: Member must satisfy enum value set`,
      );
    }
    const limit = pageSize(body);
    const beforeSeq = decodePageToken(body);
    const records =
      statusFilter === 'PENDING_REDRIVE'
        ? []
        : this.env.store.list(machine.arn, {
            ...(statusFilter === undefined ? {} : { status: statusFilter as ExecutionStatus }),
            ...(beforeSeq === undefined ? {} : { beforeSeq }),
            limit: limit + 1,
          });
    const page = records.slice(0, limit);
    const last = page.at(-1);
    return {
      executions: page.map((record) => ({
        executionArn: record.executionArn,
        stateMachineArn: record.stateMachineArn,
        name: record.name,
        status: record.status,
        startDate: epochSeconds(record.startDate),
        ...(record.stopDate === undefined ? {} : { stopDate: epochSeconds(record.stopDate) }),
        redriveCount: record.redriveCount,
        ...(record.redriveDate === undefined ? {} : { redriveDate: epochSeconds(record.redriveDate) }),
      })),
      ...(records.length > limit && last ? { nextToken: encodePageToken(last.seq) } : {}),
    };
  }

  private getExecutionHistory(body: Body) {
    const record = this.execution(body);
    const limit = pageSize(body);
    const reverse = body.reverseOrder === true;
    const includeData = body.includeExecutionData !== false;
    const afterId = decodePageToken(body);
    const events = this.env.store.events(record.executionArn, {
      reverse,
      limit: limit + 1,
      ...(afterId === undefined ? {} : { afterId }),
    });
    const page = events.slice(0, limit);
    const last = page.at(-1);
    return {
      events: page.map((event: HistoryRecord) => ({
        timestamp: epochSeconds(event.timestamp),
        type: event.type,
        id: event.id,
        previousEventId: event.id - 1,
        ...(includeData ? event.details : withoutData(event.details)),
      })),
      ...(events.length > limit && last ? { nextToken: encodePageToken(last.id) } : {}),
    };
  }

  /** The attempt waiting on a token, or the error Step Functions answers for one that is not. */
  private waitingTask(body: Body): TaskAttempt {
    const token = requiredString(body, 'taskToken');
    if (token.length < 1 || token.length > 1024) throw invalidToken();
    const attempt = this.tokens.waiting(token);
    if (attempt) return attempt;
    const executionArn = TaskTokens.executionArnOf(token);
    if (!executionArn) throw invalidToken();
    if (!this.env.store.get(executionArn)) throw taskDoesNotExist();
    throw taskTimedOut();
  }

  private sendTaskSuccess(body: Body) {
    const output = parseJsonPayload(requiredString(body, 'output'), invalidOutput);
    if (!this.waitingTask(body).succeed(output as never)) throw taskTimedOut();
    return {};
  }

  private sendTaskFailure(body: Body) {
    const error = optionalString(body, 'error', 256);
    const cause = optionalString(body, 'cause', 32768);
    const failure = Object.assign(new Error(cause ?? ''), { name: error ?? '' });
    if (!this.waitingTask(body).fail(failure)) throw taskTimedOut();
    return {};
  }

  private sendTaskHeartbeat(body: Body) {
    if (!this.waitingTask(body).heartbeat()) throw taskTimedOut();
    return {};
  }

  private describeStateMachine(body: Body) {
    const machine = this.machine(body);
    return {
      stateMachineArn: machine.arn,
      name: machine.name,
      status: 'ACTIVE',
      definition: machine.definition,
      roleArn: machine.roleArn,
      type: 'STANDARD',
      creationDate: epochSeconds(this.env.creationDate),
      loggingConfiguration: { level: 'OFF', includeExecutionData: false },
      tracingConfiguration: { enabled: false },
    };
  }

  private describeStateMachineForExecution(body: Body) {
    const record = this.execution(body);
    const machine = this.env.machines.get(record.stateMachineArn);
    if (!machine) throw stateMachineDoesNotExist(record.stateMachineArn);
    return {
      stateMachineArn: machine.arn,
      name: machine.name,
      definition: machine.definition,
      roleArn: machine.roleArn,
      updateDate: epochSeconds(this.env.creationDate),
      loggingConfiguration: { level: 'OFF', includeExecutionData: false },
      tracingConfiguration: { enabled: false },
    };
  }

  private listStateMachines() {
    return {
      stateMachines: [...this.env.machines.values()].map((machine) => ({
        stateMachineArn: machine.arn,
        name: machine.name,
        type: 'STANDARD',
        creationDate: epochSeconds(this.env.creationDate),
      })),
    };
  }
}
