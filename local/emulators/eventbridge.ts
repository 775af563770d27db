import { randomUUID } from 'node:crypto';
import { appendFileSync, existsSync, mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { PUT_EVENTS_LIMITS, putEventsEntrySize } from '../../config/events';
import { ServiceError, startAwsJsonServer } from './aws-json';

/**
 * EventBridge's PutEvents, which is all the handlers call (through the SDK's
 * EventBridgeClient, reached with `AWS_ENDPOINT_URL_EVENTBRIDGE`), on the
 * SDK's wire protocol (AWS JSON 1.1): POST / with `X-Amz-Target:
 * AWSEvents.PutEvents`. It holds requests to PutEvents' documented limits
 * (config/events.ts): 1 to 10 entries and 256 KB of entries a request, each
 * counted as EventBridge counts it, a source and a detail-type of the
 * documented lengths, a detail that is a JSON object, and a bus that exists:
 * only the buses the synthesized template declares do. Rules and targets are
 * not emulated: an event goes nowhere but into the bus's log.
 *
 * Every event put is appended, as EventBridge would deliver it to a target,
 * to `<dataDir>/events.jsonl`, which outlives the stack; `GET /_events/<bus>`
 * answers `{events}` of one bus, oldest first, for tests and operators.
 * Requests are not authenticated (the handlers' calls are checked against
 * their role by the local IAM), so it listens on loopback only.
 */
export interface EventBridgeEmulator {
  /** For `AWS_ENDPOINT_URL_EVENTBRIDGE` or an EventBridgeClient's `endpoint`. */
  readonly endpoint: string;
  /** The events put on `bus` (a name), oldest first, from the durable log. */
  events(bus: string): DeliveredEvent[];
  stop(): Promise<void>;
}

/** An event as EventBridge hands it to a rule's target. */
export interface DeliveredEvent {
  readonly version: '0';
  readonly id: string;
  readonly 'detail-type': string;
  readonly source: string;
  readonly account: string;
  readonly time: string;
  readonly region: string;
  readonly resources: readonly string[];
  readonly detail: unknown;
  /** Not in what a target receives: which bus it was put on, for reading one bus's log. */
  readonly 'event-bus-name': string;
}

/** Room for ten entries of 256 KB of JSON, escaped: well above anything the limits let through. */
const MAX_BODY_BYTES = 8 * 1024 * 1024;

interface RequestEntry {
  readonly Source?: unknown;
  readonly DetailType?: unknown;
  readonly Detail?: unknown;
  readonly Resources?: unknown;
  readonly EventBusName?: unknown;
  readonly Time?: unknown;
}

export async function startEventBridgeEmulator(options: {
  readonly host: string;
  readonly region: string;
  readonly accountId: string;
  /** The names of the buses that exist: the template's. */
  readonly buses: readonly string[];
  readonly dataDir: string;
}): Promise<EventBridgeEmulator> {
  mkdirSync(options.dataDir, { recursive: true });
  const logFile = join(options.dataDir, 'events.jsonl');
  const arnPrefix = `arn:aws:events:${options.region}:${options.accountId}:event-bus/`;
  const buses = new Set(options.buses);

  /** A bus named by name or ARN, as PutEvents accepts; absent: the account's default bus, not emulated. */
  function busOf(named: unknown): string {
    const name = typeof named === 'string' && named !== '' ? named : 'default';
    const bare = name.startsWith(arnPrefix) ? name.slice(arnPrefix.length) : name;
    if (!buses.has(bare))
      throw new ServiceError('ResourceNotFoundException', `Event bus ${bare} does not exist.`);
    return bare;
  }

  /** One entry's result: put (and logged), or refused with EventBridge's entry error code. */
  function putEntry(entry: RequestEntry, bus: string): Record<string, string> {
    const { Source, DetailType, Detail, Resources } = entry;
    if (typeof Source !== 'string' || Source === '' || Source.length > PUT_EVENTS_LIMITS.sourceLength) {
      return { ErrorCode: 'InvalidArgument', ErrorMessage: 'Parameter Source is not valid.' };
    }
    if (Source.startsWith('aws.')) {
      return {
        ErrorCode: 'NotAuthorizedForSourceException',
        ErrorMessage: `Not authorized for the source ${Source}.`,
      };
    }
    if (
      typeof DetailType !== 'string' ||
      DetailType === '' ||
      DetailType.length > PUT_EVENTS_LIMITS.detailTypeLength
    ) {
      return { ErrorCode: 'InvalidArgument', ErrorMessage: 'Parameter DetailType is not valid.' };
    }
    let detail: unknown;
    try {
      detail = JSON.parse(typeof Detail === 'string' ? Detail : '');
    } catch {
      detail = undefined;
    }
    if (detail === null || typeof detail !== 'object' || Array.isArray(detail)) {
      return { ErrorCode: 'MalformedDetail', ErrorMessage: 'Detail is malformed.' };
    }
    const id = randomUUID();
    const time = typeof entry.Time === 'number' ? new Date(entry.Time * 1000) : new Date();
    const event: DeliveredEvent = {
      version: '0',
      id,
      'detail-type': DetailType,
      source: Source,
      account: options.accountId,
      time: `${time.toISOString().slice(0, 19)}Z`,
      region: options.region,
      resources: Array.isArray(Resources) ? Resources.map(String) : [],
      detail,
      'event-bus-name': bus,
    };
    appendFileSync(logFile, `${JSON.stringify(event)}\n`);
    return { EventId: id };
  }

  function putEvents(body: Record<string, unknown>): Record<string, unknown> {
    const entries = body.Entries;
    const { entriesPerRequest, requestEntriesBytes } = PUT_EVENTS_LIMITS;
    if (!Array.isArray(entries) || entries.length < 1 || entries.length > entriesPerRequest) {
      throw new ServiceError(
        'ValidationException',
        `1 validation error detected: Value at 'entries' failed to satisfy constraint: Member must have length less than or equal to ${entriesPerRequest} and greater than or equal to 1`,
      );
    }
    const typed = entries as RequestEntry[];
    const size = typed.reduce(
      (sum, entry) =>
        sum +
        putEventsEntrySize({
          Time: entry.Time,
          Source: typeof entry.Source === 'string' ? entry.Source : undefined,
          DetailType: typeof entry.DetailType === 'string' ? entry.DetailType : undefined,
          Detail: typeof entry.Detail === 'string' ? entry.Detail : undefined,
          Resources: Array.isArray(entry.Resources) ? entry.Resources.map(String) : undefined,
        }),
      0,
    );
    if (size > requestEntriesBytes) {
      throw new ServiceError(
        'ValidationException',
        `Total size of the entries in the request is over the limit (${size} bytes; at most ${requestEntriesBytes}).`,
      );
    }
    // Every bus named must exist before anything is put.
    const named = typed.map((entry) => busOf(entry.EventBusName));
    const results = typed.map((entry, index) => putEntry(entry, named[index] as string));
    return { FailedEntryCount: results.filter((result) => result.ErrorCode).length, Entries: results };
  }

  function events(bus: string): DeliveredEvent[] {
    if (!existsSync(logFile)) return [];
    return readFileSync(logFile, 'utf8')
      .split('\n')
      .filter((line) => line.trim() !== '')
      .flatMap((line) => {
        try {
          return [JSON.parse(line) as DeliveredEvent];
        } catch {
          // A line cut short by a crash mid-append: the event was never answered as put.
          return [];
        }
      })
      .filter((event) => event['event-bus-name'] === bus);
  }

  const server = await startAwsJsonServer(options.host, {
    targetPrefix: 'AWSEvents.',
    maxBodyBytes: MAX_BODY_BYTES,
    operations: { PutEvents: putEvents },
    internalError: { type: 'InternalException', message: 'The local EventBridge failed.' },
    get: (path) => {
      const bus = /^\/_events\/([^/]+)$/.exec(path)?.[1];
      return bus === undefined ? undefined : { events: events(decodeURIComponent(bus)) };
    },
  });
  return { endpoint: server.endpoint, events, stop: server.stop };
}
