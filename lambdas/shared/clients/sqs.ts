import { SQSClient } from '@aws-sdk/client-sqs';
import { once } from '../once';

/** The SQS client of the job queues and the dead-letter redrive. */
export const sqsClient = once(() => new SQSClient({}));
