import { resourceEnv } from '../../../config/layout';
import { DynamoDbStreamTickets } from '../../adapters/dynamodb-stream-tickets';
import { documentClient } from '../clients/dynamodb';
import { requireEnv } from '../env';
import { once } from '../once';

export const streamTickets = once(
  () => new DynamoDbStreamTickets(documentClient(), requireEnv(resourceEnv.jobTable)),
);
