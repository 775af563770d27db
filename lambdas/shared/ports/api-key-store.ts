import { resourceEnv } from '../../../config/layout';
import { DynamoDbApiKeyStore } from '../../adapters/dynamodb-api-key-store';
import { documentClient } from '../clients/dynamodb';
import { requireEnv } from '../env';
import { once } from '../once';

export const apiKeyStore = once(
  () => new DynamoDbApiKeyStore(documentClient(), requireEnv(resourceEnv.apiKeyTable)),
);
