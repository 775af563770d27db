import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { S3Client } from '@aws-sdk/client-s3';
import { SQSClient } from '@aws-sdk/client-sqs';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { resourceEnv } from '../../config/layout';
import { DynamoDbApiKeyStore } from '../adapters/dynamodb-api-key-store';
import { DynamoDbJobStore } from '../adapters/dynamodb-job-store';
import { S3InputStore } from '../adapters/s3-input-store';
import { SqsJobQueue } from '../adapters/sqs-job-queue';
import { requireEnv, runtimeSettings } from './env';
import { tracer } from './observability';

/**
 * The adapters a handler uses, each built on first use and then kept for the
 * life of the execution environment. Endpoints come from the SDK's standard
 * environment (AWS_ENDPOINT_URL_*), which is all that differs locally.
 */

function once<T>(create: () => T): () => T {
  let value: T | undefined;
  return () => {
    value ??= create();
    return value;
  };
}

const documentClient = once(() =>
  DynamoDBDocumentClient.from(tracer.captureAWSv3Client(new DynamoDBClient({})), {
    marshallOptions: { removeUndefinedValues: true },
  }),
);

export const jobStore = once(
  () =>
    new DynamoDbJobStore(documentClient(), {
      tableName: requireEnv(resourceEnv.jobTable),
      retentionDays: runtimeSettings().jobRetentionDays,
    }),
);

export const apiKeyStore = once(
  () => new DynamoDbApiKeyStore(documentClient(), requireEnv(resourceEnv.apiKeyTable)),
);

export const jobQueue = once(
  () => new SqsJobQueue(tracer.captureAWSv3Client(new SQSClient({})), requireEnv(resourceEnv.jobQueueUrl)),
);

export const inputStore = once(
  () =>
    new S3InputStore(
      tracer.captureAWSv3Client(
        new S3Client({ forcePathStyle: process.env[resourceEnv.s3ForcePathStyle] === 'true' }),
      ),
      requireEnv(resourceEnv.inputBucket),
    ),
);
