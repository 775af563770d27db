import { SendMessageCommand, type SQSClient } from '@aws-sdk/client-sqs';
import type { JobQueue } from '../domain/ports';

/** The message body of the jobs queue: the job id only; the job table is the truth. */
export interface JobMessage {
  readonly jobId: string;
}

export class SqsJobQueue implements JobQueue {
  constructor(
    private readonly client: SQSClient,
    private readonly queueUrl: string,
  ) {}

  async enqueue(jobId: string): Promise<void> {
    const body: JobMessage = { jobId };
    await this.client.send(
      new SendMessageCommand({ QueueUrl: this.queueUrl, MessageBody: JSON.stringify(body) }),
    );
  }
}
