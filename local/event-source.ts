import {
  DeleteMessageBatchCommand,
  type Message,
  type MessageAttributeValue,
  ReceiveMessageCommand,
  type SQSClient,
} from '@aws-sdk/client-sqs';
import type { SQSEvent, SQSMessageAttribute, SQSRecord, SQSRecordAttributes } from 'aws-lambda';
import { chainDepth, isLambdaServiceError, RECURSION_LIMIT, traceHeaderAt } from './lambda-service';

/**
 * An SQS event source mapping, as Lambda runs one for the jobs queue: pollers
 * long-poll the queue, hand each batch to the function as an SQSEvent, and
 * delete what the function did not report in `batchItemFailures`. Reported
 * messages, and every message of a batch whose invocation failed, are left
 * alone and come back after the visibility timeout, until the redrive policy
 * moves them to the dead-letter queue. At most `maxConcurrency` invocations
 * run at once, one per poller.
 *
 * Recursive loop detection, as Lambda does it: each invocation runs under a
 * trace header whose Lineage counts the invocations of its chain, messages the
 * function sends carry it (SQS's `AWSTraceHeader`), and unless the function's
 * `RecursiveLoop` is `Allow`, a message whose chain has already invoked the
 * function 16 times is not delivered: it comes back after the visibility
 * timeout, and again, until the redrive policy moves it to the dead-letter queue.
 *
 * A batch the service throttles (TooManyRequestsException) is retried with
 * backoff while its messages stay invisible; if it is still throttled, they
 * come back after the visibility timeout.
 *
 * Unlike Lambda it does not wait for a batching window to fill a batch (the
 * CDK's window is short so jobs do not wait either), and it does not scale
 * pollers with the queue's depth.
 */
export interface SqsEventSourceOptions {
  readonly client: SQSClient;
  readonly queueUrl: string;
  readonly queueArn: string;
  readonly region: string;
  /** Messages per invocation, 1..10. */
  readonly batchSize: number;
  /** Invocations at once; Lambda's `ScalingConfig.MaximumConcurrency`. */
  readonly maxConcurrency: number;
  /**
   * The function invoked, whose chains recursive loop detection counts.
   * @default 'function'
   */
  readonly functionName?: string;
  /**
   * The function's `RecursiveLoop`: `Terminate` stops a chain after 16 invocations.
   * @default 'Terminate', as Lambda's
   */
  readonly recursiveLoop?: 'Allow' | 'Terminate';
  /**
   * Invokes the function with a batch; what it resolves to is the function's
   * response. `poller` (0 up to `maxConcurrency` - 1) names the poller, which
   * never has two invocations running: like a Lambda execution environment,
   * one handler instance per poller only ever runs one invocation at a time.
   * `traceHeader` is the one the invocation runs under.
   */
  readonly invoke: (event: SQSEvent, poller: number, traceHeader: string) => Promise<unknown>;
  /** Problems only: failed invocations, deletes and receives. */
  readonly log: (line: string) => void;
}

export interface SqsEventSource {
  /**
   * Stops polling and waits up to `graceMs` for the invocations in progress;
   * the messages of any still running then come back after the visibility timeout.
   */
  stop(graceMs?: number): Promise<void>;
}

/** Short, so a stop never waits long for a receive in progress; empty receives are cheap locally. */
const WAIT_TIME_SECONDS = 1;
const RECEIVE_RETRY_MS = 1000;
/** Backoff of a throttled batch: 100 ms doubling, with full jitter, five retries (about 3 s in all). */
const THROTTLE_RETRIES = 5;
const THROTTLE_BASE_MS = 100;

