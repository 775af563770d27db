import { resourceEnv } from '../../../config/layout';
import { EventBridgeEvents } from '../../adapters/eventbridge-events';
import { eventBridgeClient } from '../clients/eventbridge';
import { requireEnv } from '../env';
import { once } from '../once';

/** The deployment's event bus, named by EVENT_BUS_NAME. */
export const eventPublisher = once(
  () => new EventBridgeEvents(eventBridgeClient(), requireEnv(resourceEnv.eventBusName)),
);
