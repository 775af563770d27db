import { resourceEnv } from '../../../config/layout';
import { DynamoDbScheduleStore } from '../../adapters/dynamodb-schedule-store';
import { documentClient } from '../clients/dynamodb';
import { requireEnv } from '../env';
import { once } from '../once';

/** Tenants' recurring schedules, beside their jobs in the job table. */
export const scheduleStore = once(
  () => new DynamoDbScheduleStore(documentClient(), requireEnv(resourceEnv.jobTable)),
);
