import { jobQueueEnv, resourceEnv } from '../../../config/layout';
import { PROVIDER_NAMES } from '../../../config/providers';
import { SqsJobQueue } from '../../adapters/sqs-job-queue';
import { sqsClient } from '../clients/sqs';
import { once } from '../once';

/** Each function has the queues it was granted: the steps function the hand-off lane only, the api function the jobs queues only. */
export const jobQueue = once(
  () =>
    new SqsJobQueue(sqsClient(), {
      jobs: Object.fromEntries(
        PROVIDER_NAMES.flatMap((provider) => {
          const url = process.env[jobQueueEnv(provider)];
          return url ? [[provider, url]] : [];
        }),
      ),
      handOff: process.env[resourceEnv.handOffQueueUrl] || undefined,
    }),
);
