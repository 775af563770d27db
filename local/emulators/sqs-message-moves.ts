import { randomUUID } from 'node:crypto';
import {
  DeleteMessageBatchCommand,
  GetQueueAttributesCommand,
  GetQueueUrlCommand,
  ListQueuesCommand,
  type Message,
  type MessageAttributeValue,
  QueueDoesNotExist,
  ReceiveMessageCommand,
  SendMessageBatchCommand,
  type SQSClient,
} from '@aws-sdk/client-sqs';

/**
 * SQS's message move tasks (StartMessageMoveTask, ListMessageMoveTasks,
 * CancelMessageMoveTask), which fauxqs lacks: what the admin redrive
 * (lambdas/adapters/sqs-dead-letters.ts) calls to move the dead-letter
 * queue back. They run on top of the emulator's own SQS API: a task
 * receives the source's messages, sends each one (body and attributes) to
 * its destination and deletes it from the source, until the source has
 * nothing visible left, as an asynchronous task like SQS's own.
 *
 * As in SQS: the source must be the dead-letter queue of some queue; without
 * `DestinationArn` messages go back to the queue they were dead-lettered
 * from (the message's `DeadLetterQueueSourceArn`, or else the one queue
 * whose redrive policy names the source); one task at a time per source;
 * `MaxNumberOfMessagesPerSecond` (1 to 500) caps the rate. Tasks live in
 * memory and end with the process.
 */

/** An SQS error, as the AWS JSON protocol reports it (`__type`) and as the query-compatible SDK reads it. */
export class SqsServiceError extends Error {
  constructor(
    readonly code: string,
    message: string,
  ) {
    super(message);
    this.name = code;
  }
}

type TaskStatus = 'RUNNING' | 'COMPLETED' | 'CANCELLING' | 'CANCELLED' | 'FAILED';

interface Task {
  readonly handle: string;
  readonly sourceArn: string;
  readonly destinationArn: string | undefined;
  readonly maxPerSecond: number | undefined;
  readonly startedAt: number;
  readonly toMove: number;
  status: TaskStatus;
  moved: number;
  failureReason?: string;
  done?: Promise<void>;
}

/** Tasks remembered per source queue; ListMessageMoveTasks shows at most this many. */
const HISTORY = 10;
const MAX_RATE = 500;
/** Long enough to send and delete a batch; a message a failed task leaves behind comes back after it. */
const MOVE_VISIBILITY_SECONDS = 30;

const isActive = (task: Task) => task.status === 'RUNNING' || task.status === 'CANCELLING';

export class MessageMoveTasks {
  readonly #tasks: Task[] = [];

  /** `client` calls the emulator itself; it exists only once the emulator listens. */
  constructor(private readonly client: () => SQSClient) {}

  /** The AWS JSON operations this adds to SQS, by action name. */
  readonly operations: Readonly<Record<string, (input: Record<string, unknown>) => Promise<unknown>>> = {
    StartMessageMoveTask: (input) => this.start(input),
    ListMessageMoveTasks: (input) => this.list(input),
    CancelMessageMoveTask: async (input) => this.cancel(input),
  };

