import { SendMessageCommand, type SQSClient } from '@aws-sdk/client-sqs';
import { z } from 'zod';
import type { ProviderName } from '../../config/providers';
import { providerOf } from '../domain/job';
import type { EnqueueOptions, JobQueue, QueuedJobRef } from '../domain/ports';

/** The message body of the jobs queue: the job id (the job table is the truth) and how often it waited for a slot. */
export const jobMessage = z.object({
  jobId: z.string().regex(/^job_[a-z2-7]{26}$/),
  deferrals: z.number().int().min(0).optional(),
  /** The job was put in its line before this message was sent. */
  inLine: z.literal(true).optional(),
});
export type JobMessage = z.infer<typeof jobMessage>;

/** The queues a function may send job messages to; each function is given (and granted) only those it uses. */
export interface JobQueueLanes {
  /** Each provider's jobs queue: its new jobs, deferred jobs and jobs sent again. */
  readonly jobs?: Partial<Readonly<Record<ProviderName, string>>>;
  /** The hand-off lane: jobs handed a freed slot, which they already hold. */
  readonly handOff?: string;
}

/**
 * Job messages for the dispatcher, on queues it consumes alike: one jobs queue
 * per provider, so thousands of jobs waiting for one provider's slots never
 * stand in front of another provider's, and the hand-off lane for jobs that
 * already hold a slot, so a slot handed to a job does not sit idle behind its
 * provider's backlog.
 */
export class SqsJobQueue implements JobQueue {
  constructor(
    private readonly client: SQSClient,
    private readonly lanes: JobQueueLanes,
  ) {
    if (Object.keys(lanes.jobs ?? {}).length === 0 && lanes.handOff === undefined) {
      throw new Error('SqsJobQueue needs a jobs queue, the hand-off queue or both');
    }
  }

  async enqueue(job: QueuedJobRef, options: EnqueueOptions = {}): Promise<void> {
    const queueUrl = options.handOff ? this.lanes.handOff : this.lanes.jobs?.[providerOf(job)];
    if (queueUrl === undefined) {
      throw new Error(
        options.handOff
          ? 'this function has no hand-off queue: it may not hand a slot to a waiting job'
          : `this function has no jobs queue of provider ${providerOf(job)}`,
      );
    }
    const body: JobMessage = {
      jobId: job.id,
      ...(options.deferrals ? { deferrals: options.deferrals } : {}),
      ...(options.inLine ? { inLine: true as const } : {}),
    };
    await this.client.send(
      new SendMessageCommand({
        QueueUrl: queueUrl,
        MessageBody: JSON.stringify(body),
        // SQS delays a message by at most 15 minutes.
        ...(options.delaySeconds ? { DelaySeconds: Math.min(900, Math.round(options.delaySeconds)) } : {}),
      }),
    );
  }
}
