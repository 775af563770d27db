import { resourceEnv } from '../../../config/layout';
import { DynamoDbMediaStore } from '../../adapters/dynamodb-media-store';
import { documentClient } from '../clients/dynamodb';
import { requireEnv } from '../env';
import { once } from '../once';

/** Tenants' media items and the retirements of their old versions, beside their jobs in the job table. */
export const mediaStore = once(
  () => new DynamoDbMediaStore(documentClient(), requireEnv(resourceEnv.jobTable)),
);
