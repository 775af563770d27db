import { resourceEnv } from '../../../config/layout';
import { DynamoDbReconcilerProgress } from '../../adapters/dynamodb-reconciler-progress';
import { documentClient } from '../clients/dynamodb';
import { requireEnv } from '../env';
import { once } from '../once';

export const reconcilerProgress = once(
  () => new DynamoDbReconcilerProgress(documentClient(), requireEnv(resourceEnv.jobTable)),
);