export function startSqsEventSource(options: SqsEventSourceOptions): SqsEventSource {
  const { client, queueUrl, log } = options;
  const functionName = options.functionName ?? 'function';
  let stopping = false;
  const wakeUps = new Set<() => void>();
  /** Sleeps unless stopping, and is cut short by a stop. */
  const pause = (ms: number) =>
    new Promise<void>((resolve) => {
      if (stopping) return resolve();
      const wake = () => {
        clearTimeout(timer);
        wakeUps.delete(wake);
        resolve();
      };
      const timer = setTimeout(wake, ms);
      wakeUps.add(wake);
    });

  // One receive problem is reported once, not once a second, and its end is reported too.
  let receiveProblem: string | undefined;
  const receiveFailed = (error: unknown) => {
    const problem = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
    if (problem !== receiveProblem) log(`cannot receive from the queue (retrying): ${problem}`);
    receiveProblem = problem;
  };
  const receiveSucceeded = () => {
    if (receiveProblem !== undefined) log('receiving from the queue again');
    receiveProblem = undefined;
  };

  async function poll(poller: number): Promise<void> {
    while (!stopping) {
      let messages: Message[];
      try {
        const received = await client.send(
          new ReceiveMessageCommand({
            QueueUrl: queueUrl,
            MaxNumberOfMessages: options.batchSize,
            WaitTimeSeconds: WAIT_TIME_SECONDS,
            // ApproximateReceiveCount and the rest of what Lambda puts in `attributes`.
            MessageSystemAttributeNames: ['All'],
            MessageAttributeNames: ['All'],
          }),
        );
        receiveSucceeded();
        messages = received.Messages ?? [];
      } catch (error) {
        receiveFailed(error);
        await pause(RECEIVE_RETRY_MS);
        continue;
      }
      // Messages received while stopping are handled all the same: left alone, they would stay invisible for the visibility timeout.
      if (messages.length > 0) await deliver(messages, poller);
    }
  }

  /** Invokes with the batch, retrying while the service throttles it. */
  async function invokeWithRetries(event: SQSEvent, poller: number, traceHeader: string): Promise<unknown> {
    for (let attempt = 0; ; attempt++) {
      try {
        return await options.invoke(event, poller, traceHeader);
      } catch (error) {
        const throttled = isLambdaServiceError(error) && error.name === 'TooManyRequestsException';
        if (!throttled || attempt >= THROTTLE_RETRIES || stopping) throw error;
        await pause(Math.random() * THROTTLE_BASE_MS * 2 ** attempt);
      }
    }
  }

  async function deliver(messages: readonly Message[], poller: number): Promise<void> {
    const records = messages.map((message) => sqsRecord(message, options));
    const depths = new Map(
      records.map((record) => [record.messageId, chainDepth(record.attributes.AWSTraceHeader, functionName)]),
    );
    const stopped =
      options.recursiveLoop === 'Allow'
        ? []
        : records.filter((record) => (depths.get(record.messageId) ?? 0) >= RECURSION_LIMIT);
    if (stopped.length > 0) {
      log(
        `recursive loop detected: ${stopped.length} message(s) already invoked ${functionName} ${RECURSION_LIMIT} times in one chain; ` +
          'the invocation is stopped (RecursiveInvocationException) and they come back after the visibility timeout',
      );
    }
    const event: SQSEvent = { Records: records.filter((record) => !stopped.includes(record)) };
    if (event.Records.length === 0) return;
    const depth = Math.max(...event.Records.map((record) => depths.get(record.messageId) ?? 0));
    let failed: ReadonlySet<string>;
    try {
      failed = failedMessageIds(
        await invokeWithRetries(event, poller, traceHeaderAt(functionName, depth + 1)),
        event.Records,
      );
    } catch (error) {
      log(
        `the function failed on a batch of ${event.Records.length}; it comes back after the visibility timeout: ${describe(error)}`,
      );
      return;
    }
    if (failed.size > 0) {
      log(
        `the function reported ${failed.size} of ${event.Records.length} message(s) as failed; they come back after the visibility timeout`,
      );
    }
    const done = event.Records.filter((record) => !failed.has(record.messageId));
    if (done.length === 0) return;
    try {
      const deleted = await client.send(
        new DeleteMessageBatchCommand({
          QueueUrl: queueUrl,
          Entries: done.map((record, index) => ({ Id: String(index), ReceiptHandle: record.receiptHandle })),
        }),
      );
      for (const failure of deleted.Failed ?? []) {
        log(`could not delete a handled message (${failure.Code}); it will be delivered again`);
      }
    } catch (error) {
      log(
        `could not delete ${done.length} handled message(s); they will be delivered again: ${describe(error)}`,
      );
    }
  }

  const pollers = Array.from({ length: options.maxConcurrency }, (_, poller) => poll(poller));
  let stopped: Promise<void> | undefined;
  return {
    stop(graceMs = 3000) {
      stopped ??= (async () => {
        stopping = true;
        for (const wake of [...wakeUps]) wake();
        let timer: NodeJS.Timeout | undefined;
        const gaveUp = new Promise<'gave up'>((resolve) => {
          timer = setTimeout(() => resolve('gave up'), graceMs);
        });
        const outcome = await Promise.race([Promise.all(pollers), gaveUp]);
        clearTimeout(timer);
        if (outcome === 'gave up') {
          log(
            `stopped with the function still running after ${graceMs} ms; its messages come back after the visibility timeout`,
          );
        }
      })();
      return stopped;
    },
  };
}