  async start(input: Record<string, unknown>): Promise<{ TaskHandle: string }> {
    const sourceArn = requiredString(input, 'SourceArn');
    const destinationArn = optionalString(input, 'DestinationArn');
    const rate = input.MaxNumberOfMessagesPerSecond;
    if (
      rate !== undefined &&
      (!Number.isInteger(rate) || (rate as number) < 1 || (rate as number) > MAX_RATE)
    ) {
      throw new SqsServiceError(
        'InvalidParameterValue',
        `Value for parameter MaxNumberOfMessagesPerSecond is invalid. Reason: must be between 1 and ${MAX_RATE}.`,
      );
    }
    const source = await this.#queue(sourceArn, 'SourceArn');
    const redriveSources = await this.#redriveSourcesOf(sourceArn);
    if (redriveSources.length === 0) {
      throw new SqsServiceError(
        'UnsupportedOperation',
        'Source queue must be configured as a Dead Letter Queue.',
      );
    }
    const destination =
      destinationArn === undefined ? undefined : await this.#queue(destinationArn, 'DestinationArn');
    if (destinationArn === sourceArn) {
      throw new SqsServiceError(
        'InvalidParameterValue',
        'The source and destination queues must be different.',
      );
    }
    if (this.#tasks.some((task) => task.sourceArn === sourceArn && isActive(task))) {
      throw new SqsServiceError(
        'UnsupportedOperation',
        'There is already a task running. Only one active task is allowed for a source queue arn at a given time.',
      );
    }
    const { Attributes = {} } = await this.client().send(
      new GetQueueAttributesCommand({
        QueueUrl: source.url,
        AttributeNames: ['ApproximateNumberOfMessages'],
      }),
    );
    const task: Task = {
      // SQS's handles are base64 of the task id and its source.
      handle: Buffer.from(JSON.stringify({ taskId: randomUUID(), sourceArn })).toString('base64'),
      sourceArn,
      destinationArn,
      maxPerSecond: rate as number | undefined,
      startedAt: Date.now(),
      toMove: Number(Attributes.ApproximateNumberOfMessages ?? 0),
      status: 'RUNNING',
      moved: 0,
    };
    this.#remember(task);
    task.done = this.#run(task, source.url, destination?.url, redriveSources).catch((error: unknown) => {
      task.status = 'FAILED';
      task.failureReason = error instanceof Error ? error.message : String(error);
    });
    return { TaskHandle: task.handle };
  }

  async list(input: Record<string, unknown>): Promise<{ Results: Record<string, unknown>[] }> {
    const sourceArn = requiredString(input, 'SourceArn');
    const max = input.MaxResults ?? 1;
    if (!Number.isInteger(max) || (max as number) < 1 || (max as number) > HISTORY) {
      throw new SqsServiceError(
        'InvalidParameterValue',
        `Value for parameter MaxResults is invalid. Reason: must be between 1 and ${HISTORY}.`,
      );
    }
    await this.#queue(sourceArn, 'SourceArn');
    const results = this.#tasks
      .filter((task) => task.sourceArn === sourceArn)
      .reverse()
      .slice(0, max as number)
      .map((task) => ({
        ...(task.status === 'RUNNING' ? { TaskHandle: task.handle } : {}),
        Status: task.status,
        SourceArn: task.sourceArn,
        ...(task.destinationArn === undefined ? {} : { DestinationArn: task.destinationArn }),
        ...(task.maxPerSecond === undefined ? {} : { MaxNumberOfMessagesPerSecond: task.maxPerSecond }),
        ApproximateNumberOfMessagesMoved: task.moved,
        ApproximateNumberOfMessagesToMove: task.toMove,
        ...(task.failureReason === undefined ? {} : { FailureReason: task.failureReason }),
        StartedTimestamp: task.startedAt,
      }));
    return { Results: results };
  }

  cancel(input: Record<string, unknown>): { ApproximateNumberOfMessagesMoved: number } {
    const handle = requiredString(input, 'TaskHandle');
    const task = this.#tasks.find((candidate) => candidate.handle === handle);
    if (!task) throw new SqsServiceError('ResourceNotFoundException', 'Task does not exist.');
    if (task.status !== 'RUNNING') {
      throw new SqsServiceError('UnsupportedOperation', 'Only active tasks can be cancelled.');
    }
    task.status = 'CANCELLING';
    return { ApproximateNumberOfMessagesMoved: task.moved };
  }

  /** Cancels what is running and waits for it: a batch in hand is finished, not dropped. */
  async stop(): Promise<void> {
    for (const task of this.#tasks) if (task.status === 'RUNNING') task.status = 'CANCELLING';
    await Promise.all(this.#tasks.map((task) => task.done));
  }

  #remember(task: Task): void {
    this.#tasks.push(task);
    const ofSource = this.#tasks.filter((candidate) => candidate.sourceArn === task.sourceArn);
    const oldest = ofSource[0];
    if (ofSource.length > HISTORY && oldest && !isActive(oldest)) {
      this.#tasks.splice(this.#tasks.indexOf(oldest), 1);
    }
  }

  async #run(
    task: Task,
    sourceUrl: string,
    destinationUrl: string | undefined,
    redriveSources: readonly { url: string; arn: string }[],
  ): Promise<void> {
    const client = this.client();
    const urlOfArn = new Map(redriveSources.map((queue) => [queue.arn, queue.url]));
    const destinationOf = (message: Message): string => {
      if (destinationUrl) return destinationUrl;
      const origin = message.Attributes?.DeadLetterQueueSourceArn;
      const url = origin
        ? urlOfArn.get(origin)
        : redriveSources.length === 1
          ? redriveSources[0]?.url
          : undefined;
      if (!url) throw new Error('Cannot tell which source queue a message came from; give a DestinationArn.');
      return url;
    };
    while (task.status === 'RUNNING') {
      const { Messages = [] } = await client.send(
        new ReceiveMessageCommand({
          QueueUrl: sourceUrl,
          MaxNumberOfMessages: 10,
          WaitTimeSeconds: 0,
          VisibilityTimeout: MOVE_VISIBILITY_SECONDS,
          MessageAttributeNames: ['All'],
          MessageSystemAttributeNames: ['All'],
        }),
      );
      if (Messages.length === 0) break;
      const byDestination = new Map<string, Message[]>();
      for (const message of Messages) {
        const url = destinationOf(message);
        byDestination.set(url, [...(byDestination.get(url) ?? []), message]);
      }
      for (const [url, messages] of byDestination) {
        const sent = await client.send(
          new SendMessageBatchCommand({
            QueueUrl: url,
            Entries: messages.map((message, index) => ({
              Id: String(index),
              MessageBody: message.Body ?? '',
              ...(message.MessageAttributes
                ? { MessageAttributes: sendable(message.MessageAttributes) }
                : {}),
            })),
          }),
        );
        const failure = sent.Failed?.[0];
        if (failure)
          throw new Error(
            `Could not send a message to the destination: ${failure.Code} ${failure.Message ?? ''}`,
          );
        await client.send(
          new DeleteMessageBatchCommand({
            QueueUrl: sourceUrl,
            Entries: messages.map((message, index) => ({
              Id: String(index),
              ReceiptHandle: message.ReceiptHandle,
            })),
          }),
        );
        task.moved += messages.length;
      }
      if (task.maxPerSecond !== undefined) {
        const due = task.startedAt + (task.moved / task.maxPerSecond) * 1000;
        await new Promise((resolve) => setTimeout(resolve, Math.max(0, due - Date.now())));
      }
    }
    task.status = task.status === 'CANCELLING' ? 'CANCELLED' : 'COMPLETED';
  }

  /** The queue an ARN names, or ResourceNotFoundException as SQS answers for one that does not exist. */
  async #queue(arn: string, parameter: string): Promise<{ url: string; arn: string }> {
    const notFound = () =>
      new SqsServiceError(
        'ResourceNotFoundException',
        `The resource that you specified for the ${parameter} parameter doesn't exist.`,
      );
    const name = /^arn:aws[\w-]*:sqs:[\w-]+:\d{12}:([\w-]{1,80}(\.fifo)?)$/.exec(arn)?.[1];
    if (!name) throw notFound();
    let url: string | undefined;
    try {
      url = (await this.client().send(new GetQueueUrlCommand({ QueueName: name }))).QueueUrl;
    } catch (error) {
      if (error instanceof QueueDoesNotExist) throw notFound();
      throw error;
    }
    if (!url) throw notFound();
    const { Attributes = {} } = await this.client().send(
      new GetQueueAttributesCommand({ QueueUrl: url, AttributeNames: ['QueueArn'] }),
    );
    if (Attributes.QueueArn !== arn) throw notFound();
    return { url, arn };
  }

  /** The queues whose redrive policy sends their dead letters to `arn`. */
  async #redriveSourcesOf(arn: string): Promise<{ url: string; arn: string }[]> {
    const client = this.client();
    const sources: { url: string; arn: string }[] = [];
    let NextToken: string | undefined;
    do {
      const page = await client.send(new ListQueuesCommand({ MaxResults: 1000, NextToken }));
      for (const url of page.QueueUrls ?? []) {
        const { Attributes = {} } = await client.send(
          new GetQueueAttributesCommand({ QueueUrl: url, AttributeNames: ['QueueArn', 'RedrivePolicy'] }),
        );
        if (!Attributes.RedrivePolicy || !Attributes.QueueArn) continue;
        const policy = JSON.parse(Attributes.RedrivePolicy) as { deadLetterTargetArn?: string };
        if (policy.deadLetterTargetArn === arn) sources.push({ url, arn: Attributes.QueueArn });
      }
      NextToken = page.NextToken;
    } while (NextToken);
    return sources;
  }
}

function requiredString(input: Record<string, unknown>, name: string): string {
  const value = input[name];
  if (typeof value !== 'string' || value === '') {
    throw new SqsServiceError('MissingParameter', `The request must contain the parameter ${name}.`);
  }
  return value;
}

function optionalString(input: Record<string, unknown>, name: string): string | undefined {
  return input[name] === undefined ? undefined : requiredString(input, name);
}

/** A received attribute as SendMessage takes it: the list fields SQS reserves and never fills are left out. */
function sendable(attributes: Record<string, MessageAttributeValue>): Record<string, MessageAttributeValue> {
  return Object.fromEntries(
    Object.entries(attributes).map(([name, { DataType, StringValue, BinaryValue }]) => [
      name,
      {
        DataType,
        ...(StringValue === undefined ? {} : { StringValue }),
        ...(BinaryValue === undefined ? {} : { BinaryValue }),
      },
    ]),
  );
}
