import { resourceEnv } from '../../../config/layout';
import type { ProviderName } from '../../../config/providers';
import { DynamoDbSlotPool } from '../../adapters/dynamodb-slot-pool';
import { DynamoDbWaitingLines } from '../../adapters/dynamodb-waiting-lines';
import type { InFlightLimits, SlotPools } from '../../domain/ports';
import { documentClient } from '../clients/dynamodb';
import { requireEnv, runtimeSettings } from '../env';
import { once } from '../once';

/** Each provider's slot pool (one item per provider in the job table). */
export const slotPools = once((): SlotPools => {
  const pools = new Map<ProviderName, DynamoDbSlotPool>();
  return (provider) => {
    let pool = pools.get(provider);
    if (!pool) {
      pool = new DynamoDbSlotPool(
        documentClient(),
        requireEnv(resourceEnv.jobTable),
        provider,
        undefined,
        runtimeSettings().providers[provider].rate,
      );
      pools.set(provider, pool);
    }
    return pool;
  };
});

/** Each tenant's line of jobs waiting for a slot of each provider. */
export const waitingLines = once(
  () => new DynamoDbWaitingLines(documentClient(), requireEnv(resourceEnv.jobTable)),
);

/** Each provider's in-flight limit, from the settings. */
export const inFlightLimits = once(
  (): InFlightLimits =>
    Object.fromEntries(
      Object.entries(runtimeSettings().providers).map(([name, provider]) => [name, provider.maxInFlight]),
    ) as InFlightLimits,
);
