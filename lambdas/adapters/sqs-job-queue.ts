import { SendMessageCommand, type SQSClient } from '@aws-sdk/client-sqs';
import { z } from 'zod';
import type { EnqueueOptions, JobQueue } from '../domain/ports';

/** The message body of the jobs queue: the job id (the job table is the truth) and how often it waited for a slot. */
export const jobMessage = z.object({
  jobId: z.string().regex(/^job_[a-z2-7]{26}$/),
  deferrals: z.number().int().min(0).optional(),
});
export type JobMessage = z.infer<typeof jobMessage>;

export class SqsJobQueue implements JobQueue {
  constructor(
    private readonly client: SQSClient,
    private readonly queueUrl: string,
  ) {}

  async enqueue(jobId: string, options: EnqueueOptions = {}): Promise<void> {
    const body: JobMessage = { jobId, ...(options.deferrals ? { deferrals: options.deferrals } : {}) };
    await this.client.send(
      new SendMessageCommand({
        QueueUrl: this.queueUrl,
        MessageBody: JSON.stringify(body),
        // SQS delays a message by at most 15 minutes.
        ...(options.delaySeconds ? { DelaySeconds: Math.min(900, Math.round(options.delaySeconds)) } : {}),
      }),
    );
  }
}