/**
 * The messages a response reports as failed, following Lambda's rules for
 * partial batch responses: no response, an empty one, or an empty or null
 * `batchItemFailures` is a complete success; a malformed response, or an
 * `itemIdentifier` that is missing, empty or not a message of the batch,
 * fails the whole batch.
 */
export function failedMessageIds(response: unknown, records: readonly SQSRecord[]): ReadonlySet<string> {
  const all = new Set(records.map((record) => record.messageId));
  if (response === undefined || response === null) return new Set();
  if (typeof response !== 'object' || Array.isArray(response)) return all;
  const failures = (response as { batchItemFailures?: unknown }).batchItemFailures;
  if (failures === undefined || failures === null) return new Set();
  if (!Array.isArray(failures)) return all;
  const failed = new Set<string>();
  for (const failure of failures) {
    const id = (failure as { itemIdentifier?: unknown } | null)?.itemIdentifier;
    if (typeof id !== 'string' || !all.has(id)) return all;
    failed.add(id);
  }
  return failed;
}

/** A received message as Lambda hands it to the function. */
export function sqsRecord(
  message: Message,
  source: Pick<SqsEventSourceOptions, 'queueArn' | 'region'>,
): SQSRecord {
  const attributes = message.Attributes ?? {};
  return {
    messageId: message.MessageId ?? '',
    receiptHandle: message.ReceiptHandle ?? '',
    body: message.Body ?? '',
    attributes: {
      ApproximateReceiveCount: attributes.ApproximateReceiveCount ?? '1',
      SentTimestamp: attributes.SentTimestamp ?? '',
      SenderId: attributes.SenderId ?? '',
      ApproximateFirstReceiveTimestamp: attributes.ApproximateFirstReceiveTimestamp ?? '',
      ...(attributes as Partial<SQSRecordAttributes>),
    },
    messageAttributes: Object.fromEntries(
      Object.entries(message.MessageAttributes ?? {}).map(([name, value]) => [name, messageAttribute(value)]),
    ),
    md5OfBody: message.MD5OfBody ?? '',
    ...(message.MD5OfMessageAttributes ? { md5OfMessageAttributes: message.MD5OfMessageAttributes } : {}),
    eventSource: 'aws:sqs',
    eventSourceARN: source.queueArn,
    awsRegion: source.region,
  };
}

/** Lambda's spelling of a message attribute: camel case, binary values in base64. */
function messageAttribute(value: MessageAttributeValue): SQSMessageAttribute {
  const base64 = (bytes: Uint8Array) => Buffer.from(bytes).toString('base64');
  return {
    ...(value.StringValue === undefined ? {} : { stringValue: value.StringValue }),
    ...(value.BinaryValue === undefined ? {} : { binaryValue: base64(value.BinaryValue) }),
    stringListValues: value.StringListValues ?? [],
    binaryListValues: (value.BinaryListValues ?? []).map(base64),
    dataType: value.DataType ?? 'String',
  };
}

/** The error with its stack, and the errors it collects (Powertools' batch failures, AggregateError) one per line. */
function describe(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  const collected =
    (error as { recordErrors?: unknown }).recordErrors ?? (error as { errors?: unknown }).errors;
  const causes = Array.isArray(collected)
    ? collected.map(
        (cause) =>
          `\n  caused by ${cause instanceof Error ? `${cause.name}: ${cause.message}` : String(cause)}`,
      )
    : [];
  return `${error.stack ?? `${error.name}: ${error.message}`}${causes.join('')}`;
}
