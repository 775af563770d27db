import { EventBridgeClient } from '@aws-sdk/client-eventbridge';
import { once } from '../once';

/** The EventBridge client of the deployment's event bus. */
export const eventBridgeClient = once(() => new EventBridgeClient({}));
