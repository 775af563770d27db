import { existsSync, readFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import {
  nextRunAfter,
  parseScheduleExpression,
  type ScheduleExpression,
} from '../../config/schedule-expressions';
import { writeFileAtomically } from '../data-dir';
import { listen } from './listen';

/**
 * EventBridge Scheduler's schedule API as the handlers call it
 * (CreateSchedule, UpdateSchedule, DeleteSchedule, GetSchedule: REST-JSON on
 * `/schedules/{Name}`, reached with `AWS_ENDPOINT_URL_SCHEDULER`), and the
 * firing itself: every second it invokes each enabled schedule's target for
 * every occurrence that fell due, in order, with `<aws.scheduler.scheduled-time>`
 * in the target's Input replaced by the occurrence's time, and retries a
 * failed invocation up to the target's MaximumRetryAttempts. Occurrences are
 * computed by config/schedule-expressions.ts, the module the API validates
 * with, in the schedule's time zone.
 *
 * The emulator's clock is the machine's plus an offset that only moves
 * forward (`POST /_scheduler/clock {advanceMs}`): a test advances it a
 * minute and sees the minute's firing at once, with that minute's time, as
 * a deployed schedule would fire a minute later. Schedules are kept in
 * `<file>`, so a restarted stack fires them again. Requests are not
 * authenticated (the handlers' calls are checked against their role by the
 * local IAM), so it listens on loopback only.
 */
export interface SchedulerEmulator {
  /** For `AWS_ENDPOINT_URL_SCHEDULER` or a SchedulerClient's `endpoint`. */
  readonly endpoint: string;
  /** Fires everything due now; the tick calls it every second. */
  fireDue(): Promise<void>;
  stop(): Promise<void>;
}

/** What a target invocation looks like to the emulator: the function ARN and the Input. */
export type InvokeTarget = (arn: string, input: unknown) => Promise<unknown>;

interface StoredSchedule {
  readonly Name: string;
  readonly GroupName: string;
  readonly ScheduleExpression: string;
  readonly ScheduleExpressionTimezone?: string;
  /** Epoch seconds, as the SDK sends it. */
  readonly StartDate?: number;
  readonly State?: 'ENABLED' | 'DISABLED';
  readonly Target: {
    readonly Arn: string;
    readonly RoleArn: string;
    readonly Input?: string;
    readonly RetryPolicy?: { readonly MaximumRetryAttempts?: number };
  };
  readonly CreationDate: number;
  /** The last occurrence fired (or the moment it was put): the next is the first after it. */
  readonly firedThrough: number;
}

class ServiceError extends Error {
  constructor(
    readonly status: number,
    readonly type: string,
    message: string,
  ) {
    super(message);
  }
}

/** Scheduler's name rules for schedules and groups. */
const NAME = /^[0-9a-zA-Z\-_.]{1,64}$/;
/** At most this many occurrences of one schedule fire per tick, as a jumped clock could owe thousands. */
const MAX_OCCURRENCES_PER_TICK = 100;
const TICK_MS = 1000;

export async function startSchedulerEmulator(options: {
  readonly host: string;
  readonly region: string;
  readonly accountId: string;
  /** Where the schedules are kept across restarts. */
  readonly file: string;
  readonly invoke: InvokeTarget;
  readonly log: (line: string) => void;
}): Promise<SchedulerEmulator> {
  const schedules = new Map<string, StoredSchedule>();
  if (existsSync(options.file)) {
    for (const schedule of JSON.parse(readFileSync(options.file, 'utf8')) as StoredSchedule[]) {
      schedules.set(keyOf(schedule.GroupName, schedule.Name), schedule);
    }
  }
  let offsetMs = 0;
  const now = () => Date.now() + offsetMs;
  const save = () =>
    writeFileAtomically(options.file, `${JSON.stringify([...schedules.values()], null, 2)}\n`);
  const arnOf = (group: string, name: string) =>
    `arn:aws:scheduler:${options.region}:${options.accountId}:schedule/${group}/${name}`;

  function put(name: string, body: Record<string, unknown>, creating: boolean): StoredSchedule {
    const group = typeof body.GroupName === 'string' ? body.GroupName : 'default';
    const existing = schedules.get(keyOf(group, name));
    if (creating && existing) {
      throw new ServiceError(409, 'ConflictException', `Schedule ${name} already exists.`);
    }
    if (!creating && !existing) {
      throw new ServiceError(404, 'ResourceNotFoundException', `Schedule ${name} does not exist.`);
    }
    const expression = body.ScheduleExpression;
    const target = body.Target as StoredSchedule['Target'] | undefined;
    if (typeof expression !== 'string' || !target?.Arn || !target.RoleArn) {
      throw new ServiceError(400, 'ValidationException', 'ScheduleExpression and Target are required.');
    }
    try {
      parseScheduleExpression(expression);
    } catch (error) {
      throw new ServiceError(
        400,
        'ValidationException',
        `Invalid Schedule Expression ${expression}: ${(error as Error).message}`,
      );
    }
    const schedule: StoredSchedule = {
      Name: name,
      GroupName: group,
      ScheduleExpression: expression,
      ...(typeof body.ScheduleExpressionTimezone === 'string'
        ? { ScheduleExpressionTimezone: body.ScheduleExpressionTimezone }
        : {}),
      ...(typeof body.StartDate === 'number' ? { StartDate: body.StartDate } : {}),
      State: body.State === 'DISABLED' ? 'DISABLED' : 'ENABLED',
      Target: target,
      CreationDate: existing?.CreationDate ?? Math.floor(now() / 1000),
      // An update starts counting again from now, as Scheduler re-evaluates an updated schedule.
      firedThrough: now(),
    };
    schedules.set(keyOf(group, name), schedule);
    save();
    return schedule;
  }

  async function serve(request: IncomingMessage, response: ServerResponse): Promise<void> {
    const url = new URL(request.url ?? '/', 'http://scheduler');
    try {
      if (url.pathname === '/_scheduler/clock' && request.method === 'POST') {
        const { advanceMs } = await readJson(request);
        if (typeof advanceMs !== 'number' || !(advanceMs >= 0)) {
          throw new ServiceError(400, 'ValidationException', 'advanceMs must be a number ≥ 0');
        }
        offsetMs += advanceMs;
        await fireDue();
        return send(response, 200, { now: new Date(now()).toISOString() });
      }
      const match = /^\/schedules\/([^/]+)$/.exec(url.pathname);
      if (!match) throw new ServiceError(404, 'ResourceNotFoundException', 'Unknown operation.');
      const name = decodeURIComponent(match[1] as string);
      if (!NAME.test(name))
        throw new ServiceError(400, 'ValidationException', `Invalid schedule name ${name}.`);
      const group = url.searchParams.get('groupName') ?? 'default';
      switch (request.method) {
        case 'POST':
        case 'PUT': {
          const schedule = put(name, await readJson(request), request.method === 'POST');
          return send(response, 200, { ScheduleArn: arnOf(schedule.GroupName, name) });
        }
        case 'GET': {
          const schedule = schedules.get(keyOf(group, name));
          if (!schedule)
            throw new ServiceError(404, 'ResourceNotFoundException', `Schedule ${name} does not exist.`);
          const { firedThrough: _fired, ...shown } = schedule;
          return send(response, 200, {
            ...shown,
            Arn: arnOf(group, name),
            FlexibleTimeWindow: { Mode: 'OFF' },
          });
        }
        case 'DELETE': {
          if (!schedules.delete(keyOf(group, name))) {
            throw new ServiceError(404, 'ResourceNotFoundException', `Schedule ${name} does not exist.`);
          }
          save();
          return send(response, 200, {});
        }
        default:
          throw new ServiceError(405, 'ValidationException', `Method ${request.method} not allowed.`);
      }
    } catch (error) {
      if (error instanceof ServiceError) {
        response.setHeader('x-amzn-errortype', error.type);
        return send(response, error.status, { Message: error.message, message: error.message });
      }
      return send(response, 500, { Message: 'Internal error' });
    }
  }

  let firing: Promise<void> | undefined;
  /** Fires each enabled schedule's due occurrences, oldest first; one pass at a time. */
  function fireDue(): Promise<void> {
    if (firing) return firing;
    const pass = (async () => {
      // Settled before the pass starts, so a pass that finds nothing to wait on cannot leave itself behind.
      await Promise.resolve();
      for (const schedule of [...schedules.values()]) {
        if (schedule.State === 'DISABLED') continue;
        await fireSchedule(schedule);
      }
    })();
    firing = pass;
    return pass.finally(() => {
      if (firing === pass) firing = undefined;
    });
  }

  async function fireSchedule(schedule: StoredSchedule): Promise<void> {
    const expression: ScheduleExpression = parseScheduleExpression(schedule.ScheduleExpression);
    const timezone = schedule.ScheduleExpressionTimezone ?? 'UTC';
    const start = new Date((schedule.StartDate ?? schedule.CreationDate) * 1000);
    const key = keyOf(schedule.GroupName, schedule.Name);
    let through = schedule.firedThrough;
    // A rate schedule's first occurrence is its start itself.
    const after = expression.kind === 'rate' && through < start.getTime() ? start.getTime() - 1 : through;
    let next = nextRunAfter(expression, timezone, new Date(after), start);
    for (let fired = 0; next && next.getTime() <= now() && fired < MAX_OCCURRENCES_PER_TICK; fired++) {
      // Deleted, disabled or replaced meanwhile: a replacement counts from its own time.
      const before = schedules.get(key);
      if (!before || before.State === 'DISABLED' || before.firedThrough !== through) return;
      await deliver(schedule, next);
      through = next.getTime();
      const current = schedules.get(key);
      if (current) {
        schedules.set(key, { ...current, firedThrough: through });
        save();
      }
      next = nextRunAfter(expression, timezone, next, start);
    }
  }

  async function deliver(schedule: StoredSchedule, at: Date): Promise<void> {
    const scheduledTime = at.toISOString().replace(/\.\d{3}Z$/, 'Z');
    const input = JSON.parse(
      (schedule.Target.Input ?? '{}').replaceAll('<aws.scheduler.scheduled-time>', scheduledTime),
    ) as unknown;
    const attempts = 1 + (schedule.Target.RetryPolicy?.MaximumRetryAttempts ?? 185);
    for (let attempt = 1; attempt <= attempts; attempt++) {
      try {
        await options.invoke(schedule.Target.Arn, input);
        return;
      } catch (error) {
        if (attempt === attempts) {
          options.log(
            `scheduler: ${schedule.Name} at ${scheduledTime} failed ${attempts} times; dropped (a deployed schedule sends it to its dead-letter queue): ${(error as Error).message}`,
          );
        }
      }
    }
  }

  const server = createServer((request, response) => {
    serve(request, response).catch(() => response.destroy());
  });
  const listening = await listen(server, options.host);
  const timer = setInterval(() => {
    fireDue().catch((error: unknown) => options.log(`scheduler: a tick failed: ${(error as Error).message}`));
  }, TICK_MS);
  return {
    endpoint: listening.endpoint,
    fireDue,
    async stop() {
      clearInterval(timer);
      await firing?.catch(() => undefined);
      await listening.stop();
    },
  };
}

const keyOf = (group: string, name: string) => `${group}/${name}`;

function send(response: ServerResponse, status: number, body: unknown): void {
  response.writeHead(status, { 'content-type': 'application/json' });
  response.end(JSON.stringify(body));
}

async function readJson(request: IncomingMessage): Promise<Record<string, unknown>> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of request) {
    size += (chunk as Buffer).length;
    if (size > 1024 * 1024) throw new ServiceError(413, 'ValidationException', 'Request too large.');
    chunks.push(chunk as Buffer);
  }
  const text = Buffer.concat(chunks).toString('utf8');
  if (text === '') return {};
  try {
    const body = JSON.parse(text) as unknown;
    if (body && typeof body === 'object' && !Array.isArray(body)) return body as Record<string, unknown>;
  } catch {
    // fall through
  }
  throw new ServiceError(400, 'ValidationException', 'The body is not a JSON object.');
}
