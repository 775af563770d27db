import {
  type EventBridgeClient,
  PutEventsCommand,
  type PutEventsRequestEntry,
} from '@aws-sdk/client-eventbridge';
import {
  EVENT_SOURCE,
  type LifecycleEvent,
  PUT_EVENTS_LIMITS,
  putEventsEntrySize,
} from '../../config/events';
import type { EventPublisher } from '../domain/ports';

/** Entries EventBridge refused for a reason a later try cannot change. */
export class EventsNotPutError extends Error {
  override readonly name = 'EventsNotPut';
}

/** How often entries EventBridge failed one by one (`FailedEntryCount`) are tried, and the first pause. */
const ATTEMPTS = 3;
const FIRST_PAUSE_MS = 100;

/**
 * Entry error codes a later try may not meet: the service's own trouble and
 * throttling. Anything else (a malformed detail, a bus that does not exist,
 * access denied) is the request's and is thrown at once.
 */
const RETRIABLE = new Set(['InternalFailure', 'InternalException', 'ThrottlingException']);

/**
 * The deployment's EventBridge bus. Events go in requests of at most 10
 * entries and 256 KB of entries (config/events.ts, counted as EventBridge
 * counts them); an event bigger than a request may hold is refused before
 * anything is sent. A request EventBridge answers with failed entries
 * (`FailedEntryCount`) is tried again with those entries alone, a few times
 * with a pause that doubles; what still fails is thrown, so the caller's own
 * retry puts it again (consumers drop the repeats by `detail.eventId`).
 */
export class EventBridgeEvents implements EventPublisher {
  constructor(
    private readonly client: EventBridgeClient,
    private readonly eventBusName: string,
    private readonly pause: (ms: number) => Promise<void> = (ms) =>
      new Promise((resolve) => setTimeout(resolve, ms)),
  ) {}

  async publish(events: readonly LifecycleEvent[]): Promise<void> {
    for (const batch of batchesOf(events.map((event) => this.entryOf(event)))) await this.put(batch);
  }

  private entryOf(event: LifecycleEvent): PutEventsRequestEntry {
    const entry: PutEventsRequestEntry = {
      EventBusName: this.eventBusName,
      Source: EVENT_SOURCE,
      DetailType: event.detailType,
      Detail: JSON.stringify(event.detail),
      Time: new Date(event.detail.occurredAt),
    };
    const size = putEventsEntrySize(entry);
    if (size > PUT_EVENTS_LIMITS.requestEntriesBytes) {
      throw new EventsNotPutError(
        `A ${event.detailType} event is ${size} bytes; EventBridge takes at most ${PUT_EVENTS_LIMITS.requestEntriesBytes}.`,
      );
    }
    return entry;
  }

  private async put(entries: PutEventsRequestEntry[]): Promise<void> {
    let pending = entries;
    for (let attempt = 1; ; attempt++) {
      const answer = await this.client.send(new PutEventsCommand({ Entries: pending }));
      if (!answer.FailedEntryCount) return;
      // Results are in the order of the entries: a failed one has an ErrorCode.
      const failed = pending.flatMap((entry, index) => {
        const code = answer.Entries?.[index]?.ErrorCode;
        return code ? [{ entry, code, message: answer.Entries?.[index]?.ErrorMessage ?? '' }] : [];
      });
      const permanent = failed.find(({ code }) => !RETRIABLE.has(code));
      if (permanent || attempt >= ATTEMPTS || failed.length === 0) {
        const shown = permanent ?? failed[0];
        throw new EventsNotPutError(
          `EventBridge did not take ${answer.FailedEntryCount} of ${pending.length} events: ${shown?.code ?? 'unknown'} ${shown?.message ?? ''}`.trim(),
        );
      }
      pending = failed.map(({ entry }) => entry);
      await this.pause(FIRST_PAUSE_MS * 2 ** (attempt - 1));
    }
  }
}

/** Entries in order, cut into requests of at most 10 entries and 256 KB of entries. */
export function batchesOf<E extends PutEventsRequestEntry>(entries: readonly E[]): E[][] {
  const batches: E[][] = [];
  let current: E[] = [];
  let bytes = 0;
  for (const entry of entries) {
    const size = putEventsEntrySize(entry);
    if (
      current.length === PUT_EVENTS_LIMITS.entriesPerRequest ||
      bytes + size > PUT_EVENTS_LIMITS.requestEntriesBytes
    ) {
      batches.push(current);
      current = [];
      bytes = 0;
    }
    current.push(entry);
    bytes += size;
  }
  if (current.length > 0) batches.push(current);
  return batches;
}
