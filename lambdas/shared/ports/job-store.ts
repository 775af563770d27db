import { resourceEnv } from '../../../config/layout';
import { DynamoDbJobStore } from '../../adapters/dynamodb-job-store';
import { documentClient } from '../clients/dynamodb';
import { requireEnv, runtimeSettings } from '../env';
import { once } from '../once';

export const jobStore = once(
  () =>
    new DynamoDbJobStore(documentClient(), {
      tableName: requireEnv(resourceEnv.jobTable),
      retentionDays: runtimeSettings().jobRetentionDays,
    }),
);
