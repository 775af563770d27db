import { type SQSClient, StartMessageMoveTaskCommand } from '@aws-sdk/client-sqs';

/** Moves what the dead-letter queue holds back to the jobs queue, with SQS's own message move task. */
export class SqsDeadLetters {
  constructor(
    private readonly client: SQSClient,
    private readonly queues: { readonly deadLetterQueueArn: string; readonly jobQueueArn: string },
  ) {}

  async redrive(): Promise<{ readonly taskHandle: string }> {
    const { TaskHandle } = await this.client.send(
      new StartMessageMoveTaskCommand({
        SourceArn: this.queues.deadLetterQueueArn,
        DestinationArn: this.queues.jobQueueArn,
      }),
    );
    return { taskHandle: TaskHandle ?? '' };
  }
}
