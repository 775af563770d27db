import { SendMessageCommand, type SQSClient } from '@aws-sdk/client-sqs';
import { z } from 'zod';
import type { EnqueueOptions, JobQueue } from '../domain/ports';

/** The message body of the jobs queue: the job id (the job table is the truth) and how often it waited for a slot. */
export const jobMessage = z.object({
  jobId: z.string().regex(/^job_[a-z2-7]{26}$/),
  deferrals: z.number().int().min(0).optional(),
});
export type JobMessage = z.infer<typeof jobMessage>;

/** The queues a function may send job messages to; each function is given (and granted) only those it uses. */
export interface JobQueueLanes {
  /** The jobs queue: new jobs, deferred jobs and jobs sent again. */
  readonly jobs?: string;
  /** The hand-off lane: jobs handed a freed slot, which they already hold. */
  readonly handOff?: string;
}

/**
 * Job messages for the dispatcher, on two queues it consumes alike: the jobs
 * queue, and the hand-off lane for jobs that already hold a slot. The lane
 * exists because the jobs queue may hold thousands of visible messages of jobs
 * still looking for a slot; a slot handed to a job must not sit idle behind them.
 */
export class SqsJobQueue implements JobQueue {
  constructor(
    private readonly client: SQSClient,
    private readonly lanes: JobQueueLanes,
  ) {
    if (lanes.jobs === undefined && lanes.handOff === undefined) {
      throw new Error('SqsJobQueue needs the jobs queue, the hand-off queue or both');
    }
  }

  async enqueue(jobId: string, options: EnqueueOptions = {}): Promise<void> {
    const lane = options.handOff ? 'handOff' : 'jobs';
    const queueUrl = this.lanes[lane];
    if (queueUrl === undefined) {
      throw new Error(
        options.handOff
          ? 'this function has no hand-off queue: it may not hand a slot to a waiting job'
          : 'this function has no jobs queue: it may only hand slots to waiting jobs',
      );
    }
    const body: JobMessage = { jobId, ...(options.deferrals ? { deferrals: options.deferrals } : {}) };
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
