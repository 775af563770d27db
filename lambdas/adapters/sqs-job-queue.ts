import {
  SendMessageBatchCommand,
  type SendMessageBatchCommandOutput,
  type SendMessageBatchRequestEntry,
  SendMessageCommand,
  type SQSClient,
} from '@aws-sdk/client-sqs';
import * as z from 'zod';
import type { ProviderName } from '../../config/providers';
import { chunksOf, mapWithConcurrency } from '../domain/concurrency';
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

/** SendMessageBatch takes at most 10 messages. */
const MESSAGES_PER_BATCH = 10;
/** Batches of one enqueueMany in flight at once. */
const BATCHES_AT_ONCE = 10;
/** Sends of a batch's entries SQS failed on its side (not the sender's fault) before they are given up. */
const SEND_ATTEMPTS = 3;

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
    await this.client.send(
      new SendMessageCommand({ QueueUrl: this.queueUrlOf(job, options), ...this.messageOf(job, options) }),
    );
  }

  /**
   * Ten messages to a SendMessageBatch, ten batches at a time. SQS answers a
   * batch entry by entry: entries it failed on its side are sent again with
   * backoff; those it calls the sender's fault, and every entry of a batch
   * that failed whole, are answered as not enqueued.
   */
  async enqueueMany(
    jobs: readonly QueuedJobRef[],
    options: EnqueueOptions = {},
  ): Promise<ReadonlyMap<string, unknown>> {
    const failed = new Map<string, unknown>();
    const byQueue = new Map<string, QueuedJobRef[]>();
    const seen = new Set<string>();
    for (const job of jobs) {
      if (seen.has(job.id)) continue;
      seen.add(job.id);
      try {
        const queueUrl = this.queueUrlOf(job, options);
        byQueue.set(queueUrl, [...(byQueue.get(queueUrl) ?? []), job]);
      } catch (error) {
        failed.set(job.id, error);
      }
    }
    const batches = [...byQueue].flatMap(([queueUrl, queued]) =>
      chunksOf(queued, MESSAGES_PER_BATCH).map((batch) => ({ queueUrl, batch })),
    );
    await mapWithConcurrency(batches, BATCHES_AT_ONCE, async ({ queueUrl, batch }) => {
      // Entry ids are the job ids: unique in a batch, and what a failure names.
      let entries: SendMessageBatchRequestEntry[] = batch.map((job) => ({
        Id: job.id,
        ...this.messageOf(job, options),
      }));
      for (let attempt = 1; entries.length > 0; attempt++) {
        let answer: SendMessageBatchCommandOutput;
        try {
          answer = await this.client.send(
            new SendMessageBatchCommand({ QueueUrl: queueUrl, Entries: entries }),
          );
        } catch (error) {
          for (const entry of entries) failed.set(entry.Id as string, error);
          return;
        }
        const retry = new Set<string>();
        for (const entry of answer.Failed ?? []) {
          const id = entry.Id as string;
          if (!entry.SenderFault && attempt < SEND_ATTEMPTS) retry.add(id);
          else
            failed.set(
              id,
              new Error(`SQS did not take the message of ${id}: ${entry.Code} ${entry.Message ?? ''}`.trim()),
            );
        }
        entries = entries.filter((entry) => retry.has(entry.Id as string));
        if (entries.length > 0) await new Promise((resolve) => setTimeout(resolve, 50 * 2 ** attempt));
      }
    });
    return failed;
  }

  private queueUrlOf(job: QueuedJobRef, options: EnqueueOptions): string {
    const queueUrl = options.handOff ? this.lanes.handOff : this.lanes.jobs?.[providerOf(job)];
    if (queueUrl === undefined) {
      throw new Error(
        options.handOff
          ? 'this function has no hand-off queue: it may not hand a slot to a waiting job'
          : `this function has no jobs queue of provider ${providerOf(job)}`,
      );
    }
    return queueUrl;
  }

  private messageOf(
    job: QueuedJobRef,
    options: EnqueueOptions,
  ): { MessageBody: string; DelaySeconds?: number } {
    const body: JobMessage = {
      jobId: job.id,
      ...(options.deferrals ? { deferrals: options.deferrals } : {}),
      ...(options.inLine ? { inLine: true as const } : {}),
    };
    return {
      MessageBody: JSON.stringify(body),
      // SQS delays a message by at most 15 minutes.
      ...(options.delaySeconds ? { DelaySeconds: Math.min(900, Math.round(options.delaySeconds)) } : {}),
    };
  }
}
