import { ApiGatewayManagementApiClient } from '@aws-sdk/client-apigatewaymanagementapi';
import { resourceEnv } from '../../../config/layout';
import { ApiGatewayLiveChannel } from '../../adapters/apigateway-live-channel';
import { publishingStatusChanges } from '../../domain/progress';
import { requireEnv } from '../env';
import { once } from '../once';
import { jobStore } from './job-store';
import { subscriptions } from './subscriptions';

export const liveChannel = once(
  () =>
    new ApiGatewayLiveChannel(
      new ApiGatewayManagementApiClient({ endpoint: requireEnv(resourceEnv.streamCallbackUrl) }),
      subscriptions(),
    ),
);

/** The job store for handlers that move jobs between statuses: live clients hear of every move. */
export const liveJobStore = once(() => publishingStatusChanges(jobStore(), liveChannel()));
