import { resourceEnv } from '../../../config/layout';
import { DynamoDbSubscriptions } from '../../adapters/dynamodb-subscriptions';
import { documentClient } from '../clients/dynamodb';
import { requireEnv } from '../env';
import { once } from '../once';

/** Which WebSocket connections follow which jobs. */
export const subscriptions = once(
  () => new DynamoDbSubscriptions(documentClient(), requireEnv(resourceEnv.connectionTable)),
);
