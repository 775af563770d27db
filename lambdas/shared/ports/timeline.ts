import { resourceEnv } from '../../../config/layout';
import { DynamoDbTimeline } from '../../adapters/dynamodb-timeline';
import { documentClient } from '../clients/dynamodb';
import { requireEnv, runtimeSettings } from '../env';
import { once } from '../once';

export const timeline = once(
  () =>
    new DynamoDbTimeline(documentClient(), {
      tableName: requireEnv(resourceEnv.jobTable),
      retentionDays: runtimeSettings().jobRetentionDays,
    }),
);
