import { resourceEnv } from '../../../config/layout';
import { SqsDeadLetters } from '../../adapters/sqs-dead-letters';
import { sqsClient } from '../clients/sqs';
import { requireEnv } from '../env';
import { once } from '../once';

export const deadLetters = once(
  () =>
    new SqsDeadLetters(sqsClient(), {
      deadLetterQueueArn: requireEnv(resourceEnv.deadLetterQueueArn),
      jobQueueArn: requireEnv(resourceEnv.jobQueueArn),
    }),
);
